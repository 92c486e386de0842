//! Real processes under faults (issue 11, item 6): a bank workload through
//! the native API while data nodes are killed (SIGKILL) and restarted,
//! stopped (SIGSTOP) and resumed, while an API process holding row locks is
//! stopped, while the management node is killed and restarted, while the
//! data nodes are cut apart by network namespaces, and while every process
//! of the cluster is killed at once and started again (issue 13: the
//! cluster comes back from its disks with every transfer of its last
//! durable global checkpoint).
//!
//! The workload: accounts spread over the partitions, a few client threads
//! moving money between two random accounts in one transaction (both read
//! with an exclusive lock, both updated, and a ledger row inserted, all
//! committed together). Every transfer's outcome is kept on the client:
//! committed, aborted (the error says it did not happen), or unknown (the
//! connection to the coordinator failed while the commit was in flight).
//! After each round, with the workload paused:
//! - the ledger holds every committed transfer, no aborted one, and nothing
//!   else; an unknown transfer is applied if and only if its ledger row is
//!   there (the row and both updates are one transaction, so the balances
//!   below prove it was applied wholly or not at all);
//! - every account, read through every live data node, holds its initial
//!   balance plus the transfers applied, so the total is unchanged and the
//!   nodes agree;
//! - no client call took longer than its deadline, and none ran into it.
//!
//! Every process runs on 127.0.0.1 (or in network namespaces of this
//! machine) with free ports, every wait is bounded, and every process is
//! killed when its test ends, also on panic. The tests run one at a time
//! (`SERIAL`): two clusters at once on a 2-core machine starve heartbeats.
//! `SHOAL_FAULT_ROUNDS=N` runs N kill rounds per cluster size instead of the
//! default; `SHOAL_FAULT_SEED=N` replays a run's choices of victims and
//! moments (the seed is printed).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};
use shoal_client::{
    ClientError, Cluster, ErrorClass, ExecuteEnd, Hint, LockMode, ScanOptions, Session, Status,
    TableRoute, Value,
};
use support::{Processes, eventually, free_port, scratch_dir, signal};

/// The tests of this file take turns (see the module documentation).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    // A test that panicked holding the lock has already failed on its own.
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Room for the ledger of many rounds: each round adds thousands of rows.
const DATA_MEMORY_BYTES: u64 = 128 << 20;
const ACCOUNTS: i64 = 64;
const INITIAL_BALANCE: i64 = 1_000;
const WORKER_THREADS: usize = 3;
/// How long one client call may wait for the cluster (the session's
/// timeout). A call that runs into it counts as hung: the issue asks for an
/// answer from the cluster (committed, aborted or unknown) before that.
const CALL_TIMEOUT: Duration = Duration::from_secs(8);
/// A call's wall time past `CALL_TIMEOUT` that still counts as on time
/// (scheduling on a loaded 2-core machine).
const CALL_SLACK: Duration = Duration::from_secs(2);
/// How long a restarted data node may take to be started again.
const RESTART_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the workload may go without a commit after a failure was
/// handled (a node removed, the management node back): the target
/// is about a second; the bound leaves room for a loaded machine.
const COMMIT_RESUME_TIMEOUT: Duration = Duration::from_secs(5);
/// Kills without a restart: each cluster these tests start
/// loses one data node per node group, so a 2-node cluster is one kill and
/// a 4-node cluster two (one after the other, or both at once).
/// `SHOAL_FAULT_ROUNDS` sets the kills of each.
const DEFAULT_KILLS_TWO_NODES: usize = 4;
const DEFAULT_KILLS_FOUR_NODES: usize = 4;
/// Kill-and-restart rounds per cluster size (the issue asks for at least
/// 20 in the test command), and rounds with a node of each node group
/// killed at once. `SHOAL_FAULT_ROUNDS` sets all three.
const DEFAULT_ROUNDS_TWO_NODES: usize = 20;
const DEFAULT_ROUNDS_FOUR_NODES: usize = 20;
const DEFAULT_ROUNDS_AT_ONCE: usize = 10;
/// Whole-cluster kills (each a system restart from disk).
const DEFAULT_ROUNDS_KILL_ALL: usize = 3;
/// Graceful whole-cluster stops and starts (`SHOAL_FAULT_ROUNDS` sets it).
const DEFAULT_ROUNDS_SHUTDOWN: usize = 2;

/// A small xorshift generator: the test's choices replay from its seed.
struct Random(u64);

