//! The epoch protocol among a few nodes over a network with random delays
//! (in order per link), with commits decided and completed at random and
//! presidents that fail: commits in decision order never go down an epoch,
//! an epoch is declared durable only after every commit below it completed
//! and every live node saved, and checkpoints keep coming after failures.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use super::*;

/// SplitMix64: the test's seeded random numbers.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Deliver {
        from: NodeId,
        to: NodeId,
        step: EpochStep,
        epoch: u64,
    },
    Tick(NodeId),
    Decide(NodeId),
    Saved {
        node: NodeId,
        epoch: u64,
    },
    Crash(NodeId),
    Detect {
        node: NodeId,
        failed: NodeId,
    },
}

struct Commit {
    node: NodeId,
    epoch: u64,
    completes_ms: u64,
}

struct World {
    random: Random,
    now_ms: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    sequence: u64,
    nodes: BTreeMap<NodeId, Epochs>,
    alive: BTreeSet<NodeId>,
    /// The nodes each node has not yet seen fail.
    view: BTreeMap<NodeId, BTreeSet<NodeId>>,
    /// The last delivery time on each link (links keep order).
    link_ms: BTreeMap<(NodeId, NodeId), u64>,
    commits: Vec<Commit>,
    /// The highest `Durable` any node heard, and how many times it rose.
    durable_seen: u64,
    durable_rounds: u32,
    /// A member's save takes from 1 ms up to this.
    save_ms_max: u64,
}

impl World {
    fn new(seed: u64, count: u8) -> World {
        let config = EpochConfig {
            epoch_interval_ms: 20,
            checkpoint_interval_ms: 150,
        };
        World::with_config(seed, count, config)
    }

    fn with_config(seed: u64, count: u8, config: EpochConfig) -> World {
        let nodes: BTreeMap<_, _> = (1..=count).map(|n| (n, Epochs::new(config))).collect();
        let alive: BTreeSet<NodeId> = nodes.keys().copied().collect();
        let mut world = World {
            random: Random(seed),
            now_ms: 0,
            queue: BinaryHeap::new(),
            sequence: 0,
            view: alive.iter().map(|n| (*n, alive.clone())).collect(),
            nodes,
            alive,
            link_ms: BTreeMap::new(),
            commits: Vec::new(),
            durable_seen: 0,
            durable_rounds: 0,
            save_ms_max: 30,
        };
        for node in 1..=count {
            world.schedule(0, Event::Tick(node));
            world.schedule(1, Event::Decide(node));
        }
        world
    }

    fn schedule(&mut self, at_ms: u64, event: Event) {
        self.sequence += 1;
        self.queue.push(Reverse((at_ms, self.sequence, event)));
    }

    fn president_seen_by(&self, node: NodeId) -> Option<NodeId> {
        self.view[&node].first().copied()
    }

    fn send(&mut self, from: NodeId, out: Vec<(NodeId, Message)>) {
        for (to, message) in out {
            let Message::Epoch { step, epoch } = message else {
                panic!("not an epoch step: {message:?}");
            };
            let delay = if from == to {
                0
            } else {
                1 + self.random.below(5)
            };
            let at = (self.now_ms + delay).max(*self.link_ms.get(&(from, to)).unwrap_or(&0));
            self.link_ms.insert((from, to), at);
            self.schedule(
                at,
                Event::Deliver {
                    from,
                    to,
                    step,
                    epoch,
                },
            );
        }
    }

    /// Answers what each live node owes: `Completed` once no commit of an
    /// earlier epoch is in flight.
    fn settle(&mut self, node: NodeId) {
        let Some(epochs) = self.nodes.get_mut(&node) else {
            return;
        };
        let mut out = Vec::new();
        if let Some(owed) = epochs.completion_owed() {
            let in_flight = self
                .commits
                .iter()
                .any(|c| c.node == node && c.epoch < owed && c.completes_ms > self.now_ms);
            if !in_flight {
                epochs.completed(owed, &mut out);
            }
        }
        self.send(node, out);
    }

