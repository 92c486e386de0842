//! `shoal bench storage`: single-threaded figures for one partition.
//!
//! For each row shape (a 4-byte key with a 64-byte and with a 255-byte
//! payload) it loads `rows` rows into one engine and measures, on one
//! thread: inserts, committed primary-key reads, an ordered-index range scan
//! over every row with a pushed filter, updates and deletes. Each write is a
//! transaction of its own (operation, prepare, commit), as a coordinator
//! would drive it. It also reports DataMemory bytes per row against the raw
//! row bytes and heap allocations per operation, counted by the process's
//! global allocator.

use crate::allocation_counter::allocations;
use schema::types::ColumnType;
use schema::{AttrInfoWriter, ColumnDef, IndexDef, TableDef};
use std::time::{Duration, Instant};
use storage::filter::FilterBuilder;
use storage::{
    Engine, EngineConfig, NO_TRANSACTION, OperationKind, OperationRequest, ReadMode, ScanBound,
    ScanRequest,
};

/// What `shoal bench storage` was asked for.
#[derive(Debug, Clone)]
pub struct StorageOptions {
    /// Rows loaded into the partition (the figure is 1,000,000).
    pub rows: u64,
    /// Print one JSON object instead of a table.
    pub json: bool,
}

/// The payload sizes measured, in bytes.
const PAYLOAD_SIZES: [usize; 2] = [64, 255];
/// Rows per scan batch, as a SQL node would ask for.
const SCAN_BATCH_ROWS: u32 = 256;
const SCAN_BATCH_BYTES: u32 = 64 * 1024;
/// A payload byte below this matches the pushed filter: about one row in ten.
const FILTER_THRESHOLD: u8 = 26;

/// Figures for one row shape.
#[derive(Debug, Clone)]
pub struct ShapeFigures {
    pub payload_bytes: usize,
    pub rows: u64,
    pub inserts_per_s: f64,
    pub pk_reads_per_s: f64,
    pub scan_rows_per_s: f64,
    pub scan_rows_matched: u64,
    pub updates_per_s: f64,
    pub deletes_per_s: f64,
    pub memory_bytes_per_row: f64,
    pub memory_bytes_per_row_without_ordered_index: f64,
    pub raw_bytes_per_row: f64,
    pub allocations_per_read: f64,
    pub allocations_per_insert: f64,
    pub allocations_per_update: f64,
    pub allocations_per_delete: f64,
}

