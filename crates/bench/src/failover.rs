//! `shoal bench failover`: how long a data node's failure stops the
//! partitions it was primary for, and how long a data node takes to
//! restart (issue 11, item 7).
//!
//! The benchmark starts its own cluster (a management node and two data
//! nodes, one node group, started directly and without an angel so that a
//! signal reaches the data node itself), loads `rows` rows of `row_bytes`
//! bytes, and measures:
//! - **SIGKILL to commit**: probe threads keep writing rows of the
//!   partitions whose primary is the victim; the time from the SIGKILL to
//!   the end of the first commit that began after it (target ≤ 1 s);
//! - **SIGSTOP to commit**: the same with SIGSTOP, where only missed
//!   heartbeats tell (target ≤ 3 s); the node is resumed afterwards and
//!   restarts on its own;
//! - **node restart**: the victim is killed, and once the cluster has
//!   removed it, started again; the time from that start until the
//!   management node no longer reports it `starting` (its fragments are
//!   copied) and it is a member, idle and while `updates_per_s` writes of
//!   random rows run; and the latency of those writes (p50, p99) with every
//!   node up (idle) and during the restart.
//!
//! Writes (NDB's writeTuple: insert or overwrite) rather than updates, so a
//! restarted replica that does not hold a row yet still takes the load.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schema::distribution::TableOptions;
use schema::{AttrInfoWriter, ColumnDef, ColumnType, TableDef};
use shoal_client::{Cluster, ExecuteEnd, Hint, OperationKind, TableRoute, Value};

use crate::own_cluster::{OwnCluster, send_signal, wait};

/// What `shoal bench failover` was asked for.
#[derive(Debug, Clone)]
pub struct FailoverOptions {
    /// The `shoal` executable, to start the cluster's processes.
    pub executable: PathBuf,
    /// Rows loaded before measuring.
    pub rows: u32,
    /// Bytes of each row's payload column.
    pub row_bytes: u16,
    /// The write load during the restart under load (and its idle
    /// reference).
    pub updates_per_s: u32,
    /// `NodeRecoveryCopyRowsPerSecond` for the cluster; `None` keeps the
    /// default.
    pub copy_rows_per_second: Option<u64>,
    /// `NodeRecoveryCopyBatchRows` for the cluster; `None` keeps the
    /// default.
    pub copy_batch_rows: Option<u32>,
    pub json: bool,
}

/// Everything one run measured; durations in milliseconds, latencies in µs.
#[derive(Debug, Clone, Default)]
pub struct FailoverFigures {
    pub data_nodes: usize,
    pub rows: u32,
    pub row_bytes: u16,
    pub sigkill_victim: u8,
    pub sigkill_to_commit_ms: f64,
    pub sigstop_victim: u8,
    /// From SIGSTOP until the cluster state no longer lists the node.
    pub sigstop_removed_ms: f64,
    pub sigstop_to_commit_ms: f64,
    pub restart_idle_ms: f64,
    pub restart_under_load_ms: f64,
    pub updates_per_s_target: u32,
    /// Writes per second achieved while the node restarted under load.
    pub updates_per_s_during_restart: f64,
    pub update_latency_idle_p50_us: f64,
    pub update_latency_idle_p99_us: f64,
    pub update_latency_during_restart_p50_us: f64,
    pub update_latency_during_restart_p99_us: f64,
    /// Writes measured during the restart (few when the restart is short).
    pub updates_during_restart: u64,
    pub update_errors_during_restart: u64,
}

const TABLE: &str = "bench_failover";
/// Threads writing the probe rows around a failure.
const PROBE_THREADS: usize = 4;
/// Threads sharing the write load.
const LOAD_THREADS: usize = 4;
/// How long one client call may wait for the cluster.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// The load's latency with every node up is measured over this long.
const IDLE_LOAD: Duration = Duration::from_secs(2);

pub(crate) fn key(id: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(8);
    AttrInfoWriter::new(&mut out).push(0, Some(&id.to_le_bytes()));
    out
}

pub(crate) fn row(id: u32, row_bytes: u16, fill: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(usize::from(row_bytes) + 16);
    let mut writer = AttrInfoWriter::new(&mut out);
    writer.push(0, Some(&id.to_le_bytes()));
    writer.push(1, Some(&vec![fill; usize::from(row_bytes)]));
    out
}

