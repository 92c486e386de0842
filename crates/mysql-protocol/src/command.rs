//! The command phase's requests: one command byte, then the command's
//! fields.
//!
//! COM_QUERY, COM_STMT_PREPARE: the SQL text, rest of the packet.
//! COM_INIT_DB: the database name, rest of the packet.
//! COM_FIELD_LIST: table (NUL-terminated), wildcard (rest of the packet).
//! COM_PROCESS_KILL: connection id (4). COM_SET_OPTION: option (2).
//! COM_STMT_EXECUTE: statement id (4), flags (1), iteration count (4),
//! then the parameter block (decoded by [`crate::decode_execute_parameters`]
//! once the statement's parameter count is known).
//! COM_STMT_SEND_LONG_DATA: statement id (4), parameter (2), data (rest).
//! COM_STMT_CLOSE, COM_STMT_RESET: statement id (4).
//! COM_STMT_FETCH: statement id (4), row count (4).
//! COM_CHANGE_USER: user (NUL-terminated), auth response (1-byte length,
//! or NUL-terminated without `CLIENT_SECURE_CONNECTION`), database
//! (NUL-terminated), then optionally the character set (2), the plugin name
//! (NUL-terminated, with `CLIENT_PLUGIN_AUTH`) and connection attributes
//! (with `CLIENT_CONNECT_ATTRS`).

use crate::constants::capabilities::{
    CLIENT_CONNECT_ATTRS, CLIENT_PLUGIN_AUTH, CLIENT_SECURE_CONNECTION,
};
use crate::constants::commands::*;
use crate::constants::cursor::CURSOR_TYPE_MASK;
use crate::error::DecodeError;
use crate::handshake::{decode_connect_attributes, decode_text};
use crate::packet::PayloadReader;

/// One command from a client in the command phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// COM_QUIT: the client is leaving; no answer, close the connection.
    Quit,
    /// COM_INIT_DB: `USE database`; answer OK or ERR.
    InitDb(String),
    /// COM_QUERY: SQL text, possibly several statements when
    /// `CLIENT_MULTI_STATEMENTS` is on.
    Query(Vec<u8>),
    /// COM_FIELD_LIST (deprecated): the columns of a table.
    FieldList {
        /// The table.
        table: String,
        /// A LIKE pattern for the column names, possibly empty.
        wildcard: String,
    },
    /// COM_STATISTICS: answer with a plain status string.
    Statistics,
    /// COM_PING: answer OK.
    Ping,
    /// COM_PROCESS_KILL: kill a connection; answer OK or ERR.
    ProcessKill(u32),
    /// COM_CHANGE_USER. The connection turns this into an
    /// [`Event::Authenticate`](crate::Event::Authenticate); it appears here
    /// only from [`decode_command`] itself.
    ChangeUser(ChangeUserRequest),
    /// COM_RESET_CONNECTION: reset the session; answer OK.
    ResetConnection,
    /// COM_SET_OPTION: multi-statements on (0) or off (1); answer EOF.
    SetOption(u16),
    /// COM_STMT_PREPARE: the statement's SQL text.
    StmtPrepare(Vec<u8>),
    /// COM_STMT_EXECUTE.
    StmtExecute(StmtExecute),
    /// COM_STMT_SEND_LONG_DATA: a piece of a parameter's value; no answer.
    StmtSendLongData {
        /// The statement.
        statement_id: u32,
        /// The parameter's index.
        parameter: u16,
        /// The bytes to append to the parameter's value.
        data: Vec<u8>,
    },
    /// COM_STMT_CLOSE: no answer.
    StmtClose(u32),
    /// COM_STMT_RESET: drop long data and close the cursor; answer OK.
    StmtReset(u32),
    /// COM_STMT_FETCH: rows from an open cursor.
    StmtFetch {
        /// The statement.
        statement_id: u32,
        /// How many rows the client wants.
        row_count: u32,
    },
    /// COM_DEBUG: answer EOF (or OK).
    Debug,
    /// Any other command byte (including COM_SLEEP for an empty packet):
    /// answer with [`ServerConnection::write_unknown_command`](crate::ServerConnection::write_unknown_command).
    Unknown(u8),
}

/// COM_STMT_EXECUTE's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StmtExecute {
    /// The statement.
    pub statement_id: u32,
    /// `cursor::*` flags.
    pub flags: u8,
    /// Always 1 in practice.
    pub iteration_count: u32,
    /// The NULL bitmap, new-params-bound flag, types and values, for
    /// [`crate::decode_execute_parameters`].
    pub parameters: Vec<u8>,
}

