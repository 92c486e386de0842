//! Two data nodes, each running a coordinator and a query handler, joined
//! by an in-memory network that delivers every directed link in order
//! (as TCP does) and the links one after another in a fixed order: small,
//! deterministic runs of the commit protocol without randomness.

use std::collections::{BTreeMap, VecDeque};

use protocol::{
    Chain, ClusterState, CopyRequest, Execute, ExecuteEnd, Executed, Fragment, KeyRequest, Member,
    Message, NodeId, Operation, OperationKind, ScanNext, ScanOpen, TableEntry, TransactionState,
};
use schema::distribution::TableOptions;
use schema::{AttrInfoReader, AttrInfoWriter, ColumnDef, ColumnType, IndexDef, TableDef, Value};
use storage::engine::EngineConfig;
use transaction::routing::unique_index_table_id;
use transaction::{Coordinator, CoordinatorConfig, QueryHandler, Routing};

const API: NodeId = 200;
const TABLE: u32 = 1;
const PARTITIONS: u32 = 2;
/// The unique column, and its index's position.
const CODE: u16 = 2;
const CODE_INDEX: u16 = 0;

struct DataNode {
    coordinator: Coordinator,
    query_handler: QueryHandler,
}

/// What happened at one delivery step: the message delivered and what the
/// receiver sent in answer.
struct Step {
    from: NodeId,
    to: NodeId,
    delivered: Message,
    sent: Vec<(NodeId, Message)>,
}

struct Cluster {
    nodes: BTreeMap<NodeId, DataNode>,
    links: BTreeMap<(NodeId, NodeId), VecDeque<Message>>,
    answers: VecDeque<Message>,
    steps: Vec<Step>,
    routing: Routing,
    /// Transactions (coordinator, id) the API has open: its next execute
    /// of one continues it, any other starts a transaction.
    open: std::collections::BTreeSet<(NodeId, u64)>,
    read_backup: bool,
    /// Cluster state versions installed so far.
    version: u64,
    /// The latest `tick`'s time.
    clock_ms: u64,
    /// The API acknowledges committed answers (tests of the markers turn
    /// it off).
    acknowledging: bool,
}

fn table_definition(read_backup: bool) -> Vec<u8> {
    let table = TableDef::new(
        "t",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("value", ColumnType::BigInt { unsigned: false }, true),
            // Unique; the tests that leave it NULL have no index rows.
            ColumnDef::new("code", ColumnType::BigInt { unsigned: false }, true),
        ],
        vec![0],
        vec![IndexDef {
            name: "code".into(),
            columns: vec![CODE],
            unique: true,
        }],
    )
    .expect("a valid table");
    let options = TableOptions {
        read_backup,
        partitions: Some(PARTITIONS),
        ..TableOptions::default()
    };
    let mut out = Vec::new();
    schema::table_codec::encode_table(&table, &options, &mut out);
    out
}

fn cluster_state(read_backup: bool) -> ClusterState {
    ClusterState {
        generation: 1,
        version: 2,
        members: vec![
            Member {
                node: 1,
                incarnation: 1,
            },
            Member {
                node: 2,
                incarnation: 2,
            },
        ],
        removed: Vec::new(),
        starting: Vec::new(),
        recovered: Vec::new(),
        schema_version: 1,
        next_table_id: TABLE + 1,
        tables: vec![TableEntry {
            id: TABLE,
            name: "t".into(),
            schema_version: 1,
            definition: table_definition(read_backup),
            partition_count: PARTITIONS,
            fully_replicated: false,
            read_backup,
            // Partition 0 has its primary on node 1, partition 1 on node 2.
            fragments: vec![
                Fragment {
                    partition: 0,
                    node_group: 0,
                    replicas: vec![1, 2],
                    ldm: 0,
                },
                Fragment {
                    partition: 1,
                    node_group: 0,
                    replicas: vec![2, 1],
                    ldm: 0,
                },
            ],
        }],
        schema_outcomes: Vec::new(),
        restore_epoch: 0,
        epoch_floor: 0,
    }
}

fn engine_config() -> EngineConfig {
    EngineConfig {
        data_memory_bytes: 4 << 20,
        operations_max: 256,
        scans_max: 16,
        ..EngineConfig::default()
    }
}

/// The epoch every commit of these tests is decided in.
const TEST_EPOCH: u64 = 1 << 32;

impl Cluster {
    fn new(read_backup: bool, config: CoordinatorConfig) -> Cluster {
        let mut routing = Routing::new();
        assert!(routing.install(&cluster_state(read_backup)).is_empty());
        let mut nodes = BTreeMap::new();
        for node in [1, 2] {
            let mut query_handler = QueryHandler::new(node, engine_config()).expect("engine");
            query_handler.install(&routing);
            let log = query_handler.take_log();
            assert!(log.is_empty(), "{log:?}");
            let mut coordinator = Coordinator::new(node, 1, config);
            let mut out = Vec::new();
            coordinator.install(&routing, &mut out);
            // Commits are decided in one epoch throughout (the epoch
            // protocol is `cluster::epochs`'s, tested there and in the
            // simulator).
            coordinator.set_commit_epoch(Some(TEST_EPOCH), &mut out);
            assert!(out.is_empty());
            nodes.insert(
                node,
                DataNode {
                    coordinator,
                    query_handler,
                },
            );
        }
        Cluster {
            nodes,
            links: BTreeMap::new(),
            answers: VecDeque::new(),
            steps: Vec::new(),
            routing,
            open: Default::default(),
            read_backup,
            version: 2,
            clock_ms: 0,
            acknowledging: true,
        }
    }

    /// `dead` fails: what it had in flight and what was on its way to it is
    /// lost, and the survivors install a cluster state without it, as the
    /// membership agrees it.
    fn fail_node(&mut self, dead: NodeId) {
        self.nodes.remove(&dead).expect("a live data node");
        self.links
            .retain(|(from, to), _| *from != dead && *to != dead);
        self.version += 1;
        let mut state = cluster_state(self.read_backup);
        state.version = self.version;
        let members = state.members.clone();
        state.members.retain(|m| self.nodes.contains_key(&m.node));
        state.removed.extend(
            members
                .into_iter()
                .filter(|m| !self.nodes.contains_key(&m.node)),
        );
        let mut routing = Routing::new();
        assert!(routing.install(&state).is_empty());
        let nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        for node in nodes {
            let data_node = self.nodes.get_mut(&node).expect("live");
            data_node.query_handler.install(&routing);
            let mut out = Vec::new();
            data_node.query_handler.answer_queued_queries(&mut out);
            data_node.query_handler.start_copies(0, &mut out);
            data_node.coordinator.install(&routing, &mut out);
            self.send(node, out);
        }
        self.routing = routing;
    }

    /// The president `president` takes over the transactions the failed
    /// `dead` coordinated (every coordinator here runs as incarnation 1).
    fn take_over(&mut self, president: NodeId, dead: NodeId) {
        self.take_over_incarnation(president, dead, 1);
    }

    /// The president takes over `dead`'s incarnation `incarnation`.
    fn take_over_incarnation(&mut self, president: NodeId, dead: NodeId, incarnation: u64) {
        let position = self.routing.version();
        let mut out = Vec::new();
        self.nodes
            .get_mut(&president)
            .expect("a live data node")
            .coordinator
            .take_over(
                Member {
                    node: dead,
                    incarnation,
                },
                position,
                &mut out,
            );
        self.send(president, out);
    }

    /// Queues (without delivering) the API's request to end an open
    /// transaction: commit or roll back what it holds, with no operations.
    fn queue_end(&mut self, coordinator: NodeId, transaction: u64, end: ExecuteEnd) {
        self.send(
            API,
            vec![(
                coordinator,
                Message::Execute(Execute {
                    transaction,
                    start: false,
                    end,
                    operations: Vec::new(),
                }),
            )],
        );
    }

    fn send(&mut self, from: NodeId, messages: Vec<(NodeId, Message)>) {
        for (to, message) in messages {
            self.links.entry((from, to)).or_default().push_back(message);
        }
        // The runtime tells every API node of a finished takeover after
        // what the coordinator sent.
        if let Some(node) = self.nodes.get_mut(&from) {
            for failed in node.coordinator.take_takeovers_done() {
                self.links
                    .entry((from, API))
                    .or_default()
                    .push_back(Message::TakeoverDone {
                        failed_node: failed.node,
                        failed_incarnation: failed.incarnation,
                    });
            }
        }
    }

    /// Delivers the oldest message of the first non-empty link (in link
    /// order); false when nothing is in flight.
    fn deliver_one(&mut self) -> bool {
        let Some((&(from, to), _)) = self.links.iter().find(|(_, queue)| !queue.is_empty()) else {
            return false;
        };
        self.deliver_from(from, to);
        true
    }

    /// Commits are decided in `epoch` from now on, on every node (the
    /// cluster is idle: no commit waits for one).
    fn set_commit_epoch(&mut self, epoch: u64) {
        for node in self.nodes.values_mut() {
            let mut out = Vec::new();
            node.coordinator.set_commit_epoch(Some(epoch), &mut out);
            assert!(out.is_empty(), "{out:?}");
        }
    }

    /// Delivers the oldest message in flight from `from` to `to`, which
    /// must exist: tests use it to let one link overtake another.
    fn deliver_from(&mut self, from: NodeId, to: NodeId) {
        let message = self
            .links
            .get_mut(&(from, to))
            .and_then(VecDeque::pop_front)
            .expect("non-empty");
        if to == API {
            // The API acknowledges every committed answer, as
            // `shoal-client` does, so the replicas forget its markers.
            let mut sent = Vec::new();
            if let Message::Executed(executed) = &message
                && executed.acknowledge
                && self.acknowledging
            {
                sent.push((
                    from,
                    Message::CommitAck {
                        transactions: Box::new(vec![executed.transaction]),
                    },
                ));
            }
            self.answers.push_back(message.clone());
            self.steps.push(Step {
                from,
                to,
                delivered: message,
                sent: sent.clone(),
            });
            self.send(API, sent);
            return;
        }
        let node = self.nodes.get_mut(&to).expect("a data node");
        let mut out = Vec::new();
        let rest = node.coordinator.on_message(from, message.clone(), &mut out);
        if let Some(rest) = rest {
            let unhandled = node.query_handler.on_message(0, rest, &mut out);
            assert!(unhandled.is_none(), "nobody took {unhandled:?}");
        }

        self.steps.push(Step {
            from,
            to,
            delivered: message,
            sent: out.clone(),
        });
        self.send(to, out);
    }

    /// Delivers until the API has an answer; other messages stay in flight.
    fn until_answer(&mut self) -> Message {
        loop {
            if let Some(answer) = self.answers.pop_front() {
                return answer;
            }
            assert!(
                self.deliver_one(),
                "the API got no answer and nothing is in flight"
            );
        }
    }

    fn quiesce(&mut self) {
        while self.deliver_one() {}
    }

    fn execute(
        &mut self,
        coordinator: NodeId,
        transaction: u64,
        end: ExecuteEnd,
        operations: Vec<Operation>,
    ) -> Executed {
        let start = !self.open.contains(&(coordinator, transaction));
        self.execute_with(coordinator, transaction, start, end, operations)
    }

    /// An execute whose start flag the test chooses.
    fn execute_with(
        &mut self,
        coordinator: NodeId,
        transaction: u64,
        start: bool,
        end: ExecuteEnd,
        operations: Vec<Operation>,
    ) -> Executed {
        self.send(
            API,
            vec![(
                coordinator,
                Message::Execute(Execute {
                    transaction,
                    start,
                    end,
                    operations,
                }),
            )],
        );
        match self.until_answer() {
            Message::Executed(executed) => {
                assert_eq!(executed.transaction, transaction);
                if executed.state == TransactionState::Open {
                    self.open.insert((coordinator, transaction));
                } else {
                    self.open.remove(&(coordinator, transaction));
                }
                executed
            }
            other => panic!("expected Executed, got {other:?}"),
        }
    }

    /// Ticks every coordinator's inactivity timer at `now_ms`.
    fn tick(&mut self, now_ms: u64) {
        self.clock_ms = now_ms;
        let nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        for node in nodes {
            let mut out = Vec::new();
            let coordinator = &mut self.nodes.get_mut(&node).expect("node").coordinator;
            coordinator.tick(now_ms, &mut out);
            self.send(node, out);
        }
    }

    fn committed_rows(&mut self, node: NodeId) -> Vec<(i64, Option<i64>)> {
        let query_handler = &mut self.nodes.get_mut(&node).expect("node").query_handler;
        let mut rows = Vec::new();
        for fragment in 0..PARTITIONS {
            for row in query_handler
                .committed_rows(TABLE, fragment)
                .expect("replica here")
            {
                rows.push((int(&row, 0).expect("id"), int(&row, 1)));
            }
        }
        rows.sort_unstable();
        rows
    }

    fn assert_idle(&mut self) {
        self.quiesce();
        // The coordinators send the markers to forget at their tick.
        self.tick(self.clock_ms);
        self.quiesce();
        for (node, data_node) in &self.nodes {
            assert_eq!(data_node.coordinator.open_transactions(), 0, "node {node}");
            assert_eq!(data_node.coordinator.acks_awaited(), 0, "node {node}");
            assert_eq!(data_node.query_handler.open_markers(), 0, "node {node}");
            assert_eq!(data_node.query_handler.open_work(), 0, "node {node}");
            assert_eq!(
                data_node.query_handler.engine().operations_in_use(),
                0,
                "node {node}"
            );
            data_node.query_handler.engine().check_invariants();
        }
    }

