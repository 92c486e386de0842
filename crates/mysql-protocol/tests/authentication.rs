//! Authentication through the connection state machine: both plugins,
//! auth switch, empty passwords, TLS and RSA full authentication,
//! COM_CHANGE_USER, and replays of a real client's packets.

mod common;

use common::harness::*;
use common::*;
use mysql_protocol::auth::*;
use mysql_protocol::constants::capabilities::*;
use mysql_protocol::{Command, DecodeError, Event, OkPacket, ProtocolError, ServerConfig};

#[test]
fn caching_sha2_fast_path() {
    let mut harness = Harness::new(sha2_config());
    let response = sha2_password_scramble(b"secret", &SCRAMBLE);
    harness.send(
        1,
        &handshake_response(
            MODERN_CLIENT,
            "alice",
            &response,
            None,
            Some("caching_sha2_password"),
            &[],
        ),
    );
    assert!(matches!(harness.event(), Some(Event::Authenticate(_))));
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::CachingSha2Password,
            b"secret",
        )),
        &mut harness.out,
    );
    let Some(Event::Authenticated(session)) = harness.event() else {
        panic!("Authenticated expected");
    };
    assert_eq!(
        (session.user.as_str(), session.database, session.change_user),
        ("alice", None, false)
    );
    harness
        .connection
        .write_ok(&OkPacket::default(), &mut harness.out);
    let packets = harness.output();
    // AuthMoreData(fast_auth_success) and OK land in the same buffer.
    assert_eq!(
        packets[0],
        Packet {
            sequence: 2,
            payload: vec![0x01, 0x03]
        }
    );
    assert_eq!(packets[1].sequence, 3);
    assert_eq!(packets[1].payload[0], 0x00);
}

#[test]
fn wrong_password_is_denied() {
    for (plugin, response) in [
        (
            AuthPlugin::CachingSha2Password,
            sha2_password_scramble(b"guess", &SCRAMBLE).to_vec(),
        ),
        (
            AuthPlugin::MysqlNativePassword,
            native_password_scramble(b"guess", &SCRAMBLE).to_vec(),
        ),
    ] {
        let mut harness = Harness::new(sha2_config());
        harness.send(
            1,
            &handshake_response(
                MODERN_CLIENT,
                "alice",
                &response,
                None,
                Some(plugin.name()),
                &[],
            ),
        );
        harness.event();
        harness.connection.supply_account(
            Some(&Account::with_password(plugin, b"secret")),
            &mut harness.out,
        );
        expect_denied(
            &mut harness,
            "Access denied for user 'alice'@'10.0.0.7' (using password: YES)",
        );
    }
}

#[test]
fn unknown_user_is_denied() {
    let mut harness = Harness::new(sha2_config());
    harness.send(
        1,
        &handshake_response(
            MODERN_CLIENT,
            "mallory",
            b"",
            None,
            Some("caching_sha2_password"),
            &[],
        ),
    );
    harness.event();
    harness.connection.supply_account(None, &mut harness.out);
    let packets = harness.out.clone();
    assert_eq!(packets[3], 2, "the ERR answers the response: sequence 2");
    expect_denied(
        &mut harness,
        "Access denied for user 'mallory'@'10.0.0.7' (using password: NO)",
    );
}

#[test]
fn auth_switch_from_native_to_caching_sha2() {
    let mut harness = Harness::new(native_config());
    let native = native_password_scramble(b"secret", &SCRAMBLE);
    harness.send(
        1,
        &handshake_response(
            MODERN_CLIENT,
            "alice",
            &native,
            None,
            Some("mysql_native_password"),
            &[],
        ),
    );
    harness.event();
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::CachingSha2Password,
            b"secret",
        )),
        &mut harness.out,
    );
    let packets = harness.output();
    let mut expected = vec![0xFE];
    expected.extend_from_slice(b"caching_sha2_password\0");
    expected.extend_from_slice(&SCRAMBLE);
    expected.push(0);
    assert_eq!(
        packets,
        [Packet {
            sequence: 2,
            payload: expected
        }]
    );
    assert_eq!(harness.event(), None, "waiting for the switch response");
    harness.send(3, &sha2_password_scramble(b"secret", &SCRAMBLE));
    let Some(Event::Authenticated(_)) = harness.event() else {
        panic!("Authenticated expected");
    };
    assert_eq!(
        harness.output(),
        [Packet {
            sequence: 4,
            payload: vec![0x01, 0x03]
        }]
    );
    harness
        .connection
        .write_ok(&OkPacket::default(), &mut harness.out);
    assert_eq!(harness.output()[0].sequence, 5);
}

