//! Typed values and their storage encodings (the bytes a column holds in a row).
//!
//! CONTRACT (implemented by the value/collation work item):
//! - integers: little-endian two's complement (signed) or plain (unsigned),
//!   1/2/3/4/8 bytes; out of range is `WrongValue` (MySQL 1264/1366 territory);
//! - FLOAT/DOUBLE: IEEE little-endian; NaN and infinities are refused;
//! - DECIMAL(p,s): MySQL's packed binary decimal (memcomparable); too many
//!   integer digits is `WrongValue`; extra fraction digits are rounded half up;
//! - CHAR(n): the text in the column's character set, right-padded with
//!   spaces to n × bytes_per_char_max; decode strips the padding;
//! - VARCHAR/TEXT: the text as is; more than n characters is `DataTooLong`;
//!   utf8mb4 text must be valid UTF-8 (`WrongValue`);
//! - BINARY(n): right-padded with zero bytes; VARBINARY/BLOB as is;
//! - DATE, DATETIME(fsp), TIMESTAMP(fsp), TIME(fsp): MySQL's binary formats
//!   (DATE 3 bytes little-endian `day | month << 5 | year << 9`; datetime2,
//!   timestamp2, time2 big-endian with the fractional tail);
//! - YEAR: 1 byte, 0 for 0000 and year − 1900 for 1901..=2155;
//! - BIT(n): ceil(n/8) bytes big-endian; ENUM: 1-based index, 1 or 2 bytes LE.

use crate::error::Error;
use crate::types::ColumnType;

/// A typed value as clients and tests see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    /// Signed integer types.
    Int(i64),
    /// Unsigned integer types.
    UInt(u64),
    /// Exact decimal as text, such as "-12.50".
    Decimal(String),
    Float(f32),
    Double(f64),
    /// Strings (in the column's character set) and byte strings.
    Bytes(Vec<u8>),
    Date { year: u16, month: u8, day: u8 },
    Datetime { year: u16, month: u8, day: u8, hour: u8, minute: u8, second: u8, microsecond: u32 },
    /// Seconds and microseconds since 1970-01-01 00:00:00 UTC.
    Timestamp { seconds: u32, microsecond: u32 },
    Time { negative: bool, hours: u16, minutes: u8, seconds: u8, microsecond: u32 },
    Year(u16),
    Bit(u64),
    /// 1-based index into the ENUM's members.
    Enum(u16),
}

impl Value {
    /// Appends the value's storage bytes for `column_type` to `out`.
    /// `Value::Null` appends nothing and is the caller's to mark as NULL.
    pub fn encode(&self, column_type: &ColumnType, out: &mut Vec<u8>) -> Result<(), Error> {
        let _ = (column_type, out);
        todo!("value encoding")
    }

    /// The value stored as `bytes` in a column of `column_type`.
    pub fn decode(column_type: &ColumnType, bytes: &[u8]) -> Value {
        let _ = (column_type, bytes);
        todo!("value decoding")
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::Bytes(text.as_bytes().to_vec())
    }
}
