//! `shoal bench pk`: primary-key operations through the native API against
//! a cluster, beside seed 000's Table 1.
//!
//! - **Synchronous**: `threads` threads, each with its own session, each
//!   operation its own transaction committed in one round trip (as NDB's
//!   bencher does): inserts, reads (committed, distribution aware),
//!   updates, deletes of seed 000's rows (a 4-byte key and a 64- or
//!   255-byte payload). Throughput, and latency per operation (average,
//!   minimum, median, 99th percentile), each normalised to the read.
//! - **Asynchronous, batched**: one thread keeps `async_in_flight`
//!   transactions of `async_batch` committed reads each in flight with
//!   `prepare_async`/`send_poll` (flexAsynch's shape): reads per second.
//! - **Round trips per read**: single-read transactions with distribution
//!   awareness on (a hint) and off (coordinators in turn): client round
//!   trips plus the coordinator's hops to other data nodes, per read.
//!
//! With `--connect` it uses a running cluster; otherwise it starts its own
//! (`shoal up` in a temporary directory) with 2 data nodes, and again with
//! 4 for the round-trip figures.
//!
//! Each synchronous figure also has the CPU time spent per operation by the
//! data nodes (when the benchmark started them) and by this process (the
//! client), from Linux's per-thread scheduler statistics. On a shared
//! machine wall-clock throughput swings with whatever else runs; CPU time
//! per operation is the cost itself, and it holds still.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schema::distribution::TableOptions;
use schema::{AttrInfoWriter, ColumnDef, ColumnType, TableDef};
use shoal_client::{
    Cluster, ExecuteEnd, Hint, OperationKind, Session, TableRoute, Transaction, Value,
};

/// What `shoal bench pk` was asked for.
#[derive(Debug, Clone)]
pub struct PkOptions {
    /// A running cluster's management node, or none to start one.
    pub connect: Option<String>,
    /// The `shoal` executable, to start a cluster.
    pub executable: PathBuf,
    /// Thread counts for the synchronous runs.
    pub threads: Vec<usize>,
    /// Rows each thread inserts, reads, updates and deletes.
    pub rows_per_thread: u32,
    /// Reads per transaction in the asynchronous run.
    pub async_batch: u32,
    /// Transactions in flight in the asynchronous run.
    pub async_in_flight: u32,
    pub async_seconds: f64,
    /// Also start a 4-node cluster for the round-trip figures (when no
    /// `--connect` is given).
    pub four_nodes: bool,
    pub json: bool,
}

/// Seed 000, Table 1: µs average and minimum, and normalised to read.
const SEED_TABLE_1: [(&str, f64, f64, f64); 7] = [
    ("insert 4B+64B", 768.0, 580.0, 2.74),
    ("read 64B", 280.0, 178.0, 1.0),
    ("update 64B", 676.0, 491.0, 2.41),
    ("insert 4B+255B", 826.0, 600.0, 2.82),
    ("read 255B", 293.0, 174.0, 1.0),
    ("update 255B", 697.0, 505.0, 2.38),
    ("delete", 636.0, 202.0, 2.17),
];

#[derive(Debug, Clone, Default)]
pub struct OperationFigures {
    pub name: String,
    pub threads: usize,
    pub operations: u64,
    pub per_second: f64,
    pub average_us: f64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Average latency over the read's of the same shape and thread count.
    pub normalised: f64,
    pub errors: u64,
    /// CPU µs per operation of every data node together; `None` when the
    /// data nodes are not this benchmark's own or not on Linux.
    pub data_node_cpu_us: Option<f64>,
    /// CPU µs per operation of this process (sessions and receiving threads).
    pub client_cpu_us: Option<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct RoundTrips {
    pub data_nodes: usize,
    pub aware: f64,
    pub unaware: f64,
}

fn table_name(payload: usize) -> String {
    format!("bench_pk_{payload}")
}

fn definition(payload: usize) -> Result<TableDef, String> {
    TableDef::new(
        &table_name(payload),
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: true }, false),
            ColumnDef::new(
                "payload",
                ColumnType::Binary {
                    length: payload as u16,
                },
                false,
            ),
        ],
        vec![0],
        Vec::new(),
    )
    .map_err(|e| e.detail.to_string())
}

