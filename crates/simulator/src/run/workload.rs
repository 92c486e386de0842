//! The transaction workload: API clients (node ids from 200) with a few
//! sessions each, every session running one transaction at a time on a
//! coordinator picked at random, in batches (`NoCommit` batches, then
//! `Commit`, sometimes `Rollback`), and a model of what must be true.
//!
//! ## Tables (created through the dictionary, like any client's)
//! Each is `(id INT PRIMARY KEY, value BIGINT NOT NULL)` with 2 to 6
//! partitions and READ_BACKUP chosen per seed:
//! - `bank`: accounts with balances. Transfers read two accounts with
//!   exclusive locks, then move an amount (some open a locking scan of
//!   every account first and commit without reading it, so a commit often
//!   meets its own scan waiting for a lock on a fragment it wrote); audits
//!   read every account in one batch or with one scan. Checked: a locked audit and the final
//!   state sum to the total the accounts started with; every audit finds
//!   every account once.
//! - `tags`: groups of 2 to 4 rows, usually in several partitions. Every
//!   transaction that writes here writes one unique tag into every row of
//!   a group (insert, update) or deletes the whole group. Checked: at the
//!   end each group is all there or all gone, present exactly when its
//!   insert committed and no delete did, every row holding one tag that a
//!   committed transaction wrote; a locked read of a group sees all rows
//!   with one tag or none; no read ever returns a tag whose transaction
//!   did not commit (but its own); within a transaction, a read sees its
//!   own earlier writes; ignore-error updates of a group fail on all rows
//!   or none.
//! - `counters`: incremented under an exclusive lock, and read committed.
//!   Checked: the final value is the number of increments that committed
//!   (no lost update), and no read returns less than the increments
//!   acknowledged before it was sent (no stale read, even from a node cut
//!   off from the others).
//! - `coded`: `(id INT PRIMARY KEY, value BIGINT NOT NULL, code BIGINT
//!   NULL UNIQUE)`, codes from a small range so that writes collide (893).
//!   Rows get codes by primary key, are inserted with codes, deleted and
//!   read by unique key, and codes are swapped between rows. Checked: see
//!   `unique`; after quiescence every replica of the unique index's
//!   hidden table holds exactly the index rows its base rows imply.
//!
//! Every `Execute` must get exactly one `Executed`, from the coordinator
//! it was sent to, and only errors the workload can cause (266 lock wait
//! timeouts, 626 on a group deleted meanwhile, 630 and 893 on `coded`)
//! may abort a transaction. A commit that wrote a READ_BACKUP table must
//! be answered after its complete phase, any other before it.
//!
//! This module drives the sessions; `jobs` holds what each kind of
//! transaction sends and checks, `scan` the audits by scan, `unique` the
//! jobs on `coded`, `model` the clients' knowledge and the final checks.

use std::collections::{BTreeMap, BTreeSet};

use protocol::{
    Execute, ExecuteEnd, Executed, Message, NodeId, Operation, OperationKind, SchemaChange,
    TransactionState,
};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use schema::distribution::TableOptions;
use schema::{AttrInfoWriter, ColumnDef, ColumnType, IndexDef, TableDef, Value};
use storage::engine::EngineConfig;
use transaction::CoordinatorConfig;

use super::transactions::{AnsweredOn, int_column};
use super::{SimEvent, Simulation, between, chance};
use jobs::{Job, Next};
use model::{Model, TagState};
use scan::ScanState;
use unique::initial_code;

pub use deserter::DESERTER_API;

mod deserter;
mod jobs;
mod model;
mod scan;
mod unique;

/// Forming the cluster, creating and loading the tables take at most this.
pub const PREPARATION_MS_MAX: u64 = 15_000;
const FIRST_API_NODE: NodeId = 200;
const INITIAL_BALANCE: i64 = 1_000;
/// The rows of group `g` have ids `g * GROUP_STRIDE + 0..n`.
const GROUP_STRIDE: i64 = 8;
/// A transaction aborted by a lock wait timeout is tried this many times.
const ATTEMPTS_MAX: u32 = 3;
const NO_SUCH_ROW: u16 = 626;
const LOCK_WAIT_TIMEOUT: u16 = 266;
/// The coordinators' TransactionInactiveTimeout in the simulator.
const INACTIVE_TIMEOUT_MS: u64 = 3_000;
/// The chance that a session walks away from its open transaction after a
/// batch (see `abandon`).
const ABANDON_CHANCE: f64 = 0.01;
const DUPLICATE_KEY: u16 = 630;
/// NDB's "node failure caused abort of transaction": in runs with crashes
/// any transaction may get it, and the jobs that retry retry it.
const NODE_FAILURE: u16 = 4010;
/// "Cluster temporarily unavailable": a data node without a membership
/// lease refuses reads (`cluster::lease`), which happens whenever
/// heartbeats are late, as the lossy network of fault runs makes them; the
/// jobs that retry retry it. (In runs with crashes it arrives as 4010.)
const NOT_MEMBER: u16 = 4035;
const UNIQUE_VIOLATION: u16 = 893;
/// `coded`'s unique column, and its index's position among the table's
/// ordered indexes (what `Operation::index` names).
const CODE_COLUMN: u16 = 2;
const CODE_INDEX: u16 = 0;
/// The group of the tags of `coded` writers, which write no group.
const CODED_GROUP: usize = usize::MAX;
/// The load's tag: the value of every `coded` row it inserts.
const LOAD_TAG: u64 = 1;

/// Where the workload stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    CreatingTables,
    Loading,
    Running,
    /// No new transactions; waiting for the last ones and their messages.
    Draining,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WorkTable {
    Bank = 0,
    Tags = 1,
    Counters = 2,
    Coded = 3,
}

const TABLE_NAMES: [&str; 4] = ["bank", "tags", "counters", "coded"];

#[derive(Debug, Clone)]
struct TableSetup {
    read_backup: bool,
    partitions: u32,
    /// The id the dictionary gave it, once every node has it.
    id: u32,
}

/// One operation as the workload means it.
#[derive(Debug, Clone)]
struct Op {
    table: WorkTable,
    kind: OperationKind,
    id: i64,
    /// The value an insert or update writes.
    value: i64,
    ignore_error: bool,
    /// `coded` rows: the code an insert or update writes (`None`: NULL).
    code: Option<i64>,
    /// An operation by the unique key: the code of the row it goes to.
    /// `id` is then the row the session knows it reaches (it holds the
    /// code's lock), or -1.
    unique_key: Option<i64>,
}

impl Op {
    fn new(table: WorkTable, kind: OperationKind, id: i64) -> Op {
        Op {
            table,
            kind,
            id,
            value: 0,
            ignore_error: false,
            code: None,
            unique_key: None,
        }
    }

    /// An operation on the `coded` row holding `code`, by the unique key.
    fn by_code(kind: OperationKind, code: i64) -> Op {
        Op {
            unique_key: Some(code),
            ..Op::new(WorkTable::Coded, kind, -1)
        }
    }

    fn coding(mut self, code: Option<i64>) -> Op {
        self.code = code;
        self
    }

    fn writing(mut self, value: i64) -> Op {
        self.value = value;
        self
    }

    fn ignoring(mut self, ignore_error: bool) -> Op {
        self.ignore_error = ignore_error;
        self
    }
}

/// The batch a session sent and waits for the answer to.
struct Sent {
    end: ExecuteEnd,
    operations: Vec<Op>,
    /// Per counter the batch reads: the increments acknowledged as
    /// committed when it was sent. A read that returns less is stale: a
    /// replica answered that missed a commit the cluster had acknowledged
    /// (a node cut off from the others, serving after they removed it).
    counter_floors: BTreeMap<i64, u64>,
}

