//! Behaviour of the engine through its public, message-shaped interface:
//! operations, visibility, locks, commit and abort, memory limits.

use schema::types::{Collation, ColumnType};
use schema::{AttrInfoReader, AttrInfoWriter, ColumnDef, ErrorCode, IndexDef, TableDef};
use storage::{
    Engine, EngineConfig, NO_TRANSACTION, OperationKind, OperationRequest, Outcome, ReadMode,
};

const TABLE: u32 = 1;

fn table_def(indexes: Vec<IndexDef>) -> TableDef {
    TableDef::new(
        "t",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new(
                "name",
                ColumnType::Varchar {
                    length: 20,
                    collation: Collation::Utf8mb4AiCi,
                },
                true,
            ),
            ColumnDef::new("n", ColumnType::BigInt { unsigned: false }, true),
        ],
        vec![0],
        indexes,
    )
    .unwrap()
}

fn engine_with(config: EngineConfig, indexes: Vec<IndexDef>) -> Engine {
    let mut engine = Engine::new(config).unwrap();
    engine.create_table(TABLE, table_def(indexes)).unwrap();
    engine
}

fn engine() -> Engine {
    engine_with(
        EngineConfig {
            data_memory_bytes: 8 << 20,
            ..Default::default()
        },
        vec![],
    )
}

fn key(id: i32) -> Vec<u8> {
    let mut bytes = Vec::new();
    AttrInfoWriter::new(&mut bytes).push(0, Some(&id.to_le_bytes()));
    bytes
}

fn values(id: i32, name: Option<&str>, n: Option<i64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut bytes);
    writer.push(0, Some(&id.to_le_bytes()));
    writer.push(1, name.map(str::as_bytes));
    let n = n.map(|n| n.to_le_bytes());
    writer.push(2, n.as_ref().map(|n| &n[..]));
    bytes
}

fn run(
    engine: &mut Engine,
    transaction: u64,
    kind: OperationKind,
    id: i32,
    row: &[u8],
) -> Result<Outcome, ErrorCode> {
    let key = key(id);
    let request = OperationRequest {
        transaction,
        token: id as u64,
        table: TABLE,
        kind,
        key: &key,
        values: row,
        columns: &[0, 1, 2],
    };
    let mut out = Vec::new();
    engine.execute(0, &request, &mut out).map_err(|e| e.code)
}

/// The row as (name, n) that `transaction` reads without locks.
fn read(engine: &mut Engine, transaction: u64, id: i32) -> Option<(Option<String>, Option<i64>)> {
    let key = key(id);
    let request = OperationRequest {
        transaction,
        token: 0,
        table: TABLE,
        kind: OperationKind::Read(ReadMode::Committed),
        key: &key,
        values: &[],
        columns: &[1, 2],
    };
    let mut out = Vec::new();
    match engine.execute(0, &request, &mut out) {
        Ok(Outcome::Done) => Some(decode(&out)),
        Err(error) if error.code == ErrorCode::NoSuchRow => None,
        other => panic!("unexpected {other:?}"),
    }
}

fn decode(bytes: &[u8]) -> (Option<String>, Option<i64>) {
    let entries: Vec<_> = AttrInfoReader::new(bytes).map(|e| e.unwrap()).collect();
    assert_eq!(entries.len(), 2);
    let name = entries[0].1.map(|b| String::from_utf8(b.to_vec()).unwrap());
    let n = entries[1]
        .1
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()));
    (name, n)
}

fn commit(engine: &mut Engine, transaction: u64) {
    engine.prepare(transaction).unwrap();
    engine.commit(transaction, 1).unwrap();
}

