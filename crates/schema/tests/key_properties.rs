//! Tests of the key encodings as indexes and partitioning use them:
//! multi-column sortable keys order column by column, keys equal under a
//! case-insensitive collation encode (and hash) identically, NULL differs
//! from the empty string, AttrInfo keys match row keys, and the golden key
//! hashes that decide where rows live never change.

use proptest::prelude::*;
use schema::key::{
    KEY_HASH_FUNCTION_ID, compare_values, encode_attrinfo_key, encode_row_key, encode_sortable,
    key_hash,
};
use schema::row::RowBuilder;
use schema::{
    AttrInfoWriter, Collation, ColumnDef, ColumnId, ColumnType, ErrorCode, RowView, TableDef, Value,
};
use std::cmp::Ordering;

fn stored(column_type: &ColumnType, value: &Value) -> Option<Vec<u8>> {
    if matches!(value, Value::Null) {
        return None;
    }
    let mut bytes = Vec::new();
    value.encode(column_type, &mut bytes).unwrap();
    Some(bytes)
}

/// The sortable encoding of a key of `(type, value)` columns.
fn key(columns: &[(&ColumnType, &Value)]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(column_type, value) in columns {
        encode_sortable(column_type, stored(column_type, value).as_deref(), &mut out);
    }
    out
}

/// SQL's order of two possibly NULL values in an index: NULL first.
fn index_order(column_type: &ColumnType, a: &Value, b: &Value) -> Ordering {
    match (stored(column_type, a), stored(column_type, b)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => compare_values(column_type, &a, &b),
    }
}

fn varchar(collation: Collation) -> ColumnType {
    ColumnType::Varchar {
        length: 8,
        collation,
    }
}

fn string_or_null() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        8 => "[aAbB é\u{0}]{0,4}".prop_map(|text| Value::Bytes(text.into_bytes())),
    ]
}

const INT: ColumnType = ColumnType::Int { unsigned: false };

#[test]
fn golden_key_hashes_never_change() {
    // Hash function id 1 is xxh3_64 of the sortable encoding. These values
    // decide which partition rows live in: if this test fails, the encoding
    // or the hash changed, and existing data would be misplaced.
    assert_eq!(KEY_HASH_FUNCTION_ID, 1);
    let int_one = key(&[(&INT, &Value::Int(1))]);
    assert_eq!(int_one, [0x01, 0x80, 0x00, 0x00, 0x01]);
    assert_eq!(key_hash(&int_one), 0xF925_2378_3228_734B);
    let int_minus_one = key(&[(&INT, &Value::Int(-1))]);
    assert_eq!(int_minus_one, [0x01, 0x7F, 0xFF, 0xFF, 0xFF]);
    assert_eq!(key_hash(&int_minus_one), 0x2EE4_8029_A7DE_79E2);
    let ai_ci = ColumnType::Varchar {
        length: 10,
        collation: Collation::Utf8mb4AiCi,
    };
    let abc = key(&[(&ai_ci, &Value::from("abc"))]);
    assert_eq!(abc, [0x01, 0x50, 0x52, 0x54, 0x00]);
    assert_eq!(key_hash(&abc), 0xB2C5_9246_BC6D_BF91);
}

#[test]
fn case_insensitive_keys_are_identical() {
    for column_type in [
        varchar(Collation::Utf8mb4AiCi),
        varchar(Collation::Latin1Ci),
        ColumnType::Char {
            length: 5,
            collation: Collation::Utf8mb4AiCi,
        },
        ColumnType::Char {
            length: 5,
            collation: Collation::Latin1Ci,
        },
        ColumnType::Text {
            length_max: 50,
            collation: Collation::Latin1Ci,
        },
    ] {
        let lower = key(&[(&column_type, &Value::from("abc"))]);
        let upper = key(&[(&column_type, &Value::from("ABC"))]);
        assert_eq!(lower, upper, "{column_type:?}");
        assert_eq!(key_hash(&lower), key_hash(&upper));
    }
    let ai_ci = varchar(Collation::Utf8mb4AiCi);
    let accented = key(&[(&ai_ci, &Value::from("é"))]);
    let plain = key(&[(&ai_ci, &Value::from("E"))]);
    assert_eq!(accented, plain);
    assert_eq!(key_hash(&accented), key_hash(&plain));
    // Under the binary collations they differ.
    for column_type in [
        varchar(Collation::Utf8mb4Bin),
        varchar(Collation::Latin1Bin),
    ] {
        let lower = key(&[(&column_type, &Value::from("abc"))]);
        let upper = key(&[(&column_type, &Value::from("ABC"))]);
        assert_ne!(lower, upper);
        assert_ne!(key_hash(&lower), key_hash(&upper));
    }
}

