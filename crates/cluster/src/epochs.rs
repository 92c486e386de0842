//! Epochs and global checkpoints: when the data nodes agree that a commit
//! belongs to an epoch, and when an epoch is durable on disk everywhere.
//!
//! Every commit a coordinator decides is stamped with its node's current
//! epoch, and each replica writes it to its redo log with that epoch. At a
//! system restart the cluster comes back with exactly the epochs made
//! durable, so an epoch must never hold a commit that depends on a commit
//! of a later one. The president (NDB's master DIH) keeps that true by
//! changing epochs in two steps (NDB's GCP_PREPARE and GCP_COMMIT):
//!
//! 1. `Prepare(e)`: each member stops deciding commits and answers
//!    `Prepared(e)`.
//! 2. Once every member has: `Commit(e)`: each member decides commits in
//!    `e` from then on. No member decides a commit of an earlier epoch
//!    after any member decided one in `e`, so commits in the order they
//!    were decided, cluster-wide, have epochs that never go down.
//! 3. `Completed(e)`: once a member's coordinator has no commit of an
//!    epoch below `e` still on its way to the replicas' redo logs. Once
//!    every member has said so, every epoch below `e` is complete.
//!
//! Every `TimeBetweenEpochs` ms a round like this starts. Every
//! `TimeBetweenGlobalCheckpoints` ms the next round begins a new global
//! checkpoint (the epoch's high 32 bits, NDB's GCI; the low 32 count the
//! epochs inside it), and once it is complete the president saves the one
//! before: `Save(e)` asks each member to make everything in its redo log
//! durable (every epoch below `e` is in it by then), `Saved(e)` answers,
//! and once every member has, `Durable(e)` tells them all that every epoch
//! below `e` is on disk on every data node: the cluster restarts to it.
//! One sync per node per global checkpoint, not one per commit.
//!
//! Members whose state is not yet known (a node that just started) decide
//! no commits until their first `Commit`. A president that fails leaves
//! members stopped; its successor starts a round at once with an epoch
//! above any it knows, and members prepared for a lower one follow it. A
//! member that fails is dropped from the rounds when the cluster excludes
//! it; until then the round waits for it, and commits wait (NDB's "GCP
//! stop"). Sans-IO: inputs carry the time, messages go out in a vector.

use std::collections::BTreeSet;

use protocol::{EpochStep, Message, NodeId};

