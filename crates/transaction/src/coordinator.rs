//! The transaction coordinator (TC) of one data node: it takes an API
//! node's batches, routes each operation to the replicas of its fragment,
//! and runs the linear two-phase commit (see `query_handler` for the
//! replicas' side).
//!
//! ## A transaction's life
//! 1. `Execute` with a new API transaction id starts a transaction here
//!    (limit: `MaxNoOfConcurrentTransactions`). Each operation is routed:
//!    writes to every live replica, primary first; locked reads to the
//!    primary; committed reads to a replica on this node when the table is
//!    READ_BACKUP (or fully replicated), else to the primary. Every
//!    operation of the batch leaves at once; the batch is answered when
//!    each has been confirmed or refused.
//! 2. A refusal of an operation marked ignore-error, by the replica it was
//!    sent to first, only fails that operation. Any other refusal aborts
//!    the transaction at once.
//! 3. Commit: each fragment the transaction locked rows on gets `Commit`
//!    along its chain backwards; when every fragment answered, fragments
//!    with backups get `Complete`. The API gets its answer after the commit
//!    phase, or after the complete phase when the transaction wrote to a
//!    READ_BACKUP table, so that it reads its own writes from any replica.
//!    A commit ends the transaction's scans; locking scans opened just
//!    before it are released afterwards (`release_late_scans`).
//! 4. Abort: each fragment gets `Abort` along its chain forwards.
//!
//! ## Node failures
//! A new cluster state without a node the transaction used aborts it with
//! NDB error 4010 while it is still preparing, along the live part of each
//! chain (a failed replica would swallow the Abort); later phases resend
//! their message for unfinished fragments along the live part of the chain
//! (replicas pass on phases for work they no longer have). Complete goes to
//! every live replica but the one that committed in the commit phase, so a
//! backup whose primary failed after committing still commits and frees its
//! locks. A scan with a fragment on the failed node ends with 4010 at once.
//! A node that is not a member of the installed state refuses new
//! transactions with 4035 (temporary). A node back as a new incarnation
//! counts as failed too (the state that removed the old one may be
//! skipped).
//!
//! ## Takeover and commit markers
//! The president takes over a failed coordinator's transactions
//! (`take_over`): it asks every member what it holds, commits what some
//! replica began to commit or holds a commit marker of, aborts the rest,
//! answers the API named by a marker, and announces the takeover done
//! (`take_takeovers_done`, sent as `TakeoverDone` to the API nodes
//! connected since it began: an API waiting for that coordinator stops
//! waiting, and takes what was not answered as aborted). A
//! Commit leaves the API's identity as a marker on the replicas; a commit
//! answered here awaits the API's `CommitAck` (at most
//! MaxNoOfConcurrentTransactions such answers), then its markers are
//! forgotten (`ForgetMarkers`).
//!
//! ## Transaction ids
//! The node (8 bits) and the low 24 bits of its incarnation, then a 32-bit
//! sequence that wraps, skipping an id still in use.

use std::collections::{BTreeMap, BTreeSet};

use protocol::{
    Chain, ErrorReply, Execute, ExecuteEnd, Executed, KeyConfirm, KeyRefuse, KeyRequest, Member,
    Message, NodeId, Operation, OperationKind, OperationResult, Phase, PhaseDone, ScanNext,
    ScanOpen, ScanRows, TakeoverQuery, TakeoverReport, TransactionState, WorkState,
};
use schema::ErrorCode;

use crate::errors::{reply, reply_for};
use crate::maps::Map;
use crate::routing::{Routing, TableRoute};
use crate::unique;

/// Limits of one coordinator, from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct CoordinatorConfig {
    /// [MaxNoOfConcurrentTransactions]
    pub transactions_max: u32,
    /// [MaxNoOfConcurrentOperations] operations of open transactions.
    pub operations_max: u32,
    /// Scans open at once on this coordinator.
    pub scans_max: u32,
    /// [TransactionInactiveTimeout] milliseconds a transaction may wait
    /// for its API's next request before `tick` aborts it (266) and frees
    /// its locks; 0 never aborts.
    pub inactive_timeout_ms: u64,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            transactions_max: 4_096,
            operations_max: 32_768,
            scans_max: 256,
            inactive_timeout_ms: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Open between batches.
    Open,
    /// A batch's operations are out.
    Executing,
    Committing,
    Completing,
    Aborting,
}

/// A fragment the transaction holds locks or changes on.
#[derive(Debug, Clone)]
struct Participant {
    table: u32,
    fragment: u32,
    /// The replicas involved, primary first: every live replica once the
    /// transaction wrote here, else the primary alone (locked reads).
    chain: Vec<NodeId>,
    writes: bool,
    read_backup: bool,
    /// A locking scan was sent to the primary (see `release_late_scans`).
    scanned: bool,
    /// The current phase is done on this fragment.
    done: bool,
    /// The replica that committed in the engine in the commit phase (the
    /// last the Commit reached): the others of the chain still need
    /// Complete, and all of them do if it failed.
    committer: Option<NodeId>,
    /// A Commit went to this fragment through its backups, so it may have
    /// overtaken a scan open sent to the primary (see
    /// `release_late_scans`). Kept when a backup fails and the chain
    /// shrinks: the Commit that went out earlier still took that path.
    committed_through_backups: bool,
}

#[derive(Debug, Clone)]
struct OperationSlot {
    ignore_error: bool,
    /// The node the operation was sent to first.
    first: NodeId,
    answered: bool,
    /// The batch result this operation answers: its own, or for an
    /// operation the coordinator added, the API operation it serves.
    result: u32,
    follow: Follow,
}

/// What the coordinator does when an operation is confirmed.
#[derive(Debug, Clone)]
enum Follow {
    /// The confirm's data is the operation's result.
    Answer,
    /// A unique-index lookup: run `then` on the base table with the
    /// primary key found in the index row (see `unique`).
    Lookup { position: u16, then: Box<Operation> },
    /// A write on a table with unique indexes: the confirm's data is the
    /// row before it, from which the index rows are kept in step.
    Maintain(Box<Operation>),
    /// An index-row insert made by `Maintain`: a duplicate is a unique
    /// constraint violation.
    IndexInsert,
    /// An index-row delete made by `Maintain`.
    IndexDelete,
}

impl Follow {
    /// Operations only the coordinator may send (on hidden index tables).
    fn is_internal(&self) -> bool {
        matches!(
            self,
            Follow::Lookup { .. } | Follow::IndexInsert | Follow::IndexDelete
        )
    }
}

struct Batch {
    /// The number of the batch's first operation.
    first: u32,
    end: ExecuteEnd,
    slots: Vec<OperationSlot>,
    results: Vec<OperationResult>,
    outstanding: u32,
    hops: u32,
}

struct CoordinatorScan {
    /// The API's scan id.
    scan: u32,
    fragments: Vec<ScanFragment>,
}

/// One fragment of a scan, at the node that scans it.
struct ScanFragment {
    fragment: u32,
    node: NodeId,
    finished: bool,
    /// A request for its next batch went to `node` and no rows came back
    /// yet: the API waits for the cluster, so the transaction is not idle.
    awaiting_rows: bool,
}

struct Transaction {
    api: NodeId,
    /// The API's id for it.
    client: u64,
    stage: Stage,
    next_operation: u32,
    operations: u32,
    batch: Option<Batch>,
    participants: Vec<Participant>,
    outstanding: u32,
    /// The API has its final answer.
    answered: bool,
    error: Option<ErrorReply>,
    scans: Vec<CoordinatorScan>,
    /// The coordinator's clock (`tick`) when the API last sent a request
    /// for this transaction or was last sent an answer.
    active_ms: u64,
    /// `describe_stuck` described it already.
    reported_stuck: bool,
    /// The failed coordinator whose takeover this transaction belongs to.
    takeover_of: Option<Member>,
    /// Other takeovers of the same node that found it too (each finds the
    /// work of every failed incarnation of the node) and so are not done
    /// before it is: usually none.
    also_announces: Vec<Member>,
    /// A Commit left markers for its API, and no awaited acknowledgement
    /// will forget them yet (`answer_final` takes that over; `finish`
    /// forgets them itself when the API failed before its answer).
    marked: bool,
    /// The epoch its commit was decided in (`cluster::epochs`); 0 until
    /// then. Every Commit of it carries this one.
    epoch: u64,
}

/// A commit whose API was answered but has not acknowledged the answer:
/// the replicas keep its commit marker meanwhile.
struct AwaitedAck {
    transaction: u64,
    /// The data nodes that may hold its marker.
    nodes: NodeSet,
    since_ms: u64,
}

/// A set of node ids, one bit each: kept per answer awaiting an
/// acknowledgement, so a committed answer allocates nothing for it.
#[derive(Clone, Copy, Default)]
struct NodeSet([u64; 4]);

impl NodeSet {
    fn insert(&mut self, node: NodeId) {
        self.0[usize::from(node) / 64] |= 1 << (node % 64);
    }

    fn iter(self) -> impl Iterator<Item = NodeId> {
        (0..self.0.len()).flat_map(move |word| {
            let mut bits = self.0[word];
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some((word * 64 + bit) as NodeId)
            })
        })
    }
}

/// How long a commit's answer may wait for its API's acknowledgement
/// before its markers are forgotten anyway (an API that vanished without
/// its connection closing here). It is well past the longest an API waits
/// for the outcome of a commit whose coordinator failed
/// (`shoal_client`'s `OUTCOME_WAIT` after it noticed, which is at most a
/// detection time after the failure), so no API still waits for the
/// outcome a forgotten marker would have told.
pub const COMMIT_ACK_TIMEOUT_MS: u64 = 60_000;

/// Counters of one coordinator (NDB's `ndbinfo.counters` for the TC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoordinatorCounters {
    pub transactions: u64,
    pub commits: u64,
    pub aborts: u64,
    pub operations: u64,
    pub local_operations: u64,
    pub remote_operations: u64,
    pub scans: u64,
    /// Commit answers whose acknowledgement never came within
    /// `COMMIT_ACK_TIMEOUT_MS` (their markers were forgotten anyway).
    pub acks_timed_out: u64,
}

/// The takeover of one failed coordinator's transactions (NDB's TC
/// takeover): the replicas are asked what they hold, then each transaction
/// is finished here as an ordinary one — committed if any replica began to
/// commit it, else aborted.
struct Takeover {
    /// The nodes asked in the current round.
    asked: BTreeSet<NodeId>,
    /// Per node, the queries whose last report has not come (a report of
    /// an earlier round arrives first: each link is in order).
    awaiting: BTreeMap<NodeId, u32>,
    /// Transaction → (table, fragment) → the furthest state a replica
    /// reported.
    found: BTreeMap<u64, BTreeMap<(u32, u32), WorkState>>,
    /// Transaction → its API and the API's id, from commit markers.
    markers: BTreeMap<u64, (NodeId, u64)>,
    /// Transaction → the epoch of the Commit a replica got.
    epochs: BTreeMap<u64, u64>,
}

