//! `shoal datad`: the data node process. One event loop (mio) owns the
//! sockets and drives the `cluster::DataNode` block: it fetches the
//! configuration and its node id from the management node, listens for
//! other data nodes and API nodes, dials every data node with a higher id
//! (one connection per pair), and restarts the block as a new incarnation
//! when the cluster excludes it, as NDB's angel process restarts ndbd.
//!
//! Data nodes on one host talk over a Unix-domain socket instead of TCP
//! (NDB's shared-memory transporter plays this part): each node also
//! listens on the abstract socket named after its TCP address, and a node
//! dialing a peer tries that name first. The bytes, their order and the
//! end-of-stream on a crash are the same; what goes is the loopback TCP/IP
//! stack, which the profile of a write showed to be most of a data node's
//! time (a write sends six messages between data nodes, a read none).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cluster::{DataNode, DataNodeSettings, Effects, Event};
use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Token};
use protocol::{Address, Message, NodeId, NodeRole};
use transaction::{Coordinator, CoordinatorConfig, QueryHandler, Routing};

use crate::blocking::BlockingConnection;
use crate::transport::{
    Connection, IDENTIFICATION_TIMEOUT, Peer, ReceiveMemory, SlotLimits, Stream,
    UNIDENTIFIED_CONNECTIONS_MAX,
};

#[derive(Debug, Clone)]
pub struct DatadOptions {
    pub connectstring: String,
    pub node_id: Option<NodeId>,
    pub initial: bool,
}

const LISTENER: Token = Token(0);
const MANAGEMENT: Token = Token(1);
const LOCAL_LISTENER: Token = Token(2);
const FIRST_PEER_TOKEN: usize = 3;
/// Longest wait in `poll`, so signals and timers are noticed promptly.
const POLL_INTERVAL_MS: u64 = 50;
const MANAGEMENT_RETRY_MS: u64 = 1_000;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Most connections a data node holds, whatever the slot limits say: a
/// backstop, never reached while they hold (identified connections are
/// bounded by the configured nodes, unidentified ones by
/// `UNIDENTIFIED_CONNECTIONS_MAX`).
const CONNECTIONS_MAX: usize = 512;
/// Messages held for one data node while the first connection to it is
/// being set up; past this the node is too slow to reach and messages are
/// dropped (with a log line), as a failed link drops them.
const PENDING_MESSAGES_PER_NODE_MAX: usize = 65_536;

struct Runtime {
    poll: Poll,
    listener: TcpListener,
    /// Data nodes on this host connect here (see the module notes); `None`
    /// where the platform has no abstract sockets or the name was taken.
    local_listener: Option<UnixListener>,
    listen_address: SocketAddr,
    connections: BTreeMap<Token, Connection>,
    next_token: usize,
    management: Option<Token>,
    management_node: NodeId,
    management_address: String,
    management_retry_at: Instant,
    node: NodeId,
    settings: DataNodeSettings,
    block: DataNode,
    coordinator: Coordinator,
    handler: QueryHandler,
    routing: Routing,
    coordinator_config: CoordinatorConfig,
    /// Messages this node sends itself (coordinator ↔ local query handler),
    /// delivered in order within the same loop turn.
    local: VecDeque<Message>,
    /// The connection of each identified peer.
    peers: BTreeMap<NodeId, Token>,
    /// Messages for data nodes this incarnation has not been connected to
    /// yet: a member's link counts as up before its TCP connection is, so
    /// what is sent on it waits here, in order, instead of being lost.
    pending: BTreeMap<NodeId, Vec<Message>>,
    /// Data nodes this incarnation has had a connection to; after one
    /// closes, messages to the node are dropped like those of any failed
    /// link (the node's failure is handled by membership).
    ever_connected: BTreeSet<NodeId>,
    transaction_out: Vec<(NodeId, Message)>,
    addresses: BTreeMap<NodeId, Address>,
    send_buffer_bytes_max: usize,
    /// Received bytes of every connection (`ReceiveBufferMemory` for each
    /// configured node).
    receive_memory: ReceiveMemory,
    slot_limits: SlotLimits,
    /// Connections closed for not saying Hello since the last log line.
    strangers_closed: u64,
    started: Instant,
    stop: Option<String>,
}

