//! The transaction blocks of each simulated data node — a coordinator (TC)
//! and a query handler (LQH) — fed by the event loop the way the
//! production runtime feeds them: every installed cluster state goes to
//! both; a transaction message goes to the TC, and to the LQH when the TC
//! hands it back; the LQH is ticked at its lock-wait deadline, the TC's
//! inactivity timer at every tick of its data node. Their
//! messages travel over `TcpLinks` (in order per link, exactly once).
//!
//! The runtime also watches what the blocks send, for coverage marks and
//! two checks the API cannot make alone: which message a commit was
//! answered on (a transaction that wrote a READ_BACKUP table must be
//! answered only after its complete phase), and which replica refused an
//! operation. After the workload, `check_transactions_final` checks that
//! nothing is left open, that every replica of every fragment holds the
//! same rows (the hidden tables of unique indexes included), and that each
//! unique index holds exactly the index rows its base table's rows imply.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use node::data_node::CoordinatorStep;
use protocol::{Message, NodeId};
use schema::table::ColumnId;
use schema::{AttrInfoReader, AttrInfoWriter, ColumnType, TableDef, Value};
use transaction::Routing;
use transaction::routing::{TableRoute, UniqueIndex};

use super::Simulation;

/// Rare transaction paths the workload reached (coverage marks): the tests
/// assert that their seeds reach each, so the checkers cover them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransactionMarks {
    /// An operation waited for a row lock until NDB error 266.
    pub lock_wait_timeouts: u64,
    /// A backup refused an operation its primary had run, so the
    /// transaction had to abort (the refusal cannot be ignored).
    pub backup_refusals: u64,
    /// An operation marked ignore-error failed and its transaction went on.
    pub ignored_errors: u64,
    /// A client rolled back a transaction it had written in.
    pub rollbacks: u64,
    /// A commit was answered only after the complete phase (the
    /// transaction wrote a READ_BACKUP table).
    pub answered_after_complete: u64,
    /// A coordinator sent Commit for several fragments of one transaction.
    pub multi_fragment_commits: u64,
    /// An operation by unique key (a lookup of the index row, then the
    /// base row) found its row.
    pub unique_lookups: u64,
    /// A write took a unique key another row holds: NDB error 893 aborted
    /// its transaction.
    pub unique_violations: u64,
    /// An update that committed changed a row's unique key from one value
    /// to another, so its index row moved.
    pub index_rows_moved: u64,
    /// A transaction freed a unique key and took it again, and committed.
    pub code_swaps: u64,
    /// A commit reached a fragment where a scan of its transaction still
    /// waited for a lock (the query handler closed the scan first).
    pub commits_past_waiting_scans: u64,
    /// A transaction its API abandoned was aborted by its coordinator's
    /// inactivity timer (TransactionInactiveTimeout, NDB error 266).
    pub inactive_timeouts: u64,
    /// An API node closed its connection while its transaction was open
    /// and holding locks (the deserter): the data node rolled it back.
    pub api_disconnects: u64,
    /// A transaction or scan ended with NDB error 4010: a data node it had
    /// operations on died before it committed (runs with crashes).
    pub node_failure_aborts: u64,
    /// A session's coordinator died while it ran a transaction there.
    pub coordinator_losses: u64,
    /// Of those, transactions whose commit was in flight and no takeover
    /// told the outcome in time: unknown to the client (the model takes
    /// both as possible).
    pub unknown_outcomes: u64,
    /// Commits in flight whose outcome a takeover told: committed (the
    /// president's answer), aborted (its `TakeoverDone` without one), and
    /// of both, those the session heard after it saw its coordinator die.
    pub outcomes_committed_by_takeover: u64,
    pub takeovers_without_answer: u64,
    pub outcomes_after_coordinator_loss: u64,
    /// A takeover answered a commit whose API had its answer (the markers
    /// outlived the coordinator that was told of the acknowledgement).
    pub repeated_takeover_answers: u64,
    /// Transactions of failed coordinators the president committed, and
    /// aborted, in takeovers.
    pub takeover_commits: u64,
    pub takeover_aborts: u64,
    /// A transaction refused with 1204: routed on a state a node restart
    /// made old (the workload retries it as a node failure).
    pub distribution_changed_aborts: u64,
    /// Transactions refused with 4035 by a node cut off from the others
    /// (retried as node failures).
    pub not_member_aborts: u64,
    /// Node recovery, summed over the final incarnations: restarted nodes
    /// that became started members, fragment replicas and rows copied,
    /// copied rows that waited for the transactions holding them, updates and
    /// deletes that reached a row not copied yet, copies started again
    /// (their source failed, or the starter restarted them), writes
    /// refused for missing a starting replica, reads refused by a replica
    /// still copying.
    pub nodes_recovered: u64,
    pub fragments_copied: u64,
    pub rows_copied: u64,
    pub rows_copy_skipped_locked: u64,
    pub writes_before_copy: u64,
    pub copies_restarted: u64,
    /// Copies that paused between batches to keep to their rate.
    pub copy_pauses: u64,
    /// Node restarts from their own disks (`QueryHandler::restore_for_copy`):
    /// rows copied by key (taken from the restore), rows restored that no
    /// copy named (deleted while the node was down), copies by key
    /// refused (a restored row missing or of another GCI: a bug).
    pub rows_copied_by_key: u64,
    pub restored_rows_dropped: u64,
    pub copies_by_key_refused: u64,
    /// Restores whose rows aside outgrew their bound: every fragment was
    /// copied whole.
    pub restores_for_copy_given_up: u64,
    pub writes_missing_starting_replica: u64,
    pub reads_refused_while_copying: u64,
    /// Work whose commit phase had passed a backup, committed when its
    /// primary failed and made the backup the primary.
    pub commits_on_promotion: u64,
    /// Reads and scan batches refused by replicas without a membership
    /// lease (counted on the nodes' last incarnations).
    pub reads_refused_without_lease: u64,
    /// Commits decided, and how many times the epoch they were decided in
    /// went up (`check_commit_decisions`).
    pub commits_decided: u64,
    pub commit_epochs: u64,
}