/// Writes row `id` in a transaction of its own, started at the node
/// holding its primary replica.
fn write_row(
    session: &mut shoal_client::Session,
    table: &TableRoute,
    route: &Arc<TableRoute>,
    id: u32,
    row_bytes: u16,
) -> Result<(), String> {
    let mut transaction = session
        .start_transaction(Some(Hint {
            table,
            key: &[(0, Value::UInt(u64::from(id)))],
            committed_read: false,
        }))
        .map_err(|e| e.to_string())?;
    let operation = transaction
        .define_encoded(
            route,
            OperationKind::Write,
            key(id),
            row(id, row_bytes, (id % 251) as u8),
            Vec::new(),
        )
        .map_err(|e| e.to_string())?;
    session
        .execute(&mut transaction, ExecuteEnd::Commit)
        .and_then(|()| transaction.result(operation))
        .map_err(|e| e.to_string())
}

/// Creates table `name`: `(id INT UNSIGNED PRIMARY KEY, payload
/// VARBINARY(row_bytes) NOT NULL)`.
pub(crate) fn create_table(
    cluster: &Cluster,
    name: &str,
    row_bytes: u16,
) -> Result<Arc<TableRoute>, String> {
    let definition = TableDef::new(
        name,
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: true }, false),
            ColumnDef::new(
                "payload",
                ColumnType::Varbinary { length: row_bytes },
                false,
            ),
        ],
        vec![0],
        Vec::new(),
    )
    .map_err(|e| e.detail.to_string())?;
    cluster
        .create_table(&definition, &TableOptions::default())
        .map_err(|e| format!("create {name}: {e}"))?;
    cluster.table(name).map_err(|e| e.to_string())
}

fn prepare(cluster: &Cluster, options: &FailoverOptions) -> Result<Arc<TableRoute>, String> {
    let table = create_table(cluster, TABLE, options.row_bytes)?;
    // Loaded by two threads in batches of 100 rows per transaction.
    let loaders = 2;
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for loader in 0..loaders {
            let table = &table;
            let failed = &failed;
            scope.spawn(move || {
                let result = (|| -> Result<(), String> {
                    let mut session = cluster.session().map_err(|e| e.to_string())?;
                    let mut id = loader * 100;
                    while id < options.rows {
                        let mut transaction =
                            session.start_transaction(None).map_err(|e| e.to_string())?;
                        for id in id..(id + 100).min(options.rows) {
                            transaction
                                .define_encoded(
                                    table,
                                    OperationKind::Write,
                                    key(id),
                                    row(id, options.row_bytes, 1),
                                    Vec::new(),
                                )
                                .map_err(|e| e.to_string())?;
                        }
                        session
                            .execute(&mut transaction, ExecuteEnd::Commit)
                            .map_err(|e| format!("loading rows from {id}: {e}"))?;
                        id += 100 * loaders;
                    }
                    Ok(())
                })();
                if let Err(error) = result {
                    *failed.lock().expect("lock") = Some(error);
                }
            });
        }
    });
    match failed.into_inner().expect("lock") {
        Some(error) => Err(error),
        None => Ok(table),
    }
}

/// The node that is (acting) primary for the most fragments of the table,
/// and up to 64 row ids of those fragments.
fn busiest_primary(cluster: &Cluster, rows: u32) -> Result<(u8, Vec<u32>), String> {
    let routing = cluster.routing();
    let table = routing
        .table_by_name(TABLE)
        .ok_or("the benchmark's table is not in the dictionary")?;
    let primary_of = |id: u32| -> Option<u8> {
        let partition = table
            .partition_of_values(&[(0, Value::UInt(u64::from(id)))])
            .ok()?;
        let fragment = table.fragments_of(partition).start;
        routing.live_replicas(table, fragment).first().copied()
    };
    let mut counts = std::collections::BTreeMap::<u8, usize>::new();
    for fragment in 0..table.fragments.len() as u32 {
        if let Some(node) = routing.live_replicas(table, fragment).first() {
            *counts.entry(*node).or_insert(0) += 1;
        }
    }
    let victim = counts
        .iter()
        .max_by_key(|(node, count)| (**count, std::cmp::Reverse(**node)))
        .map(|(node, _)| *node)
        .ok_or("no fragment has a live replica")?;
    let ids: Vec<u32> = (0..rows.max(1_000))
        .filter(|id| primary_of(*id) == Some(victim))
        .take(64)
        .collect();
    if ids.is_empty() {
        return Err(format!("no row has its primary replica on node {victim}"));
    }
    Ok((victim, ids))
}

