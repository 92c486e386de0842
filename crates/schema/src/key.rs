//! Key encodings: the sortable (memcomparable) encoding ordered indexes are
//! built on, and the key hash the hash index and partitioning use.
//!
//! ## Sortable encoding (format version 1)
//! A key is the concatenation of its columns' encodings. A nullable column
//! starts with one byte, `0x00` for NULL (nothing follows) or `0x01` for a
//! value, followed by the value's sortable bytes, so NULL sorts first; a NOT
//! NULL column is its sortable bytes alone (the marker would say nothing,
//! and without it an INT NOT NULL key is 4 bytes, which lets ordered indexes
//! keep whole keys in 8-byte entries). Two keys compare bytewise exactly as
//! SQL compares them column by column under each column's type and
//! collation; keys equal under the collation ('abc' and 'ABC' under a
//! case-insensitive collation) have identical encodings.
//!
//! ## Key hash (hash function id 1)
//! `xxh3_64` (seed 0) of the sortable encoding. It decides which partition a
//! row lives in: it must never change for an existing hash function id.

//! ## A value's sortable bytes, by type
//! - signed integers: big-endian, in the column's width, sign bit flipped;
//!   unsigned integers: big-endian, in the column's width;
//! - FLOAT/DOUBLE: the IEEE bits big-endian, all flipped for negative
//!   numbers and the sign bit flipped for the others; -0 is written as 0;
//! - DECIMAL, DATETIME, TIMESTAMP, TIME, YEAR, BIT: the stored bytes, which
//!   MySQL's formats already make memcomparable;
//! - DATE and ENUM: the stored little-endian number, big-endian;
//! - CHAR, VARCHAR, TEXT: `collation::sort_key` of the text (CHAR without
//!   its trailing pad spaces, as MySQL compares CHAR values);
//! - BINARY, VARBINARY, BLOB: `collation::sort_key` under `binary` (0x00
//!   escaped as 0x00 0xFF, ended by 0x00 0x00). BINARY keeps its zero
//!   padding, as MySQL compares BINARY values with it.

use crate::collation;
use crate::error::{Error, ErrorCode};
use crate::row::AttrInfoReader;
use crate::row::RowView;
use crate::table::{ColumnId, KEY_COLUMNS_MAX, TableDef};
use crate::types::{Collation, ColumnType, Storage};
use crate::value::{read_signed_little_endian, read_unsigned_little_endian, strip_trailing_spaces};
use std::cmp::Ordering;

/// The id of the hash function below, stored in table metadata.
pub const KEY_HASH_FUNCTION_ID: u8 = 1;

/// The byte that starts a NULL column in the sortable encoding.
pub const SORTABLE_NULL: u8 = 0x00;
/// The byte that starts a non-NULL column in the sortable encoding.
pub const SORTABLE_VALUE: u8 = 0x01;

/// Appends the sortable encoding of one value of a nullable column (`None` =
/// NULL): the marker byte, then the value's sortable bytes.
pub fn encode_sortable(column_type: &ColumnType, value: Option<&[u8]>, out: &mut Vec<u8>) {
    let Some(bytes) = value else {
        out.push(SORTABLE_NULL);
        return;
    };
    out.push(SORTABLE_VALUE);
    encode_sortable_value(column_type, bytes, out);
}

/// Appends one key column's encoding: with the marker byte if the column is
/// nullable, the sortable bytes alone if it is NOT NULL.
#[inline]
pub fn encode_key_column(
    column_type: &ColumnType,
    nullable: bool,
    value: Option<&[u8]>,
    out: &mut Vec<u8>,
) {
    if nullable {
        encode_sortable(column_type, value, out);
    } else {
        let bytes = value.expect("a NOT NULL column has a value");
        encode_sortable_value(column_type, bytes, out);
    }
}