/// Counters of the takeovers a coordinator ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TakeoverCounters {
    pub takeovers: u64,
    /// Query rounds begun again because a member failed during one.
    pub rounds_restarted: u64,
    pub committed: u64,
    pub aborted: u64,
    /// Committed transactions whose API was told by the takeover
    /// (an `Executed` from this node), and takeovers announced as done.
    pub answered_committed: u64,
    pub announced: u64,
    /// Transactions two takeovers of one node found (an older and a newer
    /// failed incarnation): the later takeover waits for them too.
    pub shared_with_another_takeover: u64,
}

pub struct Coordinator {
    node: NodeId,
    config: CoordinatorConfig,
    /// Running takeovers, by failed coordinator.
    takeovers: BTreeMap<Member, Takeover>,
    /// Failed coordinators this node has taken over (or is taking over):
    /// each once.
    taken_over: BTreeSet<Member>,
    takeover_counters: TakeoverCounters,
    routing: Routing,
    transactions: Map<u64, Transaction>,
    /// (API node, API transaction id) → transaction id.
    clients: Map<(NodeId, u64), u64>,
    /// Commits answered whose API has not acknowledged the answer yet,
    /// by (API node, API transaction id). At most transactions_max: a
    /// new transaction is refused (233) beyond that.
    acks_awaited: Map<(NodeId, u64), AwaitedAck>,
    /// Per data node, markers to forget, sent by the step that listed
    /// them (`send_forgets`).
    forget: BTreeMap<NodeId, Vec<u64>>,
    /// Taken-over transactions not finished yet, per takeover.
    takeovers_finishing: BTreeMap<Member, u32>,
    /// The epoch commits are decided in; `None` while the epochs change
    /// or before the first (`set_commit_epoch`).
    commit_epoch: Option<u64>,
    /// Transactions whose commit waits for an epoch.
    awaiting_epoch: Vec<u64>,
    /// Each commit decided, with its epoch, in order, while recorded for
    /// the simulator's checks (`record_decisions`).
    decisions: Option<Vec<(u64, u64)>>,
    /// Takeovers finished since the composite last took them: every API
    /// node is told (`Message::TakeoverDone`).
    takeovers_done: Vec<Member>,
    /// The high 32 bits of every transaction id this coordinator gives:
    /// the node (8 bits) and the low 24 bits of its incarnation, so ids
    /// are unique in the cluster and across restarts of the node.
    transaction_base: u64,
    /// The low 32 bits of the next transaction id. It wraps after 2^32
    /// transactions; an id still in use is skipped.
    next_sequence: u32,
    operations_in_use: u32,
    scans_in_use: u32,
    key_scratch: Vec<u8>,
    counters: CoordinatorCounters,
    /// The time of the last `tick`: the clock of the inactivity timer.
    now_ms: u64,
    /// False while membership has no agreement past ArbitrationTimeout
    /// (`set_serving`): new transactions are refused with 4035.
    serving: bool,
    /// Whether this node holds its membership lease (`cluster::lease`),
    /// as the composite sets it before each step (`set_lease`). Without
    /// it no commit of this coordinator's own is decided: the others may
    /// have removed this node, moved to a later epoch and taken its
    /// transactions over (the simulator found a cut-off node deciding a
    /// commit in an epoch below one they had decided in, seed 242797).
    /// Such commits wait, as they wait for an epoch, until the lease is
    /// back or the transaction is aborted; a takeover's need none.
    holds_lease: bool,
    /// A whole-cluster stop is draining this node (`drain`): new
    /// transactions are refused with 270.
    draining: bool,
    /// The drain is over (`close`): every transaction that had not yet
    /// committed was aborted, and no commit is decided any more.
    closed: bool,
}

/// A transaction that may still decide a commit (`has_undecided_transactions`).
fn undecided(transaction: &Transaction) -> bool {
    matches!(transaction.stage, Stage::Open | Stage::Executing)
        && transaction.epoch == 0
        && transaction.takeover_of.is_none()
}

impl Coordinator {
    /// `incarnation` makes transaction ids unique across restarts of the node.
    pub fn new(node: NodeId, incarnation: u64, config: CoordinatorConfig) -> Coordinator {
        Coordinator {
            node,
            config,
            routing: Routing::new(),
            transactions: Map::default(),
            clients: Map::default(),
            acks_awaited: Map::default(),
            forget: BTreeMap::new(),
            takeovers_finishing: BTreeMap::new(),
            commit_epoch: None,
            awaiting_epoch: Vec::new(),
            decisions: None,
            takeovers_done: Vec::new(),
            transaction_base: transaction_base(node, incarnation),
            takeovers: BTreeMap::new(),
            taken_over: BTreeSet::new(),
            takeover_counters: TakeoverCounters::default(),
            next_sequence: 0,
            operations_in_use: 0,
            scans_in_use: 0,
            key_scratch: Vec::new(),
            counters: CoordinatorCounters::default(),
            now_ms: 0,
            serving: true,
            holds_lease: true,
            draining: false,
            closed: false,
        }
    }

    /// A whole-cluster stop begins (NDB's graceful shutdown): new
    /// transactions are refused with 270 (temporary); open ones go on
    /// until they end or `close`.
    pub fn drain(&mut self) {
        self.draining = true;
    }

    /// Whether a transaction of this coordinator may still decide a
    /// commit: one open, executing, or waiting for an epoch to commit
    /// in. Taken-over transactions keep the epochs their replicas hold.
    pub fn has_undecided_transactions(&self) -> bool {
        self.transactions.values().any(undecided)
    }

    /// Ends a drain: every transaction that has not decided its commit is
    /// aborted with 270, and from now on none is (those committing finish
    /// in the epochs they have). So every commit this coordinator ever
    /// decides is decided already.
    pub fn close(&mut self, out: &mut Vec<(NodeId, Message)>) {
        assert!(self.draining, "close without a drain");
        self.closed = true;
        let mut undecided: Vec<u64> = self
            .transactions
            .iter()
            .filter(|(_, transaction)| undecided(transaction))
            .map(|(id, _)| *id)
            .collect();
        undecided.sort_unstable();
        for id in undecided {
            let transaction = &self.transactions[&id];
            let error = reply(
                ErrorCode::NodeShutdown,
                format!(
                    "transaction {} of API node {} was still open when the cluster shut \
                     down, and was aborted",
                    transaction.client, transaction.api
                ),
            );
            self.abort(id, Some(error), out);
        }
    }

    /// Stops (false) or resumes (true) taking new transactions: a node
    /// whose side of a split may have lost refuses them with 4035
    /// (temporary) until a state is agreed; open ones go on.
    pub fn set_serving(&mut self, serving: bool) {
        self.serving = serving;
    }

    pub fn routing(&self) -> &Routing {
        &self.routing
    }

    pub fn counters(&self) -> CoordinatorCounters {
        self.counters
    }

    /// Transactions not yet finished (for checkers and reports).
    pub fn open_transactions(&self) -> usize {
        self.transactions.len()
    }

    pub fn takeover_counters(&self) -> TakeoverCounters {
        self.takeover_counters
    }

    /// Takeovers still asking replicas what they hold.
    pub fn takeovers_running(&self) -> usize {
        self.takeovers.len()
    }

    /// Commits whose API has not acknowledged the answer (for checkers).
    pub fn acks_awaited(&self) -> usize {
        self.acks_awaited.len()
    }

    /// Whether this node has taken over `failed` already (`take_over`
    /// would skip it).
    pub fn has_taken_over(&self, failed: Member) -> bool {
        self.taken_over.contains(&failed)
    }

    /// The failed coordinators whose takeover finished here since the last
    /// call: the runtime tells the API nodes connected since the takeover
    /// began (`Message::TakeoverDone`), after what the coordinator sent.
    pub fn take_takeovers_done(&mut self) -> Vec<Member> {
        std::mem::take(&mut self.takeovers_done)
    }

    /// Takes over the transactions `failed` coordinated: asks every live
    /// member's query handler (this node's too) what it holds of them,
    /// once each has installed the state at `position`. The runtime calls
    /// this on the president for every removed member; a member already
    /// taken over here is skipped, and a takeover run twice (by a new
    /// president) finds only what is left, since every phase is idempotent.
    pub fn take_over(
        &mut self,
        failed: Member,
        position: (u64, u64),
        out: &mut Vec<(NodeId, Message)>,
    ) {
        // An earlier incarnation of this node is another coordinator: its
        // ids differ in the incarnation bits.
        assert!(
            transaction_base(failed.node, failed.incarnation) != self.transaction_base,
            "a coordinator takes over another"
        );
        if !self.taken_over.insert(failed) {
            return;
        }
        self.takeover_counters.takeovers += 1;
        let mut takeover = Takeover {
            asked: BTreeSet::new(),
            awaiting: BTreeMap::new(),
            found: BTreeMap::new(),
            markers: BTreeMap::new(),
            epochs: BTreeMap::new(),
        };
        self.ask(failed, position, &mut takeover, out);
        self.takeovers.insert(failed, takeover);
    }

    /// A round of queries to every live member.
    fn ask(
        &self,
        failed: Member,
        position: (u64, u64),
        takeover: &mut Takeover,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let members: BTreeSet<NodeId> = (0..=NodeId::MAX)
            .filter(|node| self.routing.is_live(*node))
            .collect();
        for member in &members {
            out.push((
                *member,
                Message::TakeoverQuery(TakeoverQuery {
                    asked_by: self.node,
                    failed_node: failed.node,
                    failed_incarnation: failed.incarnation,
                    generation: position.0,
                    version: position.1,
                }),
            ));
        }
        takeover
            .awaiting
            .retain(|node, _| self.routing.is_live(*node));
        for member in &members {
            *takeover.awaiting.entry(*member).or_insert(0) += 1;
        }
        takeover.asked = members;
    }

    fn on_takeover_report(
        &mut self,
        from: NodeId,
        report: TakeoverReport,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let failed = Member {
            node: report.failed_node,
            incarnation: report.failed_incarnation,
        };
        let Some(takeover) = self.takeovers.get_mut(&failed) else {
            return;
        };
        if !takeover.awaiting.contains_key(&from) {
            return;
        }
        for entry in report.entries {
            // Any failed incarnation of the node: `ClusterState::removed`
            // keeps only the newest, and an older one whose takeover a
            // failed president left unfinished is found with it.
            assert!(
                coordinator_node(entry.transaction) == failed.node,
                "a takeover report names transaction {} of another coordinator",
                entry.transaction
            );
            let state = takeover
                .found
                .entry(entry.transaction)
                .or_default()
                .entry((entry.table, entry.fragment))
                .or_insert(entry.state);
            *state = (*state).max(entry.state);
            if entry.epoch != 0 {
                // Every replica the Commit reached got the same epoch.
                let epoch = takeover
                    .epochs
                    .entry(entry.transaction)
                    .or_insert(entry.epoch);
                assert_eq!(
                    *epoch, entry.epoch,
                    "replicas name two epochs for transaction {}",
                    entry.transaction
                );
            }
        }
        for marker in report.markers {
            assert!(
                coordinator_node(marker.transaction) == failed.node,
                "a takeover report names the marker of transaction {} of another coordinator",
                marker.transaction
            );
            takeover
                .markers
                .insert(marker.transaction, (marker.api, marker.client));
        }
        if report.last {
            let queries = takeover.awaiting.get_mut(&from).expect("checked");
            *queries -= 1;
            if *queries == 0 {
                takeover.awaiting.remove(&from);
            }
        }
        self.finish_takeovers(out);
    }

