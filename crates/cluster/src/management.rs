//! The management node's block: hands out node ids and the configuration,
//! publishes where data nodes listen, collects status for `SHOW`, relays
//! stop requests, votes as arbitrator, and forms the cluster when no data
//! node has started.
//!
//! Arbitration: the management node is a Paxos voter of weight 1 in every
//! cluster-state change (see `data_node`). Its votes are written to disk
//! (`Event::PersistVotes`) before they are sent, and given back to `new`
//! after a restart. Started without them (a new DataDir), it first listens
//! for `arbitration_timeout_ms` and then votes only on versions at least two
//! above any it heard mentioned: any version an earlier run could have voted
//! on has, by then, been mentioned by the data nodes that proposed or
//! learned it.
//!
//! Formation: a cluster forms (state version 1, or one above any version
//! seen before, on a system restart) when every connected data node reports
//! that it has not started and either every configured data node is
//! connected, or `start_partial_timeout_ms` has passed and the connected
//! ones hold a node of every node group (NDB's partial start). The members
//! are in node-id order, so the lowest id presides.

use std::collections::{BTreeMap, BTreeSet};

use protocol::{
    Address, ClusterState, DataNodeReport, ErrorReply, Message, NodeId, NodeRole, NodeState,
    NodeStatus, RestartOptions,
};

use protocol::persisted::{ArbitratorVotes, VoteRecord};

use crate::acceptor::{Acceptor, Vote};
use crate::effects::{Effects, Event};
use crate::state::covers_node_groups;

pub type ConnectionId = u64;

/// A stop request waits at most this long for its nodes to disconnect.
pub const STOP_TIMEOUT_MS: u64 = 30_000;

/// A node still connected this long after its `Stop` is sent it again: a
/// node excluded while the cluster stops restarts in its process, and the
/// `Stop` its old incarnation was sent may have gone with it. A drain
/// sends `Drain` again at this interval too.
pub const STOP_RESEND_MS: u64 = 1_000;

/// A whole-cluster stop waits at most this long for its drain: the data
/// nodes' wait for open transactions (`node::DRAIN_WAIT_MS`) and then a
/// last global checkpoint. Past it the nodes stop anyway, and the log says
/// which commits a start may not bring back.
pub const DRAIN_TIMEOUT_MS: u64 = 10_000;

#[derive(Debug, Clone)]
pub struct ManagementSettings {
    pub node: NodeId,
    pub config_file: String,
    pub config_text: String,
    pub config: config::ClusterConfig,
    pub start_partial_timeout_ms: u64,
    pub heartbeat_interval_ms: u64,
    /// HeartbeatIntervalDbApi: API nodes' management connections send a
    /// keep-alive at this interval.
    pub api_heartbeat_interval_ms: u64,
    /// A node's management connection silent for this many of its
    /// intervals (data nodes report each HeartbeatIntervalDbDb) is closed,
    /// so SHOW tells the truth and the node id is free again.
    pub missed_heartbeats_max: u32,
    pub arbitration_timeout_ms: u64,
    pub arbitrator: bool,
    /// The cluster secret handed out with every node id
    /// (`protocol::identity`): the runtime generates it once and keeps it.
    pub secret: protocol::identity::ClusterSecret,
}

impl ManagementSettings {
    pub fn new(
        config_file: &str,
        config_text: &str,
        config: config::ClusterConfig,
        secret: protocol::identity::ClusterSecret,
    ) -> Self {
        let management = config
            .management_nodes
            .first()
            .expect("config validation requires a management node");
        let first = config
            .data_nodes
            .first()
            .expect("config validation requires a data node");
        ManagementSettings {
            node: management.node_id,
            config_file: config_file.to_string(),
            config_text: config_text.to_string(),
            start_partial_timeout_ms: first.start_partial_timeout_ms,
            heartbeat_interval_ms: first.heartbeat_interval_db_db_ms,
            api_heartbeat_interval_ms: first.heartbeat_interval_db_api_ms,
            missed_heartbeats_max: first.missed_heartbeats_max,
            arbitration_timeout_ms: first.arbitration_timeout_ms,
            arbitrator: management.arbitration_rank > 0,
            config,
            secret,
        }
    }
}

#[derive(Debug, Clone)]
struct Connection {
    peer_host: String,
    node: Option<NodeId>,
    role: Option<NodeRole>,
    /// When the connection last carried a message.
    heard_ms: u64,
}

#[derive(Debug)]
struct PendingStop {
    connection: ConnectionId,
    request: u64,
    nodes: Vec<NodeId>,
    deadline_ms: u64,
    /// When `Stop` goes again to the nodes still connected.
    resend_at_ms: u64,
    include_management: bool,
    /// `N RESTART`: the nodes start again through their angels.
    restart: Option<RestartOptions>,
}

pub struct ManagementNode {
    settings: ManagementSettings,
    started_ms: u64,
    /// The latest time any input carried (a new connection counts as heard
    /// from then).
    now_ms: u64,
    /// Decided states sent to data nodes they removed.
    losers_told: u64,
    connections: BTreeMap<ConnectionId, Connection>,
    allocations: BTreeMap<NodeId, ConnectionId>,
    addresses: BTreeMap<NodeId, Address>,
    reports: BTreeMap<NodeId, DataNodeReport>,
    stopping: BTreeSet<NodeId>,
    incarnation: u64,
    formations: u64,
    /// Acceptors by (generation, version).
    acceptors: BTreeMap<(u64, u64), Acceptor>,
    /// Lowest (generation, version) this node may vote on; `None` while
    /// still listening after its start.
    vote_floor: Option<(u64, u64)>,
    position_mentioned_max: (u64, u64),
    /// The newest position known decided; never voted on again (it
    /// survives restarts with the votes, unlike `latest_state`).
    decided_max: (u64, u64),
    latest_state: Option<ClusterState>,
    unstarted_since_ms: Option<u64>,
    /// The refusal to form without a disk for every node group was logged
    /// (once until the cluster forms).
    restore_refusal_logged: bool,
    /// The state this node formed last. While any of its members is still
    /// connected as the same incarnation the generation may be alive, so the
    /// cluster is not formed again; a member that says it has not started
    /// gets the state again (the first one may have been lost).
    formed: Option<ClusterState>,
    /// The members named by the newest report of a started data node
    /// ((generation, version, node ids)): the management node may not have
    /// learned that state itself.
    report_members: (u64, u64, Vec<NodeId>),
    pending_stops: Vec<PendingStop>,
    /// A whole-cluster stop waiting for its drain.
    draining: Option<ShutdownDrain>,
    shutting_down: bool,
    /// Data nodes restarted with `N RESTART -n`, by the connection of the
    /// angel holding each until `N START`.
    waiting_for_start: BTreeMap<NodeId, ConnectionId>,
}

/// A whole-cluster stop (NDB's graceful system shutdown) first drains
/// the started data nodes (`Message::Drain`): they take no new
/// transactions and say, in `Drained`, the epoch of their last commit and
/// how far the cluster is durable. Once every commit of every node is
/// durable the nodes are stopped, so a start brings back every commit.
#[derive(Debug)]
struct ShutdownDrain {
    connection: ConnectionId,
    order: StopOrder,
    /// The data nodes asked, with their latest answer (epoch, durable
    /// epoch) once in. A node that disconnects is no longer waited for.
    answers: BTreeMap<NodeId, Option<(u64, u64)>>,
    deadline_ms: u64,
    /// When `Drain` goes again to every node asked: each answers again
    /// with its latest figures, so a lost `Drain` or `Drained` only delays.
    resend_at_ms: u64,
}

/// A stop or restart asked for by a management client.
#[derive(Debug)]
struct StopOrder {
    request: u64,
    node: Option<NodeId>,
    include_management: bool,
    restart: Option<RestartOptions>,
}

/// NDB's error for a node that cannot be stopped, restarted or started as
/// asked (not connected, not a data node, not waiting).
const NODE_NOT_STOPPABLE_NDB_CODE: u16 = 5024;

/// The temporary refusal of a node id whose earlier connection is still
/// open: that connection is closed once it is silent for the heartbeat
/// limit, so the id's owner retries (datad and the client back off up to
/// 60 s) and gets it back.
pub const NODE_ID_HELD_NDB_CODE: u16 = 5020;

fn refusal(ndb_code: u16, message: String) -> ErrorReply {
    ErrorReply {
        ndb_code,
        mysql_code: 1296,
        message,
    }
}

impl ManagementNode {
    /// `incarnation` must grow from one start of the management node to the
    /// next (the runtime uses the clock); it names the generations this run forms.
    pub fn new(
        settings: ManagementSettings,
        incarnation: u64,
        now_ms: u64,
        votes: Option<ArbitratorVotes>,
    ) -> ManagementNode {
        assert!(
            incarnation < 1 << 47,
            "incarnation leaves room for 65,536 formations"
        );
        let remembered = votes.is_some();
        let mut votes = votes.unwrap_or_default();
        let latest_state = votes.latest_state.take();
        let acceptors = votes
            .records
            .into_iter()
            .map(|record| {
                (
                    (record.generation, record.version),
                    Acceptor {
                        promised: record.promised,
                        accepted: record.accepted,
                    },
                )
            })
            .collect();
        ManagementNode {
            settings,
            started_ms: now_ms,
            now_ms,
            losers_told: 0,
            connections: BTreeMap::new(),
            allocations: BTreeMap::new(),
            addresses: BTreeMap::new(),
            reports: BTreeMap::new(),
            stopping: BTreeSet::new(),
            incarnation,
            formations: 0,
            acceptors,
            // With its votes remembered, nothing forgotten can be voted twice.
            vote_floor: remembered.then_some((0, 0)),
            position_mentioned_max: votes.position_mentioned_max,
            decided_max: votes.decided_max,
            latest_state,
            unstarted_since_ms: None,
            restore_refusal_logged: false,
            formed: None,
            report_members: (0, 0, Vec::new()),
            pending_stops: Vec::new(),
            draining: None,
            shutting_down: false,
            waiting_for_start: BTreeMap::new(),
        }
    }

