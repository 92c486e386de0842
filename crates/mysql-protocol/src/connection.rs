//! The server side of one connection as a state machine: bytes in, events
//! out, responses appended to the caller's buffer.
//!
//! Phases: greeting (the Initial Handshake is written) → handshake response
//! (possibly an SSLRequest first, then TLS, then the response) →
//! authentication (account lookup by the runtime, AuthSwitchRequest,
//! caching_sha2_password's fast path or full authentication) → command
//! phase → closed. COM_CHANGE_USER goes back through authentication.
//!
//! Sequence ids: the greeting is 0, and every packet in either direction
//! of the connection phase takes the next one. In the command phase each
//! command starts again at 0 and the response continues from the command's
//! last sequence id + 1; the connection keeps that count, so every
//! response method here writes correctly numbered packets.

use std::sync::Arc;

use crate::auth::{AuthPlugin, SCRAMBLE_LENGTH};
use crate::column::ColumnDefinition;
use crate::command::{Command, decode_command};
use crate::constants::UTF8MB4_0900_AI_CI;
use crate::constants::capabilities::{
    CLIENT_DEPRECATE_EOF, CLIENT_PLUGIN_AUTH, CLIENT_PROTOCOL_41, CLIENT_SESSION_TRACK, CLIENT_SSL,
    SERVER_DEFAULT,
};
use crate::constants::error_codes::{ER_MALFORMED_PACKET, ER_UNKNOWN_COM_ERROR};
use crate::constants::status::SERVER_STATUS_AUTOCOMMIT;
use crate::error::{DecodeError, ProtocolError};
use crate::handshake::{
    ClientHandshake, InitialHandshake, decode_client_handshake, encode_initial_handshake,
};
use crate::packet::{
    DEFAULT_MAX_ALLOWED_PACKET, FramingError, begin_packet, finish_packet, max_message_wire_length,
    read_message,
};
use crate::response::{
    OkPacket, write_end_of_rows, write_error_packet, write_ok_packet, write_prepare_ok,
};
use crate::result_set::{ResultSetWriter, RowFormat, write_field_list, write_text_packet};

pub(crate) use crate::authentication::{PendingAuthentication, Verification};

/// Settings shared by every connection of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The version the handshake announces, e.g. "8.0.40-shoal".
    pub server_version: String,
    /// The plugin the handshake's scramble is meant for.
    pub default_auth_plugin: AuthPlugin,
    /// Whether to advertise `CLIENT_SSL` (the runtime can do TLS).
    pub tls_available: bool,
    /// The largest reassembled packet accepted from a client.
    pub max_allowed_packet: usize,
    /// The collation id announced in the handshake.
    pub character_set: u8,
    /// The PEM public key sent to a `caching_sha2_password` client that
    /// asks for it (full authentication without TLS); `None` refuses such
    /// clients.
    pub rsa_public_key_pem: Option<Vec<u8>>,
    /// Whether to advertise `CLIENT_SESSION_TRACK` (no session state is
    /// ever reported; the flag only changes the OK packet's layout rules).
    pub session_tracking: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            server_version: "8.0.40-shoal".to_string(),
            default_auth_plugin: AuthPlugin::CachingSha2Password,
            tls_available: false,
            max_allowed_packet: DEFAULT_MAX_ALLOWED_PACKET,
            character_set: UTF8MB4_0900_AI_CI,
            rsa_public_key_pem: None,
            session_tracking: false,
        }
    }
}

impl ServerConfig {
    /// The capability flags this configuration advertises.
    pub fn capabilities(&self) -> u32 {
        let mut capabilities = SERVER_DEFAULT;
        if self.tls_available {
            capabilities |= CLIENT_SSL;
        }
        if self.session_tracking {
            capabilities |= CLIENT_SESSION_TRACK;
        }
        capabilities
    }
}

