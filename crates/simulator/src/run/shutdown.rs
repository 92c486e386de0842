//! A graceful system restart at the end of a transaction run: once the
//! workload has drained, the simulated operator asks the management node
//! to stop every data node (`ALL STOP`, which drains them first: no new
//! transactions, the last commits made durable), then starts every node
//! again from its disk. The workload's final checks then run on the
//! restored cluster, so every commit the workload knows of must have
//! come back, exactly, on every replica: a graceful stop keeps everything.

use protocol::{Message, NodeId};

use super::{SimEvent, Simulation, between, chance};
use node::ManagementOutput;

/// The operator's connection to the management node (no node has this
/// id).
pub(super) const OPERATOR_LINK: u64 = 250;
/// The drain and the stop take at most this (the management node's own
/// bound, `DRAIN_TIMEOUT_MS`, and the stops after it).
const STOP_WAIT_MS: u64 = 60_000;
/// Every node is a started member again within this.
const START_WAIT_MS: u64 = 120_000;
/// A whole-cluster crash due before the load is durable waits this long
/// and tries again.
const LOAD_DURABLE_WAIT_MS: u64 = 100;
/// A second whole-cluster crash comes up to this long into the restart.
const CRASH_DELAY_MS_MAX: u64 = 3_000;
/// The share of whole-cluster crashes followed by another while the nodes
/// start.
const CRASH_DURING_RESTART_CHANCE: f64 = 0.3;

/// What the operator's system restart went through.
#[derive(Debug, Clone, Default)]
pub(super) struct SystemStop {
    /// The operator asked for the stop: data nodes may go down now.
    pub requested: bool,
    /// The run's whole-cluster crash, once it came.
    pub crash: Option<SystemCrash>,
    /// The management node's answer to the stop.
    pub reply: Option<Result<Vec<NodeId>, String>>,
    /// The management node logged that every commit was durable before
    /// it stopped the nodes.
    pub durable_before_stop: bool,
}

/// A whole-cluster crash and its restart.
#[derive(Debug, Clone, Default)]
pub(super) struct SystemCrash {
    /// Every epoch below this was durable on every node before the crash.
    pub durable_below: u64,
    /// Another crash comes while the nodes start.
    pub again_pending: bool,
    /// The epoch the first restart restored below, when it had restored
    /// before the second crash: the commits of later epochs were lost
    /// then, and a later restart must not bring them back.
    pub first_restored_below: Option<u64>,
    /// The restored data was checked against the model.
    pub checked: bool,
}

impl Simulation {
    /// Whether this run ends with a graceful system restart: runs with
    /// transactions and without planned crashes, one seed in four (each
    /// adds a restart to the run; the test command runs many).
    pub(super) fn system_restart_due(&mut self) -> bool {
        self.crash_plan.is_none()
            && !self.system_stop.requested
            && self.options.seed.is_multiple_of(4)
    }

    /// Stops every data node through the management node, waits until
    /// each is down, starts them all again, and waits until the cluster is
    /// formed and settled. Fails the run when a step does not happen.
    pub(super) fn graceful_system_restart(&mut self) {
        self.system_stop.requested = true;
        self.trace("operator: ALL STOP, then every data node starts again".into());
        let now = self.now_ms;
        let Some(management) = self.management.composite.as_mut() else {
            self.fail("the management node is down at the end of the run".into());
            return;
        };
        let mut output = ManagementOutput::default();
        management.on_connected(OPERATOR_LINK, "127.0.0.1");
        management.on_message(
            now,
            OPERATOR_LINK,
            Message::StopRequest {
                request: 1,
                node: None,
                include_management: false,
                restart: None,
            },
            &mut output,
        );
        self.apply_management_output(output);
        let stopped = self.run_events_until(now + STOP_WAIT_MS, |sim| {
            sim.system_stop.reply.is_some()
                && sim.nodes.values().all(|node| node.composite.is_none())
        });
        if !stopped {
            self.fail(format!(
                "ALL STOP did not stop every data node within {STOP_WAIT_MS} ms (answer: {:?})",
                self.system_stop.reply
            ));
            return;
        }
        match &self.system_stop.reply {
            Some(Ok(_)) => {}
            other => {
                let message = format!("ALL STOP was answered {other:?}");
                self.fail(message);
                return;
            }
        }
        if !self.system_stop.durable_before_stop {
            self.fail(
                "the management node stopped the data nodes without every commit durable".into(),
            );
            return;
        }
        let nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        for node in nodes {
            let at = self.now_ms + between(&mut self.rng, 0, 500);
            self.schedule(at, SimEvent::Restart { node });
        }
        let started = self.run_events_until(self.now_ms + START_WAIT_MS, |sim| {
            sim.membership_settled() && sim.tcp.in_flight == 0
        });
        if !started {
            self.fail(format!(
                "the cluster was not formed again within {START_WAIT_MS} ms of a graceful stop"
            ));
            return;
        }
        self.outcome.system_restarts += 1;
        self.trace("operator: every data node started again".into());
    }

