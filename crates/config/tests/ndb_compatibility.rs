//! config.ini files written for NDB 8.0 parse unchanged: every parameter of
//! NDB's table is accepted in its sections and checked against NDB's range,
//! the ones Shoal applies take effect, and the others are named in one
//! notice. Also the file-level errors: bytes that are not UTF-8 and lines
//! too long to repeat.

use config::{ConfigError, parse, parse_bytes};

const FILE: &str = "config.ini";

/// A production-style NDB 8.0 cluster of two node groups, as operators
/// write them: tuned data-node defaults, a management node with a log
/// destination, SQL and API slots, and transporter settings. 94 keys, every
/// one valid in NDB 8.0.
const PRODUCTION_CONFIG: &str = "\
# MySQL NDB Cluster 8.0 - production cluster
[system]
Name=production

[ndbd default]
NoOfReplicas=2
DataMemory=2G
MaxNoOfConcurrentOperations=250000
MaxNoOfConcurrentTransactions=16384
MaxNoOfConcurrentScans=500
MaxNoOfLocalScans=4000
MaxNoOfTables=4096
MaxNoOfAttributes=50000
MaxNoOfOrderedIndexes=2048
MaxNoOfUniqueHashIndexes=1024
MaxNoOfTriggers=10000
MaxNoOfConcurrentIndexOperations=16K
MaxNoOfFiredTriggers=8000
TransactionInactiveTimeout=30000
TransactionDeadlockDetectionTimeout=10000
TimeBetweenGlobalCheckpoints=1000
TimeBetweenEpochs=100
TimeBetweenEpochsTimeout=32000
TimeBetweenLocalCheckpoints=20
TimeBetweenWatchDogCheckInitial=60000
NoOfFragmentLogParts=4
NoOfFragmentLogFiles=64
FragmentLogFileSize=256M
InitFragmentLogFiles=full
RedoBuffer=64M
RedoOverCommitLimit=60
RedoOverCommitCounter=3
LongMessageBuffer=64M
TransactionBufferMemory=8M
SharedGlobalMemory=512M
DiskPageBufferMemory=256M
MaxNoOfExecutionThreads=8
ThreadConfig=ldm={count=4,cpubind=1,2,3,4},tc={count=2,cpubind=5,6},send={count=1},recv={count=1}
LockExecuteThreadToCPU=1-6
LockMaintThreadsToCPU=0
LockPagesInMainMemory=1
RealtimeScheduler=0
SchedulerSpinTimer=0
ODirect=1
CompressedLCP=0
CompressedBackup=1
DiskIOThreadPool=8
MaxDiskWriteSpeed=40M
MinDiskWriteSpeed=10M
BackupDataDir=/var/lib/mysql-cluster/backup
BackupLogBufferSize=16M
HeartbeatIntervalDbDb=1500
HeartbeatIntervalDbApi=1500
ArbitrationTimeout=7500
Arbitration=Default
StartPartialTimeout=30000
StartPartitionedTimeout=60000
StopOnError=0
MaxStartFailRetries=3
StartFailRetryDelay=0
MemReportFrequency=30
LogLevelStartup=15
LogLevelCheckpoint=8
LogLevelNodeRestart=15
MaxBufferedEpochs=100
MaxBufferedEpochBytes=26214400
BuildIndexThreads=128
Numa=1
DataDir=/var/lib/mysql-cluster

[ndb_mgmd]
NodeId=1
HostName=127.0.0.1
DataDir=/var/lib/mysql-cluster
PortNumber=11860
ArbitrationRank=1
LogDestination=FILE:filename=/var/lib/mysql-cluster/cluster.log,maxsize=10000000,maxfiles=6
HeartbeatIntervalMgmdMgmd=1500

[ndbd]
NodeId=2
HostName=127.0.0.1
[ndbd]
NodeId=3
HostName=127.0.0.1
[ndbd]
NodeId=4
HostName=127.0.0.1
[ndbd]
NodeId=5
HostName=127.0.0.1

[tcp default]
SendBufferMemory=8M
ReceiveBufferMemory=8M
OverloadLimit=0
TCP_SND_BUF_SIZE=0
TCP_RCV_BUF_SIZE=0