impl TransactionMarks {
    pub fn add(&mut self, other: &TransactionMarks) {
        self.lock_wait_timeouts += other.lock_wait_timeouts;
        self.backup_refusals += other.backup_refusals;
        self.ignored_errors += other.ignored_errors;
        self.rollbacks += other.rollbacks;
        self.answered_after_complete += other.answered_after_complete;
        self.multi_fragment_commits += other.multi_fragment_commits;
        self.unique_lookups += other.unique_lookups;
        self.unique_violations += other.unique_violations;
        self.index_rows_moved += other.index_rows_moved;
        self.code_swaps += other.code_swaps;
        self.commits_past_waiting_scans += other.commits_past_waiting_scans;
        self.inactive_timeouts += other.inactive_timeouts;
        self.api_disconnects += other.api_disconnects;
        self.node_failure_aborts += other.node_failure_aborts;
        self.coordinator_losses += other.coordinator_losses;
        self.unknown_outcomes += other.unknown_outcomes;
        self.outcomes_committed_by_takeover += other.outcomes_committed_by_takeover;
        self.takeovers_without_answer += other.takeovers_without_answer;
        self.outcomes_after_coordinator_loss += other.outcomes_after_coordinator_loss;
        self.repeated_takeover_answers += other.repeated_takeover_answers;
        self.takeover_commits += other.takeover_commits;
        self.takeover_aborts += other.takeover_aborts;
        self.distribution_changed_aborts += other.distribution_changed_aborts;
        self.not_member_aborts += other.not_member_aborts;
        self.nodes_recovered += other.nodes_recovered;
        self.fragments_copied += other.fragments_copied;
        self.rows_copied += other.rows_copied;
        self.rows_copy_skipped_locked += other.rows_copy_skipped_locked;
        self.writes_before_copy += other.writes_before_copy;
        self.copies_restarted += other.copies_restarted;
        self.copy_pauses += other.copy_pauses;
        self.rows_copied_by_key += other.rows_copied_by_key;
        self.restored_rows_dropped += other.restored_rows_dropped;
        self.copies_by_key_refused += other.copies_by_key_refused;
        self.restores_for_copy_given_up += other.restores_for_copy_given_up;
        self.writes_missing_starting_replica += other.writes_missing_starting_replica;
        self.reads_refused_while_copying += other.reads_refused_while_copying;
        self.commits_on_promotion += other.commits_on_promotion;
        self.reads_refused_without_lease += other.reads_refused_without_lease;
        self.commits_decided += other.commits_decided;
        self.commit_epochs += other.commit_epochs;
    }
}

