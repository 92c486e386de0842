//! The parameter table: every key config.ini may contain, as one static
//! array of descriptors.
//!
//! A descriptor says which sections accept the key, how its value is
//! written, its default and its limits. The parser checks values against the
//! table alone, so adding a key is one entry here plus, if the cluster uses
//! it, one field filled in `validate.rs`. Nothing is generated at runtime:
//! lookups scan the array, which is short and read once per line.
//!
//! A key may appear in two entries when its default or limits differ by
//! section (`NodeId` is 1..=144 for data nodes and 1..=255 for the others);
//! the entries for one section never share a name.

use crate::value::{GIB, KIB, MIB};

/// The kinds of section. Each non-default section of a node kind is one
/// node; `[x default]` sections hold values for every section of kind x.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectionKind {
    /// `[ndbd]`, also written `[db]` or `[ndbmtd]`: a data node.
    DataNode,
    /// `[ndb_mgmd]`, also written `[mgm]`: a management node.
    Management,
    /// `[mysqld]`: an API slot meant for a SQL node.
    Mysqld,
    /// `[api]`: an API slot for any client.
    Api,
    /// `[tcp]`: the connection between two nodes named by NodeId1/NodeId2.
    Tcp,
    /// `[shm]`: NDB's shared-memory connection between two nodes on one
    /// host. Shoal connects data nodes on one host over a Unix-domain
    /// socket by itself, so these sections are accepted and have no effect.
    Shm,
    /// `[system]`: the cluster's name and configuration generation; no
    /// effect in Shoal.
    System,
    /// `[computer]`: a host named for `ExecuteOnComputer` (deprecated in
    /// NDB); no effect in Shoal.
    Computer,
}

impl SectionKind {
    /// Every kind, in the order `index` numbers them.
    pub const ALL: [SectionKind; 8] = [
        SectionKind::DataNode,
        SectionKind::Management,
        SectionKind::Mysqld,
        SectionKind::Api,
        SectionKind::Tcp,
        SectionKind::Shm,
        SectionKind::System,
        SectionKind::Computer,
    ];

    /// Whether each non-default section of this kind is a node (and so
    /// may hold a node id).
    pub fn is_node(self) -> bool {
        matches!(
            self,
            SectionKind::DataNode
                | SectionKind::Management
                | SectionKind::Mysqld
                | SectionKind::Api
        )
    }

    /// The canonical name, as written between the brackets.
    pub fn name(self) -> &'static str {
        match self {
            SectionKind::DataNode => "ndbd",
            SectionKind::Management => "ndb_mgmd",
            SectionKind::Mysqld => "mysqld",
            SectionKind::Api => "api",
            SectionKind::Tcp => "tcp",
            SectionKind::Shm => "shm",
            SectionKind::System => "system",
            SectionKind::Computer => "computer",
        }
    }

    /// The kind a section name stands for, case-insensitively, aliases
    /// included.
    pub fn from_name(name: &str) -> Option<SectionKind> {
        match name.to_ascii_lowercase().as_str() {
            "ndbd" | "db" | "ndbmtd" => Some(SectionKind::DataNode),
            "ndb_mgmd" | "mgm" => Some(SectionKind::Management),
            "mysqld" => Some(SectionKind::Mysqld),
            "api" => Some(SectionKind::Api),
            "tcp" => Some(SectionKind::Tcp),
            "shm" => Some(SectionKind::Shm),
            "system" => Some(SectionKind::System),
            "computer" => Some(SectionKind::Computer),
            _ => None,
        }
    }

    /// A dense number for per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The section header for messages: `[ndbd]` or `[ndbd default]`.
    pub fn header(self, is_default: bool) -> String {
        if is_default {
            format!("[{} default]", self.name())
        } else {
            format!("[{}]", self.name())
        }
    }
}

/// How a value is written and what it means. Every number may carry a
/// K, M or G suffix (powers of 1024), as NDB reads every integer parameter
/// (its own defaults say `MaxNoOfConcurrentOperations=32k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A non-negative integer.
    Integer,
    /// A non-negative integer of milliseconds.
    Milliseconds,
    /// Bytes.
    Size,
    /// true/false, yes/no, y/n or 1/0; stored as 1 or 0.
    Boolean,
    /// Any non-empty text (host names, directories).
    Text,
    /// One of a fixed set of words, in any case (NDB's enumerations such as
    /// `Arbitration=WaitExternal`); stored as written in the table.
    Choice(&'static [&'static str]),
    /// A list of CPU ids and ranges such as `0-3,8`, each id at most
    /// `Parameter::max` (NDB's bitmask parameters).
    CpuList,
}

