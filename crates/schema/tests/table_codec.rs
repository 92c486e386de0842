//! Tests of the table definition codec: every column type and collation
//! round-trips, the bytes of a small table are pinned, random valid tables
//! round-trip with and without a distribution key, invalid distribution
//! keys are refused, and truncated, extended or corrupted encodings give
//! errors (or another valid table) without ever panicking.

use proptest::prelude::*;
use proptest::sample::Index;
use schema::distribution::{PARTITIONS_MAX, PartitionBalance, TableOptions};
use schema::table_codec::{
    SQL_METADATA_BYTES_MAX, TABLE_CODEC_VERSION, decode_table, encode_table,
};
use schema::{Collation, ColumnDef, ColumnId, ColumnType, ErrorCode, IndexDef, TableDef};

const COLLATIONS: [Collation; 5] = [
    Collation::Utf8mb4Bin,
    Collation::Utf8mb4AiCi,
    Collation::Latin1Bin,
    Collation::Latin1Ci,
    Collation::Binary,
];

fn encode(def: &TableDef, options: &TableOptions) -> Vec<u8> {
    let mut out = Vec::new();
    encode_table(def, options, &mut out);
    out
}

/// A table with every column type, every collation on every string type,
/// and unique and non-unique multi-column indexes.
fn every_type_table() -> TableDef {
    let mut columns = Vec::new();
    for unsigned in [false, true] {
        for column_type in [
            ColumnType::TinyInt { unsigned },
            ColumnType::SmallInt { unsigned },
            ColumnType::MediumInt { unsigned },
            ColumnType::Int { unsigned },
            ColumnType::BigInt { unsigned },
        ] {
            columns.push(column_type);
        }
    }
    columns.extend([
        ColumnType::Decimal {
            precision: 65,
            scale: 30,
        },
        ColumnType::Decimal {
            precision: 1,
            scale: 0,
        },
        ColumnType::Float,
        ColumnType::Double,
        ColumnType::Binary { length: 16 },
        ColumnType::Varbinary { length: 300 },
        ColumnType::Date,
        ColumnType::Datetime { fsp: 6 },
        ColumnType::Timestamp { fsp: 3 },
        ColumnType::Time { fsp: 0 },
        ColumnType::Year,
        ColumnType::Bit { width: 64 },
        ColumnType::Enum {
            variants: vec!["small".into(), "médium".into(), "".into()],
        },
        ColumnType::Enum {
            variants: (0..300).map(|i| format!("v{i}")).collect(),
        },
        ColumnType::Blob { length_max: 65_535 },
    ]);
    for collation in COLLATIONS {
        columns.push(ColumnType::Char {
            length: 10,
            collation,
        });
        columns.push(ColumnType::Varchar {
            length: 255,
            collation,
        });
        columns.push(ColumnType::Text {
            length_max: 1 << 24,
            collation,
        });
    }
    let columns: Vec<ColumnDef> = columns
        .into_iter()
        .enumerate()
        .map(|(i, column_type)| ColumnDef::new(&format!("colonne_{i}_é"), column_type, i % 3 != 0))
        .collect();
    let indexes = vec![
        IndexDef {
            name: "by_name_and_date".into(),
            columns: vec![26, 16, 3],
            unique: true,
        },
        IndexDef {
            name: "by_amount".into(),
            columns: vec![10, 11],
            unique: false,
        },
        IndexDef {
            name: "索引".into(),
            columns: vec![31],
            unique: false,
        },
    ];
    TableDef::new("every_type", columns, vec![3, 0, 28], indexes).unwrap()
}

fn unusual_options() -> TableOptions {
    TableOptions {
        read_backup: false,
        partition_balance: PartitionBalance::ForRaByLdmX3,
        partitions: Some(PARTITIONS_MAX),
        fully_replicated: true,
        nologging: true,
        // The table's primary key is (3, 0, 28): a subset, in another order.
        distribution_key: vec![28, 3],
        sql_metadata: b"SQL metadata \x00\xff".to_vec(),
    }
}

