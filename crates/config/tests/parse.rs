//! Parsing config.ini files: the seed's file, the format's freedoms (case,
//! spacing, comments, suffixes, default sections anywhere), node ids and
//! node groups, and every error class with the file, line and key it must
//! name.

use config::{ApiKind, ClusterConfig, ConfigError, parse, sandbox_config_text};

const FILE: &str = "config.ini";

/// The config.ini the project started from, verbatim.
const SEED_CONFIG: &str = "[ndbd default]
noofreplicas=2
datadir=/home/billy/mysql/my_cluster/data

[ndbd]
hostname=localhost
id=3

[ndbd]
hostname=localhost
id=4

[ndb_mgmd]
id = 1
hostname=localhost
datadir=/home/billy/mysql/my_cluster/data

[mysqld]
hostname=localhost
id=101
#optional to define the id

[api]
# do not specify id!
hostname=localhost

[api]
# do not specify id!
hostname=localhost

[api]
# do not specify id!
hostname=localhost
";

const MIB: u64 = 1024 * 1024;

fn parsed(text: &str) -> ClusterConfig {
    match parse(text, FILE) {
        Ok(config) => config,
        Err(error) => panic!("expected to parse, got {error}\n{text}"),
    }
}

fn error(text: &str) -> ConfigError {
    match parse(text, FILE) {
        Ok(config) => panic!("expected an error, parsed {config:?}\n{text}"),
        Err(error) => error,
    }
}

/// Asserts the error's place and that its message contains `fragment`.
#[track_caller]
fn assert_error(text: &str, line: u32, key: Option<&str>, fragment: &str) {
    let error = error(text);
    assert_eq!(error.file, FILE, "{error}");
    assert_eq!(error.line, line, "{error}");
    assert_eq!(error.key.as_deref(), key, "{error}");
    assert!(
        error.message.contains(fragment),
        "`{error}` does not contain `{fragment}`"
    );
}

#[test]
fn the_seed_config_parses() {
    let config = parsed(SEED_CONFIG);
    let data_ids: Vec<u8> = config.data_nodes.iter().map(|node| node.node_id).collect();
    assert_eq!(data_ids, [3, 4]);
    assert_eq!(config.no_of_replicas, 2);
    assert_eq!(config.node_groups, [vec![3, 4]]);
    assert_eq!(config.node_group_of(3), Some(0));
    assert_eq!(config.node_group_of(4), Some(0));
    assert_eq!(config.node_group_of(1), None);
    for node in &config.data_nodes {
        assert_eq!(node.data_dir, "/home/billy/mysql/my_cluster/data");
        assert_eq!(node.host_name, "localhost");
        assert_eq!(node.data_memory_bytes, 98 * MIB);
    }
    assert_eq!(config.data_nodes[0].line, 5);
    assert_eq!(config.data_nodes[1].line, 9);

    assert_eq!(config.management_nodes.len(), 1);
    let management = &config.management_nodes[0];
    assert_eq!(management.node_id, 1);
    assert_eq!(management.port, 1186);
    assert_eq!(management.arbitration_rank, 1);
    assert_eq!(management.data_dir, "/home/billy/mysql/my_cluster/data");

    let api: Vec<(ApiKind, Option<u8>)> = config
        .api_nodes
        .iter()
        .map(|node| (node.kind, node.node_id))
        .collect();
    assert_eq!(
        api,
        [
            (ApiKind::Mysqld, Some(101)),
            (ApiKind::Api, None),
            (ApiKind::Api, None),
            (ApiKind::Api, None),
        ]
    );
    assert!(
        config.api_nodes.iter().all(
            |node| node.host_name.as_deref() == Some("localhost") && node.arbitration_rank == 0
        )
    );
    assert_eq!(config.all_node_ids(), [1, 3, 4, 101]);
    assert!(config.notices.is_empty());
}

#[test]
fn sections_and_keys_ignore_case_and_spacing() {
    let config = parsed(
        "  [ NDB_MGMD ]  \n\
         ID : 7\n\
         [Ndbd Default]\n\
         NOOFREPLICAS\t=\t1   # one copy\n\
         [DB]\n\
         DataMemory:80m ; rows\n\
         hostNAME =  10.0.0.5  \n\
         [NDBMTD]\r\n\
         nodeid=9\r\n",
    );
    assert_eq!(config.management_nodes[0].node_id, 7);
    assert_eq!(config.no_of_replicas, 1);
    assert_eq!(config.data_nodes[0].data_memory_bytes, 80 * MIB);
    assert_eq!(config.data_nodes[0].host_name, "10.0.0.5");
    assert_eq!(config.data_nodes[1].node_id, 9);
    assert_eq!(config.node_groups, [vec![1], vec![9]]);
}

