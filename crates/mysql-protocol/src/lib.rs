//! The MySQL client/server protocol (4.1, as MySQL 8.0 speaks it), server
//! side, sans-IO: bytes in, events out, responses written into a caller's
//! buffer. Sockets, TLS, RSA, clocks, randomness and threads belong to the
//! runtime (`crates/sqld`).
//!
//! A connection's life, driven by the runtime:
//!
//! 1. [`ServerConnection::new`] with the shared [`ServerConfig`], a
//!    connection id, 20 random non-NUL scramble bytes and the peer's host;
//!    [`ServerConnection::write_handshake`] appends the greeting.
//! 2. Bytes read from the socket (at most
//!    [`ServerConnection::receive_capacity`]) go to
//!    [`ServerConnection::receive`]; then [`ServerConnection::next_event`]
//!    is called until it returns `None`, and the output buffer is flushed
//!    whenever it holds something. An `Err` from `next_event` means: flush
//!    (the ERR packet for the client is in the buffer) and close.
//! 3. [`Event::StartTls`]: hand [`ServerConnection::take_pending_input`] to
//!    the TLS engine, complete TLS, call
//!    [`ServerConnection::tls_established`], then feed decrypted bytes.
//! 4. [`Event::Authenticate`]: look the account up and call
//!    [`ServerConnection::supply_account`]. [`Event::DecryptPassword`]:
//!    RSA-decrypt and call [`ServerConnection::supply_decrypted_password`].
//!    [`Event::Authenticated`]: write OK (or an error such as "Unknown
//!    database", then close). [`Event::AccessDenied`]: flush and close.
//! 5. [`Event::Command`]: execute, then answer with the `write_*` methods or
//!    [`ServerConnection::begin_result_set`]; every response is numbered
//!    from the command's sequence id by the connection.

pub mod auth;
mod authentication;
pub mod binary;
pub mod column;
pub mod command;
pub mod connection;
pub mod constants;
pub mod error;
pub mod handshake;
pub mod packet;
pub mod response;
pub mod result_set;

pub use auth::{
    Account, AuthPlugin, native_password_digest, sha2_password_digest, unxor_rsa_password,
};
pub use binary::{OwnedProtocolValue, decode_execute_parameters};
pub use column::{ColumnDefinition, FieldType, ProtocolValue};
pub use command::{ChangeUserRequest, Command, StmtExecute, decode_command};
pub use connection::{
    AuthenticatedSession, AuthenticationRequest, Event, ServerConfig, ServerConnection,
};
pub use error::{DecodeError, ProtocolError};
pub use response::OkPacket;
pub use result_set::{BinaryRowWriter, ResultSetWriter, RowFormat, TextRowWriter};
