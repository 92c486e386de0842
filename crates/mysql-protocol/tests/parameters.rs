//! COM_STMT_EXECUTE parameter decoding for every type, and command packets.

mod common;

use common::hex;
use mysql_protocol::binary::{OwnedProtocolValue as Value, decode_execute_parameters};
use mysql_protocol::column::FieldType;
use mysql_protocol::command::{Command, StmtExecute, decode_command};
use mysql_protocol::constants::capabilities::*;
use mysql_protocol::constants::cursor::*;

/// Builds a parameter block: NULL bitmap, new-params-bound = 1, types, values.
fn block(types: &[(FieldType, bool)], nulls: &[usize], values: &[u8]) -> Vec<u8> {
    let mut bitmap = vec![0u8; types.len().div_ceil(8)];
    for &index in nulls {
        bitmap[index / 8] |= 1 << (index % 8);
    }
    let mut block = bitmap;
    block.push(1);
    for &(field_type, unsigned) in types {
        block.push(field_type as u8);
        block.push(if unsigned { 0x80 } else { 0 });
    }
    block.extend_from_slice(values);
    block
}

fn decode(types: &[(FieldType, bool)], values: &str) -> Vec<Value> {
    let mut previous = Vec::new();
    let result = decode_execute_parameters(
        &block(types, &[], &hex(values)),
        types.len(),
        &mut previous,
        &[],
    )
    .unwrap();
    assert_eq!(previous, types);
    result
}

#[test]
fn integers_take_their_type_width_and_sign() {
    use FieldType::*;
    let types = [
        (Tiny, false),
        (Tiny, true),
        (Short, false),
        (Year, true),
        (Int24, false),
        (Long, true),
        (LongLong, false),
        (LongLong, true),
    ];
    let values = "ff ff feff e707 feffffff ffffffff ffffffffffffff7f ffffffffffffffff";
    assert_eq!(
        decode(&types, values),
        [
            Value::Int(-1),
            Value::UInt(255),
            Value::Int(-2),
            Value::UInt(2023),
            Value::Int(-2),
            Value::UInt(u32::MAX as u64),
            Value::Int(i64::MAX),
            Value::UInt(u64::MAX),
        ]
    );
}

#[test]
fn floats_and_strings() {
    use FieldType::*;
    let types = [
        (Float, false),
        (Double, false),
        (VarString, false),
        (NewDecimal, false),
        (Blob, false),
        (String, false),
        (Json, false),
        (Null, false),
    ];
    let values = "0000c03f 000000000000d0bf 026869 0431322e35 00 fc0001".to_string()
        + &"61".repeat(256)
        + " 027b7d";
    let decoded = decode(&types, &values);
    assert_eq!(decoded[0], Value::Float(1.5));
    assert_eq!(decoded[1], Value::Double(-0.25));
    assert_eq!(decoded[2], Value::Bytes(b"hi".to_vec()));
    assert_eq!(decoded[3], Value::Bytes(b"12.5".to_vec()));
    assert_eq!(decoded[4], Value::Bytes(Vec::new()));
    assert_eq!(decoded[5], Value::Bytes(vec![b'a'; 256]));
    assert_eq!(decoded[6], Value::Bytes(b"{}".to_vec()));
    assert_eq!(
        decoded[7],
        Value::Null,
        "MYSQL_TYPE_NULL has no value bytes"
    );
}