#[test]
fn auth_switch_from_caching_sha2_to_native_and_unknown_plugins() {
    for client_plugin in [Some("caching_sha2_password"), Some("sha256_password"), None] {
        let mut harness = Harness::new(sha2_config());
        let first = sha2_password_scramble(b"hunter2", &SCRAMBLE);
        harness.send(
            1,
            &handshake_response(MODERN_CLIENT, "bob", &first, None, client_plugin, &[]),
        );
        harness.event();
        harness.connection.supply_account(
            Some(&Account::with_password(
                AuthPlugin::MysqlNativePassword,
                b"hunter2",
            )),
            &mut harness.out,
        );
        let switch = harness.output();
        assert_eq!(&switch[0].payload[..23], b"\xFEmysql_native_password\0");
        harness.send(3, &native_password_scramble(b"hunter2", &SCRAMBLE));
        accept(&mut harness, 4);
    }
}

#[test]
fn client_without_plugin_auth_cannot_be_switched() {
    let mut harness = Harness::new(sha2_config());
    let capabilities = MODERN_CLIENT & !CLIENT_PLUGIN_AUTH & !CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA;
    let native = native_password_scramble(b"secret", &SCRAMBLE);
    harness.send(
        1,
        &handshake_response(capabilities, "alice", &native, None, None, &[]),
    );
    harness.event();
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::CachingSha2Password,
            b"secret",
        )),
        &mut harness.out,
    );
    assert!(matches!(harness.event(), Some(Event::AccessDenied { .. })));
    let (code, state, _) = error_of(&harness.output()[0].payload);
    assert_eq!((code, state.as_str()), (1251, "08004"));
    // The same client logs in to a native account: its answer is native.
    let mut harness = Harness::new(sha2_config());
    harness.send(
        1,
        &handshake_response(capabilities, "bob", &native, None, None, &[]),
    );
    harness.event();
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::MysqlNativePassword,
            b"secret",
        )),
        &mut harness.out,
    );
    accept(&mut harness, 2);
}

#[test]
fn empty_passwords() {
    for plugin in [
        AuthPlugin::CachingSha2Password,
        AuthPlugin::MysqlNativePassword,
    ] {
        for empty_answer in [&b""[..], &b"\0"[..]] {
            // root@localhost without a password, as --initialize-insecure.
            let mut harness = Harness::new(sha2_config());
            harness.send(
                1,
                &handshake_response(
                    MODERN_CLIENT,
                    "root",
                    empty_answer,
                    None,
                    Some(plugin.name()),
                    &[],
                ),
            );
            let Some(Event::Authenticate(request)) = harness.event() else {
                panic!("Authenticate expected");
            };
            assert!(!request.password_supplied);
            harness
                .connection
                .supply_account(Some(&Account::with_password(plugin, b"")), &mut harness.out);
            // No fast-auth byte for an empty password: OK comes straight after.
            accept(&mut harness, 2);
        }
        // An empty answer for an account with a password.
        let mut harness = Harness::new(sha2_config());
        harness.send(
            1,
            &handshake_response(MODERN_CLIENT, "root", b"", None, Some(plugin.name()), &[]),
        );
        harness.event();
        harness.connection.supply_account(
            Some(&Account::with_password(plugin, b"pw")),
            &mut harness.out,
        );
        expect_denied(
            &mut harness,
            "Access denied for user 'root'@'10.0.0.7' (using password: NO)",
        );
        // A password for an account without one.
        let mut harness = Harness::new(sha2_config());
        let answer = sha2_password_scramble(b"pw", &SCRAMBLE);
        let answer: &[u8] = if plugin == AuthPlugin::CachingSha2Password {
            &answer
        } else {
            &answer[..20]
        };
        harness.send(
            1,
            &handshake_response(
                MODERN_CLIENT,
                "root",
                answer,
                None,
                Some(plugin.name()),
                &[],
            ),
        );
        harness.event();
        harness
            .connection
            .supply_account(Some(&Account::with_password(plugin, b"")), &mut harness.out);
        expect_denied(
            &mut harness,
            "Access denied for user 'root'@'10.0.0.7' (using password: YES)",
        );
    }
}

