//! `shoal bench restart`: what durability costs and how fast the cluster
//! comes back from its disks (issue 13, item 9).
//!
//! The benchmark starts its own cluster (a management node and two data
//! nodes, one node group) twice: once with its disks (redo log, global and
//! local checkpoints) and once `Diskless`, in memory only. On each it
//! measures through the native API, with `threads` threads of one-row
//! transactions:
//! - **inserts**: `rows` rows of `row_bytes` bytes, inserted once;
//! - **updates**: random rows overwritten for `update_seconds`;
//! - **disk writes**: the bytes the data node processes wrote to storage
//!   in each phase (`write_bytes` of `/proc/<pid>/io`: the redo log and
//!   the local checkpoints), as bandwidth;
//! - **CPU per operation**: of the data nodes (their threads' run time)
//!   and of the whole machine (busy time in `/proc/stat`, which also holds
//!   the kernel's writeback of the files): on a machine the load itself
//!   saturates, throughput follows the CPU an operation costs, and CPU
//!   time holds still where throughput swings with whatever else runs;
//! - **time stolen**: on a virtual machine, the share of the machine's
//!   time its hypervisor gave to others (`steal` in `/proc/stat`, not
//!   counted as busy), which slows both clusters by turns.
//!
//! The load runs in rounds that alternate between the clusters; besides
//! the ratio of the totals it reports each round's ratio (the cluster with
//! disks against the in-memory one right before or after it) and their
//! median, which a drift of the machine's speed moves least.
//!
//! On the cluster with disks it then measures:
//! - **node restart**: a data node is killed (SIGKILL); once the cluster
//!   removed it, 10% of the rows are updated; the node is started again,
//!   and timed until it is a started member (it restores its own disk, and
//!   its peer sends whole only the rows written since, the others by key:
//!   NDB's optimized node recovery);
//! - **system restart**: once a global checkpoint after the last write is
//!   durable on every node, every process is killed with SIGKILL and
//!   started again, and timed until both data nodes are started members;
//!   then every row is counted by a scan, and must all be there.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shoal_client::{Cluster, ExecuteEnd, OperationKind, ScanOptions, TableRoute};

use crate::failover::{create_table, key, row};
use crate::own_cluster::{OwnCluster, wait};

/// What `shoal bench restart` was asked for.
#[derive(Debug, Clone)]
pub struct RestartOptions {
    /// The `shoal` executable, to start the cluster's processes.
    pub executable: PathBuf,
    pub rows: u32,
    pub row_bytes: u16,
    pub threads: usize,
    pub update_seconds: f64,
    /// Rounds of the load (each inserts a share of the rows into both
    /// clusters, then updates both for a share of the time).
    pub rounds: u32,
    pub json: bool,
}

/// The write load on one cluster.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadFigures {
    pub inserts_per_s: f64,
    pub insert_errors: u64,
    pub updates_per_s: f64,
    pub update_errors: u64,
    /// Bytes the data nodes wrote to storage during each phase, per second.
    pub insert_disk_bytes_per_s: f64,
    pub update_disk_bytes_per_s: f64,
    /// CPU µs per operation of the data nodes together, and of the whole
    /// machine (client, data nodes, kernel).
    pub insert_node_cpu_us: f64,
    pub update_node_cpu_us: f64,
    pub insert_machine_cpu_us: f64,
    pub update_machine_cpu_us: f64,
    /// The share of the machine's time stolen by its hypervisor during
    /// each phase (0 on a machine of its own).
    pub insert_stolen_share: f64,
    pub update_stolen_share: f64,
}

#[derive(Debug, Clone, Default)]
pub struct RestartFigures {
    pub rows: u32,
    pub row_bytes: u16,
    pub threads: usize,
    /// Payload bytes of the table (rows × row bytes).
    pub data_bytes: u64,
    pub with_disk: LoadFigures,
    pub in_memory: LoadFigures,
    /// Each round's throughput with disks ÷ in memory.
    pub insert_round_ratios: Vec<f64>,
    pub update_round_ratios: Vec<f64>,
    pub node_restart_ms: f64,
    pub node_restart_rows_changed: u32,
    pub system_restart_ms: f64,
    pub rows_after_system_restart: u64,
}

