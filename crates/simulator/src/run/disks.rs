//! The simulated disks: each data node's redo log writes to a
//! `disk::model::DiskModel`, which outlives the node's crashes. This module
//! plays datad's disk thread: each request the composite hands out is done
//! after a delay (syncs now and then slowly), sometimes fails (the log
//! retries it), and its outcome goes back to the composite that asked.
//! A crash loses, keeps or tears each write not yet synced; the checker
//! then reads the log back from the disk and asks whether every record the
//! node had made durable is still there.

use disk::model::DiskModel;
use disk::system_file::{CheckpointInfo, SystemFile};
use disk::{DiskCompletion, DiskRequest, RedoConfig, RedoLog, RedoRecord};
use node::DataNodeComposite;
use node::durability::{DiskStart, FileJob, FileTask, RestoreSource, Survey, read_checkpoint_step};
use protocol::{ClusterState, NodeId};
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
/// Redo bytes that start a local checkpoint: small, so runs hold several
/// (a run without crashes writes a few KiB of redo).
const SIM_CHECKPOINT_TRIGGER_BYTES: u64 = 2 << 10;
/// A checkpoint step's bytes: a row or two, so the simulated fragments are
/// written in several steps with commits between them.
const SIM_CHECKPOINT_SLICE_BYTES: u32 = 64;
/// Bytes a node restart's restore reads a step: small, so a restore takes
/// several steps with other inputs between them.
const SIM_RESTORE_STEP_BYTES: u64 = 512;
/// How often a write or sync fails.
const DISK_FAILURE_PROBABILITY: f64 = 0.01;
/// How often a sync takes long (a busy disk).
const SLOW_SYNC_PROBABILITY: f64 = 0.05;

/// A data node's disk and what its runs left there.
#[derive(Debug, Default)]
pub(super) struct SimDisk {
    /// The redo log's files.
    model: DiskModel<u32>,
    /// The local checkpoints' files, by id.
    checkpoints: DiskModel<u64>,
    /// The system file and the saved cluster state, as last synced (each
    /// write of them is whole and synced when it completes).
    system: SystemFile,
    state: Option<ClusterState>,
    /// The disk does one request at a time, in the order given (as datad's
    /// disk thread does): the next completes after this.
    busy_until_ms: u64,
    /// Requests done, failed, and crashes checked.
    pub requests: u64,
    pub failures: u64,
    pub crashes_checked: u64,
}

impl Simulation {
    /// A starting node reads its disk as datad does: the system file (its
    /// generation raised), the redo log from its tail, the saved cluster
    /// state. Returns what it found, for `give_disk`.
    pub(super) fn attach_redo(
        &mut self,
        node: NodeId,
        query_handler: &mut QueryHandler,
    ) -> DiskStart {
        let disk = &mut self.nodes.get_mut(&node).expect("configured").disk;
        disk.system.generation += 1;
        let system = disk.system.clone();
        let mut survey = Survey::default();
        let mut model = disk.model.clone();
        let redo_end = disk::scan(&SIM_REDO, system.redo_tail, &mut model, |record| {
            survey.visit(&system, &record)
        })
        .expect("the model reads");
        query_handler.set_redo(RedoLog::resume(
            SIM_REDO,
            system.redo_tail,
            redo_end,
            system.generation,
        ));
        DiskStart {
            system,
            redo_end,
            survey,
            state: disk.state.clone(),
        }
    }

    /// Gives a started composite its disk, read as it was at start.
    pub(super) fn give_disk(
        &self,
        node: NodeId,
        composite: &mut DataNodeComposite,
        start: DiskStart,
    ) {
        let disk = &self.nodes[&node].disk;
        composite.set_disk(
            start,
            Box::new(ModelSource {
                redo: disk.model.clone(),
                checkpoints: disk.checkpoints.clone(),
            }),
            (
                SIM_CHECKPOINT_TRIGGER_BYTES,
                SIM_CHECKPOINT_SLICE_BYTES,
                SIM_RESTORE_STEP_BYTES,
            ),
        );
    }

    /// When the node's disk completes a request given now.
    fn disk_slot(&mut self, node: NodeId, delay: u64) -> u64 {
        let now = self.now_ms;
        let disk = &mut self.nodes.get_mut(&node).expect("configured").disk;
        let at = disk.busy_until_ms.max(now) + delay;
        disk.busy_until_ms = at;
        at
    }

