//! Shoal's parser and validator for NDB's `config.ini`, the one file that
//! describes a whole cluster: its data nodes, management nodes, API slots
//! and the connections between them.
//!
//! The crate is sans-IO: the caller reads the file and passes its text to
//! [`parse`] with the name to put in error messages. Generic INI parsers
//! merge repeated sections, but here every `[ndbd]`, `[ndb_mgmd]`,
//! `[mysqld]` and `[api]` section is one node, so the crate has its own.
//!
//! # Format
//!
//! Sections are `[ndbd]` (also `[db]`, `[ndbmtd]`), `[ndb_mgmd]` (also
//! `[mgm]`), `[mysqld]`, `[api]`, `[tcp]`, and NDB's `[shm]`, `[system]`
//! and `[computer]` (accepted, without effect), each optionally followed by
//! `default`: a `[ndbd default]` value applies to every `[ndbd]` section that
//! does not set the key itself, wherever the default section sits in the
//! file. Section names and keys ignore case; lines are `key=value` or
//! `key: value`; `#` and `;` start comments (a whole line, or after
//! whitespace); whitespace around names, keys and values is ignored. Every
//! number takes K, M or G (powers of 1024), as in NDB; booleans are
//! true/false, yes/no, y/n or 1/0; durations are milliseconds.
//!
//! Parsing stops at the first problem and reports it as a [`ConfigError`]
//! naming file, line and key; the file's own text is repeated only up to 80
//! characters. [`parse_bytes`] also refuses a file that is not UTF-8, with
//! the line of the first bad byte. `parse.rs` checks each line against the
//! parameter table; `validate.rs` checks the cluster as a whole (node ids,
//! replicas, node groups, connections) and builds the [`ClusterConfig`].
//!
//! # Parameters
//!
//! The table of the keys Shoal applies lives in [`parameters::PARAMETERS`].
//! Origin says whose key it is: *NDB* keys mean what NDB's manual says;
//! *Shoal* keys are our own and NDB would reject them; *compat* keys are
//! NDB's, accepted so that existing files parse, but Shoal does not act on
//! them (or folds them into another).
//!
//! Every other parameter of NDB 8.0's config.ini (MaxNoOfAttributes,
//! ThreadConfig, TimeBetweenEpochsTimeout, LogDestination, BatchSize, ... about
//! 190 of them) is in [`ndb_parameters::WITHOUT_EFFECT`] with NDB's type,
//! default and range: a file that sets them parses, each value is checked
//! against NDB's range, and [`ClusterConfig::notices`] gets one notice
//! naming every such key (and every *compat* key set) with its line.
//!
//! | Key | Sections | Value | Default | Range | Origin |
//! |-----|----------|-------|---------|-------|--------|
//! | `NodeId` (`Id`) | ndbd | integer | lowest free | 1..=144 | NDB |
//! | `NodeId` (`Id`) | ndb_mgmd, mysqld, api | integer | lowest free (ndb_mgmd), none (API slot) | 1..=255 | NDB |
//! | `HostName` | ndbd, ndb_mgmd, mysqld, api | text | localhost (API slot: any host) | | NDB |
//! | `DataDir` | ndbd, ndb_mgmd | text | `.` | | NDB |
//! | `NoOfReplicas` | ndbd | integer, equal on all data nodes | 2 | 1..=4 | NDB |
//! | `NodeGroup` | ndbd | integer | filled in section order | 0..=65535 | NDB |
//! | `DataMemory` | ndbd | size, committed at start | 98M | 1M..=67108832K | NDB (Shoal's limit) |
//! | `IndexMemory` | ndbd | size, added to DataMemory with a notice | 0 | 0..=67108832K | compat |
//! | `MaxNoOfExecutionThreads` | ndbd | integer | 2 | 2..=72 | NDB |
//! | `ServerPort` | ndbd | integer, 0 = any free port | 0 | 0..=65535 | NDB |
//! | `HeartbeatIntervalDbDb` | ndbd | ms | 250 | 10.. | NDB |
//! | `HeartbeatIntervalDbApi` | ndbd | ms | 500 | 100.. | NDB |
//! | `MaxMissedHeartbeats` | ndbd | integer | 6 | 2..=100 | Shoal |
//! | `ArbitrationTimeout` | ndbd | ms | 7500 | 10.. | NDB |
//! | `StartPartialTimeout` | ndbd | ms | 30000 | 0.. | NDB |
//! | `TransactionDeadlockDetectionTimeout` | ndbd | ms | 1200 | 50.. | NDB |
//! | `NodeRecoveryCopyBatchRows` | ndbd | integer | 32 | 1..=128 | Shoal |
//! | `NodeRecoveryCopyRowsPerSecond` | ndbd | integer | 100000 | 1000..=100000000 | Shoal |
//! | `TransactionInactiveTimeout` | ndbd | ms, 0 = never | 4294967039 | 0..=4294967039 | NDB |
//! | `TimeBetweenGlobalCheckpoints` | ndbd | ms | 2000 | 20..=32000 | NDB |
//! | `TimeBetweenEpochs` | ndbd | ms | 100 | 0..=32000 | NDB |
//! | `Diskless` | ndbd | boolean: no redo log, no checkpoints, nothing survives a system restart | false | | NDB |
//! | `SchedulerSpinTimer` | ndbd | µs a data node looks for input before it sleeps, 0 = never | 50 (NDB: 0) | 0..=500 | NDB |
//! | `UseShm` | ndbd | links to processes on this host (data nodes, SQL nodes) run over shared memory | 1 (NDB: 0) | 0..=1 | NDB |
//! | `ShmSize` | ndbd | bytes of each direction's ring of such a link (a power of two at most) | 4M | 64K..=64M | NDB |
//! | `TimeBetweenLocalCheckpoints` | ndbd | log2 of 4-byte words | 20 | 0..=31 | NDB |
//! | `NoOfFragmentLogFiles` | ndbd | integer | 16 | 3.. | NDB |
//! | `FragmentLogFileSize` | ndbd | size | 16M | 4M..=1G | NDB |
//! | `RedoBuffer` | ndbd | size | 32M | 1M.. | NDB |
//! | `MaxNoOfConcurrentOperations` | ndbd | integer | 32768 | 32.. | NDB |
//! | `MaxNoOfConcurrentTransactions` | ndbd | integer | 4096 | 32.. | NDB |
//! | `MaxNoOfConcurrentScans` | ndbd | integer, scans of the node's coordinator | 256 | 2..=500 | NDB |
//! | `MaxNoOfTables` | ndbd | integer, tables and unique hash indexes in the dictionary (the smallest data node's value applies) | 128 | 8..=20320 | NDB |
//! | `LockPagesInMainMemory` | ndbd | integer, no effect | 0 | 0..=2 | compat |
//! | `SendBufferMemory` | ndbd | size | `[tcp default]`'s | 64K.. | NDB |
//! | `StopOnError` | ndbd | boolean: the angel leaves a crashed node down | true | | NDB |
//! | `MaxStartFailRetries` | ndbd | integer, failed starts in a row before the angel gives up (0 = no end) | 3 | 0.. | NDB |
//! | `StartFailRetryDelay` | ndbd | seconds before the angel retries a failed start | 0 | 0.. | NDB |
//! | `PortNumber` | ndb_mgmd | integer | 1186 | 1..=65535 | NDB |
//! | `ArbitrationRank` | ndb_mgmd | integer | 1 | 0..=2 | NDB |
//! | `ArbitrationRank` | mysqld, api | integer | 0 | 0..=2 | NDB |
//! | `SendBufferMemory` | tcp | size | 2M | 64K.. | NDB |
//! | `ReceiveBufferMemory` | tcp | size | 2M | 16K.. | NDB |
//! | `NodeId1`, `NodeId2` | tcp (not default) | integer, an existing node | required | 1..=255 | NDB |
//! | `Group` | tcp | integer, ignored | 55 | 0..=200 | compat |
//!
//! An open range (`10..`) ends at 4294967039 (0xFFFFFEFF), NDB's
//! `MAX_INT_RNIL`, the limit of its 32-bit parameters. DataMemory ends at 67108832K (2^21 - 1 pages of 32K, just
//! under 64G), what the storage engine of a data node addresses; NDB's
//! limit is 16T, and a larger value is refused here rather than by the
//! data node at start. PortNumber is where the management node listens
//! unless its command line names another port. `MaxMissedHeartbeats` is Shoal's: NDB declares a node dead
//! after a fixed four missed heartbeats; Shoal lets tests and slow networks
//! change that. Shoal's heartbeat defaults (250 ms between data nodes, 500 ms
//! to API nodes, 6 missed) detect a silent node within 2 s where NDB's
//! (5000 ms, 1500 ms, 4) take 20 s: see `HeartbeatIntervalDbDb` in
//! `parameters.rs` for why that is safe here.
//!
//! # Node ids and node groups
//!
//! Data and management nodes without `NodeId` get the lowest free id, in
//! section order, once every explicit id is known (as NDB does). API slots
//! without one stay free and take the id their client asks for. Data nodes
//! with `NodeGroup` go to that group; the others fill the lowest group not
//! yet full, in section order. Every group ends with exactly NoOfReplicas
//! nodes and groups are numbered 0 upwards without gaps.