    /// Takeovers every live replica has answered turn their transactions
    /// into ordinary ones, committing or aborting.
    fn finish_takeovers(&mut self, out: &mut Vec<(NodeId, Message)>) {
        // A member that failed during a round answers no more, and what it
        // did after its report (pass a Commit on to another replica) may
        // have changed what that replica reported: the round starts again
        // among the live members, once they have installed the failure.
        // What was found stays (a replica's state only moves forwards).
        let position = self.routing.version();
        let failed_during: Vec<Member> = self
            .takeovers
            .iter()
            .filter(|(_, takeover)| {
                takeover
                    .asked
                    .iter()
                    .any(|node| !self.routing.is_live(*node))
            })
            .map(|(failed, _)| *failed)
            .collect();
        for failed in failed_during {
            let mut takeover = self.takeovers.remove(&failed).expect("listed");
            self.takeover_counters.rounds_restarted += 1;
            self.ask(failed, position, &mut takeover, out);
            self.takeovers.insert(failed, takeover);
        }
        let ready: Vec<Member> = self
            .takeovers
            .iter()
            .filter(|(_, takeover)| takeover.awaiting.is_empty())
            .map(|(failed, _)| *failed)
            .collect();
        for failed in ready {
            let mut takeover = self.takeovers.remove(&failed).expect("listed");
            let ids: BTreeSet<u64> = takeover
                .found
                .keys()
                .chain(takeover.markers.keys())
                .copied()
                .collect();
            // Held while the transactions begin (one may finish at once).
            *self.takeovers_finishing.entry(failed).or_insert(0) += 1;
            for id in ids {
                let fragments = takeover.found.remove(&id).unwrap_or_default();
                let marker = takeover.markers.get(&id).copied();
                let epoch = takeover.epochs.get(&id).copied().unwrap_or(0);
                self.finish_taken_over(failed, id, fragments, marker, epoch, out);
            }
            self.release_takeover(failed);
        }
    }

    /// One taken-over transaction of `failed` finished: once none is left,
    /// the takeover is announced to the API nodes.
    fn release_takeover(&mut self, failed: Member) {
        let finishing = self
            .takeovers_finishing
            .get_mut(&failed)
            .expect("a taken-over transaction counts in its takeover");
        *finishing -= 1;
        if *finishing == 0 {
            self.takeovers_finishing.remove(&failed);
            self.takeover_counters.announced += 1;
            self.takeovers_done.push(failed);
        }
    }

    /// Finishes one transaction of a failed coordinator on every live
    /// replica: commits it if a replica holds its commit marker or began
    /// to commit it, else aborts it. The API named by a marker gets the
    /// committed answer from here (its id, no operation results); any
    /// other transaction has no API to answer (the API learns the rest
    /// from `TakeoverDone`).
    fn finish_taken_over(
        &mut self,
        failed: Member,
        id: u64,
        fragments: BTreeMap<(u32, u32), WorkState>,
        marker: Option<(NodeId, u64)>,
        epoch: u64,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        if let Some(transaction) = self.transactions.get_mut(&id) {
            // Taken over already: by this takeover (a report came twice),
            // or by another takeover of the same node (each finds the work
            // of every failed incarnation of the node). It is finishing,
            // and this takeover is not done before it is: announced
            // earlier, `TakeoverDone` would overtake the answer to its API,
            // which would take its commit as aborted.
            if transaction.takeover_of != Some(failed)
                && !transaction.also_announces.contains(&failed)
            {
                transaction.also_announces.push(failed);
                self.takeover_counters.shared_with_another_takeover += 1;
                *self
                    .takeovers_finishing
                    .get_mut(&failed)
                    .expect("held by finish_takeovers") += 1;
            }
            return;
        }
        // A marker is kept only where a Commit passed: the coordinator
        // had decided to commit.
        let commit = marker.is_some()
            || fragments
                .values()
                .any(|state| *state != WorkState::Prepared);
        let (api, client) = marker.unwrap_or((protocol::NO_API, id));
        let mut participants = Vec::with_capacity(fragments.len());
        for (table, fragment) in fragments.into_keys() {
            let chain = match self.routing.table(table) {
                Some(route) if (fragment as usize) < route.fragments.len() => {
                    self.routing.live_replicas(route, fragment)
                }
                // The table was dropped: its fragments and work are gone.
                _ => Vec::new(),
            };
            // A READ_BACKUP table's commit is answered only once Complete
            // reached its backups, as the coordinator that failed would
            // have (answered at Committed, a read at a backup right after
            // found the row older: the simulator's seeds 553040, 567652).
            let read_backup = self
                .routing
                .table(table)
                .is_some_and(|route| route.reads_any_replica());
            participants.push(Participant {
                table,
                fragment,
                chain,
                // Complete then reaches the primary too, which may keep a
                // note of its commit; one without a note passes it on.
                writes: true,
                read_backup,
                scanned: false,
                done: false,
                committer: None,
                committed_through_backups: false,
            });
        }
        self.transactions.insert(
            id,
            Transaction {
                api,
                client,
                stage: Stage::Open,
                next_operation: 0,
                operations: 0,
                batch: None,
                participants,
                outstanding: 0,
                answered: api == protocol::NO_API,
                error: None,
                scans: Vec::new(),
                active_ms: self.now_ms,
                reported_stuck: false,
                takeover_of: Some(failed),
                also_announces: Vec::new(),
                marked: false,
                epoch,
            },
        );
        *self
            .takeovers_finishing
            .get_mut(&failed)
            .expect("held by finish_takeovers") += 1;
        if commit {
            self.takeover_counters.committed += 1;
            self.send_commits(id, out);
        } else {
            self.takeover_counters.aborted += 1;
            self.abort(id, None, out);
        }
    }