#[test]
fn dates_and_times_in_every_length() {
    use FieldType::*;
    let types = [
        (Date, false),
        (Date, false),
        (DateTime, false),
        (DateTime, false),
        (Timestamp, false),
        (DateTime, false),
        (Time, false),
        (Time, false),
        (Time, false),
    ];
    let values = "00
                  04 da07 0a 11
                  04 da07 0a 11
                  07 da07 0a 11 13 1b 1e
                  0b da07 0a 11 13 1b 1e 40e20100
                  00
                  00
                  08 01 78000000 13 1b 1e
                  0c 00 01000000 02 03 04 05000000";
    let zero_time = Value::Time {
        negative: false,
        days: 0,
        hours: 0,
        minutes: 0,
        seconds: 0,
        microsecond: 0,
    };
    let datetime = |hour, minute, second, microsecond| Value::DateTime {
        year: 2010,
        month: 10,
        day: 17,
        hour,
        minute,
        second,
        microsecond,
    };
    assert_eq!(
        decode(&types, values),
        [
            Value::Date {
                year: 0,
                month: 0,
                day: 0
            },
            Value::Date {
                year: 2010,
                month: 10,
                day: 17
            },
            datetime(0, 0, 0, 0),
            datetime(19, 27, 30, 0),
            datetime(19, 27, 30, 123_456),
            Value::DateTime {
                year: 0,
                month: 0,
                day: 0,
                hour: 0,
                minute: 0,
                second: 0,
                microsecond: 0
            },
            zero_time,
            Value::Time {
                negative: true,
                days: 120,
                hours: 19,
                minutes: 27,
                seconds: 30,
                microsecond: 0
            },
            Value::Time {
                negative: false,
                days: 1,
                hours: 2,
                minutes: 3,
                seconds: 4,
                microsecond: 5
            },
        ]
    );
}

#[test]
fn invalid_temporal_lengths_are_errors() {
    for (field_type, values) in [
        (FieldType::Date, "05 0000000000"),
        (FieldType::Time, "04 00000000"),
        (FieldType::DateTime, "0d"),
    ] {
        let mut previous = Vec::new();
        let result = decode_execute_parameters(
            &block(&[(field_type, false)], &[], &hex(values)),
            1,
            &mut previous,
            &[],
        );
        assert!(result.is_err(), "{field_type:?} {values}");
    }
}

#[test]
fn null_bitmap_skips_values() {
    use FieldType::*;
    let types = vec![(Long, false); 10];
    // Parameters 0, 8 and 9 are NULL: the bitmap takes 2 bytes.
    let values = hex(&"01000000".repeat(7));
    let block = block(&types, &[0, 8, 9], &values);
    assert_eq!(&block[..3], &[0x01, 0x03, 1]);
    let decoded = decode_execute_parameters(&block, 10, &mut Vec::new(), &[]).unwrap();
    assert_eq!(decoded[0], Value::Null);
    assert_eq!(decoded[1..8], vec![Value::Int(1); 7]);
    assert_eq!(decoded[8..], [Value::Null, Value::Null]);
}

/// Captured from libmariadb: `mysql_stmt_execute` with TINY UNSIGNED 200,
/// SHORT -300, LONG -70000, FLOAT 1.5, DOUBLE -2.25, DATETIME
/// 2021-03-04 05:06:07.000008, TIME -30:01:02 and a NULL BLOB; then a
/// second execute that rebinds no types (LONG now 5).
#[test]
fn real_client_blocks_decode_and_reuse_types() {
    let first = [
        128, 1, 1, 128, 2, 0, 3, 0, 4, 0, 5, 0, 12, 0, 11, 0, 252, 0, 200, 212, 254, 144, 238, 254,
        255, 0, 0, 192, 63, 0, 0, 0, 0, 0, 0, 2, 192, 11, 229, 7, 3, 4, 5, 6, 7, 8, 0, 0, 0, 8, 1,
        0, 0, 0, 0, 30, 1, 2,
    ];
    let mut types = Vec::new();
    let values = decode_execute_parameters(&first, 8, &mut types, &[]).unwrap();
    let expected_tail = [
        Value::Float(1.5),
        Value::Double(-2.25),
        Value::DateTime {
            year: 2021,
            month: 3,
            day: 4,
            hour: 5,
            minute: 6,
            second: 7,
            microsecond: 8,
        },
        Value::Time {
            negative: true,
            days: 0,
            hours: 30,
            minutes: 1,
            seconds: 2,
            microsecond: 0,
        },
        Value::Null,
    ];
    assert_eq!(
        values[..3],
        [Value::UInt(200), Value::Int(-300), Value::Int(-70000)]
    );
    assert_eq!(values[3..], expected_tail);
    let second = [
        128, 0, 200, 212, 254, 5, 0, 0, 0, 0, 0, 192, 63, 0, 0, 0, 0, 0, 0, 2, 192, 11, 229, 7, 3,
        4, 5, 6, 7, 8, 0, 0, 0, 8, 1, 0, 0, 0, 0, 30, 1, 2,
    ];
    let values = decode_execute_parameters(&second, 8, &mut types, &[]).unwrap();
    assert_eq!(values[2], Value::Int(5));
    assert_eq!(values[3..], expected_tail);
}