[mysqld]
NodeId=51
HostName=127.0.0.1
BatchSize=256
BatchByteSize=64K
MaxScanBatchSize=2M
AutoReconnect=1
DefaultOperationRedoProblemAction=queue

[api]
NodeId=52
ConnectBackoffMaxTime=1500
[api]
[api]
";

/// Seed 004's "good configuration" template, as the post prints it, with
/// its NoOfFragmentLogFiles worked out as the post says (DataMemory=8G in
/// MB × 6 / 64 MB), and the nodes it leaves to the reader.
const SEED_004_TEMPLATE: &str = "\
[tcp default]
SendBufferMemory=2M

[ndbd default]
##avoid swapping, not good at all
LockPagesInMainMemory=1
DataMemory=8G

## Very recommended to increase RedoBuffer:
RedoBuffer=32M

## Set the correct size of the redo log (heuristic):
NoOfFragmentLogFiles=768

## Keep the execution thread and the maintenance threads apart:
LockExecuteThreadToCPU=1
LockMaintThreadsToCPU=0

[ndb_mgmd]
[ndbd]
[ndbd]
";

fn parsed(text: &str) -> config::ClusterConfig {
    match parse(text, FILE) {
        Ok(config) => config,
        Err(error) => panic!("expected to parse, got {error}"),
    }
}

fn error(text: &str) -> ConfigError {
    match parse(text, FILE) {
        Ok(config) => panic!("expected an error, parsed {config:?}"),
        Err(error) => error,
    }
}

#[track_caller]
fn assert_error(text: &str, line: u32, key: &str, fragment: &str) {
    let error = error(text);
    assert_eq!(error.file, FILE, "{error}");
    assert_eq!(error.line, line, "{error}");
    assert_eq!(error.key.as_deref(), Some(key), "{error}");
    assert!(
        error.message.contains(fragment),
        "`{error}` does not contain `{fragment}`"
    );
}

/// The keys the production file sets, counted from its lines.
fn keys_of(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with('['))
        .filter_map(|line| line.split_once('=').map(|(key, _)| key))
        .collect()
}

#[test]
fn a_production_ndb_8_0_config_parses_unchanged() {
    assert_eq!(keys_of(PRODUCTION_CONFIG).len(), 94);
    let config = parsed(PRODUCTION_CONFIG);
    assert_eq!(config.data_nodes.len(), 4);
    assert_eq!(config.node_groups, [vec![2, 3], vec![4, 5]]);
    // What Shoal applies takes effect.
    let node = &config.data_nodes[0];
    assert_eq!(node.data_memory_bytes, 2 << 30);
    assert_eq!(node.concurrent_operations_max, 250_000);
    assert_eq!(node.concurrent_transactions_max, 16_384);
    assert_eq!(node.concurrent_scans_max, 500);
    assert_eq!(node.tables_max, 4096);
    assert_eq!(node.execution_threads, 8);
    assert_eq!(node.redo_buffer_bytes, 64 << 20);
    assert_eq!(node.transaction_deadlock_detection_timeout_ms, 10_000);
    assert_eq!(config.management_nodes[0].port, 11860);
    assert_eq!(config.tcp.send_buffer_memory_bytes, 8 << 20);
    assert_eq!(config.api_nodes.len(), 4);
}

#[test]
fn keys_without_effect_are_named_in_one_notice_with_their_lines() {
    let config = parsed(PRODUCTION_CONFIG);
    let notices: Vec<&String> = config
        .notices
        .iter()
        .filter(|notice| notice.contains("without effect"))
        .collect();
    assert_eq!(notices.len(), 1, "{:?}", config.notices);
    let notice = notices[0];
    assert!(notice.starts_with("config.ini:3: "), "{notice}");
    for (key, line) in [
        ("Name", 3),
        ("ThreadConfig", 38),
        ("LockExecuteThreadToCPU", 39),
        ("LockPagesInMainMemory", 41),
        ("LogDestination", 77),
        ("OverloadLimit", 96),
        ("BatchSize", 103),
        ("ConnectBackoffMaxTime", 111),
    ] {
        assert!(
            notice.contains(&format!("{key} (line {line})")),
            "{key} on line {line} is missing from: {notice}"
        );
    }
    // Keys Shoal applies are not in it.
    for applied in [
        "DataMemory (",
        "RedoBuffer (",
        "PortNumber (",
        "NoOfReplicas (",
        "MaxNoOfConcurrentScans (",
        "MaxNoOfTables (",
        "StopOnError (",
        "MaxStartFailRetries (",
        "StartFailRetryDelay (",
        "SchedulerSpinTimer (",
    ] {
        assert!(!notice.contains(applied), "{applied} listed in: {notice}");
    }
    // The angel's parameters reach the data node's configuration.
    let node = &config.data_nodes[0];
    assert!(!node.stop_on_error);
    assert_eq!(node.start_fail_retries_max, 3);
    assert_eq!(node.start_fail_retry_delay_s, 0);
    assert_eq!(
        node.scheduler_spin_us, 0,
        "SchedulerSpinTimer=0 sleeps at once"
    );
}

