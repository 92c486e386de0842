//! Scans: full partition scans and ordered-index range scans, with a pushed
//! filter, a column projection, batches bounded by rows and bytes, and a
//! cursor that resumes where the last batch stopped.
//!
//! ## Output (format version 1)
//! Each row of a batch is appended to the caller's buffer as a little-endian
//! `u32` byte length followed by that many bytes of AttrInfo holding the
//! requested columns in the requested order.
//!
//! ## Cursors
//! A full scan walks the row slab page by page; its cursor is a slot
//! address, stable while rows come and go. An index scan collects entries
//! from the B+tree a few at a time and remembers the last entry it handed
//! out, `(key, row)`; the next batch seeks strictly past it, so entries
//! removed between batches are simply not seen and none is seen twice.
//!
//! ## Visibility and locks
//! A scan sees what a primary-key read of its transaction would see. With a
//! lock mode it locks each row it returns (held to the end of the
//! transaction); when a lock must wait, the batch ends with `waiting` set,
//! a `Completion` with the scan's token follows when the lock is granted (or
//! times out), and the next `scan_next` resumes at that row.

use super::locks::{Acquired, LockMode, NO_RECORD, Pending};
use super::table::{self, COMMITTED, COPY, IN_USE};
use super::{Engine, ReadMode, TableId, TransactionId};
use crate::filter::Filter;
use crate::memory::ChunkRef;
use crate::ordered_index::{Bound, Collected, KeySource};
use schema::key::encode_attrinfo_key;
use schema::row::project;
use schema::table::ColumnId;
use schema::{Error, ErrorCode};

/// Entries an index scan takes from the B+tree at a time.
const INDEX_COLLECT_BATCH: usize = 256;
/// How far ahead of the row being visited an index scan prefetches its slot;
/// the variable part is prefetched half as far ahead, once its slot is in cache.
/// Measured with `shoal bench storage` at 8, 12, 16, 32 and 64: 8 to 12
/// were best, 64 the worst (14 M rows/s against 23 M).
const PREFETCH_DISTANCE: usize = 12;

/// The parts a fragment's row slots fall in for local checkpoints (NDB
/// 7.6's partial LCP): a partial checkpoint writes every row of some parts
/// and only the rows changed since the last checkpoint of the others, and a
/// restore takes each part from the newest checkpoint that wrote it whole
/// on. 64, so a set of parts is a `u64`.
pub const CHECKPOINT_PARTS: u32 = 64;
/// Consecutive slots that fall in one part: small enough that a fragment
/// of a few dozen rows spans several parts (the simulator's do), large
/// enough that a part's rows are near each other in memory.
pub const CHECKPOINT_PART_SLOTS: u32 = 8;
/// Slots a checkpoint scan looks at in one batch at most, whatever it
/// takes: a partial checkpoint may pass many unchanged rows between two it
/// writes, and each batch runs on the node's loop.
pub const CHECKPOINT_SLOTS_PER_BATCH: u32 = 4096;

/// The checkpoint part of the slot at `slot_index` of the page at
/// `page_position` of a fragment's row slab. Slot addresses are stable
/// while the fragment lives (rows never move, pages go back only with the
/// whole table), so a row stays in its part for as long as the node runs;
/// a restart restores rows into new slots, so its first checkpoint writes
/// every part whole.
#[inline]
pub fn checkpoint_part(page_position: usize, slot_index: u32) -> u16 {
    let slot = page_position as u64 * u64::from(crate::memory::slab::CHUNKS_PER_PAGE_MAX)
        + u64::from(slot_index);
    ((slot / u64::from(CHECKPOINT_PART_SLOTS)) % u64::from(CHECKPOINT_PARTS)) as u16
}

/// Which rows a local checkpoint's scan takes (`select_for_checkpoint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointSelection {
    /// The parts whose every row is taken, a bit each.
    pub whole_parts: u64,
    /// A row of another part is taken when its GCI is this or later.
    pub changed_since_gci: u32,
}

impl CheckpointSelection {
    /// Every row.
    pub const ALL: CheckpointSelection = CheckpointSelection {
        whole_parts: u64::MAX,
        changed_since_gci: 0,
    };

