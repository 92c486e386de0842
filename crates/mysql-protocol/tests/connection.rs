//! The command phase through the connection state machine: framing,
//! limits, pipelining, commands and responses with their sequence ids.

mod common;

use common::harness::*;
use common::*;
use mysql_protocol::auth::*;
use mysql_protocol::column::{ColumnDefinition, FieldType, ProtocolValue};
use mysql_protocol::constants::capabilities::*;
use mysql_protocol::constants::status::*;
use mysql_protocol::{
    Command, Event, OkPacket, ProtocolError, RowFormat, ServerConfig, decode_execute_parameters,
};

#[test]
fn native_login_query_and_ping() {
    let mut harness = Harness::new(native_config());
    let response = native_password_scramble(b"hunter2", &SCRAMBLE);
    let payload = handshake_response(
        MODERN_CLIENT,
        "bob",
        &response,
        Some("shop"),
        Some("mysql_native_password"),
        &[("_client_name", "libmysql")],
    );
    harness.send(1, &payload);
    let Some(Event::Authenticate(request)) = harness.event() else {
        panic!("Authenticate expected");
    };
    assert_eq!(request.user, "bob");
    assert_eq!(request.database.as_deref(), Some("shop"));
    assert!(request.password_supplied && !request.tls && !request.change_user);
    assert_eq!(
        request.connect_attributes,
        [("_client_name".to_string(), "libmysql".to_string())]
    );
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::MysqlNativePassword,
            b"hunter2",
        )),
        &mut harness.out,
    );
    assert!(harness.out.is_empty(), "same plugin: no switch");
    accept(&mut harness, 2);
    assert_eq!(harness.connection.user(), "bob");
    assert_eq!(
        harness.connection.capabilities(),
        (MODERN_CLIENT | CLIENT_CONNECT_WITH_DB) & SERVER_DEFAULT
    );
    assert!(harness.connection.deprecate_eof());

    assert_eq!(
        harness.command(b"\x03select 1"),
        Event::Command(Command::Query(b"select 1".to_vec()))
    );
    let columns = [ColumnDefinition {
        schema: String::new(),
        table: String::new(),
        org_table: String::new(),
        name: "1".into(),
        org_name: String::new(),
        collation_id: 63,
        length: 1,
        field_type: FieldType::LongLong,
        flags: 0,
        decimals: 0,
    }];
    let mut writer = harness.connection.begin_result_set(
        RowFormat::Text,
        &columns,
        SERVER_STATUS_AUTOCOMMIT,
        &mut harness.out,
    );
    writer.write_text_row(&[Some(b"1")], &mut harness.out);
    writer.finish(SERVER_STATUS_AUTOCOMMIT, 0, &mut harness.out);
    let packets = harness.output();
    let sequences: Vec<u8> = packets.iter().map(|packet| packet.sequence).collect();
    assert_eq!(
        sequences,
        [1, 2, 3, 4],
        "a response continues from the command's sequence id"
    );

    assert_eq!(harness.command(&[0x0E]), Event::Command(Command::Ping));
    harness
        .connection
        .write_ok(&OkPacket::default(), &mut harness.out);
    assert_eq!(harness.output()[0].sequence, 1);

    assert_eq!(harness.command(&[0x01]), Event::Command(Command::Quit));
    assert!(harness.connection.is_closed());
    assert_eq!(harness.connection.receive(b"more"), 0);
}

#[test]
fn packet_bigger_than_max_allowed_packet() {
    let mut harness = logged_in(ServerConfig {
        max_allowed_packet: 1024,
        ..sha2_config()
    });
    let capacity = harness.connection.receive_capacity();
    assert!((1024..1024 + 16).contains(&capacity));
    // The header alone announces too much.
    harness.connection.receive(&[0x01, 0x04, 0x00, 0x00, 0x03]);
    assert_eq!(
        harness.connection.next_event(&mut harness.out),
        Err(ProtocolError::PacketTooLarge { limit: 1024 })
    );
    let packets = harness.output();
    let (code, state, message) = error_of(&packets[0].payload);
    assert_eq!(
        (code, state.as_str(), message.as_str()),
        (
            1153,
            "08S01",
            "Got a packet bigger than 'max_allowed_packet' bytes"
        )
    );
    assert_eq!(packets[0].sequence, 1);
    assert!(harness.connection.is_closed());
}

