//! A graceful system restart at the end of a transaction run: once the
//! workload has drained, the simulated operator asks the management node
//! to stop every data node (`ALL STOP`, which drains them first: no new
//! transactions, the last commits made durable), then starts every node
//! again from its disk. The workload's final checks then run on the
//! restored cluster, so every commit the workload knows of must have
//! come back, exactly, on every replica: a graceful stop keeps everything.

use protocol::{Message, NodeId};

use super::{SimEvent, Simulation, between};
use node::ManagementOutput;

/// The operator's connection to the management node (no node has this
/// id).
pub(super) const OPERATOR_LINK: u64 = 250;
/// The drain and the stop take at most this (the management node's own
/// bound, `DRAIN_TIMEOUT_MS`, and the stops after it).
const STOP_WAIT_MS: u64 = 60_000;
/// Every node is a started member again within this.
const START_WAIT_MS: u64 = 120_000;

/// What the operator's system restart went through.
#[derive(Debug, Clone, Default)]
pub(super) struct SystemStop {
    /// The operator asked for the stop: data nodes may go down now.
    pub requested: bool,
    /// The management node's answer to the stop.
    pub reply: Option<Result<Vec<NodeId>, String>>,
    /// The management node logged that every commit was durable before
    /// it stopped the nodes.
    pub durable_before_stop: bool,
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
