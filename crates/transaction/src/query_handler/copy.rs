//! Node recovery: a starting node copies each of its fragment replicas from
//! a started replica while the cluster goes on writing (NDB's
//! copy-fragment, COPY_FRAGREQ).
//!
//! ## Why the copy is exact
//! A starting node is in the write chain of every fragment it holds, last,
//! from the state that admits it (`Routing::live_replicas`), so every write
//! planned on that state reaches it after passing every started replica. A
//! write planned on an older state is refused by a started replica that
//! knows better (1204, `missing_starting_replica`), and the copy of a
//! fragment starts only once every transaction that was already working on
//! it at the copying replica has ended (the barrier), so no write that
//! bypasses the starter is in flight. Then, for each row:
//! - The copying replica reads it under a shared lock (a locking scan), so
//!   the read waits for every transaction holding it exclusively — every
//!   one of them also reaches the starter — and sends it; the lock is held
//!   until the starter says the batch is applied, so no later write passes
//!   the copied row on its way to the starter.
//! - The starter writes a copied row under the row's lock, after any
//!   transaction holding it there (its own engine transaction per row, so
//!   the rows of a batch wait independently; the batch is acknowledged
//!   once all are written). Those holders passed the copying replica
//!   before the copy read the row, so the copy already reflects how they
//!   ended; writing before they end would let an abort there undo the
//!   copy (seed 300785: an aborted delete-and-insert took the copied row
//!   with it).
//! - An update or delete that reaches the starter before the row was
//!   copied finds no row and changes nothing (`writes_before_copy`): the
//!   copy reads the row after that write released it, so it brings the row
//!   as the write left it. An insert, or a `Write` the first replica turned
//!   into one, is taken like any insert: a scan does not see a row whose
//!   insert is not committed, so the copy would not bring it.
//!
//! Rows the starter holds are thus always the rows the others hold; a copy
//! started again (its source failed, or refused) only copies them again.
//! Tables created after the starter was admitted need no copy: every write
//! to them was planned on a state that has the starter in the chain.
//!
//! ## Flow
//! The starter copies one fragment at a time: `CopyRequest` to the acting
//! primary, which answers `CopyRows` batches of at most
//! `COPY_BATCH_ROWS_MAX` rows; each is acknowledged by `CopyNext`, which
//! also releases the batch's locks. When every fragment replica is copied,
//! the runtime tells the president (`NodeCopied`), which makes the node a
//! started member.
//!
//! Copies answer by node id, and each incarnation numbers its copies from
//! 1, so a copy serves only the incarnation that asked for it
//! (`CopyRequest::starter_incarnation`): it ends at the first installed
//! state that lists that incarnation as starting no more, and a request
//! that reaches a state listing a newer one is dropped unanswered. A state
//! may be skipped, so "no more starting" may come as a newer incarnation
//! still starting: the old copy's next batch then went to the new
//! incarnation, which took it for the answer to its own first copy and
//! held that fragment without the rows sent before (seed 753208).

use std::collections::VecDeque;

use protocol::{CopyNext, CopyRequest, CopyRows, Message, NodeId};
use schema::row::{AttrInfoReader, AttrInfoWriter};
use schema::{Error, ErrorCode};
use storage::engine::{
    OperationKind as EngineKind, OperationRequest, Outcome, ReadMode, ScanBound, ScanRequest,
    TransactionId,
};

use super::{QueryHandler, Waiting};
use crate::routing::Routing;

/// Rows one `CopyRows` carries at most, rows sent by key counted
/// `1 / BY_KEY_ROWS_PER_PACED_ROW` each: the rows of a batch stay locked at
/// the copying replica for one round trip, so a write to one of them waits
/// that long at most.
pub const COPY_BATCH_ROWS_MAX: u32 = 128;
/// Rows one `CopyRows` carries unless `set_copy_batch_rows` says
/// otherwise (`NodeRecoveryCopyBatchRows`). A batch is produced and
/// applied in one turn of each node's event loop, and a write whose hop
/// lands behind it waits that long: `shoal bench failover` on 2 cores put
/// the write p99 during a restart at 2.0-3.0x idle with 128 rows and
/// 1.5-2.0x with 32, at the same copy time.
pub const COPY_BATCH_ROWS_DEFAULT: u32 = 32;
/// Bytes of rows one `CopyRows` carries at most (about; a batch always
/// holds at least one row).
pub const COPY_BATCH_BYTES_MAX: u32 = 256 * 1024;
/// Rows per second a copy sends at most unless `set_copy_rows_per_second`
/// says otherwise (`NodeRecoveryCopyRowsPerSecond`): the copy shares the
/// copying node's thread and its links with the foreground, so an
/// unthrottled copy takes the writes' latency to several times idle. At
/// this rate 2,000,000 rows (1 GB of 512-byte rows) copy in 20 s.
pub const COPY_ROWS_PER_SECOND_DEFAULT: u64 = 100_000;
/// Rows sent by key that cost the copy's pace one row: a key is a few
/// bytes to send and one lookup to apply, a whole row a row's bytes and a
/// write with every index (1/16 is a guess on the safe side; `shoal bench
/// restart` measures the node restart that uses it).
pub const BY_KEY_ROWS_PER_PACED_ROW: u64 = 16;
/// How long a starter waits before it asks again for a copy that failed.
pub const COPY_RETRY_DELAY_MS: u64 = 100;
/// Marks a batch result whose rows partly wait and partly failed.
const FAILED_WITH_WAITS: u32 = 1 << 31;
/// A copy whose source has sent nothing for this long is asked for again
/// (the request or a batch may have been lost with a connection; a source
/// waiting that long for a lock or a transaction is rare, and a copy
/// asked for again only copies rows again).
pub const COPY_SILENCE_MS_MAX: u64 = 5_000;

/// A fragment's rows restored by a node restart, by primary key (its
/// AttrInfo).
pub(super) type RestoredRows = crate::maps::Map<Vec<u8>, RestoredRow>;

pub(super) struct RestoredRow {
    pub gci: u32,
    /// AttrInfo of every column.
    pub row: Vec<u8>,
    /// A copy named it by key (it stays, for a copy started again).
    pub named: bool,
}

/// Heap bytes a row put aside takes: its key and row, and about as much
/// again for the map's entry and the two allocations.
pub(super) fn restored_row_bytes(key: &[u8], row: &[u8]) -> u64 {
    const ENTRY_OVERHEAD_BYTES: u64 = 96;
    key.len() as u64 + row.len() as u64 + ENTRY_OVERHEAD_BYTES
}