mod error;
pub mod ndb_parameters;
pub mod parameters;
mod parse;
mod sandbox;
mod validate;
pub mod value;

pub use error::ConfigError;
pub use sandbox::sandbox_config_text;

/// A node id, 1..=255 (data nodes 1..=144), as in NDB.
pub type NodeId = u8;

/// Parses and validates the text of a config.ini. `file_name` is only used
/// in error messages and notices.
pub fn parse(text: &str, file_name: &str) -> Result<ClusterConfig, ConfigError> {
    let document = parse::parse_document(text, file_name)?;
    validate::validate(&document, file_name)
}

/// Parses and validates a config.ini as read from disk. A file that is not
/// UTF-8 is refused with the line and column of its first bad byte (NDB's
/// files are ASCII; a stray Latin-1 byte in a comment is the usual cause).
pub fn parse_bytes(bytes: &[u8], file_name: &str) -> Result<ClusterConfig, ConfigError> {
    let text = std::str::from_utf8(bytes).map_err(|error| {
        let valid = &bytes[..error.valid_up_to()];
        let line = valid.iter().filter(|byte| **byte == b'\n').count() + 1;
        let line_start = valid
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map_or(0, |newline| newline + 1);
        let column = valid.len() - line_start + 1;
        ConfigError::new(
            file_name,
            u32::try_from(line).unwrap_or(u32::MAX),
            None,
            format!(
                "not UTF-8 text: byte 0x{:02x} at column {column} cannot be read; save the file \
                 as UTF-8 (or ASCII, as NDB's own files are)",
                bytes[error.valid_up_to()]
            ),
        )
    })?;
    parse(text, file_name)
}