/// What the runtime must act on next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The client sent SSLRequest. Take the bytes it sent after it with
    /// [`ServerConnection::take_pending_input`] (the start of its TLS
    /// handshake), run TLS on the socket, then call
    /// [`ServerConnection::tls_established`] and feed decrypted bytes.
    StartTls,
    /// Look the account up and answer with
    /// [`ServerConnection::supply_account`].
    Authenticate(AuthenticationRequest),
    /// A `caching_sha2_password` client sent its password RSA-encrypted
    /// with the configured public key. Decrypt it with the private key
    /// (RSA-OAEP, SHA-1, as MySQL 8.0 clients encrypt) and answer with
    /// [`ServerConnection::supply_decrypted_password`].
    DecryptPassword {
        /// The ciphertext as the client sent it.
        ciphertext: Vec<u8>,
    },
    /// The credentials are good. Answer with
    /// [`ServerConnection::write_ok`] (the client is then in), or an ERR
    /// such as 1049 "Unknown database" followed by closing.
    Authenticated(AuthenticatedSession),
    /// The credentials were refused; the ERR packet (1045, or 1251 for a
    /// client that cannot switch plugins) is in the output buffer. Flush it
    /// and close the connection.
    AccessDenied {
        /// The user that was refused.
        user: String,
    },
    /// A command to execute and answer. After [`Command::Quit`] the
    /// connection is closed.
    Command(Command),
}

/// Who wants to log in: the handshake response or COM_CHANGE_USER.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticationRequest {
    /// The user name.
    pub user: String,
    /// The database to use, if the client named one.
    pub database: Option<String>,
    /// The plugin the client used for its first answer, if named.
    pub auth_plugin_name: Option<String>,
    /// The client's character set (collation id), if it sent one.
    pub character_set: Option<u16>,
    /// Connection attributes (`_client_name`, `program_name`, ...).
    pub connect_attributes: Vec<(String, String)>,
    /// Whether the connection runs over TLS.
    pub tls: bool,
    /// Whether this is COM_CHANGE_USER on an established connection
    /// (success resets the session: transaction, variables, statements).
    pub change_user: bool,
    /// Whether the client's first answer was non-empty (what "using
    /// password" in error messages reports).
    pub password_supplied: bool,
}

/// The result of a successful authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatedSession {
    /// The authenticated user.
    pub user: String,
    /// The database to use, if the client named one.
    pub database: Option<String>,
    /// Whether this was COM_CHANGE_USER.
    pub change_user: bool,
}

/// Where the connection stands.
#[derive(Debug)]
pub(crate) enum Phase {
    /// Created; the Initial Handshake is not written yet.
    Greeting,
    /// Waiting for SSLRequest or HandshakeResponse41.
    AwaitingHandshakeResponse,
    /// SSLRequest received; waiting for the runtime to finish TLS.
    AwaitingTls,
    /// `Event::Authenticate` emitted; waiting for `supply_account`.
    AwaitingAccount(PendingAuthentication),
    /// AuthSwitchRequest sent; waiting for the client's answer.
    AwaitingAuthSwitchResponse(Verification),
    /// `perform_full_authentication` sent; waiting for the password (TLS),
    /// a public-key request or the RSA ciphertext.
    AwaitingFullAuthentication(Verification),
    /// The public key was sent; waiting for the RSA ciphertext.
    AwaitingEncryptedPassword(Verification),
    /// `Event::DecryptPassword` emitted; waiting for the plaintext.
    AwaitingDecryption(Verification),
    /// Authentication ended; the outcome is reported by `next_event`.
    AuthenticationOutcome(Event),
    /// Reading commands.
    Command,
    /// Nothing more is read or written.
    Closed,
}

/// One client connection, server side. See the crate documentation for
/// the sequence of calls.
#[derive(Debug)]
pub struct ServerConnection {
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) connection_id: u32,
    pub(crate) scramble: [u8; SCRAMBLE_LENGTH],
    pub(crate) peer_host: String,
    /// Negotiated capabilities: the server's until the client answers,
    /// then what both sides have.
    pub(crate) capabilities: u32,
    pub(crate) phase: Phase,
    input: Vec<u8>,
    /// Bytes of `input` already consumed.
    input_start: usize,
    /// The sequence id of the next packet in either direction.
    pub(crate) sequence: u8,
    pub(crate) tls_active: bool,
    /// The authenticated user (empty before authentication).
    pub(crate) user: String,
}

