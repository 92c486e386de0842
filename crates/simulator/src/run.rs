//! One simulated run: the event loop, fault injection, a schema client and
//! the checkers. Transaction runs add a coordinator and a query handler to
//! every data node, a TCP-like network for their messages, API clients
//! with a workload and the checkers of its results (`transactions`,
//! `workload`).

mod crashes;
mod disks;
mod nodes;
mod shutdown;
mod transactions;
mod workload;

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::fmt::Write as _;

use cluster::management::ConnectionId;
use cluster::{DataNodeSettings, ManagementSettings};
use node::{DataNodeComposite, LinkId, ManagementComposite, ManagementOutput, NodeMarks};
use protocol::{ClusterState, Member, Message, NodeId, NodeRole, NodeState, SchemaChange};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use schema::distribution::TableOptions;
use schema::{ColumnDef, ColumnType, TableDef};

use crate::network::{Network, NetworkFaults, TcpLinks};
pub use crashes::CrashMarks;
use crashes::CrashPlan;
use nodes::SimLink;
use transaction::is_transaction_message;
pub use transactions::{TransactionMarks, TransactionOutcome};
use workload::Workload;

/// The API node that issues schema changes.
const CLIENT_NODE: NodeId = 250;
/// Simulated heartbeat interval; failure detection is
/// `MISSED_HEARTBEATS_MAX` of them.
const HEARTBEAT_INTERVAL_MS: u64 = 100;
/// Silent intervals before a node is suspected in the simulator (fewer than
/// the default, so the runs' timings stay short).
const MISSED_HEARTBEATS_MAX: u32 = 4;
const ARBITRATION_TIMEOUT_MS: u64 = 1_500;
/// Simulated HeartbeatIntervalDbApi: every API node heartbeats each data
/// node it is connected to at this interval, as `shoal-client` does.
const API_HEARTBEAT_INTERVAL_MS: u64 = 200;
const START_PARTIAL_TIMEOUT_MS: u64 = 3_000;
const FAULT_PERIOD_MS: u64 = 100;
/// A data node's dial takes up to this long to become a connection.
const DIAL_DELAY_MS_MAX: u64 = 2 * HEARTBEAT_INTERVAL_MS;
const CLIENT_PERIOD_MS: u64 = 250;
const CLIENT_TIMEOUT_MS: u64 = 2_000;
/// DataMemory pages of a simulated data node's engine in schema runs: a
/// few dozen tables fill it, so creates are refused (827) and the checker
/// holds the president to never accept more than the nodes can hold. The
/// engine reports its pages as a data node's does, at every tick.
const SCHEMA_RUN_DATA_MEMORY_PAGES: u64 = 40;
/// MaxNoOfTables of the schema runs whose seed it divides by
/// `SMALL_DICTIONARY_SEED_DIVISOR`: small enough that the dictionary's limit
/// refuses creates (707) alongside DataMemory's (827) under faults.
const SMALL_DICTIONARY_TABLES_MAX: u32 = 3;
const SMALL_DICTIONARY_SEED_DIVISOR: u64 = 3;
/// The trace printed with a failure keeps this many last events.
const TRACE_LINES_MAX: usize = 3_000;
/// A run that schedules more events than this is stuck in a loop.
const EVENTS_MAX: u64 = 20_000_000;

#[derive(Debug, Clone)]
pub struct SimulationOptions {
    pub seed: u64,
    pub data_nodes: u8,
    pub replicas: u8,
    /// Virtual time during which faults are injected.
    pub fault_ms: u64,
    /// Virtual time after the faults stop, before the final checks.
    pub settle_ms: u64,
    pub faults: bool,
    pub schema_changes: bool,
    /// Return the event trace with a passing outcome too. In transaction
    /// runs it also traces every transaction message.
    pub keep_trace: bool,
    /// Run the transaction workload and its checkers: the schema client
    /// creates the workload's tables, API clients run transactions for
    /// `fault_ms` once the tables are loaded, then the run waits (at most
    /// `settle_ms`) for every transaction to finish and checks the data.
    /// Membership messages keep a milder version of the lossy network;
    /// there are no crashes, link cuts or partitions (see `crashes`).
    pub transactions: bool,
    /// Transaction runs: data nodes crash while the workload runs, at a
    /// random moment or right after handling a message of the commit
    /// protocol (with only part of what they sent leaving). Coordinators
    /// come from a set of nodes that never crash (taking over a dead
    /// coordinator's transactions is not built yet), crashed nodes stay
    /// down (a restarted node would come back empty), and every node group
    /// keeps a live replica, so every acknowledged commit must survive.
    pub crashes: bool,
}

impl SimulationOptions {
    pub fn new(seed: u64, data_nodes: u8, replicas: u8) -> SimulationOptions {
        SimulationOptions {
            seed,
            data_nodes,
            replicas,
            fault_ms: 20_000,
            settle_ms: 20_000,
            faults: true,
            schema_changes: true,
            keep_trace: false,
            transactions: false,
            crashes: false,
        }
    }

    /// A transaction run (see `transactions`) with its usual lengths.
    pub fn transactions(seed: u64, data_nodes: u8, replicas: u8) -> SimulationOptions {
        SimulationOptions {
            fault_ms: 2_000,
            settle_ms: 20_000,
            transactions: true,
            ..SimulationOptions::new(seed, data_nodes, replicas)
        }
    }

    /// A transaction run in which data nodes crash (see `crashes`).
    pub fn transactions_with_crashes(seed: u64, data_nodes: u8, replicas: u8) -> SimulationOptions {
        SimulationOptions {
            crashes: true,
            ..SimulationOptions::transactions(seed, data_nodes, replicas)
        }
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        format!(
            "cargo run --release -p shoal -- sim --seed {} --nodes {} --replicas {} --fault-ms {} \
             --settle-ms {}{}{}{}{}",
            self.seed,
            self.data_nodes,
            self.replicas,
            self.fault_ms,
            self.settle_ms,
            if self.faults { "" } else { " --no-faults" },
            if self.schema_changes {
                ""
            } else {
                " --no-schema-changes"
            },
            if self.transactions {
                " --transactions"
            } else {
                ""
            },
            if self.crashes { " --crashes" } else { "" },
        )
    }
}

/// What a successful run did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub final_version: u64,
    pub versions_seen: usize,
    pub crashes: u32,
    pub management_crashes: u32,
    pub link_cuts: u32,
    pub partitions: u32,
    pub messages_delivered: u64,
    pub messages_dropped: u64,
    pub tables: usize,
    pub schema_changes_acknowledged: u32,
    /// Of those, renames.
    pub renames_acknowledged: u32,
    /// Creates refused because a node lacked DataMemory (827).
    pub creates_refused_for_memory: u32,
    /// Creates refused because the dictionary held MaxNoOfTables (707).
    pub creates_refused_for_table_objects: u32,
    pub exclusions: u32,
    /// Times every data node was started with --initial because the
    /// management node would not form a cluster that lost data.
    pub initial_starts: u32,
    /// Graceful system restarts (every data node stopped through the
    /// management node, then started again from its disk).
    pub system_restarts: u32,
    /// Whole-cluster crashes (every data node at once, a second time
    /// during the restart in some), each followed by a system restart from
    /// the disks; and the commits they kept and took back (of later epochs
    /// than the restart restored).
    pub system_crashes: u32,
    pub crash_restarts_crashed: u32,
    pub commits_kept_by_crashes: u64,
    pub commits_lost_to_crashes: u64,
    /// Rare protocol paths the data nodes took (summed over incarnations).
    pub marks: cluster::data_node::Marks,
    /// Paths of the data nodes' wiring taken (`node::NodeMarks`, summed).
    pub node_marks: NodeMarks,
    /// What the transaction workload did (transaction runs).
    pub transactions: TransactionOutcome,
    /// What the data nodes' disks did.
    pub disks: DiskOutcome,
    /// The last events, when `keep_trace` was set.
    pub trace: Vec<String>,
}