impl Random {
    fn from_environment(test: &str) -> Random {
        let seed = std::env::var("SHOAL_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        eprintln!("{test}: SHOAL_FAULT_SEED={seed}");
        Random(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }

    fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(low + self.below(high - low + 1))
    }
}

fn rounds(default: usize) -> usize {
    std::env::var("SHOAL_FAULT_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A management node and `data_nodes` data nodes started by hand (without
/// an angel, so a signal reaches the data node itself), killed on drop.
struct FaultCluster {
    dir: PathBuf,
    port: u16,
    connectstring: String,
    config_file: String,
    processes: Processes,
    data_nodes: Vec<u8>,
    /// Per data node, how many times it was started: each start logs to
    /// its own file.
    starts: BTreeMap<u8, u32>,
    management_starts: u32,
    /// Extra arguments before the command line of a data node: a network
    /// namespace to run it in (see `partition`).
    data_node_prefix: BTreeMap<u8, Vec<String>>,
    /// Data nodes stopped with SIGSTOP and not yet resumed.
    stopped: BTreeSet<u8>,
}

impl FaultCluster {
    fn start(name: &str, data_nodes: u8) -> FaultCluster {
        let dir = scratch_dir(name);
        let port = free_port();
        let text = config::sandbox_config_text(
            dir.to_str().expect("UTF-8"),
            data_nodes,
            2,
            port,
            DATA_MEMORY_BYTES,
        );
        FaultCluster::start_with_config(dir, "127.0.0.1", port, &text, data_nodes, BTreeMap::new())
    }

    fn start_with_config(
        dir: PathBuf,
        management_host: &str,
        port: u16,
        config_text: &str,
        data_nodes: u8,
        data_node_prefix: BTreeMap<u8, Vec<String>>,
    ) -> FaultCluster {
        let config_file = dir.join("config.ini");
        std::fs::write(&config_file, config_text).expect("config");
        let mut cluster = FaultCluster {
            connectstring: format!("{management_host}:{port}"),
            config_file: config_file.to_str().expect("UTF-8").to_string(),
            dir,
            port,
            processes: Processes::default(),
            data_nodes: (2..2 + data_nodes).collect(),
            starts: BTreeMap::new(),
            management_starts: 0,
            data_node_prefix,
            stopped: BTreeSet::new(),
        };
        cluster.start_management();
        std::thread::sleep(Duration::from_millis(300));
        for node in cluster.data_nodes.clone() {
            cluster.start_data_node(node);
        }
        cluster
    }

    fn start_management(&mut self) {
        self.management_starts += 1;
        let port = self.port.to_string();
        let args = ["mgmd", "--config-file", &self.config_file, "--port", &port];
        let log = self
            .dir
            .join(format!("mgmd.{}.log", self.management_starts));
        self.processes.spawn("mgmd", &args, &log);
    }

    /// Starts data node `node` (again), as `shoal up` restarts one: the
    /// same command line, a new process.
    fn start_data_node(&mut self, node: u8) {
        let count = self.starts.entry(node).or_insert(0);
        *count += 1;
        let log = self.dir.join(format!("datad-{node}.{count}.log"));
        let node_text = node.to_string();
        let mut args: Vec<String> = Vec::new();
        let prefix = self
            .data_node_prefix
            .get(&node)
            .cloned()
            .unwrap_or_default();
        if prefix.is_empty() {
            args.extend(
                [
                    "datad",
                    "-c",
                    &self.connectstring,
                    "--ndb-nodeid",
                    &node_text,
                    "--no-angel",
                ]
                .map(String::from),
            );
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            self.processes.spawn(&node_text, &args, &log);
        } else {
            self.spawn_in_namespace(node, &prefix, &log);
        }
    }

    /// Runs data node `node` through `ip netns exec NAMESPACE`: `ip` execs
    /// the data node in its place, so the pid is the data node's own.
    fn spawn_in_namespace(&mut self, node: u8, prefix: &[String], log: &std::path::Path) {
        let file = std::fs::File::create(log).expect("log file");
        let child = Command::new(&prefix[0])
            .args(&prefix[1..])
            .arg(env!("CARGO_BIN_EXE_shoal"))
            .args([
                "datad",
                "-c",
                &self.connectstring,
                "--ndb-nodeid",
                &node.to_string(),
                "--no-angel",
            ])
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("ip netns exec starts");
        self.processes.adopt(&node.to_string(), child);
    }

    fn kill(&mut self, name: &str) {
        self.processes.kill(name);
    }

    /// The global checkpoint the data nodes' last start restored from their
    /// disks, as their logs say (every node that restored names the same
    /// one; a node that copied its rows from a peer names none).
    fn restored_gci(&self) -> u32 {
        const SAID: &str = "restored from this node's disk through GCI ";
        let mut restored = BTreeMap::new();
        for (node, start) in &self.starts {
            let log = self.dir.join(format!("datad-{node}.{start}.log"));
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(at) = text.find(SAID) {
                let digits: String = text[at + SAID.len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                restored.insert(*node, digits.parse::<u32>().expect("a GCI"));
            }
        }
        let gcis: BTreeSet<u32> = restored.values().copied().collect();
        assert!(
            gcis.len() == 1,
            "the data nodes restored {restored:?} (node: GCI):\n{}",
            self.logs()
        );
        gcis.into_iter().next().expect("one")
    }

    /// How many data node starts so far restored their own disk for a
    /// node restart (NDB's optimized node recovery; the log says so).
    fn node_restarts_from_own_disk(&self) -> usize {
        const SAID: &str = "restored from this node's disk for its node restart";
        self.starts
            .iter()
            .flat_map(|(node, last)| (1..=*last).map(move |start| (node, start)))
            .filter(|(node, start)| {
                let log = self.dir.join(format!("datad-{node}.{start}.log"));
                std::fs::read_to_string(&log).is_ok_and(|text| text.contains(SAID))
            })
            .count()
    }

    /// Starts the management node and every data node (a system restart
    /// from their disks) and waits until every data node is started.
    fn start_all(&mut self, client: &Cluster) {
        self.start_management();
        for node in self.data_nodes.clone() {
            self.start_data_node(node);
        }
        for node in self.data_nodes.clone() {
            self.wait_started(client, node, RESTART_TIMEOUT);
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    /// Waits up to `timeout` for the process started as `name` to exit by
    /// itself, then reaps it; its exit status, or `None` if it had to be
    /// killed.
    fn wait_exit(&mut self, name: &str, timeout: Duration) -> Option<std::process::ExitStatus> {
        let status = eventually(timeout, || self.processes.try_wait(name));
        self.processes.kill(name);
        status
    }

    /// Stops data node `node` with SIGSTOP: its sockets stay open, only its
    /// silence tells.
    fn pause(&mut self, node: u8) {
        assert!(signal(
            self.processes.pid(&node.to_string()),
            rustix::process::Signal::STOP
        ));
        self.stopped.insert(node);
    }

    fn resume(&mut self, node: u8) {
        assert!(signal(
            self.processes.pid(&node.to_string()),
            rustix::process::Signal::CONT
        ));
        self.stopped.remove(&node);
    }

    /// Waits until `node` is no longer a member, and says how long it took.
    fn wait_removed(&self, client: &Cluster, node: u8, timeout: Duration) -> Duration {
        let started = Instant::now();
        eventually(timeout, || {
            let members = self.members(client);
            (!members.is_empty() && !members.contains(&node)).then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "data node {node} was not removed within {timeout:?}:\n{}",
                self.logs()
            )
        });
        started.elapsed()
    }

    /// The node groups: the replica sets of the accounts' fragments.
    fn node_groups(client: &Cluster) -> Vec<BTreeSet<u8>> {
        let accounts = client.table("accounts").expect("accounts");
        let mut groups: Vec<BTreeSet<u8>> = accounts
            .fragments
            .iter()
            .map(|f| f.replicas.iter().copied().collect())
            .collect();
        groups.sort();
        groups.dedup();
        groups
    }

    /// Whether the management node says `node` is started (not starting,
    /// not absent).
    fn started_by_management(&self, node: u8) -> bool {
        let (ok, text) = support::mgm(&self.connectstring, &format!("{node} STATUS"));
        ok && text.contains(&format!("Node {node}: started"))
    }

    /// Waits until `node` is started by the management node's account and a
    /// member of the cluster state (whether `client` is connected says
    /// nothing: it dials a data node only to send it something); only then may
    /// the other replica of its node group fail without losing data (once
    /// node recovery copies fragments, `started` means the copy is over).
    fn wait_started(&self, client: &Cluster, node: u8, timeout: Duration) {
        let started = Instant::now();
        let ready = eventually(timeout, || {
            if !self.started_by_management(node) {
                return None;
            }
            let member = self
                .data_nodes
                .iter()
                .filter_map(|n| client.cluster_state(*n).ok())
                .any(|state| state.member_of(node).is_some());
            member.then_some(())
        });
        if ready.is_none() {
            panic!(
                "data node {node} was not started again within {timeout:?}:\n{}",
                self.logs()
            );
        }
        eprintln!(
            "data node {node} started again after {:?}",
            started.elapsed()
        );
    }

    /// The live members, in the newest cluster state any data node
    /// answers with (a stopped one is not asked: it would answer only at
    /// the deadline; a node that restarted and has not joined yet answers
    /// with an older state or none).
    fn members(&self, client: &Cluster) -> Vec<u8> {
        self.data_nodes
            .iter()
            .filter(|node| !self.stopped.contains(node))
            .filter_map(|node| client.cluster_state(*node).ok())
            .max_by_key(|state| (state.generation, state.version))
            .map(|state| state.members.iter().map(|m| m.node).collect())
            .unwrap_or_default()
    }

    /// The tail of every log of this cluster, for a failure's message.
    fn logs(&self) -> String {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        names.sort();
        let mut text = String::new();
        for path in names {
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let content = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = content.lines().collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            text.push_str(&format!("--- {}\n{}\n", path.display(), tail.join("\n")));
        }
        text
    }
}

impl Drop for FaultCluster {
    fn drop(&mut self) {
        // A stopped process ignores nothing but SIGKILL; resume it anyway so
        // no stopped process is left if a kill fails.
        for node in self.stopped.clone() {
            if let Some(pid) = self.processes.try_pid(&node.to_string()) {
                signal(pid, rustix::process::Signal::CONT);
            }
        }
        // The processes are killed by `Processes`' drop; the logs stay for a
        // failed test to be read.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Connects a client once every data node is a member.
fn connect(cluster: &FaultCluster) -> Cluster {
    let client = eventually(Duration::from_secs(30), || {
        Cluster::connect(&cluster.connectstring, Duration::from_secs(5)).ok()
    })
    .unwrap_or_else(|| panic!("no client connected:\n{}", cluster.logs()));
    let wanted = cluster.data_nodes.len();
    eventually(Duration::from_secs(30), || {
        (cluster.members(&client).len() == wanted).then_some(())
    })
    .unwrap_or_else(|| panic!("the data nodes did not all start:\n{}", cluster.logs()));
    client
}

fn accounts_table() -> TableDef {
    TableDef::new(
        "accounts",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("balance", ColumnType::BigInt { unsigned: false }, false),
        ],
        vec![0],
        vec![],
    )
    .expect("a valid table")
}

fn ledger_table() -> TableDef {
    TableDef::new(
        "ledger",
        vec![
            ColumnDef::new("transfer", ColumnType::BigInt { unsigned: false }, false),
            ColumnDef::new("source", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("target", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("amount", ColumnType::BigInt { unsigned: false }, false),
        ],
        vec![0],
        vec![],
    )
    .expect("a valid table")
}

/// Creates the tables and the accounts, each with `INITIAL_BALANCE`.
fn create_bank(client: &Cluster) {
    client
        .create_table(&accounts_table(), &TableOptions::default())
        .expect("create accounts");
    client
        .create_table(&ledger_table(), &TableOptions::default())
        .expect("create ledger");
    let accounts = client.table("accounts").expect("accounts");
    let mut session = client.session().expect("session");
    let mut insert = session.start_transaction(None).expect("start");
    for id in 0..ACCOUNTS {
        insert
            .insert(
                &accounts,
                &[(0, Value::Int(id)), (1, Value::Int(INITIAL_BALANCE))],
            )
            .expect("define");
    }
    session
        .execute(&mut insert, ExecuteEnd::Commit)
        .expect("insert the accounts");
}

#[derive(Debug, Clone, Copy)]
struct Transfer {
    id: i64,
    source: i64,
    target: i64,
    amount: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Committed,
    /// The cluster said the transaction did not commit.
    Aborted,
    /// The commit was in flight when the coordinator's connection failed.
    Unknown,
}

/// What the clients saw: every transfer's outcome and every call's time.
#[derive(Default)]
struct Journal {
    transfers: Vec<(Transfer, Outcome)>,
    /// Unknown transfers already found applied or not by a check.
    resolved: BTreeMap<i64, bool>,
    calls: u64,
    slowest_call: Duration,
    /// Calls that took longer than `CALL_TIMEOUT + CALL_SLACK`.
    late_calls: Vec<String>,
    /// Calls that ran into their deadline (the client's 4012 "no answer").
    timed_out_calls: Vec<String>,
    errors: BTreeMap<u16, u64>,
    /// Why each commit that failed with an abort failed (a check that
    /// finds one applied names the error it got).
    commit_errors: BTreeMap<i64, String>,
    /// Each committed transfer's life of the cluster (`Bank::life`) and
    /// the global checkpoint its commit said it belongs to
    /// (`Transaction::commit_gci`).
    commit_gcis: BTreeMap<i64, (u32, u32)>,
}

/// Shared by the worker threads and the checks.
struct Bank {
    accounts: Arc<TableRoute>,
    ledger: Arc<TableRoute>,
    journal: Mutex<Journal>,
    next_transfer: AtomicU64,
    /// How many times every process of the cluster was killed: a commit
    /// is told by the life it was acknowledged in. The count moves once
    /// every old process is dead and before any new one starts.
    life: AtomicU32,
}

impl Bank {
    fn new(client: &Cluster) -> Bank {
        Bank {
            accounts: client.table("accounts").expect("accounts"),
            ledger: client.table("ledger").expect("ledger"),
            journal: Mutex::new(Journal::default()),
            next_transfer: AtomicU64::new(1),
            life: AtomicU32::new(0),
        }
    }

    fn journal(&self) -> MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Times one client call and records what it took and how it failed.
    fn timed<T>(
        &self,
        what: &str,
        call: impl FnOnce() -> Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        let started = Instant::now();
        let result = call();
        let took = started.elapsed();
        let mut journal = self.journal();
        journal.calls += 1;
        journal.slowest_call = journal.slowest_call.max(took);
        if took > CALL_TIMEOUT + CALL_SLACK {
            journal.late_calls.push(format!("{what} took {took:?}"));
        }
        if let Err(error) = &result {
            *journal.errors.entry(error.ndb_code).or_insert(0) += 1;
            if error.message.contains("by the call's deadline") {
                journal
                    .timed_out_calls
                    .push(format!("{what} after {took:?}: {error}"));
            }
        }
        result
    }

    /// One transfer: both accounts read with an exclusive lock, both
    /// updated and the ledger row inserted, in one transaction.
    fn transfer(&self, session: &mut Session, transfer: Transfer) -> Outcome {
        let source_key = [(0, Value::Int(transfer.source))];
        let target_key = [(0, Value::Int(transfer.target))];
        let Ok(mut transaction) = self.timed("start", || {
            session.start_transaction(Some(Hint {
                table: &self.accounts,
                key: &source_key,
                committed_read: false,
            }))
        }) else {
            return Outcome::Aborted;
        };
        // The lower account is locked first, in a round trip of its own, so
        // two transfers never wait for each other (no deadlock to time out).
        let mut lock = |transaction: &mut shoal_client::Transaction, key: &[(u16, Value)]| {
            let operation = transaction
                .read(&self.accounts, key, &[1], LockMode::Exclusive)
                .expect("define");
            self.timed("read", || {
                session.execute(transaction, ExecuteEnd::NoCommit)
            })
            .map(|()| operation)
        };
        let locked = if transfer.source < transfer.target {
            lock(&mut transaction, &source_key)
                .and_then(|source| Ok((source, lock(&mut transaction, &target_key)?)))
        } else {
            lock(&mut transaction, &target_key)
                .and_then(|target| Ok((lock(&mut transaction, &source_key)?, target)))
        };
        let Ok((source, target)) = locked else {
            // Nothing was asked to commit, so nothing did.
            return Outcome::Aborted;
        };
        let balance = |operation| match transaction.row(operation).map(|r| r.get(1).cloned()) {
            Ok(Some(Value::Int(balance))) => balance,
            other => panic!("transfer {}: balance {other:?}", transfer.id),
        };
        let (source_balance, target_balance) = (balance(source), balance(target));
        transaction
            .update(
                &self.accounts,
                &source_key,
                &[(1, Value::Int(source_balance - transfer.amount))],
            )
            .expect("define");
        transaction
            .update(
                &self.accounts,
                &target_key,
                &[(1, Value::Int(target_balance + transfer.amount))],
            )
            .expect("define");
        transaction
            .insert(
                &self.ledger,
                &[
                    (0, Value::Int(transfer.id)),
                    (1, Value::Int(transfer.source)),
                    (2, Value::Int(transfer.target)),
                    (3, Value::Int(transfer.amount)),
                ],
            )
            .expect("define");
        let life = self.life.load(Ordering::SeqCst);
        match self.timed("commit", || {
            session.execute(&mut transaction, ExecuteEnd::Commit)
        }) {
            // The answer came while every process was killed and restarted:
            // it cannot be told which life it came from, so which global
            // checkpoint it names.
            Ok(()) if self.life.load(Ordering::SeqCst) != life => Outcome::Unknown,
            Ok(()) => {
                assert_eq!(transaction.status(), Status::Committed);
                let gci = transaction
                    .commit_gci()
                    .unwrap_or_else(|| panic!("transfer {} committed without a GCI", transfer.id));
                self.journal().commit_gcis.insert(transfer.id, (life, gci));
                Outcome::Committed
            }
            Err(error) if error.class() == ErrorClass::UnknownResult => Outcome::Unknown,
            Err(error) => {
                self.journal()
                    .commit_errors
                    .insert(transfer.id, error.to_string());
                Outcome::Aborted
            }
        }
    }

    /// Transfers between random accounts until `stop` is set.
    fn work(&self, client: &Cluster, seed: u64, stop: &AtomicBool) {
        let mut random = Random(seed.max(1));
        let mut session = loop {
            match client.session() {
                Ok(session) => break session,
                Err(_) if !stop.load(Ordering::Relaxed) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(error) => panic!("no session: {error}"),
            }
        };
        session.set_timeout(CALL_TIMEOUT);
        while !stop.load(Ordering::Relaxed) {
            let source = random.below(ACCOUNTS as u64) as i64;
            let target = (source + 1 + random.below(ACCOUNTS as u64 - 1) as i64) % ACCOUNTS;
            let transfer = Transfer {
                id: self.next_transfer.fetch_add(1, Ordering::Relaxed) as i64,
                source,
                target,
                amount: 1 + random.below(50) as i64,
            };
            let outcome = self.transfer(&mut session, transfer);
            self.journal().transfers.push((transfer, outcome));
            if outcome != Outcome::Committed {
                // A node is failing: give the cluster a moment.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// The ids in the ledger, read by a scan.
    fn ledger_ids(&self, client: &Cluster) -> BTreeSet<i64> {
        let mut session = client.session().expect("session");
        session.set_timeout(CALL_TIMEOUT);
        retry_temporary("scan the ledger", || {
            let mut transaction = session.start_transaction(None)?;
            let scan = session.scan(
                &mut transaction,
                &self.ledger,
                &ScanOptions {
                    columns: vec![0],
                    ..ScanOptions::default()
                },
            )?;
            let mut ids = BTreeSet::new();
            while let Some(row) = session.next_row(&scan)? {
                match row.get(0) {
                    Some(Value::Int(id)) => ids.insert(*id),
                    other => panic!("ledger id {other:?}"),
                };
            }
            session.execute(&mut transaction, ExecuteEnd::Commit)?;
            Ok(ids)
        })
    }

    /// Every account's balance, read (committed) by a transaction whose
    /// coordinator is `node`: committed reads go to the replica nearest the
    /// coordinator, so a node's own fragments are read there. A permanent
    /// error is a finding of the check, not a reason to stop it.
    fn balances_through(
        &self,
        client: &Cluster,
        node: u8,
        retry_for: Duration,
    ) -> Result<BTreeMap<i64, i64>, String> {
        let mut session = client.session().expect("session");
        session.set_timeout(CALL_TIMEOUT);
        let deadline = Instant::now() + retry_for;
        loop {
            let mut transaction = session.transaction_at(node);
            let mut reads = Vec::new();
            for id in 0..ACCOUNTS {
                let operation = transaction
                    .read(
                        &self.accounts,
                        &[(0, Value::Int(id))],
                        &[1],
                        LockMode::Committed,
                    )
                    .expect("define");
                reads.push((id, operation));
            }
            match session.execute(&mut transaction, ExecuteEnd::Commit) {
                Ok(()) => {}
                Err(error) if error.is_temporary() && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                Err(error) => {
                    return Err(format!("reading the accounts through node {node}: {error}"));
                }
            }
            let mut balances = BTreeMap::new();
            for (id, operation) in reads {
                match transaction.row(operation).map(|row| row.get(1).cloned()) {
                    Ok(Some(Value::Int(balance))) => balances.insert(id, balance),
                    other => return Err(format!("account {id} through node {node}: {other:?}")),
                };
            }
            return Ok(balances);
        }
    }

    /// The checks of a round, with the workload paused (see the module
    /// documentation). Returns the committed transfers of the round.
    fn check(&self, client: &Cluster, cluster: &FaultCluster, round: &str) -> usize {
        let ledger = self.ledger_ids(client);
        let mut journal = self.journal();
        let mut problems = Vec::new();
        let mut expected: BTreeMap<i64, i64> =
            (0..ACCOUNTS).map(|id| (id, INITIAL_BALANCE)).collect();
        let mut known = BTreeSet::new();
        let (mut committed, mut aborted, mut unknown, mut unknown_applied) = (0, 0, 0, 0);
        let transfers = journal.transfers.clone();
        for (transfer, outcome) in &transfers {
            known.insert(transfer.id);
            let present = ledger.contains(&transfer.id);
            let applied = match outcome {
                Outcome::Committed => {
                    committed += 1;
                    if !present {
                        problems.push(format!("acknowledged {transfer:?} is not in the ledger"));
                    }
                    true
                }
                Outcome::Aborted => {
                    aborted += 1;
                    if present {
                        let why = journal
                            .commit_errors
                            .get(&transfer.id)
                            .map_or("before its commit", String::as_str);
                        problems.push(format!("aborted {transfer:?} is in the ledger ({why})"));
                    }
                    false
                }
                Outcome::Unknown => {
                    unknown += 1;
                    unknown_applied += usize::from(present);
                    if let Some(before) = journal.resolved.insert(transfer.id, present)
                        && before != present
                    {
                        problems.push(format!(
                            "unknown {transfer:?} was {} at an earlier check and is {} now",
                            if before { "applied" } else { "not applied" },
                            if present { "applied" } else { "not applied" },
                        ));
                    }
                    present
                }
            };
            if applied {
                *expected.get_mut(&transfer.source).expect("account") -= transfer.amount;
                *expected.get_mut(&transfer.target).expect("account") += transfer.amount;
            }
        }
        for id in ledger.difference(&known) {
            problems.push(format!(
                "the ledger holds transfer {id} that no client made"
            ));
        }
        let members = cluster.members(client);
        if members.is_empty() {
            problems.push("no data node answered with the cluster state".to_string());
        }
        for node in &members {
            let balances = match self.balances_through(client, *node, RETRY_TIMEOUT) {
                Ok(balances) => balances,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            let total: i64 = balances.values().sum();
            if total != ACCOUNTS * INITIAL_BALANCE {
                problems.push(format!(
                    "through node {node} the total is {total}, not {}",
                    ACCOUNTS * INITIAL_BALANCE
                ));
            }
            for (id, balance) in &balances {
                if expected[id] != *balance {
                    problems.push(format!(
                        "through node {node} account {id} holds {balance}, expected {}",
                        expected[id]
                    ));
                }
            }
        }
        if !journal.late_calls.is_empty() {
            problems.push(format!("calls too slow: {:?}", journal.late_calls));
        }
        if !journal.timed_out_calls.is_empty() {
            problems.push(format!(
                "calls unanswered by their deadline: {:?}",
                journal.timed_out_calls
            ));
        }
        eprintln!(
            "{round}: {} transfers ({committed} committed, {aborted} aborted, {unknown} unknown \
             of which {unknown_applied} applied), {} calls, slowest {:?}, errors by code {:?}, \
             checked through nodes {members:?}",
            transfers.len(),
            journal.calls,
            journal.slowest_call,
            journal.errors,
        );
        drop(journal);
        assert!(
            problems.is_empty(),
            "{round}: {} problems:\n  {}\n{}",
            problems.len(),
            problems
                .iter()
                .take(40)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n  "),
            cluster.logs()
        );
        committed
    }

    /// Runs the workload on `WORKER_THREADS` threads while `faults` runs on
    /// this one, then stops the workload; returns the transfers committed
    /// meanwhile.
    fn under_load(&self, client: &Cluster, seed: u64, faults: impl FnOnce()) -> usize {
        let before = self.committed();
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..WORKER_THREADS)
                .map(|worker| {
                    let stop = &stop;
                    scope.spawn(move || self.work(client, seed ^ (worker as u64 + 1) << 32, stop))
                })
                .collect();
            // The workers stop even if the faults panic, so the scope ends.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(faults));
            stop.store(true, Ordering::Relaxed);
            for worker in workers {
                worker.join().expect("a worker panicked");
            }
            if let Err(panic) = result {
                std::panic::resume_unwind(panic);
            }
        });
        self.committed() - before
    }

    /// Waits until a transfer commits after this call began, for at most
    /// `timeout`; how long that took.
    fn next_commit(&self, timeout: Duration) -> Option<Duration> {
        let started = Instant::now();
        let before = self.committed();
        let deadline = started + timeout;
        while Instant::now() < deadline {
            if self.committed() > before {
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        None
    }

    /// The highest global checkpoint a transfer committed in so far.
    fn last_commit_gci(&self) -> u32 {
        self.journal()
            .commit_gcis
            .values()
            .map(|(_, gci)| *gci)
            .max()
            .unwrap_or(0)
    }

    /// After a system restart of the cluster's life `life` that restored
    /// global checkpoint `restored`: every transfer that life committed in
    /// it or an earlier one must be there, and none committed in a later
    /// one may be (NDB's promise: the last
    /// complete global checkpoint, and no part of a later one), so those
    /// are checked as aborted from now on. Unknown transfers found applied
    /// before may be gone now: each is checked afresh as applied wholly or
    /// not at all. Calls cut off by the restart's outage are forgiven:
    /// every node was down, so they waited for their deadline. Returns how
    /// many committed transfers were kept and how many must be gone.
    fn after_system_restart(&self, life: u32, restored: u32) -> (usize, usize) {
        let mut journal = self.journal();
        let journal = &mut *journal;
        let (mut kept, mut gone) = (0, 0);
        for (transfer, outcome) in &mut journal.transfers {
            match *outcome {
                Outcome::Committed => {
                    let (committed_in, gci) = journal.commit_gcis[&transfer.id];
                    if committed_in != life {
                        // Checked at an earlier restart, or committed
                        // after this one.
                        continue;
                    }
                    if gci <= restored {
                        kept += 1;
                    } else {
                        gone += 1;
                        *outcome = Outcome::Aborted;
                        journal.commit_errors.insert(
                            transfer.id,
                            format!(
                                "committed in GCI {gci}, after GCI {restored} the restart \
                                 restored"
                            ),
                        );
                    }
                }
                Outcome::Unknown => {
                    journal.resolved.remove(&transfer.id);
                }
                Outcome::Aborted => {}
            }
        }
        journal.late_calls.clear();
        journal.timed_out_calls.clear();
        (kept, gone)
    }

    /// After a whole-cluster outage: calls cut off by it waited for their
    /// deadline, as they must when every node is down. Their outcomes
    /// stay as they are.
    fn forgive_outage(&self) {
        let mut journal = self.journal();
        journal.late_calls.clear();
        journal.timed_out_calls.clear();
    }

    fn committed(&self) -> usize {
        self.journal()
            .transfers
            .iter()
            .filter(|(_, outcome)| *outcome == Outcome::Committed)
            .count()
    }
}

/// How long a check retries a temporary error: the checks run right after
/// a membership change, when a temporary refusal is the cluster's correct
/// answer.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `attempt` until it succeeds or fails with a permanent error, for
/// at most `RETRY_TIMEOUT`.
fn retry_temporary<T>(what: &str, mut attempt: impl FnMut() -> Result<T, ClientError>) -> T {
    let deadline = Instant::now() + RETRY_TIMEOUT;
    loop {
        match attempt() {
            Ok(value) => return value,
            Err(error) if error.is_temporary() && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(error) => panic!("{what}: {error}"),
        }
    }
}

/// Kill rounds: in each, under load, one data node (with `at_once` and
/// 4 nodes, sometimes one of each node group together) is killed with
/// SIGKILL at a random moment, the workload goes on without it for a
/// random while, it is started again and the round waits until it is
/// started (its fragments copied), then the workload pauses and the checks
/// run.
fn kill_rounds(name: &str, data_nodes: u8, rounds: usize, at_once: bool) {
    let _serial = serial();
    let mut random = Random::from_environment(name);
    let mut cluster = FaultCluster::start(name, data_nodes);
    let client = connect(&cluster);
    create_bank(&client);
    let bank = Bank::new(&client);
    let groups = FaultCluster::node_groups(&client);
    assert_eq!(
        groups.len(),
        usize::from(data_nodes / 2),
        "node groups {groups:?}"
    );
    bank.check(&client, &cluster, "before any fault");
    let started = Instant::now();
    for round in 1..=rounds {
        // One victim per node group at most: the other replica keeps the
        // group alive.
        let mut victims: Vec<u8> = Vec::new();
        let first_group = random.below(groups.len() as u64) as usize;
        for (index, group) in groups.iter().enumerate() {
            let members: Vec<u8> = group.iter().copied().collect();
            if index == first_group || (at_once && random.below(2) == 0) {
                victims.push(members[random.below(members.len() as u64) as usize]);
            }
        }
        let before_kill = random.millis(100, 700);
        let down_for = random.millis(100, 1_000);
        let seed = random.next();
        let committed = bank.under_load(&client, seed, || {
            std::thread::sleep(before_kill);
            for victim in &victims {
                cluster.kill(&victim.to_string());
            }
            eprintln!("round {round}: killed {victims:?} after {before_kill:?}");
            std::thread::sleep(down_for);
            for victim in &victims {
                cluster.start_data_node(*victim);
            }
            for victim in &victims {
                cluster.wait_started(&client, *victim, RESTART_TIMEOUT);
            }
            // Some load with every node back.
            std::thread::sleep(Duration::from_millis(300));
        });
        assert!(
            committed > 0,
            "round {round}: no transfer committed:\n{}",
            cluster.logs()
        );
        bank.check(
            &client,
            &cluster,
            &format!("round {round} (killed {victims:?})"),
        );
    }
    // The victims' disks held global checkpoints of this cluster's run, so
    // their restarts restored them and copied only what changed (each
    // round's checks above then held for them).
    let from_disk = cluster.node_restarts_from_own_disk();
    eprintln!(
        "{name}: {rounds} rounds in {:?}, {from_disk} node restart(s) from the node's own disk",
        started.elapsed()
    );
    assert!(
        from_disk > 0,
        "no node restart restored its own disk:
{}",
        cluster.logs()
    );
}

#[test]
fn bank_survives_data_nodes_killed_and_restarted_on_two_nodes() {
    kill_rounds("faults-kill-2", 2, rounds(DEFAULT_ROUNDS_TWO_NODES), false);
}

/// On 4 nodes, one node killed and restarted per round. This found that a
/// write forwarded to a restarted node before its peers had connected to
/// its new incarnation was dropped, so the transaction waited until the
/// client's deadline while the node's copy waited for that transaction.
#[test]
fn bank_survives_data_nodes_killed_and_restarted_on_four_nodes() {
    kill_rounds("faults-kill-4", 4, rounds(DEFAULT_ROUNDS_FOUR_NODES), false);
}

/// A node of each node group killed at once and restarted at once, round
/// after round: two copies run together under the workload.
///
/// Once (before the fix above, under heavy machine load) a surviving
/// president suspected the other survivor of missed heartbeats right after
/// the two removals, both concluded that a node group had no live node
/// left, and the cluster formed again empty; not seen again since.
#[test]
fn bank_survives_a_node_of_each_group_killed_at_once_and_restarted() {
    kill_rounds(
        "faults-kill-4-at-once",
        4,
        rounds(DEFAULT_ROUNDS_AT_ONCE),
        true,
    );
}

/// Kills one data node per node group, one group after the other, under
/// load, without restarting them (what holds before node recovery): the
/// survivors take over the dead node's transactions and partitions, and
/// nothing acknowledged is lost.
fn kill_one_per_group(name: &str, data_nodes: u8, clusters: usize) {
    let _serial = serial();
    let mut random = Random::from_environment(name);
    let started = Instant::now();
    for attempt in 1..=clusters {
        eprintln!("{name}: cluster {attempt} of {clusters}");
        kill_one_per_group_once(name, data_nodes, &mut random);
    }
    eprintln!("{name}: {clusters} clusters in {:?}", started.elapsed());
}

fn kill_one_per_group_once(name: &str, data_nodes: u8, random: &mut Random) {
    let mut cluster = FaultCluster::start(name, data_nodes);
    let client = connect(&cluster);
    create_bank(&client);
    let bank = Bank::new(&client);
    let mut groups = FaultCluster::node_groups(&client);
    if random.below(2) == 1 {
        groups.reverse();
    }
    bank.check(&client, &cluster, "before any fault");
    let victims: Vec<u8> = groups
        .iter()
        .map(|group| {
            let members: Vec<u8> = group.iter().copied().collect();
            members[random.below(members.len() as u64) as usize]
        })
        .collect();
    // With two node groups, half the clusters lose a node of each at once:
    // a transaction spanning both groups then loses both its primaries.
    let rounds: Vec<Vec<u8>> = if victims.len() > 1 && random.below(2) == 0 {
        vec![victims]
    } else {
        victims.into_iter().map(|victim| vec![victim]).collect()
    };
    for (round, victims) in rounds.iter().enumerate() {
        let before_kill = random.millis(100, 700);
        let seed = random.next();
        let mut resumed_after = None;
        bank.under_load(&client, seed, || {
            std::thread::sleep(before_kill);
            for victim in victims {
                cluster.kill(&victim.to_string());
            }
            let took: Vec<Duration> = victims
                .iter()
                .map(|victim| cluster.wait_removed(&client, *victim, Duration::from_secs(10)))
                .collect();
            resumed_after = bank.next_commit(COMMIT_RESUME_TIMEOUT);
            eprintln!(
                "round {round}: killed {victims:?} after {before_kill:?}, removed in {took:?}, \
                 next commit after {resumed_after:?}"
            );
            std::thread::sleep(Duration::from_millis(500));
        });
        bank.check(
            &client,
            &cluster,
            &format!("round {round} (killed {victims:?})"),
        );
        assert!(
            resumed_after.is_some(),
            "round {round}: no transfer committed within {COMMIT_RESUME_TIMEOUT:?} of the \
             removal of {victims:?}:\n{}",
            cluster.logs()
        );
    }
}

#[test]
fn bank_survives_one_data_node_killed_on_two_nodes() {
    kill_one_per_group("faults-kill-one-2", 2, rounds(DEFAULT_KILLS_TWO_NODES));
}

#[test]
fn bank_survives_one_data_node_per_node_group_killed_on_four_nodes() {
    kill_one_per_group(
        "faults-kill-one-4",
        4,
        rounds(DEFAULT_KILLS_FOUR_NODES).div_ceil(2),
    );
}

/// SIGSTOP of a data node under load: it is removed within seconds, the
/// survivor goes on, nothing acknowledged is lost; after SIGCONT it learns
/// it was removed, restarts as a new incarnation and rejoins. With
/// `check_after_rejoin`, the round waits until it is started again and
/// checks through it too (that needs node recovery).
/// With `resume_within`, the workload must commit again within that long
/// of the node's removal.
fn stop_and_resume(name: &str, check_after_rejoin: bool, resume_within: Option<Duration>) {
    let _serial = serial();
    let mut random = Random::from_environment(name);
    let mut cluster = FaultCluster::start(name, 2);
    let client = connect(&cluster);
    create_bank(&client);
    let bank = Bank::new(&client);
    let victim = 2 + random.below(2) as u8;
    let before_stop = random.millis(100, 700);
    let seed = random.next();
    let mut removed_after = Duration::ZERO;
    let mut resumed_after = None;
    bank.under_load(&client, seed, || {
        std::thread::sleep(before_stop);
        cluster.pause(victim);
        removed_after = cluster.wait_removed(&client, victim, Duration::from_secs(15));
        resumed_after = bank.next_commit(COMMIT_RESUME_TIMEOUT);
        eprintln!(
            "stopped {victim} after {before_stop:?}, removed in {removed_after:?}, next \
             commit after {resumed_after:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    });
    bank.check(&client, &cluster, &format!("node {victim} stopped"));
    if let Some(bound) = resume_within {
        let stall = resumed_after.unwrap_or(COMMIT_RESUME_TIMEOUT);
        assert!(
            stall <= bound,
            "no transfer committed for {stall:?} after the removal of the stopped node, \
             {:?} after the SIGSTOP (slowest call {:?})",
            removed_after + stall,
            bank.journal().slowest_call
        );
    }
    // The bound for a silent node, with room for a loaded machine.
    assert!(
        removed_after < Duration::from_secs(8),
        "removal of a stopped node took {removed_after:?}"
    );
    assert!(
        resumed_after.is_some(),
        "no transfer committed within {COMMIT_RESUME_TIMEOUT:?} of node {victim}'s \
         removal:\n{}",
        cluster.logs()
    );
    cluster.resume(victim);
    if !check_after_rejoin {
        eventually(Duration::from_secs(30), || {
            cluster.members(&client).contains(&victim).then_some(())
        })
        .unwrap_or_else(|| panic!("node {victim} did not rejoin:\n{}", cluster.logs()));
        return;
    }
    let seed = random.next();
    bank.under_load(&client, seed, || {
        cluster.wait_started(&client, victim, RESTART_TIMEOUT);
        std::thread::sleep(Duration::from_millis(500));
    });
    bank.check(
        &client,
        &cluster,
        &format!("node {victim} resumed and started"),
    );
}

#[test]
fn bank_survives_a_data_node_stopped_and_it_rejoins() {
    stop_and_resume("faults-stop", false, None);
}

#[test]
fn bank_survives_a_data_node_stopped_and_resumed_and_reads_through_it_agree() {
    stop_and_resume("faults-stop-rejoin", true, None);
}

/// Once the cluster has removed a stopped data node (1.5-1.7 s after
/// SIGSTOP), every execute in flight there is answered (issue 11, item 1:
/// committed, 4010, or unknown result) and commits go on within a second:
/// a session waiting for answers reads the routing again when a heartbeat
/// names a newer cluster state, and closes the link to a node the cluster
/// removed, rather than waiting for the API's own silence limit
/// (HeartbeatIntervalDbApi x MaxMissedHeartbeats = 3 s).
#[test]
fn commits_resume_within_a_second_of_a_stopped_data_nodes_removal() {
    stop_and_resume("faults-stop-stall", false, Some(Duration::from_secs(1)));
}

/// The environment variable that makes `lock_holder_process` the API
/// process of `a_stopped_api_process_loses_its_locks_within_seconds`: the
/// management node's address.
const LOCK_HOLDER_VARIABLE: &str = "SHOAL_FAULT_LOCK_HOLDER";
/// What the lock holder prints, with its node id, once it holds the locks.
const LOCKED_BY: &str = "LOCKED by API node ";
/// The accounts the stopped API process holds locked.
const LOCKED_ACCOUNTS: i64 = 8;
/// What the stopped API process adds to each locked account without
/// committing: seen in a balance, it means its transaction was not rolled
/// back.
const UNCOMMITTED_AMOUNT: i64 = 1_000_000;

/// The API process of `a_stopped_api_process_loses_its_locks_within_seconds`,
/// run by it in a child process (this test binary again): it locks the
/// first `LOCKED_ACCOUNTS` accounts, changes them without committing, says
/// so on stdout and waits to be stopped and killed.
#[test]
#[ignore = "the API process of a_stopped_api_process_loses_its_locks_within_seconds, which runs it"]
fn lock_holder_process() {
    let connectstring = std::env::var(LOCK_HOLDER_VARIABLE)
        .expect("run by a_stopped_api_process_loses_its_locks_within_seconds");
    let client = Cluster::connect(&connectstring, Duration::from_secs(10)).expect("connect");
    let accounts = client.table("accounts").expect("accounts");
    let mut session = client.session().expect("session");
    let mut transaction = session.start_transaction(None).expect("start");
    let reads: Vec<_> = (0..LOCKED_ACCOUNTS)
        .map(|id| {
            transaction
                .read(&accounts, &[(0, Value::Int(id))], &[1], LockMode::Exclusive)
                .expect("define")
        })
        .collect();
    session
        .execute(&mut transaction, ExecuteEnd::NoCommit)
        .expect("lock the accounts");
    for (id, read) in (0..LOCKED_ACCOUNTS).zip(reads) {
        let Some(Value::Int(balance)) = transaction.row(read).expect("row").get(1).cloned() else {
            panic!("account {id} has no balance");
        };
        transaction
            .update(
                &accounts,
                &[(0, Value::Int(id))],
                &[(1, Value::Int(balance + UNCOMMITTED_AMOUNT))],
            )
            .expect("define");
    }
    session
        .execute(&mut transaction, ExecuteEnd::NoCommit)
        .expect("change the accounts");
    println!("{LOCKED_BY}{}", client.node_id());
    // The parent stops this process now and kills it at the end; the bound
    // only keeps an orphan from living forever.
    std::thread::sleep(Duration::from_secs(300));
}

/// An API process stopped with SIGSTOP while it holds row locks (its
/// sockets stay open): the data nodes declare it dead by its missed
/// heartbeats, roll its transaction back and free its locks, so the other
/// clients get those rows within seconds and never see its uncommitted
/// change.
#[test]
fn a_stopped_api_process_loses_its_locks_within_seconds() {
    let _serial = serial();
    let mut random = Random::from_environment("faults-api-stop");
    let mut cluster = FaultCluster::start("faults-api-stop", 2);
    let client = connect(&cluster);
    create_bank(&client);
    let bank = Bank::new(&client);
    let log = std::fs::File::create(cluster.dir.join("lock-holder.log")).expect("log");
    let mut holder = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            "lock_holder_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(LOCK_HOLDER_VARIABLE, &cluster.connectstring)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("the lock holder starts");
    let stdout = holder.stdout.take().expect("piped");
    let holder_pid = holder.id();
    cluster.processes.adopt("lock holder", holder);
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let holder_node: u8 = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            // The test harness may have printed the test's name on the
            // same line.
            Ok(line) if line.contains(LOCKED_BY) => {
                let (_, node) = line.split_once(LOCKED_BY).expect("contains it");
                break node.trim().parse().expect("a node id");
            }
            Ok(_) => continue,
            Err(_) => panic!(
                "the lock holder did not lock the accounts:\n{}",
                cluster.logs()
            ),
        }
    };
    let show_line = |node: u8| -> String {
        let (_, text) = support::mgm(&cluster.connectstring, "SHOW");
        text.lines()
            .find(|line| {
                line.starts_with(&format!("id={node}\t"))
                    || line.starts_with(&format!("id={node} "))
            })
            .unwrap_or_default()
            .to_string()
    };
    let before = show_line(holder_node);
    assert!(
        before.contains('@'),
        "SHOW does not list the lock holder (API node {holder_node}) as connected: {before:?}"
    );
    assert!(signal(holder_pid, rustix::process::Signal::STOP));
    let stopped = Instant::now();
    let seed = random.next();
    let mut freed_after = None;
    bank.under_load(&client, seed, || {
        // Take every locked row, as a transfer does, until it works.
        let mut session = client.session().expect("session");
        session.set_timeout(CALL_TIMEOUT);
        freed_after = eventually(Duration::from_secs(30), || {
            let mut transaction = session.start_transaction(None).ok()?;
            for id in 0..LOCKED_ACCOUNTS {
                transaction
                    .read(
                        &bank.accounts,
                        &[(0, Value::Int(id))],
                        &[1],
                        LockMode::Exclusive,
                    )
                    .expect("define");
            }
            bank.timed("lock the held accounts", || {
                session.execute(&mut transaction, ExecuteEnd::Commit)
            })
            .ok()
            .map(|()| stopped.elapsed())
        });
        std::thread::sleep(Duration::from_millis(500));
    });
    let freed_after =
        freed_after.unwrap_or_else(|| panic!("the locks were never freed:\n{}", cluster.logs()));
    eprintln!("the stopped API process's locks were free after {freed_after:?}");
    // HeartbeatIntervalDbApi (500 ms) x missed heartbeats, with room for a
    // loaded machine; before issue 11 the locks stayed for minutes.
    assert!(
        freed_after < Duration::from_secs(10),
        "the locks were freed only after {freed_after:?}"
    );
    bank.check(&client, &cluster, "API process stopped");
    // Declared dead, the stopped API node is no longer shown as connected:
    // its line says so, or its id is free again (a slot without a fixed
    // id shows as `id=?`).
    let shown = eventually(Duration::from_secs(10), || {
        let line = show_line(holder_node);
        (line.is_empty() || line.contains("not connected")).then_some(line)
    });
    assert!(
        shown.is_some(),
        "SHOW still lists the stopped API node {holder_node} as connected: {:?}",
        show_line(holder_node)
    );
}

/// The management node killed (SIGKILL) and restarted while the workload
/// runs: the data nodes and the clients go on without it, and it comes
/// back.
/// The durable global checkpoint every data node reports (`REPORT
/// DURABILITY`), and the GCI of the epoch they decide commits in; `None`
/// while a node does not answer.
fn durability(cluster: &FaultCluster) -> Option<(u64, u64)> {
    let (ok, text) = support::mgm(&cluster.connectstring, "ALL REPORT DURABILITY");
    if !ok {
        return None;
    }
    let mut durable = u64::MAX;
    let mut current = 0;
    let mut nodes = 0;
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
    (nodes == cluster.data_nodes.len()).then_some((durable, current))
}

/// Whole-cluster kill rounds: under load, after a random while, the round
/// waits until the global checkpoint of the last transfer committed so far
/// is durable; after another random while every process (the management
/// node and every data node) is killed with SIGKILL and started again,
/// and the cluster restores itself from its disks to a global checkpoint
/// at least that one. Each commit told the client its global checkpoint,
/// so the checks then ask for exactly the committed prefix: every transfer
/// committed in the restored checkpoint or before is there, none committed
/// after it is, nothing aborted is, transfers of unknown outcome wholly or
/// not at all, and the balances agree with the ledger on every node.
fn whole_cluster_kill_rounds(name: &str, data_nodes: u8, rounds: usize) {
    let _serial = serial();
    let mut random = Random::from_environment(name);
    let mut cluster = FaultCluster::start(name, data_nodes);
    let client = connect(&cluster);
    create_bank(&client);
    let bank = Bank::new(&client);
    bank.check(&client, &cluster, "before any fault");
    for round in 1..=rounds {
        let before_note = random.millis(200, 1_500);
        let after_durable = random.millis(0, 1_000);
        let seed = random.next();
        let mut noted_gci = 0;
        let committed = bank.under_load(&client, seed, || {
            std::thread::sleep(before_note);
            noted_gci = bank.last_commit_gci();
            let waited = Instant::now();
            // A report may be a heartbeat old, which only makes the durable
            // GCI it shows lower than the truth.
            eventually(Duration::from_secs(20), || {
                durability(&cluster)
                    .and_then(|(durable, _)| (durable >= u64::from(noted_gci)).then_some(()))
            })
            .unwrap_or_else(|| {
                panic!(
                    "GCI {noted_gci} was not durable within 20 s:\n{}",
                    cluster.logs()
                )
            });
            eprintln!(
                "round {round}: the last commit so far in GCI {noted_gci}, durable after {:?}",
                waited.elapsed()
            );
            std::thread::sleep(after_durable);
            cluster.kill("mgmd");
            for node in cluster.data_nodes.clone() {
                cluster.kill(&node.to_string());
            }
            eprintln!("round {round}: killed every process");
            bank.life.fetch_add(1, Ordering::SeqCst);
            cluster.start_all(&client);
        });
        let restored = cluster.restored_gci();
        assert!(
            restored >= noted_gci,
            "round {round}: the restart restored GCI {restored}, before GCI {noted_gci} that \
             was durable before the kill:\n{}",
            cluster.logs()
        );
        let life = u32::try_from(round - 1).expect("few rounds");
        let (kept, gone) = bank.after_system_restart(life, restored);
        eprintln!(
            "round {round}: {committed} committed; restored GCI {restored}: {kept} committed \
             in it or before must be there, {gone} committed after it must not"
        );
        bank.check(
            &client,
            &cluster,
            &format!("round {round} (every process killed)"),
        );
    }
}

/// Graceful stop rounds: under load, after a random while, SHUTDOWN
/// through the management node (what `shoal up` does on Ctrl-C); every
/// process must exit by itself, and is started again. A graceful stop
/// keeps everything: every transfer committed before or during the
/// shutdown is there after the start, nothing aborted is, and the
/// balances agree with the ledger on every node. Calls cut off by the
/// outage are forgiven (every node was down), not their outcomes.
fn graceful_stop_rounds(name: &str, data_nodes: u8, rounds: usize) {
    let _serial = serial();
    let mut random = Random::from_environment(name);
    let mut cluster = FaultCluster::start(name, data_nodes);
    let client = connect(&cluster);
    create_bank(&client);
    let bank = Bank::new(&client);
    bank.check(&client, &cluster, "before any fault");
    for round in 1..=rounds {
        let before_stop = random.millis(300, 2_000);
        let seed = random.next();
        let committed = bank.under_load(&client, seed, || {
            std::thread::sleep(before_stop);
            let before = bank.committed();
            let started = Instant::now();
            let (ok, text) = support::mgm(&cluster.connectstring, "SHUTDOWN");
            assert!(ok, "SHUTDOWN failed: {text}\n{}", cluster.logs());
            eprintln!(
                "round {round}: SHUTDOWN after {before} commits took {:?}: {}",
                started.elapsed(),
                text.trim()
            );
            let mut names = vec!["mgmd".to_string()];
            names.extend(cluster.data_nodes.iter().map(u8::to_string));
            for name in names {
                let status = cluster.wait_exit(&name, Duration::from_secs(30));
                assert!(
                    status.is_some_and(|s| s.success()),
                    "{name} did not exit cleanly after SHUTDOWN: {status:?}\n{}",
                    cluster.logs()
                );
            }
            cluster.start_all(&client);
        });
        bank.forgive_outage();
        eprintln!("round {round}: {committed} committed");
        bank.check(
            &client,
            &cluster,
            &format!("round {round} (SHUTDOWN and start)"),
        );
    }
    // Each shutdown waited for its commits to be durable (the management
    // node's log of each start says so).
    for start in 1..=rounds {
        let log = cluster.dir.join(format!("mgmd.{start}.log"));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            text.contains("Cluster shutdown: every commit is durable"),
            "{}: the shutdown did not wait for every commit to be durable:\n{text}",
            log.display()
        );
    }
}

#[test]
fn bank_keeps_every_commit_through_a_graceful_shutdown_and_start() {
    graceful_stop_rounds("faults-shutdown", 2, rounds(DEFAULT_ROUNDS_SHUTDOWN));
}

#[test]
fn bank_survives_every_process_killed_and_restarted_from_disk() {
    whole_cluster_kill_rounds("faults-kill-all", 2, rounds(DEFAULT_ROUNDS_KILL_ALL));
}

/// The redo log of `redo_laps`: 4 files of 4 MiB, NDB's smallest file.
const LAPS_LOG_FILES: u64 = 4;
const LAPS_LOG_FILE_BYTES: u64 = 4 << 20;
/// Rows of `LAPS_ROW_BYTES`, written by `LAPS_THREADS` threads, each at
/// most `LAPS_WRITES_PER_S_PER_THREAD` writes a second, until the writes
/// add up to `LAPS` times the log's size.
const LAPS_ROWS: u32 = 4_000;
const LAPS_ROW_BYTES: usize = 1_000;
const LAPS_THREADS: u32 = 4;
const LAPS_WRITES_PER_S_PER_THREAD: u64 = 500;
const LAPS: u64 = 3;

/// Local checkpoints keep up with a sustained write load (issue 13, item
/// 3): on a 16 MiB redo log, paced one-row writes of 1 KB add up to three
/// times the log's size and none is refused (410 for a full log, 1234 for
/// a full buffer), so checkpoints moved the log's tail lap after lap.
/// Then every process is killed: the restart from the chain of
/// checkpoints and the redo after them brings back every row as its last
/// acknowledged write left it.
#[test]
fn sustained_writes_lap_a_small_redo_log_without_410_and_survive_a_kill() {
    let _serial = serial();
    let name = "faults-redo-laps";
    let dir = scratch_dir(name);
    let port = free_port();
    let text = config::sandbox_config_text(
        dir.to_str().expect("UTF-8"),
        2,
        2,
        port,
        DATA_MEMORY_BYTES,
    )
    .replacen(
        "[ndbd default]\n",
        &format!(
            "[ndbd default]\nNoOfFragmentLogFiles={LAPS_LOG_FILES}\nFragmentLogFileSize={}M\n",
            LAPS_LOG_FILE_BYTES >> 20
        ),
        1,
    );
    let mut cluster =
        FaultCluster::start_with_config(dir, "127.0.0.1", port, &text, 2, BTreeMap::new());
    let client = connect(&cluster);
    let definition = TableDef::new(
        "laps",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new(
                "payload",
                ColumnType::Varbinary {
                    length: LAPS_ROW_BYTES as u16,
                },
                false,
            ),
        ],
        vec![0],
        vec![],
    )
    .expect("a valid table");
    client
        .create_table(&definition, &TableOptions::default())
        .expect("create laps");
    let table = client.table("laps").expect("laps");
    let payload = |id: u32, version: u32| {
        let mut bytes = vec![(id ^ version) as u8; LAPS_ROW_BYTES];
        bytes[..4].copy_from_slice(&version.to_le_bytes());
        bytes
    };
    let writes_wanted = LAPS * LAPS_LOG_FILES * LAPS_LOG_FILE_BYTES / LAPS_ROW_BYTES as u64;
    let began = Instant::now();
    // Each thread writes its own rows (id % threads), in turn, so it knows
    // each row's last acknowledged version; the highest GCI it committed in.
    let results: Vec<(BTreeMap<u32, u32>, u32, Vec<String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..LAPS_THREADS)
            .map(|thread| {
                let (client, table, payload) = (&client, &table, &payload);
                scope.spawn(move || {
                    let mut session = client.session().expect("session");
                    session.set_timeout(CALL_TIMEOUT);
                    let mut versions = BTreeMap::new();
                    let mut failures = Vec::new();
                    let mut gci_max = 0;
                    let writes = writes_wanted / u64::from(LAPS_THREADS);
                    let started = Instant::now();
                    for write in 0..writes {
                        // Paced: write number `write` waits for its moment.
                        let due = started
                            + Duration::from_micros(
                                write * 1_000_000 / LAPS_WRITES_PER_S_PER_THREAD,
                            );
                        if let Some(wait) = due.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait);
                        }
                        let id =
                            thread + LAPS_THREADS * (write as u32 % (LAPS_ROWS / LAPS_THREADS));
                        let version = write as u32 + 1;
                        let mut transaction = session.start_transaction(None).expect("start");
                        transaction
                            .write(
                                table,
                                &[
                                    (0, Value::Int(i64::from(id))),
                                    (1, Value::Bytes(payload(id, version))),
                                ],
                            )
                            .expect("define");
                        match session.execute(&mut transaction, ExecuteEnd::Commit) {
                            Ok(()) => {
                                versions.insert(id, version);
                                gci_max = gci_max.max(transaction.commit_gci().expect("a write"));
                            }
                            Err(error) => {
                                failures.push(format!("write {write} of row {id}: {error}"));
                                if failures.len() >= 10 {
                                    break;
                                }
                            }
                        }
                    }
                    (versions, gci_max, failures)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a writer"))
            .collect()
    });
    let failures: Vec<&String> = results.iter().flat_map(|r| &r.2).collect();
    assert!(
        failures.is_empty(),
        "writes refused while the checkpoints should keep up: {failures:?}\n{}",
        cluster.logs()
    );
    let versions: BTreeMap<u32, u32> = results.iter().flat_map(|r| r.0.clone()).collect();
    let gci_max = results.iter().map(|r| r.1).max().unwrap_or(0);
    let written = writes_wanted / u64::from(LAPS_THREADS) * u64::from(LAPS_THREADS);
    eprintln!(
        "{written} writes of {LAPS_ROW_BYTES} bytes in {:?} ({} MiB; the log holds {} MiB), \
         the last in GCI {gci_max}",
        began.elapsed(),
        (written * LAPS_ROW_BYTES as u64) >> 20,
        (LAPS_LOG_FILES * LAPS_LOG_FILE_BYTES) >> 20
    );
    // Each write logs at least its row on each replica.
    assert!(
        written * LAPS_ROW_BYTES as u64 >= LAPS * LAPS_LOG_FILES * LAPS_LOG_FILE_BYTES * 99 / 100
    );
    // Every acknowledged write durable, then every process killed.
    eventually(Duration::from_secs(20), || {
        durability(&cluster).and_then(|(durable, _)| (durable >= u64::from(gci_max)).then_some(()))
    })
    .unwrap_or_else(|| {
        panic!(
            "GCI {gci_max} was not durable within 20 s:\n{}",
            cluster.logs()
        )
    });
    cluster.kill("mgmd");
    for node in cluster.data_nodes.clone() {
        cluster.kill(&node.to_string());
    }
    cluster.start_all(&client);
    assert!(
        cluster.restored_gci() >= gci_max,
        "the restart restored through GCI {}, the last write was in {gci_max}",
        cluster.restored_gci()
    );
    let mut session = client.session().expect("session");
    session.set_timeout(CALL_TIMEOUT);
    let ids: Vec<u32> = versions.keys().copied().collect();
    for chunk in ids.chunks(100) {
        let mut transaction = retry_temporary("read the rows back", || {
            let mut transaction = session.start_transaction(None)?;
            let mut reads = Vec::new();
            for &id in chunk {
                reads.push(transaction.read(
                    &table,
                    &[(0, Value::Int(i64::from(id)))],
                    &[1],
                    LockMode::Committed,
                )?);
            }
            session.execute(&mut transaction, ExecuteEnd::Commit)?;
            Ok((transaction, reads))
        });
        let (transaction, reads) = &mut transaction;
        for (&id, &operation) in chunk.iter().zip(reads.iter()) {
            let row = transaction.row(operation).expect("every row is back");
            assert_eq!(
                row.get(1),
                Some(&Value::Bytes(payload(id, versions[&id]))),
                "row {id} is not its last acknowledged write (version {})",
                versions[&id]
            );
        }
    }
}

#[test]
fn bank_survives_the_management_node_killed_and_restarted() {
    let _serial = serial();
    let mut random = Random::from_environment("faults-mgmd");
    let mut cluster = FaultCluster::start("faults-mgmd", 2);
    let client = connect(&cluster);
    create_bank(&client);
    let bank = Bank::new(&client);
    let before_kill = random.millis(100, 700);
    let seed = random.next();
    let mut while_down = None;
    let mut after_restart = None;
    bank.under_load(&client, seed, || {
        std::thread::sleep(before_kill);
        cluster.kill("mgmd");
        while_down = bank.next_commit(COMMIT_RESUME_TIMEOUT);
        std::thread::sleep(Duration::from_millis(1_000));
        cluster.start_management();
        eventually(Duration::from_secs(20), || {
            support::mgm(&cluster.connectstring, "SHOW").0.then_some(())
        })
        .unwrap_or_else(|| panic!("the management node did not come back:\n{}", cluster.logs()));
        after_restart = bank.next_commit(COMMIT_RESUME_TIMEOUT);
        eprintln!(
            "first commit after the kill: {while_down:?}, after the restart: {after_restart:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    });
    bank.check(&client, &cluster, "management node restarted (old client)");
    assert!(
        while_down.is_some(),
        "nothing committed while the management node was down:\n{}",
        cluster.logs()
    );
    assert!(
        after_restart.is_some(),
        "nothing committed within {COMMIT_RESUME_TIMEOUT:?} after the management node \
         restarted:\n{}",
        cluster.logs()
    );
    for node in cluster.data_nodes.clone() {
        eventually(Duration::from_secs(10), || {
            cluster.started_by_management(node).then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "the restarted management node does not see node {node} started:\n{}",
                cluster.logs()
            )
        });
    }
    // A client connects through the restarted management node.
    let fresh = Cluster::connect(&cluster.connectstring, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("connect after the restart: {e}\n{}", cluster.logs()));
    bank.check(&fresh, &cluster, "management node restarted");
}

/// Two network namespaces, each holding one data node, joined by a bridge
/// in this machine's namespace where the management node (the arbitrator)
/// and the clients run. `cut` makes each data node's routes to the other
/// a blackhole: the data nodes lose each other and both still reach the
/// management node and the clients. Everything is deleted on drop.
struct Namespaces {
    names: [String; 2],
    bridge: String,
    /// This namespace's ends of the veth pairs.
    links: Vec<String>,
    /// The subnet's first three octets.
    prefix: String,
    cut: bool,
}

/// Runs `ip` with `args`: whether it succeeded, and what it said.
fn ip(args: &[&str]) -> (bool, String) {
    match Command::new("ip").args(args).output() {
        Ok(output) => (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ),
        Err(error) => (false, format!("cannot run `ip`: {error}")),
    }
}

impl Namespaces {
    /// Builds the namespaces, or says why this machine does not allow it.
    fn create() -> Result<Namespaces, String> {
        // A namespace's devices go away asynchronously after it is
        // deleted, so each set gets new names.
        static CREATED: AtomicU64 = AtomicU64::new(0);
        let count = CREATED.fetch_add(1, Ordering::Relaxed) % 10;
        let pid = std::process::id();
        let tag = format!("{}{count}", pid % 100_000);
        let mut namespaces = Namespaces {
            names: [
                format!("shoal-{pid}-{count}-a"),
                format!("shoal-{pid}-{count}-b"),
            ],
            bridge: format!("shb{tag}"),
            links: vec![format!("shv{tag}0"), format!("shv{tag}1")],
            // 10.231.0.0/16 is a private range no test or service here uses;
            // the pid picks a /24 so two runs do not meet.
            prefix: format!("10.231.{}", pid % 250),
            cut: false,
        };
        let step = |args: &[&str]| -> Result<(), String> {
            let (ok, said) = ip(args);
            if ok {
                Ok(())
            } else {
                Err(format!("`ip {}` failed: {said}", args.join(" ")))
            }
        };
        // The first step tells whether this machine allows namespaces at
        // all; a later failure is a failure. Until then nothing is made,
        // so nothing is left to delete.
        let first = namespaces.names[0].clone();
        if let Err(why) = step(&["netns", "add", &first]) {
            namespaces.names = [String::new(), String::new()];
            namespaces.bridge = String::new();
            namespaces.links.clear();
            return Err(why);
        }
        let steps = || -> Result<(), String> {
            step(&["netns", "add", &namespaces.names[1]])?;
            step(&["link", "add", &namespaces.bridge, "type", "bridge"])?;
            step(&[
                "addr",
                "add",
                &format!("{}/24", namespaces.management_host()),
                "dev",
                &namespaces.bridge,
            ])?;
            step(&["link", "set", &namespaces.bridge, "up"])?;
            for (index, name) in namespaces.names.iter().enumerate() {
                let outside = &namespaces.links[index];
                let inside = format!("shi{tag}{index}");
                step(&[
                    "link", "add", outside, "type", "veth", "peer", "name", &inside,
                ])?;
                step(&["link", "set", &inside, "netns", name])?;
                step(&["link", "set", outside, "master", &namespaces.bridge])?;
                step(&["link", "set", outside, "up"])?;
                step(&["-n", name, "link", "set", "lo", "up"])?;
                step(&[
                    "-n",
                    name,
                    "addr",
                    "add",
                    &format!("{}/24", namespaces.data_node_host(index)),
                    "dev",
                    &inside,
                ])?;
                step(&["-n", name, "link", "set", &inside, "up"])?;
            }
            Ok(())
        };
        if let Err(failure) = steps() {
            panic!("network namespaces are allowed, yet setting them up failed: {failure}");
        }
        Ok(namespaces)
    }

    fn management_host(&self) -> String {
        format!("{}.1", self.prefix)
    }

    /// Data node `index` (0 or 1) runs at this address.
    fn data_node_host(&self, index: usize) -> String {
        format!("{}.{}", self.prefix, index + 2)
    }

    /// Cuts (or heals) the link between the two data nodes only.
    fn set_cut(&mut self, cut: bool) {
        let verb = if cut { "add" } else { "del" };
        for (index, name) in self.names.iter().enumerate() {
            let other = self.data_node_host(1 - index);
            let (ok, said) = ip(&[
                "-n",
                name,
                "route",
                verb,
                "blackhole",
                &format!("{other}/32"),
            ]);
            assert!(ok, "ip route {verb} blackhole in {name}: {said}");
        }
        self.cut = cut;
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // A deleted namespace's devices may outlive it for a while, so the
        // veth pairs are deleted here (one end takes the other with it).
        for link in &self.links {
            let _ = ip(&["link", "del", link]);
        }
        for name in self.names.iter().filter(|n| !n.is_empty()) {
            let _ = ip(&["netns", "del", name]);
        }
        if !self.bridge.is_empty() {
            let _ = ip(&["link", "del", &self.bridge]);
        }
    }
}

/// The configuration of the partition test: the management node on the
/// bridge, each data node at its namespace's address, API slots for any
/// host.
fn partition_config(dir: &std::path::Path, namespaces: &Namespaces, port: u16) -> String {
    let dir = dir.display();
    let mut text = format!(
        "[ndbd default]\nNoOfReplicas=2\nDataMemory=32M\n\n\
         [ndb_mgmd]\nNodeId=1\nHostName={}\nPortNumber={port}\nDataDir={dir}/ndb_mgmd-1\n",
        namespaces.management_host()
    );
    for index in 0..2 {
        text.push_str(&format!(
            "\n[ndbd]\nNodeId={}\nHostName={}\nDataDir={dir}/ndbd-{}\n",
            index + 2,
            namespaces.data_node_host(index),
            index + 2
        ));
    }
    for _ in 0..4 {
        text.push_str("\n[api]\n");
    }
    text
}

/// A network partition between the two data nodes (each still reaching
/// the arbitrator and the clients), under load: the arbitrator picks one
/// side, which goes on; the other serves nothing, in particular no stale
/// read; once healed, the excluded node rejoins. With `check_after_heal`
/// the rejoined node is also read through (that needs node recovery).
fn partition(name: &str, check_after_heal: bool) {
    let _serial = serial();
    let mut namespaces = match Namespaces::create() {
        Ok(namespaces) => namespaces,
        Err(why) => {
            eprintln!("{name}: skipped, this machine does not allow network namespaces: {why}");
            return;
        }
    };
    let mut random = Random::from_environment(name);
    let dir = scratch_dir(name);
    let port = free_port();
    let text = partition_config(&dir, &namespaces, port);
    let prefixes: BTreeMap<u8, Vec<String>> = (0..2)
        .map(|index| {
            (
                index as u8 + 2,
                ["ip", "netns", "exec", &namespaces.names[index]]
                    .map(String::from)
                    .to_vec(),
            )
        })
        .collect();
    let management_host = namespaces.management_host();
    let cluster = FaultCluster::start_with_config(dir, &management_host, port, &text, 2, prefixes);
    let client = connect(&cluster);
    create_bank(&client);
    let bank = Bank::new(&client);
    bank.check(&client, &cluster, "before the partition");
    let before_cut = random.millis(100, 700);
    let seed = random.next();
    let mut outcome = None;
    bank.under_load(&client, seed, || {
        std::thread::sleep(before_cut);
        namespaces.set_cut(true);
        let cut_at = Instant::now();
        let decided = eventually(Duration::from_secs(20), || {
            [2u8, 3].into_iter().find_map(|node| {
                let state = client.cluster_state(node).ok()?;
                (state.members.len() == 1).then(|| state.members[0].node)
            })
        });
        let Some(winner) = decided else {
            panic!(
                "no side was chosen within 20 s of the partition:\n{}",
                cluster.logs()
            );
        };
        let decided_after = cut_at.elapsed();
        let resumed_after = bank.next_commit(COMMIT_RESUME_TIMEOUT);
        eprintln!(
            "partition: node {winner} won after {decided_after:?}, next commit after \
             {resumed_after:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
        outcome = Some((winner, resumed_after));
    });
    let (winner, resumed_after) = outcome.expect("the partition ran");
    let loser = if winner == 2 { 3 } else { 2 };
    // The workload ran on the winner after the decision, so a loser that
    // still served its old copy would read balances that are no longer
    // true. It must refuse (temporarily) instead.
    let served = bank.balances_through(&client, loser, Duration::ZERO);
    bank.check(
        &client,
        &cluster,
        &format!("partitioned, node {winner} won"),
    );
    assert!(
        resumed_after.is_some(),
        "no transfer committed within {COMMIT_RESUME_TIMEOUT:?} of the decision:\n{}",
        cluster.logs()
    );
    if let Err(refused) = &served {
        eprintln!("the excluded node {loser} refused committed reads: {refused}");
    }
    if let Ok(balances) = served {
        panic!(
            "the excluded node {loser} served committed reads after node {winner} won \
             (total {}):\n{}",
            balances.values().sum::<i64>(),
            cluster.logs()
        );
    }
    namespaces.set_cut(false);
    let healed = Instant::now();
    eventually(Duration::from_secs(30), || {
        cluster.members(&client).contains(&loser).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "node {loser} did not rejoin within 30 s of the heal:\n{}",
            cluster.logs()
        )
    });
    eprintln!(
        "node {loser} rejoined {:?} after the heal",
        healed.elapsed()
    );
    if check_after_heal {
        let seed = random.next();
        bank.under_load(&client, seed, || {
            cluster.wait_started(&client, loser, RESTART_TIMEOUT);
            std::thread::sleep(Duration::from_millis(500));
        });
        bank.check(&client, &cluster, &format!("healed, node {loser} started"));
    }
}

#[test]
fn a_partition_between_data_nodes_leaves_one_side_serving() {
    partition("faults-partition", false);
}

#[test]
fn after_a_partition_heals_reads_through_every_node_agree() {
    partition("faults-partition-heal", true);
}