    /// Whether this run ends with a whole-cluster crash: runs with
    /// transactions and without planned crashes, one seed in four (those
    /// the graceful restart does not take).
    pub(super) fn system_crash_planned(&self) -> bool {
        self.options.transactions && self.crash_plan.is_none() && self.options.seed % 4 == 2
    }

    /// Plans the whole-cluster crash of a run that has one, at a random
    /// moment of the workload's `running_ms`.
    pub(super) fn plan_system_crash(&mut self, running_ms: u64) {
        if !self.system_crash_planned() {
            return;
        }
        let at = self.now_ms + between(&mut self.rng, running_ms / 4, running_ms);
        self.schedule(at, SimEvent::SystemCrash);
    }

    /// Every data node loses power at once, in the middle of the workload
    /// and of whatever global or local checkpoint runs (unsynced writes
    /// are lost, the last one may be torn), and starts again from its
    /// disk; in some runs they lose it again while they start. The
    /// workload ends there: the sessions hear their coordinators die (a
    /// commit in flight has an unknown outcome). Once the cluster is
    /// formed again, `finish_system_crash` checks what the restart
    /// restored.
    pub(super) fn system_crash(&mut self) {
        if self.failure.is_some() {
            return;
        }
        let again = self.system_stop.crash.is_some();
        if !again {
            // Every epoch below this is on every node's disk: the restart
            // must bring it back.
            let durable_below = self
                .nodes
                .values()
                .filter_map(|node| node.composite.as_ref())
                .map(|composite| composite.durable_below())
                .max()
                .unwrap_or(0);
            if durable_below <= self.load_epoch() {
                // The model takes back the workload's commits, not the
                // load's: the crash waits until the load is durable.
                let at = self.now_ms + LOAD_DURABLE_WAIT_MS;
                self.schedule(at, SimEvent::SystemCrash);
                return;
            }
            self.system_stop.requested = true;
            self.system_stop.crash = Some(SystemCrash {
                durable_below,
                again_pending: false,
                first_restored_below: None,
                checked: false,
            });
            self.end_workload_at_crash();
            self.outcome.system_crashes += 1;
            self.trace(format!(
                "operator: every data node loses power (epochs below {durable_below:#x} durable)"
            ));
            if chance(&mut self.rng, CRASH_DURING_RESTART_CHANCE) {
                let at = self.now_ms + between(&mut self.rng, 0, CRASH_DELAY_MS_MAX);
                self.schedule(at, SimEvent::SystemCrash);
                self.system_stop.crash.as_mut().expect("set").again_pending = true;
            }
        } else {
            let first = self
                .nodes
                .values()
                .filter_map(|node| node.composite.as_ref()?.restored_below())
                .max();
            self.trace(format!(
                "operator: every data node loses power again, while starting (restored below \
                 {first:x?})"
            ));
            let crash = self.system_stop.crash.as_mut().expect("set");
            crash.again_pending = false;
            crash.first_restored_below = first;
            self.outcome.crash_restarts_crashed += 1;
        }
        self.crash_every_data_node();
    }

