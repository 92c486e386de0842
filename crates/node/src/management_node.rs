//! The management node composite. The runtime owns the connections and
//! names each by a `LinkId`; what it learns (a connection accepted or
//! closed, a message read, the time) goes in here, and what the node wants
//! done comes out as a `ManagementOutput`: votes to make durable, messages
//! per link, links that now count as identified, cluster log lines, and a
//! request to stop.
//!
//! Rules kept here, so `mgmd` and the simulator both keep them:
//! - A `Hello` proves nothing to the management node (clients get the
//!   cluster secret from it): it is only remembered as the link's claim,
//!   and `HelloProof` is ignored. Every other message goes to the block,
//!   whether or not a `Hello` came first (management clients and nodes
//!   asking for their id talk to it before they have a node id).
//! - A link counts as identified once the block allocates it a node id
//!   (`NodeIdAllocated`) after a `Hello` claimed an incarnation and role;
//!   an allocation without a claim leaves it unidentified.
//! - The arbitrator's votes of a turn are written durably before any of
//!   that turn's messages leaves, because those messages may carry them.
//! - The block ticks at its heartbeat interval, bounded so a runtime
//!   neither spins nor sleeps through a deadline.

use std::collections::BTreeMap;

use cluster::management::ConnectionId;
use cluster::{Effects, Event, ManagementNode, ManagementSettings};
use protocol::persisted::ArbitratorVotes;
use protocol::{Message, NodeRole};

pub use crate::data_node::{LinkId, Peer};

/// The shortest interval between ticks, whatever the settings say.
pub const TICK_INTERVAL_MIN_MS: u64 = 10;
/// The longest interval between ticks, whatever the settings say.
pub const TICK_INTERVAL_MAX_MS: u64 = 1_000;

/// What the runtime must do after one input, in this order: write `votes`
/// durably, then mark the `identified` links, then send. Cleared by the
/// runtime (`clear`) after it has acted.
#[derive(Debug, Default)]
pub struct ManagementOutput {
    /// The arbitrator's votes (`ArbitratorVotes` encoded), the newest of
    /// this turn: each encoding is the whole file, so only the last counts.
    /// They must be durable before any of `sends` goes out.
    pub votes: Option<Vec<u8>>,
    /// Messages for each link, in order.
    pub sends: Vec<(LinkId, Message)>,
    /// Links that became identified this turn, with who is at the other
    /// end (the runtime's slot limits count them as identified from now).
    pub identified: Vec<(LinkId, Peer)>,
    /// Lines for the cluster log, in order.
    pub logs: Vec<String>,
    /// The node was told to shut down, with why: the runtime lets this
    /// turn's sends drain and exits.
    pub stop: Option<String>,
    /// Links to close, with why; the composite has forgotten them already
    /// (the runtime does not call `on_link_closed` for them).
    pub close: Vec<(LinkId, String)>,
}

impl ManagementOutput {
    pub fn clear(&mut self) {
        self.votes = None;
        self.sends.clear();
        self.identified.clear();
        self.logs.clear();
        self.stop = None;
        self.close.clear();
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Link {
    /// What the link's `Hello` claimed: (incarnation, role).
    claim: Option<(u64, NodeRole)>,
    /// Set once the block allocated the link a node id after a claim.
    peer: Option<Peer>,
}

/// The management node: its block and what it knows of each connection.
pub struct ManagementComposite {
    block: ManagementNode,
    links: BTreeMap<LinkId, Link>,
    /// When the block is next due a tick.
    next_tick_at_ms: u64,
    /// Reused from input to input, so the message path does not allocate.
    effects: Effects<ConnectionId>,
}

impl ManagementComposite {
    /// `votes` are the arbitrator's votes read back from durable storage,
    /// `None` when there were none (a new DataDir) or they were unreadable.
    pub fn new(
        settings: ManagementSettings,
        incarnation: u64,
        now_ms: u64,
        votes: Option<ArbitratorVotes>,
    ) -> ManagementComposite {
        ManagementComposite {
            block: ManagementNode::new(settings, incarnation, now_ms, votes),
            links: BTreeMap::new(),
            next_tick_at_ms: now_ms,
            effects: Effects::new(),
        }
    }

    pub fn block(&self) -> &ManagementNode {
        &self.block
    }

    /// Who is at the other end of `link`, once it counts as identified.
    pub fn peer_of(&self, link: LinkId) -> Option<Peer> {
        self.links.get(&link).and_then(|state| state.peer)
    }

    /// When the runtime must call `tick` next.
    pub fn next_deadline_ms(&self) -> u64 {
        self.next_tick_at_ms
    }

    /// A connection was accepted from `peer_host`.
    pub fn on_connected(&mut self, link: LinkId, peer_host: &str) {
        let previous = self.links.insert(link, Link::default());
        assert!(previous.is_none(), "link {link} is not reused while open");
        self.block.on_connected(link, peer_host);
    }

    /// A connection closed (by its peer, an error, or the slot limits).
    pub fn on_link_closed(&mut self, now_ms: u64, link: LinkId, output: &mut ManagementOutput) {
        if self.links.remove(&link).is_none() {
            return;
        }
        self.block.on_disconnected(now_ms, link, &mut self.effects);
        self.finish(output);
    }

    /// A message read from `link`.
    pub fn on_message(
        &mut self,
        now_ms: u64,
        link: LinkId,
        message: Message,
        output: &mut ManagementOutput,
    ) {
        let Some(state) = self.links.get_mut(&link) else {
            // The runtime closed the link in the same turn it read this.
            return;
        };
        match message {
            Message::Hello {
                incarnation, role, ..
            } => {
                state.claim = Some((incarnation, role));
            }
            Message::HelloProof { .. } => {}
            message => {
                self.block
                    .on_message(now_ms, link, message, &mut self.effects);
                self.finish(output);
            }
        }
    }

    /// The block's timers: call at `next_deadline_ms` (or later).
    pub fn tick(&mut self, now_ms: u64, output: &mut ManagementOutput) {
        for (link, why) in self.block.silent_connections(now_ms) {
            if self.links.remove(&link).is_some() {
                output.logs.push(why.clone());
                output.close.push((link, why));
                self.block.on_disconnected(now_ms, link, &mut self.effects);
            }
        }
        self.block.tick(now_ms, &mut self.effects);
        self.next_tick_at_ms = now_ms
            + self
                .block
                .next_tick_ms()
                .clamp(TICK_INTERVAL_MIN_MS, TICK_INTERVAL_MAX_MS);
        self.finish(output);
    }

    /// Turns the block's effects into the output, in the block's order.
    fn finish(&mut self, output: &mut ManagementOutput) {
        for event in self.effects.events.drain(..) {
            match event {
                Event::Log(line) => output.logs.push(line),
                Event::Stop { reason, .. } => {
                    output.logs.push(format!("Shutting down: {reason}"));
                    output.stop = Some(reason);
                }
                Event::PersistVotes(bytes) => output.votes = Some(bytes),
                // The management node installs nothing and is never excluded.
                Event::Installed(_)
                | Event::Excluded { .. }
                | Event::Suspected(_)
                | Event::Serving(_) => {}
            }
        }
        for (link, message) in self.effects.sends.drain(..) {
            if let Message::NodeIdAllocated { node, .. } = &message
                && let Some(state) = self.links.get_mut(&link)
                && let Some((incarnation, role)) = state.claim
            {
                let peer = Peer {
                    node: *node,
                    incarnation,
                    role,
                };
                state.peer = Some(peer);
                output.identified.push((link, peer));
            }
            output.sends.push((link, message));
        }
    }
}