/// A whole cluster as config.ini describes it, validated: ids are unique and
/// assigned, node groups are complete, every value is within its range.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// The data nodes, in section order.
    pub data_nodes: Vec<DataNodeConfig>,
    /// The management nodes, in section order.
    pub management_nodes: Vec<ManagementNodeConfig>,
    /// The `[mysqld]` and `[api]` slots, in section order.
    pub api_nodes: Vec<ApiNodeConfig>,
    /// Connection settings from `[tcp default]`.
    pub tcp: TcpConfig,
    /// `[tcp]` sections: settings for one pair of nodes, overriding `tcp`.
    pub tcp_connections: Vec<TcpConnectionConfig>,
    /// NoOfReplicas, the same on every data node.
    pub no_of_replicas: u8,
    /// The data node ids of each node group, by group number (index =
    /// group), each of exactly `no_of_replicas` nodes in section order.
    pub node_groups: Vec<Vec<NodeId>>,
    /// Things the operator should know that are not errors, each starting
    /// with `file:line:`, such as IndexMemory being folded into DataMemory.
    pub notices: Vec<String>,
}

impl ClusterConfig {
    /// The data node with id `id`.
    pub fn data_node(&self, id: NodeId) -> Option<&DataNodeConfig> {
        self.data_nodes.iter().find(|node| node.node_id == id)
    }