fn log(node: NodeId, line: &str) {
    eprintln!("datad {node}: {line}");
}

/// Runs the data node until it is told to stop (status `Ok`) or cannot
/// start (`Err` with what to fix).
pub fn run(options: &DatadOptions) -> Result<(), String> {
    let terminate = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&terminate))
            .map_err(|e| format!("cannot install the signal handler: {e}"))?;
    }
    let (mut management, node, config_file, config_text) =
        allocate_with_retries(options, &terminate)?;
    let config = config::parse(&config_text, &config_file)
        .map_err(|e| format!("the management node sent a bad configuration: {e}"))?;
    let own = config
        .data_node(node)
        .ok_or_else(|| format!("node {node} is not a data node in {config_file}"))?
        .clone();
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
    let handler = QueryHandler::new(
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
    let settings = DataNodeSettings::from_config(&config, node, crate::incarnation_now())
        .ok_or_else(|| "the configuration has no management node".to_string())?;
    let started = Instant::now();
    let block = DataNode::new(settings.clone(), 0);
    let coordinator_config = CoordinatorConfig {
        transactions_max: own.concurrent_transactions_max,
        operations_max: own.concurrent_operations_max,
        scans_max: own.concurrent_scans_max,
        inactive_timeout_ms: own.transaction_inactive_timeout_ms,
    };
    let coordinator = Coordinator::new(node, settings.incarnation, coordinator_config);
    let management_node = settings.management_node;
    let send_buffer_bytes_max = own.send_buffer_memory_bytes as usize;
    let configured_nodes =
        config.data_nodes.len() + config.management_nodes.len() + config.api_nodes.len();
    let receive_memory =
        ReceiveMemory::for_nodes(config.tcp.receive_buffer_memory_bytes, configured_nodes);
    let mut runtime = Runtime {
        poll,
        listener,
        local_listener,
        listen_address,
        connections: BTreeMap::new(),
        next_token: FIRST_PEER_TOKEN,
        management: None,
        management_node,
        management_address: options.connectstring.clone(),
        management_retry_at: Instant::now(),
        node,
        settings,
        block,
        coordinator,
        handler,
        routing: Routing::new(),
        coordinator_config,
        local: VecDeque::new(),
        peers: BTreeMap::new(),
        pending: BTreeMap::new(),
        ever_connected: BTreeSet::new(),
        transaction_out: Vec::new(),
        addresses: BTreeMap::new(),
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
    };
    for notice in &config.notices {
        log(node, notice);
    }
    log(
        node,
        &format!(
            "listening on {listen_address}, incarnation {}, {} LDM thread(s), DataMemory {} MiB",
            runtime.block.member().incarnation,
            own.ldm_threads(),
            own.data_memory_bytes >> 20
        ),
    );
    runtime.adopt_management(management, MANAGEMENT)?;
    runtime.event_loop(&terminate)
}

/// Like NDB's `--connect-retries`/`--connect-retry-delay`: a data node
/// started before its management node waits for it instead of failing.
const START_CONNECT_ATTEMPTS: u32 = 30;
const START_CONNECT_DELAY: Duration = Duration::from_secs(1);