    /// Commits three rows in partition 1 (primary node 2) and opens scan 1
    /// of transaction 2 on it through coordinator 1, one row a batch, in
    /// `mode`: the first batch, as the API got it.
    fn scan_partition_1_a_row_a_batch(&mut self, mode: OperationKind) -> protocol::ScanRows {
        let keys: Vec<i32> = (0..3).map(|skip| self.key_in(1, skip)).collect();
        let executed = self.execute(
            1,
            1,
            ExecuteEnd::Commit,
            keys.iter().map(|k| insert(*k, 1)).collect(),
        );
        assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
        self.quiesce();
        self.answers.clear();
        self.send(
            API,
            vec![(
                1,
                Message::ScanOpen(Box::new(ScanOpen {
                    transaction: 2,
                    start: true,
                    scan: 1,
                    table: TABLE,
                    columns: vec![0, 1],
                    mode,
                    partition: Some(1),
                    batch_rows: 1,
                    batch_bytes: 1 << 16,
                    ..ScanOpen::default()
                })),
            )],
        );
        let Message::ScanRows(rows) = self.until_answer() else {
            panic!("expected rows");
        };
        assert_eq!((rows.fragment, rows.rows, rows.finished), (1, 1, false));
        rows
    }

    fn query_handler(&mut self, node: NodeId) -> &mut QueryHandler {
        &mut self.nodes.get_mut(&node).expect("node").query_handler
    }

    /// A key whose row lives in `partition`.
    fn key_in(&self, partition: u32, skip: usize) -> i32 {
        let route = self.routing.table(TABLE).expect("table");
        let mut scratch = Vec::new();
        (0..)
            .filter(|id| {
                route
                    .partition_of_key(&key(*id), &mut scratch)
                    .expect("key")
                    == partition
            })
            .nth(skip)
            .expect("some key")
    }
}

fn key(id: i32) -> Vec<u8> {
    let mut bytes = Vec::new();
    Value::Int(i64::from(id))
        .encode(&ColumnType::Int { unsigned: false }, &mut bytes)
        .expect("an INT");
    let mut out = Vec::new();
    AttrInfoWriter::new(&mut out).push(0, Some(&bytes));
    out
}

/// An insert's values: every column, the key's too (the engine builds the
/// row from these alone).
fn row(id: i32, value: i64) -> Vec<u8> {
    let mut out = key(id);
    out.extend(bigint(1, Some(value)));
    out
}

const INT: ColumnType = ColumnType::Int { unsigned: false };
const BIGINT: ColumnType = ColumnType::BigInt { unsigned: false };

/// Column `column` (0 = id INT, others BIGINT) of AttrInfo, if present.
fn int(attrinfo: &[u8], column: u16) -> Option<i64> {
    int_as(attrinfo, column, if column == 0 { &INT } else { &BIGINT })
}

/// Integer column `column` of type `column_type` of AttrInfo, if present.
fn int_as(attrinfo: &[u8], column: u16, column_type: &ColumnType) -> Option<i64> {
    match AttrInfoReader::find(attrinfo, column).expect("AttrInfo") {
        Some(Some(bytes)) => match Value::decode(column_type, bytes) {
            Value::Int(value) => Some(value),
            other => panic!("not an integer: {other:?}"),
        },
        _ => None,
    }
}

fn insert(id: i32, value: i64) -> Operation {
    Operation {
        table: TABLE,
        kind: OperationKind::Insert,
        key: key(id),
        values: row(id, value),
        ..Operation::default()
    }
}

fn read(id: i32, kind: OperationKind) -> Operation {
    Operation {
        table: TABLE,
        kind,
        key: key(id),
        columns: vec![0, 1],
        ..Operation::default()
    }
}

fn delete(id: i32) -> Operation {
    Operation {
        table: TABLE,
        kind: OperationKind::Delete,
        key: key(id),
        ..Operation::default()
    }
}

/// A node whose DataMemory cannot hold the fragments a state places on it
/// logs why, in a bounded number of lines, once.
#[test]
fn fragments_that_do_not_fit_are_logged_with_their_reason_and_rate_limited() {
    let mut state = cluster_state(true);
    let template = state.tables[0].clone();
    for id in 2..200 {
        state.tables.push(TableEntry {
            id,
            name: format!("t{id}"),
            ..template.clone()
        });
    }
    state.next_table_id = 200;
    let mut routing = Routing::new();
    assert!(routing.install(&state).is_empty());
    let config = EngineConfig {
        data_memory_bytes: 4 * storage::memory::page_pool::PAGE_SIZE_BYTES as u64,
        ..engine_config()
    };
    let mut query_handler = QueryHandler::new(1, config).expect("engine");
    query_handler.install(&routing);
    let log = query_handler.take_log();
    assert!(!log.is_empty(), "four pages cannot hold 200 tables");
    assert!(
        log.len() <= transaction::query_handler::FRAGMENT_LOG_LINES_PER_INSTALL_MAX + 1,
        "{} lines: {log:#?}",
        log.len()
    );
    for line in &log[..log.len() - 1] {
        assert!(line.contains("NDB 827"), "no reason: {line}");
    }
    let summary = log.last().expect("not empty");
    assert!(summary.contains("more"), "no count of the rest: {summary}");
    // The next state change retries the fragments but does not repeat the
    // lines.
    query_handler.install(&routing);
    let again = query_handler.take_log();
    assert!(again.is_empty(), "{again:#?}");
}

#[test]
fn insert_and_commit_then_read_from_both_replicas() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 10), insert(b, 20)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    assert_eq!(executed.error, None);
    assert!(executed.results.iter().all(|r| r.error == 0));
    // The API learns the epoch its writes committed in (NDB's getGCI).
    assert_eq!(executed.epoch, TEST_EPOCH);
    // READ_BACKUP: each coordinator reads its own node's replica, the
    // primary's for one key and the backup's for the other.
    for coordinator in [1, 2] {
        let executed = cluster.execute(
            coordinator,
            10 + u64::from(coordinator),
            ExecuteEnd::Commit,
            vec![
                read(a, OperationKind::ReadCommitted),
                read(b, OperationKind::ReadCommitted),
            ],
        );
        assert_eq!(executed.state, TransactionState::Committed);
        assert_eq!(
            executed.epoch, 0,
            "a commit that wrote nothing has no epoch"
        );
        assert_eq!(executed.hops, 0, "both reads ran on the coordinator's node");
        assert_eq!(int(&executed.results[0].data, 1), Some(10));
        assert_eq!(int(&executed.results[1].data, 1), Some(20));
    }
    cluster.assert_idle();
    let expected = {
        let mut rows = vec![(i64::from(a), Some(10)), (i64::from(b), Some(20))];
        rows.sort_unstable();
        rows
    };
    assert_eq!(cluster.committed_rows(1), expected);
    assert_eq!(cluster.committed_rows(2), expected);
}

#[test]
fn rollback_leaves_nothing() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(2, 1, ExecuteEnd::NoCommit, vec![insert(a, 1), insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    // The transaction reads its own uncommitted row; others do not see it.
    let own = cluster.execute(
        2,
        1,
        ExecuteEnd::NoCommit,
        vec![read(a, OperationKind::ReadCommitted)],
    );
    assert_eq!(int(&own.results[0].data, 1), Some(1));
    let mut other_read = read(a, OperationKind::ReadCommitted);
    other_read.ignore_error = true;
    let other = cluster.execute(1, 2, ExecuteEnd::Commit, vec![other_read]);
    assert_eq!(other.state, TransactionState::Committed);
    assert_eq!(other.results[0].error, 626);
    let executed = cluster.execute(2, 1, ExecuteEnd::Rollback, Vec::new());
    assert_eq!(executed.state, TransactionState::Aborted);
    assert_eq!(executed.error, None, "a rollback asked for is no error");
    cluster.assert_idle();
    assert!(cluster.committed_rows(1).is_empty());
    assert!(cluster.committed_rows(2).is_empty());
}

#[test]
fn duplicate_insert_gives_630_and_aborts() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    // Another row of the same transaction, on the other partition, must
    // be undone with it.
    let executed = cluster.execute(2, 2, ExecuteEnd::Commit, vec![insert(b, 5), insert(a, 2)]);
    assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
    assert_eq!(executed.error.as_ref().map(|e| e.ndb_code), Some(630));
    assert_eq!(executed.results[1].error, 630);
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(1), vec![(i64::from(a), Some(1))]);
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(a), Some(1))]);
}

#[test]
fn an_ignored_error_leaves_the_transaction_open_and_committable() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, missing) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let mut ignored = delete(missing);
    ignored.ignore_error = true;
    let executed = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![ignored, insert(a, 7)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    assert_eq!(executed.error, None);
    assert_eq!(executed.results[0].error, 626);
    assert_eq!(executed.results[1].error, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, Vec::new());
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(1), vec![(i64::from(a), Some(7))]);
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(a), Some(7))]);
}

#[test]
fn the_transaction_limit_gives_4006() {
    let config = CoordinatorConfig {
        transactions_max: 2,
        ..CoordinatorConfig::default()
    };
    let mut cluster = Cluster::new(true, config);
    let keys: Vec<i32> = (0..3).map(|i| cluster.key_in(0, i)).collect();
    for (transaction, id) in [(1, keys[0]), (2, keys[1])] {
        let executed = cluster.execute(1, transaction, ExecuteEnd::NoCommit, vec![insert(id, 1)]);
        assert_eq!(executed.state, TransactionState::Open);
    }
    let refused = cluster.execute(1, 3, ExecuteEnd::NoCommit, vec![insert(keys[2], 1)]);
    assert_eq!(refused.state, TransactionState::Aborted);
    assert_eq!(refused.error.as_ref().map(|e| e.ndb_code), Some(4006));
    // The other coordinator has room.
    let elsewhere = cluster.execute(2, 3, ExecuteEnd::Commit, vec![insert(keys[2], 3)]);
    assert_eq!(elsewhere.state, TransactionState::Committed);
    for transaction in [1, 2] {
        let executed = cluster.execute(1, transaction, ExecuteEnd::Commit, Vec::new());
        assert_eq!(executed.state, TransactionState::Committed);
    }
    // With room again, the refused id starts a transaction.
    let executed = cluster.execute(
        1,
        3,
        ExecuteEnd::Commit,
        vec![read(keys[2], OperationKind::ReadShared)],
    );
    assert_eq!(executed.state, TransactionState::Committed);
    assert_eq!(int(&executed.results[0].data, 1), Some(3));
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(1).len(), 3);
}

/// The step at which the API's answer to `transaction` was sent.
fn answer_step(cluster: &Cluster, transaction: u64) -> usize {
    cluster
        .steps
        .iter()
        .position(|step| {
            step.sent.iter().any(|(to, message)| {
                *to == API
                    && matches!(message, Message::Executed(e) if e.transaction == transaction)
            })
        })
        .expect("answered")
}

#[test]
fn read_backup_commit_is_answered_after_complete() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1), insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Committed);
    let step = answer_step(&cluster, 1);
    // The answer went out on the last Completed, after both fragments
    // completed: every backup has committed.
    let completed = |step: &Step| matches!(step.delivered, Message::Completed(_));
    assert!(
        completed(&cluster.steps[step]),
        "answered on {:?}",
        cluster.steps[step].delivered
    );
    assert_eq!(
        cluster.steps[..=step]
            .iter()
            .filter(|s| completed(s))
            .count(),
        2
    );
    // So a committed read of the backups, sent now, sees both rows.
    let executed = cluster.execute(
        2,
        2,
        ExecuteEnd::Commit,
        vec![
            read(a, OperationKind::ReadCommitted),
            read(b, OperationKind::ReadCommitted),
        ],
    );
    assert_eq!(int(&executed.results[0].data, 1), Some(1));
    assert_eq!(int(&executed.results[1].data, 1), Some(2));
    cluster.assert_idle();
}

#[test]
fn without_read_backup_the_commit_is_answered_before_complete() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    let step = answer_step(&cluster, 1);
    assert!(
        matches!(cluster.steps[step].delivered, Message::Committed(_)),
        "answered on {:?}",
        cluster.steps[step].delivered
    );
    // Complete still runs, and the coordinator forgets the transaction then.
    cluster.quiesce();
    assert!(
        cluster.steps[step..]
            .iter()
            .any(|s| matches!(s.delivered, Message::Completed(_)))
    );
    assert_eq!(
        cluster.steps.iter().filter(|s| s.to == API).count(),
        1,
        "one answer per execute"
    );
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(a), Some(1))]);
}

#[test]
fn a_scan_runs_in_batches_across_both_nodes() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let operations: Vec<Operation> = (0..10).map(|id| insert(id, i64::from(id) * 10)).collect();
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, operations);
    assert_eq!(executed.state, TransactionState::Committed);
    // Two rows per batch: the API asks for the rest with ScanNext, which
    // the coordinator passes on to the query handlers.
    cluster.send(
        API,
        vec![(
            2,
            Message::ScanOpen(Box::new(ScanOpen {
                transaction: 2,
                start: true,
                scan: 1,
                table: TABLE,
                columns: vec![0, 1],
                mode: OperationKind::ReadShared,
                batch_rows: 2,
                batch_bytes: 1 << 16,
                ..ScanOpen::default()
            })),
        )],
    );
    let mut seen = Vec::new();
    let mut finished = 0;
    while finished < PARTITIONS {
        let Message::ScanRows(rows) = cluster.until_answer() else {
            panic!("expected rows");
        };
        assert_eq!(rows.error, None);
        let mut rest = rows.data.as_slice();
        while !rest.is_empty() {
            let length = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
            seen.push(int(&rest[4..4 + length], 0).expect("id"));
            rest = &rest[4 + length..];
        }
        if rows.finished {
            finished += 1;
        } else {
            cluster.send(
                API,
                vec![(
                    2,
                    Message::ScanNext(ScanNext {
                        transaction: 2,
                        scan: 1,
                        fragments: vec![rows.fragment],
                        coordinator: 0,
                    }),
                )],
            );
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..10).collect::<Vec<i64>>());
    let executed = cluster.execute(2, 2, ExecuteEnd::Commit, Vec::new());
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
}