/// The most bytes a key of `columns` can encode to, if it is bounded by the
/// types alone (only fixed-size columns whose sortable bytes have a fixed size).
pub fn key_bytes_max(table: &TableDef, columns: &[ColumnId]) -> Option<usize> {
    let mut total = 0usize;
    for &column in columns {
        let definition = &table.columns[usize::from(column)];
        let value_bytes = match &definition.column_type {
            ColumnType::TinyInt { .. }
            | ColumnType::SmallInt { .. }
            | ColumnType::MediumInt { .. }
            | ColumnType::Int { .. }
            | ColumnType::BigInt { .. }
            | ColumnType::Float
            | ColumnType::Double
            | ColumnType::Decimal { .. }
            | ColumnType::Date
            | ColumnType::Datetime { .. }
            | ColumnType::Timestamp { .. }
            | ColumnType::Time { .. }
            | ColumnType::Year
            | ColumnType::Bit { .. }
            | ColumnType::Enum { .. } => match definition.column_type.storage() {
                Storage::Fixed(size) => size as usize,
                Storage::Var(_) => return None,
            },
            _ => return None,
        };
        total += value_bytes + usize::from(definition.nullable);
    }
    Some(total)
}

/// Appends the sortable bytes of one non-NULL value.
fn encode_sortable_value(column_type: &ColumnType, bytes: &[u8], out: &mut Vec<u8>) {
    use ColumnType as Type;
    match column_type {
        Type::TinyInt { unsigned }
        | Type::SmallInt { unsigned }
        | Type::MediumInt { unsigned }
        | Type::Int { unsigned }
        | Type::BigInt { unsigned } => {
            let start = out.len();
            out.extend(bytes.iter().rev());
            if !*unsigned && let Some(first) = out.get_mut(start) {
                *first ^= 0x80;
            }
        }
        Type::Float => match <[u8; 4]>::try_from(bytes) {
            Ok(bytes) => {
                let float = f32::from_le_bytes(bytes);
                // -0 equals 0 in SQL, so both get the bits of 0.
                let bits = if float == 0.0 { 0 } else { float.to_bits() };
                let sortable = if bits >> 31 == 1 {
                    !bits
                } else {
                    bits | 1 << 31
                };
                out.extend_from_slice(&sortable.to_be_bytes());
            }
            Err(_) => out.extend_from_slice(bytes),
        },
        Type::Double => match <[u8; 8]>::try_from(bytes) {
            Ok(bytes) => {
                let double = f64::from_le_bytes(bytes);
                let bits = if double == 0.0 { 0 } else { double.to_bits() };
                let sortable = if bits >> 63 == 1 {
                    !bits
                } else {
                    bits | 1 << 63
                };
                out.extend_from_slice(&sortable.to_be_bytes());
            }
            Err(_) => out.extend_from_slice(bytes),
        },
        Type::Decimal { .. }
        | Type::Datetime { .. }
        | Type::Timestamp { .. }
        | Type::Time { .. }
        | Type::Year
        | Type::Bit { .. } => out.extend_from_slice(bytes),
        Type::Date | Type::Enum { .. } => out.extend(bytes.iter().rev()),
        Type::Char { collation, .. } => {
            collation::sort_key(*collation, strip_trailing_spaces(bytes), out)
        }
        Type::Varchar { collation, .. } | Type::Text { collation, .. } => {
            collation::sort_key(*collation, bytes, out)
        }
        Type::Binary { .. } | Type::Varbinary { .. } | Type::Blob { .. } => {
            collation::sort_key(Collation::Binary, bytes, out)
        }
    }
}

/// Appends the sortable encoding of `columns` of a stored row.
#[inline]
pub fn encode_row_key(table: &TableDef, columns: &[ColumnId], row: RowView<'_>, out: &mut Vec<u8>) {
    for &column in columns {
        let definition = &table.columns[usize::from(column)];
        encode_key_column(
            &definition.column_type,
            definition.nullable,
            row.column(&table.layout, column),
            out,
        );
    }
}

