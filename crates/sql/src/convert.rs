//! Between storage and SQL: the column definition MySQL 8.0 sends for a
//! stored column, a stored value as a SQL value, and MySQL's assignment
//! conversion of a SQL value into a column (`Field::store`) under strict
//! (`STRICT_TRANS_TABLES`) or non-strict `sql_mode`, with MySQL's errors
//! and warnings.
//!
//! ## Assignment conversion, in MySQL's terms
//! - NULL into NOT NULL: 1048 "Column 'c' cannot be null" (always an error
//!   here; MySQL's non-strict multi-row INSERT stores the implicit default).
//! - Text that is no number into a number column: 1366 "Incorrect integer
//!   value: 'abc' for column 'c' at row N" (DECIMAL: "decimal"); a number
//!   followed by other text: 1265 "Data truncated" (DOUBLE and FLOAT say
//!   1265 for both). Strict mode makes these errors; otherwise they are
//!   warnings and the number read (or 0) is stored.
//! - Out of range: 1264 "Out of range value for column 'c' at row N";
//!   non-strict clamps to the type's limit.
//! - Decimals round half away from zero to the column's scale with a note
//!   1265 "Data truncated" when digits are lost (a note stays a note in
//!   strict mode); integers round silently.
//! - Too long strings: 1406 "Data too long for column 'c' at row N"
//!   (non-strict: cut, warning 1265). Excess trailing spaces are cut
//!   silently for CHAR and with a note 1265 for VARCHAR and TEXT. CHAR
//!   values are stored without trailing spaces (MySQL strips them on read).
//!   Lengths count characters of the column's character set (bytes for
//!   binary strings and TEXT's byte limit).
//! - Dates: 1292 "Incorrect date value: '...' for column 'c' at row N"
//!   (datetime, time likewise; non-strict warns 1265 "Data truncated"
//!   instead, as MySQL does); under the default `sql_mode` strict also
//!   refuses the zero date and zero months or days (NO_ZERO_DATE,
//!   NO_ZERO_IN_DATE); non-strict stores the zero date, and stores the zero
//!   value (with the warning) for invalid dates and for dates with a zero
//!   month or day, which Shoal's storage does not keep.
//! - Strings carry no character set of their own here (see `value`): text
//!   for a latin1 column is converted from UTF-8 when it is valid UTF-8
//!   (characters latin1 lacks become '?' with 1366 "Incorrect string
//!   value"), and taken as latin1 bytes otherwise; text for a utf8mb4
//!   column must be valid UTF-8 (else 1366).

use crate::error::SqlError;
use crate::expression::WarningLevel;
use crate::temporal::{self, FSP_MAX};
use crate::value::{
    Conversion, DECIMAL_DIGITS_MAX, Date, Datetime, Decimal, NOT_FIXED_DECIMALS, SqlType, SqlValue,
    Time, decimal_display_length, parse_double,
};
use mysql_protocol::FieldType;
use mysql_protocol::column::flags;
use schema::value::Value;
use schema::{Collation, ColumnDef, ColumnType};

/// The largest TINYBLOB/TINYTEXT in bytes.
const TINY_BLOB_BYTES: u32 = 255;
/// The largest BLOB/TEXT in bytes.
const BLOB_BYTES: u32 = 65_535;
/// The largest MEDIUMBLOB/MEDIUMTEXT in bytes.
const MEDIUM_BLOB_BYTES: u32 = 16_777_215;
/// The display length of LONGBLOB/LONGTEXT (capped at u32).
const LONG_BLOB_BYTES: u32 = u32::MAX;
/// The first and last seconds TIMESTAMP holds (1970-01-01 00:00:01 UTC on).
const TIMESTAMP_SECONDS_MIN: i64 = 1;

/// An error with MySQL's SQLSTATE for the codes this layer raises (some
/// differ from `error::sqlstate_of`'s table: 1292 is 22007, 1265 01000,
/// 1690 22003, 1582/1305 42000, 1441 22008).
pub fn error(code: u16, message: impl Into<String>) -> SqlError {
    let mut error = SqlError::new(code, message);
    let state: Option<&[u8; 5]> = match code {
        1292 | 1367 | 1411 => Some(b"22007"),
        1264 | 1690 => Some(b"22003"),
        1265 => Some(b"01000"),
        1406 => Some(b"22001"),
        1365 => Some(b"22012"),
        1441 => Some(b"22008"),
        1305 | 1582 | 1064 => Some(b"42000"),
        1048 => Some(b"23000"),
        1366 | 1111 | 1260 => Some(b"HY000"),
        _ => None,
    };
    if let Some(state) = state {
        error.sqlstate = *state;
    }
    error
}

// ---------------------------------------------------------------------------
// Column definitions

/// The column definition MySQL 8.0 sends for a stored column (type,
/// length, decimals, collation, and the flags the type implies: NOT_NULL,
/// UNSIGNED, ZEROFILL for YEAR, BINARY for binary strings, binary
/// collations and temporals, BLOB, ENUM). The caller adds the key and
/// AUTO_INCREMENT flags (and TIMESTAMP/ON_UPDATE_NOW for such defaults).
/// MySQL's server sends no NUM flag: client libraries add it.
pub fn column_sql_type(def: &ColumnDef) -> SqlType {
    use ColumnType as Type;
    let not_null = if def.nullable { 0 } else { flags::NOT_NULL };
    let integer = |field_type, signed_length, unsigned_length, unsigned: bool| {
        let (length, unsigned_flag) = if unsigned {
            (unsigned_length, flags::UNSIGNED)
        } else {
            (signed_length, 0)
        };
        SqlType::new(field_type, unsigned_flag, length, 0, Collation::Binary)
    };
    let string = |field_type, characters: u32, collation: Collation| {
        let binary = if is_binary_collation(collation) {
            flags::BINARY
        } else {
            0
        };
        SqlType::new(
            field_type,
            binary,
            characters.saturating_mul(collation.bytes_per_char_max()),
            0,
            collation,
        )
    };
    let mut sql_type = match &def.column_type {
        Type::TinyInt { unsigned } => integer(FieldType::Tiny, 4, 3, *unsigned),
        Type::SmallInt { unsigned } => integer(FieldType::Short, 6, 5, *unsigned),
        Type::MediumInt { unsigned } => integer(FieldType::Int24, 9, 8, *unsigned),
        Type::Int { unsigned } => integer(FieldType::Long, 11, 10, *unsigned),
        Type::BigInt { unsigned } => integer(FieldType::LongLong, 20, 20, *unsigned),
        Type::Decimal { precision, scale } => SqlType::new(
            FieldType::NewDecimal,
            0,
            decimal_display_length(u32::from(*precision), *scale, false),
            *scale,
            Collation::Binary,
        ),
        Type::Float => SqlType::new(
            FieldType::Float,
            0,
            12,
            NOT_FIXED_DECIMALS,
            Collation::Binary,
        ),
        Type::Double => SqlType::new(
            FieldType::Double,
            0,
            22,
            NOT_FIXED_DECIMALS,
            Collation::Binary,
        ),
        Type::Char { length, collation } => {
            string(FieldType::String, u32::from(*length), *collation)
        }
        Type::Varchar { length, collation } => {
            string(FieldType::VarString, u32::from(*length), *collation)
        }
        Type::Binary { length } => string(FieldType::String, u32::from(*length), Collation::Binary),
        Type::Varbinary { length } => {
            string(FieldType::VarString, u32::from(*length), Collation::Binary)
        }
        Type::Blob { length_max } => SqlType::new(
            FieldType::Blob,
            flags::BLOB | flags::BINARY,
            blob_display_length(*length_max),
            0,
            Collation::Binary,
        ),
        Type::Text {
            length_max,
            collation,
        } => {
            let binary = if is_binary_collation(*collation) {
                flags::BINARY
            } else {
                0
            };
            SqlType::new(
                FieldType::Blob,
                flags::BLOB | binary,
                blob_display_length(*length_max).saturating_mul(collation.bytes_per_char_max()),
                0,
                *collation,
            )
        }
        Type::Date => SqlType::date(),
        Type::Datetime { fsp } => SqlType::datetime(*fsp),
        Type::Timestamp { fsp } => SqlType {
            field_type: FieldType::Timestamp,
            ..SqlType::datetime(*fsp)
        },
        Type::Time { fsp } => SqlType::time(*fsp),
        Type::Year => SqlType::new(
            FieldType::Year,
            flags::UNSIGNED | flags::ZEROFILL,
            4,
            0,
            Collation::Binary,
        ),
        Type::Bit { width } => SqlType::new(
            FieldType::Bit,
            flags::UNSIGNED,
            u32::from(*width),
            0,
            Collation::Binary,
        ),
        Type::Enum { variants } => {
            let longest = variants
                .iter()
                .map(|variant| variant.chars().count() as u32)
                .max()
                .unwrap_or(0);
            let mut enum_type = string(FieldType::String, longest, ENUM_COLLATION);
            enum_type.flags |= flags::ENUM;
            enum_type
        }
    };
    sql_type.flags |= not_null;
    sql_type
}