    /// Adopts a new cluster state; transactions that used a node no longer
    /// in it are aborted or have their phase resent (see the module notes).
    pub fn install(&mut self, routing: &Routing, out: &mut Vec<(NodeId, Message)>) {
        // A node is lost if it left, or if it is back as a new incarnation
        // (states may be skipped: this node may never install the one that
        // removed the old incarnation, whose work and messages died with it).
        let mut lost_nodes = [false; NodeId::MAX as usize + 1];
        for node in 0..=NodeId::MAX {
            lost_nodes[usize::from(node)] = self.routing.is_live(node)
                && (!routing.is_live(node)
                    || routing.incarnation(node) != self.routing.incarnation(node));
        }
        self.routing = routing.clone();
        self.finish_takeovers(out);
        let mut ids: Vec<u64> = self.transactions.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.end_scans_on_lost_nodes(id, &lost_nodes, out);
            let transaction = &self.transactions[&id];
            let lost = |node: &NodeId| !routing.is_live(*node) || lost_nodes[usize::from(*node)];
            let uses_lost = transaction
                .participants
                .iter()
                .any(|p| p.chain.iter().any(lost))
                || transaction
                    .batch
                    .as_ref()
                    .is_some_and(|b| b.slots.iter().any(|s| !s.answered && lost(&s.first)));
            if !uses_lost {
                continue;
            }
            match transaction.stage {
                Stage::Open | Stage::Executing => {
                    self.abort(
                        id,
                        Some(reply(
                            ErrorCode::NodeFailure,
                            "a data node the transaction used failed",
                        )),
                        out,
                    );
                }
                Stage::Committing | Stage::Completing | Stage::Aborting => {
                    self.resend_phase(id, out);
                }
            }
        }
    }

    /// An API node disconnected: its open transactions are rolled back.
    pub fn on_api_failed(&mut self, api: NodeId, out: &mut Vec<(NodeId, Message)>) {
        let mut ids: Vec<u64> = self
            .transactions
            .iter()
            .filter(|(_, t)| t.api == api)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        for id in ids {
            let transaction = self.transactions.get_mut(&id).expect("listed");
            transaction.answered = true;
            if matches!(transaction.stage, Stage::Open | Stage::Executing) {
                self.abort(id, None, out);
            }
        }
        // Its answers will never be acknowledged, and no one waits for them.
        let mut unacknowledged: Vec<(NodeId, u64)> = self
            .acks_awaited
            .keys()
            .filter(|(owner, _)| *owner == api)
            .copied()
            .collect();
        unacknowledged.sort_unstable();
        for key in unacknowledged {
            self.acknowledged(key, out);
        }
        self.send_forgets(out);
    }

    /// The API has the answer of the commit it calls `key`: its markers
    /// are forgotten (in a list per node the caller sends, or at once
    /// when a list is full).
    fn acknowledged(&mut self, key: (NodeId, u64), out: &mut Vec<(NodeId, Message)>) {
        let Some(awaited) = self.acks_awaited.remove(&key) else {
            // A second acknowledgement, or of an answer that needed none.
            return;
        };
        for node in awaited.nodes.iter() {
            let list = self.forget.entry(node).or_default();
            list.push(awaited.transaction);
            if list.len() >= protocol::MARKER_IDS_MAX {
                let transactions = Box::new(std::mem::take(list));
                out.push((node, Message::ForgetMarkers { transactions }));
            }
        }
    }

    /// Sends every pending list of markers to forget.
    fn send_forgets(&mut self, out: &mut Vec<(NodeId, Message)>) {
        for (node, list) in std::mem::take(&mut self.forget) {
            if !self.routing.is_live(node) {
                // Its markers died with it.
                continue;
            }
            for chunk in list.chunks(protocol::MARKER_IDS_MAX) {
                out.push((
                    node,
                    Message::ForgetMarkers {
                        transactions: Box::new(chunk.to_vec()),
                    },
                ));
            }
        }
    }

    /// Advances the coordinator's clock to `now_ms` and aborts every
    /// transaction that has waited for its API longer than
    /// `inactive_timeout_ms` (NDB's TransactionInactiveTimeout), freeing
    /// its locks. The API gets NDB's 266 for it, as NDB's TC timer gives;
    /// a later request for it is refused (4350). The runtime calls this
    /// periodically; the accuracy of the timeout is the calling interval.
    pub fn tick(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        // A clock that goes backwards would make every transaction look
        // fresh: the runtimes pass a monotonic clock.
        assert!(now_ms >= self.now_ms, "the coordinator's clock went back");
        self.now_ms = now_ms;
        let mut unacknowledged: Vec<(NodeId, u64)> = self
            .acks_awaited
            .iter()
            .filter(|(_, awaited)| now_ms.saturating_sub(awaited.since_ms) > COMMIT_ACK_TIMEOUT_MS)
            .map(|(key, _)| *key)
            .collect();
        unacknowledged.sort_unstable();
        self.counters.acks_timed_out += unacknowledged.len() as u64;
        for key in unacknowledged {
            self.acknowledged(key, out);
        }
        self.send_forgets(out);
        let timeout_ms = self.config.inactive_timeout_ms;
        if timeout_ms == 0 {
            return;
        }
        let mut expired: Vec<u64> = self
            .transactions
            .iter()
            .filter(|(_, t)| t.stage == Stage::Open && !t.answered)
            .filter(|(_, t)| now_ms.saturating_sub(t.active_ms) > timeout_ms)
            // A scan waiting for rows from a replica (one cut off, say)
            // is the cluster's wait, not the API's: a node failure or
            // the API's own deadline ends it.
            .filter(|(_, t)| {
                !t.scans
                    .iter()
                    .any(|scan| scan.fragments.iter().any(|f| f.awaiting_rows))
            })
            .map(|(id, _)| *id)
            .collect();
        expired.sort_unstable();
        for id in expired {
            let transaction = &self.transactions[&id];
            let error = reply(
                ErrorCode::LockWaitTimeout,
                format!(
                    "transaction {} of API node {} was idle for more than {timeout_ms} ms \
                     (TransactionInactiveTimeout) and was aborted",
                    transaction.client, transaction.api
                ),
            );
            self.abort(id, Some(error), out);
        }
    }

    /// Transactions that have waited for the cluster (an operation, a
    /// commit, complete or abort phase) longer than `older_than_ms` since
    /// their API last heard from them, described for the node's log: a
    /// call that hangs is a bug, and the log should show where it waits.
    /// Each transaction is described once.
    pub fn describe_stuck(&mut self, older_than_ms: u64) -> Vec<String> {
        let now_ms = self.now_ms;
        let mut stuck: Vec<(u64, String)> = Vec::new();
        for (id, transaction) in self.transactions.iter_mut() {
            if transaction.stage == Stage::Open
                || transaction.answered
                || transaction.reported_stuck
                || now_ms.saturating_sub(transaction.active_ms) <= older_than_ms
            {
                continue;
            }
            transaction.reported_stuck = true;
            stuck.push((*id, describe(*id, transaction, now_ms)));
        }
        stuck.sort_unstable();
        stuck.into_iter().map(|(_, line)| line).collect()
    }

    /// Every transaction here, described (for a checker's report).
    pub fn describe_transactions(&self) -> Vec<String> {
        let mut all: Vec<(u64, String)> = self
            .transactions
            .iter()
            .map(|(id, transaction)| (*id, describe(*id, transaction, self.now_ms)))
            .collect();
        all.sort_unstable();
        all.into_iter().map(|(_, line)| line).collect()
    }

    /// Handles a message for the coordinator. Returns it back if it is not one.
    pub fn on_message(
        &mut self,
        from: NodeId,
        message: Message,
        out: &mut Vec<(NodeId, Message)>,
    ) -> Option<Message> {
        match message {
            Message::Execute(execute) => self.on_execute(from, execute, out),
            Message::KeyConfirm(confirm) => self.on_key_confirm(confirm, out),
            Message::KeyRefuse(refuse) => self.on_key_refuse(refuse, out),
            Message::Committed(done) => self.on_phase_done(Stage::Committing, done, out),
            Message::Completed(done) => self.on_phase_done(Stage::Completing, done, out),
            Message::Aborted(done) => self.on_phase_done(Stage::Aborting, done, out),
            Message::TakeoverReport(report) => self.on_takeover_report(from, *report, out),
            Message::CommitAck { transactions } if !self.routing.is_live(from) => {
                for client in transactions.iter() {
                    self.acknowledged((from, *client), out);
                }
                // One list per node for the API's batch of acknowledgements.
                self.send_forgets(out);
            }
            Message::ScanOpen(open) => self.on_scan_open(from, *open, out),
            Message::ScanRows(rows) => self.on_scan_rows(rows, out),
            // ScanNext and ScanClose also go from a coordinator to the query
            // handlers: from a data node they are the query handler's.
            Message::ScanNext(next) if !self.routing.is_live(from) => {
                self.on_scan_next(from, next, out)
            }
            Message::ScanClose { transaction, scan } if !self.routing.is_live(from) => {
                self.on_scan_close(from, transaction, scan, out)
            }
            other => return Some(other),
        }
        None
    }

    fn answer(
        &self,
        (api, client): (NodeId, u64),
        state: TransactionState,
        error: Option<ErrorReply>,
        (results, hops): (Vec<OperationResult>, u32),
        (acknowledge, epoch): (bool, u64),
        out: &mut Vec<(NodeId, Message)>,
    ) {
        assert!(
            epoch == 0 || state == TransactionState::Committed,
            "only a commit has an epoch"
        );
        out.push((
            api,
            Message::Executed(Executed {
                transaction: client,
                state,
                error,
                results,
                hops,
                acknowledge,
                epoch,
            }),
        ));
    }

    /// Finds the transaction for an API's id, or starts one if the API's
    /// request says it starts the transaction. A request that continues a
    /// transaction this coordinator no longer has (it timed out, or a node
    /// it used failed) is refused: starting afresh would commit the second
    /// half of a transaction whose first half was rolled back.
    fn transaction_for(
        &mut self,
        api: NodeId,
        client: u64,
        start: bool,
    ) -> Result<u64, ErrorReply> {
        if let Some(id) = self.clients.get(&(api, client)).copied() {
            let transaction = self.transactions.get_mut(&id).expect("mapped");
            transaction.active_ms = self.now_ms;
            return Ok(id);
        }
        if !start {
            return Err(reply(
                ErrorCode::NoSuchTransaction,
                format!(
                    "node {} has no transaction {client} of API node {api}: it was aborted \
                     (idle longer than TransactionInactiveTimeout, or a node failed)",
                    self.node
                ),
            ));
        }
        if !self.routing.is_started(self.node) {
            return Err(reply(
                ErrorCode::NotMember,
                format!(
                    "data node {} is not a started member of the cluster yet (or no longer): \
                     it may still be copying its fragments",
                    self.node
                ),
            ));
        }
        if self.draining {
            return Err(reply(
                ErrorCode::NodeShutdown,
                format!(
                    "data node {} takes no new transactions: the cluster is shutting down",
                    self.node
                ),
            ));
        }
        if !self.serving {
            return Err(reply(
                ErrorCode::NotMember,
                format!(
                    "data node {} has no agreement with the cluster within ArbitrationTimeout \
                     (it may be on the losing side of a split); try another node or again",
                    self.node
                ),
            ));
        }
        if self.acks_awaited.len() >= self.config.transactions_max as usize {
            return Err(reply(
                ErrorCode::TooManyTransactions,
                format!(
                    "node {} has {} committed transactions whose API nodes have not \
                     acknowledged the answer (MaxNoOfConcurrentTransactions)",
                    self.node, self.config.transactions_max
                ),
            ));
        }
        if self.transactions.len() >= self.config.transactions_max as usize {
            return Err(reply(
                ErrorCode::TooManyTransactions,
                format!(
                    "node {} coordinates {} transactions, its MaxNoOfConcurrentTransactions",
                    self.node, self.config.transactions_max
                ),
            ));
        }
        // At most `transactions_max` ids are in use, so this ends.
        let id = loop {
            let id = self.transaction_base | u64::from(self.next_sequence);
            self.next_sequence = self.next_sequence.wrapping_add(1);
            if !self.transactions.contains_key(&id) {
                break id;
            }
        };
        assert_eq!(
            id >> 32,
            self.transaction_base >> 32,
            "a transaction id carried into the node's bits"
        );
        self.counters.transactions += 1;
        self.transactions.insert(
            id,
            Transaction {
                api,
                client,
                stage: Stage::Open,
                next_operation: 0,
                operations: 0,
                batch: None,
                participants: Vec::new(),
                outstanding: 0,
                answered: false,
                error: None,
                scans: Vec::new(),
                active_ms: self.now_ms,
                reported_stuck: false,
                takeover_of: None,
                also_announces: Vec::new(),
                marked: false,
                epoch: 0,
            },
        );
        self.clients.insert((api, client), id);
        Ok(id)
    }

    fn on_execute(&mut self, api: NodeId, execute: Execute, out: &mut Vec<(NodeId, Message)>) {
        let client = execute.transaction;
        if execute.end == ExecuteEnd::Rollback && !self.clients.contains_key(&(api, client)) {
            // Nothing of it is here (it never started here, as after a
            // refused scan, or it was already aborted): what the API asked
            // for holds, so the answer is a plain abort, not an error.
            self.answer(
                (api, client),
                TransactionState::Aborted,
                None,
                (Vec::new(), 0),
                (false, 0),
                out,
            );
            return;
        }
        let id = match self.transaction_for(api, client, execute.start) {
            Ok(id) => id,
            Err(error) => {
                self.answer(
                    (api, client),
                    TransactionState::Aborted,
                    Some(error),
                    (Vec::new(), 0),
                    (false, 0),
                    out,
                );
                return;
            }
        };
        let transaction = self.transactions.get_mut(&id).expect("just found");
        if transaction.stage == Stage::Aborting {
            // The coordinator is already aborting it (a node it used
            // failed): the API's request is answered when the abort ends,
            // with Aborted. A rollback is what the API asked for, so it
            // gets no error; any other batch gets the abort's reason.
            if execute.end == ExecuteEnd::Rollback {
                transaction.error = None;
            }
            if transaction.answered {
                // Its API failed and came back: the abort's end tells it
                // nothing, so it hears now.
                let error = transaction.error.clone();
                self.answer(
                    (api, client),
                    TransactionState::Aborted,
                    error,
                    (Vec::new(), 0),
                    (false, 0),
                    out,
                );
            }
            return;
        }
        if execute.end == ExecuteEnd::Rollback && transaction.stage == Stage::Executing {
            // The API gave up on its batch (a timeout, or the transaction
            // was dropped): abort now rather than run it to the end.
            self.abort(id, None, out);
            return;
        }
        if transaction.stage != Stage::Open {
            // An API that sends a batch before the last one was answered
            // breaks the protocol; this execute is refused and not run, and
            // the transaction goes on with the batch it has (its answer
            // still comes).
            let error = reply(
                ErrorCode::TransactionBusy,
                format!("transaction {client} is still running a batch; this execute was not run"),
            );
            self.answer(
                (api, client),
                TransactionState::Open,
                Some(error),
                (Vec::new(), 0),
                (false, 0),
                out,
            );
            return;
        }
        if execute.end == ExecuteEnd::Rollback {
            self.abort(id, None, out);
            return;
        }
        let count = execute.operations.len() as u32;
        if self.operations_in_use.saturating_add(count) > self.config.operations_max {
            let error = reply(
                ErrorCode::TooManyCoordinatorOperations,
                format!(
                    "node {} has {} operations in open transactions; {count} more exceed \
                     MaxNoOfConcurrentOperations ({})",
                    self.node, self.operations_in_use, self.config.operations_max
                ),
            );
            self.abort(id, Some(error), out);
            return;
        }
        self.operations_in_use += count;
        transaction.operations += count;
        let first = transaction.next_operation;
        transaction.next_operation += count;
        transaction.stage = Stage::Executing;
        transaction.batch = Some(Batch {
            first,
            end: execute.end,
            slots: Vec::with_capacity(execute.operations.len()),
            results: vec![OperationResult::default(); execute.operations.len()],
            outstanding: count,
            hops: 0,
        });
        for (index, operation) in execute.operations.into_iter().enumerate() {
            self.send_operation(id, operation, index as u32, Follow::Answer, out);
            // A failed operation may have aborted the transaction already.
            if self
                .transactions
                .get(&id)
                .is_none_or(|t| t.stage != Stage::Executing)
            {
                return;
            }
        }
        self.finish_batch_if_done(id, out);
    }

    /// Routes one operation and sends it, or fails it at once. It takes
    /// the batch's next operation number; `result` is the batch result it
    /// answers.
    fn send_operation(
        &mut self,
        id: u64,
        mut operation: Operation,
        result: u32,
        mut follow: Follow,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        self.counters.operations += 1;
        let route = match self.routing.table(operation.table) {
            Some(route) if route.base_table.is_none() || follow.is_internal() => route,
            _ => {
                let error = reply(
                    ErrorCode::NoSuchTable,
                    format!("no table with id {}", operation.table),
                );
                self.fail_operation_early(id, &operation, result, follow, error, out);
                return;
            }
        };
        let route = if let Some(position) = operation.index {
            match unique::lookup(route, &mut operation) {
                Ok((found, then)) => {
                    operation = found;
                    follow = Follow::Lookup {
                        position,
                        then: Box::new(then),
                    };
                    let index = route.unique_index(position).expect("checked by lookup");
                    self.routing
                        .table(index.table)
                        .expect("installed with its base")
                }
                Err(error) => {
                    self.fail_operation_early(
                        id,
                        &operation,
                        result,
                        follow,
                        reply_for(&error),
                        out,
                    );
                    return;
                }
            }
        } else {
            route
        };
        if operation.kind.is_write() {
            operation.columns.clear();
            if !route.unique_indexes.is_empty() {
                // The row before the write, for the index rows (see `unique`).
                operation.columns.clone_from(&route.unique_columns);
                follow = Follow::Maintain(Box::new(Operation {
                    table: operation.table,
                    kind: operation.kind,
                    key: operation.key.clone(),
                    values: operation.values.clone(),
                    ..Operation::default()
                }));
            }
        }
        let partition = match route.partition_of_key(&operation.key, &mut self.key_scratch) {
            Ok(partition) => partition,
            Err(error) => {
                self.fail_operation_early(id, &operation, result, follow, reply_for(&error), out);
                return;
            }
        };
        let fragment = route.fragment_near(partition, self.node);
        let transaction = self.transactions.get_mut(&id).expect("executing");
        let chain = match plan_chain(
            &self.routing,
            route,
            fragment,
            operation.kind,
            self.node,
            transaction,
        ) {
            Some(chain) => chain,
            None => {
                let error = reply(
                    ErrorCode::NodeFailure,
                    format!(
                        "no live replica of fragment {fragment} of table {}",
                        route.name
                    ),
                );
                self.fail_operation_early(id, &operation, result, follow, error, out);
                return;
            }
        };
        let first = chain[0];
        let batch = transaction.batch.as_mut().expect("executing");
        let number = batch.first + batch.slots.len() as u32;
        batch.slots.push(OperationSlot {
            ignore_error: operation.ignore_error,
            first,
            answered: false,
            result,
            follow,
        });
        if first == self.node {
            self.counters.local_operations += 1;
        } else {
            self.counters.remote_operations += 1;
            batch.hops += 1;
        }
        let request = KeyRequest {
            transaction: id,
            coordinator: self.node,
            operation: number,
            table: operation.table,
            fragment,
            kind: operation.kind,
            key: operation.key,
            values: operation.values,
            columns: operation.columns,
            ignore_error: operation.ignore_error,
            chain: Chain::from_slice(&chain[1..]),
            planned: self.routing.version().1,
            before: None,
        };
        out.push((first, Message::KeyRequest(request)));
    }

    /// An operation that could not be routed: it fails without leaving.
    fn fail_operation_early(
        &mut self,
        id: u64,
        operation: &Operation,
        result: u32,
        follow: Follow,
        error: ErrorReply,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let transaction = self.transactions.get_mut(&id).expect("executing");
        let batch = transaction.batch.as_mut().expect("executing");
        let number = batch.first + batch.slots.len() as u32;
        batch.slots.push(OperationSlot {
            ignore_error: operation.ignore_error,
            first: self.node,
            answered: false,
            result,
            follow,
        });
        self.on_key_refuse(
            KeyRefuse {
                transaction: id,
                operation: number,
                node: self.node,
                error,
            },
            out,
        );
    }

    /// Marks operation `number` of the transaction's running batch answered
    /// and returns the batch and the operation's index in it; `None` for an
    /// answer that is late (the batch ended) or repeated.
    fn take_answer(&mut self, id: u64, number: u32) -> Option<(&mut Batch, usize)> {
        let transaction = self.transactions.get_mut(&id)?;
        if transaction.stage != Stage::Executing {
            return None;
        }
        let batch = transaction.batch.as_mut()?;
        let index = number.checked_sub(batch.first)? as usize;
        if batch.slots.get(index).is_none_or(|slot| slot.answered) {
            return None;
        }
        batch.slots[index].answered = true;
        assert!(
            batch.outstanding > 0,
            "an answer the batch did not wait for"
        );
        batch.outstanding -= 1;
        Some((batch, index))
    }

    fn on_key_confirm(&mut self, confirm: KeyConfirm, out: &mut Vec<(NodeId, Message)>) {
        let id = confirm.transaction;
        let Some((batch, index)) = self.take_answer(id, confirm.operation) else {
            return;
        };
        let result = batch.slots[index].result;
        match std::mem::replace(&mut batch.slots[index].follow, Follow::Answer) {
            Follow::Answer => batch.results[result as usize].data = confirm.data,
            Follow::IndexInsert | Follow::IndexDelete => {}
            Follow::Lookup { position, then } => {
                // The cluster state may have changed since the lookup was
                // routed: a table dropped meanwhile fails the transaction.
                let Some((route, index)) = self
                    .routing
                    .table(then.table)
                    .and_then(|route| Some((route, route.unique_index(position)?)))
                else {
                    self.abort(id, Some(table_gone(then.table)), out);
                    return;
                };
                match unique::base_key(route, index, &confirm.data) {
                    Ok(key) => {
                        let then = Operation { key, ..*then };
                        if !self.add_operation(id, then, result, Follow::Answer, out) {
                            return;
                        }
                    }
                    Err(error) => {
                        self.abort(id, Some(reply_for(&error)), out);
                        return;
                    }
                }
            }
            Follow::Maintain(write) => {
                let Some(route) = self.routing.table(write.table) else {
                    self.abort(id, Some(table_gone(write.table)), out);
                    return;
                };
                let changes = match unique::maintenance(route, &write, &confirm.data) {
                    Ok(changes) => changes,
                    Err(error) => {
                        self.abort(id, Some(reply_for(&error)), out);
                        return;
                    }
                };
                for change in changes {
                    let follow = if change.kind == OperationKind::Insert {
                        Follow::IndexInsert
                    } else {
                        Follow::IndexDelete
                    };
                    if !self.add_operation(id, change, result, follow, out) {
                        return;
                    }
                }
            }
        }
        self.finish_batch_if_done(id, out);
    }

    /// Adds an operation of the coordinator's own to the running batch (a
    /// unique-index step) and sends it. Returns false when the transaction
    /// is no longer executing (the operation limit aborted it, or the
    /// operation failed and aborted it).
    fn add_operation(
        &mut self,
        id: u64,
        operation: Operation,
        result: u32,
        follow: Follow,
        out: &mut Vec<(NodeId, Message)>,
    ) -> bool {
        if self.operations_in_use >= self.config.operations_max {
            let error = reply(
                ErrorCode::TooManyCoordinatorOperations,
                format!(
                    "node {} has {} operations in open transactions, its \
                     MaxNoOfConcurrentOperations; unique-index upkeep needs more",
                    self.node, self.operations_in_use
                ),
            );
            self.abort(id, Some(error), out);
            return false;
        }
        self.operations_in_use += 1;
        let transaction = self.transactions.get_mut(&id).expect("executing");
        transaction.operations += 1;
        let batch = transaction.batch.as_mut().expect("executing");
        assert_eq!(
            transaction.next_operation,
            batch.first + batch.slots.len() as u32,
            "added operations number on from the batch"
        );
        transaction.next_operation += 1;
        batch.outstanding += 1;
        self.send_operation(id, operation, result, follow, out);
        self.transactions
            .get(&id)
            .is_some_and(|t| t.stage == Stage::Executing)
    }

    fn on_key_refuse(&mut self, refuse: KeyRefuse, out: &mut Vec<(NodeId, Message)>) {
        let Some((batch, index)) = self.take_answer(refuse.transaction, refuse.operation) else {
            return;
        };
        let slot = &batch.slots[index];
        let mut error = refuse.error;
        if matches!(slot.follow, Follow::IndexInsert)
            && error.ndb_code == ErrorCode::DuplicateKey.ndb_code().expect("has one")
        {
            error = reply(
                ErrorCode::UniqueViolation,
                "another row has this unique index key",
            );
        }
        batch.results[slot.result as usize].error = error.ndb_code;
        // A backup failing after its primary changed the row cannot be
        // ignored: the replicas would differ. Index upkeep is never
        // ignorable: its base row has changed. Nor is a routing refused for
        // being planned on an old state (1204): the retry must route the
        // whole transaction afresh, not go on without the operation. Nor a
        // replica's refusal to serve at all (4035, no membership lease):
        // it says nothing about the row.
        let distribution_changed =
            error.ndb_code == ErrorCode::DistributionChanged.ndb_code().expect("has one");
        let not_member = error.ndb_code == ErrorCode::NotMember.ndb_code().expect("has one");
        let ignorable =
            slot.ignore_error && refuse.node == slot.first && !distribution_changed && !not_member;
        if ignorable {
            self.finish_batch_if_done(refuse.transaction, out);
        } else {
            self.abort(refuse.transaction, Some(error), out);
        }
    }

    fn finish_batch_if_done(&mut self, id: u64, out: &mut Vec<(NodeId, Message)>) {
        let transaction = self.transactions.get_mut(&id).expect("present");
        let Some(batch) = transaction.batch.as_ref() else {
            return;
        };
        if batch.outstanding > 0 {
            return;
        }
        match batch.end {
            ExecuteEnd::Commit => self.commit(id, out),
            _ => {
                let batch = transaction.batch.take().expect("checked");
                transaction.stage = Stage::Open;
                transaction.active_ms = self.now_ms;
                let (api, client) = (transaction.api, transaction.client);
                self.answer(
                    (api, client),
                    TransactionState::Open,
                    None,
                    (batch.results, batch.hops),
                    (false, 0),
                    out,
                );
            }
        }
    }

    fn commit(&mut self, id: u64, out: &mut Vec<(NodeId, Message)>) {
        let transaction = self.transactions.get_mut(&id).expect("present");
        // Only a batch whose every operation was confirmed or refused (and
        // no refusal aborted) commits: a replica then has nothing waiting.
        assert_eq!(transaction.stage, Stage::Executing, "commit after a batch");
        let batch = transaction.batch.as_ref().expect("commit ends a batch");
        assert_eq!(batch.outstanding, 0, "commit with operations unanswered");
        assert!(
            batch.slots.iter().all(|slot| slot.answered),
            "commit with an operation unanswered"
        );
        assert!(transaction.error.is_none(), "commit after an error");
        // A node failure while preparing aborts, so every chain is whole.
        assert!(
            transaction.participants.iter().all(|p| !p.chain.is_empty()),
            "commit of a fragment without replicas"
        );
        self.send_commits(id, out);
    }

    /// The commit phase: Commit along every participant's live chain, in
    /// the transaction's epoch; a commit not yet in one is decided in the
    /// current epoch, or waits for one (`set_commit_epoch`) while the
    /// epochs change.
    fn send_commits(&mut self, id: u64, out: &mut Vec<(NodeId, Message)>) {
        let transaction = self.transactions.get_mut(&id).expect("present");
        if transaction.epoch == 0 {
            // `close` aborted every own transaction that could get here.
            assert!(
                !self.closed || transaction.takeover_of.is_some(),
                "transaction {id} decided to commit after close"
            );
            let leased = self.holds_lease || transaction.takeover_of.is_some();
            let Some(epoch) = self.commit_epoch.filter(|_| leased) else {
                self.awaiting_epoch.push(id);
                return;
            };
            transaction.epoch = epoch;
            if let Some(decisions) = self.decisions.as_mut() {
                decisions.push((id, epoch));
            }
        }
        let epoch = transaction.epoch;
        transaction.stage = Stage::Committing;
        // A fragment with no live replica left has nothing to commit.
        for participant in &mut transaction.participants {
            participant.done = participant.chain.is_empty();
        }
        transaction.outstanding =
            transaction.participants.iter().filter(|p| !p.done).count() as u32;
        if transaction.outstanding == 0 {
            self.finish(id, TransactionState::Committed, out);
            return;
        }
        let waiting = marker_of(transaction);
        transaction.marked |= waiting.0 != protocol::NO_API;
        for participant in transaction.participants.iter_mut().filter(|p| !p.done) {
            participant.done = false;
            participant.committer = Some(participant.chain[0]);
            participant.committed_through_backups |= participant.chain.len() > 1;
            out.push(commit_message(id, self.node, participant, waiting, epoch));
        }
    }

    /// The epoch commits are decided in from now on; `None` while the
    /// epochs change (`cluster::epochs`): commits wait meanwhile, and those
    /// that waited go out once there is one.
    pub fn set_commit_epoch(&mut self, epoch: Option<u64>, out: &mut Vec<(NodeId, Message)>) {
        if let (Some(now), Some(before)) = (epoch, self.commit_epoch) {
            assert!(
                now >= before,
                "the commit epoch went down: {before} to {now}"
            );
        }
        self.commit_epoch = epoch;
        if epoch.is_none() {
            return;
        }
        self.send_awaiting(out);
    }

    /// Whether this node holds its membership lease now (see
    /// `holds_lease`); commits that waited for it go out once it does.
    pub fn set_lease(&mut self, holds: bool, out: &mut Vec<(NodeId, Message)>) {
        let regained = holds && !self.holds_lease;
        self.holds_lease = holds;
        if regained && self.commit_epoch.is_some() {
            self.send_awaiting(out);
        }
    }

    /// Whether commits of this coordinator wait for the lease: it does not
    /// hold it, and some commit waits (for it or for an epoch).
    pub fn commits_wait_for_lease(&self) -> bool {
        !self.holds_lease && !self.awaiting_epoch.is_empty()
    }

    /// Sends the commits that waited for an epoch or the lease (those not
    /// sendable yet wait again).
    fn send_awaiting(&mut self, out: &mut Vec<(NodeId, Message)>) {
        for id in std::mem::take(&mut self.awaiting_epoch) {
            // Aborted meanwhile (a node failure, the API gone): gone or
            // no longer about to commit.
            let waits = self.transactions.get(&id).is_some_and(|t| {
                t.epoch == 0 && t.stage != Stage::Committing && t.stage != Stage::Aborting
            });
            if waits {
                self.send_commits(id, out);
            }
        }
    }

    /// No commit of an epoch below `epoch` is on its way to its replicas
    /// here, and no takeover (whose transactions may be) is running: every
    /// such commit is in every replica's redo log.
    pub fn commits_settled_below(&self, epoch: u64) -> bool {
        self.takeovers.is_empty()
            && self.takeovers_finishing.is_empty()
            && !self
                .transactions
                .values()
                .any(|t| t.stage == Stage::Committing && t.epoch < epoch)
    }

    /// Commits waiting for an epoch (while the epochs change) or for the
    /// membership lease (`set_lease`).
    pub fn awaiting_epoch(&self) -> usize {
        self.awaiting_epoch.len()
    }

    /// Keeps each commit decision (transaction, epoch) for
    /// `take_decisions`: the simulator checks that decisions never go down
    /// an epoch, cluster-wide.
    pub fn record_decisions(&mut self, record: bool) {
        self.decisions = record.then(Vec::new);
    }

    pub fn take_decisions(&mut self) -> Vec<(u64, u64)> {
        self.decisions
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn complete(&mut self, id: u64, out: &mut Vec<(NodeId, Message)>) {
        let transaction = self.transactions.get_mut(&id).expect("present");
        // Complete starts only once every fragment's primary committed.
        assert_eq!(
            transaction.stage,
            Stage::Committing,
            "complete after commit"
        );
        assert_eq!(
            transaction.outstanding, 0,
            "complete with commits unanswered"
        );
        assert!(
            transaction.participants.iter().all(|p| p.done),
            "complete before every fragment committed"
        );
        transaction.stage = Stage::Completing;
        let mut outstanding = 0;
        let mut reply_after_complete = false;
        for participant in &mut transaction.participants {
            let targets = complete_targets(participant);
            if targets.is_empty() {
                participant.done = true;
            } else {
                participant.done = false;
                outstanding += 1;
                reply_after_complete |= participant.writes && participant.read_backup;
                out.push(complete_message(id, self.node, participant, targets));
            }
        }
        transaction.outstanding = outstanding;
        if outstanding == 0 {
            self.finish(id, TransactionState::Committed, out);
        } else if !reply_after_complete {
            self.answer_final(id, TransactionState::Committed, out);
        }
    }

    /// Aborts the transaction on every fragment it touched; the API gets
    /// `error` (none for a rollback it asked for) once all replicas undid.
    fn abort(&mut self, id: u64, error: Option<ErrorReply>, out: &mut Vec<(NodeId, Message)>) {
        let Some(transaction) = self.transactions.get_mut(&id) else {
            return;
        };
        if transaction.stage == Stage::Aborting {
            return;
        }
        // Once Commit went out, a primary may have made the change visible:
        // the transaction can only go forwards.
        assert!(
            matches!(transaction.stage, Stage::Open | Stage::Executing),
            "abort of transaction {id} in stage {:?}",
            transaction.stage
        );
        transaction.stage = Stage::Aborting;
        if transaction.error.is_none() {
            transaction.error = error;
        }
        self.tell_scans_of_abort(id, out);
        self.close_scans(id, out);
        let node = self.node;
        let routing = &self.routing;
        let transaction = self.transactions.get_mut(&id).expect("present");
        let mut outstanding = 0;
        for participant in &mut transaction.participants {
            // A failed replica would swallow the Abort (and a failed backup
            // the forwarded one): the abort goes along the live chain, and a
            // fragment with no live replica has nothing left to undo.
            participant
                .chain
                .retain(|replica| routing.is_live(*replica));
            if participant.chain.is_empty() {
                participant.done = true;
                continue;
            }
            participant.done = false;
            outstanding += 1;
            out.push(abort_message(id, node, participant));
        }
        transaction.outstanding = outstanding;
        if outstanding == 0 {
            self.finish(id, TransactionState::Aborted, out);
        }
    }

    /// A transaction aborted for a reason of its own (not a rollback the
    /// API asked for) ends its open scans with that reason, so an API
    /// waiting for a scan's rows gets its answer there.
    fn tell_scans_of_abort(&mut self, id: u64, out: &mut Vec<(NodeId, Message)>) {
        let transaction = &self.transactions[&id];
        let Some(error) = transaction.error.clone() else {
            return;
        };
        if transaction.answered {
            return;
        }
        for scan in &transaction.scans {
            out.push((
                transaction.api,
                Message::ScanRows(ScanRows::failed(
                    transaction.client,
                    scan.scan,
                    scan.fragments.first().map_or(0, |f| f.fragment),
                    error.clone(),
                )),
            ));
        }
    }

    /// Scans with a fragment on a node that failed end at once: the API
    /// gets 4010 for the scan, the live fragments are closed. A
    /// committed-read scan makes no participant, so without this its API
    /// would wait for rows that never come.
    fn end_scans_on_lost_nodes(
        &mut self,
        id: u64,
        lost_nodes: &[bool],
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let routing = &self.routing;
        let gone = |node: NodeId| !routing.is_live(node) || lost_nodes[usize::from(node)];
        let transaction = self.transactions.get_mut(&id).expect("present");
        let mut position = 0;
        while position < transaction.scans.len() {
            let lost = transaction.scans[position]
                .fragments
                .iter()
                .find(|f| !f.finished && gone(f.node))
                .map(|f| (f.fragment, f.node));
            let Some((fragment, node)) = lost else {
                position += 1;
                continue;
            };
            let mut scan = transaction.scans.remove(position);
            for entry in &mut scan.fragments {
                if gone(entry.node) {
                    entry.finished = true;
                }
            }
            close_fragments(id, &scan, out);
            assert!(self.scans_in_use > 0, "scans in use undercounted");
            self.scans_in_use -= 1;
            if !transaction.answered {
                out.push((
                    transaction.api,
                    Message::ScanRows(ScanRows::failed(
                        transaction.client,
                        scan.scan,
                        fragment,
                        reply(
                            ErrorCode::NodeFailure,
                            format!("data node {node} failed while it scanned fragment {fragment}"),
                        ),
                    )),
                ));
            }
        }
    }

    fn resend_phase(&mut self, id: u64, out: &mut Vec<(NodeId, Message)>) {
        let transaction = self.transactions.get_mut(&id).expect("present");
        let stage = transaction.stage;
        let waiting = marker_of(transaction);
        if stage == Stage::Committing {
            transaction.marked |= waiting.0 != protocol::NO_API;
        }
        for participant in &mut transaction.participants {
            participant.chain.retain(|node| self.routing.is_live(*node));
            if participant.done {
                continue;
            }
            if participant.chain.is_empty() {
                // Every replica of the fragment is gone: the cluster has
                // failed, but this transaction need not wait for it.
                participant.done = true;
                assert!(transaction.outstanding > 0, "a fragment done twice");
                transaction.outstanding -= 1;
                continue;
            }
            match stage {
                Stage::Committing => {
                    participant.committer = Some(participant.chain[0]);
                    participant.committed_through_backups |= participant.chain.len() > 1;
                    out.push(commit_message(
                        id,
                        self.node,
                        participant,
                        waiting,
                        transaction.epoch,
                    ));
                }
                Stage::Completing => {
                    // A backup that only prepared in the commit phase
                    // still holds its locks: when the replica that
                    // committed failed, every live one gets Complete.
                    let targets = complete_targets(participant);
                    if targets.is_empty() {
                        participant.done = true;
                        assert!(transaction.outstanding > 0, "a fragment done twice");
                        transaction.outstanding -= 1;
                    } else {
                        out.push(complete_message(id, self.node, participant, targets));
                    }
                }
                Stage::Aborting => out.push(abort_message(id, self.node, participant)),
                Stage::Open | Stage::Executing => unreachable!("resend in a phase only"),
            }
        }
        if transaction.outstanding == 0 {
            self.advance(id, stage, out);
        }
    }

    fn on_phase_done(&mut self, stage: Stage, done: PhaseDone, out: &mut Vec<(NodeId, Message)>) {
        let Some(transaction) = self.transactions.get_mut(&done.transaction) else {
            return;
        };
        if transaction.stage != stage {
            return;
        }
        let Some(participant) = transaction
            .participants
            .iter_mut()
            .find(|p| p.table == done.table && p.fragment == done.fragment && !p.done)
        else {
            return;
        };
        participant.done = true;
        assert!(transaction.outstanding > 0, "a fragment done twice");
        transaction.outstanding -= 1;
        if transaction.outstanding == 0 {
            self.advance(done.transaction, stage, out);
        }
    }

    fn advance(&mut self, id: u64, finished: Stage, out: &mut Vec<(NodeId, Message)>) {
        let transaction = &self.transactions[&id];
        assert_eq!(
            transaction.stage, finished,
            "advance from the current phase"
        );
        assert_eq!(
            transaction.outstanding, 0,
            "advance with fragments unanswered"
        );
        match finished {
            Stage::Committing => self.complete(id, out),
            Stage::Completing => self.finish(id, TransactionState::Committed, out),
            Stage::Aborting => self.finish(id, TransactionState::Aborted, out),
            Stage::Open | Stage::Executing => unreachable!("no phase to advance"),
        }
    }

    /// Answers the API (if it has no answer yet) with the transaction's end.
    fn answer_final(&mut self, id: u64, state: TransactionState, out: &mut Vec<(NodeId, Message)>) {
        assert_ne!(
            state,
            TransactionState::Open,
            "a final answer ends the transaction"
        );
        let transaction = self.transactions.get_mut(&id).expect("present");
        // Committed is said only once every primary committed; Aborted
        // only while aborting.
        match state {
            TransactionState::Committed => assert!(
                matches!(transaction.stage, Stage::Committing | Stage::Completing),
                "Committed answered in stage {:?}",
                transaction.stage
            ),
            TransactionState::Aborted => assert_eq!(transaction.stage, Stage::Aborting),
            TransactionState::Open => unreachable!("asserted above"),
        }
        if transaction.answered {
            return;
        }
        transaction.answered = true;
        self.clients.remove(&(transaction.api, transaction.client));
        let (results, hops) = match transaction.batch.take() {
            Some(batch) => (batch.results, batch.hops),
            None => (Vec::new(), 0),
        };
        let (api, client, error) = (
            transaction.api,
            transaction.client,
            transaction.error.clone(),
        );
        match state {
            TransactionState::Committed => self.counters.commits += 1,
            TransactionState::Aborted => self.counters.aborts += 1,
            TransactionState::Open => {}
        }
        if state == TransactionState::Committed
            && (!transaction.participants.is_empty() || transaction.takeover_of.is_some())
        {
            // The Commit left markers where it passed (a taken-over one
            // anywhere an earlier coordinator's Commit passed): kept until
            // the API acknowledges this answer.
            // A replica keeps no marker of its own node's coordinator: none
            // on this node, but for a taken-over transaction, whose failed
            // coordinator's Commit may have left one here too.
            let me = self.node;
            let mut nodes = NodeSet::default();
            if transaction.takeover_of.is_some() {
                for node in (0..=NodeId::MAX).filter(|node| self.routing.is_live(*node)) {
                    nodes.insert(node);
                }
            } else {
                for node in transaction
                    .participants
                    .iter()
                    .flat_map(|p| p.chain.iter().copied())
                    .filter(|node| *node != me)
                {
                    nodes.insert(node);
                }
            }
            if transaction.takeover_of.is_some() {
                self.takeover_counters.answered_committed += 1;
            }
            transaction.marked = false;
            let awaited = AwaitedAck {
                transaction: id,
                nodes,
                since_ms: self.now_ms,
            };
            // A repeated answer (a second takeover) replaces the first.
            self.acks_awaited.insert((api, client), awaited);
            // A commit that wrote nothing (a read-only transaction) has no
            // epoch to tell; one that wrote got its epoch before its Commit
            // went.
            let wrote = transaction.takeover_of.is_some()
                || transaction.participants.iter().any(|p| p.writes);
            let epoch = if wrote { transaction.epoch } else { 0 };
            assert!(!wrote || epoch != 0, "a commit that wrote has an epoch");
            self.answer(
                (api, client),
                state,
                error,
                (results, hops),
                (true, epoch),
                out,
            );
            return;
        }
        let epoch = 0;
        self.answer(
            (api, client),
            state,
            error,
            (results, hops),
            (false, epoch),
            out,
        );
    }

    fn finish(&mut self, id: u64, state: TransactionState, out: &mut Vec<(NodeId, Message)>) {
        self.answer_final(id, state, out);
        self.close_scans(id, out);
        if state == TransactionState::Committed {
            self.release_late_scans(id, out);
        }
        let transaction = self.transactions.remove(&id).expect("present");
        // Every fragment finished its last phase.
        assert_eq!(
            transaction.outstanding, 0,
            "finish with fragments unanswered"
        );
        assert!(transaction.answered, "finish without the final answer");
        self.clients.remove(&(transaction.api, transaction.client));
        assert!(
            self.operations_in_use >= transaction.operations,
            "operations in use undercounted"
        );
        self.operations_in_use -= transaction.operations;
        if transaction.marked {
            // Its API failed before the answer: nobody will acknowledge
            // it, and nobody waits for it.
            // (Not this node's replica, but for a taken-over transaction:
            // see `answer_final`.)
            let me = self.node;
            let own = transaction.takeover_of.is_none();
            let mut nodes: Vec<NodeId> = transaction
                .participants
                .iter()
                .flat_map(|p| p.chain.iter().copied())
                .filter(|node| !own || *node != me)
                .collect();
            nodes.sort_unstable();
            nodes.dedup();
            for node in nodes {
                self.forget.entry(node).or_default().push(id);
            }
            self.send_forgets(out);
        }
        if let Some(failed) = transaction.takeover_of {
            self.release_takeover(failed);
        }
        for failed in transaction.also_announces {
            self.release_takeover(failed);
        }
    }

    /// A locking scan's open goes straight to the primary, but the commit of
    /// a fragment with backups reaches the primary through them, so it can
    /// overtake an open sent just before it: the scan then begins new work
    /// there after the commit, which nothing would end. Once the
    /// transaction has committed everywhere, an abort sent to the primary
    /// behind the open (same link, in order) ends that work if it exists;
    /// a primary without work for it passes it back as done, and the
    /// answer finds no transaction here.
    fn release_late_scans(&mut self, id: u64, out: &mut Vec<(NodeId, Message)>) {
        let transaction = &self.transactions[&id];
        for participant in &transaction.participants {
            // After a failure the chain may be down to the old primary,
            // or to a backup that never saw the scan (the Abort then finds
            // nothing and passes back as done); a fragment with no live
            // replica has nothing left to release.
            if participant.scanned
                && participant.committed_through_backups
                && !participant.chain.is_empty()
            {
                let primary = participant.chain[0];
                out.push((
                    primary,
                    Message::Abort(phase(id, self.node, participant, Vec::new())),
                ));
            }
        }
    }

    fn on_scan_open(&mut self, api: NodeId, open: ScanOpen, out: &mut Vec<(NodeId, Message)>) {
        let client = open.transaction;
        let fail = |error: ErrorReply, out: &mut Vec<(NodeId, Message)>| {
            out.push((
                api,
                Message::ScanRows(ScanRows::failed(client, open.scan, 0, error)),
            ));
        };
        let id = match self.transaction_for(api, client, open.start) {
            Ok(id) => id,
            Err(error) => {
                fail(error, out);
                return;
            }
        };
        if self.scans_in_use >= self.config.scans_max {
            fail(
                reply(
                    ErrorCode::TooManyScans,
                    format!("node {} has {} scans open", self.node, self.scans_in_use),
                ),
                out,
            );
            return;
        }
        let Some(route) = self.routing.table(open.table).cloned() else {
            fail(
                reply(
                    ErrorCode::NoSuchTable,
                    format!("no table with id {}", open.table),
                ),
                out,
            );
            return;
        };
        let transaction = self.transactions.get_mut(&id).expect("found");
        if transaction.stage != Stage::Open || transaction.scans.iter().any(|s| s.scan == open.scan)
        {
            fail(
                reply(
                    ErrorCode::TransactionBusy,
                    "the transaction is busy or the scan id is taken",
                ),
                out,
            );
            return;
        }
        let partitions: Vec<u32> = match open.partition {
            Some(partition) if partition < route.partition_count => vec![partition],
            Some(partition) => {
                fail(
                    reply(
                        ErrorCode::WrongKey,
                        format!("table {} has no partition {partition}", route.name),
                    ),
                    out,
                );
                return;
            }
            None => (0..route.partition_count).collect(),
        };
        let mut fragments = Vec::with_capacity(partitions.len());
        for partition in partitions {
            let fragment = route.fragment_near(partition, self.node);
            let chain = plan_chain(
                &self.routing,
                &route,
                fragment,
                open.mode,
                self.node,
                transaction,
            );
            let Some(chain) = chain else {
                fail(
                    reply(ErrorCode::NodeFailure, "a fragment has no live replica"),
                    out,
                );
                return;
            };
            let node = chain[0];
            if open.mode.locks() {
                let participant = transaction
                    .participants
                    .iter_mut()
                    .find(|p| p.table == route.id && p.fragment == fragment)
                    .expect("a locking scan makes its fragment a participant");
                participant.scanned = true;
            }
            fragments.push(ScanFragment {
                fragment,
                node,
                finished: false,
                awaiting_rows: true,
            });
            let mut request = open.clone();
            request.transaction = id;
            request.fragment = fragment;
            request.coordinator = self.node;
            out.push((node, Message::FragmentScanOpen(Box::new(request))));
        }
        self.counters.scans += 1;
        self.scans_in_use += 1;
        transaction.scans.push(CoordinatorScan {
            scan: open.scan,
            fragments,
        });
    }

    fn on_scan_rows(&mut self, mut rows: ScanRows, out: &mut Vec<(NodeId, Message)>) {
        let Some(transaction) = self.transactions.get_mut(&rows.transaction) else {
            return;
        };
        let Some(position) = transaction.scans.iter().position(|s| s.scan == rows.scan) else {
            return;
        };
        let scan = &mut transaction.scans[position];
        let Some(entry) = scan
            .fragments
            .iter_mut()
            .find(|f| f.fragment == rows.fragment && !f.finished)
        else {
            return;
        };
        entry.finished = rows.finished;
        entry.awaiting_rows = false;
        let all_finished = scan.fragments.iter().all(|f| f.finished);
        if all_finished {
            transaction.scans.remove(position);
            assert!(self.scans_in_use > 0, "scans in use undercounted");
            self.scans_in_use -= 1;
        }
        // A failed scan ends on its fragment; the API decides what becomes
        // of the transaction (NDB leaves it to the application too).
        rows.transaction = transaction.client;
        transaction.active_ms = self.now_ms;
        out.push((transaction.api, Message::ScanRows(rows)));
    }

    fn on_scan_next(&mut self, api: NodeId, next: ScanNext, out: &mut Vec<(NodeId, Message)>) {
        // A ScanNext follows its ScanOpen on the same connection, so a
        // transaction or scan this coordinator does not have has ended (a
        // commit or rollback closes the transaction's scans): the API is
        // told so for each fragment it asked, rather than left waiting.
        let Some(id) = self.clients.get(&(api, next.transaction)).copied() else {
            scan_already_complete(api, &next, out);
            return;
        };
        let transaction = self.transactions.get_mut(&id).expect("mapped");
        transaction.active_ms = self.now_ms;
        let Some(scan) = transaction.scans.iter_mut().find(|s| s.scan == next.scan) else {
            scan_already_complete(api, &next, out);
            return;
        };
        for fragment in next.fragments {
            if let Some(entry) = scan
                .fragments
                .iter_mut()
                .find(|f| f.fragment == fragment && !f.finished)
            {
                entry.awaiting_rows = true;
                let node = entry.node;
                out.push((
                    node,
                    Message::ScanNext(ScanNext {
                        transaction: id,
                        scan: next.scan,
                        fragments: vec![fragment],
                        coordinator: self.node,
                    }),
                ));
            }
        }
    }

    fn on_scan_close(
        &mut self,
        api: NodeId,
        client: u64,
        scan: u32,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let Some(id) = self.clients.get(&(api, client)).copied() else {
            return;
        };
        let transaction = self.transactions.get_mut(&id).expect("mapped");
        let Some(position) = transaction.scans.iter().position(|s| s.scan == scan) else {
            return;
        };
        let closed = transaction.scans.remove(position);
        assert!(self.scans_in_use > 0, "scans in use undercounted");
        self.scans_in_use -= 1;
        close_fragments(id, &closed, out);
    }

    fn close_scans(&mut self, id: u64, out: &mut Vec<(NodeId, Message)>) {
        let transaction = self.transactions.get_mut(&id).expect("present");
        let scans = std::mem::take(&mut transaction.scans);
        assert!(
            self.scans_in_use >= scans.len() as u32,
            "scans in use undercounted"
        );
        self.scans_in_use -= scans.len() as u32;
        for scan in &scans {
            close_fragments(id, scan, out);
        }
    }
}