fn update(id: i32, value: i64) -> Operation {
    Operation {
        table: TABLE,
        kind: OperationKind::Update,
        key: key(id),
        values: bigint(1, Some(value)),
        ..Operation::default()
    }
}

#[test]
fn operations_behind_a_lock_wait_run_in_order() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    // Transaction 2 holds the row's lock.
    let holder = cluster.execute(
        1,
        2,
        ExecuteEnd::NoCommit,
        vec![read(a, OperationKind::ReadExclusive)],
    );
    assert_eq!(holder.state, TransactionState::Open);
    // Transaction 3's update waits for it; the read and the second update
    // behind it in the same batch must wait too, then see the first update.
    cluster.send(
        API,
        vec![(
            2,
            Message::Execute(Execute {
                transaction: 3,
                start: true,
                end: ExecuteEnd::Commit,
                operations: vec![
                    update(a, 5),
                    read(a, OperationKind::ReadCommitted),
                    update(a, 6),
                    read(a, OperationKind::ReadExclusive),
                ],
            }),
        )],
    );
    cluster.quiesce();
    assert!(
        cluster.answers.is_empty(),
        "transaction 3 waits for the lock"
    );
    let released = cluster.execute(1, 2, ExecuteEnd::Commit, Vec::new());
    assert_eq!(released.state, TransactionState::Committed);
    let Message::Executed(executed) = cluster.until_answer() else {
        panic!("expected Executed");
    };
    assert_eq!(executed.transaction, 3);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    assert_eq!(int(&executed.results[1].data, 1), Some(5));
    assert_eq!(int(&executed.results[3].data, 1), Some(6));
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(1), vec![(i64::from(a), Some(6))]);
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(a), Some(6))]);
}

/// AttrInfo of one BIGINT column (NULL for `None`).
fn bigint(column: u16, value: Option<i64>) -> Vec<u8> {
    let mut out = Vec::new();
    let bytes = value.map(|value| {
        let mut bytes = Vec::new();
        Value::Int(value)
            .encode(&ColumnType::BigInt { unsigned: false }, &mut bytes)
            .expect("a BIGINT");
        bytes
    });
    AttrInfoWriter::new(&mut out).push(column, bytes.as_deref());
    out
}

fn insert_coded(id: i32, value: i64, code: Option<i64>) -> Operation {
    let mut operation = insert(id, value);
    operation.values.extend(bigint(CODE, code));
    operation
}

/// An operation on the row whose code is `code`.
fn by_code(kind: OperationKind, code: i64) -> Operation {
    Operation {
        table: TABLE,
        kind,
        key: bigint(CODE, Some(code)),
        columns: if kind.is_write() {
            vec![]
        } else {
            vec![0, 1, 2]
        },
        index: Some(CODE_INDEX),
        ..Operation::default()
    }
}

impl Cluster {
    /// The committed index rows (code, id) on `node`, sorted.
    fn index_rows(&mut self, node: NodeId) -> Vec<(i64, i64)> {
        let hidden = unique_index_table_id(TABLE, CODE_INDEX);
        let query_handler = &mut self.nodes.get_mut(&node).expect("node").query_handler;
        let mut rows = Vec::new();
        for fragment in 0..PARTITIONS {
            for row in query_handler
                .committed_rows(hidden, fragment)
                .expect("index replica here")
            {
                // Hidden columns: 0 = code (the index key), 1 = id.
                let code = int_as(&row, 0, &BIGINT).expect("index row without its key");
                let id = int_as(&row, 1, &INT).expect("index row without the primary key");
                rows.push((code, id));
            }
        }
        rows.sort_unstable();
        rows
    }

    fn assert_index(&mut self, expected: &[(i64, i64)]) {
        for node in [1, 2] {
            assert_eq!(self.index_rows(node), expected, "index rows on node {node}");
        }
    }
}

#[test]
fn unique_index_rows_follow_inserts_updates_and_deletes() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(
        1,
        1,
        ExecuteEnd::Commit,
        vec![insert_coded(a, 1, Some(100)), insert_coded(b, 2, Some(200))],
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    cluster.assert_index(&[(100, i64::from(a)), (200, i64::from(b))]);

    // A read by unique key finds the row, from either coordinator.
    for coordinator in [1, 2] {
        let found = cluster.execute(
            coordinator,
            10 + u64::from(coordinator),
            ExecuteEnd::Commit,
            vec![by_code(OperationKind::ReadCommitted, 200)],
        );
        assert_eq!(found.state, TransactionState::Committed, "{found:?}");
        assert_eq!(int(&found.results[0].data, 0), Some(i64::from(b)));
        assert_eq!(int(&found.results[0].data, 1), Some(2));
    }

    // Changing the code by primary key moves the index row.
    let mut change = Operation {
        table: TABLE,
        kind: OperationKind::Update,
        key: key(b),
        values: bigint(CODE, Some(300)),
        ..Operation::default()
    };
    let executed = cluster.execute(2, 2, ExecuteEnd::Commit, vec![change.clone()]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    cluster.assert_index(&[(100, i64::from(a)), (300, i64::from(b))]);
    let mut gone = by_code(OperationKind::ReadCommitted, 200);
    gone.ignore_error = true;
    let executed = cluster.execute(1, 3, ExecuteEnd::Commit, vec![gone]);
    assert_eq!(executed.results[0].error, 626);

    // An update of other columns leaves the index alone; one by unique key
    // reaches the row.
    change.values = bigint(1, Some(9));
    let mut by_index = by_code(OperationKind::Update, 300);
    by_index.values = bigint(1, Some(33));
    let executed = cluster.execute(1, 4, ExecuteEnd::Commit, vec![change, by_index]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    cluster.assert_index(&[(100, i64::from(a)), (300, i64::from(b))]);
    assert_eq!(cluster.committed_rows(1), {
        let mut rows = vec![(i64::from(a), Some(1)), (i64::from(b), Some(33))];
        rows.sort_unstable();
        rows
    });

    // Setting the code to NULL removes the index row; a delete by unique
    // key removes the row and its index row.
    let to_null = Operation {
        table: TABLE,
        kind: OperationKind::Update,
        key: key(b),
        values: bigint(CODE, None),
        ..Operation::default()
    };
    let executed = cluster.execute(
        2,
        5,
        ExecuteEnd::Commit,
        vec![to_null, by_code(OperationKind::Delete, 100)],
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    cluster.assert_index(&[]);
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(b), Some(33))]);
}

#[test]
fn a_duplicate_unique_key_gives_893_and_undoes_the_row() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert_coded(a, 1, Some(7))]);
    assert_eq!(executed.state, TransactionState::Committed);
    // Even marked ignore-error: the row was inserted before its index row
    // failed, so only the whole transaction can undo it.
    let mut duplicate = insert_coded(b, 2, Some(7));
    duplicate.ignore_error = true;
    let executed = cluster.execute(2, 2, ExecuteEnd::Commit, vec![duplicate]);
    assert_eq!(executed.state, TransactionState::Aborted);
    assert_eq!(executed.error.as_ref().map(|e| e.ndb_code), Some(893));
    assert_eq!(executed.error.as_ref().map(|e| e.mysql_code), Some(1062));
    assert_eq!(executed.results[0].error, 893);
    cluster.assert_idle();
    cluster.assert_index(&[(7, i64::from(a))]);
    assert_eq!(cluster.committed_rows(1), vec![(i64::from(a), Some(1))]);
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(a), Some(1))]);

    // NULL is no key: any number of rows may hold it.
    let executed = cluster.execute(
        1,
        3,
        ExecuteEnd::Commit,
        vec![
            insert_coded(b, 2, None),
            insert_coded(cluster.key_in(0, 1), 3, None),
        ],
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    cluster.assert_index(&[(7, i64::from(a))]);

    // A key freed earlier in the transaction can be taken again in it.
    let executed = cluster.execute(
        2,
        4,
        ExecuteEnd::NoCommit,
        vec![by_code(OperationKind::Delete, 7)],
    );
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    let c = cluster.key_in(1, 1);
    let executed = cluster.execute(2, 4, ExecuteEnd::Commit, vec![insert_coded(c, 4, Some(7))]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    cluster.assert_index(&[(7, i64::from(c))]);
}

#[test]
fn unique_index_operations_refuse_what_they_cannot_do() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let mut insert_by_index = insert_coded(a, 1, Some(5));
    insert_by_index.index = Some(CODE_INDEX);
    insert_by_index.ignore_error = true;
    let mut no_such_index = by_code(OperationKind::ReadShared, 5);
    no_such_index.index = Some(9);
    no_such_index.ignore_error = true;
    let mut wrong_key = by_code(OperationKind::ReadShared, 5);
    wrong_key.key = key(a);
    wrong_key.ignore_error = true;
    let mut missing = by_code(OperationKind::ReadExclusive, 5);
    missing.ignore_error = true;
    let hidden = Operation {
        table: unique_index_table_id(TABLE, CODE_INDEX),
        kind: OperationKind::ReadCommitted,
        key: bigint(0, Some(5)),
        ignore_error: true,
        ..Operation::default()
    };
    let executed = cluster.execute(
        1,
        1,
        ExecuteEnd::Commit,
        vec![insert_by_index, no_such_index, wrong_key, missing, hidden],
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    let errors: Vec<u16> = executed.results.iter().map(|r| r.error).collect();
    assert_eq!(errors, vec![4000, 4243, 4259, 626, 723]);
    cluster.assert_idle();
    cluster.assert_index(&[]);
}

#[test]
fn an_execute_during_a_running_batch_is_refused_and_the_transaction_goes_on() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    let holder = cluster.execute(
        1,
        2,
        ExecuteEnd::NoCommit,
        vec![read(a, OperationKind::ReadExclusive)],
    );
    assert_eq!(holder.state, TransactionState::Open);
    // Transaction 3's first batch waits for the lock; its second execute
    // arrives while the first runs.
    let execute = |start, end, operations| {
        Message::Execute(Execute {
            transaction: 3,
            start,
            end,
            operations,
        })
    };
    cluster.send(
        API,
        vec![
            (2, execute(true, ExecuteEnd::NoCommit, vec![update(a, 5)])),
            (2, execute(false, ExecuteEnd::Commit, vec![insert(b, 6)])),
        ],
    );
    let Message::Executed(refused) = cluster.until_answer() else {
        panic!("expected Executed");
    };
    assert_eq!(refused.state, TransactionState::Open, "{refused:?}");
    assert_eq!(refused.error.as_ref().map(|e| e.ndb_code), Some(4102));
    assert!(refused.results.is_empty(), "the refused batch did not run");
    let released = cluster.execute(1, 2, ExecuteEnd::Commit, Vec::new());
    assert_eq!(released.state, TransactionState::Committed);
    let Message::Executed(first) = cluster.until_answer() else {
        panic!("expected Executed");
    };
    assert_eq!(first.state, TransactionState::Open, "{first:?}");
    assert_eq!(first.results[0].error, 0);
    let executed = cluster.execute(2, 3, ExecuteEnd::Commit, vec![insert(b, 6)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    let mut expected = vec![(i64::from(a), Some(5)), (i64::from(b), Some(6))];
    expected.sort_unstable();
    assert_eq!(cluster.committed_rows(1), expected);
    assert_eq!(cluster.committed_rows(2), expected);
}

/// A transaction whose API goes quiet holds its locks only until
/// TransactionInactiveTimeout: the coordinator's timer aborts it (266 to
/// the API, as NDB's TC gives), another transaction then gets the row,
/// and the API's late continuation is refused (4350) instead of starting a
/// new transaction that would commit half of the old one.
#[test]
fn an_idle_transaction_is_aborted_after_the_inactive_timeout() {
    let config = CoordinatorConfig {
        inactive_timeout_ms: 1_000,
        ..CoordinatorConfig::default()
    };
    let mut cluster = Cluster::new(true, config);
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    cluster.tick(100);
    let idle = cluster.execute(2, 2, ExecuteEnd::NoCommit, vec![update(a, 7)]);
    assert_eq!(idle.state, TransactionState::Open, "{idle:?}");
    // Within the timeout nothing happens.
    cluster.tick(1_000);
    cluster.quiesce();
    assert!(cluster.answers.is_empty(), "{:?}", cluster.answers);
    cluster.tick(1_200);
    let Message::Executed(aborted) = cluster.until_answer() else {
        panic!("expected Executed");
    };
    assert_eq!(aborted.transaction, 2);
    assert_eq!(aborted.state, TransactionState::Aborted);
    assert_eq!(aborted.error.as_ref().map(|e| e.ndb_code), Some(266));
    cluster.open.remove(&(2, 2));
    // The lock is free: another transaction updates the row at once.
    let other = cluster.execute(1, 3, ExecuteEnd::Commit, vec![update(a, 9)]);
    assert_eq!(other.state, TransactionState::Committed, "{other:?}");
    // The late continuation does not start a new transaction.
    let late = cluster.execute_with(2, 2, false, ExecuteEnd::Commit, vec![insert(b, 5)]);
    assert_eq!(late.state, TransactionState::Aborted);
    assert_eq!(late.error.as_ref().map(|e| e.ndb_code), Some(4350));
    assert!(late.results.is_empty(), "the refused batch did not run");
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(1), vec![(i64::from(a), Some(9))]);
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(a), Some(9))]);
}