#[test]
fn sizes_take_k_m_g_suffixes() {
    let config = parsed(
        "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\nDataMemory=2g\nRedoBuffer=1536K\n\
         FragmentLogFileSize=1G\nSendBufferMemory=65536\n",
    );
    let node = &config.data_nodes[0];
    assert_eq!(node.data_memory_bytes, 2 * 1024 * MIB);
    assert_eq!(node.redo_buffer_bytes, 1536 * 1024);
    assert_eq!(node.fragment_log_file_size_bytes, 1024 * MIB);
    assert_eq!(node.send_buffer_memory_bytes, 65536);
}

#[test]
fn defaults_apply_wherever_they_sit_and_sections_override_them() {
    let config = parsed(
        "[ndbd]\nDataMemory=200M\n\
         [ndbd]\n\
         [ndb_mgmd]\n\
         [ndbd default]\nDataMemory=100M\nMaxNoOfExecutionThreads=8\nNoOfReplicas=1\n\
         [tcp default]\nSendBufferMemory=4M\n",
    );
    let first = &config.data_nodes[0];
    let second = &config.data_nodes[1];
    assert_eq!(first.data_memory_bytes, 200 * MIB);
    assert_eq!(second.data_memory_bytes, 100 * MIB);
    assert_eq!(first.execution_threads, 8);
    assert_eq!(first.ldm_threads(), 4);
    assert_eq!(config.tcp.send_buffer_memory_bytes, 4 * MIB);
    assert_eq!(config.tcp.receive_buffer_memory_bytes, 2 * MIB);
    // A data node without its own SendBufferMemory takes [tcp default]'s.
    assert_eq!(second.send_buffer_memory_bytes, 4 * MIB);
}

#[test]
fn unset_parameters_take_ndb_defaults() {
    let config = parsed("[ndb_mgmd]\n[ndbd]\n[ndbd]\n");
    let node = &config.data_nodes[0];
    assert_eq!(config.no_of_replicas, 2);
    assert_eq!(node.host_name, "localhost");
    assert_eq!(node.data_dir, ".");
    assert_eq!(node.data_memory_bytes, 98 * MIB);
    assert_eq!(node.execution_threads, 2);
    assert_eq!(node.ldm_threads(), 1);
    assert_eq!(node.server_port, 0);
    assert_eq!(node.heartbeat_interval_db_db_ms, 250);
    assert_eq!(node.heartbeat_interval_db_api_ms, 500);
    assert_eq!(node.missed_heartbeats_max, 6);
    assert_eq!(node.arbitration_timeout_ms, 7500);
    assert_eq!(node.start_partial_timeout_ms, 30000);
    assert_eq!(node.transaction_deadlock_detection_timeout_ms, 1200);
    assert_eq!(node.time_between_global_checkpoints_ms, 2000);
    assert_eq!(node.time_between_local_checkpoints, 20);
    assert_eq!(node.scheduler_spin_us, 50);
    assert_eq!(node.fragment_log_files, 16);
    assert_eq!(node.fragment_log_file_size_bytes, 16 * MIB);
    assert_eq!(node.redo_buffer_bytes, 32 * MIB);
    assert_eq!(node.send_buffer_memory_bytes, 2 * MIB);
    assert_eq!(node.concurrent_operations_max, 32768);
    assert_eq!(node.concurrent_transactions_max, 4096);
    assert_eq!(node.lock_pages_in_main_memory, 0);
}