#[test]
fn execute_without_types_needs_earlier_types() {
    let block = [0x00, 0x00, 0x01];
    assert!(decode_execute_parameters(&block, 1, &mut Vec::new(), &[]).is_err());
    let mut previous = vec![(FieldType::Tiny, false)];
    assert_eq!(
        decode_execute_parameters(&block, 1, &mut previous, &[]).unwrap(),
        [Value::Int(1)]
    );
    // A flag other than 0 or 1 is garbage.
    assert!(decode_execute_parameters(&[0x00, 0x02, 0x01], 1, &mut previous, &[]).is_err());
}

#[test]
fn bad_type_leaves_earlier_types_alone() {
    let mut previous = vec![(FieldType::Tiny, false)];
    let block = [0x00, 0x01, 0x63, 0x00, 0x01];
    assert!(decode_execute_parameters(&block, 1, &mut previous, &[]).is_err());
    assert_eq!(previous, [(FieldType::Tiny, false)]);
}

#[test]
fn long_data_replaces_block_bytes() {
    use FieldType::*;
    let types = [(Blob, false), (Long, false), (VarString, false)];
    let long_data = [
        Some(b"streamed".to_vec()),
        None,
        Some(b"ignored, NULL wins".to_vec()),
    ];
    let block = block(&types, &[2], &hex("2a000000"));
    let values = decode_execute_parameters(&block, 3, &mut Vec::new(), &long_data).unwrap();
    assert_eq!(
        values,
        [
            Value::Bytes(b"streamed".to_vec()),
            Value::Int(42),
            Value::Null
        ]
    );
    // Long data for a non-string parameter is refused, as MySQL does.
    let types = [(Long, false)];
    let block = self::block(&types, &[], &[]);
    assert!(decode_execute_parameters(&block, 1, &mut Vec::new(), &[Some(b"1".to_vec())]).is_err());
}

#[test]
fn truncated_blocks_are_errors() {
    use FieldType::*;
    let full = block(
        &[(LongLong, false), (VarString, false)],
        &[],
        &hex("0100000000000000 03616263"),
    );
    assert!(decode_execute_parameters(&full, 2, &mut Vec::new(), &[]).is_ok());
    for cut in 0..full.len() {
        assert!(
            decode_execute_parameters(&full[..cut], 2, &mut Vec::new(), &[]).is_err(),
            "cut at {cut}"
        );
    }
    assert_eq!(
        decode_execute_parameters(&[], 0, &mut Vec::new(), &[]).unwrap(),
        []
    );
}