impl StmtExecute {
    /// Whether the client asked for a cursor (read-only, for update or
    /// scrollable); a server without cursors refuses such an execute.
    pub fn requests_cursor(&self) -> bool {
        self.flags & CURSOR_TYPE_MASK != 0
    }
}

/// COM_CHANGE_USER's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeUserRequest {
    /// The new user.
    pub user: String,
    /// The plugin's answer to the connection's scramble.
    pub auth_response: Vec<u8>,
    /// The database to use, if any.
    pub database: Option<String>,
    /// The new character set, if sent.
    pub character_set: Option<u16>,
    /// The plugin that computed `auth_response`, if sent.
    pub auth_plugin_name: Option<String>,
    /// Connection attributes.
    pub connect_attributes: Vec<(String, String)>,
}

/// Decodes a command packet. `capabilities` are the connection's
/// negotiated flags (they shape COM_CHANGE_USER).
pub fn decode_command(payload: &[u8], capabilities: u32) -> Result<Command, DecodeError> {
    let Some((&command, body)) = payload.split_first() else {
        // MySQL reads an empty packet as COM_SLEEP, which it refuses.
        return Ok(Command::Unknown(COM_SLEEP));
    };
    let mut reader = PayloadReader::new(body);
    Ok(match command {
        COM_QUIT => Command::Quit,
        COM_INIT_DB => Command::InitDb(decode_text(body, "database")?),
        COM_QUERY => Command::Query(body.to_vec()),
        COM_FIELD_LIST => {
            let table = decode_text(reader.read_nul_terminated("table")?, "table")?;
            let wildcard = decode_text(reader.read_rest(), "wildcard")?;
            Command::FieldList { table, wildcard }
        }
        COM_STATISTICS => Command::Statistics,
        COM_PING => Command::Ping,
        COM_PROCESS_KILL => Command::ProcessKill(reader.read_u32("connection id")?),
        COM_CHANGE_USER => Command::ChangeUser(decode_change_user(&mut reader, capabilities)?),
        COM_RESET_CONNECTION => Command::ResetConnection,
        COM_SET_OPTION => Command::SetOption(reader.read_u16("option")?),
        COM_STMT_PREPARE => Command::StmtPrepare(body.to_vec()),
        COM_STMT_EXECUTE => {
            let statement_id = reader.read_u32("statement id")?;
            let flags = reader.read_u8("flags")?;
            let iteration_count = reader.read_u32("iteration count")?;
            Command::StmtExecute(StmtExecute {
                statement_id,
                flags,
                iteration_count,
                parameters: reader.read_rest().to_vec(),
            })
        }
        COM_STMT_SEND_LONG_DATA => {
            let statement_id = reader.read_u32("statement id")?;
            let parameter = reader.read_u16("parameter")?;
            Command::StmtSendLongData {
                statement_id,
                parameter,
                data: reader.read_rest().to_vec(),
            }
        }
        COM_STMT_CLOSE => Command::StmtClose(reader.read_u32("statement id")?),
        COM_STMT_RESET => Command::StmtReset(reader.read_u32("statement id")?),
        COM_STMT_FETCH => {
            let statement_id = reader.read_u32("statement id")?;
            let row_count = reader.read_u32("row count")?;
            Command::StmtFetch {
                statement_id,
                row_count,
            }
        }
        COM_DEBUG => Command::Debug,
        other => Command::Unknown(other),
    })
}

fn decode_change_user(
    reader: &mut PayloadReader<'_>,
    capabilities: u32,
) -> Result<ChangeUserRequest, DecodeError> {
    let user = decode_text(reader.read_nul_terminated("user")?, "user")?;
    let auth_response = if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        let length = reader.read_u8("auth response length")?;
        reader.read_bytes(usize::from(length), "auth response")?
    } else {
        reader.read_nul_terminated("auth response")?
    }
    .to_vec();
    let database = decode_text(reader.read_nul_terminated("database")?, "database")?;
    let database = (!database.is_empty()).then_some(database);
    // The fields after the database are optional: old clients end here.
    let character_set = if reader.remaining() >= 2 {
        Some(reader.read_u16("character set")?)
    } else {
        None
    };
    let auth_plugin_name = if capabilities & CLIENT_PLUGIN_AUTH != 0 && !reader.is_empty() {
        let name = decode_text(
            reader.read_nul_terminated("auth plugin name")?,
            "auth plugin name",
        )?;
        (!name.is_empty()).then_some(name)
    } else {
        None
    };
    let connect_attributes = if capabilities & CLIENT_CONNECT_ATTRS != 0 && !reader.is_empty() {
        decode_connect_attributes(reader)?
    } else {
        Vec::new()
    };
    Ok(ChangeUserRequest {
        user,
        auth_response,
        database,
        character_set,
        auth_plugin_name,
        connect_attributes,
    })
}