#[test]
fn index_memory_is_added_to_data_memory_with_one_notice_per_setting() {
    let config = parsed(
        "[ndb_mgmd]\n\
         [ndbd default]\nNoOfReplicas=1\nIndexMemory=16M\n\
         [ndbd]\nDataMemory=80M\n\
         [ndbd]\nIndexMemory=1M\n\
         [ndbd]\n",
    );
    let memory: Vec<u64> = config
        .data_nodes
        .iter()
        .map(|node| node.data_memory_bytes)
        .collect();
    assert_eq!(memory, [96 * MIB, 99 * MIB, 114 * MIB]);
    assert_eq!(
        config.notices,
        [
            "config.ini:4: IndexMemory is deprecated; its 16777216 bytes were added to DataMemory",
            "config.ini:8: IndexMemory is deprecated; its 1048576 bytes were added to DataMemory",
        ]
    );
}

#[test]
fn explicit_node_groups_are_kept_and_the_rest_fill_in_order() {
    let config = parsed(
        "[ndb_mgmd]\nId=1\n\
         [ndbd]\nId=2\n\
         [ndbd]\nId=3\nNodeGroup=1\n\
         [ndbd]\nId=4\n\
         [ndbd]\nId=5\nNodeGroup=0\n",
    );
    assert_eq!(config.node_groups, [vec![2, 5], vec![3, 4]]);
    assert_eq!(config.node_group_of(3), Some(1));
    assert_eq!(config.node_group_of(5), Some(0));
}

#[test]
fn four_data_nodes_with_two_replicas_form_two_groups_in_section_order() {
    let config = parsed("[ndbd]\n[ndbd]\n[ndb_mgmd]\n[ndbd]\n[ndbd]\n");
    let ids: Vec<u8> = config.data_nodes.iter().map(|node| node.node_id).collect();
    assert_eq!(ids, [1, 2, 4, 5]);
    assert_eq!(config.management_nodes[0].node_id, 3);
    assert_eq!(config.node_groups, [vec![1, 2], vec![4, 5]]);
}

#[test]
fn missing_ids_are_the_lowest_free_once_explicit_ids_are_known() {
    let config = parsed(
        "[ndbd]\n\
         [ndbd]\nId=1\n\
         [ndb_mgmd]\n\
         [api]\nId=2\n\
         [ndbd]\n\
         [ndbd]\nNodeId=4\n\
         [mysqld]\n",
    );
    let ids: Vec<u8> = config.data_nodes.iter().map(|node| node.node_id).collect();
    assert_eq!(ids, [3, 1, 6, 4]);
    assert_eq!(config.management_nodes[0].node_id, 5);
    assert_eq!(config.node_groups, [vec![3, 1], vec![6, 4]]);
    assert_eq!(config.api_nodes[0].node_id, Some(2));
    assert_eq!(config.api_nodes[1].node_id, None);
    assert_eq!(config.api_nodes[1].host_name, None);
    assert_eq!(config.all_node_ids(), [1, 2, 3, 4, 5, 6]);
}

#[test]
fn tcp_sections_configure_one_pair() {
    let config = parsed(
        "[ndb_mgmd]\nId=1\n[ndbd]\nId=2\n[ndbd]\nId=3\n\
         [tcp]\nNodeId1=2\nNodeId2=3\nSendBufferMemory=8M\nGroup=1\n",
    );
    assert_eq!(config.tcp_connections.len(), 1);
    let connection = &config.tcp_connections[0];
    assert_eq!((connection.node_id_1, connection.node_id_2), (2, 3));
    assert_eq!(connection.send_buffer_memory_bytes, 8 * MIB);
    assert_eq!(connection.receive_buffer_memory_bytes, 2 * MIB);
    assert_eq!(connection.line, 7);
}

#[test]
fn booleans_accept_ndb_spellings() {
    for (word, value) in [
        ("true", true),
        ("FALSE", false),
        ("Yes", true),
        ("no", false),
        ("y", true),
        ("N", false),
        ("1", true),
        ("0", false),
    ] {
        let config = parsed(&format!(
            "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\nStopOnError={word}\n"
        ));
        assert_eq!(config.data_nodes[0].stop_on_error, value, "{word}");
    }
}

/// `Diskless` is applied (no redo log, no checkpoints), off by default,
/// and no longer named among the keys without effect.
#[test]
fn diskless_is_applied_and_off_by_default() {
    let config = parsed("[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n");
    assert!(!config.data_nodes[0].diskless);
    let config = parsed("[ndb_mgmd]\n[ndbd default]\nDiskless=1\n[ndbd]\nNoOfReplicas=1\n");
    assert!(config.data_nodes[0].diskless);
    assert!(
        config
            .notices
            .iter()
            .all(|notice| !notice.contains("Diskless")),
        "{:?}",
        config.notices
    );
}

