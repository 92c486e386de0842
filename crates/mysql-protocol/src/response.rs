//! The server's response packets, appended (frame headers included) to a
//! caller's buffer.
//!
//! OK: `0x00` (or `0xFE` where it replaces EOF under
//! `CLIENT_DEPRECATE_EOF`), affected rows and last insert id (length-encoded
//! integers), status flags (2), warnings (2), then the info text as a
//! length-encoded string when there is any.
//! ERR: `0xFF`, error code (2), `#`, SQLSTATE (5 characters), message (rest
//! of the packet); a pre-4.1 client gets no `#` and SQLSTATE.
//! EOF: `0xFE`, warnings (2), status flags (2).
//! ColumnDefinition41: catalog "def", schema, table, original table, name,
//! original name (length-encoded strings), `0x0C` (length of the fixed
//! fields), collation (2), column length (4), type (1), flags (2),
//! decimals (1), two zero bytes; COM_FIELD_LIST adds the default value
//! (length-encoded, here always NULL).
//! COM_STMT_PREPARE_OK: `0x00`, statement id (4), column count (2),
//! parameter count (2), a zero byte, warnings (2); then the parameter and
//! column definitions, each group followed by EOF unless
//! `CLIENT_DEPRECATE_EOF`.

use crate::column::ColumnDefinition;
use crate::constants::capabilities::{CLIENT_DEPRECATE_EOF, CLIENT_PROTOCOL_41};
use crate::packet::{
    LENENC_NULL, begin_packet, finish_packet, write_lenenc_bytes, write_lenenc_int,
};

/// The header byte of an OK packet.
pub const OK_HEADER: u8 = 0x00;
/// The header byte of an EOF packet, and of an OK packet that replaces one.
pub const EOF_HEADER: u8 = 0xFE;
/// The header byte of an ERR packet.
pub const ERR_HEADER: u8 = 0xFF;
/// The catalog of every column: always "def".
const CATALOG: &[u8] = b"def";
/// The length of a column definition's fixed-size fields.
const COLUMN_FIXED_FIELDS_LENGTH: u64 = 0x0C;
/// MySQL cuts error messages to this many bytes (`MYSQL_ERRMSG_SIZE` - 1).
pub const MAX_ERROR_MESSAGE_LENGTH: usize = 511;
/// Characters in a SQLSTATE.
pub const SQL_STATE_LENGTH: usize = 5;

/// The fields of an OK packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OkPacket<'a> {
    /// Rows changed (or found, with `CLIENT_FOUND_ROWS`).
    pub affected_rows: u64,
    /// The first AUTO_INCREMENT value generated, or 0.
    pub last_insert_id: u64,
    /// `status::*` flags; add `SERVER_MORE_RESULTS_EXISTS` when another
    /// result of the same command follows.
    pub status: u16,
    /// Warnings of the statement.
    pub warnings: u16,
    /// Human-readable info ("Rows matched: 1  Changed: 1  Warnings: 0").
    pub info: &'a str,
}

/// Appends an OK packet. With `replaces_eof` and `CLIENT_DEPRECATE_EOF`
/// the header is 0xFE: the form that ends a result set.
pub fn write_ok_packet(
    out: &mut Vec<u8>,
    sequence: &mut u8,
    capabilities: u32,
    ok: &OkPacket<'_>,
    replaces_eof: bool,
) {
    let start = begin_packet(out);
    let header = if replaces_eof && capabilities & CLIENT_DEPRECATE_EOF != 0 {
        EOF_HEADER
    } else {
        OK_HEADER
    };
    out.push(header);
    write_lenenc_int(out, ok.affected_rows);
    write_lenenc_int(out, ok.last_insert_id);
    if capabilities & CLIENT_PROTOCOL_41 != 0 {
        out.extend_from_slice(&ok.status.to_le_bytes());
        out.extend_from_slice(&ok.warnings.to_le_bytes());
    }
    // Session-state information is never sent, so the info text is present
    // only when there is some, with or without CLIENT_SESSION_TRACK.
    if !ok.info.is_empty() {
        write_lenenc_bytes(out, ok.info.as_bytes());
    }
    finish_packet(out, start, sequence);
}