/// A whole-cluster stop drains a coordinator: a new transaction is
/// refused with 270 (temporary) while an open one goes on and commits;
/// `close` aborts what is still open with 270, leaving no lock or row
/// behind, and after it the coordinator decides no commit.
#[test]
fn a_drained_coordinator_refuses_new_transactions_and_close_aborts_the_open_ones() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, b, c) = (
        cluster.key_in(0, 0),
        cluster.key_in(1, 0),
        cluster.key_in(0, 1),
    );
    let open = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![insert(a, 1)]);
    assert_eq!(open.state, TransactionState::Open, "{open:?}");
    let idle = cluster.execute(1, 2, ExecuteEnd::NoCommit, vec![insert(b, 2)]);
    assert_eq!(idle.state, TransactionState::Open, "{idle:?}");
    let coordinator = &mut cluster.nodes.get_mut(&1).expect("node").coordinator;
    coordinator.drain();
    assert!(coordinator.has_undecided_transactions());
    let refused = cluster.execute(1, 3, ExecuteEnd::Commit, vec![insert(c, 3)]);
    assert_eq!(refused.state, TransactionState::Aborted, "{refused:?}");
    assert_eq!(refused.error.as_ref().map(|e| e.ndb_code), Some(270));
    // The open transaction goes on to its commit.
    let committed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![]);
    assert_eq!(
        committed.state,
        TransactionState::Committed,
        "{committed:?}"
    );
    cluster.quiesce();
    let coordinator = &mut cluster.nodes.get_mut(&1).expect("node").coordinator;
    assert!(
        coordinator.has_undecided_transactions(),
        "transaction 2 is open"
    );
    let mut out = Vec::new();
    coordinator.close(&mut out);
    cluster.send(1, out);
    let Message::Executed(aborted) = cluster.until_answer() else {
        panic!("expected Executed");
    };
    assert_eq!(aborted.transaction, 2);
    assert_eq!(aborted.state, TransactionState::Aborted);
    assert_eq!(aborted.error.as_ref().map(|e| e.ndb_code), Some(270));
    cluster.open.remove(&(1, 2));
    cluster.quiesce();
    let coordinator = &cluster.nodes[&1].coordinator;
    assert!(!coordinator.has_undecided_transactions());
    cluster.assert_idle();
    for node in [1, 2] {
        assert_eq!(cluster.committed_rows(node), vec![(i64::from(a), Some(1))]);
    }
}

/// A scan whose fragment has not answered yet (its replica is cut off,
/// say) is the cluster's wait, not the API's: the inactivity timer leaves
/// the transaction alone. Once the rows are back and the API does not ask
/// for more, the transaction is idle, and the timer aborts it.
#[test]
fn a_scan_waiting_for_rows_is_not_an_idle_transaction() {
    let config = CoordinatorConfig {
        inactive_timeout_ms: 1_000,
        ..CoordinatorConfig::default()
    };
    let mut cluster = Cluster::new(true, config);
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    cluster.tick(100);
    cluster.send(
        API,
        vec![(
            1,
            Message::ScanOpen(Box::new(ScanOpen {
                transaction: 2,
                scan: 1,
                table: TABLE,
                columns: vec![0, 1],
                mode: OperationKind::ReadCommitted,
                partition: Some(0),
                batch_rows: 1,
                batch_bytes: 1 << 16,
                start: true,
                ..ScanOpen::default()
            })),
        )],
    );
    // The coordinator passes the scan on (after the acknowledgement of
    // the insert); the fragment's answer is held.
    while cluster
        .links
        .get(&(API, 1))
        .is_some_and(|queue| !queue.is_empty())
    {
        cluster.deliver_from(API, 1);
    }
    assert!(
        cluster
            .links
            .values()
            .flatten()
            .any(|m| matches!(m, Message::FragmentScanOpen(_))),
        "the scan went on to its fragment"
    );
    cluster.tick(5_000);
    let to_api = cluster.links.get(&(1, API)).cloned().unwrap_or_default();
    assert!(
        !to_api.iter().any(|m| matches!(m, Message::Executed(_))),
        "a waiting scan was timed out: {to_api:?}"
    );
    cluster.quiesce();
    assert!(
        cluster
            .answers
            .drain(..)
            .any(|m| matches!(m, Message::ScanRows(r) if r.error.is_none())),
        "the scan's rows came"
    );
    // Now the API is due to act, and does not.
    cluster.tick(6_100);
    cluster.quiesce();
    let aborted = cluster.answers.drain(..).find_map(|m| match m {
        Message::Executed(executed) => Some(executed),
        _ => None,
    });
    let aborted = aborted.expect("the idle transaction was aborted");
    assert_eq!(aborted.error.as_ref().map(|e| e.ndb_code), Some(266));
    cluster.assert_idle();
}

/// With the timeout at 0 (never), an idle transaction stays open.
#[test]
fn an_inactive_timeout_of_zero_never_aborts() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    cluster.tick(0);
    let idle = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![insert(a, 1)]);
    assert_eq!(idle.state, TransactionState::Open);
    cluster.tick(u64::from(u32::MAX) * 10);
    cluster.quiesce();
    assert!(cluster.answers.is_empty());
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, Vec::new());
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
}

/// A request that continues a transaction the coordinator never had is
/// refused, and nothing of it runs; rolling it back is no error.
#[test]
fn continuing_an_unknown_transaction_is_refused() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let refused = cluster.execute_with(1, 5, false, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(refused.state, TransactionState::Aborted);
    assert_eq!(refused.error.as_ref().map(|e| e.ndb_code), Some(4350));
    // A rollback of it is what the API asked for: a plain abort (as after
    // a refused scan open, which leaves nothing at the coordinator).
    let rolled_back = cluster.execute_with(1, 6, false, ExecuteEnd::Rollback, Vec::new());
    assert_eq!(rolled_back.state, TransactionState::Aborted);
    assert!(rolled_back.error.is_none(), "{rolled_back:?}");
    cluster.assert_idle();
    assert!(cluster.committed_rows(1).is_empty());
}

/// An API that gives up on a batch still running (a client timeout, a
/// dropped transaction) rolls it back: the coordinator aborts at once and
/// the locks the batch took are freed.
#[test]
fn a_rollback_during_a_running_batch_aborts_it() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    let holder = cluster.execute(
        1,
        2,
        ExecuteEnd::NoCommit,
        vec![read(a, OperationKind::ReadExclusive)],
    );
    assert_eq!(holder.state, TransactionState::Open);
    // Transaction 3 inserts b, then waits for a's lock; its API rolls back.
    let execute = |start, end, operations| {
        Message::Execute(Execute {
            transaction: 3,
            start,
            end,
            operations,
        })
    };
    cluster.send(
        API,
        vec![
            (
                2,
                execute(true, ExecuteEnd::Commit, vec![insert(b, 6), update(a, 5)]),
            ),
            (2, execute(false, ExecuteEnd::Rollback, Vec::new())),
        ],
    );
    let Message::Executed(rolled_back) = cluster.until_answer() else {
        panic!("expected Executed");
    };
    assert_eq!(rolled_back.transaction, 3);
    assert_eq!(
        rolled_back.state,
        TransactionState::Aborted,
        "{rolled_back:?}"
    );
    let released = cluster.execute(1, 2, ExecuteEnd::Commit, Vec::new());
    assert_eq!(released.state, TransactionState::Committed);
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(1), vec![(i64::from(a), Some(1))]);
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(a), Some(1))]);
}

/// Opens a scan of partition 0 in `transaction` at coordinator 1 and lets
/// it run until nothing moves; returns the ScanRows the API received.
fn scan_partition_0(cluster: &mut Cluster, transaction: u64, mode: OperationKind) -> Vec<Message> {
    let start = !cluster.open.contains(&(1, transaction));
    cluster.send(
        API,
        vec![(
            1,
            Message::ScanOpen(Box::new(ScanOpen {
                transaction,
                scan: 1,
                table: TABLE,
                columns: vec![0, 1],
                mode,
                partition: Some(0),
                batch_rows: 16,
                batch_bytes: 1 << 16,
                start,
                ..ScanOpen::default()
            })),
        )],
    );
    cluster.quiesce();
    cluster.answers.drain(..).collect()
}

#[test]
fn a_commit_while_a_locking_scan_of_the_fragment_waits_keeps_the_write() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let (locked, written) = (cluster.key_in(0, 0), cluster.key_in(0, 1));
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(locked, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    // Transaction 2 holds the lock of one row of partition 0.
    let holder = cluster.execute(
        1,
        2,
        ExecuteEnd::NoCommit,
        vec![read(locked, OperationKind::ReadExclusive)],
    );
    assert_eq!(holder.state, TransactionState::Open);
    // Transaction 3 writes a row of partition 0, then scans the partition
    // with locks: the scan waits at the held row on the primary (node 1).
    let writer = cluster.execute(1, 3, ExecuteEnd::NoCommit, vec![insert(written, 30)]);
    assert_eq!(writer.state, TransactionState::Open, "{writer:?}");
    let received = scan_partition_0(&mut cluster, 3, OperationKind::ReadExclusive);
    assert!(
        received
            .iter()
            .all(|m| matches!(m, Message::ScanRows(r) if !r.finished)),
        "the scan waits: {received:?}"
    );
    // Transaction 3 commits while its scan still waits there.
    let committed = cluster.execute(1, 3, ExecuteEnd::Commit, Vec::new());
    assert_eq!(
        committed.state,
        TransactionState::Committed,
        "{committed:?}"
    );
    assert_eq!(committed.error, None);
    // Both replicas hold the committed write, and the primary kept no lock
    // of transaction 3: the holder ends, and nothing is left anywhere.
    let expected = {
        let mut rows = vec![(i64::from(locked), Some(1)), (i64::from(written), Some(30))];
        rows.sort_unstable();
        rows
    };
    assert_eq!(cluster.committed_rows(1), expected, "the primary");
    assert_eq!(cluster.committed_rows(2), expected, "the backup");
    let released = cluster.execute(1, 2, ExecuteEnd::Commit, Vec::new());
    assert_eq!(released.state, TransactionState::Committed);
    cluster.assert_idle();
    // The written row takes a new lock at once: none was orphaned.
    let updated = cluster.execute(2, 4, ExecuteEnd::Commit, vec![update(written, 31)]);
    assert_eq!(updated.state, TransactionState::Committed, "{updated:?}");
    cluster.assert_idle();
}

#[test]
fn a_table_dropped_under_a_unique_lookup_aborts_the_transaction() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(
        1,
        1,
        ExecuteEnd::Commit,
        vec![insert_coded(a, 1, Some(100))],
    );
    assert_eq!(executed.state, TransactionState::Committed);
    // A read by unique key: its lookup of the index row goes out first.
    cluster.send(
        API,
        vec![(
            1,
            Message::Execute(Execute {
                transaction: 2,
                start: true,
                end: ExecuteEnd::Commit,
                operations: vec![by_code(OperationKind::ReadShared, 100)],
            }),
        )],
    );
    let lookup_confirmed = |cluster: &Cluster| {
        cluster.links.iter().any(|((_, to), queue)| {
            *to == 1 && queue.iter().any(|m| matches!(m, Message::KeyConfirm(_)))
        })
    };
    while !lookup_confirmed(&cluster) {
        assert!(cluster.deliver_one(), "the lookup was never confirmed");
    }
    // The coordinator installs a state without the table before the
    // lookup's answer reaches it.
    let mut state = cluster_state(true);
    state.version += 1;
    state.schema_version += 1;
    state.tables.clear();
    let mut routing = Routing::new();
    assert!(routing.install(&state).is_empty());
    let mut out = Vec::new();
    let node = cluster.nodes.get_mut(&1).expect("node 1");
    node.coordinator.install(&routing, &mut out);
    cluster.send(1, out);
    let Message::Executed(executed) = cluster.until_answer() else {
        panic!("expected Executed");
    };
    assert_eq!(executed.transaction, 2);
    assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
    assert_eq!(executed.error.as_ref().map(|e| e.ndb_code), Some(723));
    cluster.quiesce();
    for data_node in cluster.nodes.values() {
        assert_eq!(data_node.coordinator.open_transactions(), 0);
        assert_eq!(data_node.query_handler.open_work(), 0);
    }
}

#[test]
fn work_whose_first_step_failed_in_the_engine_commits_as_nothing() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    for id in 0..4 {
        let executed = cluster.execute(
            1,
            1,
            ExecuteEnd::Commit,
            vec![insert(cluster.key_in(0, id), 1)],
        );
        assert_eq!(executed.state, TransactionState::Committed);
    }
    // Committed-read scans of partition 0, one row a batch, hold every
    // engine scan of its primary (the engine allows 16).
    for transaction in 10..26 {
        cluster.send(
            API,
            vec![(
                1,
                Message::ScanOpen(Box::new(ScanOpen {
                    transaction,
                    scan: 1,
                    table: TABLE,
                    columns: vec![0, 1],
                    mode: OperationKind::ReadCommitted,
                    partition: Some(0),
                    batch_rows: 1,
                    batch_bytes: 1 << 16,
                    start: true,
                    ..ScanOpen::default()
                })),
            )],
        );
        cluster.quiesce();
        let Some(Message::ScanRows(rows)) = cluster.answers.pop_front() else {
            panic!("expected the first batch");
        };
        assert!(!rows.finished && rows.error.is_none(), "{rows:?}");
    }
    // A locking scan then fails before the engine begins its transaction
    // (488): the query handler must not keep work for it, and the commit
    // that follows has nothing to commit there.
    let received = scan_partition_0(&mut cluster, 3, OperationKind::ReadShared);
    let [Message::ScanRows(rows)] = received.as_slice() else {
        panic!("expected one failed batch, got {received:?}");
    };
    assert_eq!(
        rows.error.as_ref().map(|e| e.ndb_code),
        Some(488),
        "{rows:?}"
    );
    let committed = cluster.execute(1, 3, ExecuteEnd::Commit, Vec::new());
    assert_eq!(
        committed.state,
        TransactionState::Committed,
        "{committed:?}"
    );
    for transaction in 10..26 {
        let ended = cluster.execute(1, transaction, ExecuteEnd::Commit, Vec::new());
        assert_eq!(ended.state, TransactionState::Committed, "{ended:?}");
    }
    cluster.assert_idle();
}