#[test]
fn char_keys_ignore_pad_but_varchar_utf8mb4_keys_do_not() {
    let char_type = ColumnType::Char {
        length: 5,
        collation: Collation::Utf8mb4AiCi,
    };
    assert_eq!(
        key(&[(&char_type, &Value::from("ab"))]),
        key(&[(&char_type, &Value::from("ab  "))])
    );
    let varchar_type = varchar(Collation::Utf8mb4AiCi);
    assert_ne!(
        key(&[(&varchar_type, &Value::from("ab"))]),
        key(&[(&varchar_type, &Value::from("ab  "))])
    );
    let latin = varchar(Collation::Latin1Bin);
    assert_eq!(
        key(&[(&latin, &Value::from("ab"))]),
        key(&[(&latin, &Value::from("ab  "))])
    );
}

#[test]
fn null_and_empty_string_are_different_keys_null_first() {
    for collation in [
        Collation::Utf8mb4Bin,
        Collation::Utf8mb4AiCi,
        Collation::Latin1Bin,
        Collation::Latin1Ci,
        Collation::Binary,
    ] {
        let column_type = varchar(collation);
        let null = key(&[(&column_type, &Value::Null)]);
        let empty = key(&[(&column_type, &Value::from(""))]);
        assert_ne!(null, empty);
        assert!(null < empty, "{collation:?}");
        assert_ne!(key_hash(&null), key_hash(&empty));
        // And NULL sorts before the lowest value even when more columns follow.
        let null_then_high = key(&[
            (&column_type, &Value::Null),
            (&INT, &Value::Int(i64::from(i32::MAX))),
        ]);
        let empty_then_low = key(&[
            (&column_type, &Value::from("")),
            (&INT, &Value::Int(i64::from(i32::MIN))),
        ]);
        assert!(null_then_high < empty_then_low);
    }
    let binary = ColumnType::Varbinary { length: 4 };
    assert!(key(&[(&binary, &Value::Null)]) < key(&[(&binary, &Value::Bytes(vec![]))]));
    assert!(key(&[(&binary, &Value::Bytes(vec![]))]) < key(&[(&binary, &Value::Bytes(vec![0]))]));
}