/// ENUM members compare under the table's default collation, utf8mb4's default here.
const ENUM_COLLATION: Collation = Collation::Utf8mb4AiCi;

fn is_binary_collation(collation: Collation) -> bool {
    matches!(
        collation,
        Collation::Binary | Collation::Utf8mb4Bin | Collation::Latin1Bin
    )
}

fn blob_display_length(length_max: u32) -> u32 {
    if length_max <= TINY_BLOB_BYTES {
        TINY_BLOB_BYTES
    } else if length_max <= BLOB_BYTES {
        BLOB_BYTES
    } else if length_max <= MEDIUM_BLOB_BYTES {
        MEDIUM_BLOB_BYTES
    } else {
        LONG_BLOB_BYTES
    }
}

// ---------------------------------------------------------------------------
// Stored → SQL

/// A stored value as a SQL value: ENUM indexes become their member's
/// text, TIMESTAMP seconds a UTC datetime (0 is the zero datetime, as in
/// MySQL), BIT an unsigned integer, YEAR an integer, DECIMAL text a
/// `Decimal` (a DOUBLE approximation beyond 38 digits).
/// `from_stored` of a value no longer needed: its bytes move instead of
/// being copied.
pub fn from_stored_owned(value: Value, column_type: &ColumnType) -> SqlValue {
    match value {
        Value::Bytes(bytes) => SqlValue::String(bytes),
        other => from_stored(&other, column_type),
    }
}

pub fn from_stored(value: &Value, column_type: &ColumnType) -> SqlValue {
    match value {
        Value::Null => SqlValue::Null,
        Value::Int(value) => SqlValue::Int(*value),
        Value::UInt(value) => SqlValue::UInt(*value),
        Value::Decimal(text) => match Decimal::parse(text.as_bytes()) {
            Some((decimal, Conversion::Exact)) => SqlValue::Decimal(decimal),
            _ => SqlValue::Double(parse_double(text.as_bytes()).0),
        },
        Value::Float(value) => SqlValue::Double(f64::from(*value)),
        Value::Double(value) => SqlValue::Double(*value),
        Value::Bytes(bytes) => SqlValue::String(bytes.clone()),
        Value::Date { year, month, day } => SqlValue::Date(Date::new(*year, *month, *day)),
        Value::Datetime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            microsecond,
        } => SqlValue::Datetime(Datetime::new(
            Date::new(*year, *month, *day),
            *hour,
            *minute,
            *second,
            *microsecond,
        )),
        Value::Timestamp {
            seconds,
            microsecond,
        } => {
            if *seconds == 0 && *microsecond == 0 {
                return SqlValue::Datetime(Datetime::ZERO);
            }
            match Datetime::from_unix_seconds(i64::from(*seconds), *microsecond) {
                Some(datetime) => SqlValue::Datetime(datetime),
                None => SqlValue::Datetime(Datetime::ZERO),
            }
        }
        Value::Time {
            negative,
            hours,
            minutes,
            seconds,
            microsecond,
        } => SqlValue::Time(Time {
            negative: *negative,
            hours: *hours,
            minutes: *minutes,
            seconds: *seconds,
            microsecond: *microsecond,
        }),
        Value::Year(year) => SqlValue::Int(i64::from(*year)),
        Value::Bit(bits) => SqlValue::UInt(*bits),
        Value::Enum(index) => match column_type {
            ColumnType::Enum { variants } => usize::from(*index)
                .checked_sub(1)
                .and_then(|position| variants.get(position))
                .map_or(SqlValue::String(Vec::new()), |variant| {
                    SqlValue::String(variant.as_bytes().to_vec())
                }),
            _ => SqlValue::UInt(u64::from(*index)),
        },
    }
}

/// The implicit default MySQL uses for a NOT NULL column without a
/// default (non-strict INSERT that omits it, after warning 1364): 0, '',
/// the zero date, the first ENUM member.
pub fn default_for_type(column_type: &ColumnType) -> SqlValue {
    use ColumnType as Type;
    match column_type {
        Type::TinyInt { .. }
        | Type::SmallInt { .. }
        | Type::MediumInt { .. }
        | Type::Int { .. }
        | Type::BigInt { .. }
        | Type::Year => SqlValue::Int(0),
        Type::Bit { .. } => SqlValue::UInt(0),
        Type::Decimal { scale, .. } => SqlValue::Decimal(Decimal::new(0, *scale)),
        Type::Float | Type::Double => SqlValue::Double(0.0),
        Type::Char { .. }
        | Type::Varchar { .. }
        | Type::Binary { .. }
        | Type::Varbinary { .. }
        | Type::Blob { .. }
        | Type::Text { .. } => SqlValue::String(Vec::new()),
        Type::Date => SqlValue::Date(Date::ZERO),
        Type::Datetime { .. } | Type::Timestamp { .. } => SqlValue::Datetime(Datetime::ZERO),
        Type::Time { .. } => SqlValue::Time(Time::ZERO),
        Type::Enum { variants } => SqlValue::String(
            variants
                .first()
                .map(|variant| variant.as_bytes().to_vec())
                .unwrap_or_default(),
        ),
    }
}