impl RestartFigures {
    /// With-disk throughput as a fraction of in-memory (target ≥ 0.9).
    pub fn insert_ratio(&self) -> f64 {
        self.with_disk.inserts_per_s / self.in_memory.inserts_per_s.max(1e-9)
    }

    pub fn update_ratio(&self) -> f64 {
        self.with_disk.updates_per_s / self.in_memory.updates_per_s.max(1e-9)
    }

    /// The median of the rounds' insert ratios.
    pub fn insert_round_ratio_median(&self) -> f64 {
        median(&self.insert_round_ratios)
    }

    pub fn update_round_ratio_median(&self) -> f64 {
        median(&self.update_round_ratios)
    }

    /// Seconds of system restart per GB of payload.
    pub fn system_restart_s_per_gb(&self) -> f64 {
        self.system_restart_ms / 1e3 / (self.data_bytes as f64 / 1e9).max(1e-12)
    }

    pub fn node_restart_s_per_gb(&self) -> f64 {
        self.node_restart_ms / 1e3 / (self.data_bytes as f64 / 1e9).max(1e-12)
    }
}

const TABLE: &str = "bench_restart";
/// How long one client call may wait for the cluster.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The bytes the processes `pids` have written to storage so far.
fn written_bytes(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/io")).ok())
        .filter_map(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("write_bytes: "))
                .and_then(|value| value.trim().parse::<u64>().ok())
        })
        .sum()
}

/// The machine's busy CPU time so far, in ns: every CPU's time in
/// `/proc/stat` but idle and I/O wait. `None` off Linux.
/// The machine's CPU time so far, in ns: (busy, stolen, all). Busy is
/// this machine's own work; stolen is the time a virtual machine's
/// processors wanted to run and the hypervisor ran something else (it
/// slows every process alike, and swings from minute to minute).
fn machine_cpu_ns() -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is in
    // user already).
    let field = |index: usize| ticks.get(index).copied().unwrap_or(0);
    let busy = [0, 1, 2, 5, 6]
        .iter()
        .map(|index| field(*index))
        .sum::<u64>();
    let stolen = field(7);
    let all = busy + stolen + field(3) + field(4);
    // The kernel counts in USER_HZ ticks, 100 a second on Linux.
    const NS_PER_TICK: u64 = 10_000_000;
    Some((busy * NS_PER_TICK, stolen * NS_PER_TICK, all * NS_PER_TICK))
}

/// Rounds of the load when not asked for: one per 50,000 rows, at least
/// 4 and at most 40. The load's throughput swings with the machine (on a
/// virtual machine by half within a minute, with the time stolen from
/// it), so the more often the clusters take turns, the more alike the
/// conditions each pair of rounds compares: with 4 rounds of a million
/// rows, the rounds' ratios ran from 0.49 to 1.56 on one machine.
pub fn default_rounds(rows: u32) -> u32 {
    (rows / 50_000).clamp(4, 40)
}

/// CPU ns the processes `pids` have run so far (`None` if one is gone).
fn processes_cpu_ns(pids: &[u32]) -> Option<u64> {
    pids.iter()
        .map(|pid| crate::pk::process_cpu_ns(&pid.to_string()))
        .sum()
}

/// The middle value (the mean of the two middle ones for an even count;
/// 0 for none).
fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    }
}

/// Runs `work(thread, session)` on `threads` threads; returns the calls
/// that committed and those that failed.
fn on_threads(
    cluster: &Cluster,
    threads: usize,
    work: impl Fn(usize, &mut shoal_client::Session, &AtomicU64, &AtomicU64) + Sync,
) -> Result<(u64, u64), String> {
    let (committed, failed) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut sessions = Vec::with_capacity(threads);
    for _ in 0..threads {
        let mut session = cluster.session().map_err(|e| e.to_string())?;
        session.set_timeout(CALL_TIMEOUT);
        sessions.push(session);
    }
    std::thread::scope(|scope| {
        for (thread, mut session) in sessions.into_iter().enumerate() {
            let (work, committed, failed) = (&work, &committed, &failed);
            scope.spawn(move || work(thread, &mut session, committed, failed));
        }
    });
    Ok((committed.into_inner(), failed.into_inner()))
}

