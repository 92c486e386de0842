//! The arbitrator's votes on disk (`arbitrator.votes` in the management
//! node's DataDir). A Paxos voter must remember its promises across a
//! restart, or a restarted arbitrator could vote twice on one version and
//! let two halves of a split cluster both go on. The file is rewritten
//! whole (it holds a handful of entries) before any vote leaves the node.
//!
//! Byte layout (little-endian):
//!
//! | size | field |
//! |---:|---|
//! | 4 | magic `SHAV` |
//! | 1 | format version (3: states carry the system restart's epochs) |
//! | 16 | highest (generation, version) mentioned to the arbitrator |
//! | 16 | highest (generation, version) known decided: no vote at or below it |
//! | 1 + n | latest cluster state known: presence byte, then as in `message` (`Decided`) |
//! | 4 | entry count |
//! | per entry | generation u64, version u64, promised ballot (u32 round, u8 node), accepted flag u8, then ballot and change as in `message` |
//! | 4 | CRC-32C of everything before it |

use crate::codec::{DecodeError, Reader, Writer};
use crate::message::{get_ballot, get_change, get_state, put_ballot, put_change, put_state};
use crate::types::{Ballot, Change, ClusterState};

const MAGIC: [u8; 4] = *b"SHAV";
const FORMAT_VERSION: u8 = 3;

/// One voted-on version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteRecord {
    pub generation: u64,
    pub version: u64,
    pub promised: Ballot,
    pub accepted: Option<(Ballot, Change)>,
}

/// Everything the arbitrator must not forget.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ArbitratorVotes {
    pub position_mentioned_max: (u64, u64),
    /// Votes at or below this position were dropped once the arbitrator
    /// learned the version was decided; it must never vote there again.
    pub decided_max: (u64, u64),
    /// The newest cluster state the management node learned: its members
    /// must be accounted for before the cluster may form again, and its
    /// dictionary survives a re-formation.
    pub latest_state: Option<ClusterState>,
    pub records: Vec<VoteRecord>,
}

impl ArbitratorVotes {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.out.extend_from_slice(&MAGIC);
        w.u8(FORMAT_VERSION);
        w.u64(self.position_mentioned_max.0);
        w.u64(self.position_mentioned_max.1);
        w.u64(self.decided_max.0);
        w.u64(self.decided_max.1);
        match &self.latest_state {
            None => w.bool(false),
            Some(state) => {
                w.bool(true);
                put_state(&mut w, state);
            }
        }
        w.count(self.records.len());
        for record in &self.records {
            w.u64(record.generation);
            w.u64(record.version);
            put_ballot(&mut w, record.promised);
            match &record.accepted {
                None => w.bool(false),
                Some((ballot, change)) => {
                    w.bool(true);
                    put_ballot(&mut w, *ballot);
                    put_change(&mut w, change);
                }
            }
        }
        let checksum = crc32c::crc32c(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<ArbitratorVotes, DecodeError> {
        if bytes.len() < MAGIC.len() + 1 + 4 {
            return Err(DecodeError::new("arbitrator votes: file too short"));
        }
        let (body, checksum) = bytes.split_at(bytes.len() - 4);
        if crc32c::crc32c(body).to_le_bytes() != checksum {
            return Err(DecodeError::new("arbitrator votes: checksum mismatch"));
        }
        if body[..4] != MAGIC {
            return Err(DecodeError::new("arbitrator votes: not a votes file"));
        }
        let mut r = Reader::new(&body[4..]);
        let format = r.u8("format version")?;
        if format != FORMAT_VERSION {
            return Err(DecodeError::new(format!(
                "arbitrator votes: format {format}, this build reads {FORMAT_VERSION}"
            )));
        }
        let position_mentioned_max = (r.u64("generation")?, r.u64("version")?);
        let decided_max = (r.u64("generation")?, r.u64("version")?);
        let latest_state = if r.bool("latest state present")? {
            Some(get_state(&mut r)?)
        } else {
            None
        };
        let count = r.count(22, "records")?;
        let mut records = Vec::with_capacity(count);
        for _ in 0..count {
            let generation = r.u64("generation")?;
            let version = r.u64("version")?;
            let promised = get_ballot(&mut r)?;
            let accepted = if r.bool("accepted")? {
                Some((get_ballot(&mut r)?, get_change(&mut r)?))
            } else {
                None
            };
            records.push(VoteRecord {
                generation,
                version,
                promised,
                accepted,
            });
        }
        r.finish("arbitrator votes")?;
        Ok(ArbitratorVotes {
            position_mentioned_max,
            decided_max,
            latest_state,
            records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Member;

    fn sample() -> ArbitratorVotes {
        ArbitratorVotes {
            position_mentioned_max: (7, 12),
            decided_max: (7, 11),
            latest_state: Some(ClusterState {
                generation: 7,
                version: 11,
                members: vec![Member {
                    node: 2,
                    incarnation: 9,
                }],
                ..ClusterState::default()
            }),
            records: vec![
                VoteRecord {
                    generation: 7,
                    version: 13,
                    promised: Ballot { round: 4, node: 2 },
                    accepted: Some((
                        Ballot { round: 3, node: 2 },
                        Change::Membership {
                            members: vec![Member {
                                node: 2,
                                incarnation: 9,
                            }],
                        },
                    )),
                },
                VoteRecord {
                    generation: 7,
                    version: 14,
                    promised: Ballot { round: 1, node: 3 },
                    accepted: None,
                },
            ],
        }
    }

    #[test]
    fn votes_round_trip() {
        let votes = sample();
        assert_eq!(ArbitratorVotes::decode(&votes.encode()).unwrap(), votes);
    }

    #[test]
    fn damage_is_detected_not_trusted() {
        let bytes = sample().encode();
        for index in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[index] ^= 0x10;
            assert!(ArbitratorVotes::decode(&damaged).is_err(), "byte {index}");
        }
        for cut in 0..bytes.len() {
            assert!(ArbitratorVotes::decode(&bytes[..cut]).is_err(), "cut {cut}");
        }
    }
}