/// The value a parameter takes when neither its section nor the section's
/// `[x default]` sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    /// No default: the parameter is optional and its absence means
    /// something (an id to assign, a group to fill, a value to inherit).
    None,
    /// A number (integer, milliseconds or bytes).
    Number(u64),
    /// A boolean.
    Boolean(bool),
    /// Text.
    Text(&'static str),
}

/// Whose parameter it is, for the documentation and for anyone wondering
/// why NDB's manual does not mention a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// NDB's parameter, with NDB's meaning.
    Ndb,
    /// Shoal's own; NDB would reject it.
    Shoal,
    /// NDB's parameter, accepted so that existing files parse, but Shoal
    /// does not act on it (or folds it into another parameter).
    Compatibility,
}

/// One parameter of config.ini.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parameter {
    /// The canonical name, in NDB's capitalisation.
    pub name: &'static str,
    /// Other names accepted for it (`Id` for `NodeId`).
    pub aliases: &'static [&'static str],
    /// The sections it may appear in, default sections included unless
    /// `per_node`.
    pub sections: &'static [SectionKind],
    /// Whether it identifies one node or connection, so a `[x default]`
    /// section may not set it.
    pub per_node: bool,
    /// How its value is written.
    pub kind: ValueKind,
    /// Its value when not set.
    pub default: DefaultValue,
    /// The smallest value accepted (0 for booleans and text).
    pub min: u64,
    /// The largest value accepted.
    pub max: u64,
    /// Whose parameter it is.
    pub origin: Origin,
    /// One sentence on what it does.
    pub doc: &'static str,
    /// Why the limits differ from NDB's, when they do; added to the
    /// out-of-range error so the operator knows the limit is Shoal's.
    pub range_note: &'static str,
}

impl Parameter {
    /// Whether `written` names this parameter, ignoring case.
    pub fn is_named(&self, written: &str) -> bool {
        self.name.eq_ignore_ascii_case(written)
            || self
                .aliases
                .iter()
                .any(|alias| alias.eq_ignore_ascii_case(written))
    }

    pub(crate) const fn with_aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    pub(crate) const fn only_per_node(mut self) -> Self {
        self.per_node = true;
        self
    }

    const fn with_range_note(mut self, note: &'static str) -> Self {
        self.range_note = note;
        self
    }
}

/// The largest value of NDB's 32-bit integer parameters, NDB's
/// `MAX_INT_RNIL` (0xFFFFFEFF): the values above it mark "no value" there.
pub(crate) const INTEGER_MAX: u64 = 0xffff_feff;

/// The most DataMemory a data node holds: the engine addresses at most
/// 2^21 - 1 pages of 32 KiB (`storage::memory::page_pool::PAGE_COUNT_MAX`),
/// just under 64 GiB. NDB allows 16T; a value between the two used to pass
/// the management node and then stop the data node at start, so it is
/// refused where it is read.
pub const DATA_MEMORY_BYTES_MAX: u64 = ((1 << 21) - 1) * 32 * KIB;

pub(crate) const NODES: &[SectionKind] = &[
    SectionKind::DataNode,
    SectionKind::Management,
    SectionKind::Mysqld,
    SectionKind::Api,
];
pub(crate) const DATA: &[SectionKind] = &[SectionKind::DataNode];
pub(crate) const MANAGEMENT: &[SectionKind] = &[SectionKind::Management];
pub(crate) const API: &[SectionKind] = &[SectionKind::Mysqld, SectionKind::Api];
pub(crate) const TCP: &[SectionKind] = &[SectionKind::Tcp];

#[allow(clippy::too_many_arguments)]
const fn parameter(
    name: &'static str,
    sections: &'static [SectionKind],
    kind: ValueKind,
    default: DefaultValue,
    min: u64,
    max: u64,
    origin: Origin,
    doc: &'static str,
) -> Parameter {
    Parameter {
        name,
        aliases: &[],
        sections,
        per_node: false,
        kind,
        default,
        min,
        max,
        origin,
        doc,
        range_note: "",
    }
}

