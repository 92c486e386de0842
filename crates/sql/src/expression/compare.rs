//! MySQL's comparison rules and grouping keys.
//!
//! Two values compare (MySQL 8.0 manual, "Type Conversion in Expression
//! Evaluation"): strings as strings under the collation; integers as
//! integers; a date, datetime or time against a string by reading the
//! string as that temporal type; temporals against each other as
//! datetimes (a TIME against a datetime by its time of day, where MySQL
//! would add the current date); decimals against integers or decimals
//! exactly; everything else as doubles (a string that is no number warns
//! 1292). NULL compares as unknown.
//!
//! `utf8mb4_bin` is PAD SPACE in MySQL 8.0 (trailing spaces do not count)
//! while `schema`'s `Utf8mb4Bin` compares bytes as they are, so strings
//! under it are compared here with space padding.

use super::Environment;
use super::evaluate::{lossy, warn};
use crate::temporal;
use crate::value::{Conversion, Datetime, Decimal, SqlType, SqlValue};
use schema::Collation;
use std::cmp::Ordering;

/// MySQL comparison rules (numbers vs strings → double compare, etc.),
/// None when either is NULL. Conversions do not warn here.
pub fn compare(a: &SqlValue, b: &SqlValue, collation: Collation) -> Option<Ordering> {
    compare_values(a, b, collation, None)
}

/// Compares two strings under a collation as MySQL 8.0 does (PAD SPACE
/// for `utf8mb4_bin` and the latin1 collations, NO PAD for
/// `utf8mb4_0900_ai_ci` and `binary`).
pub fn compare_strings(collation: Collation, a: &[u8], b: &[u8]) -> Ordering {
    match collation {
        Collation::Utf8mb4Bin => compare_bytes_pad_space(a, b),
        other => schema::collation::compare(other, a, b),
    }
}

/// Bytes compared as if the shorter were padded with spaces.
fn compare_bytes_pad_space(a: &[u8], b: &[u8]) -> Ordering {
    let common = a.len().min(b.len());
    let prefix = a[..common].cmp(&b[..common]);
    if prefix != Ordering::Equal {
        return prefix;
    }
    let (rest, longer) = if a.len() > common {
        (&a[common..], Ordering::Greater)
    } else {
        (&b[common..], Ordering::Less)
    };
    for &byte in rest {
        if byte != b' ' {
            return if byte > b' ' {
                longer
            } else {
                longer.reverse()
            };
        }
    }
    Ordering::Equal
}

fn is_temporal(value: &SqlValue) -> bool {
    matches!(
        value,
        SqlValue::Date(_) | SqlValue::Datetime(_) | SqlValue::Time(_)
    )
}

/// Whether two values are equal under MySQL's rules (None with a NULL).
pub(crate) fn equal_values(
    a: &SqlValue,
    b: &SqlValue,
    collation: Collation,
    env: Option<&mut dyn Environment>,
) -> Option<bool> {
    if let (SqlValue::Int(x), SqlValue::Int(y)) = (a, b) {
        return Some(x == y);
    }
    compare_values(a, b, collation, env).map(|ordering| ordering == Ordering::Equal)
}

/// The comparison with warnings into `env` when given.
pub(crate) fn compare_values(
    a: &SqlValue,
    b: &SqlValue,
    collation: Collation,
    env: Option<&mut dyn Environment>,
) -> Option<Ordering> {
    use SqlValue as V;
    Some(match (a, b) {
        (V::Null, _) | (_, V::Null) => return None,
        (V::String(x), V::String(y)) => compare_strings(collation, x, y),
        (V::Int(x), V::Int(y)) => x.cmp(y),
        (V::Int(_) | V::UInt(_), V::Int(_) | V::UInt(_)) => wide(a).cmp(&wide(b)),
        _ if is_temporal(a) && is_temporal(b) => compare_temporals(a, b),
        (_, V::String(text)) if is_temporal(a) => {
            compare_temporal_with_text(a, text, collation, env)
        }
        (V::String(text), _) if is_temporal(b) => {
            compare_temporal_with_text(b, text, collation, env).reverse()
        }
        _ if is_temporal(a) => compare_numbers(&number_form(a), b, env),
        _ if is_temporal(b) => compare_numbers(a, &number_form(b), env),
        _ => compare_numbers(a, b, env),
    })
}

