//! The connection phase's packets.
//!
//! Initial Handshake v10 (server → client):
//! `0x0A`, server version (NUL-terminated), connection id (4), scramble
//! bytes 1-8, `0x00`, capability flags low (2), character set (1), status
//! flags (2), capability flags high (2), scramble length + 1 (1), ten zero
//! bytes, scramble bytes 9-20 and a NUL (13), plugin name (NUL-terminated).
//!
//! SSLRequest (client → server, 32 bytes): capability flags with
//! `CLIENT_SSL` (4), max packet size (4), character set (1), 23 zero bytes.
//!
//! HandshakeResponse41 (client → server): the same 32 bytes, then the user
//! (NUL-terminated); the auth response as a length-encoded string with
//! `CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA`, with a 1-byte length with
//! `CLIENT_SECURE_CONNECTION`, NUL-terminated otherwise; the database
//! (NUL-terminated) with `CLIENT_CONNECT_WITH_DB`; the plugin name
//! (NUL-terminated) with `CLIENT_PLUGIN_AUTH`; connection attributes (a
//! length-encoded total, then length-encoded key/value strings) with
//! `CLIENT_CONNECT_ATTRS`.
//!
//! AuthSwitchRequest (server → client): `0xFE`, plugin name
//! (NUL-terminated), plugin data (the scramble and a NUL).
//! AuthMoreData (server → client): `0x01`, then plugin data.

use crate::auth::{AuthPlugin, SCRAMBLE_LENGTH};
use crate::constants::PROTOCOL_VERSION;
use crate::constants::capabilities::*;
use crate::error::DecodeError;
use crate::packet::{PayloadReader, write_nul_terminated};

/// Bytes of the fixed part shared by SSLRequest and HandshakeResponse41.
pub const HANDSHAKE_RESPONSE_FIXED_LENGTH: usize = 32;
/// Zero bytes after the character set in SSLRequest/HandshakeResponse41.
const HANDSHAKE_RESPONSE_FILLER_LENGTH: usize = 23;
/// Zero bytes reserved in the Initial Handshake before scramble part 2.
const HANDSHAKE_RESERVED_LENGTH: usize = 10;
/// Scramble bytes sent before the capability flags.
const SCRAMBLE_PART_1_LENGTH: usize = 8;
/// The longest connection-attributes block MySQL accepts.
pub const MAX_CONNECT_ATTRIBUTES_LENGTH: usize = 65_535;
/// The header byte of AuthSwitchRequest.
pub const AUTH_SWITCH_REQUEST_HEADER: u8 = 0xFE;
/// The header byte of AuthMoreData.
pub const AUTH_MORE_DATA_HEADER: u8 = 0x01;
/// `caching_sha2_password`: the client sends this byte to ask for the
/// server's RSA public key.
pub const REQUEST_PUBLIC_KEY: u8 = 0x02;
/// `caching_sha2_password`: AuthMoreData payload meaning "the fast path
/// verified, an OK packet follows".
pub const FAST_AUTH_SUCCESS: u8 = 0x03;
/// `caching_sha2_password`: AuthMoreData payload asking the client for
/// full authentication (its password over TLS or RSA-encrypted).
pub const PERFORM_FULL_AUTHENTICATION: u8 = 0x04;

/// What the Initial Handshake announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialHandshake<'a> {
    /// E.g. "8.0.40-shoal": clients parse the leading version number.
    pub server_version: &'a str,
    /// The connection (thread) id.
    pub connection_id: u32,
    /// The 20 random bytes both plugins answer; no byte may be NUL.
    pub scramble: &'a [u8; SCRAMBLE_LENGTH],
    /// The server's capability flags.
    pub capabilities: u32,
    /// The server's default collation id (low byte).
    pub character_set: u8,
    /// Server status flags.
    pub status: u16,
    /// The plugin the scramble is meant for.
    pub auth_plugin: AuthPlugin,
}