fn allocate_with_retries(
    options: &DatadOptions,
    terminate: &AtomicBool,
) -> Result<(BlockingConnection, NodeId, String, String), String> {
    let mut attempt = 1;
    loop {
        if terminate.load(Ordering::Relaxed) {
            return Err("stopped on a signal before the management node answered".into());
        }
        match allocate(options) {
            Ok(allocated) => return Ok(allocated),
            // A refusal is an answer; only an unreachable node is retried.
            Err(AllocateError::Refused(message)) => return Err(message),
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

enum AllocateError {
    Unreachable(String),
    Refused(String),
}

impl From<AllocateError> for String {
    fn from(error: AllocateError) -> String {
        match error {
            AllocateError::Unreachable(message) | AllocateError::Refused(message) => message,
        }
    }
}

/// Connects to the management node and gets a node id and the configuration.
fn allocate(
    options: &DatadOptions,
) -> Result<(BlockingConnection, NodeId, String, String), AllocateError> {
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
        } => Ok((connection, node, config_file, config_text)),
        Message::Refused { error } => Err(AllocateError::Refused(format!(
            "the management node refused a node id: {} (error {})",
            error.message, error.ndb_code
        ))),
        _ => unreachable!("filtered by the request"),
    }
}

/// The abstract Unix-socket name of the data node listening on TCP
/// `address`: abstract names belong to the host's network namespace, as the
/// loopback addresses do, and vanish with the process that bound them.
#[cfg(target_os = "linux")]
fn local_socket_address(address: SocketAddr) -> Option<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(format!("shoal-datad-{address}")).ok()
}

/// Other platforms have no abstract names: data nodes use TCP only.
#[cfg(not(target_os = "linux"))]
fn local_socket_address(_address: SocketAddr) -> Option<std::os::unix::net::SocketAddr> {
    None
}