/// The disks of a run (`disks`), summed over the data nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskOutcome {
    /// Redo log writes and syncs done, and of those failed.
    pub requests: u64,
    pub failures: u64,
    /// Crashes after which the redo log was read back and checked.
    pub crashes_checked: u64,
}

#[derive(Debug)]
enum SimEvent {
    /// A message arrives; `link` is the receiving end of the connection
    /// it travels on (`None` between a data node and the management node).
    Deliver {
        from: NodeId,
        to: NodeId,
        to_incarnation: u64,
        link: Option<LinkId>,
        message: Message,
    },
    /// A data node's composite is due (`at_ms` tells a stale one).
    Tick {
        node: NodeId,
        incarnation: u64,
        at_ms: u64,
    },
    ManagementTick {
        incarnation: u64,
    },
    /// One end of a connection sees it closed.
    LinkClosed {
        link: LinkId,
    },
    /// A data node sees its management connection closed.
    ManagementLost {
        node: NodeId,
        incarnation: u64,
    },
    Restart {
        node: NodeId,
    },
    /// A data node's dial reaches its peer: connections take time to set
    /// up (and a restarted node's address reaches the others through the
    /// management node), so a member may be admitted before its peers are
    /// connected to it.
    Dial {
        from: NodeId,
        incarnation: u64,
        to: NodeId,
    },
    RestartManagement,
    Heal {
        a: NodeId,
        b: NodeId,
    },
    Fault,
    Client,
    /// Every API node heartbeats the data nodes it is connected to.
    ApiHeartbeats,
    /// A workload session's pause between transactions ends.
    Session {
        index: usize,
    },
    /// The deserter API node opens its transaction (`workload::deserter`).
    Deserter,
    /// Every data node loses power at once (`shutdown`).
    SystemCrash,
    /// A session's wait for the takeover's outcome of its commit ends.
    OutcomeWait {
        index: usize,
        transaction: u64,
    },
    /// A planned crash of a data node (`crashes`): now, or after the
    /// node's next message of the trigger's kind.
    Crash {
        node: NodeId,
        trigger: Option<crashes::Trigger>,
    },
    /// A redo log request of a data node is done (`disks`).
    DiskDone {
        node: NodeId,
        incarnation: u64,
        request: disk::DiskRequest,
    },
    /// The operator starts every data node again with --initial (the
    /// management node refused to form a cluster that would lose data).
    StartAllInitial,
    /// A file task of a data node is done (`disks`).
    FileDone {
        node: NodeId,
        incarnation: u64,
        task: node::durability::FileTask,
    },
    /// A planned isolation of a data node (`crashes`): it keeps running
    /// and serving its API nodes, cut off from every other node.
    Isolate {
        node: NodeId,
    },
    /// The isolation of `node` ends: its links heal, and the connections
    /// that crossed the cut are reset.
    EndIsolation {
        node: NodeId,
    },
}

struct Scheduled {
    at_ms: u64,
    sequence: u64,
    event: SimEvent,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        self.at_ms == other.at_ms && self.sequence == other.sequence
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    // Reversed: BinaryHeap is a max-heap and the earliest event comes first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at_ms, other.sequence).cmp(&(self.at_ms, self.sequence))
    }
}

struct SimDataNode {
    /// The node's blocks, as `shoal datad` runs them; `None` while down.
    composite: Option<DataNodeComposite>,
    incarnation: u64,
    /// The tick scheduled, if any.
    tick_at_ms: Option<u64>,
    /// The incarnation of the management node its management connection
    /// reaches, while it has one.
    management_incarnation: Option<u64>,
    /// Its disk, which outlives its crashes.
    disk: disks::SimDisk,
}

