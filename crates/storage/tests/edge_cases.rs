//! Edge cases through the engine: the largest row, every type's minimum,
//! maximum and NULL, empty string against NULL, case-insensitive keys in
//! unique ordered indexes, and scans with bounds, filters, order and locks.

use schema::types::{Collation, ColumnType};
use schema::{AttrInfoReader, AttrInfoWriter, ColumnDef, ErrorCode, IndexDef, TableDef, Value};
use storage::filter::FilterBuilder;
use storage::{
    Engine, EngineConfig, NO_TRANSACTION, OperationKind, OperationRequest, Outcome, ReadMode,
    ScanBound, ScanRequest,
};

fn engine() -> Engine {
    Engine::new(EngineConfig {
        data_memory_bytes: 16 << 20,
        ..Default::default()
    })
    .unwrap()
}

fn commit(engine: &mut Engine, transaction: u64) {
    engine.prepare(transaction).unwrap();
    engine.commit(transaction, 1).unwrap();
}

fn encode(def: &TableDef, values: &[(u16, Value)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut bytes);
    for (column, value) in values {
        if *value == Value::Null {
            writer.push(*column, None);
        } else {
            let mut stored = Vec::new();
            value.encode(def.column_type(*column), &mut stored).unwrap();
            writer.push(*column, Some(&stored));
        }
    }
    bytes
}

fn execute(
    engine: &mut Engine,
    transaction: u64,
    table: u32,
    kind: OperationKind,
    key: &[u8],
    values: &[u8],
    columns: &[u16],
) -> Result<Vec<u8>, ErrorCode> {
    let request = OperationRequest {
        transaction,
        token: 0,
        table,
        kind,
        key,
        values,
        columns,
    };
    let mut out = Vec::new();
    match engine.execute(0, &request, &mut out) {
        Ok(Outcome::Done) => Ok(out),
        Ok(Outcome::Waiting) => panic!("unexpected wait"),
        Err(error) => Err(error.code),
    }
}

fn decode(def: &TableDef, bytes: &[u8]) -> Vec<Value> {
    AttrInfoReader::new(bytes)
        .map(|entry| {
            let (column, value) = entry.unwrap();
            match value {
                None => Value::Null,
                Some(bytes) => Value::decode(def.column_type(column), bytes),
            }
        })
        .collect()
}

#[test]
fn largest_row_round_trips_and_a_larger_one_is_refused_with_1118() {
    let mut engine = engine();
    let def = TableDef::new(
        "wide",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("a", ColumnType::Varbinary { length: 14_990 }, true),
            ColumnDef::new("b", ColumnType::Blob { length_max: 65_535 }, true),
        ],
        vec![0],
        vec![],
    )
    .unwrap();
    engine.create_table(1, def.clone()).unwrap();
    // Fixed part: null bitmap (1) + id (4); variable part: two lengths (4).
    let room = 30_000 - 1 - 4 - 4;
    let a = vec![0xAB; 14_990];
    let b = vec![0xCD; room - 14_990];
    let key = encode(&def, &[(0, Value::Int(1))]);
    let row = encode(
        &def,
        &[
            (0, Value::Int(1)),
            (1, Value::Bytes(a.clone())),
            (2, Value::Bytes(b.clone())),
        ],
    );
    execute(&mut engine, 1, 1, OperationKind::Insert, &key, &row, &[]).unwrap();
    commit(&mut engine, 1);
    let out = execute(
        &mut engine,
        NO_TRANSACTION,
        1,
        OperationKind::Read(ReadMode::Committed),
        &key,
        &[],
        &[1, 2],
    )
    .unwrap();
    assert_eq!(
        decode(&def, &out),
        vec![Value::Bytes(a), Value::Bytes(b.clone())]
    );
    // One byte more is too large, as an insert and as an update.
    let key2 = encode(&def, &[(0, Value::Int(2))]);
    let mut longer = b.clone();
    longer.push(0);
    let too_large = encode(
        &def,
        &[
            (0, Value::Int(2)),
            (1, Value::Bytes(vec![1; 14_990])),
            (2, Value::Bytes(longer.clone())),
        ],
    );
    assert_eq!(
        execute(
            &mut engine,
            2,
            1,
            OperationKind::Insert,
            &key2,
            &too_large,
            &[]
        ),
        Err(ErrorCode::RowTooLarge)
    );
    let grow = encode(&def, &[(2, Value::Bytes(longer))]);
    assert_eq!(
        execute(&mut engine, 2, 1, OperationKind::Update, &key, &grow, &[]),
        Err(ErrorCode::RowTooLarge)
    );
    assert_eq!(ErrorCode::RowTooLarge.mysql_code(), 1118);
    engine.abort(2).unwrap();
    engine.check_invariants();
}