/// A permutation of `0..count` from a fixed seed, so runs are comparable.
fn shuffled(count: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..count as u32).collect();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The payload of row `key`: bytes spread so the filter matches about a tenth.
fn fill_payload(key: u32, version: u8, payload: &mut [u8]) {
    let mut state = u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(version);
    for chunk in payload.chunks_mut(8) {
        state ^= state >> 29;
        state = state.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let bytes = state.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    payload[0] = (state >> 56) as u8 % 255;
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

fn table_def(payload_bytes: usize) -> TableDef {
    TableDef::new(
        &format!("bench_{payload_bytes}"),
        vec![
            ColumnDef::new("k", ColumnType::Int { unsigned: true }, false),
            ColumnDef::new(
                "payload",
                ColumnType::Binary {
                    length: payload_bytes as u16,
                },
                false,
            ),
        ],
        vec![0],
        vec![IndexDef {
            name: "PRIMARY_ordered".into(),
            columns: vec![0],
            unique: false,
        }],
    )
    .expect("benchmark table is valid")
}

/// Measures one row shape.
pub fn measure_shape(rows: u64, payload_bytes: usize) -> Result<ShapeFigures, String> {
    crate::allocation_counter::start_counting();
    let order = shuffled(rows);
    // Room for the rows, their indexes and a copy per row in flight.
    let data_memory_bytes = (rows * (payload_bytes as u64 + 96) * 2).max(64 << 20);
    // DataMemory is committed at start, on huge pages where the kernel has
    // them, as a data node does; page faults are not counted as insert time.
    let config = EngineConfig {
        data_memory_bytes,
        touch_memory_at_start: true,
        memory_advice: Some(crate::huge_pages::advise_huge_pages),
        ..EngineConfig::default()
    };
    let mut engine = Engine::new(config).map_err(|e| e.to_string())?;
    let table = 1;
    engine
        .create_table(table, table_def(payload_bytes))
        .map_err(|e| e.to_string())?;

    let mut key = Vec::with_capacity(16);
    let mut values = Vec::with_capacity(payload_bytes + 16);
    let mut payload = vec![0u8; payload_bytes];
    let mut out = Vec::with_capacity(64 * 1024);
    let mut transaction = 1u64;

    let mut write = |engine: &mut Engine,
                     kind: OperationKind,
                     row: u32,
                     version: u8,
                     key: &mut Vec<u8>,
                     values: &mut Vec<u8>,
                     payload: &mut [u8]|
     -> Result<(), String> {
        key.clear();
        AttrInfoWriter::new(key).push(0, Some(&row.to_le_bytes()));
        values.clear();
        if kind != OperationKind::Delete {
            fill_payload(row, version, payload);
            let mut writer = AttrInfoWriter::new(values);
            if kind == OperationKind::Insert {
                writer.push(0, Some(&row.to_le_bytes()));
            }
            writer.push(1, Some(payload));
        }
        let request = OperationRequest {
            transaction,
            token: 0,
            table,
            kind,
            key,
            values,
            columns: &[],
        };
        engine
            .execute(0, &request, &mut Vec::new())
            .map_err(|e| e.to_string())?;
        engine.prepare(transaction).map_err(|e| e.to_string())?;
        engine.commit(transaction, 1).map_err(|e| e.to_string())?;
        transaction += 1;
        Ok(())
    };

    // Inserts.
    let allocations_before = allocations();
    let started = Instant::now();
    for &row in &order {
        write(
            &mut engine,
            OperationKind::Insert,
            row,
            0,
            &mut key,
            &mut values,
            &mut payload,
        )?;
    }
    let insert_time = started.elapsed();
    let allocations_per_insert = (allocations() - allocations_before) as f64 / rows as f64;

    let report = engine.memory_report();
    let table_memory = &report.tables[0];
    let page_bytes = report.page_size_bytes as f64;
    let memory_bytes_per_row = table_memory.pages() as f64 * page_bytes / rows as f64;
    let memory_bytes_per_row_without_ordered_index =
        (table_memory.pages() - table_memory.ordered_index_pages) as f64 * page_bytes / rows as f64;

    // Committed reads, in a different random order than the inserts.
    let reads = rows.max(1_000_000);
    let read_order = shuffled(rows);
    let mut read_keys = Vec::with_capacity(16);
    let allocations_before = allocations();
    let started = Instant::now();
    for i in 0..reads {
        let row = read_order[(i % rows) as usize];
        read_keys.clear();
        AttrInfoWriter::new(&mut read_keys).push(0, Some(&row.to_le_bytes()));
        out.clear();
        let request = OperationRequest {
            transaction: NO_TRANSACTION,
            token: 0,
            table,
            kind: OperationKind::Read(ReadMode::Committed),
            key: &read_keys,
            values: &[],
            columns: &[0, 1],
        };
        engine
            .execute(0, &request, &mut out)
            .map_err(|e| e.to_string())?;
    }
    let read_time = started.elapsed();
    let allocations_per_read = (allocations() - allocations_before) as f64 / reads as f64;

    // A range scan over every key with a pushed filter on the payload.
    let mut threshold = vec![0u8; payload_bytes];
    threshold[0] = FILTER_THRESHOLD;
    let filter = {
        let mut builder = FilterBuilder::new();
        builder.lt(1, &threshold);
        builder.finish().map_err(|e| e.to_string())?
    };
    let mut low = Vec::new();
    AttrInfoWriter::new(&mut low).push(0, Some(&0u32.to_le_bytes()));
    let started = Instant::now();
    let scan = engine
        .open_scan(&ScanRequest {
            transaction: NO_TRANSACTION,
            token: 0,
            table,
            index: Some(0),
            lower: ScanBound::Inclusive(&low),
            upper: ScanBound::Unbounded,
            descending: false,
            filter: &filter,
            columns: &[0, 1],
            mode: ReadMode::Committed,
            gci: false,
        })
        .map_err(|e| e.to_string())?;
    let mut matched = 0u64;
    loop {
        out.clear();
        let batch = engine
            .scan_next(0, scan, SCAN_BATCH_ROWS, SCAN_BATCH_BYTES, &mut out)
            .map_err(|e| e.to_string())?;
        matched += u64::from(batch.rows);
        if batch.finished {
            break;
        }
    }
    engine.close_scan(scan).map_err(|e| e.to_string())?;
    let scan_time = started.elapsed();

    // Updates.
    let allocations_before = allocations();
    let started = Instant::now();
    for &row in &read_order {
        write(
            &mut engine,
            OperationKind::Update,
            row,
            1,
            &mut key,
            &mut values,
            &mut payload,
        )?;
    }
    let update_time = started.elapsed();
    let allocations_per_update = (allocations() - allocations_before) as f64 / rows as f64;

    // Deletes.
    let allocations_before = allocations();
    let started = Instant::now();
    for &row in &order {
        write(
            &mut engine,
            OperationKind::Delete,
            row,
            0,
            &mut key,
            &mut values,
            &mut payload,
        )?;
    }
    let delete_time = started.elapsed();
    let allocations_per_delete = (allocations() - allocations_before) as f64 / rows as f64;
    if engine.row_count(table) != Some(0) {
        return Err("rows left after deleting every row".into());
    }

    Ok(ShapeFigures {
        payload_bytes,
        rows,
        inserts_per_s: per_second(rows, insert_time),
        pk_reads_per_s: per_second(reads, read_time),
        scan_rows_per_s: per_second(rows, scan_time),
        scan_rows_matched: matched,
        updates_per_s: per_second(rows, update_time),
        deletes_per_s: per_second(rows, delete_time),
        memory_bytes_per_row,
        memory_bytes_per_row_without_ordered_index,
        raw_bytes_per_row: (4 + payload_bytes) as f64,
        allocations_per_read,
        allocations_per_insert,
        allocations_per_update,
        allocations_per_delete,
    })
}

fn shape_json(figures: &ShapeFigures) -> serde_json::Value {
    serde_json::json!({
        "payload_bytes": figures.payload_bytes,
        "rows": figures.rows,
        "pk_reads_per_s": figures.pk_reads_per_s.round(),
        "inserts_per_s": figures.inserts_per_s.round(),
        "updates_per_s": figures.updates_per_s.round(),
        "deletes_per_s": figures.deletes_per_s.round(),
        "scan_rows_per_s": figures.scan_rows_per_s.round(),
        "scan_rows_matched": figures.scan_rows_matched,
        "memory_bytes_per_row": (figures.memory_bytes_per_row * 10.0).round() / 10.0,
        "memory_bytes_per_row_without_ordered_index": (figures.memory_bytes_per_row_without_ordered_index * 10.0).round() / 10.0,
        "raw_bytes_per_row": figures.raw_bytes_per_row,
        "memory_ratio": (figures.memory_bytes_per_row / figures.raw_bytes_per_row * 100.0).round() / 100.0,
        "allocations_per_read": figures.allocations_per_read,
        "allocations_per_insert": figures.allocations_per_insert,
        "allocations_per_update": figures.allocations_per_update,
        "allocations_per_delete": figures.allocations_per_delete,
    })
}

/// Runs the storage benchmark and prints its figures to stdout.
pub fn run(options: &StorageOptions) -> Result<(), String> {
    if options.rows == 0 || options.rows > u64::from(u32::MAX) {
        return Err("--rows must be 1..=4294967295".into());
    }
    let mut results = Vec::new();
    for payload_bytes in PAYLOAD_SIZES {
        if !options.json {
            eprintln!(
                "measuring {} rows of 4-byte key + {payload_bytes}-byte payload ...",
                options.rows
            );
        }
        results.push(measure_shape(options.rows, payload_bytes)?);
    }
    if options.json {
        // The 64-byte shape's figures at the top level (the headline), every
        // shape under "shapes".
        let mut object = shape_json(&results[0]);
        object["shapes"] = serde_json::Value::Array(results.iter().map(shape_json).collect());
        object["threads"] = 1.into();
        println!("{object}");
        return Ok(());
    }
    println!(
        "shoal bench storage: one partition, one thread, {} rows",
        options.rows
    );
    println!(
        "{:<34} {:>16} {:>16}",
        "figure", "4 B + 64 B", "4 B + 255 B"
    );
    let line = |name: &str, value: &dyn Fn(&ShapeFigures) -> String| {
        println!(
            "{:<34} {:>16} {:>16}",
            name,
            value(&results[0]),
            value(&results[1])
        );
    };
    let rate = |v: f64| format!("{:.0}", v);
    line("primary-key reads/s (committed)", &|f| {
        rate(f.pk_reads_per_s)
    });
    line("inserts/s (1 per transaction)", &|f| rate(f.inserts_per_s));
    line("updates/s (1 per transaction)", &|f| rate(f.updates_per_s));
    line("deletes/s (1 per transaction)", &|f| rate(f.deletes_per_s));
    line("range-scan rows/s, pushed filter", &|f| {
        rate(f.scan_rows_per_s)
    });
    line("  rows matching the filter", &|f| {
        f.scan_rows_matched.to_string()
    });
    line("DataMemory bytes/row", &|f| {
        format!("{:.1}", f.memory_bytes_per_row)
    });
    line("  without the ordered index", &|f| {
        format!("{:.1}", f.memory_bytes_per_row_without_ordered_index)
    });
    line("raw bytes/row", &|f| format!("{:.0}", f.raw_bytes_per_row));
    line("memory / raw", &|f| {
        format!("{:.2}", f.memory_bytes_per_row / f.raw_bytes_per_row)
    });
    line("heap allocations per read", &|f| {
        format!("{:.3}", f.allocations_per_read)
    });
    line("heap allocations per insert", &|f| {
        format!("{:.3}", f.allocations_per_insert)
    });
    line("heap allocations per update", &|f| {
        format!("{:.3}", f.allocations_per_update)
    });
    line("heap allocations per delete", &|f| {
        format!("{:.3}", f.allocations_per_delete)
    });
    Ok(())
}
