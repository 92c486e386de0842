//! Every other parameter of NDB 8.0's config.ini: accepted so that an
//! existing file parses unchanged, checked against NDB's own type and
//! range, and without effect in Shoal.
//!
//! The entries follow the parameter table of NDB 8.0's management server
//! (`storage/ndb/src/mgmsrv/ConfigInfo.cpp`): for each key its section, its
//! type, its default and its range, with NDB's limits written out
//! (`MAX_INT_RNIL` is 4294967039, `MAX_INT32` 4294967295, `NDB_MAX_TABLES`
//! 20320, `MAX_PARALLEL_OP_PER_SCAN` 992, `DEF_BATCH_SIZE` 256,
//! `NDB_DEFAULT_HASHMAP_BUCKETS` 3840). NDB's internal keys (`System`,
//! `RestartOnErrorInsert`, the transporter `PortNumber`) and the removed
//! `[sci]` section are left out, as NDB does not take them from a file. A
//! few keys added in later 8.0 releases (TransactionMemory, SpinMethod,
//! AutomaticThreadConfig, the Reserved* family and others at the end of the
//! data-node part, TcpSpinTime, PreferIPVersion and AllowUnresolvedHostNames
//! for connections) are named in NDB 8.0's list of added parameters; their
//! ranges are NDB's reference manual's as we know them, not read from code.
//!
//! Nothing here is applied: `parse.rs` checks the value and `validate.rs`
//! names every key it met in one notice. A key that Shoal starts to
//! implement moves to [`crate::parameters::PARAMETERS`]; a test keeps the
//! two tables from naming one key for the same section.

use crate::parameters::{
    API, DATA, DefaultValue, MANAGEMENT, NODES, Origin, Parameter, SectionKind, TCP, ValueKind,
};
use crate::value::{GIB, KIB, MIB};

/// NDB's `MAX_INT_RNIL`: the largest value of most 32-bit parameters.
const RNIL: u64 = crate::parameters::INTEGER_MAX;
/// NDB's `MAX_INT32`.
const INT32: u64 = 0xffff_ffff;
/// NDB's `MAX_PARALLEL_OP_PER_SCAN`.
const PARALLEL_OPERATIONS_PER_SCAN_MAX: u64 = 992;
/// NDB's `DEF_BATCH_SIZE`.
const BATCH_SIZE_DEFAULT: u64 = 256;

const SHM: &[SectionKind] = &[SectionKind::Shm];
const TCP_SHM: &[SectionKind] = &[SectionKind::Tcp, SectionKind::Shm];
const SYSTEM: &[SectionKind] = &[SectionKind::System];
const COMPUTER: &[SectionKind] = &[SectionKind::Computer];
const API_MANAGEMENT: &[SectionKind] = &[
    SectionKind::Management,
    SectionKind::Mysqld,
    SectionKind::Api,
];
const DATA_API: &[SectionKind] = &[SectionKind::DataNode, SectionKind::Mysqld, SectionKind::Api];

const ARBITRATION_METHODS: &[&str] = &["Default", "Disabled", "WaitExternal"];
const REDO_PROBLEM_ACTIONS: &[&str] = &["queue", "abort"];
const FRAGMENT_LOG_INITIALISATION: &[&str] = &["sparse", "full"];
const IP_VERSIONS: &[&str] = &["4", "6"];
const SPIN_METHODS: &[&str] = &[
    "StaticSpinning",
    "CostBasedSpinning",
    "LatencyOptimisedSpinning",
    "DatabaseMachineSpinning",
];

const fn ndb(
    name: &'static str,
    sections: &'static [SectionKind],
    kind: ValueKind,
    default: DefaultValue,
    min: u64,
    max: u64,
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
        origin: Origin::Compatibility,
        doc: "An NDB 8.0 parameter that Shoal accepts, range-checks and does not act on.",
        range_note: "",
    }
}

const fn text(name: &'static str, sections: &'static [SectionKind]) -> Parameter {
    ndb(name, sections, Text, NoDefault, 0, 0)
}

const fn boolean(name: &'static str, sections: &'static [SectionKind], default: bool) -> Parameter {
    ndb(name, sections, Boolean, DefaultBoolean(default), 0, 1)
}

use DefaultValue::{Boolean as DefaultBoolean, None as NoDefault, Number};
use ValueKind::{Boolean, Choice, CpuList, Integer, Milliseconds, Size, Text};