fn wide(value: &SqlValue) -> i128 {
    match value {
        SqlValue::Int(value) => i128::from(*value),
        SqlValue::UInt(value) => i128::from(*value),
        _ => 0,
    }
}

/// A temporal as the number it is in numeric context.
fn number_form(value: &SqlValue) -> SqlValue {
    match value {
        SqlValue::Date(date) => SqlValue::Int(date.to_number()),
        SqlValue::Datetime(datetime) => SqlValue::Decimal(datetime.to_decimal()),
        SqlValue::Time(time) => SqlValue::Decimal(time.to_decimal()),
        other => other.clone(),
    }
}

fn compare_numbers(a: &SqlValue, b: &SqlValue, env: Option<&mut dyn Environment>) -> Ordering {
    let exact = |value: &SqlValue| {
        matches!(
            value,
            SqlValue::Int(_) | SqlValue::UInt(_) | SqlValue::Decimal(_)
        )
    };
    if exact(a) && exact(b) {
        return a.to_decimal().0.compare(b.to_decimal().0);
    }
    let mut env = env;
    let mut double = |value: &SqlValue| {
        let (number, conversion) = value.to_double();
        if conversion >= Conversion::Truncated
            && matches!(value, SqlValue::String(_))
            && let Some(env) = env.as_deref_mut()
        {
            let text = lossy(&value.to_text());
            warn(
                env,
                1292,
                format!("Truncated incorrect DOUBLE value: '{text}'"),
            );
        }
        number
    };
    let (x, y) = (double(a), double(b));
    x.partial_cmp(&y).unwrap_or(Ordering::Equal)
}

fn as_datetime(value: &SqlValue) -> Datetime {
    match value {
        SqlValue::Date(date) => Datetime::from_date(*date),
        SqlValue::Datetime(datetime) => *datetime,
        _ => Datetime::ZERO,
    }
}

fn compare_temporals(a: &SqlValue, b: &SqlValue) -> Ordering {
    match (a, b) {
        (SqlValue::Time(x), SqlValue::Time(y)) => x.to_microseconds().cmp(&y.to_microseconds()),
        (SqlValue::Time(time), other) => time
            .to_microseconds()
            .cmp(&as_datetime(other).microseconds_of_day()),
        (other, SqlValue::Time(time)) => as_datetime(other)
            .microseconds_of_day()
            .cmp(&time.to_microseconds()),
        _ => as_datetime(a).cmp(&as_datetime(b)),
    }
}

/// A temporal against text: the text read as that temporal type; text
/// that is no date or time warns and compares as a string.
fn compare_temporal_with_text(
    temporal_value: &SqlValue,
    text: &[u8],
    collation: Collation,
    env: Option<&mut dyn Environment>,
) -> Ordering {
    let (parsed, kind) = match temporal_value {
        SqlValue::Time(_) => (
            temporal::parse_time(text).map(|(time, conversion)| (SqlValue::Time(time), conversion)),
            "TIME",
        ),
        SqlValue::Date(_) => (
            temporal::parse_datetime(text).map(|parsed| {
                let value = if parsed.has_time {
                    SqlValue::Datetime(parsed.value)
                } else {
                    SqlValue::Date(parsed.value.date)
                };
                (value, parsed.conversion)
            }),
            "DATE",
        ),
        _ => (
            temporal::parse_datetime(text)
                .map(|parsed| (SqlValue::Datetime(parsed.value), parsed.conversion)),
            "DATETIME",
        ),
    };
    match parsed {
        Some((value, conversion)) => {
            if conversion >= Conversion::Truncated
                && let Some(env) = env
            {
                warn(
                    env,
                    1292,
                    format!("Truncated incorrect {kind} value: '{}'", lossy(text)),
                );
            }
            compare_temporals(temporal_value, &value)
        }
        None => {
            if let Some(env) = env {
                warn(
                    env,
                    1292,
                    format!("Incorrect {kind} value: '{}'", lossy(text)),
                );
            }
            compare_strings(collation, &temporal_value.to_text(), text)
        }
    }
}

