//! The data node composite. The runtime owns the connections and names each
//! by a `LinkId`; everything it learns (a connection opened or closed, a
//! message read, the management node's messages, the time) goes in here,
//! and what the node wants done comes out as an `Output`: messages per
//! link, messages for the management node, links to close, data nodes to
//! dial, a management connection to open, log lines.
//!
//! Rules kept here, so both runtimes keep them:
//! - A connection does nothing until its peer has said `Hello`; a message
//!   before that closes it. A newer connection from the same node
//!   replaces the older one.
//! - Transaction messages from an API node go to the coordinator only; from
//!   a data node (this one included) to the query handler or the
//!   coordinator (`transaction::for_query_handler`). API nodes may send
//!   membership nothing but schema and dictionary requests.
//! - A new cluster state goes to the routing, then the query handler, then
//!   the coordinator, whose resent phases may need the handler's new
//!   fragments.
//! - Messages to this node go through a local queue, delivered in order
//!   before the input returns.
//! - Messages for a data node this incarnation has never been connected to
//!   wait, in order and bounded, for its connection; after a connection
//!   closes they are dropped as on any failed link.
//! - An API node's connection closing rolls back its open transactions.
//! - When the cluster excludes the node it restarts as a new incarnation:
//!   every peer connection closes, and membership, coordinator and routing
//!   start over.
//! - The management node's connection is reopened without blocking: a
//!   connect, `AllocateNodeId` for this node's id, and a deadline for the
//!   answer, all driven by ticks.

use std::collections::{BTreeMap, VecDeque};

use crate::durability::{DiskStart, FileTask, NodeDisk, RestoreSource};
use cluster::epochs::{EpochConfig, Epochs};
use cluster::{DataNode, DataNodeSettings, Effects, Event};
use protocol::identity::{ClusterSecret, Nonce, hello_proof, proof_holds};
use protocol::{Address, ClusterState, Member, Message, NodeId, NodeRole};
use transaction::{Coordinator, CoordinatorConfig, QueryHandler, Routing};

/// The runtime's name for one connection (a socket in `datad`, a simulated
/// link in the simulator). Never reused while the composite lives.
pub type LinkId = u64;

/// Messages held for one data node while the first connection to it is
/// being set up; past this the node is too slow to reach and messages are
/// dropped (with a log line), as a failed link drops them.
pub const PENDING_MESSAGES_PER_NODE_MAX: usize = 65_536;
/// A transaction that waits for the cluster this long, or a copy that
/// makes no progress this long, is logged with what the node waits for.
pub const STALL_REPORT_MS: u64 = 2_000;
/// Between attempts to reach the management node again.
pub const MANAGEMENT_RETRY_MS: u64 = 1_000;
/// How long a management connection may take to connect and answer
/// `AllocateNodeId` before it is given up and tried again.
pub const MANAGEMENT_ANSWER_TIMEOUT_MS: u64 = 5_000;

/// Who is at the other end of a link, once its `Hello` arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub node: NodeId,
    pub incarnation: u64,
    pub role: NodeRole,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Link {
    /// Set once the peer proved its claim; `None` until then, and then the
    /// link carries nothing but the handshake.
    peer: Option<Peer>,
    /// Who the peer's `Hello` claims to be, until its proof arrives.
    claimed: Option<Peer>,
    /// The challenge of the peer's `Hello` on a link it dialed: this side
    /// answers it only once the peer's own proof holds (see `handshake`).
    peer_nonce: Option<Nonce>,
    /// This side's challenge on the link.
    nonce: Nonce,
    /// The data node this side dialed, until its `Hello` sets `peer`.
    dialed: Option<NodeId>,
    /// When the peer last sent anything (set once it is identified): an
    /// API node silent for `missed_heartbeats_max` of its heartbeat
    /// intervals is declared dead and its connection closed.
    heard_ms: u64,
}

/// The state of the connection to the management node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManagementLink {
    /// Connected and this node's id confirmed.
    Up,
    /// The runtime was asked to connect; `on_management_connected` or
    /// `on_management_lost` comes next, or the deadline passes.
    Connecting { deadline_ms: u64 },
    /// Connected; `AllocateNodeId` sent, its answer due by the deadline.
    Allocating { deadline_ms: u64 },
    /// No connection; the next attempt is due at `retry_at_ms`.
    Down { retry_at_ms: u64 },
}

/// What the runtime must do after one input, in this order: close links,
/// send. Cleared by the runtime (`clear`) after it has acted.
#[derive(Debug, Default)]
pub struct Output {
    /// Messages for each link, in order.
    pub sends: Vec<(LinkId, Message)>,
    /// Messages for the management node, in order.
    pub to_management: Vec<Message>,
    /// Links to close, with why; the composite has forgotten them already.
    pub close: Vec<(LinkId, String)>,
    /// Data nodes to connect to (each pair of data nodes has one
    /// connection: the lower id dials).
    pub dial: Vec<Address>,
    /// Open a connection to the management node, then call
    /// `on_management_connected` (or `on_management_lost`).
    pub connect_management: bool,
    /// Close the management connection, with why.
    pub close_management: Option<String>,
    /// Lines for the node's log.
    pub logs: Vec<String>,
    /// Protocol errors a correct cluster never produces (a message no block
    /// takes, a state the routing cannot install): `datad` logs them, the
    /// simulator fails the run.
    pub problems: Vec<String>,
    /// Every state this node installed, in order.
    pub installed: Vec<ClusterState>,
    /// The node was excluded: the runtime calls `restart` with a new
    /// incarnation before anything else.
    pub excluded: Option<String>,
    /// The node was told to stop: the runtime exits.
    pub stop: Option<String>,
    /// With `stop`: the management node asked for a restart, so the
    /// runtime exits with the code that makes its angel start it again.
    pub restart: Option<protocol::RestartOptions>,
    /// When observing (`set_observing`): every message the coordinator
    /// handled, with what it sent in answer.
    pub coordinator_steps: Vec<CoordinatorStep>,
    /// When observing: each commit the coordinator decided, with its
    /// epoch, in order.
    pub commit_decisions: Vec<(u64, u64)>,
    /// Work on the node's files (checkpoints, the system file, the saved
    /// cluster state): the runtime does each off the event loop, in order,
    /// and reports it with `on_file_done`.
    pub files: Vec<FileTask>,
}

impl Output {
    pub fn clear(&mut self) {
        self.sends.clear();
        self.to_management.clear();
        self.close.clear();
        self.dial.clear();
        self.connect_management = false;
        self.close_management = None;
        self.logs.clear();
        self.problems.clear();
        self.installed.clear();
        self.excluded = None;
        self.stop = None;
        self.restart = None;
        self.coordinator_steps.clear();
        self.commit_decisions.clear();
        self.files.clear();
    }
}

/// One message the coordinator handled, and the messages it sent while
/// handling it (the simulator's checkers look at both).
#[derive(Debug, Clone)]
pub struct CoordinatorStep {
    pub from: NodeId,
    pub input: Message,
    pub sent: Vec<(NodeId, Message)>,
}

/// Paths of the wiring taken (coverage marks): the simulator's tests assert
/// that their seeds reach each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeMarks {
    /// Messages held for a data node not yet connected, sent once it was.
    pub pending_delivered: u64,
    /// Messages this node sent itself through the local queue.
    pub local_deliveries: u64,
    /// API nodes whose connection closed while they had open transactions.
    pub api_failures_with_transactions: u64,
    /// Restarts as a new incarnation after an exclusion.
    pub restarts: u64,
    /// Connections replaced by a newer one from the same node.
    pub replaced_links: u64,
    /// Ticks that ended lock waits in the query handler.
    pub lock_wait_ticks: u64,
    /// Management connections reopened after one was lost.
    pub management_reconnects: u64,
    /// Management connections given up because no answer came in time.
    pub management_timeouts: u64,
    /// Transaction messages dropped because their sender had left the
    /// cluster (a removed incarnation's late requests and phases).
    pub departed_messages_dropped: u64,
    /// Connections closed because membership suspected their peer.
    pub suspected_links_closed: u64,
    /// Connections to an older incarnation of a member closed when a
    /// message for the member was to go on them.
    pub stale_links_closed: u64,
    /// Times the membership lease came back while commits waited for it
    /// (they went out then).
    pub commits_released_by_lease: u64,
    /// API nodes' connections closed because they missed their heartbeats.
    pub api_declared_dead: u64,
    /// Stalled transactions or copies logged (`report_stalls`).
    pub stalls_reported: u64,
    /// Second connections from a connected peer refused
    /// (`refuses_duplicate`).
    pub duplicate_links_refused: u64,
    /// Saves answered once the redo log was durable through its head.
    pub saves_after_sync: u64,
    /// Redo log writes or syncs that failed (and were retried).
    pub redo_failures: u64,
    /// `KIND_SAVED` markers a full redo log refused.
    pub save_markers_refused: u64,
    /// Local checkpoints installed, and their steps that stopped in the
    /// middle of a fragment (the next step goes on from its cursor).
    pub checkpoints_installed: u64,
    pub checkpoint_slices_cut: u64,
    /// Of the checkpoints installed, partial ones; the deleted keys
    /// partial checkpoints wrote; restores that read a chain of more than
    /// one checkpoint.
    pub partial_checkpoints_installed: u64,
    pub checkpoint_deletes: u64,
    pub restores_from_chains: u64,
}

