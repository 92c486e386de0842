//! Criterion benches of the storage engine's hot paths, the same operations
//! `shoal bench storage` times: committed primary-key reads, single-row
//! insert/update/delete transactions, and a filtered range scan.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use schema::types::ColumnType;
use schema::{AttrInfoWriter, ColumnDef, IndexDef, TableDef};
use std::hint::black_box;
use storage::filter::FilterBuilder;
use storage::{
    Engine, EngineConfig, NO_TRANSACTION, OperationKind, OperationRequest, ReadMode, ScanBound,
    ScanRequest,
};

const ROWS: u32 = 100_000;
const PAYLOAD_BYTES: usize = 64;
const TABLE: u32 = 1;

fn loaded_engine() -> Engine {
    let mut engine = Engine::new(EngineConfig {
        data_memory_bytes: 256 << 20,
        ..Default::default()
    })
    .unwrap();
    let def = TableDef::new(
        "bench",
        vec![
            ColumnDef::new("k", ColumnType::Int { unsigned: true }, false),
            ColumnDef::new(
                "payload",
                ColumnType::Binary {
                    length: PAYLOAD_BYTES as u16,
                },
                false,
            ),
        ],
        vec![0],
        vec![IndexDef {
            name: "ordered".into(),
            columns: vec![0],
            unique: false,
        }],
    )
    .unwrap();
    engine.create_table(TABLE, def).unwrap();
    for row in 0..ROWS {
        write(
            &mut engine,
            u64::from(row) + 1,
            OperationKind::Insert,
            row,
            row as u8,
        );
    }
    engine
}

fn write(engine: &mut Engine, transaction: u64, kind: OperationKind, row: u32, fill: u8) {
    let mut key = Vec::with_capacity(8);
    AttrInfoWriter::new(&mut key).push(0, Some(&row.to_le_bytes()));
    let mut values = Vec::with_capacity(PAYLOAD_BYTES + 16);
    if kind != OperationKind::Delete {
        let mut writer = AttrInfoWriter::new(&mut values);
        if kind == OperationKind::Insert {
            writer.push(0, Some(&row.to_le_bytes()));
        }
        writer.push(1, Some(&[fill; PAYLOAD_BYTES]));
    }
    let request = OperationRequest {
        transaction,
        token: 0,
        table: TABLE,
        kind,
        key: &key,
        values: &values,
        columns: &[],
    };
    engine.execute(0, &request, &mut Vec::new()).unwrap();
    engine.prepare(transaction).unwrap();
    engine.commit(transaction, 1).unwrap();
}

fn primary_key_operations(c: &mut Criterion) {
    let mut engine = loaded_engine();
    let mut group = c.benchmark_group("primary_key");
    group.throughput(Throughput::Elements(1));
    let mut next = 0u32;
    let mut key = Vec::with_capacity(8);
    let mut out = Vec::with_capacity(256);
    group.bench_function("read_committed", |b| {
        b.iter(|| {
            next = next.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            key.clear();
            AttrInfoWriter::new(&mut key).push(0, Some(&(next % ROWS).to_le_bytes()));
            out.clear();
            let request = OperationRequest {
                transaction: NO_TRANSACTION,
                token: 0,
                table: TABLE,
                kind: OperationKind::Read(ReadMode::Committed),
                key: &key,
                values: &[],
                columns: &[0, 1],
            };
            black_box(engine.execute(0, &request, &mut out).unwrap());
        })
    });
    let mut transaction = 10_000_000u64;
    group.bench_function("update_transaction", |b| {
        b.iter(|| {
            next = next.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            transaction += 1;
            write(
                &mut engine,
                transaction,
                OperationKind::Update,
                next % ROWS,
                next as u8,
            );
        })
    });
    let mut fresh = ROWS;
    group.bench_function("insert_then_delete_transactions", |b| {
        b.iter(|| {
            transaction += 2;
            write(&mut engine, transaction, OperationKind::Insert, fresh, 1);
            write(
                &mut engine,
                transaction + 1,
                OperationKind::Delete,
                fresh,
                0,
            );
            fresh += 1;
        })
    });
    group.finish();
}

fn filtered_range_scan(c: &mut Criterion) {
    let mut engine = loaded_engine();
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Elements(u64::from(ROWS)));
    let mut threshold = [0u8; PAYLOAD_BYTES];
    threshold[0] = 26;
    let mut builder = FilterBuilder::new();
    builder.lt(1, &threshold);
    let filter = builder.finish().unwrap();
    let mut out = Vec::with_capacity(64 * 1024);
    group.bench_function("ordered_index_range_with_pushed_filter", |b| {
        b.iter(|| {
            let scan = engine
                .open_scan(&ScanRequest {
                    transaction: NO_TRANSACTION,
                    token: 0,
                    table: TABLE,
                    index: Some(0),
                    lower: ScanBound::Unbounded,
                    upper: ScanBound::Unbounded,
                    descending: false,
                    filter: &filter,
                    columns: &[0, 1],
                    mode: ReadMode::Committed,
                    gci: false,
                })
                .unwrap();
            loop {
                out.clear();
                let batch = engine.scan_next(0, scan, 256, 64 * 1024, &mut out).unwrap();
                if batch.finished {
                    break;
                }
            }
            engine.close_scan(scan).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, primary_key_operations, filtered_range_scan);
criterion_main!(benches);
