//! Typed values and their storage encodings (the bytes a column holds in a row).
//!
//! CONTRACT (implemented by the value/collation work item):
//! - integers: little-endian two's complement (signed) or plain (unsigned),
//!   1/2/3/4/8 bytes; out of range is `WrongValue` (MySQL 1264/1366 territory);
//! - FLOAT/DOUBLE: IEEE little-endian; NaN and infinities are refused;
//! - DECIMAL(p,s): MySQL's packed binary decimal (memcomparable); too many
//!   integer digits is `WrongValue`; extra fraction digits are rounded half up;
//! - CHAR(n): the text in the column's character set without trailing
//!   spaces (MySQL returns CHAR values so, and every comparison ignores them),
//!   at most n × bytes_per_char_max bytes;
//! - VARCHAR/TEXT: the text as is; more than n characters is `DataTooLong`;
//!   utf8mb4 text must be valid UTF-8 (`WrongValue`);
//! - BINARY(n): right-padded with zero bytes; VARBINARY/BLOB as is;
//! - DATE, DATETIME(fsp), TIMESTAMP(fsp), TIME(fsp): MySQL's binary formats
//!   (DATE 3 bytes little-endian `day | month << 5 | year << 9`; datetime2,
//!   timestamp2, time2 big-endian with the fractional tail);
//! - YEAR: 1 byte, 0 for 0000 and year − 1900 for 1901..=2155;
//! - BIT(n): ceil(n/8) bytes big-endian; ENUM: 1-based index, 1 or 2 bytes LE.
//!
//! ## Which values each type takes
//! Every type takes its own kind of [`Value`]; a few take another kind when
//! the conversion is exact, because that is what SQL literals look like:
//! - integer types: `Int` and `UInt` (in range);
//! - DECIMAL: `Decimal` text (`[+-]digits[.digits]`, also `.5` and `5.`),
//!   `Int`, `UInt`; extra fraction digits round half away from zero;
//! - FLOAT: `Float`, or `Double` within FLOAT's range (rounded to nearest);
//!   DOUBLE: `Double`, `Float`;
//! - CHAR, VARCHAR, TEXT, BINARY, VARBINARY, BLOB: `Bytes`. As in MySQL,
//!   excess *trailing spaces* of CHAR/VARCHAR/TEXT are cut silently; any
//!   other excess is `DataTooLong`;
//! - DATE: `Date` (year 0..=9999, or the zero date 0000-00-00);
//!   DATETIME: `Datetime`; TIMESTAMP: `Timestamp` (up to 2038-01-19
//!   03:14:07 UTC, MySQL's limit); TIME: `Time` (−838:59:59..=838:59:59).
//!   Microseconds beyond the column's fractional digits round half up, as
//!   MySQL 8 does by default, carrying into the seconds (and the date);
//! - YEAR: `Year`, `Int`, `UInt` (the year number, not two-digit years);
//! - BIT(w): `Bit`, `UInt`, non-negative `Int`, fitting in w bits;
//! - ENUM: `Enum` index, `Int`/`UInt` index, or `Bytes` naming a member
//!   (exactly, else ASCII case-insensitively, as the default collation would).
//!
//! Anything else is `WrongValue` with a detail naming the type. On error the
//! output buffer is left as it was.

use crate::error::{Error, ErrorCode};
use crate::types::{
    BIT_WIDTH_MAX, Collation, ColumnType, DECIMAL_PRECISION_MAX, DECIMAL_SCALE_MAX, FSP_MAX,
    Storage,
};
use std::borrow::Cow;

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
    Date {
        year: u16,
        month: u8,
        day: u8,
    },
    Datetime {
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        microsecond: u32,
    },
    /// Seconds and microseconds since 1970-01-01 00:00:00 UTC.
    Timestamp {
        seconds: u32,
        microsecond: u32,
    },
    Time {
        negative: bool,
        hours: u16,
        minutes: u8,
        seconds: u8,
        microsecond: u32,
    },
    Year(u16),
    Bit(u64),
    /// 1-based index into the ENUM's members.
    Enum(u16),
}

/// Bytes MySQL's packed decimal format uses for 0..=9 leftover digits.
const DECIMAL_DIGIT_BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];
/// Digits in one full group of the packed decimal format (stored in 4 bytes).
const DIGITS_PER_GROUP: usize = 9;
/// Most bytes a packed DECIMAL takes (DECIMAL(65,30) takes 30).
const DECIMAL_BYTES_MAX: usize = 32;
/// MySQL's `DATETIMEF_INT_OFS`: added so the signed packed value is stored unsigned.
const DATETIME_INTEGER_OFFSET: i64 = 0x80_0000_0000;
/// MySQL's `TIMEF_INT_OFS`, for TIME with 0 to 4 fractional digits.
const TIME_INTEGER_OFFSET: i64 = 0x80_0000;
/// MySQL's `TIMEF_OFS`, for TIME with 5 or 6 fractional digits.
const TIME_OFFSET: i64 = 0x8000_0000_0000;
/// TIME's range is ±838:59:59 (MySQL's limit, from the old 3-byte format).
const TIME_HOURS_MAX: u16 = 838;
/// The last second TIMESTAMP stores: 2038-01-19 03:14:07 UTC.
const TIMESTAMP_SECONDS_MAX: u32 = i32::MAX as u32;
const MICROSECONDS_PER_SECOND: u32 = 1_000_000;
/// The fractional part of MySQL's packed temporal values has 24 bits.
const PACKED_FRACTION_BITS: u32 = 24;

