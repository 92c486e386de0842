//! What a data node keeps on disk besides the redo log's records, and how
//! it restarts from it: local checkpoints, the system file, the dictionary,
//! and the restore of a system restart. Sans-IO like the rest of the
//! composite: file work goes out as `FileTask`s, outcomes come back by
//! token (`DataNodeComposite::on_file_done`), and the runtime reads the
//! files at start (`survey`) and at a restore, handing the records in.
//!
//! ## Local checkpoints
//! A checkpoint writes the committed rows of every fragment replica of the
//! node to one file, fragment by fragment, while writes go on (a fuzzy
//! copy, as NDB's LCP). It is partial, as NDB 7.6's: of the 64 parts a
//! fragment's slots fall in, it writes an eighth whole (`next_whole_parts`,
//! in turn) and of the others the rows changed and the keys deleted since
//! the previous checkpoint began; the first one, and the first after a
//! restore, a copy or a checkpoint given up, is whole. The system file
//! keeps the chain a restore needs, at most `CHECKPOINT_CHAIN_MAX`: each
//! part from the newest checkpoint that wrote it whole on
//! (`disk::system_file::chain_with`). Why that restores every row is in
//! `transaction`'s `query_handler/checkpoint.rs`.
//!
//! Replaying the redo log from the newest checkpoint's `redo_start` over
//! the chain gives every commit: a change is in a checkpoint or in the log
//! after `redo_start` (the log's head when the checkpoint began, or the
//! first record of work a backup had logged and not yet committed in its
//! engine), and replaying a row's full image or its delete twice changes
//! nothing. The checkpoint holds only epochs below `epoch_limit`, so it is
//! installed in the system file (and the log's tail moved up to its
//! `redo_start`) once those epochs are durable cluster-wide: every restart
//! from then on restores at least that far. Until then the previous chain
//! stays in force, and the checkpoints it no longer needs are deleted once
//! it is installed.
//!
//! ## When, and how fast
//! A checkpoint writes at least an eighth of the rows, so taking one after
//! a fixed amount of redo (NDB's `TimeBetweenLocalCheckpoints`) would write
//! much of the data set for every few MiB of changes. The next one begins once the redo
//! written since the last one began reaches `REDO_BYTES_PER_CHECKPOINT_BYTE`
//! times the size of the last installed checkpoint (at least
//! `TimeBetweenLocalCheckpoints`' bytes): checkpoints then write about half
//! as much as the redo log does, whatever the data's size (a row changed
//! again and again between two checkpoints is written once, so spacing
//! them out saves more than its share). It begins at the latest when that
//! redo fills a quarter of the log, so the log keeps room for the writes
//! made while a checkpoint runs and installs. The pace follows the log's fill: below half full a
//! checkpoint keeps one write in flight, spreading its work between the
//! node's other work; from half full on, `CHECKPOINT_WRITES_IN_FLIGHT_MAX`.
//!
//! ## System restart
//! At start the runtime reads the system file and scans the redo log
//! (`Survey`): the highest `KIND_SAVED` marker says the node's disk holds
//! every commit of the epochs below it. The management node forms the
//! cluster from nodes whose disks reach the highest epoch every node group
//! can restore (`ClusterState::restore_epoch`); each such member loads its
//! checkpoint and replays its redo log up to there, before anything else.
//! The records it leaves behind (of later epochs) are cut off for good
//! (`Cut`, in the system file before anything new is logged). A node that
//! joins by copying its fragments (a node restart, or a node whose disk was
//! behind) writes no `KIND_SAVED` marker until a checkpoint taken after its
//! copy is installed: its redo log alone does not hold its rows.

use std::collections::{BTreeMap, VecDeque};

use disk::system_file::{
    CHECKPOINT_CHAIN_MAX, CUTS_MAX, CheckpointInfo, Cut, SystemFile, chain_with,
};
use disk::{Lsn, RedoRecord, Scan};
use protocol::ClusterState;
use storage::CheckpointSelection;
use transaction::QueryHandler;
use transaction::redo::{KIND_CHANGES, KIND_SAVED};

/// A checkpoint's writes handed to the runtime and not yet done, at most
/// (the rows they hold are copies in memory), once the redo log is half
/// full; below that, one.
pub const CHECKPOINT_WRITES_IN_FLIGHT_MAX: usize = 4;

/// The rows a checkpoint step reads and writes, about: each step runs on
/// the node's loop between inputs, so it bounds how long a checkpoint
/// holds up commits (a whole fragment of a million rows took tens of
/// milliseconds).
pub const CHECKPOINT_SLICE_BYTES: u32 = 1 << 20;

/// Redo bytes written between the starts of two checkpoints per byte the
/// last one wrote. At 1 the checkpoints wrote as much as the redo log did,
/// and under a sustained write load their scans, copies and writes took
/// about as much of a data node as the redo log's (a profile during
/// `shoal bench restart`: 3.6% and 3.2% of the node's CPU).
pub const REDO_BYTES_PER_CHECKPOINT_BYTE: u64 = 2;

/// The redo written since the last checkpoint began that begins the next:
/// `REDO_BYTES_PER_CHECKPOINT_BYTE` times the last installed checkpoint's
/// size, at least `trigger_bytes`, at most a quarter of the log (see the
/// module's documentation).
pub fn checkpoint_threshold(trigger_bytes: u64, last_checkpoint_bytes: u64, capacity: u64) -> u64 {
    trigger_bytes
        .max(last_checkpoint_bytes.saturating_mul(REDO_BYTES_PER_CHECKPOINT_BYTE))
        .min(capacity / 4)
        .max(1)
}