struct Management {
    /// The management node, as `shoal mgmd` runs it; `None` while down.
    composite: Option<ManagementComposite>,
    incarnation: u64,
    /// The arbitrator's votes file: it survives crashes.
    votes_on_disk: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
struct ClientRequest {
    change: SchemaChange,
    sent_ms: u64,
    /// Answered "not the president" or "busy": resent at the next client
    /// step, to this node when the answer named one. Not at once, because
    /// a retry keeps the request id, so a duplicated answer would start a
    /// second chain of retries.
    retry_to: Option<NodeId>,
}

struct Simulation {
    options: SimulationOptions,
    rng: ChaCha8Rng,
    now_ms: u64,
    sequence: u64,
    queue: BinaryHeap<Scheduled>,
    network: Network,
    config: config::ClusterConfig,
    /// MaxNoOfTables the data nodes apply (the dictionary's limit).
    tables_max: u32,
    config_text: String,
    management_node: NodeId,
    nodes: BTreeMap<NodeId, SimDataNode>,
    management: Management,
    next_incarnation: u64,
    /// Every state any node installed, by (generation, version).
    decided: BTreeMap<(u64, u64), ClusterState>,
    /// Last (generation, version) each incarnation installed.
    installed: BTreeMap<Member, (u64, u64)>,
    client_requests: BTreeMap<u64, ClientRequest>,
    /// The first final answer each schema request got: a table id, or an
    /// NDB error code. Any later final answer to the same request (a
    /// duplicate's, a retry's) must agree, or one of them is false.
    final_answers: BTreeMap<u64, Result<u32, u16>>,
    next_request: u64,
    next_table: u32,
    /// Tables whose creation was acknowledged and not dropped since.
    acknowledged_tables: BTreeMap<String, u32>,
    /// When the newest generation first appeared. Until durability exists
    /// (redo log, checkpoints), a re-formed cluster keeps only the
    /// dictionary the management node had learned, so only tables
    /// acknowledged after the last formation must survive.
    last_formation_ms: u64,
    acknowledged_at_ms: BTreeMap<String, u64>,
    /// Tables a drop was sent for and not answered: they may be gone.
    dropping: BTreeSet<String>,
    /// Tables whose drop was acknowledged, and when: dropped in the newest
    /// generation, they must stay gone (names are never reused).
    dropped: BTreeMap<String, u64>,
    /// Tables whose create was answered with an error: they must not exist.
    refused_creates: BTreeMap<String, String>,
    trace: VecDeque<String>,
    outcome: Outcome,
    failure: Option<String>,
    /// Transaction runs: the API clients, their workload and its model.
    workload: Option<Box<Workload>>,
    /// Transaction messages travel over these, in order per link.
    tcp: TcpLinks,
    /// Every open connection end, by the id its owner knows it by.
    links: BTreeMap<LinkId, SimLink>,
    next_link: LinkId,
    /// Dials on their way (`SimEvent::Dial`): a data node asks to dial at
    /// each tick until the connection is there, and the runtime connects
    /// once per ask, synchronously, so one is on its way at a time.
    dials: BTreeSet<(NodeId, u64, NodeId)>,
    /// `LinkClosed` events scheduled and not handled yet.
    link_closes_pending: u64,
    /// (API node, data node) → the API node's end of its connection.
    api_links: BTreeMap<(NodeId, NodeId), LinkId>,
    /// API nodes that stopped (a SIGSTOPped process): they send nothing,
    /// heartbeats included, and keep their connections open.
    frozen_apis: BTreeSet<NodeId>,
    /// The cluster secret the management node hands out.
    secret: protocol::identity::ClusterSecret,
    /// The challenge of each API node's connection end, until the data
    /// node's proof answers it.
    api_nonces: BTreeMap<LinkId, protocol::identity::Nonce>,
    /// Handshake messages waiting for delivery (`nodes::handshake`).
    handshakes: VecDeque<(NodeId, LinkId, Message)>,
    draining_handshakes: bool,
    /// Runs with crashes: who may crash, who has (`crashes`).
    crash_plan: Option<CrashPlan>,
    /// The data nodes' epoch and global checkpoint intervals.
    epoch_config: cluster::epochs::EpochConfig,
    /// The disks' delays and failures, drawn apart so that the other draws
    /// of a seed stay as they were.
    disk_rng: ChaCha8Rng,
    /// The last commit decided: its epoch, node and transaction.
    last_commit_decision: (u64, NodeId, u64),
    /// The operator's graceful system restart at the end of a run.
    system_stop: shutdown::SystemStop,
}

/// Whether a message on a data node's connection counts in
/// `TcpLinks::in_flight`, which the workload waits to drain: not the epoch
/// protocol's, whose rounds never stop.
pub(crate) fn counted_in_flight(message: &Message) -> bool {
    is_transaction_message(message) && !matches!(message, Message::Epoch { .. })
}

/// Runs one seeded simulation; `Err` carries the failure, the replay
/// command and the tail of the event trace.
pub fn run(options: &SimulationOptions) -> Result<Outcome, String> {
    let mut simulation = Simulation::new(options.clone())?;
    // A panic in a block (an assertion) fails the run like a checker does,
    // with the replay command and the trace.
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| simulation.run()));
    if let Err(panic) = panicked {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        simulation.failure = Some(format!("panicked at {} ms: {text}", simulation.now_ms));
    }
    match simulation.failure.take() {
        None => {
            for disk in simulation.nodes.values().map(|node| &node.disk) {
                simulation.outcome.disks.requests += disk.requests;
                simulation.outcome.disks.failures += disk.failures;
                simulation.outcome.disks.crashes_checked += disk.crashes_checked;
            }
            let mut outcome = simulation.outcome;
            if options.keep_trace {
                outcome.trace = simulation.trace.into_iter().collect();
            }
            Ok(outcome)
        }
        Some(failure) => {
            let mut message = format!(
                "simulation failed: {failure}\nreplay: {}\nlast events:\n",
                options.replay_command()
            );
            for line in &simulation.trace {
                message.push_str(line);
                message.push('\n');
            }
            Err(message)
        }
    }
}

fn chance(rng: &mut ChaCha8Rng, probability: f64) -> bool {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 1.0 < probability
}

fn between(rng: &mut ChaCha8Rng, low: u64, high: u64) -> u64 {
    low + rng.next_u64() % (high - low + 1)
}

impl Simulation {
    fn new(options: SimulationOptions) -> Result<Simulation, String> {
        let config_text = config::sandbox_config_text(
            "sim",
            options.data_nodes,
            options.replicas,
            1186,
            64 << 20,
        );
        let config = config::parse(&config_text, "config.ini").map_err(|e| e.to_string())?;
        let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
        let faults = if options.faults && options.transactions {
            // Membership must stay stable through a transaction run (node
            // failures are not handled by the transaction blocks yet): a
            // little loss, duplication and delay, never four heartbeats
            // in a row.
            NetworkFaults {
                loss: (rng.next_u64() % 10) as f64 / 1000.0,
                duplication: (rng.next_u64() % 20) as f64 / 1000.0,
                slow: (rng.next_u64() % 20) as f64 / 1000.0,
                latency_ms_max: between(&mut rng, 1, 10),
                slow_ms_max: 150,
            }
        } else if options.faults {
            NetworkFaults {
                loss: (rng.next_u64() % 80) as f64 / 1000.0,
                duplication: (rng.next_u64() % 30) as f64 / 1000.0,
                slow: (rng.next_u64() % 50) as f64 / 1000.0,
                latency_ms_max: between(&mut rng, 1, 20),
                slow_ms_max: 400,
            }
        } else {
            NetworkFaults::none()
        };
        let management_node = config.management_nodes[0].node_id;
        let tcp = TcpLinks::new(&mut rng, options.faults);
        let mut secret = [0u8; 32];
        rng.fill_bytes(&mut secret);
        let workload = options
            .transactions
            .then(|| Box::new(Workload::new(&mut rng, options.replicas)));
        let crash_plan = (options.transactions && options.crashes)
            .then(|| CrashPlan::new(&mut rng, &config.node_groups));
        // Epochs and global checkpoints far more often than by default, so
        // a run holds many rounds, each at a different pace. Drawn from a
        // generator of their own, so the other draws of a seed stay as
        // they were.
        let epoch_config = {
            let mut epochs_rng = ChaCha8Rng::seed_from_u64(options.seed ^ 0x0e90_c4e0);
            let epoch_interval_ms = between(&mut epochs_rng, 5, 100);
            cluster::epochs::EpochConfig {
                epoch_interval_ms,
                checkpoint_interval_ms: epoch_interval_ms * between(&mut epochs_rng, 2, 20),
            }
        };
        let disk_rng = ChaCha8Rng::seed_from_u64(options.seed ^ 0xd15c_0000);
        let tables_max = if !options.transactions
            && options.seed.is_multiple_of(SMALL_DICTIONARY_SEED_DIVISOR)
        {
            SMALL_DICTIONARY_TABLES_MAX
        } else {
            config.data_nodes[0].tables_max
        };
        Ok(Simulation {
            options,
            rng,
            now_ms: 0,
            sequence: 0,
            queue: BinaryHeap::new(),
            network: Network::new(faults),
            tables_max,
            config,
            config_text,
            management_node,
            nodes: BTreeMap::new(),
            management: Management {
                composite: None,
                incarnation: 0,
                votes_on_disk: None,
            },
            next_incarnation: 1,
            decided: BTreeMap::new(),
            installed: BTreeMap::new(),
            client_requests: BTreeMap::new(),
            final_answers: BTreeMap::new(),
            next_request: 1,
            next_table: 1,
            acknowledged_tables: BTreeMap::new(),
            last_formation_ms: 0,
            acknowledged_at_ms: BTreeMap::new(),
            dropping: BTreeSet::new(),
            dropped: BTreeMap::new(),
            refused_creates: BTreeMap::new(),
            trace: VecDeque::new(),
            outcome: Outcome::default(),
            failure: None,
            workload,
            tcp,
            links: BTreeMap::new(),
            next_link: 1,
            dials: BTreeSet::new(),
            link_closes_pending: 0,
            api_links: BTreeMap::new(),
            frozen_apis: BTreeSet::new(),
            secret,
            api_nonces: BTreeMap::new(),
            handshakes: VecDeque::new(),
            draining_handshakes: false,
            crash_plan,
            epoch_config,
            disk_rng,
            last_commit_decision: (0, 0, 0),
            system_stop: shutdown::SystemStop::default(),
        })
    }

