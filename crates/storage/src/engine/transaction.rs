//! Local transactions: the records of a transaction's operations, and the
//! prepare, commit and abort steps that a transaction coordinator drives.
//!
//! Commit applies each record's change and never allocates: a pending
//! update's copy is moved into the row's slot, index entries that pointed at
//! the copy are repointed at the row, the copy's slot is freed. Abort frees
//! what the transaction added. Both release the record's lock and grant the
//! waiters behind it.

use super::locks::{LockMode, NO_RECORD};
use super::table::{self, COMMITTED, IN_USE, Table};
use super::{Engine, TransactionId};
use crate::ordered_index::KeySource;
use schema::{Error, ErrorCode};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A change as `Engine::prepared_changes` writes it: a kind byte, the
/// length of the AttrInfo that follows (u32, little-endian), the AttrInfo.
/// `CHANGE_PUT`: every column of the row's new version (replayed as a
/// `Write`); `CHANGE_DELETE`: the deleted row's primary key.
pub const CHANGE_PUT: u8 = 1;
pub const CHANGE_DELETE: u8 = 2;
/// A row as a local checkpoint holds it: the checkpoint part its slot is
/// in (a little-endian `u16`, `checkpoint_part`), its GCI (a
/// little-endian `u32`, `Engine::commit`'s), then AttrInfo of every
/// column, as a checkpoint scan (`Engine::select_for_checkpoint`) reads
/// it (the part and the GCI count in the length).
pub const CHANGE_ROW_OF_PART: u8 = 3;

/// Splits a row a scan with `ScanRequest::gci` read into its GCI and its
/// AttrInfo.
pub fn split_gci(row: &[u8]) -> Result<(u32, &[u8]), Error> {
    match row.split_first_chunk::<4>() {
        Some((gci, attrinfo)) => Ok((u32::from_le_bytes(*gci), attrinfo)),
        None => Err(Error::new(ErrorCode::WrongValue, "a row without its GCI")),
    }
}

/// A `CHANGE_ROW_OF_PART` change, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowOfPart<'a> {
    pub part: u16,
    pub gci: u32,
    pub attrinfo: &'a [u8],
}

/// Splits a `CHANGE_ROW_OF_PART` change into the row's part, its GCI and
/// its AttrInfo.
pub fn split_row_of_part(change: &[u8]) -> Result<RowOfPart<'_>, Error> {
    match change.split_first_chunk::<6>() {
        Some((head, attrinfo)) => Ok(RowOfPart {
            part: u16::from_le_bytes([head[0], head[1]]),
            gci: u32::from_le_bytes([head[2], head[3], head[4], head[5]]),
            attrinfo,
        }),
        None => Err(Error::new(
            ErrorCode::WrongValue,
            "a checkpoint row without its part and GCI",
        )),
    }
}

