//! Rules of the agreed cluster state: applying a decided change, who votes
//! on the next change, and when votes make a quorum.

use protocol::{Change, ClusterState, Member, NodeId, SchemaOutcome, SchemaRequestId};

/// Dictionary changes the agreed state remembers with the request behind
/// each, so a retry of any of them gets its first answer. A client retries
/// within seconds; this many changes take much longer to happen.
pub const SCHEMA_OUTCOMES_REMEMBERED_MAX: usize = 1024;

/// Weight of a data node's vote; the arbitrator's weighs 1. With `n`
/// members the total is `2n + 1`, which is odd, so two disjoint vote sets
/// can never both be quorums: a majority of data nodes wins alone, exactly
/// half of them win only together with the arbitrator (NDB's rule).
pub const DATA_NODE_VOTE_WEIGHT: u32 = 2;
pub const ARBITRATOR_VOTE_WEIGHT: u32 = 1;

/// The state after `change` is applied to `state` (one version later).
pub fn apply(state: &ClusterState, change: &Change) -> ClusterState {
    let mut next = state.clone();
    next.version += 1;
    match change {
        Change::Membership { members } => {
            for gone in state.members.iter().filter(|m| !members.contains(m)) {
                match next.removed.iter_mut().find(|r| r.node == gone.node) {
                    Some(entry) => entry.incarnation = entry.incarnation.max(gone.incarnation),
                    None => next.removed.push(*gone),
                }
            }
            next.removed.sort();
            // A node admitted into a running cluster holds nothing yet: it
            // copies its fragments before it serves (NDB's node restart).
            // The first state of a generation forms the cluster from
            // nodes that all start empty, so none of them is starting.
            if state.version > 0 {
                for added in members.iter().filter(|m| !state.members.contains(m)) {
                    next.starting.push(*added);
                }
            }
            next.starting.retain(|m| members.contains(m));
            next.starting.sort();
            next.recovered.retain(|m| members.contains(m));
            next.members = members.clone();
        }
        Change::NodeStarted { member } => {
            assert!(
                state.starting.contains(member),
                "only a starting member becomes started"
            );
            next.starting.retain(|m| m != member);
            next.recovered.push(*member);
        }
        Change::CreateTable { table, origin } => {
            assert!(
                table.id >= state.next_table_id,
                "table ids are never reused"
            );
            next.schema_version += 1;
            next.next_table_id = table.id + 1;
            next.tables.push(table.clone());
            next.tables.sort_by_key(|t| t.id);
            remember(&mut next, *origin, table.id);
        }
        Change::DropTable { table_id, origin } => {
            next.schema_version += 1;
            next.tables.retain(|t| t.id != *table_id);
            remember(&mut next, *origin, *table_id);
        }
        Change::RenameTable {
            table_id,
            name,
            definition,
            origin,
        } => {
            next.schema_version += 1;
            let table = next
                .tables
                .iter_mut()
                .find(|t| t.id == *table_id)
                .expect("a rename is planned for a table the state holds");
            // The table's own schema version stays: its fragments, rows
            // and hidden tables are the same ones under the new name (a
            // new version would make query handlers create them afresh).
            table.name = name.clone();
            table.definition = definition.clone();
            remember(&mut next, *origin, *table_id);
        }
    }
    next
}

/// Records that `origin`'s change was applied, forgetting the oldest
/// outcome beyond `SCHEMA_OUTCOMES_REMEMBERED_MAX`.
fn remember(state: &mut ClusterState, origin: SchemaRequestId, table_id: u32) {
    // The president plans a request only when the state has no outcome for
    // it, so one request is never applied twice.
    assert!(
        state.schema_outcome(origin).is_none(),
        "a schema request is applied once"
    );
    if state.schema_outcomes.len() >= SCHEMA_OUTCOMES_REMEMBERED_MAX {
        let excess = state.schema_outcomes.len() + 1 - SCHEMA_OUTCOMES_REMEMBERED_MAX;
        state.schema_outcomes.drain(..excess);
    }
    state
        .schema_outcomes
        .push(SchemaOutcome { origin, table_id });
}

/// Who votes on the change that follows `state`, with what weight.
#[derive(Debug, Clone)]
pub struct Electorate {
    pub voters: Vec<(Voter, u32)>,
    pub total_weight: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voter {
    DataNode(Member),
    Arbitrator(NodeId),
}

impl Voter {
    pub fn node(self) -> NodeId {
        match self {
            Voter::DataNode(member) => member.node,
            Voter::Arbitrator(node) => node,
        }
    }
}

impl Electorate {
    pub fn for_state(state: &ClusterState, arbitrator: Option<NodeId>) -> Electorate {
        let mut voters: Vec<(Voter, u32)> = state
            .members
            .iter()
            .map(|m| (Voter::DataNode(*m), DATA_NODE_VOTE_WEIGHT))
            .collect();
        if let Some(node) = arbitrator {
            voters.push((Voter::Arbitrator(node), ARBITRATOR_VOTE_WEIGHT));
        }
        let total_weight = voters.iter().map(|(_, w)| w).sum();
        Electorate {
            voters,
            total_weight,
        }
    }

