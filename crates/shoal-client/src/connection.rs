//! A cluster connection (NDB's `Ndb_cluster_connection`): one API node id
//! from the management node, one TCP connection to every data node, a
//! receiving thread per data-node connection that hands each answer to the
//! session waiting for it, and the dictionary as routing.
//!
//! Sessions write their requests straight to the data node's socket (one
//! frame per execute, under that connection's lock); answers come back
//! through the session's mailbox. A transaction id carries its session in
//! its top bits, so the receiving thread finds the mailbox without a map.

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use protocol::{ClusterState, FrameDecoder, Message, NodeId, NodeRole, SchemaChange, encode_frame};
use runtime::blocking::BlockingConnection;
use schema::TableDef;
use schema::distribution::TableOptions;
use transaction::{Routing, TableRoute};

use crate::error::ClientError;
use crate::session::Session;

/// How long one request waits for its answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long opening a connection to a data node (TCP and its Hello) may
/// take: a data node on a host that does not answer must not hold up a
/// client for a whole request timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a data node that could not be reached is left alone before the
/// next attempt, so a node that is down costs nothing per request.
const RECONNECT_INTERVAL: Duration = Duration::from_millis(500);
/// Redirects and temporary errors followed before a schema change gives up.
const SCHEMA_ATTEMPTS_MAX: u32 = 20;
/// Sessions one cluster connection serves at once.
pub const SESSIONS_MAX: usize = 4_096;
/// A transaction id is `session << SESSION_SHIFT | sequence`.
pub(crate) const SESSION_SHIFT: u32 = 40;
/// The mailbox of the connection's own requests (dictionary, schema).
const ADMIN_MAILBOX: usize = 0;

/// What a session's mailbox receives.
#[derive(Debug)]
pub(crate) enum Delivery {
    Message(Message),
    /// The connection to this data node failed.
    NodeDown(NodeId),
}

#[derive(Default)]
pub(crate) struct Mailbox {
    queue: Mutex<VecDeque<Delivery>>,
    ready: Condvar,
}

impl Mailbox {
    fn push(&self, delivery: Delivery) {
        self.queue.lock().expect("mailbox").push_back(delivery);
        self.ready.notify_one();
    }

    /// Takes everything delivered, waiting until `deadline` for the first.
    pub(crate) fn take(&self, deadline: Instant, into: &mut VecDeque<Delivery>) -> bool {
        let mut queue = self.queue.lock().expect("mailbox");
        loop {
            if !queue.is_empty() {
                into.append(&mut queue);
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            queue = self.ready.wait_timeout(queue, left).expect("mailbox").0;
        }
    }
}

/// Counters of a cluster connection, summed over its sessions (NDB's
/// `Ndb_api_*_count` status variables).
#[derive(Debug, Default)]
pub(crate) struct SharedCounters {
    pub(crate) values: [AtomicU64; crate::session::COUNTERS],
}

pub(crate) struct Link {
    pub(crate) node: NodeId,
    writer: Mutex<TcpStream>,
    pub(crate) alive: AtomicBool,
}

impl Link {
    /// Sends `bytes` (whole frames); a failure marks the link down.
    pub(crate) fn send(&self, bytes: &[u8]) -> Result<(), ClientError> {
        if !self.alive.load(Ordering::Acquire) {
            return Err(node_down(self.node));
        }
        let mut writer = self.writer.lock().expect("link writer");
        if let Err(error) = writer.write_all(bytes) {
            self.alive.store(false, Ordering::Release);
            let _ = writer.shutdown(Shutdown::Both);
            return Err(ClientError::new(
                crate::error::NODE_FAILURE,
                format!("send to data node {} failed: {error}", self.node),
            ));
        }
        Ok(())
    }
}

pub(crate) fn node_down(node: NodeId) -> ClientError {
    ClientError::new(
        crate::error::NODE_FAILURE,
        format!("data node {node} is not connected (node failure); try again"),
    )
}

/// State the receiving threads share with the connection.
pub(crate) struct Shared {
    mailboxes: RwLock<Vec<Option<Arc<Mailbox>>>>,
    pub(crate) counters: SharedCounters,
}

impl Shared {
    fn deliver(&self, mailbox: usize, delivery: Delivery) {
        let mailboxes = self.mailboxes.read().expect("mailboxes");
        if let Some(Some(mailbox)) = mailboxes.get(mailbox) {
            mailbox.push(delivery);
        }
    }