/// The changes in `bytes` (as `Engine::prepared_changes` wrote them):
/// each kind and AttrInfo, or an error for bytes that are not whole
/// changes.
pub fn changes(bytes: &[u8]) -> impl Iterator<Item = Result<(u8, &[u8]), Error>> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let truncated = || Error::new(ErrorCode::WrongValue, "a truncated change");
        if rest.len() < 5 {
            rest = &[];
            return Some(Err(truncated()));
        }
        let kind = rest[0];
        let length = u32::from_le_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let known = matches!(kind, CHANGE_PUT | CHANGE_DELETE | CHANGE_ROW_OF_PART);
        if rest.len() < 5 + length || !known {
            rest = &[];
            return Some(Err(if known {
                truncated()
            } else {
                Error::new(ErrorCode::WrongValue, format!("unknown change kind {kind}"))
            }));
        }
        let attrinfo = &rest[5..5 + length];
        rest = &rest[5 + length..];
        Some(Ok((kind, attrinfo)))
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum State {
    Active,
    Prepared,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct TransactionRecord {
    pub id: TransactionId,
    pub first: u32,
    pub state: State,
}

/// Transaction ids are chosen by coordinators and already well spread; a
/// multiply-shift is enough and much cheaper than SipHash.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = (value ^ (value >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The transaction records, and the map from the caller's ids to them. Both
/// are sized at start; the map never grows past its reserved capacity.
pub(crate) struct Transactions {
    records: Vec<TransactionRecord>,
    free: Vec<u32>,
    by_id: HashMap<TransactionId, u32, BuildHasherDefault<IdHasher>>,
}

impl Transactions {
    pub fn new(count: u32) -> Transactions {
        Transactions {
            records: vec![
                TransactionRecord {
                    id: 0,
                    first: NO_RECORD,
                    state: State::Active
                };
                count as usize
            ],
            free: (0..count).rev().collect(),
            by_id: HashMap::with_capacity_and_hasher(count as usize, Default::default()),
        }
    }

    #[inline]
    pub fn lookup(&self, id: TransactionId) -> Option<u32> {
        if id == super::NO_TRANSACTION {
            return None;
        }
        self.by_id.get(&id).copied()
    }

    /// The record of `id`, beginning the transaction if it is new.
    #[inline]
    pub fn get_or_begin(&mut self, id: TransactionId) -> Result<u32, Error> {
        if id == super::NO_TRANSACTION {
            return Err(Error::new(
                ErrorCode::WrongTransactionState,
                "locking reads and writes need a transaction id",
            ));
        }
        if let Some(&index) = self.by_id.get(&id) {
            if self.records[index as usize].state != State::Active {
                return Err(Error::new(
                    ErrorCode::WrongTransactionState,
                    "the transaction is prepared",
                ));
            }
            return Ok(index);
        }
        let index = self.free.pop().ok_or(ErrorCode::TooManyTransactions)?;
        self.records[index as usize] = TransactionRecord {
            id,
            first: NO_RECORD,
            state: State::Active,
        };
        self.by_id.insert(id, index);
        Ok(index)
    }

    pub fn id(&self, index: u32) -> TransactionId {
        self.records[index as usize].id
    }

    pub fn first(&self, index: u32) -> u32 {
        self.records[index as usize].first
    }

    pub fn set_first(&mut self, index: u32, record: u32) {
        self.records[index as usize].first = record;
    }

    pub fn state(&self, index: u32) -> State {
        self.records[index as usize].state
    }

    pub fn set_state(&mut self, index: u32, state: State) {
        self.records[index as usize].state = state;
    }

    fn end(&mut self, index: u32) {
        let record = self.records[index as usize];
        debug_assert_eq!(record.first, NO_RECORD);
        self.by_id.remove(&record.id);
        self.free.push(index);
    }

    pub fn in_use(&self) -> usize {
        self.by_id.len()
    }
}

impl Engine {
    /// The prepare step: the transaction takes no more operations and none of
    /// its operations may still be waiting for a lock.
    pub fn prepare(&mut self, transaction: TransactionId) -> Result<(), Error> {
        let index = self
            .transactions
            .lookup(transaction)
            .ok_or(ErrorCode::NoSuchTransaction)?;
        let mut at = self.transactions.first(index);
        while at != NO_RECORD {
            if self.records[at as usize].waiting() {
                return Err(Error::new(
                    ErrorCode::WrongTransactionState,
                    "an operation still waits for a lock",
                ));
            }
            at = self.records[at as usize].next_in_transaction;
        }
        self.transactions.set_state(index, State::Prepared);
        Ok(())
    }

    /// The commit step: makes every change of a prepared transaction the
    /// committed version, stamped with the global checkpoint `gci` it
    /// commits in (0 if it has none), and releases its locks. Never
    /// allocates or fails once the transaction is prepared.
    pub fn commit(&mut self, transaction: TransactionId, gci: u32) -> Result<(), Error> {
        let index = self.prepared(transaction, "commit needs a prepared transaction")?;
        self.finish(index, |engine, record| engine.commit_record(record, gci));
        Ok(())
    }

    /// The record of `transaction`, which must be prepared (`why` says for
    /// what, in the error).
    fn prepared(&self, transaction: TransactionId, why: &'static str) -> Result<u32, Error> {
        let index = self
            .transactions
            .lookup(transaction)
            .ok_or(ErrorCode::NoSuchTransaction)?;
        if self.transactions.state(index) != State::Prepared {
            return Err(Error::new(ErrorCode::WrongTransactionState, why));
        }
        Ok(index)
    }

    /// The changes a prepared transaction makes when it commits, appended
    /// to `out` in the order it made them, for the redo log (see
    /// `CHANGE_PUT`): a row it inserted or updated as AttrInfo of every
    /// column of its new version, a committed row it deleted as AttrInfo
    /// of its primary key. Rows it only read, and rows it inserted and then
    /// deleted, are not changes. Returns how many were appended.
    pub fn prepared_changes(
        &self,
        transaction: TransactionId,
        out: &mut Vec<u8>,
    ) -> Result<u32, Error> {
        let index = self.prepared(
            transaction,
            "the changes of a transaction are known once it is prepared",
        )?;
        // Records are linked newest first; the log wants them in order.
        let mut order = Vec::new();
        let mut at = self.transactions.first(index);
        while at != NO_RECORD {
            order.push(at);
            at = self.records[at as usize].next_in_transaction;
        }
        let mut count = 0;
        for &record_index in order.iter().rev() {
            let record = self.records[record_index as usize];
            let table = self.tables[record.table as usize]
                .as_ref()
                .expect("a record's table exists");
            let (_, flags) = table::header(&table.rows, &self.pool, record.row);
            // A deleted row by its key, a new version by every column.
            let (kind, version, key_only) = if record.deleted {
                if flags & COMMITTED == 0 {
                    continue;
                }
                (CHANGE_DELETE, record.row, true)
            } else if !record.image.is_none() {
                (CHANGE_PUT, record.image, false)
            } else if record.inserted {
                (CHANGE_PUT, record.row, false)
            } else {
                continue;
            };
            let view = table::row_view(&table.def, &table.rows, &table.parts, &self.pool, version);
            out.push(kind);
            let length_at = out.len();
            out.extend_from_slice(&[0; 4]);
            let layout = &table.def.layout;
            if key_only {
                schema::row::project(layout, view, &table.def.primary_key, out);
            } else {
                let mut writer = schema::AttrInfoWriter::new(out);
                for column in 0..table.def.columns.len() as schema::ColumnId {
                    writer.push(column, view.column(layout, column));
                }
            }
            let length = u32::try_from(out.len() - length_at - 4).expect("a row under 4 GiB");
            out[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
            count += 1;
        }
        Ok(count)
    }

    /// The abort step: undoes every change of the transaction, in any state,
    /// cancels its lock waits and releases its locks.
    pub fn abort(&mut self, transaction: TransactionId) -> Result<(), Error> {
        let index = self
            .transactions
            .lookup(transaction)
            .ok_or(ErrorCode::NoSuchTransaction)?;
        self.finish(index, Engine::abort_record);
        Ok(())
    }

    /// Ends a transaction: applies `settle` (commit or undo) to each of its
    /// records, releases each record's lock, grants the waiters behind it,
    /// and frees the transaction record.
    fn finish(&mut self, index: u32, mut settle: impl FnMut(&mut Engine, u32)) {
        while self.transactions.first(index) != NO_RECORD {
            let record = self.transactions.first(index);
            settle(self, record);
            let (table, row) = (
                self.records[record as usize].table,
                self.records[record as usize].row,
            );
            if self.release_record(record) {
                self.grant_waiters(table, row);
            }
        }
        self.transactions.end(index);
    }

    fn commit_record(&mut self, index: u32, gci: u32) {
        let record = self.records[index as usize];
        let Engine {
            tables,
            pool,
            scratch,
            ..
        } = self;
        let table = tables[record.table as usize].as_mut().unwrap();
        let row = record.row;
        let (_, flags) = table::header(&table.rows, pool, row);
        if record.deleted {
            debug_assert!(record.image.is_none());
            if flags & COMMITTED != 0 || record.inserted {
                let all = table.all_indexes();
                table::index_remove(table, pool, row, all, &mut scratch.key);
            }
            if flags & COMMITTED != 0 {
                table.rows_committed -= 1;
            }
            table::set_flags(&table.rows, pool, row, IN_USE);
        } else {
            if !record.image.is_none() {
                move_image(
                    table,
                    pool,
                    row,
                    record.image,
                    record.changed,
                    &mut scratch.key,
                );
                self.records[index as usize].image = crate::memory::ChunkRef::NONE;
            }
            let table = self.tables[record.table as usize].as_mut().unwrap();
            if record.inserted || !record.image.is_none() {
                if flags & COMMITTED == 0 {
                    table.rows_committed += 1;
                }
                table::set_flags(&table.rows, &mut self.pool, row, IN_USE | COMMITTED);
                table::set_gci(&table.rows, &mut self.pool, row, gci);
            }
        }
        let record = &mut self.records[index as usize];
        record.inserted = false;
        record.deleted = false;
        record.held = LockMode::None;
    }

    fn abort_record(&mut self, index: u32) {
        let record = self.records[index as usize];
        let Engine {
            tables,
            pool,
            scratch,
            ..
        } = self;
        let table = tables[record.table as usize].as_mut().unwrap();
        if !record.image.is_none() {
            drop_image(table, pool, record.image, record.changed, &mut scratch.key);
        }
        if record.inserted {
            let all = table.all_indexes();
            table::index_remove(table, pool, record.row, all, &mut scratch.key);
            table::set_flags(&table.rows, pool, record.row, IN_USE);
        }
        let record = &mut self.records[index as usize];
        record.image = crate::memory::ChunkRef::NONE;
        record.inserted = false;
        record.deleted = false;
        record.held = LockMode::None;
    }
}

/// Makes `image` the row's version in place: index entries of the old key are
/// removed, the copy's bytes and variable part move into the row's slot, and
/// entries that pointed at the copy are repointed at the row.
fn move_image(
    table: &mut Table,
    pool: &mut crate::memory::PagePool,
    row: crate::memory::ChunkRef,
    image: crate::memory::ChunkRef,
    changed: u64,
    key: &mut Vec<u8>,
) {
    table::index_remove(table, pool, row, changed, key);
    table::free_var(&table.def, &table.rows, &mut table.parts, pool, row);
    let slot_bytes = table.rows.chunk_bytes() as usize;
    let (row_page, image_page) = (row.page(), image.page());
    let row_offset = row.index() as usize * slot_bytes;
    let image_offset = image.index() as usize * slot_bytes;
    // Everything after the row's header word moves: the fixed part and the
    // variable part's reference.
    let body = table::HEADER_BYTES;
    if row_page == image_page {
        pool.page_mut(row_page).copy_within(
            image_offset + body..image_offset + slot_bytes,
            row_offset + body,
        );
    } else {
        let (row_bytes, image_bytes) = pool.pages_mut(row_page, image_page);
        row_bytes[row_offset + body..row_offset + slot_bytes]
            .copy_from_slice(&image_bytes[image_offset + body..image_offset + slot_bytes]);
    }
    let Table {
        def,
        rows,
        parts,
        ordered,
        ..
    } = table;
    for (position, index) in ordered.iter_mut().enumerate() {
        if changed & (1 << position) == 0 {
            continue;
        }
        let keys = table::RowKeys {
            def,
            rows,
            parts,
            columns: &def.ordered_indexes[position].columns,
        };
        key.clear();
        keys.key(pool, image, key);
        let replaced = index.replace_row(pool, key, image, row, &keys);
        assert!(replaced, "pending index entry missing at commit");
    }
    // The copy's variable part now belongs to the row; free only the slot.
    table.rows.free(pool, image);
}

/// Frees a pending image and its own index entries.
pub(crate) fn drop_image(
    table: &mut Table,
    pool: &mut crate::memory::PagePool,
    image: crate::memory::ChunkRef,
    changed: u64,
    key: &mut Vec<u8>,
) {
    table::index_remove(table, pool, image, changed, key);
    table.free_version(pool, image);
}
