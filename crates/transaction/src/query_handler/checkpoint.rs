//! What a local checkpoint reads from the query handler: the rows of a
//! fragment replica, a slice at a time, and for a partial checkpoint the
//! changes since the last one began (NDB 7.6's partial LCP).
//!
//! ## Partial checkpoints
//! A fragment's row slots fall in `storage::CHECKPOINT_PARTS` parts by
//! address (`storage::checkpoint_part`). A partial checkpoint writes every
//! row of some parts (`whole`) and, of the others, only the rows a commit
//! wrote since the previous checkpoint began, and the keys deleted since;
//! a restore takes each part from the newest checkpoint that wrote it
//! whole and the changes of every later one, in order.
//!
//! That holds because:
//! - Every row a commit writes carries the commit's GCI
//!   (`Engine::commit`), and `ChangeLog::gci_floor` is the lowest GCI of
//!   any commit since the previous checkpoint began, so a row written
//!   since has a GCI at or above it. Rows of older GCIs may be taken too,
//!   which costs bytes, never rows.
//! - A deleted row leaves no slot behind, so its key is kept
//!   (`ChangeLog::deleted`) with the position of its redo record, from the
//!   previous checkpoint's `redo_start` on: every delete that record or
//!   any later one may miss. A checkpoint writes a fragment's deletes
//!   before its rows and a restore applies them in that order, so a key
//!   deleted and written again comes back.
//! - What changes while a checkpoint is being written is in the redo log
//!   after its `redo_start`, replayed over it, as for a whole checkpoint.
//! - Rows keep their slots, and so their parts, while the node runs. A
//!   restore or a copy puts rows in new slots, so the first checkpoint
//!   after one is whole; so is the one after keys were dropped for want of
//!   room (`deletes_lost`), or after a checkpoint that was given up (its
//!   begin moved the window on).

use disk::Lsn;
use schema::{Error, ErrorCode};
use storage::CheckpointSelection;

use super::QueryHandler;
use crate::maps::Map;

/// Scan batches one checkpoint slice takes at most, each of at most
/// `storage::engine::CHECKPOINT_SLOTS_PER_BATCH` slots: a partial slice
/// that passes unchanged rows stops after about 65,536 slots, however few
/// it wrote.
const CHECKPOINT_BATCHES_PER_SLICE: u32 = 16;
/// Bytes of a deleted key's entry besides the key: its record's position
/// and the key's length.
const DELETED_KEY_ENTRY_BYTES: u64 = 12;

/// A checkpoint that begins: where its redo replay starts, and which rows
/// it takes of the parts it does not write whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointStart {
    pub redo_start: Lsn,
    pub changed_since_gci: u32,
}

/// The changes since the last checkpoint began (see the module's
/// documentation).
#[derive(Debug)]
pub(crate) struct ChangeLog {
    /// The lowest GCI of any commit into the engine since the last
    /// checkpoint began (`u32::MAX`: none).
    gci_floor: u32,
    /// Per fragment replica, the keys deleted from the last checkpoint's
    /// previous one's `redo_start` on, in log order.
    deleted: Map<(u32, u32), DeletedKeys>,
    /// Bytes of `deleted`'s entries, at most `bytes_max` (the redo
    /// buffer's size, from the configuration): past it keys are dropped
    /// and the next checkpoint is whole.
    bytes: u64,
    bytes_max: u64,
    lost: bool,
    /// The `redo_start` of the last checkpoint begun.
    last_redo_start: Lsn,
}

impl ChangeLog {
    pub(crate) fn new() -> ChangeLog {
        ChangeLog {
            gci_floor: u32::MAX,
            deleted: Map::default(),
            bytes: 0,
            bytes_max: 0,
            lost: false,
            last_redo_start: 0,
        }
    }

    pub(crate) fn set_bytes_max(&mut self, bytes_max: u64) {
        self.bytes_max = bytes_max;
    }

    #[inline]
    pub(crate) fn committed(&mut self, gci: u32) {
        self.gci_floor = self.gci_floor.min(gci);
    }

