//! Errors: a payload that does not decode, and the connection-level
//! failures that end a connection, each with the ERR packet (code,
//! SQLSTATE, message) MySQL sends for it.

use std::fmt;

use crate::constants::error_codes;

/// A payload that does not decode: too short, or holding a value the
/// protocol does not allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The payload ended inside a field.
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Bytes the field needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A field holds a value the protocol does not allow.
    Invalid {
        /// The field being read.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated {
                field,
                needed,
                available,
            } => write!(
                formatter,
                "packet ends inside {field}: {needed} bytes needed, {available} left"
            ),
            DecodeError::Invalid { field, reason } => {
                write!(formatter, "invalid {field}: {reason}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// A failure that ends the connection. When the client can still be told,
/// the connection has already appended the matching ERR packet to the
/// output buffer: the runtime flushes that buffer, then closes the socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// A packet longer than `max_allowed_packet` (ERR 1153, 08S01).
    PacketTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// A frame carried an unexpected sequence id (ERR 1156, 08S01).
    PacketOutOfOrder {
        /// The sequence id expected.
        expected: u8,
        /// The sequence id received.
        received: u8,
    },
    /// The handshake response or an authentication packet does not decode,
    /// or asks for TLS the server did not offer (ERR 1043, 08S01).
    BadHandshake(DecodeError),
    /// A client without `CLIENT_PROTOCOL_41` (ERR 1251, 08004).
    UnsupportedClient,
    /// The connection is closed; nothing more is read or written.
    Closed,
}

impl ProtocolError {
    /// The MySQL error code the client is sent, if any.
    pub fn error_code(&self) -> Option<u16> {
        match self {
            ProtocolError::PacketTooLarge { .. } => Some(error_codes::ER_NET_PACKET_TOO_LARGE),
            ProtocolError::PacketOutOfOrder { .. } => {
                Some(error_codes::ER_NET_PACKETS_OUT_OF_ORDER)
            }
            ProtocolError::BadHandshake(_) => Some(error_codes::ER_HANDSHAKE_ERROR),
            ProtocolError::UnsupportedClient => Some(error_codes::ER_NOT_SUPPORTED_AUTH_MODE),
            ProtocolError::Closed => None,
        }
    }

    /// The SQLSTATE the client is sent.
    pub fn sql_state(&self) -> &'static str {
        match self {
            ProtocolError::UnsupportedClient => "08004",
            _ => "08S01",
        }
    }

    /// The message the client is sent: MySQL's text for the error.
    pub fn client_message(&self) -> &'static str {
        match self {
            ProtocolError::PacketTooLarge { .. } => {
                "Got a packet bigger than 'max_allowed_packet' bytes"
            }
            ProtocolError::PacketOutOfOrder { .. } => "Got packets out of order",
            ProtocolError::BadHandshake(_) => "Bad handshake",
            ProtocolError::UnsupportedClient => {
                "Client does not support authentication protocol requested by server; consider upgrading MySQL client"
            }
            ProtocolError::Closed => "Connection closed",
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::PacketTooLarge { limit } => {
                write!(
                    formatter,
                    "packet larger than max_allowed_packet ({limit} bytes)"
                )
            }
            ProtocolError::PacketOutOfOrder { expected, received } => write!(
                formatter,
                "packet out of order: sequence id {received}, expected {expected}"
            ),
            ProtocolError::BadHandshake(error) => write!(formatter, "bad handshake: {error}"),
            ProtocolError::UnsupportedClient => formatter.write_str("client predates protocol 4.1"),
            ProtocolError::Closed => formatter.write_str("connection closed"),
        }
    }
}

impl std::error::Error for ProtocolError {}