impl NodeMarks {
    pub fn add(&mut self, other: &NodeMarks) {
        self.pending_delivered += other.pending_delivered;
        self.local_deliveries += other.local_deliveries;
        self.api_failures_with_transactions += other.api_failures_with_transactions;
        self.restarts += other.restarts;
        self.replaced_links += other.replaced_links;
        self.lock_wait_ticks += other.lock_wait_ticks;
        self.management_reconnects += other.management_reconnects;
        self.management_timeouts += other.management_timeouts;
        self.departed_messages_dropped += other.departed_messages_dropped;
        self.suspected_links_closed += other.suspected_links_closed;
        self.stale_links_closed += other.stale_links_closed;
        self.commits_released_by_lease += other.commits_released_by_lease;
        self.api_declared_dead += other.api_declared_dead;
        self.stalls_reported += other.stalls_reported;
        self.duplicate_links_refused += other.duplicate_links_refused;
        self.saves_after_sync += other.saves_after_sync;
        self.redo_failures += other.redo_failures;
        self.save_markers_refused += other.save_markers_refused;
        self.checkpoints_installed += other.checkpoints_installed;
        self.checkpoint_slices_cut += other.checkpoint_slices_cut;
        self.partial_checkpoints_installed += other.partial_checkpoints_installed;
        self.checkpoint_deletes += other.checkpoint_deletes;
        self.restores_from_chains += other.restores_from_chains;
    }
}

/// Bytes of records one step of a node restart's restore reads, about:
/// the steps run between the node's other inputs, so its heartbeats go on
/// (a million rows restored in one go took two seconds, and its peers
/// declared it dead).
pub const RESTORE_STEP_BYTES: u64 = 4 << 20;

/// A restore from the node's disk under way: the chain's checkpoints in
/// order, then the redo log from its tail.
struct Restoring {
    /// The chain's checkpoint being read; the chain's length once the
    /// redo log is.
    position: usize,
    scan: disk::Scan,
    /// Where the redo log ended at the node's start.
    redo_end: disk::Lsn,
    /// Each part's newest whole checkpoint in the chain.
    newest: [usize; 64],
    epoch: u64,
    for_copy: bool,
    /// The system file as the restore began (its chain and tail).
    system: disk::system_file::SystemFile,
}

/// A data node: its blocks and the state of its connections.
pub struct DataNodeComposite {
    node: NodeId,
    settings: DataNodeSettings,
    /// The cluster secret peers prove they know (`protocol::identity`).
    secret: ClusterSecret,
    membership: DataNode,
    coordinator: Coordinator,
    query_handler: QueryHandler,
    /// The epoch protocol (`cluster::epochs`): the epoch the coordinator
    /// decides commits in, and the global checkpoints.
    epochs: Epochs,
    epoch_config: EpochConfig,
    /// The commit epoch last given to the coordinator.
    coordinator_epoch: Option<u64>,
    /// The save owed (`Epochs::save_owed`) and the redo log's head when it
    /// came: `Saved` goes once the log is durable through it.
    save_target: Option<(u64, disk::Lsn)>,
    /// A system restart's marker of its restore (`mark_restored`), until
    /// it is durable: the log's head after it.
    restore_marker: Option<disk::Lsn>,
    /// The redo log's failure last logged, so each is logged once.
    redo_failure_logged: Option<String>,
    /// Checkpoints, the system file and restores (`set_disk`); `None` for
    /// a node that keeps nothing on disk.
    disk: Option<NodeDisk>,
    /// Reads the node's files at a restore.
    restore_source: Option<Box<dyn RestoreSource>>,
    /// A restore from the node's disk under way (`restore`).
    restoring: Option<Restoring>,
    /// Bytes of records a node restart's restore reads a step
    /// (`RESTORE_STEP_BYTES`; the simulator's are small, so its restores
    /// take several steps).
    restore_step_bytes: u64,
    routing: Routing,
    coordinator_config: CoordinatorConfig,
    /// Where this node listens, announced to the management node.
    listen: Address,
    links: BTreeMap<LinkId, Link>,
    /// The link of each identified peer.
    peers: BTreeMap<NodeId, LinkId>,
    /// Messages for data nodes this incarnation has not been connected to
    /// yet, or for a member's incarnation newer than the one it was
    /// connected to: a member's link counts as up before its connection
    /// is, so what is sent on it waits here, in order, instead of being
    /// lost. Each message names the oldest incarnation it may reach (0
    /// before the first connection to the node), or, when it was held for
    /// the incarnation this node was connected to, that incarnation only;
    /// a connection from another one drops it (what it was part of ended
    /// with the incarnation it was for).
    pending: BTreeMap<NodeId, Vec<(u64, bool, Message)>>,
    /// For each takeover this node runs, the API connections open when it
    /// began: only those hear `TakeoverDone`.
    takeover_api_links: BTreeMap<protocol::Member, Vec<LinkId>>,
    /// When the first message now held in `pending` for each node was held.
    pending_since_ms: BTreeMap<NodeId, u64>,
    /// The newest incarnation of each data node this incarnation has had a
    /// connection to. A message for that incarnation with no link is
    /// dropped: its link failed, so it fails, and the membership change
    /// ends what the message was part of.
    connected_incarnation: BTreeMap<NodeId, u64>,
    /// Where the other data nodes listen, from the management node.
    addresses: BTreeMap<NodeId, Address>,
    management: ManagementLink,
    /// When this node last published its address again because it lacked
    /// another node's.
    addresses_asked_ms: u64,
    /// Messages this node sends itself (coordinator ↔ local query handler).
    local: VecDeque<Message>,
    /// Reused output buffer of the transaction blocks.
    transaction_out: Vec<(NodeId, Message)>,
    /// Set between an exclusion and `restart`: inputs are ignored.
    awaiting_restart: bool,
    /// When `report_stalls` last logged.
    stall_reported_ms: u64,
    /// This incarnation told membership its node recovery copy is done.
    copy_reported: bool,
    observing: bool,
    marks: NodeMarks,
    /// Membership marks of earlier incarnations.
    membership_marks: cluster::data_node::Marks,
    messages_dropped: u64,
    /// A message no block took, reported after the step.
    unhandled: Option<(NodeId, Message)>,
    /// Coordinator steps recorded while observing, reported after the step.
    steps: Vec<CoordinatorStep>,
    /// The newest removed incarnation of each data node, from the
    /// installed cluster state: its transaction messages are dropped, since
    /// the survivors have already aborted or finished what it took part in
    /// (at most one entry per configured data node).
    departed: BTreeMap<NodeId, u64>,
    /// A whole-cluster stop's drain, once the management node asked for
    /// one (`Message::Drain`).
    drain: Option<Drain>,
}

/// How long a drain lets open transactions end by themselves before it
/// aborts them (270): a whole-cluster stop waits for the work in flight,
/// but not for a session that holds a transaction open and idle.
pub const DRAIN_WAIT_MS: u64 = 3_000;

// The management node's wait for a drain covers this one and a global
// checkpoint after it.
const _: () = assert!(DRAIN_WAIT_MS * 2 < cluster::management::DRAIN_TIMEOUT_MS);

/// A drain (`DataNodeComposite::begin_drain`).
#[derive(Debug, Clone, Copy)]
struct Drain {
    /// Transactions still undecided then are aborted.
    close_at_ms: u64,
    /// Once the coordinator closed (no commit is decided any more): the
    /// epoch it was in, which every commit it decided lies at or below.
    closed_in: Option<u64>,
    /// The (last commit epoch, durable epoch) last told to the
    /// management node.
    reported: Option<(u64, u64)>,
}

impl DataNodeComposite {
    /// A node whose management connection is up and has allocated its id
    /// (the runtime does that before it knows its configuration).
    pub fn new(
        settings: DataNodeSettings,
        now_ms: u64,
        mut query_handler: QueryHandler,
        coordinator_config: CoordinatorConfig,
        listen: Address,
        secret: ClusterSecret,
        epoch_config: EpochConfig,
    ) -> DataNodeComposite {
        assert_eq!(listen.node, settings.node);
        // No lease before the membership grants one.
        query_handler.set_read_lease_until_ms(0);
        let node = settings.node;
        let membership = DataNode::new(settings.clone(), now_ms);
        let coordinator = Coordinator::new(node, settings.incarnation, coordinator_config);
        DataNodeComposite {
            node,
            settings,
            secret,
            membership,
            coordinator,
            query_handler,
            epochs: Epochs::new(epoch_config),
            epoch_config,
            coordinator_epoch: None,
            save_target: None,
            restore_marker: None,
            redo_failure_logged: None,
            disk: None,
            restore_source: None,
            restoring: None,
            restore_step_bytes: RESTORE_STEP_BYTES,
            routing: Routing::new(),
            coordinator_config,
            listen,
            links: BTreeMap::new(),
            peers: BTreeMap::new(),
            pending: BTreeMap::new(),
            takeover_api_links: BTreeMap::new(),
            pending_since_ms: BTreeMap::new(),
            connected_incarnation: BTreeMap::new(),
            addresses: BTreeMap::new(),
            management: ManagementLink::Up,
            addresses_asked_ms: now_ms,
            local: VecDeque::new(),
            transaction_out: Vec::new(),
            awaiting_restart: false,
            stall_reported_ms: 0,
            copy_reported: false,
            observing: false,
            marks: NodeMarks::default(),
            membership_marks: cluster::data_node::Marks::default(),
            messages_dropped: 0,
            unhandled: None,
            steps: Vec::new(),
            departed: BTreeMap::new(),
            drain: None,
        }
    }

    /// Records every coordinator step in `Output::coordinator_steps`.
    pub fn set_observing(&mut self, observing: bool) {
        self.observing = observing;
        self.coordinator.record_decisions(observing);
    }