/// Restored rows no copy named: deleted while the node was down.
fn unnamed(rows: &RestoredRows) -> u64 {
    rows.values().filter(|row| !row.named).count() as u64
}

/// Node recovery progress of a starting node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStatus {
    pub fragments_copied: u32,
    pub fragments_to_copy: u32,
    pub rows_copied: u64,
    /// Every fragment replica is copied.
    pub done: bool,
}

/// The starter's side.
pub(super) struct CopyIn {
    /// This node's incarnation, which each `CopyRequest` names.
    incarnation: u64,
    /// Fragment replicas (table, fragment) still to copy, in order.
    pending: VecDeque<(u32, u32)>,
    current: Option<Current>,
    status: CopyStatus,
    next_copy: u64,
    /// A failed copy is asked for again at this time.
    retry_at_ms: Option<u64>,
    /// When the source of the current copy was last heard from (or the
    /// copy was asked for).
    heard_ms: u64,
    /// The batch applied in part: copied rows still waiting for a lock
    /// here, and whether the source sends more after it.
    batch: Option<PendingBatch>,
}

impl CopyIn {
    /// Gives the current copy up: its fragment is copied again, first
    /// (the rows already here are rows the source holds too).
    fn restart_current(&mut self) {
        if let Some(current) = self.current.take() {
            self.batch = None;
            self.pending.push_front((current.table, current.fragment));
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct PendingBatch {
    copy: u64,
    rows_waiting: u32,
    finished: bool,
    failed: bool,
}

#[derive(Debug, Clone, Copy)]
struct Current {
    table: u32,
    fragment: u32,
    source: NodeId,
    copy: u64,
}

impl CopyOut {
    /// The rows of the batch being read as the copy's pace counts them: a
    /// row by key is `1 / BY_KEY_ROWS_PER_PACED_ROW` of one.
    fn paced_rows(&self) -> u64 {
        let whole = u64::from(self.rows) - self.by_key;
        whole + self.by_key.div_ceil(BY_KEY_ROWS_PER_PACED_ROW)
    }
}

/// The copying replica's side, one per starter.
pub(super) struct CopyOut {
    copy: u64,
    /// The incarnation of the starter that asked for the copy: the only
    /// one it serves (`CopyRequest::starter_incarnation`).
    starter_incarnation: u64,
    table: u32,
    fragment: u32,
    engine_table: u32,
    /// Rows last written before this GCI go by key (`CopyRequest::since_gci`).
    since_gci: u32,
    /// Rows of the batch being read that go by key.
    by_key: u64,
    /// Holds the shared locks of the batch in flight.
    transaction: TransactionId,
    scan: Option<u32>,
    /// Where the scan goes on when it is opened again: it closes while
    /// the starter applies a batch if it must wait for a lock, so the
    /// copy never waits for a lock while it holds others.
    cursor: Option<(usize, u32)>,
    token: u64,
    /// Transactions that were working on the fragment here when the copy
    /// began: it reads nothing until they have ended.
    barrier: Vec<u64>,
    buffer: Vec<u8>,
    rows: u32,
    awaiting_ack: bool,
    finished: bool,
    /// When the copy last sent a batch or was acknowledged.
    progress_ms: u64,
    /// The copy's pace (`set_copy_rows_per_second`): the time, in
    /// microseconds of the node's clock, until which the rows sent so far
    /// use up its rate.
    paced_until_us: u64,
    /// An acknowledged copy waits until then to read its next batch.
    resume_at_ms: Option<u64>,
}

impl QueryHandler {
    /// Node recovery progress while this node is starting.
    pub fn copy_status(&self) -> Option<CopyStatus> {
        self.copy_in.as_ref().map(|copy| copy.status)
    }

    /// Rows a copy batch this node sends holds at most (1 to
    /// `COPY_BATCH_ROWS_MAX`): fewer rows are held locked per round trip,
    /// at the cost of more round trips.
    pub fn set_copy_batch_rows(&mut self, rows: u32) {
        self.copy_batch_rows = rows.clamp(1, COPY_BATCH_ROWS_MAX);
    }

    /// Rows per second each copy this node runs sends at most (at least
    /// one).
    pub fn set_copy_rows_per_second(&mut self, rows: u64) {
        self.copy_rows_per_second = rows.max(1);
    }

    /// When the next paced copy may read its next batch.
    pub(super) fn copy_resume_at_ms(&self) -> Option<u64> {
        self.copies_out
            .values()
            .filter_map(|copy| copy.resume_at_ms)
            .min()
    }

    /// Reads the next batch of every paced copy whose pause is over.
    pub(super) fn resume_paced_copies(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        let mut due: Vec<NodeId> = self
            .copies_out
            .iter()
            .filter(|(_, copy)| copy.resume_at_ms.is_some_and(|at| at <= now_ms))
            .map(|(starter, _)| *starter)
            .collect();
        due.sort_unstable();
        for starter in due {
            if let Some(copy) = self.copies_out.get_mut(&starter) {
                copy.resume_at_ms = None;
            }
            self.run_copy_out(now_ms, starter, out);
        }
    }

    /// Copies this node runs for starting nodes.
    pub fn copies_out(&self) -> usize {
        self.copies_out.len()
    }

    /// Lines about node recovery for the node's log (not problems: a copy
    /// that failed is asked for again).
    pub fn take_copy_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.copy_log)
    }

    /// Whether the replica of (table, fragment) here is still being copied.
    pub fn is_copying(&self, table: u32, fragment: u32) -> bool {
        self.fragments
            .get(&(table, fragment))
            .is_some_and(|replica| replica.copying)
    }

    /// The copy bookkeeping of a newly installed state (called by
    /// `install`, which sends nothing; `start_copies` sends).
    pub(super) fn install_copies(&mut self, routing: &Routing) {
        self.starting_replicas.clear();
        self.copy_sources.clear();
        self.starting_incarnations.clear();
        for node in 0..=NodeId::MAX {
            if routing.is_starting(node) {
                self.starting_incarnations
                    .insert(node, routing.incarnation(node));
            }
        }
        let starting = routing.is_starting(self.node);
        for route in routing.tables() {
            for (index, fragment) in route.fragments.iter().enumerate() {
                if !fragment.replicas.contains(&self.node) {
                    continue;
                }
                let key = (route.id, index as u32);
                let newest_join = fragment
                    .replicas
                    .iter()
                    .filter(|node| **node != self.node)
                    .filter_map(|node| self.joined_at.get(node))
                    .map(|(_, at)| *at)
                    .max()
                    .unwrap_or(0);
                if let Some(replica) = self.fragments.get_mut(&key) {
                    replica.newest_join = newest_join;
                }
                let others: Vec<NodeId> = fragment
                    .replicas
                    .iter()
                    .copied()
                    .filter(|node| *node != self.node && routing.is_starting(*node))
                    .collect();
                if !others.is_empty() {
                    self.starting_replicas.insert(key, others);
                }
                if starting
                    && let Some(source) = routing
                        .live_replicas(route, index as u32)
                        .first()
                        .copied()
                        .filter(|node| *node != self.node && routing.is_started(*node))
                {
                    self.copy_sources.insert(key, source);
                }
            }
        }
        // A copy ends when the incarnation it serves is starting no more:
        // it failed, or it finished. This node may have skipped the state
        // that removed a failed starter and installed one that admits its
        // next incarnation: that one numbers its copies from 1 again, and
        // would take the old copy's batches, sent to its node, for the
        // answers to its own (seed 753208).
        let starting_incarnations = &self.starting_incarnations;
        let mut ended: Vec<NodeId> = self
            .copies_out
            .iter()
            .filter(|(starter, copy)| {
                starting_incarnations.get(*starter) != Some(&copy.starter_incarnation)
            })
            .map(|(starter, _)| *starter)
            .collect();
        ended.sort_unstable();
        for starter in ended {
            if routing.is_live(starter)
                && routing.incarnation(starter) != self.copies_out[&starter].starter_incarnation
            {
                self.counters.copies_of_replaced_incarnations_ended += 1;
            }
            self.end_copy_out(starter);
        }
        if !starting {
            // Started: what a restore kept aside is copied or was deleted.
            self.restore_for_copy_pending = false;
            if let Some(aside) = self.restored_aside.take() {
                self.counters.restored_rows_dropped += aside.values().map(unnamed).sum::<u64>();
            }
            self.full_copies.clear();
            if self.copy_in.take().is_some() || self.fragments.values().any(|r| r.copying) {
                // Started (or out of the cluster, with no fragments left).
                for replica in self.fragments.values_mut() {
                    replica.copying = false;
                }
            }
            return;
        }
        match &mut self.copy_in {
            None => {
                let mut pending: Vec<(u32, u32)> = self.fragments.keys().copied().collect();
                pending.sort_unstable();
                for key in &pending {
                    self.fragments.get_mut(key).expect("listed").copying = true;
                }
                self.copy_in = Some(CopyIn {
                    incarnation: routing.incarnation(self.node),
                    status: CopyStatus {
                        fragments_to_copy: pending.len() as u32,
                        ..CopyStatus::default()
                    },
                    pending: pending.into(),
                    current: None,
                    next_copy: 1,
                    retry_at_ms: None,
                    heard_ms: 0,
                    batch: None,
                });
            }
            Some(copy_in) => {
                let fragments = &self.fragments;
                let before = copy_in.pending.len();
                copy_in.pending.retain(|key| fragments.contains_key(key));
                let mut dropped = (before - copy_in.pending.len()) as u32;
                if let Some(current) = copy_in.current
                    && !fragments.contains_key(&(current.table, current.fragment))
                {
                    copy_in.current = None;
                    copy_in.batch = None;
                    dropped += 1;
                }
                // A dropped table needs no copy.
                copy_in.status.fragments_to_copy -= dropped;
            }
        }
    }

    /// After an install: answers copy requests that waited for it, and
    /// starts (or starts again, when its source failed) this node's copy.
    /// Then runs what the install freed: a copy to a node that left, or
    /// work of a dropped fragment, released locks that operations here
    /// wait for, and nothing else may come to run them.
    pub fn start_copies(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        let queued = std::mem::take(&mut self.queued_copies);
        for request in queued {
            self.on_copy_request(now_ms, request, out);
        }
        self.drive_copy_in(now_ms, out);
        self.drain_completions(now_ms, out);
    }

    pub(super) fn copy_retry_at_ms(&self) -> Option<u64> {
        let copy = self.copy_in.as_ref()?;
        match copy.current {
            Some(_) => Some(copy.heard_ms + COPY_SILENCE_MS_MAX),
            None => copy.retry_at_ms,
        }
    }

    pub(super) fn retry_copy(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        let Some(copy_in) = &mut self.copy_in else {
            return;
        };
        if copy_in.current.is_some() && now_ms >= copy_in.heard_ms + COPY_SILENCE_MS_MAX {
            copy_in.restart_current();
            self.counters.copies_restarted += 1;
            self.drive_copy_in(now_ms, out);
        } else if copy_in.retry_at_ms.is_some_and(|at| at <= now_ms) {
            copy_in.retry_at_ms = None;
            self.drive_copy_in(now_ms, out);
        }
    }

    fn drive_copy_in(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        let Some(copy_in) = &mut self.copy_in else {
            return;
        };
        if let Some(current) = copy_in.current {
            let key = (current.table, current.fragment);
            if self.copy_sources.get(&key) == Some(&current.source) {
                return;
            }
            // Its source failed (or stopped being the primary): copy the
            // fragment again from the new one.
            copy_in.restart_current();
            self.counters.copies_restarted += 1;
        }
        // The copies ask for rows since the restore's GCI, and the rows
        // they name by key must be aside: they wait for the restore.
        if copy_in.retry_at_ms.is_some() || self.restore_for_copy_pending {
            return;
        }
        while let Some(key) = copy_in.pending.front().copied() {
            if !self.fragments.contains_key(&key) {
                copy_in.pending.pop_front();
                continue;
            }
            // No started replica: the node group has lost its data and the
            // cluster stops; nothing to copy from meanwhile.
            let Some(source) = self.copy_sources.get(&key).copied() else {
                return;
            };
            copy_in.pending.pop_front();
            let copy = copy_in.next_copy;
            copy_in.next_copy += 1;
            copy_in.heard_ms = now_ms;
            copy_in.current = Some(Current {
                table: key.0,
                fragment: key.1,
                source,
                copy,
            });
            out.push((
                source,
                Message::CopyRequest(CopyRequest {
                    starter: self.node,
                    starter_incarnation: copy_in.incarnation,
                    copy,
                    table: key.0,
                    fragment: key.1,
                    generation: self.position.0,
                    version: self.position.1,
                    since_gci: self.copy_since_gci(key),
                }),
            ));
            return;
        }
        if copy_in.current.is_none() && !copy_in.status.done {
            copy_in.status.done = true;
        }
    }

    pub(super) fn on_copy_rows(
        &mut self,
        now_ms: u64,
        rows: CopyRows,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let Some(copy_in) = &mut self.copy_in else {
            return;
        };
        let Some(current) = copy_in.current.filter(|current| current.copy == rows.copy) else {
            // An answer to a copy given up (its source failed).
            return;
        };
        copy_in.heard_ms = now_ms;
        let key = (current.table, current.fragment);
        let node = self.node;
        let next = |more| {
            (
                current.source,
                Message::CopyNext(CopyNext {
                    starter: node,
                    copy: current.copy,
                    more,
                }),
            )
        };
        let Some(replica) = self.fragments.get(&key).copied() else {
            // The table was dropped meanwhile.
            copy_in.current = None;
            out.push(next(false));
            self.drive_copy_in(now_ms, out);
            return;
        };
        if rows.failed {
            copy_in.restart_current();
            copy_in.retry_at_ms = Some(now_ms + COPY_RETRY_DELAY_MS);
            self.counters.copies_restarted += 1;
            return;
        }
        let (rows_waiting, failed) = match self.apply_copied_rows(
            now_ms,
            key,
            current.copy,
            replica.engine_table,
            &rows.rows,
        ) {
            Ok(waiting) => (
                waiting & !FAILED_WITH_WAITS,
                waiting & FAILED_WITH_WAITS != 0,
            ),
            Err(error) => {
                // Most likely DataMemory is full here: the node cannot
                // hold its replicas. It tries again; the others serve on.
                self.copy_log.push(format!(
                    "copying fragment {} of table {} from node {}: {error}; trying again",
                    key.1, key.0, current.source
                ));
                (0, true)
            }
        };
        let copy_in = self.copy_in.as_mut().expect("checked above");
        copy_in.batch = Some(PendingBatch {
            copy: current.copy,
            rows_waiting,
            finished: rows.finished,
            failed,
        });
        self.finish_batch(now_ms, out);
    }

    /// Once every row of the batch is written: acknowledges it (which
    /// releases its locks at the source), and when it was the last, the
    /// fragment is copied; a batch that could not be written starts the
    /// fragment's copy again.
    fn finish_batch(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        let Some(copy_in) = &mut self.copy_in else {
            return;
        };
        let Some(batch) = copy_in.batch.filter(|batch| batch.rows_waiting == 0) else {
            return;
        };
        copy_in.batch = None;
        let Some(current) = copy_in.current.filter(|current| current.copy == batch.copy) else {
            return;
        };
        let key = (current.table, current.fragment);
        out.push((
            current.source,
            Message::CopyNext(CopyNext {
                starter: self.node,
                copy: current.copy,
                more: !batch.finished && !batch.failed,
            }),
        ));
        if batch.failed {
            copy_in.restart_current();
            copy_in.retry_at_ms = Some(now_ms + COPY_RETRY_DELAY_MS);
            self.counters.copies_restarted += 1;
            return;
        }
        if batch.finished {
            copy_in.current = None;
            copy_in.status.fragments_copied += 1;
            self.counters.fragments_copied += 1;
            if let Some(replica) = self.fragments.get_mut(&key) {
                replica.copying = false;
            }
            // What it restored and the copy did not name was deleted
            // while the node was down.
            if let Some(aside) = self.restored_aside.as_mut()
                && let Some(rows) = aside.remove(&key)
            {
                self.counters.restored_rows_dropped += unnamed(&rows);
            }
            self.drive_copy_in(now_ms, out);
        }
    }

    /// A copied row that waited for a lock here was written (or its wait
    /// timed out, and the batch's copy starts again).
    pub(super) fn copied_row_done(
        &mut self,
        now_ms: u64,
        (transaction, gci): (TransactionId, u32),
        copy: u64,
        result: Result<(), ErrorCode>,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        match result {
            Ok(()) => {
                self.commit_copied_row(transaction, gci);
                self.counters.rows_copy_skipped_locked += 1;
                self.counters.rows_copied += 1;
            }
            Err(code) => {
                if self.engine.has_transaction(transaction) {
                    self.abort_work(transaction);
                }
                self.copy_log.push(format!(
                    "a copied row waited for a lock too long ({code}): the fragment is copied \
                     again"
                ));
                if let Some(batch) = self
                    .copy_in
                    .as_mut()
                    .and_then(|c| c.batch.as_mut())
                    .filter(|batch| batch.copy == copy)
                {
                    batch.failed = true;
                }
            }
        }
        // A row of a copy given up (its source failed) counts for nothing.
        if let Some(copy_in) = self.copy_in.as_mut()
            && let Some(batch) = copy_in.batch.as_mut().filter(|batch| batch.copy == copy)
        {
            copy_in.status.rows_copied += 1;
            assert!(
                batch.rows_waiting > 0,
                "a copied row waited outside its batch"
            );
            batch.rows_waiting -= 1;
        }
        self.finish_batch(now_ms, out);
    }

    /// Commits a copied row with the GCI its source gave it, so the
    /// replicas agree on it (a later node restart copies by it).
    fn commit_copied_row(&mut self, transaction: TransactionId, gci: u32) {
        // The row's write is its transaction's only operation and nothing
        // of it waits any more: prepare and commit cannot fail.
        self.engine
            .prepare(transaction)
            .and_then(|()| self.engine.commit(transaction, gci))
            .expect("a copied row commits");
    }

    /// Writes a batch of copied rows, each in an engine transaction of its
    /// own: at once where no transaction holds the row here, else once
    /// the holders end (`copied_row_done`). A row sent by its key is the
    /// one this node restored (`restore_for_copy`); if that is missing or
    /// of another GCI, the fragment is copied again whole. Returns how
    /// many wait, with `FAILED_WITH_WAITS` when the batch could not be
    /// written in full (it is copied again).
    fn apply_copied_rows(
        &mut self,
        now_ms: u64,
        fragment: (u32, u32),
        copy: u64,
        engine_table: u32,
        rows: &[u8],
    ) -> Result<u32, Error> {
        let primary_key = self
            .engine
            .table_def(engine_table)
            .ok_or(ErrorCode::NoSuchTable)?
            .primary_key
            .clone();
        let truncated = || Error::new(ErrorCode::WrongValue, "truncated copied row");
        let mut key = Vec::new();
        let mut waiting = 0;
        let mut rest = rows;
        while !rest.is_empty() {
            let (length, after) = rest.split_first_chunk::<4>().ok_or_else(truncated)?;
            let length = u32::from_le_bytes(*length) as usize;
            if after.len() < length || length < 5 {
                return Err(truncated());
            }
            let entry = &after[..length];
            rest = &after[length..];
            let gci = u32::from_le_bytes(entry[..4].try_into().expect("4 bytes"));
            let (form, attrinfo) = (entry[4], &entry[5..]);
            let row: Result<&[u8], String> = match form {
                protocol::COPIED_ROW_WHOLE => {
                    key.clear();
                    let mut writer = AttrInfoWriter::new(&mut key);
                    for entry in AttrInfoReader::new(attrinfo) {
                        let (column, value) = entry?;
                        if primary_key.contains(&column) {
                            writer.push(column, value);
                        }
                    }
                    // A row written since the restore replaces what it
                    // restored (a copy started again sends it whole again:
                    // its GCI only grows). A row named by key stays: a copy
                    // started again names it again.
                    if let Some(rows) = self
                        .restored_aside
                        .as_mut()
                        .and_then(|aside| aside.get_mut(&fragment))
                    {
                        rows.remove(&key);
                    }
                    Ok(attrinfo)
                }
                protocol::COPIED_ROW_BY_KEY => match self
                    .restored_aside
                    .as_mut()
                    .and_then(|aside| aside.get_mut(&fragment))
                    .and_then(|rows| rows.get_mut(attrinfo))
                {
                    Some(restored) if restored.gci == gci => {
                        self.counters.rows_copied_by_key += 1;
                        key.clear();
                        key.extend_from_slice(attrinfo);
                        restored.named = true;
                        Ok(&restored.row)
                    }
                    Some(restored) => Err(format!(
                        "the row it restored is of GCI {}, the source's of {gci}",
                        restored.gci
                    )),
                    None => Err(format!("it restored no row of GCI {gci} with that key")),
                },
                other => Err(format!("a copied row of unknown form {other}")),
            };
            let row = match row {
                Ok(row) => row,
                Err(failure) => {
                    // Copied whole from the start: the rows already written
                    // are rows the source holds too.
                    self.full_copies.insert(fragment);
                    self.counters.copies_by_key_refused += 1;
                    let error = Error::new(
                        ErrorCode::WrongValue,
                        format!(
                            "copying fragment {} of table {} by key: {failure}; it is copied whole",
                            fragment.1, fragment.0
                        ),
                    );
                    if waiting == 0 {
                        return Err(error);
                    }
                    self.copy_log.push(error.detail.into_owned());
                    return Ok(waiting | FAILED_WITH_WAITS);
                }
            };
            let transaction = self.next_engine_transaction;
            self.next_engine_transaction += 1;
            let token = self.next_token;
            self.next_token += 1;
            let mut ignored = Vec::new();
            match self.engine.execute(
                now_ms,
                &OperationRequest {
                    transaction,
                    token,
                    table: engine_table,
                    kind: EngineKind::Write,
                    key: &key,
                    values: row,
                    columns: &[],
                },
                &mut ignored,
            ) {
                Ok(Outcome::Done) => {
                    self.commit_copied_row(transaction, gci);
                    self.counters.rows_copied += 1;
                    if let Some(copy_in) = self.copy_in.as_mut() {
                        copy_in.status.rows_copied += 1;
                    }
                }
                Ok(Outcome::Waiting) => {
                    self.waiting
                        .insert(token, Waiting::CopiedRow(transaction, fragment, copy, gci));
                    waiting += 1;
                }
                Err(error) => {
                    if self.engine.has_transaction(transaction) {
                        self.abort_work(transaction);
                    }
                    if waiting == 0 {
                        return Err(error);
                    }
                    // Rows already waiting still end; the batch fails then.
                    self.copy_log.push(format!("writing a copied row: {error}"));
                    return Ok(waiting | FAILED_WITH_WAITS);
                }
            }
        }
        Ok(waiting)
    }

    /// The GCI a copy of `fragment` asks for rows from (`CopyRequest::since_gci`).
    fn copy_since_gci(&self, fragment: (u32, u32)) -> u32 {
        if self.restored_aside.is_some()
            && !self.restored_aside_given_up
            && !self.full_copies.contains(&fragment)
        {
            self.restored_since_gci
        } else {
            0
        }
    }

    /// A node restart from this node's own disk: the restore that follows
    /// (`restore_changes`) keeps each fragment's rows aside, by key, and
    /// its copies then ask only for the rows written in global checkpoint
    /// `since_gci` or later; the others come by key and are taken from
    /// here. Rows the copy never names were deleted meanwhile and go with
    /// the fragment's copy. The fragments themselves start empty, as in
    /// any copy, so the copy's argument for exactness holds unchanged.
    pub fn restore_for_copy(&mut self, since_gci: u32) {
        assert!(
            self.fragments.values().all(|replica| replica.copying),
            "a restore for a copy before the copy"
        );
        self.restored_aside = Some(crate::maps::Map::default());
        self.restored_since_gci = since_gci;
        self.restored_aside_bytes = 0;
        self.restored_aside_given_up = false;
        self.restore_for_copy_pending = true;
    }

    /// The rows a restore put aside outgrew their bound: they are dropped,
    /// the rest of the restore keeps none, and every fragment is copied
    /// whole (as from a node without a disk).
    pub(super) fn give_up_restored_aside(&mut self) {
        self.restored_aside_given_up = true;
        if let Some(aside) = self.restored_aside.as_mut() {
            aside.clear();
        }
        self.counters.restores_for_copy_given_up += 1;
        self.copy_log.push(format!(
            "the rows restored from this node's disk took over {} bytes (DataMemory): they \
             are dropped and every fragment is copied whole",
            self.restored_aside_bytes_max
        ));
    }

    /// Bounds the heap the rows of a node restart's restore take
    /// (DataMemory's size by default).
    pub fn set_restored_aside_bytes_max(&mut self, bytes_max: u64) {
        self.restored_aside_bytes_max = bytes_max;
    }

    /// Whether a restore for a copy (`restore_for_copy`) is under way: no
    /// copy starts until `restored_for_copy`. An install that ends the
    /// node's start ends it too (the rows aside are dropped).
    pub fn restoring_for_copy(&self) -> bool {
        self.restore_for_copy_pending
    }

    /// The restore for a copy is done: the copies may start
    /// (`start_copies`).
    pub fn restored_for_copy(&mut self) {
        assert!(
            self.restored_aside.is_some(),
            "a restore for a copy ended without its rows aside"
        );
        self.restore_for_copy_pending = false;
    }

    // ---- the copying replica ----

    pub(super) fn on_copy_request(
        &mut self,
        now_ms: u64,
        request: CopyRequest,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        if self.position < (request.generation, request.version) {
            // The state that made the starter starting is not installed
            // here yet: until it is, writes may still bypass the starter.
            // A request replaces one of the same or an older incarnation.
            if self.queued_copies.iter().any(|r| {
                r.starter == request.starter && r.starter_incarnation > request.starter_incarnation
            }) {
                return;
            }
            self.queued_copies.retain(|r| r.starter != request.starter);
            self.queued_copies.push(request);
            return;
        }
        match self.starting_incarnations.get(&request.starter) {
            Some(incarnation) if *incarnation == request.starter_incarnation => {}
            listed => {
                // The installed state, at or after the one the request was
                // made on, lists that incarnation as starting no more: it
                // failed (or finished). An answer would reach whichever
                // incarnation of the node is connected now, and a newer
                // one could take it for the answer to its own copy of that
                // number; a copy it runs must not end either.
                if listed.is_some_and(|incarnation| *incarnation > request.starter_incarnation) {
                    self.counters.copies_of_replaced_incarnations_ended += 1;
                }
                return;
            }
        }
        let key = (request.table, request.fragment);
        let replica = self.fragments.get(&key).copied();
        let valid = self
            .starting_replicas
            .get(&key)
            .is_some_and(|starters| starters.contains(&request.starter))
            && replica.is_some_and(|replica| !replica.copying);
        self.end_copy_out(request.starter);
        let Some(replica) = replica.filter(|_| valid) else {
            out.push((request.starter, failed_rows(request.copy)));
            return;
        };
        let transaction = self.next_engine_transaction;
        self.next_engine_transaction += 1;
        let token = self.next_token;
        self.next_token += 1;
        let mut barrier: Vec<u64> = self
            .work
            .keys()
            .filter(|work| (work.1, work.2) == key)
            .map(|work| work.0)
            .collect();
        barrier.sort_unstable();
        self.copies_out.insert(
            request.starter,
            CopyOut {
                copy: request.copy,
                starter_incarnation: request.starter_incarnation,
                table: request.table,
                fragment: request.fragment,
                engine_table: replica.engine_table,
                since_gci: request.since_gci,
                by_key: 0,
                transaction,
                scan: None,
                cursor: None,
                token,
                barrier,
                buffer: Vec::new(),
                rows: 0,
                awaiting_ack: false,
                finished: false,
                progress_ms: now_ms,
                paced_until_us: now_ms * 1_000,
                resume_at_ms: None,
            },
        );
        self.run_copy_out(now_ms, request.starter, out);
    }

    pub(super) fn on_copy_next(
        &mut self,
        now_ms: u64,
        next: CopyNext,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let Some(copy) = self.copies_out.get_mut(&next.starter) else {
            return;
        };
        if copy.copy != next.copy || !copy.awaiting_ack {
            return;
        }
        copy.awaiting_ack = false;
        copy.progress_ms = now_ms;
        let (transaction, finished) = (copy.transaction, copy.finished);
        // The batch is applied at the starter: its locks go.
        if self.engine.has_transaction(transaction) {
            self.abort_work(transaction);
        }
        if !next.more || finished {
            self.end_copy_out(next.starter);
            return;
        }
        if let Err(error) = self.engine.begin_transaction(transaction) {
            self.fail_copy_out(next.starter, &error, out);
            return;
        }
        let copy = self
            .copies_out
            .get_mut(&next.starter)
            .expect("checked above");
        if copy.paced_until_us > now_ms * 1_000 {
            // The rows sent so far used up the rate until then.
            self.counters.copy_pauses += 1;
            copy.resume_at_ms = Some(copy.paced_until_us.div_ceil(1_000));
            return;
        }
        self.run_copy_out(now_ms, next.starter, out);
    }

    /// Every copy that may go on now (a transaction it waited for ended).
    pub(super) fn advance_copies_out(&mut self, now_ms: u64, out: &mut Vec<(NodeId, Message)>) {
        let mut starters: Vec<NodeId> = self
            .copies_out
            .iter()
            .filter(|(_, copy)| !copy.barrier.is_empty())
            .map(|(starter, _)| *starter)
            .collect();
        starters.sort_unstable();
        for starter in starters {
            self.run_copy_out(now_ms, starter, out);
        }
    }

    /// Reads and sends the next batch, unless the copy waits (for its
    /// barrier, a row lock, or the starter's acknowledgement).
    pub(super) fn run_copy_out(
        &mut self,
        now_ms: u64,
        starter: NodeId,
        out: &mut Vec<(NodeId, Message)>,
    ) {
        let work = &self.work;
        let Some(copy) = self.copies_out.get_mut(&starter) else {
            return;
        };
        if copy.awaiting_ack || copy.resume_at_ms.is_some() {
            return;
        }
        let (table, fragment) = (copy.table, copy.fragment);
        copy.barrier
            .retain(|transaction| work.contains_key(&(*transaction, table, fragment)));
        if !copy.barrier.is_empty() {
            return;
        }
        let scan = match copy.scan {
            Some(scan) => scan,
            None => {
                let columns: Vec<u16> = match self.engine.table_def(copy.engine_table) {
                    Some(def) => (0..def.columns.len() as u16).collect(),
                    None => Vec::new(),
                };
                let opened = self
                    .engine
                    .open_scan(&ScanRequest {
                        transaction: copy.transaction,
                        token: copy.token,
                        table: copy.engine_table,
                        index: None,
                        lower: ScanBound::Unbounded,
                        upper: ScanBound::Unbounded,
                        descending: false,
                        filter: &[],
                        columns: &columns,
                        mode: ReadMode::Shared,
                        gci: true,
                    })
                    .and_then(|scan| match copy.cursor {
                        Some(cursor) => self.engine.seek_scan(scan, cursor).map(|()| scan),
                        None => Ok(scan),
                    });
                match opened {
                    Ok(scan) => {
                        copy.scan = Some(scan);
                        scan
                    }
                    Err(error) => {
                        self.fail_copy_out(starter, &error, out);
                        return;
                    }
                }
            }
        };
        loop {
            // A batch holds `copy_batch_rows` rows' worth of pace: rows sent
            // by key count 1/16 each, so a batch of them carries many more
            // (a million rows by key at 32 a batch spent most of a node
            // restart in round trips).
            let rows_left =
                u32::try_from(u64::from(self.copy_batch_rows).saturating_sub(copy.paced_rows()))
                    .expect("below the batch's rows");
            let bytes_left = COPY_BATCH_BYTES_MAX.saturating_sub(copy.buffer.len() as u32);
            let cursor = self.engine.scan_cursor(scan);
            self.copy_scratch.clear();
            let batch = match self.engine.scan_next(
                now_ms,
                scan,
                rows_left,
                bytes_left,
                &mut self.copy_scratch,
            ) {
                Ok(batch) => {
                    let primary_key = self
                        .engine
                        .table_def(copy.engine_table)
                        .map_or(&[][..], |def| &def.primary_key);
                    copy.by_key += copied_rows(
                        &self.copy_scratch,
                        copy.since_gci,
                        primary_key,
                        &mut copy.buffer,
                    );
                    batch
                }
                Err(error) if error.code == ErrorCode::LockWaitTimeout && copy.rows == 0 => {
                    // A transaction held a row longer than a lock wait may
                    // last: wait for it again from that row (the copy
                    // holds no lock, so it blocks nobody meanwhile).
                    self.counters.copy_lock_waits_timed_out += 1;
                    copy.cursor = cursor;
                    copy.scan = None;
                    if let Err(error) = self.engine.close_scan(scan) {
                        panic!("node {}: closing a copy scan: {error}", self.node);
                    }
                    continue_later(&mut self.engine, copy.transaction);
                    self.run_copy_out(now_ms, starter, out);
                    return;
                }
                Err(error) => {
                    self.fail_copy_out(starter, &error, out);
                    return;
                }
            };
            copy.rows += batch.rows;
            if batch.waiting && copy.rows == 0 {
                self.waiting.insert(copy.token, Waiting::Copy(starter));
                return;
            }
            if batch.waiting {
                // Send what it holds first and wait with no lock held: a
                // writer of a held row may be the one it would wait for.
                copy.cursor = self.engine.scan_cursor(scan);
                copy.scan = None;
                if let Err(error) = self.engine.close_scan(scan) {
                    panic!("node {}: closing a copy scan: {error}", self.node);
                }
            }
            if batch.waiting
                || batch.finished
                || copy.paced_rows() >= u64::from(self.copy_batch_rows)
                || copy.buffer.len() as u32 >= COPY_BATCH_BYTES_MAX
            {
                let finished = batch.finished && !batch.waiting;
                copy.finished = finished;
                copy.awaiting_ack = true;
                copy.progress_ms = now_ms;
                // The pause ends on a whole millisecond, later than the
                // rate asks: up to one millisecond of that is made up.
                let whole = u64::from(copy.rows) - copy.by_key;
                let paced = copy.paced_rows();
                copy.paced_until_us = copy
                    .paced_until_us
                    .max((now_ms * 1_000).saturating_sub(1_000))
                    + paced * 1_000_000 / self.copy_rows_per_second;
                self.counters.copy_batches_sent += 1;
                self.counters.copy_rows_sent += whole;
                self.counters.copy_rows_sent_by_key += copy.by_key;
                copy.rows = 0;
                copy.by_key = 0;
                out.push((
                    starter,
                    Message::CopyRows(CopyRows {
                        copy: copy.copy,
                        rows: std::mem::take(&mut copy.buffer),
                        finished,
                        failed: false,
                    }),
                ));
                return;
            }
        }
    }

    fn fail_copy_out(&mut self, starter: NodeId, error: &Error, out: &mut Vec<(NodeId, Message)>) {
        let Some(copy) = self.copies_out.get(&starter) else {
            return;
        };
        self.copy_log.push(format!(
            "copy of fragment {} of table {} to node {starter} failed: {error}; it asks again",
            copy.fragment, copy.table
        ));
        out.push((starter, failed_rows(copy.copy)));
        self.end_copy_out(starter);
    }

    /// Forgets a copy: its scan closes and its locks go.
    pub(super) fn end_copy_out(&mut self, starter: NodeId) {
        let Some(copy) = self.copies_out.remove(&starter) else {
            return;
        };
        self.waiting.remove(&copy.token);
        if let Some(scan) = copy.scan
            && let Err(error) = self.engine.close_scan(scan)
        {
            panic!(
                "node {}: closing the copy scan for node {starter}: {error}",
                self.node
            );
        }
        if self.engine.has_transaction(copy.transaction) {
            self.abort_work(copy.transaction);
        }
    }

    /// A copy in or out of this node has made no progress for longer than
    /// `older_than_ms`.
    pub fn copy_stalled(&self, now_ms: u64, older_than_ms: u64) -> bool {
        let copy_in_stalled = self.copy_in.as_ref().is_some_and(|copy_in| {
            copy_in.current.is_some() && now_ms.saturating_sub(copy_in.heard_ms) > older_than_ms
        });
        copy_in_stalled
            || self
                .copies_out
                .values()
                .any(|copy| now_ms.saturating_sub(copy.progress_ms) > older_than_ms)
    }

    /// The copies running here and what each waits for, and the waits of
    /// this query handler, for the node's log when a call hangs.
    pub fn describe_waits(&self, now_ms: u64) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(copy_in) = &self.copy_in {
            lines.push(format!(
                "copying in: current {:?}, batch {:?}, last heard {} ms ago, {} fragment(s) \
                 pending, retry at {:?}",
                copy_in.current,
                copy_in.batch,
                now_ms.saturating_sub(copy_in.heard_ms),
                copy_in.pending.len(),
                copy_in.retry_at_ms,
            ));
        }
        let mut starters: Vec<&NodeId> = self.copies_out.keys().collect();
        starters.sort_unstable();
        for starter in starters {
            let copy = &self.copies_out[starter];
            lines.push(format!(
                "copying fragment {} of table {} to node {starter}: barrier {:x?}, scan open {}, \
                 {} row(s) in the batch, awaiting acknowledgement {}, finished {}, paused until \
                 {:?}, last progress {} ms ago",
                copy.fragment,
                copy.table,
                copy.barrier,
                copy.scan.is_some(),
                copy.rows,
                copy.awaiting_ack,
                copy.finished,
                copy.resume_at_ms,
                now_ms.saturating_sub(copy.progress_ms),
            ));
        }
        let mut waits: Vec<String> = self
            .waiting
            .values()
            .map(|waiting| match waiting {
                Waiting::Key(request) => format!(
                    "operation {} of transaction {:#x} on table {} fragment {} waits for a lock",
                    request.operation, request.transaction, request.table, request.fragment
                ),
                Waiting::Scan(scan) => format!("scan {scan:x?} waits for a lock"),
                Waiting::Copy(starter) => format!("the copy to node {starter} waits for a lock"),
                Waiting::CopiedRow(_, fragment, copy, _) => {
                    format!("a row of copy {copy} (fragment {fragment:?}) waits for a lock")
                }
            })
            .collect();
        waits.sort_unstable();
        lines.extend(waits);
        lines
    }