    fn node_down(&self, node: NodeId) {
        let mailboxes = self.mailboxes.read().expect("mailboxes");
        for mailbox in mailboxes.iter().flatten() {
            mailbox.push(Delivery::NodeDown(node));
        }
    }
}

pub(crate) struct Inner {
    pub(crate) node: NodeId,
    management: Mutex<BlockingConnection>,
    addresses: Mutex<BTreeMap<NodeId, String>>,
    pub(crate) data_nodes: Vec<NodeId>,
    links: Vec<(NodeId, Mutex<Option<Arc<Link>>>)>,
    /// When each data node last failed to connect (see `RECONNECT_INTERVAL`).
    failed_connects: Mutex<BTreeMap<NodeId, Instant>>,
    pub(crate) shared: Arc<Shared>,
    routing: RwLock<Arc<Routing>>,
    next_request: AtomicU64,
    round_robin: AtomicUsize,
    /// One administrative request at a time: they share a mailbox.
    admin: Mutex<()>,
}

/// A connection to a cluster. Cheap to clone; every clone is the same
/// connection. Create one `Session` per thread.
#[derive(Clone)]
pub struct Cluster {
    pub(crate) inner: Arc<Inner>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for (_, slot) in &self.links {
            if let Some(link) = slot.lock().expect("link").take() {
                let _ = link.writer.lock().expect("writer").shutdown(Shutdown::Both);
            }
        }
    }
}

impl Cluster {
    /// Connects to the management node at `connectstring` ("host:port"),
    /// takes a free API node id, connects to every data node and waits
    /// (up to `timeout`) until all are connected and the dictionary is read.
    pub fn connect(connectstring: &str, timeout: Duration) -> Result<Cluster, ClientError> {
        let mut management =
            BlockingConnection::connect(connectstring, 0, NodeRole::Api, REQUEST_TIMEOUT)
                .map_err(|e| ClientError::connection(e.to_string()))?;
        let reply = management
            .request(
                Message::AllocateNodeId {
                    role: NodeRole::Api,
                    requested: None,
                    listen_port: 0,
                },
                REQUEST_TIMEOUT,
                |m| matches!(m, Message::NodeIdAllocated { .. } | Message::Refused { .. }),
            )
            .map_err(|e| ClientError::connection(e.to_string()))?;
        let (node, config_text, config_file) = match reply {
            Message::NodeIdAllocated {
                node,
                config_text,
                config_file,
            } => (node, config_text, config_file),
            Message::Refused { error } => return Err(ClientError::reply(error)),
            _ => unreachable!("filtered by the request"),
        };
        let config = config::parse(&config_text, &config_file).map_err(|e| {
            ClientError::connection(format!("the management node sent a bad configuration: {e}"))
        })?;
        let data_nodes: Vec<NodeId> = config.data_nodes.iter().map(|d| d.node_id).collect();
        let mut mailboxes = vec![None; SESSIONS_MAX];
        mailboxes[ADMIN_MAILBOX] = Some(Arc::new(Mailbox::default()));
        let inner = Arc::new(Inner {
            node,
            management: Mutex::new(management),
            addresses: Mutex::new(BTreeMap::new()),
            links: data_nodes.iter().map(|n| (*n, Mutex::new(None))).collect(),
            failed_connects: Mutex::new(BTreeMap::new()),
            data_nodes,
            shared: Arc::new(Shared {
                mailboxes: RwLock::new(mailboxes),
                counters: SharedCounters::default(),
            }),
            routing: RwLock::new(Arc::new(Routing::new())),
            next_request: AtomicU64::new(1),
            round_robin: AtomicUsize::new(0),
            admin: Mutex::new(()),
        });
        let cluster = Cluster { inner };
        cluster.wait_until_ready(&config.node_groups, Instant::now() + timeout)?;
        Ok(cluster)
    }