/// What the transaction workload of a run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct TransactionOutcome {
    pub marks: TransactionMarks,
    pub executes: u64,
    pub committed: u64,
    pub aborted: u64,
    /// Scans of every account that read all of them.
    pub scans: u64,
    /// Transaction messages delivered, and how many waited for a retransmission.
    pub messages: u64,
    pub retransmissions: u64,
    /// Rows compared across replicas at the end.
    pub rows_checked: u64,
    /// Of those, rows of unique indexes' hidden tables, each also checked
    /// against the base row it stands for.
    pub index_rows_checked: u64,
    /// Data nodes crashed under the workload, by what triggered the crash.
    pub crashes: super::CrashMarks,
}

/// The message a coordinator was handling when it answered an API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredOn {
    Execute,
    KeyAnswer,
    Committed,
    Completed,
    Aborted,
    Other,
}

fn answered_on(message: &Message) -> AnsweredOn {
    match message {
        Message::Execute(_) => AnsweredOn::Execute,
        Message::KeyConfirm(_) | Message::KeyRefuse(_) => AnsweredOn::KeyAnswer,
        Message::Committed(_) => AnsweredOn::Committed,
        Message::Completed(_) => AnsweredOn::Completed,
        Message::Aborted(_) => AnsweredOn::Aborted,
        _ => AnsweredOn::Other,
    }
}

impl Simulation {
    /// Looks at what a node's coordinator did with each message it
    /// handled: which replica a key request went to first, which message a
    /// commit was answered on, and that a transaction a backup refused
    /// never commits.
    /// Commits in the order they were decided, across every node, never
    /// go down an epoch (`cluster::epochs`): a system restart to an epoch
    /// keeps no commit that depends on one of a later epoch.
    pub(super) fn check_commit_decisions(&mut self, node: NodeId, decisions: Vec<(u64, u64)>) {
        for (transaction, epoch) in decisions {
            let (last_epoch, last_node, last_transaction) = self.last_commit_decision;
            if epoch < last_epoch {
                self.fail(format!(
                    "node {node} decided the commit of transaction {transaction:#x} in epoch \
                     {epoch:#x} after node {last_node} decided {last_transaction:#x} in epoch \
                     {last_epoch:#x}"
                ));
                return;
            }
            let marks = &mut self.outcome.transactions.marks;
            marks.commits_decided += 1;
            if epoch > last_epoch {
                marks.commit_epochs += 1;
            }
            self.last_commit_decision = (epoch, node, transaction);
        }
    }

    pub(super) fn check_coordinator_steps(&mut self, node: NodeId, steps: Vec<CoordinatorStep>) {
        let Some(workload) = self.workload.as_mut() else {
            return;
        };
        for step in steps {
            let on = answered_on(&step.input);
            let refused = match &step.input {
                Message::KeyRefuse(refuse) => {
                    Some((refuse.transaction, refuse.operation, Some(refuse.node)))
                }
                Message::KeyConfirm(confirm) => {
                    Some((confirm.transaction, confirm.operation, None))
                }
                _ => None,
            };
            if let Some((transaction, operation, refusing)) = refused {
                let first = workload
                    .first_replica
                    .remove(&(node, transaction, operation));
                if let (Some(first), Some(refusing)) = (first, refusing)
                    && first != refusing
                {
                    self.outcome.transactions.marks.backup_refusals += 1;
                    workload.must_abort.insert((node, transaction));
                }
            }
            let mut commits = 0;
            for (destination, message) in &step.sent {
                match message {
                    Message::Commit(phase)
                        if workload.must_abort.contains(&(node, phase.transaction)) =>
                    {
                        let failure = format!(
                            "node {node} commits transaction {} although a backup refused one of \
                             its operations (the primary had run it: the replicas would differ)",
                            phase.transaction
                        );
                        self.fail(failure);
                        return;
                    }
                    Message::KeyRequest(request) => {
                        workload
                            .first_replica
                            .insert((node, request.transaction, request.operation), *destination);
                    }
                    Message::Executed(executed) => {
                        workload
                            .answered_on
                            .insert((*destination, executed.transaction), on);
                    }
                    Message::Commit(_) => commits += 1,
                    _ => {}
                }
            }
            if commits > 1 {
                self.outcome.transactions.marks.multi_fragment_commits += 1;
            }
        }
    }