impl ServerConnection {
    /// A connection about to greet its client. `scramble` must be 20
    /// random bytes without NUL; `peer_host` appears in "Access denied"
    /// messages.
    pub fn new(
        config: Arc<ServerConfig>,
        connection_id: u32,
        scramble: [u8; SCRAMBLE_LENGTH],
        peer_host: &str,
    ) -> Self {
        assert!(
            !scramble.contains(&0),
            "the scramble must contain no NUL byte"
        );
        let capabilities = config.capabilities();
        ServerConnection {
            config,
            connection_id,
            scramble,
            peer_host: peer_host.to_string(),
            capabilities,
            phase: Phase::Greeting,
            input: Vec::new(),
            input_start: 0,
            sequence: 0,
            tls_active: false,
            user: String::new(),
        }
    }

    /// Appends the Initial Handshake; call once, first.
    pub fn write_handshake(&mut self, out: &mut Vec<u8>) {
        assert!(
            matches!(self.phase, Phase::Greeting),
            "the handshake is written once, first"
        );
        assert_eq!(
            self.sequence, 0,
            "the handshake is the connection's first packet"
        );
        let start = begin_packet(out);
        encode_initial_handshake(
            &InitialHandshake {
                server_version: &self.config.server_version,
                connection_id: self.connection_id,
                scramble: &self.scramble,
                capabilities: self.config.capabilities(),
                character_set: self.config.character_set,
                status: SERVER_STATUS_AUTOCOMMIT,
                auth_plugin: self.config.default_auth_plugin,
            },
            out,
        );
        finish_packet(out, start, &mut self.sequence);
        self.phase = Phase::AwaitingHandshakeResponse;
    }

    /// How many more bytes [`receive`](Self::receive) accepts now: input is
    /// buffered up to one maximal message (`max_allowed_packet` plus frame
    /// headers), so the buffer stays bounded. Read at most this much from
    /// the socket.
    pub fn receive_capacity(&self) -> usize {
        if matches!(self.phase, Phase::AwaitingTls | Phase::Closed) {
            return 0;
        }
        max_message_wire_length(self.config.max_allowed_packet)
            .saturating_sub(self.input.len() - self.input_start)
    }

    /// Buffers bytes read from the client (decrypted, under TLS); returns
    /// how many were taken — fewer than offered when the buffer is full,
    /// in which case handle events and offer the rest again. Takes nothing
    /// while TLS is being set up or after close.
    pub fn receive(&mut self, bytes: &[u8]) -> usize {
        let taken = bytes.len().min(self.receive_capacity());
        if taken == 0 {
            return 0;
        }
        if self.input_start > 0 {
            self.input.drain(..self.input_start);
            self.input_start = 0;
        }
        self.input.extend_from_slice(&bytes[..taken]);
        taken
    }

    /// Removes and returns the buffered bytes that were not consumed: after
    /// [`Event::StartTls`], the start of the client's TLS handshake.
    pub fn take_pending_input(&mut self) -> Vec<u8> {
        let pending = self.input.split_off(self.input_start);
        self.input.clear();
        self.input_start = 0;
        pending
    }

    /// TLS is up: what arrives from now on is decrypted and the next packet
    /// is the full handshake response.
    pub fn tls_established(&mut self) {
        assert!(
            matches!(self.phase, Phase::AwaitingTls),
            "tls_established only after Event::StartTls"
        );
        assert_eq!(
            self.input.len(),
            self.input_start,
            "take_pending_input first: those bytes belong to the TLS handshake"
        );
        self.tls_active = true;
        self.phase = Phase::AwaitingHandshakeResponse;
    }