#[test]
fn a_scan_opened_just_before_the_commit_leaves_nothing_when_the_commit_overtakes_it() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let written = cluster.key_in(0, 0);
    // Transaction 1 writes partition 0 (primary node 1, backup node 2).
    let executed = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![insert(written, 1)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    // It opens a locking scan of the partition and commits at once.
    cluster.send(
        API,
        vec![
            (
                1,
                Message::ScanOpen(Box::new(ScanOpen {
                    transaction: 1,
                    scan: 1,
                    table: TABLE,
                    columns: vec![0, 1],
                    mode: OperationKind::ReadShared,
                    partition: Some(0),
                    batch_rows: 16,
                    batch_bytes: 1 << 16,
                    ..ScanOpen::default()
                })),
            ),
            (
                1,
                Message::Execute(Execute {
                    transaction: 1,
                    start: false,
                    end: ExecuteEnd::Commit,
                    operations: Vec::new(),
                }),
            ),
        ],
    );
    cluster.deliver_from(API, 1);
    cluster.deliver_from(API, 1);
    // The coordinator's scan open to the primary (its own node) is still
    // on its way when the commit, which goes round through the backup,
    // reaches the primary.
    assert!(
        matches!(
            cluster.links[&(1, 1)].front(),
            Some(Message::FragmentScanOpen(_))
        ),
        "{:?}",
        cluster.links[&(1, 1)]
    );
    cluster.deliver_from(1, 2);
    cluster.deliver_from(2, 1);
    let answer = loop {
        let Message::Executed(executed) = cluster.until_answer() else {
            continue;
        };
        break executed;
    };
    assert_eq!(answer.state, TransactionState::Committed, "{answer:?}");
    // The scan that opened after the commit holds nothing once the
    // transaction is over.
    cluster.assert_idle();
    assert_eq!(
        cluster.committed_rows(1),
        vec![(i64::from(written), Some(1))]
    );
    assert_eq!(
        cluster.committed_rows(2),
        vec![(i64::from(written), Some(1))]
    );
}

#[test]
#[should_panic(expected = "while one of its operations waits for a lock")]
fn a_commit_reaching_work_with_a_waiting_operation_stops_the_node() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    let holder = cluster.execute(
        1,
        2,
        ExecuteEnd::NoCommit,
        vec![read(a, OperationKind::ReadExclusive)],
    );
    assert_eq!(holder.state, TransactionState::Open);
    // Transaction 3's update waits for the lock on the primary (node 1).
    cluster.send(
        API,
        vec![(
            1,
            Message::Execute(Execute {
                transaction: 3,
                start: true,
                end: ExecuteEnd::NoCommit,
                operations: vec![update(a, 5)],
            }),
        )],
    );
    cluster.quiesce();
    let waiting = cluster
        .steps
        .iter()
        .rev()
        .find_map(|step| match &step.delivered {
            Message::KeyRequest(request) if step.to == 1 => Some(request.transaction),
            _ => None,
        })
        .expect("the update reached the primary");
    // A Commit no coordinator would send yet: the node must stop rather
    // than commit around the waiting update.
    let mut out = Vec::new();
    let node = cluster.nodes.get_mut(&1).expect("node 1");
    node.query_handler.on_message(
        0,
        Message::Commit(protocol::Phase {
            transaction: waiting,
            coordinator: 1,
            table: TABLE,
            fragment: 0,
            chain: Vec::new(),
            api: protocol::NO_API,
            client: 0,
            epoch: 1,
        }),
        &mut out,
    );
}

/// A commit closes the transaction's open scans; a `ScanNext` that still
/// comes for one of them is answered with NDB's 4120 ("Scan already
/// complete") for each fragment asked, not left unanswered until the
/// client's deadline.
#[test]
fn a_scan_next_after_the_commit_is_answered_scan_already_complete() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let operations: Vec<Operation> = (0..10).map(|id| insert(id, i64::from(id) * 10)).collect();
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, operations);
    assert_eq!(executed.state, TransactionState::Committed);
    cluster.send(
        API,
        vec![(
            2,
            Message::ScanOpen(Box::new(ScanOpen {
                transaction: 2,
                start: true,
                scan: 1,
                table: TABLE,
                columns: vec![0, 1],
                mode: OperationKind::ReadShared,
                batch_rows: 2,
                batch_bytes: 1 << 16,
                ..ScanOpen::default()
            })),
        )],
    );
    let fragment = loop {
        let Message::ScanRows(rows) = cluster.until_answer() else {
            panic!("expected rows");
        };
        if !rows.finished {
            break rows.fragment;
        }
    };
    // The other fragment's first batch is not asked for again.
    cluster.quiesce();
    cluster.answers.clear();
    let executed = cluster.execute(2, 2, ExecuteEnd::Commit, Vec::new());
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.quiesce();
    cluster.answers.clear();
    cluster.send(
        API,
        vec![(
            2,
            Message::ScanNext(ScanNext {
                transaction: 2,
                scan: 1,
                fragments: vec![fragment],
                coordinator: 0,
            }),
        )],
    );
    cluster.quiesce();
    let answers: Vec<Message> = cluster.answers.drain(..).collect();
    let [Message::ScanRows(rows)] = answers.as_slice() else {
        panic!("expected one ScanRows, got {answers:?}");
    };
    assert_eq!((rows.transaction, rows.scan), (2, 1));
    assert_eq!(rows.fragment, fragment);
    assert!(rows.finished);
    assert_eq!(rows.rows, 0);
    let error = rows.error.as_ref().expect("an error, not an end of rows");
    assert_eq!(error.ndb_code, 4120, "{error:?}");
    cluster.assert_idle();
}

// ---- node failures ----

/// The error code of an answer, or 0.
fn error_code(message: &Message) -> u16 {
    match message {
        Message::Executed(executed) => executed.error.as_ref().map_or(0, |e| e.ndb_code),
        Message::ScanRows(rows) => rows.error.as_ref().map_or(0, |e| e.ndb_code),
        Message::KeyRefuse(refuse) => refuse.error.ndb_code,
        other => panic!("not an answer: {other:?}"),
    }
}

#[test]
fn a_backup_dying_while_a_transaction_is_open_aborts_it_with_4010_and_leaves_nothing() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    // Partition 0: primary 1, backup 2.
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    cluster.fail_node(2);
    let answer = cluster.until_answer();
    let Message::Executed(executed) = &answer else {
        panic!("expected Executed, got {answer:?}");
    };
    assert_eq!(executed.state, TransactionState::Aborted);
    assert_eq!(error_code(&answer), 4010, "{answer:?}");
    cluster.open.clear();
    cluster.assert_idle();
    assert!(cluster.committed_rows(1).is_empty());
}

#[test]
fn a_primary_dying_while_a_transaction_is_open_frees_the_backups_lock() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    // Partition 1: primary 2, backup 1; coordinator 1.
    let b = cluster.key_in(1, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(b, 1)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    let executed = cluster.execute(1, 2, ExecuteEnd::NoCommit, vec![update(b, 2)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    cluster.fail_node(2);
    let answer = cluster.until_answer();
    assert_eq!(error_code(&answer), 4010, "{answer:?}");
    cluster.open.clear();
    cluster.assert_idle();
    // The row is not locked: the survivor, now its primary, updates it.
    let executed = cluster.execute(1, 3, ExecuteEnd::Commit, vec![update(b, 3)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(1), vec![(i64::from(b), Some(3))]);
}

#[test]
fn a_scan_of_a_fragment_on_a_node_that_dies_ends_with_4010() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let b = cluster.key_in(1, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(b, 1)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    // The commit's acknowledgement and complete phase go first.
    cluster.quiesce();
    // A committed-read scan of partition 1 from coordinator 1 reads the
    // primary, node 2; it dies before it answers.
    cluster.send(
        API,
        vec![(
            1,
            Message::ScanOpen(Box::new(ScanOpen {
                transaction: 2,
                scan: 1,
                table: TABLE,
                columns: vec![0, 1],
                mode: OperationKind::ReadCommitted,
                partition: Some(1),
                batch_rows: 16,
                batch_bytes: 1 << 16,
                start: true,
                ..ScanOpen::default()
            })),
        )],
    );
    cluster.deliver_from(API, 1);
    assert!(
        cluster
            .links
            .get(&(1, 2))
            .is_some_and(|queue| !queue.is_empty()),
        "the scan went to node 2"
    );
    cluster.fail_node(2);
    let answer = cluster.until_answer();
    let Message::ScanRows(rows) = &answer else {
        panic!("expected ScanRows, got {answer:?}");
    };
    assert!(rows.finished);
    assert_eq!(error_code(&answer), 4010, "{answer:?}");
    // The API ends its transaction.
    let executed = cluster.execute_with(1, 2, false, ExecuteEnd::Rollback, Vec::new());
    assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
    cluster.assert_idle();
}

/// A scan's next batch asked of a node that died and is back as a new
/// incarnation, before the coordinator's node has installed the state
/// that removes the old one (its wiring hands the request to the new
/// connection), is refused as temporary (1204, the retry routes afresh),
/// not answered "unknown scan" (4000), which no client expects (seed
/// 660514 of the 3x3 crash runs).
#[test]
fn a_scan_next_reaching_a_restarted_incarnation_is_refused_as_temporary() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    // A locking scan.
    let rows = cluster.scan_partition_1_a_row_a_batch(OperationKind::ReadShared);
    assert!(rows.error.is_none(), "{rows:?}");
    cluster.quiesce();
    assert!(cluster.answers.is_empty(), "{:?}", cluster.answers);
    // Node 2 dies and starts again as incarnation 3, empty and not
    // admitted yet; node 1 has installed nothing since.
    cluster.nodes.remove(&2).expect("up");
    cluster.links.retain(|(from, to), _| *from != 2 && *to != 2);
    cluster.nodes.insert(
        2,
        DataNode {
            coordinator: Coordinator::new(2, 3, CoordinatorConfig::default()),
            query_handler: QueryHandler::new(2, engine_config()).expect("engine"),
        },
    );
    cluster.send(
        API,
        vec![(
            1,
            Message::ScanNext(ScanNext {
                transaction: 2,
                scan: 1,
                fragments: vec![1],
                coordinator: 0,
            }),
        )],
    );
    cluster.deliver_from(API, 1);
    // The node's wiring gives a data node's ScanNext to its query handler
    // (this harness offers every message to the coordinator first, whose
    // empty routing would take the sender for an API node).
    let next = cluster
        .links
        .get_mut(&(1, 2))
        .and_then(VecDeque::pop_front)
        .expect("the coordinator asked node 2");
    assert!(matches!(next, Message::ScanNext(_)), "{next:?}");
    let mut out = Vec::new();
    let unhandled = cluster.query_handler(2).on_message(0, next, &mut out);
    assert!(unhandled.is_none());
    cluster.send(2, out);
    cluster.quiesce();
    let answers: Vec<Message> = cluster.answers.drain(..).collect();
    let [answer @ Message::ScanRows(rows)] = answers.as_slice() else {
        panic!("expected one ScanRows, got {answers:?}");
    };
    assert_eq!((rows.transaction, rows.scan, rows.fragment), (2, 1, 1));
    assert!(rows.finished);
    assert_eq!(error_code(answer), 1204, "{answer:?}");
    assert_eq!(
        cluster
            .query_handler(2)
            .counters()
            .scan_nexts_refused_as_non_member,
        1
    );
    // The state without the old incarnation aborts the transaction (it
    // locked rows there) with 4010.
    cluster.fail_node(2);
    let answer = cluster.until_answer();
    assert_eq!(error_code(&answer), 4010, "{answer:?}");
    cluster.open.clear();
    cluster.assert_idle();
}

#[test]
fn a_node_that_is_not_a_member_refuses_new_transactions_with_4035() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    // Node 1 has not installed any state yet.
    let mut fresh = Coordinator::new(1, 2, CoordinatorConfig::default());
    let mut out = Vec::new();
    fresh.on_message(
        API,
        Message::Execute(Execute {
            transaction: 7,
            start: true,
            end: ExecuteEnd::Commit,
            operations: vec![insert(cluster.key_in(0, 0), 1)],
        }),
        &mut out,
    );
    let [(to, answer)] = out.as_slice() else {
        panic!("one answer expected: {out:?}");
    };
    assert_eq!(*to, API);
    assert_eq!(error_code(answer), 4035, "{answer:?}");
    // A replica that is not a member refuses a forwarded write
    // temporarily (1204), not with 723.
    let mut query_handler = QueryHandler::new(1, engine_config()).expect("engine");
    query_handler.install(&Routing::new());
    let mut out = Vec::new();
    let request = KeyRequest {
        transaction: 9,
        coordinator: 2,
        operation: 0,
        table: TABLE,
        fragment: 0,
        kind: OperationKind::Insert,
        key: key(1),
        values: row(1, 1),
        columns: Vec::new(),
        ignore_error: false,
        chain: Chain::default(),
        planned: 0,
        before: None,
    };
    assert!(
        query_handler
            .on_message(0, Message::KeyRequest(request), &mut out)
            .is_none()
    );
    let [(_, Message::KeyRefuse(refuse))] = out.as_slice() else {
        panic!("a refusal expected: {out:?}");
    };
    assert_eq!(refuse.error.ndb_code, 1204, "{refuse:?}");
    cluster.assert_idle();
}

#[test]
fn a_primary_dying_after_it_committed_leaves_the_backup_completed() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    // Partition 0: primary 1, backup 2. Partition 1: primary 2, backup 1.
    let (a, b) = (cluster.key_in(0, 0), cluster.key_in(1, 0));
    let executed = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![insert(a, 1), insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    cluster.queue_end(1, 1, ExecuteEnd::Commit);
    // Commit goes backwards: partition 0's to node 2, partition 1's to
    // node 1, which prepares and passes it on to node 2.
    cluster.deliver_from(API, 1);
    cluster.deliver_from(1, 1);
    // Node 2 prepares partition 0, then commits partition 1 as its primary.
    cluster.deliver_from(1, 2);
    cluster.deliver_from(1, 2);
    // Node 1 commits partition 0 as its primary (its Committed stays on
    // the way), and the coordinator hears that partition 1 committed.
    cluster.deliver_from(2, 1);
    cluster.deliver_from(2, 1);
    assert!(
        matches!(cluster.steps.last(), Some(step) if matches!(step.delivered, Message::Committed(_))),
        "the coordinator heard partition 1's Committed"
    );
    // Node 2, the primary that committed partition 1, dies: node 1 only
    // prepared partition 1 and holds its lock until it hears Complete.
    cluster.fail_node(2);
    let answer = cluster.until_answer();
    let Message::Executed(executed) = &answer else {
        panic!("expected Executed, got {answer:?}");
    };
    assert_eq!(executed.state, TransactionState::Committed, "{answer:?}");
    cluster.open.clear();
    cluster.assert_idle();
    let mut expected = vec![(i64::from(a), Some(1)), (i64::from(b), Some(2))];
    expected.sort_unstable();
    assert_eq!(cluster.committed_rows(1), expected);
}

#[test]
fn a_rollback_while_the_coordinator_aborts_for_a_node_failure_is_answered_once_without_error() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    // Partition 0: primary 1, backup 2. The transaction writes there, so
    // node 2's failure aborts it, and the abort waits for node 1's answer.
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    cluster.fail_node(2);
    // The API rolls back before the abort's Aborted came back.
    cluster.queue_end(1, 1, ExecuteEnd::Rollback);
    cluster.deliver_from(API, 1);
    assert!(
        cluster.answers.is_empty(),
        "the rollback must wait for the abort, not be refused: {:?}",
        cluster.answers
    );
    let answer = cluster.until_answer();
    let Message::Executed(executed) = &answer else {
        panic!("expected Executed, got {answer:?}");
    };
    assert_eq!(executed.state, TransactionState::Aborted, "{answer:?}");
    assert_eq!(error_code(&answer), 0, "the rollback happened: {answer:?}");
    cluster.open.clear();
    cluster.assert_idle();
    assert!(
        cluster.answers.is_empty(),
        "one answer: {:?}",
        cluster.answers
    );
    assert!(cluster.committed_rows(1).is_empty());
}

