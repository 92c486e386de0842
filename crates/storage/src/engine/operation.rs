//! Primary-key operations: read, insert, update, write and delete.
//!
//! An operation finds its row through the hash index, takes its lock (or
//! queues for it), then works on the version its transaction sees. Every
//! step that can fail (a value check, a page from DataMemory, an index entry)
//! happens before anything visible changes, or is undone before returning, so
//! a failed operation leaves no trace.

use super::locks::{Acquired, LockMode, NO_RECORD, lock_mode};
use super::table::{self, COMMITTED, COPY, IN_USE, Table};
use super::transaction::drop_image;
use super::{Engine, OperationKind, OperationRequest, Outcome, ReadMode, TransactionId};
use crate::memory::{ChunkRef, PagePool};
use crate::ordered_index::{Bound, Collected};
use schema::key::{encode_attrinfo_key, encode_row_key, key_hash};
use schema::row::project;
use schema::table::ColumnId;
use schema::{Error, ErrorCode, RowView};

/// Finds the row whose primary key encodes to `key`.
#[inline]
fn find_row(
    table: &Table,
    pool: &PagePool,
    hash: u64,
    key: &[u8],
    candidate: &mut Vec<u8>,
) -> Option<ChunkRef> {
    table.hash.find(pool, hash, |slot| {
        table::slot_key(table, pool, None, slot, candidate);
        candidate.as_slice() == key
    })
}

impl Engine {
    /// Runs one primary-key operation. Reads append the requested columns to
    /// `out` as AttrInfo.
    pub fn execute(
        &mut self,
        now_ms: u64,
        request: &OperationRequest<'_>,
        out: &mut Vec<u8>,
    ) -> Result<Outcome, Error> {
        if self.waits.head().is_some() {
            self.expire_lock_waits(now_ms);
        }
        self.write_inserted = false;
        let Engine {
            tables,
            pool,
            scratch,
            ..
        } = self;
        let table = tables
            .get(request.table as usize)
            .and_then(Option::as_ref)
            .ok_or(ErrorCode::NoSuchTable)?;
        scratch.key.clear();
        encode_attrinfo_key(
            &table.def,
            &table.def.primary_key,
            request.key,
            false,
            &mut scratch.key,
        )?;
        let hash = key_hash(&scratch.key);
        let row = find_row(table, pool, hash, &scratch.key, &mut scratch.key_other);

        if request.kind == OperationKind::Read(ReadMode::Committed) {
            let row = row.ok_or(ErrorCode::NoSuchRow)?;
            return self.read_committed(
                request.transaction,
                request.table,
                row,
                request.columns,
                out,
            );
        }
        let transaction = self.transactions.get_or_begin(request.transaction)?;
        let Some(row) = row else {
            return match request.kind {
                OperationKind::Insert | OperationKind::Write => {
                    let inserted =
                        self.insert_new(transaction, request.table, hash, request.values);
                    self.write_inserted = inserted.is_ok();
                    inserted
                }
                _ => Err(ErrorCode::NoSuchRow.into()),
            };
        };
        match self.acquire(
            now_ms,
            transaction,
            request.table,
            row,
            lock_mode(request.kind),
        )? {
            Acquired::Granted {
                record,
                created,
                previous,
            } => self.apply(
                request.kind,
                record,
                created,
                previous,
                request.values,
                request.columns,
                out,
            ),
            Acquired::Waiting { record, created } => {
                if let Err(error) = self.park_operation(
                    record,
                    created,
                    request.token,
                    request.kind,
                    request.columns,
                    request.values,
                ) {
                    self.cancel_wait(record, created);
                    return Err(error.into());
                }
                Ok(Outcome::Waiting)
            }
        }
    }

    /// Backs out of a wait that could not be parked.
    fn cancel_wait(&mut self, record: u32, created: bool) {
        let (table, row) = (
            self.records[record as usize].table,
            self.records[record as usize].row,
        );
        if created {
            if self.release_record(record) {
                self.grant_waiters(table, row);
            }
        } else {
            // An upgrade that cannot wait keeps its shared lock.
            self.dequeue_wait(record);
            self.records[record as usize].wanted = LockMode::None;
        }
    }