/// Checkpoint writes in flight at most with `used` of the log's
/// `capacity` bytes in use.
pub fn checkpoint_writes_max(used: u64, capacity: u64) -> usize {
    if used.saturating_mul(2) >= capacity {
        CHECKPOINT_WRITES_IN_FLIGHT_MAX
    } else {
        1
    }
}

/// Work on the node's files other than the redo log's writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileJob {
    /// Write `bytes` at `offset` of checkpoint `id`'s file (created by its
    /// first write).
    CheckpointWrite {
        id: u64,
        offset: u64,
        bytes: Vec<u8>,
    },
    /// Make checkpoint `id`'s file and its name durable.
    CheckpointSync {
        id: u64,
    },
    CheckpointDelete {
        id: u64,
    },
    /// Write the system file (the next slot) and sync it.
    System(SystemFile),
    /// Replace the saved cluster state (the dictionary) with these bytes,
    /// atomically, and sync (`encode_state`).
    State(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTask {
    pub token: u64,
    pub job: FileJob,
}

/// Reads the node's files for a restore (the runtime's real files, or the
/// simulator's disk model), a step at a time: a restore reads a bounded
/// number of bytes between the node's other work.
pub trait RestoreSource {
    /// Reads about `bytes_max` bytes of checkpoint `info`'s records from
    /// where `scan` stands (`Scan::new(0)` for the first step), giving each
    /// to `visit`; returns whether the file is done. An error if the file
    /// does not hold `info.bytes` of whole records.
    fn checkpoint_step(
        &mut self,
        info: &CheckpointInfo,
        scan: &mut Scan,
        bytes_max: u64,
        visit: &mut dyn FnMut(RedoRecord) -> Result<(), String>,
    ) -> Result<bool, String>;

    /// Reads about `bytes_max` bytes of the redo log's records from where
    /// `scan` stands (from the log's tail on), giving each to `visit`;
    /// returns whether the log's end was reached.
    fn redo_step(
        &mut self,
        scan: &mut Scan,
        bytes_max: u64,
        visit: &mut dyn FnMut(RedoRecord) -> Result<(), String>,
    ) -> Result<bool, String>;
}

/// The layout a checkpoint file is read with: one file, records from
/// offset 0.
const CHECKPOINT_LAYOUT: disk::RedoConfig = disk::RedoConfig {
    files: 1,
    file_bytes: 1 << 50,
    buffer_bytes: 0,
};

/// A step of reading checkpoint `info` from `reader` (its one file, zeros
/// past its end) with `scan`; an error if its records do not end exactly
/// at `info.bytes` (the file is damaged).
pub fn read_checkpoint_step(
    info: &CheckpointInfo,
    scan: &mut Scan,
    reader: &mut dyn disk::ReadAt,
    bytes_max: u64,
    visit: &mut dyn FnMut(RedoRecord) -> Result<(), String>,
) -> Result<bool, String> {
    let ended = scan.step(&CHECKPOINT_LAYOUT, reader, bytes_max, visit)?;
    if ended && scan.at() != info.bytes {
        return Err(format!(
            "local checkpoint {} holds whole records through byte {}, not {}: it is damaged",
            info.id,
            scan.at(),
            info.bytes
        ));
    }
    Ok(ended)
}

/// What the runtime found on the node's disk at start.
#[derive(Debug, Clone, Default)]
pub struct DiskStart {
    /// The system file, its generation already raised for this run.
    pub system: SystemFile,
    /// Where the redo log's scan from `system.redo_tail` ended.
    pub redo_end: Lsn,
    pub survey: Survey,
    /// The cluster state last saved (`FileJob::State`).
    pub state: Option<ClusterState>,
}

/// What the records of the redo log say, read at start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Survey {
    /// Every commit of the epochs below this is in the log (with the
    /// checkpoint): the highest live `KIND_SAVED` marker.
    pub restorable_epoch: u64,
    /// The generation of the cluster state the node was in when it wrote
    /// that marker (0: not known, a marker from before markers named it).
    pub restorable_generation: u64,
    /// When that marker is a system restart's mark of its restore point
    /// (`NodeDisk::mark_restore_point`), the generation the restart
    /// restored: up to that epoch the two generations hold the same
    /// commits, so the disk stands for either (0: a save's marker).
    pub restored_from_generation: u64,
    /// The highest epoch of any record, live or cut.
    pub epoch_max: u64,
    pub records: u64,
}

impl Survey {
    pub fn visit(&mut self, system: &SystemFile, record: &RedoRecord) {
        self.records += 1;
        self.epoch_max = self.epoch_max.max(record.epoch);
        // At an equal epoch the later marker wins: it is of the same or a
        // newer generation (a system restart's marker of its restore
        // point, `DataNodeComposite::mark_restored`, follows the marker of
        // the save it restored to).
        if record.kind == KIND_SAVED
            && live(system, record)
            && record.epoch >= self.restorable_epoch
        {
            let generation = |at: usize| {
                record.payload.get(at..at + 8).map_or(0, |bytes| {
                    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
                })
            };
            self.restorable_epoch = record.epoch;
            self.restorable_generation = generation(0);
            self.restored_from_generation = generation(8);
        }
    }
}