    pub fn settings(&self) -> &ManagementSettings {
        &self.settings
    }

    /// The latest cluster state this node learned.
    pub fn latest_state(&self) -> Option<&ClusterState> {
        self.latest_state.as_ref()
    }

    pub fn next_tick_ms(&self) -> u64 {
        self.settings.heartbeat_interval_ms
    }

    /// The node id allocated on `connection`, if any.
    pub fn node_of(&self, connection: ConnectionId) -> Option<NodeId> {
        self.connections.get(&connection).and_then(|c| c.node)
    }

    pub fn connection_of(&self, node: NodeId) -> Option<ConnectionId> {
        self.allocations.get(&node).copied()
    }

    pub fn on_connected(&mut self, connection: ConnectionId, peer_host: &str) {
        self.connections.insert(
            connection,
            Connection {
                peer_host: peer_host.to_string(),
                node: None,
                role: None,
                heard_ms: self.now_ms,
            },
        );
    }

    pub fn on_disconnected(
        &mut self,
        now_ms: u64,
        connection: ConnectionId,
        effects: &mut Effects<ConnectionId>,
    ) {
        let Some(gone) = self.connections.remove(&connection) else {
            return;
        };
        self.waiting_for_start
            .retain(|_, waiting| *waiting != connection);
        if let Some(node) = gone.node {
            self.allocations.remove(&node);
            self.addresses.remove(&node);
            self.reports.remove(&node);
            self.stopping.remove(&node);
            effects.events.push(Event::Log(format!(
                "Node {node}: {} disconnected",
                role_name(gone.role)
            )));
            if gone.role == Some(NodeRole::Data) {
                self.publish_addresses(effects);
            }
        }
        self.advance_drain(now_ms, effects);
        self.finish_stops(now_ms, effects);
    }

    /// How long a node's management connection may stay silent: its
    /// heartbeat interval (data nodes report at theirs, API connections
    /// send a keep-alive at HeartbeatIntervalDbApi) times MaxMissedHeartbeats.
    fn silence_ms_max(&self, role: NodeRole) -> u64 {
        let interval = match role {
            NodeRole::Data => self.settings.heartbeat_interval_ms,
            NodeRole::Api | NodeRole::Management => self.settings.api_heartbeat_interval_ms,
        };
        interval * u64::from(self.settings.missed_heartbeats_max)
    }

    /// The connections of nodes silent past their limit (`silence_ms_max`),
    /// with why: the runtime closes each and reports it closed
    /// (`on_disconnected`), so SHOW no longer lists a stopped or hung node
    /// as connected and its node id is free. Connections without a node id
    /// (the `shoal mgm` client's) are left alone.
    pub fn silent_connections(&self, now_ms: u64) -> Vec<(ConnectionId, String)> {
        self.connections
            .iter()
            .filter_map(|(id, connection)| {
                let node = connection.node?;
                let role = connection.role?;
                let silence_ms = now_ms.saturating_sub(connection.heard_ms);
                (silence_ms > self.silence_ms_max(role)).then(|| {
                    (
                        *id,
                        format!(
                            "Node {node}: {} silent for {silence_ms} ms (MaxMissedHeartbeats \
                             {} heartbeat intervals); closing its connection",
                            role_name(Some(role)),
                            self.settings.missed_heartbeats_max
                        ),
                    )
                })
            })
            .collect()
    }

    pub fn tick(&mut self, now_ms: u64, effects: &mut Effects<ConnectionId>) {
        self.now_ms = self.now_ms.max(now_ms);
        if self.vote_floor.is_none()
            && now_ms.saturating_sub(self.started_ms) >= self.settings.arbitration_timeout_ms
        {
            let (generation, version) = self.position_mentioned_max;
            self.vote_floor = Some((generation, version + 2));
        }
        self.maybe_form(now_ms, effects);
        self.advance_drain(now_ms, effects);
        self.finish_stops(now_ms, effects);
    }

    pub fn on_message(
        &mut self,
        now_ms: u64,
        connection: ConnectionId,
        message: Message,
        effects: &mut Effects<ConnectionId>,
    ) {
        self.now_ms = self.now_ms.max(now_ms);
        let Some(peer) = self.connections.get_mut(&connection) else {
            return;
        };
        peer.heard_ms = now_ms;
        let peer = peer.clone();
        match message {
            Message::AllocateNodeId {
                role,
                requested,
                listen_port,
            } => self.allocate(connection, &peer, role, requested, listen_port, effects),
            Message::StatusReport { report } => {
                let Some(node) = peer.node.filter(|_| peer.role == Some(NodeRole::Data)) else {
                    return;
                };
                self.mention(report.generation, report.version);
                if report.started
                    && (report.generation, report.version)
                        > (self.report_members.0, self.report_members.1)
                {
                    self.report_members =
                        (report.generation, report.version, report.members.clone());
                }
                // A member still copying its fragments is logged as such,
                // and as started once its copy is done.
                let phase = |r: &DataNodeReport| (r.started, r.recovering);
                let before = self.reports.get(&node).map(phase);
                if before != Some(phase(&report)) {
                    effects.events.push(Event::Log(format!(
                        "Node {node}: data node {} (state version {})",
                        match phase(&report) {
                            (true, false) => "started",
                            (true, true) => "starting: copying its fragments",
                            (false, _) => "starting",
                        },
                        report.version
                    )));
                }
                if !report.started
                    && let Some(formed) = &self.formed
                    && formed.contains(protocol::Member {
                        node,
                        incarnation: report.incarnation,
                    })
                {
                    effects.send(
                        connection,
                        Message::Decided {
                            state: Box::new(formed.clone()),
                        },
                    );
                }
                self.reports.insert(node, *report);
                self.maybe_form(now_ms, effects);
            }
            Message::Decided { state } => {
                self.mention(state.generation, state.version);
                if self
                    .latest_state
                    .as_ref()
                    .is_none_or(|s| s.position() < state.position())
                {
                    let members: Vec<String> =
                        state.members.iter().map(|m| m.node.to_string()).collect();
                    effects.events.push(Event::Log(format!(
                        "Cluster state version {}: members {}, schema version {}, {} table(s)",
                        state.version,
                        members.join(","),
                        state.schema_version,
                        state.tables.len()
                    )));
                    let position = state.position();
                    self.decided_max = self.decided_max.max(position);
                    self.acceptors.retain(|key, _| *key > position);
                    effects
                        .events
                        .push(Event::PersistVotes(self.votes_with(&state).encode()));
                    self.tell_removed(&state, effects);
                    self.latest_state = Some(*state);
                }
            }
            Message::Prepare {
                generation,
                version,
                ballot,
            } => {
                self.mention(generation, version);
                if let Some(vote) =
                    self.vote((generation, version), |acceptor| acceptor.prepare(ballot))
                {
                    effects
                        .events
                        .push(Event::PersistVotes(self.votes().encode()));
                    effects.send(connection, vote.message(version, ballot));
                } else {
                    self.tell_decided(connection, (generation, version), effects);
                }
            }
            Message::Accept {
                generation,
                version,
                ballot,
                change,
            } => {
                self.mention(generation, version);
                if let Some(vote) = self.vote((generation, version), |acceptor| {
                    acceptor.accept(ballot, &change)
                }) {
                    effects
                        .events
                        .push(Event::PersistVotes(self.votes().encode()));
                    effects.send(connection, vote.message(version, ballot));
                } else {
                    self.tell_decided(connection, (generation, version), effects);
                }
            }
            Message::Addresses { entries } => {
                // A data node publishes the port it listens on once it
                // knows its configuration (ServerPort, or one it picked).
                let Some(node) = peer.node.filter(|_| peer.role == Some(NodeRole::Data)) else {
                    return;
                };
                if let Some(entry) = entries.into_iter().find(|e| e.node == node) {
                    self.addresses.insert(
                        node,
                        Address {
                            node,
                            host: if entry.host == "0.0.0.0" {
                                peer.peer_host.clone()
                            } else {
                                entry.host
                            },
                            port: entry.port,
                        },
                    );
                    self.publish_addresses(effects);
                }
            }
            Message::StatusRequest { request } => {
                let nodes = self.status();
                effects.send(connection, Message::StatusReply { request, nodes });
            }
            Message::StopRequest {
                request,
                node,
                include_management,
                restart,
            } => self.stop(
                now_ms,
                connection,
                StopOrder {
                    request,
                    node,
                    include_management,
                    restart,
                },
                effects,
            ),
            Message::WaitingForStart { node } => {
                self.on_waiting_for_start(connection, &peer, node, effects)
            }
            Message::Drained {
                epoch,
                durable_epoch,
            } => {
                let Some(node) = peer.node.filter(|_| peer.role == Some(NodeRole::Data)) else {
                    return;
                };
                if let Some(answer) = self
                    .draining
                    .as_mut()
                    .and_then(|drain| drain.answers.get_mut(&node))
                {
                    *answer = Some((epoch, durable_epoch));
                }
                self.advance_drain(now_ms, effects);
            }
            Message::StartRequest { request, node } => {
                let result = self.start_node(node, effects);
                effects.send(connection, Message::StartReply { request, result });
            }
            _ => {}
        }
    }

    fn votes_with(&self, latest: &ClusterState) -> ArbitratorVotes {
        let mut votes = self.votes();
        votes.latest_state = Some(latest.clone());
        votes
    }

