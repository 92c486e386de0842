//! Random input never panics: every decoder and the connection state
//! machine take arbitrary bytes and answer with errors, not crashes.

mod common;

use std::sync::Arc;

use common::*;
use mysql_protocol::auth::{Account, AuthPlugin};
use mysql_protocol::binary::decode_binary_value;
use mysql_protocol::column::FieldType;
use mysql_protocol::handshake::{decode_client_handshake, decode_connect_attributes};
use mysql_protocol::packet::*;
use mysql_protocol::{
    Event, OkPacket, ServerConfig, ServerConnection, decode_command, decode_execute_parameters,
};
use proptest::prelude::*;

const ALL_TYPES: [u8; 27] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 245, 246, 247, 248, 249, 250, 251, 252,
    253, 254, 255,
];

fn field_type() -> impl Strategy<Value = (FieldType, bool)> {
    (proptest::sample::select(&ALL_TYPES[..]), any::<bool>())
        .prop_map(|(byte, unsigned)| (FieldType::from_byte(byte).unwrap(), unsigned))
}

/// Plays the runtime: answers every event, with choices drawn from `choices`.
fn drive(
    connection: &mut ServerConnection,
    out: &mut Vec<u8>,
    choices: &mut impl Iterator<Item = u8>,
) {
    for _ in 0..64 {
        let event = match connection.next_event(out) {
            Ok(Some(event)) => event,
            Ok(None) | Err(_) => return,
        };
        let choice = choices.next().unwrap_or(0);
        match event {
            Event::StartTls => {
                connection.take_pending_input();
                connection.tls_established();
            }
            Event::Authenticate(_) => {
                let plugin = if choice & 1 == 0 {
                    AuthPlugin::CachingSha2Password
                } else {
                    AuthPlugin::MysqlNativePassword
                };
                let mut account =
                    Account::with_password(plugin, if choice & 2 == 0 { b"" } else { b"pw" });
                account.force_full_authentication = choice & 4 != 0;
                connection.supply_account((choice & 8 == 0).then_some(&account), out);
            }
            Event::DecryptPassword { ciphertext } => {
                connection
                    .supply_decrypted_password((choice & 1 == 0).then_some(&ciphertext[..]), out);
            }
            Event::Authenticated(_) => connection.write_ok(&OkPacket::default(), out),
            Event::AccessDenied { .. } => return,
            Event::Command(_) => connection.write_unknown_command(out),
        }
    }
}

fn connection(tls: bool, key: bool) -> (ServerConnection, Vec<u8>) {
    let config = ServerConfig {
        tls_available: tls,
        rsa_public_key_pem: key.then(|| b"PEM".to_vec()),
        max_allowed_packet: 4096,
        ..ServerConfig::default()
    };
    let mut connection = ServerConnection::new(Arc::new(config), 1, *b"abcdefghijklmnopqrst", "h");
    let mut out = Vec::new();
    connection.write_handshake(&mut out);
    (connection, out)
}