/// Appends an ERR packet. `sql_state` must be 5 ASCII characters; the
/// message is cut to [`MAX_ERROR_MESSAGE_LENGTH`] bytes at a character
/// boundary, as MySQL does.
pub fn write_error_packet(
    out: &mut Vec<u8>,
    sequence: &mut u8,
    capabilities: u32,
    code: u16,
    sql_state: &str,
    message: &str,
) {
    assert!(
        sql_state.len() == SQL_STATE_LENGTH && sql_state.is_ascii(),
        "a SQLSTATE is 5 ASCII characters, got {sql_state:?}"
    );
    let start = begin_packet(out);
    out.push(ERR_HEADER);
    out.extend_from_slice(&code.to_le_bytes());
    if capabilities & CLIENT_PROTOCOL_41 != 0 {
        out.push(b'#');
        out.extend_from_slice(sql_state.as_bytes());
    }
    let mut cut = message.len().min(MAX_ERROR_MESSAGE_LENGTH);
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    out.extend_from_slice(&message.as_bytes()[..cut]);
    finish_packet(out, start, sequence);
}

/// Appends an EOF packet (the pre-`CLIENT_DEPRECATE_EOF` terminator).
pub fn write_eof_packet(
    out: &mut Vec<u8>,
    sequence: &mut u8,
    capabilities: u32,
    status: u16,
    warnings: u16,
) {
    let start = begin_packet(out);
    out.push(EOF_HEADER);
    if capabilities & CLIENT_PROTOCOL_41 != 0 {
        out.extend_from_slice(&warnings.to_le_bytes());
        out.extend_from_slice(&status.to_le_bytes());
    }
    finish_packet(out, start, sequence);
}

/// Appends what ends a result set or a metadata group: an EOF packet, or
/// with `CLIENT_DEPRECATE_EOF` an OK packet with the 0xFE header.
pub fn write_end_of_rows(
    out: &mut Vec<u8>,
    sequence: &mut u8,
    capabilities: u32,
    status: u16,
    warnings: u16,
) {
    if capabilities & CLIENT_DEPRECATE_EOF != 0 {
        let ok = OkPacket {
            status,
            warnings,
            ..OkPacket::default()
        };
        write_ok_packet(out, sequence, capabilities, &ok, true);
    } else {
        write_eof_packet(out, sequence, capabilities, status, warnings);
    }
}

/// Appends one ColumnDefinition41 packet; `field_list` adds the (NULL)
/// default value COM_FIELD_LIST answers carry.
pub fn write_column_definition(
    out: &mut Vec<u8>,
    sequence: &mut u8,
    column: &ColumnDefinition,
    field_list: bool,
) {
    let start = begin_packet(out);
    write_lenenc_bytes(out, CATALOG);
    write_lenenc_bytes(out, column.schema.as_bytes());
    write_lenenc_bytes(out, column.table.as_bytes());
    write_lenenc_bytes(out, column.org_table.as_bytes());
    write_lenenc_bytes(out, column.name.as_bytes());
    write_lenenc_bytes(out, column.org_name.as_bytes());
    write_lenenc_int(out, COLUMN_FIXED_FIELDS_LENGTH);
    out.extend_from_slice(&column.collation_id.to_le_bytes());
    out.extend_from_slice(&column.length.to_le_bytes());
    out.push(column.field_type as u8);
    out.extend_from_slice(&column.flags.to_le_bytes());
    out.push(column.decimals);
    out.extend_from_slice(&[0, 0]);
    if field_list {
        out.push(LENENC_NULL);
    }
    finish_packet(out, start, sequence);
}

/// Appends a complete COM_STMT_PREPARE response: the PREPARE_OK packet,
/// the parameter definitions and the column definitions, each non-empty
/// group followed by EOF unless `CLIENT_DEPRECATE_EOF`.
#[allow(clippy::too_many_arguments)]
pub fn write_prepare_ok(
    out: &mut Vec<u8>,
    sequence: &mut u8,
    capabilities: u32,
    statement_id: u32,
    parameters: &[ColumnDefinition],
    columns: &[ColumnDefinition],
    warnings: u16,
    status: u16,
) {
    let parameter_count =
        u16::try_from(parameters.len()).expect("a statement has at most 65535 parameters");
    let column_count = u16::try_from(columns.len()).expect("a statement has at most 65535 columns");
    let start = begin_packet(out);
    out.push(OK_HEADER);
    out.extend_from_slice(&statement_id.to_le_bytes());
    out.extend_from_slice(&column_count.to_le_bytes());
    out.extend_from_slice(&parameter_count.to_le_bytes());
    out.push(0);
    out.extend_from_slice(&warnings.to_le_bytes());
    finish_packet(out, start, sequence);
    for group in [parameters, columns] {
        if group.is_empty() {
            continue;
        }
        for definition in group {
            write_column_definition(out, sequence, definition, false);
        }
        if capabilities & CLIENT_DEPRECATE_EOF == 0 {
            write_eof_packet(out, sequence, capabilities, status, 0);
        }
    }
}