use DefaultValue::{Boolean as DefaultBoolean, None as NoDefault, Number, Text as DefaultText};
use Origin::{Compatibility, Ndb, Shoal};
use ValueKind::{Boolean, Integer, Milliseconds, Size, Text};

/// Every parameter Shoal accepts. The crate documentation lists them too; a
/// test keeps the two in step.
// Formatting is left to the author so that each entry stays a compact block
// that reads like a row of a table, instead of ten lines of one argument.
#[rustfmt::skip]
pub static PARAMETERS: [Parameter; 46] = [
    // Every node.
    parameter("NodeId", DATA, Integer, NoDefault, 1, 144, Ndb,
        "The data node's id; without it the node gets the lowest free id.")
        .with_aliases(&["Id"]).only_per_node(),
    parameter("NodeId", &[SectionKind::Management, SectionKind::Mysqld, SectionKind::Api],
        Integer, NoDefault, 1, 255, Ndb,
        "The node's id; a management node without one gets the lowest free id, an API slot \
         without one takes the id its client asks for when it connects.")
        .with_aliases(&["Id"]).only_per_node(),
    parameter("HostName", NODES, Text, DefaultText("localhost"), 0, 0, Ndb,
        "The host the node runs on; an API slot without one accepts a client from any host."),
    parameter("DataDir", &[SectionKind::DataNode, SectionKind::Management], Text,
        DefaultText("."), 0, 0, Ndb,
        "The directory for the node's logs, redo log and checkpoints."),
    // Data nodes.
    parameter("NoOfReplicas", DATA, Integer, Number(2), 1, 4, Ndb,
        "Copies of each row, and so the number of data nodes in each node group."),
    parameter("NodeGroup", DATA, Integer, NoDefault, 0, 65535, Ndb,
        "The node group of the data node; without it data nodes fill groups in section order."),
    parameter("DataMemory", DATA, Size, Number(98 * MIB), MIB, DATA_MEMORY_BYTES_MAX, Ndb,
        "Memory for rows and indexes, reserved and committed at start.")
        .with_range_note("Shoal's engine holds at most 2097151 pages of 32K, just under 64G; \
            NDB's own limit is 16384G"),
    parameter("IndexMemory", DATA, Size, NoDefault, 0, DATA_MEMORY_BYTES_MAX, Compatibility,
        "Deprecated in NDB; its bytes are added to DataMemory.")
        .with_range_note("it is added to DataMemory, which Shoal's engine limits to just \
            under 64G"),
    parameter("MaxNoOfExecutionThreads", DATA, Integer, Number(2), 2, 72, Ndb,
        "Execution threads of the data node; sets the LDM thread count."),
    parameter("ServerPort", DATA, Integer, Number(0), 0, 65535, Ndb,
        "The port the data node listens on; 0 picks a free port at start and publishes it \
         through the management node."),
    // Shoal's defaults detect a silent data node within 2 s (250 ms x 6),
    // where NDB's (5000 ms x 4) take 20 s. NDB needs the slack because its
    // heartbeats share threads with disk checkpoints and long signals.
    // Shoal's event loop is sans-IO with no blocking step, so a heartbeat
    // is handled in the loop turn it arrives, and a false suspicion costs
    // a node restart (it copies its fragments back), never data. When
    // durability lands, disk work must stay off the loop or these grow.
    parameter("HeartbeatIntervalDbDb", DATA, Milliseconds, Number(250), 10, INTEGER_MAX, Ndb,
        "Milliseconds between heartbeats from one data node to the next. Shoal's default \
         (250, with MaxMissedHeartbeats 6: a silent node is out within 2 s) is far below \
         NDB's 5000 because its event loop never blocks on disk, so a late heartbeat means \
         a stopped node, and a wrong suspicion costs a node restart, not data."),
    parameter("HeartbeatIntervalDbApi", DATA, Milliseconds, Number(500), 100, INTEGER_MAX, Ndb,
        "Milliseconds between heartbeats between data nodes and API nodes; an API node \
         silent for MaxMissedHeartbeats intervals is disconnected, which aborts its \
         transactions and frees its locks (Shoal's default 500, NDB's 1500)."),
    parameter("MaxMissedHeartbeats", DATA, Integer, Number(6), 2, 100, Shoal,
        "Heartbeats a silent node may miss before it is declared failed (NDB fixes this at 4; \
         Shoal's default 6 with 250 ms intervals declares a silent data node failed within \
         2 s)."),
    parameter("ArbitrationTimeout", DATA, Milliseconds, Number(7500), 10, INTEGER_MAX, Ndb,
        "Milliseconds a data node waits for the arbitrator's answer after a split; past it the \
         node stops taking new transactions (4035) but keeps its data until a state is agreed \
         (NDB shuts it down)."),
    parameter("StartPartialTimeout", DATA, Milliseconds, Number(30000), 0, INTEGER_MAX, Ndb,
        "Milliseconds an initial start waits for all data nodes before starting without some."),
    parameter("TransactionDeadlockDetectionTimeout", DATA, Milliseconds, Number(1200), 50,
        INTEGER_MAX, Ndb,
        "Milliseconds an operation may wait for a lock or a participant before it is aborted."),
    parameter("NodeRecoveryCopyBatchRows", DATA, Integer, Number(32), 1, 128, Shoal,
        "Rows one batch of a node recovery copy holds at most: the copying node keeps a \
         batch's rows locked for one round trip to the restarted node, so writes to them wait \
         at most that long; fewer rows, more round trips."),
    parameter("NodeRecoveryCopyRowsPerSecond", DATA, Integer, Number(100_000), 1_000,
        100_000_000, Shoal,
        "Rows per second a node recovery copy sends at most, per restarted node: the copy \
         shares the copying node's thread and links with the foreground, so a faster copy \
         restarts a node sooner and slows the writes more."),
    parameter("TransactionInactiveTimeout", DATA, Milliseconds, Number(4_294_967_039), 0,
        4_294_967_039, Ndb,
        "Milliseconds a transaction may wait for its application's next request before it is \
         aborted and its locks freed; 0 never aborts (NDB's default, 2^32 - 257, is 49 days)."),
    parameter("TimeBetweenGlobalCheckpoints", DATA, Milliseconds, Number(2000), 20, 32000, Ndb,
        "Milliseconds between global checkpoints (group commits of the redo log to disk)."),
    parameter("TimeBetweenEpochs", DATA, Milliseconds, Number(100), 0, 32000, Ndb,
        "Milliseconds between epochs, the units in which the data nodes agree on the order of \
         commits inside a global checkpoint; 0: one epoch per global checkpoint."),
    parameter("Diskless", DATA, Boolean, DefaultBoolean(false), 0, 1, Ndb,
        "Keep nothing on disk: no redo log, no local checkpoints, and a restart of the whole \
         cluster starts empty (for tests and benchmarks, as in NDB)."),
    parameter("SchedulerSpinTimer", DATA, Integer, Number(50), 0, 500, Ndb,
        "Microseconds a data node's thread keeps looking for new input (yielding the core \
         between looks) before it sleeps: waking a sleeping thread costs more than the spin \
         when the next message comes within it; 0 sleeps at once (NDB's default; Shoal's is \
         50, which served more sysbench inserts per second on a 2-core machine)."),
    parameter("UseShm", DATA, Boolean, DefaultBoolean(true), 0, 1, Ndb,
        "Links to processes on the same host (another data node, or an SQL node whose workers \
         read the link) run over shared memory, two rings of ShmSize, with the local socket left as doorbell and \
         liveness: a message costs a copy instead of two system calls. On by default (NDB's \
         default is off); 0 keeps such links on the local socket."),
    parameter("ShmSize", DATA, Size, Number(4 * MIB), 64 * KIB, 64 * MIB, Ndb,
        "Bytes of each direction's ring of a shared-memory link (rounded down to a power of \
         two)."),
    parameter("TimeBetweenLocalCheckpoints", DATA, Integer, Number(20), 0, 31, Ndb,
        "Base-2 logarithm of the 4-byte words written between local checkpoints."),
    parameter("NoOfFragmentLogFiles", DATA, Integer, Number(16), 3, INTEGER_MAX, Ndb,
        "Redo log files per set; the redo log holds this many times FragmentLogFileSize, times 4."),
    parameter("FragmentLogFileSize", DATA, Size, Number(16 * MIB), 4 * MIB, GIB, Ndb,
        "Size of one redo log file."),
    parameter("RedoBuffer", DATA, Size, Number(32 * MIB), MIB, INTEGER_MAX, Ndb,
        "Memory buffering redo log records before they reach disk."),
    parameter("MaxNoOfConcurrentOperations", DATA, Integer, Number(32768), 32, INTEGER_MAX, Ndb,
        "Operation records of the data node, reserved at start."),
    parameter("MaxNoOfConcurrentTransactions", DATA, Integer, Number(4096), 32, INTEGER_MAX,
        Ndb, "Transaction records of the data node, reserved at start."),
    parameter("MaxNoOfConcurrentScans", DATA, Integer, Number(256), 2, 500, Ndb,
        "Scans the data node's transaction coordinator runs at once; one more is refused \
         with 488."),
    parameter("MaxNoOfTables", DATA, Integer, Number(128), 8, 20320, Ndb,
        "Table metadata objects in the dictionary: tables and unique hash indexes, as in NDB; \
         the smallest data node's value applies, and one more create is refused with 707."),
    parameter("LockPagesInMainMemory", DATA, Integer, Number(0), 0, 2, Compatibility,
        "NDB's request to lock memory in RAM; without effect (data nodes commit DataMemory at \
         start whatever it says, and do not lock it)."),
    parameter("SendBufferMemory", DATA, Size, NoDefault, 64 * KIB, INTEGER_MAX, Ndb,
        "Send buffer of each of the data node's connections; without it [tcp default]'s."),
    parameter("StopOnError", DATA, Boolean, DefaultBoolean(true), 0, 1, Ndb,
        "Whether the data node's angel leaves a crashed node down (true, NDB's default) or \
         starts it again (false)."),
    parameter("MaxStartFailRetries", DATA, Integer, Number(3), 0, INTEGER_MAX, Ndb,
        "With StopOnError=false: start failures in a row after which the angel gives up; 0 \
         retries without end (the angel's restarts per minute still bound it)."),
    parameter("StartFailRetryDelay", DATA, Integer, Number(0), 0, INTEGER_MAX,
        Ndb, "Seconds the angel waits before starting a node again after a failed start."),
    // Management nodes.
    parameter("PortNumber", MANAGEMENT, Integer, Number(1186), 1, 65535, Ndb,
        "The port the management node listens on."),
    parameter("ArbitrationRank", MANAGEMENT, Integer, Number(1), 0, 2, Ndb,
        "0: never arbitrator; 1: preferred arbitrator; 2: arbitrator when no rank 1 is up."),
    // API slots.
    parameter("ArbitrationRank", API, Integer, Number(0), 0, 2, Ndb,
        "0: never arbitrator; 1: preferred arbitrator; 2: arbitrator when no rank 1 is up."),
    // Connections.
    parameter("SendBufferMemory", TCP, Size, Number(2 * MIB), 64 * KIB, INTEGER_MAX, Ndb,
        "Send buffer of each connection between two nodes."),
    parameter("ReceiveBufferMemory", TCP, Size, Number(2 * MIB), 16 * KIB, INTEGER_MAX, Ndb,
        "Receive buffer of each connection between two nodes."),
    parameter("NodeId1", TCP, Integer, NoDefault, 1, 255, Ndb,
        "One end of the connection a [tcp] section configures.")
        .only_per_node(),
    parameter("NodeId2", TCP, Integer, NoDefault, 1, 255, Ndb,
        "The other end of the connection a [tcp] section configures.")
        .only_per_node(),
    parameter("Group", TCP, Integer, Number(55), 0, 200, Compatibility,
        "NDB's transporter priority group; accepted and ignored."),
];