    /// Connects to the data nodes and reads the dictionary. Ready as soon
    /// as every member of the started cluster is connected: a data node
    /// that is down is not waited for. At the deadline, a connected member
    /// in every node group is enough; without one the error names the node
    /// groups and nodes not reached.
    fn wait_until_ready(
        &self,
        node_groups: &[Vec<NodeId>],
        deadline: Instant,
    ) -> Result<(), ClientError> {
        let mut last_error = None;
        loop {
            self.absorb_addresses(Duration::from_millis(50))?;
            self.connect_data_nodes();
            let connected: Vec<NodeId> = self
                .inner
                .data_nodes
                .iter()
                .copied()
                .filter(|n| self.link(*n).is_some())
                .collect();
            if !connected.is_empty() {
                // A dictionary from a member means the cluster has started.
                match self.refresh_dictionary() {
                    Ok(()) => {
                        let routing = self.routing();
                        let members = self
                            .inner
                            .data_nodes
                            .iter()
                            .filter(|n| routing.is_live(**n));
                        if members.clone().all(|n| connected.contains(n)) {
                            return Ok(());
                        }
                        let every_group = node_groups.iter().all(|group| {
                            group
                                .iter()
                                .any(|n| routing.is_live(*n) && connected.contains(n))
                        });
                        if every_group && Instant::now() >= deadline {
                            return Ok(());
                        }
                        let missing: Vec<String> = members
                            .filter(|n| !connected.contains(n))
                            .map(|n| n.to_string())
                            .collect();
                        last_error = Some(ClientError::connection(format!(
                            "data node(s) {} are cluster members but not connected",
                            missing.join(", ")
                        )));
                    }
                    Err(error) => last_error = Some(error),
                }
            }
            if Instant::now() >= deadline {
                return Err(last_error.unwrap_or_else(|| {
                    ClientError::connection(format!(
                        "no data node reachable (configured: {:?}) by the deadline",
                        self.inner.data_nodes
                    ))
                }));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The API node id the management node gave this connection.
    pub fn node_id(&self) -> NodeId {
        self.inner.node
    }

    /// The configured data nodes, and whether each is connected.
    pub fn data_nodes(&self) -> Vec<(NodeId, bool)> {
        self.inner
            .data_nodes
            .iter()
            .map(|n| (*n, self.link(*n).is_some()))
            .collect()
    }

    /// A new session (NDB's `Ndb` object): one per thread.
    pub fn session(&self) -> Result<Session, ClientError> {
        let mut mailboxes = self.inner.shared.mailboxes.write().expect("mailboxes");
        let Some(id) = mailboxes
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, m)| m.is_none())
            .map(|(i, _)| i)
        else {
            return Err(ClientError::new(
                4006,
                format!("{SESSIONS_MAX} sessions are open on this cluster connection"),
            ));
        };
        let mailbox = Arc::new(Mailbox::default());
        mailboxes[id] = Some(Arc::clone(&mailbox));
        Ok(Session::new(self.clone(), id as u32, mailbox))
    }

    /// The counters of every session of this connection, summed.
    pub fn counters(&self) -> crate::session::Counters {
        crate::session::Counters::from_values(&self.counter_values())
    }

    pub(crate) fn counter_values(&self) -> [u64; crate::session::COUNTERS] {
        let counters = &self.inner.shared.counters.values;
        std::array::from_fn(|index| counters[index].load(Ordering::Relaxed))
    }

    pub(crate) fn release_session(&self, id: u32) {
        let mut mailboxes = self.inner.shared.mailboxes.write().expect("mailboxes");
        mailboxes[id as usize] = None;
    }

    /// The routing view of the dictionary this connection last read.
    pub fn routing(&self) -> Arc<Routing> {
        Arc::clone(&self.inner.routing.read().expect("routing"))
    }

    /// A table by name, from the dictionary this connection last read
    /// (re-read once if the name is unknown).
    pub fn table(&self, name: &str) -> Result<Arc<TableRoute>, ClientError> {
        if let Some(table) = self.routing().table_by_name(name) {
            return Ok(Arc::clone(table));
        }
        self.refresh_dictionary()?;
        self.routing()
            .table_by_name(name)
            .cloned()
            .ok_or_else(|| ClientError {
                ndb_code: 723,
                mysql_code: 1146,
                message: format!("No such table existed: {name}"),
            })
    }

    /// Reads the dictionary again from a connected data node.
    pub fn refresh_dictionary(&self) -> Result<(), ClientError> {
        let node = self.any_connected()?;
        let state = self.cluster_state(node)?;
        if state.members.is_empty() {
            return Err(ClientError::connection("the cluster has not started yet"));
        }
        let mut routing = Routing::new();
        routing.install(&state);
        *self.inner.routing.write().expect("routing") = Arc::new(routing);
        Ok(())
    }

    pub(crate) fn link(&self, node: NodeId) -> Option<Arc<Link>> {
        let (_, slot) = self.inner.links.iter().find(|(n, _)| *n == node)?;
        slot.lock()
            .expect("link")
            .as_ref()
            .filter(|l| l.alive.load(Ordering::Acquire))
            .cloned()
    }

    /// The link to `node`, reconnecting once if it is down.
    pub(crate) fn link_or_connect(&self, node: NodeId) -> Result<Arc<Link>, ClientError> {
        if let Some(link) = self.link(node) {
            return Ok(link);
        }
        self.absorb_addresses(Duration::ZERO)?;
        self.connect_data_nodes();
        self.link(node).ok_or_else(|| node_down(node))
    }

    /// A connected data node, round-robin (transactions without a hint).
    pub(crate) fn next_node(&self) -> Result<NodeId, ClientError> {
        let nodes = &self.inner.data_nodes;
        let start = self.inner.round_robin.fetch_add(1, Ordering::Relaxed);
        let routing = self.routing();
        for offset in 0..nodes.len() {
            let node = nodes[(start + offset) % nodes.len()];
            if self.link(node).is_some() && routing.is_live(node) {
                return Ok(node);
            }
        }
        self.any_connected()
    }

    fn absorb_addresses(&self, wait: Duration) -> Result<(), ClientError> {
        let deadline = Instant::now() + wait;
        let mut management = self.inner.management.lock().expect("management");
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match management
                .receive(left)
                .map_err(|e| ClientError::connection(e.to_string()))?
            {
                Some(Message::Addresses { entries }) => {
                    let mut addresses = self.inner.addresses.lock().expect("addresses");
                    for entry in entries {
                        addresses.insert(entry.node, format!("{}:{}", entry.host, entry.port));
                    }
                }
                Some(_) => {}
                None => return Ok(()),
            }
        }
    }

