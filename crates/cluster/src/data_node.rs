//! The data node's cluster block: admission, heartbeats, failure detection,
//! and agreement on the cluster state (membership and dictionary).
//!
//! Every change to the cluster state gets the next version, and the data
//! nodes agree on each version's change with single-decree Paxos. The
//! voters for version v+1 are the members of version v (weight 2 each) and
//! the arbitrator (weight 1), so a majority of the nodes decides alone and
//! exactly half decides only with the arbitrator: NDB's split-brain rule,
//! with Paxos making sure two sides can never decide different states.
//!
//! The acting president (the first member this node does not suspect)
//! proposes every change: removing failed nodes, admitting one new node at
//! a time (at the end of the list, so the list is admission order and the
//! oldest member presides, as in NDB), and dictionary changes. The decided
//! state travels whole (`Decided`), so a node that missed versions, or a new
//! node, catches up by installing it.
//!
//! Failure detection: every member sends a heartbeat to every other member
//! each `heartbeat_interval_ms`. A member not heard from for
//! `missed_heartbeats_max` intervals, or whose connection closed, is
//! suspected; the president removes suspected members. A member that cannot
//! get a change decided within `arbitration_timeout_ms` of suspecting a
//! peer excludes itself if its side is a minority even with the
//! arbitrator's vote (NDB's rule); with exactly half of the members, only
//! the arbitrator decides, and the side stops serving
//! (`Event::Serving(false)`: the runtime refuses new API work with 4035)
//! but keeps its memory and keeps proposing; it excludes
//! itself only on learning a state without it (the arbitrator answers a
//! losing side's vote request with the decided state). NDB's losing side
//! shuts down and restarts from disk; a Shoal node does not yet restart
//! into a running cluster from its own disk (it copies), so a side
//! that merely lost the arbitrator (a lone survivor, say) waits for it and
//! serves again with its data once a change is agreed.
//!
//! The block is sans-IO: inputs are (now, message) pairs, connection
//! events and ticks; outputs are `Effects`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use protocol::{
    Ballot, Change, ClusterState, DataNodeReport, Durability, ErrorReply, FreePages, Member,
    Message, NodeId, SchemaRequestId,
};

use crate::acceptor::{Acceptor, Vote};
use crate::dictionary;
use crate::effects::{Effects, Event};
use crate::lease::Leases;
use crate::state::{Electorate, Voter, apply, covers_node_groups, uncovered_node_group};

/// Schema requests waiting at the president beyond this many are refused
/// with a temporary error.
pub const SCHEMA_REQUESTS_QUEUED_MAX: usize = 64;
/// Refused schema requests the president remembers, so a duplicate or
/// late copy of one gets the same refusal rather than being planned again
/// when, say, memory was freed since: a request gets one answer.
pub const SCHEMA_REFUSALS_REMEMBERED_MAX: usize = 256;
/// A proposal that has not decided after this many heartbeat intervals is
/// retried with a higher ballot.
const PROPOSAL_TIMEOUT_INTERVALS: u64 = 4;
/// A report of a suspected member not repeated for this many heartbeat
/// intervals is dropped.
const REPORT_LIFETIME_INTERVALS: u64 = 3;
/// A join request not repeated for this many heartbeat intervals is dropped.
const JOIN_REQUEST_LIFETIME_INTERVALS: u64 = 4;

/// What a data node's disk held when it started, as its status reports
/// tell the management node for a system restart (`NodeReport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskAtStart {
    /// Every commit of the epochs below this is on the disk (0: none a
    /// system restart can use) ...
    pub restorable_epoch: u64,
    /// ... saved in this generation ...
    pub restorable_generation: u64,
    /// ... and, when that save is a system restart's mark of its restore
    /// point, the same commits as this generation's (0: none).
    pub restored_from_generation: u64,
    /// The highest epoch of any record on the disk.
    pub disk_epoch_max: u64,
}

/// Everything the block needs from the configuration.
#[derive(Debug, Clone)]
pub struct DataNodeSettings {
    pub node: NodeId,
    pub incarnation: u64,
    /// Every configured data node.
    pub data_nodes: Vec<NodeId>,
    pub node_groups: Vec<Vec<NodeId>>,
    pub ldm_threads: u32,
    pub management_node: NodeId,
    /// The management node votes as arbitrator when its ArbitrationRank > 0.
    pub arbitrator: Option<NodeId>,
    pub heartbeat_interval_ms: u64,
    /// HeartbeatIntervalDbApi: an API node's connection silent for
    /// `missed_heartbeats_max` of these is closed (its transactions abort).
    pub api_heartbeat_interval_ms: u64,
    pub missed_heartbeats_max: u32,
    pub arbitration_timeout_ms: u64,
    /// MaxNoOfTables: table metadata objects (tables and unique hash
    /// indexes) the dictionary holds.
    pub tables_max: u32,
    /// Most fragment replicas one node holds (its query handler's engine tables).
    pub fragment_replicas_per_node_max: u32,
}

impl DataNodeSettings {
    /// The block's settings from a parsed config.ini.
    pub fn from_config(
        config: &config::ClusterConfig,
        node: NodeId,
        incarnation: u64,
    ) -> Option<DataNodeSettings> {
        let own = config.data_node(node)?;
        let management = config.management_nodes.first()?;
        Some(DataNodeSettings {
            node,
            incarnation,
            data_nodes: config.data_nodes.iter().map(|d| d.node_id).collect(),
            node_groups: config.node_groups.clone(),
            ldm_threads: own.ldm_threads(),
            management_node: management.node_id,
            arbitrator: (management.arbitration_rank > 0).then_some(management.node_id),
            heartbeat_interval_ms: own.heartbeat_interval_db_db_ms,
            api_heartbeat_interval_ms: own.heartbeat_interval_db_api_ms,
            missed_heartbeats_max: own.missed_heartbeats_max,
            arbitration_timeout_ms: own.arbitration_timeout_ms,
            // Every president must refuse the same creates, so the
            // smallest MaxNoOfTables of any data node bounds the dictionary.
            tables_max: config
                .data_nodes
                .iter()
                .map(|d| d.tables_max)
                .min()
                .unwrap_or(own.tables_max),
            fragment_replicas_per_node_max: dictionary::FRAGMENT_REPLICAS_PER_NODE_MAX,
        })
    }
}

/// Counts of rare paths taken (coverage marks): the simulator's tests
/// assert that their seeds reach each of them, so the checks cover them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Marks {
    /// Phase 1 found a change an earlier proposer got accepted and proposed
    /// that one instead of its own (the Paxos recovery path).
    pub adopted_earlier_change: u64,
    /// A change was decided only thanks to the arbitrator's vote.
    pub decided_with_arbitrator: u64,
    /// A proposal that did not decide in time was started again.
    pub proposals_retried: u64,
    /// The node left because no quorum agreed within ArbitrationTimeout
    /// and its side is a minority even with the arbitrator's vote.
    pub excluded_without_quorum: u64,
    /// The node stopped serving because no quorum agreed within
    /// ArbitrationTimeout though the arbitrator's vote could still make
    /// its side win (it keeps its memory and keeps proposing).
    pub stopped_serving_without_quorum: u64,
    /// A node that had stopped serving installed a state with itself in it
    /// and serves again, with its data.
    pub serving_again: u64,
    /// The node left because a whole node group was lost.
    pub excluded_node_group_lost: u64,
    /// The node learned that the others had removed it.
    pub excluded_by_others: u64,
    /// A retried schema request was answered from the outcome the agreed
    /// state remembers (its first attempt had been applied).
    pub schema_retry_answered_from_state: u64,
    /// A schema request whose change this node proposed or accepted for
    /// the next version, and which may still be decided there, was
    /// proposed again instead of being judged afresh.
    pub schema_request_proposed_again: u64,
    /// A suspected member was heard from again (its connection was closed
    /// again; the suspicion stands until a change settles it).
    pub suspected_members_heard_again: u64,
    /// A proposal from a member this node does not follow (`follows`) was
    /// refused.
    pub proposals_refused_from_a_member_not_followed: u64,
    /// A create that the members' free DataMemory, as last reported, could
    /// not hold waited for reports measured after the last dictionary
    /// change (one may have been a drop that freed pages).
    pub schema_request_waited_for_memory_report: u64,
}

impl Marks {
    pub fn add(&mut self, other: &Marks) {
        self.adopted_earlier_change += other.adopted_earlier_change;
        self.decided_with_arbitrator += other.decided_with_arbitrator;
        self.proposals_retried += other.proposals_retried;
        self.excluded_without_quorum += other.excluded_without_quorum;
        self.stopped_serving_without_quorum += other.stopped_serving_without_quorum;
        self.serving_again += other.serving_again;
        self.excluded_node_group_lost += other.excluded_node_group_lost;
        self.excluded_by_others += other.excluded_by_others;
        self.schema_retry_answered_from_state += other.schema_retry_answered_from_state;
        self.schema_request_proposed_again += other.schema_request_proposed_again;
        self.suspected_members_heard_again += other.suspected_members_heard_again;
        self.proposals_refused_from_a_member_not_followed +=
            other.proposals_refused_from_a_member_not_followed;
        self.schema_request_waited_for_memory_report +=
            other.schema_request_waited_for_memory_report;
    }
}

#[derive(Debug)]
enum Phase {
    Preparing {
        promises: BTreeMap<NodeId, (u32, Option<(Ballot, Change)>)>,
    },
    Accepting {
        change: Change,
        accepted: BTreeMap<NodeId, u32>,
    },
}

#[derive(Debug)]
struct Proposal {
    generation: u64,
    version: u64,
    ballot: Ballot,
    /// This node's own acceptance of the change it asks for, held until
    /// its promises to the members the change removes expire (`lease`).
    own_accept_due_ms: Option<u64>,
    /// What this node wants decided; Paxos may make it decide an earlier
    /// proposer's change first.
    desired: Change,
    phase: Phase,
    electorate: Electorate,
    retry_at_ms: u64,
}

/// A decided schema change whose answer waits for every member to install it.
#[derive(Debug, Clone)]
struct AwaitingInstall {
    origin: SchemaRequestId,
    table_id: u32,
    position: (u64, u64),
    deadline_ms: u64,
}

/// Longest wait, in heartbeat intervals, for every member to install a
/// schema change before it is acknowledged anyway.
const INSTALL_WAIT_INTERVALS_MAX: u64 = 4;
/// Most acknowledgements waiting at once (each is one queued schema request).
const AWAITING_INSTALLS_MAX: usize = SCHEMA_REQUESTS_QUEUED_MAX;

#[derive(Debug, Clone)]
struct SchemaRequest {
    from: NodeId,
    request: u64,
    change: protocol::SchemaChange,
}