    /// Schedules the file tasks a node's composite handed out.
    pub(super) fn schedule_files(&mut self, node: NodeId, tasks: Vec<FileTask>) {
        let Some(sim) = self.nodes.get(&node) else {
            return;
        };
        let incarnation = sim.incarnation;
        for task in tasks {
            let delay = between(&mut self.disk_rng, 0, 5);
            let at = self.disk_slot(node, delay);
            self.schedule(
                at,
                SimEvent::FileDone {
                    node,
                    incarnation,
                    task,
                },
            );
        }
    }

    /// A file task's time is up: done on the disk (or failed), and the
    /// node that asked hears how it went.
    pub(super) fn file_done(&mut self, node: NodeId, incarnation: u64, task: FileTask) {
        let now = self.now_ms;
        let Some(sim) = self.nodes.get_mut(&node) else {
            return;
        };
        if sim.incarnation != incarnation || sim.composite.is_none() {
            return;
        }
        sim.disk.requests += 1;
        let result = if chance(&mut self.disk_rng, DISK_FAILURE_PROBABILITY) {
            sim.disk.failures += 1;
            Err("simulated I/O error".to_string())
        } else {
            let disk = &mut sim.disk;
            match task.job {
                FileJob::CheckpointWrite { id, offset, bytes } => {
                    disk.checkpoints.write(&id, offset, &bytes)
                }
                FileJob::CheckpointSync { id } => {
                    // A checkpoint without rows has an empty file.
                    disk.checkpoints.write(&id, 0, &[]);
                    disk.checkpoints.sync(&id)
                }
                FileJob::CheckpointDelete { id } => disk.checkpoints.remove(&id),
                FileJob::System(system) => disk.system = system,
                FileJob::State(bytes) => {
                    disk.state =
                        Some(node::durability::decode_state(&bytes).expect("a state just encoded"))
                }
            }
            Ok(())
        };
        let mut output = node::Output::default();
        sim.composite.as_mut().expect("checked above").on_file_done(
            now,
            task.token,
            result,
            &mut output,
        );
        self.perform(node, output);
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
            let at = self.disk_slot(node, delay);
            self.schedule(
                at,
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

    /// Every data node stops and starts again with its disk wiped, as an
    /// operator runs `--initial` on each.
    pub(super) fn start_all_initial(&mut self) {
        self.outcome.initial_starts += 1;
        let nodes: Vec<NodeId> = self.nodes.keys().copied().collect();
        for node in nodes {
            self.crash_data_node(node, "restarted with --initial by the operator");
            let disk = &mut self.nodes.get_mut(&node).expect("configured").disk;
            let (requests, failures, checked) =
                (disk.requests, disk.failures, disk.crashes_checked);
            *disk = SimDisk {
                requests,
                failures,
                crashes_checked: checked,
                ..SimDisk::default()
            };
        }
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
        disk.checkpoints.crash(|n| rng.next_u64() % n);
        disk.busy_until_ms = 0;
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

/// A node's disk as it was at its start, read for a restore.
struct ModelSource {
    redo: DiskModel<u32>,
    checkpoints: DiskModel<u64>,
}

/// One checkpoint file of the model, read as a log of one file.
struct CheckpointReader<'a> {
    model: &'a DiskModel<u64>,
    id: u64,
}

impl disk::ReadAt for CheckpointReader<'_> {
    fn read_at(&mut self, _file: u32, offset: u64, into: &mut [u8]) -> Result<(), String> {
        self.model.read(&self.id, offset, into);
        Ok(())
    }
}

impl RestoreSource for ModelSource {
    fn checkpoint_step(
        &mut self,
        info: &CheckpointInfo,
        scan: &mut disk::Scan,
        bytes_max: u64,
        visit: &mut dyn FnMut(RedoRecord) -> Result<(), String>,
    ) -> Result<bool, String> {
        let mut reader = CheckpointReader {
            model: &self.checkpoints,
            id: info.id,
        };
        read_checkpoint_step(info, scan, &mut reader, bytes_max, visit)
    }

    fn redo_step(
        &mut self,
        scan: &mut disk::Scan,
        bytes_max: u64,
        visit: &mut dyn FnMut(RedoRecord) -> Result<(), String>,
    ) -> Result<bool, String> {
        scan.step(&SIM_REDO, &mut self.redo, bytes_max, visit)
    }
}
