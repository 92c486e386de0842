//! Property test: random operations, commits and aborts of several
//! concurrent transactions against a reference model (`BTreeMap`), comparing
//! what each transaction sees, lock conflicts, scan results and index order,
//! and checking after every step that the engine's structures account for
//! every slot, entry and record (no leaks).

use proptest::prelude::*;
use schema::key::{encode_key_column, encode_sortable};
use schema::types::{Collation, ColumnType};
use schema::{AttrInfoReader, AttrInfoWriter, ColumnDef, ErrorCode, IndexDef, TableDef};
use std::collections::{BTreeMap, HashMap};
use storage::{
    Engine, EngineConfig, NO_TRANSACTION, OperationKind, OperationRequest, Outcome, ReadMode,
    ScanBound, ScanRequest,
};

const TABLE: u32 = 3;
const KEYS: i32 = 24;
const TRANSACTIONS: u64 = 3;

type Row = (Option<String>, Option<i64>);

fn table_def() -> TableDef {
    TableDef::new(
        "model",
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
        vec![
            IndexDef {
                name: "by_n".into(),
                columns: vec![2],
                unique: false,
            },
            IndexDef {
                name: "by_name_id".into(),
                columns: vec![1, 0],
                unique: false,
            },
        ],
    )
    .unwrap()
}

#[derive(Debug, Clone)]
enum Step {
    Operation {
        transaction: u64,
        kind: u8,
        id: i32,
        name: Option<String>,
        n: Option<i64>,
        set_name: bool,
    },
    Commit(u64),
    Abort(u64),
    Scan {
        transaction: u64,
        index: Option<u16>,
        descending: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let name = prop_oneof![
        Just(None),
        "[a-cA-C]{0,3}".prop_map(Some),
        "[x]{30,40}".prop_map(Some)
    ];
    prop_oneof![
        8 => (1..=TRANSACTIONS, 0u8..7, 0..KEYS, name, prop::option::of(-3i64..3), any::<bool>())
            .prop_map(|(transaction, kind, id, name, n, set_name)| Step::Operation { transaction, kind, id, name, n, set_name }),
        1 => (1..=TRANSACTIONS).prop_map(Step::Commit),
        1 => (1..=TRANSACTIONS).prop_map(Step::Abort),
        1 => (0..=TRANSACTIONS, prop::option::of(0u16..2), any::<bool>())
            .prop_map(|(transaction, index, descending)| Step::Scan { transaction, index, descending }),
    ]
}

#[derive(Default)]
struct Model {
    committed: BTreeMap<i32, Row>,
    /// Per transaction: its pending view of each key it changed.
    pending: HashMap<u64, BTreeMap<i32, Option<Row>>>,
    /// Per transaction: keys it holds a lock on (true = exclusive).
    locks: HashMap<u64, BTreeMap<i32, bool>>,
    /// Transactions the engine knows (have begun).
    active: HashMap<u64, ()>,
}

impl Model {
    fn view(&self, transaction: u64, id: i32) -> Option<Row> {
        if let Some(change) = self.pending.get(&transaction).and_then(|p| p.get(&id)) {
            return change.clone();
        }
        self.committed.get(&id).cloned()
    }

    fn conflicts(&self, transaction: u64, id: i32, exclusive: bool) -> bool {
        self.locks.iter().any(|(&other, keys)| {
            other != transaction
                && keys
                    .get(&id)
                    .is_some_and(|&held_exclusive| held_exclusive || exclusive)
        })
    }

    fn lock(&mut self, transaction: u64, id: i32, exclusive: bool) {
        let held = self
            .locks
            .entry(transaction)
            .or_default()
            .entry(id)
            .or_insert(exclusive);
        *held |= exclusive;
    }