#[test]
fn insert_read_update_delete_commit() {
    let mut engine = engine();
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        7,
        &values(7, Some("seven"), None),
    )
    .unwrap();
    // Uncommitted: others do not see it, the transaction does.
    assert_eq!(read(&mut engine, NO_TRANSACTION, 7), None);
    assert_eq!(read(&mut engine, 1, 7), Some((Some("seven".into()), None)));
    commit(&mut engine, 1);
    assert_eq!(
        read(&mut engine, NO_TRANSACTION, 7),
        Some((Some("seven".into()), None))
    );
    assert_eq!(engine.row_count(TABLE), Some(1));

    let mut update = Vec::new();
    AttrInfoWriter::new(&mut update).push(2, Some(&42i64.to_le_bytes()));
    run(&mut engine, 2, OperationKind::Update, 7, &update).unwrap();
    assert_eq!(
        read(&mut engine, NO_TRANSACTION, 7),
        Some((Some("seven".into()), None))
    );
    assert_eq!(
        read(&mut engine, 2, 7),
        Some((Some("seven".into()), Some(42)))
    );
    commit(&mut engine, 2);
    assert_eq!(
        read(&mut engine, NO_TRANSACTION, 7),
        Some((Some("seven".into()), Some(42)))
    );

    run(&mut engine, 3, OperationKind::Delete, 7, &[]).unwrap();
    assert_eq!(read(&mut engine, 3, 7), None);
    assert_eq!(
        read(&mut engine, NO_TRANSACTION, 7),
        Some((Some("seven".into()), Some(42)))
    );
    commit(&mut engine, 3);
    assert_eq!(read(&mut engine, NO_TRANSACTION, 7), None);
    assert_eq!(engine.row_count(TABLE), Some(0));
    assert_eq!(engine.operations_in_use(), 0);
    assert_eq!(engine.transactions_in_use(), 0);
}

#[test]
fn errors_carry_ndb_and_mysql_codes() {
    let mut engine = engine();
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        1,
        &values(1, None, None),
    )
    .unwrap();
    assert_eq!(
        run(
            &mut engine,
            1,
            OperationKind::Insert,
            1,
            &values(1, None, None)
        ),
        Err(ErrorCode::DuplicateKey)
    );
    assert_eq!(
        run(
            &mut engine,
            1,
            OperationKind::Update,
            2,
            &values(2, None, None)
        ),
        Err(ErrorCode::NoSuchRow)
    );
    assert_eq!(ErrorCode::DuplicateKey.ndb_code(), Some(630));
    assert_eq!(ErrorCode::DuplicateKey.mysql_code(), 1062);
    // A NOT NULL column left out.
    let mut missing = Vec::new();
    AttrInfoWriter::new(&mut missing).push(1, Some(b"x"));
    assert_eq!(
        run(&mut engine, 1, OperationKind::Insert, 3, &missing),
        Err(ErrorCode::NullNotAllowed)
    );
    // Too long for VARCHAR(20) in bytes of utf8mb4 (80 bytes max).
    let long = "x".repeat(81);
    assert_eq!(
        run(
            &mut engine,
            1,
            OperationKind::Insert,
            4,
            &values(4, Some(&long), None)
        ),
        Err(ErrorCode::DataTooLong)
    );
    // The key must name exactly the key columns.
    let request = OperationRequest {
        transaction: 1,
        token: 0,
        table: TABLE,
        kind: OperationKind::Read(ReadMode::Committed),
        key: &values(1, None, None),
        values: &[],
        columns: &[0],
    };
    assert_eq!(
        engine
            .execute(0, &request, &mut Vec::new())
            .unwrap_err()
            .code,
        ErrorCode::WrongKey
    );
    // The primary key cannot be updated.
    assert_eq!(
        run(
            &mut engine,
            1,
            OperationKind::Update,
            1,
            &values(9, None, None)
        ),
        Err(ErrorCode::WrongKey)
    );
    commit(&mut engine, 1);
    assert_eq!(read(&mut engine, NO_TRANSACTION, 1), Some((None, None)));
    assert_eq!(read(&mut engine, NO_TRANSACTION, 3), None);
}