/// NDB 8.0's parameters that Shoal accepts without effect.
// One entry per line, like a row of NDB's table; rustfmt would spread each
// over eight lines.
#[rustfmt::skip]
pub static WITHOUT_EFFECT: [Parameter; 194] = [
    // [system] and [computer].
    text("Name", SYSTEM),
    ndb("PrimaryMGMNode", SYSTEM, Integer, Number(0), 0, RNIL),
    ndb("ConfigGenerationNumber", SYSTEM, Integer, Number(0), 0, RNIL),
    text("Id", COMPUTER),
    text("HostName", COMPUTER),
    // Data nodes: schema objects and records.
    ndb("MaxNoOfSubscriptions", DATA, Integer, Number(0), 0, RNIL),
    ndb("MaxNoOfSubscribers", DATA, Integer, Number(0), 0, RNIL),
    ndb("MaxNoOfConcurrentSubOperations", DATA, Integer, Number(256), 0, RNIL),
    boolean("TcpBind_INADDR_ANY", DATA, false),
    ndb("MaxNoOfAttributes", DATA, Integer, Number(1000), 32, RNIL),
    ndb("MaxNoOfOrderedIndexes", DATA, Integer, Number(128), 0, RNIL),
    ndb("MaxNoOfUniqueHashIndexes", DATA, Integer, Number(64), 0, RNIL),
    ndb("MaxNoOfConcurrentIndexOperations", DATA, Integer, Number(8 * KIB), 0, RNIL),
    ndb("MaxNoOfTriggers", DATA, Integer, Number(768), 0, RNIL),
    ndb("MaxNoOfFiredTriggers", DATA, Integer, Number(4000), 0, RNIL),
    text("ExecuteOnComputer", NODES),
    ndb("MaxNoOfSavedMessages", DATA, Integer, Number(25), 0, RNIL),
    // Data nodes: threads and scheduling.
    ndb("LockExecuteThreadToCPU", DATA, CpuList, NoDefault, 0, 65535),
    ndb("LockMaintThreadsToCPU", DATA, Integer, NoDefault, 0, 65535),
    boolean("RealtimeScheduler", DATA, false),
    ndb("TimeBetweenWatchDogCheck", DATA, Milliseconds, Number(6000), 70, RNIL),
    ndb("SchedulerExecutionTimer", DATA, Integer, Number(50), 0, 11000),
    ndb("MaxSendDelay", DATA, Integer, Number(0), 0, 11000),
    ndb("SchedulerResponsiveness", DATA, Integer, Number(5), 0, 10),
    ndb("__sched_scan_priority", DATA, Integer, Number(6), 1, 16),
    ndb("__disk_data_format", DATA, Integer, Number(1), 0, 1),
    ndb("TimeBetweenWatchDogCheckInitial", DATA, Milliseconds, Number(6000), 70, RNIL),
    boolean("WatchDogImmediateKill", DATA, false),
    // Data nodes: transactions, operations and scans.
    ndb("MaxDMLOperationsPerTransaction", DATA, Integer, Number(INT32), 32, INT32),
    ndb("MaxNoOfLocalOperations", DATA, Integer, NoDefault, 32, RNIL),
    ndb("MaxNoOfLocalScans", DATA, Integer, NoDefault, 32, RNIL),
    ndb("BatchSizePerLocalScan", DATA, Integer, Number(BATCH_SIZE_DEFAULT), 1,
        PARALLEL_OPERATIONS_PER_SCAN_MAX),
    ndb("TransactionBufferMemory", DATA, Size, Number(MIB), KIB, RNIL),
    ndb("TimeBetweenInactiveTransactionAbortCheck", DATA, Milliseconds, Number(1000), 1000, RNIL),
    ndb("MaxParallelScansPerFragment", DATA, Integer, Number(256), 1, RNIL),
    // Data nodes: memory and buffers.
    ndb("UndoIndexBuffer", DATA, Size, Number(2 * MIB), MIB, RNIL),
    ndb("UndoDataBuffer", DATA, Size, Number(16 * MIB), MIB, RNIL),
    ndb("LongMessageBuffer", DATA, Size, Number(64 * MIB), 512 * KIB, RNIL),
    ndb("DiskPageBufferMemory", DATA, Size, Number(64 * MIB), 4 * MIB, 1024 * GIB),
    ndb("DiskPageBufferEntries", DATA, Integer, Number(10), 1, INT32),
    ndb("SharedGlobalMemory", DATA, Size, Number(128 * MIB), 0, 65536 * GIB),
    ndb("StringMemory", DATA, Integer, Number(25), 0, RNIL),
    ndb("MaxAllocate", DATA, Size, Number(32 * MIB), MIB, GIB),
    ndb("MinFreePct", DATA, Integer, Number(5), 0, 100),
    ndb("LateAlloc", DATA, Integer, Number(1), 0, 1),
    ndb("Numa", DATA, Integer, Number(1), 0, 1),
    ndb("ExtraSendBufferMemory", NODES, Size, Number(0), 0, 32 * GIB),
    // 0, NDB's default, means "computed": outside the range a file may set.
    ndb("TotalSendBufferMemory", NODES, Size, NoDefault, 256 * KIB, RNIL),
    ndb("LocationDomainId", NODES, Integer, NoDefault, 0, 16),
    // Data nodes: start, restart and failure handling.
    ndb("StartPartitionedTimeout", DATA, Milliseconds, Number(0), 0, RNIL),
    ndb("StartFailureTimeout", DATA, Milliseconds, Number(0), 0, RNIL),
    ndb("StartNoNodegroupTimeout", DATA, Milliseconds, Number(15000), 0, RNIL),
    ndb("ConnectCheckIntervalDelay", DATA, Milliseconds, Number(0), 0, RNIL),
    ndb("RestartSubscriberConnectTimeout", DATA, Milliseconds, Number(120000), 0, RNIL),
    ndb("HeartbeatOrder", DATA, Integer, Number(0), 0, 65535),
    ndb("Arbitration", DATA, Choice(ARBITRATION_METHODS), NoDefault, 0, 0),
    boolean("CrashOnCorruptedTuple", DATA, true),
    boolean("TwoPassInitialNodeRestartCopy", DATA, true),
    ndb("MaxParallelCopyInstances", DATA, Integer, Number(0), 0, 64),
    ndb("BuildIndexThreads", DATA, Integer, Number(128), 0, 128),
    ndb("MaxUIBuildBatchSize", DATA, Integer, Number(64), 16, 512),
    ndb("MaxFKBuildBatchSize", DATA, Integer, Number(64), 16, 512),
    ndb("MaxReorgBuildBatchSize", DATA, Integer, Number(64), 16, 512),
    boolean("__at_restart_skip_indexes", DATA, false),
    boolean("__at_restart_skip_fks", DATA, false),
    ndb("__debug_mixology_level", NODES, Integer, Number(0), 0, RNIL),
    ndb("DictTrace", DATA, Integer, NoDefault, 0, 100),
    // Data nodes: epochs, checkpoints and the redo log.
    ndb("TimeBetweenGlobalCheckpointsTimeout", DATA, Milliseconds, Number(120000), 10, RNIL),
    ndb("TimeBetweenEpochsTimeout", DATA, Milliseconds, Number(0), 0, 256000),
    ndb("MaxBufferedEpochs", DATA, Integer, Number(100), 1, 100000),
    ndb("MaxBufferedEpochBytes", DATA, Size, Number(26214400), 26214400, RNIL),
    ndb("NoOfFragmentLogParts", DATA, Integer, Number(4), 4, 32),
    ndb("InitFragmentLogFiles", DATA, Choice(FRAGMENT_LOG_INITIALISATION), NoDefault, 0, 0),
    ndb("RedoOverCommitLimit", DATA, Integer, Number(20), 0, RNIL),
    ndb("RedoOverCommitCounter", DATA, Integer, Number(3), 0, RNIL),
    ndb("MaxLCPStartDelay", DATA, Integer, Number(0), 0, 600),
    ndb("LcpScanProgressTimeout", DATA, Integer, Number(60), 0, RNIL),
    boolean("EnablePartialLcp", DATA, true),
    ndb("RecoveryWork", DATA, Integer, Number(50), 25, 100),
    boolean("CompressedLCP", DATA, false),
    // Data nodes: files and disks.
    text("FileSystemPath", DATA),
    text("FileSystemPathDD", DATA),
    text("FileSystemPathDataFiles", DATA),
    text("FileSystemPathUndoFiles", DATA),
    text("InitialLogfileGroup", DATA),
    text("InitialTablespace", DATA),
    ndb("DiskIOThreadPool", DATA, Integer, Number(2), 0, RNIL),
    ndb("MaxNoOfOpenFiles", DATA, Integer, NoDefault, 20, RNIL),
    ndb("InitialNoOfOpenFiles", DATA, Integer, Number(27), 20, RNIL),
    ndb("DiskSyncSize", DATA, Size, Number(4 * MIB), 32 * KIB, RNIL),
    ndb("MinDiskWriteSpeed", DATA, Size, Number(10 * MIB), MIB, 1024 * GIB),
    ndb("MaxDiskWriteSpeed", DATA, Size, Number(20 * MIB), MIB, 1024 * GIB),
    ndb("MaxDiskWriteSpeedOtherNodeRestart", DATA, Size, Number(50 * MIB), MIB, 1024 * GIB),
    ndb("MaxDiskWriteSpeedOwnRestart", DATA, Size, Number(200 * MIB), MIB, 1024 * GIB),
    boolean("ODirect", DATA, false),
    boolean("ODirectSyncFlag", DATA, false),
    // Data nodes: backups.
    ndb("ParallelBackups", DATA, Integer, Number(1), 1, 1),
    text("BackupDataDir", DATA),
    ndb("BackupDiskWriteSpeedPct", DATA, Integer, Number(50), 0, 90),
    ndb("BackupMemory", DATA, Size, Number(32 * MIB), 0, RNIL),
    ndb("BackupDataBufferSize", DATA, Size, Number(MIB), 512 * KIB, RNIL),
    ndb("BackupLogBufferSize", DATA, Size, Number(16 * MIB), 2 * MIB, RNIL),
    ndb("BackupWriteSize", DATA, Size, Number(256 * KIB), 32 * KIB, RNIL),
    ndb("BackupMaxWriteSize", DATA, Size, Number(MIB), 256 * KIB, RNIL),
    boolean("CompressedBackup", DATA, false),
    // Data nodes: logging and reports.
    ndb("LogLevelStartup", DATA, Integer, Number(1), 0, 15),
    ndb("LogLevelShutdown", DATA, Integer, Number(0), 0, 15),
    ndb("LogLevelStatistic", DATA, Integer, Number(0), 0, 15),
    ndb("LogLevelCheckpoint", DATA, Integer, Number(0), 0, 15),
    ndb("LogLevelNodeRestart", DATA, Integer, Number(0), 0, 15),
    ndb("LogLevelConnection", DATA, Integer, Number(0), 0, 15),
    ndb("LogLevelCongestion", DATA, Integer, Number(0), 0, 15),
    ndb("LogLevelError", DATA, Integer, Number(0), 0, 15),
    ndb("LogLevelInfo", DATA, Integer, Number(0), 0, 15),
    ndb("MemReportFrequency", DATA, Integer, Number(0), 0, RNIL),
    ndb("BackupReportFrequency", DATA, Integer, Number(0), 0, RNIL),
    ndb("StartupStatusReportFrequency", DATA, Integer, Number(0), 0, RNIL),
    ndb("EventLogBufferSize", DATA, Size, Number(8192), 0, 64 * KIB),
    // Data nodes: ordered index statistics and hash maps.
    ndb("IndexStatAutoCreate", DATA, Integer, Number(0), 0, 1),
    ndb("IndexStatAutoUpdate", DATA, Integer, Number(0), 0, 1),
    ndb("IndexStatSaveSize", DATA, Size, Number(32768), 0, RNIL),
    ndb("IndexStatSaveScale", DATA, Integer, Number(100), 0, RNIL),
    ndb("IndexStatTriggerPct", DATA, Integer, Number(100), 0, RNIL),
    ndb("IndexStatTriggerScale", DATA, Integer, Number(100), 0, RNIL),
    ndb("IndexStatUpdateDelay", DATA, Integer, Number(60), 0, RNIL),
    ndb("DefaultHashmapSize", DATA_API, Integer, Number(0), 0, 3840),
    // Data nodes: multi-threading internals.
    ndb("__ndbmt_lqh_workers", DATA, Integer, NoDefault, 1, 4),
    ndb("__ndbmt_lqh_threads", DATA, Integer, NoDefault, 1, 4),
    boolean("__ndbmt_classic", DATA, false),
    text("ThreadConfig", DATA),
    // Data nodes: keys of later 8.0 releases, ranges from NDB's manual.
    ndb("TransactionMemory", DATA, Size, Number(0), 0, 16384 * GIB),
    ndb("SpinMethod", DATA, Choice(SPIN_METHODS), NoDefault, 0, 0),
    boolean("AutomaticThreadConfig", DATA, false),
    ndb("NumCPUs", DATA, Integer, Number(0), 0, 2048),
    ndb("EncryptedFileSystem", DATA, Integer, Number(0), 0, 1),
    ndb("RequireEncryptedBackup", DATA, Integer, Number(0), 0, 1),
    ndb("KeepAliveSendInterval", DATA, Milliseconds, Number(60000), 0, RNIL),
    ndb("MaxDiskDataLatency", DATA, Milliseconds, Number(0), 0, 8000),
    boolean("DiskDataUsingSameDisk", DATA, true),
    ndb("NodeGroupTransporters", DATA, Integer, Number(0), 0, 32),
    ndb("ApiFailureHandlingTimeout", DATA, Integer, Number(600), 0, RNIL),
    boolean("EnableRedoControl", DATA, false),
    boolean("EnableMultithreadedBackup", DATA, true),
    boolean("ClassicFragmentation", DATA, true),
    ndb("PartitionsPerNode", DATA, Integer, Number(2), 1, 32),
    ndb("ShmSpinTime", DATA, Integer, Number(0), 0, 2000),
    ndb("InsertRecoveryWork", DATA, Integer, Number(40), 0, 70),
    ndb("ReservedConcurrentIndexOperations", DATA, Integer, Number(0), 0, RNIL),
    ndb("ReservedConcurrentOperations", DATA, Integer, Number(0), 0, RNIL),
    ndb("ReservedConcurrentScans", DATA, Integer, Number(0), 0, RNIL),
    ndb("ReservedConcurrentTransactions", DATA, Integer, Number(0), 0, RNIL),
    ndb("ReservedFiredTriggers", DATA, Integer, Number(0), 0, RNIL),
    ndb("ReservedLocalScans", DATA, Integer, Number(0), 0, RNIL),
    ndb("ReservedTransactionBufferMemory", DATA, Size, Number(0), 0, RNIL),
    // API and SQL nodes.
    boolean("wan", API_MANAGEMENT, false),
    ndb("ArbitrationDelay", API_MANAGEMENT, Milliseconds, Number(0), 0, RNIL),
    ndb("MaxScanBatchSize", API, Size, Number(256 * KIB), 32 * KIB, 16 * MIB),
    ndb("BatchByteSize", API, Size, Number(16 * KIB), KIB, MIB),
    ndb("BatchSize", API, Integer, Number(BATCH_SIZE_DEFAULT), 1,
        PARALLEL_OPERATIONS_PER_SCAN_MAX),
    text("ConnectionMap", API),
    boolean("AutoReconnect", API, true),
    text("HeartbeatThreadPriority", API_MANAGEMENT),
    ndb("DefaultOperationRedoProblemAction", API, Choice(REDO_PROBLEM_ACTIONS), NoDefault, 0, 0),
    ndb("ConnectBackoffMaxTime", API, Milliseconds, Number(1500), 0, RNIL),
    ndb("StartConnectBackoffMaxTime", API, Milliseconds, Number(0), 0, RNIL),
    ndb("ApiVerbose", API, Integer, NoDefault, 0, 100),
    // Management nodes.
    text("LogDestination", MANAGEMENT),
    ndb("PortNumberStats", MANAGEMENT, Integer, NoDefault, 0, 65535),
    ndb("HeartbeatIntervalMgmdMgmd", MANAGEMENT, Milliseconds, Number(1500), 100, RNIL),
    // [tcp] connections.
    text("HostName1", TCP_SHM),
    text("HostName2", TCP_SHM),
    ndb("NodeIdServer", TCP_SHM, Integer, NoDefault, 1, 63),
    boolean("SendSignalId", TCP, true),
    boolean("Checksum", TCP, false),
    boolean("PreSendChecksum", TCP_SHM, false),
    text("Proxy", TCP),
    ndb("TCP_SND_BUF_SIZE", TCP, Size, Number(0), 0, 2 * GIB),
    ndb("TCP_RCV_BUF_SIZE", TCP, Size, Number(0), 0, 2 * GIB),
    ndb("TCP_MAXSEG_SIZE", TCP, Size, Number(0), 0, 2 * GIB),
    boolean("TcpBind_INADDR_ANY", TCP, false),
    ndb("OverloadLimit", TCP_SHM, Size, Number(0), 0, RNIL),
    boolean("AllowUnresolvedHostNames", TCP, false),
    ndb("PreferIPVersion", TCP, Choice(IP_VERSIONS), NoDefault, 0, 0),
    ndb("TcpSpinTime", TCP, Integer, Number(0), 0, 2000),
    // [shm] connections.
    ndb("NodeId1", SHM, Integer, NoDefault, 1, 255).only_per_node(),
    ndb("NodeId2", SHM, Integer, NoDefault, 1, 255).only_per_node(),
    ndb("Signum", SHM, Integer, NoDefault, 0, RNIL),
    ndb("Group", SHM, Integer, Number(35), 0, 200),
    boolean("SendSignalId", SHM, false),
    boolean("Checksum", SHM, true),
    ndb("ShmKey", SHM, Integer, NoDefault, 0, RNIL),
    ndb("ShmSize", SHM, Size, Number(4 * MIB), 64 * KIB, RNIL),
    ndb("ShmSpintime", SHM, Integer, Number(0), 0, 2000),
    ndb("SendBufferMemory", SHM, Size, Number(2 * MIB), 64 * KIB, RNIL),
];
