//! The simulated network: per-message latency, loss and duplication, and
//! links that are cut and healed, for the membership protocol; and TCP-like
//! links (`TcpLinks`) for transaction messages. Nodes are addressed by node id; a message
//! is tagged with the receiver's incarnation when sent, and dropped if the
//! receiver restarted before it arrived, as a TCP connection dies with its
//! process.

use std::collections::{BTreeMap, BTreeSet};

use protocol::NodeId;
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

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

/// The network of transaction messages, which rely on TCP: each directed
/// link (a node to another, or to itself) delivers in order and exactly
/// once. A message takes a random latency but never overtakes the one
/// before it on its link; a lost segment costs a retransmission timeout,
/// and everything behind it on that link waits too (head-of-line
/// blocking). Messages on different links overtake each other freely.
pub struct TcpLinks {
    pub latency_ms_max: u64,
    /// Probability that a message waits for a retransmission.
    pub retransmission: f64,
    pub retransmission_ms: u64,
    /// Per directed link, when its last message arrives.
    last_arrival_ms: BTreeMap<(NodeId, NodeId), u64>,
    pub in_flight: u64,
    pub delivered: u64,
    pub retransmissions: u64,
}

impl TcpLinks {
    pub fn new(rng: &mut ChaCha8Rng, faults: bool) -> TcpLinks {
        // Most seeds have a fast network; some a slow and uneven one, where
        // messages on different links overtake each other more.
        let latency_ms_max = if rng.next_u64().is_multiple_of(5) {
            10 + rng.next_u64() % 41
        } else {
            1 + rng.next_u64() % 10
        };
        TcpLinks {
            latency_ms_max,
            retransmission: if faults {
                (rng.next_u64() % 40) as f64 / 1000.0
            } else {
                0.0
            },
            retransmission_ms: 200,
            last_arrival_ms: BTreeMap::new(),
            in_flight: 0,
            delivered: 0,
            retransmissions: 0,
        }
    }

    /// When a message sent now from `from` to `to` arrives.
    pub fn arrival_ms(
        &mut self,
        rng: &mut ChaCha8Rng,
        now_ms: u64,
        from: NodeId,
        to: NodeId,
        counted: bool,
    ) -> u64 {
        let mut at = now_ms + 1 + rng.next_u64() % self.latency_ms_max;
        if ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < self.retransmission {
            self.retransmissions += 1;
            at += self.retransmission_ms;
        }
        let last = self.last_arrival_ms.entry((from, to)).or_insert(0);
        // Same time is fine: events at one time run in the order scheduled.
        at = at.max(*last);
        *last = at;
        if counted {
            self.in_flight += 1;
        }
        at
    }
}
