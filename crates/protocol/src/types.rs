//! Plain data carried by messages: node identities, ballots, the replicated
//! cluster state (membership and dictionary) and status reports.
//!
//! The cluster state is the value every data node agrees on. It changes one
//! `Change` at a time; each change gets the next `version`, and the nodes
//! agree on each version's change with single-decree Paxos (see the `cluster`
//! crate). Everything here is data: the rules live in `cluster`.

/// A node id from config.ini: 1..=255. Data nodes use 1..=144.
pub type NodeId = u8;

/// One run of a node. A node that restarts gets a new, larger incarnation and
/// must be admitted again: membership, acceptor duties and data belong to
/// the incarnation, not to the node id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Member {
    pub node: NodeId,
    pub incarnation: u64,
}

/// A Paxos ballot: ordered by round, then by proposing node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Ballot {
    pub round: u32,
    pub node: NodeId,
}

/// What kind of node sits at the other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeRole {
    Data,
    Management,
    Api,
}

impl NodeRole {
    pub fn wire_id(self) -> u8 {
        match self {
            NodeRole::Data => 1,
            NodeRole::Management => 2,
            NodeRole::Api => 3,
        }
    }

    pub fn from_wire_id(id: u8) -> Option<NodeRole> {
        match id {
            1 => Some(NodeRole::Data),
            2 => Some(NodeRole::Management),
            3 => Some(NodeRole::Api),
            _ => None,
        }
    }
}

/// Where a table's partition lives: one fragment per replica set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    pub partition: u32,
    pub node_group: u16,
    /// `replicas[0]` is the primary, the rest are backups.
    pub replicas: Vec<NodeId>,
    /// The LDM thread that owns the fragment on each of its nodes.
    pub ldm: u32,
}

/// A table in the dictionary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    pub id: u32,
    pub name: String,
    /// The schema version that created the table.
    pub schema_version: u64,
    /// `schema::table_codec` encoding of the definition and table options.
    pub definition: Vec<u8>,
    pub partition_count: u32,
    pub fully_replicated: bool,
    pub read_backup: bool,
    /// Every fragment: one per partition, or one per partition and node
    /// group for fully replicated tables.
    pub fragments: Vec<Fragment>,
}

/// The state all data nodes agree on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterState {
    /// Which formation of the cluster this state descends from. The
    /// management node starts a new generation each time it forms the
    /// cluster from nodes that have not started (first start, or after every
    /// data node failed); versions count within a generation.
    pub generation: u64,
    /// 0 before the cluster first formed; every decided change adds one.
    pub version: u64,
    /// In admission order: the first member is the president.
    pub members: Vec<Member>,
    /// Per node id, the newest incarnation that was removed: it may never be
    /// admitted again, however late its join request arrives.
    pub removed: Vec<Member>,
    /// Members admitted into a running cluster whose fragment replicas are
    /// still being copied: they take every write of their fragments (last
    /// in each chain) but serve no read, are no primary, and do not count
    /// as a live replica of their node group. Sorted.
    pub starting: Vec<Member>,
    /// Members that joined a running cluster and finished copying, in the
    /// order they finished. They follow the members that formed the
    /// cluster in every write chain, so a node that finishes its copy
    /// never becomes a primary in the middle of other transactions (a
    /// commit acknowledged by the old primary could not yet be visible
    /// at the new one).
    pub recovered: Vec<Member>,
    /// Counts dictionary changes (create, drop).
    pub schema_version: u64,
    pub next_table_id: u32,
    /// Sorted by id.
    pub tables: Vec<TableEntry>,
    /// The most recent dictionary changes with the request that asked for
    /// each, oldest first: a retried request (same API node, same request
    /// id) finds its change here and gets the answer the first attempt got,
    /// whichever president it reaches. The `cluster` crate bounds the list.
    pub schema_outcomes: Vec<SchemaOutcome>,
    /// A system restart: the members that formed this generation loaded
    /// their own disks with every commit of the epochs below this (0: the
    /// generation started empty).
    pub restore_epoch: u64,
    /// Epochs of this generation are above this: above every epoch any
    /// member's disk holds, so epochs from before the restart never mix
    /// with new ones.
    pub epoch_floor: u64,
}

/// A member's free DataMemory as its heartbeats tell the president, which
/// refuses a create the members could not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FreePages {
    /// Free 32 KiB pages of DataMemory when measured.
    pub pages: u64,
    /// The schema version the member had installed (and created the
    /// fragments of) when it measured: tables created after it are not
    /// counted in `pages` yet.
    pub schema_version: u64,
}