/// A cluster this benchmark started; stopped when dropped.
struct OwnCluster {
    /// `shoal up`, whose children are the management and data nodes.
    child: Child,
    connectstring: String,
    directory: TemporaryDirectory,
}

/// Removed when dropped, unless `keep` is set (a failed run leaves the
/// cluster's logs behind for the user).
struct TemporaryDirectory {
    path: PathBuf,
    keep: bool,
}

impl Drop for TemporaryDirectory {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

impl OwnCluster {
    /// Keeps the cluster's directory and says where it is, after `error`.
    fn keep_logs(&mut self, error: String) -> String {
        self.directory.keep = true;
        format!(
            "{error} (the cluster's logs are kept in {})",
            self.directory.path.display()
        )
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        // SIGTERM: `shoal up` stops every node cleanly.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn start_cluster(executable: &Path, nodes: usize) -> Result<OwnCluster, String> {
    let directory =
        std::env::temp_dir().join(format!("shoal-bench-pk-{}-{nodes}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).map_err(|e| e.to_string())?;
    let directory = TemporaryDirectory {
        path: directory,
        keep: false,
    };
    let port = free_port()?;
    let sql_port = free_port()?;
    let mut child = Command::new(executable)
        .arg("up")
        .arg("--data-dir")
        .arg(directory.path.join("data"))
        .arg("--nodes")
        .arg(nodes.to_string())
        .arg("--mgm-port")
        .arg(port.to_string())
        .arg("--sql-port")
        .arg(sql_port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start `{} up`: {e}", executable.display()))?;
    let stdout = child.stdout.take().expect("piped");
    let (ready_sender, ready) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("Cluster ready") {
                let _ = ready_sender.send(());
            }
        }
    });
    let cluster = OwnCluster {
        child,
        connectstring: format!("127.0.0.1:{port}"),
        directory,
    };
    ready
        .recv_timeout(Duration::from_secs(60))
        .map_err(|_| format!("the {nodes}-node cluster did not start within 60 s"))?;
    Ok(cluster)
}

/// Nanoseconds the threads of process `pid` have run on a CPU, summed from
/// `/proc/<pid>/task/*/schedstat` (its first field); `None` off Linux or
/// once the process is gone.
pub(crate) fn process_cpu_ns(pid: &str) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0;
    for task in tasks.flatten() {
        let stats = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += stats.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// The data-node processes `shoal up` (process `parent`) started: its
/// children whose command line runs `datad`.
fn data_node_processes(parent: u32) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent is the second field after the command name, which is
        // in parentheses and may itself hold spaces.
        let parent_of = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|field| field.parse::<u32>().ok());
        if parent_of != Some(parent) {
            continue;
        }
        let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if command.split(|b| *b == 0).any(|word| word == b"datad") {
            found.push(pid);
        }
    }
    found
}

/// CPU time of the data nodes and of this process, read before and after a
/// phase.
#[derive(Clone, Copy)]
struct CpuReading {
    data_nodes_ns: Option<u64>,
    client_ns: Option<u64>,
}

fn read_cpu(data_nodes: &[String]) -> CpuReading {
    let data_nodes_ns = if data_nodes.is_empty() {
        None
    } else {
        data_nodes
            .iter()
            .map(|pid| process_cpu_ns(pid))
            .sum::<Option<u64>>()
    };
    CpuReading {
        data_nodes_ns,
        client_ns: process_cpu_ns("self"),
    }
}

/// µs per operation between two readings.
fn cpu_per_operation(before: Option<u64>, after: Option<u64>, operations: u64) -> Option<f64> {
    let spent = after?.checked_sub(before?)?;
    (operations > 0).then(|| spent as f64 / 1_000.0 / operations as f64)
}

fn key(id: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(8);
    AttrInfoWriter::new(&mut out).push(0, Some(&id.to_le_bytes()));
    out
}

fn row(id: u32, payload: usize, fill: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload + 16);
    let bytes = vec![fill; payload];
    let mut writer = AttrInfoWriter::new(&mut out);
    writer.push(0, Some(&id.to_le_bytes()));
    writer.push(1, Some(&bytes));
    out
}

fn payload_only(payload: usize, fill: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload + 8);
    AttrInfoWriter::new(&mut out).push(1, Some(&vec![fill; payload]));
    out
}