/// Appends the sortable encoding of a key given as AttrInfo. The AttrInfo must
/// hold the first `k ≥ 1` of `columns` (all of them unless `prefix_allowed`),
/// each once, in any order; returns `k`. Anything else is `WrongKey`.
///
/// NULL values are allowed and encode as NULL. A value of the wrong size for
/// its column is `WrongValue` (fixed size) or `DataTooLong` (variable size),
/// as when building a row; a truncated stream is the reader's `WrongValue`.
/// On error nothing is appended.
pub fn encode_attrinfo_key(
    table: &TableDef,
    columns: &[ColumnId],
    attrinfo: &[u8],
    prefix_allowed: bool,
    out: &mut Vec<u8>,
) -> Result<usize, Error> {
    if columns.is_empty() || columns.len() > KEY_COLUMNS_MAX {
        return Err(Error::new(ErrorCode::WrongKey, "a key has 1..=32 columns"));
    }
    // Per key column: None = not given, Some(None) = NULL, Some(Some(bytes)).
    // On the stack: this runs on every primary-key operation.
    let mut given: [Option<Option<&[u8]>>; KEY_COLUMNS_MAX] = [None; KEY_COLUMNS_MAX];
    for entry in AttrInfoReader::new(attrinfo) {
        let (column, value) = entry?;
        let Some(position) = columns.iter().position(|&key_column| key_column == column) else {
            return Err(Error::new(
                ErrorCode::WrongKey,
                "the key names a column that is not a key column",
            ));
        };
        if given[position].is_some() {
            return Err(Error::new(
                ErrorCode::WrongKey,
                "the key names a key column twice",
            ));
        }
        match value {
            Some(bytes) => check_stored_size(table.column_type(column), bytes)?,
            None if !table.columns[usize::from(column)].nullable => {
                return Err(Error::new(
                    ErrorCode::NullNotAllowed,
                    "a NOT NULL key column given NULL",
                ));
            }
            None => {}
        }
        given[position] = Some(value);
    }
    let given = &given[..columns.len()];
    let count = given.iter().take_while(|value| value.is_some()).count();
    if count == 0 {
        return Err(Error::new(
            ErrorCode::WrongKey,
            "the key gives no value for the first key column",
        ));
    }
    if given[count..].iter().any(Option::is_some) {
        return Err(Error::new(
            ErrorCode::WrongKey,
            "the key leaves out a key column before one it gives",
        ));
    }
    if count < columns.len() && !prefix_allowed {
        return Err(Error::new(
            ErrorCode::WrongKey,
            "the key leaves out key columns",
        ));
    }
    for (&column, value) in columns.iter().zip(&given[..count]) {
        let definition = &table.columns[usize::from(column)];
        encode_key_column(
            &definition.column_type,
            definition.nullable,
            value.flatten(),
            out,
        );
    }
    Ok(count)
}

/// Checks that `bytes` has a size a stored value of the type can have.
fn check_stored_size(column_type: &ColumnType, bytes: &[u8]) -> Result<(), Error> {
    match column_type.storage() {
        Storage::Fixed(size) if bytes.len() != size as usize => Err(Error::new(
            ErrorCode::WrongValue,
            "fixed-size key column given a value of the wrong length",
        )),
        Storage::Var(length_max) if bytes.len() > length_max as usize => {
            Err(ErrorCode::DataTooLong.into())
        }
        _ => Ok(()),
    }
}

/// The key hash of a sortable encoding.
#[inline]
pub fn key_hash(encoded: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(encoded)
}

/// Compares two non-NULL stored values of `column_type` as SQL does.
///
/// Orders exactly as their sortable encodings do.
pub fn compare_values(column_type: &ColumnType, a: &[u8], b: &[u8]) -> Ordering {
    use ColumnType as Type;
    match column_type {
        Type::TinyInt { unsigned }
        | Type::SmallInt { unsigned }
        | Type::MediumInt { unsigned }
        | Type::Int { unsigned }
        | Type::BigInt { unsigned } => {
            if *unsigned {
                read_unsigned_little_endian(a).cmp(&read_unsigned_little_endian(b))
            } else {
                read_signed_little_endian(a).cmp(&read_signed_little_endian(b))
            }
        }
        Type::Float => match (<[u8; 4]>::try_from(a), <[u8; 4]>::try_from(b)) {
            (Ok(a), Ok(b)) => compare_floats(
                f64::from(f32::from_le_bytes(a)),
                f64::from(f32::from_le_bytes(b)),
            ),
            _ => a.cmp(b),
        },
        Type::Double => match (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
            (Ok(a), Ok(b)) => compare_floats(f64::from_le_bytes(a), f64::from_le_bytes(b)),
            _ => a.cmp(b),
        },
        Type::Decimal { .. }
        | Type::Datetime { .. }
        | Type::Timestamp { .. }
        | Type::Time { .. }
        | Type::Year
        | Type::Bit { .. }
        | Type::Binary { .. }
        | Type::Varbinary { .. }
        | Type::Blob { .. } => a.cmp(b),
        Type::Date | Type::Enum { .. } => {
            read_unsigned_little_endian(a).cmp(&read_unsigned_little_endian(b))
        }
        Type::Char { collation, .. } => collation::compare(
            *collation,
            strip_trailing_spaces(a),
            strip_trailing_spaces(b),
        ),
        Type::Varchar { collation, .. } | Type::Text { collation, .. } => {
            collation::compare(*collation, a, b)
        }
    }
}