    pub fn node(&self) -> NodeId {
        self.node
    }

    pub fn incarnation(&self) -> u64 {
        self.settings.incarnation
    }

    pub fn membership(&self) -> &DataNode {
        &self.membership
    }

    pub fn coordinator(&self) -> &Coordinator {
        &self.coordinator
    }

    pub fn query_handler(&self) -> &QueryHandler {
        &self.query_handler
    }

    pub fn query_handler_mut(&mut self) -> &mut QueryHandler {
        &mut self.query_handler
    }

    pub fn routing(&self) -> &Routing {
        &self.routing
    }

    pub fn management_link(&self) -> ManagementLink {
        self.management
    }

    /// Every epoch below this is durable on every data node's disk.
    pub fn durable_below(&self) -> u64 {
        self.epochs.durable_below()
    }

    /// The epoch this incarnation's system restart restored its disk's
    /// commits below (`NodeDisk::restored_below`).
    pub fn restored_below(&self) -> Option<u64> {
        self.disk.as_ref().and_then(NodeDisk::restored_below)
    }

    pub fn marks(&self) -> NodeMarks {
        let mut marks = self.marks;
        if let Some(disk) = &self.disk {
            marks.checkpoints_installed = disk.marks.checkpoints_installed;
            marks.checkpoint_slices_cut = disk.marks.checkpoint_slices_cut;
            marks.partial_checkpoints_installed = disk.marks.partial_checkpoints_installed;
            marks.checkpoint_deletes = disk.marks.checkpoint_deletes;
            marks.restores_from_chains = disk.marks.restores_from_chains;
        }
        marks
    }

    /// Membership marks of this incarnation and every earlier one.
    pub fn membership_marks(&self) -> cluster::data_node::Marks {
        let mut marks = self.membership_marks;
        marks.add(&self.membership.marks());
        marks
    }

    /// Messages dropped for want of a connection.
    pub fn messages_dropped(&self) -> u64 {
        self.messages_dropped
    }

    /// The identified peer of a link.
    pub fn peer_of(&self, link: LinkId) -> Option<Peer> {
        self.links.get(&link).and_then(|l| l.peer)
    }

    /// The link of an identified peer.
    pub fn link_of(&self, node: NodeId) -> Option<LinkId> {
        self.peers.get(&node).copied()
    }

    /// Whether this node has a connection to `node`, identified or still
    /// being set up by its own dial: then it does not dial `node`.
    pub fn has_link_to(&self, node: NodeId) -> bool {
        self.peers.contains_key(&node)
            || self
                .links
                .values()
                .any(|l| l.peer.is_none() && l.dialed == Some(node))
    }

    /// Links whose peer has not identified itself yet.
    pub fn unidentified_links(&self) -> usize {
        self.links.values().filter(|l| l.peer.is_none()).count()
    }

    /// When the runtime must call `tick` next.
    pub fn next_deadline_ms(&self) -> u64 {
        let management = match self.management {
            ManagementLink::Up => u64::MAX,
            ManagementLink::Connecting { deadline_ms }
            | ManagementLink::Allocating { deadline_ms } => deadline_ms,
            ManagementLink::Down { retry_at_ms } => retry_at_ms,
        };
        self.membership
            .next_tick_ms()
            .min(self.query_handler.next_deadline_ms().unwrap_or(u64::MAX))
            .min(self.epochs.next_tick_ms().unwrap_or(u64::MAX))
            .min(
                self.query_handler
                    .redo()
                    .and_then(|log| log.retry_at_ms())
                    .unwrap_or(u64::MAX),
            )
            .min(management)
            // A checkpoint writes a fragment per step, between inputs.
            .min(match &self.disk {
                Some(disk) if disk.checkpoint_busy() => 0,
                // A node restart's restore reads a step between inputs.
                _ if self.restoring.is_some() => 0,
                _ => u64::MAX,
            })
    }

    /// Gives the node its disk: what the runtime found there at start and
    /// how to read it again for a restore (see `durability`). Called once,
    /// before the first input, after the query handler got its redo log.
    pub fn set_disk(
        &mut self,
        start: DiskStart,
        source: Box<dyn RestoreSource>,
        (checkpoint_trigger_bytes, checkpoint_slice_bytes, restore_step_bytes): (u64, u32, u64),
    ) {
        assert!(self.disk.is_none(), "the disk is set once");
        assert!(
            self.query_handler.redo().is_some(),
            "the redo log is set first"
        );
        self.membership
            .set_restorable(cluster::data_node::DiskAtStart {
                restorable_epoch: start.survey.restorable_epoch,
                restorable_generation: start.survey.restorable_generation,
                restored_from_generation: start.survey.restored_from_generation,
                disk_epoch_max: start.survey.epoch_max,
            });
        self.disk = Some(NodeDisk::new(
            start,
            checkpoint_trigger_bytes,
            checkpoint_slice_bytes,
        ));
        self.restore_source = Some(source);
        self.restore_step_bytes = restore_step_bytes.max(1);
    }

    /// Begins the restore the disk owes (`NodeDisk::restore_owed`): the
    /// chain of checkpoints, then the redo log up to the epoch it restores
    /// to. A system restart's runs to its end at once, before anything
    /// else reaches the fragments just created. A node restart's keeps
    /// its rows aside for the copy (`QueryHandler::restore_for_copy`) and
    /// goes on a step at a time between the node's other inputs
    /// (`step_restore`), so its heartbeats go on; the copies wait for it.
    fn restore(&mut self, output: &mut Output) -> Result<(), String> {
        let disk = self.disk.as_mut().expect("a restore needs a disk");
        let system = disk.system().clone();
        let redo_end = disk.start_end();
        let epoch = disk.restore_owed().expect("owed");
        let for_copy = disk.restoring_for_copy();
        let newest = if system.checkpoints.is_empty() {
            [0; 64]
        } else {
            disk::system_file::newest_whole(&system.checkpoints)
                .ok_or("the system file's chain of checkpoints misses a part")?
        };
        if for_copy {
            self.query_handler
                .restore_for_copy(cluster::epochs::gci_of(epoch));
        }
        self.restoring = Some(Restoring {
            position: 0,
            scan: if system.checkpoints.is_empty() {
                disk::Scan::until(system.redo_tail, redo_end)
            } else {
                disk::Scan::new(0)
            },
            redo_end,
            newest,
            epoch,
            for_copy,
            system,
        });
        if !for_copy {
            loop {
                match self.restore_step(u64::MAX, output) {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(error) => {
                        self.restoring = None;
                        return Err(error);
                    }
                }
            }
            self.mark_restored(epoch);
        }
        Ok(())
    }

    /// After a system restart's restore: a `KIND_SAVED` marker says this
    /// disk holds every commit below `epoch` in the new generation. Until
    /// a global checkpoint is saved in it, the marker is what lets a later
    /// restart count this disk for its node group beside disks that did
    /// save one (without it, a second whole-cluster crash soon after the
    /// first found the group only in the older generation and refused to
    /// start: the simulator's seed 20482). This node owes `Completed` for
    /// no round until the marker is durable, so no global checkpoint of
    /// the new generation is saved anywhere before it is.
    fn mark_restored(&mut self, epoch: u64) {
        let (Some(disk), Some(log)) = (self.disk.as_ref(), self.query_handler.redo_mut()) else {
            return;
        };
        if disk.mark_restore_point(log, epoch).is_err() {
            // The log is full to its restore marks' reserve (about a
            // hundred restarts with no local checkpoint between them).
            // Without this mark a later whole-cluster restart may find
            // this node group only in the older generation: it refuses
            // to start when another group saved past the restore point,
            // and forms from the older generation when none did.
            self.marks.save_markers_refused += 1;
            return;
        }
        let head = log.head();
        log.want_durable(head);
        self.restore_marker = Some(head);
    }

    /// Reads about `bytes_max` bytes of the restore under way; returns
    /// whether it is done (and then finished, with its log line).
    fn restore_step(&mut self, bytes_max: u64, output: &mut Output) -> Result<bool, String> {
        let restoring = self.restoring.as_mut().expect("a restore under way");
        let disk = self.disk.as_mut().expect("a restore needs a disk");
        let source = self.restore_source.as_mut().expect("set with the disk");
        let query_handler = &mut self.query_handler;
        let chain = &restoring.system.checkpoints;
        if let Some(checkpoint) = chain.get(restoring.position) {
            let parts = disk::system_file::parts_taken(&restoring.newest, restoring.position);
            let done = source.checkpoint_step(
                checkpoint,
                &mut restoring.scan,
                bytes_max,
                &mut |record| disk.restore_checkpoint_record(query_handler, parts, &record),
            )?;
            if done {
                restoring.position += 1;
                restoring.scan = if restoring.position < chain.len() {
                    disk::Scan::new(0)
                } else {
                    disk::Scan::until(restoring.system.redo_tail, restoring.redo_end)
                };
            }
            return Ok(false);
        }
        let done = source.redo_step(&mut restoring.scan, bytes_max, &mut |record| {
            disk.restore_redo_record(query_handler, &record)
        })?;
        if !done {
            return Ok(false);
        }
        let restoring = self.restoring.take().expect("under way");
        let marks = disk.marks;
        disk.finish_restore(&mut output.files);
        output.logs.push(format!(
            "restored from this node's disk {}through GCI {}: {} change(s) from local \
             checkpoint(s) {}, {} from the redo log",
            if restoring.for_copy {
                "for its node restart (its copy then sends only rows written since) "
            } else {
                ""
            },
            cluster::epochs::gci_before(restoring.epoch),
            marks.restored_checkpoint_changes,
            disk::system_file::chain_names(&restoring.system.checkpoints),
            marks.restored_redo_changes
        ));
        Ok(true)
    }

