//! Framing, length-encoded values and the payload reader.

use std::borrow::Cow;

use mysql_protocol::DecodeError;
use mysql_protocol::packet::*;

#[test]
fn small_packet_has_length_and_sequence_header() {
    let mut out = Vec::new();
    let mut sequence = 7;
    write_packet(&mut out, &mut sequence, &[0x0E]);
    assert_eq!(out, [0x01, 0x00, 0x00, 0x07, 0x0E]);
    assert_eq!(sequence, 8);
}

#[test]
fn sequence_id_wraps_after_255() {
    let mut out = Vec::new();
    let mut sequence = 255;
    write_packet(&mut out, &mut sequence, b"a");
    write_packet(&mut out, &mut sequence, b"b");
    assert_eq!(out, [1, 0, 0, 255, b'a', 1, 0, 0, 0, b'b']);
}

fn frames(wire: &[u8]) -> Vec<(usize, u8)> {
    let mut frames = Vec::new();
    let mut position = 0;
    while position < wire.len() {
        let length = wire[position] as usize
            | (wire[position + 1] as usize) << 8
            | (wire[position + 2] as usize) << 16;
        frames.push((length, wire[position + 3]));
        position += 4 + length;
    }
    assert_eq!(position, wire.len());
    frames
}

#[test]
fn payload_of_16_mib_splits_into_frames_and_reassembles() {
    let payload: Vec<u8> = (0..MAX_FRAME_PAYLOAD_LENGTH + 10)
        .map(|index| (index % 251) as u8)
        .collect();
    let mut out = vec![0xAA]; // bytes already in the buffer stay untouched
    let mut sequence = 3;
    write_packet(&mut out, &mut sequence, &payload);
    assert_eq!(out[0], 0xAA);
    assert_eq!(frames(&out[1..]), [(MAX_FRAME_PAYLOAD_LENGTH, 3), (10, 4)]);
    assert_eq!(sequence, 5);
    let message = read_message(&out[1..], 3, 64 << 20).unwrap().unwrap();
    assert!(matches!(message.payload, Cow::Owned(_)));
    assert_eq!(message.payload.as_ref(), payload.as_slice());
    assert_eq!(message.consumed, out.len() - 1);
    assert_eq!(message.next_sequence, 5);
}

#[test]
fn exact_multiple_of_frame_size_ends_with_empty_frame() {
    let payload = vec![0x5A; MAX_FRAME_PAYLOAD_LENGTH * 2];
    let mut out = Vec::new();
    let mut sequence = 0;
    write_packet(&mut out, &mut sequence, &payload);
    assert_eq!(
        frames(&out),
        [
            (MAX_FRAME_PAYLOAD_LENGTH, 0),
            (MAX_FRAME_PAYLOAD_LENGTH, 1),
            (0, 2)
        ]
    );
    let message = read_message(&out, 0, 64 << 20).unwrap().unwrap();
    assert_eq!(message.payload.len(), payload.len());
    assert_eq!(message.next_sequence, 3);
    // Without the empty frame the message is incomplete.
    assert_eq!(
        read_message(&out[..out.len() - 4], 0, 64 << 20).unwrap(),
        None
    );
}

#[test]
fn reader_waits_for_a_complete_message() {
    let mut out = Vec::new();
    let mut sequence = 0;
    write_packet(&mut out, &mut sequence, b"hello");
    for cut in 0..out.len() {
        assert_eq!(
            read_message(&out[..cut], 0, 100).unwrap(),
            None,
            "cut at {cut}"
        );
    }
    let message = read_message(&out, 0, 100).unwrap().unwrap();
    assert!(matches!(message.payload, Cow::Borrowed(b"hello")));
}

#[test]
fn oversized_packet_is_refused_from_its_header() {
    // Only the header has arrived: the declared length already exceeds the limit.
    let header = [0x65, 0x00, 0x00, 0x00];
    assert_eq!(
        read_message(&header, 0, 100),
        Err(FramingError::TooLarge { limit: 100 })
    );
    let exactly = [&[100u8, 0, 0, 0][..], &[0u8; 100][..]].concat();
    assert!(read_message(&exactly, 0, 100).unwrap().is_some());
}