#[test]
fn every_type_and_collation_round_trips() {
    let def = every_type_table();
    let options = unusual_options();
    let bytes = encode(&def, &options);
    assert_eq!(bytes[0], TABLE_CODEC_VERSION);
    let (decoded, decoded_options) = decode_table(&bytes).unwrap();
    assert_eq!(decoded, def);
    assert_eq!(decoded_options, options);
    // The encoding is canonical: decoding and encoding again gives the same bytes.
    assert_eq!(encode(&decoded, &decoded_options), bytes);
    // Every collation appears, and with default options too.
    for collation in COLLATIONS {
        assert!(
            def.columns
                .iter()
                .any(|c| c.column_type.collation() == collation)
        );
    }
    let (_, default_options) = decode_table(&encode(&def, &TableOptions::default())).unwrap();
    assert_eq!(default_options, TableOptions::default());
}

#[test]
fn every_balance_round_trips() {
    let def = small_table();
    for balance in PartitionBalance::ALL {
        let options = TableOptions {
            partition_balance: balance,
            ..TableOptions::default()
        };
        assert_eq!(decode_table(&encode(&def, &options)).unwrap().1, options);
    }
}

#[test]
fn collation_wire_ids_are_mysql_collation_ids() {
    let expected = [
        (Collation::Utf8mb4Bin, 46),
        (Collation::Utf8mb4AiCi, 255),
        (Collation::Latin1Bin, 47),
        (Collation::Latin1Ci, 8),
        (Collation::Binary, 63),
    ];
    for (collation, id) in expected {
        assert_eq!(collation.wire_id(), id, "{}", collation.name());
        assert_eq!(Collation::from_wire_id(id), Some(collation));
    }
    assert_eq!(Collation::from_wire_id(0), None);
    assert_eq!(Collation::from_wire_id(33), None);
}

fn small_table() -> TableDef {
    TableDef::new(
        "t",
        vec![ColumnDef::new(
            "id",
            ColumnType::Int { unsigned: false },
            false,
        )],
        vec![0],
        vec![],
    )
    .unwrap()
}

#[test]
fn version_one_definitions_decode_without_sql_metadata() {
    let mut bytes = encode(&small_table(), &TableOptions::default());
    bytes[0] = 1;
    bytes.truncate(bytes.len() - 4);
    let (def, options) = decode_table(&bytes).unwrap();
    assert_eq!(def, small_table());
    assert_eq!(options, TableOptions::default());
    // Version 2 without its length is truncated, not silently version 1.
    bytes[0] = 2;
    let error = decode_table(&bytes).unwrap_err();
    assert!(error.detail.contains("truncated"), "{error}");
    // Metadata longer than the limit is refused.
    let mut long = encode(&small_table(), &TableOptions::default());
    let at = long.len() - 4;
    long[at..].copy_from_slice(&(SQL_METADATA_BYTES_MAX as u32 + 1).to_le_bytes());
    let error = decode_table(&long).unwrap_err();
    assert!(error.detail.contains("SQL metadata"), "{error}");
}