    /// The node group of data node `id`; `None` for any other id.
    pub fn node_group_of(&self, id: NodeId) -> Option<u16> {
        self.data_node(id).map(|node| node.node_group)
    }

    /// Every configured node id in ascending order: data nodes, management
    /// nodes, and the API slots that have an id (free slots have none).
    pub fn all_node_ids(&self) -> Vec<NodeId> {
        let mut ids: Vec<NodeId> = self
            .data_nodes
            .iter()
            .map(|node| node.node_id)
            .chain(self.management_nodes.iter().map(|node| node.node_id))
            .chain(self.api_nodes.iter().filter_map(|node| node.node_id))
            .collect();
        ids.sort_unstable();
        ids
    }
}

/// One `[ndbd]` section with its defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct DataNodeConfig {
    pub node_id: NodeId,
    pub host_name: String,
    pub data_dir: String,
    pub node_group: u16,
    /// DataMemory plus the deprecated IndexMemory, if given.
    pub data_memory_bytes: u64,
    /// MaxNoOfExecutionThreads.
    pub execution_threads: u32,
    /// 0: pick a free port at start and publish it through the management
    /// node.
    pub server_port: u16,
    pub heartbeat_interval_db_db_ms: u64,
    pub heartbeat_interval_db_api_ms: u64,
    /// MaxMissedHeartbeats (Shoal's key).
    pub missed_heartbeats_max: u32,
    pub arbitration_timeout_ms: u64,
    pub start_partial_timeout_ms: u64,
    pub transaction_deadlock_detection_timeout_ms: u64,
    /// NodeRecoveryCopyBatchRows (Shoal's key): rows per node recovery
    /// copy batch.
    pub copy_batch_rows: u32,
    /// NodeRecoveryCopyRowsPerSecond (Shoal's key): the pace of a node
    /// recovery copy.
    pub copy_rows_per_second: u64,
    /// TransactionInactiveTimeout: 0 never aborts an idle transaction.
    pub transaction_inactive_timeout_ms: u64,
    pub time_between_global_checkpoints_ms: u64,
    /// TimeBetweenEpochs: 0 is one epoch per global checkpoint.
    pub time_between_epochs_ms: u64,
    /// Diskless: the node keeps nothing on disk (no redo log, no local
    /// checkpoints); a system restart starts empty.
    pub diskless: bool,
    /// SchedulerSpinTimer: microseconds the node's thread polls for input
    /// (yielding between polls) before it sleeps; 0 sleeps at once.
    pub scheduler_spin_us: u64,
    /// UseShm: links to processes on this host run over shared memory.
    pub use_shared_memory: bool,
    /// ShmSize: the bytes of each direction's ring of such a link.
    pub shared_memory_bytes: u64,
    /// Base-2 logarithm of the 4-byte words written between local
    /// checkpoints, as in NDB.
    pub time_between_local_checkpoints: u32,
    /// NoOfFragmentLogFiles.
    pub fragment_log_files: u32,
    pub fragment_log_file_size_bytes: u64,
    pub redo_buffer_bytes: u64,
    /// The node's own SendBufferMemory, else `[tcp default]`'s.
    pub send_buffer_memory_bytes: u64,
    /// MaxNoOfConcurrentOperations.
    pub concurrent_operations_max: u32,
    /// MaxNoOfConcurrentTransactions.
    pub concurrent_transactions_max: u32,
    /// MaxNoOfConcurrentScans: scans the node's coordinator runs at once.
    pub concurrent_scans_max: u32,
    /// MaxNoOfTables: table metadata objects the dictionary holds, tables
    /// and unique hash indexes (NDB counts both against it).
    pub tables_max: u32,
    pub lock_pages_in_main_memory: u8,
    /// StopOnError: the angel (`runtime::angel`) leaves a crashed worker
    /// down instead of starting it again.
    pub stop_on_error: bool,
    /// MaxStartFailRetries: failed starts in a row after which the angel
    /// gives up; 0 retries without end.
    pub start_fail_retries_max: u32,
    /// StartFailRetryDelay, in seconds as in NDB.
    pub start_fail_retry_delay_s: u32,
    /// The line of the section header.
    pub line: u32,
}