/// Whether no cut of the system file kills `record`.
pub fn live(system: &SystemFile, record: &RedoRecord) -> bool {
    // A `KIND_SAVED` marker of epoch E says every epoch below E is saved:
    // its last epoch is E - 1, and a restart that restored the epochs below
    // E keeps it. (Judged by E itself, the cut of that restart killed it,
    // and a second restart before the next save restored one global
    // checkpoint less than the first had brought back; the simulator's
    // whole-cluster crash during a restart found it.)
    let epoch = if record.kind == KIND_SAVED {
        record.epoch.saturating_sub(1)
    } else {
        record.epoch
    };
    system.cuts.iter().all(|cut| cut.keeps(record.lsn, epoch))
}

/// The saved form of a cluster state: the `Decided` message's encoding
/// and a CRC-32C of it.
pub fn encode_state(state: &ClusterState) -> Vec<u8> {
    let mut out = Vec::new();
    protocol::Message::Decided {
        state: Box::new(state.clone()),
    }
    .encode(&mut out);
    let checksum = crc32c_of(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

pub fn decode_state(bytes: &[u8]) -> Result<ClusterState, String> {
    if bytes.len() < 4 {
        return Err("the saved cluster state is cut short".to_string());
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 4);
    if crc32c_of(body).to_le_bytes() != checksum {
        return Err("the saved cluster state's checksum fails".to_string());
    }
    match protocol::Message::decode(body) {
        Ok(protocol::Message::Decided { state }) => Ok(*state),
        Ok(other) => Err(format!("the saved cluster state holds {}", other.name())),
        Err(error) => Err(format!("the saved cluster state: {error}")),
    }
}

fn crc32c_of(bytes: &[u8]) -> u32 {
    disk::redo::checksum(bytes)
}

/// A local checkpoint's progress.
#[derive(Debug)]
enum Checkpoint {
    Idle,
    /// Writing the fragments, a slice of rows per step (the first
    /// fragment is being written, from `cursor`).
    Writing {
        id: u64,
        redo_start: Lsn,
        /// The rows it takes: every row of the parts it writes whole, the
        /// changed rows of the others.
        selection: CheckpointSelection,
        fragments: VecDeque<(u32, u32)>,
        cursor: Option<(usize, u32)>,
        offset: u64,
    },
    /// Every fragment written; the sync is out.
    Syncing {
        info: CheckpointInfo,
    },
    /// On disk; installed once its epochs are durable everywhere.
    Durable {
        info: CheckpointInfo,
    },
    /// The system file naming it is being written; the checkpoints it
    /// makes unneeded are deleted once it is.
    Installing {
        info: CheckpointInfo,
        unneeded: Vec<u64>,
    },
}

/// What a file task was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    CheckpointWrite,
    CheckpointSync,
    CheckpointDelete,
    System,
    State,
}

/// Counters for tests and the simulator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskMarks {
    pub checkpoints_installed: u64,
    /// Of those, partial ones (some parts only changed rows).
    pub partial_checkpoints_installed: u64,
    pub checkpoint_rows: u64,
    /// Keys deleted that partial checkpoints wrote.
    pub checkpoint_deletes: u64,
    /// Restores that read a chain of more than one checkpoint.
    pub restores_from_chains: u64,
    /// Checkpoint steps that stopped in the middle of a fragment.
    pub checkpoint_slices_cut: u64,
    pub restores: u64,
    /// Of the restores, node restarts' (their rows kept for the copy).
    pub restores_for_copy: u64,
    pub restored_checkpoint_changes: u64,
    pub restored_redo_changes: u64,
    pub file_failures: u64,
}

/// The node's disk state (see the module's documentation).
#[derive(Debug)]
pub struct NodeDisk {
    system: SystemFile,
    /// Where the redo log ended at start (records before it are an
    /// earlier run's).
    start_end: Lsn,
    survey: Survey,
    /// The saved cluster state found at start, for the management node.
    saved_state: Option<ClusterState>,
    /// Whether the node's disk holds all its rows: it writes `KIND_SAVED`
    /// markers only then.
    restorable: bool,
    /// A restore is owed (the genesis state asked for one, or a node
    /// restart restores its own disk, and the runtime has not finished it).
    restoring: Option<u64>,
    /// The restore owed is a node restart's: its rows are kept aside for
    /// the copy that follows (`QueryHandler::restore_for_copy`), and the
    /// node's disk holds all its rows only after a checkpoint taken after
    /// the copy.
    restoring_for_copy: bool,
    /// The generation of the cluster state last installed: `KIND_SAVED`
    /// markers name it.
    generation: u64,
    /// The epoch the last restore of this incarnation brought its
    /// fragments back below (every commit of an earlier epoch), once done.
    restored: Option<u64>,
    /// The first install of this run as a member decided what the old
    /// records are.
    settled: bool,
    checkpoint: Checkpoint,
    next_checkpoint_id: u64,
    /// The redo log's head when the last checkpoint began.
    last_checkpoint_head: Lsn,
    /// Redo bytes appended that start a checkpoint, at least
    /// (`checkpoint_threshold`).
    checkpoint_trigger_bytes: u64,
    /// The bytes of rows a checkpoint step writes, about
    /// (`CHECKPOINT_SLICE_BYTES`; the simulator's are small, so its
    /// fragments are cut).
    checkpoint_slice_bytes: u32,
    /// Checkpoint writes allowed in flight now (`checkpoint_writes_max`,
    /// from the log's fill at the last step).
    checkpoint_writes_max: usize,
    /// Checkpoints may begin only once this node's copy of its fragments
    /// is done (a node restart's).
    copying: bool,
    /// The checkpoint under way was begun after the node's copy finished.
    checkpoint_after_copy: bool,
    /// The next checkpoint writes every part whole: rows were restored or
    /// copied into new slots, or a checkpoint was given up after its begin
    /// moved the window of changes on (see `transaction`'s checkpoint
    /// module).
    whole_next: bool,
    /// (generation, schema version) of the state last saved.
    saved_position: Option<(u64, u64)>,
    next_token: u64,
    pending: BTreeMap<u64, Purpose>,
    scratch: Vec<u8>,
    pub marks: DiskMarks,
}