#[test]
fn input_buffer_is_bounded() {
    let mut harness = logged_in(ServerConfig {
        max_allowed_packet: 100,
        ..sha2_config()
    });
    let mut pings = Vec::new();
    for _ in 0..100 {
        pings.extend_from_slice(&frame(0, &[0x0E]));
    }
    let taken = harness.connection.receive(&pings);
    assert!(taken < pings.len() && taken <= 108, "took {taken}");
    let mut events = 0;
    let mut offered = taken;
    loop {
        while let Some(event) = harness.event() {
            assert_eq!(event, Event::Command(Command::Ping));
            events += 1;
        }
        if offered == pings.len() {
            break;
        }
        offered += harness.connection.receive(&pings[offered..]);
    }
    assert_eq!(events, 100);
}

#[test]
fn out_of_order_command_is_fatal() {
    let mut harness = logged_in(sha2_config());
    harness.send(3, &[0x0E]);
    assert_eq!(
        harness.connection.next_event(&mut harness.out),
        Err(ProtocolError::PacketOutOfOrder {
            expected: 0,
            received: 3
        })
    );
    assert_eq!(error_of(&harness.output()[0].payload).0, 1156);
}

#[test]
fn malformed_command_is_answered_and_the_connection_survives() {
    let mut harness = logged_in(sha2_config());
    // COM_STMT_CLOSE without its statement id, then a ping.
    harness.send(0, &[0x19, 0x01]);
    harness.send(0, &[0x0E]);
    assert_eq!(harness.event(), Some(Event::Command(Command::Ping)));
    let packets = harness.output();
    let (code, state, _) = error_of(&packets[0].payload);
    assert_eq!(
        (code, state.as_str(), packets[0].sequence),
        (1835, "HY000", 1)
    );
    harness
        .connection
        .write_ok(&OkPacket::default(), &mut harness.out);
    assert_eq!(harness.output()[0].sequence, 1);
}

#[test]
fn unknown_command_is_easy_to_refuse() {
    let mut harness = logged_in(sha2_config());
    assert_eq!(
        harness.command(&[0x08]),
        Event::Command(Command::Unknown(0x08))
    );
    harness.connection.write_unknown_command(&mut harness.out);
    let packets = harness.output();
    let (code, state, message) = error_of(&packets[0].payload);
    assert_eq!(
        (code, state.as_str(), message.as_str(), packets[0].sequence),
        (1047, "08S01", "Unknown command", 1)
    );
    assert!(!harness.connection.is_closed());
}

#[test]
fn byte_at_a_time_and_pipelined_input_give_the_same_events() {
    let mut harness = logged_in(sha2_config());
    let mut bytes = frame(0, b"\x03select 1");
    bytes.extend_from_slice(&frame(0, &[0x0E]));
    bytes.extend_from_slice(&frame(0, b"\x02db"));
    let mut events = Vec::new();
    for byte in &bytes {
        harness.connection.receive(std::slice::from_ref(byte));
        while let Some(event) = harness.event() {
            events.push(event);
        }
    }
    harness.connection.receive(&bytes);
    while let Some(event) = harness.event() {
        events.push(event);
    }
    let expected = [
        Event::Command(Command::Query(b"select 1".to_vec())),
        Event::Command(Command::Ping),
        Event::Command(Command::InitDb("db".into())),
    ];
    assert_eq!(events[..3], expected);
    assert_eq!(events[3..], expected);
}

#[test]
fn query_of_16_mib_spans_frames_and_the_answer_follows_them() {
    let mut harness = logged_in(sha2_config());
    let mut payload = b"\x03".to_vec();
    payload.extend(std::iter::repeat_n(b'x', 17 << 20));
    let mut bytes = frame(0, &payload);
    let mut offset = 0;
    let event = loop {
        offset += harness.connection.receive(&bytes[offset..]);
        if let Some(event) = harness.event() {
            break event;
        }
    };
    let Event::Command(Command::Query(query)) = event else {
        panic!("Query expected");
    };
    assert_eq!(query.len(), 17 << 20);
    harness
        .connection
        .write_ok(&OkPacket::default(), &mut harness.out);
    assert_eq!(
        harness.output()[0].sequence,
        2,
        "the query took frames 0 and 1"
    );
    bytes.clear();
}