    /// A read without locks: the committed version, or the reader's own change.
    #[inline]
    fn read_committed(
        &self,
        transaction: TransactionId,
        table_id: u32,
        row: ChunkRef,
        columns: &[ColumnId],
        out: &mut Vec<u8>,
    ) -> Result<Outcome, Error> {
        let table = self.tables[table_id as usize].as_ref().unwrap();
        let (head, flags) = table::header(&table.rows, &self.pool, row);
        let version = if head == NO_RECORD {
            (flags & COMMITTED != 0).then_some(row)
        } else {
            self.version_for(transaction, head, row, flags)
        };
        let version = version.ok_or(ErrorCode::NoSuchRow)?;
        let view = table::row_view(&table.def, &table.rows, &table.parts, &self.pool, version);
        project(&table.def.layout, view, columns, out);
        Ok(Outcome::Done)
    }

    /// The version of `row` that `transaction` sees: its own change if it has
    /// one, else the committed version.
    #[inline]
    pub(crate) fn version_for(
        &self,
        transaction: TransactionId,
        head: u32,
        row: ChunkRef,
        flags: u8,
    ) -> Option<ChunkRef> {
        if let Some(index) = self.transactions.lookup(transaction)
            && let Some(own) = self.own_record(head, index)
        {
            return self.records[own as usize].visible(flags);
        }
        (flags & COMMITTED != 0).then_some(row)
    }

