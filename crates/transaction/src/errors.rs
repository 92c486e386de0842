//! Errors as they travel: NDB code, MySQL code and a message saying what
//! to do, built from the engine's `schema::Error` or for the coordinator's
//! own failures.

use protocol::ErrorReply;
use schema::{Error, ErrorCode};

/// NDB's "unknown error code" class for errors without an NDB number.
const GENERIC_NDB_CODE: u16 = 4000;

pub fn reply_for(error: &Error) -> ErrorReply {
    let code = error.code;
    let message = if error.detail.is_empty() || error.detail == code.message() {
        code.message().to_string()
    } else {
        format!("{}: {}", code.message(), error.detail)
    };
    ErrorReply {
        ndb_code: code.ndb_code().unwrap_or(GENERIC_NDB_CODE),
        mysql_code: code.mysql_code(),
        message,
    }
}

pub fn reply(code: ErrorCode, detail: impl Into<String>) -> ErrorReply {
    reply_for(&Error::new(code, detail.into()))
}
