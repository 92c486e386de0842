//! Streaming result sets into the caller's buffer.
//!
//! A result set is: the column count (a length-encoded integer in its own
//! packet), one ColumnDefinition41 packet per column, an EOF packet unless
//! `CLIENT_DEPRECATE_EOF`, one packet per row, and a terminator: EOF, or
//! with `CLIENT_DEPRECATE_EOF` an OK packet with the 0xFE header. The
//! terminator's status flags carry `SERVER_MORE_RESULTS_EXISTS` when
//! another result of the same command follows.
//!
//! Text rows: each column as a length-encoded string of its text, or the
//! byte 0xFB for NULL. Binary rows (COM_STMT_EXECUTE): `0x00`, a NULL
//! bitmap of (columns+7+2)/8 bytes whose first two bits are unused (bit
//! i+2 is column i), then each non-NULL value in the binary format of its
//! column's type.
//!
//! Rows are written straight into the output buffer, one packet each, with
//! no allocation per row; the runtime may flush the buffer between rows.

use crate::binary::encode_binary_value;
use crate::column::{ColumnDefinition, FieldType, ProtocolValue};
use crate::constants::capabilities::CLIENT_DEPRECATE_EOF;
use crate::packet::{
    LENENC_NULL, begin_packet, finish_packet, write_lenenc_bytes, write_lenenc_int, write_packet,
};
use crate::response::{
    write_column_definition, write_end_of_rows, write_eof_packet, write_error_packet,
};

/// The header byte of a binary row.
const BINARY_ROW_HEADER: u8 = 0x00;
/// Bits before column 0 in a binary row's NULL bitmap.
const BINARY_ROW_NULL_BITMAP_OFFSET: usize = 2;
/// Digits of the longest 64-bit integer with its sign.
const MAX_INTEGER_DIGITS: usize = 20;

/// Which row format a result set uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFormat {
    /// Text rows: answers to COM_QUERY.
    Text,
    /// Binary rows: answers to COM_STMT_EXECUTE.
    Binary,
}

/// Writes one result set, row by row. Created by
/// [`ServerConnection::begin_result_set`](crate::ServerConnection::begin_result_set);
/// end it with [`finish`](Self::finish) or
/// [`finish_with_error`](Self::finish_with_error).
#[derive(Debug)]
pub struct ResultSetWriter<'c> {
    sequence: &'c mut u8,
    capabilities: u32,
    format: RowFormat,
    column_count: usize,
    /// The columns' types, kept for binary rows only.
    column_types: Vec<FieldType>,
}

impl<'c> ResultSetWriter<'c> {
    /// Appends the column count, the column definitions and (without
    /// `CLIENT_DEPRECATE_EOF`) an EOF carrying `status`.
    pub fn begin(
        sequence: &'c mut u8,
        capabilities: u32,
        format: RowFormat,
        columns: &[ColumnDefinition],
        status: u16,
        out: &mut Vec<u8>,
    ) -> Self {
        assert!(
            !columns.is_empty(),
            "a result set has at least one column; answer OK instead"
        );
        let start = begin_packet(out);
        write_lenenc_int(out, columns.len() as u64);
        finish_packet(out, start, sequence);
        for column in columns {
            write_column_definition(out, sequence, column, false);
        }
        if capabilities & CLIENT_DEPRECATE_EOF == 0 {
            write_eof_packet(out, sequence, capabilities, status, 0);
        }
        let column_types = match format {
            RowFormat::Binary => columns.iter().map(|column| column.field_type).collect(),
            RowFormat::Text => Vec::new(),
        };
        ResultSetWriter {
            sequence,
            capabilities,
            format,
            column_count: columns.len(),
            column_types,
        }
    }

    /// The number of columns every row must have.
    pub fn column_count(&self) -> usize {
        self.column_count
    }

    /// Appends a text row: each column's text, or `None` for NULL.
    pub fn write_text_row(&mut self, values: &[Option<&[u8]>], out: &mut Vec<u8>) {
        let mut row = self.text_row(out);
        for value in values {
            row.push(*value);
        }
        row.finish();
    }

    /// Starts a text row whose columns are pushed one by one.
    pub fn text_row<'w>(&'w mut self, out: &'w mut Vec<u8>) -> TextRowWriter<'w> {
        assert_eq!(
            self.format,
            RowFormat::Text,
            "text row in a binary result set"
        );
        let start = begin_packet(out);
        TextRowWriter {
            out,
            sequence: self.sequence,
            start,
            expected: self.column_count,
            pushed: 0,
        }
    }