// Errors: each names the file, the line to fix and the key.

#[test]
fn unknown_section() {
    let text = "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n[ndbx]\n";
    assert_error(text, 4, Some("[ndbx]"), "unknown section");
    assert!(
        error(text)
            .to_string()
            .starts_with("config.ini:4: [ndbx]: unknown section")
    );
    assert_error(
        "[ndbd defaults]\n",
        1,
        Some("[ndbd defaults]"),
        "unknown section",
    );
    assert_error("[ndbd\n", 1, Some("[ndbd"), "`]`");
}

#[test]
fn unknown_parameter() {
    let text = "[ndb_mgmd]\n[ndbd]\nDataMemroy=80M\n";
    assert_eq!(
        error(text).to_string(),
        "config.ini:3: DataMemroy: unknown parameter in [ndbd] section"
    );
    assert_error(
        "[ndbd default]\nFoo=1\n",
        2,
        Some("Foo"),
        "unknown parameter in [ndbd default] section",
    );
}

#[test]
fn parameter_in_the_wrong_section() {
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nportnumber=1186\n",
        3,
        Some("portnumber"),
        "unknown parameter in [ndbd] section (PortNumber belongs in [ndb_mgmd])",
    );
    assert_error(
        "[ndb_mgmd]\n[api]\nDataMemory=1M\n",
        3,
        Some("DataMemory"),
        "unknown parameter in [api] section",
    );
    assert_error("[ndbd]\nNodeId1=1\n", 2, Some("NodeId1"), "[tcp]");
}

#[test]
fn parameter_outside_any_section() {
    assert_error(
        "# header comment\nHostName=localhost\n[ndbd]\n",
        2,
        Some("HostName"),
        "outside any section",
    );
}

#[test]
fn line_without_separator() {
    assert_error(
        "[ndb_mgmd]\nhostname localhost\n",
        2,
        None,
        "expected `key=value` or `key: value`",
    );
    assert_error("[ndb_mgmd]\n= 5\n", 2, None, "no parameter name");
}

#[test]
fn bad_values() {
    let base = "[ndb_mgmd]\n[ndbd]\n";
    assert_error(
        &format!("{base}NoOfReplicas=two\n"),
        3,
        Some("NoOfReplicas"),
        "`two` is not a number",
    );
    // NDB reads K, M and G on every integer: 2K is 2048 replicas.
    assert_error(
        &format!("{base}NoOfReplicas=2K\n"),
        3,
        Some("NoOfReplicas"),
        "`2K` is out of range 1..=4",
    );
    assert_error(
        &format!("{base}NoOfReplicas=2.5\n"),
        3,
        Some("NoOfReplicas"),
        "`2.5` is not a number",
    );
    assert_error(
        &format!("{base}DataMemory=10X\n"),
        3,
        Some("DataMemory"),
        "unknown size suffix `X`",
    );
    assert_error(
        &format!("{base}DataMemory=\n"),
        3,
        Some("DataMemory"),
        "empty",
    );
    assert_error(
        &format!("{base}StopOnError=maybe\n"),
        3,
        Some("StopOnError"),
        "`maybe` is not a boolean",
    );
    assert_error(
        &format!("{base}DataMemory=99999999999G\n"),
        3,
        Some("DataMemory"),
        "too large",
    );
    assert_error(&format!("{base}HostName=\n"), 3, Some("HostName"), "empty");
}