#[test]
fn every_type_stores_its_minimum_maximum_and_null() {
    let types = vec![
        ColumnType::TinyInt { unsigned: false },
        ColumnType::TinyInt { unsigned: true },
        ColumnType::SmallInt { unsigned: false },
        ColumnType::MediumInt { unsigned: false },
        ColumnType::MediumInt { unsigned: true },
        ColumnType::Int { unsigned: false },
        ColumnType::Int { unsigned: true },
        ColumnType::BigInt { unsigned: false },
        ColumnType::BigInt { unsigned: true },
        ColumnType::Decimal {
            precision: 65,
            scale: 30,
        },
        ColumnType::Float,
        ColumnType::Double,
        ColumnType::Char {
            length: 5,
            collation: Collation::Utf8mb4AiCi,
        },
        ColumnType::Varchar {
            length: 5,
            collation: Collation::Latin1Ci,
        },
        ColumnType::Binary { length: 3 },
        ColumnType::Varbinary { length: 3 },
        ColumnType::Date,
        ColumnType::Datetime { fsp: 6 },
        ColumnType::Timestamp { fsp: 3 },
        ColumnType::Time { fsp: 0 },
        ColumnType::Year,
        ColumnType::Bit { width: 64 },
        ColumnType::Enum {
            variants: vec!["a".into(), "b".into(), "c".into()],
        },
        ColumnType::Blob { length_max: 65_535 },
        ColumnType::Text {
            length_max: 65_535,
            collation: Collation::Utf8mb4Bin,
        },
    ];
    let minimum = vec![
        Value::Int(-128),
        Value::UInt(0),
        Value::Int(-32_768),
        Value::Int(-8_388_608),
        Value::UInt(0),
        Value::Int(i32::MIN.into()),
        Value::UInt(0),
        Value::Int(i64::MIN),
        Value::UInt(0),
        Value::Decimal(format!("-{}.{}", "9".repeat(35), "9".repeat(30))),
        Value::Float(-3.402_823_5e38),
        Value::Double(f64::MIN),
        Value::Bytes(Vec::new()),
        Value::Bytes(Vec::new()),
        Value::Bytes(vec![0, 0, 0]),
        Value::Bytes(Vec::new()),
        Value::Date {
            year: 1000,
            month: 1,
            day: 1,
        },
        Value::Datetime {
            year: 1000,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            microsecond: 0,
        },
        Value::Timestamp {
            seconds: 1,
            microsecond: 0,
        },
        Value::Time {
            negative: true,
            hours: 838,
            minutes: 59,
            seconds: 59,
            microsecond: 0,
        },
        Value::Year(1901),
        Value::Bit(0),
        Value::Enum(1),
        Value::Bytes(Vec::new()),
        Value::Bytes(Vec::new()),
    ];
    let maximum = vec![
        Value::Int(127),
        Value::UInt(255),
        Value::Int(32_767),
        Value::Int(8_388_607),
        Value::UInt(16_777_215),
        Value::Int(i32::MAX.into()),
        Value::UInt(u32::MAX.into()),
        Value::Int(i64::MAX),
        Value::UInt(u64::MAX),
        Value::Decimal(format!("{}.{}", "9".repeat(35), "9".repeat(30))),
        Value::Float(3.402_823_5e38),
        Value::Double(f64::MAX),
        Value::Bytes("ééééé".as_bytes().to_vec()),
        Value::Bytes(vec![0xFF; 5]),
        Value::Bytes(vec![0xFF; 3]),
        Value::Bytes(vec![0xFF; 3]),
        Value::Date {
            year: 9999,
            month: 12,
            day: 31,
        },
        Value::Datetime {
            year: 9999,
            month: 12,
            day: 31,
            hour: 23,
            minute: 59,
            second: 59,
            microsecond: 999_999,
        },
        Value::Timestamp {
            seconds: i32::MAX as u32,
            microsecond: 999_000,
        },
        Value::Time {
            negative: false,
            hours: 838,
            minutes: 59,
            seconds: 59,
            microsecond: 0,
        },
        Value::Year(2155),
        Value::Bit(u64::MAX),
        Value::Enum(3),
        Value::Bytes(vec![7; 1000]),
        Value::Bytes("ü".repeat(500).into_bytes()),
    ];
    let mut columns = vec![ColumnDef::new(
        "id",
        ColumnType::Int { unsigned: false },
        false,
    )];
    for (i, column_type) in types.iter().enumerate() {
        columns.push(ColumnDef::new(&format!("c{i}"), column_type.clone(), true));
    }
    let def = TableDef::new("types", columns, vec![0], vec![]).unwrap();
    let mut engine = engine();
    engine.create_table(1, def.clone()).unwrap();
    let all: Vec<u16> = (1..=types.len() as u16).collect();
    for (id, row) in [
        (1, minimum),
        (2, maximum),
        (3, vec![Value::Null; types.len()]),
    ] {
        let key = encode(&def, &[(0, Value::Int(id))]);
        let mut values = vec![(0, Value::Int(id))];
        values.extend(
            row.iter()
                .cloned()
                .enumerate()
                .map(|(i, v)| (i as u16 + 1, v)),
        );
        execute(
            &mut engine,
            1,
            1,
            OperationKind::Insert,
            &key,
            &encode(&def, &values),
            &[],
        )
        .unwrap();
        commit(&mut engine, 1);
        let out = execute(
            &mut engine,
            NO_TRANSACTION,
            1,
            OperationKind::Read(ReadMode::Committed),
            &key,
            &[],
            &all,
        )
        .unwrap();
        assert_eq!(decode(&def, &out), row, "row {id}");
    }
    // One past the range is refused before it reaches the engine.
    let mut stored = Vec::new();
    assert_eq!(
        Value::Int(128)
            .encode(&types[0], &mut stored)
            .unwrap_err()
            .code,
        ErrorCode::WrongValue
    );
    assert_eq!(
        Value::Year(2156)
            .encode(&types[20], &mut stored)
            .unwrap_err()
            .code,
        ErrorCode::WrongValue
    );
    engine.check_invariants();
}

