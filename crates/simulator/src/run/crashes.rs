//! Data nodes crashing under the transaction workload
//! (`SimulationOptions::crashes`).
//!
//! Each run splits the data nodes in two: in every node group one node
//! never crashes; the others may crash, more than once, and each comes
//! back as a new incarnation after a while: empty, it joins as a starting
//! member, copies its fragment replicas while the workload writes (node
//! recovery, `transaction::query_handler` copy) and becomes a started
//! member, which may crash again (during its copy too, and the copy of
//! another node may lose its source). In half the runs the sessions use only the nodes that
//! never crash as coordinators; in the other half any live node, so
//! coordinators die too and the president takes their transactions over
//! (a session whose commit was in flight then cannot know its outcome,
//! and the model allows both; those runs leave out the `coded` jobs,
//! whose model does not). So every node group keeps a live replica and every acknowledged
//! commit must survive, every `Execute` must get a true answer (committed,
//! or aborted with 4010 when a participant died before the commit), and
//! the survivors must hold no lock or operation record at the end.
//!
//! A crash comes either at a random moment or right after the node handled
//! a given message of the commit protocol as a participant (a key request,
//! a commit, a complete, an abort, a fragment scan), with only a random
//! prefix of what it sent in that step leaving: a primary dying after it
//! forwarded a write to some backups and not to others, or after it
//! committed without telling its coordinator.

use std::collections::{BTreeMap, BTreeSet};

use protocol::{Message, NodeId};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use super::{SimEvent, Simulation, between, chance};

/// At most this many crashes in one run.
const CRASHES_PER_RUN_MAX: u64 = 3;
/// A crashed node starts again this long after it went down (ms).
const RESTART_DELAY_MS_MIN: u64 = 50;
const RESTART_DELAY_MS_MAX: u64 = 1_200;
/// The share of runs in which coordinators crash too.
const COORDINATOR_CRASH_CHANCE: f64 = 0.5;
/// The share of crashes that wait for a message of the commit protocol.
const TRIGGERED_CRASH_CHANCE: f64 = 0.7;
/// A crash due while the survivors still agree on an earlier one waits
/// this long and tries again.
const FAILURE_SPACING_MS: u64 = 50;
/// The share of planned failures that isolate the node instead of
/// crashing it: it keeps running and serving its API nodes, cut off from
/// the other data nodes and the management node, so the others remove it
/// while it may still answer reads (the stale-read check's case).
const ISOLATION_CHANCE: f64 = 0.3;
/// How long an isolation lasts (ms): beyond the failure detection time,
/// so the others remove the node, and often beyond ArbitrationTimeout, so
/// it gives up on its own too.
const ISOLATION_MS_MIN: u64 = 600;
const ISOLATION_MS_MAX: u64 = 3_000;

/// The message after which an armed node crashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    KeyRequest,
    Commit,
    Complete,
    Abort,
    FragmentScanOpen,
}

const TRIGGERS: [Trigger; 5] = [
    Trigger::KeyRequest,
    Trigger::Commit,
    Trigger::Complete,
    Trigger::Abort,
    Trigger::FragmentScanOpen,
];

impl Trigger {
    fn matches(self, message: &Message) -> bool {
        matches!(
            (self, message),
            (Trigger::KeyRequest, Message::KeyRequest(_))
                | (Trigger::Commit, Message::Commit(_))
                | (Trigger::Complete, Message::Complete(_))
                | (Trigger::Abort, Message::Abort(_))
                | (Trigger::FragmentScanOpen, Message::FragmentScanOpen(_))
        )
    }
}

/// Who may crash in a run, who has, and who waits for a trigger.
#[derive(Debug, Default)]
pub(super) struct CrashPlan {
    /// Never crash; the workload's coordinators.
    pub coordinators: Vec<NodeId>,
    /// May crash, and start again.
    pub candidates: Vec<NodeId>,
    /// Down now (crashed, not started again yet).
    pub crashed: BTreeSet<NodeId>,
    /// Every incarnation that crashed: until the survivors agree it is
    /// gone, a failure is pending.
    pub down: BTreeSet<(NodeId, u64)>,
    /// Crashes so far: once there was one, the model allows what a crash
    /// allows (the node may be back by now).
    pub crashes: u64,
    /// Nodes that crash after handling their next message of this kind.
    pub armed: BTreeMap<NodeId, Trigger>,
    /// Sessions use any live node as coordinator, so coordinators crash
    /// too and the president takes their transactions over; the clients
    /// then cannot know how a commit in flight ended.
    pub coordinators_crash: bool,
    /// When the last crash happened.
    pub last_crash_ms: Option<u64>,
    /// The node cut off from the others now, and its incarnation then.
    pub isolated: Option<(NodeId, u64)>,
}