    fn trace(&mut self, line: String) {
        if self.trace.len() == TRACE_LINES_MAX {
            self.trace.pop_front();
        }
        self.trace
            .push_back(format!("{:>7} ms  {line}", self.now_ms));
    }

    fn fail(&mut self, message: String) {
        if self.failure.is_none() {
            self.failure = Some(message);
        }
    }

    fn schedule(&mut self, at_ms: u64, event: SimEvent) {
        self.sequence += 1;
        assert!(
            self.sequence < EVENTS_MAX,
            "the simulation scheduled too many events"
        );
        self.queue.push(Scheduled {
            at_ms,
            sequence: self.sequence,
            event,
        });
    }

    fn settings(&self, node: NodeId, incarnation: u64) -> DataNodeSettings {
        let mut settings =
            DataNodeSettings::from_config(&self.config, node, incarnation).expect("configured");
        settings.heartbeat_interval_ms = HEARTBEAT_INTERVAL_MS;
        settings.api_heartbeat_interval_ms = API_HEARTBEAT_INTERVAL_MS;
        settings.missed_heartbeats_max = MISSED_HEARTBEATS_MAX;
        settings.arbitration_timeout_ms = ARBITRATION_TIMEOUT_MS;
        settings.tables_max = self.tables_max;
        settings
    }

    fn management_settings(&self) -> ManagementSettings {
        let mut settings = ManagementSettings::new(
            "config.ini",
            &self.config_text,
            self.config.clone(),
            self.secret,
        );
        settings.heartbeat_interval_ms = HEARTBEAT_INTERVAL_MS;
        settings.api_heartbeat_interval_ms = API_HEARTBEAT_INTERVAL_MS;
        settings.missed_heartbeats_max = MISSED_HEARTBEATS_MAX;
        settings.arbitration_timeout_ms = ARBITRATION_TIMEOUT_MS;
        settings.start_partial_timeout_ms = START_PARTIAL_TIMEOUT_MS;
        settings
    }

    fn run(&mut self) {
        self.start_management();
        let data_nodes: Vec<NodeId> = self.config.data_nodes.iter().map(|d| d.node_id).collect();
        for node in data_nodes {
            // Nodes start at slightly different times, as real processes do.
            let at = between(&mut self.rng, 0, 500);
            self.nodes.insert(
                node,
                SimDataNode {
                    composite: None,
                    incarnation: 0,
                    tick_at_ms: None,
                    management_incarnation: None,
                    disk: disks::SimDisk::default(),
                },
            );
            self.schedule(at, SimEvent::Restart { node });
        }
        let transactions = self.options.transactions;
        if self.options.faults && !transactions {
            self.schedule(FAULT_PERIOD_MS, SimEvent::Fault);
        }
        if self.options.schema_changes || transactions {
            self.schedule(CLIENT_PERIOD_MS, SimEvent::Client);
        }
        self.schedule(API_HEARTBEAT_INTERVAL_MS, SimEvent::ApiHeartbeats);
        let end_ms = if transactions {
            // Forming the cluster and creating the tables come first.
            workload::PREPARATION_MS_MAX + self.options.fault_ms + self.options.settle_ms
        } else {
            self.options.fault_ms + self.options.settle_ms
        };
        let mut healed = false;
        while let Some(next) = self.queue.pop() {
            if next.at_ms > end_ms || self.failure.is_some() {
                break;
            }
            if self.workload.as_ref().is_some_and(|w| w.is_done()) {
                break;
            }
            self.now_ms = next.at_ms;
            if !healed && !transactions && self.now_ms >= self.options.fault_ms {
                healed = true;
                self.network.heal_all();
                self.network.faults = NetworkFaults::none();
                self.trace("faults stop, every link healed".into());
            }
            self.handle(next.event);
            if transactions && self.failure.is_none() {
                self.workload_progress();
            }
        }
        if self.failure.is_none() && transactions {
            self.check_workload_finished();
        }
        if self.failure.is_none() {
            if !transactions {
                self.now_ms = end_ms;
            }
            self.check_history();
        }
        if self.failure.is_none() {
            self.check_converged();
        }
    }

    fn handle(&mut self, event: SimEvent) {
        match event {
            SimEvent::Deliver {
                from,
                to,
                to_incarnation,
                link,
                message,
            } => self.deliver(from, to, to_incarnation, link, message),
            SimEvent::Tick {
                node,
                incarnation,
                at_ms,
            } => self.tick(node, incarnation, at_ms),
            SimEvent::ManagementTick { incarnation } => {
                if self.management.incarnation != incarnation {
                    return;
                }
                let now = self.now_ms;
                let mut output = ManagementOutput::default();
                let Some(composite) = self.management.composite.as_mut() else {
                    return;
                };
                composite.tick(now, &mut output);
                let next_ms = composite.next_deadline_ms();
                self.schedule(next_ms, SimEvent::ManagementTick { incarnation });
                self.apply_management_output(output);
            }
            SimEvent::LinkClosed { link } => {
                self.link_closes_pending -= 1;
                self.close_link(link, "closed by the peer", true);
            }
            SimEvent::ManagementLost { node, incarnation } => {
                self.management_lost(node, incarnation);
            }
            SimEvent::Restart { node } => self.start_data_node(node),
            SimEvent::DiskDone {
                node,
                incarnation,
                request,
            } => self.disk_done(node, incarnation, request),
            SimEvent::StartAllInitial => self.start_all_initial(),
            SimEvent::FileDone {
                node,
                incarnation,
                task,
            } => self.file_done(node, incarnation, task),
            SimEvent::Dial {
                from,
                incarnation,
                to,
            } => {
                self.dials.remove(&(from, incarnation, to));
                // The runtime dials when the node asks; a delayed dial
                // stands for an address that reached the node late, so it
                // is not made if a connection came meanwhile.
                let connected = self
                    .nodes
                    .get(&from)
                    .and_then(|sim| sim.composite.as_ref())
                    .is_none_or(|composite| composite.has_link_to(to));
                if self.incarnation_of(from) == Some(incarnation) && !connected {
                    self.open_link(from, to, Some(to), NodeRole::Data);
                }
            }
            SimEvent::RestartManagement => self.start_management(),
            SimEvent::Heal { a, b } => {
                self.network.heal(a, b);
                self.trace(format!("link {a}-{b} healed"));
                // A data node whose management connection reaches a
                // management process that is gone hears so once packets
                // flow again.
                for (node, other) in [(a, b), (b, a)] {
                    if other == self.management_node
                        && let Some(sim) = self.nodes.get(&node)
                        && sim.composite.is_some()
                        && sim
                            .management_incarnation
                            .is_some_and(|seen| Some(seen) != self.incarnation_of(other))
                    {
                        let incarnation = sim.incarnation;
                        let at = self.now_ms + between(&mut self.rng, 1, 5);
                        self.schedule(at, SimEvent::ManagementLost { node, incarnation });
                    }
                }
            }
            SimEvent::Fault => self.inject_fault(),
            SimEvent::ApiHeartbeats => {
                let connected: Vec<(NodeId, NodeId)> = self
                    .api_links
                    .keys()
                    .copied()
                    .filter(|(api, _)| !self.frozen_apis.contains(api))
                    .collect();
                for (api, node) in connected {
                    let heartbeat = Message::Heartbeat {
                        generation: 0,
                        version: 0,
                        free_pages: None,
                        sent_at_ms: 0,
                    };
                    self.send_from_api(api, node, heartbeat);
                }
                let next_ms = self.now_ms + API_HEARTBEAT_INTERVAL_MS;
                self.schedule(next_ms, SimEvent::ApiHeartbeats);
            }
            SimEvent::Client => self.client_step(),
            SimEvent::Session { index } => self.session_step(index),
            SimEvent::Deserter => self.deserter_step(),
            SimEvent::SystemCrash => self.system_crash(),
            SimEvent::OutcomeWait { index, transaction } => {
                self.outcome_wait_ends(index, transaction)
            }
            SimEvent::Crash { node, trigger } => self.planned_crash(node, trigger),
            SimEvent::Isolate { node } => self.isolate(node),
            SimEvent::EndIsolation { node } => self.end_isolation(node),
        }
    }