#[test]
fn abort_restores_rows_and_memory_exactly() {
    let mut engine = engine();
    for id in 0..100 {
        run(
            &mut engine,
            1,
            OperationKind::Insert,
            id,
            &values(id, Some("before"), Some(id.into())),
        )
        .unwrap();
    }
    commit(&mut engine, 1);
    let memory_before = engine.memory_report();
    let long = "y".repeat(60);
    for id in 0..100 {
        match id % 3 {
            0 => run(
                &mut engine,
                2,
                OperationKind::Update,
                id,
                &values(id, Some(&long), None),
            )
            .unwrap(),
            1 => run(&mut engine, 2, OperationKind::Delete, id, &[]).unwrap(),
            _ => run(
                &mut engine,
                2,
                OperationKind::Write,
                id,
                &values(id, None, Some(-1)),
            )
            .unwrap(),
        };
    }
    for id in 100..200 {
        run(
            &mut engine,
            2,
            OperationKind::Insert,
            id,
            &values(id, Some("new"), None),
        )
        .unwrap();
    }
    engine.abort(2).unwrap();
    for id in 0..100 {
        assert_eq!(
            read(&mut engine, NO_TRANSACTION, id),
            Some((Some("before".into()), Some(id.into())))
        );
    }
    for id in 100..200 {
        assert_eq!(read(&mut engine, NO_TRANSACTION, id), None);
    }
    let memory_after = engine.memory_report();
    assert_eq!(memory_after.tables[0].rows, 100);
    // Pages may stay with the table (as in NDB) but every slot came back: the
    // same work again needs no new page.
    assert!(memory_after.pages_used >= memory_before.pages_used);
    assert_eq!(engine.operations_in_use(), 0);
}

#[test]
fn a_transaction_sees_its_own_changes_in_order() {
    let mut engine = engine();
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        1,
        &values(1, Some("a"), None),
    )
    .unwrap();
    run(
        &mut engine,
        1,
        OperationKind::Update,
        1,
        &values(1, Some("b"), Some(2)),
    )
    .unwrap();
    assert_eq!(read(&mut engine, 1, 1), Some((Some("b".into()), Some(2))));
    run(&mut engine, 1, OperationKind::Delete, 1, &[]).unwrap();
    assert_eq!(read(&mut engine, 1, 1), None);
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        1,
        &values(1, Some("c"), None),
    )
    .unwrap();
    assert_eq!(read(&mut engine, 1, 1), Some((Some("c".into()), None)));
    commit(&mut engine, 1);
    assert_eq!(
        read(&mut engine, NO_TRANSACTION, 1),
        Some((Some("c".into()), None))
    );
    assert_eq!(engine.row_count(TABLE), Some(1));
}

#[test]
fn locks_queue_and_are_granted_on_commit() {
    let mut engine = engine();
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        1,
        &values(1, Some("a"), Some(1)),
    )
    .unwrap();
    commit(&mut engine, 1);
    // Transaction 2 updates; 3 and 4 want the row too.
    run(
        &mut engine,
        2,
        OperationKind::Update,
        1,
        &values(1, Some("two"), None),
    )
    .unwrap();
    assert_eq!(
        run(
            &mut engine,
            3,
            OperationKind::Read(ReadMode::Shared),
            1,
            &[]
        ),
        Ok(Outcome::Waiting)
    );
    assert_eq!(
        run(&mut engine, 4, OperationKind::Delete, 1, &[]),
        Ok(Outcome::Waiting)
    );
    // Committed reads never wait and see the committed version.
    assert_eq!(
        read(&mut engine, NO_TRANSACTION, 1),
        Some((Some("a".into()), Some(1)))
    );
    assert!(
        engine.prepare(3).is_err(),
        "a transaction with a waiting operation cannot prepare"
    );
    commit(&mut engine, 2);
    let completions = engine.take_completions();
    assert_eq!(
        completions.len(),
        1,
        "the shared read is granted, the delete still waits"
    );
    assert_eq!(completions[0].transaction, 3);
    assert_eq!(completions[0].result, Ok(()));
    let entries: Vec<_> = AttrInfoReader::new(&completions[0].data)
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(entries[1].1, Some(&b"two"[..]));
    commit(&mut engine, 3);
    let completions = engine.take_completions();
    assert_eq!(completions.len(), 1);
    assert_eq!(
        (completions[0].transaction, completions[0].result),
        (4, Ok(()))
    );
    commit(&mut engine, 4);
    assert_eq!(read(&mut engine, NO_TRANSACTION, 1), None);
    assert_eq!(engine.operations_in_use(), 0);
}