    /// Keeps the keys of the deletes among `changes` (a commit's, as
    /// `Engine::prepared_changes` wrote them), logged from `lsn` on.
    pub(crate) fn logged(&mut self, (table, fragment): (u32, u32), lsn: Lsn, changes: &[u8]) {
        for change in storage::changes(changes) {
            // The engine wrote these changes: they are whole.
            let Ok((kind, key)) = change else {
                return;
            };
            if kind != storage::CHANGE_DELETE || self.lost {
                continue;
            }
            let entry = DELETED_KEY_ENTRY_BYTES + key.len() as u64;
            if self.bytes + entry > self.bytes_max {
                self.lost = true;
                continue;
            }
            self.bytes += entry;
            let keys = self.deleted.entry((table, fragment)).or_default();
            keys.bytes.extend_from_slice(&lsn.to_le_bytes());
            keys.bytes
                .extend_from_slice(&(key.len() as u32).to_le_bytes());
            keys.bytes.extend_from_slice(key);
        }
    }

    /// Drops the keys deleted before `lsn`, and those of fragments no
    /// longer held.
    fn prune(&mut self, lsn: Lsn, held: impl Fn(&(u32, u32)) -> bool) {
        let mut freed = 0;
        self.deleted.retain(|fragment, keys| {
            if !held(fragment) {
                freed += (keys.bytes.len() - keys.start) as u64;
                return false;
            }
            let before = keys.start;
            while let Some((entry_lsn, key)) = keys.entry_at(keys.start) {
                if entry_lsn >= lsn {
                    break;
                }
                keys.start += DELETED_KEY_ENTRY_BYTES as usize + key.len();
            }
            freed += (keys.start - before) as u64;
            if keys.start * 2 >= keys.bytes.len() {
                keys.bytes.drain(..keys.start);
                keys.start = 0;
            }
            keys.start < keys.bytes.len()
        });
        self.bytes -= freed;
    }
}

/// Deleted keys, each as its record's position (`u64`), the key's length
/// (`u32`) and the key (AttrInfo of the primary key), from `start` on.
#[derive(Debug, Default)]
struct DeletedKeys {
    bytes: Vec<u8>,
    start: usize,
}

impl DeletedKeys {
    fn entry_at(&self, at: usize) -> Option<(Lsn, &[u8])> {
        let head = self.bytes.get(at..at + DELETED_KEY_ENTRY_BYTES as usize)?;
        let lsn = u64::from_le_bytes(head[0..8].try_into().expect("8 bytes"));
        let length = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) as usize;
        let key_at = at + DELETED_KEY_ENTRY_BYTES as usize;
        Some((lsn, &self.bytes[key_at..key_at + length]))
    }
}

impl QueryHandler {
    /// Where a local checkpoint that begins now must start replaying the
    /// redo log: the log's head, or the first record of work a backup
    /// logged but has not yet committed in its engine (its rows are not
    /// in the checkpoint).
    pub fn checkpoint_redo_start(&self) -> Option<Lsn> {
        let redo = self.redo.as_ref()?;
        let committing = self
            .work
            .values()
            .filter(|work| work.state == super::WorkState::Committing)
            .map(|work| work.logged_at)
            .min()
            .unwrap_or(super::NOT_LOGGED);
        Some(redo.head().min(committing))
    }

    /// Whether deleted keys were dropped for want of room since the last
    /// whole checkpoint began: the next checkpoint must be whole.
    pub fn checkpoint_deletes_lost(&self) -> bool {
        self.changes.lost
    }

    /// A checkpoint begins (`whole`: it writes every part whole): where
    /// its redo replay starts and which changed rows it takes; the window
    /// of changes moves on to this checkpoint. `None` without a redo log.
    pub fn begin_checkpoint(&mut self, whole: bool) -> Option<CheckpointStart> {
        let redo_start = self.checkpoint_redo_start()?;
        assert!(
            whole || !self.changes.lost,
            "a partial checkpoint after deleted keys were dropped"
        );
        let changed_since_gci = std::mem::replace(&mut self.changes.gci_floor, u32::MAX);
        // A partial checkpoint needs the deletes from the previous one's
        // redo start on; the next one needs them from this one's.
        let keep_from = if whole {
            self.changes.lost = false;
            redo_start
        } else {
            self.changes.last_redo_start
        };
        let fragments = &self.fragments;
        self.changes
            .prune(keep_from, |fragment| fragments.contains_key(fragment));
        self.changes.last_redo_start = redo_start;
        Some(CheckpointStart {
            redo_start,
            changed_since_gci,
        })
    }