impl CrashPlan {
    /// One node of every node group never crashes.
    pub fn new(rng: &mut ChaCha8Rng, node_groups: &[Vec<NodeId>]) -> CrashPlan {
        let mut plan = CrashPlan::default();
        for group in node_groups {
            let keep = group[(rng.next_u64() % group.len() as u64) as usize];
            for node in group {
                if *node == keep {
                    plan.coordinators.push(*node);
                } else {
                    plan.candidates.push(*node);
                }
            }
        }
        assert!(!plan.coordinators.is_empty(), "a cluster has a node group");
        plan.coordinators_crash = chance(rng, COORDINATOR_CRASH_CHANCE);
        plan
    }
}

/// Which crash the fault counters name it by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CrashMarks {
    pub at_random: u64,
    pub after_key_request: u64,
    pub after_commit: u64,
    pub after_complete: u64,
    pub after_abort: u64,
    pub after_fragment_scan: u64,
    /// Isolations rather than crashes.
    pub isolations: u64,
}

impl CrashMarks {
    pub fn add(&mut self, other: &CrashMarks) {
        self.at_random += other.at_random;
        self.after_key_request += other.after_key_request;
        self.after_commit += other.after_commit;
        self.after_complete += other.after_complete;
        self.after_abort += other.after_abort;
        self.after_fragment_scan += other.after_fragment_scan;
        self.isolations += other.isolations;
    }

    fn count(&mut self, trigger: Option<Trigger>) {
        let counter = match trigger {
            None => &mut self.at_random,
            Some(Trigger::KeyRequest) => &mut self.after_key_request,
            Some(Trigger::Commit) => &mut self.after_commit,
            Some(Trigger::Complete) => &mut self.after_complete,
            Some(Trigger::Abort) => &mut self.after_abort,
            Some(Trigger::FragmentScanOpen) => &mut self.after_fragment_scan,
        };
        *counter += 1;
    }
}

impl Simulation {
    /// The workload's sessions start: plan when nodes crash during the
    /// `running_ms` they run.
    pub(super) fn plan_crashes(&mut self, running_ms: u64) {
        let Some(plan) = self.crash_plan.as_ref() else {
            return;
        };
        let candidates = plan.candidates.clone();
        if candidates.is_empty() {
            return;
        }
        let crashes = between(&mut self.rng, 1, CRASHES_PER_RUN_MAX);
        let end = self.now_ms + running_ms;
        for _ in 0..crashes {
            // A node may crash again once it is back (or while it copies).
            let node = candidates[(self.rng.next_u64() % candidates.len() as u64) as usize];
            let at = between(&mut self.rng, self.now_ms, end);
            if chance(&mut self.rng, ISOLATION_CHANCE) {
                self.schedule(at, SimEvent::Isolate { node });
                continue;
            }
            let trigger = chance(&mut self.rng, TRIGGERED_CRASH_CHANCE)
                .then(|| TRIGGERS[(self.rng.next_u64() % TRIGGERS.len() as u64) as usize]);
            self.schedule(at, SimEvent::Crash { node, trigger });
            // A trigger that never comes: the node crashes when the
            // sessions stop starting transactions.
            if trigger.is_some() {
                self.schedule(
                    end,
                    SimEvent::Crash {
                        node,
                        trigger: None,
                    },
                );
            }
        }
    }

    /// A crashed node of the plan: it starts again after a while.
    pub(super) fn plan_restart(&mut self, node: NodeId) {
        let at = self.now_ms + between(&mut self.rng, RESTART_DELAY_MS_MIN, RESTART_DELAY_MS_MAX);
        self.schedule(at, SimEvent::Restart { node });
    }