fn names_table() -> TableDef {
    TableDef::new(
        "names",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new(
                "name",
                ColumnType::Varchar {
                    length: 10,
                    collation: Collation::Utf8mb4AiCi,
                },
                true,
            ),
        ],
        vec![0],
        vec![IndexDef {
            name: "name".into(),
            columns: vec![1],
            unique: true,
        }],
    )
    .unwrap()
}

fn insert_name(
    engine: &mut Engine,
    transaction: u64,
    id: i32,
    name: Option<&str>,
) -> Result<Vec<u8>, ErrorCode> {
    let def = names_table();
    let key = encode(&def, &[(0, Value::Int(id.into()))]);
    let name = name.map_or(Value::Null, Value::from);
    let values = encode(&def, &[(0, Value::Int(id.into())), (1, name)]);
    execute(
        engine,
        transaction,
        1,
        OperationKind::Insert,
        &key,
        &values,
        &[],
    )
}

#[test]
fn unique_index_under_a_case_insensitive_collation() {
    let mut engine = engine();
    engine.create_table(1, names_table()).unwrap();
    insert_name(&mut engine, 1, 1, Some("abc")).unwrap();
    commit(&mut engine, 1);
    assert_eq!(
        insert_name(&mut engine, 2, 2, Some("ABC")),
        Err(ErrorCode::DuplicateKey)
    );
    assert_eq!(
        insert_name(&mut engine, 2, 3, Some("Àbç")),
        Err(ErrorCode::DuplicateKey)
    );
    // Empty string and NULL are different values; NULLs never collide.
    insert_name(&mut engine, 2, 4, Some("")).unwrap();
    assert_eq!(
        insert_name(&mut engine, 2, 5, Some("")),
        Err(ErrorCode::DuplicateKey)
    );
    insert_name(&mut engine, 2, 6, None).unwrap();
    insert_name(&mut engine, 2, 7, None).unwrap();
    commit(&mut engine, 2);
    assert_eq!(engine.row_count(1), Some(4));
    // Moving a name frees it for another row in the same transaction.
    let def = names_table();
    let key = encode(&def, &[(0, Value::Int(1))]);
    execute(
        &mut engine,
        3,
        1,
        OperationKind::Update,
        &key,
        &encode(&def, &[(1, Value::from("xyz"))]),
        &[],
    )
    .unwrap();
    insert_name(&mut engine, 3, 8, Some("ABC")).unwrap_err();
    engine.abort(3).unwrap();
    engine.check_invariants();
}