    /// Whether a whole-cluster crash's restart is still under way: the
    /// workload's final checks wait for it.
    pub(super) fn system_crash_unfinished(&self) -> bool {
        // A planned crash not come yet (it waits for the load to be
        // durable) comes before the checks.
        if self.system_crash_planned() && self.system_stop.crash.is_none() {
            return true;
        }
        self.system_stop.crash.as_ref().is_some_and(|crash| {
            crash.again_pending
                || !self.nodes.values().all(|node| node.composite.is_some())
                || !self.membership_settled()
        })
    }

    /// After a whole-cluster crash, once every node is a started member
    /// again: the restart must have restored at least every epoch that was
    /// durable before the crash, and the workload's model takes back every
    /// commit of a later epoch than the restored ones, so the final checks
    /// ask for exactly the committed prefix.
    pub(super) fn finish_system_crash(&mut self) {
        let Some(crash) = self.system_stop.crash.as_mut() else {
            return;
        };
        if crash.checked {
            return;
        }
        crash.checked = true;
        let (durable_below, first) = (crash.durable_below, crash.first_restored_below);
        let restored: std::collections::BTreeMap<NodeId, Option<u64>> = self
            .nodes
            .iter()
            .filter_map(|(id, node)| Some((*id, node.composite.as_ref()?.restored_below())))
            .collect();
        let points: std::collections::BTreeSet<u64> =
            restored.values().filter_map(|point| *point).collect();
        let [restored_below] = points.iter().copied().collect::<Vec<_>>()[..] else {
            self.fail(format!(
                "after a whole-cluster crash the data nodes restored below epochs {restored:?} \
                 (node: epoch), not one epoch"
            ));
            return;
        };
        // The first restart that restored decided which commits of the
        // crashed cluster survive; a later one must not bring back more.
        let restored_below = match first {
            Some(first) if first > restored_below => {
                self.fail(format!(
                    "the second restart after a whole-cluster crash restored below epoch \
                     {restored_below:#x}, under the first one's {first:#x}"
                ));
                return;
            }
            Some(first) => first,
            None => restored_below,
        };
        if restored_below < durable_below {
            self.fail(format!(
                "after a whole-cluster crash the cluster restored the epochs below \
                 {restored_below:#x}, while every epoch below {durable_below:#x} was durable"
            ));
            return;
        }
        match self.forget_commits_from(restored_below) {
            Ok((kept, lost)) => {
                self.outcome.commits_kept_by_crashes += kept;
                self.outcome.commits_lost_to_crashes += lost;
                self.trace(format!(
                    "operator: the cluster restored the epochs below {restored_below:#x}: {kept} \
                     commits kept, {lost} taken back"
                ));
            }
            Err(problem) => self.fail(problem),
        }
    }

    /// Takes every running data node down at once, its unsynced disk
    /// writes lost, and starts each again after a while.
    fn crash_every_data_node(&mut self) {
        let running: Vec<NodeId> = self
            .nodes
            .iter()
            .filter(|(_, node)| node.composite.is_some())
            .map(|(id, _)| *id)
            .collect();
        for node in &running {
            self.take_down(*node, "the whole cluster lost power", false);
            // The sessions hear at once that their coordinators died: the
            // closes of their connections may arrive after the node is
            // back, when they would be taken for an older incarnation's.
            self.coordinator_restarted(*node);
        }
        for node in running {
            let at = self.now_ms + between(&mut self.rng, 0, 500);
            self.schedule(at, SimEvent::Restart { node });
        }
    }

    /// Handles events until `done` holds after one (true), the queue is
    /// empty, time passes `until_ms` or the run fails (false).
    fn run_events_until(&mut self, until_ms: u64, done: impl Fn(&Simulation) -> bool) -> bool {
        while let Some(next) = self.queue.pop() {
            if next.at_ms > until_ms || self.failure.is_some() {
                self.queue.push(next);
                return false;
            }
            self.now_ms = next.at_ms;
            self.handle(next.event);
            if done(self) {
                return true;
            }
        }
        false
    }

    /// What the management node sends the operator: its answer to the stop.
    pub(super) fn operator_hears(&mut self, message: Message) {
        match message {
            Message::StopReply { result, .. } => {
                self.system_stop.reply = Some(result.map_err(|error| error.message));
            }
            other => self.trace(format!("operator: ignored {}", other.name())),
        }
    }
}
