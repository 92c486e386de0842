//! The engine's primary-key paths make no heap allocation per operation once
//! warm: counted by the same allocator wrapper `shoal` installs.

use bench::allocation_counter::{CountingAllocator, allocations, start_counting};
use schema::types::ColumnType;
use schema::{AttrInfoWriter, ColumnDef, IndexDef, TableDef};
use std::alloc::System;
use storage::{Engine, EngineConfig, NO_TRANSACTION, OperationKind, OperationRequest, ReadMode};

#[global_allocator]
static GLOBAL: CountingAllocator<System> = CountingAllocator(System);

const ROWS: u32 = 20_000;

fn write(
    engine: &mut Engine,
    transaction: u64,
    kind: OperationKind,
    row: u32,
    key: &mut Vec<u8>,
    values: &mut Vec<u8>,
) {
    key.clear();
    AttrInfoWriter::new(key).push(0, Some(&row.to_le_bytes()));
    values.clear();
    if kind != OperationKind::Delete {
        let mut writer = AttrInfoWriter::new(values);
        if kind == OperationKind::Insert {
            writer.push(0, Some(&row.to_le_bytes()));
        }
        writer.push(1, Some(&[row as u8; 40]));
        writer.push(2, Some(&row.to_le_bytes()[..2]));
    }
    let request = OperationRequest {
        transaction,
        token: 0,
        table: 1,
        kind,
        key,
        values,
        columns: &[],
    };
    let mut out = Vec::new();
    engine.execute(0, &request, &mut out).unwrap();
    engine.prepare(transaction).unwrap();
    engine.commit(transaction, 1).unwrap();
}

#[test]
fn primary_key_operations_do_not_allocate() {
    let mut engine = Engine::new(EngineConfig {
        data_memory_bytes: 64 << 20,
        ..Default::default()
    })
    .unwrap();
    let def = TableDef::new(
        "t",
        vec![
            ColumnDef::new("k", ColumnType::Int { unsigned: true }, false),
            ColumnDef::new("payload", ColumnType::Binary { length: 40 }, false),
            ColumnDef::new("tag", ColumnType::Varbinary { length: 8 }, true),
        ],
        vec![0],
        vec![
            IndexDef {
                name: "ordered".into(),
                columns: vec![0],
                unique: false,
            },
            // A unique index makes every insert run the unique-key check.
            IndexDef {
                name: "tag".into(),
                columns: vec![2],
                unique: true,
            },
        ],
    )
    .unwrap();
    engine.create_table(1, def).unwrap();
    let mut key = Vec::with_capacity(16);
    let mut values = Vec::with_capacity(128);
    let mut out = Vec::with_capacity(256);
    let mut transaction = 0u64;
    // Warm up: the first rows make the table's pages and the scratch buffers.
    for row in 0..ROWS {
        transaction += 1;
        write(
            &mut engine,
            transaction,
            OperationKind::Insert,
            row,
            &mut key,
            &mut values,
        );
    }
    // The counter counts: one boxed value is one allocation.
    start_counting();
    let before = allocations();
    let boxed = std::hint::black_box(Box::new(ROWS));
    assert_eq!(
        allocations() - before,
        1,
        "the counter missed an allocation"
    );
    drop(boxed);
    for (kind, name) in [
        (OperationKind::Read(ReadMode::Committed), "read"),
        (OperationKind::Update, "update"),
        (OperationKind::Delete, "delete"),
        (OperationKind::Insert, "insert"),
    ] {
        let before = allocations();
        for row in 0..ROWS {
            if let OperationKind::Read(_) = kind {
                key.clear();
                AttrInfoWriter::new(&mut key).push(0, Some(&row.to_le_bytes()));
                out.clear();
                let request = OperationRequest {
                    transaction: NO_TRANSACTION,
                    token: 0,
                    table: 1,
                    kind,
                    key: &key,
                    values: &[],
                    columns: &[0, 1, 2],
                };
                engine.execute(0, &request, &mut out).unwrap();
            } else {
                transaction += 1;
                write(&mut engine, transaction, kind, row, &mut key, &mut values);
            }
        }
        let made = allocations() - before;
        assert_eq!(made, 0, "{ROWS} {name}s made {made} heap allocations");
    }
    engine.check_invariants();
}