    // ---- nodes ----

    fn start_management(&mut self) {
        let incarnation = self.next_incarnation;
        self.next_incarnation += 1;
        let votes = self.management.votes_on_disk.as_ref().map(|bytes| {
            protocol::persisted::ArbitratorVotes::decode(bytes)
                .expect("the simulated disk is sound")
        });
        self.management.composite = Some(ManagementComposite::new(
            self.management_settings(),
            incarnation,
            self.now_ms,
            votes,
        ));
        self.management.incarnation = incarnation;
        self.trace(format!(
            "management node starts as incarnation {incarnation}"
        ));
        // Data nodes reconnect on their own (their composites retry).
        self.schedule(self.now_ms, SimEvent::ManagementTick { incarnation });
    }

    fn crash_management(&mut self) {
        // Votes written before this point survive; the composite holds no
        // votes it has not handed out for writing (`apply_management_output`).
        if self.management.composite.take().is_none() {
            return;
        }
        self.outcome.management_crashes += 1;
        self.trace("management node goes down".into());
        // Data nodes with a working link see their connection close.
        let connected: Vec<(NodeId, u64)> = self
            .nodes
            .iter()
            .filter(|(_, s)| s.composite.is_some() && s.management_incarnation.is_some())
            .map(|(id, s)| (*id, s.incarnation))
            .collect();
        for (node, incarnation) in connected {
            if !self.network.is_cut(node, self.management_node) {
                let at = self.now_ms + between(&mut self.rng, 1, 5);
                self.schedule(at, SimEvent::ManagementLost { node, incarnation });
            }
        }
        let at = self.now_ms + between(&mut self.rng, 300, 3_000);
        self.schedule(at, SimEvent::RestartManagement);
    }

    fn incarnation_of(&self, node: NodeId) -> Option<u64> {
        if node == self.management_node {
            return self
                .management
                .composite
                .as_ref()
                .map(|_| self.management.incarnation);
        }
        if node == CLIENT_NODE || self.workload.as_ref().is_some_and(|w| w.is_api(node)) {
            return Some(0);
        }
        let sim = self.nodes.get(&node)?;
        sim.composite.as_ref().map(|_| sim.incarnation)
    }

    /// A message from an API node (the schema client, the workload's) to
    /// a data node.
    fn send(&mut self, from: NodeId, to: NodeId, message: Message) {
        self.send_from_api(from, to, message);
    }

    fn deliver(
        &mut self,
        from: NodeId,
        to: NodeId,
        to_incarnation: u64,
        link: Option<LinkId>,
        message: Message,
    ) {
        let transaction = is_transaction_message(&message);
        if counted_in_flight(&message) {
            self.tcp.in_flight -= 1;
        }
        if self.incarnation_of(to) != Some(to_incarnation) {
            self.outcome.messages_dropped += 1;
            return;
        }
        // A message still in flight when its link is cut is lost with it
        // (a connection that lost one is reset when the cut heals).
        if self.network.is_cut(from, to) {
            self.outcome.messages_dropped += 1;
            return;
        }
        if transaction {
            self.tcp.delivered += 1;
        } else {
            self.outcome.messages_delivered += 1;
        }
        let now = self.now_ms;
        match link {
            Some(link) => self.deliver_on_link(from, link, message),
            None if to == self.management_node => {
                let mut output = ManagementOutput::default();
                let composite = self
                    .management
                    .composite
                    .as_mut()
                    .expect("incarnation matched");
                composite.on_message(now, ConnectionId::from(from), message, &mut output);
                self.apply_management_output(output);
            }
            None => self.deliver_from_management(to, message),
        }
    }

    /// Acts on what the management node asked for, in `mgmd`'s order: the
    /// votes reach the disk before any message of the turn is sent.
    fn apply_management_output(&mut self, output: ManagementOutput) {
        let incarnation = self.management.incarnation;
        for line in output.logs {
            if line.starts_with("Cluster shutdown: every commit is durable") {
                self.system_stop.durable_before_stop = true;
            }
            if line.starts_with("The cluster cannot start") {
                // The operator does what the line says: every data node
                // starts again with --initial.
                let at = self.now_ms + between(&mut self.rng, 100, 1_000);
                self.schedule(at, SimEvent::StartAllInitial);
            }
            self.trace(format!("management: {line}"));
        }
        if let Some(stop) = output.stop {
            self.fail(format!("the management node was told to stop: {stop}"));
        }
        if let Some(bytes) = output.votes {
            self.management.votes_on_disk = Some(bytes);
            // Whatever this turn's messages promise or accept, the disk
            // holds it now, so a crash after the sends forgets none of it.
            let composite = self.management.composite.as_ref().expect("it just ran");
            let on_disk = self
                .management
                .votes_on_disk
                .as_deref()
                .map(protocol::persisted::ArbitratorVotes::decode);
            if on_disk != Some(Ok(composite.block().votes())) {
                self.fail(
                    "the management node's votes on disk differ from the votes it sends".into(),
                );
            }
        }
        for (link, _) in output.close {
            // The management node closed a silent data node's connection;
            // the node hears of it once packets flow.
            let node = NodeId::try_from(link).expect("simulated connections are node ids");
            self.break_management_connection(node, self.management_node, true);
        }
        for (link, peer) in output.identified {
            // Management links are named by the data node's id.
            let node_matches = NodeId::try_from(link).is_ok_and(|node| node == peer.node);
            if !node_matches || peer.role != NodeRole::Data {
                self.fail(format!(
                    "the management node identified link {link} as {peer:?}"
                ));
            }
        }
        for (connection, message) in output.sends {
            if connection == shutdown::OPERATOR_LINK {
                self.operator_hears(message);
                continue;
            }
            let to = NodeId::try_from(connection).expect("simulated connections are node ids");
            let current = self
                .nodes
                .get(&to)
                .is_some_and(|sim| sim.management_incarnation == Some(incarnation));
            if current {
                self.transmit(self.management_node, to, None, message);
            } else {
                self.trace(format!(
                    "management: {} to node {to} dropped: no connection",
                    message.name()
                ));
                self.outcome.messages_dropped += 1;
            }
        }
    }