/// The most LDM threads a data node runs.
pub const LDM_THREADS_MAX: u32 = 32;

impl DataNodeConfig {
    /// The LDM threads the data node runs: half its execution threads,
    /// rounded down, at least 1 and at most [`LDM_THREADS_MAX`]. The other
    /// half serve TC, receive and send work. NDB's own table differs in
    /// detail (2..=3 threads give 1 LDM, 4..=6 give 2, 7..=11 give 4, ...);
    /// Shoal keeps one rule that is easy to state.
    pub fn ldm_threads(&self) -> u32 {
        (self.execution_threads / 2).clamp(1, LDM_THREADS_MAX)
    }
}

/// One `[ndb_mgmd]` section with its defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagementNodeConfig {
    pub node_id: NodeId,
    pub host_name: String,
    pub data_dir: String,
    /// PortNumber.
    pub port: u16,
    pub arbitration_rank: u8,
    /// The line of the section header.
    pub line: u32,
}

/// Which section an API slot came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiKind {
    Mysqld,
    Api,
}

/// One `[mysqld]` or `[api]` section: a slot an API node connects into.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiNodeConfig {
    pub kind: ApiKind,
    /// `None`: a free slot, given the id its client asks for on connect.
    pub node_id: Option<NodeId>,
    /// `None`: a client from any host may take the slot.
    pub host_name: Option<String>,
    pub arbitration_rank: u8,
    /// The line of the section header.
    pub line: u32,
}

/// Connection settings of `[tcp default]`, for every pair of nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpConfig {
    pub send_buffer_memory_bytes: u64,
    pub receive_buffer_memory_bytes: u64,
}

/// One `[tcp]` section: settings for the connection between two nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpConnectionConfig {
    pub node_id_1: NodeId,
    pub node_id_2: NodeId,
    pub send_buffer_memory_bytes: u64,
    pub receive_buffer_memory_bytes: u64,
    /// The line of the section header.
    pub line: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_node_with_threads(execution_threads: u32) -> DataNodeConfig {
        let config = parse(
            &format!(
                "[ndbd]\nNoOfReplicas=1\nMaxNoOfExecutionThreads={execution_threads}\n\
                 [ndb_mgmd]\n"
            ),
            "config.ini",
        )
        .expect("parses");
        config.data_nodes[0].clone()
    }

    #[test]
    fn ldm_threads_are_half_the_execution_threads_within_limits() {
        assert_eq!(data_node_with_threads(2).ldm_threads(), 1);
        assert_eq!(data_node_with_threads(3).ldm_threads(), 1);
        assert_eq!(data_node_with_threads(4).ldm_threads(), 2);
        assert_eq!(data_node_with_threads(9).ldm_threads(), 4);
        assert_eq!(data_node_with_threads(64).ldm_threads(), 32);
        assert_eq!(data_node_with_threads(72).ldm_threads(), 32);
    }
}
