//! `shoal-client`: Shoal's native API, the counterpart of the NDB API.
//!
//! For now it covers what the cluster skeleton offers: connect through the
//! management node (which hands this API node its node id and tells it
//! where the data nodes listen), create and drop tables, and read any data
//! node's view of the dictionary, partition maps included. Transactions,
//! batching and scans come with the transaction work; this first version
//! uses blocking connections and is meant for tools and tests.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use protocol::{ClusterState, ErrorReply, Message, NodeId, NodeRole, SchemaChange};
use runtime::blocking::BlockingConnection;
use schema::TableDef;
use schema::distribution::TableOptions;

/// How long one request waits for its answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Redirects and temporary errors followed before giving up.
const SCHEMA_ATTEMPTS_MAX: u32 = 20;

/// An error with NDB's code where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    pub ndb_code: u16,
    pub mysql_code: u16,
    pub message: String,
}

impl ClientError {
    fn connection(message: impl Into<String>) -> ClientError {
        // NDB's 4009: cluster failure / no connection to the cluster.
        ClientError {
            ndb_code: 4009,
            mysql_code: 1296,
            message: message.into(),
        }
    }

    fn reply(error: ErrorReply) -> ClientError {
        ClientError {
            ndb_code: error.ndb_code,
            mysql_code: error.mysql_code,
            message: error.message,
        }
    }

    /// Whether retrying may succeed (NDB's temporary error class).
    pub fn is_temporary(&self) -> bool {
        matches!(self.ndb_code, 702 | 711 | 4009 | 4010)
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error {}: {}", self.ndb_code, self.message)
    }
}

impl std::error::Error for ClientError {}

/// A connection to a cluster: one API node id, one connection per data node.
pub struct Cluster {
    node: NodeId,
    management: BlockingConnection,
    data_nodes: BTreeMap<NodeId, Option<BlockingConnection>>,
    addresses: BTreeMap<NodeId, String>,
    next_request: u64,
}