#[test]
fn commands_decode() {
    let capabilities = common::MODERN_CLIENT;
    let cases: Vec<(Vec<u8>, Command)> = vec![
        (vec![0x01], Command::Quit),
        (b"\x02test".to_vec(), Command::InitDb("test".into())),
        (
            b"\x03select 1; select 2".to_vec(),
            Command::Query(b"select 1; select 2".to_vec()),
        ),
        (
            b"\x04t1\0col%".to_vec(),
            Command::FieldList {
                table: "t1".into(),
                wildcard: "col%".into(),
            },
        ),
        (vec![0x09], Command::Statistics),
        (vec![0x0E], Command::Ping),
        (vec![0x0C, 7, 0, 0, 0], Command::ProcessKill(7)),
        (vec![0x1F], Command::ResetConnection),
        (vec![0x1B, 1, 0], Command::SetOption(1)),
        (
            b"\x16select ?".to_vec(),
            Command::StmtPrepare(b"select ?".to_vec()),
        ),
        (
            vec![0x18, 1, 0, 0, 0, 2, 0, b'a', b'b'],
            Command::StmtSendLongData {
                statement_id: 1,
                parameter: 2,
                data: b"ab".to_vec(),
            },
        ),
        (vec![0x19, 3, 0, 0, 0], Command::StmtClose(3)),
        (vec![0x1A, 4, 0, 0, 0], Command::StmtReset(4)),
        (
            vec![0x1C, 5, 0, 0, 0, 10, 0, 0, 0],
            Command::StmtFetch {
                statement_id: 5,
                row_count: 10,
            },
        ),
        (vec![0x0D], Command::Debug),
        (vec![0x08], Command::Unknown(0x08)),
        (vec![0xEE, 1, 2], Command::Unknown(0xEE)),
        (vec![], Command::Unknown(0x00)),
    ];
    for (payload, expected) in cases {
        assert_eq!(
            decode_command(&payload, capabilities).unwrap(),
            expected,
            "{payload:?}"
        );
    }
}

#[test]
fn stmt_execute_and_its_cursor_flag() {
    let payload = [
        0x17,
        9,
        0,
        0,
        0,
        CURSOR_TYPE_READ_ONLY,
        1,
        0,
        0,
        0,
        0x00,
        0x01,
        0x08,
        0x00,
    ];
    let Command::StmtExecute(execute) = decode_command(&payload, CLIENT_PROTOCOL_41).unwrap()
    else {
        panic!("COM_STMT_EXECUTE expected");
    };
    assert_eq!(
        execute,
        StmtExecute {
            statement_id: 9,
            flags: CURSOR_TYPE_READ_ONLY,
            iteration_count: 1,
            parameters: vec![0, 1, 8, 0]
        }
    );
    assert!(execute.requests_cursor());
    let plain = StmtExecute {
        flags: CURSOR_TYPE_NO_CURSOR,
        ..execute
    };
    assert!(!plain.requests_cursor());
}

#[test]
fn malformed_commands_are_errors() {
    for payload in [
        &[0x0C, 1, 2][..],
        &[0x1B, 1],
        &[0x17, 1, 0, 0, 0, 0, 1, 0, 0],
        &[0x18, 1, 0, 0, 0, 2],
        &[0x19, 1, 0],
        &[0x1C, 1, 0, 0, 0, 1, 0],
        b"\x04no terminator",
        b"\x02\xff\xfe",
        &[0x11, b'u'],
    ] {
        assert!(
            decode_command(payload, common::MODERN_CLIENT).is_err(),
            "{payload:?}"
        );
    }
}

#[test]
fn change_user_decodes() {
    let mut payload = vec![0x11];
    payload.extend_from_slice(b"alice\0");
    payload.push(20);
    payload.extend_from_slice(&[7; 20]);
    payload.extend_from_slice(b"db\0");
    payload.extend_from_slice(&[0xFF, 0x00]);
    payload.extend_from_slice(b"mysql_native_password\0");
    payload.extend_from_slice(&hex("06 03 5f6f73 01 78"));
    let Command::ChangeUser(request) = decode_command(&payload, common::MODERN_CLIENT).unwrap()
    else {
        panic!("COM_CHANGE_USER expected");
    };
    assert_eq!(request.user, "alice");
    assert_eq!(request.auth_response, [7; 20]);
    assert_eq!(request.database.as_deref(), Some("db"));
    assert_eq!(request.character_set, Some(255));
    assert_eq!(
        request.auth_plugin_name.as_deref(),
        Some("mysql_native_password")
    );
    assert_eq!(
        request.connect_attributes,
        [("_os".to_string(), "x".to_string())]
    );
    // An old client stops after the database.
    let short = b"\x11bob\0\0\0";
    let Command::ChangeUser(request) = decode_command(short, common::MODERN_CLIENT).unwrap() else {
        panic!("COM_CHANGE_USER expected");
    };
    assert_eq!(
        (
            request.user.as_str(),
            request.database,
            request.character_set
        ),
        ("bob", None, None)
    );
}