    /// Appends a binary row: one value per column, `ProtocolValue::Null`
    /// for NULL.
    pub fn write_binary_row(&mut self, values: &[ProtocolValue<'_>], out: &mut Vec<u8>) {
        let mut row = self.binary_row(out);
        for value in values {
            row.push(value);
        }
        row.finish();
    }

    /// Starts a binary row whose columns are pushed one by one.
    pub fn binary_row<'w>(&'w mut self, out: &'w mut Vec<u8>) -> BinaryRowWriter<'w> {
        assert_eq!(
            self.format,
            RowFormat::Binary,
            "binary row in a text result set"
        );
        let start = begin_packet(out);
        out.push(BINARY_ROW_HEADER);
        let bitmap_start = out.len();
        let bitmap_length = (self.column_count + 7 + BINARY_ROW_NULL_BITMAP_OFFSET) / 8;
        out.resize(bitmap_start + bitmap_length, 0);
        BinaryRowWriter {
            out,
            sequence: self.sequence,
            start,
            bitmap_start,
            column_types: &self.column_types,
            pushed: 0,
        }
    }

    /// Ends the result set: EOF, or the 0xFE OK under
    /// `CLIENT_DEPRECATE_EOF`. Add `SERVER_MORE_RESULTS_EXISTS` to `status`
    /// when another result of the same command follows.
    pub fn finish(self, status: u16, warnings: u16, out: &mut Vec<u8>) {
        write_end_of_rows(out, self.sequence, self.capabilities, status, warnings);
    }

    /// Ends the result set with an error instead (a failure while rows were
    /// being produced); the client discards the rows it got.
    pub fn finish_with_error(self, code: u16, sql_state: &str, message: &str, out: &mut Vec<u8>) {
        write_error_packet(
            out,
            self.sequence,
            self.capabilities,
            code,
            sql_state,
            message,
        );
    }
}

/// One text row being written; the packet is completed by
/// [`finish`](Self::finish) (or when the writer is dropped).
#[derive(Debug)]
pub struct TextRowWriter<'w> {
    out: &'w mut Vec<u8>,
    sequence: &'w mut u8,
    start: usize,
    expected: usize,
    pushed: usize,
}

impl TextRowWriter<'_> {
    /// Appends the next column: its text, or `None` for NULL.
    pub fn push(&mut self, value: Option<&[u8]>) {
        match value {
            Some(bytes) => write_lenenc_bytes(self.out, bytes),
            None => self.out.push(LENENC_NULL),
        }
        self.pushed += 1;
    }

    /// Appends the next column as a signed integer's decimal text.
    pub fn push_signed(&mut self, value: i64) {
        let mut digits = [0u8; MAX_INTEGER_DIGITS];
        let text = format_integer(value.unsigned_abs(), value < 0, &mut digits);
        self.push(Some(text));
    }

    /// Appends the next column as an unsigned integer's decimal text.
    pub fn push_unsigned(&mut self, value: u64) {
        let mut digits = [0u8; MAX_INTEGER_DIGITS];
        let text = format_integer(value, false, &mut digits);
        self.push(Some(text));
    }

    /// Completes the row's packet.
    ///
    /// # Panics
    /// When the row does not have one value per column.
    pub fn finish(self) {
        assert_eq!(
            self.pushed, self.expected,
            "a text row needs one value per column"
        );
    }
}

impl Drop for TextRowWriter<'_> {
    fn drop(&mut self) {
        // The packet is completed whatever happened, so the buffer's framing
        // stays whole; the column count is checked in `finish`.
        finish_packet(self.out, self.start, self.sequence);
    }
}

/// One binary row being written; the packet is completed by
/// [`finish`](Self::finish) (or when the writer is dropped).
#[derive(Debug)]
pub struct BinaryRowWriter<'w> {
    out: &'w mut Vec<u8>,
    sequence: &'w mut u8,
    start: usize,
    bitmap_start: usize,
    column_types: &'w [FieldType],
    pushed: usize,
}

impl BinaryRowWriter<'_> {
    /// Appends the next column's value in its type's binary format.
    ///
    /// # Panics
    /// When the row already has a value for every column, or when the
    /// value does not fit the column's type (see
    /// [`encode_binary_value`]).
    pub fn push(&mut self, value: &ProtocolValue<'_>) {
        let index = self.pushed;
        let field_type = *self
            .column_types
            .get(index)
            .expect("a binary row has one value per column");
        if matches!(value, ProtocolValue::Null) {
            let bit = index + BINARY_ROW_NULL_BITMAP_OFFSET;
            self.out[self.bitmap_start + bit / 8] |= 1 << (bit % 8);
        } else {
            encode_binary_value(self.out, field_type, value);
        }
        self.pushed += 1;
    }

    /// Completes the row's packet.
    ///
    /// # Panics
    /// When the row does not have one value per column.
    pub fn finish(self) {
        assert_eq!(
            self.pushed,
            self.column_types.len(),
            "a binary row needs one value per column"
        );
    }
}

impl Drop for BinaryRowWriter<'_> {
    fn drop(&mut self) {
        // The packet is completed whatever happened, so the buffer's framing
        // stays whole; the column count is checked in `finish`.
        finish_packet(self.out, self.start, self.sequence);
    }
}

/// Appends the answer to COM_FIELD_LIST: a column definition with a
/// default value per column, then EOF (or the 0xFE OK).
pub fn write_field_list(
    out: &mut Vec<u8>,
    sequence: &mut u8,
    capabilities: u32,
    columns: &[ColumnDefinition],
    status: u16,
) {
    for column in columns {
        write_column_definition(out, sequence, column, true);
    }
    write_end_of_rows(out, sequence, capabilities, status, 0);
}

/// Appends a packet holding only `text` (the answer to COM_STATISTICS).
pub fn write_text_packet(out: &mut Vec<u8>, sequence: &mut u8, text: &[u8]) {
    write_packet(out, sequence, text);
}

/// Writes `value`'s decimal digits (with a minus sign when `negative`) at
/// the end of `buffer` and returns them.
fn format_integer(mut value: u64, negative: bool, buffer: &mut [u8; MAX_INTEGER_DIGITS]) -> &[u8] {
    let mut position = buffer.len();
    loop {
        position -= 1;
        buffer[position] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    if negative {
        position -= 1;
        buffer[position] = b'-';
    }
    &buffer[position..]
}