impl Cluster {
    /// Connects to the management node at `connectstring` ("host:port"),
    /// takes a free API node id and connects to every data node that is
    /// listening, waiting up to `timeout` for their addresses.
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
        let data_node_ids: Vec<NodeId> = parse_data_nodes(&config_text, &config_file)?;
        let mut cluster = Cluster {
            node,
            management,
            data_nodes: data_node_ids.iter().map(|n| (*n, None)).collect(),
            addresses: BTreeMap::new(),
            next_request: 1,
        };
        let deadline = Instant::now() + timeout;
        loop {
            cluster.absorb_addresses(Duration::from_millis(100))?;
            cluster.connect_data_nodes();
            if cluster.data_nodes.values().all(Option::is_some) || Instant::now() >= deadline {
                break;
            }
        }
        if cluster.data_nodes.values().all(Option::is_none) {
            return Err(ClientError::connection(format!(
                "no data node reachable within {} ms",
                timeout.as_millis()
            )));
        }
        Ok(cluster)
    }

    /// The API node id the management node gave this connection.
    pub fn node_id(&self) -> NodeId {
        self.node
    }

    /// The configured data nodes, and whether each is connected.
    pub fn data_nodes(&self) -> Vec<(NodeId, bool)> {
        self.data_nodes
            .iter()
            .map(|(n, c)| (*n, c.is_some()))
            .collect()
    }

    fn absorb_addresses(&mut self, wait: Duration) -> Result<(), ClientError> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .management
                .receive(left)
                .map_err(|e| ClientError::connection(e.to_string()))?
            {
                Some(Message::Addresses { entries }) => {
                    for entry in entries {
                        self.addresses
                            .insert(entry.node, format!("{}:{}", entry.host, entry.port));
                    }
                }
                Some(_) => {}
                None => return Ok(()),
            }
        }
    }

    fn connect_data_nodes(&mut self) {
        for (node, connection) in &mut self.data_nodes {
            if connection.is_some() {
                continue;
            }
            let Some(address) = self.addresses.get(node) else {
                continue;
            };
            if let Ok(mut opened) =
                BlockingConnection::connect(address, self.node, NodeRole::Api, REQUEST_TIMEOUT)
            {
                // The data node introduces itself first.
                if let Ok(Some(Message::Hello { .. })) = opened.receive(REQUEST_TIMEOUT) {
                    *connection = Some(opened);
                }
            }
        }
    }

    fn request_from(
        &mut self,
        node: NodeId,
        make: impl Fn(u64) -> Message,
    ) -> Result<Message, ClientError> {
        let request = self.next_request;
        self.next_request += 1;
        if self.data_nodes.get(&node).is_some_and(Option::is_none) {
            self.absorb_addresses(Duration::ZERO)?;
            self.connect_data_nodes();
        }
        let connection = self
            .data_nodes
            .get_mut(&node)
            .ok_or_else(|| ClientError::connection(format!("node {node} is not a data node")))?
            .as_mut()
            .ok_or_else(|| ClientError::connection(format!("data node {node} is not connected")))?;
        let result = connection.request(make(request), REQUEST_TIMEOUT, |m| match m {
            Message::SchemaReply { request: r, .. }
            | Message::DictionaryReply { request: r, .. } => *r == request,
            _ => false,
        });
        match result {
            Ok(reply) => Ok(reply),
            Err(error) => {
                // Drop the connection; the next request reconnects.
                self.data_nodes.insert(node, None);
                Err(ClientError {
                    ndb_code: 4010,
                    mysql_code: 1296,
                    message: format!("node failure: {error}"),
                })
            }
        }
    }

    /// The dictionary and membership as data node `node` sees them.
    pub fn cluster_state(&mut self, node: NodeId) -> Result<ClusterState, ClientError> {
        match self.request_from(node, |request| Message::DictionaryRequest { request })? {
            Message::DictionaryReply { state, .. } => Ok(state),
            _ => unreachable!("filtered by the request"),
        }
    }

    /// Creates a table; returns its table id.
    pub fn create_table(
        &mut self,
        table: &TableDef,
        options: &TableOptions,
    ) -> Result<u32, ClientError> {
        let mut definition = Vec::new();
        schema::table_codec::encode_table(table, options, &mut definition);
        self.schema_change(SchemaChange::CreateTable { definition })
    }

    /// Drops the table called `name`; returns the id it had.
    pub fn drop_table(&mut self, name: &str) -> Result<u32, ClientError> {
        self.schema_change(SchemaChange::DropTable {
            name: name.to_string(),
        })
    }

    /// Sends a dictionary change to the president, following redirects and
    /// retrying temporary errors a bounded number of times.
    fn schema_change(&mut self, change: SchemaChange) -> Result<u32, ClientError> {
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
                .filter(|n| self.data_nodes.contains_key(n))
                .map_or_else(|| self.any_connected(), Ok)?;
            last_error = Some(error);
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(last_error.expect("at least one attempt"))
    }

    fn any_connected(&mut self) -> Result<NodeId, ClientError> {
        if let Some((node, _)) = self.data_nodes.iter().find(|(_, c)| c.is_some()) {
            return Ok(*node);
        }
        self.absorb_addresses(Duration::from_millis(100))?;
        self.connect_data_nodes();
        self.data_nodes
            .iter()
            .find(|(_, c)| c.is_some())
            .map(|(n, _)| *n)
            .ok_or_else(|| ClientError::connection("no data node is connected"))
    }
}

fn parse_data_nodes(config_text: &str, config_file: &str) -> Result<Vec<NodeId>, ClientError> {
    let config = config::parse(config_text, config_file).map_err(|e| {
        ClientError::connection(format!("the management node sent a bad configuration: {e}"))
    })?;
    Ok(config.data_nodes.iter().map(|d| d.node_id).collect())
}