    /// What must survive a restart of this node.
    pub fn votes(&self) -> ArbitratorVotes {
        ArbitratorVotes {
            position_mentioned_max: self.position_mentioned_max,
            decided_max: self.decided_max,
            latest_state: self.latest_state.clone(),
            records: self
                .acceptors
                .iter()
                .map(|((generation, version), acceptor)| VoteRecord {
                    generation: *generation,
                    version: *version,
                    promised: acceptor.promised,
                    accepted: acceptor.accepted.clone(),
                })
                .collect(),
        }
    }

    /// A proposer asked for a vote on a position this node knows a state
    /// was already decided at (or a newer generation formed): it is on the
    /// losing side of a split, or behind. It gets that state at once, so it
    /// installs it (and excludes itself if the state removed it) instead of
    /// serving until its own `ArbitrationTimeout`. A decided state is safe
    /// to tell anyone.
    fn tell_decided(
        &self,
        connection: ConnectionId,
        position: (u64, u64),
        effects: &mut Effects<ConnectionId>,
    ) {
        if !self.settings.arbitrator {
            return;
        }
        if let Some(latest) = &self.latest_state
            && latest.position() >= position
        {
            effects.send(
                connection,
                Message::Decided {
                    state: Box::new(latest.clone()),
                },
            );
        }
    }

    /// Sends a newly decided state to every connected data node it
    /// removed (members of the previous state this node knew that are not
    /// in it): a node on the losing side of a split, cut off from the
    /// winners but not from the management node, learns at once and
    /// restarts, instead of waiting without agreement.
    fn tell_removed(&mut self, state: &ClusterState, effects: &mut Effects<ConnectionId>) {
        let Some(previous) = &self.latest_state else {
            return;
        };
        let connections: Vec<ConnectionId> = previous
            .members
            .iter()
            .filter(|m| !state.contains(**m))
            .filter_map(|m| self.allocations.get(&m.node).copied())
            .collect();
        for connection in connections {
            self.losers_told += 1;
            effects.send(
                connection,
                Message::Decided {
                    state: Box::new(state.clone()),
                },
            );
        }
    }

    /// How many times a decided state was sent to a data node it removed
    /// (coverage: `loser_told_by_arbitrator`).
    pub fn losers_told(&self) -> u64 {
        self.losers_told
    }

    fn mention(&mut self, generation: u64, version: u64) {
        self.position_mentioned_max = self.position_mentioned_max.max((generation, version));
    }

    /// Votes only in the newest generation heard of, above the floor, and
    /// on versions not yet known to be decided.
    fn vote(
        &mut self,
        position: (u64, u64),
        cast: impl FnOnce(&mut Acceptor) -> Vote,
    ) -> Option<Vote> {
        if !self.settings.arbitrator {
            return None;
        }
        let floor = self.vote_floor?;
        if position < floor
            || position <= self.decided_max
            || position.0 != self.position_mentioned_max.0
        {
            return None;
        }
        if self
            .latest_state
            .as_ref()
            .is_some_and(|s| s.position() >= position)
        {
            return None;
        }
        Some(cast(self.acceptors.entry(position).or_default()))
    }

    fn allocate(
        &mut self,
        connection: ConnectionId,
        peer: &Connection,
        role: NodeRole,
        requested: Option<NodeId>,
        listen_port: u16,
        effects: &mut Effects<ConnectionId>,
    ) {
        if peer.node.is_some() {
            effects.send(
                connection,
                Message::Refused {
                    error: refusal(5019, "this connection already has a node id".into()),
                },
            );
            return;
        }
        let config = &self.settings.config;
        let result = match role {
            NodeRole::Data => {
                let candidates: Vec<NodeId> = config.data_nodes.iter().map(|d| d.node_id).collect();
                self.pick(&candidates, requested, "ndbd(NDB)")
            }
            NodeRole::Api => self.pick_api(requested),
            NodeRole::Management => Err(refusal(
                5019,
                "Shoal runs one management node; a second cannot join".into(),
            )),
        };
        match result {
            Err(error) => effects.send(connection, Message::Refused { error }),
            Ok(node) => {
                self.allocations.insert(node, connection);
                let entry = self.connections.get_mut(&connection).expect("connected");
                entry.node = Some(node);
                entry.role = Some(role);
                effects.events.push(Event::Log(format!(
                    "Node {node}: {} connected from {}",
                    role_name(Some(role)),
                    peer.peer_host
                )));
                effects.send(
                    connection,
                    Message::NodeIdAllocated {
                        node,
                        config_file: self.settings.config_file.clone(),
                        config_text: self.settings.config_text.clone(),
                        secret: self.settings.secret,
                    },
                );
                if role == NodeRole::Data {
                    self.addresses.insert(
                        node,
                        Address {
                            node,
                            host: peer.peer_host.clone(),
                            port: listen_port,
                        },
                    );
                    self.publish_addresses(effects);
                    // A node a pending stop waits for that connects again
                    // (an excluded node restarting in its process, a node
                    // whose connection broke) is told to stop at once: the
                    // stop sent to its old connection may never have
                    // reached it, and the stop would wait out its deadline.
                    let stop_waits = self
                        .pending_stops
                        .iter()
                        .any(|stop| stop.restart.is_none() && stop.nodes.contains(&node));
                    if stop_waits {
                        effects.events.push(Event::Log(format!(
                            "Node {node}: connected again while its stop is pending; stopping it"
                        )));
                        self.stopping.insert(node);
                        effects.send(connection, Message::Stop);
                    }
                } else {
                    let entries = self.addresses.values().cloned().collect();
                    effects.send(connection, Message::Addresses { entries });
                }
            }
        }
    }

    fn pick(
        &self,
        candidates: &[NodeId],
        requested: Option<NodeId>,
        kind: &str,
    ) -> Result<NodeId, ErrorReply> {
        match requested {
            Some(node) if !candidates.contains(&node) => Err(refusal(
                5019,
                format!("node id {node} is not configured as {kind} in config.ini"),
            )),
            Some(node) if self.allocations.contains_key(&node) => Err(refusal(
                NODE_ID_HELD_NDB_CODE,
                format!(
                    "node id {node} is still held by an open connection, which is closed if it \
                     stays silent for {} ms; try again",
                    self.silence_ms_max(NodeRole::Api)
                        .max(self.silence_ms_max(NodeRole::Data))
                ),
            )),
            Some(node) => Ok(node),
            None => candidates
                .iter()
                .copied()
                .find(|n| !self.allocations.contains_key(n))
                .ok_or_else(|| {
                    refusal(
                        5019,
                        format!("no free node id found for {kind}: add a section to config.ini"),
                    )
                }),
        }
    }

    fn pick_api(&self, requested: Option<NodeId>) -> Result<NodeId, ErrorReply> {
        let config = &self.settings.config;
        let explicit: Vec<NodeId> = config.api_nodes.iter().filter_map(|a| a.node_id).collect();
        let configured: BTreeSet<NodeId> = config.all_node_ids().into_iter().collect();
        let slots = config
            .api_nodes
            .iter()
            .filter(|a| a.node_id.is_none())
            .count();
        let slot_ids_in_use = self
            .allocations
            .keys()
            .filter(|n| !configured.contains(n))
            .count();
        if let Some(node) = requested {
            // An API node that reconnects (this management node restarted)
            // asks for the id it had, which may be a free slot's id rather
            // than a section's: it gets it back if no section names it for
            // another role and a free slot is left.
            if !configured.contains(&node)
                && !self.allocations.contains_key(&node)
                && slot_ids_in_use < slots
            {
                return Ok(node);
            }
            return self.pick(&explicit, Some(node), "mysqld(API)");
        }
        if let Ok(node) = self.pick(&explicit, None, "mysqld(API)") {
            return Ok(node);
        }
        // Sections without an id are free slots: give them ids no section uses.
        if slot_ids_in_use >= slots {
            return Err(refusal(
                5019,
                "no free node id found for mysqld(API): add an [api] section to config.ini".into(),
            ));
        }
        (1..=NodeId::MAX)
            .find(|n| !configured.contains(n) && !self.allocations.contains_key(n))
            .ok_or_else(|| refusal(5019, "all 255 node ids are in use".into()))
    }

    fn publish_addresses(&self, effects: &mut Effects<ConnectionId>) {
        let entries: Vec<Address> = self.addresses.values().cloned().collect();
        for (node, connection) in &self.allocations {
            let _ = node;
            effects.send(
                *connection,
                Message::Addresses {
                    entries: entries.clone(),
                },
            );
        }
    }

