//! What a block asks its runtime to do after handling one input. The
//! runtime (production or simulator) performs the effects in order.

use protocol::{ClusterState, Message, NodeId, RestartOptions};

/// Messages to send and events to report, collected during one `handle`.
/// Data nodes address peers by node id; the management node addresses
/// connections, because a client has no node id until it is given one.
#[derive(Debug)]
pub struct Effects<To = NodeId> {
    pub sends: Vec<(To, Message)>,
    pub events: Vec<Event>,
}

impl<To> Default for Effects<To> {
    fn default() -> Self {
        Effects {
            sends: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl<To> Effects<To> {
    pub fn new() -> Effects<To> {
        Effects::default()
    }

    pub fn send(&mut self, to: To, message: Message) {
        self.sends.push((to, message));
    }

    pub fn clear(&mut self) {
        self.sends.clear();
        self.events.clear();
    }
}

/// Something the runtime must act on or log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The node installed a new agreed cluster state.
    Installed(Box<ClusterState>),
    /// The node is no longer part of the agreed cluster (the others removed
    /// it, or it could not get agreement in time). Its data and duties are
    /// void: the runtime restarts it as a new incarnation, which must be
    /// admitted again, as NDB's angel process restarts a failed ndbd.
    Excluded { reason: String },
    /// The node was asked to stop (by the management node); the runtime
    /// exits, with `restart` so that its angel starts it again.
    Stop {
        reason: String,
        restart: Option<RestartOptions>,
    },
    /// The node began to suspect this member (missed heartbeats or a
    /// closed connection): the runtime closes the connection to it, so a
    /// link that went silent without closing is dialed afresh, and a peer
    /// that was only slow or cut off is reached again within a dial once
    /// it can be, instead of waiting for TCP to give up.
    Suspected(protocol::Member),
    /// The node stops (false) or resumes (true) serving: after
    /// ArbitrationTimeout without agreement it refuses new API work with a
    /// temporary error (4035) but keeps its data, until a state with it is
    /// agreed (or one without it excludes it).
    Serving(bool),
    /// A line for the node's log.
    Log(String),
    /// The arbitrator's votes (`protocol::persisted::ArbitratorVotes`):
    /// the runtime writes them durably before it sends any message of the
    /// same `Effects`, because those messages may carry the votes.
    PersistVotes(Vec<u8>),
}
