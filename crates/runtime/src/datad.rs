//! `shoal datad`: the data node process. One event loop (mio) owns the
//! sockets, the clock and the signals; every decision about what the node
//! does is `node::DataNodeComposite`'s (the same code the simulator runs):
//! the loop fetches the configuration and its node id from the management
//! node, listens for other data nodes and API nodes, dials the data nodes
//! the composite names, reopens the management connection without
//! blocking when the composite asks, and feeds every connection event and
//! message in. When the cluster excludes the node the composite restarts
//! as a new incarnation, as NDB's angel process restarts ndbd.
//!
//! Data nodes on one host talk over a Unix-domain socket instead of TCP
//! (NDB's shared-memory transporter plays this part): each node also
//! listens on the abstract socket named after its TCP address, and a node
//! dialing a peer tries that name first. The bytes, their order and the
//! end-of-stream on a crash are the same; what goes is the loopback TCP/IP
//! stack, which the profile of a write showed to be most of a data node's
//! time (a write sends six messages between data nodes, a read none).

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cluster::DataNodeSettings;
use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Token};
use node::{DataNodeComposite, LinkId, Output};
use protocol::identity::ClusterSecret;
use protocol::{Address, Message, NodeId, NodeRole};
use transaction::{CoordinatorConfig, QueryHandler};

use crate::angel::Reporter;
use crate::blocking::{BlockingConnection, BlockingStream, local_socket_address};
use crate::exit::StopKind;
use crate::node_disk::{
    DiskThread, Done, FileRestoreSource, SystemFileStore, file_system_directory, read_saved_state,
    redo_directory,
};
use crate::transport::{
    Connection, IDENTIFICATION_TIMEOUT, Peer, ReceiveMemory, SlotLimits, Stream,
    UNIDENTIFIED_CONNECTIONS_MAX,
};

#[derive(Debug, Clone)]
pub struct DatadOptions {
    pub connectstring: String,
    pub node_id: Option<NodeId>,
    pub initial: bool,
    /// Where the angel reads this worker's reports (`crate::angel`); `None`
    /// without an angel.
    pub report_fd: Option<i32>,
}

const LISTENER: Token = Token(0);
const MANAGEMENT: Token = Token(1);
const LOCAL_LISTENER: Token = Token(2);
/// The redo log's thread woke the loop: it has outcomes.
const DISK: Token = Token(3);
const FIRST_PEER_TOKEN: usize = 4;
/// Longest wait in `poll`, so signals and timers are noticed promptly.
const POLL_INTERVAL_MS: u64 = 50;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Most connections a data node holds, whatever the slot limits say: a
/// backstop, never reached while they hold (identified connections are
/// bounded by the configured nodes, unidentified ones by
/// `UNIDENTIFIED_CONNECTIONS_MAX`).
const CONNECTIONS_MAX: usize = 512;

struct Runtime {
    poll: Poll,
    listener: TcpListener,
    /// Data nodes on this host connect here (see the module notes); `None`
    /// where the platform has no abstract sockets or the name was taken.
    local_listener: Option<UnixListener>,
    connections: BTreeMap<Token, Connection>,
    next_token: usize,
    /// The management node's connection, once connected.
    management: Option<Token>,
    /// A management connection being opened (not yet writable).
    management_connecting: Option<Token>,
    management_node: NodeId,
    management_address: String,
    /// The management node's address as resolved at start, so reconnecting
    /// never waits on a name lookup inside the event loop.
    management_socket_address: Option<SocketAddr>,
    node: NodeId,
    /// Every decision about peers, messages and restarts (sans-IO).
    composite: DataNodeComposite,
    /// What the composite asked for, performed by `perform`.
    /// What the composite asks for, boxed so that swapping it with `spare`
    /// moves a pointer, not the whole struct, on every message.
    output: Box<Output>,
    /// Empty buffers, swapped in while `perform` acts on `output` (taken
    /// while it runs, so a nested `perform` allocates a fresh one).
    spare: Option<Box<Output>>,
    send_buffer_bytes_max: usize,
    /// Received bytes of every connection (`ReceiveBufferMemory` for each
    /// configured node).
    receive_memory: ReceiveMemory,
    slot_limits: SlotLimits,
    /// Connections closed for not saying Hello since the last log line.
    strangers_closed: u64,
    started: Instant,
    stop: Option<(String, StopKind)>,
    /// Lines for the angel (`error=`, `signal=`, `phase=`).
    reporter: Reporter,
    /// Whether `phase=started` was reported for the current incarnation.
    reported_started: bool,
    /// Does the redo log's writes and syncs; `None` for a Diskless node.
    disk: Option<DiskThread>,
    disk_requests: Vec<disk::DiskRequest>,
    disk_completions: Vec<Done>,
    /// SchedulerSpinTimer: how long the loop polls for input, yielding
    /// the core between polls, before it sleeps in `epoll_wait`.
    spin: Duration,
    /// The rings of a link over shared memory with a process on this host
    /// (`ShmSize`, rounded down to a power of two); `None` with UseShm=0.
    shared_memory_ring_bytes: Option<usize>,
}

fn log(node: NodeId, line: &str) {
    eprintln!("datad {node}: {} {line}", time_of_day());
}

/// The UTC time of day with milliseconds, as the cluster log prints it: the
/// logs of several nodes are read side by side.
fn time_of_day() -> String {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let millis = since_epoch.as_millis() % 86_400_000;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        millis / 3_600_000,
        millis / 60_000 % 60,
        millis / 1_000 % 60,
        millis % 1_000
    )
}