impl Runtime {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn adopt_management(
        &mut self,
        connection: BlockingConnection,
        token: Token,
    ) -> Result<(), String> {
        let (stream, decoder, pending) = connection.into_parts();
        stream.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut connection = Connection::new(
            TcpStream::from_std(stream),
            token,
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
        self.connections.insert(token, connection);
        self.management = Some(token);
        for message in pending {
            self.on_management_message(message);
        }
        Ok(())
    }

    fn event_loop(&mut self, terminate: &AtomicBool) -> Result<(), String> {
        let mut events = Events::with_capacity(1024);
        let mut messages = Vec::new();
        loop {
            if terminate.load(Ordering::Relaxed) && self.stop.is_none() {
                log(self.node, "stopping on a signal");
                self.deliver(self.management_node, 0, Message::Stop);
            }
            if let Some(reason) = self.stop.clone() {
                self.flush_all();
                // Give the kernel a moment to hand the goodbyes over.
                std::thread::sleep(Duration::from_millis(50));
                log(self.node, &format!("stopped: {reason}"));
                return Ok(());
            }
            let now = self.now_ms();
            let next_ms = self
                .block
                .next_tick_ms()
                .min(self.handler.next_deadline_ms().unwrap_or(u64::MAX));
            let wait_ms = next_ms.saturating_sub(now).min(POLL_INTERVAL_MS);
            match self
                .poll
                .poll(&mut events, Some(Duration::from_millis(wait_ms)))
            {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("event loop: {e}")),
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    LOCAL_LISTENER => self.accept_local(),
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
            let now = self.now_ms();
            if self.handler.next_deadline_ms().is_some_and(|at| at <= now) {
                self.run_transaction_blocks(|runtime, out| runtime.handler.tick(now, out));
            }
            if now >= self.block.next_tick_ms() {
                let report = self.handler.memory_report();
                self.block
                    .set_memory_pages(u64::from(report.pages_used), u64::from(report.pages_total));
                let mut effects = Effects::new();
                self.block.tick(now, &mut effects);
                self.apply(effects);
                // The inactivity timer runs at the node's tick interval.
                self.run_transaction_blocks(|runtime, out| runtime.coordinator.tick(now, out));
                self.dial_peers();
                self.reconnect_management();
                self.log_strangers_closed();
            }
            self.enforce_slots();
            self.flush_all();
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

    /// Registers a new connection and says Hello on it.
    fn open(&mut self, stream: Stream, peer_address: String, dialed_node: Option<NodeId>) {
        if let Stream::Tcp(stream) = &stream {
            let _ = stream.set_nodelay(true);
        }
        let token = Token(self.next_token);
        self.next_token += 1;
        let mut connection =
            Connection::new(stream, token, peer_address, self.send_buffer_bytes_max)
                .with_receive_memory(self.receive_memory.clone());
        connection.dialed_node = dialed_node;
        connection.queue(self.hello());
        if connection.register(self.poll.registry()).is_ok() {
            self.connections.insert(token, connection);
        }
    }

    fn hello(&self) -> Message {
        Message::Hello {
            node: self.node,
            incarnation: self.block.member().incarnation,
            role: NodeRole::Data,
        }
    }

    /// Dials every data node with a higher id that has no connection yet.
    fn dial_peers(&mut self) {
        let connected: Vec<NodeId> = self
            .connections
            .values()
            .filter_map(|c| c.peer.filter(|p| p.role == NodeRole::Data).map(|p| p.node))
            .collect();
        let dialing: Vec<NodeId> = self
            .connections
            .values()
            .filter(|c| c.peer.is_none())
            .filter_map(|c| c.dialed_node)
            .collect();
        let targets: Vec<Address> = self
            .addresses
            .values()
            .filter(|a| a.node > self.node && a.port != 0)
            .filter(|a| !connected.contains(&a.node) && !dialing.contains(&a.node))
            .cloned()
            .collect();
        for target in targets {
            let Ok(address) = format!("{}:{}", target.host, target.port).parse::<SocketAddr>()
            else {
                continue;
            };
            // Only a data node on this host can have bound the local name
            // of its address; anywhere else the connect fails at once and
            // TCP is used.
            if let Some(stream) =
                local_socket_address(address).and_then(|name| UnixStream::connect_addr(&name).ok())
            {
                self.open(
                    stream.into(),
                    format!("{address} (local socket)"),
                    Some(target.node),
                );
                continue;
            }
            let Ok(stream) = TcpStream::connect(address) else {
                continue;
            };
            self.open(stream.into(), address.to_string(), Some(target.node));
        }
    }

    fn reconnect_management(&mut self) {
        if self.management.is_some() || Instant::now() < self.management_retry_at {
            return;
        }
        self.management_retry_at = Instant::now() + Duration::from_millis(MANAGEMENT_RETRY_MS);
        let options = DatadOptions {
            connectstring: self.management_address.clone(),
            node_id: Some(self.node),
            initial: false,
        };
        match allocate(&options) {
            Ok((mut connection, node, _, _)) => {
                assert_eq!(node, self.node);
                let _ = connection.send(&[Message::Addresses {
                    entries: vec![Address {
                        node,
                        host: self.listen_address.ip().to_string(),
                        port: self.listen_address.port(),
                    }],
                }]);
                log(self.node, "reconnected to the management node");
                let token = Token(self.next_token);
                self.next_token += 1;
                if let Err(e) = self.adopt_management(connection, token) {
                    log(self.node, &format!("management connection: {e}"));
                }
            }
            Err(e) => log(
                self.node,
                &format!("management node unreachable: {}", String::from(e)),
            ),
        }
    }

    fn on_connection_message(&mut self, token: Token, message: Message) {
        if Some(token) == self.management {
            self.on_management_message(message);
            return;
        }
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        if let Message::Hello {
            node,
            incarnation,
            role,
        } = message
        {
            if connection.peer.is_some() {
                return;
            }
            connection.peer = Some(Peer {
                node,
                incarnation,
                role,
            });
            self.peers.insert(node, token);
            if role == NodeRole::Data {
                self.ever_connected.insert(node);
                let held = self.pending.remove(&node).unwrap_or_default();
                let connection = self.connections.get_mut(&token).expect("looked up above");
                for message in held {
                    connection.queue(message);
                }
            }
            // A newer connection from the same node replaces an older one.
            let stale: Vec<Token> = self
                .connections
                .iter()
                .filter(|(t, c)| **t != token && c.peer.is_some_and(|p| p.node == node))
                .map(|(t, _)| *t)
                .collect();
            for old in stale {
                self.close(old, "replaced by a newer connection");
            }
            return;
        }
        let Some(peer) = connection.peer else {
            self.close(token, "spoke before saying Hello");
            return;
        };
        if transaction::is_transaction_message(&message) {
            self.on_transaction_message(peer.node, peer.role, message);
            return;
        }
        // API nodes may ask; only data nodes take part in membership.
        if peer.role != NodeRole::Data
            && !matches!(
                message,
                Message::SchemaRequest { .. } | Message::DictionaryRequest { .. }
            )
        {
            return;
        }
        self.deliver(peer.node, peer.incarnation, message);
    }

    /// Hands a transaction message to the coordinator or the query handler,
    /// then delivers what they send, messages to this node included.
    fn on_transaction_message(&mut self, from: NodeId, role: NodeRole, message: Message) {
        self.run_transaction_blocks(|runtime, out| match role {
            NodeRole::Api => {
                // API nodes talk to coordinators only.
                if !transaction::for_query_handler(&message)
                    || matches!(message, Message::ScanNext(_) | Message::ScanClose { .. })
                {
                    runtime.coordinator.on_message(from, message, out);
                }
            }
            NodeRole::Data => runtime.on_data_node_message(from, message, out),
            NodeRole::Management => {}
        });
    }

    /// A transaction message from a data node (this one included) goes to
    /// the query handler or the coordinator.
    fn on_data_node_message(
        &mut self,
        from: NodeId,
        message: Message,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        if transaction::for_query_handler(&message) {
            let now = self.now_ms();
            self.handler.on_message(now, message, out);
        } else {
            self.coordinator.on_message(from, message, out);
        }
    }

    /// Runs `step` on the transaction blocks, then sends what they put out;
    /// messages to this node go through the local queue, in order, until it
    /// is empty. The output buffer is reused from call to call.
    fn run_transaction_blocks(
        &mut self,
        step: impl FnOnce(&mut Runtime, &mut Vec<(NodeId, Message)>),
    ) {
        let mut out = std::mem::take(&mut self.transaction_out);
        step(self, &mut out);
        self.send_transaction_messages(&mut out);
        self.transaction_out = out;
    }

    fn send_transaction_messages(&mut self, out: &mut Vec<(NodeId, Message)>) {
        loop {
            for (to, message) in out.drain(..) {
                if to == self.node {
                    self.local.push_back(message);
                } else {
                    self.send(to, message);
                }
            }
            let Some(message) = self.local.pop_front() else {
                return;
            };
            self.on_data_node_message(self.node, message, out);
        }
    }

    fn on_management_message(&mut self, message: Message) {
        match message {
            Message::Addresses { entries } => {
                for entry in entries {
                    self.addresses.insert(entry.node, entry);
                }
                // Connect at once: a cluster may form and take work before
                // the next tick.
                self.dial_peers();
            }
            Message::NodeIdAllocated { .. } | Message::Refused { .. } | Message::Hello { .. } => {}
            other => self.deliver(self.management_node, 0, other),
        }
    }

    fn deliver(&mut self, from: NodeId, incarnation: u64, message: Message) {
        let mut effects = Effects::new();
        let now = self.now_ms();
        self.block
            .on_message(now, from, incarnation, message, &mut effects);
        self.apply(effects);
    }

    fn close(&mut self, token: Token, why: &str) {
        let Some(mut connection) = self.connections.remove(&token) else {
            return;
        };
        let _ = self.poll.registry().deregister(&mut connection.stream);
        if let Some(peer) = connection.peer
            && self.peers.get(&peer.node) == Some(&token)
        {
            self.peers.remove(&peer.node);
            if peer.role == NodeRole::Api {
                log(
                    self.node,
                    &format!("connection to API node {} closed: {why}", peer.node),
                );
                self.run_transaction_blocks(|runtime, out| {
                    runtime.coordinator.on_api_failed(peer.node, out);
                });
            }
        }
        if Some(token) == self.management {
            self.management = None;
            log(self.node, &format!("lost the management node: {why}"));
            return;
        }
        if let Some(peer) = connection.peer
            && peer.role == NodeRole::Data
        {
            log(
                self.node,
                &format!("connection to data node {} closed: {why}", peer.node),
            );
            let mut effects = Effects::new();
            let now = self.now_ms();
            self.block.on_disconnected(now, peer.node, &mut effects);
            self.apply(effects);
        }
    }

    fn apply(&mut self, effects: Effects) {
        for event in effects.events {
            match event {
                Event::Installed(state) => {
                    for problem in self.routing.install(&state) {
                        log(self.node, &problem);
                    }
                    self.handler.install(&self.routing);
                    for line in self.handler.take_log() {
                        log(self.node, &line);
                    }
                    self.run_transaction_blocks(|runtime, out| {
                        runtime.coordinator.install(&runtime.routing, out);
                    });
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
                Event::Excluded { reason } => {
                    log(self.node, &format!("excluded: {reason}; restarting"));
                    self.restart();
                    return;
                }
                Event::Stop { reason } => self.stop = Some(reason),
                Event::Log(line) => log(self.node, &line),
                // Only the management node votes as arbitrator.
                Event::PersistVotes(_) => {}
            }
        }
        for (to, message) in effects.sends {
            self.send(to, message);
        }
    }

    fn send(&mut self, to: NodeId, message: Message) {
        let token = if to == self.management_node {
            self.management
        } else {
            self.peers.get(&to).copied()
        };
        if let Some(connection) = token.and_then(|t| self.connections.get_mut(&t)) {
            connection.queue(message);
            return;
        }
        if self.settings.data_nodes.contains(&to) && !self.ever_connected.contains(&to) {
            let held = self.pending.entry(to).or_default();
            if held.len() < PENDING_MESSAGES_PER_NODE_MAX {
                held.push(message);
                if held.len() == PENDING_MESSAGES_PER_NODE_MAX {
                    log(
                        self.node,
                        &format!(
                            "node {to} is still not connected after \
                             {PENDING_MESSAGES_PER_NODE_MAX} messages for it; dropping more \
                             until it is"
                        ),
                    );
                }
            }
        }
    }

    /// A new incarnation: the block starts over and every data-node
    /// connection is closed so peers see the old incarnation fail at once.
    fn restart(&mut self) {
        let peers: Vec<Token> = self
            .connections
            .iter()
            .filter(|(t, _)| Some(**t) != self.management)
            .map(|(t, _)| *t)
            .collect();
        for token in peers {
            if let Some(mut connection) = self.connections.remove(&token) {
                let _ = self.poll.registry().deregister(&mut connection.stream);
            }
        }
        // Every peer connection is gone (the management node's is not a peer).
        self.peers.clear();
        self.pending.clear();
        self.ever_connected.clear();
        self.settings.incarnation = crate::incarnation_now();
        self.block = DataNode::new(self.settings.clone(), self.now_ms());
        // The new incarnation starts without data or transactions: its
        // fragments come back when it is admitted again (and, with node
        // recovery, refilled from live replicas).
        self.coordinator = Coordinator::new(
            self.node,
            self.settings.incarnation,
            self.coordinator_config,
        );
        self.routing = Routing::new();
        self.handler.install(&self.routing);
        log(
            self.node,
            &format!("restarted as incarnation {}", self.settings.incarnation),
        );
    }

    fn flush_all(&mut self) {
        let mut failed = Vec::new();
        for (token, connection) in &mut self.connections {
            if let Err(error) = connection.flush(self.poll.registry()) {
                failed.push((*token, error));
            }
        }
        for (token, error) in failed {
            self.close(token, &error);
        }
    }
}