impl SchemaRequest {
    fn origin(&self) -> SchemaRequestId {
        SchemaRequestId {
            node: self.from,
            request: self.request,
        }
    }
}

pub struct DataNode {
    settings: DataNodeSettings,
    me: Member,
    /// The installed state; `None` until this incarnation is admitted.
    state: Option<ClusterState>,
    /// Acceptor for version `state.version + 1`.
    acceptor: Acceptor,
    proposal: Option<Proposal>,
    round_seen: u32,
    last_heard_ms: BTreeMap<NodeId, u64>,
    /// Members of the installed state this node has heard from at all.
    heard_from: BTreeSet<Member>,
    /// Members this node lost contact with, until the next installed
    /// state, or until one is heard from again before any change this
    /// node accepted acted on the suspicion (it was false).
    suspected: BTreeSet<Member>,
    /// Members others reported for the installed version, with when the
    /// newest report came; only the president acts on them, and only on
    /// reports renewed lately (a reporter repeats its report at every
    /// heartbeat while it suspects, and stops once it hears again).
    reported: BTreeMap<Member, u64>,
    first_suspicion_ms: Option<u64>,
    join_requests: BTreeMap<NodeId, (Member, u64)>,
    schema_requests: VecDeque<SchemaRequest>,
    /// The newest permanent refusals this node gave as president.
    schema_refusals: VecDeque<(SchemaRequestId, ErrorReply)>,
    next_heartbeat_ms: u64,
    stopped: bool,
    /// False from ArbitrationTimeout without agreement until a state with
    /// this node in it is installed.
    serving: bool,
    /// DataMemory pages (used, total), set by the runtime for status reports.
    memory_pages: (u64, u64),
    /// (schema version, pages): what the president counted for the tables
    /// of that version on this node, when they were admitted.
    reserved_pages: (u64, u64),
    /// The schema version installed when `memory_pages` was measured.
    memory_schema_version: u64,
    /// Epochs and the redo log, set by the runtime for status reports.
    durability: Durability,
    /// What the node's disk held at start (`set_restorable`).
    restorable: DiskAtStart,
    /// Each member's free DataMemory from its last heartbeat (the
    /// president plans creates against it).
    member_free_pages: BTreeMap<Member, FreePages>,
    marks: Marks,
    /// The position each member last said it installed (its heartbeats).
    member_positions: BTreeMap<Member, (u64, u64)>,
    awaiting_installs: Vec<AwaitingInstall>,
    /// Starting members that told this node, as president, they copied
    /// every fragment replica (`NodeCopied`).
    copied_members: BTreeSet<Member>,
    /// This node, while starting, has copied every fragment replica it
    /// holds (set by the runtime from its query handler).
    fragments_copied: bool,
    /// Node recovery progress for status reports: fragment replicas
    /// copied, to copy, and rows copied.
    copy_progress: (u32, u32, u64),
    /// The leases this node holds and the promises it made (`lease`).
    leases: Leases,
    /// Members whose removal this node proposed, accepted, or will accept
    /// once its promises expire (for the next version): it vouches no more
    /// for them.
    removing: BTreeSet<Member>,
    /// Accepts of changes that remove members this node promised, held
    /// until the promises expire; the newest per proposer.
    deferred_accepts: BTreeMap<NodeId, DeferredAccept>,
}

/// An `Accept` this node answers once `due_ms` has come.
#[derive(Debug)]
struct DeferredAccept {
    due_ms: u64,
    sender: Member,
    generation: u64,
    version: u64,
    ballot: Ballot,
    change: Box<Change>,
}

impl DataNode {
    pub fn new(settings: DataNodeSettings, now_ms: u64) -> DataNode {
        assert!(settings.data_nodes.contains(&settings.node));
        assert!(settings.heartbeat_interval_ms > 0);
        // Half the failure detection time: a silent member is suspected
        // only once every promise to it has expired.
        let lease_ms =
            (settings.heartbeat_interval_ms * u64::from(settings.missed_heartbeats_max) / 2).max(8);
        let me = Member {
            node: settings.node,
            incarnation: settings.incarnation,
        };
        DataNode {
            settings,
            me,
            state: None,
            acceptor: Acceptor::default(),
            proposal: None,
            round_seen: 0,
            last_heard_ms: BTreeMap::new(),
            heard_from: BTreeSet::new(),
            suspected: BTreeSet::new(),
            reported: BTreeMap::new(),
            first_suspicion_ms: None,
            join_requests: BTreeMap::new(),
            schema_requests: VecDeque::new(),
            schema_refusals: VecDeque::new(),
            next_heartbeat_ms: now_ms,
            stopped: false,
            serving: true,
            memory_pages: (0, 0),
            reserved_pages: (0, 0),
            durability: Durability::default(),
            restorable: DiskAtStart::default(),
            memory_schema_version: 0,
            member_free_pages: BTreeMap::new(),
            marks: Marks::default(),
            member_positions: BTreeMap::new(),
            awaiting_installs: Vec::new(),
            copied_members: BTreeSet::new(),
            fragments_copied: false,
            copy_progress: (0, 0, 0),
            leases: Leases::new(lease_ms),
            removing: BTreeSet::new(),
            deferred_accepts: BTreeMap::new(),
        }
    }

    /// Until when this node may serve reads (its own clock): while it holds
    /// a lease from every other member of its state, serves, and is a
    /// member at all (`lease`).
    pub fn read_lease_until_ms(&self) -> u64 {
        let Some(state) = self.state.as_ref().filter(|_| self.is_started()) else {
            return 0;
        };
        if !self.serving || self.stopped {
            return 0;
        }
        let me = self.me;
        self.leases
            .read_lease_until_ms(state.members.iter().copied().filter(|m| *m != me))
    }

    /// Whether this node still vouches for `member` (echoes its heartbeats).
    fn vouches_for(&self, member: Member) -> bool {
        self.is_started()
            && self.state.as_ref().is_some_and(|s| s.contains(member))
            && member != self.me
            && !self.suspected.contains(&member)
            && !self.reported.contains_key(&member)
            && !self.removing.contains(&member)
    }

    /// Whether this node takes part in `proposer`'s ballots. It does not
    /// follow a member it suspects, nor one behind a member it still hears
    /// (or behind itself): a member proposes only once it suspects every
    /// member ahead of it, so if this node hears one of them, the proposer
    /// is the one cut off (or just healed), and following it would remove
    /// a member the rest of the cluster hears. The proposer's suspicion
    /// closed its connection to that member, which therefore suspects the
    /// proposer too and, as the president this node follows, settles it.
    fn follows(&self, proposer: Member) -> bool {
        let Some(state) = self.state.as_ref() else {
            return true;
        };
        if !state.contains(proposer) {
            return true;
        }
        if self.suspected.contains(&proposer) {
            return false;
        }
        !state
            .members
            .iter()
            .copied()
            .take_while(|m| *m != proposer)
            .any(|m| m == self.me || self.vouches_for(m))
    }

    /// The members of the installed state that `change` removes.
    fn removed_by(&self, change: &Change) -> Vec<Member> {
        let (Some(state), Change::Membership { members }) = (self.state.as_ref(), change) else {
            return Vec::new();
        };
        state
            .members
            .iter()
            .copied()
            .filter(|m| *m != self.me && !members.contains(m))
            .collect()
    }