    fn maybe_form(&mut self, now_ms: u64, effects: &mut Effects<ConnectionId>) {
        let config = &self.settings.config;
        let connected_data: Vec<NodeId> = config
            .data_nodes
            .iter()
            .map(|d| d.node_id)
            .filter(|n| self.allocations.contains_key(n))
            .collect();
        let all_reported_unstarted = connected_data
            .iter()
            .all(|n| self.reports.get(n).is_some_and(|r| !r.started));
        let formed_member_connected = self.formed.as_ref().is_some_and(|formed| {
            formed.members.iter().any(|m| {
                self.reports
                    .get(&m.node)
                    .is_some_and(|r| r.incarnation == m.incarnation)
            })
        });
        // Every node that was a member of the newest cluster this node
        // knows of must be back, not started: a member that is merely out
        // of reach may still run that cluster, and forming another beside
        // it would be a split brain.
        let previous_members: BTreeSet<NodeId> = self
            .latest_state
            .iter()
            .flat_map(|s| s.members.iter().map(|m| m.node))
            .chain(self.report_members.2.iter().copied())
            .collect();
        let unaccounted = previous_members.iter().any(|n| !connected_data.contains(n));
        if connected_data.is_empty()
            || !all_reported_unstarted
            || formed_member_connected
            || unaccounted
        {
            self.unstarted_since_ms = None;
            return;
        }
        let since = *self.unstarted_since_ms.get_or_insert(now_ms);
        let everyone = connected_data.len() == config.data_nodes.len();
        let node_groups = config.node_groups.clone();
        let Some(restore) = self.restore_point(&connected_data, effects) else {
            return;
        };
        let members: Vec<protocol::Member> = connected_data
            .iter()
            .filter(|n| restorable_in(&self.reports[*n], restore.generation) >= restore.epoch)
            .map(|n| protocol::Member {
                node: *n,
                incarnation: self.reports[n].incarnation,
            })
            .collect();
        let partial = self.vote_floor.is_some()
            && now_ms.saturating_sub(since) >= self.settings.start_partial_timeout_ms
            && covers_node_groups(&members, &node_groups);
        if !everyone && !partial {
            return;
        }
        let previous = self.latest_state.clone().unwrap_or_default();
        self.formations += 1;
        assert!(self.formations < 1 << 16);
        let state = ClusterState {
            generation: (self.incarnation << 16) | self.formations,
            version: 1,
            members,
            removed: Vec::new(),
            // No member is copying: each starts empty or from its own disk.
            starting: Vec::new(),
            recovered: Vec::new(),
            schema_version: previous.schema_version,
            next_table_id: previous.next_table_id,
            tables: previous.tables,
            // Retries of changes the dictionary kept still get their answer.
            schema_outcomes: previous.schema_outcomes,
            restore_epoch: restore.epoch,
            epoch_floor: restore.epoch_floor,
        };
        let names: Vec<String> = state.members.iter().map(|m| m.node.to_string()).collect();
        effects.events.push(Event::Log(format!(
            "Cluster {} with data node(s) {} at state version {}{}",
            if everyone {
                "starts"
            } else {
                "starts partially"
            },
            names.join(","),
            state.version,
            if restore.epoch == 0 {
                ", empty".to_string()
            } else {
                format!(
                    ", restoring every global checkpoint through GCI {} from the members' disks \
                     (other nodes start empty and copy their fragments)",
                    crate::epochs::gci_before(restore.epoch)
                )
            }
        )));
        for member in &state.members {
            effects.send(
                self.allocations[&member.node],
                Message::Decided {
                    state: Box::new(state.clone()),
                },
            );
        }
        self.mention(state.generation, state.version);
        self.decided_max = self.decided_max.max(state.position());
        self.vote_floor = Some((state.generation, state.version + 1));
        self.acceptors.clear();
        // Remembered, so that after a restart this node knows it has voted
        // on nothing it could forget and can arbitrate at once.
        effects
            .events
            .push(Event::PersistVotes(self.votes_with(&state).encode()));
        self.formed = Some(state.clone());
        self.latest_state = Some(state);
        self.unstarted_since_ms = None;
        self.restore_refusal_logged = false;
    }

    /// What a cluster formed from `connected` restores: nothing when no
    /// node's disk holds a global checkpoint; else, of the newest
    /// generation any connected disk was saved in, the highest epoch whose
    /// every commit is on the disk of some connected node of each node
    /// group (the members are those nodes; the rest start empty and copy).
    /// A disk saved in an older generation is behind a system restart that
    /// left it out, which may have taken back commits it holds: it cannot
    /// stand for its node group beside disks of the newer one, unless the
    /// newer one saved nothing past its restore point and that restart
    /// restored the older one (then up to that point, see below). `None`,
    /// logged once, when some node group has no such node: the cluster
    /// would lose committed data, or mix a state the cluster left behind
    /// with the newer one, so it does not form.
    fn restore_point(
        &mut self,
        connected: &[NodeId],
        effects: &mut Effects<ConnectionId>,
    ) -> Option<RestorePoint> {
        let report = |node: &NodeId| &self.reports[node];
        let epoch_floor = connected
            .iter()
            .map(|n| report(n).disk_epoch_max)
            .max()
            .unwrap_or(0);
        let restorable = |node: &&NodeId| report(node).restorable_epoch > 0;
        let Some(newest) = connected
            .iter()
            .filter(restorable)
            .map(|n| report(n).restorable_generation)
            .max()
        else {
            return Some(RestorePoint {
                epoch: 0,
                generation: 0,
                epoch_floor,
            });
        };
        let node_groups = &self.settings.config.node_groups;
        // The restore point in `generation`, taking no epoch above `cap`.
        let point_in = |generation: u64, cap: u64| {
            let mut epoch = cap;
            for (group, nodes) in node_groups.iter().enumerate() {
                let best = nodes
                    .iter()
                    .filter(|n| connected.contains(n))
                    .map(|n| restorable_in(report(n), generation))
                    .max()
                    .unwrap_or(0);
                if best == 0 {
                    return Err((group, nodes));
                }
                epoch = epoch.min(best);
            }
            Ok(RestorePoint {
                epoch,
                generation,
                epoch_floor,
            })
        };
        let refused = match point_in(newest, u64::MAX) {
            Ok(point) => return Some(point),
            Err(refused) => refused,
        };
        // When every connected disk of the newest generation is only its
        // system restart's mark of the restore point (nothing was saved in
        // it past there), that generation holds the same commits as the
        // one the restart restored, up to that point and no further: a
        // node group whose disks are all of the older one can stand for
        // itself (a second whole-cluster crash came before every node
        // group's mark was durable: the simulator's seed 124454). Every
        // previous member is connected (`unaccounted`), and a mark is
        // written before a save (`RESTORE_MARK_RESERVE_BYTES`), so a save
        // past the point would be among these disks (a mark is refused for
        // room only past about a hundred restarts with no local checkpoint
        // between them). The marks may name
        // different generations (a member restored from a save, another
        // from a mark of its own): each is tried.
        let newest_disks: Vec<&DataNodeReport> = connected
            .iter()
            .filter(restorable)
            .map(report)
            .filter(|r| r.restorable_generation == newest)
            .collect();
        if newest_disks.iter().all(|r| r.restored_from_generation != 0) {
            let cap = newest_disks
                .iter()
                .map(|r| r.restorable_epoch)
                .min()
                .expect("the newest generation has a disk");
            let named: BTreeSet<u64> = newest_disks
                .iter()
                .map(|r| r.restored_from_generation)
                .collect();
            for generation in named.into_iter().rev() {
                if let Ok(point) = point_in(generation, cap) {
                    return Some(point);
                }
            }
        }
        if !self.restore_refusal_logged {
            self.restore_refusal_logged = true;
            let (group, nodes) = refused;
            effects.events.push(Event::Log(format!(
                "The cluster cannot start: node group {group} (nodes {nodes:?}) has no \
                 connected data node whose disk holds a global checkpoint of the \
                 newest cluster generation ({newest}) the other nodes' disks \
                 hold; start its nodes, or start every data node with --initial to \
                 discard all data"
            )));
        }
        None
    }

    /// Every configured node, as `SHOW` lists them.
    pub fn status(&self) -> Vec<NodeStatus> {
        let config = &self.settings.config;
        let president = self
            .reports
            .values()
            .filter(|r| r.started)
            .max_by_key(|r| r.version)
            .map(|r| r.president);
        let mut nodes = Vec::new();
        for data in &config.data_nodes {
            let node = data.node_id;
            let report = self.reports.get(&node);
            let connected = self.allocations.contains_key(&node);
            let waiting = self.waiting_for_start.get(&node);
            let state = if !connected {
                if waiting.is_some() {
                    NodeState::NotStarted
                } else {
                    NodeState::NotConnected
                }
            } else if self.stopping.contains(&node) {
                NodeState::Stopping
            } else if report.is_some_and(|r| r.started && !r.recovering) {
                NodeState::Started
            } else {
                NodeState::Starting
            };
            nodes.push(NodeStatus {
                node,
                role: NodeRole::Data,
                configured_host: data.host_name.clone(),
                address: match waiting {
                    Some(angel) if !connected => self
                        .connections
                        .get(angel)
                        .map_or(String::new(), |c| c.peer_host.clone()),
                    _ => self.peer_host(node),
                },
                state,
                node_group: Some(data.node_group),
                president: connected && president == Some(node),
                pages_used: report.map_or(0, |r| r.pages_used),
                pages_total: report.map_or(0, |r| r.pages_total),
                fragments_copied: report.map_or(0, |r| r.fragments_copied),
                fragments_to_copy: report.map_or(0, |r| r.fragments_to_copy),
                rows_copied: report.map_or(0, |r| r.rows_copied),
                durability: report.map_or_else(Default::default, |r| r.durability),
            });
        }
        for management in &config.management_nodes {
            let me = management.node_id == self.settings.node;
            nodes.push(NodeStatus {
                node: management.node_id,
                role: NodeRole::Management,
                configured_host: management.host_name.clone(),
                address: if me {
                    management.host_name.clone()
                } else {
                    String::new()
                },
                state: if me {
                    NodeState::Started
                } else {
                    NodeState::NotConnected
                },
                node_group: None,
                president: false,
                pages_used: 0,
                pages_total: 0,
                fragments_copied: 0,
                fragments_to_copy: 0,
                rows_copied: 0,
                durability: Default::default(),
            });
        }
        let configured: BTreeSet<NodeId> = config.all_node_ids().into_iter().collect();
        for api in &config.api_nodes {
            if let Some(node) = api.node_id {
                nodes.push(self.api_status(node, api.host_name.clone().unwrap_or_default()));
            }
        }
        let slot_nodes: Vec<NodeId> = self
            .allocations
            .keys()
            .copied()
            .filter(|n| !configured.contains(n))
            .collect();
        let mut slot_nodes = slot_nodes.into_iter();
        for api in config.api_nodes.iter().filter(|a| a.node_id.is_none()) {
            match slot_nodes.next() {
                Some(node) => {
                    nodes.push(self.api_status(node, api.host_name.clone().unwrap_or_default()))
                }
                // A free slot has no id yet: node 0, never allocated.
                None => nodes.push(self.api_status(0, api.host_name.clone().unwrap_or_default())),
            }
        }
        nodes
    }