    /// The next thing to act on, or `None` until more input arrives.
    /// Protocol answers the crate gives by itself (auth switch, AuthMoreData,
    /// "Access denied", "Malformed packet", ...) are appended to `out`;
    /// flush `out` whenever it is not empty.
    ///
    /// An `Err` ends the connection: `out` then holds the ERR packet the
    /// client should see; flush it and close.
    ///
    /// # Panics
    /// When called while the connection waits for
    /// [`supply_account`](Self::supply_account) or
    /// [`supply_decrypted_password`](Self::supply_decrypted_password), or
    /// before [`write_handshake`](Self::write_handshake).
    pub fn next_event(&mut self, out: &mut Vec<u8>) -> Result<Option<Event>, ProtocolError> {
        loop {
            match &self.phase {
                Phase::Greeting => panic!("write_handshake before reading"),
                Phase::AwaitingAccount(_) => panic!("supply_account answers Event::Authenticate"),
                Phase::AwaitingDecryption(_) => {
                    panic!("supply_decrypted_password answers Event::DecryptPassword")
                }
                Phase::Closed => return Err(ProtocolError::Closed),
                Phase::AwaitingTls => return Ok(None),
                Phase::AuthenticationOutcome(_) => {
                    let Phase::AuthenticationOutcome(event) =
                        std::mem::replace(&mut self.phase, Phase::Command)
                    else {
                        unreachable!("matched just above")
                    };
                    if matches!(event, Event::AccessDenied { .. }) {
                        self.close();
                    }
                    return Ok(Some(event));
                }
                _ => {}
            }
            let input = std::mem::take(&mut self.input);
            let result = self.process_message(&input, out);
            self.input = input;
            match result {
                Ok(Step::NeedInput) => return Ok(None),
                Ok(Step::Event(event)) => return Ok(Some(event)),
                Ok(Step::Continue) => continue,
                Err(error) => {
                    self.close();
                    return Err(error);
                }
            }
        }
    }