    /// Whether this node is a member still copying its fragment replicas.
    pub fn is_starting(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| s.starting.contains(&self.me))
    }

    /// The query handler copied every fragment replica this starting node
    /// holds: tell the president (again at every heartbeat until a state
    /// makes this node started).
    pub fn set_fragments_copied(&mut self, now_ms: u64, effects: &mut Effects) {
        if !self.fragments_copied {
            self.fragments_copied = true;
            self.send_node_copied(now_ms, effects);
        }
    }

    /// Node recovery progress for status reports.
    pub fn set_copy_progress(&mut self, copied: u32, total: u32, rows: u64) {
        self.copy_progress = (copied, total, rows);
    }

    fn send_node_copied(&mut self, now_ms: u64, effects: &mut Effects) {
        if !self.fragments_copied || !self.is_starting() {
            return;
        }
        match self.acting_president() {
            Some(president) if president == self.me => {
                self.copied_members.insert(self.me);
                self.drive_proposal(now_ms, effects);
            }
            Some(president) => {
                effects.send(president.node, Message::NodeCopied { member: self.me });
            }
            None => {}
        }
    }

    /// The rare paths this incarnation took.
    pub fn marks(&self) -> Marks {
        self.marks
    }

    pub fn member(&self) -> Member {
        self.me
    }

    pub fn settings(&self) -> &DataNodeSettings {
        &self.settings
    }

    /// The installed cluster state, once this node is a member.
    pub fn state(&self) -> Option<&ClusterState> {
        self.state.as_ref()
    }

    /// Whether the members this node does not suspect, itself included,
    /// together with the arbitrator's vote, are a majority of the voters on
    /// the next state: exactly half of the members can still win, fewer
    /// never can.
    fn could_win_with_arbitrator(&self) -> bool {
        let Some(state) = self.state.as_ref() else {
            return false;
        };
        let electorate = Electorate::for_state(state, self.settings.arbitrator);
        let weight: u32 = electorate
            .voters
            .iter()
            .filter(|(voter, _)| match voter {
                Voter::DataNode(member) => !self.suspected.contains(member),
                Voter::Arbitrator(_) => true,
            })
            .map(|(_, weight)| weight)
            .sum();
        electorate.is_quorum(weight)
    }

    /// Whether this node suspects `member` (and asks for its removal).
    pub fn suspects(&self, member: Member) -> bool {
        self.suspected.contains(&member)
    }

    /// Whether the node may take new API work: false after
    /// ArbitrationTimeout without agreement, until a state is agreed.
    pub fn is_serving(&self) -> bool {
        self.serving
    }

    pub fn is_started(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.contains(self.me))
    }

    /// When the runtime must call `tick` next.
    pub fn next_tick_ms(&self) -> u64 {
        let deferred = self.deferred_accepts.values().map(|d| d.due_ms).min();
        let own = self.proposal.as_ref().and_then(|p| p.own_accept_due_ms);
        [Some(self.next_heartbeat_ms), deferred, own]
            .into_iter()
            .flatten()
            .min()
            .expect("the heartbeat is always due")
    }

    /// The node this one believes presides: the first member it does not suspect.
    pub fn acting_president(&self) -> Option<Member> {
        let state = self.state.as_ref()?;
        state
            .members
            .iter()
            .copied()
            .find(|m| !self.suspected.contains(m))
    }

    fn is_acting_president(&self) -> bool {
        self.is_started() && self.acting_president() == Some(self.me)
    }

    /// Sets the DataMemory figures the next status report and heartbeats
    /// carry. The runtime measures after it created the fragments of the
    /// installed state, so the figures count every table up to its schema
    /// version.
    pub fn set_memory_pages(&mut self, used: u64, total: u64) {
        self.memory_pages = (used, total);
        self.memory_schema_version = self.state.as_ref().map_or(0, |s| s.schema_version);
        if self.reserved_pages.0 != self.memory_schema_version {
            let me = self.me.node;
            let reserved = self.state.as_ref().map_or(0, |state| {
                state
                    .tables
                    .iter()
                    .map(|table| {
                        dictionary::pages_per_node(table)
                            .get(&me)
                            .copied()
                            .unwrap_or(0)
                    })
                    .sum()
            });
            self.reserved_pages = (self.memory_schema_version, reserved);
        }
    }

    /// What the node's disk held at start, for the management node's
    /// system restart.
    pub fn set_restorable(&mut self, disk: DiskAtStart) {
        self.restorable = disk;
    }

    /// Sets the epochs and redo log figures the next status report carries.
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// The free DataMemory heartbeats report, once the runtime measured it.
    fn free_pages(&self) -> Option<FreePages> {
        let (used, total) = self.memory_pages;
        // The president admitted each table for the pages it counts for
        // it, one for its first rows among them, which an empty table has
        // not taken yet: those stay promised, or a table created later
        // could take the page an earlier one's first insert needs. A
        // bound, not a per-table account: once the tables' rows use more
        // than all of them were counted for, used pages alone are told.
        let used = used.max(self.reserved_pages.1);
        (total > 0).then(|| FreePages {
            pages: total.saturating_sub(used),
            schema_version: self.memory_schema_version,
        })
    }

    fn send_report(&self, effects: &mut Effects) {
        effects.send(
            self.settings.management_node,
            Message::StatusReport {
                report: Box::new(self.report()),
            },
        );
    }

    /// The report the management node shows in `SHOW` and `ALL REPORT MEMORY`.
    pub fn report(&self) -> DataNodeReport {
        let (pages_used, pages_total) = self.memory_pages;
        let state = self.state.as_ref();
        DataNodeReport {
            started: self.is_started(),
            recovering: self.is_starting(),
            fragments_copied: self.copy_progress.0,
            fragments_to_copy: self.copy_progress.1,
            rows_copied: self.copy_progress.2,
            incarnation: self.me.incarnation,
            generation: state.map_or(0, |s| s.generation),
            version: state.map_or(0, |s| s.version),
            president: state.and_then(|s| s.president()).map_or(0, |m| m.node),
            members: state.map_or(Vec::new(), |s| s.members.iter().map(|m| m.node).collect()),
            schema_version: state.map_or(0, |s| s.schema_version),
            tables: state.map_or(0, |s| s.tables.len() as u32),
            pages_used,
            pages_total,
            durability: self.durability,
            restorable_epoch: self.restorable.restorable_epoch,
            restorable_generation: self.restorable.restorable_generation,
            restored_from_generation: self.restorable.restored_from_generation,
            disk_epoch_max: self.restorable.disk_epoch_max,
        }
    }

    /// A connection to `peer` closed: if it is the member, it has failed
    /// at once. A connection from an older incarnation (one that lingered
    /// after the node restarted and was admitted again) says nothing about
    /// the member.
    pub fn on_disconnected(&mut self, now_ms: u64, peer: Member, effects: &mut Effects) {
        if let Some(member) = self.state.as_ref().and_then(|s| s.member_of(peer.node))
            && member == peer
            && member != self.me
            && self.is_started()
        {
            self.suspect(now_ms, member, "its connection closed", effects);
        }
    }

    /// Periodic work: heartbeats, failure detection, proposals, retries.
    pub fn tick(&mut self, now_ms: u64, effects: &mut Effects) {
        if self.stopped {
            return;
        }
        self.answer_deferred_accepts(now_ms, effects);
        if now_ms < self.next_heartbeat_ms {
            self.drive_proposal(now_ms, effects);
            return;
        }
        let interval = self.settings.heartbeat_interval_ms;
        self.next_heartbeat_ms = now_ms + interval;
        self.send_report(effects);
        self.release_acknowledgements(now_ms, effects);
        if self.is_started() {
            let state = self.state.as_ref().expect("started");
            let version = state.version;
            let generation = state.generation;
            let silence_ms_max = interval * u64::from(self.settings.missed_heartbeats_max);
            let mut silent = Vec::new();
            let free_pages = self.free_pages();
            for member in &state.members {
                if *member == self.me {
                    continue;
                }
                effects.send(
                    member.node,
                    Message::Heartbeat {
                        generation,
                        version,
                        free_pages,
                        sent_at_ms: now_ms,
                    },
                );
                let heard = self
                    .last_heard_ms
                    .get(&member.node)
                    .copied()
                    .unwrap_or(now_ms);
                // A member admitted before this node that it never heard
                // from is not suspected for its silence at first: the
                // newcomer's connections are what is missing (its address
                // reached the others late, say), and removing a member
                // that holds data for a node still starting would be the
                // wrong way round; that member suspects this one if it
                // stays silent. After twice the detection time the silence
                // is the member's (it may have died before they met).
                let patient = self
                    .leases
                    .admitted_ms()
                    .is_some_and(|at| now_ms < at + 2 * silence_ms_max);
                let older_never_heard = !self.heard_from.contains(member)
                    && state.members.iter().position(|m| m == member)
                        < state.members.iter().position(|m| *m == self.me);
                if now_ms.saturating_sub(heard) > silence_ms_max && !(patient && older_never_heard)
                {
                    silent.push(*member);
                }
            }
            for member in silent {
                self.suspect(now_ms, member, "it missed too many heartbeats", effects);
            }
            // The news may be lost, or reach a president that then fails.
            self.send_node_copied(now_ms, effects);
            // Keep telling the president what this node lost contact with
            // until a new state settles it (the report may be lost).
            if let Some(president) = self.acting_president()
                && president != self.me
            {
                for member in &self.suspected {
                    effects.send(
                        president.node,
                        Message::Suspect {
                            version,
                            member: *member,
                        },
                    );
                }
            }
            if let Some(since) = self.first_suspicion_ms
                && now_ms.saturating_sub(since) > self.settings.arbitration_timeout_ms
                && !self.could_win_with_arbitrator()
            {
                // Even the arbitrator's vote cannot make this side a
                // majority: it lost for certain, as NDB's minority side
                // does, and only a new incarnation may join the winners.
                self.marks.excluded_without_quorum += 1;
                let lost: Vec<String> = self.suspected.iter().map(|m| m.node.to_string()).collect();
                self.exclude(
                    format!(
                        "no agreement on the failure of node(s) {} within ArbitrationTimeout \
                         ({} ms), and this side is a minority even with the arbitrator's vote",
                        lost.join(","),
                        self.settings.arbitration_timeout_ms
                    ),
                    effects,
                );
                return;
            }
            if let Some(since) = self.first_suspicion_ms
                && now_ms.saturating_sub(since) > self.settings.arbitration_timeout_ms
                && self.serving
            {
                // This side may have lost the split: it must not answer
                // what the other side may be changing. It keeps its memory
                // (no disk holds it elsewhere) and keeps proposing; a state
                // without it excludes it, one with it lets it serve again.
                self.marks.stopped_serving_without_quorum += 1;
                self.serving = false;
                let lost: Vec<String> = self.suspected.iter().map(|m| m.node.to_string()).collect();
                effects.events.push(Event::Log(format!(
                    "node {} stops serving: no agreement on the failure of node(s) {} within \
                     ArbitrationTimeout ({} ms); this side may lack a majority and the \
                     arbitrator's vote. Keeping its data and proposing until a state is agreed",
                    self.me.node,
                    lost.join(","),
                    self.settings.arbitration_timeout_ms
                )));
                effects.events.push(Event::Serving(false));
            }
            let cutoff = interval * JOIN_REQUEST_LIFETIME_INTERVALS;
            self.join_requests
                .retain(|_, (_, seen)| now_ms.saturating_sub(*seen) <= cutoff);
        } else {
            // Not admitted: ask every data node and the management node
            // (which forms the cluster when no data node has started).
            for node in &self.settings.data_nodes {
                if *node != self.me.node {
                    effects.send(*node, Message::Join { member: self.me });
                }
            }
            effects.send(
                self.settings.management_node,
                Message::Join { member: self.me },
            );
        }
        self.drive_proposal(now_ms, effects);
    }

    /// Handles one message from (`from`, `incarnation`).
    pub fn on_message(
        &mut self,
        now_ms: u64,
        from: NodeId,
        incarnation: u64,
        message: Message,
        effects: &mut Effects,
    ) {
        if self.stopped {
            return;
        }
        let sender = Member {
            node: from,
            incarnation,
        };
        if let Some(state) = &self.state
            && state.contains(sender)
        {
            self.last_heard_ms.insert(from, now_ms);
            self.heard_from.insert(sender);
        }
        match message {
            Message::Heartbeat {
                generation,
                version,
                free_pages,
                sent_at_ms,
            } => {
                if self.suspected.contains(&sender) {
                    // Heard again (a cut that healed, a stop that ended).
                    // The suspicion stands: the connection it closed may
                    // have taken messages with it that nothing resends
                    // (a transaction's phase), so one of the two must
                    // leave, as in NDB. The connection is closed again,
                    // so the member learns of it and suspects this node
                    // too: whichever the cluster follows removes the
                    // other (`follows`), even when this node's view is
                    // shared by no one.
                    self.marks.suspected_members_heard_again += 1;
                    effects.events.push(Event::Suspected(sender));
                }
                if self.vouches_for(sender) {
                    self.leases.heard(sender, sent_at_ms, now_ms);
                    if let Some(stamp) = self.leases.vouch(sender) {
                        effects.send(sender.node, Message::HeartbeatEcho { sent_at_ms: stamp });
                    }
                    if self.leases.lacks(sender, now_ms) {
                        // No lease from the sender (just admitted, or
                        // back in touch): ask for its echo now, not at the
                        // next heartbeat, so reads are served again soon.
                        self.send_heartbeat(now_ms, sender.node, effects);
                    }
                }
                self.on_heartbeat(sender, (generation, version), free_pages, effects);
                self.release_acknowledgements(now_ms, effects);
            }
            Message::HeartbeatEcho { sent_at_ms } => {
                if self.is_started() && self.state.as_ref().is_some_and(|s| s.contains(sender)) {
                    self.leases.echoed(sender, sent_at_ms, now_ms);
                }
            }
            Message::Join { member } => {
                if member == sender && self.is_started() {
                    let state = self.state.as_ref().expect("started");
                    if state.contains(member) || state.was_removed(member) {
                        // Admitted but the news was lost on the way, or
                        // removed before it ever heard: either way it must
                        // learn the state (and, if removed, restart).
                        effects.send(
                            member.node,
                            Message::Decided {
                                state: Box::new(state.clone()),
                            },
                        );
                    } else {
                        self.join_requests.insert(member.node, (member, now_ms));
                        self.drive_proposal(now_ms, effects);
                    }
                }
            }
            Message::NodeCopied { member } => {
                if member == sender
                    && self
                        .state
                        .as_ref()
                        .is_some_and(|s| s.starting.contains(&member))
                {
                    self.copied_members.insert(member);
                    self.drive_proposal(now_ms, effects);
                }
            }
            Message::Suspect { version, member } => {
                let state_version = self.state.as_ref().map(|s| s.version);
                if state_version == Some(version)
                    && member != self.me
                    && self
                        .state
                        .as_ref()
                        .is_some_and(|s| s.contains(member) && s.contains(sender))
                    && !self.suspected.contains(&sender)
                    && !self.reported.contains_key(&sender)
                    && !self.removing.contains(&sender)
                {
                    // A report from a member this node itself wants removed
                    // (cut off, it suspects everyone) is not acted on.
                    self.reported.insert(member, now_ms);
                    self.drive_proposal(now_ms, effects);
                }
            }
            Message::Prepare {
                generation,
                version,
                ballot,
            } => {
                if let Some(version) = self.acceptor_version(sender, generation, version, effects) {
                    self.round_seen = self.round_seen.max(ballot.round);
                    if !self.follows(sender) {
                        self.marks.proposals_refused_from_a_member_not_followed += 1;
                        let vote = self.acceptor.refuse();
                        effects.send(sender.node, vote.message(version, ballot));
                        return;
                    }
                    let vote = self.acceptor.prepare(ballot);
                    effects.send(sender.node, vote.message(version, ballot));
                }
            }
            Message::Accept {
                generation,
                version,
                ballot,
                change,
            } => self.on_accept(now_ms, sender, generation, version, ballot, change, effects),
            Message::Promise {
                version,
                ballot,
                accepted,
            } => self.on_vote(
                now_ms,
                sender,
                version,
                ballot,
                Vote::Promise(accepted.map(|accepted| *accepted)),
                effects,
            ),
            Message::Accepted { version, ballot } => {
                self.on_vote(now_ms, sender, version, ballot, Vote::Accepted, effects)
            }
            Message::Nack {
                version,
                ballot,
                promised,
            } => self.on_vote(
                now_ms,
                sender,
                version,
                ballot,
                Vote::Nack(promised),
                effects,
            ),
            Message::Behind { version: _ } => {
                // The voter checks what it can use; a stale one learns it
                // was replaced.
                if let Some(state) = &self.state {
                    effects.send(
                        from,
                        Message::Decided {
                            state: Box::new(state.clone()),
                        },
                    );
                }
            }
            Message::Decided { state } => self.install(now_ms, *state, effects),
            Message::SchemaRequest { request, change } => {
                self.on_schema_request(now_ms, from, request, change, effects)
            }
            Message::DictionaryRequest { request } => effects.send(
                from,
                Message::DictionaryReply {
                    request,
                    state: Box::new(self.state.clone().unwrap_or_default()),
                },
            ),
            Message::Stop | Message::Restart(_) if from != self.settings.management_node => {}
            Message::Stop | Message::Restart(_) => {
                let restart = match message {
                    Message::Restart(options) => Some(options),
                    _ => None,
                };
                self.stopped = true;
                if let Some(state) = &self.state {
                    for member in &state.members {
                        if *member != self.me {
                            effects.send(member.node, Message::Leaving);
                        }
                    }
                }
                effects.events.push(Event::Stop {
                    reason: match restart {
                        None => "the management node asked this node to stop".into(),
                        Some(_) => "the management node asked this node to restart".into(),
                    },
                    restart,
                });
            }
            Message::Leaving => self.on_disconnected(now_ms, sender, effects),
            // Replies meant for API or management nodes, and runtime-level
            // messages the runtime consumes itself.
            Message::Hello { .. }
            | Message::HelloProof { .. }
            | Message::SharedMemoryOffer { .. }
            | Message::SharedMemoryAnswer { .. }
            | Message::SchemaReply { .. }
            | Message::DictionaryReply { .. }
            | Message::AllocateNodeId { .. }
            | Message::NodeIdAllocated { .. }
            | Message::Refused { .. }
            | Message::Addresses { .. }
            | Message::StatusReport { .. }
            | Message::StatusRequest { .. }
            | Message::StatusReply { .. }
            | Message::StopRequest { .. }
            | Message::StopReply { .. }
            | Message::WaitingForStart { .. }
            | Message::StartRequest { .. }
            | Message::StartReply { .. }
            | Message::Start => {}
            // A drain is the coordinator's and the epochs' (the node's
            // runtime block answers it).
            Message::Drain | Message::Drained { .. } => {}
            // Transaction messages belong to the coordinator and the local
            // query handler, which the runtime calls before this block.
            Message::Execute(_)
            | Message::Executed(_)
            | Message::ScanOpen(_)
            | Message::ScanRows(_)
            | Message::ScanNext(_)
            | Message::ScanClose { .. }
            | Message::KeyRequest(_)
            | Message::KeyConfirm(_)
            | Message::KeyRefuse(_)
            | Message::Commit(_)
            | Message::Committed(_)
            | Message::Complete(_)
            | Message::Completed(_)
            | Message::Abort(_)
            | Message::Aborted(_)
            | Message::FragmentScanOpen(_)
            | Message::TakeoverQuery(_)
            | Message::TakeoverReport(_)
            | Message::CopyRequest(_)
            | Message::CopyRows(_)
            | Message::CopyNext(_)
            | Message::CommitAck { .. }
            | Message::ForgetMarkers { .. }
            | Message::TakeoverDone { .. }
            | Message::Epoch { .. } => {}
        }
    }

    /// Paxos phase 2 at this acceptor: accepts `change` unless it removes a
    /// member this node promised (`lease`), which waits for the promise.
    #[allow(clippy::too_many_arguments)]
    fn on_accept(
        &mut self,
        now_ms: u64,
        sender: Member,
        generation: u64,
        version: u64,
        ballot: Ballot,
        change: Box<Change>,
        effects: &mut Effects,
    ) {
        let Some(version) = self.acceptor_version(sender, generation, version, effects) else {
            return;
        };
        self.round_seen = self.round_seen.max(ballot.round);
        if !self.follows(sender) {
            self.marks.proposals_refused_from_a_member_not_followed += 1;
            let vote = self.acceptor.refuse();
            effects.send(sender.node, vote.message(version, ballot));
            return;
        }
        let removed = self.removed_by(&change);
        let due_ms = self.leases.removal_fence_ms(&removed);
        // Once it accepts (or means to accept) their removal, this node
        // vouches no more for the removed members.
        self.removing.extend(removed);
        if now_ms < due_ms {
            // A removed member may still serve reads on this node's
            // promise: the acceptance waits until the promise expired.
            let newer = self
                .deferred_accepts
                .get(&sender.node)
                .is_none_or(|held| (held.version, held.ballot) <= (version, ballot));
            if newer {
                self.deferred_accepts.insert(
                    sender.node,
                    DeferredAccept {
                        due_ms,
                        sender,
                        generation,
                        version,
                        ballot,
                        change,
                    },
                );
            }
            return;
        }
        let vote = self.acceptor.accept(ballot, &change);
        effects.send(sender.node, vote.message(version, ballot));
    }

    /// Answers the held `Accept`s whose promises have expired, as if they
    /// arrived now.
    fn answer_deferred_accepts(&mut self, now_ms: u64, effects: &mut Effects) {
        let due: Vec<NodeId> = self
            .deferred_accepts
            .iter()
            .filter(|(_, held)| held.due_ms <= now_ms)
            .map(|(node, _)| *node)
            .collect();
        for node in due {
            let held = self.deferred_accepts.remove(&node).expect("listed");
            self.on_accept(
                now_ms,
                held.sender,
                held.generation,
                held.version,
                held.ballot,
                held.change,
                effects,
            );
        }
    }

    fn on_heartbeat(
        &mut self,
        sender: Member,
        position: (u64, u64),
        free_pages: Option<FreePages>,
        effects: &mut Effects,
    ) {
        let Some(state) = self.state.as_ref().filter(|_| self.is_started()) else {
            // Heartbeats come only from members: this node was admitted and
            // missed the news. Asking makes the sender send the state.
            effects.send(sender.node, Message::Behind { version: 0 });
            return;
        };
        if state.contains(sender) {
            let known = self.member_positions.entry(sender).or_default();
            *known = (*known).max(position);
            if let Some(free) = free_pages {
                self.member_free_pages.insert(sender, free);
            }
        }
        // A peer that is behind, or no longer a member and unaware of it,
        // learns the current state from the heartbeat's answer.
        if position < state.position() {
            effects.send(
                sender.node,
                Message::Decided {
                    state: Box::new(state.clone()),
                },
            );
        }
    }

    fn suspect(&mut self, now_ms: u64, member: Member, why: &str, effects: &mut Effects) {
        if self.suspected.insert(member) {
            effects.events.push(Event::Log(format!(
                "node {} suspects node {}: {why}",
                self.me.node, member.node
            )));
            effects.events.push(Event::Suspected(member));
            self.first_suspicion_ms.get_or_insert(now_ms);
            self.drive_proposal(now_ms, effects);
        }
    }

    fn exclude(&mut self, reason: String, effects: &mut Effects) {
        self.stopped = true;
        effects.events.push(Event::Excluded { reason });
    }

    // ---- acceptor ----

    /// Whether this node votes on `version` of `generation` for `sender`;
    /// when it cannot, it tells the sender what it knows instead.
    fn acceptor_version(
        &mut self,
        sender: Member,
        generation: u64,
        version: u64,
        effects: &mut Effects,
    ) -> Option<u64> {
        let state = self.state.as_ref()?;
        if !self.is_started() {
            return None;
        }
        if (generation, version) <= state.position() {
            effects.send(
                sender.node,
                Message::Decided {
                    state: Box::new(state.clone()),
                },
            );
            return None;
        }
        if generation != state.generation || version > state.version + 1 {
            effects.send(
                sender.node,
                Message::Behind {
                    version: state.version,
                },
            );
            return None;
        }
        Some(version)
    }

    // ---- proposer ----

    /// The change this node, as acting president, wants next.
    fn desired_change(&mut self, now_ms: u64, effects: &mut Effects) -> Option<Change> {
        // A report not renewed lately was withdrawn (its sender heard
        // from the member again) or its sender went silent.
        let report_lifetime_ms = self.settings.heartbeat_interval_ms * REPORT_LIFETIME_INTERVALS;
        self.reported
            .retain(|_, at| now_ms.saturating_sub(*at) <= report_lifetime_ms);
        let state = self.state.as_ref()?;
        let mut removed: BTreeSet<Member> = state
            .members
            .iter()
            .copied()
            .filter(|m| self.suspected.contains(m) || self.reported.contains_key(m))
            .collect();
        // A member that restarted asks to join as a new incarnation: the old
        // one is gone.
        for (member, _) in self.join_requests.values() {
            if let Some(old) = state.member_of(member.node)
                && old.incarnation < member.incarnation
            {
                removed.insert(old);
            }
        }
        if !removed.is_empty() {
            let members: Vec<Member> = state
                .members
                .iter()
                .copied()
                .filter(|m| !removed.contains(m))
                .collect();
            return Some(Change::Membership { members });
        }
        if let Some(member) = self
            .copied_members
            .iter()
            .find(|m| state.starting.contains(m))
        {
            return Some(Change::NodeStarted { member: *member });
        }
        if let Some((member, _)) = self
            .join_requests
            .values()
            .find(|(m, _)| state.member_of(m.node).is_none() && !state.was_removed(*m))
        {
            let mut members = state.members.clone();
            members.push(*member);
            return Some(Change::Membership { members });
        }
        let mut free_pages: BTreeMap<NodeId, FreePages> = self
            .member_free_pages
            .iter()
            .map(|(member, free)| (member.node, *free))
            .collect();
        if let Some(own) = self.free_pages() {
            free_pages.insert(self.me.node, own);
        }
        while let Some(request) = self.schema_requests.front() {
            let state = self.state.as_ref().expect("checked above");
            let origin = request.origin();
            if let Some(outcome) = state.schema_outcome(origin) {
                // A retry of a request already applied: the agreed state
                // holds its answer.
                let position = state.position();
                self.marks.schema_retry_answered_from_state += 1;
                self.schema_requests.pop_front();
                self.acknowledge(now_ms, origin, outcome.table_id, position, effects);
                continue;
            }
            if let Some((_, error)) = self.schema_refusals.iter().find(|(o, _)| *o == origin) {
                // A duplicate of a request this node refused: same answer.
                let error = error.clone();
                self.schema_requests.pop_front();
                effects.send(
                    origin.node,
                    Message::SchemaReply {
                        request: origin.request,
                        result: Err(error),
                    },
                );
                continue;
            }
            // Only the first member plans dictionary changes: any other
            // acting president suspects a member ahead of it and proposes
            // its removal first. So a change planned for the next version
            // for this request can only be one this node planned itself,
            // which it still holds as its proposal or accepted value.
            assert_eq!(
                state.members.first(),
                Some(&self.me),
                "only the first member plans schema changes"
            );
            if let Some(change) = self.change_in_flight(origin) {
                // An earlier plan of this request may still be decided for
                // the next version (a voter may hold it accepted), so a
                // judgement made now is not its answer. Proposing the same
                // change again lets Paxos settle it; the answer then comes
                // from the agreed state.
                self.marks.schema_request_proposed_again += 1;
                return Some(change);
            }
            match dictionary::plan(state, &request.change, origin, &self.settings, &free_pages) {
                Ok(change) => return Some(change),
                Err(error)
                    if error.ndb_code == dictionary::TABLE_FULL_NDB_CODE
                        && free_pages
                            .values()
                            .any(|report| report.schema_version < state.schema_version) =>
                {
                    // A report measured before the last dictionary change
                    // does not count the pages a dropped table gave back
                    // (DROP then CREATE of the same table, as sysbench's
                    // cleanup then prepare). Every member measures again
                    // at its next heartbeat, and the queue waits for that,
                    // so the refusal, if it comes, is judged on memory as
                    // it is: within a heartbeat interval, since no other
                    // dictionary change passes this request meanwhile.
                    self.marks.schema_request_waited_for_memory_report += 1;
                    return None;
                }
                Err(error) => {
                    let request = self.schema_requests.pop_front().expect("front");
                    // A temporary refusal invites a retry of the same
                    // request; any other is its final answer.
                    if error.ndb_code != dictionary::NOT_YET_NDB_CODE {
                        if self.schema_refusals.len() >= SCHEMA_REFUSALS_REMEMBERED_MAX {
                            self.schema_refusals.pop_front();
                        }
                        self.schema_refusals.push_back((origin, error.clone()));
                    }
                    effects.send(
                        request.from,
                        Message::SchemaReply {
                            request: request.request,
                            result: Err(error),
                        },
                    );
                }
            }
        }
        None
    }

    /// The change planned for `origin` that this node proposed, adopted,
    /// saw in a promise or accepted for the next version, if any: it was
    /// planned against the installed state (proposals and the acceptor are
    /// reset at every install), and it may still be decided.
    fn change_in_flight(&self, origin: SchemaRequestId) -> Option<Change> {
        let state = self.state.as_ref()?;
        let next = (state.generation, state.version + 1);
        let proposed = self
            .proposal
            .as_ref()
            .filter(|p| (p.generation, p.version) == next)
            .into_iter()
            .flat_map(|p| {
                // Phase 1 promises show changes other voters accepted.
                let seen: Vec<&Change> = match &p.phase {
                    Phase::Accepting { change, .. } => vec![change],
                    Phase::Preparing { promises } => promises
                        .values()
                        .filter_map(|(_, accepted)| accepted.as_ref().map(|(_, c)| c))
                        .collect(),
                };
                std::iter::once(&p.desired).chain(seen)
            });
        let accepted = self.acceptor.accepted.iter().map(|(_, change)| change);
        proposed
            .chain(accepted)
            .find(|change| change_origin(change) == Some(origin))
            .cloned()
    }

    /// A node that no longer presides sends its queued schema requests to
    /// the president: left queued, one could be planned long after its
    /// client retried elsewhere and got another answer.
    fn redirect_schema_requests(&mut self, effects: &mut Effects) {
        if self.schema_requests.is_empty() {
            return;
        }
        let president = self.acting_president().map_or(0, |m| m.node);
        for request in self.schema_requests.drain(..) {
            effects.send(
                request.from,
                Message::SchemaReply {
                    request: request.request,
                    result: Err(ErrorReply::not_president(president)),
                },
            );
        }
    }

    /// Starts, continues or retries this node's proposal.
    fn drive_proposal(&mut self, now_ms: u64, effects: &mut Effects) {
        if self.stopped || !self.is_acting_president() {
            self.proposal = None;
            self.redirect_schema_requests(effects);
            return;
        }
        if let Some(proposal) = self.proposal.as_mut()
            && proposal.own_accept_due_ms.is_some_and(|due| due <= now_ms)
            && let Phase::Accepting { change, .. } = &proposal.phase
        {
            // This node's promises to the members its change removes have
            // expired: its own vote may count now.
            proposal.own_accept_due_ms = None;
            let (version, ballot, change) = (proposal.version, proposal.ballot, change.clone());
            let vote = self.acceptor.accept(ballot, &change);
            self.on_vote(now_ms, self.me, version, ballot, vote, effects);
        }
        if let Some(proposal) = &self.proposal
            && now_ms < proposal.retry_at_ms
        {
            return;
        }
        let Some(desired) = self.desired_change(now_ms, effects) else {
            self.proposal = None;
            return;
        };
        // Only started members hold their node group's data: a group left
        // with nothing but starting members has lost it.
        let started: Vec<Member> = match &desired {
            Change::Membership { members } => {
                let state = self.state.as_ref().expect("president has a state");
                members
                    .iter()
                    .copied()
                    .filter(|m| state.contains(*m) && !state.starting.contains(m))
                    .collect()
            }
            _ => Vec::new(),
        };
        if matches!(desired, Change::Membership { .. })
            && let Some(group) = uncovered_node_group(&started, &self.settings.node_groups)
        {
            self.marks.excluded_node_group_lost += 1;
            self.exclude(
                format!(
                    "node group {group} has no live node left: cluster failure, as in NDB \
                     (every partition needs a replica)"
                ),
                effects,
            );
            return;
        }
        if self.proposal.is_some() {
            self.marks.proposals_retried += 1;
        }
        let state = self.state.as_ref().expect("president has a state");
        let version = state.version + 1;
        let generation = state.generation;
        self.round_seen += 1;
        let ballot = Ballot {
            round: self.round_seen,
            node: self.me.node,
        };
        let electorate = Electorate::for_state(state, self.settings.arbitrator);
        // Later presidents in line back off a little longer, so two
        // proposers rarely keep pre-empting each other.
        let rank = state
            .members
            .iter()
            .position(|m| *m == self.me)
            .unwrap_or(0) as u64;
        let retry_after_ms =
            self.settings.heartbeat_interval_ms * (PROPOSAL_TIMEOUT_INTERVALS + rank);
        self.proposal = Some(Proposal {
            generation,
            version,
            ballot,
            desired,
            phase: Phase::Preparing {
                promises: BTreeMap::new(),
            },
            electorate: electorate.clone(),
            retry_at_ms: now_ms + retry_after_ms,
            own_accept_due_ms: None,
        });
        for (voter, _) in &electorate.voters {
            if voter.node() == self.me.node {
                let vote = self.acceptor.prepare(ballot);
                self.on_vote(now_ms, self.me, version, ballot, vote, effects);
            } else {
                effects.send(
                    voter.node(),
                    Message::Prepare {
                        generation,
                        version,
                        ballot,
                    },
                );
            }
        }
    }

    fn on_vote(
        &mut self,
        now_ms: u64,
        sender: Member,
        version: u64,
        ballot: Ballot,
        vote: Vote,
        effects: &mut Effects,
    ) {
        let Some(proposal) = &mut self.proposal else {
            return;
        };
        if proposal.version != version || proposal.ballot != ballot {
            if let Vote::Nack(promised) = vote {
                self.round_seen = self.round_seen.max(promised.round);
            }
            return;
        }
        let Some((_, weight)) = proposal.electorate.voter(sender.node, sender.incarnation) else {
            return;
        };
        match (vote, &mut proposal.phase) {
            (Vote::Nack(promised), _) => {
                // Someone with a higher ballot is proposing; step back and
                // retry after the back-off unless their change settles it.
                self.round_seen = self.round_seen.max(promised.round);
                if promised < ballot {
                    // Not a higher ballot: the voter refused to follow this
                    // node (`follows`). Failure detectors disagree by a
                    // few milliseconds, so ask again soon, not after the
                    // whole back-off.
                    let soon = now_ms + self.settings.heartbeat_interval_ms;
                    proposal.retry_at_ms = proposal.retry_at_ms.min(soon);
                }
            }
            (Vote::Promise(accepted), Phase::Preparing { promises }) => {
                promises.insert(sender.node, (weight, accepted));
                let total: u32 = promises.values().map(|(w, _)| w).sum();
                if proposal.electorate.is_quorum(total) {
                    // Paxos: a change some voter already accepted may have
                    // been decided; it must win over ours.
                    let change = promises
                        .values()
                        .filter_map(|(_, accepted)| accepted.as_ref())
                        .max_by_key(|(b, _)| *b)
                        .map(|(_, change)| change.clone())
                        .unwrap_or_else(|| proposal.desired.clone());
                    if change != proposal.desired {
                        self.marks.adopted_earlier_change += 1;
                    }
                    proposal.phase = Phase::Accepting {
                        change: change.clone(),
                        accepted: BTreeMap::new(),
                    };
                    let voters: Vec<Voter> =
                        proposal.electorate.voters.iter().map(|(v, _)| *v).collect();
                    let generation = proposal.generation;
                    let removed = self.removed_by(&change);
                    let own_due_ms = self.leases.removal_fence_ms(&removed);
                    self.removing.extend(removed);
                    for voter in voters {
                        if voter.node() == self.me.node {
                            if now_ms < own_due_ms {
                                // Counted once this node's promises to the
                                // removed members expire (`drive_proposal`).
                                if let Some(proposal) = self.proposal.as_mut() {
                                    proposal.own_accept_due_ms = Some(own_due_ms);
                                }
                                continue;
                            }
                            let vote = self.acceptor.accept(ballot, &change);
                            self.on_vote(now_ms, self.me, version, ballot, vote, effects);
                        } else {
                            effects.send(
                                voter.node(),
                                Message::Accept {
                                    generation,
                                    version,
                                    ballot,
                                    change: Box::new(change.clone()),
                                },
                            );
                        }
                    }
                }
            }
            (Vote::Accepted, Phase::Accepting { change, accepted }) => {
                accepted.insert(sender.node, weight);
                let total: u32 = accepted.values().sum();
                if proposal.electorate.is_quorum(total) {
                    let without_arbitrator: u32 = accepted
                        .iter()
                        .filter(|(node, _)| Some(**node) != self.settings.arbitrator)
                        .map(|(_, weight)| weight)
                        .sum();
                    if !proposal.electorate.is_quorum(without_arbitrator) {
                        self.marks.decided_with_arbitrator += 1;
                    }
                    let change = change.clone();
                    self.decided(now_ms, change, effects);
                }
            }
            _ => {}
        }
    }

    /// `change` is decided for the next version: tell everyone and install it.
    fn decided(&mut self, now_ms: u64, change: Change, effects: &mut Effects) {
        let state = self.state.as_ref().expect("a proposer has a state");
        let next = apply(state, &change);
        let mut recipients: BTreeSet<NodeId> = state.members.iter().map(|m| m.node).collect();
        recipients.extend(next.members.iter().map(|m| m.node));
        recipients.extend(self.join_requests.keys());
        if let Some(arbitrator) = self.settings.arbitrator {
            recipients.insert(arbitrator);
        }
        recipients.insert(self.settings.management_node);
        recipients.remove(&self.me.node);
        for node in recipients {
            effects.send(
                node,
                Message::Decided {
                    state: Box::new(next.clone()),
                },
            );
        }
        // Whoever planned the decided change (this node, or an earlier
        // president whose accepted change Paxos made this one finish), the
        // request it names gets its answer, and a queued copy of it is done.
        let applied = match &change {
            Change::CreateTable { table, origin } => Some((*origin, table.id)),
            Change::DropTable { table_id, origin } => Some((*origin, *table_id)),
            Change::RenameTable {
                table_id, origin, ..
            } => Some((*origin, *table_id)),
            Change::Membership { .. } | Change::NodeStarted { .. } => None,
        };
        if let Some((origin, table_id)) = applied {
            self.schema_requests
                .retain(|request| request.origin() != origin);
            self.acknowledge(now_ms, origin, table_id, next.position(), effects);
        }
        self.proposal = None;
        self.install(now_ms, next, effects);
        self.release_acknowledgements(now_ms, effects);
    }

    /// Answers `origin` with `table_id` once every member has installed
    /// `position`, so a client that goes on to any data node finds the
    /// change there.
    fn acknowledge(
        &mut self,
        now_ms: u64,
        origin: SchemaRequestId,
        table_id: u32,
        position: (u64, u64),
        effects: &mut Effects,
    ) {
        if self.awaiting_installs.len() < AWAITING_INSTALLS_MAX {
            self.awaiting_installs.push(AwaitingInstall {
                origin,
                table_id,
                position,
                deadline_ms: now_ms
                    + self.settings.heartbeat_interval_ms * INSTALL_WAIT_INTERVALS_MAX,
            });
        } else {
            effects.send(
                origin.node,
                Message::SchemaReply {
                    request: origin.request,
                    result: Ok(table_id),
                },
            );
        }
    }

    /// Answers the schema requests whose change every current member has
    /// installed (or that waited `INSTALL_WAIT_INTERVALS_MAX` heartbeats:
    /// the change is decided either way, a slow member catches up).
    fn release_acknowledgements(&mut self, now_ms: u64, effects: &mut Effects) {
        if self.awaiting_installs.is_empty() {
            return;
        }
        let Some(state) = &self.state else { return };
        let members: Vec<Member> = state.members.clone();
        let positions = &self.member_positions;
        let me = self.me;
        self.awaiting_installs.retain(|waiting| {
            let installed_everywhere = members
                .iter()
                .all(|m| *m == me || positions.get(m).is_some_and(|p| *p >= waiting.position));
            if installed_everywhere || now_ms >= waiting.deadline_ms {
                effects.send(
                    waiting.origin.node,
                    Message::SchemaReply {
                        request: waiting.origin.request,
                        result: Ok(waiting.table_id),
                    },
                );
                false
            } else {
                true
            }
        });
    }

    fn install(&mut self, now_ms: u64, next: ClusterState, effects: &mut Effects) {
        let was_started = self.is_started();
        if let Some(state) = &self.state
            && next.position() <= state.position()
        {
            return;
        }
        if was_started
            && let Some(state) = &self.state
            && next.generation != state.generation
        {
            // The cluster formed again without this node's generation: its
            // state is void, and only a new incarnation may join.
            self.exclude(
                format!(
                    "the cluster formed again (generation {}) while this node ran in generation {}",
                    next.generation, state.generation
                ),
                effects,
            );
            return;
        }
        if !next.contains(self.me) {
            if was_started || next.was_removed(self.me) {
                self.marks.excluded_by_others += 1;
                self.exclude(
                    format!(
                        "the cluster removed this node in state version {}",
                        next.version
                    ),
                    effects,
                );
            }
            // A node waiting for admission just learns the cluster exists.
            return;
        }
        if !covers_node_groups(&next.started_members(), &self.settings.node_groups) {
            // Agreed states always cover every node group; this one came
            // from a peer with another configuration or a bug. Refuse it.
            effects.events.push(Event::Log(format!(
                "ignoring state {:?}: it lacks a node group of this configuration",
                next.position()
            )));
            return;
        }
        for member in &next.members {
            self.last_heard_ms.entry(member.node).or_insert(now_ms);
        }
        let fresh: BTreeSet<NodeId> = next
            .members
            .iter()
            .filter(|m| self.state.as_ref().is_none_or(|s| !s.contains(**m)))
            .map(|m| m.node)
            .collect();
        for node in fresh {
            self.last_heard_ms.insert(node, now_ms);
        }
        self.suspected.retain(|m| next.contains(*m));
        // Reports name the version they were made for: the reporters
        // repeat them for this one if they still hold.
        self.reported.clear();
        self.heard_from.retain(|m| next.contains(*m));
        // Accepted values and held accepts were for the version installed
        // now (or an earlier one).
        self.removing.clear();
        self.deferred_accepts.clear();
        self.leases.installed(&next.members, now_ms);
        self.first_suspicion_ms = if self.suspected.is_empty() {
            None
        } else {
            Some(now_ms)
        };
        self.join_requests
            .retain(|_, (member, _)| !next.contains(*member));
        self.acceptor = Acceptor::default();
        if self
            .proposal
            .as_ref()
            .is_some_and(|p| (p.generation, p.version) <= next.position())
        {
            self.proposal = None;
        }
        effects
            .events
            .push(Event::Installed(Box::new(next.clone())));
        if !self.serving && next.contains(self.me) {
            self.serving = true;
            self.marks.serving_again += 1;
            effects.events.push(Event::Log(format!(
                "node {} serves again: state {:?} was agreed with it as a member",
                self.me.node,
                next.position()
            )));
            effects.events.push(Event::Serving(true));
        }
        self.member_positions.retain(|m, _| next.contains(*m));
        self.member_free_pages.retain(|m, _| next.contains(*m));
        self.copied_members.retain(|m| next.starting.contains(m));

        // The president waits for this before it acknowledges a schema change.
        if let Some(president) = next.president()
            && president != self.me
        {
            // The free pages were measured before this state's fragments
            // existed, and say so by their schema version.
            effects.send(
                president.node,
                Message::Heartbeat {
                    generation: next.generation,
                    version: next.version,
                    free_pages: self.free_pages(),
                    sent_at_ms: now_ms,
                },
            );
        }
        self.state = Some(next);
        // Members this node holds no lease from (all of them, when it was
        // just admitted) get a heartbeat now: their echoes let it serve
        // reads within a round trip rather than a heartbeat interval.
        let me = self.me;
        let lacking: Vec<NodeId> = self
            .state
            .as_ref()
            .expect("just installed")
            .members
            .iter()
            .filter(|m| **m != me && self.leases.lacks(**m, now_ms))
            .map(|m| m.node)
            .collect();
        for node in lacking {
            self.send_heartbeat(now_ms, node, effects);
        }
        self.send_report(effects);
        self.drive_proposal(now_ms, effects);
    }

    /// A heartbeat to member `node` now, outside the interval's round.
    fn send_heartbeat(&self, now_ms: u64, node: NodeId, effects: &mut Effects) {
        let Some(state) = self.state.as_ref() else {
            return;
        };
        effects.send(
            node,
            Message::Heartbeat {
                generation: state.generation,
                version: state.version,
                free_pages: self.free_pages(),
                sent_at_ms: now_ms,
            },
        );
    }

    // ---- dictionary requests from API nodes ----

    fn on_schema_request(
        &mut self,
        now_ms: u64,
        from: NodeId,
        request: u64,
        change: protocol::SchemaChange,
        effects: &mut Effects,
    ) {
        if !self.is_acting_president() {
            let president = self.acting_president().map_or(0, |m| m.node);
            effects.send(
                from,
                Message::SchemaReply {
                    request,
                    result: Err(ErrorReply::not_president(president)),
                },
            );
            return;
        }
        let origin = SchemaRequestId {
            node: from,
            request,
        };
        if self.schema_requests.iter().any(|r| r.origin() == origin) {
            // A retry of a request still queued: the queued one answers it.
            return;
        }
        if self.schema_requests.len() >= SCHEMA_REQUESTS_QUEUED_MAX {
            effects.send(
                from,
                Message::SchemaReply {
                    request,
                    result: Err(ErrorReply {
                        ndb_code: 711,
                        mysql_code: 1297,
                        message: format!(
                            "{SCHEMA_REQUESTS_QUEUED_MAX} schema changes are already queued: \
                             a temporary error, retry"
                        ),
                    }),
                },
            );
            return;
        }
        self.schema_requests.push_back(SchemaRequest {
            from,
            request,
            change,
        });
        self.drive_proposal(now_ms, effects);
    }
}