/// Runs the data node until it is told to stop (`Ok` with how, which sets
/// the exit code the angel reads) or cannot start (`Err` with what to fix,
/// also reported to the angel as `error=`).
pub fn run(options: &DatadOptions) -> Result<StopKind, String> {
    let mut reporter = Reporter::open(options.report_fd)?;
    reporter.report_panics();
    let result = run_reporting(options, &mut reporter);
    if let Err(error) = &result {
        reporter.report("error", error);
    }
    result
}

fn run_reporting(options: &DatadOptions, reporter: &mut Reporter) -> Result<StopKind, String> {
    let terminate = Arc::new(AtomicBool::new(false));
    // Which signal came, for the angel's log.
    let signal_received = Arc::new(AtomicUsize::new(0));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&terminate))
            .and_then(|_| {
                signal_hook::flag::register_usize(
                    signal,
                    Arc::clone(&signal_received),
                    signal as usize,
                )
            })
            .map_err(|e| format!("cannot install the signal handler: {e}"))?;
    }
    reporter.report("phase", "allocating");
    let (mut management, node, config_file, config_text, secret) =
        allocate_with_retries(options, &terminate)?;
    reporter.report("node", &node.to_string());
    let config = config::parse(&config_text, &config_file)
        .map_err(|e| format!("the management node sent a bad configuration: {e}"))?;
    let own = config
        .data_node(node)
        .ok_or_else(|| format!("node {node} is not a data node in {config_file}"))?
        .clone();
    // The angel restarts (or not) by these.
    reporter.report("stop_on_error", if own.stop_on_error { "1" } else { "0" });
    reporter.report(
        "max_start_fail_retries",
        &own.start_fail_retries_max.to_string(),
    );
    reporter.report(
        "start_fail_retry_delay_s",
        &own.start_fail_retry_delay_s.to_string(),
    );
    crate::machine::check_data_memory(own.data_memory_bytes)?;
    let bind_host = if own.host_name == "localhost" {
        "127.0.0.1"
    } else {
        own.host_name.as_str()
    };
    let bind: SocketAddr = format!("{bind_host}:{}", own.server_port)
        .parse()
        .or_else(|_| format!("0.0.0.0:{}", own.server_port).parse())
        .map_err(|e| format!("bad HostName {}: {e}", own.host_name))?;
    let mut listener = TcpListener::bind(bind)
        .map_err(|e| format!("cannot listen on {bind} (ServerPort): {e}"))?;
    let listen_address = listener.local_addr().map_err(|e| e.to_string())?;
    management
        .send(&[Message::Addresses {
            entries: vec![Address {
                node,
                host: listen_address.ip().to_string(),
                port: listen_address.port(),
            }],
        }])
        .map_err(|e| e.to_string())?;
    let poll = Poll::new().map_err(|e| format!("cannot create the event loop: {e}"))?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .map_err(|e| e.to_string())?;
    let mut local_listener = local_socket_address(listen_address).and_then(|name| {
        match UnixListener::bind_addr(&name) {
            Ok(local) => Some(local),
            Err(e) => {
                // TCP still works; only the shortcut is lost.
                log(
                    node,
                    &format!("no local socket for data nodes on this host: {e}"),
                );
                None
            }
        }
    });
    if let Some(local) = &mut local_listener {
        poll.registry()
            .register(local, LOCAL_LISTENER, Interest::READABLE)
            .map_err(|e| e.to_string())?;
    }
    let mut handler = QueryHandler::new(
        node,
        storage::engine::EngineConfig {
            data_memory_bytes: own.data_memory_bytes,
            operations_max: own.concurrent_operations_max,
            transactions_max: own.concurrent_transactions_max,
            lock_wait_timeout_ms: own.transaction_deadlock_detection_timeout_ms,
            // Committed now, as NDB does, so no page fault lands on an
            // operation and a machine short of memory fails here.
            touch_memory_at_start: true,
            ..Default::default()
        },
    )
    .map_err(|e| {
        format!(
            "cannot reserve DataMemory ({} bytes): {e}",
            own.data_memory_bytes
        )
    })?;
    handler.set_copy_batch_rows(own.copy_batch_rows);
    handler.set_copy_rows_per_second(own.copy_rows_per_second);
    // A Diskless node opens nothing (NDB's Diskless=1); --initial still
    // deletes what an earlier run with a disk left.
    let opened = if own.diskless {
        let file_system = file_system_directory(std::path::Path::new(&own.data_dir), node);
        if options.initial && file_system.exists() {
            std::fs::remove_dir_all(&file_system)
                .map_err(|e| format!("--initial: cannot delete {}: {e}", file_system.display()))?;
        }
        log(
            node,
            "Diskless: no redo log and no local checkpoints; a system restart starts empty",
        );
        None
    } else {
        Some(open_disk(node, &own, options.initial)?)
    };
    let mut disk = None;
    let mut restore = None;
    if let Some(opened) = opened {
        handler.set_redo(opened.log);
        let waker = Arc::new(
            mio::Waker::new(poll.registry(), DISK)
                .map_err(|e| format!("cannot create the disk thread's waker: {e}"))?,
        );
        disk = Some(DiskThread::start(
            opened.redo_files,
            opened.system,
            opened.file_system.clone(),
            waker,
        )?);
        restore = Some((
            opened.start,
            FileRestoreSource {
                file_system: opened.file_system,
                redo_config: opened.redo_config,
                redo_files: None,
            },
        ));
    }
    let settings = DataNodeSettings::from_config(&config, node, crate::incarnation_now())
        .ok_or_else(|| "the configuration has no management node".to_string())?;
    let started = Instant::now();
    let coordinator_config = CoordinatorConfig {
        transactions_max: own.concurrent_transactions_max,
        operations_max: own.concurrent_operations_max,
        scans_max: own.concurrent_scans_max,
        inactive_timeout_ms: own.transaction_inactive_timeout_ms,
    };
    let management_node = settings.management_node;
    let incarnation = settings.incarnation;
    let mut composite = DataNodeComposite::new(
        settings,
        0,
        handler,
        coordinator_config,
        Address {
            node,
            host: listen_address.ip().to_string(),
            port: listen_address.port(),
        },
        secret,
        cluster::epochs::EpochConfig::from_config(&own),
    );
    if let Some((start, source)) = restore {
        composite.set_disk(
            start,
            Box::new(source),
            (
                checkpoint_trigger_bytes(&own),
                node::durability::CHECKPOINT_SLICE_BYTES,
                node::data_node::RESTORE_STEP_BYTES,
            ),
        );
    }
    let send_buffer_bytes_max = own.send_buffer_memory_bytes as usize;
    let configured_nodes =
        config.data_nodes.len() + config.management_nodes.len() + config.api_nodes.len();
    let receive_memory =
        ReceiveMemory::for_nodes(config.tcp.receive_buffer_memory_bytes, configured_nodes);
    let mut runtime = Runtime {
        poll,
        listener,
        local_listener,
        connections: BTreeMap::new(),
        next_token: FIRST_PEER_TOKEN,
        management: None,
        management_connecting: None,
        management_node,
        management_address: options.connectstring.clone(),
        management_socket_address: None,
        node,
        composite,
        output: Box::default(),
        spare: Some(Box::default()),
        send_buffer_bytes_max,
        receive_memory,
        slot_limits: SlotLimits {
            unidentified_max: UNIDENTIFIED_CONNECTIONS_MAX,
            identified_max: configured_nodes,
            identification_timeout: IDENTIFICATION_TIMEOUT,
        },
        strangers_closed: 0,
        started,
        stop: None,
        reporter: std::mem::take(reporter),
        reported_started: false,
        disk,
        disk_requests: Vec::new(),
        disk_completions: Vec::new(),
        spin: Duration::from_micros(own.scheduler_spin_us),
        shared_memory_ring_bytes: own
            .use_shared_memory
            .then(|| ring_bytes_of(own.shared_memory_bytes)),
    };
    for notice in &config.notices {
        log(node, notice);
    }
    log(
        node,
        &format!(
            "listening on {listen_address}, incarnation {incarnation}, {} LDM thread(s), \
             DataMemory {} MiB",
            own.ldm_threads(),
            own.data_memory_bytes >> 20
        ),
    );
    runtime.reporter.report("phase", "joining");
    runtime.adopt_management(management)?;
    let result = runtime.event_loop(&terminate, &signal_received);
    // Handed back so `run` can report an error of the loop.
    *reporter = std::mem::take(&mut runtime.reporter);
    result
}

