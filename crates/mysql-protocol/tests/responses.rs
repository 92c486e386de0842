//! Response packets, byte for byte against the MySQL documentation's
//! examples, and result sets in both row formats.

mod common;

use common::*;
use mysql_protocol::column::{ColumnDefinition, FieldType, ProtocolValue, flags};
use mysql_protocol::constants::capabilities::*;
use mysql_protocol::response::*;
use mysql_protocol::result_set::{ResultSetWriter, RowFormat, write_field_list};

const PROTOCOL_41_ONLY: u32 = CLIENT_PROTOCOL_41;
const WITH_DEPRECATE_EOF: u32 = CLIENT_PROTOCOL_41 | CLIENT_DEPRECATE_EOF;

fn column(name: &str, field_type: FieldType, collation_id: u16, length: u32) -> ColumnDefinition {
    ColumnDefinition {
        schema: String::new(),
        table: String::new(),
        org_table: String::new(),
        name: name.to_string(),
        org_name: String::new(),
        collation_id,
        length,
        field_type,
        flags: 0,
        decimals: 0,
    }
}

#[test]
fn ok_packet_matches_documentation_example() {
    let mut out = Vec::new();
    let mut sequence = 2;
    let ok = OkPacket {
        status: 2,
        ..OkPacket::default()
    };
    write_ok_packet(&mut out, &mut sequence, PROTOCOL_41_ONLY, &ok, false);
    assert_eq!(out, hex("07 00 00 02 00 00 00 02 00 00 00"));
    assert_eq!(sequence, 3);
}

#[test]
fn ok_packet_with_counts_and_info() {
    let mut out = Vec::new();
    let mut sequence = 1;
    let ok = OkPacket {
        affected_rows: 300,
        last_insert_id: 5,
        status: 3,
        warnings: 1,
        info: "Rows matched: 1",
    };
    write_ok_packet(&mut out, &mut sequence, WITH_DEPRECATE_EOF, &ok, false);
    let mut expected = hex("00 fc2c01 05 0300 0100 0f");
    expected.extend_from_slice(b"Rows matched: 1");
    assert_eq!(
        packets(&out),
        [Packet {
            sequence: 1,
            payload: expected
        }]
    );
}

#[test]
fn error_packet_matches_documentation_example() {
    let mut out = Vec::new();
    let mut sequence = 1;
    write_error_packet(
        &mut out,
        &mut sequence,
        PROTOCOL_41_ONLY,
        1096,
        "HY000",
        "No tables used",
    );
    assert_eq!(
        out,
        hex("17 00 00 01 ff 48 04 23 48 59 30 30 30 4e 6f 20 74 61 62 6c 65 73 20 75 73 65 64")
    );
}

#[test]
fn error_message_is_cut_at_a_character_boundary() {
    let mut out = Vec::new();
    let message = "é".repeat(300); // 600 bytes
    write_error_packet(&mut out, &mut 0, PROTOCOL_41_ONLY, 1064, "42000", &message);
    let (code, state, text) = error_of(&packets(&out)[0].payload);
    assert_eq!((code, state.as_str()), (1064, "42000"));
    assert_eq!(text.len(), 510, "511 bytes would split a character");
}

#[test]
fn error_packet_for_pre_41_client_has_no_sql_state() {
    let mut out = Vec::new();
    write_error_packet(&mut out, &mut 2, 0, 1251, "08004", "upgrade");
    assert_eq!(packets(&out)[0].payload, hex("ff e304 75706772616465"));
}

#[test]
#[should_panic(expected = "SQLSTATE")]
fn malformed_sql_state_is_a_caller_bug() {
    write_error_packet(&mut Vec::new(), &mut 0, PROTOCOL_41_ONLY, 1, "HY00", "x");
}

#[test]
fn eof_packet_matches_documentation_example() {
    let mut out = Vec::new();
    write_eof_packet(&mut out, &mut 5, PROTOCOL_41_ONLY, 2, 0);
    assert_eq!(out, hex("05 00 00 05 fe 00 00 02 00"));
}