#[test]
fn tls_upgrade_then_full_authentication_in_clear_text() {
    let config = ServerConfig {
        tls_available: true,
        ..sha2_config()
    };
    let mut harness = Harness::new(config);
    // The SSLRequest and the first bytes of the TLS ClientHello arrive together.
    let mut bytes = frame(1, &ssl_request(MODERN_CLIENT));
    bytes.extend_from_slice(b"\x16\x03\x01client-hello");
    harness.connection.receive(&bytes);
    assert_eq!(harness.event(), Some(Event::StartTls));
    assert_eq!(
        harness.connection.receive_capacity(),
        0,
        "bytes now belong to TLS"
    );
    assert_eq!(harness.event(), None);
    assert_eq!(
        harness.connection.take_pending_input(),
        b"\x16\x03\x01client-hello"
    );
    harness.connection.tls_established();
    assert!(harness.connection.is_tls());
    let answer = sha2_password_scramble(b"pw", &SCRAMBLE);
    harness.send(
        2,
        &handshake_response(
            MODERN_CLIENT | CLIENT_SSL,
            "carol",
            &answer,
            None,
            Some("caching_sha2_password"),
            &[],
        ),
    );
    let Some(Event::Authenticate(request)) = harness.event() else {
        panic!("Authenticate expected");
    };
    assert!(request.tls);
    assert_ne!(harness.connection.capabilities() & CLIENT_SSL, 0);
    harness
        .connection
        .supply_account(Some(&forced_full_account(b"pw")), &mut harness.out);
    assert_eq!(
        harness.output(),
        [Packet {
            sequence: 3,
            payload: vec![0x01, 0x04]
        }]
    );
    assert_eq!(harness.event(), None);
    harness.send(4, b"pw\0");
    accept(&mut harness, 5);

    // The same with a wrong password.
    let mut harness = Harness::new(ServerConfig {
        tls_available: true,
        ..sha2_config()
    });
    harness.send(1, &ssl_request(MODERN_CLIENT));
    assert_eq!(harness.event(), Some(Event::StartTls));
    harness.connection.tls_established();
    harness.send(
        2,
        &handshake_response(
            MODERN_CLIENT | CLIENT_SSL,
            "carol",
            &answer,
            None,
            Some("caching_sha2_password"),
            &[],
        ),
    );
    harness.event();
    harness
        .connection
        .supply_account(Some(&forced_full_account(b"pw")), &mut harness.out);
    harness.output();
    harness.send(4, b"guess\0");
    expect_denied(
        &mut harness,
        "Access denied for user 'carol'@'10.0.0.7' (using password: YES)",
    );
}