/// The ring size `ShmSize` gives: the largest power of two not above it,
/// within the sizes a ring may have (the configuration checks the range).
fn ring_bytes_of(shm_size_bytes: u64) -> usize {
    let bytes = (shm_size_bytes as usize).clamp(
        crate::shared_memory::RING_BYTES_MIN,
        crate::shared_memory::RING_BYTES_MAX,
    );
    1 << bytes.ilog2()
}

/// Redo bytes appended that start a local checkpoint: NDB's
/// TimeBetweenLocalCheckpoints, the base-2 logarithm of 4-byte words.
fn checkpoint_trigger_bytes(own: &config::DataNodeConfig) -> u64 {
    4u64 << own.time_between_local_checkpoints.min(40)
}

/// A data node's files, opened at start.
struct OpenedDisk {
    log: disk::RedoLog,
    redo_files: crate::redo_files::RedoFiles,
    system: SystemFileStore,
    start: node::durability::DiskStart,
    file_system: std::path::PathBuf,
    redo_config: disk::RedoConfig,
}

/// Opens the node's files in its DataDir (`--initial` deletes them first):
/// the system file, whose redo generation is raised and synced before
/// anything is appended, the redo log's files, read from the tail to their
/// end (what a system restart can restore), and the saved cluster state.
fn open_disk(
    node: NodeId,
    own: &config::DataNodeConfig,
    initial: bool,
) -> Result<OpenedDisk, String> {
    let file_system = file_system_directory(std::path::Path::new(&own.data_dir), node);
    if initial && file_system.exists() {
        std::fs::remove_dir_all(&file_system)
            .map_err(|e| format!("--initial: cannot delete {}: {e}", file_system.display()))?;
        log(
            node,
            &format!("--initial: deleted {}", file_system.display()),
        );
    }
    let redo_config = disk::RedoConfig {
        files: own.fragment_log_files,
        file_bytes: own.fragment_log_file_size_bytes,
        buffer_bytes: own.redo_buffer_bytes,
    };
    redo_config.check()?;
    let mut system = SystemFileStore::open(&file_system)?;
    let mut contents = system.contents().clone();
    contents.generation = contents
        .generation
        .checked_add(1)
        .ok_or("the redo log's generation is at its largest")?;
    system.write(contents.clone())?;
    for path in crate::node_disk::delete_unchained_checkpoints(&file_system, &contents.checkpoints)?
    {
        log(
            node,
            &format!(
                "deleted {}: the local checkpoint chain does not name it",
                path.display()
            ),
        );
    }
    let directory = redo_directory(&file_system);
    let mut redo_files =
        crate::redo_files::RedoFiles::open(&directory, &redo_config).map_err(|e| e.to_string())?;
    let mut survey = node::durability::Survey::default();
    let redo_end = disk::scan(
        &redo_config,
        contents.redo_tail,
        &mut redo_files,
        |record| survey.visit(&contents, &record),
    )?;
    let state = read_saved_state(&file_system)?;
    log(
        node,
        &format!(
            "redo log: {} files of {} MiB in {}, generation {}; from its tail {} to {}: {} \
             record(s){}; local checkpoint(s) {}",
            redo_config.files,
            redo_config.file_bytes >> 20,
            directory.display(),
            contents.generation,
            contents.redo_tail,
            redo_end,
            survey.records,
            match survey.restorable_epoch {
                0 => String::new(),
                epoch => format!(
                    ", restorable through GCI {}",
                    cluster::epochs::gci_before(epoch)
                ),
            },
            disk::system_file::chain_names(&contents.checkpoints)
        ),
    );
    Ok(OpenedDisk {
        log: disk::RedoLog::resume(
            redo_config,
            contents.redo_tail,
            redo_end,
            contents.generation,
        ),
        redo_files,
        system,
        start: node::durability::DiskStart {
            system: contents,
            redo_end,
            survey,
            state,
        },
        file_system,
        redo_config,
    })
}