/// Runs probe threads writing `ids` while `fault` runs, then `observe`;
/// the time from the moment `fault` returns (the signal was sent) to the
/// end of the first commit that began after it, and what `observe` said.
fn time_to_commit<T>(
    cluster: &Cluster,
    table: &Arc<TableRoute>,
    ids: &[u32],
    row_bytes: u16,
    fault: impl FnOnce() -> Result<(), String>,
    observe: impl FnOnce() -> Result<T, String>,
) -> Result<(Duration, T), String> {
    let stop = AtomicBool::new(false);
    let fault_at: Mutex<Option<Instant>> = Mutex::new(None);
    let first_commit: Mutex<Option<Instant>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for probe in 0..PROBE_THREADS {
            let (stop, fault_at, first_commit) = (&stop, &fault_at, &first_commit);
            scope.spawn(move || {
                let Ok(mut session) = cluster.session() else {
                    return;
                };
                session.set_timeout(CALL_TIMEOUT);
                let mut next = probe;
                while !stop.load(Ordering::Relaxed) {
                    let id = ids[next % ids.len()];
                    next += PROBE_THREADS;
                    let began = Instant::now();
                    match write_row(&mut session, table, table, id, row_bytes) {
                        Ok(()) => {
                            let ended = Instant::now();
                            let fault = *fault_at.lock().expect("lock");
                            if fault.is_some_and(|fault| began >= fault) {
                                let mut first = first_commit.lock().expect("lock");
                                *first = Some(first.map_or(ended, |t| t.min(ended)));
                            }
                        }
                        // The node is failing: the next attempt may go to
                        // the new primary.
                        Err(_) => std::thread::sleep(Duration::from_millis(1)),
                    }
                }
            });
        }
        let result = (|| {
            std::thread::sleep(Duration::from_millis(500));
            fault()?;
            let at = Instant::now();
            *fault_at.lock().expect("lock") = Some(at);
            let observed = observe()?;
            wait("the first commit after the fault", || {
                first_commit.lock().expect("lock").is_some()
            })?;
            let first = first_commit.lock().expect("lock").expect("waited for");
            Ok((first.saturating_duration_since(at), observed))
        })();
        stop.store(true, Ordering::Relaxed);
        result
    })
}

/// One write of the load: when it began, how long it took, whether it
/// committed.
#[derive(Clone, Copy)]
struct Sample {
    began: Instant,
    latency_ns: u64,
    committed: bool,
}

/// Writes random rows at `per_second` over `LOAD_THREADS` threads until
/// `stop`; every write's sample.
fn load(
    cluster: &Cluster,
    table: &Arc<TableRoute>,
    options: &FailoverOptions,
    stop: &AtomicBool,
) -> Vec<Sample> {
    let samples = Mutex::new(Vec::new());
    let interval =
        Duration::from_secs_f64(LOAD_THREADS as f64 / f64::from(options.updates_per_s.max(1)));
    std::thread::scope(|scope| {
        for thread in 0..LOAD_THREADS {
            let samples = &samples;
            scope.spawn(move || {
                let Ok(mut session) = cluster.session() else {
                    return;
                };
                session.set_timeout(CALL_TIMEOUT);
                let mut mine = Vec::new();
                let mut random = 0x9e37_79b9_7f4a_7c15_u64 ^ (thread as u64 + 1);
                let mut next_at = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    if next_at > now {
                        std::thread::sleep(next_at - now);
                    } else if now - next_at > Duration::from_millis(100) {
                        // Far behind (a stall): do not burst to catch up.
                        next_at = now;
                    }
                    next_at += interval;
                    random ^= random << 13;
                    random ^= random >> 7;
                    random ^= random << 17;
                    let id = (random % u64::from(options.rows.max(1))) as u32;
                    let began = Instant::now();
                    let committed =
                        write_row(&mut session, table, table, id, options.row_bytes).is_ok();
                    mine.push(Sample {
                        began,
                        latency_ns: began.elapsed().as_nanos() as u64,
                        committed,
                    });
                }
                samples.lock().expect("lock").extend(mine);
            });
        }
    });
    samples.into_inner().expect("lock")
}

