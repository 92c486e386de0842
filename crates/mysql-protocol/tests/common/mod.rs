//! A minimal client for the tests: frames packets the way a client does and
//! splits the server's output back into packets.

#![allow(dead_code)]

pub mod harness;

use mysql_protocol::constants::capabilities::*;
use mysql_protocol::packet::{read_message, write_lenenc_bytes, write_lenenc_int, write_packet};

/// The capabilities of a modern client (what libmysqlclient 8.0 sends).
pub const MODERN_CLIENT: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_LONG_FLAG
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PS_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_CONNECT_ATTRS
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | CLIENT_DEPRECATE_EOF;

/// Decodes a hex string (whitespace allowed).
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|byte| !byte.is_ascii_whitespace())
        .collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// One packet: its sequence id and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub sequence: u8,
    pub payload: Vec<u8>,
}

/// Splits server output into packets (frames of a split payload are
/// reassembled), checking that sequence ids are consecutive.
pub fn packets(mut wire: &[u8]) -> Vec<Packet> {
    let mut packets = Vec::new();
    let mut expected_sequence = None;
    while !wire.is_empty() {
        let sequence = wire[3];
        if let Some(expected) = expected_sequence {
            assert_eq!(
                sequence, expected,
                "sequence ids of one response are consecutive"
            );
        }
        let message = read_message(wire, sequence, usize::MAX)
            .unwrap()
            .expect("complete packet");
        packets.push(Packet {
            sequence,
            payload: message.payload.to_vec(),
        });
        expected_sequence = Some(message.next_sequence);
        wire = &wire[message.consumed..];
    }
    packets
}

/// Frames one payload with `sequence`.
pub fn frame(sequence: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut sequence = sequence;
    write_packet(&mut out, &mut sequence, payload);
    out
}

/// A HandshakeResponse41 with the lenenc auth response encoding.
pub fn handshake_response(
    capabilities: u32,
    user: &str,
    auth_response: &[u8],
    database: Option<&str>,
    plugin: Option<&str>,
    attributes: &[(&str, &str)],
) -> Vec<u8> {
    let mut capabilities = capabilities;
    if database.is_some() {
        capabilities |= CLIENT_CONNECT_WITH_DB;
    }
    let mut payload = Vec::new();
    payload.extend_from_slice(&capabilities.to_le_bytes());
    payload.extend_from_slice(&(16u32 << 20).to_le_bytes());
    payload.push(255);
    payload.extend_from_slice(&[0; 23]);
    payload.extend_from_slice(user.as_bytes());
    payload.push(0);
    if capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
        write_lenenc_bytes(&mut payload, auth_response);
    } else if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        payload.push(auth_response.len() as u8);
        payload.extend_from_slice(auth_response);
    } else {
        payload.extend_from_slice(auth_response);
        payload.push(0);
    }
    if let Some(database) = database {
        payload.extend_from_slice(database.as_bytes());
        payload.push(0);
    }
    if capabilities & CLIENT_PLUGIN_AUTH != 0 {
        payload.extend_from_slice(plugin.unwrap_or("").as_bytes());
        payload.push(0);
    }
    if capabilities & CLIENT_CONNECT_ATTRS != 0 {
        let mut block = Vec::new();
        for (key, value) in attributes {
            write_lenenc_bytes(&mut block, key.as_bytes());
            write_lenenc_bytes(&mut block, value.as_bytes());
        }
        write_lenenc_int(&mut payload, block.len() as u64);
        payload.extend_from_slice(&block);
    }
    payload
}

/// The 32-byte SSLRequest.
pub fn ssl_request(capabilities: u32) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&(capabilities | CLIENT_SSL).to_le_bytes());
    payload.extend_from_slice(&(16u32 << 20).to_le_bytes());
    payload.push(255);
    payload.extend_from_slice(&[0; 23]);
    payload
}

/// The scramble carried by an Initial Handshake payload.
pub fn scramble_of_handshake(payload: &[u8]) -> [u8; 20] {
    let version_end = payload[1..].iter().position(|&byte| byte == 0).unwrap() + 1;
    let part1_start = version_end + 1 + 4;
    let part2_start = part1_start + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    let mut scramble = [0u8; 20];
    scramble[..8].copy_from_slice(&payload[part1_start..part1_start + 8]);
    scramble[8..].copy_from_slice(&payload[part2_start..part2_start + 12]);
    scramble
}

/// An ERR payload's code and message.
pub fn error_of(payload: &[u8]) -> (u16, String, String) {
    assert_eq!(payload[0], 0xFF, "ERR packet expected, got {payload:?}");
    let code = u16::from_le_bytes([payload[1], payload[2]]);
    assert_eq!(payload[3], b'#');
    (
        code,
        String::from_utf8(payload[4..9].to_vec()).unwrap(),
        String::from_utf8(payload[9..].to_vec()).unwrap(),
    )
}