    /// Reads one message from `input` and advances the phase.
    fn process_message(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Step, ProtocolError> {
        let in_command_phase = matches!(self.phase, Phase::Command);
        // A command starts a new exchange: the client numbers it from 0.
        let expected_sequence = if in_command_phase { 0 } else { self.sequence };
        let message = match read_message(
            &input[self.input_start..],
            expected_sequence,
            self.config.max_allowed_packet,
        ) {
            Ok(Some(message)) => message,
            Ok(None) => return Ok(Step::NeedInput),
            Err(FramingError::TooLarge { limit }) => {
                return Err(self.fail(
                    ProtocolError::PacketTooLarge { limit },
                    expected_sequence.wrapping_add(1),
                    out,
                ));
            }
            Err(FramingError::OutOfOrder { expected, received }) => {
                let error = ProtocolError::PacketOutOfOrder { expected, received };
                return Err(self.fail(error, received.wrapping_add(1), out));
            }
        };
        self.input_start += message.consumed;
        self.sequence = message.next_sequence;
        let payload: &[u8] = &message.payload;
        match std::mem::replace(&mut self.phase, Phase::Closed) {
            Phase::AwaitingHandshakeResponse => self.on_handshake_response(payload, out),
            Phase::AwaitingAuthSwitchResponse(verification) => {
                self.verify_response(verification, payload, out);
                Ok(Step::Continue)
            }
            Phase::AwaitingFullAuthentication(verification) => {
                Ok(self.on_full_authentication(verification, payload, out))
            }
            Phase::AwaitingEncryptedPassword(verification) => {
                self.phase = Phase::AwaitingDecryption(verification);
                Ok(Step::Event(Event::DecryptPassword {
                    ciphertext: payload.to_vec(),
                }))
            }
            Phase::Command => {
                self.phase = Phase::Command;
                Ok(self.on_command(payload, out))
            }
            other => unreachable!("no message is read in phase {other:?}"),
        }
    }

    fn on_handshake_response(
        &mut self,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Step, ProtocolError> {
        let sequence = self.sequence;
        let handshake = match decode_client_handshake(payload, self.tls_active) {
            Ok(Some(handshake)) => handshake,
            Ok(None) => {
                // A pre-4.1 client reads ERR packets without a SQLSTATE.
                self.capabilities &= !CLIENT_PROTOCOL_41;
                return Err(self.fail(ProtocolError::UnsupportedClient, sequence, out));
            }
            Err(error) => return Err(self.fail(ProtocolError::BadHandshake(error), sequence, out)),
        };
        match handshake {
            ClientHandshake::SslRequest { .. } if self.config.tls_available => {
                self.phase = Phase::AwaitingTls;
                Ok(Step::Event(Event::StartTls))
            }
            ClientHandshake::SslRequest { .. } => {
                let error = DecodeError::Invalid {
                    field: "capability flags",
                    reason: "CLIENT_SSL without TLS offered",
                };
                Err(self.fail(ProtocolError::BadHandshake(error), sequence, out))
            }
            ClientHandshake::Response(response) => {
                self.capabilities = response.capabilities & self.config.capabilities();
                let pending = PendingAuthentication {
                    request: AuthenticationRequest {
                        password_supplied: !crate::auth::is_empty_response(&response.auth_response),
                        user: response.user,
                        database: response.database,
                        auth_plugin_name: response.auth_plugin_name,
                        character_set: Some(u16::from(response.character_set)),
                        connect_attributes: response.connect_attributes,
                        tls: self.tls_active,
                        change_user: false,
                    },
                    auth_response: response.auth_response,
                };
                let event = Event::Authenticate(pending.request.clone());
                self.phase = Phase::AwaitingAccount(pending);
                Ok(Step::Event(event))
            }
        }
    }

    fn on_command(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Step {
        match decode_command(payload, self.capabilities) {
            Ok(Command::ChangeUser(request)) => {
                let pending = PendingAuthentication {
                    request: AuthenticationRequest {
                        password_supplied: !crate::auth::is_empty_response(&request.auth_response),
                        user: request.user,
                        database: request.database,
                        auth_plugin_name: request.auth_plugin_name,
                        character_set: request.character_set,
                        connect_attributes: request.connect_attributes,
                        tls: self.tls_active,
                        change_user: true,
                    },
                    auth_response: request.auth_response,
                };
                let event = Event::Authenticate(pending.request.clone());
                self.phase = Phase::AwaitingAccount(pending);
                Step::Event(event)
            }
            Ok(Command::Quit) => {
                self.close();
                Step::Event(Event::Command(Command::Quit))
            }
            Ok(command) => Step::Event(Event::Command(command)),
            Err(_) => {
                // The frame was intact, so the connection survives a command
                // whose fields do not decode: answer it as MySQL does.
                write_error_packet(
                    out,
                    &mut self.sequence,
                    self.capabilities,
                    ER_MALFORMED_PACKET,
                    "HY000",
                    "Malformed communication packet.",
                );
                Step::Continue
            }
        }
    }

    /// Appends the ERR packet for a fatal `error` (numbered `sequence`) and
    /// returns the error.
    fn fail(&mut self, error: ProtocolError, sequence: u8, out: &mut Vec<u8>) -> ProtocolError {
        if let Some(code) = error.error_code() {
            self.sequence = sequence;
            write_error_packet(
                out,
                &mut self.sequence,
                self.capabilities,
                code,
                error.sql_state(),
                error.client_message(),
            );
        }
        error
    }

    /// Marks the connection closed: nothing more is read or written.
    pub fn close(&mut self) {
        self.phase = Phase::Closed;
        self.input = Vec::new();
        self.input_start = 0;
    }

    /// Whether the connection is closed.
    pub fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closed)
    }

    /// Whether the connection is in the command phase.
    pub fn is_authenticated(&self) -> bool {
        matches!(self.phase, Phase::Command)
    }

    /// The negotiated capability flags (`capabilities::*`).
    pub fn capabilities(&self) -> u32 {
        self.capabilities
    }

    /// Whether result sets end with the 0xFE OK instead of EOF.
    pub fn deprecate_eof(&self) -> bool {
        self.capabilities & CLIENT_DEPRECATE_EOF != 0
    }

    /// Whether the client can authenticate with a plugin other than its
    /// first choice (it understands AuthSwitchRequest).
    pub(crate) fn client_supports_plugin_auth(&self) -> bool {
        self.capabilities & CLIENT_PLUGIN_AUTH != 0
    }

    /// Whether the connection runs over TLS.
    pub fn is_tls(&self) -> bool {
        self.tls_active
    }

    /// The connection id announced in the handshake.
    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    /// The authenticated user, empty before authentication.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The sequence id the next packet written will carry.
    pub fn next_sequence(&self) -> u8 {
        self.sequence
    }

    /// Appends an OK packet (the answer to a statement, COM_PING,
    /// COM_INIT_DB, ..., and to [`Event::Authenticated`]).
    pub fn write_ok(&mut self, ok: &OkPacket<'_>, out: &mut Vec<u8>) {
        write_ok_packet(out, &mut self.sequence, self.capabilities, ok, false);
    }

    /// Appends an ERR packet; `sql_state` is 5 ASCII characters.
    pub fn write_error(&mut self, code: u16, sql_state: &str, message: &str, out: &mut Vec<u8>) {
        write_error_packet(
            out,
            &mut self.sequence,
            self.capabilities,
            code,
            sql_state,
            message,
        );
    }

    /// Appends ERR 1047 "Unknown command" (08S01): the answer to
    /// [`Command::Unknown`] and to any command the runtime does not serve.
    pub fn write_unknown_command(&mut self, out: &mut Vec<u8>) {
        self.write_error(ER_UNKNOWN_COM_ERROR, "08S01", "Unknown command", out);
    }

    /// Appends an EOF packet, or the 0xFE OK under `CLIENT_DEPRECATE_EOF`:
    /// MySQL's answer to COM_SET_OPTION and COM_DEBUG.
    pub fn write_eof(&mut self, status: u16, warnings: u16, out: &mut Vec<u8>) {
        write_end_of_rows(out, &mut self.sequence, self.capabilities, status, warnings);
    }

    /// Starts a result set with these columns: `RowFormat::Text` for
    /// COM_QUERY, `RowFormat::Binary` for COM_STMT_EXECUTE. `status` goes
    /// into the EOF after the definitions (without `CLIENT_DEPRECATE_EOF`).
    pub fn begin_result_set(
        &mut self,
        format: RowFormat,
        columns: &[ColumnDefinition],
        status: u16,
        out: &mut Vec<u8>,
    ) -> ResultSetWriter<'_> {
        ResultSetWriter::begin(
            &mut self.sequence,
            self.capabilities,
            format,
            columns,
            status,
            out,
        )
    }