impl NodeDisk {
    pub fn new(
        start: DiskStart,
        checkpoint_trigger_bytes: u64,
        checkpoint_slice_bytes: u32,
    ) -> NodeDisk {
        let next_checkpoint_id = start.system.checkpoints.last().map_or(1, |c| c.id + 1);
        NodeDisk {
            start_end: start.redo_end,
            survey: start.survey,
            saved_state: start.state,
            system: start.system,
            restorable: false,
            restoring: None,
            restoring_for_copy: false,
            generation: 0,
            restored: None,
            settled: false,
            checkpoint: Checkpoint::Idle,
            next_checkpoint_id,
            last_checkpoint_head: start.redo_end,
            checkpoint_trigger_bytes: checkpoint_trigger_bytes.max(1),
            checkpoint_slice_bytes: checkpoint_slice_bytes.max(1),
            checkpoint_writes_max: 1,
            copying: false,
            checkpoint_after_copy: false,
            whole_next: true,
            saved_position: None,
            next_token: 1,
            pending: BTreeMap::new(),
            scratch: Vec::new(),
            marks: DiskMarks::default(),
        }
    }

    /// The cluster state saved before this start, once (for the management
    /// node, which takes the newest dictionary any node saved).
    pub fn take_saved_state(&mut self) -> Option<ClusterState> {
        self.saved_state.take()
    }

    pub fn system(&self) -> &SystemFile {
        &self.system
    }

    fn task(&mut self, purpose: Purpose, job: FileJob, out: &mut Vec<FileTask>) {
        let token = self.next_token;
        self.next_token += 1;
        self.pending.insert(token, purpose);
        out.push(FileTask { token, job });
    }

    /// A state this node installed: saved when its dictionary or generation
    /// changed; and the first one of this run that makes the node a member
    /// decides what the records of earlier runs are: the genesis of a
    /// system restart (a restore, `restoring`), or anything else (they are
    /// dead: the node starts empty and copies, or the cluster started
    /// empty).
    ///
    /// A member that is neither starting nor recovered formed the
    /// generation, whichever version is the first it installs: a genesis
    /// member may miss version 1 and learn the state at a later one (the
    /// simulator's seed 20842 found one that served its fragments empty).
    /// Its incarnation tells it from an earlier run of the same node that
    /// the state still lists.
    pub fn installed(
        &mut self,
        me: protocol::Member,
        state: &ClusterState,
        out: &mut Vec<FileTask>,
    ) {
        let position = (state.generation, state.schema_version);
        if self.saved_position != Some(position) {
            self.saved_position = Some(position);
            self.task(Purpose::State, FileJob::State(encode_state(state)), out);
        }
        self.generation = state.generation;
        let member = state.members.contains(&me);
        let starting = state.starting.contains(&me);
        self.copying = starting;
        if self.settled || !member {
            return;
        }
        self.settled = true;
        // A node restart in the generation its disk was saved in restores
        // that disk, and copies only what changed since (NDB's optimized
        // node recovery). A commit of a generation is never taken back
        // while it lasts; after a system restart that left this node out,
        // its disk may hold commits the cluster took back, and it copies
        // everything.
        if starting
            && self.survey.restorable_epoch > 0
            && self.survey.restorable_generation == state.generation
        {
            self.restoring = Some(self.survey.restorable_epoch);
            self.restoring_for_copy = true;
            return;
        }
        let genesis = !starting && !state.recovered.contains(&me);
        if genesis && state.restore_epoch > 0 {
            assert!(
                self.survey.restorable_epoch >= state.restore_epoch,
                "node {} is made to restore to epoch {} with a disk that holds {}",
                me.node,
                state.restore_epoch,
                self.survey.restorable_epoch
            );
            self.restoring = Some(state.restore_epoch);
            return;
        }
        // Nothing before this run's first record is ever replayed again.
        self.cut(0, out);
        // A node that formed an empty cluster holds everything it will
        // have in its log from here on; one that copies does not.
        self.restorable = genesis;
    }

    /// Cuts off every record before this run's first of an epoch at or
    /// above `epoch`, in the system file, before anything new is logged.
    fn cut(&mut self, epoch: u64, out: &mut Vec<FileTask>) {
        let tail = self.system.redo_tail;
        self.system.cuts.retain(|cut| cut.end > tail);
        if self.start_end > tail {
            if self.system.cuts.len() == CUTS_MAX {
                // The oldest cut is widened: dropping it would revive
                // records it killed.
                let oldest = self.system.cuts.remove(0);
                self.system.cuts[0].epoch = self.system.cuts[0].epoch.min(oldest.epoch);
            }
            self.system.cuts.push(Cut {
                end: self.start_end,
                epoch,
            });
        }
        let system = self.system.clone();
        self.task(Purpose::System, FileJob::System(system), out);
    }