    /// Whether some query handler still has a lock wait that may end.
    /// A coordinator holds a commit until the next epoch (`cluster::epochs`):
    /// the epoch round, driven by time, moves it on.
    pub(super) fn commits_await_epoch(&self) -> bool {
        self.nodes.values().any(|sim| {
            sim.composite
                .as_ref()
                .is_some_and(|composite| composite.commits_awaiting_epoch() > 0)
        })
    }

    pub(super) fn lock_waits_pending(&self) -> bool {
        self.nodes.values().any(|sim| {
            sim.composite
                .as_ref()
                .is_some_and(|composite| composite.lock_wait_deadline_ms().is_some())
        })
    }

    /// After quiescence: no transaction or engine work is left anywhere,
    /// every replica of a fragment holds the same rows (the hidden tables
    /// of unique indexes too), and every unique index holds exactly the
    /// rows its base table implies. Returns each table's rows (by name) as
    /// AttrInfo by id for the workload's checks.
    pub(super) fn check_transactions_final(
        &mut self,
    ) -> Option<BTreeMap<String, BTreeMap<i64, Vec<u8>>>> {
        self.outcome.transactions.messages = self.tcp.delivered;
        self.outcome.transactions.retransmissions = self.tcp.retransmissions;
        let mut problems = Vec::new();
        let crashed = self
            .crash_plan
            .as_ref()
            .map(|plan| plan.crashed.clone())
            .unwrap_or_default();
        for (node, sim) in &self.nodes {
            let Some(composite) = sim.composite.as_ref() else {
                if !crashed.contains(node) {
                    problems.push(format!("node {node} is down"));
                }
                continue;
            };
            // Messages to a node that crashed are dropped until the
            // survivors agree it is gone; any other drop is a problem.
            let dropped = composite.messages_dropped();
            let ever_crashed = self
                .crash_plan
                .as_ref()
                .is_some_and(|plan| plan.crashes > 0)
                || self.system_stop.requested;
            if dropped > 0 && !ever_crashed {
                problems.push(format!(
                    "node {node} dropped {dropped} messages for want of a connection"
                ));
            }
            let open = composite.coordinator().open_transactions();
            if open > 0 {
                problems.push(format!(
                    "the coordinator of node {node} has {open} open transactions"
                ));
            }
            // Every API node acknowledged its committed answers (or
            // failed), so no commit marker outlives the run.
            let awaited = composite.coordinator().acks_awaited();
            let markers = composite.query_handler().open_markers();
            if awaited > 0 || markers > 0 {
                problems.push(format!(
                    "node {node} still has {awaited} commit answers awaiting acknowledgement \
                     and {markers} commit markers: {}",
                    composite.query_handler().describe_markers().join("; ")
                ));
            }
            let work = composite.query_handler().open_work();
            if work > 0 {
                problems.push(format!(
                    "the query handler of node {node} has {work} open work records: {}",
                    composite.query_handler().describe_open_work().join("; ")
                ));
            }
            let engine = composite.query_handler().engine();
            if engine.operations_in_use() > 0
                || engine.transactions_in_use() > 0
                || engine.scans_in_use() > 0
            {
                problems.push(format!(
                    "the engine of node {node} holds {} operation records, {} transactions and \
                     {} scans",
                    engine.operations_in_use(),
                    engine.transactions_in_use(),
                    engine.scans_in_use()
                ));
            }
            engine.check_invariants();
            let takeovers = composite.coordinator().takeover_counters();
            self.outcome.transactions.marks.takeover_commits += takeovers.committed;
            self.outcome.transactions.marks.takeover_aborts += takeovers.aborted;
            if composite.coordinator().takeovers_running() > 0 {
                problems.push(format!(
                    "the coordinator of node {node} still waits for takeover reports"
                ));
            }
            let counters = composite.query_handler().counters();
            let marks = &mut self.outcome.transactions.marks;
            marks.commits_past_waiting_scans += counters.waiting_scans_closed_by_commit;
            marks.fragments_copied += counters.fragments_copied;
            marks.rows_copied += counters.rows_copied;
            marks.rows_copy_skipped_locked += counters.rows_copy_skipped_locked;
            marks.writes_before_copy += counters.writes_before_copy;
            marks.copies_restarted += counters.copies_restarted;
            marks.copy_pauses += counters.copy_pauses;
            marks.rows_copied_by_key += counters.rows_copied_by_key;
            marks.restored_rows_dropped += counters.restored_rows_dropped;
            marks.copies_by_key_refused += counters.copies_by_key_refused;
            marks.restores_for_copy_given_up += counters.restores_for_copy_given_up;
            marks.writes_missing_starting_replica += counters.writes_missing_starting_replica;
            marks.reads_refused_while_copying += counters.reads_refused_while_copying;
            marks.commits_on_promotion += counters.commits_on_promotion;
            marks.reads_refused_without_lease += counters.reads_refused_without_lease;
            if composite.query_handler().copies_out() > 0 {
                problems.push(format!(
                    "node {node} still copies fragments to a starting node"
                ));
            }
            if let Some(state) = composite.membership().state() {
                marks.nodes_recovered = marks.nodes_recovered.max(state.recovered.len() as u64);
            }
        }
        let Some(state) = self.decided.last_key_value().map(|(_, s)| s.clone()) else {
            self.fail("no state was ever installed".into());
            return None;
        };
        // Every node installed the last state. Its routing lists the
        // hidden tables of unique indexes, which the dictionary does not.
        let routing = self
            .nodes
            .values()
            .find_map(|sim| sim.composite.as_ref())
            .map(|composite| composite.routing().clone())
            .unwrap_or_default();
        if routing.version() != state.position() {
            problems.push(format!(
                "the routing is at {:?}, not at the last state {:?}",
                routing.version(),
                state.position()
            ));
        }
        // (table, fragment) → the committed rows every replica holds.
        let mut committed: BTreeMap<(u32, u32), Vec<Vec<u8>>> = BTreeMap::new();
        for route in routing.tables() {
            for (index, fragment) in route.fragments.iter().enumerate() {
                // Each replica's rows, and their GCIs in the same order.
                let mut first: Option<(NodeId, Vec<Vec<u8>>, Vec<u32>)> = None;
                for node in fragment.replicas.iter().filter(|n| !crashed.contains(n)) {
                    let composite = self
                        .nodes
                        .get_mut(node)
                        .and_then(|sim| sim.composite.as_mut())
                        .expect("every data node runs");
                    let (rows, gcis): (Vec<Vec<u8>>, Vec<u32>) = match composite
                        .query_handler_mut()
                        .committed_rows_with_gci(route.id, index as u32)
                    {
                        Ok(rows) => rows.into_iter().unzip(),
                        Err(error) => {
                            problems.push(format!(
                                "node {node}: fragment {index} of table {}: {}",
                                route.name, error.detail
                            ));
                            continue;
                        }
                    };
                    match &first {
                        None => first = Some((*node, rows, gcis)),
                        Some((primary, expected, _)) if *expected != rows => {
                            let only = |a: &Vec<Vec<u8>>, b: &Vec<Vec<u8>>| -> Vec<Vec<u8>> {
                                a.iter().filter(|row| !b.contains(row)).cloned().collect()
                            };
                            problems.push(format!(
                                "table {} fragment {index}: replicas differ: node {primary} {}, node \
                                 {node} {}; only on node {primary}: {}; only on node {node}: {}",
                                route.name,
                                describe_rows(&route.def, expected),
                                describe_rows(&route.def, &rows),
                                describe_rows(&route.def, &only(expected, &rows)),
                                describe_rows(&route.def, &only(&rows, expected))
                            ));
                        }
                        // The same rows hold the same GCIs: every replica
                        // stamps a commit with its epoch's, and a copy with
                        // its source's (a node restart copies by them).
                        Some((primary, _, expected)) if *expected != gcis => {
                            let differing: Vec<String> = expected
                                .iter()
                                .zip(&gcis)
                                .filter(|(a, b)| a != b)
                                .take(3)
                                .map(|(a, b)| {
                                    format!("GCI {a} on node {primary}, {b} on node {node}")
                                })
                                .collect();
                            problems.push(format!(
                                "table {} fragment {index}: replicas hold the same rows with \
                                 different GCIs: {}",
                                route.name,
                                differing.join("; ")
                            ));
                        }
                        Some(_) => {}
                    }
                }
                let rows = first.map(|(_, rows, _)| rows).unwrap_or_default();
                self.outcome.transactions.rows_checked += rows.len() as u64;
                if route.base_table.is_some() {
                    self.outcome.transactions.index_rows_checked += rows.len() as u64;
                }
                committed.insert((route.id, index as u32), rows);
            }
        }
        // The workload's checks read the dictionary's tables.
        let mut tables = BTreeMap::new();
        for route in state
            .tables
            .iter()
            .filter_map(|entry| routing.table(entry.id))
        {
            let mut rows_by_id = BTreeMap::new();
            for fragment in 0..route.fragments.len() as u32 {
                for row in &committed[&(route.id, fragment)] {
                    let (Some(id), Some(_)) = (int_column(row, 0), int_column(row, 1)) else {
                        problems.push(format!("table {}: a row without id or value", route.name));
                        continue;
                    };
                    if rows_by_id.insert(id, row.clone()).is_some() {
                        problems.push(format!("table {}: id {id} is in two fragments", route.name));
                    }
                }
            }
            tables.insert(route.name.clone(), rows_by_id);
        }
        problems.extend(check_unique_indexes(&routing, &committed));
        if !problems.is_empty() {
            let mut message = String::from("after the transaction workload:");
            for problem in problems {
                let _ = write!(message, "\n  - {problem}");
            }
            self.fail(message);
            return None;
        }
        Some(tables)
    }
}