    #[inline]
    fn takes(&self, part: u16, gci: u32) -> bool {
        self.whole_parts & (1 << part) != 0 || gci >= self.changed_since_gci
    }
}

/// One end of an index range, as AttrInfo of a prefix of the index's columns.
#[derive(Debug, Clone, Copy)]
pub enum ScanBound<'a> {
    Unbounded,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

/// A scan to open.
#[derive(Debug, Clone, Copy)]
pub struct ScanRequest<'a> {
    pub transaction: TransactionId,
    /// Echoed in the `Completion` when a lock the scan waits for is decided.
    pub token: u64,
    pub table: TableId,
    /// The ordered index to range-scan (its position in the table's
    /// `ordered_indexes`), or `None` for a full scan.
    pub index: Option<u16>,
    pub lower: ScanBound<'a>,
    pub upper: ScanBound<'a>,
    pub descending: bool,
    /// A filter program (`crate::filter`), or empty for none.
    pub filter: &'a [u8],
    pub columns: &'a [ColumnId],
    pub mode: ReadMode,
    /// Each row's bytes (after its length, which counts them) begin with
    /// the row's GCI, a little-endian `u32` (`Engine::commit`'s): node
    /// recovery's copy and the local checkpoints read it.
    pub gci: bool,
}

/// What one `scan_next` produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanBatch {
    pub rows: u32,
    /// No rows are left: the scan can be closed.
    pub finished: bool,
    /// The batch stopped at a row whose lock must be waited for.
    pub waiting: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BoundKind {
    Unbounded,
    Inclusive,
    Exclusive,
}

pub(crate) struct ScanRecord {
    transaction: TransactionId,
    pub token: u64,
    table: TableId,
    index: Option<usize>,
    descending: bool,
    mode: ReadMode,
    columns: Vec<ColumnId>,
    gci: bool,
    checkpoint: Option<CheckpointSelection>,
    filter: Option<Filter>,
    lower: Vec<u8>,
    lower_kind: BoundKind,
    upper: Vec<u8>,
    upper_kind: BoundKind,
    /// Full scan: the page position and slot index to look at next.
    page_position: usize,
    slot_index: u32,
    /// Index scan: the last entry handed out.
    last_key: Vec<u8>,
    last_row: ChunkRef,
    refs: Vec<ChunkRef>,
    /// Entries of `refs` (by position) that passed, with the version to copy.
    matched: Vec<(u32, ChunkRef)>,
    finished: bool,
    /// The row whose lock the scan waits for, revisited first on resume.
    waiting_row: ChunkRef,
    pub lock_granted: bool,
    pub failed: Option<ErrorCode>,
}

fn bound<'k>(key: &'k [u8], kind: BoundKind) -> Bound<'k> {
    match kind {
        BoundKind::Unbounded => Bound::Unbounded,
        BoundKind::Inclusive => Bound::Prefix {
            key,
            inclusive: true,
        },
        BoundKind::Exclusive => Bound::Prefix {
            key,
            inclusive: false,
        },
    }
}

enum Step {
    Skip,
    Emit(ChunkRef),
    Wait,
}