/// Starts a transaction at the node holding `id` (distribution awareness).
fn aware_transaction(
    session: &mut Session,
    table: &TableRoute,
    id: u32,
) -> Result<Transaction, String> {
    session
        .start_transaction(Some(Hint {
            table,
            key: &[(0, Value::UInt(u64::from(id)))],
            committed_read: false,
        }))
        .map_err(|e| e.to_string())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Insert,
    Read,
    Update,
    Delete,
}

/// One thread's share of a phase: latencies in nanoseconds, and errors.
fn run_phase(
    session: &mut Session,
    table: &Arc<TableRoute>,
    phase: Phase,
    first_id: u32,
    rows: u32,
    payload: usize,
) -> Result<(Vec<u32>, u64), String> {
    let mut latencies = Vec::with_capacity(rows as usize);
    let mut errors = 0;
    for offset in 0..rows {
        let id = first_id + offset;
        let started = Instant::now();
        let mut transaction = aware_transaction(session, table, id)?;
        let (kind, values, columns) = match phase {
            Phase::Insert => (OperationKind::Insert, row(id, payload, 1), Vec::new()),
            Phase::Read => (OperationKind::ReadCommitted, Vec::new(), vec![0, 1]),
            Phase::Update => (OperationKind::Update, payload_only(payload, 2), Vec::new()),
            Phase::Delete => (OperationKind::Delete, Vec::new(), Vec::new()),
        };
        let operation = transaction
            .define_encoded(table, kind, key(id), values, columns)
            .map_err(|e| e.to_string())?;
        let outcome = session.execute(&mut transaction, ExecuteEnd::Commit);
        let elapsed = started.elapsed();
        match outcome.and_then(|()| transaction.result(operation)) {
            Ok(()) => latencies.push(elapsed.as_nanos().min(u128::from(u32::MAX)) as u32),
            Err(_) => errors += 1,
        }
    }
    Ok((latencies, errors))
}

fn summarise(
    name: String,
    threads: usize,
    mut latencies: Vec<u32>,
    errors: u64,
    wall: Duration,
) -> OperationFigures {
    latencies.sort_unstable();
    let count = latencies.len();
    let at = |fraction: f64| -> f64 {
        if count == 0 {
            return 0.0;
        }
        let index = ((count as f64 - 1.0) * fraction).round() as usize;
        f64::from(latencies[index]) / 1_000.0
    };
    let average = if count == 0 {
        0.0
    } else {
        latencies.iter().map(|l| f64::from(*l)).sum::<f64>() / count as f64 / 1_000.0
    };
    OperationFigures {
        name,
        threads,
        operations: count as u64,
        per_second: count as f64 / wall.as_secs_f64().max(1e-9),
        average_us: average,
        min_us: at(0.0),
        p50_us: at(0.5),
        p99_us: at(0.99),
        normalised: 0.0,
        errors,
        data_node_cpu_us: None,
        client_cpu_us: None,
    }
}