pub use protocol::{epoch, gci_before, gci_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochConfig {
    /// TimeBetweenEpochs.
    pub epoch_interval_ms: u64,
    /// TimeBetweenGlobalCheckpoints.
    pub checkpoint_interval_ms: u64,
}

impl EpochConfig {
    /// From a data node's configuration; TimeBetweenEpochs=0 is one epoch
    /// per global checkpoint, as in NDB.
    pub fn from_config(own: &config::DataNodeConfig) -> EpochConfig {
        let checkpoint_interval_ms = own.time_between_global_checkpoints_ms.max(1);
        EpochConfig {
            epoch_interval_ms: match own.time_between_epochs_ms {
                0 => checkpoint_interval_ms,
                interval => interval,
            },
            checkpoint_interval_ms,
        }
    }
}

/// What the president is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Round {
    Idle,
    /// `Prepare(epoch)` sent; waiting for `Prepared` from these.
    Preparing {
        epoch: u64,
        waiting: BTreeSet<NodeId>,
        started_ms: u64,
    },
    /// `Commit(epoch)` sent; waiting for `Completed` from these.
    Completing {
        epoch: u64,
        waiting: BTreeSet<NodeId>,
        started_ms: u64,
        /// The members when the wait began. If one fails, every member
        /// is asked again: the president takes over the failed node's
        /// commits, and its own answer must wait for them.
        members: BTreeSet<NodeId>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Presiding {
    round: Round,
    next_round_ms: u64,
    next_checkpoint_ms: u64,
    /// The next round starts a new global checkpoint.
    checkpoint_due: bool,
    /// A save of every epoch below this waits for `Saved` from these.
    saving: Option<(u64, BTreeSet<NodeId>)>,
    /// Every epoch below this is complete.
    complete_below: u64,
    /// When the steps not yet answered are sent again (a member that did
    /// not yet see this node as president ignored them).
    resend_at_ms: u64,
}

/// How often a president sends a step again to members that have not
/// answered it.
pub const RESEND_MS: u64 = 500;

/// One data node's part in the epoch protocol, as member and, while it
/// presides, as president.
#[derive(Debug, Clone)]
pub struct Epochs {
    config: EpochConfig,
    /// The epoch commits are decided in; 0 until the first `Commit`.
    current: u64,
    /// `Prepare` came for this epoch: no commit is decided until `Commit`.
    prepared: Option<u64>,
    /// The president that sent the last `Commit` and `Save`.
    president: Option<NodeId>,
    /// `Completed(epoch)` is owed once no commit below it is in flight.
    completion_owed: Option<u64>,
    /// `Saved(epoch)` is owed once the redo log is durable through the
    /// head it had when `Save` came (`save_wanted`).
    save_owed: Option<u64>,
    /// Every epoch below this is durable on every data node.
    durable_below: u64,
    presiding: Option<Presiding>,
    /// Epochs this node's president picks are above this (`raise_floor`).
    floor: u64,
    /// Every round begins a global checkpoint (`hurry`).
    hurried: bool,
}

impl Epochs {
    pub fn new(config: EpochConfig) -> Epochs {
        assert!(config.epoch_interval_ms > 0 && config.checkpoint_interval_ms > 0);
        Epochs {
            config,
            current: 0,
            prepared: None,
            president: None,
            completion_owed: None,
            save_owed: None,
            durable_below: 0,
            presiding: None,
            floor: 0,
            hurried: false,
        }
    }

    /// A whole-cluster stop waits for the last commits to be durable:
    /// from now on, while this node presides, every round begins a global
    /// checkpoint, so one is saved within a few `TimeBetweenEpochs`
    /// instead of `TimeBetweenGlobalCheckpoints`.
    pub fn hurry(&mut self) {
        self.hurried = true;
    }

    /// Epochs this node picks as president from now on are above `floor`
    /// (a system restart's: above every epoch on the members' disks).
    pub fn raise_floor(&mut self, floor: u64) {
        self.floor = self.floor.max(floor);
    }

    /// The epoch a commit decided now belongs to; `None` while commits
    /// wait (between `Prepare` and `Commit`, or before the first).
    pub fn commit_epoch(&self) -> Option<u64> {
        (self.prepared.is_none() && self.current != 0).then_some(self.current)
    }

    pub fn current(&self) -> u64 {
        self.current
    }

    /// Every epoch below this is durable on every data node.
    pub fn durable_below(&self) -> u64 {
        self.durable_below
    }

    /// The epoch whose commits the coordinator must finish before this
    /// node answers `Completed`: it calls `completed` once none below it
    /// is in flight.
    pub fn completion_owed(&self) -> Option<u64> {
        self.completion_owed
    }

    /// The save this node owes: the runtime makes its redo log durable
    /// through its head as of now, then calls `saved`.
    pub fn save_owed(&self) -> Option<u64> {
        self.save_owed
    }

    pub fn is_presiding(&self) -> bool {
        self.presiding.is_some()
    }

    /// Every epoch below the result is complete (the president's view).
    pub fn complete_below(&self) -> Option<u64> {
        self.presiding.as_ref().map(|p| p.complete_below)
    }

    /// The coordinator has no commit of an epoch below `epoch` in flight.
    pub fn completed(&mut self, epoch: u64, out: &mut Vec<(NodeId, Message)>) {
        if self.completion_owed == Some(epoch) {
            self.completion_owed = None;
            if let Some(president) = self.president {
                out.push((
                    president,
                    Message::Epoch {
                        step: EpochStep::Completed,
                        epoch,
                    },
                ));
            }
        }
    }

    /// The redo log is durable through where it was when `Save(epoch)`
    /// came.
    pub fn saved(&mut self, epoch: u64, out: &mut Vec<(NodeId, Message)>) {
        if self.save_owed == Some(epoch) {
            self.save_owed = None;
            if let Some(president) = self.president {
                out.push((
                    president,
                    Message::Epoch {
                        step: EpochStep::Saved,
                        epoch,
                    },
                ));
            }
        }
    }

    /// A step from data node `from`. `president`: the acting president as
    /// this node sees it; the president's steps from any other node are
    /// stale (a failed president's, still on their way) and ignored: its
    /// successor sends its own, and again until answered.
    #[allow(clippy::too_many_arguments)]
    pub fn on_message(
        &mut self,
        now_ms: u64,
        from: NodeId,
        step: EpochStep,
        epoch: u64,
        president: Option<NodeId>,
        members: &BTreeSet<NodeId>,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let from_president = president == Some(from);
        match step {
            EpochStep::Prepare | EpochStep::Commit | EpochStep::Save | EpochStep::Durable
                if !from_president => {}
            EpochStep::Prepare => {
                if epoch > self.current {
                    self.prepared = Some(self.prepared.map_or(epoch, |p| p.max(epoch)));
                }
                // A member stopped for a higher epoch (by a president that
                // failed before its `Commit`) names it: the president
                // starts its round again with that one, as only a `Commit`
                // of at least it lets this member decide commits again.
                let highest = epoch.max(self.current).max(self.prepared.unwrap_or(0));
                out.push((
                    from,
                    Message::Epoch {
                        step: EpochStep::Prepared,
                        epoch: highest,
                    },
                ));
            }
            EpochStep::Commit => {
                if epoch < self.current {
                    // An earlier round's, sent again: answered already.
                    return;
                }
                self.president = Some(from);
                self.current = epoch;
                if self.prepared.is_some_and(|p| p <= self.current) {
                    self.prepared = None;
                }
                self.completion_owed = Some(self.current);
            }
            EpochStep::Save => {
                self.president = Some(from);
                self.save_owed = Some(epoch);
            }
            EpochStep::Durable => {
                self.durable_below = self.durable_below.max(epoch);
            }
            EpochStep::Prepared | EpochStep::Completed | EpochStep::Saved => {
                self.on_answer(now_ms, from, step, epoch, members, out);
            }
        }
    }

    fn on_answer(
        &mut self,
        now_ms: u64,
        from: NodeId,
        step: EpochStep,
        epoch: u64,
        members: &BTreeSet<NodeId>,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let Some(presiding) = self.presiding.as_mut() else {
            return;
        };
        match (step, &mut presiding.round) {
            (
                EpochStep::Prepared,
                Round::Preparing {
                    epoch: round_epoch,
                    waiting,
                    started_ms,
                },
            ) if epoch >= *round_epoch => {
                if epoch > *round_epoch {
                    *round_epoch = epoch;
                    *waiting = members.clone();
                    *started_ms = now_ms;
                    for member in members {
                        out.push((
                            *member,
                            Message::Epoch {
                                step: EpochStep::Prepare,
                                epoch,
                            },
                        ));
                    }
                    return;
                }
                waiting.remove(&from);
            }
            (
                EpochStep::Completed,
                Round::Completing {
                    epoch: round_epoch,
                    waiting,
                    ..
                },
            ) if *round_epoch == epoch => {
                waiting.remove(&from);
            }
            (EpochStep::Saved, _) => {
                if let Some((saving, waiting)) = presiding.saving.as_mut()
                    && *saving == epoch
                {
                    waiting.remove(&from);
                }
            }
            // An answer to an earlier round (of this president or one
            // before it).
            _ => return,
        }
        self.advance(now_ms, members, out);
    }

    /// Drives the president's rounds: call at every tick and whenever the
    /// members change. `presides`: this node is the acting president.
    /// `members`: the data nodes of the installed cluster state that are
    /// not known to have failed.
    pub fn tick(
        &mut self,
        now_ms: u64,
        presides: bool,
        members: &BTreeSet<NodeId>,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        if !presides {
            self.presiding = None;
            return;
        }
        if self.presiding.is_none() {
            // A new president: a round at once (members may be stopped
            // by its predecessor's `Prepare`).
            self.presiding = Some(Presiding {
                round: Round::Idle,
                next_round_ms: now_ms,
                next_checkpoint_ms: now_ms + self.config.checkpoint_interval_ms,
                checkpoint_due: self.current == 0,
                saving: None,
                complete_below: 0,
                resend_at_ms: now_ms + RESEND_MS,
            });
        }
        self.advance(now_ms, members, out);
    }

    /// The next time `tick` has something to do, while presiding.
    pub fn next_tick_ms(&self) -> Option<u64> {
        let presiding = self.presiding.as_ref()?;
        let next = presiding.next_checkpoint_ms.min(presiding.resend_at_ms);
        match presiding.round {
            Round::Idle => Some(next.min(presiding.next_round_ms)),
            _ => Some(next),
        }
    }

    fn advance(
        &mut self,
        now_ms: u64,
        members: &BTreeSet<NodeId>,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let highest_known = self.current.max(self.prepared.unwrap_or(0)).max(self.floor);
        let config = self.config;
        let hurried = self.hurried;
        let Some(presiding) = self.presiding.as_mut() else {
            return;
        };
        // Hurried, a global checkpoint begins as soon as the last one is
        // saved: sooner, a new save would replace one still on its way to
        // disk, and a disk slower than a round would never finish one.
        if now_ms >= presiding.next_checkpoint_ms || (hurried && presiding.saving.is_none()) {
            presiding.checkpoint_due = true;
            presiding.next_checkpoint_ms = now_ms + config.checkpoint_interval_ms;
        }
        // Failed members answer nothing: rounds go on without them.
        let gone = |waiting: &mut BTreeSet<NodeId>| waiting.retain(|node| members.contains(node));
        if now_ms >= presiding.resend_at_ms {
            presiding.resend_at_ms = now_ms + RESEND_MS;
            let mut again = |step, epoch, waiting: &BTreeSet<NodeId>| {
                for member in waiting {
                    out.push((*member, Message::Epoch { step, epoch }));
                }
            };
            match &presiding.round {
                Round::Idle => {}
                Round::Preparing { epoch, waiting, .. } => {
                    again(EpochStep::Prepare, *epoch, waiting)
                }
                Round::Completing { epoch, waiting, .. } => {
                    again(EpochStep::Commit, *epoch, waiting)
                }
            }
            if let Some((epoch, waiting)) = &presiding.saving {
                again(EpochStep::Save, *epoch, waiting);
            }
        }
        if let Some((_, waiting)) = presiding.saving.as_mut() {
            gone(waiting);
        }
        if let Some((epoch, waiting)) = &presiding.saving
            && waiting.is_empty()
        {
            let epoch = *epoch;
            presiding.saving = None;
            for member in members {
                out.push((
                    *member,
                    Message::Epoch {
                        step: EpochStep::Durable,
                        epoch,
                    },
                ));
            }
        }
        loop {
            match &mut presiding.round {
                Round::Idle => {
                    if now_ms < presiding.next_round_ms || members.is_empty() {
                        return;
                    }
                    // A new global checkpoint waits while the last one is
                    // being saved (NDB's GCP save lag): its save would
                    // replace that one, so with a disk slower than
                    // `TimeBetweenGlobalCheckpoints` none would finish.
                    // Epochs go on inside the current one meanwhile.
                    let epoch = if presiding.checkpoint_due && presiding.saving.is_none() {
                        presiding.checkpoint_due = false;
                        self::epoch(gci_of(highest_known) + 1, 0)
                    } else {
                        highest_known + 1
                    };
                    for member in members {
                        out.push((
                            *member,
                            Message::Epoch {
                                step: EpochStep::Prepare,
                                epoch,
                            },
                        ));
                    }
                    presiding.round = Round::Preparing {
                        epoch,
                        waiting: members.clone(),
                        started_ms: now_ms,
                    };
                    return;
                }
                Round::Preparing {
                    epoch,
                    waiting,
                    started_ms,
                } => {
                    gone(waiting);
                    if !waiting.is_empty() {
                        return;
                    }
                    let (epoch, started_ms) = (*epoch, *started_ms);
                    for member in members {
                        out.push((
                            *member,
                            Message::Epoch {
                                step: EpochStep::Commit,
                                epoch,
                            },
                        ));
                    }
                    presiding.round = Round::Completing {
                        epoch,
                        waiting: members.clone(),
                        started_ms,
                        members: members.clone(),
                    };
                    return;
                }
                Round::Completing {
                    epoch,
                    waiting,
                    started_ms,
                    members: asked,
                } => {
                    if !asked.is_subset(members) {
                        *waiting = members.clone();
                        *asked = members.clone();
                        for member in members {
                            out.push((
                                *member,
                                Message::Epoch {
                                    step: EpochStep::Commit,
                                    epoch: *epoch,
                                },
                            ));
                        }
                        return;
                    }
                    gone(waiting);
                    if !waiting.is_empty() {
                        return;
                    }
                    let (epoch, started_ms) = (*epoch, *started_ms);
                    assert!(epoch >= presiding.complete_below);
                    presiding.complete_below = epoch;
                    presiding.round = Round::Idle;
                    presiding.next_round_ms = (started_ms + config.epoch_interval_ms).max(now_ms);
                    // A new global checkpoint began with this epoch: the
                    // one before is complete, and is saved.
                    if gci_of(epoch) > 0 && epoch == self::epoch(gci_of(epoch), 0) {
                        // Only a round raised to a failed president's
                        // epoch begins a global checkpoint while one is
                        // saved: the new save covers the old one's epochs.
                        presiding.saving = Some((epoch, members.clone()));
                        for member in members {
                            out.push((
                                *member,
                                Message::Epoch {
                                    step: EpochStep::Save,
                                    epoch,
                                },
                            ));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