    /// A planned crash is due: crash the node now, or arm its trigger.
    pub(super) fn planned_crash(&mut self, node: NodeId, trigger: Option<Trigger>) {
        let Some(plan) = self.crash_plan.as_mut() else {
            return;
        };
        if plan.crashed.contains(&node) {
            // Down already; it comes back by itself.
            return;
        }
        match trigger {
            Some(trigger) => {
                let plan = self.crash_plan.as_mut().expect("checked");
                plan.armed.insert(node, trigger);
                self.trace(format!("node {node} will crash after its next {trigger:?}"));
            }
            None if self.node_failure_pending()
                || self
                    .crash_plan
                    .as_ref()
                    .is_some_and(|p| p.isolated.is_some()) =>
            {
                // One failure at a time (see `armed_trigger`), and none
                // while a node is cut off (a node that restarts meanwhile
                // would join as a newcomer whose vote the isolated node's
                // removal may need; see `isolate`).
                let at = self.now_ms + FAILURE_SPACING_MS;
                self.schedule(at, SimEvent::Crash { node, trigger });
            }
            None => {
                let plan = self.crash_plan.as_mut().expect("checked");
                plan.armed.remove(&node);
                self.outcome.transactions.crashes.count(None);
                self.crash_data_node(node, "crash injected");
            }
        }
    }

    /// A planned isolation is due: cut `node` off from every other data
    /// node and the management node, its API nodes still connected.
    pub(super) fn isolate(&mut self, node: NodeId) {
        let Some(plan) = self.crash_plan.as_ref() else {
            return;
        };
        if plan.crashed.contains(&node) || plan.isolated.is_some() {
            return;
        }
        let Some(incarnation) = self.composite_incarnation(node) else {
            return;
        };
        // Only once every node runs and has installed the same state, with
        // no failure pending and no node starting or joining: a newcomer votes for no removal at
        // first (`cluster::lease`), so with one about, the isolated node's
        // removal could wait until the cut heals and the two sides race to
        // remove each other, and the run's rule is that the node that never
        // fails survives. A node still asking to join would just wait.
        if !self.membership_settled() {
            let at = self.now_ms + FAILURE_SPACING_MS;
            self.schedule(at, SimEvent::Isolate { node });
            return;
        }
        let plan = self.crash_plan.as_mut().expect("checked");
        plan.isolated = Some((node, incarnation));
        // The others must remove this incarnation before anything else fails.
        plan.down.insert((node, incarnation));
        plan.crashes += 1;
        plan.last_crash_ms = Some(self.now_ms);
        self.outcome.transactions.crashes.isolations += 1;
        let others: Vec<NodeId> = self
            .nodes
            .keys()
            .copied()
            .filter(|other| *other != node)
            .chain([self.management_node])
            .collect();
        for other in others {
            self.network.cut(node, other);
        }
        let until = self.now_ms + between(&mut self.rng, ISOLATION_MS_MIN, ISOLATION_MS_MAX);
        self.trace(format!(
            "node {node} (incarnation {incarnation}) is cut off from every other node until {until}"
        ));
        self.schedule(until, SimEvent::EndIsolation { node });
    }

    /// The isolation of `node` ends: its links heal, and every connection
    /// that crossed the cut is reset (it lost what was sent meanwhile).
    pub(super) fn end_isolation(&mut self, node: NodeId) {
        let others: Vec<NodeId> = self
            .nodes
            .keys()
            .copied()
            .filter(|other| *other != node)
            .collect();
        for other in &others {
            self.network.heal(node, *other);
            self.close_links_between(node, *other);
        }
        self.network.heal(node, self.management_node);
        self.break_management_connection(node, self.management_node, true);
        if let Some(plan) = self.crash_plan.as_mut() {
            plan.isolated = None;
        }
        self.trace(format!(
            "node {node}'s isolation ends; its connections reset"
        ));
    }

    /// Whether an incarnation the others remove (or removed) still runs:
    /// a node isolated, or back from its isolation and yet to learn it
    /// was removed. Its transactions wait for peers it cannot reach.
    pub(super) fn removed_incarnation_runs(&self) -> bool {
        let Some(plan) = self.crash_plan.as_ref() else {
            return false;
        };
        self.nodes.iter().any(|(node, sim)| {
            sim.composite.is_some() && plan.down.contains(&(*node, sim.incarnation))
        })
    }