    fn api_status(&self, node: NodeId, configured_host: String) -> NodeStatus {
        let connected = self.allocations.contains_key(&node);
        NodeStatus {
            node,
            role: NodeRole::Api,
            configured_host,
            address: self.peer_host(node),
            state: if connected {
                NodeState::Started
            } else {
                NodeState::NotConnected
            },
            node_group: None,
            president: false,
            pages_used: 0,
            pages_total: 0,
            fragments_copied: 0,
            fragments_to_copy: 0,
            rows_copied: 0,
            durability: Default::default(),
        }
    }

    fn peer_host(&self, node: NodeId) -> String {
        self.allocations
            .get(&node)
            .and_then(|c| self.connections.get(c))
            .map_or(String::new(), |c| c.peer_host.clone())
    }

    /// An angel says its data node waits for `N START`.
    fn on_waiting_for_start(
        &mut self,
        connection: ConnectionId,
        peer: &Connection,
        node: NodeId,
        effects: &mut Effects<ConnectionId>,
    ) {
        let refused = if self.settings.config.data_node(node).is_none() {
            Some(format!("node {node} is not a data node in config.ini"))
        } else if self.allocations.contains_key(&node) {
            Some(format!(
                "node {node} is connected, so it is not waiting for START"
            ))
        } else if self
            .waiting_for_start
            .get(&node)
            .is_some_and(|waiting| *waiting != connection)
        {
            Some(format!(
                "node {node} already waits for START on another connection"
            ))
        } else {
            None
        };
        if let Some(message) = refused {
            effects.send(
                connection,
                Message::Refused {
                    error: refusal(NODE_NOT_STOPPABLE_NDB_CODE, message),
                },
            );
            return;
        }
        self.waiting_for_start.insert(node, connection);
        effects.events.push(Event::Log(format!(
            "Node {node}: not started, waiting for START (angel at {})",
            peer.peer_host
        )));
    }

    /// `N START`: tells the angel of a node waiting for START to start it.
    fn start_node(
        &mut self,
        node: NodeId,
        effects: &mut Effects<ConnectionId>,
    ) -> Result<(), ErrorReply> {
        if self.settings.config.data_node(node).is_none() {
            return Err(refusal(
                NODE_NOT_STOPPABLE_NDB_CODE,
                format!("node {node} is not a data node in config.ini"),
            ));
        }
        let Some(angel) = self.waiting_for_start.remove(&node) else {
            let why = if self.allocations.contains_key(&node) {
                "it is already started"
            } else {
                "it is not connected (only a node restarted with RESTART -n waits for START)"
            };
            return Err(refusal(
                NODE_NOT_STOPPABLE_NDB_CODE,
                format!("node {node} is not waiting for START: {why}"),
            ));
        };
        effects.send(angel, Message::Start);
        effects
            .events
            .push(Event::Log(format!("Node {node}: Start initiated")));
        Ok(())
    }

    fn stop(
        &mut self,
        now_ms: u64,
        connection: ConnectionId,
        order: StopOrder,
        effects: &mut Effects<ConnectionId>,
    ) {
        let (request, restart) = (order.request, order.restart);
        let config = &self.settings.config;
        match order.node {
            Some(node) if config.data_node(node).is_none() => {
                effects.send(
                    connection,
                    Message::StopReply {
                        request,
                        result: Err(refusal(
                            NODE_NOT_STOPPABLE_NDB_CODE,
                            format!("node {node} is not a data node in config.ini"),
                        )),
                    },
                );
                return;
            }
            // `N STOP` of a node its angel holds for START: the angel
            // exits, and the node is stopped at once (NDB stops a node in
            // the no-start state the same way). A restart of it is refused:
            // START is what starts it.
            Some(node) if restart.is_none() && self.waiting_for_start.contains_key(&node) => {
                let angel = self.waiting_for_start.remove(&node).expect("checked");
                effects.send(angel, Message::Stop);
                effects
                    .events
                    .push(Event::Log(format!("Node {node}: Node shutdown completed")));
                effects.send(
                    connection,
                    Message::StopReply {
                        request,
                        result: Ok(vec![node]),
                    },
                );
                return;
            }
            Some(node) if !self.allocations.contains_key(&node) => {
                effects.send(
                    connection,
                    Message::StopReply {
                        request,
                        result: Err(refusal(
                            NODE_NOT_STOPPABLE_NDB_CODE,
                            format!("node {node} is not connected"),
                        )),
                    },
                );
                return;
            }
            Some(_) => {}
            None => {
                if let Some(drain) = self.draining.take() {
                    // Asked again while draining: stop at once.
                    effects.events.push(Event::Log(
                        "Cluster shutdown: asked again; stopping without waiting for the \
                         drain"
                            .into(),
                    ));
                    self.stop_now(now_ms, drain.connection, drain.order, effects);
                } else {
                    let answers: BTreeMap<NodeId, Option<(u64, u64)>> = self
                        .reports
                        .iter()
                        .filter(|(node, report)| {
                            report.started && self.allocations.contains_key(node)
                        })
                        .map(|(node, _)| (*node, None))
                        .collect();
                    if !answers.is_empty() {
                        effects.events.push(Event::Log(format!(
                            "Cluster shutdown initiated: data node(s) {:?} take no new \
                             transactions; stopping once every commit is durable",
                            answers.keys().collect::<Vec<_>>()
                        )));
                        for node in answers.keys() {
                            effects.send(self.allocations[node], Message::Drain);
                        }
                        self.draining = Some(ShutdownDrain {
                            connection,
                            order,
                            answers,
                            deadline_ms: now_ms + DRAIN_TIMEOUT_MS,
                            resend_at_ms: now_ms + STOP_RESEND_MS,
                        });
                        return;
                    }
                }
            }
        };
        self.stop_now(now_ms, connection, order, effects);
    }

    /// Stops the nodes of `order` (every connected data node for `None`)
    /// and answers once they are gone (`finish_stops`).
    fn stop_now(
        &mut self,
        now_ms: u64,
        connection: ConnectionId,
        order: StopOrder,
        effects: &mut Effects<ConnectionId>,
    ) {
        let StopOrder {
            request,
            node,
            include_management,
            restart,
        } = order;
        let nodes: Vec<NodeId> = match node {
            Some(node) => vec![node],
            None => self
                .settings
                .config
                .data_nodes
                .iter()
                .map(|d| d.node_id)
                .filter(|n| self.allocations.contains_key(n))
                .collect(),
        };
        for node in &nodes {
            effects
                .events
                .push(Event::Log(format!("Node {node}: Node shutdown initiated")));
            self.stopping.insert(*node);
            let message = match restart {
                Some(options) => Message::Restart(options),
                None => Message::Stop,
            };
            effects.send(self.allocations[node], message);
        }
        if include_management {
            self.shutting_down = true;
        }
        self.pending_stops.push(PendingStop {
            connection,
            request,
            nodes,
            deadline_ms: now_ms + STOP_TIMEOUT_MS,
            resend_at_ms: now_ms + STOP_RESEND_MS,
            include_management,
            restart,
        });
        self.finish_stops(now_ms, effects);
    }

    /// Ends a drain once every commit of the data nodes asked is durable
    /// (each node's last commit epoch lies below every node's durable
    /// epoch), or at its deadline, and stops the nodes.
    fn advance_drain(&mut self, now_ms: u64, effects: &mut Effects<ConnectionId>) {
        let Some(drain) = self.draining.as_mut() else {
            return;
        };
        // A node that left is not waited for: its commits are on its
        // node group's other replicas, whose answers count.
        drain
            .answers
            .retain(|node, _| self.allocations.contains_key(node));
        let answered: Option<Vec<(u64, u64)>> = drain.answers.values().copied().collect();
        let durable = answered.as_ref().map(|answers| {
            let last_commit = answers.iter().map(|a| a.0).max().unwrap_or(0);
            let durable_below = answers.iter().map(|a| a.1).min().unwrap_or(u64::MAX);
            (last_commit, durable_below)
        });
        let line = match durable {
            Some((_, _)) if drain.answers.is_empty() => {
                "Cluster shutdown: no data node left to drain; stopping".to_string()
            }
            Some((last_commit, durable_below)) if durable_below > last_commit => format!(
                "Cluster shutdown: every commit is durable (through GCI {}); stopping the \
                 data nodes",
                crate::epochs::gci_before(durable_below)
            ),
            _ if now_ms >= drain.deadline_ms => {
                let (last_commit, durable_below) = durable.unwrap_or((0, 0));
                format!(
                    "Cluster shutdown: the drain did not end within {} s ({} of {} data \
                     node(s) answered; last commit epoch {}/{}, durable through GCI {}); \
                     stopping anyway: a start may not bring back the commits after that GCI",
                    DRAIN_TIMEOUT_MS / 1000,
                    drain.answers.values().filter(|a| a.is_some()).count(),
                    drain.answers.len(),
                    crate::epochs::gci_of(last_commit),
                    last_commit & u64::from(u32::MAX),
                    crate::epochs::gci_before(durable_below),
                )
            }
            _ => {
                if now_ms >= drain.resend_at_ms {
                    drain.resend_at_ms = now_ms + STOP_RESEND_MS;
                    for node in drain.answers.keys() {
                        effects.send(self.allocations[node], Message::Drain);
                    }
                }
                return;
            }
        };
        let drain = self.draining.take().expect("checked above");
        effects.events.push(Event::Log(line));
        self.stop_now(now_ms, drain.connection, drain.order, effects);
    }

