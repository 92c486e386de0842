//! The connection phase's packets: the greeting byte for byte, and
//! handshake responses as real clients send them.

mod common;

use common::harness::capture_scramble;
use common::*;
use mysql_protocol::auth::{AuthPlugin, native_password_scramble};
use mysql_protocol::constants::capabilities::*;
use mysql_protocol::handshake::*;
use mysql_protocol::packet::PayloadReader;

const SCRAMBLE: &[u8; 20] = b"!\"#$%&'()*+,-./01234";

#[test]
fn initial_handshake_is_byte_exact() {
    let mut payload = Vec::new();
    encode_initial_handshake(
        &InitialHandshake {
            server_version: "8.0.40-shoal",
            connection_id: 11,
            scramble: SCRAMBLE,
            capabilities: SERVER_DEFAULT,
            character_set: 255,
            status: 2,
            auth_plugin: AuthPlugin::CachingSha2Password,
        },
        &mut payload,
    );
    let expected = hex("0a 382e302e34302d73686f616c 00
         0b000000
         2122232425262728 00
         0fa7 ff 0200 3f01 15
         00000000000000000000
         292a2b2c2d2e2f3031323334 00
         63616368696e675f736861325f70617373776f7264 00");
    assert_eq!(payload, expected);
    assert_eq!(scramble_of_handshake(&payload), *SCRAMBLE);
}

#[test]
fn advertised_capabilities_are_the_required_set() {
    for flag in [
        CLIENT_PROTOCOL_41,
        CLIENT_SECURE_CONNECTION,
        CLIENT_PLUGIN_AUTH,
        CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
        CLIENT_CONNECT_WITH_DB,
        CLIENT_TRANSACTIONS,
        CLIENT_MULTI_STATEMENTS,
        CLIENT_MULTI_RESULTS,
        CLIENT_PS_MULTI_RESULTS,
        CLIENT_DEPRECATE_EOF,
        CLIENT_CONNECT_ATTRS,
        CLIENT_LONG_PASSWORD,
        CLIENT_LONG_FLAG,
        CLIENT_FOUND_ROWS,
        CLIENT_IGNORE_SPACE,
        CLIENT_INTERACTIVE,
    ] {
        assert_ne!(SERVER_DEFAULT & flag, 0, "flag {flag:#x}");
    }
    for flag in [
        CLIENT_SSL,
        CLIENT_QUERY_ATTRIBUTES,
        CLIENT_COMPRESS,
        CLIENT_LOCAL_FILES,
        CLIENT_OPTIONAL_RESULTSET_METADATA,
    ] {
        assert_eq!(SERVER_DEFAULT & flag, 0, "flag {flag:#x}");
    }
}

#[test]
#[should_panic(expected = "no NUL")]
fn scramble_with_nul_is_refused() {
    let mut scramble = *SCRAMBLE;
    scramble[3] = 0;
    let handshake = InitialHandshake {
        server_version: "8.0.40",
        connection_id: 1,
        scramble: &scramble,
        capabilities: SERVER_DEFAULT,
        character_set: 255,
        status: 2,
        auth_plugin: AuthPlugin::MysqlNativePassword,
    };
    encode_initial_handshake(&handshake, &mut Vec::new());
}

/// libmariadb 3.3 (the `mariadb` command-line client) logging in as bob
/// with password "hunter2" (payload of the captured packet).
const MARIADB_NATIVE_RESPONSE: &str = "85a2bf0000001000210000000000000000000000000000000000000000000000626f620014d2d0eabc2775a4ccef90aaac11777f93121bdbf06d7973716c5f6e61746976655f70617373776f7264007f035f6f73054c696e75780c5f636c69656e745f6e616d650a6c69626d617269616462045f7069640531343735300f5f636c69656e745f76657273696f6e06332e332e3230095f706c6174666f726d067838365f36340c70726f6772616d5f6e616d65056d7973716c0c5f7365727665725f686f7374093132372e302e302e31";

#[test]
fn real_client_response_decodes() {
    let payload = hex(MARIADB_NATIVE_RESPONSE);
    let Some(ClientHandshake::Response(response)) =
        decode_client_handshake(&payload, false).unwrap()
    else {
        panic!("a full response expected");
    };
    assert_eq!(response.capabilities, 0x00bf_a285);
    assert_eq!(response.max_packet_size, 1 << 20);
    assert_eq!(response.character_set, 33);
    assert_eq!(response.user, "bob");
    assert_eq!(response.database, None);
    assert_eq!(
        response.auth_plugin_name.as_deref(),
        Some("mysql_native_password")
    );
    assert_eq!(
        response.auth_response,
        native_password_scramble(b"hunter2", &capture_scramble(18))
    );
    assert_eq!(response.connect_attributes.len(), 7);
    assert_eq!(
        response.connect_attributes[1],
        ("_client_name".to_string(), "libmariadb".to_string())
    );
    assert_eq!(
        response.connect_attributes[5],
        ("program_name".to_string(), "mysql".to_string())
    );
}

#[test]
fn auth_response_encodings_follow_the_capabilities() {
    let auth = [7u8; 20];
    let base = CLIENT_PROTOCOL_41 | CLIENT_PLUGIN_AUTH;
    for capabilities in [
        base | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
        base | CLIENT_SECURE_CONNECTION,
        base,
    ] {
        let payload = handshake_response(
            capabilities,
            "u",
            &auth,
            Some("db"),
            Some("mysql_native_password"),
            &[],
        );
        let Some(ClientHandshake::Response(response)) =
            decode_client_handshake(&payload, false).unwrap()
        else {
            panic!("a full response expected");
        };
        assert_eq!(
            response.auth_response, auth,
            "capabilities {capabilities:#x}"
        );
        assert_eq!(response.database.as_deref(), Some("db"));
        assert_eq!(
            response.auth_plugin_name.as_deref(),
            Some("mysql_native_password")
        );
    }
}

#[test]
fn long_lenenc_auth_response_and_attributes() {
    let auth = vec![9u8; 300];
    let payload = handshake_response(
        MODERN_CLIENT,
        "'root'",
        &auth,
        None,
        Some("caching_sha2_password"),
        &[("_os", "Linux"), ("program_name", "test")],
    );
    let Some(ClientHandshake::Response(response)) =
        decode_client_handshake(&payload, false).unwrap()
    else {
        panic!("a full response expected");
    };
    assert_eq!(response.user, "root", "MySQL drops quotes around the user");
    assert_eq!(response.auth_response, auth);
    assert_eq!(
        response.connect_attributes,
        [
            ("_os".to_string(), "Linux".to_string()),
            ("program_name".to_string(), "test".to_string())
        ]
    );
}

#[test]
fn ssl_request_is_recognised_before_tls_only() {
    let payload = ssl_request(MODERN_CLIENT);
    assert_eq!(payload.len(), HANDSHAKE_RESPONSE_FIXED_LENGTH);
    assert!(matches!(
        decode_client_handshake(&payload, false).unwrap(),
        Some(ClientHandshake::SslRequest {
            max_packet_size: 0x0100_0000,
            character_set: 255,
            ..
        })
    ));
    // After TLS the same flags introduce the full response.
    let full = handshake_response(MODERN_CLIENT | CLIENT_SSL, "u", b"", None, None, &[]);
    assert!(matches!(
        decode_client_handshake(&full, true).unwrap(),
        Some(ClientHandshake::Response(_))
    ));
}

#[test]
fn pre_41_client_is_recognised() {
    // A 4.0 client: 2 capability bytes without CLIENT_PROTOCOL_41.
    let payload = hex("8da0 000000 726f6f7400 00");
    assert_eq!(decode_client_handshake(&payload, false).unwrap(), None);
}

#[test]
fn truncated_responses_are_errors() {
    let payload = handshake_response(
        MODERN_CLIENT,
        "user",
        &[1; 32],
        Some("db"),
        Some("caching_sha2_password"),
        &[("a", "b")],
    );
    // Cutting inside the user, auth response or database is an error; the
    // plugin name and attributes are optional at the end, as in MySQL.
    // 32 fixed bytes, "user\0", a 1-byte length and 32 bytes, "db\0".
    let database_end = 32 + 5 + 1 + 32 + 3;
    for cut in 0..database_end {
        assert!(
            decode_client_handshake(&payload[..cut], false).is_err(),
            "cut at {cut}"
        );
    }
    for cut in database_end..payload.len() {
        let result = decode_client_handshake(&payload[..cut], false);
        // Past the database only the attributes block can be cut short.
        if cut > database_end + "caching_sha2_password".len() + 1 {
            assert!(result.is_err(), "cut at {cut}");
        }
    }
    assert!(decode_client_handshake(&payload, false).is_ok());
}

#[test]
fn oversized_connect_attributes_are_refused() {
    let mut block = Vec::new();
    mysql_protocol::packet::write_lenenc_int(&mut block, 70_000);
    block.extend(std::iter::repeat_n(0u8, 70_000));
    assert!(decode_connect_attributes(&mut PayloadReader::new(&block)).is_err());
}

#[test]
fn auth_switch_and_more_data_payloads() {
    let mut payload = Vec::new();
    encode_auth_switch_request(AuthPlugin::MysqlNativePassword, SCRAMBLE, &mut payload);
    let mut expected = vec![0xFE];
    expected.extend_from_slice(b"mysql_native_password\0");
    expected.extend_from_slice(SCRAMBLE);
    expected.push(0);
    assert_eq!(payload, expected);
    let mut payload = Vec::new();
    encode_auth_more_data(&[FAST_AUTH_SUCCESS], &mut payload);
    assert_eq!(payload, [0x01, 0x03]);
}