/// Like NDB's `--connect-retries`/`--connect-retry-delay`: a data node
/// started before its management node waits for it instead of failing.
const START_CONNECT_ATTEMPTS: u32 = 30;
const START_CONNECT_DELAY: Duration = Duration::from_secs(1);
/// How long a temporary refusal of the node id (5020: an earlier
/// connection with this id is still open, e.g. this node's previous
/// process, stopped, whose connection the management node closes once it
/// has been silent for the heartbeat limit) is retried, with backoff.
const TEMPORARY_REFUSAL_RETRY_FOR: Duration = Duration::from_secs(60);
const TEMPORARY_REFUSAL_DELAY_MAX: Duration = Duration::from_secs(8);

fn allocate_with_retries(
    options: &DatadOptions,
    terminate: &AtomicBool,
) -> Result<Allocated, String> {
    let mut attempt = 1;
    let started = std::time::Instant::now();
    let mut refusal_delay = Duration::from_millis(250);
    loop {
        if terminate.load(Ordering::Relaxed) {
            return Err("stopped on a signal before the management node answered".into());
        }
        match allocate(options) {
            Ok(allocated) => return Ok(allocated),
            // A permanent refusal is an answer; an unreachable node and a
            // temporary refusal are retried.
            Err(AllocateError::Refused(message)) => return Err(message),
            Err(AllocateError::RefusedForNow(message))
                if started.elapsed() >= TEMPORARY_REFUSAL_RETRY_FOR =>
            {
                return Err(format!(
                    "{message}; gave up after {} s",
                    TEMPORARY_REFUSAL_RETRY_FOR.as_secs()
                ));
            }
            Err(AllocateError::RefusedForNow(message)) => {
                eprintln!(
                    "datad: {message}; retrying in {} ms",
                    refusal_delay.as_millis()
                );
                std::thread::sleep(refusal_delay);
                refusal_delay = (refusal_delay * 2).min(TEMPORARY_REFUSAL_DELAY_MAX);
            }
            Err(AllocateError::Unreachable(message)) if attempt >= START_CONNECT_ATTEMPTS => {
                return Err(format!("{message}; gave up after {attempt} attempts"));
            }
            Err(AllocateError::Unreachable(message)) => {
                if attempt == 1 || attempt % 5 == 0 {
                    eprintln!("datad: {message}; retrying every second");
                }
                attempt += 1;
                std::thread::sleep(START_CONNECT_DELAY);
            }
        }
    }
}

/// The management connection, the node id, the configuration file's name
/// and text, and the cluster secret.
type Allocated = (BlockingConnection, NodeId, String, String, ClusterSecret);

enum AllocateError {
    Unreachable(String),
    Refused(String),
    /// A temporary refusal (the id is held by a connection being checked).
    RefusedForNow(String),
}

impl From<AllocateError> for String {
    fn from(error: AllocateError) -> String {
        match error {
            AllocateError::Unreachable(message)
            | AllocateError::Refused(message)
            | AllocateError::RefusedForNow(message) => message,
        }
    }
}

/// Connects to the management node and gets a node id and the configuration.
fn allocate(options: &DatadOptions) -> Result<Allocated, AllocateError> {
    let mut connection = BlockingConnection::connect(
        &options.connectstring,
        options.node_id.unwrap_or(0),
        NodeRole::Data,
        CONNECT_TIMEOUT,
    )
    .map_err(|e| {
        AllocateError::Unreachable(format!(
            "{e} (is `shoal mgmd` running there? see --ndb-connectstring)"
        ))
    })?;
    let reply = connection
        .request(
            Message::AllocateNodeId {
                role: NodeRole::Data,
                requested: options.node_id,
                listen_port: 0,
            },
            CONNECT_TIMEOUT,
            |m| matches!(m, Message::NodeIdAllocated { .. } | Message::Refused { .. }),
        )
        .map_err(|e| AllocateError::Unreachable(e.to_string()))?;
    match reply {
        Message::NodeIdAllocated {
            node,
            config_file,
            config_text,
            secret,
        } => Ok((connection, node, config_file, config_text, secret)),
        Message::Refused { error } => {
            let message = format!(
                "the management node refused a node id: {} (error {})",
                error.message, error.ndb_code
            );
            if error.ndb_code == cluster::management::NODE_ID_HELD_NDB_CODE {
                Err(AllocateError::RefusedForNow(message))
            } else {
                Err(AllocateError::Refused(message))
            }
        }
        _ => unreachable!("filtered by the request"),
    }
}