#[test]
fn prefix_strings_order_column_by_column() {
    for collation in [
        Collation::Utf8mb4Bin,
        Collation::Utf8mb4AiCi,
        Collation::Latin1Bin,
        Collation::Latin1Ci,
        Collation::Binary,
    ] {
        let column_type = varchar(collation);
        // ('a', 9) < ('ab', 1): the first column decides although 'a' is a prefix of 'ab'.
        let short_high = key(&[(&column_type, &Value::from("a")), (&INT, &Value::Int(9))]);
        let long_low = key(&[(&column_type, &Value::from("ab")), (&INT, &Value::Int(1))]);
        assert!(short_high < long_low, "{collation:?}");
        // ('a', 1) < ('a', 2): equal first columns, the second decides.
        let first = key(&[(&column_type, &Value::from("a")), (&INT, &Value::Int(1))]);
        let second = key(&[(&column_type, &Value::from("a")), (&INT, &Value::Int(2))]);
        assert!(first < second, "{collation:?}");
        // "a\0" is a longer string than "a"; it sorts after it, except under
        // PAD SPACE, where "a" compares as "a " and 0x00 weighs less than a space.
        let zero = key(&[
            (&column_type, &Value::Bytes(b"a\0".to_vec())),
            (&INT, &Value::Int(-5)),
        ]);
        let plain = key(&[(&column_type, &Value::from("a")), (&INT, &Value::Int(5))]);
        let expected = if collation.pad_space() {
            Ordering::Greater
        } else {
            Ordering::Less
        };
        assert_eq!(plain.cmp(&zero), expected, "{collation:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn multi_column_keys_order_column_by_column(
        collation in proptest::sample::select(vec![
            Collation::Utf8mb4Bin, Collation::Utf8mb4AiCi, Collation::Latin1Bin, Collation::Latin1Ci, Collation::Binary,
        ]),
        a in (string_or_null(), prop_oneof![Just(Value::Null), any::<i32>().prop_map(|i| Value::Int(i.into()))], string_or_null()),
        b in (string_or_null(), prop_oneof![Just(Value::Null), any::<i32>().prop_map(|i| Value::Int(i.into()))], string_or_null()),
    ) {
        let text = varchar(collation);
        let char_type = ColumnType::Char { length: 8, collation };
        let a_key = key(&[(&text, &a.0), (&INT, &a.1), (&char_type, &a.2)]);
        let b_key = key(&[(&text, &b.0), (&INT, &b.1), (&char_type, &b.2)]);
        let expected = index_order(&text, &a.0, &b.0)
            .then_with(|| index_order(&INT, &a.1, &b.1))
            .then_with(|| index_order(&char_type, &a.2, &b.2));
        prop_assert_eq!(a_key.cmp(&b_key), expected, "{:?}: {:?} vs {:?}", collation, a, b);
        if expected == Ordering::Equal {
            prop_assert_eq!(key_hash(&a_key), key_hash(&b_key));
        }
    }

    #[test]
    fn ints_decimals_and_doubles_sort_naturally(a in any::<i32>(), b in any::<i32>(), a_double in -1e12f64..1e12, b_double in -1e12f64..1e12) {
        let sortable = |column_type: &ColumnType, value: &Value| key(&[(column_type, value)]);
        let check = |column_type: &ColumnType, a: &Value, b: &Value, natural: Ordering| -> Result<(), TestCaseError> {
            let (a_stored, b_stored) = (stored(column_type, a).unwrap(), stored(column_type, b).unwrap());
            prop_assert_eq!(compare_values(column_type, &a_stored, &b_stored), natural, "{:?} {:?}", a, b);
            prop_assert_eq!(sortable(column_type, a).cmp(&sortable(column_type, b)), natural, "{:?} {:?}", a, b);
            Ok(())
        };
        check(&INT, &Value::Int(a.into()), &Value::Int(b.into()), a.cmp(&b))?;
        check(&ColumnType::BigInt { unsigned: false }, &Value::Int(a.into()), &Value::Int(b.into()), a.cmp(&b))?;
        // A decimal with two fraction digits: the i32 counts hundredths.
        let decimal = ColumnType::Decimal { precision: 12, scale: 2 };
        let text = |hundredths: i32| {
            let sign = if hundredths < 0 { "-" } else { "" };
            let magnitude = hundredths.unsigned_abs();
            Value::Decimal(format!("{sign}{}.{:02}", magnitude / 100, magnitude % 100))
        };
        check(&decimal, &text(a), &text(b), a.cmp(&b))?;
        check(&ColumnType::Double, &Value::Double(a_double), &Value::Double(b_double), a_double.partial_cmp(&b_double).unwrap())?;
        check(&ColumnType::Double, &Value::Double(a_double.trunc()), &Value::Double(-a_double.trunc()), a_double.trunc().partial_cmp(&-a_double.trunc()).unwrap())?;
    }
}

fn table() -> TableDef {
    TableDef::new(
        "people",
        vec![
            ColumnDef::new("id", ColumnType::BigInt { unsigned: true }, false),
            ColumnDef::new("name", varchar(Collation::Utf8mb4AiCi), false),
            ColumnDef::new(
                "city",
                ColumnType::Char {
                    length: 6,
                    collation: Collation::Latin1Ci,
                },
                true,
            ),
            ColumnDef::new("born", ColumnType::Date, true),
        ],
        vec![1, 0],
        vec![],
    )
    .unwrap()
}

#[test]
fn attrinfo_keys_match_row_keys_under_the_collation() {
    let table = table();
    let born = Value::Date {
        year: 1990,
        month: 5,
        day: 17,
    };
    let mut row = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut row);
    for (column, value) in [
        (0, Value::UInt(42)),
        (1, Value::from("Zoë")),
        (2, Value::Bytes(b"Malm\xF6".to_vec())),
        (3, born.clone()),
    ] {
        let column_type = table.column_type(column);
        let bytes = stored(column_type, &value).unwrap();
        writer.push(column, Some(&bytes));
    }
    let mut fixed = vec![0; table.layout.fixed_bytes as usize];
    let mut var = Vec::new();
    RowBuilder::default()
        .build(&table, None, &row, &mut fixed, &mut var)
        .unwrap();
    let row = RowView {
        fixed: &fixed,
        var: &var,
    };
    let mut row_key = Vec::new();
    encode_row_key(&table, &table.primary_key, row, &mut row_key);

    // The same key given in the other order and another case and accent.
    let mut lookup = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut lookup);
    writer.push(0, Some(&42u64.to_le_bytes()));
    writer.push(1, Some("ZOE".as_bytes()));
    let mut lookup_key = Vec::new();
    assert_eq!(
        encode_attrinfo_key(&table, &table.primary_key, &lookup, false, &mut lookup_key),
        Ok(2)
    );
    assert_eq!(lookup_key, row_key);
    assert_eq!(key_hash(&lookup_key), key_hash(&row_key));

    // An index over (city, born): a prefix finds the range start of the full
    // key; in latin1_swedish_ci, 'ö' (0xF6) and 'Ö' (0xD6) weigh the same.
    let index: [ColumnId; 2] = [2, 3];
    let mut full = Vec::new();
    encode_row_key(&table, &index, row, &mut full);
    let mut prefix = Vec::new();
    let mut city = Vec::new();
    AttrInfoWriter::new(&mut city).push(
        2,
        Some(&stored(table.column_type(2), &Value::Bytes(b"MALM\xD6".to_vec())).unwrap()),
    );
    assert_eq!(
        encode_attrinfo_key(&table, &index, &city, true, &mut prefix),
        Ok(1)
    );
    assert!(full.starts_with(&prefix));
    let error = encode_attrinfo_key(&table, &index, &city, false, &mut Vec::new()).unwrap_err();
    assert_eq!(error.code, ErrorCode::WrongKey);
}