#[test]
fn the_seed_004_template_parses() {
    let config = parsed(SEED_004_TEMPLATE);
    let node = &config.data_nodes[0];
    assert_eq!(node.fragment_log_files, 768);
    assert_eq!(node.redo_buffer_bytes, 32 << 20);
    assert_eq!(node.data_memory_bytes, 8 << 30);
    let notice = config.notices.join("\n");
    assert!(
        notice.contains("LockExecuteThreadToCPU (line 16)"),
        "{notice}"
    );
    assert!(
        notice.contains("LockPagesInMainMemory (line 6)"),
        "{notice}"
    );
}

#[test]
fn newly_accepted_keys_are_checked_against_ndb_ranges() {
    let base = "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n";
    assert_error(
        &format!("{base}MaxNoOfConcurrentScans=501\n"),
        4,
        "MaxNoOfConcurrentScans",
        "`501` is out of range 2..=500",
    );
    assert_error(
        &format!("{base}SchedulerSpinTimer=501\n"),
        4,
        "SchedulerSpinTimer",
        "`501` is out of range 0..=500",
    );
    assert_error(
        &format!("{base}TimeBetweenEpochs=32001\n"),
        4,
        "TimeBetweenEpochs",
        "out of range 0..=32000 ms",
    );
    assert_error(
        &format!("{base}NoOfFragmentLogParts=2\n"),
        4,
        "NoOfFragmentLogParts",
        "out of range 4..=32",
    );
    assert_error(
        &format!("{base}MaxNoOfTables=7\n"),
        4,
        "MaxNoOfTables",
        "out of range 8..=20320",
    );
    assert_error(
        &format!("{base}LockExecuteThreadToCPU=0-65536\n"),
        4,
        "LockExecuteThreadToCPU",
        "CPU 65536, out of range 0..=65535",
    );
    assert_error(
        &format!("{base}LockExecuteThreadToCPU=4-2\n"),
        4,
        "LockExecuteThreadToCPU",
        "end is below its start",
    );
    assert_error(
        &format!("{base}Arbitration=Sometimes\n"),
        4,
        "Arbitration",
        "`Sometimes` is not one of Default, Disabled, WaitExternal",
    );
    assert_error(
        &format!("{base}ODirect=perhaps\n"),
        4,
        "ODirect",
        "not a boolean",
    );
    assert_error(
        "[ndb_mgmd]\nLogDestination=\n[ndbd]\nNoOfReplicas=1\n",
        2,
        "LogDestination",
        "empty",
    );
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n[api]\nBatchSize=993\n",
        5,
        "BatchSize",
        "out of range 1..=992",
    );
    // A key of another section is still refused, naming its home.
    assert_error(
        &format!("{base}BatchSize=64\n"),
        4,
        "BatchSize",
        "BatchSize belongs in [mysqld] or [api]",
    );
    // And one set twice in a section.
    assert_error(
        &format!("{base}ODirect=1\nODirect=0\n"),
        5,
        "ODirect",
        "given twice in this section (first on line 4)",
    );
}

#[test]
fn integers_take_ndb_size_suffixes() {
    let config = parsed(
        "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\nMaxNoOfConcurrentOperations=32k\n\
         MaxNoOfConcurrentTransactions=1M\n",
    );
    assert_eq!(config.data_nodes[0].concurrent_operations_max, 32 * 1024);
    assert_eq!(config.data_nodes[0].concurrent_transactions_max, 1 << 20);
}

