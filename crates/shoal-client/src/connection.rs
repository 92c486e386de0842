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

use protocol::identity::ClusterSecret;
use protocol::{ClusterState, FrameDecoder, Message, NodeId, NodeRole, SchemaChange, encode_frame};
use runtime::blocking::BlockingConnection;
use schema::TableDef;
use schema::distribution::TableOptions;
use transaction::{Routing, TableRoute};

use crate::error::ClientError;
use crate::session::Session;

/// How long one request waits for its answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
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
    /// The cluster secret from the management node: this API node proves
    /// its id to data nodes with it, and they theirs to it.
    secret: ClusterSecret,
    addresses: Mutex<BTreeMap<NodeId, String>>,
    pub(crate) data_nodes: Vec<NodeId>,
    links: Vec<(NodeId, Mutex<Option<Arc<Link>>>)>,
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
        let (node, config_text, config_file, secret) = match reply {
            Message::NodeIdAllocated {
                node,
                config_text,
                config_file,
                secret,
            } => (node, config_text, config_file, secret),
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
            secret,
            addresses: Mutex::new(BTreeMap::new()),
            links: data_nodes.iter().map(|n| (*n, Mutex::new(None))).collect(),
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
        let deadline = Instant::now() + timeout;
        loop {
            cluster.absorb_addresses(Duration::from_millis(100))?;
            cluster.connect_data_nodes();
            if cluster
                .inner
                .links
                .iter()
                .all(|(n, _)| cluster.link(*n).is_some())
                || Instant::now() >= deadline
            {
                break;
            }
        }
        if cluster
            .inner
            .links
            .iter()
            .all(|(n, _)| cluster.link(*n).is_none())
        {
            return Err(ClientError::connection(format!(
                "no data node reachable within {} ms",
                timeout.as_millis()
            )));
        }
        // Wait for a started cluster: a dictionary from a member.
        loop {
            match cluster.refresh_dictionary() {
                Ok(()) => break,
                Err(error) if Instant::now() >= deadline => return Err(error),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        Ok(cluster)
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
            let Ok(mut opened) = BlockingConnection::connect(
                &address,
                self.inner.node,
                NodeRole::Api,
                REQUEST_TIMEOUT,
            ) else {
                continue;
            };
            // Each side proves its claim before anything else; a peer
            // that cannot is not the data node it says it is.
            match opened.prove(&self.inner.secret, REQUEST_TIMEOUT) {
                Ok((proven, _)) if proven == *node => {}
                _ => continue,
            }
            let (stream, decoder, pending) = opened.into_parts();
            let Ok(reader) = stream.try_clone() else {
                continue;
            };
            let link = Arc::new(Link {
                node: *node,
                writer: Mutex::new(stream),
                alive: AtomicBool::new(true),
            });
            let shared = Arc::clone(&self.inner.shared);
            for message in pending {
                dispatch(&shared, message);
            }
            let receiving = Arc::clone(&link);
            let spawned = std::thread::Builder::new()
                .name(format!("shoal-receive-{node}"))
                .spawn(move || receive_loop(reader, decoder, receiving, shared));
            if spawned.is_ok() {
                *slot.lock().expect("link") = Some(link);
            }
        }
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
            Ok(0) | Err(_) => break,
            Ok(n) => n,
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