/// Who asked for a dictionary change: the API node and its request id. A
/// client keeps the request id for every retry of one change, so the id
/// names the change, not the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SchemaRequestId {
    pub node: NodeId,
    pub request: u64,
}

/// A dictionary change applied for a request, as the agreed state remembers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaOutcome {
    pub origin: SchemaRequestId,
    /// The table created or dropped: the answer the request gets.
    pub table_id: u32,
}

impl ClusterState {
    /// Orders states: a later generation wins, then a higher version.
    pub fn position(&self) -> (u64, u64) {
        (self.generation, self.version)
    }

    pub fn president(&self) -> Option<Member> {
        self.members.first().copied()
    }

    pub fn contains(&self, member: Member) -> bool {
        self.members.contains(&member)
    }

    /// Whether `member` (or a later incarnation of its node) was removed:
    /// such an incarnation may never be admitted again.
    pub fn was_removed(&self, member: Member) -> bool {
        self.removed
            .iter()
            .any(|r| r.node == member.node && r.incarnation >= member.incarnation)
    }

    /// Whether `node` is a member still copying its fragment replicas.
    pub fn is_starting(&self, node: NodeId) -> bool {
        self.starting.iter().any(|m| m.node == node)
    }

    /// The members that hold every fragment replica of theirs: all but
    /// the starting ones.
    pub fn started_members(&self) -> Vec<Member> {
        self.members
            .iter()
            .copied()
            .filter(|m| !self.starting.contains(m))
            .collect()
    }

    pub fn member_of(&self, node: NodeId) -> Option<Member> {
        self.members.iter().copied().find(|m| m.node == node)
    }

    pub fn table_by_name(&self, name: &str) -> Option<&TableEntry> {
        self.tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// The outcome remembered for `origin`, if its change was applied.
    pub fn schema_outcome(&self, origin: SchemaRequestId) -> Option<SchemaOutcome> {
        self.schema_outcomes
            .iter()
            .rev()
            .find(|outcome| outcome.origin == origin)
            .copied()
    }
}

/// One step of the cluster state, agreed by Paxos for one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The new member list (removals and at most one admission).
    Membership { members: Vec<Member> },
    CreateTable {
        table: TableEntry,
        origin: SchemaRequestId,
    },
    DropTable {
        table_id: u32,
        origin: SchemaRequestId,
    },
    /// The table keeps its id, rows and fragments under a new name;
    /// `definition` is its definition with that name.
    RenameTable {
        table_id: u32,
        name: String,
        definition: Vec<u8>,
        origin: SchemaRequestId,
    },
    /// A starting member copied every fragment replica it holds.
    NodeStarted { member: Member },
}

/// A dictionary change an API node asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChange {
    /// `schema::table_codec` bytes of the definition and options.
    CreateTable {
        definition: Vec<u8>,
    },
    DropTable {
        name: String,
    },
    RenameTable {
        from: String,
        to: String,
    },
}

/// An error answer: NDB's error code, MySQL's, and a message that says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    pub ndb_code: u16,
    pub mysql_code: u16,
    pub message: String,
}

/// NDB's "Scan already complete" (4120): a scan asked for more rows after
/// it ended, was closed, or its transaction committed or rolled back (which
/// closes the transaction's scans).
pub const SCAN_ALREADY_COMPLETE_NDB_CODE: u16 = 4120;
/// The MySQL code NDB's API errors without their own map to (1296, "Got
/// error from NDB").
pub const NDB_ERROR_MYSQL_CODE: u16 = 1296;

/// NDB's "request to a non-master" (702): temporary, retry at the president.
pub const NOT_PRESIDENT_NDB_CODE: u16 = 702;
const NOT_PRESIDENT_RETRY_AT: &str = "retry at node ";

impl ErrorReply {
    /// The answer to a dictionary request sent to a node that does not
    /// preside; `president` is 0 when the node knows of none.
    pub fn not_president(president: NodeId) -> ErrorReply {
        ErrorReply {
            ndb_code: NOT_PRESIDENT_NDB_CODE,
            mysql_code: 1297,
            message: format!(
                "request to a node that does not preside: {NOT_PRESIDENT_RETRY_AT}{president} \
                 (a temporary error)"
            ),
        }
    }

    /// The president a `not_president` answer points at, if it names one.
    pub fn president_hint(&self) -> Option<NodeId> {
        if self.ndb_code != NOT_PRESIDENT_NDB_CODE {
            return None;
        }
        self.message
            .split(NOT_PRESIDENT_RETRY_AT)
            .nth(1)?
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
            .filter(|node| *node != 0)
    }
}