#[test]
fn lock_waits_time_out_with_error_266() {
    let config = EngineConfig {
        data_memory_bytes: 8 << 20,
        lock_wait_timeout_ms: 1_200,
        ..Default::default()
    };
    let mut engine = engine_with(config, vec![]);
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        1,
        &values(1, None, None),
    )
    .unwrap();
    commit(&mut engine, 1);
    run(
        &mut engine,
        2,
        OperationKind::Read(ReadMode::Exclusive),
        1,
        &[],
    )
    .unwrap();
    let key = key(1);
    let request = OperationRequest {
        transaction: 3,
        token: 99,
        table: TABLE,
        kind: OperationKind::Update,
        key: &key,
        values: &values(1, Some("late"), None),
        columns: &[],
    };
    assert_eq!(
        engine.execute(1_000, &request, &mut Vec::new()).unwrap(),
        Outcome::Waiting
    );
    assert_eq!(engine.next_deadline_ms(), Some(2_200));
    engine.expire_lock_waits(2_199);
    assert!(engine.take_completions().is_empty());
    engine.expire_lock_waits(2_200);
    let completions = engine.take_completions();
    assert_eq!(completions.len(), 1);
    assert_eq!(completions[0].token, 99);
    assert_eq!(completions[0].result, Err(ErrorCode::LockWaitTimeout));
    assert_eq!(ErrorCode::LockWaitTimeout.ndb_code(), Some(266));
    assert_eq!(ErrorCode::LockWaitTimeout.mysql_code(), 1205);
    assert!(ErrorCode::LockWaitTimeout.is_temporary());
    engine.abort(3).unwrap();
    commit(&mut engine, 2);
    assert_eq!(read(&mut engine, NO_TRANSACTION, 1), Some((None, None)));
    assert_eq!(engine.operations_in_use(), 0);
}

#[test]
fn lock_upgrade_waits_for_other_readers() {
    let mut engine = engine();
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        1,
        &values(1, None, None),
    )
    .unwrap();
    commit(&mut engine, 1);
    run(
        &mut engine,
        2,
        OperationKind::Read(ReadMode::Shared),
        1,
        &[],
    )
    .unwrap();
    run(
        &mut engine,
        3,
        OperationKind::Read(ReadMode::Shared),
        1,
        &[],
    )
    .unwrap();
    // 2 upgrades: waits for 3.
    assert_eq!(
        run(
            &mut engine,
            2,
            OperationKind::Update,
            1,
            &values(1, Some("up"), None)
        ),
        Ok(Outcome::Waiting)
    );
    commit(&mut engine, 3);
    let completions = engine.take_completions();
    assert_eq!(
        (
            completions.len(),
            completions[0].transaction,
            completions[0].result
        ),
        (1, 2, Ok(()))
    );
    commit(&mut engine, 2);
    assert_eq!(
        read(&mut engine, NO_TRANSACTION, 1),
        Some((Some("up".into()), None))
    );
}

#[test]
fn insert_waits_for_a_pending_insert_and_wins_after_abort() {
    let mut engine = engine();
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        5,
        &values(5, Some("first"), None),
    )
    .unwrap();
    assert_eq!(
        run(
            &mut engine,
            2,
            OperationKind::Insert,
            5,
            &values(5, Some("second"), None)
        ),
        Ok(Outcome::Waiting)
    );
    engine.abort(1).unwrap();
    let completions = engine.take_completions();
    assert_eq!((completions.len(), completions[0].result), (1, Ok(())));
    commit(&mut engine, 2);
    assert_eq!(
        read(&mut engine, NO_TRANSACTION, 5),
        Some((Some("second".into()), None))
    );
    assert_eq!(engine.row_count(TABLE), Some(1));
}

#[test]
fn waiting_delete_after_committed_delete_finds_no_row() {
    let mut engine = engine();
    run(
        &mut engine,
        1,
        OperationKind::Insert,
        5,
        &values(5, None, None),
    )
    .unwrap();
    commit(&mut engine, 1);
    run(&mut engine, 2, OperationKind::Delete, 5, &[]).unwrap();
    assert_eq!(
        run(
            &mut engine,
            3,
            OperationKind::Update,
            5,
            &values(5, Some("x"), None)
        ),
        Ok(Outcome::Waiting)
    );
    commit(&mut engine, 2);
    let completions = engine.take_completions();
    assert_eq!(completions[0].result, Err(ErrorCode::NoSuchRow));
    engine.abort(3).unwrap();
    assert_eq!(engine.operations_in_use(), 0);
    assert_eq!(engine.row_count(TABLE), Some(0));
}