    fn finish_stops(&mut self, now_ms: u64, effects: &mut Effects<ConnectionId>) {
        let mut index = 0;
        while index < self.pending_stops.len() {
            let stop = &self.pending_stops[index];
            let running: Vec<NodeId> = stop
                .nodes
                .iter()
                .copied()
                .filter(|n| self.allocations.contains_key(n))
                .collect();
            if !running.is_empty() && now_ms < stop.deadline_ms {
                if stop.restart.is_none() && now_ms >= stop.resend_at_ms {
                    for node in &running {
                        effects.send(self.allocations[node], Message::Stop);
                    }
                    self.pending_stops[index].resend_at_ms = now_ms + STOP_RESEND_MS;
                }
                index += 1;
                continue;
            }
            let stop = self.pending_stops.remove(index);
            let result = if running.is_empty() {
                let how = match stop.restart {
                    None => "",
                    Some(RestartOptions {
                        no_start: false, ..
                    }) => ", restarting",
                    Some(RestartOptions { no_start: true, .. }) => ", restarting, no start",
                };
                for node in &stop.nodes {
                    effects.events.push(Event::Log(format!(
                        "Node {node}: Node shutdown completed{how}"
                    )));
                }
                Ok(stop.nodes.clone())
            } else {
                Err(refusal(
                    NODE_NOT_STOPPABLE_NDB_CODE,
                    format!(
                        "node(s) {running:?} did not stop within {} s",
                        STOP_TIMEOUT_MS / 1000
                    ),
                ))
            };
            effects.send(
                stop.connection,
                Message::StopReply {
                    request: stop.request,
                    result,
                },
            );
            if stop.include_management {
                effects.events.push(Event::Stop {
                    reason: "cluster shutdown requested".into(),
                    restart: None,
                });
            }
        }
    }

    /// Whether a shutdown of the whole cluster was requested.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }
}

/// The epoch below which `report`'s disk holds every commit of
/// `generation` (0: none): that of its newest save, when the save was in
/// `generation` or is a system restart's mark of the restore point it
/// restored `generation` to (the two generations hold the same commits up
/// to there).
fn restorable_in(report: &DataNodeReport, generation: u64) -> u64 {
    let holds = report.restorable_generation == generation
        || (generation != 0 && report.restored_from_generation == generation);
    if holds { report.restorable_epoch } else { 0 }
}

/// What a cluster formation restores (`restore_point`).
#[derive(Debug, Clone, Copy)]
struct RestorePoint {
    /// Every commit of the epochs below this; 0: nothing.
    epoch: u64,
    /// The generation the members' disks were saved in (0: nothing).
    generation: u64,
    /// Above every epoch on the members' disks.
    epoch_floor: u64,
}