    fn connect_data_nodes(&self) {
        for (node, slot) in &self.inner.links {
            if self.link(*node).is_some() {
                continue;
            }
            let Some(address) = self
                .inner
                .addresses
                .lock()
                .expect("addresses")
                .get(node)
                .cloned()
            else {
                continue;
            };
            let recently_failed = self
                .inner
                .failed_connects
                .lock()
                .expect("failed connects")
                .get(node)
                .is_some_and(|at| at.elapsed() < RECONNECT_INTERVAL);
            if recently_failed {
                continue;
            }
            match self.open_link(*node, &address) {
                Some(link) => {
                    *slot.lock().expect("link") = Some(link);
                    self.inner
                        .failed_connects
                        .lock()
                        .expect("failed connects")
                        .remove(node);
                }
                None => {
                    self.inner
                        .failed_connects
                        .lock()
                        .expect("failed connects")
                        .insert(*node, Instant::now());
                }
            }
        }
    }

    /// Connects to data node `node` at `address` and starts its receiving
    /// thread; `None` if it cannot be reached within `CONNECT_TIMEOUT`.
    fn open_link(&self, node: NodeId, address: &str) -> Option<Arc<Link>> {
        let mut opened =
            BlockingConnection::connect(address, self.inner.node, NodeRole::Api, CONNECT_TIMEOUT)
                .ok()?;
        // The data node introduces itself first.
        if !matches!(
            opened.receive(CONNECT_TIMEOUT),
            Ok(Some(Message::Hello { .. }))
        ) {
            return None;
        }
        let (stream, decoder, pending) = opened.into_parts();
        // The handshake left a read timeout on the socket, and a clone
        // shares it: the receiving thread must block until data or a
        // real disconnect, however long the link stays idle.
        stream.set_read_timeout(None).ok()?;
        let reader = stream.try_clone().ok()?;
        let link = Arc::new(Link {
            node,
            writer: Mutex::new(stream),
            alive: AtomicBool::new(true),
        });
        let shared = Arc::clone(&self.inner.shared);
        for message in pending {
            dispatch(&shared, message);
        }
        let receiving = Arc::clone(&link);
        std::thread::Builder::new()
            .name(format!("shoal-receive-{node}"))
            .spawn(move || receive_loop(reader, decoder, receiving, shared))
            .ok()?;
        Some(link)
    }