impl Value {
    /// Appends the value's storage bytes for `column_type` to `out`.
    /// `Value::Null` appends nothing and is the caller's to mark as NULL.
    pub fn encode(&self, column_type: &ColumnType, out: &mut Vec<u8>) -> Result<(), Error> {
        use ColumnType as Type;
        if matches!(self, Value::Null) {
            return Ok(());
        }
        match column_type {
            Type::TinyInt { unsigned } => self.encode_integer(column_type, *unsigned, 1, out),
            Type::SmallInt { unsigned } => self.encode_integer(column_type, *unsigned, 2, out),
            Type::MediumInt { unsigned } => self.encode_integer(column_type, *unsigned, 3, out),
            Type::Int { unsigned } => self.encode_integer(column_type, *unsigned, 4, out),
            Type::BigInt { unsigned } => self.encode_integer(column_type, *unsigned, 8, out),
            Type::Decimal { precision, scale } => self.encode_decimal(*precision, *scale, out),
            Type::Float => {
                let float = match *self {
                    Value::Float(float) => float,
                    Value::Double(double) => {
                        let float = double as f32;
                        if double.is_finite() && !float.is_finite() {
                            return Err(wrong_value("value is out of range for FLOAT"));
                        }
                        float
                    }
                    _ => return Err(self.wrong_kind(column_type)),
                };
                if !float.is_finite() {
                    return Err(wrong_value("FLOAT does not store NaN or infinity"));
                }
                out.extend_from_slice(&float.to_le_bytes());
                Ok(())
            }
            Type::Double => {
                let double = match *self {
                    Value::Double(double) => double,
                    Value::Float(float) => f64::from(float),
                    _ => return Err(self.wrong_kind(column_type)),
                };
                if !double.is_finite() {
                    return Err(wrong_value("DOUBLE does not store NaN or infinity"));
                }
                out.extend_from_slice(&double.to_le_bytes());
                Ok(())
            }
            Type::Char { length, collation } => {
                let text = self.bytes(column_type)?;
                let text = check_text(text, *collation, u64::from(*length), true)?;
                out.extend_from_slice(strip_trailing_spaces(text));
                Ok(())
            }
            Type::Varchar { length, collation } => {
                let text = self.bytes(column_type)?;
                let text = check_text(text, *collation, u64::from(*length), true)?;
                out.extend_from_slice(text);
                Ok(())
            }
            Type::Text {
                length_max,
                collation,
            } => {
                // TEXT's limit is in bytes, as MySQL's TEXT(M) is.
                let text = self.bytes(column_type)?;
                let text = check_text(text, *collation, u64::from(*length_max), false)?;
                out.extend_from_slice(text);
                Ok(())
            }
            Type::Binary { length } => {
                let bytes = self.bytes(column_type)?;
                check_bytes(bytes, u64::from(*length))?;
                let start = out.len();
                out.extend_from_slice(bytes);
                out.resize(start + usize::from(*length), 0);
                Ok(())
            }
            Type::Varbinary { length } => {
                let bytes = self.bytes(column_type)?;
                check_bytes(bytes, u64::from(*length))?;
                out.extend_from_slice(bytes);
                Ok(())
            }
            Type::Blob { length_max } => {
                let bytes = self.bytes(column_type)?;
                check_bytes(bytes, u64::from(*length_max))?;
                out.extend_from_slice(bytes);
                Ok(())
            }
            Type::Date => {
                let Value::Date { year, month, day } = *self else {
                    return Err(self.wrong_kind(column_type));
                };
                check_date(year, month, day)?;
                let packed = u32::from(day) | u32::from(month) << 5 | u32::from(year) << 9;
                out.extend_from_slice(&packed.to_le_bytes()[..3]);
                Ok(())
            }
            Type::Datetime { fsp } => self.encode_datetime(column_type, *fsp, out),
            Type::Timestamp { fsp } => {
                let Value::Timestamp {
                    seconds,
                    microsecond,
                } = *self
                else {
                    return Err(self.wrong_kind(column_type));
                };
                let fsp = check_fsp(*fsp)?;
                if microsecond >= MICROSECONDS_PER_SECOND {
                    return Err(wrong_value("microsecond must be 0..=999999"));
                }
                let (microsecond, carry) = round_microsecond(microsecond, fsp);
                let seconds = seconds.checked_add(u32::from(carry));
                let Some(seconds) = seconds.filter(|&seconds| seconds <= TIMESTAMP_SECONDS_MAX)
                else {
                    return Err(wrong_value(
                        "TIMESTAMP is out of range (after 2038-01-19 03:14:07 UTC)",
                    ));
                };
                out.extend_from_slice(&seconds.to_be_bytes());
                push_fraction(microsecond, fsp, out);
                Ok(())
            }
            Type::Time { fsp } => self.encode_time(column_type, *fsp, out),
            Type::Year => {
                let year = match *self {
                    Value::Year(year) => u64::from(year),
                    Value::UInt(year) => year,
                    Value::Int(year) => u64::try_from(year).unwrap_or(u64::MAX),
                    _ => return Err(self.wrong_kind(column_type)),
                };
                let stored = match year {
                    0 => 0,
                    1901..=2155 => (year - 1900) as u8,
                    _ => return Err(wrong_value("YEAR must be 0 or 1901..=2155")),
                };
                out.push(stored);
                Ok(())
            }
            Type::Bit { width } => {
                let bits = match *self {
                    Value::Bit(bits) | Value::UInt(bits) => bits,
                    Value::Int(bits) if bits >= 0 => bits as u64,
                    Value::Int(_) => {
                        return Err(wrong_value("BIT does not store negative numbers"));
                    }
                    _ => return Err(self.wrong_kind(column_type)),
                };
                if *width == 0 || *width > BIT_WIDTH_MAX {
                    return Err(Error::new(
                        ErrorCode::WrongColumnSpec,
                        "BIT width must be 1..=64",
                    ));
                }
                if *width < 64 && bits >> width != 0 {
                    return Err(Error::new(
                        ErrorCode::WrongValue,
                        format!("value does not fit in BIT({width})"),
                    ));
                }
                let size = usize::from(*width).div_ceil(8);
                out.extend_from_slice(&bits.to_be_bytes()[8 - size..]);
                Ok(())
            }
            Type::Enum { variants } => {
                let index = match self {
                    Value::Enum(index) => u64::from(*index),
                    Value::UInt(index) => *index,
                    Value::Int(index) => u64::try_from(*index).unwrap_or(0),
                    Value::Bytes(name) => enum_index(variants, name)
                        .ok_or_else(|| wrong_value("the ENUM has no such member"))?,
                    _ => return Err(self.wrong_kind(column_type)),
                };
                if index == 0 || index > variants.len() as u64 {
                    return Err(Error::new(
                        ErrorCode::WrongValue,
                        format!("ENUM index must be 1..={}", variants.len()),
                    ));
                }
                if variants.len() <= 255 {
                    out.push(index as u8);
                } else {
                    out.extend_from_slice(&(index as u16).to_le_bytes());
                }
                Ok(())
            }
        }
    }

    /// The value stored as `bytes` in a column of `column_type`.
    ///
    /// `bytes` must be a stored value of the type (as `encode` writes it);
    /// a fixed-size type given the wrong number of bytes panics.
    pub fn decode(column_type: &ColumnType, bytes: &[u8]) -> Value {
        use ColumnType as Type;
        if let Storage::Fixed(size) = column_type.storage() {
            assert_eq!(
                bytes.len(),
                size as usize,
                "stored value of the wrong size for {}",
                type_name(column_type)
            );
        }
        match column_type {
            Type::TinyInt { unsigned }
            | Type::SmallInt { unsigned }
            | Type::MediumInt { unsigned }
            | Type::Int { unsigned }
            | Type::BigInt { unsigned } => {
                if *unsigned {
                    Value::UInt(read_unsigned_little_endian(bytes))
                } else {
                    Value::Int(read_signed_little_endian(bytes))
                }
            }
            Type::Decimal { precision, scale } => {
                Value::Decimal(decode_decimal(*precision, *scale, bytes))
            }
            Type::Float => Value::Float(f32::from_le_bytes(bytes.try_into().expect("4 bytes"))),
            Type::Double => Value::Double(f64::from_le_bytes(bytes.try_into().expect("8 bytes"))),
            Type::Char { .. } => Value::Bytes(strip_trailing_spaces(bytes).to_vec()),
            Type::Varchar { .. }
            | Type::Text { .. }
            | Type::Binary { .. }
            | Type::Varbinary { .. }
            | Type::Blob { .. } => Value::Bytes(bytes.to_vec()),
            Type::Date => {
                let packed = read_unsigned_little_endian(bytes) as u32;
                Value::Date {
                    year: (packed >> 9) as u16,
                    month: (packed >> 5 & 0x0F) as u8,
                    day: (packed & 0x1F) as u8,
                }
            }
            Type::Datetime { fsp } => {
                let integer =
                    read_unsigned_big_endian(&bytes[..5]) as i64 - DATETIME_INTEGER_OFFSET;
                let year_month_day = integer >> 17;
                let hour_minute_second = integer & ((1 << 17) - 1);
                let year_month = year_month_day >> 5;
                Value::Datetime {
                    year: (year_month / 13) as u16,
                    month: (year_month % 13) as u8,
                    day: (year_month_day & 0x1F) as u8,
                    hour: (hour_minute_second >> 12) as u8,
                    minute: (hour_minute_second >> 6 & 0x3F) as u8,
                    second: (hour_minute_second & 0x3F) as u8,
                    microsecond: read_fraction(&bytes[5..], *fsp),
                }
            }
            Type::Timestamp { fsp } => Value::Timestamp {
                seconds: read_unsigned_big_endian(&bytes[..4]) as u32,
                microsecond: read_fraction(&bytes[4..], *fsp),
            },
            Type::Time { fsp } => {
                let packed = time_packed_from_binary(bytes, *fsp);
                let magnitude = packed.unsigned_abs();
                let hour_minute_second = magnitude >> PACKED_FRACTION_BITS;
                Value::Time {
                    negative: packed < 0,
                    hours: (hour_minute_second >> 12 & 0x3FF) as u16,
                    minutes: (hour_minute_second >> 6 & 0x3F) as u8,
                    seconds: (hour_minute_second & 0x3F) as u8,
                    microsecond: (magnitude & ((1 << PACKED_FRACTION_BITS) - 1)) as u32,
                }
            }
            Type::Year => Value::Year(if bytes[0] == 0 {
                0
            } else {
                1900 + u16::from(bytes[0])
            }),
            Type::Bit { .. } => Value::Bit(read_unsigned_big_endian(bytes)),
            Type::Enum { .. } => Value::Enum(read_unsigned_little_endian(bytes) as u16),
        }
    }