#[test]
fn values_out_of_range_name_the_range() {
    let base = "[ndb_mgmd]\n[ndbd]\n";
    assert_error(
        &format!("{base}NoOfReplicas=5\n"),
        3,
        Some("NoOfReplicas"),
        "`5` is out of range 1..=4",
    );
    assert_error(
        &format!("{base}DataMemory=512K\n"),
        3,
        Some("DataMemory"),
        "`512K` is out of range 1M..=67108832K bytes",
    );
    assert_error(
        &format!("{base}HeartbeatIntervalDbDb=5\n"),
        3,
        Some("HeartbeatIntervalDbDb"),
        "out of range 10..=4294967039 ms",
    );
    assert_error(
        &format!("{base}TimeBetweenGlobalCheckpoints=40000\n"),
        3,
        Some("TimeBetweenGlobalCheckpoints"),
        "out of range 20..=32000 ms",
    );
    assert_error(
        &format!("{base}MaxNoOfExecutionThreads=1\n"),
        3,
        Some("MaxNoOfExecutionThreads"),
        "out of range 2..=72",
    );
    assert_error(
        &format!("{base}MaxMissedHeartbeats=101\n"),
        3,
        Some("MaxMissedHeartbeats"),
        "out of range 2..=100",
    );
    assert_error(
        &format!("{base}Id=145\n"),
        3,
        Some("Id"),
        "out of range 1..=144",
    );
    assert_error("[api]\nId=256\n", 2, Some("Id"), "out of range 1..=255");
    assert_error("[api]\nId=0\n", 2, Some("Id"), "out of range 1..=255");
}

#[test]
fn key_given_twice_in_one_section() {
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nDataMemory=80M\nHostName=a\ndatamemory=90M\n",
        5,
        Some("datamemory"),
        "DataMemory is given twice in this section (first on line 3)",
    );
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nId=2\nNodeId=3\n",
        4,
        Some("NodeId"),
        "first on line 3",
    );
    assert_error(
        "[ndbd default]\nRedoBuffer=2M\n[ndbd]\n[ndbd default]\nRedoBuffer=4M\n",
        5,
        Some("RedoBuffer"),
        "given twice in a [ndbd default] section (first on line 2)",
    );
}

#[test]
fn node_id_in_a_default_section() {
    assert_error(
        "[ndbd default]\nNodeId=2\n",
        2,
        Some("NodeId"),
        "cannot be set in a [ndbd default] section",
    );
}

#[test]
fn duplicate_node_id_names_the_later_line() {
    assert_error(
        "[ndbd]\nNoOfReplicas=1\nId=3\n[ndb_mgmd]\n[api]\nHostName=h\nId=3\n",
        7,
        Some("NodeId"),
        "node id 3 is already used by the [ndbd] section on line 1",
    );
    assert_error(
        "[ndb_mgmd]\nId=1\n[ndbd]\nNoOfReplicas=1\n[mysqld]\nId=1\n",
        6,
        Some("NodeId"),
        "already used by the [ndb_mgmd] section on line 1",
    );
}

#[test]
fn no_of_replicas_must_agree() {
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=2\n[ndbd]\nNoOfReplicas=2\n[ndbd]\nHostName=h\nNoOfReplicas=1\n",
        8,
        Some("NoOfReplicas"),
        "NoOfReplicas=1 for the data node on line 6 differs from NoOfReplicas=2",
    );
    // A node that leaves it unset has the default, 2, and the error points
    // at its section.
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nNoOfReplicas=1\n[ndbd]\n",
        4,
        Some("NoOfReplicas"),
        "NoOfReplicas=2 for the data node on line 4 differs",
    );
}

#[test]
fn data_node_count_must_be_a_multiple_of_no_of_replicas() {
    assert_error(
        "[ndbd default]\nNoOfReplicas=2\n[ndb_mgmd]\n[ndbd]\n[ndbd]\n[ndbd]\n",
        2,
        Some("NoOfReplicas"),
        "3 data nodes cannot form node groups of NoOfReplicas=2",
    );
    // Defaulted: the first [ndbd] section is the place to look.
    assert_error(
        "[ndb_mgmd]\n\n[ndbd]\n[ndbd]\n[ndbd]\n",
        3,
        Some("NoOfReplicas"),
        "must be a multiple of NoOfReplicas",
    );
}

#[test]
fn node_groups_must_hold_exactly_no_of_replicas_nodes() {
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nNodeGroup=0\n[ndbd]\nNodeGroup=0\n[ndbd]\nNodeGroup=0\n[ndbd]\n",
        7,
        Some("NodeGroup"),
        "node group 0 would get 3 data nodes; each node group has exactly NoOfReplicas=2",
    );
    assert_error(
        "[ndb_mgmd]\n[ndbd]\n[ndbd]\nNodeGroup=1\n",
        4,
        Some("NodeGroup"),
        "node group 1 does not exist: 2 data nodes with NoOfReplicas=2 form node groups 0..=0",
    );
}