#[test]
fn text_result_set_matches_documentation_example() {
    // `SELECT @@version_comment LIMIT 1` from the protocol documentation.
    let mut out = Vec::new();
    let mut sequence = 1;
    let columns = [ColumnDefinition {
        decimals: 0x1f,
        ..column("@@version_comment", FieldType::VarString, 8, 0x1c)
    }];
    let mut writer = ResultSetWriter::begin(
        &mut sequence,
        PROTOCOL_41_ONLY,
        RowFormat::Text,
        &columns,
        2,
        &mut out,
    );
    writer.write_text_row(&[Some(b"MySQL Community Server (GPL)")], &mut out);
    writer.finish(2, 0, &mut out);
    let expected = hex("01 00 00 01 01 27 00 00 02 03 64 65 66 00 00 00
         11 40 40 76 65 72 73 69 6f 6e 5f 63 6f 6d 6d 65
         6e 74 00 0c 08 00 1c 00 00 00 fd 00 00 1f 00 00
         05 00 00 03 fe 00 00 02 00 1d 00 00 04 1c 4d 79
         53 51 4c 20 43 6f 6d 6d 75 6e 69 74 79 20 53 65
         72 76 65 72 20 28 47 50 4c 29 05 00 00 05 fe 00
         00 02 00");
    assert_eq!(out, expected);
}

#[test]
fn deprecate_eof_drops_the_metadata_eof_and_ends_with_fe_ok() {
    let mut out = Vec::new();
    let mut sequence = 1;
    let columns = [
        column("a", FieldType::LongLong, 63, 20),
        column("b", FieldType::VarString, 255, 80),
    ];
    let mut writer = ResultSetWriter::begin(
        &mut sequence,
        WITH_DEPRECATE_EOF,
        RowFormat::Text,
        &columns,
        2,
        &mut out,
    );
    let mut row = writer.text_row(&mut out);
    row.push_signed(-42);
    row.push(None);
    row.finish();
    let mut row = writer.text_row(&mut out);
    row.push_unsigned(u64::MAX);
    row.push(Some(b""));
    row.finish();
    writer.finish(2 | 8, 3, &mut out);
    let packets = packets(&out);
    assert_eq!(packets.len(), 1 + 2 + 2 + 1);
    assert_eq!(packets[0].payload, [2]);
    assert_eq!(packets[3].payload, hex("03 2d3432 fb"));
    let mut max = vec![20u8];
    max.extend_from_slice(b"18446744073709551615");
    max.push(0);
    assert_eq!(packets[4].payload, max);
    // The 0xFE OK: no affected rows, no insert id, status with
    // SERVER_MORE_RESULTS_EXISTS, 3 warnings.
    assert_eq!(packets[5].payload, hex("fe 00 00 0a00 0300"));
    assert_eq!(packets[5].sequence, 6);
}

#[test]
fn binary_row_has_null_bitmap_with_offset_two() {
    let mut out = Vec::new();
    let mut sequence = 1;
    let columns = [
        column("tiny", FieldType::Tiny, 63, 4),
        column("null", FieldType::Long, 63, 11),
        column("short", FieldType::Short, 63, 6),
        column("int24", FieldType::Int24, 63, 9),
        column("year", FieldType::Year, 63, 4),
        column("big", FieldType::LongLong, 63, 20),
        column("float", FieldType::Float, 63, 12),
        column("double", FieldType::Double, 63, 22),
        column("text", FieldType::VarString, 255, 80),
        column("null2", FieldType::Blob, 63, 80),
    ];
    let mut writer = ResultSetWriter::begin(
        &mut sequence,
        WITH_DEPRECATE_EOF,
        RowFormat::Binary,
        &columns,
        2,
        &mut out,
    );
    writer.write_binary_row(
        &[
            ProtocolValue::Int(-1),
            ProtocolValue::Null,
            ProtocolValue::Int(-2),
            ProtocolValue::UInt(0x00AB_CDEF),
            ProtocolValue::UInt(2024),
            ProtocolValue::Int(i64::MIN),
            ProtocolValue::Float(1.5),
            ProtocolValue::Double(-0.25),
            ProtocolValue::Bytes(b"hi"),
            ProtocolValue::Null,
        ],
        &mut out,
    );
    writer.finish(2, 0, &mut out);
    let packets = packets(&out);
    let row = &packets[1 + columns.len()].payload;
    // Columns 1 and 9 are NULL: bits 3 and 11 of a (10+9)/8 = 2-byte bitmap.
    let expected = hex("00 0808
         ff
         feff
         efcdab00
         e807
         0000000000000080
         0000c03f
         000000000000d0bf
         026869");
    assert_eq!(row, &expected);
}

#[test]
fn binary_temporal_values_use_the_shortest_form() {
    let cases: Vec<(FieldType, ProtocolValue<'static>, &str)> = vec![
        (
            FieldType::Date,
            ProtocolValue::Date {
                year: 0,
                month: 0,
                day: 0,
            },
            "00",
        ),
        (
            FieldType::Date,
            ProtocolValue::Date {
                year: 2010,
                month: 10,
                day: 17,
            },
            "04 da07 0a 11",
        ),
        (
            FieldType::DateTime,
            ProtocolValue::DateTime {
                year: 2010,
                month: 10,
                day: 17,
                hour: 0,
                minute: 0,
                second: 0,
                microsecond: 0,
            },
            "04 da07 0a 11",
        ),
        (
            FieldType::Timestamp,
            ProtocolValue::DateTime {
                year: 2010,
                month: 10,
                day: 17,
                hour: 19,
                minute: 27,
                second: 30,
                microsecond: 0,
            },
            "07 da07 0a 11 13 1b 1e",
        ),
        (
            FieldType::DateTime,
            ProtocolValue::DateTime {
                year: 2010,
                month: 10,
                day: 17,
                hour: 19,
                minute: 27,
                second: 30,
                microsecond: 1,
            },
            "0b da07 0a 11 13 1b 1e 01000000",
        ),
        (
            FieldType::Time,
            ProtocolValue::Time {
                negative: false,
                days: 0,
                hours: 0,
                minutes: 0,
                seconds: 0,
                microsecond: 0,
            },
            "00",
        ),
        (
            FieldType::Time,
            ProtocolValue::Time {
                negative: true,
                days: 120,
                hours: 19,
                minutes: 27,
                seconds: 30,
                microsecond: 0,
            },
            "08 01 78000000 13 1b 1e",
        ),
        (
            FieldType::Time,
            ProtocolValue::Time {
                negative: false,
                days: 0,
                hours: 0,
                minutes: 0,
                seconds: 0,
                microsecond: 7,
            },
            "0c 00 00000000 00 00 00 07000000",
        ),
    ];
    for (field_type, value, expected) in cases {
        let mut out = Vec::new();
        mysql_protocol::binary::encode_binary_value(&mut out, field_type, &value);
        assert_eq!(out, hex(expected), "{field_type:?} {value:?}");
    }
}

#[test]
#[should_panic(expected = "does not fit")]
fn binary_value_of_the_wrong_kind_is_a_caller_bug() {
    mysql_protocol::binary::encode_binary_value(
        &mut Vec::new(),
        FieldType::Long,
        &ProtocolValue::Bytes(b"1"),
    );
}

#[test]
#[should_panic(expected = "one value per column")]
fn text_row_with_missing_column_is_a_caller_bug() {
    let mut out = Vec::new();
    let mut sequence = 1;
    let columns = [
        column("a", FieldType::VarString, 255, 10),
        column("b", FieldType::VarString, 255, 10),
    ];
    let mut writer = ResultSetWriter::begin(
        &mut sequence,
        WITH_DEPRECATE_EOF,
        RowFormat::Text,
        &columns,
        2,
        &mut out,
    );
    writer.write_text_row(&[Some(b"only one")], &mut out);
}

#[test]
fn row_of_16_mib_is_split_into_frames() {
    let mut out = Vec::new();
    let mut sequence = 1;
    let columns = [column("blob", FieldType::LongBlob, 63, u32::MAX)];
    let mut writer = ResultSetWriter::begin(
        &mut sequence,
        WITH_DEPRECATE_EOF,
        RowFormat::Text,
        &columns,
        2,
        &mut out,
    );
    let big = vec![b'x'; 20 << 20];
    writer.write_text_row(&[Some(&big)], &mut out);
    writer.finish(2, 0, &mut out);
    let packets = packets(&out);
    assert_eq!(packets.len(), 4);
    // 20 MiB needs the 8-byte length form.
    assert_eq!(packets[2].payload.len(), 9 + big.len());
    assert_eq!(
        &packets[2].payload[..9],
        hex("fe 00004001 00000000").as_slice()
    );
    // The row took two frames (sequence 3 and 4), so the terminator is 5.
    assert_eq!((packets[2].sequence, packets[3].sequence), (3, 5));
}

#[test]
fn prepare_ok_with_parameters_and_columns() {
    let parameter = column("?", FieldType::VarString, 63, 0);
    let result = ColumnDefinition {
        flags: flags::NOT_NULL | flags::UNSIGNED,
        ..column("id", FieldType::LongLong, 63, 20)
    };
    for (capabilities, packet_count) in [
        (PROTOCOL_41_ONLY, 1 + 2 + 1 + 1 + 1),
        (WITH_DEPRECATE_EOF, 1 + 2 + 1),
    ] {
        let mut out = Vec::new();
        let mut sequence = 1;
        write_prepare_ok(
            &mut out,
            &mut sequence,
            capabilities,
            7,
            &[parameter.clone(), parameter.clone()],
            std::slice::from_ref(&result),
            1,
            2,
        );
        let packets = packets(&out);
        assert_eq!(packets.len(), packet_count);
        assert_eq!(packets[0].payload, hex("00 07000000 0100 0200 00 0100"));
        let last = packets.last().unwrap();
        if capabilities & CLIENT_DEPRECATE_EOF == 0 {
            assert_eq!(packets[3].payload, hex("fe 0000 0200"));
            assert_eq!(last.payload, hex("fe 0000 0200"));
        } else {
            assert_eq!(&last.payload[..4], hex("03 646566").as_slice());
        }
    }
    // A statement without parameters or columns is one packet.
    let mut out = Vec::new();
    write_prepare_ok(&mut out, &mut 1, PROTOCOL_41_ONLY, 1, &[], &[], 0, 2);
    assert_eq!(packets(&out).len(), 1);
}

#[test]
fn column_definition_layout() {
    let mut out = Vec::new();
    let definition = ColumnDefinition {
        schema: "db".into(),
        table: "t".into(),
        org_table: "tbl".into(),
        name: "c".into(),
        org_name: "col".into(),
        collation_id: 255,
        length: 400,
        field_type: FieldType::VarString,
        flags: flags::NOT_NULL | flags::PRIMARY_KEY,
        decimals: 0,
    };
    write_column_definition(&mut out, &mut 2, &definition, false);
    let expected =
        hex("03646566 026462 0174 0374626c 0163 03636f6c 0c ff00 90010000 fd 0300 00 0000");
    assert_eq!(packets(&out)[0].payload, expected);
}

#[test]
fn field_list_columns_carry_a_default_value() {
    let mut out = Vec::new();
    let columns = [column("a", FieldType::Long, 63, 11)];
    write_field_list(&mut out, &mut 1, PROTOCOL_41_ONLY, &columns, 2);
    let packets = packets(&out);
    assert_eq!(packets.len(), 2);
    assert_eq!(*packets[0].payload.last().unwrap(), 0xFB);
    assert_eq!(packets[1].payload, hex("fe 0000 0200"));
}