    /// The name of the value's kind, for error details.
    fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "signed integer",
            Value::UInt(_) => "unsigned integer",
            Value::Decimal(_) => "decimal",
            Value::Float(_) => "float",
            Value::Double(_) => "double",
            Value::Bytes(_) => "string",
            Value::Date { .. } => "date",
            Value::Datetime { .. } => "datetime",
            Value::Timestamp { .. } => "timestamp",
            Value::Time { .. } => "time",
            Value::Year(_) => "year",
            Value::Bit(_) => "bit",
            Value::Enum(_) => "enum",
        }
    }

    fn wrong_kind(&self, column_type: &ColumnType) -> Error {
        Error::new(
            ErrorCode::WrongValue,
            format!(
                "a {} value does not fit a {} column",
                self.kind_name(),
                type_name(column_type)
            ),
        )
    }

    fn bytes(&self, column_type: &ColumnType) -> Result<&[u8], Error> {
        match self {
            Value::Bytes(bytes) => Ok(bytes),
            _ => Err(self.wrong_kind(column_type)),
        }
    }

    fn encode_integer(
        &self,
        column_type: &ColumnType,
        unsigned: bool,
        width: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let out_of_range = || {
            Error::new(
                ErrorCode::WrongValue,
                format!("value is out of range for {}", type_name(column_type)),
            )
        };
        let bits = 8 * width as u32;
        if unsigned {
            let magnitude = match *self {
                Value::UInt(magnitude) => magnitude,
                Value::Int(signed) => u64::try_from(signed).map_err(|_| out_of_range())?,
                _ => return Err(self.wrong_kind(column_type)),
            };
            if bits < 64 && magnitude >> bits != 0 {
                return Err(out_of_range());
            }
            out.extend_from_slice(&magnitude.to_le_bytes()[..width]);
        } else {
            let signed = match *self {
                Value::Int(signed) => signed,
                Value::UInt(magnitude) => i64::try_from(magnitude).map_err(|_| out_of_range())?,
                _ => return Err(self.wrong_kind(column_type)),
            };
            // In range exactly when sign-extending the low `bits` gives the value back.
            let shift = 64 - bits;
            if signed << shift >> shift != signed {
                return Err(out_of_range());
            }
            out.extend_from_slice(&signed.to_le_bytes()[..width]);
        }
        Ok(())
    }

    fn encode_decimal(&self, precision: u8, scale: u8, out: &mut Vec<u8>) -> Result<(), Error> {
        let mut integer_buffer = [0u8; 20];
        let (negative, integer_digits, fraction_digits): (bool, &[u8], &[u8]) = match self {
            Value::Decimal(text) => parse_decimal_text(text.as_bytes()).ok_or_else(|| {
                Error::new(
                    ErrorCode::WrongValue,
                    format!("'{text}' is not a decimal number"),
                )
            })?,
            Value::Int(integer) => (
                *integer < 0,
                decimal_digits(integer.unsigned_abs(), &mut integer_buffer),
                &[],
            ),
            Value::UInt(integer) => (false, decimal_digits(*integer, &mut integer_buffer), &[]),
            _ => {
                return Err(Error::new(
                    ErrorCode::WrongValue,
                    format!("a {} value does not fit a DECIMAL column", self.kind_name()),
                ));
            }
        };
        encode_decimal_digits(
            negative,
            integer_digits,
            fraction_digits,
            precision,
            scale,
            out,
        )
    }

    fn encode_datetime(
        &self,
        column_type: &ColumnType,
        fsp: u8,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let Value::Datetime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            microsecond,
        } = *self
        else {
            return Err(self.wrong_kind(column_type));
        };
        let fsp = check_fsp(fsp)?;
        check_date(year, month, day)?;
        if hour > 23 || minute > 59 || second > 59 || microsecond >= MICROSECONDS_PER_SECOND {
            return Err(wrong_value(
                "DATETIME time of day must be 00:00:00..=23:59:59.999999",
            ));
        }
        let (microsecond, carry) = round_microsecond(microsecond, fsp);
        let (mut year, mut month, mut day) = (year, month, day);
        let (mut hour, mut minute, mut second) = (hour, minute, second);
        if carry {
            // Rounding the microseconds up reached the next second, which may
            // be the next minute, hour, day, month or year.
            second += 1;
            if second == 60 {
                second = 0;
                minute += 1;
            }
            if minute == 60 {
                minute = 0;
                hour += 1;
            }
            if hour == 24 {
                hour = 0;
                (year, month, day) = next_day(year, month, day)?;
            }
        }
        let year_month_day = (i64::from(year) * 13 + i64::from(month)) << 5 | i64::from(day);
        let hour_minute_second = i64::from(hour) << 12 | i64::from(minute) << 6 | i64::from(second);
        let stored = (year_month_day << 17 | hour_minute_second) + DATETIME_INTEGER_OFFSET;
        out.extend_from_slice(&stored.to_be_bytes()[3..]);
        push_fraction(microsecond, fsp, out);
        Ok(())
    }

    fn encode_time(
        &self,
        column_type: &ColumnType,
        fsp: u8,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let Value::Time {
            negative,
            hours,
            minutes,
            seconds,
            microsecond,
        } = *self
        else {
            return Err(self.wrong_kind(column_type));
        };
        let fsp = check_fsp(fsp)?;
        let out_of_range = || wrong_value("TIME must be -838:59:59..=838:59:59");
        if minutes > 59 || seconds > 59 || microsecond >= MICROSECONDS_PER_SECOND {
            return Err(wrong_value("TIME minutes and seconds must be 0..=59"));
        }
        let (microsecond, carry) = round_microsecond(microsecond, fsp);
        let (mut hours, mut minutes, mut seconds) = (hours, minutes, seconds);
        if carry {
            seconds += 1;
            if seconds == 60 {
                seconds = 0;
                minutes += 1;
            }
            if minutes == 60 {
                minutes = 0;
                hours = hours.checked_add(1).ok_or_else(out_of_range)?;
            }
        }
        if hours > TIME_HOURS_MAX
            || (hours == TIME_HOURS_MAX && minutes == 59 && seconds == 59 && microsecond > 0)
        {
            return Err(out_of_range());
        }
        let hour_minute_second =
            i64::from(hours) << 12 | i64::from(minutes) << 6 | i64::from(seconds);
        let magnitude = hour_minute_second << PACKED_FRACTION_BITS | i64::from(microsecond);
        // Minus zero is zero, as in MySQL.
        let packed = if negative { -magnitude } else { magnitude };
        time_packed_to_binary(packed, fsp, out);
        Ok(())
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::Bytes(text.as_bytes().to_vec())
    }
}