/// One row written in a transaction of its own.
fn write_one(
    session: &mut shoal_client::Session,
    table: &Arc<TableRoute>,
    kind: OperationKind,
    id: u32,
    row_bytes: u16,
    fill: u8,
) -> bool {
    let Ok(mut transaction) = session.start_transaction(None) else {
        return false;
    };
    let defined =
        transaction.define_encoded(table, kind, key(id), row(id, row_bytes, fill), Vec::new());
    defined.is_ok()
        && session
            .execute(&mut transaction, ExecuteEnd::Commit)
            .is_ok()
}

/// Counts one write as committed or failed.
fn tally(committed_ok: bool, committed: &AtomicU64, failed: &AtomicU64) {
    let counter = if committed_ok { committed } else { failed };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// A xorshift step: the update threads' random rows.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Inserts every row, then updates random rows for `update_seconds`.
/// One cluster under measurement: its processes, a client, the table.
struct Measured<'a> {
    own: &'a OwnCluster,
    client: &'a Cluster,
    table: &'a Arc<TableRoute>,
    /// Calls committed and failed, seconds and bytes written, per phase
    /// (inserts, updates), summed over the rounds.
    inserts: Phase,
    updates: Phase,
}

#[derive(Debug, Clone, Default)]
struct Phase {
    committed: u64,
    failed: u64,
    seconds: f64,
    written_bytes: u64,
    node_cpu_ns: u64,
    machine_cpu_ns: u64,
    machine_stolen_ns: u64,
    machine_all_ns: u64,
    /// Each round's committed calls per second.
    round_rates: Vec<f64>,
}

impl Phase {
    fn per_second(&self) -> (f64, f64) {
        let seconds = self.seconds.max(1e-9);
        (
            self.committed as f64 / seconds,
            self.written_bytes as f64 / seconds,
        )
    }

    /// CPU µs per committed call of the data nodes and of the machine.
    fn cpu_us(&self) -> (f64, f64) {
        let calls = self.committed.max(1) as f64;
        (
            self.node_cpu_ns as f64 / 1e3 / calls,
            self.machine_cpu_ns as f64 / 1e3 / calls,
        )
    }

    /// The share of the machine's time stolen from it.
    fn stolen_share(&self) -> f64 {
        self.machine_stolen_ns as f64 / self.machine_all_ns.max(1) as f64
    }

    /// Measures one round of `work` (which returns the calls committed and
    /// failed) on the data nodes `pids`.
    fn measure(
        &mut self,
        pids: &[u32],
        work: impl FnOnce() -> Result<(u64, u64), String>,
    ) -> Result<u64, String> {
        let written = written_bytes(pids);
        let node_cpu = processes_cpu_ns(pids);
        let machine_cpu = machine_cpu_ns();
        let began = Instant::now();
        let (committed, failed) = work()?;
        let seconds = began.elapsed().as_secs_f64();
        self.seconds += seconds;
        self.written_bytes += written_bytes(pids).saturating_sub(written);
        if let (Some(before), Some(after)) = (node_cpu, processes_cpu_ns(pids)) {
            self.node_cpu_ns += after.saturating_sub(before);
        }
        if let (Some(before), Some(after)) = (machine_cpu, machine_cpu_ns()) {
            self.machine_cpu_ns += after.0.saturating_sub(before.0);
            self.machine_stolen_ns += after.1.saturating_sub(before.1);
            self.machine_all_ns += after.2.saturating_sub(before.2);
        }
        self.committed += committed;
        self.failed += failed;
        self.round_rates.push(committed as f64 / seconds.max(1e-9));
        Ok(failed)
    }
}