/// Runs the four phases with `threads` threads on one payload size;
/// `data_nodes` are the processes whose CPU time the figures include.
fn synchronous(
    cluster: &Cluster,
    table: &Arc<TableRoute>,
    payload: usize,
    threads: usize,
    rows_per_thread: u32,
    data_nodes: &[String],
) -> Result<Vec<OperationFigures>, String> {
    let mut sessions: Vec<Session> = (0..threads)
        .map(|_| cluster.session().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut figures = Vec::new();
    for (phase, label) in [
        (Phase::Insert, format!("insert 4B+{payload}B")),
        (Phase::Read, format!("read {payload}B")),
        (Phase::Update, format!("update {payload}B")),
        (Phase::Delete, "delete".to_string()),
    ] {
        let cpu_before = read_cpu(data_nodes);
        let started = Instant::now();
        let results: Vec<Result<(Vec<u32>, u64), String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = sessions
                .iter_mut()
                .enumerate()
                .map(|(index, session)| {
                    let table = Arc::clone(table);
                    scope.spawn(move || {
                        run_phase(
                            session,
                            &table,
                            phase,
                            index as u32 * rows_per_thread,
                            rows_per_thread,
                            payload,
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("a benchmark thread panicked".into()))
                })
                .collect()
        });
        let wall = started.elapsed();
        let cpu_after = read_cpu(data_nodes);
        let mut latencies = Vec::new();
        let mut errors = 0;
        for result in results {
            let (mut thread_latencies, thread_errors) = result?;
            latencies.append(&mut thread_latencies);
            errors += thread_errors;
        }
        let mut figure = summarise(label, threads, latencies, errors, wall);
        figure.data_node_cpu_us = cpu_per_operation(
            cpu_before.data_nodes_ns,
            cpu_after.data_nodes_ns,
            figure.operations,
        );
        figure.client_cpu_us =
            cpu_per_operation(cpu_before.client_ns, cpu_after.client_ns, figure.operations);
        figures.push(figure);
    }
    let read_average = figures[1].average_us;
    for figure in &mut figures {
        figure.normalised = if read_average > 0.0 {
            figure.average_us / read_average
        } else {
            0.0
        };
    }
    Ok(figures)
}

/// Loads `rows` rows in batches of 100 per transaction.
fn load(
    session: &mut Session,
    table: &Arc<TableRoute>,
    rows: u32,
    payload: usize,
) -> Result<(), String> {
    let mut id = 0;
    while id < rows {
        let mut transaction = session.start_transaction(None).map_err(|e| e.to_string())?;
        for _ in 0..100.min(rows - id) {
            transaction
                .define_encoded(
                    table,
                    OperationKind::Write,
                    key(id),
                    row(id, payload, 3),
                    Vec::new(),
                )
                .map_err(|e| e.to_string())?;
            id += 1;
        }
        session
            .execute(&mut transaction, ExecuteEnd::Commit)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Reads per second with `in_flight` asynchronous transactions of `batch` reads.
fn asynchronous(
    cluster: &Cluster,
    table: &Arc<TableRoute>,
    rows: u32,
    batch: u32,
    in_flight: u32,
    seconds: f64,
) -> Result<(f64, u64), String> {
    let mut session = cluster.session().map_err(|e| e.to_string())?;
    let mut next_id = 0u32;
    let mut reads = 0u64;
    let prepare = |session: &mut Session, next_id: &mut u32| -> Result<(), String> {
        // Each transaction's keys are consecutive; its hint is the first.
        let mut transaction = aware_transaction(session, table, *next_id % rows)?;
        for _ in 0..batch {
            transaction
                .define_encoded(
                    table,
                    OperationKind::ReadCommitted,
                    key(*next_id % rows),
                    Vec::new(),
                    vec![0, 1],
                )
                .map_err(|e| e.to_string())?;
            *next_id = next_id.wrapping_add(1);
        }
        session
            .prepare_async(transaction, ExecuteEnd::Commit)
            .map_err(|e| e.to_string())
    };
    for _ in 0..in_flight {
        prepare(&mut session, &mut next_id)?;
    }
    let started = Instant::now();
    let mut errors = 0;
    while started.elapsed().as_secs_f64() < seconds {
        let done = session
            .send_poll(1, Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
        for transaction in &done {
            if transaction.error().is_some() {
                errors += 1;
            } else {
                reads += u64::from(batch);
            }
        }
        for _ in 0..done.len() {
            prepare(&mut session, &mut next_id)?;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // Drain what is still in flight.
    while session.in_flight() > 0 {
        session
            .send_poll(session.in_flight(), Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
    }
    Ok((reads as f64 / elapsed, errors))
}

/// Round trips per single-read transaction, with and without a hint.
fn round_trips(
    cluster: &Cluster,
    table: &Arc<TableRoute>,
    rows: u32,
    data_nodes: usize,
) -> Result<RoundTrips, String> {
    let mut session = cluster.session().map_err(|e| e.to_string())?;
    let reads = rows.min(2_000);
    let mut measure = |aware: bool| -> Result<f64, String> {
        let before = session.counters();
        for id in 0..reads {
            let mut transaction = if aware {
                aware_transaction(&mut session, table, id)?
            } else {
                session.start_transaction(None).map_err(|e| e.to_string())?
            };
            transaction
                .define_encoded(
                    table,
                    OperationKind::ReadCommitted,
                    key(id),
                    Vec::new(),
                    vec![0],
                )
                .map_err(|e| e.to_string())?;
            session
                .execute(&mut transaction, ExecuteEnd::Commit)
                .map_err(|e| e.to_string())?;
        }
        let after = session.counters();
        let trips = (after.execute_count - before.execute_count)
            + (after.data_node_hops - before.data_node_hops);
        Ok(trips as f64 / f64::from(reads))
    };
    Ok(RoundTrips {
        data_nodes,
        aware: measure(true)?,
        unaware: measure(false)?,
    })
}

fn prepare_table(
    cluster: &Cluster,
    payload: usize,
    read_backup: bool,
) -> Result<Arc<TableRoute>, String> {
    let name = table_name(payload);
    let _ = cluster.drop_table(&name);
    let options = TableOptions {
        read_backup,
        ..TableOptions::default()
    };
    cluster
        .create_table(&definition(payload)?, &options)
        .map_err(|e| format!("create {name}: {e}"))?;
    cluster.table(&name).map_err(|e| e.to_string())
}

/// Everything one run measured.
#[derive(Debug, Clone, Default)]
pub struct PkFigures {
    pub data_nodes: usize,
    pub synchronous: Vec<OperationFigures>,
    pub async_reads_per_second: f64,
    pub async_errors: u64,
    pub round_trips: Vec<RoundTrips>,
}

/// `data_nodes`: the data-node processes, when this benchmark started them.
fn measure_cluster(
    cluster: &Cluster,
    options: &PkOptions,
    data_nodes: &[String],
    figures: &mut PkFigures,
) -> Result<(), String> {
    figures.data_nodes = cluster.data_nodes().len();
    for payload in [64usize, 255] {
        let table = prepare_table(cluster, payload, true)?;
        for &threads in &options.threads {
            figures.synchronous.extend(
                synchronous(
                    cluster,
                    &table,
                    payload,
                    threads,
                    options.rows_per_thread,
                    data_nodes,
                )
                .map_err(|e| format!("{threads} threads, {payload}-byte rows: {e}"))?,
            );
        }
        if payload == 64 {
            let rows = 10_000;
            let mut session = cluster.session().map_err(|e| e.to_string())?;
            load(&mut session, &table, rows, payload).map_err(|e| format!("loading: {e}"))?;
            drop(session);
            let (per_second, errors) = asynchronous(
                cluster,
                &table,
                rows,
                options.async_batch,
                options.async_in_flight,
                options.async_seconds,
            )
            .map_err(|e| format!("asynchronous reads: {e}"))?;
            figures.async_reads_per_second = per_second;
            figures.async_errors = errors;
            figures.round_trips.push(
                round_trips(cluster, &table, rows, figures.data_nodes)
                    .map_err(|e| format!("round trips: {e}"))?,
            );
        }
        cluster
            .drop_table(&table_name(payload))
            .map_err(|e| format!("drop table: {e}"))?;
    }
    Ok(())
}

fn four_node_round_trips(options: &PkOptions) -> Result<RoundTrips, String> {
    let mut own = start_cluster(&options.executable, 4)?;
    let cluster =
        Cluster::connect(&own.connectstring, Duration::from_secs(30)).map_err(|e| e.to_string())?;
    let measured = prepare_table(&cluster, 64, true).and_then(|table| {
        let mut session = cluster.session().map_err(|e| e.to_string())?;
        load(&mut session, &table, 2_000, 64).map_err(|e| format!("loading: {e}"))?;
        drop(session);
        round_trips(&cluster, &table, 2_000, 4).map_err(|e| format!("round trips: {e}"))
    });
    measured.map_err(|e| own.keep_logs(format!("4 data nodes: {e}")))
}

pub fn run(options: &PkOptions) -> Result<PkFigures, String> {
    let mut figures = PkFigures::default();
    match &options.connect {
        Some(connectstring) => {
            let cluster = Cluster::connect(connectstring, Duration::from_secs(30))
                .map_err(|e| e.to_string())?;
            measure_cluster(&cluster, options, &[], &mut figures)?;
        }
        None => {
            {
                let mut own = start_cluster(&options.executable, 2)?;
                let cluster = Cluster::connect(&own.connectstring, Duration::from_secs(30))
                    .map_err(|e| e.to_string())?;
                let data_nodes = data_node_processes(own.child.id());
                measure_cluster(&cluster, options, &data_nodes, &mut figures)
                    .map_err(|e| own.keep_logs(e))?;
            }
            if options.four_nodes {
                figures.round_trips.push(four_node_round_trips(options)?);
            }
        }
    }
    if options.json {
        println!("{}", to_json(&figures));
    } else {
        print!("{}", render(&figures, options));
    }
    Ok(figures)
}

fn seed(name: &str) -> Option<(f64, f64, f64)> {
    SEED_TABLE_1
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, average, min, normalised)| (*average, *min, *normalised))
}

pub fn render(figures: &PkFigures, options: &PkOptions) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Primary-key operations through the native API, {} data nodes, one transaction per operation",
        figures.data_nodes
    );
    for &threads in &options.threads {
        let _ = writeln!(out, "\n{threads} thread(s), synchronous:");
        let _ = writeln!(
            out,
            "{:<16} {:>10} {:>9} {:>8} {:>8} {:>8} {:>6} {:>7} {:>9} {:>9} | {:>9} {:>8} {:>6}",
            "operation",
            "ops/s",
            "avg µs",
            "min µs",
            "p50 µs",
            "p99 µs",
            "norm",
            "errors",
            "node CPU",
            "API CPU",
            "seed avg",
            "seed min",
            "norm"
        );
        for figure in figures.synchronous.iter().filter(|f| f.threads == threads) {
            let (seed_average, seed_min, seed_normalised) = seed(&figure.name).unwrap_or_default();
            let cpu = |us: Option<f64>| us.map_or_else(|| "-".to_string(), |us| format!("{us:.1}"));
            let _ = writeln!(
                out,
                "{:<16} {:>10.0} {:>9.1} {:>8.1} {:>8.1} {:>8.1} {:>6.2} {:>7} {:>9} {:>9} | {:>9.0} {:>8.0} {:>6.2}",
                figure.name,
                figure.per_second,
                figure.average_us,
                figure.min_us,
                figure.p50_us,
                figure.p99_us,
                figure.normalised,
                figure.errors,
                cpu(figure.data_node_cpu_us),
                cpu(figure.client_cpu_us),
                seed_average,
                seed_min,
                seed_normalised
            );
        }
    }
    let _ = writeln!(
        out,
        "\nnode CPU, API CPU: CPU µs per operation of the data nodes together and of this process"
    );
    let _ = writeln!(
        out,
        "\nAsynchronous: {} transactions in flight, {} committed reads each: {:.0} reads/s ({} errors)",
        options.async_in_flight,
        options.async_batch,
        figures.async_reads_per_second,
        figures.async_errors
    );
    let _ = writeln!(
        out,
        "\nRound trips per primary-key read (client round trips + coordinator hops):"
    );
    let _ = writeln!(
        out,
        "{:<12} {:>22} {:>22}",
        "data nodes", "distribution aware", "coordinator in turn"
    );
    for trips in &figures.round_trips {
        let _ = writeln!(
            out,
            "{:<12} {:>22.3} {:>22.3}",
            trips.data_nodes, trips.aware, trips.unaware
        );
    }
    out
}

pub fn to_json(figures: &PkFigures) -> String {
    let synchronous: Vec<serde_json::Value> = figures
        .synchronous
        .iter()
        .map(|f| {
            let (seed_average, seed_min, seed_normalised) = seed(&f.name).unwrap_or_default();
            serde_json::json!({
                "operation": f.name,
                "threads": f.threads,
                "operations": f.operations,
                "ops_per_second": f.per_second,
                "average_us": f.average_us,
                "min_us": f.min_us,
                "p50_us": f.p50_us,
                "p99_us": f.p99_us,
                "normalised_to_read": f.normalised,
                "errors": f.errors,
                "data_node_cpu_us": f.data_node_cpu_us,
                "client_cpu_us": f.client_cpu_us,
                "seed_average_us": seed_average,
                "seed_min_us": seed_min,
                "seed_normalised": seed_normalised,
            })
        })
        .collect();
    let round_trips: Vec<serde_json::Value> = figures
        .round_trips
        .iter()
        .map(|r| {
            serde_json::json!({
                "data_nodes": r.data_nodes,
                "aware": r.aware,
                "unaware": r.unaware,
            })
        })
        .collect();
    serde_json::json!({
        "data_nodes": figures.data_nodes,
        "synchronous": synchronous,
        "async_reads_per_second": figures.async_reads_per_second,
        "async_errors": figures.async_errors,
        "round_trips_per_read": round_trips,
    })
    .to_string()
}