    /// The epoch this incarnation's restore from its own disk brought
    /// every commit back below, once it is done (`None`: no restore; a
    /// node that copies its rows from a peer restores nothing).
    pub fn restored_below(&self) -> Option<u64> {
        self.restored
    }

    /// The restore the runtime owes (`Output::restore`), if any.
    pub fn restore_owed(&self) -> Option<u64> {
        self.restoring
    }

    /// Where the redo log ended at start: a restore reads no further (the
    /// node's own records follow).
    pub fn start_end(&self) -> Lsn {
        self.start_end
    }

    /// The restore owed is a node restart's (its rows go aside for the
    /// copy).
    pub fn restoring_for_copy(&self) -> bool {
        self.restoring_for_copy
    }

    /// One record of a checkpoint of the chain being loaded, of which the
    /// restore takes the rows of `parts` (`disk::system_file::parts_taken`).
    pub fn restore_checkpoint_record(
        &mut self,
        query_handler: &mut QueryHandler,
        parts: u64,
        record: &RedoRecord,
    ) -> Result<(), String> {
        let applied = apply(query_handler, record, parts)?;
        self.marks.restored_checkpoint_changes += applied;
        Ok(())
    }

    /// One record of the redo log, replayed if it is live and of an epoch
    /// the restore reaches.
    pub fn restore_redo_record(
        &mut self,
        query_handler: &mut QueryHandler,
        record: &RedoRecord,
    ) -> Result<(), String> {
        let restore_epoch = self.restoring.expect("a restore is under way");
        if record.kind != KIND_CHANGES
            || record.epoch >= restore_epoch
            || !live(&self.system, record)
        {
            return Ok(());
        }
        let applied = apply(query_handler, record, u64::MAX)?;
        self.marks.restored_redo_changes += applied;
        Ok(())
    }

    /// The restore is done: the records it left behind are cut off, and
    /// the node's disk holds all its rows.
    pub fn finish_restore(&mut self, out: &mut Vec<FileTask>) {
        let epoch = self.restoring.take().expect("a restore was under way");
        if !self.restoring_for_copy {
            self.restored = Some(epoch);
        }
        self.cut(epoch, out);
        // A node restart's rows are kept aside until its copy names them.
        self.restorable = !self.restoring_for_copy;
        if self.restoring_for_copy {
            self.marks.restores_for_copy += 1;
        }
        if self.system.checkpoints.len() > 1 {
            self.marks.restores_from_chains += 1;
        }
        self.marks.restores += 1;
        // The rows went into new slots, so new parts.
        self.whole_next = true;
    }

    /// A node restart's restore was given up before its end (the node's
    /// start ended another way): its disk holds all its rows only after a
    /// checkpoint taken after its next copy.
    pub fn abandon_restore(&mut self) {
        assert!(
            self.restoring_for_copy,
            "only a node restart's restore is given up"
        );
        self.restoring = None;
        self.restoring_for_copy = false;
        self.restorable = false;
        self.whole_next = true;
    }

    /// Appends the `KIND_SAVED` marker of a save of the epochs below
    /// `epoch`, when the node's disk holds all its rows. A log that has no
    /// room refuses it: the node's disk then restores less far, which is
    /// safe.
    pub fn mark_saved(&self, log: &mut disk::RedoLog, epoch: u64) -> Result<(), disk::RedoError> {
        if self.restorable {
            log.append(epoch, KIND_SAVED, &self.generation.to_le_bytes())?;
        }
        Ok(())
    }

    /// Appends, after a system restart's restore of the epochs below
    /// `epoch`, the `KIND_SAVED` marker of that point in the new
    /// generation, naming also the generation whose commits below `epoch`
    /// it holds (the one the restart restored, or the one that one
    /// restored when it saved nothing past its own restore point). A later
    /// restart then counts this disk for its node group in either
    /// generation: in the older one while no node group saved anything in
    /// the newer one (a second whole-cluster crash came before these
    /// markers were durable on every node group: the simulator's seed
    /// 124454).
    pub fn mark_restore_point(
        &self,
        log: &mut disk::RedoLog,
        epoch: u64,
    ) -> Result<(), disk::RedoError> {
        let restored = if self.survey.restored_from_generation != 0 {
            self.survey.restored_from_generation
        } else {
            self.survey.restorable_generation
        };
        let mut payload = [0u8; 16];
        payload[..8].copy_from_slice(&self.generation.to_le_bytes());
        payload[8..].copy_from_slice(&restored.to_le_bytes());
        if self.restorable {
            log.append_restore_mark(epoch, KIND_SAVED, &payload)?;
        }
        Ok(())
    }