#[test]
fn a_coordinator_dying_during_its_commit_is_taken_over_and_the_transaction_commits_whole() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    // Partition 0: primary 1, backup 2; partition 1: primary 2, backup 1.
    let a = cluster.key_in(0, 0);
    let b = cluster.key_in(1, 0);
    let executed = cluster.execute(2, 1, ExecuteEnd::NoCommit, vec![insert(a, 1), insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    cluster.queue_end(2, 1, ExecuteEnd::Commit);
    // Coordinator 2 sends Commit along both chains, backwards: partition
    // 1's reaches its backup, node 1, which marks it committing; then node
    // 2 dies, before partition 0's Commit (to itself, its backup) went on.
    cluster.deliver_from(API, 2);
    cluster.deliver_from(2, 1);
    cluster.fail_node(2);
    cluster.take_over(1, 2);
    cluster.quiesce();
    // Node 1 committed both halves: partition 1 because a replica was
    // committing it, partition 0 with it, though it had only prepared.
    let mut both = vec![(i64::from(a), Some(1)), (i64::from(b), Some(2))];
    both.sort_unstable();
    assert_eq!(cluster.committed_rows(1), both);
    let counters = cluster.nodes[&1].coordinator.takeover_counters();
    assert_eq!(
        (counters.committed, counters.aborted),
        (1, 0),
        "{counters:?}"
    );
    cluster.open.clear();
    cluster.answers.clear();
    cluster.assert_idle();
}

#[test]
fn a_coordinator_dying_before_its_commit_is_taken_over_and_its_locks_are_freed() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let b = cluster.key_in(1, 0);
    let executed = cluster.execute(2, 1, ExecuteEnd::NoCommit, vec![insert(a, 1), insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    cluster.fail_node(2);
    cluster.take_over(1, 2);
    cluster.quiesce();
    cluster.assert_aborted_by_takeover_and_free(a, b);
}

impl Cluster {
    /// `node` (failed before) starts again as incarnation `incarnation`,
    /// empty: the cluster admits it as a starting member, and it asks for
    /// its copies (the messages stay in flight).
    fn restart_node(&mut self, node: NodeId, incarnation: u64) {
        assert!(!self.nodes.contains_key(&node), "node {node} is still up");
        let member = Member { node, incarnation };
        let mut state = cluster_state(self.read_backup);
        state.members.retain(|m| self.nodes.contains_key(&m.node));
        state.members.push(member);
        state.starting = vec![member];
        self.install_state(state);
    }

    /// The starting `node` copied everything: it becomes a started member.
    fn node_started(&mut self, node: NodeId, incarnation: u64) {
        let member = Member { node, incarnation };
        let mut state = cluster_state(self.read_backup);
        state
            .members
            .retain(|m| self.nodes.contains_key(&m.node) && m.node != node);
        state.members.push(member);
        state.recovered = vec![member];
        self.install_state(state);
    }

    fn install_state(&mut self, mut state: ClusterState) {
        self.version += 1;
        state.version = self.version;
        for member in &state.members {
            self.nodes.entry(member.node).or_insert_with(|| {
                let mut coordinator = Coordinator::new(
                    member.node,
                    member.incarnation,
                    CoordinatorConfig::default(),
                );
                coordinator.set_commit_epoch(Some(TEST_EPOCH), &mut Vec::new());
                DataNode {
                    coordinator,
                    query_handler: QueryHandler::new(member.node, engine_config()).expect("engine"),
                }
            });
        }
        let mut routing = Routing::new();
        assert!(routing.install(&state).is_empty());
        let nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        for node in nodes {
            let data_node = self.nodes.get_mut(&node).expect("live");
            data_node.query_handler.install(&routing);
            let mut out = Vec::new();
            data_node.query_handler.answer_queued_queries(&mut out);
            data_node.query_handler.start_copies(0, &mut out);
            data_node.coordinator.install(&routing, &mut out);
            self.send(node, out);
        }
        self.routing = routing;
    }
}

#[test]
fn a_scan_whose_coordinator_came_back_as_a_new_incarnation_is_closed() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    // A committed-read scan: it holds no locks, only the scan.
    cluster.scan_partition_1_a_row_a_batch(OperationKind::ReadCommitted);
    cluster.quiesce();
    assert_eq!(cluster.query_handler(2).engine().scans_in_use(), 1);
    // Node 1 dies and is back as incarnation 5, a started member, in the
    // next state node 2 installs: node 2 never saw one without node 1.
    cluster.nodes.remove(&1).expect("up");
    cluster.links.retain(|(from, to), _| *from != 1 && *to != 1);
    cluster.node_started(1, 5);
    cluster.quiesce();
    assert_eq!(
        cluster.query_handler(2).engine().scans_in_use(),
        0,
        "the old incarnation's scan is closed"
    );
    cluster.answers.clear();
    cluster.open.clear();
    cluster.assert_idle();
}

#[test]
fn a_restarted_node_copies_its_fragments_while_writes_go_on_and_ends_identical() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let keys: Vec<i32> = (0..8)
        .map(|skip| cluster.key_in(0, skip))
        .chain((0..8).map(|skip| cluster.key_in(1, skip)))
        .collect();
    let executed = cluster.execute(
        1,
        1,
        ExecuteEnd::Commit,
        keys.iter().map(|k| insert(*k, 1)).collect(),
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    cluster.fail_node(2);
    cluster.quiesce();
    // While node 2 is down, a transaction updates a row of partition 0 and
    // holds it open.
    let held = keys[0];
    let executed = cluster.execute(1, 2, ExecuteEnd::NoCommit, vec![update(held, 7)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    // Node 2 comes back empty. Its copy of partition 0 waits until that
    // transaction, which cannot reach node 2, has ended at node 1; the
    // copy of partition 1 waits behind it.
    cluster.restart_node(2, 3);
    cluster.quiesce();
    assert!(
        !cluster.nodes[&2]
            .query_handler
            .copy_status()
            .expect("starting")
            .done,
        "the copy waits for the transaction that bypassed node 2"
    );
    // Node 2 serves no read while it copies.
    assert!(cluster.nodes[&2].query_handler.is_copying(TABLE, 0));
    // A write planned without the starting node (an old state's plan) is
    // refused where it would have bypassed it.
    let mut out = Vec::new();
    let stale = KeyRequest {
        transaction: 99,
        coordinator: 1,
        operation: 0,
        table: TABLE,
        fragment: 0,
        kind: OperationKind::Update,
        key: key(keys[1]),
        values: row(keys[1], 5),
        columns: Vec::new(),
        ignore_error: false,
        chain: Chain::default(),
        planned: cluster.version,
        before: None,
    };
    let node_one = &mut cluster.nodes.get_mut(&1).expect("up").query_handler;
    assert!(
        node_one
            .on_message(0, Message::KeyRequest(stale), &mut out)
            .is_none()
    );
    let [(_, refusal @ Message::KeyRefuse(_))] = out.as_slice() else {
        panic!("expected a refusal, got {out:?}");
    };
    assert_eq!(error_code(refusal), 1204, "{refusal:?}");
    // More writes while the copy waits: a delete and an insert.
    let gone = keys[9];
    let fresh = cluster.key_in(1, 20);
    let executed = cluster.execute(
        1,
        3,
        ExecuteEnd::Commit,
        vec![delete(gone), insert(fresh, 4)],
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    let executed = cluster.execute(1, 2, ExecuteEnd::Commit, Vec::new());
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    let status = cluster.nodes[&2]
        .query_handler
        .copy_status()
        .expect("starting");
    assert!(status.done, "{status:?}");
    // The table's partitions, its unique index's (a hidden table with the
    // same partitions), and its auto-increment sequence's one.
    assert_eq!(status.fragments_copied, 2 * PARTITIONS + 1, "{status:?}");
    assert_eq!(
        status.fragments_to_copy, status.fragments_copied,
        "{status:?}"
    );
    let counters = cluster.nodes[&2].query_handler.counters();
    assert!(counters.writes_before_copy > 0, "{counters:?}");
    assert!(counters.rows_copied > 0, "{counters:?}");
    assert_eq!(
        cluster.nodes[&1]
            .query_handler
            .counters()
            .writes_missing_starting_replica,
        1
    );
    // Both replicas hold the same rows: the held update is there.
    let rows = cluster.committed_rows(1);
    assert_eq!(cluster.committed_rows(2), rows);
    assert!(rows.contains(&(i64::from(held), Some(7))), "{rows:?}");
    assert!(rows.contains(&(i64::from(fresh), Some(4))), "{rows:?}");
    assert!(
        !rows.iter().any(|(id, _)| *id == i64::from(gone)),
        "{rows:?}"
    );
    assert_eq!(cluster.nodes[&1].query_handler.copies_out(), 0);
    // Started, node 2 reads and coordinates; it stays last in the chains
    // (node 1 remains the primary of partition 1, which it took over).
    cluster.node_started(2, 3);
    assert!(!cluster.nodes[&2].query_handler.is_copying(TABLE, 1));
    let route = cluster.routing.table(TABLE).expect("table").clone();
    assert_eq!(cluster.routing.live_replicas(&route, 1), vec![1, 2]);
    let executed = cluster.execute(2, 4, ExecuteEnd::Commit, vec![update(keys[10], 9)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(2), cluster.committed_rows(1));
}

#[test]
fn a_starting_node_refuses_transactions_and_reads_and_a_write_routed_before_it_joined() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.fail_node(2);
    cluster.quiesce();
    let before_joining = cluster.version;
    cluster.restart_node(2, 3);
    // Its coordinator refuses new transactions while it copies (4035,
    // temporary), whatever the copy's progress.
    cluster.send(
        API,
        vec![(
            2,
            Message::Execute(Execute {
                transaction: 5,
                start: true,
                end: ExecuteEnd::Commit,
                operations: vec![read(a, OperationKind::ReadCommitted)],
            }),
        )],
    );
    // Only the API's link moves: the copy stays where it is.
    cluster.deliver_from(API, 2);
    cluster.deliver_from(2, API);
    let answer = cluster.answers.pop_front().expect("answered");
    assert_eq!(error_code(&answer), 4035, "{answer:?}");
    // A read that reaches a replica still copying is refused (1204), and
    // a write routed on a state from before it joined too, before it
    // creates any work there.
    let node_two = &mut cluster.nodes.get_mut(&2).expect("up").query_handler;
    assert!(node_two.is_copying(TABLE, 0));
    for (kind, planned) in [
        (OperationKind::ReadCommitted, before_joining + 1),
        (OperationKind::Insert, before_joining),
    ] {
        let mut out = Vec::new();
        let request = KeyRequest {
            transaction: 7,
            coordinator: 1,
            operation: 0,
            table: TABLE,
            fragment: 0,
            kind,
            key: key(a + 1),
            values: row(a + 1, 1),
            columns: Vec::new(),
            ignore_error: false,
            chain: Chain::default(),
            planned,
            before: None,
        };
        assert!(
            node_two
                .on_message(0, Message::KeyRequest(request), &mut out)
                .is_none()
        );
        let [(_, refusal @ Message::KeyRefuse(_))] = out.as_slice() else {
            panic!("expected a refusal, got {out:?}");
        };
        assert_eq!(error_code(refusal), 1204, "{kind:?}: {refusal:?}");
        assert_eq!(node_two.open_work(), 0);
    }
    assert_eq!(node_two.counters().reads_refused_while_copying, 1);
    assert_eq!(node_two.counters().writes_planned_before_joining, 1);
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(2), cluster.committed_rows(1));
}

/// A copy keeps to `NodeRecoveryCopyRowsPerSecond`: after each
/// acknowledged batch the copying node waits until its clock has passed
/// the time the rows sent so far use up, and reads the next batch at a
/// tick, so a restarted node takes the foreground's place only that often.
#[test]
fn a_copy_keeps_to_its_rate_between_batches() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let keys: Vec<i32> = (0..8).map(|skip| cluster.key_in(0, skip)).collect();
    let executed = cluster.execute(
        1,
        1,
        ExecuteEnd::Commit,
        keys.iter().map(|k| insert(*k, 1)).collect(),
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.fail_node(2);
    cluster.quiesce();
    // 1,000 rows/s: each batch of two rows uses up 2 ms of node 1's clock.
    let source = &mut cluster.nodes.get_mut(&1).expect("up").query_handler;
    source.set_copy_rows_per_second(1_000);
    source.set_copy_batch_rows(2);
    cluster.restart_node(2, 3);
    cluster.quiesce();
    let copied = |cluster: &Cluster| {
        cluster.nodes[&2]
            .query_handler
            .copy_status()
            .expect("starting")
            .done
    };
    let mut done_at = None;
    for now_ms in 1..=20 {
        let mut out = Vec::new();
        let source = &mut cluster.nodes.get_mut(&1).expect("up").query_handler;
        if source.next_deadline_ms().is_some_and(|at| at <= now_ms) {
            source.tick(now_ms, &mut out);
        }
        cluster.send(1, out);
        cluster.quiesce();
        if copied(&cluster) {
            done_at = Some(now_ms);
            break;
        }
    }
    // Eight rows at two per 2 ms: the fourth batch leaves at 6 ms at the
    // earliest.
    let done_at = done_at.expect("the copy ends");
    assert!(done_at >= 6, "the copy ended at {done_at} ms");
    let pauses = cluster.nodes[&1].query_handler.counters().copy_pauses;
    assert!(pauses >= 3, "{pauses} pauses");
    cluster.node_started(2, 3);
    cluster.quiesce();
    for node in [1, 2] {
        let rows = cluster.committed_rows(node);
        assert_eq!(rows.len(), keys.len(), "node {node}: {rows:?}");
    }
}

/// The cluster state keeps only the newest removed incarnation of each
/// node, so a president that died before finishing the takeover of an
/// older one leaves its transactions to a president that only hears of
/// the newer: taking over that one finishes every failed incarnation's
/// (seed 50318 of the 4x2 crash runs: node 4 failed twice, then the
/// president, and a copy waited forever for an old transaction).
#[test]
fn taking_over_a_nodes_newest_failed_incarnation_finishes_an_older_ones_transactions() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let b = cluster.key_in(1, 0);
    let executed = cluster.execute(2, 1, ExecuteEnd::NoCommit, vec![insert(a, 1), insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    // Incarnation 1 of node 2 fails and nobody takes it over; node 2
    // comes back as incarnation 3 and fails again.
    cluster.fail_node(2);
    cluster.quiesce();
    cluster.restart_node(2, 3);
    cluster.quiesce();
    cluster.fail_node(2);
    cluster.quiesce();
    cluster.take_over_incarnation(1, 2, 3);
    cluster.quiesce();
    cluster.assert_aborted_by_takeover_and_free(a, b);
}

impl Cluster {
    /// Node 1's takeover aborted one transaction, nothing is left behind,
    /// and rows `a` and `b` are free: node 1 inserts them itself.
    fn assert_aborted_by_takeover_and_free(&mut self, a: i32, b: i32) {
        let counters = self.nodes[&1].coordinator.takeover_counters();
        assert_eq!(
            (counters.committed, counters.aborted),
            (0, 1),
            "{counters:?}"
        );
        self.open.clear();
        self.answers.clear();
        self.assert_idle();
        assert!(self.committed_rows(1).is_empty());
        let executed = self.execute(1, 2, ExecuteEnd::Commit, vec![insert(a, 3), insert(b, 4)]);
        assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    }
}

/// A coordinator whose node holds no membership lease decides no commit
/// of its own: the others may have removed it and moved to a later epoch.
/// The commit waits, nothing goes to the replicas, and it goes out once
/// the lease is back.
#[test]
fn a_coordinator_without_a_membership_lease_decides_no_commit_until_it_has_one() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let opened = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![insert(a, 1)]);
    assert_eq!(opened.state, TransactionState::Open);
    let mut out = Vec::new();
    let coordinator = &mut cluster.nodes.get_mut(&1).expect("node 1").coordinator;
    coordinator.record_decisions(true);
    coordinator.set_lease(false, &mut out);
    assert!(out.is_empty(), "{out:?}");
    cluster.queue_end(1, 1, ExecuteEnd::Commit);
    cluster.quiesce();
    assert!(cluster.answers.is_empty(), "{:?}", cluster.answers);
    let coordinator = &mut cluster.nodes.get_mut(&1).expect("node 1").coordinator;
    assert!(coordinator.has_undecided_transactions());
    assert!(coordinator.take_decisions().is_empty());
    // Nothing committed anywhere meanwhile.
    for node in [1, 2] {
        assert!(cluster.committed_rows(node).is_empty(), "node {node}");
    }
    let coordinator = &mut cluster.nodes.get_mut(&1).expect("node 1").coordinator;
    coordinator.set_lease(true, &mut out);
    assert!(!out.is_empty(), "the commit goes out with the lease");
    let decided: Vec<u64> = coordinator.take_decisions().iter().map(|d| d.1).collect();
    assert_eq!(decided, vec![TEST_EPOCH]);
    cluster.send(1, out);
    match cluster.until_answer() {
        Message::Executed(executed) => {
            assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
        }
        other => panic!("expected Executed, got {other:?}"),
    }
    cluster.open.remove(&(1, 1));
    cluster.quiesce();
    for node in [1, 2] {
        assert_eq!(cluster.committed_rows(node), vec![(i64::from(a), Some(1))]);
    }
    cluster.assert_idle();
}

/// A replica without a membership lease (one cut off from the others, say)
/// refuses reads with 4035, which aborts the transaction even when the
/// read ignores errors (it says nothing about the row), and scans. It
/// takes writes that succeed, which reach every replica, but refuses the
/// failures of writes, which read the row (an update of a row it lacks
/// would answer 626 for a row the others may have inserted: the
/// simulator's seed 42996). A locked read that waited for its lock until
/// after the lease ended is refused too, and the abort frees the lock it
/// got.
#[test]
fn a_replica_without_a_membership_lease_refuses_reads_and_the_answers_of_writes() {
    let mut cluster = Cluster::new(true, CoordinatorConfig::default());
    // Partition 0's primary is node 1.
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    // The query handler runs at time 0 here: a lease until 0 has ended.
    cluster.query_handler(1).set_read_lease_until_ms(0);
    let not_member = schema::ErrorCode::NotMember.ndb_code().expect("has one");
    for ignore_error in [false, true] {
        let mut operation = read(a, OperationKind::ReadCommitted);
        operation.ignore_error = ignore_error;
        let executed = cluster.execute(
            1,
            2 + u64::from(ignore_error),
            ExecuteEnd::Commit,
            vec![operation],
        );
        assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
        assert_eq!(executed.error.map(|e| e.ndb_code), Some(not_member));
    }
    // An update of a row node 1 lacks would answer 626, ignored or not,
    // and an insert of the row it has 630: all are refused, and nothing
    // is left behind.
    let missing = cluster.key_in(0, 1);
    let mut ignored = update(missing, 7);
    ignored.ignore_error = true;
    let operations = [update(missing, 7), ignored, insert(a, 7)];
    for (transaction, operation) in (40..).zip(operations) {
        let executed = cluster.execute(2, transaction, ExecuteEnd::Commit, vec![operation]);
        assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
        assert_eq!(executed.error.map(|e| e.ndb_code), Some(not_member));
        cluster.assert_idle();
    }
    assert_eq!(
        cluster
            .query_handler(1)
            .counters()
            .reads_refused_without_lease,
        5
    );
    // An update that succeeds answers nothing about the row: it commits
    // on both replicas.
    let executed = cluster.execute(2, 4, ExecuteEnd::Commit, vec![update(a, 2)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    // Transaction 5 holds the row's lock (node 1 has its lease again);
    // transaction 6's locked read waits for it, and the lease ends meanwhile.
    cluster.query_handler(1).set_read_lease_until_ms(u64::MAX);
    let holder = cluster.execute(
        1,
        5,
        ExecuteEnd::NoCommit,
        vec![read(a, OperationKind::ReadExclusive)],
    );
    assert_eq!(holder.state, TransactionState::Open);
    cluster.send(
        API,
        vec![(
            1,
            Message::Execute(Execute {
                transaction: 6,
                start: true,
                end: ExecuteEnd::Commit,
                operations: vec![read(a, OperationKind::ReadShared)],
            }),
        )],
    );
    cluster.quiesce();
    assert!(
        cluster.answers.is_empty(),
        "transaction 6 waits for the lock"
    );
    cluster.query_handler(1).set_read_lease_until_ms(0);
    let released = cluster.execute(1, 5, ExecuteEnd::Rollback, Vec::new());
    assert_eq!(released.state, TransactionState::Aborted);
    let Message::Executed(executed) = cluster.until_answer() else {
        panic!("expected Executed");
    };
    assert_eq!(executed.transaction, 6);
    assert_eq!(executed.state, TransactionState::Aborted, "{executed:?}");
    assert_eq!(executed.error.map(|e| e.ndb_code), Some(not_member));
    cluster.assert_idle();
    assert_eq!(cluster.committed_rows(1), vec![(i64::from(a), Some(2))]);
    assert_eq!(cluster.committed_rows(2), vec![(i64::from(a), Some(2))]);
}

impl Cluster {
    /// Delivers every message in flight except those to the API.
    fn quiesce_but_answers(&mut self) {
        while let Some((&(from, to), _)) = self
            .links
            .iter()
            .find(|((_, to), queue)| *to != API && !queue.is_empty())
        {
            self.deliver_from(from, to);
        }
    }

    /// The messages the API received, with their senders, in order.
    fn api_deliveries(&self) -> Vec<(NodeId, Message)> {
        self.steps
            .iter()
            .filter(|step| step.to == API)
            .map(|step| (step.from, step.delivered.clone()))
            .collect()
    }
}

/// A coordinator that dies after its transaction committed everywhere,
/// with its answer still unsent: the takeover finds only the commit
/// markers the replicas keep until the API has its answer, and answers
/// the API itself (committed, no results), before it announces the
/// takeover done. The API's acknowledgement then frees the markers.
#[test]
fn a_commit_whose_coordinator_died_before_answering_is_told_by_the_takeover() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let b = cluster.key_in(1, 0);
    cluster.send(
        API,
        vec![(
            2,
            Message::Execute(Execute {
                transaction: 7,
                start: true,
                end: ExecuteEnd::Commit,
                operations: vec![insert(a, 1), insert(b, 2)],
            }),
        )],
    );
    cluster.quiesce_but_answers();
    assert!(
        cluster.links[&(2, API)]
            .iter()
            .any(|m| matches!(m, Message::Executed(e) if e.state == TransactionState::Committed)),
        "the answer waits on its way"
    );
    // Complete ended the work; only the markers remain.
    assert_eq!(cluster.query_handler(1).open_work(), 0);
    assert_eq!(cluster.query_handler(1).open_markers(), 1);
    cluster.fail_node(2);
    cluster.take_over(1, 2);
    cluster.quiesce();
    let deliveries = cluster.api_deliveries();
    assert_eq!(deliveries.len(), 2, "{deliveries:?}");
    match &deliveries[0] {
        (1, Message::Executed(executed)) => {
            assert_eq!(executed.transaction, 7);
            assert_eq!(executed.state, TransactionState::Committed);
        }
        other => panic!("expected node 1's committed answer, got {other:?}"),
    }
    assert_eq!(
        deliveries[1],
        (
            1,
            Message::TakeoverDone {
                failed_node: 2,
                failed_incarnation: 1
            }
        )
    );
    let counters = cluster.nodes[&1].coordinator.takeover_counters();
    assert_eq!(
        (
            counters.committed,
            counters.answered_committed,
            counters.announced
        ),
        (1, 1, 1),
        "{counters:?}"
    );
    cluster.assert_idle();
    assert_eq!(
        cluster.committed_rows(1),
        vec![
            (i64::from(a.min(b)), Some(if a < b { 1 } else { 2 })),
            (i64::from(a.max(b)), Some(if a < b { 2 } else { 1 }))
        ]
    );
}

/// Two takeovers of one node at once (an older incarnation's, whose
/// president died, and the newer one's): each finds the work of every
/// failed incarnation of the node, so the second finds the transaction
/// the first is finishing. It must not be announced done before that
/// transaction's answer: the API would take its commit as aborted (real
/// processes showed it, with the president and a coordinator killed at
/// once).
#[test]
fn a_takeover_is_announced_after_a_transaction_another_takeover_of_the_node_finishes() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let b = cluster.key_in(1, 0);
    let executed = cluster.execute(2, 7, ExecuteEnd::NoCommit, vec![insert(a, 1), insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Open);
    // The Commit reaches node 1 (it keeps a marker), and the coordinator
    // dies before the transaction is complete there.
    cluster.queue_end(2, 7, ExecuteEnd::Commit);
    while cluster.query_handler(1).open_markers() == 0 {
        assert!(cluster.deliver_one(), "the Commit never reached node 1");
    }
    assert!(cluster.query_handler(1).open_work() > 0);
    cluster.fail_node(2);
    // The older incarnation's takeover first, then this one's: node 1's
    // reports for both come before the first takeover's commit has gone
    // anywhere, so the second finds the transaction the first finishes.
    cluster.take_over_incarnation(1, 2, 0);
    cluster.take_over(1, 2);
    while cluster
        .links
        .get(&(1, 1))
        .is_some_and(|queue| !queue.is_empty())
    {
        cluster.deliver_from(1, 1);
    }
    cluster.quiesce();
    let deliveries = cluster.api_deliveries();
    let answered = deliveries
        .iter()
        .position(|(_, m)| matches!(m, Message::Executed(e) if e.transaction == 7 && e.state == TransactionState::Committed))
        .expect("the takeover answered the commit");
    let announced = |incarnation: u64| {
        deliveries
            .iter()
            .position(|(_, m)| {
                *m == Message::TakeoverDone {
                    failed_node: 2,
                    failed_incarnation: incarnation,
                }
            })
            .expect("announced")
    };
    assert!(answered < announced(1), "{deliveries:?}");
    assert!(answered < announced(0), "{deliveries:?}");
    let counters = cluster.nodes[&1].coordinator.takeover_counters();
    assert_eq!(counters.shared_with_another_takeover, 1, "{counters:?}");
    assert_eq!(counters.announced, 2, "{counters:?}");
    cluster.assert_idle();
}

/// A coordinator that dies before its commit reached any replica: the
/// takeover aborts the transaction and only announces itself done, which
/// tells an API still waiting for that commit that it was aborted.
#[test]
fn a_commit_that_reached_no_replica_is_aborted_and_the_takeover_announced() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let b = cluster.key_in(1, 0);
    let executed = cluster.execute(2, 7, ExecuteEnd::NoCommit, vec![insert(a, 1), insert(b, 2)]);
    assert_eq!(executed.state, TransactionState::Open);
    cluster.queue_end(2, 7, ExecuteEnd::Commit);
    cluster.steps.clear();
    cluster.fail_node(2);
    cluster.take_over(1, 2);
    cluster.quiesce();
    let deliveries = cluster.api_deliveries();
    assert_eq!(
        deliveries,
        vec![(
            1,
            Message::TakeoverDone {
                failed_node: 2,
                failed_incarnation: 1
            }
        )]
    );
    cluster.assert_aborted_by_takeover_and_free(a, b);
}

/// Answers whose API has not acknowledged them count against
/// MaxNoOfConcurrentTransactions (the replicas keep their markers): past
/// it a new transaction is refused with 4006; the acknowledgements, or the
/// API's failure, free them, and the markers go at the next tick.
#[test]
fn unacknowledged_commit_answers_are_bounded_and_freed_by_acks_or_the_api_failing() {
    let config = CoordinatorConfig {
        transactions_max: 2,
        ..CoordinatorConfig::default()
    };
    let mut cluster = Cluster::new(false, config);
    cluster.acknowledging = false;
    let keys: Vec<i32> = (0..3).map(|i| cluster.key_in(0, i)).collect();
    for (transaction, id) in [(1, keys[0]), (2, keys[1])] {
        let executed = cluster.execute(1, transaction, ExecuteEnd::Commit, vec![insert(id, 1)]);
        assert_eq!(executed.state, TransactionState::Committed);
    }
    cluster.quiesce();
    assert_eq!(cluster.nodes[&1].coordinator.acks_awaited(), 2);
    assert_eq!(cluster.query_handler(2).open_markers(), 2);
    let refused = cluster.execute(1, 3, ExecuteEnd::Commit, vec![insert(keys[2], 1)]);
    assert_eq!(refused.state, TransactionState::Aborted);
    assert_eq!(refused.error.as_ref().map(|e| e.ndb_code), Some(4006));
    // One acknowledgement makes room; its markers go at the tick.
    cluster.send(
        API,
        vec![(
            1,
            Message::CommitAck {
                transactions: Box::new(vec![1]),
            },
        )],
    );
    cluster.quiesce();
    cluster.tick(1);
    cluster.quiesce();
    assert_eq!(cluster.query_handler(2).open_markers(), 1);
    let executed = cluster.execute(1, 4, ExecuteEnd::Commit, vec![insert(keys[2], 1)]);
    assert_eq!(executed.state, TransactionState::Committed);
    // The API fails: nobody will acknowledge the rest.
    let mut out = Vec::new();
    cluster
        .nodes
        .get_mut(&1)
        .expect("node 1")
        .coordinator
        .on_api_failed(API, &mut out);
    cluster.send(1, out);
    cluster.assert_idle();
}

/// A copy holds the rows of the batch it sent locked until the starting
/// node asks for the next. When the starting node fails, the install that
/// removes it ends the copy and frees those rows, and the operations that
/// waited for them run then: nothing else may come to run them (seed 50354
/// of the 4x2 crash runs: a locked read waited forever).
#[test]
fn a_copy_to_a_node_that_fails_frees_its_rows_for_the_operations_waiting_at_once() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let keys: Vec<i32> = (0..4).map(|skip| cluster.key_in(0, skip)).collect();
    let executed = cluster.execute(
        1,
        1,
        ExecuteEnd::Commit,
        keys.iter().map(|k| insert(*k, 1)).collect(),
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.fail_node(2);
    cluster.quiesce();
    cluster.restart_node(2, 3);
    // Until node 1 sent its first batch (which holds the rows locked).
    while !cluster
        .links
        .get(&(1, 2))
        .is_some_and(|queue| queue.iter().any(|m| matches!(m, Message::CopyRows(_))))
    {
        assert!(cluster.deliver_one(), "the copy never sent rows");
    }
    // A locked read of a copied row (at the primary, node 1, alone) waits.
    cluster.send(
        API,
        vec![(
            1,
            Message::Execute(Execute {
                transaction: 2,
                start: true,
                end: ExecuteEnd::NoCommit,
                operations: vec![read(keys[0], OperationKind::ReadExclusive)],
            }),
        )],
    );
    cluster.deliver_from(API, 1);
    cluster.deliver_from(1, 1);
    let confirmed = |cluster: &Cluster| {
        cluster
            .links
            .get(&(1, 1))
            .is_some_and(|queue| queue.iter().any(|m| matches!(m, Message::KeyConfirm(_))))
    };
    assert!(!confirmed(&cluster), "the read did not wait for the copy");
    cluster.fail_node(2);
    assert!(
        confirmed(&cluster),
        "the install freed the row but the read still waits"
    );
    match cluster.until_answer() {
        Message::Executed(executed) => {
            assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
            assert_eq!(int(&executed.results[0].data, 1), Some(1));
        }
        other => panic!("expected Executed, got {other:?}"),
    }
}

/// A node may skip the state that removed a failed node and install only
/// the one that admits its next incarnation: a transaction that used the
/// old incarnation is as lost as if the node had left (its work and the
/// messages to it died with it) and is aborted with 4010, not left
/// waiting for an answer that never comes (seed 800434 of the 4x2 crash
/// runs).
#[test]
fn a_transaction_on_a_node_that_came_back_as_a_new_incarnation_is_aborted() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::NoCommit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Open, "{executed:?}");
    // Node 2 dies and is back as incarnation 3 before node 1 installs the
    // state without it.
    cluster.nodes.remove(&2).expect("up");
    cluster.links.retain(|(from, to), _| *from != 2 && *to != 2);
    cluster.steps.clear();
    cluster.restart_node(2, 3);
    cluster.quiesce();
    let aborted = cluster.api_deliveries().into_iter().any(|(_, message)| {
        matches!(&message, Message::Executed(e)
            if e.transaction == 1
                && e.state == TransactionState::Aborted
                && e.error.as_ref().map(|error| error.ndb_code) == Some(4010))
    });
    assert!(aborted, "{:?}", cluster.api_deliveries());
    assert_eq!(cluster.nodes[&1].coordinator.open_transactions(), 0);
    assert_eq!(cluster.query_handler(1).open_work(), 0);
}