#[test]
fn full_memory_fails_insert_with_827_keeps_rows_and_abort_frees_everything() {
    let config = EngineConfig {
        data_memory_bytes: 16 * 32 * 1024,
        ..Default::default()
    };
    let mut engine = engine_with(config, vec![]);
    let name = "z".repeat(80);
    let mut committed = 0;
    // Fill in transactions of 50 rows until memory runs out mid-transaction.
    let mut transaction = 1;
    let failed_at = 'fill: loop {
        for i in 0..50 {
            let id = committed + i;
            match run(
                &mut engine,
                transaction,
                OperationKind::Insert,
                id,
                &values(id, Some(&name), Some(id.into())),
            ) {
                Ok(_) => {}
                Err(error) => {
                    assert_eq!(error, ErrorCode::TableFull);
                    break 'fill id;
                }
            }
        }
        commit(&mut engine, transaction);
        committed += 50;
        transaction += 1;
    };
    assert!(committed > 0);
    assert_eq!(ErrorCode::TableFull.ndb_code(), Some(827));
    assert_eq!(ErrorCode::TableFull.mysql_code(), 1114);
    let used_full = engine.memory_report().pages_used;
    engine.abort(transaction).unwrap();
    for id in 0..committed {
        assert_eq!(
            read(&mut engine, NO_TRANSACTION, id),
            Some((Some(name.clone()), Some(id.into())))
        );
    }
    assert_eq!(read(&mut engine, NO_TRANSACTION, failed_at - 1), None);
    assert_eq!(engine.row_count(TABLE), Some(committed as u64));
    // The aborted rows' slots are free again: the same inserts fit once more.
    for id in committed..failed_at {
        run(
            &mut engine,
            99,
            OperationKind::Insert,
            id,
            &values(id, Some(&name), None),
        )
        .unwrap();
    }
    engine.abort(99).unwrap();
    assert_eq!(engine.memory_report().pages_used, used_full);
    // TRUNCATE and DROP return the pages.
    engine.truncate_table(TABLE).unwrap();
    assert_eq!(engine.row_count(TABLE), Some(0));
    assert!(
        engine.memory_report().pages_used <= 1,
        "truncate keeps only the empty hash index"
    );
    engine.drop_table(TABLE).unwrap();
    assert_eq!(engine.memory_report().pages_used, 0);
}

#[test]
fn operation_records_are_limited() {
    let config = EngineConfig {
        data_memory_bytes: 8 << 20,
        operations_max: 10,
        ..Default::default()
    };
    let mut engine = engine_with(config, vec![]);
    for id in 0..10 {
        run(
            &mut engine,
            1,
            OperationKind::Insert,
            id,
            &values(id, None, None),
        )
        .unwrap();
    }
    assert_eq!(
        run(
            &mut engine,
            1,
            OperationKind::Insert,
            10,
            &values(10, None, None)
        ),
        Err(ErrorCode::TooManyOperations)
    );
    commit(&mut engine, 1);
    run(
        &mut engine,
        2,
        OperationKind::Insert,
        10,
        &values(10, None, None),
    )
    .unwrap();
    commit(&mut engine, 2);
    assert_eq!(engine.row_count(TABLE), Some(11));
}