impl Runtime {
    /// Waits up to `timeout` for input. With a spin time, first polls
    /// without sleeping until input comes or the spin time is over,
    /// yielding the core between polls (to the node's peers, on a machine
    /// with fewer cores than busy threads): a thread put to sleep and
    /// woken again by the next message costs two context switches and,
    /// in a virtual machine, an interrupt between cores, which was most of
    /// a data node's CPU during sysbench inserts on 2 cores. Spinning
    /// never goes past the timeout, so deadlines hold.
    ///
    /// Links over shared memory raise no event for their bytes: they are
    /// looked at between polls, and before the thread sleeps each tells its
    /// peer so (the peer then rings the socket for its next bytes).
    fn wait(&mut self, events: &mut Events, timeout: Duration) -> std::io::Result<()> {
        let spin = self.spin.min(timeout);
        if !spin.is_zero() {
            let began = Instant::now();
            loop {
                self.poll.poll(events, Some(Duration::ZERO))?;
                if !events.is_empty() || self.shared_input_waiting() {
                    return Ok(());
                }
                if began.elapsed() >= spin {
                    break;
                }
                std::thread::yield_now();
            }
        }
        let mut sleeping = true;
        for connection in self.connections.values().filter(|c| c.shared()) {
            if !connection.prepare_to_sleep() {
                sleeping = false;
                break;
            }
        }
        let result = if sleeping {
            self.poll.poll(events, Some(timeout - spin))
        } else {
            events.clear();
            Ok(())
        };
        for connection in self.connections.values().filter(|c| c.shared()) {
            connection.woke();
        }
        result
    }

    fn shared_input_waiting(&self) -> bool {
        self.connections.values().any(|c| c.shared_input_waiting())
    }