    // ---- faults ----

    fn inject_fault(&mut self) {
        if self.now_ms >= self.options.fault_ms {
            return;
        }
        self.schedule(self.now_ms + FAULT_PERIOD_MS, SimEvent::Fault);
        let data_nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        let mut everyone = data_nodes.clone();
        everyone.push(self.management_node);
        let roll = self.rng.next_u64() % 1000;
        match roll {
            0..15 => {
                let node = data_nodes[(self.rng.next_u64() % data_nodes.len() as u64) as usize];
                self.crash_data_node(node, "crash injected");
            }
            15..20 => self.crash_management(),
            20..50 => {
                let a = everyone[(self.rng.next_u64() % everyone.len() as u64) as usize];
                let b = everyone[(self.rng.next_u64() % everyone.len() as u64) as usize];
                if a != b && !self.network.is_cut(a, b) {
                    self.outcome.link_cuts += 1;
                    self.network.cut(a, b);
                    self.trace(format!("link {a}-{b} cut"));
                    // Sometimes the operating system notices and closes the
                    // connection; sometimes only silence tells.
                    if chance(&mut self.rng, 0.5) {
                        self.break_management_connection(a, b, true);
                        self.close_links_between(a, b);
                    }
                    let heal = self.now_ms + between(&mut self.rng, 100, 4_000);
                    self.schedule(heal, SimEvent::Heal { a, b });
                }
            }
            50..56 => {
                // Split the cluster in two for a while.
                let side: BTreeSet<NodeId> = everyone
                    .iter()
                    .copied()
                    .filter(|_| chance(&mut self.rng, 0.5))
                    .collect();
                self.outcome.partitions += 1;
                self.trace(format!("partition: {side:?} apart from the rest"));
                let heal_at = self.now_ms + between(&mut self.rng, 500, 5_000);
                for a in &everyone {
                    for b in &everyone {
                        if a < b
                            && side.contains(a) != side.contains(b)
                            && !self.network.is_cut(*a, *b)
                        {
                            self.network.cut(*a, *b);
                            if chance(&mut self.rng, 0.5) {
                                self.break_management_connection(*a, *b, true);
                            }
                            self.schedule(heal_at, SimEvent::Heal { a: *a, b: *b });
                        }
                    }
                }
            }
            _ => {}
        }
    }

    // ---- the schema client ----

    fn table_definition(name: &str) -> Vec<u8> {
        let table = TableDef::new(
            name,
            vec![
                ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
                ColumnDef::new("value", ColumnType::Varbinary { length: 64 }, true),
            ],
            vec![0],
            vec![],
        )
        .expect("a valid table");
        let mut out = Vec::new();
        schema::table_codec::encode_table(&table, &TableOptions::default(), &mut out);
        out
    }

    fn random_data_node(&mut self) -> NodeId {
        let nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        nodes[(self.rng.next_u64() % nodes.len() as u64) as usize]
    }

    fn client_step(&mut self) {
        // New requests only while faults run; retries until the end.
        self.schedule(self.now_ms + CLIENT_PERIOD_MS, SimEvent::Client);
        // Retry requests that got no answer.
        let now = self.now_ms;
        let stale: Vec<u64> = self
            .client_requests
            .iter()
            .filter(|(_, r)| {
                r.retry_to.is_some() || now.saturating_sub(r.sent_ms) > CLIENT_TIMEOUT_MS
            })
            .map(|(id, _)| *id)
            .collect();
        for id in stale {
            let request = self.client_requests.remove(&id).expect("listed");
            let to = request
                .retry_to
                .filter(|node| self.nodes.contains_key(node))
                .unwrap_or_else(|| self.random_data_node());
            self.client_resend(to, id, request.change);
        }
        if self.workload.is_some() {
            self.create_workload_tables();
            return;
        }
        if self.now_ms >= self.options.fault_ms || !self.client_requests.is_empty() {
            return;
        }
        let change = if !self.acknowledged_tables.is_empty() && chance(&mut self.rng, 0.3) {
            let names: Vec<String> = self.acknowledged_tables.keys().cloned().collect();
            let name = names[(self.rng.next_u64() % names.len() as u64) as usize].clone();
            SchemaChange::DropTable { name }
        } else if !self.acknowledged_tables.is_empty() && chance(&mut self.rng, 0.2) {
            let names: Vec<String> = self.acknowledged_tables.keys().cloned().collect();
            let from = names[(self.rng.next_u64() % names.len() as u64) as usize].clone();
            // A fresh name: "exists" can then only be a false answer.
            let to = format!("t{}", self.next_table);
            self.next_table += 1;
            SchemaChange::RenameTable { from, to }
        } else {
            let name = format!("t{}", self.next_table);
            self.next_table += 1;
            SchemaChange::CreateTable {
                definition: Simulation::table_definition(&name),
            }
        };
        let to = self.random_data_node();
        self.client_send(to, change);
    }

    fn client_send(&mut self, to: NodeId, change: SchemaChange) {
        let request = self.next_request;
        self.next_request += 1;
        self.client_resend(to, request, change);
    }

    /// Sends `change` as `request`. A retry keeps the request id: the id
    /// names the change, so the cluster answers a retry of a change it
    /// applied with the first answer.
    fn client_resend(&mut self, to: NodeId, request: u64, change: SchemaChange) {
        match &change {
            SchemaChange::DropTable { name } => {
                self.dropping.insert(name.clone());
            }
            // Both names are in flux until the answer comes.
            SchemaChange::RenameTable { from, to } => {
                self.dropping.insert(from.clone());
                self.dropping.insert(to.clone());
            }
            SchemaChange::CreateTable { .. } => {}
        }
        self.client_requests.insert(
            request,
            ClientRequest {
                change: change.clone(),
                sent_ms: self.now_ms,
                retry_to: None,
            },
        );
        self.send(CLIENT_NODE, to, Message::SchemaRequest { request, change });
    }