/// Numeric order with -0 equal to 0; stored values are never NaN, but if one
/// were, it would get a place of its own rather than break the ordering.
#[inline]
fn compare_floats(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or_else(|| a.total_cmp(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::AttrInfoWriter;
    use crate::table::ColumnDef;
    use crate::value::Value;

    fn stored(value: &Value, column_type: &ColumnType) -> Vec<u8> {
        let mut out = Vec::new();
        value.encode(column_type, &mut out).unwrap();
        out
    }

    fn sortable(value: &Value, column_type: &ColumnType) -> Vec<u8> {
        let mut out = Vec::new();
        let bytes = stored(value, column_type);
        let value = if matches!(value, Value::Null) {
            None
        } else {
            Some(bytes.as_slice())
        };
        encode_sortable(column_type, value, &mut out);
        out
    }

    /// Checks that `values`, given in ascending order, sort that way both
    /// through `compare_values` and through their sortable encodings.
    fn check_ascending(column_type: &ColumnType, values: &[Value]) {
        for pair in values.windows(2) {
            let (low, high) = (stored(&pair[0], column_type), stored(&pair[1], column_type));
            assert_eq!(
                compare_values(column_type, &low, &high),
                Ordering::Less,
                "{pair:?}"
            );
            assert!(
                sortable(&pair[0], column_type) < sortable(&pair[1], column_type),
                "{pair:?}"
            );
        }
    }

    #[test]
    fn integers_sort_numerically() {
        let values: Vec<Value> = [
            i64::from(i32::MIN),
            -256,
            -1,
            0,
            1,
            255,
            256,
            i64::from(i32::MAX),
        ]
        .into_iter()
        .map(Value::Int)
        .collect();
        check_ascending(&ColumnType::Int { unsigned: false }, &values);
        let values: Vec<Value> = [0, 1, 255, 256, u64::MAX]
            .into_iter()
            .map(Value::UInt)
            .collect();
        check_ascending(&ColumnType::BigInt { unsigned: true }, &values);
        assert_eq!(
            sortable(&Value::Int(1), &ColumnType::Int { unsigned: false }),
            [1, 0x80, 0, 0, 1]
        );
        assert_eq!(
            sortable(&Value::Int(-1), &ColumnType::Int { unsigned: false }),
            [1, 0x7F, 0xFF, 0xFF, 0xFF]
        );
    }

    #[test]
    fn floats_sort_numerically_and_zeroes_are_equal() {
        let values: Vec<Value> = [
            f64::MIN,
            -1.5,
            -f64::MIN_POSITIVE,
            0.0,
            5e-324,
            1.0,
            f64::MAX,
        ]
        .into_iter()
        .map(Value::Double)
        .collect();
        check_ascending(&ColumnType::Double, &values);
        let values: Vec<Value> = [f32::MIN, -1.0, 0.0, 1.0, f32::MAX]
            .into_iter()
            .map(Value::Float)
            .collect();
        check_ascending(&ColumnType::Float, &values);
        let zero = sortable(&Value::Double(0.0), &ColumnType::Double);
        assert_eq!(sortable(&Value::Double(-0.0), &ColumnType::Double), zero);
        let (positive, negative) = (
            stored(&Value::Float(0.0), &ColumnType::Float),
            stored(&Value::Float(-0.0), &ColumnType::Float),
        );
        assert_eq!(
            compare_values(&ColumnType::Float, &positive, &negative),
            Ordering::Equal
        );
    }

    #[test]
    fn other_types_sort_naturally() {
        let decimal = ColumnType::Decimal {
            precision: 10,
            scale: 3,
        };
        let values: Vec<Value> = [
            "-9999999.999",
            "-10",
            "-1.5",
            "-0.001",
            "0",
            "0.001",
            "1",
            "1.5",
            "10",
            "9999999.999",
        ]
        .into_iter()
        .map(|text| Value::Decimal(text.into()))
        .collect();
        check_ascending(&decimal, &values);
        let dates = [
            (0, 0, 0),
            (1000, 1, 1),
            (2023, 1, 31),
            (2023, 2, 1),
            (2024, 1, 1),
            (9999, 12, 31),
        ];
        let values: Vec<Value> = dates
            .into_iter()
            .map(|(year, month, day)| Value::Date { year, month, day })
            .collect();
        check_ascending(&ColumnType::Date, &values);
        let time = |negative, hours, microsecond| Value::Time {
            negative,
            hours,
            minutes: 0,
            seconds: 0,
            microsecond,
        };
        for fsp in 0..=6 {
            let unit = 10u32.pow(6 - u32::from(fsp));
            let mut values = vec![time(true, 838, 0), time(true, 1, 0)];
            if fsp > 0 {
                values.extend([time(true, 0, 9 * unit), time(true, 0, unit)]);
            }
            values.extend([time(false, 0, 0)]);
            if fsp > 0 {
                values.extend([time(false, 0, unit), time(false, 0, 9 * unit)]);
            }
            values.extend([time(false, 1, 0), time(false, 838, 0)]);
            check_ascending(&ColumnType::Time { fsp }, &values);
        }
        check_ascending(
            &ColumnType::Year,
            &[Value::Year(0), Value::Year(1901), Value::Year(2155)],
        );
        check_ascending(
            &ColumnType::Bit { width: 12 },
            &[Value::Bit(0), Value::Bit(0xFF), Value::Bit(0x100)],
        );
        let large = ColumnType::Enum {
            variants: (0..300).map(|index| index.to_string()).collect(),
        };
        check_ascending(
            &large,
            &[
                Value::Enum(1),
                Value::Enum(255),
                Value::Enum(256),
                Value::Enum(300),
            ],
        );
        let binary = ColumnType::Varbinary { length: 8 };
        check_ascending(
            &binary,
            &[
                Value::from(""),
                Value::Bytes(vec![0]),
                Value::Bytes(vec![0, 0]),
                Value::Bytes(vec![0, 1]),
                Value::Bytes(vec![1]),
            ],
        );
    }

    #[test]
    fn strings_follow_the_collation() {
        let char_ci = ColumnType::Char {
            length: 5,
            collation: Collation::Utf8mb4AiCi,
        };
        assert_eq!(
            sortable(&Value::from("abc"), &char_ci),
            sortable(&Value::from("ABC"), &char_ci)
        );
        assert_eq!(
            sortable(&Value::from("é"), &char_ci),
            sortable(&Value::from("E"), &char_ci)
        );
        let varchar_bin = ColumnType::Varchar {
            length: 5,
            collation: Collation::Utf8mb4Bin,
        };
        assert_ne!(
            sortable(&Value::from("abc"), &varchar_bin),
            sortable(&Value::from("ABC"), &varchar_bin)
        );
        check_ascending(
            &char_ci,
            &[
                Value::from(""),
                Value::from("a"),
                Value::from("ab"),
                Value::from("B"),
            ],
        );
        // NULL sorts first and differs from the empty string.
        let null = sortable(&Value::Null, &char_ci);
        let empty = sortable(&Value::from(""), &char_ci);
        assert_eq!(null, [SORTABLE_NULL]);
        assert!(null < empty);
    }

    fn table() -> TableDef {
        TableDef::new(
            "t",
            vec![
                ColumnDef::new(
                    "a",
                    ColumnType::Varchar {
                        length: 10,
                        collation: Collation::Utf8mb4AiCi,
                    },
                    true,
                ),
                ColumnDef::new("b", ColumnType::Int { unsigned: false }, true),
                ColumnDef::new("c", ColumnType::SmallInt { unsigned: true }, true),
                ColumnDef::new("d", ColumnType::Int { unsigned: false }, false),
            ],
            vec![3],
            vec![],
        )
        .unwrap()
    }

    fn attrinfo(entries: &[(ColumnId, Option<&[u8]>)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut writer = AttrInfoWriter::new(&mut bytes);
        for &(column, value) in entries {
            writer.push(column, value);
        }
        bytes
    }

    #[test]
    fn attrinfo_key_in_any_order_with_nulls_and_prefixes() {
        let table = table();
        let key = [0, 1, 2];
        let one = 1i32.to_le_bytes();
        let seven = 7u16.to_le_bytes();
        let mut expected = Vec::new();
        encode_sortable(table.column_type(0), Some(b"ab"), &mut expected);
        encode_sortable(table.column_type(1), None, &mut expected);
        encode_sortable(table.column_type(2), Some(&seven), &mut expected);
        let mut out = Vec::new();
        let given = attrinfo(&[(2, Some(&seven)), (0, Some(b"ab")), (1, None)]);
        assert_eq!(
            encode_attrinfo_key(&table, &key, &given, false, &mut out),
            Ok(3)
        );
        assert_eq!(out, expected);

        let prefix = attrinfo(&[(1, Some(&one)), (0, Some(b"ab"))]);
        let mut out = Vec::new();
        assert_eq!(
            encode_attrinfo_key(&table, &key, &prefix, true, &mut out),
            Ok(2)
        );
        assert_eq!(
            encode_attrinfo_key(&table, &key, &prefix, false, &mut out)
                .unwrap_err()
                .code,
            ErrorCode::WrongKey
        );

        let wrong_key = |entries: &[(ColumnId, Option<&[u8]>)]| {
            let mut out = Vec::new();
            let error =
                encode_attrinfo_key(&table, &key, &attrinfo(entries), true, &mut out).unwrap_err();
            assert!(out.is_empty());
            error.code
        };
        assert_eq!(wrong_key(&[]), ErrorCode::WrongKey);
        assert_eq!(wrong_key(&[(1, Some(&one))]), ErrorCode::WrongKey);
        assert_eq!(
            wrong_key(&[(0, Some(b"a")), (2, Some(&seven))]),
            ErrorCode::WrongKey
        );
        assert_eq!(
            wrong_key(&[(0, Some(b"a")), (0, Some(b"b"))]),
            ErrorCode::WrongKey
        );
        assert_eq!(
            wrong_key(&[(0, Some(b"a")), (3, Some(&one))]),
            ErrorCode::WrongKey
        );
        assert_eq!(
            wrong_key(&[(0, Some(b"a")), (9, Some(&one))]),
            ErrorCode::WrongKey
        );
        assert_eq!(
            wrong_key(&[(0, Some(b"a")), (1, Some(&seven))]),
            ErrorCode::WrongValue
        );
        assert_eq!(wrong_key(&[(0, Some(&[b'x'; 41]))]), ErrorCode::DataTooLong);
        assert_eq!(
            wrong_key(&[(0, Some(b"a")), (1, Some(&one[..3]))]),
            ErrorCode::WrongValue
        );
        let mut truncated = attrinfo(&[(0, Some(b"abc"))]);
        truncated.pop();
        assert_eq!(
            wrong_key_bytes(&table, &key, &truncated),
            ErrorCode::WrongValue
        );
    }

    fn wrong_key_bytes(table: &TableDef, key: &[ColumnId], bytes: &[u8]) -> ErrorCode {
        encode_attrinfo_key(table, key, bytes, true, &mut Vec::new())
            .unwrap_err()
            .code
    }

    #[test]
    fn row_key_matches_attrinfo_key() {
        let table = table();
        let mut row_attrinfo = Vec::new();
        let mut writer = AttrInfoWriter::new(&mut row_attrinfo);
        writer.push(0, Some(b"Hello"));
        writer.push(1, None);
        writer.push(2, Some(&3u16.to_le_bytes()));
        writer.push(3, Some(&9i32.to_le_bytes()));
        let mut fixed = vec![0; table.layout.fixed_bytes as usize];
        let mut var = Vec::new();
        crate::row::RowBuilder::default()
            .build(&table, None, &row_attrinfo, &mut fixed, &mut var)
            .unwrap();
        let row = RowView {
            fixed: &fixed,
            var: &var,
        };
        let mut from_row = Vec::new();
        encode_row_key(&table, &[0, 1, 2], row, &mut from_row);
        let mut from_attrinfo = Vec::new();
        let key = attrinfo(&[
            (1, None),
            (2, Some(&3u16.to_le_bytes())),
            (0, Some(b"HELLO")),
        ]);
        encode_attrinfo_key(&table, &[0, 1, 2], &key, false, &mut from_attrinfo).unwrap();
        assert_eq!(from_row, from_attrinfo);
        assert_eq!(key_hash(&from_row), key_hash(&from_attrinfo));
    }
}