    /// Appends the keys deleted on a fragment replica that a partial
    /// checkpoint writes, as `CHANGE_DELETE` changes; returns how many.
    pub fn checkpoint_deletes(&self, fragment: (u32, u32), out: &mut Vec<u8>) -> u32 {
        let Some(keys) = self.changes.deleted.get(&fragment) else {
            return 0;
        };
        let mut count = 0;
        let mut at = keys.start;
        while let Some((_, key)) = keys.entry_at(at) {
            out.push(storage::CHANGE_DELETE);
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(key);
            at += DELETED_KEY_ENTRY_BYTES as usize + key.len();
            count += 1;
        }
        count
    }

    /// Appends a slice of the committed rows of a fragment replica that
    /// `selection` takes to `out` as `CHANGE_ROW_OF_PART` changes (the
    /// row's part, its GCI, every column), as a local checkpoint writes
    /// them: from `cursor` (`None`: the first slot) until about
    /// `bytes_max` bytes are out or `CHECKPOINT_BATCHES_PER_SLICE` batches
    /// were looked at, so one step of a checkpoint stalls the node's loop
    /// for a bounded time whatever the fragment's size. Returns how many
    /// rows, and where the next slice starts (`None`: the fragment is
    /// done). The cursor is a slot address, stable while rows come and go,
    /// so no row unchanged since the checkpoint began is missed; a row
    /// changed between slices may be seen twice or not at all, and its
    /// change is in the redo log after the checkpoint's start.
    pub fn checkpoint_slice(
        &mut self,
        (table, fragment): (u32, u32),
        cursor: Option<(usize, u32)>,
        selection: CheckpointSelection,
        bytes_max: u32,
        out: &mut Vec<u8>,
    ) -> Result<(u32, Option<(usize, u32)>), Error> {
        let scan = self.open_committed_scan(table, fragment)?;
        let start = out.len();
        let mut rows = 0;
        let mut data = Vec::new();
        let scanned = (|| {
            self.engine.select_for_checkpoint(scan, selection)?;
            if let Some(cursor) = cursor {
                self.engine.seek_scan(scan, cursor)?;
            }
            for _ in 0..CHECKPOINT_BATCHES_PER_SLICE {
                data.clear();
                let written = (out.len() - start) as u32;
                // A committed read never waits, so the time does not matter.
                let batch = self.engine.scan_next(
                    0,
                    scan,
                    super::SCAN_BATCH_ROWS_MAX,
                    super::SCAN_BATCH_BYTES_MAX.min(bytes_max.saturating_sub(written).max(1)),
                    &mut data,
                )?;
                // Scan output: each row a little-endian u32 length, then
                // its part, GCI and AttrInfo; a change is the same behind
                // its kind.
                let mut rest = data.as_slice();
                while rest.len() >= 4 {
                    let length = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                    out.push(storage::CHANGE_ROW_OF_PART);
                    out.extend_from_slice(&rest[..4 + length]);
                    rest = &rest[4 + length..];
                    rows += 1;
                }
                if batch.finished {
                    return Ok(None);
                }
                if (out.len() - start) as u32 >= bytes_max {
                    break;
                }
            }
            let next = self
                .engine
                .scan_cursor(scan)
                .ok_or_else(|| Error::new(ErrorCode::WrongTransactionState, "no cursor"))?;
            Ok(Some(next))
        })();
        // The scan was opened above, so closing it cannot fail.
        self.engine
            .close_scan(scan)
            .expect("a scan opened here is open");
        scanned.map(|next| (rows, next))
    }
}