/// The transaction a session runs.
struct Running {
    job: Job,
    transaction: u64,
    coordinator: NodeId,
    step: u8,
    /// The tag this transaction writes (0: none).
    tag: u64,
    attempt: u32,
    sent: Option<Sent>,
    /// It sent a write to a READ_BACKUP table with backups.
    wrote_read_backup: bool,
    /// An ignore-error write by unique key timed out on a lock: whether it
    /// reached its base row, a write the coordinator sent, is unknown.
    /// (One whose index row was not found sent no write.)
    maybe_wrote_read_backup: bool,
    /// What it wrote to each row so far (`None`: deleted): its own reads
    /// must see these.
    own_writes: BTreeMap<(u8, i64), Option<i64>>,
    /// Its scan, while one runs.
    scan: Option<ScanState>,
    /// The `coded` row its locked read found: id and code.
    found: Option<(i64, Option<i64>)>,
    /// Its first request was sent: later ones continue the transaction.
    started: bool,
    /// When the session began it.
    began_ms: u64,
    /// The incarnation of the coordinator its last request went to.
    coordinator_incarnation: u64,
    /// Its commit was in flight when its coordinator died: it waits for
    /// the takeover's outcome (an `Executed` from the president, or a
    /// `TakeoverDone` meaning aborted) until `OUTCOME_WAIT_MS` passed.
    awaiting_outcome: bool,
    /// The epoch its commit answer named (0 until then).
    commit_epoch: u64,
}

/// How long a session waits for the takeover's outcome of a commit whose
/// coordinator died (`shoal_client::session::OUTCOME_WAIT`).
pub(super) const OUTCOME_WAIT_MS: u64 = 5_000;

/// One transaction at a time, on one API node's connection.
struct Session {
    api: NodeId,
    running: Option<Running>,
}

/// The API clients of a transaction run, their workload and its model.
pub struct Workload {
    phase: Phase,
    tables: [TableSetup; 4],
    replicas: u8,
    accounts: i64,
    counters: i64,
    /// `coded` rows have ids `0..coded_rows` and codes `0..coded_rows`.
    coded_rows: i64,
    apis: Vec<NodeId>,
    next_transaction: BTreeMap<NodeId, u64>,
    sessions: Vec<Session>,
    think_ms_max: u64,
    lock_wait_timeout_ms: u64,
    rollback_chance: f64,
    ignore_chance: f64,
    run_until_ms: u64,
    /// The loading transaction: (API, its id, coordinator).
    load: Option<(NodeId, u64, NodeId)>,
    model: Model,
    /// Which message each coordinator answered an API transaction on,
    /// last answer only: (API node, API transaction) → message.
    pub(super) answered_on: BTreeMap<(NodeId, u64), AnsweredOn>,
    /// (coordinator, its transaction, operation) → the replica the
    /// operation went to first.
    pub(super) first_replica: BTreeMap<(NodeId, u64, u32), NodeId>,
    /// (coordinator, its transaction) that a backup refused an operation
    /// of: it must not commit.
    pub(super) must_abort: BTreeSet<(NodeId, u64)>,
    /// (API node, API transaction) of scans their session never reads.
    unread_scans: BTreeSet<(NodeId, u64)>,
    /// Transactions a session walked away from (API node, id), and their
    /// coordinators: each must be aborted by its inactivity timer.
    abandoned: BTreeMap<(NodeId, u64), NodeId>,
    /// The deserter's transaction and coordinator, until its answer.
    deserter: Option<(u64, NodeId)>,
    /// The epoch the load committed in.
    load_epoch: u64,
    /// Transactions (API node, id) that ended aborted for a node failure:
    /// answers to requests that crossed that abort are ignored.
    ended_by_node_failure: BTreeSet<(NodeId, u64)>,
    /// What each finished transaction's API was told (`None`: unknown), so
    /// a takeover's late answer is checked against it.
    told: BTreeMap<(NodeId, u64), Option<bool>>,
    /// Per API node and data node, the newest incarnation whose takeover
    /// the API node heard announced: a commit sent to that incarnation or
    /// an earlier one, whose answer did not come, was aborted.
    taken_over: BTreeMap<(NodeId, NodeId), u64>,
}

impl Workload {
    pub fn new(rng: &mut ChaCha8Rng, replicas: u8) -> Workload {
        let mut table = || TableSetup {
            read_backup: chance(rng, 0.5),
            partitions: between(rng, 2, 6) as u32,
            id: 0,
        };
        let tables = [table(), table(), table(), table()];
        let accounts = between(rng, 16, 64) as i64;
        let counters = between(rng, 2, 4) as i64;
        let coded_rows = between(rng, 6, 12) as i64;
        let api_count = between(rng, 2, 4) as u8;
        let apis: Vec<NodeId> = (0..api_count).map(|i| FIRST_API_NODE + i).collect();
        let mut sessions = Vec::new();
        for api in &apis {
            for _ in 0..between(rng, 1, 4) {
                sessions.push(Session {
                    api: *api,
                    running: None,
                });
            }
        }
        // Short lock waits make backups time out now and then while a
        // lock is held by a transaction waiting for its complete phase.
        // (NDB's TransactionDeadlockDetectionTimeout goes down to 50 ms.)
        let lock_wait_timeout_ms = if chance(rng, 0.5) {
            between(rng, 50, 300)
        } else {
            between(rng, 300, 1_200)
        };
        Workload {
            phase: Phase::CreatingTables,
            tables,
            replicas,
            accounts,
            counters,
            coded_rows,
            next_transaction: apis
                .iter()
                .chain([&DESERTER_API])
                .map(|api| (*api, 1))
                .collect(),
            deserter: None,
            load_epoch: 0,
            apis,
            sessions,
            think_ms_max: between(rng, 0, 30),
            lock_wait_timeout_ms,
            rollback_chance: between(rng, 5, 20) as f64 / 100.0,
            ignore_chance: between(rng, 10, 40) as f64 / 100.0,
            run_until_ms: 0,
            load: None,
            model: Model {
                total: accounts * INITIAL_BALANCE,
                increments: vec![Vec::new(); counters as usize],
                unknown_increments: vec![0; counters as usize],
                tag_epochs: BTreeMap::new(),
                groups: Vec::new(),
                tags: vec![(0, TagState::Aborted), (CODED_GROUP, TagState::Committed)],
                reads: Vec::new(),
                code_writes: BTreeMap::from([(
                    LOAD_TAG,
                    (0..coded_rows).map(|id| (id, initial_code(id))).collect(),
                )]),
                code_reads: Vec::new(),
            },
            answered_on: BTreeMap::new(),
            first_replica: BTreeMap::new(),
            must_abort: BTreeSet::new(),
            unread_scans: BTreeSet::new(),
            abandoned: BTreeMap::new(),
            ended_by_node_failure: BTreeSet::new(),
            told: BTreeMap::new(),
            taken_over: BTreeMap::new(),
        }
    }