    /// A step of a node restart's restore, between inputs; once it is
    /// done the copies start.
    fn step_restore(&mut self, now_ms: u64, output: &mut Output) {
        let Some(restoring) = &self.restoring else {
            return;
        };
        assert!(
            restoring.for_copy,
            "a system restart's restore runs at once"
        );
        if !self.query_handler.restoring_for_copy() {
            // The node's start ended another way (it restarts): what was
            // restored aside is gone with it.
            self.restoring = None;
            if let Some(disk) = self.disk.as_mut() {
                disk.abandon_restore();
            }
            return;
        }
        match self.restore_step(self.restore_step_bytes, output) {
            Ok(false) => {}
            Ok(true) => {
                self.query_handler.restored_for_copy();
                self.run_transaction_blocks(now_ms, output, |node, out| {
                    node.query_handler.start_copies(now_ms, out);
                });
            }
            Err(error) => {
                self.restoring = None;
                output.stop = Some(format!(
                    "the restore from this node's disk failed: {error} (start it with \
                     --initial to discard its disk and copy its data from the other nodes)"
                ));
            }
        }
    }

    /// A file task from `Output::files` ended.
    pub fn on_file_done(
        &mut self,
        _now_ms: u64,
        token: u64,
        result: Result<(), String>,
        output: &mut Output,
    ) {
        let Some(disk) = self.disk.as_mut() else {
            output
                .problems
                .push("a file task done for a node without a disk".to_string());
            return;
        };
        if let Some(line) = disk.done(token, result, &mut self.query_handler, &mut output.files) {
            output.logs.push(line);
        }
        self.step_disk(output);
    }

    /// Moves the local checkpoint on, and sends the management node the
    /// cluster state saved before this start (once).
    fn step_disk(&mut self, output: &mut Output) {
        let Some(disk) = self.disk.as_mut() else {
            return;
        };
        if self.management == ManagementLink::Up
            && let Some(state) = disk.take_saved_state()
        {
            output.to_management.push(Message::Decided {
                state: Box::new(state),
            });
        }
        let member = self.membership.is_started();
        if let Err(error) = disk.step_checkpoint(
            &mut self.query_handler,
            member,
            self.epochs.current(),
            self.epochs.durable_below(),
            &mut output.files,
        ) {
            output
                .logs
                .push(format!("a local checkpoint failed: {error}"));
        }
    }

    /// The redo log's writes and syncs due now (after any input, the
    /// runtime asks for them and does them off the event loop, then calls
    /// `on_disk_completion` with each outcome).
    pub fn disk_requests(&mut self, now_ms: u64, out: &mut Vec<disk::DiskRequest>) {
        if let Some(log) = self.query_handler.redo_mut() {
            log.poll(now_ms, out);
        }
    }

    /// The outcome of a request from `disk_requests`: a save waiting for
    /// the redo log to be durable may be answered now. A failure is logged
    /// (once) and the request retried; meanwhile the buffer fills and
    /// writes are refused with 1234, and the node stays up.
    pub fn on_disk_completion(
        &mut self,
        now_ms: u64,
        completion: disk::DiskCompletion,
        output: &mut Output,
    ) {
        let Some(log) = self.query_handler.redo_mut() else {
            output
                .problems
                .push("a disk completion for a node without a redo log".to_string());
            return;
        };
        if matches!(completion, disk::DiskCompletion::Failed { .. }) {
            self.marks.redo_failures += 1;
        }
        if !log.complete(now_ms, completion) {
            output
                .problems
                .push("a disk completion the redo log did not ask for".to_string());
            return;
        }
        let failure = log.failure().map(str::to_string);
        if failure != self.redo_failure_logged {
            match &failure {
                Some(error) => output.logs.push(format!(
                    "the redo log's disk failed: {error}; retrying every {} ms, and refusing \
                     writes (1234) once its buffer is full",
                    disk::redo::RETRY_MS
                )),
                None => output
                    .logs
                    .push("the redo log's disk works again".to_string()),
            }
            self.redo_failure_logged = failure;
        }
        self.run_transaction_blocks(now_ms, output, |_, _| {});
    }

    /// Commits the coordinator holds until the next epoch or the lease.
    pub fn commits_awaiting_epoch(&self) -> usize {
        self.coordinator.awaiting_epoch()
    }

    /// When the query handler next has a lock wait to end, if any.
    pub fn lock_wait_deadline_ms(&self) -> Option<u64> {
        self.query_handler.next_deadline_ms()
    }

    fn hello(&self, nonce: Nonce) -> Message {
        Message::Hello {
            node: self.node,
            incarnation: self.settings.incarnation,
            role: NodeRole::Data,
            nonce,
        }
    }

    // ---- connections ----

    /// A connection opened: accepted (`dialed` is `None`) or dialed to a
    /// data node. The node says `Hello` on it with `nonce`, a fresh random
    /// challenge from the runtime.
    pub fn on_connected(
        &mut self,
        link: LinkId,
        dialed: Option<NodeId>,
        nonce: Nonce,
        output: &mut Output,
    ) {
        let fresh = self.links.insert(
            link,
            Link {
                peer: None,
                claimed: None,
                peer_nonce: None,
                nonce,
                dialed,
                heard_ms: 0,
            },
        );
        assert!(fresh.is_none(), "link {link} is reused");
        output.sends.push((link, self.hello(nonce)));
    }

    /// A connection closed (the peer closed it, or reading or writing
    /// failed). Unknown links (closed by the composite) are ignored.
    pub fn on_link_closed(&mut self, now_ms: u64, link: LinkId, why: &str, output: &mut Output) {
        if self.awaiting_restart {
            self.links.remove(&link);
            return;
        }
        self.forget_link(now_ms, link, why, output);
    }

    /// Closes a link on the composite's own decision.
    fn close_link(&mut self, now_ms: u64, link: LinkId, why: &str, output: &mut Output) {
        if self.links.contains_key(&link) {
            output.close.push((link, why.to_string()));
            self.forget_link(now_ms, link, why, output);
        }
    }

    fn forget_link(&mut self, now_ms: u64, link: LinkId, why: &str, output: &mut Output) {
        let Some(closed) = self.links.remove(&link) else {
            return;
        };
        let Some(peer) = closed.peer else {
            return;
        };
        if self.peers.get(&peer.node) != Some(&link) {
            // A replaced connection: its node is still connected.
            return;
        }
        self.peers.remove(&peer.node);
        match peer.role {
            NodeRole::Api => {
                output.logs.push(format!(
                    "connection to API node {} closed: {why}",
                    peer.node
                ));
                let open_before = self.coordinator.open_transactions();
                self.run_transaction_blocks(now_ms, output, |node, out| {
                    node.coordinator.on_api_failed(peer.node, out);
                });
                if open_before > 0 {
                    self.marks.api_failures_with_transactions += 1;
                }
            }
            NodeRole::Data => {
                output.logs.push(format!(
                    "connection to data node {} closed: {why}",
                    peer.node
                ));
                let mut effects = Effects::new();
                self.membership.on_disconnected(
                    now_ms,
                    protocol::Member {
                        node: peer.node,
                        incarnation: peer.incarnation,
                    },
                    &mut effects,
                );
                self.apply(now_ms, effects, output);
            }
            NodeRole::Management => {}
        }
    }

    /// A message read from a link.
    pub fn on_message(&mut self, now_ms: u64, link: LinkId, message: Message, output: &mut Output) {
        self.on_link_message(now_ms, link, message, output);
        if self.drain.is_some() {
            self.step_drain(now_ms, output);
        }
    }

    fn on_link_message(
        &mut self,
        now_ms: u64,
        link: LinkId,
        message: Message,
        output: &mut Output,
    ) {
        if self.awaiting_restart {
            return;
        }
        let Some(state) = self.links.get_mut(&link) else {
            return;
        };
        state.heard_ms = now_ms;
        let state = *state;
        if state.peer.is_none() {
            self.handshake(now_ms, link, state, message, output);
            return;
        }
        let Some(peer) = state.peer else {
            unreachable!("checked above");
        };
        if matches!(message, Message::Hello { .. } | Message::HelloProof { .. }) {
            // The handshake is over; a second one is not a peer's doing.
            self.close_link(now_ms, link, "a second Hello on the connection", output);
            return;
        }
        if transaction::is_transaction_message(&message) {
            self.on_transaction_message(now_ms, peer, message, output);
            return;
        }
        if peer.role == NodeRole::Api && matches!(message, Message::Heartbeat { .. }) {
            // An API node's heartbeat is answered at once, so the API node
            // hears this node at its own interval and can tell a stopped
            // data node from an idle one.
            let (generation, version) = self.membership.state().map_or((0, 0), |s| s.position());
            output.sends.push((
                link,
                Message::Heartbeat {
                    generation,
                    version,
                    free_pages: None,
                    sent_at_ms: 0,
                },
            ));
            return;
        }
        // API nodes may ask; only data nodes take part in membership.
        if peer.role != NodeRole::Data
            && !matches!(
                message,
                Message::SchemaRequest { .. } | Message::DictionaryRequest { .. }
            )
        {
            return;
        }
        self.deliver(now_ms, peer.node, peer.incarnation, message, output);
    }