    /// Advances the local checkpoint by one step (see the module's
    /// documentation). `current_epoch`: the epoch commits are decided in;
    /// `durable_below`: every epoch below it is durable cluster-wide.
    pub fn step_checkpoint(
        &mut self,
        query_handler: &mut QueryHandler,
        member: bool,
        current_epoch: u64,
        durable_below: u64,
        out: &mut Vec<FileTask>,
    ) -> Result<(), String> {
        match &mut self.checkpoint {
            Checkpoint::Idle => {
                let Some(log) = query_handler.redo() else {
                    return Ok(());
                };
                let capacity = log.config().capacity_bytes();
                let threshold = checkpoint_threshold(
                    self.checkpoint_trigger_bytes,
                    self.system.checkpoints.last().map_or(0, |c| c.bytes),
                    capacity,
                );
                // A node whose disk does not hold its rows yet (it copied
                // them) checkpoints at once.
                let due = log.head().saturating_sub(self.last_checkpoint_head) >= threshold
                    || !self.restorable;
                if !member || self.copying || self.restoring.is_some() || !due || !self.settled {
                    return Ok(());
                }
                self.last_checkpoint_head = log.head();
                let whole_parts = match self.system.checkpoints.last() {
                    Some(newest)
                        if !self.whole_next && !query_handler.checkpoint_deletes_lost() =>
                    {
                        next_whole_parts(newest.whole_parts)
                    }
                    _ => u64::MAX,
                };
                let start = query_handler
                    .begin_checkpoint(whole_parts == u64::MAX)
                    .expect("a node with a redo log");
                self.whole_next = false;
                let id = self.next_checkpoint_id;
                self.next_checkpoint_id += 1;
                self.checkpoint_after_copy = true;
                self.checkpoint = Checkpoint::Writing {
                    id,
                    redo_start: start.redo_start,
                    selection: CheckpointSelection {
                        whole_parts,
                        changed_since_gci: start.changed_since_gci,
                    },
                    fragments: query_handler.fragment_replicas().into(),
                    cursor: None,
                    offset: 0,
                };
                // A file of this id may be left from a run that died in
                // the middle of it: its bytes past this checkpoint's end
                // would read as records. Deleted first (file work is done
                // in order).
                self.task(
                    Purpose::CheckpointDelete,
                    FileJob::CheckpointDelete { id },
                    out,
                );
                Ok(())
            }
            Checkpoint::Writing {
                id,
                redo_start,
                selection,
                fragments,
                cursor,
                offset,
            } => {
                let (id, redo_start, selection) = (*id, *redo_start, *selection);
                if let Some(log) = query_handler.redo() {
                    self.checkpoint_writes_max =
                        checkpoint_writes_max(log.used_bytes(), log.config().capacity_bytes());
                }
                let writing = self
                    .pending
                    .values()
                    .filter(|purpose| **purpose == Purpose::CheckpointWrite)
                    .count();
                if writing >= self.checkpoint_writes_max {
                    return Ok(());
                }
                match fragments.front().copied() {
                    Some((table, fragment)) => {
                        self.scratch.clear();
                        // A partial checkpoint writes a fragment's deletes
                        // before its rows: a restore applies them first, so
                        // a key deleted and written again comes back.
                        if cursor.is_none() && selection.whole_parts != u64::MAX {
                            self.marks.checkpoint_deletes += u64::from(
                                query_handler
                                    .checkpoint_deletes((table, fragment), &mut self.scratch),
                            );
                        }
                        // A fragment dropped since the checkpoint began has
                        // nothing to keep.
                        let Ok((rows, next)) = query_handler.checkpoint_slice(
                            (table, fragment),
                            *cursor,
                            selection,
                            self.checkpoint_slice_bytes,
                            &mut self.scratch,
                        ) else {
                            fragments.pop_front();
                            *cursor = None;
                            return Ok(());
                        };
                        *cursor = next;
                        if next.is_none() {
                            fragments.pop_front();
                        }
                        self.marks.checkpoint_rows += u64::from(rows);
                        self.marks.checkpoint_slices_cut += u64::from(next.is_some());
                        let mut bytes = Vec::with_capacity(
                            self.scratch.len() + self.scratch.len() / 64 + 4_096,
                        );
                        let mut at = *offset;
                        let header = transaction::redo::header(table, fragment, 0);
                        transaction::redo::pieces(&self.scratch, |changes| {
                            let start = bytes.len();
                            disk::redo::encode_record_parts_into(
                                at,
                                0,
                                0,
                                KIND_CHANGES,
                                &[&header, changes],
                                &mut bytes,
                            );
                            at += (bytes.len() - start) as u64;
                        });
                        if !bytes.is_empty() {
                            let write_at = *offset;
                            *offset = at;
                            self.task(
                                Purpose::CheckpointWrite,
                                FileJob::CheckpointWrite {
                                    id,
                                    offset: write_at,
                                    bytes,
                                },
                                out,
                            );
                        }
                        Ok(())
                    }
                    None => {
                        let info = CheckpointInfo {
                            id,
                            redo_start,
                            epoch_limit: query_handler.logged_epoch_max().max(current_epoch) + 1,
                            bytes: *offset,
                            whole_parts: selection.whole_parts,
                        };
                        self.checkpoint = Checkpoint::Syncing { info };
                        self.task(Purpose::CheckpointSync, FileJob::CheckpointSync { id }, out);
                        Ok(())
                    }
                }
            }
            Checkpoint::Syncing { .. } | Checkpoint::Installing { .. } => Ok(()),
            Checkpoint::Durable { info } => {
                if durable_below < info.epoch_limit {
                    return Ok(());
                }
                let info = *info;
                let (chain, unneeded) = chain_with(&self.system.checkpoints, info);
                assert!(
                    chain.len() <= CHECKPOINT_CHAIN_MAX,
                    "a chain of {} checkpoints",
                    chain.len()
                );
                self.system.checkpoints = chain;
                self.system.redo_tail = info.redo_start;
                let tail = info.redo_start;
                self.system.cuts.retain(|cut| cut.end > tail);
                let system = self.system.clone();
                self.checkpoint = Checkpoint::Installing { info, unneeded };
                self.task(Purpose::System, FileJob::System(system), out);
                Ok(())
            }
        }
    }