/// Feeds `input` in chunks of `chunk` bytes, answering events as they come.
fn feed(
    connection: &mut ServerConnection,
    out: &mut Vec<u8>,
    input: &[u8],
    chunk: usize,
    choices: &[u8],
) {
    let mut choices = choices.iter().copied().cycle();
    for piece in input.chunks(chunk.max(1)) {
        let mut offset = 0;
        while offset < piece.len() {
            let taken = connection.receive(&piece[offset..]);
            drive(connection, out, &mut choices);
            if taken == 0 {
                return;
            }
            offset += taken;
        }
        out.clear();
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn read_message_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), sequence: u8, limit in 0usize..64) {
        if let Ok(Some(message)) = read_message(&bytes, sequence, limit) {
            prop_assert!(message.consumed <= bytes.len());
            prop_assert!(message.payload.len() <= limit);
        }
    }

    #[test]
    fn payload_reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..48), steps in proptest::collection::vec(0u8..9, 0..12)) {
        let mut reader = PayloadReader::new(&bytes);
        for step in steps {
            let _ = match step {
                0 => reader.read_u8("f").map(|_| ()),
                1 => reader.read_u16("f").map(|_| ()),
                2 => reader.read_u24("f").map(|_| ()),
                3 => reader.read_u32("f").map(|_| ()),
                4 => reader.read_u64("f").map(|_| ()),
                5 => reader.read_lenenc_int("f").map(|_| ()),
                6 => reader.read_lenenc_bytes("f").map(|_| ()),
                7 => reader.read_nul_terminated("f").map(|_| ()),
                _ => reader.read_bytes(3, "f").map(|_| ()),
            };
            prop_assert!(reader.remaining() <= bytes.len());
        }
    }

    #[test]
    fn handshake_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..160), tls: bool) {
        let _ = decode_client_handshake(&bytes, tls);
        let _ = decode_connect_attributes(&mut PayloadReader::new(&bytes));
    }

    #[test]
    fn handshake_response_with_random_tail_never_panics(capabilities: u32, tail in proptest::collection::vec(any::<u8>(), 0..96)) {
        let mut payload = ssl_request(capabilities | mysql_protocol::constants::capabilities::CLIENT_PROTOCOL_41);
        payload.extend_from_slice(&tail);
        let _ = decode_client_handshake(&payload, true);
    }

    #[test]
    fn command_decoder_never_panics(command in proptest::sample::select((0u8..=0x20).collect::<Vec<_>>()), body in proptest::collection::vec(any::<u8>(), 0..64), capabilities: u32) {
        let mut payload = vec![command];
        payload.extend_from_slice(&body);
        let _ = decode_command(&payload, capabilities);
    }

    #[test]
    fn execute_parameters_never_panic(
        block in proptest::collection::vec(any::<u8>(), 0..96),
        count in 0usize..20,
        previous in proptest::collection::vec(field_type(), 0..20),
        long_data in proptest::collection::vec(proptest::option::of(proptest::collection::vec(any::<u8>(), 0..4)), 0..20),
    ) {
        let mut previous = previous;
        if let Ok(values) = decode_execute_parameters(&block, count, &mut previous, &long_data) {
            prop_assert_eq!(values.len(), count);
            if count > 0 {
                prop_assert_eq!(previous.len(), count);
            }
        }
    }

    #[test]
    fn binary_values_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..24), (field_type, unsigned) in field_type()) {
        let _ = decode_binary_value(&mut PayloadReader::new(&bytes), field_type, unsigned);
    }

    #[test]
    fn connection_survives_random_bytes_in_the_handshake(
        input in proptest::collection::vec(any::<u8>(), 0..300),
        chunk in 1usize..40,
        choices in proptest::collection::vec(any::<u8>(), 1..8),
        tls: bool,
        key: bool,
    ) {
        let (mut connection, mut out) = connection(tls, key);
        feed(&mut connection, &mut out, &input, chunk, &choices);
    }

    #[test]
    fn connection_survives_random_packets_after_a_valid_handshake(
        packets in proptest::collection::vec((any::<u8>(), proptest::collection::vec(any::<u8>(), 0..40)), 0..12),
        chunk in 1usize..64,
        choices in proptest::collection::vec(any::<u8>(), 1..8),
        tls: bool,
        key: bool,
    ) {
        let (mut connection, mut out) = connection(tls, key);
        let mut input = Vec::new();
        if tls {
            input.extend_from_slice(&frame(1, &ssl_request(MODERN_CLIENT)));
        }
        let sequence = if tls { 2 } else { 1 };
        input.extend_from_slice(&frame(sequence, &handshake_response(MODERN_CLIENT, "u", b"", None, Some("caching_sha2_password"), &[])));
        // Well-framed packets with random sequence ids and contents: the
        // auth exchange's continuations, commands, and garbage.
        for (index, (sequence_choice, payload)) in packets.iter().enumerate() {
            let sequence = if sequence_choice % 4 == 0 { *sequence_choice } else if index < 3 { sequence + 1 + index as u8 } else { 0 };
            input.extend_from_slice(&frame(sequence, payload));
        }
        feed(&mut connection, &mut out, &input, chunk, &choices);
    }

    #[test]
    fn packets_round_trip(payload in proptest::collection::vec(any::<u8>(), 0..300), sequence: u8) {
        let mut out = Vec::new();
        let mut next = sequence;
        write_packet(&mut out, &mut next, &payload);
        let message = read_message(&out, sequence, 300).unwrap().unwrap();
        prop_assert_eq!(message.payload.as_ref(), payload.as_slice());
        prop_assert_eq!(message.consumed, out.len());
        prop_assert_eq!(message.next_sequence, next);
    }

    #[test]
    fn lenenc_round_trip(value: u64, bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut out = Vec::new();
        write_lenenc_int(&mut out, value);
        write_lenenc_bytes(&mut out, &bytes);
        let mut reader = PayloadReader::new(&out);
        prop_assert_eq!(reader.read_lenenc_int("v").unwrap(), value);
        prop_assert_eq!(reader.read_lenenc_bytes("b").unwrap(), bytes.as_slice());
        prop_assert!(reader.is_empty());
    }
}