    /// Runs an operation whose lock is held by `record`.
    /// Runs an operation whose lock is held by `record`. If it fails, the
    /// record is left as before it: dropped if it was `created` for this
    /// operation, or back at its `previous` lock mode if the operation had
    /// upgraded it (waiters behind it are then granted what they can have).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn apply(
        &mut self,
        kind: OperationKind,
        record: u32,
        created: bool,
        previous: LockMode,
        values: &[u8],
        columns: &[ColumnId],
        out: &mut Vec<u8>,
    ) -> Result<Outcome, Error> {
        let result = self.apply_locked(kind, record, values, columns, out);
        if result.is_err() {
            let state = self.records[record as usize];
            let untouched = state.image.is_none() && !state.inserted && !state.deleted;
            if untouched && created {
                self.release_record(record);
            } else if untouched && state.held > previous {
                self.records[record as usize].held = previous;
                self.grant_waiters(state.table, state.row);
            }
        }
        result
    }

    fn apply_locked(
        &mut self,
        kind: OperationKind,
        index: u32,
        values: &[u8],
        columns: &[ColumnId],
        out: &mut Vec<u8>,
    ) -> Result<Outcome, Error> {
        let record = self.records[index as usize];
        let table = self.tables[record.table as usize].as_ref().unwrap();
        let (_, flags) = table::header(&table.rows, &self.pool, record.row);
        let visible = record.visible(flags);
        if !columns.is_empty()
            && let Some(version) = visible
        {
            // A read returns the row; a write returns it as it was before
            // the write (the coordinator keeps unique indexes from it).
            let view = table::row_view(&table.def, &table.rows, &table.parts, &self.pool, version);
            project(&table.def.layout, view, columns, out);
        }
        match (kind, visible) {
            (OperationKind::Read(_), Some(_)) => Ok(Outcome::Done),
            (OperationKind::Insert, Some(_)) => Err(ErrorCode::DuplicateKey.into()),
            (OperationKind::Insert | OperationKind::Write, None) => {
                self.write_inserted = true;
                if record.deleted {
                    // Deleted, then inserted again by the same transaction: a
                    // new version from nothing.
                    self.set_image(index, None, values)?;
                } else {
                    self.claim_row(index, values)?;
                }
                Ok(Outcome::Done)
            }
            (OperationKind::Update | OperationKind::Write, Some(version)) => {
                self.set_image(index, Some(version), values)?;
                Ok(Outcome::Done)
            }
            (OperationKind::Delete, Some(_)) => {
                let Engine {
                    tables,
                    pool,
                    scratch,
                    records,
                    ..
                } = self;
                let record = &mut records[index as usize];
                if !record.image.is_none() {
                    let table = tables[record.table as usize].as_mut().unwrap();
                    drop_image(table, pool, record.image, record.changed, &mut scratch.key);
                    record.image = ChunkRef::NONE;
                    record.changed = 0;
                }
                record.deleted = true;
                Ok(Outcome::Done)
            }
            (OperationKind::Read(_) | OperationKind::Update | OperationKind::Delete, None) => {
                Err(ErrorCode::NoSuchRow.into())
            }
        }
    }

    /// Builds a new version from `base` (or from nothing) and `values` into
    /// the scratch buffers, and checks it: the primary key may not change and
    /// unique indexes may not get a duplicate. Returns the indexes whose key
    /// differs from the row's slot.
    fn build_version(
        &mut self,
        record: u32,
        base: Option<ChunkRef>,
        values: &[u8],
    ) -> Result<u64, Error> {
        let OperationRecordRef { table_id, row } = self.record_ref(record);
        let row_inserted = self.records[record as usize].inserted;
        let Engine {
            tables,
            pool,
            scratch,
            ..
        } = self;
        let table = tables[table_id as usize].as_ref().unwrap();
        let fixed_bytes = table.def.layout.fixed_bytes as usize;
        let base_view =
            base.map(|slot| table::row_view(&table.def, &table.rows, &table.parts, pool, slot));
        scratch.builder.build(
            &table.def,
            base_view,
            values,
            &mut scratch.fixed[..fixed_bytes],
            &mut scratch.var,
        )?;
        let new_view = RowView {
            fixed: &scratch.fixed[..fixed_bytes],
            var: &scratch.var,
        };
        let row_view = table::row_view(&table.def, &table.rows, &table.parts, pool, row);
        scratch.key.clear();
        encode_row_key(
            &table.def,
            &table.def.primary_key,
            new_view,
            &mut scratch.key,
        );
        scratch.key_other.clear();
        encode_row_key(
            &table.def,
            &table.def.primary_key,
            row_view,
            &mut scratch.key_other,
        );
        if scratch.key != scratch.key_other {
            return Err(Error::new(
                ErrorCode::WrongKey,
                "primary key columns cannot be changed",
            ));
        }
        let (_, flags) = table::header(&table.rows, pool, row);
        let row_has_entries = flags & COMMITTED != 0 || row_inserted;
        let mut changed = 0u64;
        let mut unique_to_check = 0u64;
        for position in 0..table.ordered.len() {
            let index = &table.def.ordered_indexes[position];
            scratch.key.clear();
            encode_row_key(&table.def, &index.columns, new_view, &mut scratch.key);
            scratch.key_other.clear();
            encode_row_key(&table.def, &index.columns, row_view, &mut scratch.key_other);
            if !row_has_entries || scratch.key != scratch.key_other {
                changed |= 1 << position;
                if index.unique && !has_null(&table.def, &index.columns, new_view) {
                    unique_to_check |= 1 << position;
                }
            }
        }
        for position in 0..64 {
            if unique_to_check & (1 << position) != 0 {
                self.encode_scratch_key(table_id, position);
                // The buffer is lent out (taking it allocates nothing) because
                // the check reads the rest of the engine.
                let mut found = std::mem::take(&mut self.scratch.found);
                let conflict = self.unique_conflict(table_id, position, record, &mut found);
                self.scratch.found = found;
                if conflict {
                    return Err(Error::new(
                        ErrorCode::DuplicateKey,
                        "duplicate entry for a unique index",
                    ));
                }
            }
        }
        Ok(changed)
    }

    /// Encodes the key of ordered index `position` of the version in the
    /// scratch buffers into `scratch.key`.
    fn encode_scratch_key(&mut self, table_id: u32, position: usize) {
        let table = self.tables[table_id as usize].as_ref().unwrap();
        let scratch = &mut self.scratch;
        let fixed_bytes = table.def.layout.fixed_bytes as usize;
        let view = RowView {
            fixed: &scratch.fixed[..fixed_bytes],
            var: &scratch.var,
        };
        scratch.key.clear();
        encode_row_key(
            &table.def,
            &table.def.ordered_indexes[position].columns,
            view,
            &mut scratch.key,
        );
    }

    fn record_ref(&self, record: u32) -> OperationRecordRef {
        let state = &self.records[record as usize];
        OperationRecordRef {
            table_id: state.table,
            row: state.row,
        }
    }

    /// Whether the key in `scratch.key` (of a unique index) is taken by
    /// another row version that could commit. Conservative: another
    /// transaction's uncommitted entry counts as taken.
    fn unique_conflict(
        &self,
        table_id: u32,
        position: usize,
        record: u32,
        found: &mut Vec<ChunkRef>,
    ) -> bool {
        let table = self.tables[table_id as usize].as_ref().unwrap();
        let own = &self.records[record as usize];
        let keys = table::RowKeys {
            def: &table.def,
            rows: &table.rows,
            parts: &table.parts,
            columns: &table.def.ordered_indexes[position].columns,
        };
        let bound = Bound::Prefix {
            key: &self.scratch.key,
            inclusive: true,
        };
        let mut resume: Option<ChunkRef> = None;
        loop {
            found.clear();
            let start = match resume {
                Some(row) => Bound::After {
                    key: &self.scratch.key,
                    row,
                },
                None => bound,
            };
            let collected =
                table.ordered[position].collect(&self.pool, start, bound, false, &keys, found, 4);
            for &entry in found.iter() {
                if entry == own.row || entry == own.image {
                    continue;
                }
                let (head, flags) = table::header(&table.rows, &self.pool, entry);
                if flags & COPY != 0 {
                    return true;
                }
                // A row whose change by this transaction moved it off this key
                // (deleted, or its image has another key) does not conflict.
                if let Some(mine) = self.own_record(head, own.transaction) {
                    let mine = &self.records[mine as usize];
                    if mine.deleted || mine.changed & (1 << position) != 0 {
                        continue;
                    }
                }
                if flags & COMMITTED != 0 || head != NO_RECORD && self.records_inserting(head) {
                    return true;
                }
            }
            match (collected, found.last()) {
                (Collected::Limit, Some(&last)) => resume = Some(last),
                _ => return false,
            }
        }
    }

    fn records_inserting(&self, head: u32) -> bool {
        let mut at = head;
        while at != NO_RECORD {
            if self.records[at as usize].inserted {
                return true;
            }
            at = self.records[at as usize].next_in_row;
        }
        false
    }

    /// Gives the record's transaction a new pending version of its row.
    fn set_image(
        &mut self,
        record: u32,
        base: Option<ChunkRef>,
        values: &[u8],
    ) -> Result<(), Error> {
        let changed = self.build_version(record, base, values)?;
        let OperationRecordRef { table_id, .. } = self.record_ref(record);
        let Engine {
            tables,
            pool,
            scratch,
            records,
            ..
        } = self;
        let table = tables[table_id as usize].as_mut().unwrap();
        let fixed_bytes = table.def.layout.fixed_bytes as usize;
        let copy = table.new_version(
            pool,
            &scratch.fixed[..fixed_bytes],
            &scratch.var,
            record,
            IN_USE | COPY,
        )?;
        if let Err(error) = table::index_insert(table, pool, copy, changed, &mut scratch.key) {
            table.free_version(pool, copy);
            return Err(error.into());
        }
        let state = &mut records[record as usize];
        if !state.image.is_none() {
            drop_image(table, pool, state.image, state.changed, &mut scratch.key);
        }
        state.image = copy;
        state.changed = changed;
        state.deleted = false;
        Ok(())
    }

    /// Inserts into a row slot no one's version occupies (a row whose insert
    /// was aborted or whose delete committed while this transaction waited).
    fn claim_row(&mut self, record: u32, values: &[u8]) -> Result<(), Error> {
        self.build_version(record, None, values)?;
        let OperationRecordRef { table_id, row } = self.record_ref(record);
        let Engine {
            tables,
            pool,
            scratch,
            records,
            ..
        } = self;
        let table = tables[table_id as usize].as_mut().unwrap();
        let fixed_bytes = table.def.layout.fixed_bytes as usize;
        let (head, flags) = table::header(&table.rows, pool, row);
        assert_eq!(flags & COMMITTED, 0);
        // Store the new variable part before freeing the old one, so that a
        // full DataMemory leaves the slot as it was.
        let old_var = table::var_ref(&table.def, table.rows.bytes(pool, row));
        let new_var = match old_var {
            Some(_) => Some(table.parts.store(pool, &scratch.var)?),
            None => None,
        };
        if let Some(old) = old_var {
            table.parts.free(pool, old);
        }
        let bytes = table.rows.bytes_mut(pool, row);
        bytes[0..4].copy_from_slice(&table::header_word(head, IN_USE));
        bytes[table::HEADER_BYTES..table::HEADER_BYTES + fixed_bytes]
            .copy_from_slice(&scratch.fixed[..fixed_bytes]);
        if let Some(var) = new_var {
            table::write_var_ref(&table.def, bytes, var);
        }
        let all = table.all_indexes();
        table::index_insert(table, pool, row, all, &mut scratch.key)?;
        records[record as usize].inserted = true;
        Ok(())
    }

    /// Inserts a row whose key is not in the hash index.
    fn insert_new(
        &mut self,
        transaction: u32,
        table_id: u32,
        hash: u64,
        values: &[u8],
    ) -> Result<Outcome, Error> {
        let mut unique_to_check = 0u64;
        {
            let Engine {
                tables, scratch, ..
            } = &mut *self;
            let table = tables[table_id as usize].as_ref().unwrap();
            let fixed_bytes = table.def.layout.fixed_bytes as usize;
            scratch.builder.build(
                &table.def,
                None,
                values,
                &mut scratch.fixed[..fixed_bytes],
                &mut scratch.var,
            )?;
            let new_view = RowView {
                fixed: &scratch.fixed[..fixed_bytes],
                var: &scratch.var,
            };
            // `scratch.key` holds the request's key, which placed the row in
            // the hash index: the row's own key columns must say the same.
            scratch.key_other.clear();
            encode_row_key(
                &table.def,
                &table.def.primary_key,
                new_view,
                &mut scratch.key_other,
            );
            if scratch.key_other != scratch.key {
                return Err(Error::new(
                    ErrorCode::WrongKey,
                    "the row's primary-key columns differ from the operation's key",
                ));
            }
            for (position, index) in table.def.ordered_indexes.iter().enumerate() {
                if index.unique && !has_null(&table.def, &index.columns, new_view) {
                    unique_to_check |= 1 << position;
                }
            }
        }
        for position in 0..64 {
            if unique_to_check & (1 << position) != 0 {
                self.encode_scratch_key(table_id, position);
                let mut found = std::mem::take(&mut self.scratch.found);
                let taken = self.unique_taken(table_id, position, &mut found);
                self.scratch.found = found;
                if taken {
                    return Err(Error::new(
                        ErrorCode::DuplicateKey,
                        "duplicate entry for a unique index",
                    ));
                }
            }
        }
        if self.records_free == NO_RECORD {
            return Err(ErrorCode::TooManyOperations.into());
        }
        let Engine {
            tables,
            pool,
            scratch,
            ..
        } = self;
        let table = tables[table_id as usize].as_mut().unwrap();
        let fixed_bytes = table.def.layout.fixed_bytes as usize;
        let slot = table.new_version(
            pool,
            &scratch.fixed[..fixed_bytes],
            &scratch.var,
            NO_RECORD,
            IN_USE,
        )?;
        if let Err(error) = table.hash.insert(pool, hash, slot) {
            table.free_version(pool, slot);
            return Err(error.into());
        }
        let all = table.all_indexes();
        if let Err(error) = table::index_insert(table, pool, slot, all, &mut scratch.key) {
            table.hash.remove(pool, hash, slot);
            table.free_version(pool, slot);
            return Err(error.into());
        }
        let record = self
            .new_record(transaction, table_id, slot, LockMode::Exclusive)
            .expect("a record was free");
        self.records[record as usize].inserted = true;
        Ok(Outcome::Done)
    }

    /// Whether the unique key in `scratch.key` is taken, for a brand-new row.
    fn unique_taken(&self, table_id: u32, position: usize, found: &mut Vec<ChunkRef>) -> bool {
        let table = self.tables[table_id as usize].as_ref().unwrap();
        let keys = table::RowKeys {
            def: &table.def,
            rows: &table.rows,
            parts: &table.parts,
            columns: &table.def.ordered_indexes[position].columns,
        };
        let bound = Bound::Prefix {
            key: &self.scratch.key,
            inclusive: true,
        };
        found.clear();
        table.ordered[position].collect(&self.pool, bound, bound, false, &keys, found, 1);
        !found.is_empty()
    }
}

struct OperationRecordRef {
    table_id: u32,
    row: ChunkRef,
}

fn has_null(def: &schema::TableDef, columns: &[ColumnId], row: RowView<'_>) -> bool {
    columns
        .iter()
        .any(|&column| row.is_null(&def.layout, column))
}