    /// Whether a checkpoint step is due now (the runtime's next poll).
    pub fn checkpoint_busy(&self) -> bool {
        matches!(self.checkpoint, Checkpoint::Writing { .. })
            && self
                .pending
                .values()
                .filter(|purpose| **purpose == Purpose::CheckpointWrite)
                .count()
                < self.checkpoint_writes_max
    }

    /// A file task ended. Returns a line for the log when something failed
    /// or a checkpoint was installed.
    pub fn done(
        &mut self,
        token: u64,
        result: Result<(), String>,
        query_handler: &mut QueryHandler,
        out: &mut Vec<FileTask>,
    ) -> Option<String> {
        let purpose = self.pending.remove(&token)?;
        if let Err(error) = result {
            self.marks.file_failures += 1;
            return Some(match purpose {
                Purpose::CheckpointWrite | Purpose::CheckpointSync => {
                    // The checkpoint is given up; the next one starts over.
                    let id = match &self.checkpoint {
                        Checkpoint::Writing { id, .. } => Some(*id),
                        Checkpoint::Syncing { info } => Some(info.id),
                        _ => None,
                    };
                    if let Some(id) = id {
                        self.checkpoint = Checkpoint::Idle;
                        self.whole_next = true;
                        self.task(
                            Purpose::CheckpointDelete,
                            FileJob::CheckpointDelete { id },
                            out,
                        );
                    }
                    format!("a local checkpoint failed and starts over: {error}")
                }
                Purpose::CheckpointDelete => {
                    // A checkpoint being written may write over what the
                    // delete left: it is given up and begun again later.
                    if matches!(self.checkpoint, Checkpoint::Writing { .. }) {
                        self.checkpoint = Checkpoint::Idle;
                        self.whole_next = true;
                    }
                    format!("a local checkpoint file could not be deleted: {error}")
                }
                Purpose::System => {
                    // Written again: until it is, the node's restart state
                    // is the last one synced.
                    let system = self.system.clone();
                    self.task(Purpose::System, FileJob::System(system), out);
                    format!("the system file could not be written, writing it again: {error}")
                }
                Purpose::State => {
                    self.saved_position = None;
                    format!("the cluster state could not be saved: {error}")
                }
            });
        }
        match purpose {
            Purpose::CheckpointSync => {
                if let Checkpoint::Syncing { info } = self.checkpoint {
                    self.checkpoint = Checkpoint::Durable { info };
                }
                None
            }
            Purpose::System => {
                let Checkpoint::Installing { info, .. } = &self.checkpoint else {
                    return None;
                };
                if self.system.checkpoints.last() != Some(info) {
                    return None;
                }
                let Checkpoint::Installing { info, unneeded } =
                    std::mem::replace(&mut self.checkpoint, Checkpoint::Idle)
                else {
                    unreachable!("matched above")
                };
                if let Some(log) = query_handler.redo_mut() {
                    log.release(info.redo_start.min(log.durable()));
                }
                for id in unneeded {
                    self.task(
                        Purpose::CheckpointDelete,
                        FileJob::CheckpointDelete { id },
                        out,
                    );
                }
                self.marks.checkpoints_installed += 1;
                self.marks.partial_checkpoints_installed += u64::from(!info.is_whole());
                let became_restorable = !self.restorable && self.checkpoint_after_copy;
                if self.checkpoint_after_copy {
                    self.restorable = true;
                }
                became_restorable.then(|| {
                    format!(
                        "local checkpoint {} installed: this node's disk holds all its rows",
                        info.id
                    )
                })
            }
            Purpose::CheckpointWrite | Purpose::CheckpointDelete | Purpose::State => None,
        }
    }

    /// The node restarts as a new incarnation (it was excluded): it copies
    /// its fragments again, so its disk no longer holds them.
    pub fn restarted(&mut self) {
        // A restore under way is given up: the new incarnation copies
        // everything.
        self.restoring = None;
        self.restoring_for_copy = false;
        self.restorable = false;
        self.copying = true;
        self.checkpoint_after_copy = false;
        self.whole_next = true;
        if matches!(
            self.checkpoint,
            Checkpoint::Writing { .. } | Checkpoint::Syncing { .. } | Checkpoint::Durable { .. }
        ) {
            // Its rows are the old incarnation's; it never installs.
            self.checkpoint = Checkpoint::Idle;
        }
    }
}

/// The parts a partial checkpoint after one that wrote `previous` whole
/// writes whole: the next eighth of them, in turn (parts `r`, `r + 8`, …
/// for the next residue `r`), so each part is written whole within
/// `CHECKPOINT_CHAIN_MAX` checkpoints and a restore reads at most as many.
pub fn next_whole_parts(previous: u64) -> u64 {
    const EVERY_EIGHTH: u64 = 0x0101_0101_0101_0101;
    const _: () = assert!(CHECKPOINT_CHAIN_MAX == 8 && storage::CHECKPOINT_PARTS == 64);
    let residue = if previous == u64::MAX {
        0
    } else {
        (previous.trailing_zeros() + 1) % 8
    };
    EVERY_EIGHTH << residue
}

