//! The changes a transaction commits, as the redo log keeps them
//! (`Engine::prepared_changes`): replayed in commit order into an empty
//! engine, they rebuild exactly the committed rows.

use proptest::prelude::*;
use schema::types::{Collation, ColumnType};
use schema::{AttrInfoReader, AttrInfoWriter, ColumnDef, ErrorCode, IndexDef, TableDef};
use storage::{
    CHANGE_DELETE, CHANGE_PUT, Engine, EngineConfig, NO_TRANSACTION, OperationKind,
    OperationRequest, Outcome, ReadMode, changes,
};

const TABLE: u32 = 3;
const IDS: i32 = 12;

fn engine() -> Engine {
    let mut engine = Engine::new(EngineConfig {
        data_memory_bytes: 8 << 20,
        ..Default::default()
    })
    .unwrap();
    let def = TableDef::new(
        "t",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new(
                "name",
                ColumnType::Varchar {
                    length: 40,
                    collation: Collation::Utf8mb4AiCi,
                },
                true,
            ),
            ColumnDef::new("n", ColumnType::BigInt { unsigned: false }, true),
        ],
        vec![0],
        vec![IndexDef {
            name: "by_n".into(),
            columns: vec![2],
            unique: false,
        }],
    )
    .unwrap();
    engine.create_table(TABLE, def).unwrap();
    engine
}

fn key(id: i32) -> Vec<u8> {
    let mut bytes = Vec::new();
    AttrInfoWriter::new(&mut bytes).push(0, Some(&id.to_le_bytes()));
    bytes
}

/// Operation request bytes: `n` only for an update (a partial row), every
/// column otherwise.
fn values(kind: OperationKind, id: i32, n: i64) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut bytes);
    if kind != OperationKind::Update {
        writer.push(0, Some(&id.to_le_bytes()));
        let name = format!("row {id} at {n}");
        writer.push(1, (n % 3 != 0).then_some(name.as_bytes()));
    }
    writer.push(2, Some(&n.to_le_bytes()));
    bytes
}

fn execute(
    engine: &mut Engine,
    transaction: u64,
    kind: OperationKind,
    key: &[u8],
    values: &[u8],
) -> Result<Outcome, ErrorCode> {
    let mut out = Vec::new();
    engine
        .execute(
            0,
            &OperationRequest {
                transaction,
                token: transaction,
                table: TABLE,
                kind,
                key,
                values,
                columns: &[],
            },
            &mut out,
        )
        .map_err(|e| e.code)
}

/// Every committed row, as AttrInfo of all its columns, by id.
fn rows(engine: &mut Engine) -> Vec<Option<Vec<u8>>> {
    (0..IDS)
        .map(|id| {
            let mut out = Vec::new();
            match engine.execute(
                0,
                &OperationRequest {
                    transaction: NO_TRANSACTION,
                    token: 0,
                    table: TABLE,
                    kind: OperationKind::Read(ReadMode::Committed),
                    key: &key(id),
                    values: &[],
                    columns: &[0, 1, 2],
                },
                &mut out,
            ) {
                Ok(Outcome::Done) => Some(out),
                Err(error) if error.code == ErrorCode::NoSuchRow => None,
                other => panic!("a committed read: {other:?}"),
            }
        })
        .collect()
}

/// Replays one transaction's changes as a transaction of `engine`.
fn replay(engine: &mut Engine, transaction: u64, bytes: &[u8]) {
    for change in changes(bytes) {
        let (kind, attrinfo) = change.expect("whole changes");
        let row_key: Vec<u8> = {
            let mut key = Vec::new();
            let mut writer = AttrInfoWriter::new(&mut key);
            for entry in AttrInfoReader::new(attrinfo) {
                let (column, value) = entry.expect("AttrInfo");
                if column == 0 {
                    writer.push(column, value);
                }
            }
            key
        };
        let outcome = match kind {
            CHANGE_PUT => execute(
                engine,
                transaction,
                OperationKind::Write,
                &row_key,
                attrinfo,
            ),
            CHANGE_DELETE => execute(engine, transaction, OperationKind::Delete, &row_key, &[]),
            other => panic!("kind {other}"),
        };
        assert_eq!(outcome, Ok(Outcome::Done), "replaying kind {kind}");
    }
    if !engine.has_transaction(transaction) {
        // No changes: nothing to commit.
        return;
    }
    engine.prepare(transaction).unwrap();
    engine.commit(transaction, 1).unwrap();
}

#[derive(Debug, Clone)]
struct Transaction {
    operations: Vec<(u8, i32, i64)>,
    commit: bool,
}

fn transaction() -> impl Strategy<Value = Transaction> {
    (
        prop::collection::vec((0u8..4, 0..IDS, -50i64..50), 1..6),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(operations, commit)| Transaction { operations, commit })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn replayed_changes_rebuild_the_committed_rows(
        transactions in prop::collection::vec(transaction(), 1..40)
    ) {
        let mut original = engine();
        let mut replayed = engine();
        let mut bytes = Vec::new();
        for (number, transaction) in transactions.iter().enumerate() {
            let id = number as u64 + 1;
            for &(kind, row, n) in &transaction.operations {
                let kind = match kind {
                    0 => OperationKind::Insert,
                    1 => OperationKind::Update,
                    2 => OperationKind::Delete,
                    _ => OperationKind::Write,
                };
                // A refused operation (a duplicate, a missing row) changes
                // nothing; the transaction goes on.
                let _ = execute(&mut original, id, kind, &key(row), &values(kind, row, n));
            }
            if !original.has_transaction(id) {
                continue;
            }
            original.prepare(id).unwrap();
            if transaction.commit {
                bytes.clear();
                original.prepared_changes(id, &mut bytes).unwrap();
                original.commit(id, 1).unwrap();
                replay(&mut replayed, id, &bytes);
            } else {
                original.abort(id).unwrap();
            }
        }
        prop_assert_eq!(rows(&mut original), rows(&mut replayed));
    }
}

#[test]
fn a_row_inserted_then_deleted_is_no_change_and_an_update_logs_the_whole_row() {
    let mut engine = engine();
    execute(
        &mut engine,
        1,
        OperationKind::Insert,
        &key(1),
        &values(OperationKind::Insert, 1, 1),
    )
    .unwrap();
    engine.prepare(1).unwrap();
    engine.commit(1, 1).unwrap();
    execute(
        &mut engine,
        2,
        OperationKind::Insert,
        &key(2),
        &values(OperationKind::Insert, 2, 2),
    )
    .unwrap();
    execute(&mut engine, 2, OperationKind::Delete, &key(2), &[]).unwrap();
    execute(
        &mut engine,
        2,
        OperationKind::Update,
        &key(1),
        &values(OperationKind::Update, 1, 7),
    )
    .unwrap();
    let mut bytes = Vec::new();
    assert_eq!(
        engine.prepared_changes(2, &mut bytes).map_err(|e| e.code),
        Err(ErrorCode::WrongTransactionState),
        "known once prepared"
    );
    engine.prepare(2).unwrap();
    assert_eq!(engine.prepared_changes(2, &mut bytes).unwrap(), 1);
    let logged: Vec<_> = changes(&bytes).map(|c| c.unwrap()).collect();
    assert_eq!(logged[0].0, CHANGE_PUT);
    let columns: Vec<_> = AttrInfoReader::new(logged[0].1)
        .map(|e| e.unwrap().0)
        .collect();
    assert_eq!(columns, [0, 1, 2], "every column of the updated row");
    let mut truncated = bytes.clone();
    truncated.pop();
    assert!(changes(&truncated).any(|c| c.is_err()));
}