/// p50 and p99 in µs of the committed samples that began in `from..to`,
/// their count, their errors.
fn latencies(samples: &[Sample], from: Instant, to: Instant) -> (f64, f64, u64, u64) {
    let window: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.began >= from && s.began < to)
        .collect();
    let errors = window.iter().filter(|s| !s.committed).count() as u64;
    let mut committed: Vec<u64> = window
        .iter()
        .filter(|s| s.committed)
        .map(|s| s.latency_ns)
        .collect();
    committed.sort_unstable();
    let at = |fraction: f64| -> f64 {
        if committed.is_empty() {
            return 0.0;
        }
        let index = ((committed.len() as f64 - 1.0) * fraction).round() as usize;
        committed[index] as f64 / 1_000.0
    };
    (at(0.5), at(0.99), committed.len() as u64, errors)
}

/// Kills `node`, waits until the cluster removed it, starts it again and
/// returns how long it took from that start until it was started.
fn restart(
    cluster_processes: &mut OwnCluster,
    client: &Cluster,
    node: u8,
) -> Result<(Instant, Duration), String> {
    cluster_processes.kill(node)?;
    cluster_processes.wait_removed(client, node)?;
    let began = Instant::now();
    cluster_processes.start_data_node(node)?;
    cluster_processes.wait_started(client, node)?;
    Ok((began, began.elapsed()))
}

fn measure(own: &mut OwnCluster, options: &FailoverOptions) -> Result<FailoverFigures, String> {
    let client = Cluster::connect(&own.connectstring, Duration::from_secs(30))
        .map_err(|e| format!("connect: {e}"))?;
    wait("both data nodes to be members", || {
        own.members(&client).len() == 2
    })?;
    let table = prepare(&client, options)?;
    let mut figures = FailoverFigures {
        data_nodes: 2,
        rows: options.rows,
        row_bytes: options.row_bytes,
        updates_per_s_target: options.updates_per_s,
        ..FailoverFigures::default()
    };

    // SIGKILL, then a restart with nothing else running.
    let (victim, ids) = busiest_primary(&client, options.rows)?;
    figures.sigkill_victim = victim;
    let (took, ()) = time_to_commit(
        &client,
        &table,
        &ids,
        options.row_bytes,
        || own.kill(victim),
        || Ok(()),
    )?;
    figures.sigkill_to_commit_ms = took.as_secs_f64() * 1e3;
    own.wait_removed(&client, victim)?;
    let began = Instant::now();
    own.start_data_node(victim)?;
    own.wait_started(&client, victim)?;
    figures.restart_idle_ms = began.elapsed().as_secs_f64() * 1e3;

    // A restart while the write load runs, after a stretch of the same
    // load with every node up.
    let (victim, _) = busiest_primary(&client, options.rows)?;
    let stop = AtomicBool::new(false);
    let (samples, window) = std::thread::scope(|scope| {
        let loader = scope.spawn(|| load(&client, &table, options, &stop));
        let idle_from = Instant::now();
        std::thread::sleep(IDLE_LOAD);
        let idle_to = Instant::now();
        let restarted = restart(own, &client, victim);
        stop.store(true, Ordering::Relaxed);
        let samples = loader.join().expect("the load panicked");
        (samples, restarted.map(|r| (idle_from, idle_to, r)))
    });
    let (idle_from, idle_to, (began, took)) = window?;
    figures.restart_under_load_ms = took.as_secs_f64() * 1e3;
    let (p50, p99, _, _) = latencies(&samples, idle_from, idle_to);
    figures.update_latency_idle_p50_us = p50;
    figures.update_latency_idle_p99_us = p99;
    let (p50, p99, count, errors) = latencies(&samples, began, began + took);
    figures.update_latency_during_restart_p50_us = p50;
    figures.update_latency_during_restart_p99_us = p99;
    figures.updates_during_restart = count;
    figures.update_errors_during_restart = errors;
    figures.updates_per_s_during_restart = count as f64 / took.as_secs_f64().max(1e-9);

    // SIGSTOP: only silence tells. Resumed afterwards, the node learns it
    // was removed and restarts on its own.
    let (victim, ids) = busiest_primary(&client, options.rows)?;
    figures.sigstop_victim = victim;
    let pid = own.data_node_pid(victim)?;
    // Marked before the signal: the cluster's drop resumes it on any error.
    own.stopped.push(victim);
    let observer: &OwnCluster = own;
    let (took, removed) = time_to_commit(
        &client,
        &table,
        &ids,
        options.row_bytes,
        || send_signal(pid, rustix::process::Signal::STOP),
        || observer.wait_removed(&client, victim),
    )?;
    figures.sigstop_to_commit_ms = took.as_secs_f64() * 1e3;
    figures.sigstop_removed_ms = removed.as_secs_f64() * 1e3;
    own.signal(victim, rustix::process::Signal::CONT)?;
    own.wait_started(&client, victim)?;
    Ok(figures)
}