#[test]
fn golden_encoding_of_a_small_table() {
    // The format is a contract with other nodes and with the disk: these
    // bytes must not change without a new TABLE_CODEC_VERSION.
    #[rustfmt::skip]
    let expected: &[u8] = &[
        2,                 // version
        1,                 // key hash function id
        1, 0, b't',        // table name
        1, 0,              // one column
        2, 0, b'i', b'd',  // column name
        0,                 // NOT NULL
        0x04, 0,           // INT, signed
        1, 0, 0, 0,        // primary key: one column, #0
        0, 0,              // no indexes
        0b001,             // READ_BACKUP
        0,                 // FOR_RP_BY_LDM
        0, 0, 0, 0,        // no explicit PARTITIONS
        0, 0,              // distribution key: the primary key
        0, 0, 0, 0,        // no SQL metadata
    ];
    assert_eq!(encode(&small_table(), &TableOptions::default()), expected);

    #[rustfmt::skip]
    let expected_with_index: &[u8] = &[
        2, 1,
        2, 0, b'i', b'x',
        2, 0,
        1, 0, b'a', 0, 0x0A, 5, 0, 8,        // a VARCHAR(5) latin1_swedish_ci NOT NULL
        1, 0, b'b', 1, 0x15, 0, 1, 0, 0, 63, // b TEXT(256) binary, nullable
        1, 0, 0, 0,                          // PRIMARY KEY (a)
        1, 0,
        1, 0, b'k', 1, 1, 0, 0, 0,           // UNIQUE k (a)
        0b110, 6, 7, 0, 0, 0,
        1, 0, 0, 0,                          // PARTITION BY KEY (a)
        0, 0, 0, 0,                          // no SQL metadata
    ];
    let def = TableDef::new(
        "ix",
        vec![
            ColumnDef::new(
                "a",
                ColumnType::Varchar {
                    length: 5,
                    collation: Collation::Latin1Ci,
                },
                false,
            ),
            ColumnDef::new(
                "b",
                ColumnType::Text {
                    length_max: 256,
                    collation: Collation::Binary,
                },
                true,
            ),
        ],
        vec![0],
        vec![IndexDef {
            name: "k".into(),
            columns: vec![0],
            unique: true,
        }],
    )
    .unwrap();
    let options = TableOptions {
        read_backup: false,
        partition_balance: PartitionBalance::ForRaByLdmX4,
        partitions: Some(7),
        fully_replicated: true,
        nologging: true,
        distribution_key: vec![0],
        sql_metadata: Vec::new(),
    };
    assert_eq!(encode(&def, &options), expected_with_index);
    assert_eq!(decode_table(expected_with_index).unwrap(), (def, options));

    // The index on (b, a) instead: TEXT cannot be in a key, and decoding
    // refuses it exactly as CREATE TABLE would.
    let mut blob_in_key = expected_with_index.to_vec();
    let index_columns = blob_in_key.len() - 4 - 4 - 6 - 4;
    blob_in_key.splice(index_columns..index_columns + 4, [2, 0, 1, 0, 0, 0]);
    assert_eq!(
        decode_table(&blob_in_key).unwrap_err().code,
        ErrorCode::BlobInKey
    );
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = encode(&every_type_table(), &unusual_options());
    for length in 0..bytes.len() {
        let error = decode_table(&bytes[..length]).unwrap_err();
        assert_eq!(
            error.code,
            ErrorCode::CorruptTableDefinition,
            "length {length}"
        );
        assert!(error.detail.contains("truncated"), "{error}");
    }
}

#[test]
fn trailing_bytes_are_an_error() {
    let mut bytes = encode(&small_table(), &TableOptions::default());
    bytes.push(0);
    let error = decode_table(&bytes).unwrap_err();
    assert_eq!(error.code, ErrorCode::CorruptTableDefinition);
    assert!(error.detail.contains("1 trailing byte"), "{error}");
}

/// The small table's encoding with byte `position` replaced by `value`.
fn with_byte(position: usize, value: u8) -> Vec<u8> {
    let mut bytes = encode(&small_table(), &TableOptions::default());
    bytes[position] = value;
    bytes
}

#[test]
fn corrupt_fields_give_errors_saying_what_is_wrong() {
    let cases: [(Vec<u8>, &str); 8] = [
        (with_byte(0, 3), "format version 3"),
        (with_byte(1, 9), "key hash function 9"),
        (
            with_byte(12, 0x7F),
            "unknown column type tag 0x7f at byte 12",
        ),
        (with_byte(13, 2), "neither 0 nor 1"),
        (with_byte(11, 0x80), "unknown bits 0x80 in column flags"),
        (with_byte(4, 0xFF), "not valid UTF-8"),
        (with_byte(21, 7), "unknown partition balance 7"),
        (with_byte(20, 0x08), "unknown bits 0x08 in option flags"),
    ];
    for (bytes, needle) in cases {
        let error = decode_table(&bytes).unwrap_err();
        assert_eq!(error.code, ErrorCode::CorruptTableDefinition, "{needle}");
        assert!(error.detail.contains(needle), "{error} should say {needle}");
    }
    // An unknown collation id inside a VARCHAR.
    let def = TableDef::new(
        "v",
        vec![ColumnDef::new(
            "s",
            ColumnType::Varchar {
                length: 4,
                collation: Collation::Utf8mb4Bin,
            },
            false,
        )],
        vec![0],
        vec![],
    )
    .unwrap();
    let mut bytes = encode(&def, &TableOptions::default());
    let collation_at = bytes.iter().position(|&b| b == 46).unwrap();
    bytes[collation_at] = 200;
    let error = decode_table(&bytes).unwrap_err();
    assert!(error.detail.contains("unknown collation id 200"), "{error}");
}