#[test]
fn multi_statement_results_share_one_buffer() {
    let mut harness = logged_in(sha2_config());
    harness.command(b"\x03select 1; update t set a = 1");
    let column = ColumnDefinition {
        schema: String::new(),
        table: String::new(),
        org_table: String::new(),
        name: "1".into(),
        org_name: String::new(),
        collation_id: 63,
        length: 1,
        field_type: FieldType::LongLong,
        flags: 0,
        decimals: 0,
    };
    let status = SERVER_STATUS_AUTOCOMMIT;
    let mut writer = harness.connection.begin_result_set(
        RowFormat::Text,
        std::slice::from_ref(&column),
        status,
        &mut harness.out,
    );
    writer.write_text_row(&[Some(b"1")], &mut harness.out);
    writer.finish(status | SERVER_MORE_RESULTS_EXISTS, 0, &mut harness.out);
    harness.connection.write_ok(
        &OkPacket {
            affected_rows: 3,
            status,
            ..OkPacket::default()
        },
        &mut harness.out,
    );
    let packets = harness.output();
    assert_eq!(packets.len(), 5);
    assert_eq!(packets[3].payload, hex("fe 00 00 0a00 0000"));
    assert_eq!(
        (packets[4].sequence, packets[4].payload.clone()),
        (5, hex("00 03 00 0200 0000"))
    );
}

#[test]
fn prepared_statement_round_trip() {
    let mut harness = logged_in(sha2_config());
    assert_eq!(
        harness.command(b"\x16select ? + ?"),
        Event::Command(Command::StmtPrepare(b"select ? + ?".to_vec()))
    );
    let parameter = ColumnDefinition {
        schema: String::new(),
        table: String::new(),
        org_table: String::new(),
        name: "?".into(),
        org_name: String::new(),
        collation_id: 63,
        length: 0,
        field_type: FieldType::LongLong,
        flags: 0,
        decimals: 0,
    };
    let result = ColumnDefinition {
        name: "sum".into(),
        length: 20,
        ..parameter.clone()
    };
    harness.connection.write_prepare_ok(
        1,
        &[parameter.clone(), parameter],
        std::slice::from_ref(&result),
        0,
        2,
        &mut harness.out,
    );
    assert_eq!(harness.output().len(), 4);
    let mut execute = vec![
        0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0x00, 0x01, 0x08, 0x00, 0x08, 0x80,
    ];
    execute.extend_from_slice(&2i64.to_le_bytes());
    execute.extend_from_slice(&3u64.to_le_bytes());
    let Event::Command(Command::StmtExecute(command)) = harness.command(&execute) else {
        panic!("StmtExecute expected");
    };
    assert!(!command.requests_cursor());
    let mut types = Vec::new();
    let values = decode_execute_parameters(&command.parameters, 2, &mut types, &[]).unwrap();
    let sum = match (values[0].as_protocol_value(), values[1].as_protocol_value()) {
        (ProtocolValue::Int(a), ProtocolValue::UInt(b)) => a + b as i64,
        other => panic!("unexpected {other:?}"),
    };
    let mut writer = harness.connection.begin_result_set(
        RowFormat::Binary,
        std::slice::from_ref(&result),
        2,
        &mut harness.out,
    );
    writer.write_binary_row(&[ProtocolValue::Int(sum)], &mut harness.out);
    writer.finish(2, 0, &mut harness.out);
    let packets = harness.output();
    assert_eq!(packets[2].payload, hex("00 00 0500000000000000"));
    assert_eq!(
        packets
            .iter()
            .map(|packet| packet.sequence)
            .collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    // COM_STMT_CLOSE has no answer; the next command starts from 0 again.
    assert_eq!(
        harness.command(&[0x19, 1, 0, 0, 0]),
        Event::Command(Command::StmtClose(1))
    );
    assert_eq!(harness.command(&[0x0E]), Event::Command(Command::Ping));
}