// ---------------------------------------------------------------------------
// SQL → stored

/// MySQL's assignment of `value` to `column` (INSERT, UPDATE) at 1-based
/// row `row`: the stored value, or the error strict mode (or any mode, for
/// NULL into NOT NULL) raises. Warnings and notes go to `warnings` as
/// (code, message); use [`to_stored_with_levels`] to tell notes apart.
pub fn to_stored(
    value: &SqlValue,
    column: &ColumnDef,
    strict: bool,
    row: u64,
    warnings: &mut dyn FnMut(u16, String),
) -> Result<Value, SqlError> {
    to_stored_with_levels(value, column, strict, row, &mut |_, code, message| {
        warnings(code, message)
    })
}

/// [`to_stored`] with each condition's level: notes (1265 for rounded
/// decimals and cut trailing spaces) are `WarningLevel::Note`.
pub fn to_stored_with_levels(
    value: &SqlValue,
    column: &ColumnDef,
    strict: bool,
    row: u64,
    warnings: &mut dyn FnMut(WarningLevel, u16, String),
) -> Result<Value, SqlError> {
    if value.is_null() {
        if !column.nullable {
            return Err(error(
                1048,
                format!("Column '{}' cannot be null", column.name),
            ));
        }
        return Ok(Value::Null);
    }
    let mut store = Store {
        name: &column.name,
        strict,
        row,
        report: warnings,
    };
    use ColumnType as Type;
    match &column.column_type {
        Type::TinyInt { unsigned } => store.integer(value, *unsigned, 8),
        Type::SmallInt { unsigned } => store.integer(value, *unsigned, 16),
        Type::MediumInt { unsigned } => store.integer(value, *unsigned, 24),
        Type::Int { unsigned } => store.integer(value, *unsigned, 32),
        Type::BigInt { unsigned } => store.integer(value, *unsigned, 64),
        Type::Decimal { precision, scale } => store.decimal(value, *precision, *scale),
        Type::Float => store.real(value, true),
        Type::Double => store.real(value, false),
        Type::Char { length, collation } => {
            store.text(value, *collation, u64::from(*length), true, TextKind::Char)
        }
        Type::Varchar { length, collation } => store.text(
            value,
            *collation,
            u64::from(*length),
            true,
            TextKind::Varying,
        ),
        Type::Text {
            length_max,
            collation,
        } => store.text(
            value,
            *collation,
            u64::from(*length_max),
            false,
            TextKind::Varying,
        ),
        Type::Binary { length } => store.bytes(value, u64::from(*length)),
        Type::Varbinary { length } => store.bytes(value, u64::from(*length)),
        Type::Blob { length_max } => store.bytes(value, u64::from(*length_max)),
        Type::Date => store.datetime(value, DateKind::Date, 0),
        Type::Datetime { fsp } => store.datetime(value, DateKind::Datetime, *fsp),
        Type::Timestamp { fsp } => store.datetime(value, DateKind::Timestamp, *fsp),
        Type::Time { fsp } => store.time(value, *fsp),
        Type::Year => store.year(value),
        Type::Bit { width } => store.bit(value, *width),
        Type::Enum { variants } => store.enumeration(value, variants),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TextKind {
    /// CHAR: excess trailing spaces are cut silently, and trailing spaces are not stored.
    Char,
    /// VARCHAR, TEXT: excess trailing spaces are cut with a note.
    Varying,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DateKind {
    Date,
    Datetime,
    Timestamp,
}

struct Store<'a> {
    name: &'a str,
    strict: bool,
    row: u64,
    report: &'a mut dyn FnMut(WarningLevel, u16, String),
}

fn quoted(value: &SqlValue) -> String {
    String::from_utf8_lossy(&value.to_text()).into_owned()
}

impl Store<'_> {
    /// Strict mode: the error; otherwise a warning, and the caller goes on.
    fn fail_or_warn(&mut self, code: u16, message: String) -> Result<(), SqlError> {
        if self.strict {
            return Err(error(code, message));
        }
        (self.report)(WarningLevel::Warning, code, message);
        Ok(())
    }

    fn note(&mut self, code: u16, message: String) {
        (self.report)(WarningLevel::Note, code, message);
    }

    fn out_of_range(&mut self) -> Result<(), SqlError> {
        let message = format!(
            "Out of range value for column '{}' at row {}",
            self.name, self.row
        );
        self.fail_or_warn(1264, message)
    }

    fn truncated_message(&self) -> String {
        format!(
            "Data truncated for column '{}' at row {}",
            self.name, self.row
        )
    }

    fn truncated(&mut self) -> Result<(), SqlError> {
        let message = self.truncated_message();
        self.fail_or_warn(1265, message)
    }

    fn incorrect(&mut self, what: &str, value: &SqlValue) -> Result<(), SqlError> {
        let message = format!(
            "Incorrect {what} value: '{}' for column '{}' at row {}",
            quoted(value),
            self.name,
            self.row
        );
        self.fail_or_warn(1366, message)
    }

    /// A value that is no valid date or time for the column: strict mode
    /// refuses it with 1292 "Incorrect date value"; otherwise MySQL
    /// (`Field::set_datetime_warning`) warns 1265 "Data truncated", as for
    /// any value cut to fit.
    fn incorrect_temporal(&mut self, what: &str, value: &SqlValue) -> Result<(), SqlError> {
        if self.strict {
            return Err(error(
                1292,
                format!(
                    "Incorrect {what} value: '{}' for column '{}' at row {}",
                    quoted(value),
                    self.name,
                    self.row
                ),
            ));
        }
        let message = self.truncated_message();
        (self.report)(WarningLevel::Warning, 1265, message);
        Ok(())
    }

    fn too_long(&mut self) -> Result<(), SqlError> {
        if self.strict {
            return Err(error(
                1406,
                format!(
                    "Data too long for column '{}' at row {}",
                    self.name, self.row
                ),
            ));
        }
        let message = self.truncated_message();
        (self.report)(WarningLevel::Warning, 1265, message);
        Ok(())
    }

    /// A number for an integer or YEAR column: rounded, with the string
    /// checks of `Field_num::get_int` (1366 for no number, 1265 for trailing text).
    fn integral(&mut self, value: &SqlValue) -> Result<i128, SqlError> {
        Ok(match value {
            SqlValue::Int(value) => i128::from(*value),
            SqlValue::UInt(value) => i128::from(*value),
            SqlValue::Decimal(decimal) => decimal.round(0).map_or(0, |rounded| rounded.mantissa),
            SqlValue::Double(double) => {
                if double.is_nan() {
                    self.out_of_range()?;
                    0
                } else {
                    let rounded = double.round_ties_even();
                    if rounded >= 1.8e19 {
                        i128::from(u64::MAX) + 1
                    } else if rounded <= -9.3e18 {
                        i128::from(i64::MIN) - 1
                    } else {
                        rounded as i128
                    }
                }
            }
            SqlValue::String(_) => match value.to_decimal() {
                (_, Conversion::Truncated) if Decimal::parse(&value.to_text()).is_none() => {
                    self.incorrect("integer", value)?;
                    0
                }
                (decimal, conversion) => {
                    if conversion == Conversion::Truncated {
                        self.truncated()?;
                    }
                    decimal.round(0).map_or(0, |rounded| rounded.mantissa)
                }
            },
            SqlValue::Date(date) => i128::from(date.to_number()),
            SqlValue::Datetime(datetime) => datetime
                .to_decimal()
                .round(0)
                .map_or(0, |rounded| rounded.mantissa),
            SqlValue::Time(time) => time
                .to_decimal()
                .round(0)
                .map_or(0, |rounded| rounded.mantissa),
            SqlValue::Null => 0,
        })
    }

    fn integer(&mut self, value: &SqlValue, unsigned: bool, bits: u32) -> Result<Value, SqlError> {
        let number = self.integral(value)?;
        let (minimum, maximum) = if unsigned {
            (0i128, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        };
        let number = if number < minimum {
            self.out_of_range()?;
            minimum
        } else if number > maximum {
            self.out_of_range()?;
            maximum
        } else {
            number
        };
        Ok(if unsigned {
            Value::UInt(number as u64)
        } else {
            Value::Int(number as i64)
        })
    }

    fn decimal(&mut self, value: &SqlValue, precision: u8, scale: u8) -> Result<Value, SqlError> {
        let (decimal, conversion) = match value {
            SqlValue::String(text) => match Decimal::parse(text) {
                Some(parsed) => parsed,
                None => {
                    self.incorrect("decimal", value)?;
                    (Decimal::ZERO, Conversion::Exact)
                }
            },
            SqlValue::Double(double) if !double.is_finite() => {
                self.out_of_range()?;
                (Decimal::ZERO, Conversion::Exact)
            }
            other => other.to_decimal(),
        };
        if conversion == Conversion::Truncated {
            self.truncated()?;
        }
        let integer_digits = u32::from(precision.saturating_sub(scale));
        let out_of_range = conversion == Conversion::OutOfRange;
        let mut stored = match decimal.rescale(scale) {
            Some(rounded) => {
                if rounded.compare(decimal) != std::cmp::Ordering::Equal {
                    let message = self.truncated_message();
                    self.note(1265, message);
                }
                Some(rounded)
            }
            None => None,
        };
        let fits = stored.is_some_and(|rounded| rounded.integer_digit_count() <= integer_digits);
        if out_of_range || !fits {
            self.out_of_range()?;
            // The largest magnitude the column holds: precision nines.
            let digits = u32::from(precision).min(DECIMAL_DIGITS_MAX);
            let nines = 10i128.pow(digits) - 1;
            let nines = if decimal.is_negative() { -nines } else { nines };
            stored = Some(Decimal::new(nines, scale.min(precision)));
        }
        Ok(Value::Decimal(stored.unwrap_or(Decimal::ZERO).to_string()))
    }

    fn real(&mut self, value: &SqlValue, float: bool) -> Result<Value, SqlError> {
        let (mut number, conversion) = match value {
            SqlValue::String(text) => parse_double(text),
            other => other.to_double(),
        };
        match conversion {
            Conversion::Truncated => self.truncated()?,
            Conversion::OutOfRange => self.out_of_range()?,
            _ => {}
        }
        if !number.is_finite() {
            self.out_of_range()?;
            number = if number < 0.0 { f64::MIN } else { f64::MAX };
        }
        if float {
            let limit = f64::from(f32::MAX);
            if number.abs() > limit {
                self.out_of_range()?;
                number = number.clamp(-limit, limit);
            }
            return Ok(Value::Float(number as f32));
        }
        Ok(Value::Double(number))
    }

    /// Text into CHAR/VARCHAR/TEXT: converted to the column's character
    /// set, checked against `length` (characters, or bytes when not
    /// `count_characters`).
    fn text(
        &mut self,
        value: &SqlValue,
        collation: Collation,
        length: u64,
        count_characters: bool,
        kind: TextKind,
    ) -> Result<Value, SqlError> {
        let source = value.to_text();
        let mut text = Vec::with_capacity(source.len());
        let utf8 = matches!(collation, Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi);
        if utf8 {
            if let Err(invalid) = std::str::from_utf8(&source) {
                let message = format!(
                    "Incorrect string value: '{}' for column '{}' at row {}",
                    escape_invalid(&source[invalid.valid_up_to()..]),
                    self.name,
                    self.row
                );
                self.fail_or_warn(1366, message)?;
                // Non-strict MySQL cuts the value at the invalid byte.
                text.extend_from_slice(&source[..invalid.valid_up_to()]);
            } else {
                text.extend_from_slice(&source);
            }
        } else if !utf8_to_latin1(&source, &mut text) {
            let message = format!(
                "Incorrect string value: '{}' for column '{}' at row {}",
                escape_invalid(&source),
                self.name,
                self.row
            );
            self.fail_or_warn(1366, message)?;
        }
        let count = |bytes: &[u8]| -> u64 {
            if utf8 && count_characters {
                schema::value::utf8_character_count(bytes) as u64
            } else {
                bytes.len() as u64
            }
        };
        // No more bytes than the limit is no more characters either.
        if text.len() as u64 > length && count(&text) > length {
            // Where the first `length` characters end.
            let cut = if utf8 && count_characters {
                character_boundary(&text, length as usize)
            } else {
                length as usize
            };
            let excess = &text[cut..];
            if excess.iter().all(|&byte| byte == b' ') {
                if kind == TextKind::Varying {
                    let message = self.truncated_message();
                    self.note(1265, message);
                }
            } else {
                self.too_long()?;
            }
            text.truncate(cut);
        }
        if kind == TextKind::Char {
            let kept = schema::value::strip_trailing_spaces(&text).len();
            text.truncate(kept);
        }
        Ok(Value::Bytes(text))
    }

    fn bytes(&mut self, value: &SqlValue, length: u64) -> Result<Value, SqlError> {
        let mut bytes = value.to_text().into_owned();
        if bytes.len() as u64 > length {
            self.too_long()?;
            bytes.truncate(length as usize);
        }
        Ok(Value::Bytes(bytes))
    }

    fn datetime(&mut self, value: &SqlValue, kind: DateKind, fsp: u8) -> Result<Value, SqlError> {
        let what = match kind {
            DateKind::Date => "date",
            DateKind::Datetime | DateKind::Timestamp => "datetime",
        };
        let zero = match kind {
            DateKind::Date => Value::Date {
                year: 0,
                month: 0,
                day: 0,
            },
            DateKind::Datetime => datetime_value(&Datetime::ZERO),
            DateKind::Timestamp => Value::Timestamp {
                seconds: 0,
                microsecond: 0,
            },
        };
        let parsed = match value {
            SqlValue::Time(_) => None,
            other => other.to_datetime(),
        };
        let Some((mut datetime, conversion)) = parsed else {
            self.incorrect_temporal(what, value)?;
            return Ok(zero);
        };
        if conversion >= Conversion::Truncated {
            self.incorrect_temporal(what, value)?;
        }
        let valid_clock = datetime.hour <= 23
            && datetime.minute <= 59
            && datetime.second <= 59
            && datetime.microsecond < 1_000_000;
        if datetime.date.is_zero() && valid_clock {
            // The zero date: NO_ZERO_DATE (in the strict default sql_mode) refuses it.
            if self.strict {
                self.incorrect_temporal(what, value)?;
            }
        } else if !datetime.date.is_calendar_date() || !valid_clock {
            // Impossible dates, and zero months or days (NO_ZERO_IN_DATE):
            // storage keeps only calendar dates, so non-strict mode stores
            // the zero value with the warning.
            self.incorrect_temporal(what, value)?;
            return Ok(zero);
        }
        match kind {
            DateKind::Date => {
                if datetime.microseconds_of_day() != 0 {
                    let message = self.truncated_message();
                    self.note(1265, message);
                }
                let date = datetime.date;
                Ok(Value::Date {
                    year: date.year,
                    month: date.month,
                    day: date.day,
                })
            }
            DateKind::Datetime => {
                datetime = datetime.round_to_fsp(fsp.min(FSP_MAX)).unwrap_or(datetime);
                Ok(datetime_value(&datetime))
            }
            DateKind::Timestamp => {
                if datetime.is_zero() {
                    return Ok(zero);
                }
                let Some(rounded) = datetime.round_to_fsp(fsp.min(FSP_MAX)) else {
                    self.incorrect_temporal(what, value)?;
                    return Ok(zero);
                };
                let (seconds, microsecond) = rounded.unix_seconds();
                if !(TIMESTAMP_SECONDS_MIN..=temporal::TIMESTAMP_SECONDS_MAX).contains(&seconds)
                    || rounded.date.has_zero_part()
                {
                    self.incorrect_temporal(what, value)?;
                    return Ok(zero);
                }
                Ok(Value::Timestamp {
                    seconds: seconds as u32,
                    microsecond,
                })
            }
        }
    }

    fn time(&mut self, value: &SqlValue, fsp: u8) -> Result<Value, SqlError> {
        let parsed = value.to_time();
        let Some((time, conversion)) = parsed else {
            self.incorrect_temporal("time", value)?;
            return Ok(time_value(&Time::ZERO));
        };
        match conversion {
            Conversion::OutOfRange => self.out_of_range()?,
            Conversion::Truncated => self.incorrect_temporal("time", value)?,
            _ => {}
        }
        let rounded = time.round_to_fsp(fsp.min(FSP_MAX));
        Ok(time_value(&rounded))
    }

    fn year(&mut self, value: &SqlValue) -> Result<Value, SqlError> {
        let year = match value {
            SqlValue::Date(date) => i128::from(date.year),
            SqlValue::Datetime(datetime) => i128::from(datetime.date.year),
            SqlValue::String(text) => {
                // As text, '0' and '00' are 2000; only '0000' is the zero year.
                let trimmed = trim_spaces(text);
                let number = self.integral(value)?;
                if number == 0
                    && trimmed.len() < 4
                    && !trimmed.is_empty()
                    && trimmed.iter().all(u8::is_ascii_digit)
                {
                    2000
                } else {
                    number
                }
            }
            other => self.integral(other)?,
        };
        let stored = match year {
            0 => 0,
            1..=69 => 2000 + year,
            70..=99 => 1900 + year,
            1901..=2155 => year,
            _ => {
                self.out_of_range()?;
                0
            }
        };
        Ok(Value::Year(stored as u16))
    }

    fn bit(&mut self, value: &SqlValue, width: u8) -> Result<Value, SqlError> {
        let bits: Option<u64> = match value {
            SqlValue::String(bytes) => {
                let significant = &bytes[bytes.iter().take_while(|&&byte| byte == 0).count()..];
                (significant.len() <= 8).then(|| {
                    significant
                        .iter()
                        .fold(0u64, |bits, &byte| bits << 8 | u64::from(byte))
                })
            }
            SqlValue::Int(value) => Some(*value as u64),
            other => {
                let number = self.integral(other)?;
                u64::try_from(number).ok()
            }
        };
        let maximum = if width >= 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        match bits {
            Some(bits) if bits <= maximum => Ok(Value::Bit(bits)),
            _ => {
                if self.strict {
                    return Err(error(
                        1406,
                        format!(
                            "Data too long for column '{}' at row {}",
                            self.name, self.row
                        ),
                    ));
                }
                self.out_of_range()?;
                Ok(Value::Bit(maximum))
            }
        }
    }

    fn enumeration(&mut self, value: &SqlValue, variants: &[String]) -> Result<Value, SqlError> {
        let index = match value {
            SqlValue::String(text) => enum_position(variants, text).or_else(|| {
                // A string of digits names a member by number.
                let trimmed = trim_spaces(text);
                if !trimmed.is_empty() && trimmed.iter().all(u8::is_ascii_digit) {
                    std::str::from_utf8(trimmed).ok()?.parse::<usize>().ok()
                } else {
                    None
                }
            }),
            other => {
                let number = self.integral(other)?;
                usize::try_from(number).ok()
            }
        };
        match index {
            Some(index) if (1..=variants.len()).contains(&index) => Ok(Value::Enum(index as u16)),
            _ => {
                // MySQL stores the '' error member (index 0) in non-strict
                // mode; Shoal's storage has no such member, so both modes refuse.
                Err(error(1265, self.truncated_message()))
            }
        }
    }
}

fn trim_spaces(text: &[u8]) -> &[u8] {
    let start = text.iter().take_while(|&&byte| byte == b' ').count();
    let text = &text[start..];
    schema::value::strip_trailing_spaces(text)
}

/// The 1-based position of the ENUM member `text` names: compared under
/// the default collation (case- and accent-insensitive), ignoring
/// trailing spaces as MySQL does for member names.
fn enum_position(variants: &[String], text: &[u8]) -> Option<usize> {
    let wanted = schema::value::strip_trailing_spaces(text);
    variants
        .iter()
        .position(|variant| variant.as_bytes() == text)
        .or_else(|| {
            variants.iter().position(|variant| {
                schema::collation::compare(
                    ENUM_COLLATION,
                    schema::value::strip_trailing_spaces(variant.as_bytes()),
                    wanted,
                ) == std::cmp::Ordering::Equal
            })
        })
        .map(|position| position + 1)
}

fn character_boundary(text: &[u8], characters: usize) -> usize {
    let mut seen = 0;
    for (position, &byte) in text.iter().enumerate() {
        if byte & 0xC0 != 0x80 {
            if seen == characters {
                return position;
            }
            seen += 1;
        }
    }
    text.len()
}

/// MySQL's rendering of bytes in "Incorrect string value": `\xE9` for each
/// byte from the first invalid one, at most 6 bytes.
fn escape_invalid(bytes: &[u8]) -> String {
    let mut text = String::new();
    for &byte in bytes.iter().take(6) {
        if byte.is_ascii_graphic() {
            text.push(byte as char);
        } else {
            text.push_str(&format!("\\x{byte:02X}"));
        }
    }
    if bytes.len() > 6 {
        text.push_str("...");
    }
    text
}

fn datetime_value(datetime: &Datetime) -> Value {
    Value::Datetime {
        year: datetime.date.year,
        month: datetime.date.month,
        day: datetime.date.day,
        hour: datetime.hour,
        minute: datetime.minute,
        second: datetime.second,
        microsecond: datetime.microsecond,
    }
}

fn time_value(time: &Time) -> Value {
    Value::Time {
        negative: time.negative,
        hours: time.hours,
        minutes: time.minutes,
        seconds: time.seconds,
        microsecond: time.microsecond,
    }
}

// ---------------------------------------------------------------------------
// Character sets

/// The code points of bytes 0x80..=0x9F in MySQL's latin1 (Windows-1252);
/// 0 marks the five bytes cp1252 leaves undefined (MySQL maps them to
/// the C1 controls of the same number).
const CP1252_HIGH: [u16; 32] = [
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
    0x0152, 0, 0x017D, 0, 0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC,
    0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
];

/// The latin1 byte of a character, if latin1 has it.
fn latin1_byte(character: char) -> Option<u8> {
    let code = character as u32;
    if code < 0x80 || (0xA0..=0xFF).contains(&code) {
        return Some(code as u8);
    }
    CP1252_HIGH
        .iter()
        .position(|&mapped| mapped != 0 && u32::from(mapped) == code)
        .map(|position| 0x80 + position as u8)
        .or_else(|| (0x80..=0x9F).contains(&code).then_some(code as u8))
}

/// The character of a latin1 byte.
fn latin1_character(byte: u8) -> char {
    if (0x80..=0x9F).contains(&byte) {
        let mapped = CP1252_HIGH[usize::from(byte - 0x80)];
        if mapped != 0 {
            return char::from_u32(u32::from(mapped)).unwrap_or('?');
        }
    }
    char::from(byte)
}

/// Appends `text` in latin1: UTF-8 text is converted (characters latin1
/// lacks become '?', and false is returned); bytes that are not UTF-8 are
/// taken to be latin1 already.
fn utf8_to_latin1(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Ok(utf8) = std::str::from_utf8(text) else {
        out.extend_from_slice(text);
        return true;
    };
    let mut lossless = true;
    for character in utf8.chars() {
        match latin1_byte(character) {
            Some(byte) => out.push(byte),
            None => {
                out.push(b'?');
                lossless = false;
            }
        }
    }
    lossless
}

/// Converts text between character sets (`CONVERT(... USING ...)`, and a
/// string's bytes when its collation changes charset). Returns false when
/// a character had no counterpart (written as '?'). Binary on either side
/// copies the bytes.
pub fn convert_charset(text: &[u8], from: Collation, to: Collation, out: &mut Vec<u8>) -> bool {
    let is_utf8 = |collation| matches!(collation, Collation::Utf8mb4Bin | Collation::Utf8mb4AiCi);
    let is_latin1 = |collation| matches!(collation, Collation::Latin1Bin | Collation::Latin1Ci);
    if is_utf8(from) && is_latin1(to) {
        return utf8_to_latin1(text, out);
    }
    if is_latin1(from) && is_utf8(to) {
        for &byte in text {
            let mut buffer = [0u8; 4];
            out.extend_from_slice(latin1_character(byte).encode_utf8(&mut buffer).as_bytes());
        }
        return true;
    }
    if to != Collation::Binary && is_utf8(to) && std::str::from_utf8(text).is_err() {
        // Bytes that are not UTF-8 become '?' each, as MySQL's conversion does.
        let mut lossless = true;
        for chunk in text.utf8_chunks() {
            out.extend_from_slice(chunk.valid().as_bytes());
            for _ in chunk.invalid() {
                out.push(b'?');
                lossless = false;
            }
        }
        return lossless;
    }
    out.extend_from_slice(text);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, column_type: ColumnType, nullable: bool) -> ColumnDef {
        ColumnDef::new(name, column_type, nullable)
    }

    type Stored = (Result<Value, SqlError>, Vec<(WarningLevel, u16, String)>);

    fn store(value: SqlValue, column: &ColumnDef, strict: bool) -> Stored {
        let mut warnings = Vec::new();
        let result =
            to_stored_with_levels(&value, column, strict, 1, &mut |level, code, message| {
                warnings.push((level, code, message))
            });
        (result, warnings)
    }

    fn text(value: &str) -> SqlValue {
        SqlValue::String(value.as_bytes().to_vec())
    }

    #[test]
    fn column_definitions_as_mysql_sends_them() {
        let int = column_sql_type(&column("i", ColumnType::Int { unsigned: false }, false));
        assert_eq!(
            (int.field_type, int.length, int.flags),
            (FieldType::Long, 11, flags::NOT_NULL)
        );
        let unsigned = column_sql_type(&column("u", ColumnType::Int { unsigned: true }, true));
        assert_eq!((unsigned.length, unsigned.flags), (10, flags::UNSIGNED));
        let varchar = column_sql_type(&column(
            "v",
            ColumnType::Varchar {
                length: 10,
                collation: Collation::Utf8mb4AiCi,
            },
            true,
        ));
        assert_eq!(
            (varchar.field_type, varchar.length, varchar.flags),
            (FieldType::VarString, 40, 0)
        );
        let varbinary = column_sql_type(&column("b", ColumnType::Varbinary { length: 8 }, true));
        assert_eq!(
            (varbinary.collation, varbinary.flags),
            (Collation::Binary, flags::BINARY)
        );
        let decimal = column_sql_type(&column(
            "d",
            ColumnType::Decimal {
                precision: 10,
                scale: 2,
            },
            true,
        ));
        assert_eq!(
            (decimal.field_type, decimal.length, decimal.decimals),
            (FieldType::NewDecimal, 12, 2)
        );
        let whole = column_sql_type(&column(
            "w",
            ColumnType::Decimal {
                precision: 10,
                scale: 0,
            },
            true,
        ));
        assert_eq!(whole.length, 11);
        let datetime = column_sql_type(&column("t", ColumnType::Datetime { fsp: 3 }, true));
        assert_eq!((datetime.length, datetime.decimals), (23, 3));
        let text = column_sql_type(&column(
            "x",
            ColumnType::Text {
                length_max: 65_535,
                collation: Collation::Utf8mb4AiCi,
            },
            true,
        ));
        assert_eq!(
            (text.field_type, text.length, text.flags),
            (FieldType::Blob, 262_140, flags::BLOB)
        );
        let year = column_sql_type(&column("y", ColumnType::Year, true));
        assert_eq!(year.flags, flags::UNSIGNED | flags::ZEROFILL);
    }

    #[test]
    fn integers_store_with_mysql_errors() {
        let int = column("c", ColumnType::TinyInt { unsigned: false }, false);
        // INSERT ... VALUES (NULL) into NOT NULL: 1048.
        let (result, _) = store(SqlValue::Null, &int, true);
        assert_eq!(result.unwrap_err().message, "Column 'c' cannot be null");
        // 'abc' into an integer: strict 1366, non-strict 0 with a warning.
        let (result, _) = store(text("abc"), &int, true);
        let failure = result.unwrap_err();
        assert_eq!(failure.code, 1366);
        assert_eq!(
            failure.message,
            "Incorrect integer value: 'abc' for column 'c' at row 1"
        );
        let (result, warnings) = store(text("abc"), &int, false);
        assert_eq!(result.unwrap(), Value::Int(0));
        assert_eq!(warnings[0].1, 1366);
        // 300 into TINYINT: strict 1264, non-strict clamps to 127.
        let (result, _) = store(SqlValue::Int(300), &int, true);
        assert_eq!(result.unwrap_err().code, 1264);
        let (result, warnings) = store(SqlValue::Int(300), &int, false);
        assert_eq!((result.unwrap(), warnings[0].1), (Value::Int(127), 1264));
        // '12abc': 1265 Data truncated.
        let (result, _) = store(text("12abc"), &int, true);
        assert_eq!(result.unwrap_err().code, 1265);
        // Decimals and '1.5' round half away from zero, silently.
        let (result, warnings) = store(text("1.5"), &int, true);
        assert_eq!((result.unwrap(), warnings.len()), (Value::Int(2), 0));
        let (result, _) = store(SqlValue::Decimal(Decimal::new(-25, 1)), &int, true);
        assert_eq!(result.unwrap(), Value::Int(-3));
        let unsigned = column("u", ColumnType::Int { unsigned: true }, true);
        let (result, _) = store(SqlValue::Int(-1), &unsigned, false);
        assert_eq!(result.unwrap(), Value::UInt(0));
    }

    #[test]
    fn decimals_round_with_a_note() {
        let decimal = column(
            "d",
            ColumnType::Decimal {
                precision: 5,
                scale: 2,
            },
            true,
        );
        let (result, warnings) = store(SqlValue::Decimal(Decimal::new(1234, 3)), &decimal, true);
        assert_eq!(result.unwrap(), Value::Decimal("1.23".into()));
        assert_eq!((warnings[0].0, warnings[0].1), (WarningLevel::Note, 1265));
        let (result, _) = store(SqlValue::Int(1000), &decimal, true);
        assert_eq!(result.unwrap_err().code, 1264);
        let (result, _) = store(SqlValue::Int(1000), &decimal, false);
        assert_eq!(result.unwrap(), Value::Decimal("999.99".into()));
        let (result, _) = store(text("x"), &decimal, true);
        assert_eq!(
            result.unwrap_err().message,
            "Incorrect decimal value: 'x' for column 'd' at row 1"
        );
        let (result, _) = store(SqlValue::Double(0.1), &decimal, true);
        assert_eq!(result.unwrap(), Value::Decimal("0.10".into()));
    }

    #[test]
    fn strings_count_characters_of_the_column_charset() {
        let varchar = column(
            "v",
            ColumnType::Varchar {
                length: 3,
                collation: Collation::Utf8mb4AiCi,
            },
            true,
        );
        let (result, _) = store(text("äöü"), &varchar, true);
        assert_eq!(result.unwrap(), Value::Bytes("äöü".as_bytes().to_vec()));
        let (result, _) = store(text("abcd"), &varchar, true);
        let failure = result.unwrap_err();
        assert_eq!(
            (failure.code, failure.message.as_str()),
            (1406, "Data too long for column 'v' at row 1")
        );
        let (result, warnings) = store(text("abcd"), &varchar, false);
        assert_eq!(
            (result.unwrap(), warnings[0].1),
            (Value::Bytes(b"abc".to_vec()), 1265)
        );
        let (result, warnings) = store(text("abc   "), &varchar, true);
        assert_eq!(result.unwrap(), Value::Bytes(b"abc".to_vec()));
        assert_eq!(warnings[0].0, WarningLevel::Note);
        let char_column = column(
            "c",
            ColumnType::Char {
                length: 5,
                collation: Collation::Latin1Ci,
            },
            true,
        );
        let (result, _) = store(text("é  "), &char_column, true);
        assert_eq!(result.unwrap(), Value::Bytes(vec![0xE9]));
        let (result, _) = store(SqlValue::Double(0.5), &char_column, true);
        assert_eq!(result.unwrap(), Value::Bytes(b"0.5".to_vec()));
        let (result, _) = store(SqlValue::String(vec![0xFF]), &varchar, true);
        assert_eq!(result.unwrap_err().code, 1366);
    }

    #[test]
    fn temporals_store_with_mysql_checks() {
        let date = column("d", ColumnType::Date, true);
        let (result, _) = store(text("2024-02-30"), &date, true);
        let failure = result.unwrap_err();
        assert_eq!((failure.code, &failure.sqlstate), (1292, b"22007"));
        assert_eq!(
            failure.message,
            "Incorrect date value: '2024-02-30' for column 'd' at row 1"
        );
        let (result, warnings) = store(text("2024-02-30"), &date, false);
        assert_eq!(
            result.unwrap(),
            Value::Date {
                year: 0,
                month: 0,
                day: 0
            }
        );
        assert_eq!(
            warnings,
            vec![(
                WarningLevel::Warning,
                1265,
                "Data truncated for column 'd' at row 1".to_string()
            )]
        );
        let (result, _) = store(text("0000-00-00"), &date, true);
        assert_eq!(result.unwrap_err().code, 1292);
        let (result, _) = store(text("0000-00-00"), &date, false);
        assert!(result.is_ok());
        let (result, _) = store(SqlValue::Int(20240102), &date, true);
        assert_eq!(
            result.unwrap(),
            Value::Date {
                year: 2024,
                month: 1,
                day: 2
            }
        );
        let timestamp = column("t", ColumnType::Timestamp { fsp: 0 }, true);
        let (result, _) = store(text("1970-01-01 00:00:01"), &timestamp, true);
        assert_eq!(
            result.unwrap(),
            Value::Timestamp {
                seconds: 1,
                microsecond: 0
            }
        );
        let (result, _) = store(text("2038-01-19 03:14:08"), &timestamp, true);
        assert_eq!(result.unwrap_err().code, 1292);
        let datetime = column("dt", ColumnType::Datetime { fsp: 0 }, true);
        let (result, _) = store(text("2024-01-02 10:11:12.6"), &datetime, true);
        assert!(matches!(
            result.unwrap(),
            Value::Datetime { second: 13, .. }
        ));
        let time = column("tm", ColumnType::Time { fsp: 0 }, true);
        let (result, _) = store(text("900:00:00"), &time, true);
        assert_eq!(result.unwrap_err().code, 1264);
        let year = column("y", ColumnType::Year, true);
        assert_eq!(
            store(SqlValue::Int(5), &year, true).0.unwrap(),
            Value::Year(2005)
        );
        assert_eq!(
            store(SqlValue::Int(0), &year, true).0.unwrap(),
            Value::Year(0)
        );
        assert_eq!(store(text("0"), &year, true).0.unwrap(), Value::Year(2000));
        assert_eq!(
            store(SqlValue::Int(1800), &year, true).0.unwrap_err().code,
            1264
        );
    }

    #[test]
    fn enums_and_bits() {
        let enumeration = column(
            "e",
            ColumnType::Enum {
                variants: vec!["small".into(), "large".into()],
            },
            true,
        );
        assert_eq!(
            store(text("LARGE"), &enumeration, true).0.unwrap(),
            Value::Enum(2)
        );
        assert_eq!(
            store(SqlValue::Int(1), &enumeration, true).0.unwrap(),
            Value::Enum(1)
        );
        assert_eq!(
            store(text("2"), &enumeration, true).0.unwrap(),
            Value::Enum(2)
        );
        assert_eq!(
            store(text("huge"), &enumeration, true).0.unwrap_err().code,
            1265
        );
        assert_eq!(
            from_stored(&Value::Enum(2), &enumeration.column_type),
            SqlValue::String(b"large".to_vec())
        );
        let bit = column("b", ColumnType::Bit { width: 4 }, true);
        assert_eq!(
            store(SqlValue::Int(15), &bit, true).0.unwrap(),
            Value::Bit(15)
        );
        assert_eq!(
            store(SqlValue::Int(16), &bit, true).0.unwrap_err().code,
            1406
        );
        assert_eq!(
            store(SqlValue::String(vec![0x0A]), &bit, true).0.unwrap(),
            Value::Bit(10)
        );
    }

    #[test]
    fn charsets_convert() {
        let mut out = Vec::new();
        assert!(convert_charset(
            "é€".as_bytes(),
            Collation::Utf8mb4AiCi,
            Collation::Latin1Ci,
            &mut out
        ));
        assert_eq!(out, [0xE9, 0x80]);
        let mut back = Vec::new();
        convert_charset(&out, Collation::Latin1Ci, Collation::Utf8mb4AiCi, &mut back);
        assert_eq!(back, "é€".as_bytes());
        let mut lossy = Vec::new();
        assert!(!convert_charset(
            "日".as_bytes(),
            Collation::Utf8mb4Bin,
            Collation::Latin1Bin,
            &mut lossy
        ));
        assert_eq!(lossy, b"?");
    }

    fn column_types() -> Vec<ColumnType> {
        vec![
            ColumnType::TinyInt { unsigned: false },
            ColumnType::SmallInt { unsigned: true },
            ColumnType::MediumInt { unsigned: false },
            ColumnType::Int { unsigned: true },
            ColumnType::BigInt { unsigned: false },
            ColumnType::BigInt { unsigned: true },
            ColumnType::Decimal {
                precision: 5,
                scale: 2,
            },
            ColumnType::Decimal {
                precision: 65,
                scale: 30,
            },
            ColumnType::Float,
            ColumnType::Double,
            ColumnType::Char {
                length: 3,
                collation: Collation::Utf8mb4AiCi,
            },
            ColumnType::Varchar {
                length: 4,
                collation: Collation::Latin1Ci,
            },
            ColumnType::Varchar {
                length: 4,
                collation: Collation::Utf8mb4Bin,
            },
            ColumnType::Binary { length: 3 },
            ColumnType::Varbinary { length: 3 },
            ColumnType::Blob { length_max: 10 },
            ColumnType::Text {
                length_max: 10,
                collation: Collation::Utf8mb4AiCi,
            },
            ColumnType::Date,
            ColumnType::Datetime { fsp: 0 },
            ColumnType::Datetime { fsp: 6 },
            ColumnType::Timestamp { fsp: 3 },
            ColumnType::Time { fsp: 2 },
            ColumnType::Year,
            ColumnType::Bit { width: 5 },
            ColumnType::Bit { width: 64 },
            ColumnType::Enum {
                variants: vec!["a".into(), "b".into()],
            },
        ]
    }

    fn any_value() -> impl proptest::strategy::Strategy<Value = SqlValue> {
        use proptest::prelude::*;
        prop_oneof![
            Just(SqlValue::Null),
            any::<i64>().prop_map(SqlValue::Int),
            any::<u64>().prop_map(SqlValue::UInt),
            (any::<i64>(), 0u8..=30).prop_map(|(mantissa, scale)| SqlValue::Decimal(Decimal::new(
                i128::from(mantissa),
                scale
            ))),
            any::<f64>().prop_map(SqlValue::Double),
            prop::collection::vec(any::<u8>(), 0..8).prop_map(SqlValue::String),
            prop::sample::select(vec![
                "1.5",
                "abc",
                "2024-02-29 10:11:12.999999",
                "-838:59:59",
                "0000-00-00",
                "  7 ",
                "1e3",
                "b",
                "70"
            ])
            .prop_map(|text| SqlValue::String(text.as_bytes().to_vec())),
            (0u16..=10000, 0u8..=13, 0u8..=32)
                .prop_map(|(year, month, day)| SqlValue::Date(Date::new(year, month, day))),
            (0u16..=9999, 1u8..=12, 1u8..=28, 0u8..24, 0u32..1_000_000).prop_map(
                |(year, month, day, hour, microsecond)| {
                    SqlValue::Datetime(Datetime::new(
                        Date::new(year, month, day),
                        hour,
                        59,
                        59,
                        microsecond,
                    ))
                }
            ),
            (0u16..=900, any::<bool>(), 0u32..1_000_000).prop_map(
                |(hours, negative, microsecond)| SqlValue::Time(Time {
                    negative,
                    hours,
                    minutes: 59,
                    seconds: 59,
                    microsecond,
                })
            ),
        ]
    }

    proptest::proptest! {
        /// Whatever to_stored accepts, the storage encoding accepts too (its
        /// checks are the last line of defence, not the first).
        #[test]
        fn stored_values_encode(value in any_value(), strict in proptest::prelude::any::<bool>()) {
            for column_type in column_types() {
                let column = ColumnDef::new("c", column_type.clone(), true);
                let result = to_stored(&value, &column, strict, 1, &mut |_, _| {});
                if let Ok(stored) = result {
                    let mut out = Vec::new();
                    let encoded = stored.encode(&column_type, &mut out);
                    proptest::prop_assert!(encoded.is_ok(), "{value:?} into {column_type:?} gave {stored:?}: {encoded:?}");
                    let _ = from_stored(&stored, &column_type);
                }
            }
        }
    }

    #[test]
    fn stored_values_read_back() {
        let timestamp = ColumnType::Timestamp { fsp: 0 };
        assert_eq!(
            from_stored(
                &Value::Timestamp {
                    seconds: 86_400,
                    microsecond: 0
                },
                &timestamp
            ),
            SqlValue::Datetime(Datetime::from_date(Date::new(1970, 1, 2)))
        );
        assert_eq!(
            from_stored(
                &Value::Decimal("-1.50".into()),
                &ColumnType::Decimal {
                    precision: 3,
                    scale: 2
                }
            ),
            SqlValue::Decimal(Decimal::new(-150, 2))
        );
        assert_eq!(
            from_stored(&Value::Year(2024), &ColumnType::Year),
            SqlValue::Int(2024)
        );
        assert_eq!(
            default_for_type(&ColumnType::Date),
            SqlValue::Date(Date::ZERO)
        );
    }
}