    fn client_receive(&mut self, from: NodeId, message: Message) {
        let Message::SchemaReply { request, result } = message else {
            return;
        };
        // Not the president, busy, not yet: temporary, the request goes on.
        let temporary = matches!(&result, Err(error) if matches!(error.ndb_code, 702 | 711));
        if !temporary {
            let answer = result
                .as_ref()
                .map(|id| *id)
                .map_err(|error| error.ndb_code);
            match self.final_answers.get(&request) {
                Some(first) if *first != answer => {
                    self.fail(format!(
                        "schema request {request} was answered {first:?} and then {answer:?} \
                         (from node {from}): one of the answers is false"
                    ));
                }
                Some(_) => {}
                None => {
                    self.final_answers.insert(request, answer);
                }
            }
        }
        let Some(sent) = self.client_requests.remove(&request) else {
            return;
        };
        match (result, &sent.change) {
            (Ok(table_id), SchemaChange::CreateTable { definition }) => {
                let (table, _) =
                    schema::table_codec::decode_table(definition).expect("the client's own bytes");
                self.outcome.schema_changes_acknowledged += 1;
                self.trace(format!(
                    "client: table {} created as id {table_id}",
                    table.name
                ));
                self.acknowledged_at_ms
                    .insert(table.name.clone(), self.now_ms);
                self.acknowledged_tables.insert(table.name, table_id);
            }
            (Ok(table_id), SchemaChange::RenameTable { from, to }) => {
                self.outcome.schema_changes_acknowledged += 1;
                self.outcome.renames_acknowledged += 1;
                self.trace(format!("client: table {from} (id {table_id}) renamed {to}"));
                self.acknowledged_tables.remove(from);
                self.dropping.remove(from);
                self.dropping.remove(to);
                // The old name must be gone, the new one hold the same id.
                self.dropped.insert(from.clone(), self.now_ms);
                self.acknowledged_at_ms.insert(to.clone(), self.now_ms);
                self.acknowledged_tables.insert(to.clone(), table_id);
            }
            (Ok(table_id), SchemaChange::DropTable { name }) => {
                self.outcome.schema_changes_acknowledged += 1;
                self.trace(format!("client: table {name} (id {table_id}) dropped"));
                self.acknowledged_tables.remove(name);
                self.dropping.remove(name);
                self.dropped.insert(name.clone(), self.now_ms);
            }
            (Err(error), change) => {
                self.trace(format!(
                    "client: node {from} answered {}: {}",
                    error.ndb_code, error.message
                ));
                match error.ndb_code {
                    // Not the president: retry where it points, or anywhere.
                    702 | 711 => {
                        // Unknown nodes (0: no president known) fall back to
                        // a random node when resent.
                        let retry_to = error.president_hint().unwrap_or(0);
                        self.client_requests.insert(
                            request,
                            ClientRequest {
                                retry_to: Some(retry_to),
                                ..sent
                            },
                        );
                    }
                    // Any other answer is final, and must be true. This
                    // client creates each name once and drops only tables
                    // it created, so "exists" for a create or "does not
                    // exist" for a drop of a table acknowledged in this
                    // generation can only come from an earlier attempt of
                    // the same request having been applied: a false answer.
                    _ => match change {
                        SchemaChange::RenameTable { from, to } => {
                            let acknowledged_in_this_generation = self
                                .acknowledged_at_ms
                                .get(from)
                                .is_some_and(|at| *at > self.last_formation_ms);
                            if (error.ndb_code == 723 && acknowledged_in_this_generation)
                                || error.mysql_code == 1050
                            {
                                self.fail(format!(
                                    "RENAME of table {from} to {to} answered {} ({}), but the \
                                     client owns both names: an earlier attempt of this rename \
                                     was applied",
                                    error.ndb_code, error.message
                                ));
                            }
                            self.dropping.remove(from);
                            self.dropping.remove(to);
                        }
                        SchemaChange::DropTable { name } => {
                            let acknowledged_in_this_generation = self
                                .acknowledged_at_ms
                                .get(name)
                                .is_some_and(|at| *at > self.last_formation_ms);
                            if error.ndb_code == 723 && acknowledged_in_this_generation {
                                self.fail(format!(
                                    "DROP of table {name} answered {} ({}), but the client \
                                     created it and nobody else dropped it: an earlier attempt \
                                     of this drop was applied",
                                    error.ndb_code, error.message
                                ));
                            }
                            self.acknowledged_tables.remove(name);
                            self.dropping.remove(name);
                        }
                        SchemaChange::CreateTable { definition } => {
                            let (table, _) = schema::table_codec::decode_table(definition)
                                .expect("the client's own bytes");
                            if error.mysql_code == 1050 {
                                self.fail(format!(
                                    "CREATE of table {} answered {} ({}), but only this request \
                                     ever created that name: an earlier attempt of it was \
                                     applied",
                                    table.name, error.ndb_code, error.message
                                ));
                            }
                            if error.ndb_code == 827 {
                                self.outcome.creates_refused_for_memory += 1;
                            }
                            if error.ndb_code == 707 {
                                self.outcome.creates_refused_for_table_objects += 1;
                            }
                            self.refused_creates.insert(
                                table.name,
                                format!("{}: {}", error.ndb_code, error.message),
                            );
                        }
                    },
                }
            }
        }
        if self.workload.is_some() {
            self.create_workload_tables();
        }
    }

    // ---- checkers ----

    fn check_installed(&mut self, node: NodeId, incarnation: u64, state: ClusterState) {
        let member = Member { node, incarnation };
        let members: Vec<String> = state
            .members
            .iter()
            .map(|m| {
                // A starting member (still copying its fragments) is marked.
                let starting = if state.starting.contains(m) {
                    "(starting)"
                } else {
                    ""
                };
                format!("{}#{}{starting}", m.node, m.incarnation)
            })
            .collect();
        self.trace(format!(
            "node {node}#{incarnation} installs generation {} version {} members [{}] schema {} \
             tables {}",
            state.generation,
            state.version,
            members.join(" "),
            state.schema_version,
            state.tables.len()
        ));
        if let Some(previous) = self.installed.insert(member, state.position()) {
            if previous >= state.position() {
                self.fail(format!(
                    "node {node}#{incarnation} installed {:?} after {previous:?}",
                    state.position()
                ));
            }
            if previous.0 != state.generation {
                self.fail(format!(
                    "node {node}#{incarnation} ran in generation {} and then joined generation {}: \
                     a new generation forms only from nodes that never started",
                    previous.0, state.generation
                ));
            }
        }
        if !state.contains(member) {
            self.fail(format!(
                "node {node}#{incarnation} installed version {} that does not include it",
                state.version
            ));
        }
        if let Some(group) =
            cluster::state::uncovered_node_group(&state.members, &self.config.node_groups)
        {
            self.fail(format!(
                "version {} has no node of node group {group}",
                state.version
            ));
        }
        // Nor more tables and unique indexes than MaxNoOfTables.
        let objects = cluster::dictionary::table_objects(&state);
        if objects > u64::from(self.tables_max) {
            self.fail(format!(
                "version {} holds {objects} tables and unique indexes, more than \
                 MaxNoOfTables={}",
                state.version, self.tables_max
            ));
        }
        // The president never accepts a table the nodes cannot hold: each
        // node's engine (SCHEMA_RUN_DATA_MEMORY_PAGES of DataMemory in schema
        // runs) creates every fragment a state places on it, or its query
        // handler reports the fragment it could not create, which fails the
        // run (`perform`). The engines, not the president's estimate, are the
        // measure: the president plans from the pages they report.
        // Once a newer generation formed, the old one must never decide
        // anything again: that would be two clusters.
        if let Some(((newest, _), _)) = self.decided.last_key_value()
            && state.generation < *newest
            && state.version > 1
            && !self.decided.contains_key(&state.position())
        {
            self.fail(format!(
                "split brain: generation {} decided version {} after generation {newest} formed",
                state.generation, state.version
            ));
        }
        if self
            .decided
            .last_key_value()
            .is_none_or(|(position, _)| position.0 < state.generation)
        {
            self.last_formation_ms = self.now_ms;
        }
        match self.decided.get(&state.position()) {
            Some(known) if *known != state => {
                let known_members: Vec<String> = known
                    .members
                    .iter()
                    .map(|m| format!("{}#{}", m.node, m.incarnation))
                    .collect();
                self.fail(format!(
                    "split brain: version {} installed as [{}] and as [{}]",
                    state.version,
                    known_members.join(" "),
                    members.join(" ")
                ));
                return;
            }
            Some(_) => return,
            None => {}
        }
        // Against the nearest agreed versions before and after.
        let position = state.position();
        if let Some((_, before)) = self.decided.range(..position).next_back()
            && before.generation == state.generation
        {
            let failure = check_successor(before, &state);
            if let Some(failure) = failure {
                self.fail(failure);
            }
        }
        if let Some((_, after)) = self.decided.range((position.0, position.1 + 1)..).next()
            && after.generation == state.generation
        {
            let failure = check_successor(&state, after);
            if let Some(failure) = failure {
                self.fail(failure);
            }
        }
        self.decided.insert(position, state);
    }