    fn end(&mut self, transaction: u64, commit: bool) {
        if let Some(changes) = self.pending.remove(&transaction)
            && commit
        {
            for (id, change) in changes {
                match change {
                    Some(row) => self.committed.insert(id, row),
                    None => self.committed.remove(&id),
                };
            }
        }
        self.locks.remove(&transaction);
        self.active.remove(&transaction);
    }
}

fn key(id: i32) -> Vec<u8> {
    let mut bytes = Vec::new();
    AttrInfoWriter::new(&mut bytes).push(0, Some(&id.to_le_bytes()));
    bytes
}

fn decode_row(bytes: &[u8]) -> (i32, Row) {
    let entries: Vec<_> = AttrInfoReader::new(bytes).map(|e| e.unwrap()).collect();
    let id = i32::from_le_bytes(entries[0].1.unwrap().try_into().unwrap());
    let name = entries[1].1.map(|b| String::from_utf8(b.to_vec()).unwrap());
    let n = entries[2]
        .1
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()));
    (id, (name, n))
}

/// The sortable key of an index for a model row, to check scan order.
fn index_key(index: u16, id: i32, row: &Row) -> Vec<u8> {
    let def = table_def();
    let mut out = Vec::new();
    if index == 0 {
        encode_sortable(
            def.column_type(2),
            row.1.map(i64::to_le_bytes).as_ref().map(|b| &b[..]),
            &mut out,
        );
    } else {
        encode_sortable(
            def.column_type(1),
            row.0.as_ref().map(String::as_bytes),
            &mut out,
        );
        encode_key_column(def.column_type(0), false, Some(&id.to_le_bytes()), &mut out);
    }
    out
}

fn scan(
    engine: &mut Engine,
    transaction: u64,
    index: Option<u16>,
    descending: bool,
) -> Vec<(i32, Row)> {
    let scan = engine
        .open_scan(&ScanRequest {
            transaction,
            token: 0,
            table: TABLE,
            index,
            lower: ScanBound::Unbounded,
            upper: ScanBound::Unbounded,
            descending,
            filter: &[],
            columns: &[0, 1, 2],
            mode: ReadMode::Committed,
            gci: false,
        })
        .unwrap();
    let mut rows = Vec::new();
    loop {
        let mut out = Vec::new();
        // Tiny batches exercise the resumable cursor: three rows at a time,
        // or (descending) a one-byte limit, which still returns one row.
        let (rows_max, bytes_max, per_batch) = if descending {
            (100, 1, 1)
        } else {
            (3, 1 << 20, 3)
        };
        let batch = engine
            .scan_next(0, scan, rows_max, bytes_max, &mut out)
            .unwrap();
        assert!(
            batch.rows == per_batch || batch.finished,
            "a batch stops early only at the end: {batch:?} index {index:?} descending {descending}"
        );
        let mut at = 0;
        while at < out.len() {
            let length = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
            rows.push(decode_row(&out[at + 4..at + 4 + length]));
            at += 4 + length;
        }
        if batch.finished {
            break;
        }
    }
    engine.close_scan(scan).unwrap();
    rows
}