/// The SQL name of the type, for error details.
pub fn type_name(column_type: &ColumnType) -> &'static str {
    use ColumnType as Type;
    match column_type {
        Type::TinyInt { unsigned: false } => "TINYINT",
        Type::TinyInt { unsigned: true } => "TINYINT UNSIGNED",
        Type::SmallInt { unsigned: false } => "SMALLINT",
        Type::SmallInt { unsigned: true } => "SMALLINT UNSIGNED",
        Type::MediumInt { unsigned: false } => "MEDIUMINT",
        Type::MediumInt { unsigned: true } => "MEDIUMINT UNSIGNED",
        Type::Int { unsigned: false } => "INT",
        Type::Int { unsigned: true } => "INT UNSIGNED",
        Type::BigInt { unsigned: false } => "BIGINT",
        Type::BigInt { unsigned: true } => "BIGINT UNSIGNED",
        Type::Decimal { .. } => "DECIMAL",
        Type::Float => "FLOAT",
        Type::Double => "DOUBLE",
        Type::Char { .. } => "CHAR",
        Type::Varchar { .. } => "VARCHAR",
        Type::Binary { .. } => "BINARY",
        Type::Varbinary { .. } => "VARBINARY",
        Type::Date => "DATE",
        Type::Datetime { .. } => "DATETIME",
        Type::Timestamp { .. } => "TIMESTAMP",
        Type::Time { .. } => "TIME",
        Type::Year => "YEAR",
        Type::Bit { .. } => "BIT",
        Type::Enum { .. } => "ENUM",
        Type::Blob { .. } => "BLOB",
        Type::Text { .. } => "TEXT",
    }
}

/// Whether `year` has a February 29th, by MySQL's rule (which makes year 0 a common year).
pub fn is_leap_year(year: u16) -> bool {
    year != 0 && year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

/// Days in `month` (1..=12) of `year`.
pub fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// `text` without its trailing spaces, as MySQL returns CHAR values.
#[inline]
pub fn strip_trailing_spaces(text: &[u8]) -> &[u8] {
    let mut end = text.len();
    while end > 0 && text[end - 1] == b' ' {
        end -= 1;
    }
    &text[..end]
}

/// Number of characters in UTF-8 text: the bytes that are not continuation bytes.
#[inline]
pub fn utf8_character_count(text: &[u8]) -> usize {
    // Every byte but a continuation byte (0b10xxxxxx) starts a character;
    // eight bytes at a time, a continuation byte is one whose top bit is
    // set and whose next bit is not.
    const TOP_BITS: u64 = 0x8080_8080_8080_8080;
    let mut words = text.chunks_exact(8);
    let mut continuations = 0usize;
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        continuations += (word & !(word << 1) & TOP_BITS).count_ones() as usize;
    }
    continuations += words
        .remainder()
        .iter()
        .filter(|&&byte| byte & 0xC0 == 0x80)
        .count();
    text.len() - continuations
}

fn wrong_value(detail: impl Into<Cow<'static, str>>) -> Error {
    Error::new(ErrorCode::WrongValue, detail)
}

/// Checks text against its column: valid in the character set, and at most
/// `length_max` characters (or bytes, unless `count_characters`). Returns
/// the text to store: excess trailing spaces are cut, as MySQL cuts them
/// with only a note even in strict mode.
fn check_text(
    text: &[u8],
    collation: Collation,
    length_max: u64,
    count_characters: bool,
) -> Result<&[u8], Error> {
    let utf8 = matches!(collation, Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi);
    if utf8 && std::str::from_utf8(text).is_err() {
        return Err(wrong_value("string is not valid utf8mb4"));
    }
    // No more bytes than the limit is no more characters either.
    let length = if utf8 && count_characters && text.len() as u64 > length_max {
        utf8_character_count(text)
    } else {
        text.len()
    };
    let excess = (length as u64).saturating_sub(length_max) as usize;
    if excess == 0 {
        return Ok(text);
    }
    // Spaces are one byte in every character set here, so cutting `excess`
    // characters of trailing spaces cuts `excess` bytes.
    if text.len() - strip_trailing_spaces(text).len() >= excess {
        return Ok(&text[..text.len() - excess]);
    }
    Err(Error::new(
        ErrorCode::DataTooLong,
        format!("string is longer than {length_max}"),
    ))
}

fn check_bytes(bytes: &[u8], length_max: u64) -> Result<(), Error> {
    if bytes.len() as u64 > length_max {
        return Err(Error::new(
            ErrorCode::DataTooLong,
            format!("byte string is longer than {length_max}"),
        ));
    }
    Ok(())
}

/// The 1-based index of the ENUM member named `name`: an exact match, else
/// one equal ignoring ASCII case and trailing spaces (MySQL strips trailing
/// spaces from member names and compares under a case-insensitive collation).
fn enum_index(variants: &[String], name: &[u8]) -> Option<u64> {
    let position = variants
        .iter()
        .position(|variant| variant.as_bytes() == name)
        .or_else(|| {
            let name = strip_trailing_spaces(name);
            variants.iter().position(|variant| {
                strip_trailing_spaces(variant.as_bytes()).eq_ignore_ascii_case(name)
            })
        })?;
    Some(position as u64 + 1)
}

fn check_date(year: u16, month: u8, day: u8) -> Result<(), Error> {
    if (year, month, day) == (0, 0, 0) {
        return Ok(());
    }
    if year > 9999 || !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(Error::new(
            ErrorCode::WrongValue,
            format!("'{year:04}-{month:02}-{day:02}' is not a valid date"),
        ));
    }
    Ok(())
}

fn next_day(year: u16, month: u8, day: u8) -> Result<(u16, u8, u8), Error> {
    if month == 0 {
        return Err(wrong_value("the zero date has no next day"));
    }
    if day < days_in_month(year, month) {
        Ok((year, month, day + 1))
    } else if month < 12 {
        Ok((year, month + 1, 1))
    } else if year < 9999 {
        Ok((year + 1, 1, 1))
    } else {
        Err(wrong_value(
            "DATETIME is out of range (after 9999-12-31 23:59:59)",
        ))
    }
}

fn check_fsp(fsp: u8) -> Result<u8, Error> {
    if fsp > FSP_MAX {
        return Err(Error::new(
            ErrorCode::WrongColumnSpec,
            "fractional seconds precision must be 0..=6",
        ));
    }
    Ok(fsp)
}

/// Rounds microseconds to `fsp` digits, half up; the flag says the result
/// reached a whole second (and the microseconds are then 0).
fn round_microsecond(microsecond: u32, fsp: u8) -> (u32, bool) {
    let unit = 10u32.pow(u32::from(FSP_MAX - fsp));
    let rounded = (microsecond + unit / 2) / unit * unit;
    if rounded >= MICROSECONDS_PER_SECOND {
        (0, true)
    } else {
        (rounded, false)
    }
}

/// Appends the fractional-seconds tail of datetime2 and timestamp2:
/// `ceil(fsp / 2)` bytes big-endian holding the fraction in units of that size.
fn push_fraction(microsecond: u32, fsp: u8, out: &mut Vec<u8>) {
    match fsp {
        0 => {}
        1 | 2 => out.push((microsecond / 10_000) as u8),
        3 | 4 => out.extend_from_slice(&((microsecond / 100) as u16).to_be_bytes()),
        _ => out.extend_from_slice(&microsecond.to_be_bytes()[1..]),
    }
}

