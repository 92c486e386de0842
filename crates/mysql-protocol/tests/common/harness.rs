//! A test harness that plays the client against a [`ServerConnection`].

use std::sync::Arc;

use super::*;
use mysql_protocol::auth::{Account, AuthPlugin};
use mysql_protocol::constants::status::SERVER_STATUS_AUTOCOMMIT;
use mysql_protocol::{Event, OkPacket, ProtocolError, ServerConfig, ServerConnection};

pub const SCRAMBLE: [u8; 20] = *b"abcdefghijklmnopqrst";

pub const PUBLIC_KEY: &[u8] = b"-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n";

pub struct Harness {
    pub connection: ServerConnection,
    pub out: Vec<u8>,
}

impl Harness {
    pub fn new(config: ServerConfig) -> Harness {
        Self::with_scramble(config, SCRAMBLE, 42)
    }

    pub fn with_scramble(config: ServerConfig, scramble: [u8; 20], connection_id: u32) -> Harness {
        let mut connection =
            ServerConnection::new(Arc::new(config), connection_id, scramble, "10.0.0.7");
        let mut out = Vec::new();
        connection.write_handshake(&mut out);
        let greeting = packets(&out);
        assert_eq!(greeting.len(), 1);
        assert_eq!(greeting[0].sequence, 0);
        assert_eq!(scramble_of_handshake(&greeting[0].payload), scramble);
        Harness {
            connection,
            out: Vec::new(),
        }
    }

    pub fn send(&mut self, sequence: u8, payload: &[u8]) {
        let bytes = frame(sequence, payload);
        assert_eq!(self.connection.receive(&bytes), bytes.len());
    }

    pub fn event(&mut self) -> Option<Event> {
        self.connection.next_event(&mut self.out).unwrap()
    }

    pub fn output(&mut self) -> Vec<Packet> {
        let packets = packets(&self.out);
        self.out.clear();
        packets
    }

    /// Sends a command and returns its event.
    pub fn command(&mut self, payload: &[u8]) -> Event {
        self.send(0, payload);
        self.event().expect("an event for the command")
    }
}

pub fn sha2_config() -> ServerConfig {
    ServerConfig::default()
}

pub fn native_config() -> ServerConfig {
    ServerConfig {
        default_auth_plugin: AuthPlugin::MysqlNativePassword,
        ..ServerConfig::default()
    }
}

pub fn ok_payload(status: u16) -> Vec<u8> {
    let mut payload = vec![0, 0, 0];
    payload.extend_from_slice(&status.to_le_bytes());
    payload.extend_from_slice(&[0, 0]);
    payload
}

/// Accepts an `Event::Authenticated` with an OK and checks it is numbered `sequence`.
pub fn accept(harness: &mut Harness, sequence: u8) {
    let Some(Event::Authenticated(_)) = harness.event() else {
        panic!("Authenticated expected");
    };
    harness.connection.write_ok(
        &OkPacket {
            status: SERVER_STATUS_AUTOCOMMIT,
            ..OkPacket::default()
        },
        &mut harness.out,
    );
    let packets = harness.output();
    let ok = packets.last().unwrap();
    assert_eq!(
        (ok.sequence, ok.payload.clone()),
        (sequence, ok_payload(SERVER_STATUS_AUTOCOMMIT))
    );
    assert!(harness.connection.is_authenticated());
}

pub fn expect_denied(harness: &mut Harness, message: &str) {
    let Some(Event::AccessDenied { .. }) = harness.event() else {
        panic!("AccessDenied expected");
    };
    let packets = harness.output();
    let (code, state, text) = error_of(&packets.last().unwrap().payload);
    assert_eq!(
        (code, state.as_str(), text.as_str()),
        (1045, "28000", message)
    );
    assert!(harness.connection.is_closed());
    assert_eq!(
        harness.connection.next_event(&mut harness.out),
        Err(ProtocolError::Closed)
    );
}

pub fn forced_full_account(password: &[u8]) -> Account {
    Account {
        force_full_authentication: true,
        ..Account::with_password(AuthPlugin::CachingSha2Password, password)
    }
}

pub fn logged_in(config: ServerConfig) -> Harness {
    let mut harness = Harness::new(config);
    harness.send(
        1,
        &handshake_response(
            MODERN_CLIENT,
            "root",
            b"",
            None,
            Some("caching_sha2_password"),
            &[],
        ),
    );
    harness.event();
    harness.connection.supply_account(
        Some(&Account::with_password(
            AuthPlugin::CachingSha2Password,
            b"",
        )),
        &mut harness.out,
    );
    accept(&mut harness, 2);
    harness
}

/// The scramble the capture server used for connection `id`.
pub fn capture_scramble(id: u32) -> [u8; 20] {
    let mut scramble = [0u8; 20];
    for (index, byte) in scramble.iter_mut().enumerate() {
        *byte = ((index as u32 * 37 + id * 11) % 94 + 33) as u8;
    }
    scramble
}