/// The answer to a `ScanNext` for a scan that is no longer open: NDB's
/// 4120 for each fragment asked, each marked finished so the API counts
/// the scan as over.
fn scan_already_complete(api: NodeId, next: &ScanNext, out: &mut Vec<(NodeId, Message)>) {
    for &fragment in &next.fragments {
        out.push((
            api,
            Message::ScanRows(ScanRows::failed(
                next.transaction,
                next.scan,
                fragment,
                protocol::ErrorReply {
                    ndb_code: protocol::SCAN_ALREADY_COMPLETE_NDB_CODE,
                    mysql_code: protocol::NDB_ERROR_MYSQL_CODE,
                    message: format!(
                        "Scan already complete: scan {} of this transaction is not open \
                         (it ended, was closed, or its transaction committed or rolled back)",
                        next.scan
                    ),
                },
            )),
        ));
    }
}

/// The error of a transaction whose table left the cluster state while an
/// operation on it was in flight.
fn table_gone(table: u32) -> ErrorReply {
    reply(
        ErrorCode::NoSuchTable,
        format!("table {table} was dropped while the transaction used it"),
    )
}

fn close_fragments(id: u64, scan: &CoordinatorScan, out: &mut Vec<(NodeId, Message)>) {
    let mut nodes: Vec<NodeId> = scan
        .fragments
        .iter()
        .filter(|f| !f.finished)
        .map(|f| f.node)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    for node in nodes {
        out.push((
            node,
            Message::ScanClose {
                transaction: id,
                scan: scan.scan,
            },
        ));
    }
}