#[test]
fn full_authentication_over_rsa() {
    let config = ServerConfig {
        rsa_public_key_pem: Some(PUBLIC_KEY.to_vec()),
        ..sha2_config()
    };
    let answer = sha2_password_scramble(b"pw", &SCRAMBLE);
    // The client encrypts (password || NUL) XOR scramble; this test's
    // "runtime" decrypts to exactly that.
    let xored: Vec<u8> = b"pw\0"
        .iter()
        .zip(SCRAMBLE.iter().cycle())
        .map(|(a, b)| a ^ b)
        .collect();

    let mut harness = Harness::new(config.clone());
    harness.send(
        1,
        &handshake_response(
            MODERN_CLIENT,
            "carol",
            &answer,
            None,
            Some("caching_sha2_password"),
            &[],
        ),
    );
    harness.event();
    harness
        .connection
        .supply_account(Some(&forced_full_account(b"pw")), &mut harness.out);
    assert_eq!(
        harness.output(),
        [Packet {
            sequence: 2,
            payload: vec![0x01, 0x04]
        }]
    );
    harness.send(3, &[0x02]);
    assert_eq!(
        harness.event(),
        None,
        "the public key is sent without involving the runtime"
    );
    let mut expected = vec![0x01];
    expected.extend_from_slice(PUBLIC_KEY);
    assert_eq!(
        harness.output(),
        [Packet {
            sequence: 4,
            payload: expected
        }]
    );
    harness.send(5, b"ciphertext");
    assert_eq!(
        harness.event(),
        Some(Event::DecryptPassword {
            ciphertext: b"ciphertext".to_vec()
        })
    );
    harness
        .connection
        .supply_decrypted_password(Some(&xored), &mut harness.out);
    accept(&mut harness, 6);

    // A client that already has the key sends the ciphertext at once.
    let mut harness = Harness::new(config.clone());
    harness.send(
        1,
        &handshake_response(
            MODERN_CLIENT,
            "carol",
            &answer,
            None,
            Some("caching_sha2_password"),
            &[],
        ),
    );
    harness.event();
    harness
        .connection
        .supply_account(Some(&forced_full_account(b"pw")), &mut harness.out);
    harness.output();
    harness.send(3, b"ciphertext");
    assert!(matches!(
        harness.event(),
        Some(Event::DecryptPassword { .. })
    ));
    // Decryption failed: refused.
    harness
        .connection
        .supply_decrypted_password(None, &mut harness.out);
    expect_denied(
        &mut harness,
        "Access denied for user 'carol'@'10.0.0.7' (using password: YES)",
    );

    // Without a configured key the request for it is refused.
    let mut harness = Harness::new(sha2_config());
    harness.send(
        1,
        &handshake_response(
            MODERN_CLIENT,
            "carol",
            &answer,
            None,
            Some("caching_sha2_password"),
            &[],
        ),
    );
    harness.event();
    harness
        .connection
        .supply_account(Some(&forced_full_account(b"pw")), &mut harness.out);
    harness.output();
    harness.send(3, &[0x02]);
    expect_denied(
        &mut harness,
        "Access denied for user 'carol'@'10.0.0.7' (using password: YES)",
    );
}

#[test]
fn handshake_errors_close_with_an_err_packet() {
    // SSLRequest when TLS was not offered.
    let mut harness = Harness::new(sha2_config());
    harness.send(1, &ssl_request(MODERN_CLIENT));
    let error = harness.connection.next_event(&mut harness.out).unwrap_err();
    assert!(matches!(
        error,
        ProtocolError::BadHandshake(DecodeError::Invalid { .. })
    ));
    let packets = harness.output();
    assert_eq!(packets[0].sequence, 2);
    assert_eq!(error_of(&packets[0].payload).0, 1043);
    assert!(harness.connection.is_closed());

    // Garbage.
    let mut harness = Harness::new(sha2_config());
    harness.send(1, &[0x00, 0x02, 0x00, 0x00, 0x01]);
    assert!(matches!(
        harness.connection.next_event(&mut harness.out),
        Err(ProtocolError::BadHandshake(_))
    ));
    let (code, state, message) = error_of(&harness.output()[0].payload);
    assert_eq!(
        (code, state.as_str(), message.as_str()),
        (1043, "08S01", "Bad handshake")
    );

    // A pre-4.1 client is refused with an ERR it can read (no SQLSTATE).
    let mut harness = Harness::new(sha2_config());
    harness.send(1, &hex("8da0 000000 726f6f7400 00"));
    assert_eq!(
        harness.connection.next_event(&mut harness.out),
        Err(ProtocolError::UnsupportedClient)
    );
    let payload = &harness.output()[0].payload;
    assert_eq!(&payload[..3], &[0xFF, 0xE3, 0x04]);
    assert_eq!(&payload[3..9], b"Client");
}