fn role_name(role: Option<NodeRole>) -> &'static str {
    match role {
        Some(NodeRole::Data) => "data node",
        Some(NodeRole::Management) => "management node",
        Some(NodeRole::Api) => "API node",
        None => "client",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::{Ballot, Change};

    fn allocate_api(
        management: &mut ManagementNode,
        connection: ConnectionId,
        requested: Option<NodeId>,
    ) -> Message {
        management.on_connected(connection, "127.0.0.1");
        let mut effects = Effects::default();
        management.on_message(
            0,
            connection,
            Message::AllocateNodeId {
                role: NodeRole::Api,
                requested,
                listen_port: 0,
            },
            &mut effects,
        );
        effects
            .sends
            .into_iter()
            .find(|(to, _)| *to == connection)
            .map(|(_, message)| message)
            .expect("an answer")
    }

    /// An API node that had a free slot's id (an `[api]` section without
    /// one) asks for it again after this management node restarted, and
    /// gets it back, as NDB's API keeps its node id across a management
    /// server restart; an id configured for another role, or one in use,
    /// is still refused.
    #[test]
    fn an_api_node_gets_its_slot_id_back_after_a_restart() {
        let text = config::sandbox_config_text("", 2, 2, 1186, 16 << 20);
        let config = config::parse(&text, "config.ini").expect("a valid config");
        let configured: BTreeSet<NodeId> = config.all_node_ids().into_iter().collect();
        let slot_id = (1..=NodeId::MAX)
            .find(|n| !configured.contains(n))
            .expect("a free id");
        let data_node = config.data_nodes[0].node_id;
        let settings = ManagementSettings::new("config.ini", &text, config, [7; 32]);
        let mut management = ManagementNode::new(settings, 1, 0, None);
        let answer = allocate_api(&mut management, 1, Some(slot_id));
        assert!(
            matches!(answer, Message::NodeIdAllocated { node, .. } if node == slot_id),
            "{answer:?}"
        );
        let answer = allocate_api(&mut management, 2, Some(slot_id));
        assert!(matches!(answer, Message::Refused { .. }), "{answer:?}");
        let answer = allocate_api(&mut management, 3, Some(data_node));
        assert!(matches!(answer, Message::Refused { .. }), "{answer:?}");
    }

    /// A management node whose persisted votes say `decided` was decided.
    fn arbitrator_that_decided(
        settings: ManagementSettings,
        decided: &ClusterState,
    ) -> ManagementNode {
        let votes = ArbitratorVotes {
            position_mentioned_max: decided.position(),
            decided_max: decided.position(),
            latest_state: Some(decided.clone()),
            records: Vec::new(),
        };
        ManagementNode::new(settings, 1, 0, Some(votes))
    }

    /// A decided state that removes a data node still connected to the
    /// management node (cut off from the winners only) is sent to it at
    /// once, so it learns it lost; members it keeps are not sent it here.
    #[test]
    fn a_data_node_a_decided_state_removed_is_told_it() {
        let text = config::sandbox_config_text("", 2, 2, 1186, 16 << 20);
        let config = config::parse(&text, "config.ini").expect("a valid config");
        let settings = ManagementSettings::new("config.ini", &text, config, [7; 32]);
        let member = |node: NodeId| protocol::Member {
            node,
            incarnation: 5,
        };
        let both = ClusterState {
            generation: 1,
            version: 2,
            members: vec![member(2), member(3)],
            ..ClusterState::default()
        };
        let mut management = arbitrator_that_decided(settings, &both);
        for (connection, node) in [(12, 2), (13, 3)] {
            management.on_connected(connection, "127.0.0.1");
            let mut effects = Effects::default();
            let allocate = Message::AllocateNodeId {
                role: NodeRole::Data,
                requested: Some(node),
                listen_port: 4000,
            };
            management.on_message(0, connection, allocate, &mut effects);
            assert_eq!(management.node_of(connection), Some(node));
        }
        let without_3 = ClusterState {
            version: 3,
            members: vec![member(2)],
            removed: vec![member(3)],
            ..both
        };
        let mut effects = Effects::default();
        let decided = Message::Decided {
            state: Box::new(without_3.clone()),
        };
        management.on_message(1, 12, decided, &mut effects);
        let told: Vec<ConnectionId> = effects
            .sends
            .iter()
            .filter(|(_, m)| matches!(m, Message::Decided { state } if **state == without_3))
            .map(|(to, _)| *to)
            .collect();
        assert_eq!(told, vec![13], "{effects:?}");
        assert_eq!(management.losers_told(), 1);
    }

    /// The losing side of a split asks the arbitrator to vote for a
    /// position the winning side has already decided: it is told the
    /// decided state at once, not left to time out while it serves.
    #[test]
    fn a_proposer_behind_a_decided_state_is_told_it() {
        let text = config::sandbox_config_text("", 2, 2, 1186, 16 << 20);
        let config = config::parse(&text, "config.ini").expect("a valid config");
        let settings = ManagementSettings::new("config.ini", &text, config, [7; 32]);
        let decided = ClusterState {
            generation: 1,
            version: 3,
            members: vec![protocol::Member {
                node: 2,
                incarnation: 5,
            }],
            ..ClusterState::default()
        };
        let mut management = arbitrator_that_decided(settings, &decided);
        management.on_connected(9, "127.0.0.1");
        for message in [
            Message::Prepare {
                generation: 1,
                version: 3,
                ballot: Ballot::default(),
            },
            Message::Accept {
                generation: 1,
                version: 3,
                ballot: Ballot::default(),
                change: Box::new(Change::Membership {
                    members: Vec::new(),
                }),
            },
        ] {
            let mut effects = Effects::default();
            management.on_message(0, 9, message, &mut effects);
            let answers: Vec<&Message> = effects
                .sends
                .iter()
                .filter(|(to, _)| *to == 9)
                .map(|(_, message)| message)
                .collect();
            assert!(
                matches!(answers.as_slice(), [Message::Decided { state }] if **state == decided),
                "{answers:?}"
            );
        }
        // A position not decided yet gets a vote, not a state.
        let mut effects = Effects::default();
        management.on_message(
            0,
            9,
            Message::Prepare {
                generation: 1,
                version: 4,
                ballot: Ballot::default(),
            },
            &mut effects,
        );
        assert!(
            effects
                .sends
                .iter()
                .all(|(_, message)| matches!(message, Message::Promise { .. })),
            "{:?}",
            effects.sends
        );
    }

    fn send(
        management: &mut ManagementNode,
        connection: ConnectionId,
        message: Message,
    ) -> Effects<ConnectionId> {
        let mut effects = Effects::default();
        management.on_message(0, connection, message, &mut effects);
        effects
    }

    fn state_of(management: &ManagementNode, node: NodeId) -> NodeState {
        management
            .status()
            .into_iter()
            .find(|status| status.node == node)
            .expect("a configured node")
            .state
    }

    fn logs(effects: &Effects<ConnectionId>) -> Vec<&str> {
        effects
            .events
            .iter()
            .filter_map(|event| match event {
                Event::Log(line) => Some(line.as_str()),
                _ => None,
            })
            .collect()
    }

    /// A system restart takes its restore point from the newest generation
    /// any disk was saved in: a node group whose connected disks are all of
    /// an older one (left out of a system restart that may have taken back
    /// commits they hold) keeps the cluster from forming, however high
    /// their epochs; once a disk of the newer one is back, the cluster
    /// forms from the newer disks alone.
    #[test]
    fn a_system_restart_does_not_mix_disks_of_an_older_generation() {
        let (settings, groups) = two_node_groups();
        // (node, restorable GCI, generation, restored from): the first
        // group's disks were saved in generation 5; the second group's
        // first node in 5 too, its second in 4, through a higher GCI (it
        // missed generation 5's system restart, whose epochs began above
        // the disks it had).
        let disks = [
            (groups[0][0], 40, 5, 0),
            (groups[0][1], 38, 5, 0),
            (groups[1][0], 39, 5, 0),
            (groups[1][1], 60, 4, 0),
        ];
        // The second group's node of generation 5 is down: no forming.
        let without = [disks[0], disks[1], disks[3]];
        let logs = system_restart_logs(&settings, &without);
        assert!(
            logs.iter()
                .any(|l| l.contains("cannot start") && l.contains("generation (5)")),
            "{logs:#?}"
        );
        assert!(
            !logs.iter().any(|l| l.contains("Cluster starts")),
            "{logs:#?}"
        );
        // All four: the generation 5 disks that reach the lower of the
        // groups' best (every epoch below GCI 39's) form it, and the rest,
        // the generation 4 disk among them, copy.
        let logs = system_restart_logs(&settings, &disks);
        let started = started_log(&logs);
        assert!(started.contains("through GCI 38 "), "{started}");
        let members = format!("data node(s) {},{} ", groups[0][0], groups[1][0]);
        assert!(started.contains(&members), "{started}");
    }

    /// A second whole-cluster crash right after a system restart, before
    /// any save in the new generation (5) and before the first group's
    /// marks of the restore point (GCI 38, restored from generation 4)
    /// were durable: the first group's disks, of generation 4, hold the
    /// same commits up to there, and the cluster forms from generation 4
    /// at that point. Once any disk saved past the mark in generation 5,
    /// generation 5 may hold commits the older disks lack, and the first
    /// group cannot stand for itself.
    #[test]
    fn a_system_restart_counts_an_older_generation_that_the_newest_saved_nothing_past() {
        let (settings, groups) = two_node_groups();
        let disks = [
            (groups[0][0], 40, 4, 0),
            (groups[0][1], 38, 4, 0),
            (groups[1][0], 38, 5, 4),
            (groups[1][1], 38, 5, 4),
        ];
        let logs = system_restart_logs(&settings, &disks);
        let started = started_log(&logs);
        assert!(started.contains("through GCI 37 "), "{started}");
        assert!(started.contains("data node(s) 2,3,4,5 "), "{started}");
        // One generation 4 disk of the first group below the marks: its
        // partner still reaches them, so the point stays. With both below,
        // the point is the lower one, and the marks' disks are members too.
        let lower = [(groups[0][0], 30, 4, 0), disks[1], disks[2], disks[3]];
        let logs = system_restart_logs(&settings, &lower);
        let started = started_log(&logs);
        assert!(started.contains("through GCI 37 "), "{started}");
        let lowest = [(groups[0][0], 30, 4, 0), (groups[0][1], 20, 4, 0)];
        let logs = system_restart_logs(&settings, &[lowest[0], lowest[1], disks[2], disks[3]]);
        let started = started_log(&logs);
        assert!(started.contains("through GCI 29 "), "{started}");
        assert!(started.contains("data node(s) 2,4,5 "), "{started}");
        // Generation 4 disks above the marks in every group (one of the
        // second group that the restart to generation 5 left out): the
        // point is still the marks', not above it, where generation 5
        // went on without those commits.
        let above = [disks[0], disks[1], disks[2], (groups[1][1], 45, 4, 0)];
        let logs = system_restart_logs(&settings, &above);
        let started = started_log(&logs);
        assert!(started.contains("through GCI 37 "), "{started}");
        // Marks that name different generations: each is tried (4 finds
        // no disk of the second group; 5 does).
        let named = [
            (groups[0][0], 38, 6, 5),
            (groups[0][1], 38, 6, 4),
            (groups[1][0], 40, 5, 0),
            (groups[1][1], 39, 5, 0),
        ];
        let logs = system_restart_logs(&settings, &named);
        let started = started_log(&logs);
        assert!(started.contains("through GCI 37 "), "{started}");
        assert!(started.contains("data node(s) 2,4,5 "), "{started}");
        // A save in generation 5, past the mark or at it, and the first
        // group is refused.
        for second in [(groups[1][1], 41, 5, 0), (groups[1][1], 38, 5, 0)] {
            let refused = [disks[0], disks[1], disks[2], second];
            let logs = system_restart_logs(&settings, &refused);
            assert!(
                logs.iter().any(|l| l.contains("cannot start")),
                "{second:?}: {logs:#?}"
            );
            assert!(
                !logs.iter().any(|l| l.contains("Cluster starts")),
                "{logs:#?}"
            );
        }
    }

    /// The log line of the cluster's formation among `logs`.
    fn started_log(logs: &[String]) -> &str {
        logs.iter()
            .find(|l| l.contains("Cluster starts"))
            .unwrap_or_else(|| panic!("{logs:#?}"))
    }

    /// A sandbox config of four data nodes in two node groups.
    fn two_node_groups() -> (ManagementSettings, Vec<Vec<NodeId>>) {
        let text = config::sandbox_config_text("", 4, 2, 1186, 16 << 20);
        let config = config::parse(&text, "config.ini").expect("a valid config");
        let groups = config.node_groups.clone();
        assert_eq!(groups.len(), 2, "{groups:?}");
        (
            ManagementSettings::new("config.ini", &text, config, [7; 32]),
            groups,
        )
    }

    /// The logs of a new management node to which the data nodes of
    /// `disks` (node, restorable GCI, generation, restored from) connect
    /// and report, unstarted, until long past any start timeout.
    fn system_restart_logs(
        settings: &ManagementSettings,
        disks: &[(NodeId, u64, u64, u64)],
    ) -> Vec<String> {
        let epoch = |gci: u64| gci << 32;
        let mut management = ManagementNode::new(settings.clone(), 1, 0, None);
        let mut logs = Vec::new();
        for (connection, (node, gci, generation, restored_from)) in disks.iter().enumerate() {
            let connection = connection as ConnectionId + 1;
            management.on_connected(connection, "127.0.0.1");
            send(
                &mut management,
                connection,
                Message::AllocateNodeId {
                    role: NodeRole::Data,
                    requested: Some(*node),
                    listen_port: 4000,
                },
            );
            let report = DataNodeReport {
                incarnation: 1,
                restorable_epoch: epoch(*gci),
                restorable_generation: *generation,
                restored_from_generation: *restored_from,
                disk_epoch_max: epoch(*gci + 2),
                ..DataNodeReport::default()
            };
            let effects = send(
                &mut management,
                connection,
                Message::StatusReport {
                    report: Box::new(report),
                },
            );
            logs.extend(logs_of(&effects));
        }
        let mut effects = Effects::default();
        management.tick(1_000_000, &mut effects);
        logs.extend(logs_of(&effects));
        logs
    }

    fn logs_of(effects: &Effects<ConnectionId>) -> Vec<String> {
        logs(effects).into_iter().map(str::to_string).collect()
    }

    /// Two started data nodes (connections 1 and 2 for nodes 2 and 3) and
    /// a client (connection 5) that asked for SHUTDOWN.
    fn shutdown_requested() -> (ManagementNode, Effects<ConnectionId>) {
        let text = config::sandbox_config_text("", 2, 2, 1186, 16 << 20);
        let config = config::parse(&text, "config.ini").expect("a valid config");
        let settings = ManagementSettings::new("config.ini", &text, config, [7; 32]);
        let mut management = ManagementNode::new(settings, 1, 0, None);
        for (connection, node) in [(1, 2), (2, 3)] {
            management.on_connected(connection, "127.0.0.1");
            send(
                &mut management,
                connection,
                Message::AllocateNodeId {
                    role: NodeRole::Data,
                    requested: Some(node),
                    listen_port: 4000,
                },
            );
            let report = DataNodeReport {
                started: true,
                ..DataNodeReport::default()
            };
            send(
                &mut management,
                connection,
                Message::StatusReport {
                    report: Box::new(report),
                },
            );
        }
        management.on_connected(5, "127.0.0.1");
        let effects = send(
            &mut management,
            5,
            Message::StopRequest {
                request: 9,
                node: None,
                include_management: true,
                restart: None,
            },
        );
        (management, effects)
    }

    /// The `Drain` and `Stop` messages among `effects`, by connection.
    fn drains_and_stops(effects: &Effects<ConnectionId>) -> Vec<(ConnectionId, &'static str)> {
        effects
            .sends
            .iter()
            .filter(|(_, m)| matches!(m, Message::Drain | Message::Stop))
            .map(|(to, m)| (*to, m.name()))
            .collect()
    }

    /// SHUTDOWN drains the started data nodes first and stops them only
    /// once every node's last commit epoch lies below every node's
    /// durable epoch: a start then brings back every commit.
    #[test]
    fn a_shutdown_stops_the_data_nodes_once_every_commit_is_durable() {
        let (mut management, effects) = shutdown_requested();
        assert_eq!(drains_and_stops(&effects), vec![(1, "Drain"), (2, "Drain")]);
        let (e5, e9) = (crate::epochs::epoch(3, 5), crate::epochs::epoch(3, 9));
        let drained = |epoch, durable_epoch| Message::Drained {
            epoch,
            durable_epoch,
        };
        let effects = send(&mut management, 1, drained(e5, crate::epochs::epoch(3, 0)));
        assert_eq!(drains_and_stops(&effects), vec![]);
        // Node 3 committed later; node 2's durable epoch covers only 5.
        let effects = send(&mut management, 2, drained(e9, crate::epochs::epoch(4, 0)));
        assert_eq!(drains_and_stops(&effects), vec![]);
        let effects = send(&mut management, 1, drained(e5, e9));
        assert_eq!(drains_and_stops(&effects), vec![]);
        let effects = send(&mut management, 1, drained(e5, crate::epochs::epoch(4, 0)));
        assert_eq!(drains_and_stops(&effects), vec![(1, "Stop"), (2, "Stop")]);
        assert!(
            logs(&effects).contains(
                &"Cluster shutdown: every commit is durable (through GCI 3); stopping the data nodes"
            ),
            "{:?}",
            logs(&effects)
        );
    }

    /// A node still connected a while after its Stop gets it again, and a
    /// node that connects again while its stop is pending is told to stop
    /// at once: a node excluded while the cluster stops restarts in its
    /// process, and the Stop its old incarnation got may be gone with it.
    #[test]
    fn a_stop_is_sent_again_to_a_node_that_did_not_go() {
        let (mut management, _) = shutdown_requested();
        let durable = crate::epochs::epoch(4, 0);
        for connection in [1, 2] {
            let drained = Message::Drained {
                epoch: crate::epochs::epoch(3, 1),
                durable_epoch: durable,
            };
            send(&mut management, connection, drained);
        }
        let mut effects = Effects::default();
        management.on_disconnected(1, 1, &mut effects);
        management.tick(STOP_RESEND_MS - 1, &mut effects);
        assert_eq!(drains_and_stops(&effects), vec![]);
        management.tick(STOP_RESEND_MS, &mut effects);
        assert_eq!(drains_and_stops(&effects), vec![(2, "Stop")]);
        // Node 2 comes back on a new connection: told to stop at once.
        management.on_connected(7, "127.0.0.1");
        let effects = send(
            &mut management,
            7,
            Message::AllocateNodeId {
                role: NodeRole::Data,
                requested: Some(2),
                listen_port: 4000,
            },
        );
        assert_eq!(drains_and_stops(&effects), vec![(7, "Stop")]);
    }

    /// A drain that does not end (a node never answers) stops the nodes
    /// at `DRAIN_TIMEOUT_MS` and says what a start may not bring back; a
    /// node that disconnects is not waited for.
    #[test]
    fn a_shutdown_whose_drain_does_not_end_stops_at_its_deadline() {
        let (mut management, _) = shutdown_requested();
        // Unanswered, Drain goes again (it or its answer may be lost).
        let mut effects = Effects::default();
        management.tick(STOP_RESEND_MS - 1, &mut effects);
        assert_eq!(drains_and_stops(&effects), vec![]);
        management.tick(STOP_RESEND_MS, &mut effects);
        assert_eq!(drains_and_stops(&effects), vec![(1, "Drain"), (2, "Drain")]);
        let mut effects = Effects::default();
        management.tick(DRAIN_TIMEOUT_MS, &mut effects);
        assert_eq!(drains_and_stops(&effects), vec![(1, "Stop"), (2, "Stop")]);
        assert!(
            logs(&effects)
                .iter()
                .any(|line| line.contains("0 of 2 data node(s) answered")),
            "{:?}",
            logs(&effects)
        );

        let (mut management, _) = shutdown_requested();
        let mut effects = Effects::default();
        management.on_disconnected(1, 2, &mut effects);
        assert_eq!(drains_and_stops(&effects), vec![]);
        let effects = send(
            &mut management,
            1,
            Message::Drained {
                epoch: crate::epochs::epoch(2, 1),
                durable_epoch: crate::epochs::epoch(3, 0),
            },
        );
        assert_eq!(drains_and_stops(&effects), vec![(1, "Stop")]);
    }

    /// `N RESTART -n`: the data node is told to restart, the client hears
    /// back once it disconnected, its angel then holds it as "not started"
    /// until `N START` reaches the angel; the cluster log says each step.
    /// Nodes that are not waiting are refused START with a reason.
    #[test]
    fn restart_without_start_holds_the_node_until_start() {
        let text = config::sandbox_config_text("", 2, 2, 1186, 16 << 20);
        let config = config::parse(&text, "config.ini").expect("a valid config");
        let settings = ManagementSettings::new("config.ini", &text, config, [7; 32]);
        let mut management = ManagementNode::new(settings, 1, 0, None);
        const DATA: ConnectionId = 1;
        const CLIENT: ConnectionId = 5;
        const ANGEL: ConnectionId = 6;
        management.on_connected(DATA, "127.0.0.1");
        let effects = send(
            &mut management,
            DATA,
            Message::AllocateNodeId {
                role: NodeRole::Data,
                requested: Some(2),
                listen_port: 0,
            },
        );
        assert!(
            matches!(
                effects.sends.as_slice(),
                [(DATA, Message::NodeIdAllocated { node: 2, .. }), ..]
            ),
            "{:?}",
            effects.sends
        );
        management.on_connected(CLIENT, "127.0.0.1");
        let options = RestartOptions {
            initial: false,
            no_start: true,
        };
        let effects = send(
            &mut management,
            CLIENT,
            Message::StopRequest {
                request: 7,
                node: Some(2),
                include_management: false,
                restart: Some(options),
            },
        );
        assert_eq!(effects.sends, vec![(DATA, Message::Restart(options))]);
        assert_eq!(logs(&effects), vec!["Node 2: Node shutdown initiated"]);
        assert_eq!(state_of(&management, 2), NodeState::Stopping);

        let mut effects = Effects::default();
        management.on_disconnected(0, DATA, &mut effects);
        assert_eq!(
            effects.sends,
            vec![(
                CLIENT,
                Message::StopReply {
                    request: 7,
                    result: Ok(vec![2])
                }
            )]
        );
        assert!(
            logs(&effects).contains(&"Node 2: Node shutdown completed, restarting, no start"),
            "{:?}",
            logs(&effects)
        );
        assert_eq!(state_of(&management, 2), NodeState::NotConnected);

        // The angel says the node waits; only data nodes that are not
        // connected can.
        management.on_connected(ANGEL, "127.0.0.1");
        let effects = send(&mut management, ANGEL, Message::WaitingForStart { node: 2 });
        assert!(effects.sends.is_empty(), "{:?}", effects.sends);
        assert_eq!(state_of(&management, 2), NodeState::NotStarted);
        assert!(logs(&effects)[0].starts_with("Node 2: not started, waiting for START"));
        management.on_connected(8, "127.0.0.1");
        let effects = send(&mut management, 8, Message::WaitingForStart { node: 1 });
        assert!(
            matches!(effects.sends.as_slice(), [(8, Message::Refused { .. })]),
            "{:?}",
            effects.sends
        );

        // START of a node that does not wait is refused with the reason.
        let effects = send(
            &mut management,
            CLIENT,
            Message::StartRequest {
                request: 8,
                node: 3,
            },
        );
        let [
            (
                CLIENT,
                Message::StartReply {
                    request: 8,
                    result: Err(error),
                },
            ),
        ] = effects.sends.as_slice()
        else {
            panic!("{:?}", effects.sends);
        };
        assert!(error.message.contains("not waiting for START"), "{error:?}");

        let effects = send(
            &mut management,
            CLIENT,
            Message::StartRequest {
                request: 9,
                node: 2,
            },
        );
        assert_eq!(
            effects.sends,
            vec![
                (ANGEL, Message::Start),
                (
                    CLIENT,
                    Message::StartReply {
                        request: 9,
                        result: Ok(())
                    }
                )
            ]
        );
        assert_eq!(logs(&effects), vec!["Node 2: Start initiated"]);
        assert_eq!(state_of(&management, 2), NodeState::NotConnected);

        // `N STOP` of a waiting node stops its angel at once; RESTART is
        // refused (START starts it).
        let effects = send(&mut management, ANGEL, Message::WaitingForStart { node: 2 });
        assert!(effects.sends.is_empty());
        let restart = Message::StopRequest {
            request: 10,
            node: Some(2),
            include_management: false,
            restart: Some(RestartOptions::default()),
        };
        let effects = send(&mut management, CLIENT, restart);
        assert!(
            matches!(
                effects.sends.as_slice(),
                [(
                    CLIENT,
                    Message::StopReply {
                        request: 10,
                        result: Err(_)
                    }
                )]
            ),
            "{:?}",
            effects.sends
        );
        let stop = Message::StopRequest {
            request: 11,
            node: Some(2),
            include_management: false,
            restart: None,
        };
        let effects = send(&mut management, CLIENT, stop);
        assert_eq!(
            effects.sends,
            vec![
                (ANGEL, Message::Stop),
                (
                    CLIENT,
                    Message::StopReply {
                        request: 11,
                        result: Ok(vec![2])
                    }
                )
            ]
        );
        assert_eq!(state_of(&management, 2), NodeState::NotConnected);

        // An angel that goes away stops waiting.
        let effects = send(&mut management, ANGEL, Message::WaitingForStart { node: 2 });
        assert!(effects.sends.is_empty());
        let mut effects = Effects::default();
        management.on_disconnected(0, ANGEL, &mut effects);
        assert_eq!(state_of(&management, 2), NodeState::NotConnected);
    }
}