#[test]
fn case_insensitive_primary_key_is_one_key() {
    let mut engine = Engine::new(EngineConfig {
        data_memory_bytes: 8 << 20,
        ..Default::default()
    })
    .unwrap();
    let def = TableDef::new(
        "names",
        vec![
            ColumnDef::new(
                "name",
                ColumnType::Varchar {
                    length: 10,
                    collation: Collation::Utf8mb4AiCi,
                },
                false,
            ),
            ColumnDef::new("v", ColumnType::Int { unsigned: false }, true),
        ],
        vec![0],
        vec![],
    )
    .unwrap();
    engine.create_table(2, def).unwrap();
    let row = |name: &str| {
        let mut bytes = Vec::new();
        let mut writer = AttrInfoWriter::new(&mut bytes);
        writer.push(0, Some(name.as_bytes()));
        writer.push(1, Some(&1i32.to_le_bytes()));
        bytes
    };
    let name_key = |name: &str| {
        let mut bytes = Vec::new();
        AttrInfoWriter::new(&mut bytes).push(0, Some(name.as_bytes()));
        bytes
    };
    let insert = |engine: &mut Engine, name: &str| {
        let key = name_key(name);
        let values = row(name);
        let request = OperationRequest {
            transaction: 1,
            token: 0,
            table: 2,
            kind: OperationKind::Insert,
            key: &key,
            values: &values,
            columns: &[],
        };
        engine
            .execute(0, &request, &mut Vec::new())
            .map_err(|e| e.code)
    };
    insert(&mut engine, "abc").unwrap();
    assert_eq!(insert(&mut engine, "ABC"), Err(ErrorCode::DuplicateKey));
    assert_eq!(insert(&mut engine, "Ábc"), Err(ErrorCode::DuplicateKey));
    insert(&mut engine, "abd").unwrap();
    commit(&mut engine, 1);
    let key = name_key("ABD");
    let request = OperationRequest {
        transaction: 0,
        token: 0,
        table: 2,
        kind: OperationKind::Read(ReadMode::Committed),
        key: &key,
        values: &[],
        columns: &[0],
    };
    let mut out = Vec::new();
    engine.execute(0, &request, &mut out).unwrap();
    let entries: Vec<_> = AttrInfoReader::new(&out).map(|e| e.unwrap()).collect();
    assert_eq!(entries[0].1, Some(&b"abd"[..]));
}

/// Runs a write with `columns` and returns what it output: the row before
/// the write.
fn write_returning(
    engine: &mut Engine,
    transaction: u64,
    kind: OperationKind,
    id: i32,
    row: &[u8],
) -> Result<Vec<u8>, ErrorCode> {
    let key = key(id);
    let mut out = Vec::new();
    engine
        .execute(
            0,
            &OperationRequest {
                transaction,
                token: 0,
                table: TABLE,
                kind,
                key: &key,
                values: row,
                columns: &[1, 2],
            },
            &mut out,
        )
        .map_err(|e| e.code)?;
    Ok(out)
}

#[test]
fn writes_with_columns_return_the_row_before_them() {
    let mut engine = engine();
    let fresh = write_returning(
        &mut engine,
        1,
        OperationKind::Insert,
        7,
        &values(7, Some("a"), Some(1)),
    )
    .unwrap();
    assert!(
        fresh.is_empty(),
        "an insert of a new row has no before image"
    );
    commit(&mut engine, 1);

    let before_update = write_returning(
        &mut engine,
        2,
        OperationKind::Update,
        7,
        &values(7, Some("b"), Some(2)),
    )
    .unwrap();
    assert_eq!(decode(&before_update), (Some("a".into()), Some(1)));
    // The same transaction's next write sees its own change as "before".
    let before_write = write_returning(
        &mut engine,
        2,
        OperationKind::Write,
        7,
        &values(7, None, Some(3)),
    )
    .unwrap();
    assert_eq!(decode(&before_write), (Some("b".into()), Some(2)));
    let before_delete = write_returning(&mut engine, 2, OperationKind::Delete, 7, &[]).unwrap();
    assert_eq!(decode(&before_delete), (None, Some(3)));
    let upsert_new = write_returning(
        &mut engine,
        2,
        OperationKind::Write,
        8,
        &values(8, Some("c"), None),
    )
    .unwrap();
    assert!(
        upsert_new.is_empty(),
        "a write that inserts has no before image"
    );
}

#[test]
fn an_insert_whose_row_disagrees_with_its_key_is_refused() {
    let mut engine = engine();
    // The key says 1, the row says 2: storing it would file row 2 under
    // key 1's hash.
    let refused = run(
        &mut engine,
        1,
        OperationKind::Insert,
        1,
        &values(2, Some("x"), None),
    );
    assert_eq!(refused, Err(ErrorCode::WrongKey));
    let refused = run(
        &mut engine,
        1,
        OperationKind::Write,
        1,
        &values(2, Some("x"), None),
    );
    assert_eq!(refused, Err(ErrorCode::WrongKey));
    engine.abort(1).unwrap();
    assert_eq!(read(&mut engine, NO_TRANSACTION, 1), None);
    assert_eq!(read(&mut engine, NO_TRANSACTION, 2), None);
}