pub fn run(options: &FailoverOptions) -> Result<FailoverFigures, String> {
    // Each data node holds every row (one node group, two replicas):
    // room for the rows with their overhead, twice, and a floor.
    let row_footprint = u64::from(options.row_bytes) + 64;
    let data_memory = (u64::from(options.rows) * row_footprint * 2).max(64 << 20);
    let mut settings = String::new();
    if let Some(rate) = options.copy_rows_per_second {
        settings.push_str(&format!("NodeRecoveryCopyRowsPerSecond={rate}\n"));
    }
    if let Some(rows) = options.copy_batch_rows {
        settings.push_str(&format!("NodeRecoveryCopyBatchRows={rows}\n"));
    }
    let mut own = OwnCluster::start(&options.executable, "failover", data_memory, &settings)?;
    let figures = measure(&mut own, options).map_err(|e| own.keep_logs(e))?;
    drop(own);
    if options.json {
        println!("{}", to_json(&figures));
    } else {
        print!("{}", render(&figures));
    }
    Ok(figures)
}

pub fn render(figures: &FailoverFigures) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Failover, {} data nodes (one node group), {} rows of {} bytes",
        figures.data_nodes, figures.rows, figures.row_bytes
    );
    let _ = writeln!(
        out,
        "  SIGKILL of node {} to the first commit on its partitions: {:.0} ms (target <= 1000 ms)",
        figures.sigkill_victim, figures.sigkill_to_commit_ms
    );
    let _ = writeln!(
        out,
        "  SIGSTOP of node {} to the first commit on its partitions: {:.0} ms (target <= 3000 ms); \
         removed after {:.0} ms",
        figures.sigstop_victim, figures.sigstop_to_commit_ms, figures.sigstop_removed_ms
    );
    let _ = writeln!(
        out,
        "  node restart, idle: {:.0} ms; under {} writes/s: {:.0} ms",
        figures.restart_idle_ms, figures.updates_per_s_target, figures.restart_under_load_ms
    );
    let _ = writeln!(
        out,
        "  write latency p50/p99: idle {:.0}/{:.0} us, during the restart {:.0}/{:.0} us \
         ({} writes, {} errors, {:.0} writes/s)",
        figures.update_latency_idle_p50_us,
        figures.update_latency_idle_p99_us,
        figures.update_latency_during_restart_p50_us,
        figures.update_latency_during_restart_p99_us,
        figures.updates_during_restart,
        figures.update_errors_during_restart,
        figures.updates_per_s_during_restart,
    );
    out
}

pub fn to_json(figures: &FailoverFigures) -> String {
    serde_json::json!({
        "data_nodes": figures.data_nodes,
        "rows": figures.rows,
        "row_bytes": figures.row_bytes,
        "sigkill_victim": figures.sigkill_victim,
        "sigkill_to_commit_ms": figures.sigkill_to_commit_ms,
        "sigstop_victim": figures.sigstop_victim,
        "sigstop_removed_ms": figures.sigstop_removed_ms,
        "sigstop_to_commit_ms": figures.sigstop_to_commit_ms,
        "restart_idle_ms": figures.restart_idle_ms,
        "restart_under_load_ms": figures.restart_under_load_ms,
        "updates_per_s_target": figures.updates_per_s_target,
        "updates_per_s_during_restart": figures.updates_per_s_during_restart,
        "update_latency_idle_p50_us": figures.update_latency_idle_p50_us,
        "update_latency_idle_p99_us": figures.update_latency_idle_p99_us,
        "update_latency_during_restart_p50_us": figures.update_latency_during_restart_p50_us,
        "update_latency_during_restart_p99_us": figures.update_latency_during_restart_p99_us,
        "updates_during_restart": figures.updates_during_restart,
        "update_errors_during_restart": figures.update_errors_during_restart,
    })
    .to_string()
}