    fn run(&mut self, until_ms: u64) {
        while let Some(Reverse((at, sequence, event))) = self.queue.pop() {
            if at > until_ms {
                // Not yet: it stays for the next run.
                self.queue.push(Reverse((at, sequence, event)));
                break;
            }
            self.now_ms = at;
            self.handle(event);
            let nodes: Vec<NodeId> = self.alive.iter().copied().collect();
            for node in nodes {
                self.settle(node);
            }
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Deliver {
                from,
                to,
                step,
                epoch,
            } => {
                // What a failed node sent before it failed still arrives
                // (it was on its way); nothing arrives at a failed node.
                if !self.alive.contains(&to) {
                    return;
                }
                let president = self.president_seen_by(to);
                let members = self.view[&to].clone();
                let mut out = Vec::new();
                let node = self.nodes.get_mut(&to).expect("a live node");
                node.on_message(
                    self.now_ms,
                    from,
                    step,
                    epoch,
                    president,
                    &members,
                    &mut out,
                );
                match step {
                    EpochStep::Save => {
                        if let Some(owed) = node.save_owed() {
                            // Every commit of an epoch below the save's,
                            // by a live node, completed before it was
                            // asked for.
                            for commit in &self.commits {
                                if commit.epoch < owed && self.alive.contains(&commit.node) {
                                    assert!(
                                        commit.completes_ms <= self.now_ms,
                                        "Save({owed}) before a commit in {} completed",
                                        commit.epoch
                                    );
                                }
                            }
                            let delay = 1 + self.random.below(self.save_ms_max);
                            self.schedule(
                                self.now_ms + delay,
                                Event::Saved {
                                    node: to,
                                    epoch: owed,
                                },
                            );
                        }
                    }
                    EpochStep::Durable => {
                        let durable = node.durable_below();
                        if durable > self.durable_seen {
                            self.durable_seen = durable;
                            self.durable_rounds += 1;
                        }
                    }
                    _ => {}
                }
                self.send(to, out);
            }
            Event::Tick(node) => {
                if !self.alive.contains(&node) {
                    return;
                }
                let presides = self.president_seen_by(node) == Some(node);
                let members = self.view[&node].clone();
                let mut out = Vec::new();
                let epochs = self.nodes.get_mut(&node).expect("a live node");
                epochs.tick(self.now_ms, presides, &members, &mut out);
                let next = epochs
                    .next_tick_ms()
                    .unwrap_or(self.now_ms + 50)
                    .min(self.now_ms + 50);
                self.send(node, out);
                self.schedule(next.max(self.now_ms + 1), Event::Tick(node));
            }
            Event::Decide(node) => {
                if !self.alive.contains(&node) {
                    return;
                }
                if let Some(epoch) = self.nodes[&node].commit_epoch() {
                    // Decisions in the order they happen never go down an
                    // epoch, across all nodes.
                    if let Some(last) = self.commits.last() {
                        assert!(
                            last.epoch <= epoch,
                            "node {node} decided in {epoch} after node {} in {}",
                            last.node,
                            last.epoch
                        );
                    }
                    let completes_ms = self.now_ms + self.random.below(15);
                    self.commits.push(Commit {
                        node,
                        epoch,
                        completes_ms,
                    });
                }
                let next = self.now_ms + 1 + self.random.below(4);
                self.schedule(next, Event::Decide(node));
            }
            Event::Saved { node, epoch } => {
                if let Some(epochs) = self.nodes.get_mut(&node)
                    && self.alive.contains(&node)
                {
                    let mut out = Vec::new();
                    epochs.saved(epoch, &mut out);
                    self.send(node, out);
                }
            }
            Event::Crash(node) => {
                self.alive.remove(&node);
                // Its commits not yet complete are another node's to
                // finish (a takeover): they no longer hold anyone up.
                self.commits
                    .retain(|c| c.node != node || c.completes_ms <= self.now_ms);
                let others: Vec<NodeId> = self.alive.iter().copied().collect();
                for other in others {
                    let delay = 5 + self.random.below(100);
                    self.schedule(
                        self.now_ms + delay,
                        Event::Detect {
                            node: other,
                            failed: node,
                        },
                    );
                }
            }
            Event::Detect { node, failed } => {
                if let Some(view) = self.view.get_mut(&node) {
                    view.remove(&failed);
                }
            }
        }
    }
}