/// What a key names in a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A parameter Shoal applies, by its index in [`PARAMETERS`].
    Found(usize),
    /// An NDB parameter Shoal accepts without effect
    /// ([`crate::ndb_parameters::WITHOUT_EFFECT`]).
    WithoutEffect(&'static Parameter),
    /// A parameter that belongs in other sections.
    WrongSection(&'static Parameter),
    /// No parameter of that name anywhere.
    Unknown,
}

/// Finds what `written` names in a section of kind `section`, ignoring case:
/// first among the parameters Shoal applies, then among NDB's others.
pub fn lookup(written: &str, section: SectionKind) -> Lookup {
    let mut elsewhere = None;
    for (index, parameter) in PARAMETERS.iter().enumerate() {
        if parameter.is_named(written) {
            if parameter.sections.contains(&section) {
                return Lookup::Found(index);
            }
            elsewhere.get_or_insert(parameter);
        }
    }
    for parameter in &crate::ndb_parameters::WITHOUT_EFFECT {
        if parameter.is_named(written) {
            if parameter.sections.contains(&section) {
                return Lookup::WithoutEffect(parameter);
            }
            elsewhere.get_or_insert(parameter);
        }
    }
    elsewhere.map_or(Lookup::Unknown, Lookup::WrongSection)
}

/// The parameter a section of kind `section` means by `written`, applied
/// or not.
pub fn find(written: &str, section: SectionKind) -> Option<&'static Parameter> {
    match lookup(written, section) {
        Lookup::Found(index) => Some(&PARAMETERS[index]),
        Lookup::WithoutEffect(parameter) => Some(parameter),
        Lookup::WrongSection(_) | Lookup::Unknown => None,
    }
}