    /// Appends the answer to COM_STMT_PREPARE: PREPARE_OK, then the
    /// parameter and column definitions.
    pub fn write_prepare_ok(
        &mut self,
        statement_id: u32,
        parameters: &[ColumnDefinition],
        columns: &[ColumnDefinition],
        warnings: u16,
        status: u16,
        out: &mut Vec<u8>,
    ) {
        write_prepare_ok(
            out,
            &mut self.sequence,
            self.capabilities,
            statement_id,
            parameters,
            columns,
            warnings,
            status,
        );
    }

    /// Appends the answer to COM_FIELD_LIST.
    pub fn write_field_list(
        &mut self,
        columns: &[ColumnDefinition],
        status: u16,
        out: &mut Vec<u8>,
    ) {
        write_field_list(out, &mut self.sequence, self.capabilities, columns, status);
    }

    /// Appends a packet holding only `text`: the answer to COM_STATISTICS.
    pub fn write_text_packet(&mut self, text: &[u8], out: &mut Vec<u8>) {
        write_text_packet(out, &mut self.sequence, text);
    }
}

/// What reading one message led to.
pub(crate) enum Step {
    /// The input holds no complete message.
    NeedInput,
    /// Something for the runtime.
    Event(Event),
    /// Handled inside; read on.
    Continue,
}