    fn any_connected(&self) -> Result<NodeId, ClientError> {
        for node in &self.inner.data_nodes {
            if self.link(*node).is_some() {
                return Ok(*node);
            }
        }
        self.absorb_addresses(Duration::from_millis(100))?;
        self.connect_data_nodes();
        self.inner
            .data_nodes
            .iter()
            .copied()
            .find(|n| self.link(*n).is_some())
            .ok_or_else(|| ClientError::connection("no data node is connected"))
    }

    /// Sends an administrative request to `node` and waits for its answer.
    fn request_from(
        &self,
        node: NodeId,
        make: impl Fn(u64) -> Message,
    ) -> Result<Message, ClientError> {
        let request = self.inner.next_request.fetch_add(1, Ordering::Relaxed);
        let link = self.link_or_connect(node)?;
        let mut bytes = Vec::new();
        encode_frame(&[make(request)], &mut bytes);
        let _admin = self.inner.admin.lock().expect("admin");
        let mailbox = {
            let mailboxes = self.inner.shared.mailboxes.read().expect("mailboxes");
            Arc::clone(mailboxes[ADMIN_MAILBOX].as_ref().expect("admin mailbox"))
        };
        link.send(&bytes)?;
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let mut received = VecDeque::new();
        loop {
            if !mailbox.take(deadline, &mut received) {
                return Err(ClientError::new(
                    crate::error::NODE_FAILURE,
                    format!("data node {node} did not answer within {REQUEST_TIMEOUT:?}"),
                ));
            }
            while let Some(delivery) = received.pop_front() {
                match delivery {
                    Delivery::Message(
                        message @ (Message::SchemaReply { .. } | Message::DictionaryReply { .. }),
                    ) if reply_request(&message) == Some(request) => return Ok(message),
                    Delivery::NodeDown(down) if down == node => return Err(node_down(node)),
                    _ => {}
                }
            }
        }
    }

    /// The dictionary and membership as data node `node` sees them.
    pub fn cluster_state(&self, node: NodeId) -> Result<ClusterState, ClientError> {
        match self.request_from(node, |request| Message::DictionaryRequest { request })? {
            Message::DictionaryReply { state, .. } => Ok(state),
            _ => unreachable!("filtered by the request"),
        }
    }

    /// Creates a table; returns its table id. The connection's dictionary
    /// is re-read afterwards.
    pub fn create_table(
        &self,
        table: &TableDef,
        options: &TableOptions,
    ) -> Result<u32, ClientError> {
        let mut definition = Vec::new();
        schema::table_codec::encode_table(table, options, &mut definition);
        let id = self.schema_change(SchemaChange::CreateTable { definition })?;
        self.refresh_dictionary()?;
        Ok(id)
    }

    /// Drops the table called `name`; returns the id it had.
    pub fn drop_table(&self, name: &str) -> Result<u32, ClientError> {
        let id = self.schema_change(SchemaChange::DropTable {
            name: name.to_string(),
        })?;
        self.refresh_dictionary()?;
        Ok(id)
    }