#[test]
fn shm_system_and_computer_sections_are_accepted() {
    let config = parsed(
        "[system]\nName=c1\nConfigGenerationNumber=3\n[computer]\nId=h1\nHostName=10.0.0.1\n\
         [ndb_mgmd]\n[ndbd]\nNodeId=2\n[ndbd]\nNodeId=3\n\
         [shm default]\nShmSize=8M\n[shm]\nNodeId1=2\nNodeId2=3\nShmKey=7\n",
    );
    assert_eq!(config.data_nodes.len(), 2);
    assert!(
        config
            .notices
            .iter()
            .any(|n| n.contains("ShmKey (line 17)"))
    );
    assert_error(
        "[ndb_mgmd]\n[ndbd]\n[ndbd]\n[shm default]\nNodeId1=2\n",
        5,
        "NodeId1",
        "cannot be set in a [shm default] section",
    );
}

#[test]
fn data_memory_beyond_what_a_data_node_holds_is_refused_where_it_is_read() {
    let base = "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n";
    // NDB takes up to 16384G; a data node of Shoal holds 2^21 - 1 pages.
    assert_error(
        &format!("{base}DataMemory=16384G\n"),
        4,
        "DataMemory",
        "out of range 1M..=67108832K bytes (Shoal's engine holds at most 2097151 pages",
    );
    assert_error(
        &format!("{base}DataMemory=64G\n"),
        4,
        "DataMemory",
        "out of range",
    );
    let largest = parsed(&format!("{base}DataMemory=67108832K\n"));
    assert_eq!(
        largest.data_nodes[0].data_memory_bytes,
        config::parameters::DATA_MEMORY_BYTES_MAX
    );
    assert_error(
        &format!("{base}DataMemory=60G\nIndexMemory=8G\n"),
        5,
        "IndexMemory",
        "DataMemory plus IndexMemory",
    );
}

#[test]
fn a_file_that_is_not_utf8_is_refused_naming_the_line() {
    let mut bytes = b"[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n# caf".to_vec();
    bytes.push(0xe9);
    bytes.extend_from_slice(b" latin-1\nDataMemory=80M\n");
    let error = parse_bytes(&bytes, FILE).expect_err("not UTF-8");
    assert_eq!(error.line, 4, "{error}");
    assert!(error.to_string().starts_with("config.ini:4: "), "{error}");
    assert!(error.message.contains("0xe9 at column 6"), "{error}");
    assert!(error.message.contains("UTF-8"), "{error}");
    // The same file in UTF-8 parses.
    let text = "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n# café latin-1\nDataMemory=80M\n";
    assert!(parse_bytes(text.as_bytes(), FILE).is_ok());
}

#[test]
fn a_long_line_is_cut_in_the_error() {
    let runaway = "x".repeat(1 << 20);
    for text in [
        format!("[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\nDataMemory={runaway}\n"),
        format!("[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n{runaway}\n"),
        format!("[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n{runaway}=1\n"),
        format!("[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n[{runaway}]\n"),
        format!("[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\nArbitration={runaway}\n"),
        format!("[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\nLockExecuteThreadToCPU={runaway}\n"),
    ] {
        let shown = error(&text).to_string();
        assert!(
            shown.len() < 400,
            "{} bytes: {}",
            shown.len(),
            &shown[..400]
        );
        assert!(shown.starts_with("config.ini:4:"), "{shown}");
        assert!(shown.contains(" bytes in all)"), "{shown}");
    }
}