    /// A message on a link whose peer has not proved who it is: only its
    /// `Hello` (a claim and a challenge, answered with this node's proof)
    /// and then its `HelloProof` are accepted; anything else closes the
    /// link, so a stranger can make this node do nothing but answer.
    fn handshake(
        &mut self,
        now_ms: u64,
        link: LinkId,
        state: Link,
        message: Message,
        output: &mut Output,
    ) {
        match message {
            Message::Hello {
                node,
                incarnation,
                role,
                nonce,
            } if state.claimed.is_none() => {
                let claim = Peer {
                    node,
                    incarnation,
                    role,
                };
                if let Err(why) = self.check_claim(claim) {
                    self.close_link(now_ms, link, &why, output);
                    return;
                }
                let entry = self.links.get_mut(&link).expect("known");
                entry.claimed = Some(claim);
                // This side dialed if the runtime said so (data nodes); API
                // nodes always dial in. The side that dialed proves itself
                // first; the side that accepted answers only once that
                // proof holds, so its proof tells the dialer it was
                // accepted (a refusal, for want of a slot, comes instead).
                if state.dialed.is_some() {
                    let proof = self.proof_for(true, &nonce);
                    output.sends.push((link, Message::HelloProof { proof }));
                } else {
                    entry.peer_nonce = Some(nonce);
                }
            }
            Message::HelloProof { proof } if state.claimed.is_some() => {
                let claim = state.claimed.expect("guarded");
                if proof_holds(
                    &proof,
                    &self.secret,
                    state.dialed.is_none(),
                    &state.nonce,
                    claim.node,
                    claim.incarnation,
                    claim.role,
                ) {
                    if state.dialed.is_none()
                        && !self.older_than_connected(claim)
                        && !self.refuses_duplicate(now_ms, link, claim)
                    {
                        let nonce = state.peer_nonce.expect("kept with the claim");
                        let proof = self.proof_for(false, &nonce);
                        output.sends.push((link, Message::HelloProof { proof }));
                    }
                    self.identify(now_ms, link, claim, output);
                } else {
                    let why = format!(
                        "it claimed to be node {} but could not prove it",
                        claim.node
                    );
                    output.logs.push(format!("refused a connection: {why}"));
                    self.close_link(now_ms, link, &why, output);
                }
            }
            other => {
                let why = format!("{} before proving who it is", other.name());
                self.close_link(now_ms, link, &why, output);
            }
        }
    }

    /// This node's proof of its identity to the challenge `nonce` of a
    /// link it dialed (or accepted).
    fn proof_for(&self, dialed: bool, nonce: &Nonce) -> protocol::identity::Proof {
        hello_proof(
            &self.secret,
            dialed,
            nonce,
            self.node,
            self.settings.incarnation,
            NodeRole::Data,
        )
    }

    /// Whether a new connection `link` from `peer` is refused because a
    /// live one from the same incarnation exists (heard within two
    /// heartbeat intervals). Both nodes may dial each other at once (the
    /// higher id dials when messages waited, see `dial_peers`); replacing
    /// a connection in use would lose what is in flight on it, which
    /// nothing would ever answer. The accepting side refuses before it
    /// proves itself, so the dialer never uses the new one. A dialer that
    /// finds both identified (the two dials crossed) keeps the one the
    /// lower id dialed, as the other node does. A silent connection is
    /// replaced: its peer has likely closed it.
    fn refuses_duplicate(&self, now_ms: u64, link: LinkId, peer: Peer) -> bool {
        if peer.role != NodeRole::Data {
            return false;
        }
        let dialed_here = self.links.get(&link).is_some_and(|l| l.dialed.is_some());
        let dialing = self
            .links
            .iter()
            .any(|(other, l)| *other != link && l.peer.is_none() && l.dialed == Some(peer.node));
        if !dialed_here && self.node < peer.node && dialing {
            // The higher id dialed while this node's own dial to it is on
            // its way: that one will do.
            return true;
        }
        let live_ms = 2 * self.settings.heartbeat_interval_ms;
        let existing = self
            .peers
            .get(&peer.node)
            .filter(|existing| **existing != link)
            .and_then(|existing| self.links.get(existing))
            .filter(|existing| {
                existing
                    .peer
                    .is_some_and(|p| p.incarnation == peer.incarnation)
                    && now_ms < existing.heard_ms + live_ms
            });
        if existing.is_none() {
            return false;
        }
        // Accepting: refuse. Dialing: keep the existing one unless this
        // one is the lower id's.
        !dialed_here || self.node > peer.node
    }

    /// Whether a newer incarnation of `peer`'s node is connected already.
    fn older_than_connected(&self, peer: Peer) -> bool {
        self.peers
            .get(&peer.node)
            .and_then(|l| self.links.get(l))
            .is_some_and(|current| {
                current
                    .peer
                    .is_some_and(|p| p.incarnation > peer.incarnation)
            })
    }

    /// Whether a `Hello`'s claim could be a peer's at all.
    fn check_claim(&self, claim: Peer) -> Result<(), String> {
        if claim.node == self.node || claim.role == NodeRole::Management {
            return Err("a Hello that cannot be a peer's".into());
        }
        if claim.role == NodeRole::Data && !self.settings.data_nodes.contains(&claim.node) {
            return Err(format!("node {} is not a configured data node", claim.node));
        }
        Ok(())
    }

    /// The peer of `link` proved who it is.
    fn identify(&mut self, now_ms: u64, link: LinkId, peer: Peer, output: &mut Output) {
        if self.refuses_duplicate(now_ms, link, peer) {
            self.marks.duplicate_links_refused += 1;
            self.close_link(
                now_ms,
                link,
                &format!(
                    "a live connection to node {} incarnation {} exists",
                    peer.node, peer.incarnation
                ),
                output,
            );
            return;
        }
        if self.older_than_connected(peer) {
            // An older incarnation never replaces a newer one's connection.
            self.close_link(
                now_ms,
                link,
                &format!(
                    "node {} incarnation {} is older than the connected one",
                    peer.node, peer.incarnation
                ),
                output,
            );
            return;
        }
        let identified = self.links.get_mut(&link).expect("checked by the caller");
        identified.peer = Some(peer);
        identified.heard_ms = now_ms;
        let previous = self.peers.insert(peer.node, link);
        if peer.role == NodeRole::Data {
            let newest = self.connected_incarnation.entry(peer.node).or_default();
            *newest = (*newest).max(peer.incarnation);
            self.pending_since_ms.remove(&peer.node);
            let held = self.pending.remove(&peer.node).unwrap_or_default();
            for (incarnation_min, exact, message) in held {
                let reaches = if exact {
                    peer.incarnation == incarnation_min
                } else {
                    peer.incarnation >= incarnation_min
                };
                if reaches {
                    self.marks.pending_delivered += 1;
                    output.sends.push((link, message));
                } else {
                    // For an incarnation that is gone (one that never
                    // connected, or the one whose link failed).
                    self.messages_dropped += 1;
                }
            }
        }
        // A newer connection from the same node replaces an older one.
        if let Some(old) = previous
            && old != link
        {
            self.marks.replaced_links += 1;
            output
                .close
                .push((old, "replaced by a newer connection".to_string()));
            self.links.remove(&old);
        }
    }

    // ---- the management node ----

    /// A message from the management node.
    pub fn on_management_message(&mut self, now_ms: u64, message: Message, output: &mut Output) {
        if self.awaiting_restart {
            return;
        }
        match message {
            Message::Addresses { entries } => {
                for entry in entries {
                    self.addresses.insert(entry.node, entry);
                }
                // Connect at once: a cluster may form and take work before
                // the next tick.
                self.dial_peers(now_ms, output);
            }
            Message::NodeIdAllocated { node, .. } => {
                if !matches!(self.management, ManagementLink::Allocating { .. }) {
                    return;
                }
                if node != self.node {
                    self.management_failed(
                        now_ms,
                        &format!("the management node allocated node id {node}, not ours"),
                        output,
                    );
                    return;
                }
                self.management = ManagementLink::Up;
                self.marks.management_reconnects += 1;
                output.to_management.push(Message::Addresses {
                    entries: vec![self.listen.clone()],
                });
                output
                    .logs
                    .push("reconnected to the management node".to_string());
            }
            Message::Refused { error } => {
                if matches!(self.management, ManagementLink::Allocating { .. }) {
                    self.management_failed(
                        now_ms,
                        &format!(
                            "the management node refused our node id: {} (error {})",
                            error.message, error.ndb_code
                        ),
                        output,
                    );
                }
            }
            Message::Hello { .. } | Message::HelloProof { .. } => {}
            Message::Drain => self.begin_drain(now_ms, output),
            other => {
                let management_node = self.settings.management_node;
                self.deliver(now_ms, management_node, 0, other, output);
            }
        }
    }

    /// The connection the runtime opened for `connect_management` is up:
    /// ask for this node's id again.
    pub fn on_management_connected(&mut self, now_ms: u64, output: &mut Output) {
        if !matches!(self.management, ManagementLink::Connecting { .. }) {
            return;
        }
        self.management = ManagementLink::Allocating {
            deadline_ms: now_ms + MANAGEMENT_ANSWER_TIMEOUT_MS,
        };
        // The management node asks for no proof (clients get the secret
        // from it); the nonce is never used.
        output.to_management.push(self.hello([0; 16]));
        output.to_management.push(Message::AllocateNodeId {
            role: NodeRole::Data,
            requested: Some(self.node),
            // Already listening: peers must never see port 0 for this node.
            listen_port: self.listen.port,
        });
    }