    /// Sends a dictionary change to the president, following redirects and
    /// retrying temporary errors a bounded number of times.
    fn schema_change(&self, change: SchemaChange) -> Result<u32, ClientError> {
        let mut target = self.any_connected()?;
        let mut last_error = None;
        for _ in 0..SCHEMA_ATTEMPTS_MAX {
            let reply = self.request_from(target, |request| Message::SchemaRequest {
                request,
                change: change.clone(),
            });
            let (error, president) = match reply {
                Ok(Message::SchemaReply { result: Ok(id), .. }) => return Ok(id),
                Ok(Message::SchemaReply {
                    result: Err(error), ..
                }) => {
                    let president = error.president_hint();
                    (ClientError::reply(error), president)
                }
                Ok(_) => unreachable!("filtered by the request"),
                Err(error) => (error, None),
            };
            if !error.is_temporary() {
                return Err(error);
            }
            target = president
                .filter(|n| self.inner.data_nodes.contains(n))
                .map_or_else(|| self.any_connected(), Ok)?;
            last_error = Some(error);
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(last_error.expect("at least one attempt"))
    }
}

fn reply_request(message: &Message) -> Option<u64> {
    match message {
        Message::SchemaReply { request, .. } | Message::DictionaryReply { request, .. } => {
            Some(*request)
        }
        _ => None,
    }
}

/// Hands one message from a data node to the mailbox waiting for it.
fn dispatch(shared: &Shared, message: Message) {
    let mailbox = match &message {
        Message::Executed(executed) => (executed.transaction >> SESSION_SHIFT) as usize,
        Message::ScanRows(rows) => (rows.transaction >> SESSION_SHIFT) as usize,
        Message::SchemaReply { .. } | Message::DictionaryReply { .. } => ADMIN_MAILBOX,
        _ => return,
    };
    shared.deliver(mailbox, Delivery::Message(message));
}

/// Room each read of a data-node connection offers at least.
const RECEIVE_BYTES_MIN: usize = 256 * 1024;

/// Reads one data-node connection until it fails, dispatching answers.
fn receive_loop(
    mut reader: TcpStream,
    mut decoder: FrameDecoder,
    link: Arc<Link>,
    shared: Arc<Shared>,
) {
    let mut messages = Vec::new();
    loop {
        // Read straight into the decoder's buffer: no copy per read.
        let read = match reader.read(decoder.spare(RECEIVE_BYTES_MIN)) {
            Ok(0) => break,
            Ok(n) => n,
            // Only a closed or failed connection is a node failure: a
            // timeout or an interrupted read just means nothing arrived.
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(_) => break,
        };
        decoder.filled(read);
        shared.counters.values[crate::session::BYTES_RECEIVED]
            .fetch_add(read as u64, Ordering::Relaxed);
        loop {
            match decoder.next_frame(&mut messages) {
                Ok(true) => {
                    for message in messages.drain(..) {
                        dispatch(&shared, message);
                    }
                }
                Ok(false) => break,
                Err(_) => {
                    link.alive.store(false, Ordering::Release);
                    shared.node_down(link.node);
                    return;
                }
            }
        }
    }
    link.alive.store(false, Ordering::Release);
    shared.node_down(link.node);
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{Executed, TransactionState};
    use std::net::TcpListener;

    /// A receiving thread, its link, and the mailbox of session 1, reading
    /// `client`; the server side of the socket is returned to write to.
    fn receiving(client: TcpStream) -> (Arc<Link>, Arc<Mailbox>) {
        let mut mailboxes = vec![None; 4];
        let mailbox = Arc::new(Mailbox::default());
        mailboxes[1] = Some(Arc::clone(&mailbox));
        let shared = Arc::new(Shared {
            mailboxes: RwLock::new(mailboxes),
            counters: SharedCounters::default(),
        });
        let link = Arc::new(Link {
            node: 2,
            writer: Mutex::new(client.try_clone().expect("clone")),
            alive: AtomicBool::new(true),
        });
        let receiving = Arc::clone(&link);
        std::thread::spawn(move || receive_loop(client, FrameDecoder::new(), receiving, shared));
        (link, mailbox)
    }

    /// A socket that still carries a read timeout (as the handshake leaves
    /// it) must not end the receiving thread: an idle link stays up.
    #[test]
    fn an_idle_link_outlives_a_read_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        client
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let (link, mailbox) = receiving(client);
        std::thread::sleep(Duration::from_millis(300));
        assert!(link.alive.load(Ordering::Acquire), "the idle link died");
        let mut bytes = Vec::new();
        encode_frame(
            &[Message::Executed(Executed {
                transaction: 1 << SESSION_SHIFT | 7,
                state: TransactionState::Committed,
                error: None,
                results: Vec::new(),
                hops: 0,
            })],
            &mut bytes,
        );
        server.write_all(&bytes).expect("write");
        let mut received = VecDeque::new();
        assert!(mailbox.take(Instant::now() + Duration::from_secs(5), &mut received));
        assert!(
            matches!(received.front(), Some(Delivery::Message(Message::Executed(e))) if e.transaction & 0xFF == 7),
            "got {received:?}"
        );
        assert!(link.alive.load(Ordering::Acquire));
    }
}