#[test]
fn change_user_reauthenticates_with_a_switch() {
    let mut harness = logged_in(sha2_config());
    // COM_CHANGE_USER to bob, answered for caching_sha2 (the client's last plugin).
    let mut payload = vec![0x11];
    payload.extend_from_slice(b"bob\0");
    let answer = sha2_password_scramble(b"hunter2", &SCRAMBLE);
    payload.push(answer.len() as u8);
    payload.extend_from_slice(&answer);
    payload.extend_from_slice(b"shop\0");
    payload.extend_from_slice(&[0xFF, 0x00]);
    payload.extend_from_slice(b"caching_sha2_password\0");
    let Event::Authenticate(request) = harness.command(&payload) else {
        panic!("Authenticate expected");
    };
    assert!(request.change_user);
    assert_eq!(request.character_set, Some(255));
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::MysqlNativePassword,
            b"hunter2",
        )),
        &mut harness.out,
    );
    let packets = harness.output();
    assert_eq!(packets[0].sequence, 1);
    assert_eq!(packets[0].payload[0], 0xFE);
    harness.send(2, &native_password_scramble(b"hunter2", &SCRAMBLE));
    let Some(Event::Authenticated(session)) = harness.event() else {
        panic!("Authenticated expected");
    };
    assert!(session.change_user);
    assert_eq!(session.database.as_deref(), Some("shop"));
    harness
        .connection
        .write_ok(&OkPacket::default(), &mut harness.out);
    assert_eq!(harness.output()[0].sequence, 3);
    assert_eq!(harness.connection.user(), "bob");
    assert_eq!(harness.command(&[0x0E]), Event::Command(Command::Ping));

    // A failed change of user ends the connection.
    let mut payload = vec![0x11];
    payload.extend_from_slice(b"eve\0\0\0");
    harness.command(&payload);
    harness.connection.supply_account(None, &mut harness.out);
    expect_denied(
        &mut harness,
        "Access denied for user 'eve'@'10.0.0.7' (using password: NO)",
    );
}

/// Replays what libmariadb 3.3 (`mariadb -u alice -psecret`) sent to a
/// server whose default plugin was mysql_native_password while alice's
/// account uses caching_sha2_password: its native answer, then its answer
/// to the AuthSwitchRequest, then a query.
#[test]
fn replay_of_a_real_client_switching_plugins() {
    let mut harness = Harness::with_scramble(native_config(), capture_scramble(17), 17);
    let wire = hex(
        "d100000185a2bf0000001000210000000000000000000000000000000000000000000000616c6963650014653b58c24c6401731e765de6b1f68dcbf756a4626d7973716c5f6e61746976655f70617373776f7264007f035f6f73054c696e75780c5f636c69656e745f6e616d650a6c69626d617269616462045f7069640531343734370f5f636c69656e745f76657273696f6e06332e332e3230095f706c6174666f726d067838365f36340c70726f6772616d5f6e616d65056d7973716c0c5f7365727665725f686f7374093132372e302e302e31",
    );
    harness.connection.receive(&wire);
    let Some(Event::Authenticate(request)) = harness.event() else {
        panic!("Authenticate expected");
    };
    assert_eq!(
        request.auth_plugin_name.as_deref(),
        Some("mysql_native_password")
    );
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::CachingSha2Password,
            b"secret",
        )),
        &mut harness.out,
    );
    assert_eq!(harness.output()[0].sequence, 2);
    harness.connection.receive(&hex(
        "20000003e7f487ce28e2f0eec6dbf4f004e4bf26410667f32f35d8b5fe345555e3995806",
    ));
    accept(&mut harness, 5);
    harness
        .connection
        .receive(&hex("0b0000000373656c65637420277827"));
    assert_eq!(
        harness.event(),
        Some(Event::Command(Command::Query(b"select 'x'".to_vec())))
    );
}

/// Replays libmariadb's caching_sha2_password fast-path answer for "pw".
#[test]
fn replay_of_a_real_client_fast_path() {
    let mut harness = Harness::with_scramble(sha2_config(), capture_scramble(9), 9);
    harness.connection.receive(&hex(
        "dd00000185a2bf00000010002100000000000000000000000000000000000000000000006361726f6c00206ce295f5567646b3e029afb3092cfd8cfa0386a231b521001eb898272b0cd62663616368696e675f736861325f70617373776f7264007f035f6f73054c696e75780c5f636c69656e745f6e616d650a6c69626d617269616462045f7069640531343535330f5f636c69656e745f76657273696f6e06332e332e3230095f706c6174666f726d067838365f36340c70726f6772616d5f6e616d65056d7973716c0c5f7365727665725f686f7374093132372e302e302e31",
    ));
    harness.event();
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::CachingSha2Password,
            b"pw",
        )),
        &mut harness.out,
    );
    accept(&mut harness, 3);
}

#[test]
#[should_panic(expected = "supply_account")]
fn forgetting_to_supply_the_account_is_a_caller_bug() {
    let mut harness = Harness::new(sha2_config());
    harness.send(
        1,
        &handshake_response(MODERN_CLIENT, "root", b"", None, None, &[]),
    );
    harness.event();
    harness.event();
}
