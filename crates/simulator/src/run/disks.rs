//! The simulated disks: each data node's redo log writes to a
//! `disk::model::DiskModel`, which outlives the node's crashes. This module
//! plays datad's disk thread: each request the composite hands out is done
//! after a delay (syncs now and then slowly), sometimes fails (the log
//! retries it), and its outcome goes back to the composite that asked.
//! A crash loses, keeps or tears each write not yet synced; the checker
//! then reads the log back from the disk and asks whether every record the
//! node had made durable is still there.

use disk::model::DiskModel;
use disk::{DiskCompletion, DiskRequest, RedoConfig, RedoLog};
use protocol::NodeId;
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use transaction::QueryHandler;

use super::{SimEvent, Simulation, between, chance};

/// Small files, so the log goes round them in a run.
pub(super) const SIM_REDO: RedoConfig = RedoConfig {
    files: 3,
    file_bytes: 512 << 10,
    buffer_bytes: 512 << 10,
};
/// How often a write or sync fails.
const DISK_FAILURE_PROBABILITY: f64 = 0.01;
/// How often a sync takes long (a busy disk).
const SLOW_SYNC_PROBABILITY: f64 = 0.05;

/// A data node's disk and what its runs left there.
#[derive(Debug, Default)]
pub(super) struct SimDisk {
    model: DiskModel<u32>,
    /// The redo log's generation (the system file, which the model does
    /// not hold: it is written and synced before the first append).
    generation: u32,
    /// Requests done, failed, and crashes checked.
    pub requests: u64,
    pub failures: u64,
    pub crashes_checked: u64,
}

impl Simulation {
    /// A starting node's redo log, on its disk: a new generation (nothing
    /// is restored from the log yet).
    pub(super) fn attach_redo(&mut self, node: NodeId, query_handler: &mut QueryHandler) {
        let disk = &mut self.nodes.get_mut(&node).expect("configured").disk;
        disk.generation += 1;
        query_handler.set_redo(RedoLog::new(SIM_REDO, 0, disk.generation));
    }

    /// Takes the requests the node's redo log wants done and schedules
    /// each one's outcome.
    pub(super) fn drive_disk(&mut self, node: NodeId) {
        let now = self.now_ms;
        let Some(sim) = self.nodes.get_mut(&node) else {
            return;
        };
        let incarnation = sim.incarnation;
        let Some(composite) = sim.composite.as_mut() else {
            return;
        };
        let mut requests = Vec::new();
        composite.disk_requests(now, &mut requests);
        for request in requests {
            let delay = match request {
                DiskRequest::Write { .. } => between(&mut self.disk_rng, 0, 3),
                DiskRequest::Sync { .. } if chance(&mut self.disk_rng, SLOW_SYNC_PROBABILITY) => {
                    between(&mut self.disk_rng, 100, 1_000)
                }
                DiskRequest::Sync { .. } => between(&mut self.disk_rng, 1, 20),
            };
            self.schedule(
                now + delay,
                SimEvent::DiskDone {
                    node,
                    incarnation,
                    request,
                },
            );
        }
    }

    /// A request's time is up: it is done on the disk (or fails), and the
    /// node that asked hears how it went. A node that crashed since never
    /// hears, and its request never happened.
    pub(super) fn disk_done(&mut self, node: NodeId, incarnation: u64, request: DiskRequest) {
        let now = self.now_ms;
        let Some(sim) = self.nodes.get_mut(&node) else {
            return;
        };
        if sim.incarnation != incarnation || sim.composite.is_none() {
            return;
        }
        sim.disk.requests += 1;
        let completion = if chance(&mut self.disk_rng, DISK_FAILURE_PROBABILITY) {
            sim.disk.failures += 1;
            DiskCompletion::Failed {
                token: request.token(),
                error: "simulated I/O error".to_string(),
            }
        } else {
            sim.disk.model.perform(&request);
            DiskCompletion::Done {
                token: request.token(),
            }
        };
        let mut output = node::Output::default();
        sim.composite
            .as_mut()
            .expect("checked above")
            .on_disk_completion(now, completion, &mut output);
        self.perform(node, output);
    }

    /// The node's process dies with `log` as it was: the disk keeps,
    /// loses or tears each write not yet synced, and the log read back
    /// from it must hold every record the node had made durable.
    pub(super) fn crash_disk(&mut self, node: NodeId, log: Option<&RedoLog>) {
        let Some(log) = log else {
            return;
        };
        let (tail, durable) = (log.tail(), log.durable());
        let rng: &mut ChaCha8Rng = &mut self.disk_rng;
        let disk = &mut self.nodes.get_mut(&node).expect("configured").disk;
        disk.model.crash(|n| rng.next_u64() % n);
        disk.crashes_checked += 1;
        let mut model = disk.model.clone();
        match disk::scan(&SIM_REDO, tail, &mut model, |_| {}) {
            Ok(end) if end >= durable => {}
            Ok(end) => self.fail(format!(
                "node {node}'s redo log ends at {end} after a crash, before {durable}, which it \
                 had made durable"
            )),
            Err(error) => self.fail(format!(
                "node {node}'s redo log cannot be read after a crash: {error}"
            )),
        }
    }
}