    /// The voter a message from (`node`, `incarnation`) speaks for, if any.
    pub fn voter(&self, node: NodeId, incarnation: u64) -> Option<(Voter, u32)> {
        self.voters.iter().copied().find(|(voter, _)| match voter {
            Voter::DataNode(member) => member.node == node && member.incarnation == incarnation,
            Voter::Arbitrator(arbitrator) => *arbitrator == node,
        })
    }

    pub fn is_quorum(&self, weight: u32) -> bool {
        weight * 2 > self.total_weight
    }
}

/// Whether `members` keeps at least one node of every node group; without
/// that some partitions have no replica and the cluster cannot go on.
pub fn covers_node_groups(members: &[Member], node_groups: &[Vec<NodeId>]) -> bool {
    node_groups
        .iter()
        .all(|group| members.iter().any(|m| group.contains(&m.node)))
}

/// The first node group with no member in `members`.
pub fn uncovered_node_group(members: &[Member], node_groups: &[Vec<NodeId>]) -> Option<usize> {
    node_groups
        .iter()
        .position(|group| !members.iter().any(|m| group.contains(&m.node)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(nodes: &[u8]) -> ClusterState {
        ClusterState {
            version: 3,
            members: nodes
                .iter()
                .map(|&node| Member {
                    node,
                    incarnation: 1,
                })
                .collect(),
            ..ClusterState::default()
        }
    }

    #[test]
    fn half_the_nodes_need_the_arbitrator() {
        let electorate = Electorate::for_state(&state(&[2, 3]), Some(1));
        assert!(!electorate.is_quorum(DATA_NODE_VOTE_WEIGHT));
        assert!(electorate.is_quorum(DATA_NODE_VOTE_WEIGHT + ARBITRATOR_VOTE_WEIGHT));
        let four = Electorate::for_state(&state(&[2, 3, 4, 5]), Some(1));
        assert!(!four.is_quorum(2 * DATA_NODE_VOTE_WEIGHT));
        assert!(four.is_quorum(2 * DATA_NODE_VOTE_WEIGHT + ARBITRATOR_VOTE_WEIGHT));
        assert!(four.is_quorum(3 * DATA_NODE_VOTE_WEIGHT));
    }

    #[test]
    fn without_an_arbitrator_a_strict_majority_is_needed() {
        let electorate = Electorate::for_state(&state(&[2, 3]), None);
        assert!(!electorate.is_quorum(DATA_NODE_VOTE_WEIGHT));
        assert!(electorate.is_quorum(2 * DATA_NODE_VOTE_WEIGHT));
    }

    #[test]
    fn a_restarted_node_is_not_its_old_incarnation() {
        let electorate = Electorate::for_state(&state(&[2, 3]), Some(1));
        assert!(electorate.voter(2, 1).is_some());
        assert!(electorate.voter(2, 2).is_none());
        assert!(electorate.voter(1, 99).is_some());
    }

    #[test]
    fn node_group_coverage() {
        let groups = vec![vec![2, 3], vec![4, 5]];
        assert!(covers_node_groups(&state(&[3, 4]).members, &groups));
        assert!(!covers_node_groups(&state(&[2, 3]).members, &groups));
        assert_eq!(
            uncovered_node_group(&state(&[2, 3]).members, &groups),
            Some(1)
        );
    }

    #[test]
    fn the_state_remembers_the_newest_schema_outcomes_by_request() {
        let mut current = state(&[2, 3]);
        let total = SCHEMA_OUTCOMES_REMEMBERED_MAX as u64 + 5;
        for request in 0..total {
            let origin = SchemaRequestId { node: 250, request };
            current = apply(
                &current,
                &Change::DropTable {
                    table_id: request as u32,
                    origin,
                },
            );
            assert_eq!(
                current.schema_outcome(origin).map(|o| o.table_id),
                Some(request as u32)
            );
        }
        assert_eq!(
            current.schema_outcomes.len(),
            SCHEMA_OUTCOMES_REMEMBERED_MAX
        );
        let oldest = SchemaRequestId {
            node: 250,
            request: 4,
        };
        assert!(current.schema_outcome(oldest).is_none(), "forgotten");
        let kept = SchemaRequestId {
            node: 250,
            request: 5,
        };
        assert_eq!(current.schema_outcome(kept).map(|o| o.table_id), Some(5));
        // Another API node's request with the same id is another request.
        let other = SchemaRequestId {
            node: 251,
            request: 5,
        };
        assert!(current.schema_outcome(other).is_none());
    }
}