    /// The management connection closed, or could not be opened.
    pub fn on_management_lost(&mut self, now_ms: u64, why: &str, output: &mut Output) {
        if matches!(self.management, ManagementLink::Down { .. }) {
            return;
        }
        output.logs.push(format!("lost the management node: {why}"));
        self.management = ManagementLink::Down {
            retry_at_ms: now_ms + MANAGEMENT_RETRY_MS,
        };
    }

    fn management_failed(&mut self, now_ms: u64, why: &str, output: &mut Output) {
        output.close_management = Some(why.to_string());
        output.logs.push(format!("management node: {why}"));
        self.management = ManagementLink::Down {
            retry_at_ms: now_ms + MANAGEMENT_RETRY_MS,
        };
    }

    fn drive_management(&mut self, now_ms: u64, output: &mut Output) {
        match self.management {
            ManagementLink::Up => {}
            ManagementLink::Down { retry_at_ms } => {
                if now_ms >= retry_at_ms {
                    self.management = ManagementLink::Connecting {
                        deadline_ms: now_ms + MANAGEMENT_ANSWER_TIMEOUT_MS,
                    };
                    output.connect_management = true;
                }
            }
            ManagementLink::Connecting { deadline_ms }
            | ManagementLink::Allocating { deadline_ms } => {
                if now_ms >= deadline_ms {
                    self.marks.management_timeouts += 1;
                    self.management_failed(
                        now_ms,
                        &format!(
                            "no answer within {MANAGEMENT_ANSWER_TIMEOUT_MS} ms; trying again"
                        ),
                        output,
                    );
                }
            }
        }
    }

    // ---- ticks ----

    /// Periodic work, due at `next_deadline_ms`: lock waits whose time is
    /// up, heartbeats and failure detection, dialing peers, reaching the
    /// management node again.
    pub fn tick(&mut self, now_ms: u64, output: &mut Output) {
        if self.awaiting_restart {
            return;
        }
        if self
            .query_handler
            .next_deadline_ms()
            .is_some_and(|at| at <= now_ms)
        {
            self.marks.lock_wait_ticks += 1;
            self.run_transaction_blocks(now_ms, output, |node, out| {
                node.query_handler.tick(now_ms, out);
            });
        }
        let membership_due = now_ms >= self.membership.next_tick_ms();
        if membership_due || self.epochs.next_tick_ms().is_some_and(|at| at <= now_ms) {
            self.run_transaction_blocks(now_ms, output, |node, out| {
                node.epochs_tick(now_ms, out);
            });
        }
        if membership_due {
            let report = self.query_handler.memory_report();
            self.membership
                .set_memory_pages(u64::from(report.pages_used), u64::from(report.pages_total));
            let (redo_used, redo_total) = self.query_handler.redo().map_or((0, 0), |log| {
                (log.used_bytes(), log.config().capacity_bytes())
            });
            self.membership.set_durability(protocol::Durability {
                epoch: self.epochs.current(),
                durable_epoch: self.epochs.durable_below(),
                redo_used_bytes: redo_used,
                redo_total_bytes: redo_total,
            });
            let mut effects = Effects::new();
            self.membership.tick(now_ms, &mut effects);
            self.apply(now_ms, effects, output);
            if self.awaiting_restart {
                return;
            }
            // The coordinator's inactivity timer (TransactionInactiveTimeout)
            // runs at the node's tick, so it is as exact as the heartbeat.
            self.run_transaction_blocks(now_ms, output, |node, out| {
                node.coordinator.tick(now_ms, out);
            });
            self.report_stalls(now_ms, output);
            self.dial_peers(now_ms, output);
            self.ask_for_addresses(now_ms, output);
            self.close_silent_api_links(now_ms, output);
        }
        self.drive_management(now_ms, output);
        self.step_restore(now_ms, output);
        self.step_disk(output);
        if self.drain.is_some() {
            self.step_drain(now_ms, output);
        }
    }

    // ---- a whole-cluster stop ----

    /// The management node stops the whole cluster (NDB's graceful system
    /// shutdown): no new transactions from now on, the epochs hurry to a
    /// global checkpoint, and `step_drain` answers once nothing more can
    /// commit here, then again each time the durable epoch moves, so the
    /// management node stops the nodes once every commit is on disk.
    fn begin_drain(&mut self, now_ms: u64, output: &mut Output) {
        if let Some(drain) = self.drain.as_mut() {
            // Asked again (a management node that restarted): answer again.
            drain.reported = None;
        } else {
            self.coordinator.drain();
            self.epochs.hurry();
            self.drain = Some(Drain {
                close_at_ms: now_ms + DRAIN_WAIT_MS,
                closed_in: None,
                reported: None,
            });
            output.logs.push(format!(
                "the cluster is shutting down: no new transactions; open ones have \
                 {DRAIN_WAIT_MS} ms to end"
            ));
        }
        self.step_drain(now_ms, output);
    }

    fn step_drain(&mut self, now_ms: u64, output: &mut Output) {
        let Some(drain) = self.drain else {
            return;
        };
        if drain.closed_in.is_none() {
            let undecided = self.coordinator.has_undecided_transactions();
            if undecided && now_ms < drain.close_at_ms {
                return;
            }
            if undecided {
                output.logs.push(format!(
                    "transactions still open after {DRAIN_WAIT_MS} ms are aborted (270): \
                     the cluster is shutting down"
                ));
            }
            self.run_transaction_blocks(now_ms, output, |node, out| node.coordinator.close(out));
            // The epochs go on (the president hurries them to a global
            // checkpoint), but no commit is decided here any more.
            let closed_in = self.epochs.current();
            self.drain.as_mut().expect("checked above").closed_in = Some(closed_in);
        }
        let durable = self.epochs.durable_below();
        let drain = self.drain.as_mut().expect("checked above");
        // A node that fails during the drain may not answer: its commits
        // that a takeover finishes reach the replicas' redo logs in their
        // epochs, which each replica reports with its own.
        let epoch = drain
            .closed_in
            .expect("closed above")
            .max(self.query_handler.logged_epoch_max());
        if drain.reported == Some((epoch, durable)) {
            return;
        }
        drain.reported = Some((epoch, durable));
        output.to_management.push(Message::Drained {
            epoch,
            durable_epoch: durable,
        });
    }

    /// Logs transactions that wait for the cluster longer than
    /// `STALL_REPORT_MS`, and copies that make no progress, with what this
    /// node's query handler waits for: a hang should show in the log where
    /// it waits. At most once per `STALL_REPORT_MS`.
    fn report_stalls(&mut self, now_ms: u64, output: &mut Output) {
        if now_ms < self.stall_reported_ms + STALL_REPORT_MS {
            return;
        }
        let stuck = self.coordinator.describe_stuck(STALL_REPORT_MS);
        if stuck.is_empty() && !self.query_handler.copy_stalled(now_ms, STALL_REPORT_MS) {
            return;
        }
        self.stall_reported_ms = now_ms;
        self.marks.stalls_reported += 1;
        output
            .logs
            .extend(stuck.into_iter().map(|line| format!("stalled: {line}")));
        output.logs.extend(
            self.query_handler
                .describe_waits(now_ms)
                .into_iter()
                .map(|line| format!("stalled: {line}")),
        );
    }

    /// Closes the connection of every API node silent for
    /// `missed_heartbeats_max` of its heartbeat intervals: a stopped or
    /// hung API process would otherwise keep its transactions' locks until
    /// TCP gave up. Closing rolls its open transactions back
    /// (`forget_link`). Checked at each membership tick, so an API node is
    /// declared dead at most one data-node heartbeat interval late.
    fn close_silent_api_links(&mut self, now_ms: u64, output: &mut Output) {
        let silence_ms_max = self.settings.api_heartbeat_interval_ms
            * u64::from(self.settings.missed_heartbeats_max);
        let silent: Vec<(LinkId, NodeId, u64)> = self
            .links
            .iter()
            .filter_map(|(id, link)| {
                let peer = link.peer?;
                let silence_ms = now_ms.saturating_sub(link.heard_ms);
                (peer.role == NodeRole::Api && silence_ms > silence_ms_max)
                    .then_some((*id, peer.node, silence_ms))
            })
            .collect();
        for (link, node, silence_ms) in silent {
            self.marks.api_declared_dead += 1;
            let why = format!(
                "API node {node} declared dead: silent for {silence_ms} ms (MaxMissedHeartbeats \
                 {} x HeartbeatIntervalDbApi {} ms)",
                self.settings.missed_heartbeats_max, self.settings.api_heartbeat_interval_ms
            );
            self.close_link(now_ms, link, &why, output);
        }
    }

    /// Asks the runtime to dial every data node with a higher id that has
    /// no connection yet, and one with a lower id that messages have waited
    /// for longer than two heartbeat intervals: its side may still hold a
    /// connection to an earlier incarnation of this node that died while
    /// their link was cut, which nothing it sends will ever reveal.
    fn dial_peers(&mut self, now_ms: u64, output: &mut Output) {
        let patience_ms = 2 * self.settings.heartbeat_interval_ms;
        for address in self.addresses.values() {
            if address.node == self.node || address.port == 0 {
                continue;
            }
            let waited_long = self
                .pending_since_ms
                .get(&address.node)
                .is_some_and(|since| now_ms >= since + patience_ms);
            if address.node < self.node && !waited_long {
                continue;
            }
            if !self.has_link_to(address.node) {
                output.dial.push(address.clone());
            }
        }
    }