/// Column `column` of a workload row (0: id INT, 1: BIGINT value) in AttrInfo.
pub fn int_column(attrinfo: &[u8], column: u16) -> Option<i64> {
    let column_type = if column == 0 {
        ColumnType::Int { unsigned: false }
    } else {
        ColumnType::BigInt { unsigned: false }
    };
    match AttrInfoReader::find(attrinfo, column).ok()?? {
        Some(bytes) => match Value::decode(&column_type, bytes) {
            Value::Int(value) => Some(value),
            _ => None,
        },
        None => None,
    }
}

/// Every unique index's hidden table holds exactly the rows its base
/// table's committed rows imply: one (index key, primary key) per base row
/// whose key has no NULL, in every copy of the partition the key routes
/// to. So no two base rows share a key, and no index row is left behind.
/// `committed` holds the rows of every (table, fragment).
fn check_unique_indexes(
    routing: &Routing,
    committed: &BTreeMap<(u32, u32), Vec<Vec<u8>>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut scratch = Vec::new();
    for route in routing.tables() {
        for index in &route.unique_indexes {
            let Some(hidden) = routing.table(index.table) else {
                problems.push(format!(
                    "table {}: index {} has no hidden table {}",
                    route.name, index.name, index.table
                ));
                continue;
            };
            // Hidden fragment → the index rows it must hold.
            let mut expected: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
            // Index key → the base row holding it.
            let mut holders: BTreeMap<Vec<u8>, &Vec<u8>> = BTreeMap::new();
            for fragment in 0..route.fragments.len() as u32 {
                for row in &committed[&(route.id, fragment)] {
                    let Some((key, index_row)) = index_row_of(route, index, row) else {
                        continue;
                    };
                    if let Some(other) = holders.insert(key.clone(), row) {
                        problems.push(format!(
                            "table {}: rows {} and {} share the key of unique index {}",
                            route.name,
                            describe_row(&route.def, other),
                            describe_row(&route.def, row),
                            index.name
                        ));
                    }
                    match hidden.partition_of_key(&key, &mut scratch) {
                        Ok(partition) => {
                            for copy in hidden.fragments_of(partition) {
                                expected.entry(copy).or_default().push(index_row.clone());
                            }
                        }
                        Err(error) => problems.push(format!(
                            "table {}: the key of {} does not route: {}",
                            hidden.name,
                            describe_row(&hidden.def, &index_row),
                            error.detail
                        )),
                    }
                }
            }
            for fragment in 0..hidden.fragments.len() as u32 {
                let mut want = expected.remove(&fragment).unwrap_or_default();
                want.sort_unstable();
                let mut have = committed[&(hidden.id, fragment)].clone();
                have.sort_unstable();
                if want == have {
                    continue;
                }
                let missing: Vec<Vec<u8>> = want
                    .iter()
                    .filter(|row| !have.contains(row))
                    .cloned()
                    .collect();
                let extra: Vec<Vec<u8>> = have
                    .iter()
                    .filter(|row| !want.contains(row))
                    .cloned()
                    .collect();
                problems.push(format!(
                    "unique index {} fragment {fragment} differs from its base rows: missing {}, \
                     extra {}",
                    hidden.name,
                    describe_rows(&hidden.def, &missing),
                    describe_rows(&hidden.def, &extra)
                ));
            }
        }
    }
    problems
}