impl Engine {
    /// Opens a scan. Validates the filter, the index and the bounds once.
    pub fn open_scan(&mut self, request: &ScanRequest<'_>) -> Result<u32, Error> {
        let table = self.table(request.table)?;
        let def = &table.def;
        for &column in request.columns {
            if usize::from(column) >= def.columns.len() {
                return Err(Error::new(
                    ErrorCode::NoSuchColumn,
                    format!("column id {column}"),
                ));
            }
        }
        let filter = if request.filter.is_empty() {
            None
        } else {
            Some(Filter::compile(def, request.filter)?)
        };
        let index = match request.index {
            Some(position) if usize::from(position) >= table.ordered.len() => {
                return Err(Error::new(
                    ErrorCode::WrongKey,
                    format!("table has no ordered index #{position}"),
                ));
            }
            Some(position) => Some(usize::from(position)),
            None => None,
        };
        let encode = |bound: ScanBound<'_>| -> Result<(Vec<u8>, BoundKind), Error> {
            let (bytes, kind) = match bound {
                ScanBound::Unbounded => return Ok((Vec::new(), BoundKind::Unbounded)),
                ScanBound::Inclusive(bytes) => (bytes, BoundKind::Inclusive),
                ScanBound::Exclusive(bytes) => (bytes, BoundKind::Exclusive),
            };
            let Some(position) = index else {
                return Err(Error::new(
                    ErrorCode::WrongKey,
                    "bounds need an ordered index",
                ));
            };
            let mut key = Vec::new();
            encode_attrinfo_key(
                def,
                &def.ordered_indexes[position].columns,
                bytes,
                true,
                &mut key,
            )?;
            Ok((key, kind))
        };
        let (lower, lower_kind) = encode(request.lower)?;
        let (upper, upper_kind) = encode(request.upper)?;
        let slot = self
            .scans
            .iter()
            .position(Option::is_none)
            .ok_or(ErrorCode::TooManyScans)?;
        if request.mode != ReadMode::Committed {
            self.transactions.get_or_begin(request.transaction)?;
        }
        self.scans[slot] = Some(ScanRecord {
            transaction: request.transaction,
            token: request.token,
            table: request.table,
            index,
            descending: request.descending,
            mode: request.mode,
            columns: request.columns.to_vec(),
            gci: request.gci,
            checkpoint: None,
            filter,
            lower,
            lower_kind,
            upper,
            upper_kind,
            page_position: 0,
            slot_index: 0,
            last_key: Vec::new(),
            last_row: ChunkRef::NONE,
            refs: Vec::with_capacity(INDEX_COLLECT_BATCH),
            matched: Vec::with_capacity(INDEX_COLLECT_BATCH),
            finished: false,
            waiting_row: ChunkRef::NONE,
            lock_granted: false,
            failed: None,
        });
        self.tables[request.table as usize]
            .as_mut()
            .unwrap()
            .scans_open += 1;
        Ok(slot as u32)
    }

    /// Where a full scan stands: the slot it looks at next (the row it
    /// waits for, if it waits). `None` for an index scan or no such scan.
    /// Slot addresses are stable while rows come and go, so a scan closed
    /// and opened again at this cursor (`seek_scan`) sees every row the
    /// first one had not handed out yet, and rows inserted behind the
    /// cursor meanwhile are not seen, as if it had never closed.
    pub fn scan_cursor(&self, scan: u32) -> Option<(usize, u32)> {
        let record = self.scans.get(scan as usize)?.as_ref()?;
        record
            .index
            .is_none()
            .then_some((record.page_position, record.slot_index))
    }

    /// Moves a full scan that has handed out nothing yet to `cursor` (from
    /// `scan_cursor`).
    pub fn seek_scan(&mut self, scan: u32, cursor: (usize, u32)) -> Result<(), Error> {
        let record = self
            .scans
            .get_mut(scan as usize)
            .and_then(Option::as_mut)
            .ok_or(ErrorCode::NoSuchScan)?;
        if record.index.is_some() || !record.waiting_row.is_none() {
            return Err(Error::new(
                ErrorCode::WrongTransactionState,
                "only a full scan that waits for nothing can seek",
            ));
        }
        (record.page_position, record.slot_index) = cursor;
        Ok(())
    }

    /// Makes a committed full scan that has handed out nothing yet a local
    /// checkpoint's: it hands out only the rows `selection` takes, each
    /// row's bytes beginning with its part (a little-endian `u16`) and its
    /// GCI (`CHANGE_ROW_OF_PART`'s form), and a batch looks at
    /// `CHECKPOINT_SLOTS_PER_BATCH` slots at most (it may then hold no row
    /// and not be finished).
    pub fn select_for_checkpoint(
        &mut self,
        scan: u32,
        selection: CheckpointSelection,
    ) -> Result<(), Error> {
        let record = self
            .scans
            .get_mut(scan as usize)
            .and_then(Option::as_mut)
            .ok_or(ErrorCode::NoSuchScan)?;
        if record.index.is_some() || record.mode != ReadMode::Committed || !record.gci {
            return Err(Error::new(
                ErrorCode::WrongTransactionState,
                "only a committed full scan with GCIs can take a checkpoint's rows",
            ));
        }
        record.checkpoint = Some(selection);
        Ok(())
    }

    /// Closes a scan. Locks it took stay with its transaction.
    pub fn close_scan(&mut self, scan: u32) -> Result<(), Error> {
        let record = self
            .scans
            .get_mut(scan as usize)
            .and_then(Option::take)
            .ok_or(ErrorCode::NoSuchScan)?;
        // A lock wait still queued for the scan is cancelled.
        if !record.waiting_row.is_none() && !record.lock_granted && record.failed.is_none() {
            self.cancel_scan_wait(&record, scan);
        }
        if let Some(table) = self.tables[record.table as usize].as_mut() {
            table.scans_open -= 1;
        }
        Ok(())
    }

    fn cancel_scan_wait(&mut self, record: &ScanRecord, scan: u32) {
        let Some(transaction) = self.transactions.lookup(record.transaction) else {
            return;
        };
        let table = self.tables[record.table as usize].as_ref().unwrap();
        let (head, _) = table::header(&table.rows, &self.pool, record.waiting_row);
        if let Some(own) = self.own_record(head, transaction)
            && self.records[own as usize].pending == (Pending::Scan { scan })
        {
            self.records[own as usize].pending = Pending::None;
            if self.records[own as usize].held == LockMode::None {
                if self.release_record(own) {
                    self.grant_waiters(record.table, record.waiting_row);
                }
            } else {
                self.records[own as usize].wanted = LockMode::None;
            }
        }
    }

    /// Appends up to `rows_max` rows (and about `bytes_max` bytes; always at
    /// least one row) to `out`.
    pub fn scan_next(
        &mut self,
        now_ms: u64,
        scan: u32,
        rows_max: u32,
        bytes_max: u32,
        out: &mut Vec<u8>,
    ) -> Result<ScanBatch, Error> {
        if self.waits.head().is_some() {
            self.expire_lock_waits(now_ms);
        }
        let mut record = self
            .scans
            .get_mut(scan as usize)
            .and_then(Option::take)
            .ok_or(ErrorCode::NoSuchScan)?;
        let result = self.scan_batch(
            now_ms,
            scan,
            &mut record,
            rows_max.max(1),
            bytes_max as usize,
            out,
        );
        self.scans[scan as usize] = Some(record);
        result
    }

    fn scan_batch(
        &mut self,
        now_ms: u64,
        scan: u32,
        record: &mut ScanRecord,
        rows_max: u32,
        bytes_max: usize,
        out: &mut Vec<u8>,
    ) -> Result<ScanBatch, Error> {
        if let Some(error) = record.failed.take() {
            record.waiting_row = ChunkRef::NONE;
            return Err(error.into());
        }
        let start_bytes = out.len();
        let mut batch = ScanBatch {
            rows: 0,
            finished: false,
            waiting: false,
        };
        if !record.waiting_row.is_none() {
            if !record.lock_granted {
                batch.waiting = true;
                return Ok(batch);
            }
            // The lock came: the row is looked at again from the top.
            record.lock_granted = false;
        }
        match record.index {
            None => self.scan_full(
                now_ms,
                scan,
                record,
                rows_max,
                bytes_max,
                start_bytes,
                out,
                &mut batch,
            ),
            Some(position) => self.scan_index(
                now_ms,
                scan,
                record,
                position,
                rows_max,
                bytes_max,
                start_bytes,
                out,
                &mut batch,
            ),
        }
        batch.finished = record.finished;
        Ok(batch)
    }

    #[allow(clippy::too_many_arguments)]
    fn scan_full(
        &mut self,
        now_ms: u64,
        scan: u32,
        record: &mut ScanRecord,
        rows_max: u32,
        bytes_max: usize,
        start_bytes: usize,
        out: &mut Vec<u8>,
        batch: &mut ScanBatch,
    ) {
        let mut looked_at = 0;
        loop {
            let table = self.tables[record.table as usize].as_ref().unwrap();
            let pages = table.rows.pages();
            if record.page_position >= pages.len() {
                record.finished = true;
                return;
            }
            if record.slot_index >= table.rows.chunks_cut(record.page_position) {
                record.page_position += 1;
                record.slot_index = 0;
                continue;
            }
            let slot = ChunkRef::new(pages[record.page_position], record.slot_index);
            if let Some(selection) = record.checkpoint {
                if looked_at == CHECKPOINT_SLOTS_PER_BATCH {
                    return;
                }
                looked_at += 1;
                let part = checkpoint_part(record.page_position, record.slot_index);
                // A committed read hands out the row's own slot, so its
                // GCI is the one read here (a free slot's is never used).
                if !selection.takes(part, table::gci(&table.rows, &self.pool, slot)) {
                    record.slot_index += 1;
                    continue;
                }
            }
            match self.visit(now_ms, scan, record, slot, None) {
                Step::Wait => {
                    batch.waiting = true;
                    return;
                }
                Step::Skip => {}
                Step::Emit(version) => self.emit(record, version, out, batch),
            }
            record.slot_index += 1;
            if batch.rows >= rows_max || out.len() - start_bytes >= bytes_max {
                return;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn scan_index(
        &mut self,
        now_ms: u64,
        scan: u32,
        record: &mut ScanRecord,
        position: usize,
        rows_max: u32,
        bytes_max: usize,
        start_bytes: usize,
        out: &mut Vec<u8>,
        batch: &mut ScanBatch,
    ) {
        loop {
            if record.finished {
                return;
            }
            // Collect the next entries past the last one handed out.
            record.refs.clear();
            let collected = {
                let table = self.tables[record.table as usize].as_ref().unwrap();
                let keys = table::RowKeys {
                    def: &table.def,
                    rows: &table.rows,
                    parts: &table.parts,
                    columns: &table.def.ordered_indexes[position].columns,
                };
                let (first, last) = if record.descending {
                    (
                        bound(&record.upper, record.upper_kind),
                        bound(&record.lower, record.lower_kind),
                    )
                } else {
                    (
                        bound(&record.lower, record.lower_kind),
                        bound(&record.upper, record.upper_kind),
                    )
                };
                let start = if record.last_row.is_none() {
                    first
                } else {
                    Bound::After {
                        key: &record.last_key,
                        row: record.last_row,
                    }
                };
                table.ordered[position].collect(
                    &self.pool,
                    start,
                    last,
                    record.descending,
                    &keys,
                    &mut record.refs,
                    INDEX_COLLECT_BATCH,
                )
            };
            let refs = std::mem::take(&mut record.refs);
            if record.mode == ReadMode::Committed {
                let stopped = self.scan_entries_committed(
                    record,
                    position,
                    &refs,
                    rows_max,
                    bytes_max,
                    start_bytes,
                    out,
                    batch,
                );
                record.refs = refs;
                if stopped {
                    return;
                }
                if collected == Collected::Exhausted {
                    record.finished = true;
                    return;
                }
                continue;
            }
            let mut stopped = false;
            let mut last_visited = None;
            for (at, &entry) in refs.iter().enumerate() {
                self.prefetch_ahead(record.table, &refs, at);
                match self.visit(now_ms, scan, record, entry, Some(position)) {
                    Step::Wait => {
                        batch.waiting = true;
                        stopped = true;
                        break;
                    }
                    Step::Skip => {}
                    Step::Emit(version) => self.emit(record, version, out, batch),
                }
                last_visited = Some(entry);
                if batch.rows >= rows_max || out.len() - start_bytes >= bytes_max {
                    stopped = true;
                    break;
                }
            }
            // The next collect resumes past the last entry handed out; its
            // row is still in place, as nothing else ran during this call.
            if let Some(entry) = last_visited {
                self.remember_entry(record, position, entry);
            }
            record.refs = refs;
            if stopped {
                return;
            }
            if collected == Collected::Exhausted {
                record.finished = true;
                return;
            }
        }
    }

    /// Visits collected entries without locks, in two passes: the first
    /// runs the filter on every entry (prefetching a few ahead) and prefetches
    /// the whole of each row that matches; the second copies the matches out,
    /// by which time their cache lines have arrived. Returns whether the batch
    /// is full. Nothing else runs in between, so the versions stay valid.
    #[allow(clippy::too_many_arguments)]
    fn scan_entries_committed(
        &mut self,
        record: &mut ScanRecord,
        position: usize,
        refs: &[ChunkRef],
        rows_max: u32,
        bytes_max: usize,
        start_bytes: usize,
        out: &mut Vec<u8>,
        batch: &mut ScanBatch,
    ) -> bool {
        let rows_left = (rows_max - batch.rows) as usize;
        let mut matched = std::mem::take(&mut record.matched);
        matched.clear();
        let mut visited = 0;
        for (at, &entry) in refs.iter().enumerate() {
            self.prefetch_ahead(record.table, refs, at);
            visited = at + 1;
            // Without locks `visit` never waits, so its clock and scan id
            // (used only to queue a lock wait) do not matter here.
            if let Step::Emit(version) = self.visit(0, 0, record, entry, Some(position)) {
                self.prefetch_row(record.table, version);
                matched.push((at as u32, version));
                if matched.len() == rows_left {
                    break;
                }
            }
        }
        let mut last_handed_out = visited.checked_sub(1);
        let mut full = matched.len() == rows_left;
        for (number, &(at, version)) in matched.iter().enumerate() {
            self.emit(record, version, out, batch);
            if out.len() - start_bytes >= bytes_max && number + 1 < matched.len() {
                // Entries after this one are visited again next time.
                last_handed_out = Some(at as usize);
                full = true;
                break;
            }
        }
        full |= out.len() - start_bytes >= bytes_max;
        if let Some(at) = last_handed_out {
            self.remember_entry(record, position, refs[at]);
        }
        record.matched = matched;
        full
    }

    /// Prefetches every cache line of a row version that is about to be copied.
    #[inline]
    fn prefetch_row(&self, table_id: TableId, version: ChunkRef) {
        const CACHE_LINE_BYTES: usize = 64;
        let table = self.tables[table_id as usize].as_ref().unwrap();
        let bytes = table.rows.bytes(&self.pool, version);
        for line in bytes.chunks(CACHE_LINE_BYTES).skip(1) {
            crate::memory::prefetch(line);
        }
        if let Some(var) = table::var_ref(&table.def, bytes) {
            for line in table.parts.part(&self.pool, var).chunks(CACHE_LINE_BYTES) {
                crate::memory::prefetch(line);
            }
        }
    }

    /// Prefetches the slots (and variable parts) of entries a little ahead of `at`.
    #[inline]
    fn prefetch_ahead(&self, table_id: TableId, refs: &[ChunkRef], at: usize) {
        let table = self.tables[table_id as usize].as_ref().unwrap();
        if let Some(&ahead) = refs.get(at + PREFETCH_DISTANCE) {
            crate::memory::prefetch(table.rows.bytes(&self.pool, ahead));
        }
        if table.def.layout.var_columns > 0
            && let Some(&ahead) = refs.get(at + PREFETCH_DISTANCE / 2)
            && let Some(var) = table::var_ref(&table.def, table.rows.bytes(&self.pool, ahead))
            && table::header(&table.rows, &self.pool, ahead).1 & IN_USE != 0
        {
            crate::memory::prefetch(table.parts.part(&self.pool, var));
        }
    }

    fn remember_entry(&self, record: &mut ScanRecord, position: usize, entry: ChunkRef) {
        let table = self.tables[record.table as usize].as_ref().unwrap();
        let keys = table::RowKeys {
            def: &table.def,
            rows: &table.rows,
            parts: &table.parts,
            columns: &table.def.ordered_indexes[position].columns,
        };
        record.last_key.clear();
        keys.key(&self.pool, entry, &mut record.last_key);
        record.last_row = entry;
    }

    /// Decides what a scan does with one slot (full scan) or index entry.
    fn visit(
        &mut self,
        now_ms: u64,
        scan: u32,
        record: &mut ScanRecord,
        slot: ChunkRef,
        index: Option<usize>,
    ) -> Step {
        let table = self.tables[record.table as usize].as_ref().unwrap();
        let (head, flags) = table::header(&table.rows, &self.pool, slot);
        if flags & IN_USE == 0 {
            return Step::Skip;
        }
        let version = if flags & COPY != 0 {
            // A pending version: only its own transaction sees it, and only
            // through its own index entries.
            let owner = &self.records[head as usize];
            if index.is_none()
                || self.transactions.lookup(record.transaction) != Some(owner.transaction)
                || owner.image != slot
            {
                return Step::Skip;
            }
            slot
        } else if head == NO_RECORD {
            if flags & COMMITTED == 0 {
                return Step::Skip;
            }
            slot
        } else {
            let own = self
                .transactions
                .lookup(record.transaction)
                .and_then(|t| self.own_record(head, t));
            if let (Some(own), Some(position)) = (own, index) {
                // The transaction's own version has another key for this
                // index: it is seen through the copy's entry, not this one.
                if self.records[own as usize].changed & (1 << position) != 0 {
                    return Step::Skip;
                }
            }
            let visible = match own {
                Some(own) => self.records[own as usize].visible(flags),
                None => (flags & COMMITTED != 0).then_some(slot),
            };
            match visible {
                Some(version) => version,
                None => return Step::Skip,
            }
        };
        if let Some(filter) = &record.filter {
            let view = table::row_view(&table.def, &table.rows, &table.parts, &self.pool, version);
            if !filter.matches(&table.def, view) {
                return Step::Skip;
            }
        }
        if record.mode == ReadMode::Committed || flags & COPY != 0 {
            return Step::Emit(version);
        }
        self.lock_for_scan(now_ms, scan, record, slot)
    }

    fn lock_for_scan(
        &mut self,
        now_ms: u64,
        scan: u32,
        record: &mut ScanRecord,
        row: ChunkRef,
    ) -> Step {
        let Some(transaction) = self.transactions.lookup(record.transaction) else {
            record.failed = Some(ErrorCode::NoSuchTransaction);
            return Step::Wait;
        };
        let mode = if record.mode == ReadMode::Shared {
            LockMode::Shared
        } else {
            LockMode::Exclusive
        };
        let was_waiting = record.waiting_row == row;
        match self.acquire(now_ms, transaction, record.table, row, mode) {
            Ok(Acquired::Granted { record: own, .. }) => {
                record.waiting_row = ChunkRef::NONE;
                let table = self.tables[record.table as usize].as_ref().unwrap();
                let (_, flags) = table::header(&table.rows, &self.pool, row);
                match self.records[own as usize].visible(flags) {
                    Some(version) => {
                        // The row may have changed while the scan waited.
                        if was_waiting && let Some(filter) = &record.filter {
                            let view = table::row_view(
                                &table.def,
                                &table.rows,
                                &table.parts,
                                &self.pool,
                                version,
                            );
                            if !filter.matches(&table.def, view) {
                                return Step::Skip;
                            }
                        }
                        Step::Emit(version)
                    }
                    None => Step::Skip,
                }
            }
            Ok(Acquired::Waiting { record: own, .. }) => {
                self.records[own as usize].pending = Pending::Scan { scan };
                record.waiting_row = row;
                Step::Wait
            }
            Err(error) => {
                record.failed = Some(error);
                Step::Wait
            }
        }
    }

    #[inline]
    fn emit(
        &self,
        record: &ScanRecord,
        version: ChunkRef,
        out: &mut Vec<u8>,
        batch: &mut ScanBatch,
    ) {
        let table = self.tables[record.table as usize].as_ref().unwrap();
        let view = table::row_view(&table.def, &table.rows, &table.parts, &self.pool, version);
        let length_at = out.len();
        out.extend_from_slice(&[0; 4]);
        if record.checkpoint.is_some() {
            let part = checkpoint_part(record.page_position, record.slot_index);
            out.extend_from_slice(&part.to_le_bytes());
        }
        if record.gci {
            out.extend_from_slice(&table::gci(&table.rows, &self.pool, version).to_le_bytes());
        }
        project(&table.def.layout, view, &record.columns, out);
        let length = (out.len() - length_at - 4) as u32;
        out[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
        batch.rows += 1;
    }
}