#[test]
fn epochs_go_up_in_decision_order_and_checkpoints_follow_completion() {
    for seed in 0..200u64 {
        let mut world = World::new(seed, 2 + (seed % 3) as u8);
        world.run(1_000);
        assert!(
            world.durable_rounds >= 4,
            "seed {seed}: only {} checkpoints in 1 s",
            world.durable_rounds
        );
        let before = world.durable_rounds;
        // The president fails (in one run in two, a second node later).
        let president = *world.alive.first().expect("nodes");
        let at = world.now_ms + world.random.below(50);
        world.schedule(at, Event::Crash(president));
        if seed % 2 == 0 && world.alive.len() > 2 {
            let next = *world.alive.iter().nth(1).expect("a second node");
            let at = world.now_ms + 200 + world.random.below(300);
            world.schedule(at, Event::Crash(next));
        }
        world.run(3_000);
        assert!(
            world.durable_rounds >= before + 4,
            "seed {seed}: {} checkpoints after the president failed",
            world.durable_rounds - before
        );
        assert!(world.commits.len() > 200, "seed {seed}: few commits");
    }
}

#[test]
fn the_epoch_numbers_name_their_global_checkpoint() {
    assert_eq!(gci_of(epoch(7, 3)), 7);
    assert_eq!(gci_before(epoch(7, 0)), 6);
    assert_eq!(gci_before(epoch(7, 3)), 6);
    assert_eq!(gci_before(0), 0);
}

/// A disk slower than `TimeBetweenGlobalCheckpoints`: each save takes
/// longer than the time between checkpoints, and checkpoints must still
/// become durable (a new checkpoint waits for the last one's save rather
/// than replacing it, which would never let one finish).
#[test]
fn checkpoints_become_durable_when_saves_take_longer_than_their_interval() {
    let config = EpochConfig {
        epoch_interval_ms: 5,
        checkpoint_interval_ms: 15,
    };
    for seed in 0..100u64 {
        let mut world = World::with_config(seed, 2 + (seed % 3) as u8, config);
        world.save_ms_max = 80;
        world.run(2_000);
        assert!(
            world.durable_rounds >= 10,
            "seed {seed}: only {} checkpoints durable in 2 s with saves of up to 80 ms",
            world.durable_rounds
        );
        assert!(world.commits.len() > 200, "seed {seed}: few commits");
    }
}