/// The index key (AttrInfo) and the hidden table's row that `row` of
/// `route` implies for `index`, or `None` when the key has a NULL.
fn index_row_of(route: &TableRoute, index: &UniqueIndex, row: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let value = |column| AttrInfoReader::find(row, column).ok().flatten().flatten();
    let mut key = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut key);
    for (position, &column) in index.columns.iter().enumerate() {
        writer.push(position as ColumnId, Some(value(column)?));
    }
    let mut index_row = key.clone();
    let mut writer = AttrInfoWriter::new(&mut index_row);
    for (j, &column) in route.def.primary_key.iter().enumerate() {
        // Primary-key columns are never NULL.
        writer.push(index.key_column(j), value(column));
    }
    Some((key, index_row))
}

/// Rows as AttrInfo of `def`'s columns, the first few decoded.
fn describe_rows(def: &TableDef, rows: &[Vec<u8>]) -> String {
    let shown: Vec<String> = rows
        .iter()
        .take(20)
        .map(|row| describe_row(def, row))
        .collect();
    format!(
        "{} rows [{}{}]",
        rows.len(),
        shown.join(" "),
        if rows.len() > 20 { " ..." } else { "" }
    )
}

fn describe_row(def: &TableDef, row: &[u8]) -> String {
    let values: Vec<String> = AttrInfoReader::new(row)
        .map(|entry| match entry {
            Ok((column, value)) => {
                let name = def
                    .columns
                    .get(usize::from(column))
                    .map_or("?", |c| c.name.as_str());
                let shown = match value {
                    None => "NULL".to_string(),
                    Some(bytes) => match def.columns.get(usize::from(column)) {
                        Some(c) => match Value::decode(&c.column_type, bytes) {
                            Value::Int(value) => value.to_string(),
                            other => format!("{other:?}"),
                        },
                        None => format!("{bytes:?}"),
                    },
                };
                format!("{name}={shown}")
            }
            Err(error) => format!("<{}>", error.detail),
        })
        .collect();
    format!("({})", values.join(" "))
}