/// The schema request a change was planned for (membership changes have none).
fn change_origin(change: &Change) -> Option<SchemaRequestId> {
    match change {
        Change::CreateTable { origin, .. }
        | Change::DropTable { origin, .. }
        | Change::RenameTable { origin, .. } => Some(*origin),
        Change::Membership { .. } | Change::NodeStarted { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::distribution::TableOptions;
    use schema::{ColumnDef, ColumnType, TableDef};

    /// The API node that sends schema requests.
    const API: NodeId = 250;
    const HEARTBEAT_INTERVAL_MS: u64 = 100;

    fn settings(node: NodeId) -> DataNodeSettings {
        DataNodeSettings {
            node,
            incarnation: 1,
            data_nodes: vec![2, 3],
            node_groups: vec![vec![2, 3]],
            ldm_threads: 1,
            management_node: 1,
            arbitrator: None,
            heartbeat_interval_ms: HEARTBEAT_INTERVAL_MS,
            api_heartbeat_interval_ms: 2 * HEARTBEAT_INTERVAL_MS,
            missed_heartbeats_max: 4,
            arbitration_timeout_ms: 10_000,
            tables_max: 128,
            fragment_replicas_per_node_max: dictionary::FRAGMENT_REPLICAS_PER_NODE_MAX,
        }
    }

    fn create(name: &str) -> protocol::SchemaChange {
        let table = TableDef::new(
            name,
            vec![ColumnDef::new(
                "id",
                ColumnType::Int { unsigned: false },
                false,
            )],
            vec![0],
            vec![],
        )
        .expect("valid");
        let mut definition = Vec::new();
        schema::table_codec::encode_table(&table, &TableOptions::default(), &mut definition);
        protocol::SchemaChange::CreateTable { definition }
    }

    /// Nodes 2 and 3 (one node group, no arbitrator: a decision needs
    /// both) and the messages between them, delivered by hand.
    struct Cluster {
        nodes: BTreeMap<NodeId, DataNode>,
        in_flight: VecDeque<(NodeId, NodeId, Message)>,
        /// Every answer the API node got: (request, result).
        answers: Vec<(u64, Result<u32, ErrorReply>)>,
    }

    impl Cluster {
        fn formed() -> Cluster {
            let mut cluster = Cluster {
                nodes: [2, 3]
                    .into_iter()
                    .map(|node| (node, DataNode::new(settings(node), 0)))
                    .collect(),
                in_flight: VecDeque::new(),
                answers: Vec::new(),
            };
            let state = ClusterState {
                generation: 1,
                version: 1,
                members: vec![
                    Member {
                        node: 2,
                        incarnation: 1,
                    },
                    Member {
                        node: 3,
                        incarnation: 1,
                    },
                ],
                ..ClusterState::default()
            };
            for node in [2, 3] {
                cluster.input(
                    0,
                    1,
                    node,
                    Message::Decided {
                        state: Box::new(state.clone()),
                    },
                );
            }
            cluster.run(0, |_| false);
            cluster
        }

        /// Hands `message` from `from` to `to` and queues what it sends.
        fn input(&mut self, now_ms: u64, from: NodeId, to: NodeId, message: Message) {
            let mut effects = Effects::new();
            let node = self.nodes.get_mut(&to).expect("a data node");
            let incarnation = if from == API || from == 1 { 0 } else { 1 };
            node.on_message(now_ms, from, incarnation, message, &mut effects);
            self.collect(to, effects);
        }

        fn collect(&mut self, from: NodeId, effects: Effects) {
            for (to, message) in effects.sends {
                match message {
                    Message::SchemaReply { request, result } if to == API => {
                        self.answers.push((request, result));
                    }
                    message if self.nodes.contains_key(&to) => {
                        self.in_flight.push_back((from, to, message));
                    }
                    // The management node plays no part here.
                    _ => {}
                }
            }
        }

        /// Delivers queued messages until none is left, losing those
        /// `lose` picks.
        fn run(&mut self, now_ms: u64, lose: impl Fn(&Message) -> bool) {
            let mut delivered = 0;
            while let Some((from, to, message)) = self.in_flight.pop_front() {
                delivered += 1;
                assert!(delivered < 10_000, "the messages never settle");
                if lose(&message) {
                    continue;
                }
                self.input(now_ms, from, to, message);
            }
        }

        fn tick(&mut self, now_ms: u64, node: NodeId) {
            let mut effects = Effects::new();
            self.nodes
                .get_mut(&node)
                .expect("a data node")
                .tick(now_ms, &mut effects);
            self.collect(node, effects);
        }

        /// Node 3 tells the president how much DataMemory it has free.
        fn report_free_pages(&mut self, now_ms: u64, pages: u64) {
            self.report_free_pages_at(now_ms, pages, 0);
        }

        /// The same, measured with `schema_version` installed.
        fn report_free_pages_at(&mut self, now_ms: u64, pages: u64, schema_version: u64) {
            let free_pages = Some(FreePages {
                pages,
                schema_version,
            });
            let heartbeat = Message::Heartbeat {
                generation: 1,
                version: 1,
                free_pages,
                sent_at_ms: now_ms,
            };
            self.input(now_ms, 3, 2, heartbeat);
        }
    }

    /// Ticks `node` alone (every peer silent) for twice its
    /// ArbitrationTimeout; returns the events and the time reached.
    fn tick_alone(node: &mut DataNode) -> (Vec<Event>, u64) {
        let timeout_ms = node.settings.arbitration_timeout_ms;
        let mut events = Vec::new();
        let mut now = 0;
        while now <= 2 * timeout_ms && !node.stopped {
            let mut effects = Effects::new();
            node.tick(now, &mut effects);
            events.extend(effects.events);
            now += HEARTBEAT_INTERVAL_MS;
        }
        (events, now)
    }

    /// Node 3 echoes node 2's heartbeat, which gives node 2 a read lease
    /// and binds node 3: it accepts a change removing node 2 only once the
    /// promise expired (after node 2's lease ended), and echoes no more
    /// from the moment it means to accept it.
    #[test]
    fn a_removal_is_accepted_only_after_the_lease_it_could_break_ended() {
        let mut cluster = Cluster::formed();
        // The heartbeats each sent when admitted (at 0) were echoed at once.
        assert_eq!(cluster.nodes[&2].read_lease_until_ms(), 175);
        // Both heartbeat each other (and echo) every 100 ms up to 1000;
        // a newly formed cluster's members vote for no removal before 800.
        for now in (100..=1_000).step_by(100) {
            cluster.tick(now, 2);
            cluster.tick(now, 3);
            cluster.run(now, |_| false);
        }
        // Node 2 holds node 3's lease: its last stamp, 1000, plus 7/8 of
        // 100 ms x 4 / 2; node 3 promised until 1000 + 200.
        assert_eq!(cluster.nodes[&2].read_lease_until_ms(), 1_175);
        let remove_2 = Message::Accept {
            generation: 1,
            version: 2,
            ballot: Ballot { round: 9, node: 2 },
            change: Box::new(Change::Membership {
                members: vec![Member {
                    node: 3,
                    incarnation: 1,
                }],
            }),
        };
        cluster.input(1_050, 2, 3, remove_2);
        assert!(
            cluster.in_flight.is_empty(),
            "accepted before the promise to node 2 (until 1200) expired: {:?}",
            cluster.in_flight
        );
        // Node 2's next heartbeat is not echoed any more.
        cluster.input(
            1_100,
            2,
            3,
            Message::Heartbeat {
                generation: 1,
                version: 1,
                free_pages: None,
                sent_at_ms: 1_100,
            },
        );
        assert!(cluster.in_flight.is_empty(), "{:?}", cluster.in_flight);
        assert!(cluster.nodes[&3].next_tick_ms() <= 1_200);
        cluster.tick(1_199, 3);
        assert!(
            !cluster
                .in_flight
                .iter()
                .any(|(_, _, m)| matches!(m, Message::Accepted { .. })),
            "{:?}",
            cluster.in_flight
        );
        cluster.in_flight.clear();
        cluster.tick(1_200, 3);
        assert!(
            cluster
                .in_flight
                .iter()
                .any(|(_, to, m)| *to == 2 && matches!(m, Message::Accepted { version: 2, .. })),
            "{:?}",
            cluster.in_flight
        );
        assert!(cluster.nodes[&2].read_lease_until_ms() < 1_200);
    }

    /// Without an arbitrator, node 2 alone is half of the votes and can
    /// never win: at ArbitrationTimeout it excludes itself (NDB's rule).
    #[test]
    fn a_side_that_cannot_win_even_with_the_arbitrator_excludes_itself() {
        let mut cluster = Cluster::formed();
        let node = cluster.nodes.get_mut(&2).expect("node 2");
        let (events, _) = tick_alone(node);
        assert!(
            events.iter().any(|e| matches!(e, Event::Excluded { .. })),
            "{events:?}"
        );
        assert_eq!(node.marks().excluded_without_quorum, 1);
        assert_eq!(node.marks().stopped_serving_without_quorum, 0);
    }

    /// Node 2 alone (node 3 silent) with an arbitrator that does not
    /// answer could still win with its vote: after ArbitrationTimeout it
    /// stops serving, but keeps its state (and so its data) and is not
    /// excluded; a state agreed with it in it lets it serve again, and a
    /// state without it excludes it.
    #[test]
    fn a_side_without_agreement_stops_serving_keeps_its_state_and_serves_again() {
        let mut cluster = Cluster::formed();
        let node = cluster.nodes.get_mut(&2).expect("node 2");
        node.settings.arbitrator = Some(1);
        let (events, now) = tick_alone(node);
        let stopped = events
            .iter()
            .filter(|e| **e == Event::Serving(false))
            .count();
        assert_eq!(stopped, 1, "{events:?}");
        assert!(
            !events.iter().any(|e| matches!(e, Event::Excluded { .. })),
            "{events:?}"
        );
        assert!(!node.is_serving());
        assert!(node.is_started(), "the state (and the data) is kept");
        assert_eq!(node.marks().stopped_serving_without_quorum, 1);
        let member = |node: NodeId| Member {
            node,
            incarnation: 1,
        };
        // Node 3 comes back; a state with node 2 in it is agreed.
        let agreed = ClusterState {
            generation: 1,
            version: 2,
            members: vec![member(2)],
            removed: vec![member(3)],
            ..ClusterState::default()
        };
        let mut effects = Effects::new();
        let decided = Message::Decided {
            state: Box::new(agreed.clone()),
        };
        node.on_message(now, 3, 1, decided, &mut effects);
        assert!(
            effects.events.contains(&Event::Serving(true)),
            "{effects:?}"
        );
        assert!(node.is_serving());
        // A later state without node 2 excludes it.
        let without = ClusterState {
            version: 3,
            members: vec![member(3)],
            removed: vec![member(3), member(2)],
            ..agreed
        };
        let mut effects = Effects::new();
        let decided = Message::Decided {
            state: Box::new(without),
        };
        node.on_message(now, 3, 1, decided, &mut effects);
        assert!(
            effects
                .events
                .iter()
                .any(|e| matches!(e, Event::Excluded { .. })),
            "{effects:?}"
        );
    }

    /// DROP then CREATE at once (sysbench's cleanup then prepare): the
    /// members' last reports were measured while the dropped table still
    /// held their memory. The create waits for reports measured after the
    /// drop instead of being refused on stale figures, and a report that
    /// is current and still too small refuses it (827).
    #[test]
    fn a_create_after_a_drop_waits_for_memory_measured_after_the_drop() {
        let mut cluster = Cluster::formed();
        for node in [2, 3] {
            let node = cluster.nodes.get_mut(&node).expect("node");
            node.set_memory_pages(0, 1_000);
        }
        cluster.report_free_pages(10, 1_000);
        let mut request = 0;
        let mut change = |cluster: &mut Cluster, now_ms: u64, change: protocol::SchemaChange| {
            request += 1;
            cluster.input(now_ms, API, 2, Message::SchemaRequest { request, change });
            cluster.run(now_ms, |_| false);
            request
        };
        let created = change(&mut cluster, 20, create("t"));
        let dropped = change(
            &mut cluster,
            30,
            protocol::SchemaChange::DropTable { name: "t".into() },
        );
        for asked in [created, dropped] {
            assert!(
                cluster
                    .answers
                    .iter()
                    .any(|(r, result)| *r == asked && result.is_ok()),
                "{:?}",
                cluster.answers
            );
        }
        let schema_version = cluster.nodes[&2].state().expect("state").schema_version;
        assert!(schema_version >= 2, "a create and a drop: {schema_version}");

        // Node 3 measured before the drop and found its memory full.
        cluster.report_free_pages_at(40, 0, schema_version - 1);
        let waiting = change(&mut cluster, 50, create("t"));
        assert!(
            cluster.answers.iter().all(|(r, _)| *r != waiting),
            "answered from a report that predates the drop: {:?}",
            cluster.answers
        );
        assert_eq!(
            cluster.nodes[&2]
                .marks()
                .schema_request_waited_for_memory_report,
            1
        );

        // Its next measurement counts the freed pages: the create goes on.
        cluster.report_free_pages_at(150, 1_000, schema_version);
        cluster.tick(150, 2);
        cluster.run(150, |_| false);
        assert!(
            cluster
                .answers
                .iter()
                .any(|(r, result)| *r == waiting && result.is_ok()),
            "{:?}",
            cluster.answers
        );

        // A current report that cannot hold a table refuses it, at once.
        let president = cluster.nodes.get_mut(&2).expect("node 2");
        president.set_memory_pages(0, 1_000);
        let schema_version = president.state().expect("state").schema_version;
        cluster.report_free_pages_at(160, 0, schema_version);
        let refused = change(&mut cluster, 170, create("u"));
        let answer = cluster
            .answers
            .iter()
            .find(|(r, _)| *r == refused)
            .map(|(_, result)| result.clone());
        match answer {
            Some(Err(error)) => assert_eq!(error.ndb_code, dictionary::TABLE_FULL_NDB_CODE),
            other => panic!("expected 827, got {other:?}"),
        }
    }

    /// The president proposes a create, node 3 accepts it, the `Accepted`
    /// is lost, and before the proposal is retried node 3 reports that its
    /// memory filled up. Judged afresh the create would be refused (827),
    /// yet node 3 holds it accepted, so a later proposal must adopt and
    /// decide it: a refusal then would be a false answer. The president
    /// proposes the same change again instead, and the client's answer
    /// matches the dictionary.
    #[test]
    fn a_create_in_flight_is_proposed_again_not_refused_from_a_fresh_judgement() {
        let mut cluster = Cluster::formed();
        for node in [2, 3] {
            let node = cluster.nodes.get_mut(&node).expect("node");
            node.set_memory_pages(0, 1_000);
        }
        cluster.report_free_pages(10, 1_000);
        cluster.input(
            20,
            API,
            2,
            Message::SchemaRequest {
                request: 7,
                change: create("t"),
            },
        );
        cluster.run(20, |message| matches!(message, Message::Accepted { .. }));
        let node_3 = &cluster.nodes[&3];
        assert!(
            matches!(
                &node_3.acceptor.accepted,
                Some((_, Change::CreateTable { .. }))
            ),
            "node 3 accepted the create"
        );
        assert!(cluster.answers.is_empty(), "{:?}", cluster.answers);

        // Node 3's memory is full by its next report; the proposal times out.
        let retry_ms = 20 + HEARTBEAT_INTERVAL_MS * (PROPOSAL_TIMEOUT_INTERVALS + 1);
        cluster.report_free_pages(retry_ms - 10, 0);
        cluster.tick(retry_ms, 2);
        cluster.run(retry_ms, |_| false);

        // Memory is freed and another create comes: its proposal's phase 1
        // finds node 3's accepted create of t, which wins.
        let later_ms = retry_ms + 10;
        cluster.report_free_pages(later_ms, 1_000);
        cluster.input(
            later_ms,
            API,
            2,
            Message::SchemaRequest {
                request: 8,
                change: create("u"),
            },
        );
        cluster.run(later_ms, |_| false);

        let state = cluster.nodes[&2].state().expect("state").clone();
        let table = state.table_by_name("t").map(|t| t.id);
        let answers: Vec<&(u64, Result<u32, ErrorReply>)> = cluster
            .answers
            .iter()
            .filter(|(request, _)| *request == 7)
            .collect();
        assert_eq!(answers.len(), 1, "{:?}", cluster.answers);
        for (_, result) in answers {
            match (result, table) {
                (Ok(id), Some(table)) => assert_eq!(*id, table),
                (Err(error), None) => assert!(error.ndb_code != 0),
                (result, table) => panic!(
                    "the client was answered {result:?} and the dictionary holds table t as \
                     {table:?}: a false answer"
                ),
            }
        }
        assert!(table.is_some(), "the create was decided");
        assert!(cluster.nodes[&2].marks().schema_request_proposed_again > 0);
    }

    /// A member behind one this node still hears is not the president it
    /// follows: its ballot is refused without a promise (a cut-off node,
    /// just healed, must not remove a member the rest hear), while the
    /// first member's ballot is promised.
    #[test]
    fn a_proposal_from_behind_a_member_still_heard_is_refused() {
        let mut cluster = Cluster::formed();
        let from_3 = Ballot { round: 5, node: 3 };
        cluster.input(
            10,
            3,
            2,
            Message::Prepare {
                generation: 1,
                version: 2,
                ballot: from_3,
            },
        );
        let answer = cluster.in_flight.pop_front().expect("an answer");
        let (
            2,
            3,
            Message::Nack {
                ballot, promised, ..
            },
        ) = answer
        else {
            panic!("expected a refusal, got {answer:?}");
        };
        assert_eq!(ballot, from_3);
        assert!(
            promised < from_3,
            "a refusal promises nothing: {promised:?}"
        );
        assert_eq!(
            cluster.nodes[&2]
                .marks()
                .proposals_refused_from_a_member_not_followed,
            1
        );
        // The same from the first member is promised.
        let from_2 = Ballot { round: 6, node: 2 };
        cluster.input(
            20,
            2,
            3,
            Message::Prepare {
                generation: 1,
                version: 2,
                ballot: from_2,
            },
        );
        let answer = cluster.in_flight.pop_front().expect("an answer");
        assert!(
            matches!(answer, (3, 2, Message::Promise { ballot, .. }) if ballot == from_2),
            "{answer:?}"
        );
    }

    /// A member heard from again after it was suspected stays suspected
    /// (its closed connection may have lost messages): the connection is
    /// closed again so the member learns of it, no lease is given, and
    /// the suspected member's ballots are refused.
    #[test]
    fn a_suspected_member_heard_again_stays_suspected() {
        let mut cluster = Cluster::formed();
        let node_3 = Member {
            node: 3,
            incarnation: 1,
        };
        // Node 2 ticks alone: node 3's heartbeats never arrive.
        let mut now = 0;
        while !cluster.nodes[&2].suspects(node_3) {
            now += HEARTBEAT_INTERVAL_MS;
            assert!(now < 10_000, "node 2 never suspected node 3");
            cluster.tick(now, 2);
        }
        cluster.in_flight.clear();
        let mut effects = Effects::new();
        cluster.nodes.get_mut(&2).expect("node 2").on_message(
            now,
            3,
            1,
            Message::Heartbeat {
                generation: 1,
                version: 1,
                free_pages: None,
                sent_at_ms: now,
            },
            &mut effects,
        );
        assert!(cluster.nodes[&2].suspects(node_3));
        assert!(
            effects
                .events
                .iter()
                .any(|e| matches!(e, Event::Suspected(m) if *m == node_3)),
            "the connection is closed again: {:?}",
            effects.events
        );
        assert!(
            !effects
                .sends
                .iter()
                .any(|(_, m)| matches!(m, Message::HeartbeatEcho { .. })),
            "a suspected member gets no lease"
        );
        assert_eq!(cluster.nodes[&2].marks().suspected_members_heard_again, 1);
        let from_3 = Ballot { round: 50, node: 3 };
        cluster.input(
            now,
            3,
            2,
            Message::Prepare {
                generation: 1,
                version: 2,
                ballot: from_3,
            },
        );
        assert!(
            cluster.in_flight.iter().any(|(_, to, m)| *to == 3
                && matches!(m, Message::Nack { ballot, .. } if *ballot == from_3)),
            "{:?}",
            cluster.in_flight
        );
    }
}