/// A member stopped by a failed president's `Prepare` for a new global
/// checkpoint names it to the next president, whose round moves up to it,
/// so the member decides commits again at once.
#[test]
fn a_member_stopped_for_a_higher_epoch_brings_the_round_up_to_it() {
    let config = EpochConfig {
        epoch_interval_ms: 100,
        checkpoint_interval_ms: 2_000,
    };
    let members: BTreeSet<NodeId> = [2, 3].into();
    let mut president = Epochs::new(config);
    let mut member = Epochs::new(config);
    let mut out = Vec::new();
    // Both at epoch (5, 6) under president 1.
    for node in [&mut president, &mut member] {
        node.on_message(
            0,
            1,
            EpochStep::Commit,
            epoch(5, 6),
            Some(1),
            &members,
            &mut out,
        );
    }
    // Node 1 asked node 3 alone to stop for (6, 0), then failed.
    member.on_message(
        0,
        1,
        EpochStep::Prepare,
        epoch(6, 0),
        Some(1),
        &members,
        &mut out,
    );
    assert_eq!(member.commit_epoch(), None);
    out.clear();
    // Node 2 presides: its round names (5, 7).
    president.tick(10, true, &members, &mut out);
    assert!(out.contains(&(
        3,
        Message::Epoch {
            step: EpochStep::Prepare,
            epoch: epoch(5, 7)
        }
    )));
    out.clear();
    member.on_message(
        11,
        2,
        EpochStep::Prepare,
        epoch(5, 7),
        Some(2),
        &members,
        &mut out,
    );
    assert_eq!(
        out,
        [(
            2,
            Message::Epoch {
                step: EpochStep::Prepared,
                epoch: epoch(6, 0)
            }
        )]
    );
    out.clear();
    president.on_message(
        12,
        3,
        EpochStep::Prepared,
        epoch(6, 0),
        Some(2),
        &members,
        &mut out,
    );
    assert!(
        out.contains(&(
            3,
            Message::Epoch {
                step: EpochStep::Prepare,
                epoch: epoch(6, 0)
            }
        )),
        "the round starts again at (6, 0): {out:?}"
    );
    // The round completes at (6, 0): node 3 decides commits again.
    out.clear();
    for node in [2, 3] {
        president.on_message(
            13,
            node,
            EpochStep::Prepared,
            epoch(6, 0),
            Some(2),
            &members,
            &mut out,
        );
    }
    assert!(out.contains(&(
        3,
        Message::Epoch {
            step: EpochStep::Commit,
            epoch: epoch(6, 0)
        }
    )));
    member.on_message(
        14,
        2,
        EpochStep::Commit,
        epoch(6, 0),
        Some(2),
        &members,
        &mut out,
    );
    assert_eq!(member.commit_epoch(), Some(epoch(6, 0)));
    // A stale step from node 1, still on its way, changes nothing.
    member.on_message(
        15,
        1,
        EpochStep::Prepare,
        epoch(6, 1),
        Some(2),
        &members,
        &mut out,
    );
    assert_eq!(member.commit_epoch(), Some(epoch(6, 0)));
}

/// After a system restart the first president's epochs start above the
/// floor the restart set (above every epoch on the members' disks).
#[test]
fn a_raised_floor_starts_the_epochs_above_it() {
    let config = EpochConfig {
        epoch_interval_ms: 100,
        checkpoint_interval_ms: 2_000,
    };
    let members: BTreeSet<NodeId> = [2].into();
    let mut president = Epochs::new(config);
    president.raise_floor(epoch(41, 9));
    let mut out = Vec::new();
    president.tick(0, true, &members, &mut out);
    assert_eq!(
        out,
        [(
            2,
            Message::Epoch {
                step: EpochStep::Prepare,
                epoch: epoch(42, 0)
            }
        )]
    );
}

/// A whole-cluster stop hurries the epochs: every round then begins a
/// global checkpoint, so the epoch commits were decided in at that moment
/// is durable within a few rounds, not after `TimeBetweenGlobalCheckpoints`.
#[test]
fn hurried_epochs_make_the_current_epoch_durable_within_a_few_rounds() {
    let config = EpochConfig {
        epoch_interval_ms: 20,
        checkpoint_interval_ms: 60_000,
    };
    for seed in 0..50u64 {
        let mut world = World::with_config(seed, 2 + (seed % 3) as u8, config);
        world.run(1_000);
        let current = world
            .nodes
            .values()
            .map(Epochs::current)
            .max()
            .expect("nodes");
        // Unhurried, the next global checkpoint is a minute away.
        assert!(
            world.durable_seen <= current,
            "seed {seed}: {} durable before the hurry, current {current}",
            world.durable_seen
        );
        for epochs in world.nodes.values_mut() {
            epochs.hurry();
        }
        world.run(1_250);
        assert!(
            world.durable_seen > current,
            "seed {seed}: epoch {current} not durable 250 ms after the hurry (durable below {})",
            world.durable_seen
        );
    }
}