    /// A dropped fragment's copies end (its starter drops it too).
    pub(super) fn cancel_copies_of_fragment(&mut self, key: (u32, u32)) {
        let mut starters: Vec<NodeId> = self
            .copies_out
            .iter()
            .filter(|(_, copy)| (copy.table, copy.fragment) == key)
            .map(|(starter, _)| *starter)
            .collect();
        starters.sort_unstable();
        for starter in starters {
            self.end_copy_out(starter);
        }
    }

    /// A starting replica of the request's fragment that its chain does
    /// not name (the write was planned on an older state). Checked only
    /// on replicas that hold the fragment's rows: a starting replica is
    /// last in the chain, after every started one.
    pub(super) fn missing_starting_replica(
        &self,
        request: &protocol::KeyRequest,
    ) -> Option<NodeId> {
        let key = (request.table, request.fragment);
        if self.fragments.get(&key).is_some_and(|r| r.copying) {
            return None;
        }
        self.starting_replicas
            .get(&key)?
            .iter()
            .copied()
            .find(|starter| !request.chain.contains(starter))
    }
}

/// Ends the copy transaction's locks and begins it again under the same id.
fn continue_later(engine: &mut storage::Engine, transaction: TransactionId) {
    if engine.has_transaction(transaction) {
        engine
            .abort(transaction)
            .expect("the engine holds the copy transaction");
    }
    engine
        .begin_transaction(transaction)
        .expect("an ended transaction's id begins again");
}