impl Measured<'_> {
    /// Inserts the rows `ids` (every `threads`th id from each thread's
    /// first) into the table.
    fn insert(
        &mut self,
        ids: std::ops::Range<u32>,
        options: &RestartOptions,
    ) -> Result<(), String> {
        let threads = options.threads.max(1);
        let pids = self.own.data_node_pids();
        let (client, table) = (self.client, self.table);
        let failed = self.inserts.measure(&pids, || {
            on_threads(client, threads, |thread, session, committed, failed| {
                let mut id = ids.start + thread as u32;
                while id < ids.end {
                    tally(
                        write_one(
                            session,
                            table,
                            OperationKind::Insert,
                            id,
                            options.row_bytes,
                            1,
                        ),
                        committed,
                        failed,
                    );
                    id += threads as u32;
                }
            })
        })?;
        if failed > 0 {
            return Err(format!("{failed} inserts failed"));
        }
        Ok(())
    }

    /// Overwrites random rows for `seconds`.
    fn update(&mut self, seconds: f64, round: u64, options: &RestartOptions) -> Result<(), String> {
        let threads = options.threads.max(1);
        let pids = self.own.data_node_pids();
        let until = Instant::now() + Duration::from_secs_f64(seconds);
        let (client, table) = (self.client, self.table);
        self.updates.measure(&pids, || {
            on_threads(client, threads, |thread, session, committed, failed| {
                let mut random = 0x9e37_79b9_7f4a_7c15_u64 ^ ((round << 16) + thread as u64 + 1);
                while Instant::now() < until {
                    let id = (next_random(&mut random) % u64::from(options.rows.max(1))) as u32;
                    let fill = (random >> 32) as u8;
                    tally(
                        write_one(
                            session,
                            table,
                            OperationKind::Update,
                            id,
                            options.row_bytes,
                            fill,
                        ),
                        committed,
                        failed,
                    );
                }
            })
        })?;
        Ok(())
    }

    fn figures(&self) -> LoadFigures {
        let (inserts_per_s, insert_disk_bytes_per_s) = self.inserts.per_second();
        let (updates_per_s, update_disk_bytes_per_s) = self.updates.per_second();
        let (insert_node_cpu_us, insert_machine_cpu_us) = self.inserts.cpu_us();
        let (update_node_cpu_us, update_machine_cpu_us) = self.updates.cpu_us();
        LoadFigures {
            inserts_per_s,
            insert_errors: self.inserts.failed,
            updates_per_s,
            update_errors: self.updates.failed,
            insert_disk_bytes_per_s,
            update_disk_bytes_per_s,
            insert_node_cpu_us,
            update_node_cpu_us,
            insert_machine_cpu_us,
            update_machine_cpu_us,
            insert_stolen_share: self.inserts.stolen_share(),
            update_stolen_share: self.updates.stolen_share(),
        }
    }
}

/// Each round's rate with disks ÷ the in-memory rate of the same round.
fn round_ratios(with_disk: &Phase, in_memory: &Phase) -> Vec<f64> {
    with_disk
        .round_rates
        .iter()
        .zip(&in_memory.round_rates)
        .map(|(disk, memory)| disk / memory.max(1e-9))
        .collect()
}

/// The same load on both clusters, in `options.rounds` rounds that alternate
/// between them (which goes first alternates too), so a machine whose
/// speed drifts during the run slows both alike: each round inserts a
/// share of the rows into each, then updates each for a share of the time.
fn load_both<'a>(
    with_disk: &mut Measured<'a>,
    in_memory: &mut Measured<'a>,
    options: &RestartOptions,
) -> Result<(), String> {
    let rounds = options.rounds.clamp(1, options.rows);
    for round in 0..rounds {
        let ids = options.rows * round / rounds..options.rows * (round + 1) / rounds;
        let (first, second) = if round % 2 == 0 {
            (&mut *with_disk, &mut *in_memory)
        } else {
            (&mut *in_memory, &mut *with_disk)
        };
        first.insert(ids.clone(), options)?;
        second.insert(ids, options)?;
    }
    let seconds = options.update_seconds / f64::from(rounds);
    for round in 0..rounds {
        let (first, second) = if round % 2 == 0 {
            (&mut *with_disk, &mut *in_memory)
        } else {
            (&mut *in_memory, &mut *with_disk)
        };
        first.update(seconds, u64::from(round), options)?;
        second.update(seconds, u64::from(round), options)?;
    }
    Ok(())
}