    /// The coordinators' limits: an inactivity timeout far above the time a
    /// running session takes between two batches (network delays and
    /// retransmissions), so only abandoned transactions reach it.
    pub fn coordinator_config(&self) -> CoordinatorConfig {
        CoordinatorConfig {
            inactive_timeout_ms: INACTIVE_TIMEOUT_MS,
            ..CoordinatorConfig::default()
        }
    }

    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            data_memory_bytes: 8 << 20,
            operations_max: 4_096,
            // Every session may scan every fragment of a table at once, and
            // after crashes one node may hold every fragment.
            scans_max: 128,
            lock_wait_timeout_ms: self.lock_wait_timeout_ms,
            ..EngineConfig::default()
        }
    }

    /// The API nodes' ids, the deserter's included.
    pub fn apis(&self) -> Vec<NodeId> {
        let mut apis = self.apis.clone();
        apis.push(DESERTER_API);
        apis
    }

    pub fn is_api(&self, node: NodeId) -> bool {
        self.apis.contains(&node) || node == DESERTER_API
    }

    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Whether rows exist: node failures would lose them from now on.
    pub fn has_data(&self) -> bool {
        self.phase != Phase::CreatingTables
    }

    fn table_id(&self, table: WorkTable) -> u32 {
        self.tables[table as usize].id
    }

    fn definition(&self, index: usize) -> Vec<u8> {
        let mut columns = vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("value", ColumnType::BigInt { unsigned: false }, false),
        ];
        let mut indexes = Vec::new();
        if index == WorkTable::Coded as usize {
            columns.push(ColumnDef::new(
                "code",
                ColumnType::BigInt { unsigned: false },
                true,
            ));
            indexes.push(IndexDef {
                name: "code".into(),
                columns: vec![CODE_COLUMN],
                unique: true,
            });
        }
        let table =
            TableDef::new(TABLE_NAMES[index], columns, vec![0], indexes).expect("a valid table");
        let options = TableOptions {
            read_backup: self.tables[index].read_backup,
            partitions: Some(self.tables[index].partitions),
            ..TableOptions::default()
        };
        let mut out = Vec::new();
        schema::table_codec::encode_table(&table, &options, &mut out);
        out
    }

    fn operation(&self, op: &Op) -> Operation {
        let mut operation = Operation {
            table: self.table_id(op.table),
            kind: op.kind,
            key: key(op.id),
            ignore_error: op.ignore_error,
            ..Operation::default()
        };
        if let Some(code) = op.unique_key {
            operation.key.clear();
            push_bigint(&mut operation.key, CODE_COLUMN, Some(code));
            operation.index = Some(CODE_INDEX);
        }
        let coded = op.table == WorkTable::Coded;
        match op.kind {
            // The engine builds an inserted row from its values alone.
            OperationKind::Insert | OperationKind::Write => {
                operation.values = key(op.id);
                push_bigint(&mut operation.values, 1, Some(op.value));
            }
            OperationKind::Update => push_bigint(&mut operation.values, 1, Some(op.value)),
            OperationKind::Delete => {}
            // A read by unique key must say which row it found.
            _ if coded => operation.columns = vec![0, 1, CODE_COLUMN],
            _ => operation.columns = vec![1],
        }
        if coded
            && matches!(
                op.kind,
                OperationKind::Insert | OperationKind::Write | OperationKind::Update
            )
        {
            push_bigint(&mut operation.values, CODE_COLUMN, op.code);
        }
        operation
    }

    fn describe(&self, sent: &Sent) -> String {
        let operations: Vec<String> = sent
            .operations
            .iter()
            .map(|op| {
                let kind = match op.kind {
                    OperationKind::ReadCommitted => "read",
                    OperationKind::ReadShared => "read-shared",
                    OperationKind::ReadExclusive => "read-exclusive",
                    OperationKind::Insert => "insert",
                    OperationKind::Update => "update",
                    OperationKind::Write => "write",
                    OperationKind::Delete => "delete",
                };
                let mut value = if op.kind.is_write() && op.kind != OperationKind::Delete {
                    format!("={}", op.value)
                } else {
                    String::new()
                };
                if op.table == WorkTable::Coded && !value.is_empty() {
                    match op.code {
                        Some(code) => value.push_str(&format!(" code {code}")),
                        None => value.push_str(" code NULL"),
                    }
                }
                let row = match op.unique_key {
                    Some(code) => format!("code {code} (row {})", op.id),
                    None => op.id.to_string(),
                };
                format!(
                    "{kind} {}.{row}{value}{}",
                    TABLE_NAMES[op.table as usize],
                    if op.ignore_error {
                        " (ignore error)"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        format!("{:?} [{}]", sent.end, operations.join(", "))
    }
}

fn key(id: i64) -> Vec<u8> {
    let mut bytes = Vec::new();
    Value::Int(id)
        .encode(&ColumnType::Int { unsigned: false }, &mut bytes)
        .expect("ids fit an INT");
    let mut out = Vec::new();
    AttrInfoWriter::new(&mut out).push(0, Some(&bytes));
    out
}

/// Appends a BIGINT column (`None`: NULL) to an AttrInfo stream.
fn push_bigint(out: &mut Vec<u8>, column: u16, value: Option<i64>) {
    let bytes = value.map(|value| {
        let mut bytes = Vec::new();
        Value::Int(value)
            .encode(&ColumnType::BigInt { unsigned: false }, &mut bytes)
            .expect("a BIGINT");
        bytes
    });
    AttrInfoWriter::new(out).push(column, bytes.as_deref());
}

impl Simulation {
    fn workload(&self) -> &Workload {
        self.workload.as_ref().expect("a transaction run")
    }

    fn workload_mut(&mut self) -> &mut Workload {
        self.workload.as_mut().expect("a transaction run")
    }

    /// A data node to coordinate a transaction: any, or in runs with
    /// crashes a live one, and one that never crashes unless the run
    /// crashes coordinators too (`crashes`).
    pub(super) fn coordinator_node(&mut self) -> NodeId {
        match &self.crash_plan {
            Some(plan) if plan.coordinators_crash => {
                // A started member: a starting one refuses transactions
                // until its copy is done.
                let live: Vec<NodeId> = self
                    .nodes
                    .iter()
                    .filter(|(node, sim)| {
                        sim.composite
                            .as_ref()
                            .is_some_and(|composite| composite.routing().is_started(**node))
                    })
                    .map(|(node, _)| *node)
                    .collect();
                live[(self.rng.next_u64() % live.len() as u64) as usize]
            }
            _ => self.safe_coordinator_node(),
        }
    }

    /// A coordinator that never crashes (any node in runs without crashes).
    pub(super) fn safe_coordinator_node(&mut self) -> NodeId {
        match &self.crash_plan {
            Some(plan) => {
                let pick = (self.rng.next_u64() % plan.coordinators.len() as u64) as usize;
                plan.coordinators[pick]
            }
            None => self.random_data_node(),
        }
    }

    /// API node `api` saw its connection to data node `node` close after
    /// `node` crashed: whatever `node` coordinated for it is lost. A
    /// transaction that never asked to commit is aborted (the takeover
    /// finds no replica committing it); one whose commit was in flight
    /// may have committed or not, and the model takes both as possible.
    pub(super) fn workload_link_lost(&mut self, api: NodeId, node: NodeId) {
        if self
            .nodes
            .get(&node)
            .is_some_and(|sim| sim.composite.is_some())
        {
            // A node restarted in place told its sessions already
            // (`coordinator_restarted`).
            return;
        }
        self.coordinator_lost(api, node);
    }

    /// Data node `node` restarted as a new incarnation (excluded by the
    /// others): to its API nodes, its old incarnation died.
    pub(super) fn coordinator_restarted(&mut self, node: NodeId) {
        if self.workload.is_none() {
            return;
        }
        for api in self.workload().apis() {
            self.coordinator_lost(api, node);
        }
    }

    fn coordinator_lost(&mut self, api: NodeId, node: NodeId) {
        let workload = self.workload_mut();
        // An abandoned transaction there died with it; its inactivity
        // timeout may still be on its way (sent just before the restart).
        let gone: Vec<(NodeId, u64)> = workload
            .abandoned
            .iter()
            .filter(|((owner, _), coordinator)| *owner == api && **coordinator == node)
            .map(|(key, _)| *key)
            .collect();
        for key in gone {
            workload.abandoned.remove(&key);
            workload.ended_by_node_failure.insert(key);
        }
        let lost: Vec<usize> = workload
            .sessions
            .iter()
            .enumerate()
            .filter(|(_, session)| {
                session.api == api
                    && session.running.as_ref().is_some_and(|running| {
                        running.coordinator == node && !running.awaiting_outcome
                    })
            })
            .map(|(index, _)| index)
            .collect();
        for index in lost {
            let now = self.now_ms;
            let running = self.workload().sessions[index]
                .running
                .as_ref()
                .expect("listed");
            let transaction = running.transaction;
            let end = running.sent.as_ref().map(|sent| sent.end);
            self.outcome.transactions.marks.coordinator_losses += 1;
            self.trace(format!(
                "api {api} transaction {transaction}: its coordinator {node} died ({end:?} in \
                 flight)"
            ));
            let announced = self.workload().taken_over.get(&(api, node)).copied();
            if end == Some(ExecuteEnd::Commit)
                && announced.is_some_and(|taken| taken >= running_incarnation(self, index))
            {
                // Sent after its coordinator's takeover was announced (a
                // node cut off that still served its API nodes): no
                // takeover will say more (as `shoal_client` does, unknown).
                self.outcome.transactions.marks.takeovers_without_answer += 1;
                self.outcome.transactions.marks.unknown_outcomes += 1;
                self.drop_sent(index, api, transaction);
                self.finish_job_unknown(index);
            } else if end == Some(ExecuteEnd::Commit) {
                // The replicas know whether it committed: the president's
                // takeover tells.
                self.workload_mut().sessions[index]
                    .running
                    .as_mut()
                    .expect("listed")
                    .awaiting_outcome = true;
                self.schedule(
                    now + OUTCOME_WAIT_MS,
                    SimEvent::OutcomeWait { index, transaction },
                );
            } else {
                self.end_by_node_failure(index, api, transaction);
            }
        }
    }

    /// Session `index`'s transaction ended aborted by a node failure (4010):
    /// a late answer to what it sent is ignored.
    fn end_by_node_failure(&mut self, index: usize, api: NodeId, transaction: u64) {
        self.drop_sent(index, api, transaction);
        self.finish_job(index, false, Some(NODE_FAILURE));
    }

    /// Session `index` expects no more answer to what it sent for
    /// `transaction` (its coordinator is gone): one that comes is ignored.
    fn drop_sent(&mut self, index: usize, api: NodeId, transaction: u64) {
        let workload = self.workload_mut();
        workload.sessions[index]
            .running
            .as_mut()
            .expect("running")
            .sent = None;
        workload.ended_by_node_failure.insert((api, transaction));
    }

    /// A session's wait for the outcome of a commit whose coordinator died
    /// ends: without news from the takeover, the outcome is unknown.
    pub(super) fn outcome_wait_ends(&mut self, index: usize, transaction: u64) {
        let workload = self.workload_mut();
        let waiting = workload.sessions[index]
            .running
            .as_ref()
            .is_some_and(|r| r.transaction == transaction && r.awaiting_outcome);
        if !waiting {
            return;
        }
        let api = workload.sessions[index].api;
        workload.ended_by_node_failure.insert((api, transaction));
        self.trace(format!(
            "api {api} transaction {transaction}: no outcome from a takeover within \
             {OUTCOME_WAIT_MS} ms"
        ));
        self.outcome.transactions.marks.unknown_outcomes += 1;
        self.finish_job_unknown(index);
    }

    /// The president finished taking over what data node `node` at
    /// `incarnation` (and before) coordinated: a transaction of API node
    /// `api` with a request in flight there that got no answer was aborted
    /// (a committed one was answered first, on the same link).
    pub(super) fn workload_takeover_done(&mut self, api: NodeId, node: NodeId, incarnation: u64) {
        if self.workload.is_none() || api == DESERTER_API {
            return;
        }
        let taken = self
            .workload_mut()
            .taken_over
            .entry((api, node))
            .or_insert(0);
        *taken = (*taken).max(incarnation);
        let aborted: Vec<usize> = self
            .workload()
            .sessions
            .iter()
            .enumerate()
            .filter(|(_, session)| {
                session.api == api
                    && session.running.as_ref().is_some_and(|running| {
                        running.coordinator == node
                            && running.coordinator_incarnation <= incarnation
                            && running.sent.is_some()
                    })
            })
            .map(|(index, _)| index)
            .collect();
        for index in aborted {
            let workload = self.workload_mut();
            let running = workload.sessions[index].running.as_mut().expect("listed");
            let transaction = running.transaction;
            let sent = running.sent.take().expect("listed");
            let waited = running.awaiting_outcome;
            workload.ended_by_node_failure.insert((api, transaction));
            self.trace(format!(
                "api {api} transaction {transaction}: the takeover of node {node} ended without \
                 its answer ({:?} in flight): aborted",
                sent.end
            ));
            if waited {
                self.outcome
                    .transactions
                    .marks
                    .outcomes_after_coordinator_loss += 1;
            }
            if sent.end == ExecuteEnd::Commit {
                // Unanswered by the takeover, whose answers come first on
                // the connection it was announced on: aborted, as
                // `shoal_client` takes it (`taken_over_without_answer`).
                // The checkers would see a commit told aborted that did.
                self.outcome.transactions.marks.takeovers_without_answer += 1;
            }
            self.finish_job(index, false, Some(NODE_FAILURE));
        }
    }

    /// The schema client creates the workload's tables, one at a time.
    pub(super) fn create_workload_tables(&mut self) {
        if !self.client_requests.is_empty() || self.workload().phase != Phase::CreatingTables {
            return;
        }
        let existing = self.decided.last_key_value().map(|(_, state)| state);
        let missing = (0..TABLE_NAMES.len())
            .find(|index| existing.is_none_or(|s| s.table_by_name(TABLE_NAMES[*index]).is_none()));
        if let Some(index) = missing {
            let definition = self.workload().definition(index);
            let to = self.random_data_node();
            self.client_send(to, SchemaChange::CreateTable { definition });
        }
    }

    /// After a node installed a state: once every node has the workload's
    /// tables, load them.
    pub(super) fn workload_installed(&mut self) {
        if self.workload().phase != Phase::CreatingTables {
            return;
        }
        let mut ids = [0u32; TABLE_NAMES.len()];
        for sim in self.nodes.values() {
            let ready = sim.composite.as_ref().is_some_and(|composite| {
                composite.membership().is_started()
                    && TABLE_NAMES.iter().enumerate().all(|(index, name)| {
                        match composite.routing().table_by_name(name) {
                            Some(route) => {
                                ids[index] = route.id;
                                true
                            }
                            None => false,
                        }
                    })
            });
            if !ready {
                return;
            }
        }
        let workload = self.workload_mut();
        for (setup, id) in workload.tables.iter_mut().zip(ids) {
            setup.id = id;
        }
        workload.phase = Phase::Loading;
        let mut operations = Vec::new();
        for account in 0..workload.accounts {
            operations.push(
                Op::new(WorkTable::Bank, OperationKind::Insert, account).writing(INITIAL_BALANCE),
            );
        }
        for counter in 0..workload.counters {
            operations
                .push(Op::new(WorkTable::Counters, OperationKind::Insert, counter).writing(0));
        }
        for id in 0..workload.coded_rows {
            operations.push(
                Op::new(WorkTable::Coded, OperationKind::Insert, id)
                    .writing(LOAD_TAG as i64)
                    .coding(initial_code(id)),
            );
        }
        let api = workload.apis[0];
        let transaction = workload.new_transaction_id(api);
        let operations: Vec<Operation> =
            operations.iter().map(|op| workload.operation(op)).collect();
        let coordinator = self.safe_coordinator_node();
        self.workload_mut().load = Some((api, transaction, coordinator));
        self.trace(format!(
            "workload: tables ready ({}); api {api} loads them through node {coordinator}",
            self.describe_tables()
        ));
        self.outcome.transactions.executes += 1;
        self.send(
            api,
            coordinator,
            Message::Execute(Execute {
                transaction,
                start: true,
                end: ExecuteEnd::Commit,
                operations,
            }),
        );
    }

    fn describe_tables(&self) -> String {
        let workload = self.workload();
        let tables: Vec<String> = workload
            .tables
            .iter()
            .enumerate()
            .map(|(index, setup)| {
                format!(
                    "{} id {} partitions {} read_backup {}",
                    TABLE_NAMES[index], setup.id, setup.partitions, setup.read_backup
                )
            })
            .collect();
        format!(
            "{}; {} accounts, {} counters, {} coded rows, {} sessions, lock wait timeout {} ms",
            tables.join(", "),
            workload.accounts,
            workload.counters,
            workload.coded_rows,
            workload.sessions.len(),
            workload.lock_wait_timeout_ms
        )
    }

    /// Called after every event: ends the workload when its time is up and
    /// everything has settled.
    pub(super) fn workload_progress(&mut self) {
        let now = self.now_ms;
        let in_flight = self.tcp.in_flight;
        // A stopped API node still connected keeps the run going until the
        // data nodes declare it dead (missed heartbeats) and roll it back.
        let stopped_api_connected = self
            .api_links
            .keys()
            .any(|(api, _)| self.frozen_apis.contains(api));
        let workload = self.workload_mut();
        if workload.phase == Phase::Running && now >= workload.run_until_ms {
            workload.phase = Phase::Draining;
        }
        // An abandoned transaction keeps the run going until its
        // coordinator's inactivity timer aborts it.
        let abandoned = !workload.abandoned.is_empty();
        // A session waiting for a takeover's outcome has its wait's end
        // scheduled (`SimEvent::OutcomeWait`).
        let awaiting_outcome = workload
            .sessions
            .iter()
            .any(|s| s.running.as_ref().is_some_and(|r| r.awaiting_outcome));
        let busy = workload.sessions.iter().any(|s| s.running.is_some())
            || abandoned
            || stopped_api_connected
            || workload.deserter.is_some();
        if in_flight > 0 {
            return;
        }
        if busy || workload.phase == Phase::Loading {
            // Nothing in flight: only a lock wait ending, an inactivity
            // timeout, the survivors agreeing that a crashed node is gone,
            // or a stopped API node being declared dead, can move things on.
            if !self.lock_waits_pending()
                && !self.commits_await_epoch()
                && !abandoned
                && !awaiting_outcome
                && !stopped_api_connected
                && !self.node_failure_pending()
                && !self.removed_incarnation_runs()
                && self.link_closes_pending == 0
                // A dial on its way connects a node that messages wait for.
                && self.dials.is_empty()
            {
                self.fail_stuck("transactions wait for answers, but no message is in flight");
            }
            return;
        }
        if workload.phase != Phase::Draining {
            return;
        }
        // The final checks compare the live replicas of the agreed state:
        // after a crash, every survivor must have installed it first.
        if self.crash_plan.is_some() && !self.membership_settled() {
            return;
        }
        // One run in four stops every data node gracefully and starts them
        // from their disks first: the checks below must then still hold.
        if self.system_restart_due() {
            self.graceful_system_restart();
            if self.failure.is_some() {
                return;
            }
        }
        // A whole-cluster crash (one run in four, `shutdown`): the checks
        // below ask for exactly the commits of the epochs the restart
        // restored.
        if self.system_crash_unfinished() {
            return;
        }
        self.finish_system_crash();
        if self.failure.is_some() {
            return;
        }
        let workload = self.workload_mut();
        workload.phase = Phase::Done;
        self.trace("workload: done, every message delivered; checking".into());
        if let Some(tables) = self.check_transactions_final() {
            self.check_workload_data(&tables);
        }
    }

    /// The epoch the workload's load committed in.
    pub(super) fn load_epoch(&self) -> u64 {
        self.workload().load_epoch
    }

    /// A whole-cluster crash ends the workload: no session starts a job
    /// or retries one, and the deserter's coordinator died with its
    /// transaction (no answer comes).
    pub(super) fn end_workload_at_crash(&mut self) {
        let workload = self.workload_mut();
        workload.phase = Phase::Draining;
        workload.deserter = None;
    }

    /// After a whole-cluster crash: the model takes back the commits of
    /// the epochs the restart did not restore (`Model::forget_commits_from`).
    pub(super) fn forget_commits_from(
        &mut self,
        restored_below: u64,
    ) -> Result<(u64, u64), String> {
        self.workload_mut()
            .model
            .forget_commits_from(restored_below)
    }

    /// At the end of the run: the workload must have finished.
    pub(super) fn check_workload_finished(&mut self) {
        if self.workload().phase != Phase::Done {
            self.fail_stuck("the transaction workload did not finish");
        }
    }

    fn fail_stuck(&mut self, why: &str) {
        let workload = self.workload();
        let mut message = format!(
            "{why} (phase {:?}, {} transaction messages in flight)",
            workload.phase, self.tcp.in_flight
        );
        for session in &workload.sessions {
            if let Some(running) = &session.running {
                message.push_str(&format!(
                    "\n  - api {} transaction {} on node {}: {:?} step {}, {}",
                    session.api,
                    running.transaction,
                    running.coordinator,
                    running.job,
                    running.step,
                    match (&running.sent, &running.scan) {
                        (Some(sent), _) =>
                            format!("waiting for the answer to {}", workload.describe(sent)),
                        (None, Some(scan)) => format!(
                            "scanning, fragments {:?} finished, {} rows so far",
                            scan.finished,
                            scan.rows.len()
                        ),
                        (None, None) => "nothing sent".into(),
                    }
                ));
            }
        }
        if let Some((api, transaction, coordinator)) = workload.load
            && workload.phase == Phase::Loading
        {
            message.push_str(&format!(
                "\n  - the load transaction {transaction} of api {api} on node {coordinator} got no answer"
            ));
        }
        for (node, sim) in &self.nodes {
            let Some(composite) = sim.composite.as_ref() else {
                continue;
            };
            for line in composite.coordinator().describe_transactions() {
                message.push_str(&format!("\n  - node {node}: {line}"));
            }
            for line in composite.query_handler().describe_open_work() {
                message.push_str(&format!("\n  - node {node} holds {line}"));
            }
        }
        self.fail(message);
    }

    pub(super) fn session_step(&mut self, index: usize) {
        let workload = self.workload();
        if workload.phase != Phase::Running || workload.sessions[index].running.is_some() {
            return;
        }
        if self.now_ms >= workload.run_until_ms {
            return;
        }
        let job = self.new_job();
        self.start_job(index, job, 1);
    }

    fn start_job(&mut self, index: usize, job: Job, attempt: u32) {
        let now = self.now_ms;
        let coordinator = self.coordinator_node();
        let workload = self.workload_mut();
        let api = workload.sessions[index].api;
        let transaction = workload.new_transaction_id(api);
        let tag = match job.tag_group() {
            Some(group) => {
                workload.model.tags.push((group, TagState::Open));
                workload.model.tags.len() as u64 - 1
            }
            None => 0,
        };
        workload.sessions[index].running = Some(Running {
            job,
            transaction,
            coordinator,
            step: 0,
            tag,
            attempt,
            sent: None,
            wrote_read_backup: false,
            maybe_wrote_read_backup: false,
            own_writes: BTreeMap::new(),
            scan: None,
            found: None,
            started: false,
            began_ms: now,
            coordinator_incarnation: 0,
            awaiting_outcome: false,
            commit_epoch: 0,
        });
        if let Job::Audit { mode, scan: true } = self.workload_mut().sessions[index]
            .running
            .as_ref()
            .expect("just set")
            .job
        {
            self.open_scan(index, mode);
            return;
        }
        match self.first_batch(index) {
            Next::Send(end, operations) => self.send_batch(index, end, operations),
            Next::Finish => unreachable!("every job sends something"),
        }
    }

    fn send_batch(&mut self, index: usize, end: ExecuteEnd, operations: Vec<Op>) {
        let workload = self.workload();
        let protocol_operations: Vec<Operation> =
            operations.iter().map(|op| workload.operation(op)).collect();
        // A write by unique key reaches its base row only if the lookup of
        // its index row finds one, so it counts once its answer says so
        // (see `check_answer`).
        let read_backup_write = workload.replicas > 1
            && operations
                .iter()
                .zip(&protocol_operations)
                .any(|(op, operation)| {
                    op.kind.is_write()
                        && op.unique_key.is_none()
                        && workload.tables[op.table as usize].read_backup
                        && self.has_live_backup(operation.table, &operation.key)
                });
        // Once a node crashed, whether a write to `coded` reaches a fragment
        // with a live backup depends on its index rows' fragments too: its
        // commit may or may not wait for the complete phase.
        let crashed = self
            .crash_plan
            .as_ref()
            .is_some_and(|plan| plan.crashes > 0);
        let coded_write = crashed
            && workload.replicas > 1
            && operations
                .iter()
                .any(|op| op.kind.is_write() && op.table == WorkTable::Coded);
        // A write to a READ_BACKUP table whose backups all crashed, or
        // that has none (NoOfReplicas=1): the coordinator may answer after
        // the complete phase (which reaches the primary) or before it;
        // either is true.
        let lone_read_backup_write =
            operations
                .iter()
                .zip(&protocol_operations)
                .any(|(op, operation)| {
                    op.kind.is_write()
                        && workload.tables[op.table as usize].read_backup
                        && (workload.replicas == 1
                            || !self.has_live_backup(operation.table, &operation.key))
                });
        let workload = self.workload_mut();
        let session = &mut workload.sessions[index];
        let api = session.api;
        let running = session.running.as_mut().expect("running");
        running.wrote_read_backup |= read_backup_write;
        running.maybe_wrote_read_backup |= coded_write || lone_read_backup_write;
        let (transaction, coordinator, tag) =
            (running.transaction, running.coordinator, running.tag);
        let start = !running.started;
        running.started = true;
        let coordinator_incarnation = self.composite_incarnation(coordinator).unwrap_or(0);
        let workload = self.workload_mut();
        let counter_floors = operations
            .iter()
            .filter(|op| op.table == WorkTable::Counters && !op.kind.is_write())
            .map(|op| {
                (
                    op.id,
                    workload.model.increments[op.id as usize].len() as u64,
                )
            })
            .collect();
        let sent = Sent {
            end,
            operations,
            counter_floors,
        };
        let line = format!(
            "api {api} transaction {transaction} (tag {tag}) -> node {coordinator}: {}",
            workload.describe(&sent)
        );
        let running = workload.sessions[index].running.as_mut().expect("running");
        assert!(running.sent.is_none(), "one execute at a time");
        running.sent = Some(sent);
        running.coordinator_incarnation = coordinator_incarnation;
        self.trace(line);
        self.outcome.transactions.executes += 1;
        self.send(
            api,
            coordinator,
            Message::Execute(Execute {
                transaction,
                start,
                end,
                operations: protocol_operations,
            }),
        );
    }

    /// An `Executed` reached API node `api` from `from`.
    pub(super) fn workload_receive(&mut self, from: NodeId, api: NodeId, executed: Executed) {
        if api == DESERTER_API {
            self.deserter_receive(from, executed);
            return;
        }
        let answered_on = self
            .workload()
            .answered_on
            .get(&(api, executed.transaction))
            .copied();
        if let Some((load_api, transaction, coordinator)) = self.workload().load
            && self.workload().phase == Phase::Loading
            && (load_api, transaction) == (api, executed.transaction)
        {
            if from != coordinator || executed.state != TransactionState::Committed {
                self.fail(format!(
                    "loading the tables failed: {executed:?} from node {from}"
                ));
                return;
            }
            self.outcome.transactions.committed += 1;
            let now = self.now_ms;
            let fault_ms = self.options.fault_ms;
            let workload = self.workload_mut();
            workload.load_epoch = executed.epoch;
            workload.phase = Phase::Running;
            workload.run_until_ms = now + fault_ms;
            let think_ms_max = workload.think_ms_max;
            let sessions = workload.sessions.len();
            self.trace(format!(
                "workload: loaded; {sessions} sessions run until {}",
                now + fault_ms
            ));
            for index in 0..sessions {
                let at = now + between(&mut self.rng, 0, think_ms_max);
                self.schedule(at, SimEvent::Session { index });
            }
            let at = now + between(&mut self.rng, 0, fault_ms / 2);
            self.schedule(at, SimEvent::Deserter);
            self.plan_crashes(fault_ms);
            self.plan_system_crash(fault_ms);
            return;
        }
        if let Some(coordinator) = self
            .workload_mut()
            .abandoned
            .remove(&(api, executed.transaction))
        {
            let code = executed.error.as_ref().map(|e| e.ndb_code);
            // A node the transaction used may fail before the timer ends it.
            let node_failure = code == Some(NODE_FAILURE) && self.crash_plan.is_some();
            let timed_out = executed.state == TransactionState::Aborted
                && (code == Some(LOCK_WAIT_TIMEOUT) || node_failure);
            if from != coordinator || !timed_out {
                self.fail(format!(
                    "api {api} abandoned transaction {} on node {coordinator}; node {from} \
                     answered {executed:?} instead of its inactivity timeout (266)",
                    executed.transaction
                ));
                return;
            }
            self.trace(format!(
                "api {api} transaction {} <- node {from}: aborted, idle too long",
                executed.transaction
            ));
            if !node_failure {
                self.outcome.transactions.marks.inactive_timeouts += 1;
            }
            return;
        }
        let Some(index) = self.workload().sessions.iter().position(|s| {
            s.api == api
                && s.running
                    .as_ref()
                    .is_some_and(|r| r.transaction == executed.transaction)
        }) else {
            let told = self
                .workload()
                .told
                .get(&(api, executed.transaction))
                .copied();
            let takeover_answer = executed.state == TransactionState::Committed
                && executed.results.is_empty()
                && executed.error.is_none();
            if takeover_answer && told.is_some() {
                // A takeover found the markers of a commit whose answer
                // came already (the coordinator died before the replicas
                // forgot them), and answered again. It may only say what
                // the API was told, or resolve an unknown outcome.
                if told == Some(Some(false)) {
                    self.fail(format!(
                        "api {api} transaction {}: node {from} answered committed after the API \
                         was told it aborted",
                        executed.transaction
                    ));
                    return;
                }
                self.trace(format!(
                    "api {api} transaction {} <- node {from}: committed again (a takeover's \
                     answer, after the API was told {told:?})",
                    executed.transaction
                ));
                self.outcome.transactions.marks.repeated_takeover_answers += 1;
                return;
            }
            if self
                .workload()
                .ended_by_node_failure
                .contains(&(api, executed.transaction))
            {
                // The answer to a request sent before the coordinator's
                // report of the abort arrived.
                self.trace(format!(
                    "api {api} transaction {} <- node {from}: {:?}, after it ended",
                    executed.transaction, executed.state
                ));
                return;
            }
            self.fail(format!(
                "api {api} got an answer for transaction {} it is not running, from node {from}: \
                 {executed:?}",
                executed.transaction
            ));
            return;
        };
        if executed.state == TransactionState::Committed {
            let running = self.workload_mut().sessions[index]
                .running
                .as_mut()
                .expect("found");
            running.commit_epoch = executed.epoch;
        }
        let running = self.workload().sessions[index]
            .running
            .as_ref()
            .expect("found");
        if from != running.coordinator {
            // The president's takeover answers a commit whose coordinator
            // died: committed, without the operations' results.
            let awaiting = running.awaiting_outcome;
            let transaction = running.transaction;
            let end = running.sent.as_ref().map(|sent| sent.end);
            if end != Some(ExecuteEnd::Commit)
                || executed.state != TransactionState::Committed
                || !executed.results.is_empty()
            {
                self.fail(format!(
                    "api {api} transaction {transaction} ({end:?} in flight) was answered by \
                     node {from}, not its coordinator, with {executed:?}"
                ));
                return;
            }
            self.trace(format!(
                "api {api} transaction {transaction} <- node {from}: committed (the takeover's \
                 answer)"
            ));
            self.outcome
                .transactions
                .marks
                .outcomes_committed_by_takeover += 1;
            if awaiting {
                self.outcome
                    .transactions
                    .marks
                    .outcomes_after_coordinator_loss += 1;
            }
            self.drop_sent(index, api, transaction);
            self.finish_job(index, true, None);
            return;
        }
        // The coordinator's own answer, after its link failed: the wait
        // for a takeover's outcome ends.
        self.workload_mut().sessions[index]
            .running
            .as_mut()
            .expect("found")
            .awaiting_outcome = false;
        let node_failure = self.crash_plan.is_some()
            && executed.state == TransactionState::Aborted
            && executed.error.as_ref().map(|e| e.ndb_code) == Some(NODE_FAILURE);
        if node_failure {
            self.workload_mut()
                .ended_by_node_failure
                .insert((api, executed.transaction));
        }
        let running = self.workload_mut().sessions[index]
            .running
            .as_mut()
            .expect("found");
        if running.sent.is_none() && node_failure && from == running.coordinator {
            // The coordinator reports that it aborted the transaction (a
            // node it used failed) while the session sent nothing: a scan
            // was running, or it was between batches.
            self.trace(format!(
                "api {api} transaction {} <- node {from}: aborted by a node failure",
                executed.transaction
            ));
            self.outcome.transactions.marks.node_failure_aborts += 1;
            self.finish_job(index, false, Some(NODE_FAILURE));
            return;
        }
        let running = self.workload_mut().sessions[index]
            .running
            .as_mut()
            .expect("found");
        let Some(sent) = running.sent.take() else {
            self.fail(format!(
                "api {api} transaction {} got a second answer from node {from}: {executed:?}",
                executed.transaction
            ));
            return;
        };
        let (coordinator, transaction, tag) =
            (running.coordinator, running.transaction, running.tag);
        self.trace(format!(
            "api {api} transaction {transaction} (tag {tag}) <- node {from}: {:?}{} results {:?}",
            executed.state,
            match &executed.error {
                Some(error) => format!(" error {} {}", error.ndb_code, error.message),
                None => String::new(),
            },
            executed
                .results
                .iter()
                .map(|r| (r.error, int_column(&r.data, 1)))
                .collect::<Vec<_>>()
        ));
        if from != coordinator {
            self.fail(format!(
                "api {api} transaction {transaction} was answered by node {from}, not its \
                 coordinator {coordinator}"
            ));
            return;
        }
        match self.check_answer(index, &sent, &executed, answered_on) {
            Err(failure) => {
                let description = self.workload().describe(&sent);
                self.fail(format!(
                    "api {api} transaction {transaction} (tag {tag}) on node {coordinator}: \
                     {failure}\n  sent: {description}\n  got: {executed:?}"
                ));
            }
            Ok(Some(next)) => match next {
                Next::Send(..)
                    if self.workload().phase == Phase::Running
                        && chance(&mut self.rng, ABANDON_CHANCE) =>
                {
                    self.abandon(index);
                }
                Next::Send(end, operations) => self.send_batch(index, end, operations),
                Next::Finish => self.finish_job(index, true, None),
            },
            Ok(None) => {}
        }
    }

    /// Checks an answer and works out what comes next (`None`: the
    /// transaction ended aborted and was dealt with).
    fn check_answer(
        &mut self,
        index: usize,
        sent: &Sent,
        executed: &Executed,
        answered_on: Option<AnsweredOn>,
    ) -> Result<Option<Next>, String> {
        let running = self.workload().sessions[index]
            .running
            .as_ref()
            .expect("running");
        let job = running.job.clone();
        if executed.state == TransactionState::Aborted {
            if sent.end == ExecuteEnd::Rollback {
                // The coordinator's report of an abort for a node failure
                // may cross the rollback.
                let node_failure = self.crash_plan.is_some()
                    && executed.error.as_ref().map(|e| e.ndb_code) == Some(NODE_FAILURE);
                if executed.error.is_some() && !node_failure {
                    return Err("a rollback was answered with an error".into());
                }
                self.outcome.transactions.marks.rollbacks += 1;
                self.finish_job(index, false, None);
                return Ok(None);
            }
            let Some(error) = &executed.error else {
                return Err("aborted without an error".into());
            };
            let node_failure = (error.ndb_code == NODE_FAILURE && self.crash_plan.is_some())
                || error.ndb_code == NOT_MEMBER;
            if !node_failure && !job.may_abort_with(error.ndb_code) {
                return Err(format!("unexpected error {}", error.ndb_code));
            }
            match error.ndb_code {
                LOCK_WAIT_TIMEOUT => self.outcome.transactions.marks.lock_wait_timeouts += 1,
                NODE_FAILURE => self.outcome.transactions.marks.node_failure_aborts += 1,
                NOT_MEMBER => self.outcome.transactions.marks.not_member_aborts += 1,
                UNIQUE_VIOLATION => self.outcome.transactions.marks.unique_violations += 1,
                _ => {}
            }
            self.finish_job(index, false, Some(error.ndb_code));
            return Ok(None);
        }
        let expected_state = match sent.end {
            ExecuteEnd::Commit => TransactionState::Committed,
            _ => TransactionState::Open,
        };
        if executed.state != expected_state || executed.error.is_some() {
            return Err(format!("expected {expected_state:?} without error"));
        }
        if executed.results.len() != sent.operations.len() {
            return Err(format!(
                "{} results for {} operations",
                executed.results.len(),
                sent.operations.len()
            ));
        }
        for (op, result) in sent.operations.iter().zip(&executed.results) {
            if result.error == 0 {
                continue;
            }
            if !op.ignore_error {
                return Err(format!(
                    "error {} on an operation not ignoring errors",
                    result.error
                ));
            }
            if result.error != NO_SUCH_ROW && result.error != LOCK_WAIT_TIMEOUT {
                return Err(format!("unexpected ignored error {}", result.error));
            }
            if op.id < 0 && op.unique_key.is_none() && result.error != NO_SUCH_ROW {
                return Err(format!("a missing row answered {}", result.error));
            }
            self.outcome.transactions.marks.ignored_errors += 1;
            if result.error == LOCK_WAIT_TIMEOUT {
                self.outcome.transactions.marks.lock_wait_timeouts += 1;
            }
        }
        self.check_own_writes(index, sent, executed)?;
        self.note_coded_batch(index, sent, executed);
        // Writes by unique key that reached their base row (see `send_batch`).
        // Once a node crashed, the base row's fragment may have no live
        // backup left, and then no complete phase to wait for.
        let crashed = self
            .crash_plan
            .as_ref()
            .is_some_and(|plan| plan.crashes > 0);
        let workload = self.workload_mut();
        let backups = workload.replicas > 1;
        let read_backup = |op: &Op| {
            backups
                && op.kind.is_write()
                && op.unique_key.is_some()
                && workload.tables[op.table as usize].read_backup
        };
        let (mut wrote, mut maybe_wrote) = (false, false);
        for (op, result) in sent.operations.iter().zip(&executed.results) {
            if read_backup(op) {
                wrote |= result.error == 0 && !crashed;
                maybe_wrote |= result.error == LOCK_WAIT_TIMEOUT || crashed;
            }
        }
        let running = workload.sessions[index].running.as_mut().expect("running");
        running.wrote_read_backup |= wrote;
        running.maybe_wrote_read_backup |= maybe_wrote;
        let wrote_read_backup = running.wrote_read_backup;
        let unknown = !wrote_read_backup && running.maybe_wrote_read_backup;
        // A backup that crashed while the transaction ran may leave no
        // replica to wait for: the coordinator answers once the survivors
        // committed.
        let began_ms = running.began_ms;
        let crash_during_commit = self
            .crash_plan
            .as_ref()
            .and_then(|plan| plan.last_crash_ms)
            .is_some_and(|at| at >= began_ms);
        if executed.state == TransactionState::Committed && !unknown && !crash_during_commit {
            match answered_on {
                Some(AnsweredOn::Completed) if wrote_read_backup => {
                    self.outcome.transactions.marks.answered_after_complete += 1;
                }
                Some(AnsweredOn::Completed) => {
                    return Err(
                        "the commit waited for the complete phase without a READ_BACKUP write"
                            .into(),
                    );
                }
                on if wrote_read_backup => {
                    return Err(format!(
                        "a READ_BACKUP write was acknowledged before the complete phase (on {on:?})"
                    ));
                }
                _ => {}
            }
        }
        self.after_batch(index, sent, executed, job)
    }

    /// Session `index` walks away from its open transaction, as a client
    /// that hangs would: its coordinator must abort it once it has been
    /// idle for the inactivity timeout, freeing its locks, and tell the API
    /// (checked in `workload_receive`; the run does not end before).
    fn abandon(&mut self, index: usize) {
        let workload = self.workload_mut();
        let session = &workload.sessions[index];
        let running = session.running.as_ref().expect("running");
        let (api, transaction, coordinator) =
            (session.api, running.transaction, running.coordinator);
        workload.abandoned.insert((api, transaction), coordinator);
        self.trace(format!(
            "api {api} transaction {transaction} on node {coordinator}: abandoned"
        ));
        self.finish_job(index, false, None);
    }

    /// The transaction of session `index` lost its coordinator while its
    /// commit was in flight: it may have committed or not.
    fn finish_job_unknown(&mut self, index: usize) {
        self.outcome.transactions.aborted += 1;
        let now = self.now_ms;
        let workload = self.workload_mut();
        let running = workload.sessions[index].running.take().expect("running");
        let api = workload.sessions[index].api;
        workload.told.insert((api, running.transaction), None);
        if running.tag != 0 {
            workload.model.tags[running.tag as usize].1 = TagState::Unknown;
        }
        match &running.job {
            Job::InsertGroup { group, .. } | Job::DeleteGroup { group, .. } => {
                workload.model.groups[*group].unknown = true;
            }
            Job::Increment { counter, .. } => {
                workload.model.unknown_increments[*counter as usize] += 1;
            }
            Job::Coded(_) => unreachable!("no coded jobs where coordinators crash"),
            _ => {}
        }
        let think_ms_max = self.workload().think_ms_max;
        let think_ms = between(&mut self.rng, 0, think_ms_max);
        self.schedule(now + think_ms, SimEvent::Session { index });
    }

    /// The transaction of session `index` ended.
    fn finish_job(&mut self, index: usize, committed: bool, error: Option<u16>) {
        if committed {
            self.outcome.transactions.committed += 1;
        } else {
            self.outcome.transactions.aborted += 1;
        }
        let now = self.now_ms;
        let workload = self.workload_mut();
        let running = workload.sessions[index].running.take().expect("running");
        let api = workload.sessions[index].api;
        workload
            .told
            .insert((api, running.transaction), Some(committed));
        // What a whole-cluster crash may take back, by the epoch of each
        // commit (`Model::forget_commits_from`).
        let epoch = running.commit_epoch;
        if running.tag != 0 {
            workload.model.tags[running.tag as usize].1 = if committed {
                workload.model.tag_epochs.insert(running.tag, epoch);
                TagState::Committed
            } else {
                TagState::Aborted
            };
        }
        match &running.job {
            Job::InsertGroup { group, .. } => {
                workload.model.groups[*group].inserted = Some(committed);
                workload.model.groups[*group].inserted_epoch = epoch;
            }
            Job::DeleteGroup {
                group,
                reinsert: false,
                ..
            } if committed => {
                workload.model.groups[*group].deleted = true;
                workload.model.groups[*group].deleted_epoch = epoch;
            }
            Job::Increment { counter, .. } if committed => {
                workload.model.increments[*counter as usize].push(epoch);
            }
            _ => {}
        }
        let retry = matches!(error, Some(LOCK_WAIT_TIMEOUT | NODE_FAILURE | NOT_MEMBER))
            && running.job.retried()
            && running.attempt < ATTEMPTS_MAX
            && workload.phase == Phase::Running
            && now < workload.run_until_ms;
        if retry {
            self.start_job(index, running.job, running.attempt + 1);
            return;
        }
        let think_ms_max = self.workload().think_ms_max;
        let think_ms = between(&mut self.rng, 0, think_ms_max);
        self.schedule(now + think_ms, SimEvent::Session { index });
    }
}

/// The coordinator incarnation session `index`'s last request went to.
fn running_incarnation(run: &Simulation, index: usize) -> u64 {
    run.workload().sessions[index]
        .running
        .as_ref()
        .map_or(0, |running| running.coordinator_incarnation)
}

impl Workload {
    fn new_transaction_id(&mut self, api: NodeId) -> u64 {
        let next = self.next_transaction.get_mut(&api).expect("an API node");
        let id = *next;
        *next += 1;
        id
    }
}