    /// Publishes this node's address again, which makes the management
    /// node send every address it knows, while some configured data node's
    /// address is unknown here (an `Addresses` that never arrived, or a
    /// management node that restarted), at most once per retry interval.
    fn ask_for_addresses(&mut self, now_ms: u64, output: &mut Output) {
        if self.management != ManagementLink::Up
            || now_ms < self.addresses_asked_ms + MANAGEMENT_RETRY_MS
        {
            return;
        }
        let missing = self
            .settings
            .data_nodes
            .iter()
            .any(|node| *node != self.node && !self.addresses.contains_key(node));
        if missing {
            self.addresses_asked_ms = now_ms;
            output.to_management.push(Message::Addresses {
                entries: vec![self.listen.clone()],
            });
        }
    }

    // ---- dispatch ----

    fn on_transaction_message(
        &mut self,
        now_ms: u64,
        peer: Peer,
        message: Message,
        output: &mut Output,
    ) {
        self.run_transaction_blocks(now_ms, output, |node, out| match peer.role {
            NodeRole::Api => {
                // API nodes talk to coordinators only.
                if !transaction::for_query_handler(&message)
                    || matches!(message, Message::ScanNext(_) | Message::ScanClose { .. })
                {
                    node.coordinator_step(peer.node, message, out);
                } else {
                    node.unhandled = Some((peer.node, message));
                }
            }
            NodeRole::Data => {
                if node
                    .departed
                    .get(&peer.node)
                    .is_some_and(|incarnation| peer.incarnation <= *incarnation)
                {
                    node.marks.departed_messages_dropped += 1;
                } else {
                    node.on_data_node_message(now_ms, peer.node, message, out);
                }
            }
            NodeRole::Management => {}
        });
    }

    /// The data nodes that take part in the epoch rounds: the members of
    /// the installed cluster state (a suspected one still counts until the
    /// cluster removes it, and its takeover has begun).
    fn epoch_members(&self) -> std::collections::BTreeSet<NodeId> {
        self.settings
            .data_nodes
            .iter()
            .copied()
            .filter(|node| self.routing.is_live(*node))
            .collect()
    }

    fn epochs_tick(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        let presides = self.membership.is_started()
            && self.membership.acting_president().map(|m| m.node) == Some(self.node);
        let members = self.epoch_members();
        self.epochs
            .tick(now_ms, presides && !members.is_empty(), &members, out);
    }

    /// Passes the epoch protocol's state to the coordinator (the epoch it
    /// decides commits in) and back (`Completed` once the coordinator has
    /// no commit of an earlier epoch on its way).
    fn sync_epochs(&mut self, out: &mut Vec<(NodeId, Message)>) {
        let epoch = self.epochs.commit_epoch();
        if epoch != self.coordinator_epoch {
            self.coordinator_epoch = epoch;
            self.coordinator.set_commit_epoch(epoch, out);
        }
        if let Some(marker) = self.restore_marker
            && self
                .query_handler
                .redo()
                .is_none_or(|log| log.durable() >= marker)
        {
            self.restore_marker = None;
        }
        if let Some(owed) = self.epochs.completion_owed()
            && self.coordinator.commits_settled_below(owed)
            && self.restore_marker.is_none()
        {
            self.epochs.completed(owed, out);
        }
        self.sync_save(out);
    }

    /// Answers a save once the redo log is durable through its head as of
    /// the `Save`: every commit of the epochs being saved was appended by
    /// then (the epochs are complete before the president saves them).
    fn sync_save(&mut self, out: &mut Vec<(NodeId, Message)>) {
        let Some(owed) = self.epochs.save_owed() else {
            self.save_target = None;
            return;
        };
        let Some(log) = self.query_handler.redo_mut() else {
            // A node that keeps nothing on disk has nothing to save.
            self.epochs.saved(owed, out);
            return;
        };
        let target = match self.save_target {
            Some((epoch, target)) if epoch == owed => target,
            _ => {
                // The marker tells a restart that this node's disk holds
                // every commit below `owed` (refused by a full log, the
                // disk restores less far, which is safe).
                if let Some(disk) = &self.disk
                    && disk.mark_saved(log, owed).is_err()
                {
                    self.marks.save_markers_refused += 1;
                }
                let head = log.head();
                log.want_durable(head);
                self.save_target = Some((owed, head));
                head
            }
        };
        if log.durable() >= target {
            self.marks.saves_after_sync += 1;
            self.save_target = None;
            self.epochs.saved(owed, out);
        }
    }

    /// A transaction message from a data node (this one included) goes to
    /// the query handler or the coordinator.
    fn on_data_node_message(
        &mut self,
        now_ms: u64,
        from: NodeId,
        message: Message,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        if let Message::Epoch { step, epoch } = message {
            let president = self.membership.acting_president().map(|m| m.node);
            let members = self.epoch_members();
            self.epochs
                .on_message(now_ms, from, step, epoch, president, &members, out);
        } else if transaction::for_query_handler(&message) {
            if let Some(rest) = self.query_handler.on_message(now_ms, message, out) {
                self.unhandled = Some((from, rest));
            }
        } else {
            self.coordinator_step(from, message, out);
        }
    }

    fn coordinator_step(
        &mut self,
        from: NodeId,
        message: Message,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let observed = self.observing.then(|| (message.clone(), out.len()));
        if let Some(rest) = self.coordinator.on_message(from, message, out) {
            self.unhandled = Some((from, rest));
        }
        if let Some((input, before)) = observed {
            self.steps.push(CoordinatorStep {
                from,
                input,
                sent: out[before..].to_vec(),
            });
        }
    }

    /// Runs `step` on the transaction blocks, then sends what they put out;
    /// messages to this node go through the local queue, in order, until it
    /// is empty.
    fn run_transaction_blocks(
        &mut self,
        now_ms: u64,
        output: &mut Output,
        step: impl FnOnce(&mut DataNodeComposite, &mut Vec<(NodeId, Message)>),
    ) {
        let mut out = std::mem::take(&mut self.transaction_out);
        // Commits are decided only under the membership's lease, as
        // reads are served (`Coordinator::set_lease`).
        let leased = now_ms < self.membership.read_lease_until_ms();
        self.coordinator.set_lease(leased, &mut out);
        step(self, &mut out);
        loop {
            self.sync_epochs(&mut out);
            self.report_step(output);
            for (to, message) in out.drain(..) {
                if to == self.node {
                    self.marks.local_deliveries += 1;
                    self.local.push_back(message);
                } else {
                    self.send(now_ms, to, message, output);
                }
            }
            let Some(message) = self.local.pop_front() else {
                break;
            };
            let node = self.node;
            self.on_data_node_message(now_ms, node, message, &mut out);
        }
        self.transaction_out = out;
        // After everything the coordinator sent (its answers to API nodes
        // of the taken-over transactions go first on each link).
        for failed in self.coordinator.take_takeovers_done() {
            let began_with = self.takeover_api_links.remove(&failed).unwrap_or_default();
            let apis: Vec<LinkId> = self
                .api_links()
                .into_iter()
                .filter(|link| began_with.contains(link))
                .collect();
            for link in apis {
                output.sends.push((
                    link,
                    Message::TakeoverDone {
                        failed_node: failed.node,
                        failed_incarnation: failed.incarnation,
                    },
                ));
            }
        }
        output.logs.extend(self.query_handler.take_copy_log());
        if let Some(status) = self.query_handler.copy_status() {
            self.report_copy(now_ms, status, output);
        }
    }

    /// Node recovery: progress for status reports, and once every fragment
    /// replica is copied, the news for the president.
    fn report_copy(
        &mut self,
        now_ms: u64,
        status: transaction::query_handler::CopyStatus,
        output: &mut Output,
    ) {
        self.membership.set_copy_progress(
            status.fragments_copied,
            status.fragments_to_copy,
            status.rows_copied,
        );
        if status.done && self.membership.is_starting() && !self.copy_reported {
            self.copy_reported = true;
            output.logs.push(format!(
                "node recovery: copied {} fragment replica(s), {} row(s)",
                status.fragments_copied, status.rows_copied
            ));
            let mut effects = Effects::new();
            self.membership.set_fragments_copied(now_ms, &mut effects);
            self.apply(now_ms, effects, output);
        }
    }

    fn report_step(&mut self, output: &mut Output) {
        if let Some((from, message)) = self.unhandled.take() {
            output.problems.push(format!(
                "node {}: no block takes {} from node {from}",
                self.node,
                message.name()
            ));
        }
        output.coordinator_steps.append(&mut self.steps);
        output
            .commit_decisions
            .append(&mut self.coordinator.take_decisions());
    }

    fn deliver(
        &mut self,
        now_ms: u64,
        from: NodeId,
        incarnation: u64,
        message: Message,
        output: &mut Output,
    ) {
        let mut effects = Effects::new();
        self.membership
            .on_message(now_ms, from, incarnation, message, &mut effects);
        self.apply(now_ms, effects, output);
    }