fn run_steps(steps: Vec<Step>, data_memory_bytes: u64) {
    let mut engine = Engine::new(EngineConfig {
        data_memory_bytes,
        ..Default::default()
    })
    .unwrap();
    engine.create_table(TABLE, table_def()).unwrap();
    let mut model = Model::default();
    for step in steps {
        match step {
            Step::Operation {
                transaction,
                kind,
                id,
                name,
                n,
                set_name,
            } => {
                let kind = match kind {
                    0 => OperationKind::Read(ReadMode::Committed),
                    1 => OperationKind::Read(ReadMode::Shared),
                    2 => OperationKind::Read(ReadMode::Exclusive),
                    3 => OperationKind::Insert,
                    4 => OperationKind::Update,
                    5 => OperationKind::Write,
                    _ => OperationKind::Delete,
                };
                let mut values = Vec::new();
                let mut writer = AttrInfoWriter::new(&mut values);
                if matches!(kind, OperationKind::Insert | OperationKind::Write) {
                    writer.push(0, Some(&id.to_le_bytes()));
                }
                if set_name || kind == OperationKind::Insert {
                    writer.push(1, name.as_deref().map(str::as_bytes));
                }
                let n_bytes = n.map(i64::to_le_bytes);
                writer.push(2, n_bytes.as_ref().map(|b| &b[..]));
                let key = key(id);
                let request = OperationRequest {
                    transaction,
                    token: 0,
                    table: TABLE,
                    kind,
                    key: &key,
                    values: &values,
                    columns: &[0, 1, 2],
                };
                let mut out = Vec::new();
                let result = engine.execute(0, &request, &mut out).map_err(|e| e.code);
                let view = model.view(transaction, id);
                let exclusive = !matches!(kind, OperationKind::Read(ReadMode::Shared));
                let needs_lock = kind != OperationKind::Read(ReadMode::Committed);
                // A row exists in the engine while anyone sees or changes it.
                let row_exists = model.committed.contains_key(&id)
                    || model.pending.values().any(|p| p.contains_key(&id));
                let must_wait =
                    needs_lock && row_exists && model.conflicts(transaction, id, exclusive);
                if must_wait && result == Err(ErrorCode::TableFull) {
                    // Parking a waiting request takes DataMemory too; when
                    // none is left the operation fails and nothing changed.
                    engine.check_invariants();
                    continue;
                }
                if must_wait {
                    assert_eq!(result, Ok(Outcome::Waiting), "{kind:?} on {id} should wait");
                    // The model keeps no waiters: the waiting transaction gives up.
                    engine.abort(transaction).unwrap();
                    model.end(transaction, false);
                    assert!(engine.take_completions().is_empty());
                    engine.check_invariants();
                    continue;
                }
                assert_ne!(
                    result,
                    Ok(Outcome::Waiting),
                    "{kind:?} on {id} should not wait"
                );
                if needs_lock {
                    model.active.insert(transaction, ());
                }
                let new_row = |base: Option<&Row>| -> Row {
                    let mut row = base.cloned().unwrap_or((None, None));
                    if set_name || kind == OperationKind::Insert {
                        row.0 = name.clone();
                    }
                    row.1 = n;
                    row
                };
                let expected: Result<Option<Row>, ErrorCode> = match (kind, &view) {
                    (OperationKind::Read(_), Some(row)) => Ok(Some(row.clone())),
                    (
                        OperationKind::Read(_) | OperationKind::Update | OperationKind::Delete,
                        None,
                    ) => Err(ErrorCode::NoSuchRow),
                    (OperationKind::Insert, Some(_)) => Err(ErrorCode::DuplicateKey),
                    (OperationKind::Insert | OperationKind::Write, None) => Ok(None),
                    (OperationKind::Update | OperationKind::Write, Some(_)) => Ok(None),
                    (OperationKind::Delete, Some(_)) => Ok(None),
                };
                match (&expected, &result) {
                    (Err(expected), Err(actual)) => {
                        assert_eq!(expected, actual, "{kind:?} on {id}")
                    }
                    (Ok(_), Err(ErrorCode::TableFull)) => {
                        // Memory ran out: the operation failed without a trace.
                        engine.check_invariants();
                        continue;
                    }
                    (Ok(read), Ok(Outcome::Done)) => {
                        if let Some(row) = read {
                            assert_eq!(&decode_row(&out), &(id, row.clone()), "read of {id}");
                        }
                    }
                    _ => panic!("{kind:?} on {id}: expected {expected:?}, engine said {result:?}"),
                }
                if result.is_ok() {
                    match kind {
                        OperationKind::Read(ReadMode::Committed) => {}
                        OperationKind::Read(ReadMode::Shared) => model.lock(transaction, id, false),
                        OperationKind::Read(ReadMode::Exclusive) => {
                            model.lock(transaction, id, true)
                        }
                        OperationKind::Delete => {
                            model.lock(transaction, id, true);
                            model
                                .pending
                                .entry(transaction)
                                .or_default()
                                .insert(id, None);
                        }
                        _ => {
                            model.lock(transaction, id, true);
                            let row = new_row(view.as_ref());
                            model
                                .pending
                                .entry(transaction)
                                .or_default()
                                .insert(id, Some(row));
                        }
                    }
                }
                // A failed operation keeps no lock it took for itself, and
                // gives back an upgrade: the model's locks stay as they were.
            }
            Step::Commit(transaction) | Step::Abort(transaction) => {
                let commit = matches!(step, Step::Commit(_));
                if model.active.contains_key(&transaction) {
                    if commit {
                        engine.prepare(transaction).unwrap();
                        engine.commit(transaction, 1).unwrap();
                    } else {
                        engine.abort(transaction).unwrap();
                    }
                } else {
                    // Never began (or only failed before taking anything).
                    let _ = engine.abort(transaction);
                }
                model.end(transaction, commit);
            }
            Step::Scan {
                transaction,
                index,
                descending,
            } => {
                let rows = scan(&mut engine, transaction, index, descending);
                let mut expected: BTreeMap<i32, Row> = model.committed.clone();
                if let Some(changes) = model.pending.get(&transaction) {
                    for (id, change) in changes {
                        match change {
                            Some(row) => expected.insert(*id, row.clone()),
                            None => expected.remove(id),
                        };
                    }
                }
                let seen: BTreeMap<i32, Row> = rows.iter().cloned().collect();
                assert_eq!(seen.len(), rows.len(), "a row was returned twice");
                assert_eq!(
                    seen, expected,
                    "scan {index:?} of transaction {transaction}"
                );
                if let Some(index) = index {
                    let keys: Vec<Vec<u8>> = rows
                        .iter()
                        .map(|(id, row)| index_key(index, *id, row))
                        .collect();
                    for pair in keys.windows(2) {
                        if descending {
                            assert!(pair[0] >= pair[1], "descending scan out of order");
                        } else {
                            assert!(pair[0] <= pair[1], "ascending scan out of order");
                        }
                    }
                }
            }
        }
        engine.check_invariants();
        for id in 0..KEYS {
            let key = key(id);
            let request = OperationRequest {
                transaction: NO_TRANSACTION,
                token: 0,
                table: TABLE,
                kind: OperationKind::Read(ReadMode::Committed),
                key: &key,
                values: &[],
                columns: &[0, 1, 2],
            };
            let mut out = Vec::new();
            match engine.execute(0, &request, &mut out) {
                Ok(_) => assert_eq!(
                    Some(decode_row(&out).1),
                    model.committed.get(&id).cloned(),
                    "committed {id}"
                ),
                Err(error) => {
                    assert_eq!(error.code, ErrorCode::NoSuchRow);
                    assert_eq!(model.committed.get(&id), None, "committed {id} missing");
                }
            }
        }
    }
    for transaction in 1..=TRANSACTIONS {
        let _ = engine.abort(transaction);
    }
    engine.check_invariants();
    assert_eq!(engine.operations_in_use(), 0);
    assert_eq!(engine.row_count(TABLE), Some(model.committed.len() as u64));
    // Every page comes back when the table goes.
    engine.drop_table(TABLE).unwrap();
    assert_eq!(engine.memory_report().pages_used, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_model(steps in prop::collection::vec(step(), 1..120)) {
        run_steps(steps, 8 << 20);
    }

    #[test]
    fn engine_matches_model_when_memory_runs_out(steps in prop::collection::vec(step(), 1..120)) {
        // Eight pages: the table's first pages fill quickly, so inserts and
        // updates hit "table full" in the middle of transactions.
        run_steps(steps, 8 * 32 * 1024);
    }
}