fn failed_rows(copy: u64) -> Message {
    Message::CopyRows(CopyRows {
        copy,
        rows: Vec::new(),
        finished: false,
        failed: true,
    })
}

/// Turns scan output with GCIs (`ScanRequest::gci`) into `CopyRows` rows,
/// appended to `out`: a row last written before `since_gci` (and after
/// GCI 0, which says nothing) by its primary key, any other whole.
/// Returns how many went by key.
fn copied_rows(scanned: &[u8], since_gci: u32, primary_key: &[u16], out: &mut Vec<u8>) -> u64 {
    let mut by_key = 0;
    let mut rest = scanned;
    while let Some((length, after)) = rest.split_first_chunk::<4>() {
        let length = u32::from_le_bytes(*length) as usize;
        let (gci, attrinfo) = storage::split_gci(&after[..length]).expect("a scanned row's GCI");
        rest = &after[length..];
        let length_at = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&gci.to_le_bytes());
        if gci != 0 && gci < since_gci {
            out.push(protocol::COPIED_ROW_BY_KEY);
            let mut writer = AttrInfoWriter::new(out);
            for &column in primary_key {
                let value = AttrInfoReader::find(attrinfo, column)
                    .ok()
                    .flatten()
                    .expect("a scanned row has its primary key");
                writer.push(column, value);
            }
            by_key += 1;
        } else {
            out.push(protocol::COPIED_ROW_WHOLE);
            out.extend_from_slice(attrinfo);
        }
        let length = (out.len() - length_at - 4) as u32;
        out[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
    }
    by_key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned_row(out: &mut Vec<u8>, gci: u32, id: i32, value: i64) {
        let mut row = gci.to_le_bytes().to_vec();
        let mut writer = AttrInfoWriter::new(&mut row);
        writer.push(0, Some(&id.to_le_bytes()));
        writer.push(1, Some(&value.to_le_bytes()));
        out.extend_from_slice(&(row.len() as u32).to_le_bytes());
        out.extend_from_slice(&row);
    }

    /// Each copied row: its GCI, its form, its AttrInfo.
    fn entries(rows: &[u8]) -> Vec<(u32, u8, Vec<u8>)> {
        let mut entries = Vec::new();
        let mut rest = rows;
        while let Some((length, after)) = rest.split_first_chunk::<4>() {
            let length = u32::from_le_bytes(*length) as usize;
            let entry = &after[..length];
            let gci = u32::from_le_bytes(entry[..4].try_into().unwrap());
            entries.push((gci, entry[4], entry[5..].to_vec()));
            rest = &after[length..];
        }
        entries
    }

    /// A row last written before the starter's restore point goes by its
    /// primary key alone; one written in that GCI or later, or of an
    /// unknown GCI (0), goes whole; each keeps its GCI.
    #[test]
    fn rows_written_before_the_restore_point_go_by_key() {
        let mut scanned = Vec::new();
        scanned_row(&mut scanned, 6, 1, 10);
        scanned_row(&mut scanned, 7, 2, 20);
        scanned_row(&mut scanned, 0, 3, 30);
        scanned_row(&mut scanned, 9, 4, 40);
        let mut out = Vec::new();
        assert_eq!(copied_rows(&scanned, 7, &[0], &mut out), 1);
        let sent = entries(&out);
        let mut key = Vec::new();
        AttrInfoWriter::new(&mut key).push(0, Some(&1i32.to_le_bytes()));
        assert_eq!(sent[0], (6, protocol::COPIED_ROW_BY_KEY, key));
        for (entry, (gci, id)) in sent[1..].iter().zip([(7, 2), (0, 3), (9, 4)]) {
            assert_eq!((entry.0, entry.1), (gci, protocol::COPIED_ROW_WHOLE));
            let value = AttrInfoReader::find(&entry.2, 1).unwrap().unwrap().unwrap();
            assert_eq!(value, &(i64::from(id) * 10).to_le_bytes());
        }
        // A starter that restored nothing gets every row whole.
        out.clear();
        assert_eq!(copied_rows(&scanned, 0, &[0], &mut out), 0);
        assert!(
            entries(&out)
                .iter()
                .all(|e| e.1 == protocol::COPIED_ROW_WHOLE)
        );
    }
}