/// Another production layout: two management nodes with a
/// `[ndb_mgmd default]`, spaces around `=`, NDB's spellings in upper case,
/// a timeout at NDB's own maximum, keys of later 8.0 releases, and a large
/// DataMemory.
fn large_cluster_config(data_memory: &str) -> String {
    format!(
        "[tcp default]
SendBufferMemory=64M
ReceiveBufferMemory=64M
TcpSpinTime=100
[ndb_mgmd default]
DataDir=/var/lib/mysql-cluster
[ndb_mgmd]
HostName=10.3.65.1
NodeId=1
[ndb_mgmd]
HostName=10.3.65.2
NodeId=2
[ndbd default]
DataDir=/var/lib/mysql-cluster
FileSystemPath=/var/lib/mysql-cluster
BackupDataDir=/var/ndbbackup
NoOfReplicas=2
LockPagesInMainMemory=1
SharedGlobalMemory=4G
DataMemory={data_memory}
StringMemory=128M
TotalSendBufferMemory=256M
EnableRedoControl=1
HeartbeatIntervalDbDb = 10000
StartPartitionedTimeout=4294967039
InitFragmentLogFiles=FULL
NoOfFragmentLogParts=16
MaxNoOfLocalOperations = 330000
ReservedConcurrentOperations = 1000
MaxParallelScansPerFragment=1024
TransactionMemory=2G
SpinMethod=LatencyOptimisedSpinning
[ndbd]
HostName = 10.3.65.11
NodeId = 11
[ndbd]
HostName = 10.3.65.12
NodeId = 12
[mysqld]
[mysqld]
"
    )
}

#[test]
fn a_large_production_config_parses_or_names_shoals_memory_limit() {
    let config = parsed(&large_cluster_config("60G"));
    assert_eq!(config.management_nodes.len(), 2);
    assert_eq!(config.data_nodes[0].data_memory_bytes, 60 << 30);
    assert_eq!(config.data_nodes[0].heartbeat_interval_db_db_ms, 10_000);
    let notice = config.notices.join("\n");
    for key in [
        "TcpSpinTime (line 4)",
        "InitFragmentLogFiles (line 26)",
        "SpinMethod (line 32)",
    ] {
        assert!(notice.contains(key), "{key} missing from: {notice}");
    }
    // NDB takes 90G; a data node of Shoal cannot hold it, and the file says
    // so where it is set instead of a data node failing at start.
    assert_error(
        &large_cluster_config("90G"),
        20,
        "DataMemory",
        "is out of range 1M..=67108832K bytes (Shoal's engine holds at most",
    );
}

/// NDB's 32-bit parameters end at MAX_INT_RNIL, 4294967039 (0xFFFFFEFF),
/// not at 2^32 - 1: the values above it are NDB's "no value" markers.
#[test]
fn open_ranges_end_at_ndbs_max_int_rnil() {
    let base = "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n";
    let config = parsed(&format!("{base}MaxNoOfConcurrentOperations=4294967039\n"));
    assert_eq!(
        config.data_nodes[0].concurrent_operations_max,
        4_294_967_039
    );
    assert_error(
        &format!("{base}MaxNoOfConcurrentOperations=4294967040\n"),
        4,
        "MaxNoOfConcurrentOperations",
        "out of range 32..=4294967039",
    );
    assert_error(
        &format!("{base}HeartbeatIntervalDbDb=4294967295\n"),
        4,
        "HeartbeatIntervalDbDb",
        "out of range 10..=4294967039 ms",
    );
    assert_error(
        &format!("{base}RedoBuffer=4G\n"),
        4,
        "RedoBuffer",
        "out of range 1M..=4294967039 bytes",
    );
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n[tcp default]\nSendBufferMemory=4G\n",
        5,
        "SendBufferMemory",
        "out of range 64K..=4294967039 bytes",
    );
}

/// MaxNoOfTables bounds the dictionary (tables and unique hash indexes, as
/// in NDB): NDB's default of 128 when unset, the value when set, and no
/// notice calling it without effect.
#[test]
fn max_no_of_tables_is_applied_with_ndb_default_and_range() {
    let base = "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n";
    let config = parsed(base);
    assert_eq!(config.data_nodes[0].tables_max, 128);
    let config = parsed(&format!("{base}MaxNoOfTables=8\n"));
    assert_eq!(config.data_nodes[0].tables_max, 8);
    assert!(
        !config.notices.iter().any(|n| n.contains("MaxNoOfTables")),
        "{:?}",
        config.notices
    );
    let config = parsed(&format!("{base}MaxNoOfTables=20320\n"));
    assert_eq!(config.data_nodes[0].tables_max, 20_320);
    assert_error(
        &format!("{base}MaxNoOfTables=20321\n"),
        4,
        "MaxNoOfTables",
        "out of range 8..=20320",
    );
}