fn read_fraction(tail: &[u8], fsp: u8) -> u32 {
    match fsp {
        0 => 0,
        1 | 2 => u32::from(tail[0]) * 10_000,
        3 | 4 => read_unsigned_big_endian(&tail[..2]) as u32 * 100,
        _ => read_unsigned_big_endian(&tail[..3]) as u32,
    }
}

/// MySQL's `my_time_packed_to_binary`: time2, where a negative time with a
/// fraction stores the integer part one lower and the fraction's complement
/// so that the bytes still sort as the times do.
fn time_packed_to_binary(packed: i64, fsp: u8, out: &mut Vec<u8>) {
    // `>>` floors and `%` truncates, exactly as in MySQL's macros.
    let integer = packed >> PACKED_FRACTION_BITS;
    let fraction = packed % (1 << PACKED_FRACTION_BITS);
    let push_integer = |out: &mut Vec<u8>| {
        out.extend_from_slice(&(integer + TIME_INTEGER_OFFSET).to_be_bytes()[5..]);
    };
    match fsp {
        0 => push_integer(out),
        1 | 2 => {
            push_integer(out);
            out.push((fraction / 10_000) as i8 as u8);
        }
        3 | 4 => {
            push_integer(out);
            out.extend_from_slice(&((fraction / 100) as i16 as u16).to_be_bytes());
        }
        _ => out.extend_from_slice(&(packed + TIME_OFFSET).to_be_bytes()[2..]),
    }
}

/// MySQL's `my_time_packed_from_binary`, the inverse of `time_packed_to_binary`.
fn time_packed_from_binary(bytes: &[u8], fsp: u8) -> i64 {
    let integer = || read_unsigned_big_endian(&bytes[..3]) as i64 - TIME_INTEGER_OFFSET;
    match fsp {
        0 => integer() << PACKED_FRACTION_BITS,
        1 | 2 => {
            let (mut integer, mut fraction) = (integer(), i64::from(bytes[3]));
            if integer < 0 && fraction != 0 {
                integer += 1;
                fraction -= 0x100;
            }
            (integer << PACKED_FRACTION_BITS) + fraction * 10_000
        }
        3 | 4 => {
            let (mut integer, mut fraction) =
                (integer(), read_unsigned_big_endian(&bytes[3..5]) as i64);
            if integer < 0 && fraction != 0 {
                integer += 1;
                fraction -= 0x1_0000;
            }
            (integer << PACKED_FRACTION_BITS) + fraction * 100
        }
        _ => read_unsigned_big_endian(&bytes[..6]) as i64 - TIME_OFFSET,
    }
}

/// Reads up to 8 bytes big-endian.
#[inline]
pub(crate) fn read_unsigned_big_endian(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0, |value, &byte| value << 8 | u64::from(byte))
}

/// Reads up to 8 bytes little-endian.
#[inline]
pub(crate) fn read_unsigned_little_endian(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0, |value, &byte| value << 8 | u64::from(byte))
}

/// Reads 1 to 8 bytes little-endian two's complement, sign-extending.
#[inline]
pub(crate) fn read_signed_little_endian(bytes: &[u8]) -> i64 {
    let width = bytes.len().clamp(1, 8) as u32;
    let shift = 64 - 8 * width;
    ((read_unsigned_little_endian(bytes) << shift) as i64) >> shift
}

/// Splits decimal text into its sign, integer digits (without leading zeros)
/// and fraction digits; `None` unless it is `[+-]digits[.digits]` with at
/// least one digit.
fn parse_decimal_text(text: &[u8]) -> Option<(bool, &[u8], &[u8])> {
    let (negative, unsigned) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (integer, fraction) = match unsigned.iter().position(|&byte| byte == b'.') {
        Some(point) => (&unsigned[..point], &unsigned[point + 1..]),
        None => (unsigned, &unsigned[unsigned.len()..]),
    };
    if integer.is_empty() && fraction.is_empty() {
        return None;
    }
    if !integer.iter().chain(fraction).all(u8::is_ascii_digit) {
        return None;
    }
    let leading_zeros = integer.iter().take_while(|&&digit| digit == b'0').count();
    Some((negative, &integer[leading_zeros..], fraction))
}

/// The decimal digits of `magnitude` (ASCII), without leading zeros; none for 0.
fn decimal_digits(mut magnitude: u64, buffer: &mut [u8; 20]) -> &[u8] {
    let mut start = buffer.len();
    while magnitude > 0 {
        start -= 1;
        buffer[start] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
    }
    &buffer[start..]
}

/// Appends MySQL's packed binary DECIMAL(precision, scale) (`decimal2bin`)
/// of the number with these ASCII digits. The integer part is stored in
/// groups of 9 digits (4 bytes each) aligned at the decimal point, with the
/// leftover leading digits in 1 to 4 bytes before them; the fraction in
/// groups of 9 after the point and its leftover trailing digits last. Each
/// group is big-endian; a negative number has every byte inverted; and the
/// first byte's top bit is flipped, so the bytes sort as the numbers do.
fn encode_decimal_digits(
    negative: bool,
    integer_digits: &[u8],
    fraction_digits: &[u8],
    precision: u8,
    scale: u8,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if precision == 0
        || precision > DECIMAL_PRECISION_MAX
        || scale > DECIMAL_SCALE_MAX
        || scale > precision
    {
        return Err(Error::new(
            ErrorCode::WrongColumnSpec,
            "DECIMAL precision or scale is invalid",
        ));
    }
    let integer_count = usize::from(precision - scale);
    let scale = usize::from(scale);
    if integer_digits.len() > integer_count {
        return Err(Error::new(
            ErrorCode::WrongValue,
            format!("value is out of range for DECIMAL({precision},{scale})"),
        ));
    }
    // The number as exactly `integer_count + scale` digit values, fixed point.
    let mut digits = [0u8; DECIMAL_PRECISION_MAX as usize];
    let total = integer_count + scale;
    let offset = integer_count - integer_digits.len();
    for (position, digit) in integer_digits.iter().enumerate() {
        digits[offset + position] = digit - b'0';
    }
    for (position, digit) in fraction_digits.iter().take(scale).enumerate() {
        digits[integer_count + position] = digit - b'0';
    }
    // Round half away from zero: the magnitude goes up when the first digit
    // dropped is 5 or more.
    if fraction_digits
        .get(scale)
        .is_some_and(|&digit| digit >= b'5')
    {
        let mut position = total;
        loop {
            if position == 0 {
                return Err(Error::new(
                    ErrorCode::WrongValue,
                    format!(
                        "value is out of range for DECIMAL({precision},{scale}) after rounding"
                    ),
                ));
            }
            position -= 1;
            if digits[position] == 9 {
                digits[position] = 0;
            } else {
                digits[position] += 1;
                break;
            }
        }
    }
    let negative = negative && digits[..total].iter().any(|&digit| digit != 0);

    let start = out.len();
    let push_group = |out: &mut Vec<u8>, group: &[u8]| {
        let value = group
            .iter()
            .fold(0u32, |value, &digit| value * 10 + u32::from(digit));
        let size = DECIMAL_DIGIT_BYTES[group.len()];
        out.extend_from_slice(&value.to_be_bytes()[4 - size..]);
    };
    let leading = integer_count % DIGITS_PER_GROUP;
    if leading > 0 {
        push_group(out, &digits[..leading]);
    }
    for group in digits[leading..integer_count + scale / DIGITS_PER_GROUP * DIGITS_PER_GROUP]
        .chunks(DIGITS_PER_GROUP)
    {
        push_group(out, group);
    }
    let trailing = scale % DIGITS_PER_GROUP;
    if trailing > 0 {
        push_group(out, &digits[total - trailing..total]);
    }
    if negative {
        for byte in &mut out[start..] {
            *byte = !*byte;
        }
    }
    out[start] ^= 0x80;
    Ok(())
}