/// The replicas an operation (or scan) visits, first to last, and the
/// participant it makes of the fragment. `None` when no replica is alive.
fn plan_chain(
    routing: &Routing,
    route: &TableRoute,
    fragment: u32,
    kind: OperationKind,
    near: NodeId,
    transaction: &mut Transaction,
) -> Option<Vec<NodeId>> {
    let existing = transaction
        .participants
        .iter()
        .position(|p| p.table == route.id && p.fragment == fragment);
    if kind == OperationKind::ReadCommitted {
        // After a write here, read where the write is (the primary), so the
        // transaction sees its own change.
        if let Some(position) = existing
            && transaction.participants[position].writes
        {
            return Some(vec![transaction.participants[position].chain[0]]);
        }
        return routing
            .read_replica(route, fragment, near)
            .map(|node| vec![node]);
    }
    let live = routing.live_replicas(route, fragment);
    if live.is_empty() {
        return None;
    }
    let mut chain = live;
    if !kind.is_write() {
        chain.truncate(1);
    }
    match existing {
        Some(position) => {
            let participant = &mut transaction.participants[position];
            if chain.len() > participant.chain.len() {
                participant.chain = chain.clone();
            }
            participant.writes |= kind.is_write();
        }
        None => transaction.participants.push(Participant {
            table: route.id,
            fragment,
            chain: chain.clone(),
            writes: kind.is_write(),
            read_backup: route.reads_any_replica(),
            scanned: false,
            done: false,
            committer: None,
            committed_through_backups: false,
        }),
    }
    Some(chain)
}