#[test]
fn golden_primary_key_hashes_never_change() {
    // Primary-key columns are NOT NULL, so their keys carry no marker byte.
    let table = TableDef::new(
        "golden",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new(
                "name",
                ColumnType::Varchar {
                    length: 10,
                    collation: Collation::Utf8mb4AiCi,
                },
                false,
            ),
        ],
        vec![0, 1],
        vec![],
    )
    .unwrap();
    let mut attrinfo = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut attrinfo);
    writer.push(0, Some(&1i32.to_le_bytes()));
    writer.push(1, Some(b"abc"));
    let mut encoded = Vec::new();
    encode_attrinfo_key(&table, &table.primary_key, &attrinfo, false, &mut encoded).unwrap();
    assert_eq!(encoded, [0x80, 0x00, 0x00, 0x01, 0x50, 0x52, 0x54, 0x00]);
    assert_eq!(key_hash(&encoded), GOLDEN_INT_NAME_HASH);
    let mut only_int = Vec::new();
    encode_attrinfo_key(
        &table,
        &table.primary_key[..1],
        &attrinfo[..8],
        false,
        &mut only_int,
    )
    .unwrap();
    assert_eq!(only_int, [0x80, 0x00, 0x00, 0x01]);
    assert_eq!(key_hash(&only_int), GOLDEN_INT_HASH);
    // NULL for a NOT NULL key column is refused.
    let mut null_key = Vec::new();
    AttrInfoWriter::new(&mut null_key).push(0, None);
    let error = encode_attrinfo_key(
        &table,
        &table.primary_key[..1],
        &null_key,
        false,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::NullNotAllowed);
}

/// `key_hash` of `80 00 00 01 50 52 54 00` (INT 1, 'abc' under utf8mb4_0900_ai_ci, both NOT NULL).
const GOLDEN_INT_NAME_HASH: u64 = 0x37AA_7C79_4F89_C81F;
/// `key_hash` of `80 00 00 01` (INT NOT NULL 1).
const GOLDEN_INT_HASH: u64 = 0x25C7_5F1B_C399_BB66;