/// The text of a packed binary DECIMAL(precision, scale): a minus sign if
/// negative, the integer digits without leading zeros (at least "0"), and
/// exactly `scale` fraction digits after a point.
fn decode_decimal(precision: u8, scale: u8, bytes: &[u8]) -> String {
    let integer_count = usize::from(precision - scale);
    let scale = usize::from(scale);
    let mut buffer = [0u8; DECIMAL_BYTES_MAX];
    let buffer = &mut buffer[..bytes.len()];
    buffer.copy_from_slice(bytes);
    let negative = buffer[0] & 0x80 == 0;
    buffer[0] ^= 0x80;
    if negative {
        for byte in buffer.iter_mut() {
            *byte = !*byte;
        }
    }
    let mut digits = [0u8; DECIMAL_PRECISION_MAX as usize];
    let mut read = 0usize;
    let mut written = 0usize;
    let mut take_group = |count: usize, digits: &mut [u8]| {
        let size = DECIMAL_DIGIT_BYTES[count];
        let mut value = read_unsigned_big_endian(&buffer[read..read + size]);
        read += size;
        for position in (0..count).rev() {
            digits[written + position] = (value % 10) as u8;
            value /= 10;
        }
        written += count;
    };
    let leading = integer_count % DIGITS_PER_GROUP;
    if leading > 0 {
        take_group(leading, &mut digits);
    }
    for _ in 0..integer_count / DIGITS_PER_GROUP + scale / DIGITS_PER_GROUP {
        take_group(DIGITS_PER_GROUP, &mut digits);
    }
    if scale % DIGITS_PER_GROUP > 0 {
        take_group(scale % DIGITS_PER_GROUP, &mut digits);
    }
    let total = integer_count + scale;
    let is_zero = digits[..total].iter().all(|&digit| digit == 0);
    let mut text = String::with_capacity(total + 3);
    if negative && !is_zero {
        text.push('-');
    }
    let first_significant = digits[..integer_count]
        .iter()
        .position(|&digit| digit != 0)
        .unwrap_or(integer_count);
    if first_significant == integer_count {
        text.push('0');
    }
    for &digit in &digits[first_significant..integer_count] {
        text.push(char::from(b'0' + digit));
    }
    if scale > 0 {
        text.push('.');
        for &digit in &digits[integer_count..total] {
            text.push(char::from(b'0' + digit));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn utf8_character_count_counts_the_characters(text in "\\PC{0,40}", skip in 0usize..8) {
            let bytes = text.as_bytes();
            let skip = skip.min(bytes.len());
            // Any bytes, cut anywhere: the count is of bytes that start a
            // character, as `chars` would count them on whole text.
            let naive = bytes[skip..].iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
            proptest::prop_assert_eq!(utf8_character_count(&bytes[skip..]), naive);
            proptest::prop_assert_eq!(utf8_character_count(bytes), text.chars().count());
        }
    }

    fn encode(value: &Value, column_type: &ColumnType) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        value.encode(column_type, &mut out)?;
        Ok(out)
    }

    fn error_code(value: Value, column_type: &ColumnType) -> ErrorCode {
        encode(&value, column_type).unwrap_err().code
    }

    fn decimal(precision: u8, scale: u8) -> ColumnType {
        ColumnType::Decimal { precision, scale }
    }

    fn decimal_text(text: &str, precision: u8, scale: u8) -> Result<String, ErrorCode> {
        let column_type = decimal(precision, scale);
        let bytes = encode(&Value::Decimal(text.to_string()), &column_type).map_err(|e| e.code)?;
        assert_eq!(
            bytes.len(),
            crate::types::decimal_bytes(precision, scale) as usize
        );
        match Value::decode(&column_type, &bytes) {
            Value::Decimal(text) => Ok(text),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn null_appends_nothing() {
        let mut out = vec![7];
        Value::Null
            .encode(&ColumnType::Int { unsigned: false }, &mut out)
            .unwrap();
        assert_eq!(out, [7]);
    }

    #[test]
    fn integers_are_little_endian_and_range_checked() {
        let medium = ColumnType::MediumInt { unsigned: false };
        assert_eq!(
            encode(&Value::Int(-2), &medium).unwrap(),
            [0xFE, 0xFF, 0xFF]
        );
        assert_eq!(Value::decode(&medium, &[0xFE, 0xFF, 0xFF]), Value::Int(-2));
        assert_eq!(
            error_code(Value::Int(8_388_608), &medium),
            ErrorCode::WrongValue
        );
        assert!(encode(&Value::Int(-8_388_608), &medium).is_ok());
        let tiny_unsigned = ColumnType::TinyInt { unsigned: true };
        assert_eq!(encode(&Value::Int(255), &tiny_unsigned).unwrap(), [255]);
        assert_eq!(
            error_code(Value::Int(-1), &tiny_unsigned),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(Value::UInt(256), &tiny_unsigned),
            ErrorCode::WrongValue
        );
        let big = ColumnType::BigInt { unsigned: false };
        assert_eq!(
            error_code(Value::UInt(u64::MAX), &big),
            ErrorCode::WrongValue
        );
        assert_eq!(encode(&Value::UInt(5), &big).unwrap(), 5i64.to_le_bytes());
        let big_unsigned = ColumnType::BigInt { unsigned: true };
        assert_eq!(
            encode(&Value::UInt(u64::MAX), &big_unsigned).unwrap(),
            [0xFF; 8]
        );
    }

    #[test]
    fn wrong_kind_is_wrong_value_with_detail() {
        let error = encode(&Value::from("1"), &ColumnType::Int { unsigned: false }).unwrap_err();
        assert_eq!(error.code, ErrorCode::WrongValue);
        assert!(error.detail.contains("INT"), "{}", error.detail);
        assert_eq!(
            error_code(Value::Int(1), &ColumnType::Date),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(Value::Float(1.0), &ColumnType::Blob { length_max: 9 }),
            ErrorCode::WrongValue
        );
    }

    #[test]
    fn decimal_matches_mysql_bytes() {
        // Examples from MySQL's decimal2bin documentation: 1234567890.1234 as
        // DECIMAL(14,4) is 81 0D FB 38 D2 04 D2, its negative the inverse.
        let column_type = decimal(14, 4);
        let positive = encode(&Value::Decimal("1234567890.1234".into()), &column_type).unwrap();
        assert_eq!(positive, [0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2]);
        let negative = encode(&Value::Decimal("-1234567890.1234".into()), &column_type).unwrap();
        assert_eq!(negative, [0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D]);
        assert_eq!(
            Value::decode(&column_type, &negative),
            Value::Decimal("-1234567890.1234".into())
        );
    }

    #[test]
    fn decimal_text_forms_rounding_and_overflow() {
        assert_eq!(decimal_text("-12.50", 5, 2).unwrap(), "-12.50");
        assert_eq!(decimal_text("+12.5", 5, 2).unwrap(), "12.50");
        assert_eq!(decimal_text(".5", 5, 2).unwrap(), "0.50");
        assert_eq!(decimal_text("7.", 5, 2).unwrap(), "7.00");
        assert_eq!(decimal_text("000123.4", 5, 2).unwrap(), "123.40");
        assert_eq!(decimal_text("1.005", 5, 2).unwrap(), "1.01");
        assert_eq!(decimal_text("1.0049", 5, 2).unwrap(), "1.00");
        assert_eq!(decimal_text("-1.005", 5, 2).unwrap(), "-1.01");
        assert_eq!(decimal_text("-0.001", 5, 2).unwrap(), "0.00");
        assert_eq!(decimal_text("-0", 3, 0).unwrap(), "0");
        assert_eq!(decimal_text("999.994", 5, 2).unwrap(), "999.99");
        assert_eq!(decimal_text("999.995", 5, 2), Err(ErrorCode::WrongValue));
        assert_eq!(decimal_text("1000", 5, 2), Err(ErrorCode::WrongValue));
        assert_eq!(decimal_text("0.5", 2, 2).unwrap(), "0.50");
        assert_eq!(decimal_text("1", 2, 2), Err(ErrorCode::WrongValue));
        for bad in ["", "-", ".", "1e5", "1.2.3", " 1", "1 ", "--1", "0x10"] {
            assert_eq!(
                decimal_text(bad, 5, 2),
                Err(ErrorCode::WrongValue),
                "{bad:?}"
            );
        }
        let widest = "9".repeat(35) + "." + &"9".repeat(30);
        assert_eq!(decimal_text(&widest, 65, 30).unwrap(), widest);
        assert_eq!(
            decimal_text(&format!("-{widest}"), 65, 30).unwrap(),
            format!("-{widest}")
        );
        let integers = decimal(20, 0);
        let bytes = encode(&Value::Int(i64::MIN), &integers).unwrap();
        assert_eq!(
            Value::decode(&integers, &bytes),
            Value::Decimal(i64::MIN.to_string())
        );
        let bytes = encode(&Value::UInt(u64::MAX), &integers).unwrap();
        assert_eq!(
            Value::decode(&integers, &bytes),
            Value::Decimal(u64::MAX.to_string())
        );
    }

    #[test]
    fn floats_refuse_nan_and_infinity() {
        assert_eq!(
            error_code(Value::Double(f64::NAN), &ColumnType::Double),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(Value::Float(f32::INFINITY), &ColumnType::Float),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(Value::Double(1e300), &ColumnType::Float),
            ErrorCode::WrongValue
        );
        assert_eq!(
            encode(&Value::Double(1.5), &ColumnType::Double).unwrap(),
            1.5f64.to_le_bytes()
        );
        assert_eq!(
            encode(&Value::Float(1.5), &ColumnType::Double).unwrap(),
            1.5f64.to_le_bytes()
        );
    }

    #[test]
    fn char_stores_without_trailing_spaces_and_counts_characters() {
        let char3 = ColumnType::Char {
            length: 3,
            collation: Collation::Utf8mb4AiCi,
        };
        assert_eq!(encode(&Value::from("é"), &char3).unwrap(), "é".as_bytes());
        assert_eq!(encode(&Value::from("é  "), &char3).unwrap(), "é".as_bytes());
        assert_eq!(encode(&Value::from(" é"), &char3).unwrap(), " é".as_bytes());
        assert_eq!(Value::decode(&char3, "é".as_bytes()), Value::from("é"));
        assert!(encode(&Value::from("ééé"), &char3).is_ok());
        assert_eq!(
            error_code(Value::from("abcd"), &char3),
            ErrorCode::DataTooLong
        );
        assert_eq!(
            error_code(Value::Bytes(vec![0xFF]), &char3),
            ErrorCode::WrongValue
        );
        // Excess trailing spaces are cut, as in MySQL.
        assert_eq!(encode(&Value::from("ab    "), &char3).unwrap(), b"ab");
        assert_eq!(encode(&Value::from("   "), &char3).unwrap(), b"");
        let latin = ColumnType::Char {
            length: 2,
            collation: Collation::Latin1Ci,
        };
        assert_eq!(encode(&Value::Bytes(vec![0xE9]), &latin).unwrap(), [0xE9]);
        // Stored CHAR is variable: at most length × bytes per character.
        assert_eq!(char3.storage(), Storage::Var(12));
    }

    #[test]
    fn varchar_and_text_limits() {
        let varchar = ColumnType::Varchar {
            length: 2,
            collation: Collation::Utf8mb4Bin,
        };
        assert_eq!(
            encode(&Value::from("日本"), &varchar).unwrap(),
            "日本".as_bytes()
        );
        assert_eq!(
            error_code(Value::from("日本語"), &varchar),
            ErrorCode::DataTooLong
        );
        assert_eq!(encode(&Value::from("ab  "), &varchar).unwrap(), b"ab");
        assert_eq!(
            encode(&Value::from("a b"), &varchar).unwrap_err().code,
            ErrorCode::DataTooLong
        );
        let text = ColumnType::Text {
            length_max: 4,
            collation: Collation::Utf8mb4AiCi,
        };
        assert_eq!(
            error_code(Value::from("日本"), &text),
            ErrorCode::DataTooLong
        );
        assert_eq!(
            error_code(Value::Bytes(vec![0xC3]), &text),
            ErrorCode::WrongValue
        );
        let latin = ColumnType::Varchar {
            length: 2,
            collation: Collation::Latin1Bin,
        };
        assert!(encode(&Value::Bytes(vec![0xC3, 0xFF]), &latin).is_ok());
    }

    #[test]
    fn binary_pads_with_zero_and_keeps_padding() {
        let binary = ColumnType::Binary { length: 4 };
        let bytes = encode(&Value::from("ab"), &binary).unwrap();
        assert_eq!(bytes, [b'a', b'b', 0, 0]);
        assert_eq!(Value::decode(&binary, &bytes), Value::Bytes(bytes.clone()));
        assert_eq!(
            error_code(Value::from("abcde"), &binary),
            ErrorCode::DataTooLong
        );
        assert_eq!(
            error_code(Value::from("abc"), &ColumnType::Varbinary { length: 2 }),
            ErrorCode::DataTooLong
        );
        assert_eq!(
            error_code(Value::from("abc"), &ColumnType::Blob { length_max: 2 }),
            ErrorCode::DataTooLong
        );
    }

    #[test]
    fn date_validation_and_format() {
        let date = |year, month, day| Value::Date { year, month, day };
        assert_eq!(
            error_code(date(2023, 2, 29), &ColumnType::Date),
            ErrorCode::WrongValue
        );
        assert!(encode(&date(2024, 2, 29), &ColumnType::Date).is_ok());
        assert_eq!(
            error_code(date(1900, 2, 29), &ColumnType::Date),
            ErrorCode::WrongValue
        );
        assert!(encode(&date(2000, 2, 29), &ColumnType::Date).is_ok());
        assert_eq!(
            error_code(date(2023, 4, 31), &ColumnType::Date),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(date(2023, 13, 1), &ColumnType::Date),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(date(2023, 1, 0), &ColumnType::Date),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(date(10_000, 1, 1), &ColumnType::Date),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(date(2023, 0, 0), &ColumnType::Date),
            ErrorCode::WrongValue
        );
        assert_eq!(
            encode(&date(0, 0, 0), &ColumnType::Date).unwrap(),
            [0, 0, 0]
        );
        // 2023-06-15: 15 | 6 << 5 | 2023 << 9 = 0x0FCECF.
        assert_eq!(
            encode(&date(2023, 6, 15), &ColumnType::Date).unwrap(),
            [0xCF, 0xCE, 0x0F]
        );
        assert_eq!(
            Value::decode(&ColumnType::Date, &[0xCF, 0xCE, 0x0F]),
            date(2023, 6, 15)
        );
    }

    #[test]
    fn datetime_matches_mysql_and_rounds() {
        let datetime = |fsp| ColumnType::Datetime { fsp };
        let value = |second, microsecond| Value::Datetime {
            year: 2023,
            month: 12,
            day: 31,
            hour: 23,
            minute: 59,
            second,
            microsecond,
        };
        // 2023-12-31 23:59:59 in datetime2: ((2023 × 13 + 12) << 5 | 31) << 17 | 23 << 12 | 59 << 6 | 59, plus 0x80_0000_0000.
        assert_eq!(
            encode(&value(59, 0), &datetime(0)).unwrap(),
            [0x99, 0xB1, 0xFF, 0x7E, 0xFB]
        );
        let bytes = encode(&value(59, 123_456), &datetime(3)).unwrap();
        assert_eq!(&bytes[5..], &1230u16.to_be_bytes());
        assert_eq!(Value::decode(&datetime(3), &bytes), value(59, 123_000));
        let rounded = encode(&value(59, 500_000), &datetime(0)).unwrap();
        let next_year = Value::Datetime {
            year: 2024,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            microsecond: 0,
        };
        assert_eq!(Value::decode(&datetime(0), &rounded), next_year);
        let last = Value::Datetime {
            year: 9999,
            month: 12,
            day: 31,
            hour: 23,
            minute: 59,
            second: 59,
            microsecond: 999_999,
        };
        assert_eq!(
            error_code(last.clone(), &datetime(5)),
            ErrorCode::WrongValue
        );
        assert_eq!(
            Value::decode(&datetime(6), &encode(&last, &datetime(6)).unwrap()),
            last
        );
        let bad_hour = Value::Datetime {
            year: 2023,
            month: 1,
            day: 1,
            hour: 24,
            minute: 0,
            second: 0,
            microsecond: 0,
        };
        assert_eq!(error_code(bad_hour, &datetime(0)), ErrorCode::WrongValue);
    }

    #[test]
    fn timestamp_range_and_rounding() {
        let timestamp = ColumnType::Timestamp { fsp: 2 };
        let value = Value::Timestamp {
            seconds: 1_700_000_000,
            microsecond: 994_999,
        };
        let bytes = encode(&value, &timestamp).unwrap();
        assert_eq!(bytes, [0x65, 0x53, 0xF1, 0x00, 99]);
        let value = Value::Timestamp {
            seconds: 1_700_000_000,
            microsecond: 995_000,
        };
        let bytes = encode(&value, &timestamp).unwrap();
        assert_eq!(
            Value::decode(&timestamp, &bytes),
            Value::Timestamp {
                seconds: 1_700_000_001,
                microsecond: 0
            }
        );
        let last = Value::Timestamp {
            seconds: i32::MAX as u32,
            microsecond: 0,
        };
        assert!(encode(&last, &timestamp).is_ok());
        let late = Value::Timestamp {
            seconds: i32::MAX as u32 + 1,
            microsecond: 0,
        };
        assert_eq!(error_code(late, &timestamp), ErrorCode::WrongValue);
    }

    #[test]
    fn time_matches_mysql_bytes() {
        let time = |negative, hours, minutes, seconds, microsecond| Value::Time {
            negative,
            hours,
            minutes,
            seconds,
            microsecond,
        };
        // MySQL's own table for TIME(2): -00:00:00.01 is 7F FF FF FF, -00:00:01.00 is 7F FF FF 00.
        let time2 = ColumnType::Time { fsp: 2 };
        assert_eq!(
            encode(&time(true, 0, 0, 0, 10_000), &time2).unwrap(),
            [0x7F, 0xFF, 0xFF, 0xFF]
        );
        assert_eq!(
            encode(&time(true, 0, 0, 0, 990_000), &time2).unwrap(),
            [0x7F, 0xFF, 0xFF, 0x9D]
        );
        assert_eq!(
            encode(&time(true, 0, 0, 1, 0), &time2).unwrap(),
            [0x7F, 0xFF, 0xFF, 0x00]
        );
        assert_eq!(
            encode(&time(true, 0, 0, 1, 10_000), &time2).unwrap(),
            [0x7F, 0xFF, 0xFE, 0xFF]
        );
        assert_eq!(
            encode(&time(false, 0, 0, 0, 0), &time2).unwrap(),
            [0x80, 0x00, 0x00, 0x00]
        );
        assert_eq!(
            encode(&time(true, 0, 0, 0, 0), &time2).unwrap(),
            [0x80, 0x00, 0x00, 0x00]
        );
        assert_eq!(
            Value::decode(&time2, &[0x7F, 0xFF, 0xFE, 0xFF]),
            time(true, 0, 0, 1, 10_000)
        );
        let time0 = ColumnType::Time { fsp: 0 };
        assert!(encode(&time(true, 838, 59, 59, 0), &time0).is_ok());
        assert_eq!(
            error_code(time(false, 839, 0, 0, 0), &time0),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(time(false, 838, 59, 59, 500_000), &time0),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(time(false, 838, 59, 59, 1), &ColumnType::Time { fsp: 6 }),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(time(false, 1, 60, 0, 0), &time0),
            ErrorCode::WrongValue
        );
        let rounded = encode(&time(true, 1, 59, 59, 600_000), &time0).unwrap();
        assert_eq!(Value::decode(&time0, &rounded), time(true, 2, 0, 0, 0));
    }

    #[test]
    fn year_bit_enum() {
        assert_eq!(encode(&Value::Year(0), &ColumnType::Year).unwrap(), [0]);
        assert_eq!(
            encode(&Value::Year(2155), &ColumnType::Year).unwrap(),
            [255]
        );
        assert_eq!(encode(&Value::Int(1901), &ColumnType::Year).unwrap(), [1]);
        assert_eq!(
            error_code(Value::Year(1900), &ColumnType::Year),
            ErrorCode::WrongValue
        );
        assert_eq!(
            error_code(Value::Year(2156), &ColumnType::Year),
            ErrorCode::WrongValue
        );
        assert_eq!(Value::decode(&ColumnType::Year, &[123]), Value::Year(2023));

        let bit10 = ColumnType::Bit { width: 10 };
        assert_eq!(encode(&Value::Bit(0x3FF), &bit10).unwrap(), [0x03, 0xFF]);
        assert_eq!(error_code(Value::Bit(0x400), &bit10), ErrorCode::WrongValue);
        assert_eq!(Value::decode(&bit10, &[0x01, 0x02]), Value::Bit(0x102));
        let bit64 = ColumnType::Bit { width: 64 };
        assert_eq!(
            Value::decode(&bit64, &encode(&Value::Bit(u64::MAX), &bit64).unwrap()),
            Value::Bit(u64::MAX)
        );

        let small = ColumnType::Enum {
            variants: vec!["red".into(), "green".into()],
        };
        assert_eq!(encode(&Value::Enum(2), &small).unwrap(), [2]);
        assert_eq!(encode(&Value::from("GREEN"), &small).unwrap(), [2]);
        assert_eq!(encode(&Value::from("red"), &small).unwrap(), [1]);
        assert_eq!(
            error_code(Value::from("blue"), &small),
            ErrorCode::WrongValue
        );
        assert_eq!(error_code(Value::Enum(0), &small), ErrorCode::WrongValue);
        assert_eq!(error_code(Value::Enum(3), &small), ErrorCode::WrongValue);
        let large = ColumnType::Enum {
            variants: (0..300).map(|index| index.to_string()).collect(),
        };
        assert_eq!(
            encode(&Value::Enum(300), &large).unwrap(),
            300u16.to_le_bytes()
        );
        assert_eq!(
            Value::decode(&large, &300u16.to_le_bytes()),
            Value::Enum(300)
        );
    }
}