    /// A member removed from the agreed state never comes back: a node that
    /// lost contact is out for good and returns only as a new incarnation.
    fn check_history(&mut self) {
        let mut seen: BTreeSet<Member> = BTreeSet::new();
        let mut removed: BTreeSet<Member> = BTreeSet::new();
        let mut failure = None;
        let mut generation = 0;
        for state in self.decided.values() {
            if state.generation != generation {
                // Incarnations that started never reach a later generation
                // (checked when they install); ones that never started may.
                generation = state.generation;
                seen.clear();
                removed.clear();
            }
            for member in &state.members {
                if removed.contains(member) && failure.is_none() {
                    failure = Some(format!(
                        "node {}#{} was removed and is a member again in version {}",
                        member.node, member.incarnation, state.version
                    ));
                }
            }
            for member in &seen {
                if !state.contains(*member) {
                    removed.insert(*member);
                }
            }
            seen.extend(state.members.iter().copied());
        }
        if let Some(failure) = failure {
            self.fail(failure);
        }
    }

    fn check_converged(&mut self) {
        let live: BTreeMap<NodeId, &cluster::DataNode> = self
            .nodes
            .iter()
            .filter_map(|(id, s)| s.composite.as_ref().map(|c| (*id, c.membership())))
            .collect();
        let mut problems = Vec::new();
        let mut versions = BTreeSet::new();
        for (node, block) in &live {
            match block.state() {
                Some(state) if block.is_started() => {
                    versions.insert(state.version);
                }
                _ => problems.push(format!("node {node} is not started")),
            }
        }
        if versions.len() > 1 {
            problems.push(format!("live nodes are at different versions {versions:?}"));
        }
        let expected: BTreeSet<Member> = live.values().map(|b| b.member()).collect();
        if let Some(block) = live.values().next()
            && let Some(state) = block.state()
        {
            let members: BTreeSet<Member> = state.members.iter().copied().collect();
            if members != expected {
                problems.push(format!(
                    "agreed members {members:?} are not the live nodes {expected:?}"
                ));
            }
            for (name, id) in &self.acknowledged_tables {
                if self.acknowledged_at_ms[name] > self.last_formation_ms
                    && !self.dropping.contains(name)
                    && state.table_by_name(name).map(|t| t.id) != Some(*id)
                {
                    problems.push(format!(
                        "table {name} (id {id}) was acknowledged but is not in the dictionary"
                    ));
                }
            }
            let mut names = BTreeSet::new();
            for table in &state.tables {
                if self
                    .dropped
                    .get(&table.name)
                    .is_some_and(|at| *at > self.last_formation_ms)
                {
                    problems.push(format!(
                        "table {} was acknowledged dropped but is in the dictionary",
                        table.name
                    ));
                }
                if let Some(answer) = self.refused_creates.get(&table.name) {
                    problems.push(format!(
                        "table {} exists, but its CREATE was answered {answer}",
                        table.name
                    ));
                }
                if !names.insert(table.name.to_lowercase()) {
                    problems.push(format!("table name {} appears twice", table.name));
                }
                for fragment in &table.fragments {
                    let mut replicas = fragment.replicas.clone();
                    replicas.sort_unstable();
                    let mut group =
                        self.config.node_groups[usize::from(fragment.node_group)].clone();
                    group.sort_unstable();
                    if replicas != group {
                        problems.push(format!(
                            "table {} partition {} is on {:?}, not node group {}",
                            table.name, fragment.partition, fragment.replicas, fragment.node_group
                        ));
                    }
                }
            }
            self.outcome.final_version = state.version;
            self.outcome.tables = state.tables.len();
        }
        let crashed = self
            .crash_plan
            .as_ref()
            .map(|plan| plan.crashed.clone())
            .unwrap_or_default();
        if let Some(management) = &self.management.composite {
            for status in management.block().status() {
                if status.role == NodeRole::Data
                    && status.state != NodeState::Started
                    && !crashed.contains(&status.node)
                {
                    problems.push(format!(
                        "the management node shows node {} as {}",
                        status.node,
                        status.state.name()
                    ));
                }
            }
        }
        self.outcome.versions_seen = self.decided.len();
        for composite in self.nodes.values().filter_map(|s| s.composite.as_ref()) {
            self.outcome.marks.add(&composite.membership_marks());
            self.outcome.node_marks.add(&composite.marks());
        }
        if !problems.is_empty() {
            let mut message =
                String::from("the cluster did not converge after the faults stopped:");
            for problem in problems {
                let _ = write!(message, "\n  - {problem}");
            }
            self.fail(message);
        }
    }
}

/// Checks that `after` can follow `before` in the agreed history.
fn check_successor(before: &ClusterState, after: &ClusterState) -> Option<String> {
    if after.version == before.version + 1 {
        // One change: the survivors keep their order, at most one is added
        // at the end, or the members stay and the dictionary changes by one.
        let kept: Vec<Member> = after
            .members
            .iter()
            .copied()
            .filter(|m| before.contains(*m))
            .collect();
        let order: Vec<Member> = before
            .members
            .iter()
            .copied()
            .filter(|m| after.contains(*m))
            .collect();
        if kept != order {
            return Some(format!(
                "version {} reorders the members of version {}",
                after.version, before.version
            ));
        }
        let added = after.members.len() - kept.len();
        if added > 1 {
            return Some(format!(
                "version {} admits {added} nodes at once",
                after.version
            ));
        }
        let schema_steps = after.schema_version.abs_diff(before.schema_version);
        if schema_steps > 1 || (schema_steps == 1 && before.members != after.members) {
            return Some(format!(
                "version {} changes more than one thing at once",
                after.version
            ));
        }
    }
    if after.schema_version < before.schema_version || after.next_table_id < before.next_table_id {
        return Some(format!(
            "version {} goes back in the dictionary history",
            after.version
        ));
    }
    None
}
