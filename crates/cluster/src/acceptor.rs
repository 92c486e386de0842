//! The acceptor side of single-decree Paxos, one instance per cluster-state
//! version. Data nodes keep one for the next version; the arbitrator keeps
//! several.
//!
//! An acceptor's promises live in memory only. That is safe for data nodes
//! because an acceptor is a (node, incarnation) pair: a restarted node is a
//! new incarnation, never counted as the acceptor it replaced. The
//! arbitrator, which has no incarnation in the member list, instead refuses
//! to vote for a while after it starts (see `management`).

use protocol::{Ballot, Change, Message};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acceptor {
    pub promised: Ballot,
    pub accepted: Option<(Ballot, Change)>,
}

/// An acceptor's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vote {
    Promise(Option<(Ballot, Change)>),
    Accepted,
    /// Refused: the acceptor promised this higher ballot.
    Nack(Ballot),
}

impl Vote {
    /// The answer on the wire for `version` and `ballot`.
    pub fn message(self, version: u64, ballot: Ballot) -> Message {
        match self {
            Vote::Promise(accepted) => Message::Promise {
                version,
                ballot,
                accepted: accepted.map(Box::new),
            },
            Vote::Accepted => Message::Accepted { version, ballot },
            Vote::Nack(promised) => Message::Nack {
                version,
                ballot,
                promised,
            },
        }
    }
}

impl Acceptor {
    /// Phase 1: promise not to accept lower ballots.
    pub fn prepare(&mut self, ballot: Ballot) -> Vote {
        if ballot >= self.promised {
            self.promised = ballot;
            Vote::Promise(self.accepted.clone())
        } else {
            Vote::Nack(self.promised)
        }
    }

    /// Refuses a ballot without promising anything (the proposer is not
    /// one this node follows).
    pub fn refuse(&self) -> Vote {
        Vote::Nack(self.promised)
    }

    /// Phase 2: accept unless a higher ballot was promised.
    pub fn accept(&mut self, ballot: Ballot, change: &Change) -> Vote {
        if ballot >= self.promised {
            self.promised = ballot;
            self.accepted = Some((ballot, change.clone()));
            Vote::Accepted
        } else {
            Vote::Nack(self.promised)
        }
    }
}