/// A copying node may skip the state that removed a starting node and
/// install only the one that admits its next incarnation. The copy it ran
/// for the old incarnation ends there: it answers by node id, and the new
/// incarnation numbers its copies from 1 again, so the old copy's next
/// batch, taken as the answer to the new incarnation's first request, had
/// that fragment copied without the rows sent before (seed 753208 of the
/// 4x2 crash runs: a replica ended 7 rows short).
#[test]
fn a_copy_for_a_starting_node_that_came_back_as_a_new_incarnation_ends() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let keys: Vec<i32> = (0..3).map(|skip| cluster.key_in(0, skip)).collect();
    let executed = cluster.execute(
        1,
        1,
        ExecuteEnd::Commit,
        keys.iter().map(|k| insert(*k, 1)).collect(),
    );
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.fail_node(2);
    cluster.quiesce();
    // Two rows a batch at 1,000 rows/s: after a batch the copy pauses.
    let source = cluster.query_handler(1);
    source.set_copy_rows_per_second(1_000);
    source.set_copy_batch_rows(2);
    cluster.restart_node(2, 3);
    // Incarnation 3 asks for partition 0, applies its first batch and
    // asks for the next, which node 1 holds back for its pace.
    cluster.deliver_from(2, 1);
    assert!(matches!(
        cluster.links[&(1, 2)].front(),
        Some(Message::CopyRows(rows)) if rows.copy == 1 && !rows.finished
    ));
    cluster.deliver_from(1, 2);
    assert!(matches!(
        cluster.links[&(2, 1)].front(),
        Some(Message::CopyNext(next)) if next.copy == 1 && next.more
    ));
    cluster.deliver_from(2, 1);
    assert!(cluster.query_handler(1).next_deadline_ms().is_some());
    // Incarnation 3 dies, and node 1 installs the state that admits
    // incarnation 4 without the one that removed incarnation 3. Its
    // request for copy 1 is on its way.
    cluster.nodes.remove(&2).expect("up");
    cluster.links.retain(|(from, to), _| *from != 2 && *to != 2);
    cluster.restart_node(2, 4);
    assert_eq!(
        cluster
            .query_handler(1)
            .counters()
            .copies_of_replaced_incarnations_ended,
        1
    );
    // Node 1's pause ends before that request arrives: nothing of the old
    // copy goes out.
    let mut out = Vec::new();
    cluster.query_handler(1).tick(2, &mut out);
    assert!(out.is_empty(), "{out:?}");
    for now_ms in 2..=100 {
        cluster.quiesce();
        let mut out = Vec::new();
        let source = cluster.query_handler(1);
        if source.next_deadline_ms().is_some_and(|at| at <= now_ms) {
            source.tick(now_ms, &mut out);
        }
        cluster.send(1, out);
    }
    cluster.quiesce();
    let status = cluster.query_handler(2).copy_status().expect("starting");
    assert!(status.done, "{status:?}");
    cluster.node_started(2, 4);
    cluster.assert_idle();
    let rows = cluster.committed_rows(1);
    assert_eq!(rows.len(), keys.len(), "{rows:?}");
    assert_eq!(cluster.committed_rows(2), rows);
}