fn phase(id: u64, coordinator: NodeId, participant: &Participant, chain: Vec<NodeId>) -> Phase {
    Phase {
        transaction: id,
        coordinator,
        table: participant.table,
        fragment: participant.fragment,
        chain,
        api: protocol::NO_API,
        client: 0,
        epoch: 0,
    }
}

/// The API a Commit's markers name: none once no API waits for the answer
/// (it failed, or it was answered).
fn marker_of(transaction: &Transaction) -> (NodeId, u64) {
    if transaction.answered {
        (protocol::NO_API, 0)
    } else {
        (transaction.api, transaction.client)
    }
}

/// Commit runs from the last replica back to the primary, leaving the
/// commit marker of the API waiting (`api`, `client`) on each replica.
fn commit_message(
    id: u64,
    coordinator: NodeId,
    participant: &Participant,
    (api, client): (NodeId, u64),
    epoch: u64,
) -> (NodeId, Message) {
    assert_ne!(epoch, 0, "a Commit of transaction {id} without its epoch");
    let mut backwards: Vec<NodeId> = participant.chain.iter().rev().copied().collect();
    let first = backwards.remove(0);
    let mut commit = phase(id, coordinator, participant, backwards);
    commit.api = api;
    commit.client = client;
    commit.epoch = epoch;
    (first, Message::Commit(commit))
}