#[test]
fn a_cluster_needs_data_and_management_nodes() {
    assert_error("[ndb_mgmd]\n[api]\n", 0, None, "no [ndbd] section");
    assert_eq!(
        error("[ndb_mgmd]\n").to_string(),
        "config.ini: no [ndbd] section: a cluster needs at least one data node"
    );
    assert_error(
        "[ndbd default]\n[ndbd]\nNoOfReplicas=1\n",
        0,
        None,
        "no [ndb_mgmd] section",
    );
}

#[test]
fn tcp_sections_must_name_known_nodes() {
    let base = "[ndb_mgmd]\nId=1\n[ndbd]\nId=2\n[ndbd]\nId=3\n";
    assert_error(
        &format!("{base}[tcp]\nNodeId1=2\nNodeId2=9\n"),
        9,
        Some("NodeId2"),
        "node 9 is not defined by any node section",
    );
    assert_error(
        &format!("{base}[tcp]\nNodeId2=2\n"),
        7,
        Some("NodeId1"),
        "must name both of its nodes",
    );
    assert_error(
        &format!("{base}[tcp]\nNodeId1=2\nNodeId2=2\n"),
        9,
        Some("NodeId2"),
        "not node 2 to itself",
    );
    assert_error(
        "[tcp default]\nNodeId1=2\n",
        2,
        Some("NodeId1"),
        "cannot be set in a [tcp default] section",
    );
}

#[test]
fn no_free_data_node_id_left() {
    let mut text = String::from("[ndb_mgmd]\nId=200\n[ndbd default]\nNoOfReplicas=1\n");
    for id in 1..=144 {
        text.push_str(&format!("[ndbd]\nId={id}\n"));
    }
    text.push_str("[ndbd]\n");
    let last_line = u32::try_from(text.lines().count()).expect("small");
    assert_error(&text, last_line, Some("NodeId"), "no free node id left");
}

#[test]
fn sandbox_config_round_trips() {
    for (data_nodes, replicas) in [(1, 1), (2, 2), (4, 2)] {
        let text = sandbox_config_text("/tmp/shoal/", data_nodes, replicas, 41186, 256 * MIB);
        let config = parsed(&text);
        let ids: Vec<u8> = config.data_nodes.iter().map(|node| node.node_id).collect();
        let expected: Vec<u8> = (2..=data_nodes + 1).collect();
        assert_eq!(ids, expected);
        assert_eq!(config.no_of_replicas, replicas);
        assert_eq!(config.node_groups.len(), usize::from(data_nodes / replicas));
        for node in &config.data_nodes {
            assert_eq!(node.host_name, "127.0.0.1");
            assert_eq!(node.data_memory_bytes, 256 * MIB);
            assert_eq!(node.data_dir, format!("/tmp/shoal/ndbd-{}", node.node_id));
        }
        let management = &config.management_nodes[0];
        assert_eq!(management.node_id, 1);
        assert_eq!(management.port, 41186);
        assert_eq!(management.data_dir, "/tmp/shoal/ndb_mgmd-1");
        assert_eq!(config.api_nodes.len(), 9);
        assert_eq!(config.api_nodes[0].kind, ApiKind::Mysqld);
        assert_eq!(config.api_nodes[0].node_id, Some(145));
        assert!(
            config.api_nodes[1..]
                .iter()
                .all(|node| node.node_id.is_none())
        );
    }
}

#[test]
fn sandbox_config_with_a_bad_shape_is_reported_by_parse() {
    let text = sandbox_config_text("data", 3, 2, 1186, 64 * MIB);
    let error = parse(&text, "sandbox.ini").expect_err("3 nodes cannot pair up");
    assert_eq!(error.key.as_deref(), Some("NoOfReplicas"));
}

#[test]
fn transaction_inactive_timeout_takes_ndb_default_and_range() {
    let config = parsed("[ndb_mgmd]\n[ndbd]\n[ndbd]\nTransactionInactiveTimeout=0\n");
    assert_eq!(
        config.data_nodes[0].transaction_inactive_timeout_ms,
        4_294_967_039
    );
    assert_eq!(config.data_nodes[1].transaction_inactive_timeout_ms, 0);
    assert_error(
        "[ndb_mgmd]\n[ndbd]\nTransactionInactiveTimeout=4294967040\n",
        3,
        Some("TransactionInactiveTimeout"),
        "4294967039",
    );
}