    fn apply(&mut self, now_ms: u64, effects: Effects, output: &mut Output) {
        for event in effects.events {
            match event {
                Event::Installed(state) => {
                    self.departed.clear();
                    for removed in &state.removed {
                        let latest = self.departed.entry(removed.node).or_insert(0);
                        *latest = (*latest).max(removed.incarnation);
                    }
                    // Routing, then the query handler, then the coordinator:
                    // a phase the coordinator resends may reach this node's
                    // query handler, which must know the new fragments.
                    output.problems.extend(self.routing.install(&state));
                    self.query_handler.install(&self.routing);
                    output.problems.extend(self.query_handler.take_log());
                    self.epochs.raise_floor(state.epoch_floor);
                    if let Some(disk) = self.disk.as_mut() {
                        let me = protocol::Member {
                            node: self.node,
                            incarnation: self.settings.incarnation,
                        };
                        disk.installed(me, &state, &mut output.files);
                        // A system restart's member loads its disk before
                        // anything else reaches its fragments.
                        if disk.restore_owed().is_some()
                            && let Err(error) = self.restore(output)
                        {
                            output.stop = Some(format!(
                                "the restore from this node's disk failed: {error} (start it \
                                 with --initial to discard its disk and copy its data from \
                                 the other nodes)"
                            ));
                            return;
                        }
                    }
                    // The president takes over the transactions of every
                    // coordinator removed from the cluster (each once; a
                    // new president again, which finds only what is left).
                    let me = self.membership.member();
                    let takeovers: Vec<Member> = if state.president() == Some(me) {
                        state
                            .removed
                            .iter()
                            .copied()
                            .filter(|removed| {
                                removed.node != me.node || removed.incarnation != me.incarnation
                            })
                            .collect()
                    } else {
                        Vec::new()
                    };
                    let position = state.position();
                    // The API nodes connected as a takeover begins get
                    // every answer it gives on these very connections, so
                    // only they may hear that it is done (`TakeoverDone`:
                    // the API then takes a commit it got no answer for as
                    // aborted). One that connects later may have missed an
                    // answer, and waits out its outcome wait instead.
                    let api_links = self.api_links();
                    for failed in &takeovers {
                        if !self.coordinator.has_taken_over(*failed) {
                            self.takeover_api_links.insert(*failed, api_links.clone());
                        }
                    }
                    self.run_transaction_blocks(now_ms, output, |node, out| {
                        node.query_handler.answer_queued_queries(out);
                        node.query_handler.start_copies(now_ms, out);
                        node.coordinator.install(&node.routing, out);
                        for failed in takeovers {
                            node.coordinator.take_over(failed, position, out);
                        }
                    });
                    output.installed.push(*state);
                }
                Event::Excluded { reason } => {
                    self.awaiting_restart = true;
                    output.excluded = Some(reason);
                    // Whatever it wanted to send dies with the incarnation.
                    return;
                }
                Event::Stop { reason, restart } => {
                    output.stop = Some(reason);
                    output.restart = restart;
                }
                Event::Suspected(member) => {
                    // A silent link may never close by itself (a stopped
                    // process, a cut that drops packets): close it so the
                    // dialing side connects afresh and a healed peer is
                    // reached within a dial, not after TCP gives up.
                    let link = self.peers.get(&member.node).copied();
                    if let Some(link) = link
                        && self
                            .peer_of(link)
                            .is_some_and(|p| p.incarnation <= member.incarnation)
                    {
                        self.marks.suspected_links_closed += 1;
                        let why = format!(
                            "suspected node {} incarnation {}",
                            member.node, member.incarnation
                        );
                        self.close_link(now_ms, link, &why, output);
                        self.dial_peers(now_ms, output);
                    }
                }
                Event::Serving(serving) => self.coordinator.set_serving(serving),
                Event::Log(line) => output.logs.push(line),
                Event::PersistVotes(_) => output.problems.push(format!(
                    "data node {} was asked to persist votes",
                    self.node
                )),
            }
        }
        for (to, message) in effects.sends {
            self.send(now_ms, to, message, output);
        }
        // Reads are served only under the membership's lease, which
        // changes only when the membership block runs (`cluster::lease`).
        let lease = self.membership.read_lease_until_ms();
        self.query_handler.set_read_lease_until_ms(lease);
        // Commits that waited for the lease go out as soon as a heartbeat
        // brings it back, not at the next message or tick.
        if now_ms < lease && self.coordinator.commits_wait_for_lease() {
            self.marks.commits_released_by_lease += 1;
            self.run_transaction_blocks(now_ms, output, |_, _| {});
        }
    }

    /// The connections of the API nodes connected now.
    fn api_links(&self) -> Vec<LinkId> {
        self.peers
            .values()
            .copied()
            .filter(|link| self.peer_of(*link).is_some_and(|p| p.role == NodeRole::Api))
            .collect()
    }

    /// The incarnation of `node` in the installed state, if it is a member.
    fn member_incarnation(&self, node: NodeId) -> Option<u64> {
        self.membership
            .state()
            .and_then(|state| state.member_of(node))
            .map(|member| member.incarnation)
    }

    fn send(&mut self, now_ms: u64, to: NodeId, message: Message, output: &mut Output) {
        if to == self.settings.management_node {
            if self.management == ManagementLink::Up {
                output.to_management.push(message);
            } else {
                self.messages_dropped += 1;
            }
            return;
        }
        if let Some(link) = self.peers.get(&to).copied() {
            let member = self.member_incarnation(to);
            let reached = self.links.get(&link).and_then(|l| l.peer);
            match (reached, member) {
                (Some(peer), Some(member)) if peer.incarnation < member => {
                    // The member restarted and was admitted again before
                    // this node saw the old incarnation's connection fail:
                    // sent there, the message would be lost with it (and a
                    // write chain through the new incarnation would never
                    // be answered). Close the stale connection and hold
                    // the message for the new one.
                    self.marks.stale_links_closed += 1;
                    self.close_link(
                        now_ms,
                        link,
                        &format!(
                            "node {to} incarnation {} was replaced by incarnation {member}",
                            peer.incarnation
                        ),
                        output,
                    );
                }
                _ => {
                    output.sends.push((link, message));
                    return;
                }
            }
        }
        if !self.settings.data_nodes.contains(&to) {
            self.messages_dropped += 1;
            return;
        }
        let (incarnation_min, exact) = match self.connected_incarnation.get(&to) {
            None => (0, false),
            Some(connected) => {
                let member = self.member_incarnation(to);
                if member == Some(*connected) {
                    let suspected = self.membership.suspects(protocol::Member {
                        node: to,
                        incarnation: *connected,
                    });
                    if suspected {
                        // The link to a member failed and this node
                        // suspects it: the membership change that removes
                        // one of the two ends what the message was part of.
                        self.messages_dropped += 1;
                        return;
                    }
                    // The link failed while this node was not a member
                    // yet (a joining node suspects no one), or the
                    // suspicion was settled: the same incarnation is
                    // dialed again and gets the message then (and only
                    // it: a Commit it was to pass on must not reach a
                    // later incarnation after the transaction finished).
                    (*connected, true)
                } else {
                    // A restarted node, admitted (or, on a state this node
                    // has not installed yet, about to be) as a newer
                    // incarnation: a write chain names it from its
                    // admission on, and a write dropped on its way to it
                    // would never be answered. It is sent once a newer
                    // incarnation is connected.
                    (connected + 1, false)
                }
            }
        };
        self.pending_since_ms.entry(to).or_insert(now_ms);
        let held = self.pending.entry(to).or_default();
        if held.len() >= PENDING_MESSAGES_PER_NODE_MAX {
            self.messages_dropped += 1;
            return;
        }
        held.push((incarnation_min, exact, message));
        if held.len() == PENDING_MESSAGES_PER_NODE_MAX {
            output.logs.push(format!(
                "node {to} is still not connected after {PENDING_MESSAGES_PER_NODE_MAX} messages \
                 for it; dropping more until it is"
            ));
        }
    }

    // ---- restart ----

    /// Starts over as `incarnation` after an exclusion: every peer
    /// connection closes so peers see the old incarnation fail at once;
    /// the new incarnation has no data or transactions (its fragments come
    /// back when it is admitted again). The management connection stays.
    pub fn restart(&mut self, now_ms: u64, incarnation: u64, output: &mut Output) {
        assert!(self.awaiting_restart, "restart follows an exclusion");
        assert!(
            incarnation > self.settings.incarnation,
            "a new incarnation is newer"
        );
        for link in std::mem::take(&mut self.links).into_keys() {
            output.close.push((link, "restarting".to_string()));
        }
        self.peers.clear();
        self.pending.clear();
        self.takeover_api_links.clear();
        self.pending_since_ms.clear();
        self.connected_incarnation.clear();
        self.local.clear();
        self.membership_marks.add(&self.membership.marks());
        self.settings.incarnation = incarnation;
        self.membership = DataNode::new(self.settings.clone(), now_ms);
        self.query_handler.set_read_lease_until_ms(0);
        self.coordinator = Coordinator::new(self.node, incarnation, self.coordinator_config);
        self.coordinator.record_decisions(self.observing);
        self.epochs = Epochs::new(self.epoch_config);
        self.coordinator_epoch = None;
        self.save_target = None;
        self.restore_marker = None;
        if let Some(disk) = self.disk.as_mut() {
            disk.restarted();
        }
        self.restoring = None;
        self.routing = Routing::new();
        self.departed.clear();
        self.query_handler.install(&self.routing);
        output.logs.extend(self.query_handler.take_log());
        self.awaiting_restart = false;
        self.copy_reported = false;
        if let Some(drain) = self.drain.as_mut() {
            // The cluster is still shutting down: the new incarnation takes
            // no transactions either, and says so again.
            self.coordinator.drain();
            self.epochs.hurry();
            *drain = Drain {
                close_at_ms: now_ms,
                closed_in: None,
                reported: None,
            };
        }
        self.marks.restarts += 1;
        output
            .logs
            .push(format!("restarted as incarnation {incarnation}"));
        self.dial_peers(now_ms, output);
    }

    /// Whether the node waits for `restart`.
    pub fn is_awaiting_restart(&self) -> bool {
        self.awaiting_restart
    }
}