/// A data node's life cycle as `SHOW` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    NotConnected,
    /// Connected to the management node, not yet a member of the cluster.
    Starting,
    /// A member of the agreed cluster state.
    Started,
    Stopping,
    /// Restarted with `N RESTART -n`: its angel holds it until `N START`.
    NotStarted,
}

impl NodeState {
    pub fn wire_id(self) -> u8 {
        match self {
            NodeState::NotConnected => 0,
            NodeState::Starting => 1,
            NodeState::Started => 2,
            NodeState::Stopping => 3,
            NodeState::NotStarted => 4,
        }
    }

    pub fn from_wire_id(id: u8) -> Option<NodeState> {
        match id {
            0 => Some(NodeState::NotConnected),
            1 => Some(NodeState::Starting),
            2 => Some(NodeState::Started),
            3 => Some(NodeState::Stopping),
            4 => Some(NodeState::NotStarted),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NodeState::NotConnected => "not connected",
            NodeState::Starting => "starting",
            NodeState::Started => "started",
            NodeState::Stopping => "stopping",
            NodeState::NotStarted => "not started",
        }
    }
}

/// How `N RESTART` restarts a data node (ndb_mgm's flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RestartOptions {
    /// `-i`: an initial restart. The same as a normal one until data
    /// nodes keep anything on disk.
    pub initial: bool,
    /// `-n`: the node waits for `N START` before it starts again.
    pub no_start: bool,
}

/// What a data node tells the management node about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DataNodeReport {
    /// A member of the installed cluster state.
    pub started: bool,
    /// A member still copying its fragment replicas (node recovery): `SHOW`
    /// lists it as starting.
    pub recovering: bool,
    /// Node recovery of a starting member: fragment replicas copied so
    /// far, how many it copies in all, and rows copied.
    pub fragments_copied: u32,
    pub fragments_to_copy: u32,
    pub rows_copied: u64,
    pub incarnation: u64,
    pub generation: u64,
    pub version: u64,
    pub president: NodeId,
    pub members: Vec<NodeId>,
    pub schema_version: u64,
    pub tables: u32,
    pub pages_used: u64,
    pub pages_total: u64,
    pub durability: Durability,
    /// What the node's disk held when it started: every commit of the
    /// epochs below `restorable_epoch` (0: nothing a system restart can
    /// use), saved while the cluster state was of `restorable_generation`,
    /// and records of epochs up to `disk_epoch_max`.
    pub restorable_epoch: u64,
    pub restorable_generation: u64,
    /// When that save is a system restart's mark of its restore point, the
    /// generation whose commits below `restorable_epoch` it holds too (0:
    /// none).
    pub restored_from_generation: u64,
    pub disk_epoch_max: u64,
}

/// A data node's epochs and redo log, as `REPORT DURABILITY` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Durability {
    /// The epoch commits are decided in (0 before the first).
    pub epoch: u64,
    /// Every epoch below this is durable on every data node: a system
    /// restart brings back every commit of them.
    pub durable_epoch: u64,
    /// The redo log: bytes from its tail to its head, and what its files
    /// hold (0 for a node that keeps nothing on disk).
    pub redo_used_bytes: u64,
    pub redo_total_bytes: u64,
}

/// One row of the management node's `SHOW`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    pub node: NodeId,
    pub role: NodeRole,
    /// The host name config.ini gives, or "" when it gives none.
    pub configured_host: String,
    /// The address the node connected from, when connected.
    pub address: String,
    pub state: NodeState,
    pub node_group: Option<u16>,
    pub president: bool,
    pub pages_used: u64,
    pub pages_total: u64,
    /// Node recovery progress while `Starting` as a member (else zeros).
    pub fragments_copied: u32,
    pub fragments_to_copy: u32,
    pub rows_copied: u64,
    /// A connected data node's last report (zeros for other nodes).
    pub durability: Durability,
}

/// Where a node listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub node: NodeId,
    pub host: String,
    pub port: u16,
}

/// The epoch value of global checkpoint `gci`, epoch `micro` inside it.
pub fn epoch(gci: u32, micro: u32) -> u64 {
    (u64::from(gci) << 32) | u64::from(micro)
}

/// The global checkpoint an epoch belongs to.
pub fn gci_of(epoch: u64) -> u32 {
    (epoch >> 32) as u32
}

/// The global checkpoint whose epochs all lie below `epoch`: the last
/// complete one when every epoch below `epoch` is.
pub fn gci_before(epoch: u64) -> u32 {
    gci_of(epoch).saturating_sub(1)
}