/// Appends the Initial Handshake v10 payload (no frame header).
pub fn encode_initial_handshake(handshake: &InitialHandshake<'_>, payload: &mut Vec<u8>) {
    assert!(
        !handshake.scramble.contains(&0),
        "the scramble must contain no NUL byte: clients treat part 2 as NUL-terminated"
    );
    assert!(
        !handshake.server_version.as_bytes().contains(&0),
        "the server version is a NUL-terminated string"
    );
    let capabilities = handshake.capabilities.to_le_bytes();
    payload.push(PROTOCOL_VERSION);
    write_nul_terminated(payload, handshake.server_version.as_bytes());
    payload.extend_from_slice(&handshake.connection_id.to_le_bytes());
    payload.extend_from_slice(&handshake.scramble[..SCRAMBLE_PART_1_LENGTH]);
    payload.push(0);
    payload.extend_from_slice(&capabilities[..2]);
    payload.push(handshake.character_set);
    payload.extend_from_slice(&handshake.status.to_le_bytes());
    payload.extend_from_slice(&capabilities[2..]);
    // The length counts the scramble's terminating NUL.
    payload.push(SCRAMBLE_LENGTH as u8 + 1);
    payload.extend_from_slice(&[0; HANDSHAKE_RESERVED_LENGTH]);
    write_nul_terminated(payload, &handshake.scramble[SCRAMBLE_PART_1_LENGTH..]);
    write_nul_terminated(payload, handshake.auth_plugin.name().as_bytes());
}

/// Appends an AuthSwitchRequest payload: switch to `plugin`, answering
/// `scramble`.
pub fn encode_auth_switch_request(
    plugin: AuthPlugin,
    scramble: &[u8; SCRAMBLE_LENGTH],
    payload: &mut Vec<u8>,
) {
    payload.push(AUTH_SWITCH_REQUEST_HEADER);
    write_nul_terminated(payload, plugin.name().as_bytes());
    payload.extend_from_slice(scramble);
    payload.push(0);
}

/// Appends an AuthMoreData payload carrying `data`.
pub fn encode_auth_more_data(data: &[u8], payload: &mut Vec<u8>) {
    payload.push(AUTH_MORE_DATA_HEADER);
    payload.extend_from_slice(data);
}

/// The client's first packet: either it asks for TLS first, or it is the
/// complete HandshakeResponse41.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientHandshake {
    /// SSLRequest: start TLS, then the full response follows encrypted.
    SslRequest {
        /// The client's capability flags.
        capabilities: u32,
        /// The client's max packet size.
        max_packet_size: u32,
        /// The client's character set.
        character_set: u8,
    },
    /// HandshakeResponse41.
    Response(HandshakeResponse),
}

/// A decoded HandshakeResponse41.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeResponse {
    /// The client's capability flags, as sent (not yet intersected with
    /// the server's): they decide which fields the packet holds.
    pub capabilities: u32,
    /// The largest packet the client wants to receive.
    pub max_packet_size: u32,
    /// The client's character set (collation id).
    pub character_set: u8,
    /// The user name.
    pub user: String,
    /// The auth plugin's first answer (scramble response).
    pub auth_response: Vec<u8>,
    /// The database to use, if the client named one.
    pub database: Option<String>,
    /// The plugin that computed `auth_response`; `None` when the client
    /// lacks `CLIENT_PLUGIN_AUTH` (which means `mysql_native_password`) or
    /// sent no name.
    pub auth_plugin_name: Option<String>,
    /// Connection attributes (`_client_name`, `_os`, ...), in order.
    pub connect_attributes: Vec<(String, String)>,
}