/// Connects to the cluster once both data nodes are members.
fn connect(own: &OwnCluster) -> Result<Cluster, String> {
    // The management node may still be starting: its port refuses until
    // it listens.
    let deadline = Instant::now() + Duration::from_secs(30);
    let client = loop {
        match Cluster::connect(&own.connectstring, Duration::from_secs(30)) {
            Ok(client) => break client,
            Err(error) if Instant::now() >= deadline => return Err(format!("connect: {error}")),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    wait("both data nodes to be members", || {
        own.members(&client).len() == 2
    })?;
    Ok(client)
}

/// The durable GCI every data node reports and the GCI of the epoch they
/// decide commits in, from `shoal mgm -e "ALL REPORT DURABILITY"`.
fn durability(own: &OwnCluster, executable: &std::path::Path) -> Option<(u64, u64)> {
    let output = std::process::Command::new(executable)
        .args([
            "mgm",
            "-c",
            &own.connectstring,
            "-e",
            "ALL REPORT DURABILITY",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let (mut durable, mut current, mut nodes) = (u64::MAX, 0, 0);
    for line in text.lines().filter(|line| line.starts_with("Node ")) {
        let number_after = |word: &str| -> Option<u64> {
            let rest = &line[line.find(word)? + word.len()..];
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        };
        current = current.max(number_after("Epoch ")?);
        durable = durable.min(number_after("durable through GCI ")?);
        nodes += 1;
    }
    (nodes == 2).then_some((durable, current))
}

/// Every row of the table, counted by a scan.
fn count_rows(client: &Cluster, table: &Arc<TableRoute>) -> Result<u64, String> {
    let mut session = client.session().map_err(|e| e.to_string())?;
    session.set_timeout(CALL_TIMEOUT);
    let mut transaction = session.start_transaction(None).map_err(|e| e.to_string())?;
    let scan = session
        .scan(
            &mut transaction,
            table,
            &ScanOptions {
                columns: vec![0],
                ..ScanOptions::default()
            },
        )
        .map_err(|e| e.to_string())?;
    let mut rows = 0;
    while session
        .next_row(&scan)
        .map_err(|e| e.to_string())?
        .is_some()
    {
        rows += 1;
    }
    session
        .execute(&mut transaction, ExecuteEnd::Commit)
        .map_err(|e| e.to_string())?;
    Ok(rows)
}

fn data_memory_bytes(options: &RestartOptions) -> u64 {
    // Each data node holds every row (one node group, two replicas), with
    // room for the overhead and a floor.
    let row_footprint = u64::from(options.row_bytes) + 64;
    (u64::from(options.rows) * row_footprint * 2).max(64 << 20)
}

/// The cluster with disks, loaded: a node restart, then a system restart.
fn measure_restarts(
    own: &mut OwnCluster,
    client: Cluster,
    table: &Arc<TableRoute>,
    options: &RestartOptions,
    figures: &mut RestartFigures,
) -> Result<(), String> {
    let table = Arc::clone(table);
    // Node restart after 10% of the rows changed while it was down.
    let victim = 3;
    own.kill(victim)?;
    own.wait_removed(&client, victim)?;
    let changed = options.rows / 10;
    let threads = options.threads.max(1);
    let (_, failed) = on_threads(&client, threads, |thread, session, committed, failed| {
        let mut id = thread as u32;
        while id < changed {
            tally(
                write_one(
                    session,
                    &table,
                    OperationKind::Update,
                    id * 10,
                    options.row_bytes,
                    7,
                ),
                committed,
                failed,
            );
            id += threads as u32;
        }
    })?;
    if failed > 0 {
        return Err(format!(
            "{failed} updates failed while node {victim} was down"
        ));
    }
    figures.node_restart_rows_changed = changed;
    let began = Instant::now();
    own.start_data_node(victim)?;
    own.wait_started(&client, victim)?;
    figures.node_restart_ms = began.elapsed().as_secs_f64() * 1e3;

    // System restart: once everything written is durable, every process
    // is killed and started again.
    let mut current = 0;
    wait("a durability report from both data nodes", || {
        durability(own, &options.executable).is_some_and(|(_, epoch_gci)| {
            current = epoch_gci;
            epoch_gci > 0
        })
    })?;
    wait("the last writes to be durable on every data node", || {
        durability(own, &options.executable).is_some_and(|(durable, _)| durable >= current)
    })?;
    drop(client);
    own.kill_management()?;
    own.kill(2)?;
    own.kill(3)?;
    let began = Instant::now();
    own.start_management()?;
    own.start_data_node(2)?;
    own.start_data_node(3)?;
    let client = connect(own)?;
    for node in [2, 3] {
        own.wait_started(&client, node)?;
    }
    figures.system_restart_ms = began.elapsed().as_secs_f64() * 1e3;
    let table = client.table(TABLE).map_err(|e| e.to_string())?;
    figures.rows_after_system_restart = count_rows(&client, &table)?;
    if figures.rows_after_system_restart != u64::from(options.rows) {
        return Err(format!(
            "{} rows after the system restart, not {}",
            figures.rows_after_system_restart, options.rows
        ));
    }
    Ok(())
}

pub fn run(options: &RestartOptions) -> Result<RestartFigures, String> {
    let mut figures = RestartFigures {
        rows: options.rows,
        row_bytes: options.row_bytes,
        threads: options.threads,
        data_bytes: u64::from(options.rows) * u64::from(options.row_bytes),
        ..RestartFigures::default()
    };
    let memory = data_memory_bytes(options);
    let mut disk_cluster = OwnCluster::start(&options.executable, "restart-disk", memory, "")?;
    let mut memory_cluster = OwnCluster::start(
        &options.executable,
        "restart-memory",
        memory,
        "Diskless=1\n",
    )
    .map_err(|e| disk_cluster.keep_logs(e))?;
    let clients = connect(&disk_cluster).and_then(|disk_client| {
        let memory_client = connect(&memory_cluster)?;
        let disk_table = create_table(&disk_client, TABLE, options.row_bytes)?;
        let memory_table = create_table(&memory_client, TABLE, options.row_bytes)?;
        let mut with_disk = Measured {
            own: &disk_cluster,
            client: &disk_client,
            table: &disk_table,
            inserts: Phase::default(),
            updates: Phase::default(),
        };
        let mut in_memory = Measured {
            own: &memory_cluster,
            client: &memory_client,
            table: &memory_table,
            inserts: Phase::default(),
            updates: Phase::default(),
        };
        load_both(&mut with_disk, &mut in_memory, options)?;
        figures.with_disk = with_disk.figures();
        figures.in_memory = in_memory.figures();
        figures.insert_round_ratios = round_ratios(&with_disk.inserts, &in_memory.inserts);
        figures.update_round_ratios = round_ratios(&with_disk.updates, &in_memory.updates);
        Ok((disk_client, disk_table))
    });
    let (disk_client, disk_table) = match clients {
        Ok(clients) => clients,
        Err(error) => {
            let error = memory_cluster.keep_logs(error);
            return Err(disk_cluster.keep_logs(error));
        }
    };
    drop(memory_cluster);
    measure_restarts(
        &mut disk_cluster,
        disk_client,
        &disk_table,
        options,
        &mut figures,
    )
    .map_err(|e| disk_cluster.keep_logs(e))?;
    drop(disk_cluster);
    if options.json {
        println!("{}", to_json(&figures));
    } else {
        print!("{}", render(&figures));
    }
    Ok(figures)
}

pub fn render(figures: &RestartFigures) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Restart, 2 data nodes (one node group), {} rows of {} bytes ({:.1} MB), {} threads of \
         one-row transactions",
        figures.rows,
        figures.row_bytes,
        figures.data_bytes as f64 / 1e6,
        figures.threads
    );
    let percents = |ratios: &[f64]| {
        ratios
            .iter()
            .map(|ratio| format!("{:.0}", ratio * 100.0))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        out,
        "  inserts/s: {:.0} with disk, {:.0} in memory only ({:.0}%, target >= 90%); rounds {} \
         (median {:.0}%)",
        figures.with_disk.inserts_per_s,
        figures.in_memory.inserts_per_s,
        figures.insert_ratio() * 100.0,
        percents(&figures.insert_round_ratios),
        figures.insert_round_ratio_median() * 100.0
    );
    let _ = writeln!(
        out,
        "  updates/s: {:.0} with disk, {:.0} in memory only ({:.0}%, target >= 90%); rounds {} \
         (median {:.0}%)",
        figures.with_disk.updates_per_s,
        figures.in_memory.updates_per_s,
        figures.update_ratio() * 100.0,
        percents(&figures.update_round_ratios),
        figures.update_round_ratio_median() * 100.0
    );
    let _ = writeln!(
        out,
        "  CPU µs per insert / update, data nodes: {:.1} / {:.1} with disk, {:.1} / {:.1} in \
         memory; whole machine: {:.1} / {:.1} with disk, {:.1} / {:.1} in memory",
        figures.with_disk.insert_node_cpu_us,
        figures.with_disk.update_node_cpu_us,
        figures.in_memory.insert_node_cpu_us,
        figures.in_memory.update_node_cpu_us,
        figures.with_disk.insert_machine_cpu_us,
        figures.with_disk.update_machine_cpu_us,
        figures.in_memory.insert_machine_cpu_us,
        figures.in_memory.update_machine_cpu_us
    );
    let _ = writeln!(
        out,
        "  machine time stolen by its hypervisor, inserts / updates: {:.1}% / {:.1}% with disk, \
         {:.1}% / {:.1}% in memory",
        figures.with_disk.insert_stolen_share * 100.0,
        figures.with_disk.update_stolen_share * 100.0,
        figures.in_memory.insert_stolen_share * 100.0,
        figures.in_memory.update_stolen_share * 100.0
    );
    let _ = writeln!(
        out,
        "  disk writes of the data nodes (redo log and local checkpoints): {:.1} MB/s while \
         inserting, {:.1} MB/s while updating ({} and {} failed writes)",
        figures.with_disk.insert_disk_bytes_per_s / 1e6,
        figures.with_disk.update_disk_bytes_per_s / 1e6,
        figures.with_disk.insert_errors,
        figures.with_disk.update_errors
    );
    let _ = writeln!(
        out,
        "  node restart after {} rows changed: {:.0} ms ({:.1} s per GB; own disk, changed rows copied)",
        figures.node_restart_rows_changed,
        figures.node_restart_ms,
        figures.node_restart_s_per_gb()
    );
    let _ = writeln!(
        out,
        "  system restart after SIGKILL of every process: {:.0} ms ({:.1} s per GB); {} rows back",
        figures.system_restart_ms,
        figures.system_restart_s_per_gb(),
        figures.rows_after_system_restart
    );
    out
}

pub fn to_json(figures: &RestartFigures) -> String {
    let load = |load: &LoadFigures| {
        serde_json::json!({
            "inserts_per_s": load.inserts_per_s,
            "insert_errors": load.insert_errors,
            "updates_per_s": load.updates_per_s,
            "update_errors": load.update_errors,
            "insert_disk_bytes_per_s": load.insert_disk_bytes_per_s,
            "update_disk_bytes_per_s": load.update_disk_bytes_per_s,
            "insert_node_cpu_us": load.insert_node_cpu_us,
            "update_node_cpu_us": load.update_node_cpu_us,
            "insert_machine_cpu_us": load.insert_machine_cpu_us,
            "update_machine_cpu_us": load.update_machine_cpu_us,
            "insert_stolen_share": load.insert_stolen_share,
            "update_stolen_share": load.update_stolen_share,
        })
    };
    serde_json::json!({
        "rows": figures.rows,
        "row_bytes": figures.row_bytes,
        "threads": figures.threads,
        "data_bytes": figures.data_bytes,
        "with_disk": load(&figures.with_disk),
        "in_memory": load(&figures.in_memory),
        "insert_ratio": figures.insert_ratio(),
        "update_ratio": figures.update_ratio(),
        "insert_round_ratios": figures.insert_round_ratios,
        "update_round_ratios": figures.update_round_ratios,
        "insert_round_ratio_median": figures.insert_round_ratio_median(),
        "update_round_ratio_median": figures.update_round_ratio_median(),
        "node_restart_ms": figures.node_restart_ms,
        "node_restart_rows_changed": figures.node_restart_rows_changed,
        "node_restart_s_per_gb": figures.node_restart_s_per_gb(),
        "system_restart_ms": figures.system_restart_ms,
        "system_restart_s_per_gb": figures.system_restart_s_per_gb(),
        "rows_after_system_restart": figures.rows_after_system_restart,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_follow_the_rows_within_bounds() {
        assert_eq!(default_rounds(1_000), 4);
        assert_eq!(default_rounds(200_000), 4);
        assert_eq!(default_rounds(1_000_000), 20);
        assert_eq!(default_rounds(u32::MAX), 40);
    }

    #[test]
    fn the_machine_time_stolen_is_apart_from_its_busy_time() {
        let Some((busy, stolen, all)) = machine_cpu_ns() else {
            return;
        };
        assert!(busy + stolen <= all, "{busy} + {stolen} > {all}");
        assert!(all > 0);
    }
}
