//! The simulated network: per-message latency, loss and duplication, and
//! links that are cut and healed. Nodes are addressed by node id; a message
//! is tagged with the receiver's incarnation when sent, and dropped if the
//! receiver restarted before it arrived, as a TCP connection dies with its
//! process.

use std::collections::BTreeSet;

use protocol::NodeId;

#[derive(Debug, Clone)]
pub struct NetworkFaults {
    /// Probability that a message is lost.
    pub loss: f64,
    /// Probability that a message is delivered twice.
    pub duplication: f64,
    /// Probability that a message takes a long detour (up to `slow_ms_max`).
    pub slow: f64,
    pub latency_ms_max: u64,
    pub slow_ms_max: u64,
}

impl NetworkFaults {
    pub fn none() -> NetworkFaults {
        NetworkFaults {
            loss: 0.0,
            duplication: 0.0,
            slow: 0.0,
            latency_ms_max: 5,
            slow_ms_max: 0,
        }
    }
}

pub struct Network {
    pub faults: NetworkFaults,
    cut: BTreeSet<(NodeId, NodeId)>,
}

impl Network {
    pub fn new(faults: NetworkFaults) -> Network {
        Network {
            faults,
            cut: BTreeSet::new(),
        }
    }

    fn key(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
        (a.min(b), a.max(b))
    }

    pub fn is_cut(&self, a: NodeId, b: NodeId) -> bool {
        self.cut.contains(&Network::key(a, b))
    }

    pub fn cut(&mut self, a: NodeId, b: NodeId) {
        if a != b {
            self.cut.insert(Network::key(a, b));
        }
    }

    pub fn heal(&mut self, a: NodeId, b: NodeId) {
        self.cut.remove(&Network::key(a, b));
    }

    pub fn heal_all(&mut self) {
        self.cut.clear();
    }
}