/// Decodes the client's first packet (or, after TLS started, its second).
///
/// `tls_active` tells whether TLS is already up: a packet with `CLIENT_SSL`
/// then is the full response, otherwise it is an SSLRequest. A client
/// without `CLIENT_PROTOCOL_41` yields `Ok(None)`: the caller refuses it.
pub fn decode_client_handshake(
    payload: &[u8],
    tls_active: bool,
) -> Result<Option<ClientHandshake>, DecodeError> {
    let mut reader = PayloadReader::new(payload);
    let capabilities = u32::from(reader.read_u16("capability flags")?);
    if capabilities & CLIENT_PROTOCOL_41 == 0 {
        return Ok(None);
    }
    let mut reader = PayloadReader::new(payload);
    let capabilities = reader.read_u32("capability flags")?;
    let max_packet_size = reader.read_u32("max packet size")?;
    let character_set = reader.read_u8("character set")?;
    reader.read_bytes(HANDSHAKE_RESPONSE_FILLER_LENGTH, "filler")?;
    if capabilities & CLIENT_SSL != 0 && !tls_active {
        return Ok(Some(ClientHandshake::SslRequest {
            capabilities,
            max_packet_size,
            character_set,
        }));
    }
    let user = strip_quotes(decode_text(reader.read_nul_terminated("user")?, "user")?);
    let auth_response = if capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        reader.read_lenenc_bytes("auth response")?
    } else if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        let length = reader.read_u8("auth response length")?;
        reader.read_bytes(usize::from(length), "auth response")?
    } else {
        reader.read_nul_terminated("auth response")?
    }
    .to_vec();
    let database = if capabilities & CLIENT_CONNECT_WITH_DB != 0 {
        let name = decode_text(reader.read_nul_terminated("database")?, "database")?;
        (!name.is_empty()).then_some(name)
    } else {
        None
    };
    // MySQL reads the plugin name leniently: a client that announced the
    // capability but ended the packet early gets the default plugin.
    let auth_plugin_name = if capabilities & CLIENT_PLUGIN_AUTH != 0 && !reader.is_empty() {
        let name = decode_text(
            reader.read_nul_terminated("auth plugin name")?,
            "auth plugin name",
        )?;
        (!name.is_empty()).then_some(name)
    } else {
        None
    };
    let connect_attributes = if capabilities & CLIENT_CONNECT_ATTRS != 0 && !reader.is_empty() {
        decode_connect_attributes(&mut reader)?
    } else {
        Vec::new()
    };
    Ok(Some(ClientHandshake::Response(HandshakeResponse {
        capabilities,
        max_packet_size,
        character_set,
        user,
        auth_response,
        database,
        auth_plugin_name,
        connect_attributes,
    })))
}

/// Reads a connection-attributes block: a length-encoded total length,
/// then length-encoded key and value strings filling exactly that length.
pub fn decode_connect_attributes(
    reader: &mut PayloadReader<'_>,
) -> Result<Vec<(String, String)>, DecodeError> {
    let total = reader.read_lenenc_int("connect attributes length")?;
    if total > MAX_CONNECT_ATTRIBUTES_LENGTH as u64 {
        return Err(DecodeError::Invalid {
            field: "connect attributes length",
            reason: "longer than 65535 bytes",
        });
    }
    let block = reader.read_bytes(total as usize, "connect attributes")?;
    let mut block = PayloadReader::new(block);
    let mut attributes = Vec::new();
    while !block.is_empty() {
        let key = decode_text(
            block.read_lenenc_bytes("connect attribute key")?,
            "connect attribute key",
        )?;
        let value = decode_text(
            block.read_lenenc_bytes("connect attribute value")?,
            "connect attribute value",
        )?;
        attributes.push((key, value));
    }
    Ok(attributes)
}

/// Names travel in the client's character set; this server announces
/// utf8mb4 and every current client uses it, so names must be UTF-8.
pub(crate) fn decode_text(bytes: &[u8], field: &'static str) -> Result<String, DecodeError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::Invalid {
        field,
        reason: "not valid UTF-8",
    })
}

/// MySQL drops single quotes around a user name ('root' is root).
fn strip_quotes(user: String) -> String {
    if user.len() > 1 && user.starts_with('\'') && user.ends_with('\'') {
        user[1..user.len() - 1].to_string()
    } else {
        user
    }
}