fn scan_rows(engine: &mut Engine, request: &ScanRequest<'_>, batch_rows: u32) -> Vec<Vec<u8>> {
    let scan = engine.open_scan(request).unwrap();
    let mut rows = Vec::new();
    loop {
        let mut out = Vec::new();
        let batch = engine
            .scan_next(0, scan, batch_rows, 1 << 20, &mut out)
            .unwrap();
        assert!(batch.rows <= batch_rows);
        let mut at = 0;
        while at < out.len() {
            let length = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
            rows.push(out[at + 4..at + 4 + length].to_vec());
            at += 4 + length;
        }
        if batch.finished {
            break;
        }
    }
    engine.close_scan(scan).unwrap();
    rows
}

#[test]
fn range_scans_with_bounds_order_nulls_first_and_filters() {
    let mut engine = engine();
    engine.create_table(1, names_table()).unwrap();
    let names = [
        Some("delta"),
        None,
        Some("Alpha"),
        Some(""),
        Some("charlie"),
        Some("bravo"),
        Some("echo"),
    ];
    for (id, name) in names.iter().enumerate() {
        insert_name(&mut engine, 1, id as i32, *name).unwrap();
    }
    commit(&mut engine, 1);
    let def = names_table();
    let ids = |rows: Vec<Vec<u8>>| -> Vec<i64> {
        rows.iter()
            .map(|row| match &decode(&def, row)[0] {
                Value::Int(id) => *id,
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let base = ScanRequest {
        transaction: NO_TRANSACTION,
        token: 0,
        table: 1,
        index: Some(0),
        lower: ScanBound::Unbounded,
        upper: ScanBound::Unbounded,
        descending: false,
        filter: &[],
        columns: &[0],
        mode: ReadMode::Committed,
        gci: false,
    };
    // NULL first, then '' and the names in collation order (case-insensitive).
    assert_eq!(
        ids(scan_rows(&mut engine, &base, 2)),
        vec![1, 3, 2, 5, 4, 0, 6]
    );
    assert_eq!(
        ids(scan_rows(
            &mut engine,
            &ScanRequest {
                descending: true,
                ..base
            },
            3
        )),
        vec![6, 0, 4, 5, 2, 3, 1]
    );
    let b = encode(&def, &[(1, Value::from("B"))]);
    let d = encode(&def, &[(1, Value::from("DELTA"))]);
    let between = ScanRequest {
        lower: ScanBound::Inclusive(&b),
        upper: ScanBound::Exclusive(&d),
        ..base
    };
    assert_eq!(ids(scan_rows(&mut engine, &between, 1)), vec![5, 4]);
    let through = ScanRequest {
        lower: ScanBound::Exclusive(&b),
        upper: ScanBound::Inclusive(&d),
        ..base
    };
    assert_eq!(ids(scan_rows(&mut engine, &through, 10)), vec![5, 4, 0]);
    // A pushed filter: id >= 3 AND name LIKE '%a%'.
    let mut builder = FilterBuilder::new();
    builder
        .begin_and()
        .ge(0, &3i32.to_le_bytes())
        .like(1, b"%a%", b'\\')
        .end();
    let filter = builder.finish().unwrap();
    let filtered = ScanRequest {
        filter: &filter,
        ..base
    };
    assert_eq!(ids(scan_rows(&mut engine, &filtered, 1)), vec![5, 4]);
    // A full scan sees every row once.
    let mut full = ids(scan_rows(
        &mut engine,
        &ScanRequest {
            index: None,
            ..base
        },
        2,
    ));
    full.sort();
    assert_eq!(full, (0..7).collect::<Vec<_>>());
}

#[test]
fn locking_scan_waits_for_a_row_lock_and_resumes() {
    let mut engine = engine();
    engine.create_table(1, names_table()).unwrap();
    for id in 0..5 {
        insert_name(&mut engine, 1, id, Some(&format!("n{id}"))).unwrap();
    }
    commit(&mut engine, 1);
    let def = names_table();
    // Transaction 2 holds row 2 exclusively and changes it.
    let key = encode(&def, &[(0, Value::Int(2))]);
    execute(
        &mut engine,
        2,
        1,
        OperationKind::Update,
        &key,
        &encode(&def, &[(1, Value::from("changed"))]),
        &[],
    )
    .unwrap();
    let request = ScanRequest {
        transaction: 3,
        token: 77,
        table: 1,
        index: None,
        lower: ScanBound::Unbounded,
        upper: ScanBound::Unbounded,
        descending: false,
        filter: &[],
        columns: &[0, 1],
        mode: ReadMode::Exclusive,
        gci: false,
    };
    let scan = engine.open_scan(&request).unwrap();
    let mut out = Vec::new();
    let batch = engine.scan_next(0, scan, 100, 1 << 20, &mut out).unwrap();
    assert!(batch.waiting && !batch.finished);
    assert_eq!(batch.rows, 2, "rows before the locked one come back");
    // Still waiting: nothing more.
    let again = engine.scan_next(0, scan, 100, 1 << 20, &mut out).unwrap();
    assert_eq!((again.rows, again.waiting), (0, true));
    commit(&mut engine, 2);
    let completions = engine.take_completions();
    assert_eq!(
        (
            completions.len(),
            completions[0].token,
            completions[0].result
        ),
        (1, 77, Ok(()))
    );
    out.clear();
    let rest = engine.scan_next(0, scan, 100, 1 << 20, &mut out).unwrap();
    assert_eq!((rest.rows, rest.finished, rest.waiting), (3, true, false));
    // The scan sees the committed change of the row it waited for.
    let first_length = u32::from_le_bytes(out[0..4].try_into().unwrap()) as usize;
    assert_eq!(
        decode(&def, &out[4..4 + first_length])[1],
        Value::from("changed")
    );
    engine.close_scan(scan).unwrap();
    // The scan's locks stay with transaction 3: a writer now waits.
    let other = encode(&def, &[(0, Value::Int(4))]);
    let request = OperationRequest {
        transaction: 4,
        token: 0,
        table: 1,
        kind: OperationKind::Delete,
        key: &other,
        values: &[],
        columns: &[],
    };
    assert_eq!(
        engine.execute(0, &request, &mut Vec::new()).unwrap(),
        Outcome::Waiting
    );
    engine.abort(4).unwrap();
    engine.abort(3).unwrap();
    assert_eq!(engine.operations_in_use(), 0);
    engine.check_invariants();
}

#[test]
fn scans_are_limited_and_bad_requests_are_refused() {
    let mut engine = Engine::new(EngineConfig {
        data_memory_bytes: 4 << 20,
        scans_max: 2,
        ..Default::default()
    })
    .unwrap();
    engine.create_table(1, names_table()).unwrap();
    let request = ScanRequest {
        transaction: NO_TRANSACTION,
        token: 0,
        table: 1,
        index: None,
        lower: ScanBound::Unbounded,
        upper: ScanBound::Unbounded,
        descending: false,
        filter: &[],
        columns: &[0],
        mode: ReadMode::Committed,
        gci: false,
    };
    let first = engine.open_scan(&request).unwrap();
    engine.open_scan(&request).unwrap();
    assert_eq!(
        engine.open_scan(&request).unwrap_err().code,
        ErrorCode::TooManyScans
    );
    engine.close_scan(first).unwrap();
    assert_eq!(
        engine.close_scan(first).unwrap_err().code,
        ErrorCode::NoSuchScan
    );
    assert_eq!(
        engine
            .open_scan(&ScanRequest {
                columns: &[9],
                ..request
            })
            .unwrap_err()
            .code,
        ErrorCode::NoSuchColumn
    );
    assert_eq!(
        engine
            .open_scan(&ScanRequest {
                filter: &[1, 0xEE],
                ..request
            })
            .unwrap_err()
            .code,
        ErrorCode::InvalidFilter
    );
    assert_eq!(
        engine
            .open_scan(&ScanRequest {
                index: Some(5),
                ..request
            })
            .unwrap_err()
            .code,
        ErrorCode::WrongKey
    );
    assert_eq!(
        engine.drop_table(1).unwrap_err().code,
        ErrorCode::WrongTransactionState
    );
}

/// A checkpoint scan takes every row of the parts it writes whole and the
/// rows of the others committed at or after its GCI, each with its part
/// and GCI first; a batch looks at a bounded number of slots, so a scan
/// that passes many unchanged rows hands out empty batches before it ends.
#[test]
fn a_checkpoint_scan_takes_whole_parts_and_changed_rows_with_their_part_and_gci() {
    use storage::CheckpointSelection;
    let mut engine = engine();
    engine.create_table(1, names_table()).unwrap();
    let rows = 5_000;
    for id in 0..rows {
        insert_name(&mut engine, 1, id, None).unwrap();
    }
    engine.prepare(1).unwrap();
    engine.commit(1, 7).unwrap();
    // Every 100th row is written again in GCI 9.
    let def = names_table();
    for id in (0..rows).step_by(100) {
        let key = encode(&def, &[(0, Value::Int(id.into()))]);
        let values = encode(&def, &[(1, Value::from(format!("n{id}").as_str()))]);
        execute(&mut engine, 2, 1, OperationKind::Update, &key, &values, &[]).unwrap();
    }
    engine.prepare(2).unwrap();
    engine.commit(2, 9).unwrap();
    let request = ScanRequest {
        transaction: NO_TRANSACTION,
        token: 0,
        table: 1,
        index: None,
        lower: ScanBound::Unbounded,
        upper: ScanBound::Unbounded,
        descending: false,
        filter: &[],
        columns: &[0, 1],
        mode: ReadMode::Committed,
        gci: true,
    };
    let whole_parts = 1u64 << 3 | 1 << 40;
    let scan = engine.open_scan(&request).unwrap();
    engine
        .select_for_checkpoint(
            scan,
            CheckpointSelection {
                whole_parts,
                changed_since_gci: 9,
            },
        )
        .unwrap();
    let mut taken = Vec::new();
    loop {
        let mut out = Vec::new();
        let batch = engine.scan_next(0, scan, 992, 1 << 20, &mut out).unwrap();
        let mut at = 0;
        while at < out.len() {
            let length = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
            let row = &out[at + 4..at + 4 + length];
            let part = u16::from_le_bytes([row[0], row[1]]);
            let gci = u32::from_le_bytes(row[2..6].try_into().unwrap());
            let values = decode(&def, &row[6..]);
            let Value::Int(id) = values[0] else {
                panic!("{values:?}")
            };
            taken.push((id, part, gci, values[1].clone()));
            at += 4 + length;
        }
        if batch.finished {
            break;
        }
    }
    engine.close_scan(scan).unwrap();
    let changed = taken.iter().filter(|(_, _, gci, _)| *gci == 9).count();
    assert_eq!(changed, (rows / 100) as usize, "every changed row");
    for (id, part, gci, name) in &taken {
        assert!(
            whole_parts & (1 << part) != 0 || *gci == 9,
            "row {id} of part {part}, GCI {gci}"
        );
        assert_eq!(*gci == 9, id % 100 == 0, "row {id}");
        if *gci == 9 {
            assert_eq!(*name, Value::from(format!("n{id}").as_str()));
        }
    }
    let whole = taken.iter().filter(|(_, _, gci, _)| *gci == 7).count();
    // Two parts in 64 whole: about 1/32 of the unchanged rows.
    let unchanged = (rows - rows / 100) as usize;
    assert!(
        whole > unchanged / 64 && whole < unchanged / 16,
        "{whole} unchanged rows taken of {unchanged}"
    );
    // Nothing changed since GCI 10 and no part whole: the batches stop at
    // their slot bound, empty, until the scan ends.
    let scan = engine.open_scan(&request).unwrap();
    let none = CheckpointSelection {
        whole_parts: 0,
        changed_since_gci: 10,
    };
    engine.select_for_checkpoint(scan, none).unwrap();
    let mut batches = 0;
    loop {
        let mut out = Vec::new();
        let batch = engine.scan_next(0, scan, 992, 1 << 20, &mut out).unwrap();
        assert_eq!((batch.rows, out.len()), (0, 0));
        batches += 1;
        if batch.finished {
            break;
        }
    }
    engine.close_scan(scan).unwrap();
    assert_eq!(
        batches,
        (rows as u32).div_ceil(storage::engine::CHECKPOINT_SLOTS_PER_BATCH),
        "batches of {} slots",
        storage::engine::CHECKPOINT_SLOTS_PER_BATCH
    );
    // Only a committed full scan with GCIs can be a checkpoint's.
    let scan = engine
        .open_scan(&ScanRequest {
            gci: false,
            ..request
        })
        .unwrap();
    assert!(
        engine
            .select_for_checkpoint(scan, CheckpointSelection::ALL)
            .is_err()
    );
    engine.close_scan(scan).unwrap();
    engine.check_invariants();
}