    /// Whether a live node still counts a crashed incarnation as a member,
    /// or may still admit one that crashed while it asked to join: until
    /// the survivors agree it is gone (or a later incarnation of the node
    /// is in), its transactions wait, and no other node crashes.
    pub(super) fn node_failure_pending(&self) -> bool {
        let Some(plan) = self.crash_plan.as_ref() else {
            return false;
        };
        self.nodes
            .iter()
            // An isolated node counts itself a member until it learns.
            .filter(|(node, sim)| !plan.down.contains(&(**node, sim.incarnation)))
            .filter_map(|(_, sim)| sim.composite.as_ref())
            .any(|composite| {
                composite.membership().state().is_some_and(|state| {
                    plan.down.iter().any(|&(node, incarnation)| {
                        let member = protocol::Member { node, incarnation };
                        let replaced = state
                            .members
                            .iter()
                            .any(|m| m.node == node && m.incarnation > incarnation);
                        state.contains(member) || !(state.was_removed(member) || replaced)
                    })
                })
            })
    }

    /// Whether every node runs and has installed the same state, which
    /// lists no crashed incarnation and no starting member (every restarted
    /// node has copied its fragments).
    pub(super) fn membership_settled(&self) -> bool {
        if self.nodes.values().any(|sim| sim.composite.is_none()) {
            return false;
        }
        let mut states = self
            .nodes
            .values()
            .filter_map(|sim| sim.composite.as_ref())
            .map(|composite| composite.membership().state());
        let Some(Some(first)) = states.next() else {
            return false;
        };
        let management_agrees = self.management.composite.as_ref().is_none_or(|management| {
            management
                .block()
                .status()
                .iter()
                .filter(|status| status.role == protocol::NodeRole::Data)
                .all(|status| status.state == protocol::NodeState::Started)
        });
        first.starting.is_empty()
            && states.all(|state| state.map(|s| s.position()) == Some(first.position()))
            && !self.node_failure_pending()
            && management_agrees
    }

    /// Whether the fragment holding `key` of table `table` still has a
    /// live backup (a commit there waits for the complete phase when the
    /// table reads from backups).
    pub(super) fn has_live_backup(&self, table: u32, key: &[u8]) -> bool {
        let Some(plan) = self
            .crash_plan
            .as_ref()
            .filter(|p| !p.crashed.is_empty() || p.isolated.is_some())
        else {
            return true;
        };
        let isolated = plan.isolated.map(|(node, _)| node);
        let Some(composite) = self.nodes.values().find_map(|sim| sim.composite.as_ref()) else {
            return true;
        };
        let Some(route) = composite.routing().table(table) else {
            return true;
        };
        let mut scratch = Vec::new();
        let Ok(partition) = route.partition_of_key(key, &mut scratch) else {
            return true;
        };
        route.fragments_of(partition).all(|fragment| {
            let replicas = &route.fragments[fragment as usize].replicas;
            replicas
                .iter()
                .filter(|node| !plan.crashed.contains(node) && Some(**node) != isolated)
                .count()
                > 1
        })
    }

    /// Whether data node `node`, armed, crashes after handling `message`.
    ///
    /// Not while the survivors have yet to agree on an earlier crash: the
    /// membership protocol removes failed nodes one agreed state at a
    /// time, and the electorate of each step is the previous state's, so
    /// a node group of three that loses two nodes at once cannot decide
    /// (one node and the arbitrator are not a quorum) and the survivor
    /// stops. NDB stops there too: a side with fewer than half of the
    /// nodes loses without asking the arbitrator.
    pub(super) fn armed_trigger(&self, node: NodeId, message: &Message) -> Option<Trigger> {
        let plan = self.crash_plan.as_ref()?;
        let trigger = *plan.armed.get(&node)?;
        (trigger.matches(message) && !self.node_failure_pending() && plan.isolated.is_none())
            .then_some(trigger)
    }

    /// Node `node` handled the message its trigger waited for: a random
    /// prefix of what it sent leaves, then it crashes.
    pub(super) fn crash_after(&mut self, node: NodeId, trigger: Trigger, mut output: node::Output) {
        let keep = between(&mut self.rng, 0, output.sends.len() as u64) as usize;
        self.trace(format!(
            "node {node} handled a {trigger:?} and crashes; {keep} of its {} sends leave",
            output.sends.len()
        ));
        output.sends.truncate(keep);
        output.to_management.clear();
        output.dial.clear();
        output.connect_management = false;
        self.perform(node, output);
        if let Some(plan) = self.crash_plan.as_mut() {
            plan.armed.remove(&node);
        }
        self.outcome.transactions.crashes.count(Some(trigger));
        self.crash_data_node(node, &format!("crash after a {trigger:?}"));
    }
}