/// A copy request waits at the copying node until it installs the state
/// the request was made on. If it then lists a newer incarnation of the
/// starter, the request is dropped unanswered: the answer would reach the
/// newer incarnation, which numbers its copies afresh.
#[test]
fn a_waiting_copy_request_of_a_replaced_incarnation_is_dropped() {
    let mut cluster = Cluster::new(false, CoordinatorConfig::default());
    let a = cluster.key_in(0, 0);
    let executed = cluster.execute(1, 1, ExecuteEnd::Commit, vec![insert(a, 1)]);
    assert_eq!(executed.state, TransactionState::Committed, "{executed:?}");
    cluster.fail_node(2);
    cluster.quiesce();
    let request = CopyRequest {
        starter: 2,
        starter_incarnation: 3,
        copy: 7,
        table: TABLE,
        fragment: 0,
        generation: cluster.routing.version().0,
        version: cluster.version + 1,
        since_gci: 0,
    };
    let mut out = Vec::new();
    let source = cluster.query_handler(1);
    assert!(
        source
            .on_message(0, Message::CopyRequest(request), &mut out)
            .is_none()
    );
    assert!(out.is_empty(), "{out:?}");
    // That state admits incarnation 4, whose own copy runs.
    cluster.restart_node(2, 4);
    let answered = |cluster: &Cluster| {
        cluster.links.get(&(1, 2)).is_some_and(|queue| {
            queue
                .iter()
                .any(|m| matches!(m, Message::CopyRows(rows) if rows.copy == 7))
        })
    };
    assert!(!answered(&cluster));
    assert_eq!(
        cluster
            .query_handler(1)
            .counters()
            .copies_of_replaced_incarnations_ended,
        1
    );
    cluster.quiesce();
    assert!(
        cluster
            .query_handler(2)
            .copy_status()
            .expect("starting")
            .done
    );
    assert_eq!(cluster.committed_rows(2), cluster.committed_rows(1));
}

#[path = "local/redo.rs"]
mod redo;