#[test]
fn invalid_definitions_are_refused_with_their_own_errors() {
    // Primary key naming column #5 of a one-column table.
    let error = decode_table(&with_byte(16, 5)).unwrap_err();
    assert_eq!(error.code, ErrorCode::NoSuchColumn);
    // PARTITIONS above the limit.
    let mut bytes = encode(&small_table(), &TableOptions::default());
    let partitions_at = bytes.len() - 4 - 2 - 4;
    bytes[partitions_at..partitions_at + 4].copy_from_slice(&(PARTITIONS_MAX + 1).to_le_bytes());
    assert_eq!(
        decode_table(&bytes).unwrap_err().code,
        ErrorCode::TooManyPartitions
    );
    // No columns at all.
    let empty = [
        2, 1, 1, 0, b't', 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(
        decode_table(&empty).unwrap_err().code,
        ErrorCode::WrongColumnSpec
    );
    assert!(decode_table(&[]).is_err());
}

/// Orders with primary key (region, customer, order_number) and an
/// ordinary column `amount`.
fn orders_table() -> TableDef {
    TableDef::new(
        "orders",
        vec![
            ColumnDef::new(
                "region",
                ColumnType::Varchar {
                    length: 10,
                    collation: Collation::Utf8mb4AiCi,
                },
                false,
            ),
            ColumnDef::new("customer", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("order_number", ColumnType::BigInt { unsigned: true }, false),
            ColumnDef::new("amount", ColumnType::Int { unsigned: false }, true),
        ],
        vec![0, 1, 2],
        vec![],
    )
    .unwrap()
}

fn with_distribution_key(distribution_key: Vec<ColumnId>) -> TableOptions {
    TableOptions {
        distribution_key,
        ..TableOptions::default()
    }
}

#[test]
fn distribution_keys_round_trip() {
    let def = orders_table();
    for key in [vec![], vec![1], vec![1, 0], vec![2, 0, 1], vec![0, 1, 2]] {
        let options = with_distribution_key(key.clone());
        let bytes = encode(&def, &options);
        let count_at = bytes.len() - 4 - 2 * key.len() - 2;
        assert_eq!(
            bytes[count_at..count_at + 2],
            (key.len() as u16).to_le_bytes()
        );
        let (decoded, decoded_options) = decode_table(&bytes).unwrap();
        assert_eq!(decoded, def);
        assert_eq!(decoded_options.distribution_key, key);
        assert_eq!(decoded_options, options);
        assert_eq!(encode(&decoded, &decoded_options), bytes);
    }
    #[rustfmt::skip]
    let expected_tail: &[u8] = &[
        0b001, 0, 0, 0, 0, 0, // default options
        2, 0, 1, 0, 0, 0,     // PARTITION BY KEY (customer, region)
        0, 0, 0, 0,           // no SQL metadata
    ];
    assert!(encode(&def, &with_distribution_key(vec![1, 0])).ends_with(expected_tail));
}

#[test]
fn invalid_distribution_keys_are_refused_on_decode() {
    let def = orders_table();
    let cases = [
        (
            vec![1, 3],
            ErrorCode::DistributionKeyOutsidePrimaryKey,
            "'amount'",
        ),
        (vec![4], ErrorCode::NoSuchDistributionKeyColumn, "#4"),
        (
            vec![0, 0],
            ErrorCode::DuplicateDistributionKeyColumn,
            "'region' twice",
        ),
    ];
    for (key, code, needle) in cases {
        // The encoder writes what it is given; the decoder is the gate.
        let bytes = encode(&def, &with_distribution_key(key.clone()));
        let error = decode_table(&bytes).unwrap_err();
        assert_eq!(error.code, code, "{key:?}");
        assert!(error.detail.contains(needle), "{error} should say {needle}");
    }
    // A count larger than the bytes that follow is truncation.
    let mut bytes = encode(&def, &with_distribution_key(vec![1]));
    let count_at = bytes.len() - 4 - 4;
    bytes[count_at] = 2;
    let error = decode_table(&bytes).unwrap_err();
    assert_eq!(error.code, ErrorCode::CorruptTableDefinition);
    assert!(error.detail.contains("truncated"), "{error}");
}

/// Decodes `bytes`, which must not panic; a successful decode must be a
/// table that encodes canonically.
fn decode_must_not_panic(bytes: &[u8]) {
    if let Ok((def, options)) = decode_table(bytes) {
        let again = encode(&def, &options);
        assert_eq!(decode_table(&again).unwrap(), (def, options));
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    let bytes = encode(&every_type_table(), &unusual_options());
    for position in 0..bytes.len() {
        for mask in [0x01, 0x02, 0x10, 0x80, 0xFF] {
            let mut corrupted = bytes.clone();
            corrupted[position] ^= mask;
            decode_must_not_panic(&corrupted);
        }
    }
}

fn collation() -> impl Strategy<Value = Collation> {
    (0..COLLATIONS.len()).prop_map(|i| COLLATIONS[i])
}

fn column_type() -> impl Strategy<Value = ColumnType> {
    prop_oneof![
        any::<bool>().prop_map(|unsigned| ColumnType::TinyInt { unsigned }),
        any::<bool>().prop_map(|unsigned| ColumnType::SmallInt { unsigned }),
        any::<bool>().prop_map(|unsigned| ColumnType::MediumInt { unsigned }),
        any::<bool>().prop_map(|unsigned| ColumnType::Int { unsigned }),
        any::<bool>().prop_map(|unsigned| ColumnType::BigInt { unsigned }),
        (1u8..=65)
            .prop_flat_map(|precision| (Just(precision), 0..=precision.min(30)))
            .prop_map(|(precision, scale)| ColumnType::Decimal { precision, scale }),
        Just(ColumnType::Float),
        Just(ColumnType::Double),
        (0u16..=40, collation())
            .prop_map(|(length, collation)| ColumnType::Char { length, collation }),
        (0u16..=200, collation())
            .prop_map(|(length, collation)| ColumnType::Varchar { length, collation }),
        (0u16..=255).prop_map(|length| ColumnType::Binary { length }),
        (0u16..=1000).prop_map(|length| ColumnType::Varbinary { length }),
        Just(ColumnType::Date),
        (0u8..=6).prop_map(|fsp| ColumnType::Datetime { fsp }),
        (0u8..=6).prop_map(|fsp| ColumnType::Timestamp { fsp }),
        (0u8..=6).prop_map(|fsp| ColumnType::Time { fsp }),
        Just(ColumnType::Year),
        (1u8..=64).prop_map(|width| ColumnType::Bit { width }),
        proptest::collection::vec("[a-zé ]{0,6}", 1..6)
            .prop_map(|variants| ColumnType::Enum { variants }),
        any::<u32>().prop_map(|length_max| ColumnType::Blob { length_max }),
        (any::<u32>(), collation()).prop_map(|(length_max, collation)| ColumnType::Text {
            length_max,
            collation
        }),
    ]
}

/// Column ids picked by `picks` among the non-BLOB columns, without repeats.
fn key_columns(columns: &[ColumnDef], picks: &[Index]) -> Option<Vec<ColumnId>> {
    let candidates: Vec<ColumnId> = (0..columns.len() as ColumnId)
        .filter(|&id| !columns[usize::from(id)].column_type.is_blob())
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let mut key = Vec::new();
    for pick in picks {
        let id = candidates[pick.index(candidates.len())];
        if !key.contains(&id) {
            key.push(id);
        }
    }
    Some(key)
}

fn table() -> impl Strategy<Value = TableDef> {
    (
        "[a-zA-Zé]{0,8}",
        proptest::collection::vec(("[a-zA-Zé]{0,6}", column_type(), any::<bool>()), 1..12),
        proptest::collection::vec(any::<Index>(), 1..4),
        proptest::collection::vec(
            (
                "[a-z]{0,6}",
                any::<bool>(),
                proptest::collection::vec(any::<Index>(), 1..4),
            ),
            0..4,
        ),
    )
        .prop_filter_map("a valid table", |(name, columns, primary_key, indexes)| {
            // "prefix_i" is unique: prefixes hold no '_' or digits.
            let columns: Vec<ColumnDef> = columns
                .into_iter()
                .enumerate()
                .map(|(i, (prefix, column_type, nullable))| {
                    ColumnDef::new(&format!("{prefix}_{i}"), column_type, nullable)
                })
                .collect();
            let primary_key = key_columns(&columns, &primary_key)?;
            let indexes = indexes
                .into_iter()
                .map(|(name, unique, picks)| {
                    Some(IndexDef {
                        name,
                        unique,
                        columns: key_columns(&columns, &picks)?,
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            TableDef::new(&name, columns, primary_key, indexes).ok()
        })
}

fn options() -> impl Strategy<Value = TableOptions> {
    (
        0..PartitionBalance::ALL.len(),
        proptest::option::of(1..=PARTITIONS_MAX),
        any::<[bool; 3]>(),
    )
        .prop_map(
            |(balance, partitions, [read_backup, fully_replicated, nologging])| TableOptions {
                read_backup,
                partition_balance: PartitionBalance::ALL[balance],
                partitions,
                fully_replicated,
                nologging,
                distribution_key: Vec::new(),
                sql_metadata: Vec::new(),
            },
        )
}

/// `options` with a distribution key of the primary-key columns `picks`
/// chooses, in the order picked (none: the primary key).
fn with_picked_distribution_key(
    def: &TableDef,
    mut options: TableOptions,
    picks: &[Index],
) -> TableOptions {
    for pick in picks {
        let column = def.primary_key[pick.index(def.primary_key.len())];
        if !options.distribution_key.contains(&column) {
            options.distribution_key.push(column);
        }
    }
    options
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn random_tables_round_trip(
        def in table(),
        options in options(),
        picks in proptest::collection::vec(any::<Index>(), 0..4),
    ) {
        let options = with_picked_distribution_key(&def, options, &picks);
        let bytes = encode(&def, &options);
        let (decoded, decoded_options) = decode_table(&bytes).unwrap();
        prop_assert_eq!(&decoded, &def);
        prop_assert_eq!(&decoded_options, &options);
        prop_assert_eq!(encode(&decoded, &decoded_options), bytes);
    }

    #[test]
    fn random_corruption_never_panics(
        def in table(),
        options in options(),
        picks in proptest::collection::vec(any::<Index>(), 0..4),
        changes in proptest::collection::vec((any::<Index>(), any::<u8>()), 1..4),
        cut in any::<Index>(),
    ) {
        let options = with_picked_distribution_key(&def, options, &picks);
        let mut bytes = encode(&def, &options);
        for (position, value) in changes {
            let at = position.index(bytes.len());
            bytes[at] = value;
        }
        decode_must_not_panic(&bytes);
        let length = cut.index(bytes.len());
        decode_must_not_panic(&bytes[..length]);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        decode_must_not_panic(&bytes);
        let mut prefixed = vec![TABLE_CODEC_VERSION, 1];
        prefixed.extend_from_slice(&bytes);
        decode_must_not_panic(&prefixed);
    }
}