// ---------------------------------------------------------------------------
// Grouping keys

const NULL_TAG: u8 = 0x00;
const NUMBER_TAG: u8 = 0x01;
const DOUBLE_TAG: u8 = 0x02;
const DATETIME_TAG: u8 = 0x03;
const TIME_TAG: u8 = 0x04;
const STRING_TAG: u8 = 0x05;

/// A key for GROUP BY / DISTINCT / COUNT(DISTINCT) / hash lookups: equal
/// under MySQL comparison (and the collation) ⇔ equal keys. Keys are
/// self-delimiting, so several can be appended to one buffer for a
/// composite key. The type decides the domain: under a string type
/// values compare as text, under a temporal type as dates and times,
/// otherwise numbers compare by value (1, 1.0 and 1e0 are one key).
pub fn group_key(value: &SqlValue, ty: &SqlType, out: &mut Vec<u8>) {
    match value {
        SqlValue::Null => out.push(NULL_TAG),
        SqlValue::String(text) if ty.is_temporal_type() => {
            let parsed = match ty.field_type {
                mysql_protocol::FieldType::Time => {
                    temporal::parse_time(text).map(|(time, _)| SqlValue::Time(time))
                }
                _ => temporal::parse_datetime(text).map(|parsed| SqlValue::Datetime(parsed.value)),
            };
            match parsed {
                Some(parsed) => group_key(&parsed, ty, out),
                None => string_key(text, ty.collation, out),
            }
        }
        SqlValue::String(text) => string_key(text, ty.collation, out),
        _ if ty.is_string_type() => string_key(&value.to_text(), ty.collation, out),
        SqlValue::Date(date) => datetime_key(&Datetime::from_date(*date), out),
        SqlValue::Datetime(datetime) => datetime_key(datetime, out),
        SqlValue::Time(time) => {
            out.push(TIME_TAG);
            out.extend_from_slice(&time.to_microseconds().to_be_bytes());
        }
        SqlValue::Int(_) | SqlValue::UInt(_) | SqlValue::Decimal(_) => {
            number_key(value.to_decimal().0, out)
        }
        SqlValue::Double(double) => match Decimal::from_f64(*double) {
            Some((decimal, _)) => number_key(decimal, out),
            None => {
                out.push(DOUBLE_TAG);
                out.extend_from_slice(&double.to_bits().to_be_bytes());
            }
        },
    }
}

fn number_key(decimal: Decimal, out: &mut Vec<u8>) {
    let normalized = decimal.normalized();
    out.push(NUMBER_TAG);
    out.extend_from_slice(&normalized.mantissa.to_be_bytes());
    out.push(normalized.scale);
}

fn datetime_key(datetime: &Datetime, out: &mut Vec<u8>) {
    out.push(DATETIME_TAG);
    out.extend_from_slice(&datetime.date.year.to_be_bytes());
    out.extend_from_slice(&[
        datetime.date.month,
        datetime.date.day,
        datetime.hour,
        datetime.minute,
        datetime.second,
    ]);
    out.extend_from_slice(&datetime.microsecond.to_be_bytes());
}

fn string_key(text: &[u8], collation: Collation, out: &mut Vec<u8>) {
    out.push(STRING_TAG);
    match collation {
        Collation::Utf8mb4Bin => {
            let trimmed = schema::value::strip_trailing_spaces(text);
            schema::collation::sort_key(Collation::Binary, trimmed, out);
        }
        other => schema::collation::sort_key(other, text, out),
    }
}