    /// Reads every link over shared memory that has bytes waiting.
    fn read_shared(&mut self, messages: &mut Vec<Message>) {
        let tokens: Vec<Token> = self
            .connections
            .iter()
            .filter(|(_, c)| c.shared_input_waiting())
            .map(|(token, _)| *token)
            .collect();
        for token in tokens {
            let Some(connection) = self.connections.get_mut(&token) else {
                continue;
            };
            messages.clear();
            let result = connection.read_shared(messages);
            for message in messages.drain(..) {
                self.on_connection_message(token, message);
            }
            if let Err(error) = result {
                self.close(token, &error);
            }
        }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Takes over the connection the start-up allocation used.
    fn adopt_management(&mut self, connection: BlockingConnection) -> Result<(), String> {
        let (stream, decoder, pending) = connection.into_parts();
        let BlockingStream::Tcp(stream) = stream else {
            return Err("the management connection is not TCP".to_string());
        };
        self.management_socket_address = stream.peer_addr().ok();
        stream.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut connection = Connection::new(
            TcpStream::from_std(stream),
            MANAGEMENT,
            self.management_address.clone(),
            self.send_buffer_bytes_max,
        )
        .with_receive_memory(self.receive_memory.clone())
        .with_decoder(decoder);
        connection.peer = Some(Peer {
            node: self.management_node,
            incarnation: 0,
            role: NodeRole::Management,
        });
        connection
            .register(self.poll.registry())
            .map_err(|e| e.to_string())?;
        self.connections.insert(MANAGEMENT, connection);
        self.management = Some(MANAGEMENT);
        let now = self.now_ms();
        for message in pending {
            self.composite
                .on_management_message(now, message, &mut self.output);
        }
        self.perform();
        Ok(())
    }

    fn event_loop(
        &mut self,
        terminate: &AtomicBool,
        signal_received: &AtomicUsize,
    ) -> Result<StopKind, String> {
        let mut events = Events::with_capacity(1024);
        let mut messages = Vec::new();
        loop {
            if terminate.load(Ordering::Relaxed) && self.stop.is_none() {
                log(self.node, "stopping on a signal");
                let signal = match signal_received.load(Ordering::Relaxed) as i32 {
                    signal_hook::consts::SIGINT => "SIGINT",
                    signal_hook::consts::SIGTERM => "SIGTERM",
                    _ => "a signal",
                };
                self.reporter.report("signal", signal);
                let now = self.now_ms();
                self.composite
                    .on_management_message(now, Message::Stop, &mut self.output);
                self.perform();
            }
            if let Some((reason, kind)) = self.stop.clone() {
                self.flush_all();
                // Give the kernel a moment to hand the goodbyes over.
                std::thread::sleep(Duration::from_millis(50));
                log(self.node, &format!("stopped: {reason}"));
                self.reporter.report(
                    "phase",
                    match kind {
                        StopKind::Stopped => "stopped",
                        StopKind::Restart {
                            wait_for_start: false,
                        } => "restarting",
                        StopKind::Restart {
                            wait_for_start: true,
                        } => "restarting, waiting for START",
                    },
                );
                return Ok(kind);
            }
            let now = self.now_ms();
            let wait_ms = self
                .composite
                .next_deadline_ms()
                .saturating_sub(now)
                .min(POLL_INTERVAL_MS);
            match self.wait(&mut events, Duration::from_millis(wait_ms)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("event loop: {e}")),
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    LOCAL_LISTENER => self.accept_local(),
                    // Taken below, after every input of this round.
                    DISK => {}
                    token if Some(token) == self.management_connecting => {
                        self.management_connect_progress(token);
                    }
                    token => {
                        let Some(connection) = self.connections.get_mut(&token) else {
                            continue;
                        };
                        messages.clear();
                        let result = if event.is_readable() || event.is_read_closed() {
                            connection.read(&mut messages)
                        } else {
                            Ok(true)
                        };
                        for message in messages.drain(..) {
                            self.on_connection_message(token, message);
                        }
                        match result {
                            Ok(true) => {}
                            Ok(false) => self.close(token, "closed by the peer"),
                            Err(error) => self.close(token, &error),
                        }
                    }
                }
            }
            self.read_shared(&mut messages);
            let now = self.now_ms();
            if now >= self.composite.next_deadline_ms() {
                self.composite.tick(now, &mut self.output);
                self.perform();
                self.log_strangers_closed();
            }
            self.enforce_slots();
            self.drive_disk();
            self.flush_all();
        }
    }

    /// Gives the composite the redo log's outcomes, then hands the thread
    /// the writes and syncs the log wants now.
    fn drive_disk(&mut self) {
        let now = self.now_ms();
        let Some(disk) = self.disk.as_mut() else {
            return;
        };
        self.disk_completions.extend(disk.completions());
        for completion in self.disk_completions.drain(..) {
            match completion {
                Done::Redo(completion) => {
                    self.composite
                        .on_disk_completion(now, completion, &mut self.output)
                }
                Done::File { token, result } => {
                    self.composite
                        .on_file_done(now, token, result, &mut self.output)
                }
            }
        }
        self.perform();
        self.composite.disk_requests(now, &mut self.disk_requests);
        let disk = self.disk.as_mut().expect("checked above");
        for request in self.disk_requests.drain(..) {
            disk.submit(request);
        }
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, address)) => {
                    if self.connections.len() >= CONNECTIONS_MAX {
                        log(
                            self.node,
                            &format!("refusing {address}: {CONNECTIONS_MAX} connections open"),
                        );
                        continue;
                    }
                    self.open(stream.into(), address.to_string(), None);
                    self.enforce_slots();
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    log(self.node, &format!("accept: {e}"));
                    break;
                }
            }
        }
    }

    /// Accepts data nodes of this host on the local socket.
    fn accept_local(&mut self) {
        let Some(listener) = &self.local_listener else {
            return;
        };
        let mut accepted = Vec::new();
        loop {
            match listener.accept() {
                Ok((stream, _)) => accepted.push(stream),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    log(self.node, &format!("accept on the local socket: {e}"));
                    break;
                }
            }
        }
        for stream in accepted {
            if self.connections.len() >= CONNECTIONS_MAX {
                log(
                    self.node,
                    &format!("refusing a local connection: {CONNECTIONS_MAX} connections open"),
                );
                continue;
            }
            self.open(stream.into(), "local socket".to_string(), None);
            self.enforce_slots();
        }
    }

    /// Closes the connections the slot limits say must go: strangers that
    /// did not say Hello in time or make room for newer ones (counted,
    /// logged once per tick), and identified connections beyond the
    /// configured nodes (told why, and logged).
    fn enforce_slots(&mut self) {
        let evictions =
            self.slot_limits
                .evictions(&self.connections, self.management, Instant::now());
        for eviction in evictions {
            if eviction.refuse {
                if let Some(connection) = self.connections.get_mut(&eviction.token) {
                    log(
                        self.node,
                        &format!("refusing {}: {}", connection.peer_address, eviction.reason),
                    );
                    connection.discard_queued();
                    connection.queue(Message::Refused {
                        error: protocol::ErrorReply {
                            ndb_code: crate::transport::TOO_MANY_CONNECTIONS_NDB_CODE,
                            mysql_code: crate::transport::TOO_MANY_CONNECTIONS_MYSQL_CODE,
                            message: format!("data node {} {}", self.node, eviction.reason),
                        },
                    });
                    // Best effort: the refusal goes out if the socket takes it.
                    let _ = connection.flush(self.poll.registry());
                }
            } else {
                self.strangers_closed += 1;
            }
            self.close(eviction.token, &eviction.reason);
        }
    }

    fn log_strangers_closed(&mut self) {
        if self.strangers_closed > 0 {
            log(
                self.node,
                &format!(
                    "closed {} connection(s) that did not say Hello within {} ms or made room \
                     for newer ones (at most {} wait at once)",
                    self.strangers_closed,
                    self.slot_limits.identification_timeout.as_millis(),
                    self.slot_limits.unidentified_max
                ),
            );
            self.strangers_closed = 0;
        }
    }

    /// Registers a new connection; the composite says Hello on it.
    fn open(&mut self, stream: Stream, peer_address: String, dialed_node: Option<NodeId>) {
        if let Stream::Tcp(stream) = &stream {
            let _ = stream.set_nodelay(true);
        }
        let token = Token(self.next_token);
        self.next_token += 1;
        // The challenge the peer must answer to be identified.
        let nonce = match crate::random_bytes() {
            Ok(nonce) => nonce,
            Err(e) => {
                log(self.node, &format!("refusing {peer_address}: {e}"));
                return;
            }
        };
        let mut connection =
            Connection::new(stream, token, peer_address, self.send_buffer_bytes_max)
                .with_receive_memory(self.receive_memory.clone())
                .proof_required();
        connection.dialed_node = dialed_node;
        if connection.register(self.poll.registry()).is_ok() {
            self.connections.insert(token, connection);
            self.composite
                .on_connected(token.0 as LinkId, dialed_node, nonce, &mut self.output);
            self.perform();
        }
    }

    /// Dials a data node: the local socket of this host if it listens
    /// there, else TCP. Both connects return at once.
    fn dial(&mut self, target: &Address) {
        let Ok(address) = format!("{}:{}", target.host, target.port).parse::<SocketAddr>() else {
            return;
        };
        // Only a data node on this host can have bound the local name of
        // its address; anywhere else the connect fails at once and TCP is
        // used.
        if let Some(stream) =
            local_socket_address(address).and_then(|name| UnixStream::connect_addr(&name).ok())
        {
            self.open(
                stream.into(),
                format!("{address} (local socket)"),
                Some(target.node),
            );
            return;
        }
        let Ok(stream) = TcpStream::connect(address) else {
            return;
        };
        self.open(stream.into(), address.to_string(), Some(target.node));
    }

    /// Starts a non-blocking connect to the management node; the event loop
    /// sees it complete (`management_connect_progress`) and the composite
    /// gives up on it after its deadline.
    fn connect_management(&mut self) {
        self.drop_management("reconnecting");
        let now = self.now_ms();
        let address = self.management_socket_address.or_else(|| {
            self.management_address
                .to_socket_addrs()
                .ok()
                .and_then(|mut addresses| addresses.next())
        });
        let Some(address) = address else {
            self.composite.on_management_lost(
                now,
                &format!("cannot resolve {}", self.management_address),
                &mut self.output,
            );
            return;
        };
        let stream = match TcpStream::connect(address) {
            Ok(stream) => stream,
            Err(e) => {
                self.composite.on_management_lost(
                    now,
                    &format!("cannot connect to {address}: {e}"),
                    &mut self.output,
                );
                return;
            }
        };
        let _ = stream.set_nodelay(true);
        let token = Token(self.next_token);
        self.next_token += 1;
        let mut connection = Connection::new(
            stream,
            token,
            self.management_address.clone(),
            self.send_buffer_bytes_max,
        );
        // Writable once the connect completes (or fails).
        if let Err(e) = self.poll.registry().register(
            &mut connection.stream,
            token,
            Interest::READABLE | Interest::WRITABLE,
        ) {
            self.composite.on_management_lost(
                now,
                &format!("poll registration: {e}"),
                &mut self.output,
            );
            return;
        }
        self.connections.insert(token, connection);
        self.management_connecting = Some(token);
    }

    /// An event on the management connection being opened.
    fn management_connect_progress(&mut self, token: Token) {
        let now = self.now_ms();
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        let Stream::Tcp(stream) = &connection.stream else {
            return;
        };
        let failed = match stream.take_error() {
            Ok(Some(e)) | Err(e) => Some(e.to_string()),
            Ok(None) => None,
        };
        if let Some(error) = failed {
            self.drop_management(&error);
            self.composite
                .on_management_lost(now, &error, &mut self.output);
            self.perform();
            return;
        }
        // Not connected yet: wait for the next event.
        if stream.peer_addr().is_err() {
            return;
        }
        connection.peer = Some(Peer {
            node: self.management_node,
            incarnation: 0,
            role: NodeRole::Management,
        });
        let _ = self
            .poll
            .registry()
            .reregister(&mut connection.stream, token, Interest::READABLE);
        self.management_connecting = None;
        self.management = Some(token);
        self.composite
            .on_management_connected(now, &mut self.output);
        self.perform();
    }

    /// Closes the management connection (open or being opened), if any,
    /// without telling the composite.
    fn drop_management(&mut self, why: &str) {
        for token in [self.management.take(), self.management_connecting.take()]
            .into_iter()
            .flatten()
        {
            if let Some(mut connection) = self.connections.remove(&token) {
                let _ = self.poll.registry().deregister(&mut connection.stream);
                log(self.node, &format!("management connection closed: {why}"));
            }
        }
    }

    fn on_connection_message(&mut self, token: Token, message: Message) {
        let now = self.now_ms();
        match message {
            Message::SharedMemoryOffer { ring_bytes } => {
                self.on_shared_memory_offer(token, ring_bytes);
                return;
            }
            Message::SharedMemoryAnswer { accepted, reason } => {
                self.on_shared_memory_answer(token, accepted, reason);
                return;
            }
            _ => {}
        }
        if Some(token) == self.management {
            self.composite
                .on_management_message(now, message, &mut self.output);
            self.perform();
            return;
        }
        let link = token.0 as LinkId;
        self.composite
            .on_message(now, link, message, &mut self.output);
        // `Connection::peer` stays `None` until the composite identified
        // the peer (the transport's limits key on it).
        if let Some(connection) = self.connections.get_mut(&token) {
            connection.peer = self.composite.peer_of(link).map(|peer| Peer {
                node: peer.node,
                incarnation: peer.incarnation,
                role: peer.role,
            });
        }
        self.perform();
        self.offer_shared_memory(token);
    }

    /// Offers shared memory on a link this node dialed over its host's
    /// local socket, once the peer proved who it is.
    fn offer_shared_memory(&mut self, token: Token) {
        let Some(ring_bytes) = self.shared_memory_ring_bytes else {
            return;
        };
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        if connection.peer.is_none()
            || connection.dialed_node.is_none()
            || !connection.is_local()
            || connection.sharing_decided()
        {
            return;
        }
        if let Err(error) = connection.offer_shared_memory(ring_bytes) {
            // The link stays on the socket.
            log(
                self.node,
                &format!("no shared memory with {}: {error}", connection.peer_address),
            );
        }
    }

    /// A peer on this host offers shared memory: only a peer that proved
    /// who it is may.
    fn on_shared_memory_offer(&mut self, token: Token, ring_bytes: u32) {
        let ring_bytes_max = self.shared_memory_ring_bytes;
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        if connection.peer.is_none() {
            let why = format!(
                "{} offered shared memory before proving who it is",
                connection.peer_address
            );
            self.close(token, &why);
            return;
        }
        connection.on_shared_memory_offer(ring_bytes, ring_bytes_max);
    }

    fn on_shared_memory_answer(&mut self, token: Token, accepted: bool, reason: String) {
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        match connection.on_shared_memory_answer(accepted, reason) {
            Ok(None) => {}
            Ok(Some(reason)) => log(
                self.node,
                &format!(
                    "{} keeps the local socket (no shared memory): {reason}",
                    connection.peer_address
                ),
            ),
            Err(error) => self.close(token, &error),
        }
    }

    /// A connection failed or its peer closed it.
    fn close(&mut self, token: Token, why: &str) {
        let Some(mut connection) = self.connections.remove(&token) else {
            return;
        };
        let _ = self.poll.registry().deregister(&mut connection.stream);
        let now = self.now_ms();
        if Some(token) == self.management || Some(token) == self.management_connecting {
            self.management = None;
            self.management_connecting = None;
            self.composite
                .on_management_lost(now, why, &mut self.output);
        } else {
            self.composite
                .on_link_closed(now, token.0 as LinkId, why, &mut self.output);
        }
        self.perform();
    }

    /// Does what the composite asked for, until it asks for nothing more.
    fn perform(&mut self) {
        // What acting on one output makes the composite say lands in the
        // spare buffers, taken on the next round.
        while !is_empty(&self.output) {
            let mut output = self.spare.take().unwrap_or_default();
            std::mem::swap(&mut self.output, &mut output);
            for (link, why) in output.close.drain(..) {
                if let Some(mut connection) = self.connections.remove(&Token(link as usize)) {
                    let _ = self.poll.registry().deregister(&mut connection.stream);
                    log(
                        self.node,
                        &format!(
                            "closed the connection from {}: {why}",
                            connection.peer_address
                        ),
                    );
                }
            }
            for (link, message) in output.sends.drain(..) {
                if let Some(connection) = self.connections.get_mut(&Token(link as usize)) {
                    connection.queue(message);
                }
            }
            for task in output.files.drain(..) {
                match self.disk.as_mut() {
                    Some(disk) => disk.submit_file(task),
                    None => log(self.node, "a file task on a Diskless node was dropped"),
                }
            }
            if let Some(why) = output.close_management.take() {
                self.drop_management(&why);
            }
            if let Some(token) = self.management
                && let Some(connection) = self.connections.get_mut(&token)
            {
                for message in output.to_management.drain(..) {
                    connection.queue(message);
                }
            }
            for line in output.logs.drain(..).chain(output.problems.drain(..)) {
                log(self.node, &line);
            }
            for state in output.installed.drain(..) {
                if !self.reported_started && state.members.iter().any(|m| m.node == self.node) {
                    self.reported_started = true;
                    self.reporter.report("phase", "started");
                }
                let members: Vec<String> =
                    state.members.iter().map(|m| m.node.to_string()).collect();
                log(
                    self.node,
                    &format!(
                        "cluster state {}.{}: members {} (president {}), {} table(s)",
                        state.generation,
                        state.version,
                        members.join(","),
                        members.first().map_or("-", String::as_str),
                        state.tables.len()
                    ),
                );
            }
            if let Some(reason) = output.stop.take() {
                let kind = match output.restart.take() {
                    None => StopKind::Stopped,
                    Some(options) => StopKind::Restart {
                        wait_for_start: options.no_start,
                    },
                };
                self.stop = Some((reason, kind));
            }
            if let Some(reason) = output.excluded.take() {
                log(self.node, &format!("excluded: {reason}; restarting"));
                self.reporter
                    .report("phase", "restarting after an exclusion");
                self.reported_started = false;
                let now = self.now_ms();
                let incarnation = crate::incarnation_now().max(self.composite.incarnation() + 1);
                self.composite.restart(now, incarnation, &mut self.output);
            }
            if output.connect_management {
                self.connect_management();
            }
            for target in &output.dial {
                self.dial(target);
            }
            // The buffers go back for the next input: reusing them keeps the
            // message path free of allocations (a fresh `Output` grows its
            // vectors again for every message).
            output.clear();
            self.spare = Some(output);
        }
    }

    fn flush_all(&mut self) {
        let mut failed = Vec::new();
        for (token, connection) in &mut self.connections {
            if Some(*token) == self.management_connecting {
                continue;
            }
            if let Err(error) = connection.flush(self.poll.registry()) {
                failed.push((*token, error));
            }
        }
        for (token, error) in failed {
            self.close(token, &error);
        }
    }
}

fn is_empty(output: &Output) -> bool {
    output.sends.is_empty()
        && output.to_management.is_empty()
        && output.close.is_empty()
        && output.dial.is_empty()
        && !output.connect_management
        && output.close_management.is_none()
        && output.logs.is_empty()
        && output.problems.is_empty()
        && output.installed.is_empty()
        && output.excluded.is_none()
        && output.stop.is_none()
        && output.files.is_empty()
}