/// The replicas of a fragment that still need Complete: the one that
/// committed in the commit phase first when the transaction wrote there
/// (it keeps a note of that commit for a takeover until Complete), then
/// every other one of the chain.
fn complete_targets(participant: &Participant) -> Vec<NodeId> {
    let committer = participant
        .committer
        .expect("Complete follows the commit phase");
    let mut targets = Vec::with_capacity(participant.chain.len());
    if participant.writes && participant.chain.contains(&committer) {
        targets.push(committer);
    }
    targets.extend(
        participant
            .chain
            .iter()
            .copied()
            .filter(|replica| *replica != committer),
    );
    targets
}

/// Complete runs through the replicas that only prepared, first to last.
fn complete_message(
    id: u64,
    coordinator: NodeId,
    participant: &Participant,
    mut targets: Vec<NodeId>,
) -> (NodeId, Message) {
    assert!(!targets.is_empty(), "Complete for no replica");
    let first = targets.remove(0);
    (
        first,
        Message::Complete(phase(id, coordinator, participant, targets)),
    )
}

/// Abort runs the chain forwards, behind the operations sent along it.
fn abort_message(id: u64, coordinator: NodeId, participant: &Participant) -> (NodeId, Message) {
    (
        participant.chain[0],
        Message::Abort(phase(
            id,
            coordinator,
            participant,
            participant.chain[1..].to_vec(),
        )),
    )
}

/// One transaction for the node's log: where it waits.
fn describe(id: u64, transaction: &Transaction, now_ms: u64) -> String {
    let mut line = format!(
        "transaction {id:#x} (API node {}, {}) has waited {} ms in {:?}, {} answer(s) \
         outstanding",
        transaction.api,
        transaction.client,
        now_ms.saturating_sub(transaction.active_ms),
        transaction.stage,
        transaction.outstanding,
    );
    if let Some(batch) = &transaction.batch {
        let waiting: Vec<String> = batch
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| !slot.answered)
            .map(|(index, slot)| format!("#{} at node {}", batch.first + index as u32, slot.first))
            .collect();
        line.push_str(&format!(
            "; batch {:?} waits for {}",
            batch.end,
            waiting.join(", ")
        ));
    }
    for participant in &transaction.participants {
        line.push_str(&format!(
            "; table {} fragment {} chain {:?}{}{}{}",
            participant.table,
            participant.fragment,
            participant.chain,
            if participant.writes { " writes" } else { "" },
            if participant.done { " done" } else { "" },
            match participant.committer {
                Some(node) => format!(" committed at {node}"),
                None => String::new(),
            },
        ));
    }
    line
}

/// The high 32 bits of every transaction id a coordinator of `node` at
/// `incarnation` makes: the node (8 bits) and the low 24 bits of the
/// incarnation. A query handler finds a failed coordinator's work by them.
pub fn transaction_base(node: NodeId, incarnation: u64) -> u64 {
    (u64::from(node) << 56) | ((incarnation & 0xFF_FFFF) << 32)
}

/// The node whose coordinator made `transaction`.
pub fn coordinator_node(transaction: u64) -> NodeId {
    (transaction >> 56) as NodeId
}

/// Whether `transaction` was made by the coordinator of `node` at
/// `incarnation`.
pub fn made_by(transaction: u64, node: NodeId, incarnation: u64) -> bool {
    transaction >> 32 == transaction_base(node, incarnation) >> 32
}