/// The index of a parameter the code itself names. Panics on a name that
/// is not in the table, which is a bug in this crate, not in the file.
pub(crate) fn index_of(name: &str, section: SectionKind) -> usize {
    match lookup(name, section) {
        Lookup::Found(index) => index,
        Lookup::WithoutEffect(_) | Lookup::WrongSection(_) | Lookup::Unknown => {
            panic!("the parameter table has no {name} for [{}]", section.name())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Also across the two tables: a key Shoal starts to apply must leave
    /// the table of keys without effect.
    #[test]
    fn names_are_unique_within_each_section() {
        let all = PARAMETERS
            .iter()
            .chain(crate::ndb_parameters::WITHOUT_EFFECT.iter());
        for section in SectionKind::ALL {
            let mut names: Vec<String> = Vec::new();
            for parameter in all.clone().filter(|p| p.sections.contains(&section)) {
                for name in std::iter::once(&parameter.name).chain(parameter.aliases) {
                    let lower = name.to_ascii_lowercase();
                    assert!(
                        !names.contains(&lower),
                        "{name} appears twice for [{}]",
                        section.name()
                    );
                    names.push(lower);
                }
            }
        }
    }

    #[test]
    fn defaults_lie_within_limits_and_match_kinds() {
        let all = PARAMETERS
            .iter()
            .chain(crate::ndb_parameters::WITHOUT_EFFECT.iter());
        for parameter in all {
            assert!(parameter.min <= parameter.max, "{}", parameter.name);
            match (parameter.kind, parameter.default) {
                (ValueKind::Text, DefaultValue::Text(_) | DefaultValue::None) => {}
                (ValueKind::Choice(words), DefaultValue::None) => {
                    assert!(!words.is_empty(), "{}", parameter.name)
                }
                (ValueKind::CpuList, DefaultValue::None) => {}
                (ValueKind::Boolean, DefaultValue::Boolean(_) | DefaultValue::None) => {}
                (
                    ValueKind::Integer | ValueKind::Milliseconds | ValueKind::Size,
                    DefaultValue::None,
                ) => {}
                (
                    ValueKind::Integer | ValueKind::Milliseconds | ValueKind::Size,
                    DefaultValue::Number(number),
                ) => assert!(
                    (parameter.min..=parameter.max).contains(&number),
                    "{}: default {number} outside {}..={}",
                    parameter.name,
                    parameter.min,
                    parameter.max
                ),
                (kind, default) => {
                    panic!("{}: default {default:?} for a {kind:?}", parameter.name)
                }
            }
            assert!(!parameter.sections.is_empty(), "{}", parameter.name);
            assert!(parameter.doc.ends_with('.'), "{}", parameter.name);
        }
    }

    #[test]
    fn every_parameter_is_in_the_crate_documentation() {
        let crate_docs = include_str!("lib.rs");
        for parameter in &PARAMETERS {
            assert!(
                crate_docs.contains(&format!("`{}`", parameter.name)),
                "{} is missing from the table in lib.rs",
                parameter.name
            );
        }
    }

    #[test]
    fn lookup_ignores_case_and_knows_aliases() {
        assert_eq!(
            find("datamemory", SectionKind::DataNode).map(|p| p.name),
            Some("DataMemory")
        );
        assert_eq!(find("ID", SectionKind::Api).map(|p| p.max), Some(255));
        assert_eq!(find("id", SectionKind::DataNode).map(|p| p.max), Some(144));
        assert!(matches!(
            lookup("PortNumber", SectionKind::DataNode),
            Lookup::WrongSection(parameter) if parameter.name == "PortNumber"
        ));
        assert_eq!(lookup("DataMemroy", SectionKind::DataNode), Lookup::Unknown);
    }
}