/// Applies a `KIND_CHANGES` record's changes, of a checkpoint's rows those
/// of `parts`; returns how many applied.
fn apply(query_handler: &mut QueryHandler, record: &RedoRecord, parts: u64) -> Result<u64, String> {
    if record.kind != KIND_CHANGES {
        return Ok(0);
    }
    let changes = transaction::redo::read_changes(&record.payload)?;
    query_handler
        .restore_changes(
            changes.table,
            changes.fragment,
            changes.changes,
            protocol::gci_of(record.epoch),
            parts,
        )
        .map(u64::from)
        .map_err(|error| {
            format!(
                "restoring the record at {} (table {}, fragment {}): {error}",
                record.lsn, changes.table, changes.fragment
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint begins after twice as much redo as the last one wrote
    /// (so its writes stay about half the redo's, whatever the data's
    /// size), never sooner than the configured bytes, and by a quarter of
    /// the log.
    #[test]
    fn a_checkpoint_begins_after_twice_as_much_redo_as_the_last_one_held() {
        let (trigger, capacity) = (4 << 20, 256 << 20);
        assert_eq!(checkpoint_threshold(trigger, 0, capacity), 4 << 20);
        assert_eq!(checkpoint_threshold(trigger, 1 << 20, capacity), 4 << 20);
        assert_eq!(checkpoint_threshold(trigger, 20 << 20, capacity), 40 << 20);
        assert_eq!(checkpoint_threshold(trigger, 40 << 20, capacity), 64 << 20);
        assert_eq!(checkpoint_threshold(trigger, 40 << 20, 1 << 30), 80 << 20);
        assert_eq!(checkpoint_threshold(trigger, 1 << 30, capacity), 64 << 20);
        // A log smaller than four triggers: a quarter of it.
        assert_eq!(checkpoint_threshold(trigger, 0, 8 << 20), 2 << 20);
    }

    /// A restart that restored the epochs below E cuts off the records of
    /// E and later written before it, but keeps the marker saying the
    /// epochs below E were saved: a second restart restores as far.
    #[test]
    fn a_restarts_cut_keeps_the_marker_of_what_it_restored() {
        let restored_below = 35 << 32;
        let system = SystemFile {
            cuts: vec![Cut {
                end: 1_000,
                epoch: restored_below,
            }],
            ..SystemFile::default()
        };
        let record = |lsn, epoch, kind| RedoRecord {
            lsn,
            epoch,
            generation: 1,
            kind,
            payload: Vec::new(),
        };
        assert!(live(&system, &record(10, restored_below, KIND_SAVED)));
        assert!(!live(&system, &record(20, restored_below + 1, KIND_SAVED)));
        assert!(!live(&system, &record(30, restored_below, KIND_CHANGES)));
        assert!(live(&system, &record(40, restored_below - 1, KIND_CHANGES)));
        // Records written after the restart are not cut.
        assert!(live(&system, &record(1_000, restored_below, KIND_CHANGES)));
        let mut survey = Survey::default();
        for r in [
            record(5, restored_below - (1 << 32), KIND_SAVED),
            record(10, restored_below, KIND_SAVED),
            record(20, restored_below + (1 << 32), KIND_SAVED),
        ] {
            survey.visit(&system, &r);
        }
        assert_eq!(survey.restorable_epoch, restored_below);
        // The restart's own marker of that point, in its new generation,
        // comes after the old one and names the generation (else a later
        // restart would find this disk only in the older generation).
        let generation = |epoch, generation: u64, lsn| RedoRecord {
            payload: generation.to_le_bytes().to_vec(),
            ..record(lsn, epoch, KIND_SAVED)
        };
        let mut survey = Survey::default();
        for r in [
            generation(restored_below, 7, 10),
            generation(restored_below, 8, 1_000),
        ] {
            survey.visit(&system, &r);
        }
        assert_eq!(
            (
                survey.restorable_epoch,
                survey.restorable_generation,
                survey.restored_from_generation
            ),
            (restored_below, 8, 0)
        );
        // A restart's mark of its restore point names the generation it
        // restored; a save after it does not.
        let restore_point = |epoch, generation: u64, restored: u64, lsn| RedoRecord {
            payload: [generation.to_le_bytes(), restored.to_le_bytes()].concat(),
            ..record(lsn, epoch, KIND_SAVED)
        };
        survey.visit(&system, &restore_point(restored_below, 9, 8, 2_000));
        assert_eq!(
            (
                survey.restorable_generation,
                survey.restored_from_generation
            ),
            (9, 8)
        );
        survey.visit(&system, &generation(restored_below + (1 << 32), 9, 3_000));
        assert_eq!(
            (
                survey.restorable_epoch,
                survey.restorable_generation,
                survey.restored_from_generation
            ),
            (restored_below + (1 << 32), 9, 0)
        );
    }

    /// After a whole checkpoint, partial ones write every eighth part
    /// whole, in turn, so each part is written whole within eight.
    #[test]
    fn partial_checkpoints_take_turns_at_writing_an_eighth_of_the_parts_whole() {
        let mut whole = u64::MAX;
        let mut covered = 0;
        for turn in 0..8 {
            whole = next_whole_parts(whole);
            assert_eq!(whole.count_ones(), 8, "turn {turn}");
            assert_eq!(covered & whole, 0, "turn {turn} writes a part again");
            covered |= whole;
        }
        assert_eq!(covered, u64::MAX);
        assert_eq!(next_whole_parts(whole), next_whole_parts(u64::MAX));
    }

    #[test]
    fn a_checkpoint_hurries_once_the_redo_log_is_half_full() {
        let capacity = 256 << 20;
        assert_eq!(checkpoint_writes_max(0, capacity), 1);
        assert_eq!(checkpoint_writes_max((128 << 20) - 1, capacity), 1);
        assert_eq!(
            checkpoint_writes_max(128 << 20, capacity),
            CHECKPOINT_WRITES_IN_FLIGHT_MAX
        );
    }
}