#[test]
fn reassembled_length_counts_against_the_limit() {
    let mut out = Vec::new();
    let mut sequence = 0;
    write_packet(
        &mut out,
        &mut sequence,
        &vec![1; MAX_FRAME_PAYLOAD_LENGTH + 1],
    );
    assert_eq!(
        read_message(&out, 0, MAX_FRAME_PAYLOAD_LENGTH),
        Err(FramingError::TooLarge {
            limit: MAX_FRAME_PAYLOAD_LENGTH
        })
    );
}

#[test]
fn unexpected_sequence_id_is_an_error() {
    assert_eq!(
        read_message(&[1, 0, 0, 5, 0x0E], 0, 100),
        Err(FramingError::OutOfOrder {
            expected: 0,
            received: 5
        })
    );
}

#[test]
fn lenenc_integers_use_the_shortest_form() {
    let cases: [(u64, &[u8]); 8] = [
        (0, &[0x00]),
        (250, &[0xFA]),
        (251, &[0xFC, 0xFB, 0x00]),
        (0xFFFF, &[0xFC, 0xFF, 0xFF]),
        (0x1_0000, &[0xFD, 0x00, 0x00, 0x01]),
        (0xFF_FFFF, &[0xFD, 0xFF, 0xFF, 0xFF]),
        (0x100_0000, &[0xFE, 0, 0, 0, 1, 0, 0, 0, 0]),
        (
            u64::MAX,
            &[0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        ),
    ];
    for (value, encoded) in cases {
        let mut out = Vec::new();
        write_lenenc_int(&mut out, value);
        assert_eq!(out, encoded, "{value}");
        let mut reader = PayloadReader::new(&out);
        assert_eq!(reader.read_lenenc_int("value").unwrap(), value);
        assert!(reader.is_empty());
    }
}

#[test]
fn lenenc_null_marker_and_0xff_are_not_integers() {
    for first in [0xFB, 0xFF] {
        assert!(matches!(
            PayloadReader::new(&[first]).read_lenenc_int("value"),
            Err(DecodeError::Invalid { .. })
        ));
    }
}

#[test]
fn truncated_lenenc_values_are_errors() {
    for bytes in [
        &[0xFCu8, 0x01][..],
        &[0xFD, 1, 2],
        &[0xFE, 1, 2, 3, 4, 5, 6, 7],
        &[],
    ] {
        assert!(matches!(
            PayloadReader::new(bytes).read_lenenc_int("value"),
            Err(DecodeError::Truncated { .. })
        ));
    }
    // A string announcing more bytes than remain.
    assert!(matches!(
        PayloadReader::new(&[5, b'a', b'b']).read_lenenc_bytes("text"),
        Err(DecodeError::Truncated { .. })
    ));
    // A huge announced length cannot overflow anything.
    let huge = [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, b'x'];
    assert!(PayloadReader::new(&huge).read_lenenc_bytes("text").is_err());
}

#[test]
fn strings_round_trip() {
    let mut out = Vec::new();
    write_lenenc_bytes(&mut out, b"def");
    write_nul_terminated(&mut out, b"root");
    out.extend_from_slice(b"rest");
    assert_eq!(out, b"\x03defroot\0rest");
    let mut reader = PayloadReader::new(&out);
    assert_eq!(reader.read_lenenc_bytes("catalog").unwrap(), b"def");
    assert_eq!(reader.read_nul_terminated("user").unwrap(), b"root");
    assert_eq!(reader.read_rest(), b"rest");
    assert!(reader.is_empty());
    assert!(
        PayloadReader::new(b"no terminator")
            .read_nul_terminated("user")
            .is_err()
    );
}

#[test]
fn fixed_integers_are_little_endian_and_bounds_checked() {
    let bytes = [1, 2, 3, 4, 5, 6, 7, 8];
    let mut reader = PayloadReader::new(&bytes);
    assert_eq!(reader.read_u16("a").unwrap(), 0x0201);
    assert_eq!(reader.read_u24("b").unwrap(), 0x050403);
    assert_eq!(reader.remaining(), 3);
    assert!(reader.read_u32("c").is_err());
    assert_eq!(reader.remaining(), 3, "a failed read consumes nothing");
    assert_eq!(
        PayloadReader::new(&bytes).read_u64("d").unwrap(),
        0x0807060504030201
    );
}

#[test]
fn wire_bound_covers_a_maximal_message() {
    let limit = 2 * MAX_FRAME_PAYLOAD_LENGTH + 5;
    let mut out = Vec::new();
    let mut sequence = 0;
    write_packet(&mut out, &mut sequence, &vec![0; limit]);
    assert!(out.len() <= max_message_wire_length(limit));
}
