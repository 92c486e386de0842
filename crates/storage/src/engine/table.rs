//! A table's partition inside the engine: its row slots, variable parts,
//! hash index and ordered indexes, and the row-slot format.
//!
//! ## Row slot (format version 1)
//! Every row version (the committed row and a transaction's pending copy)
//! lives in a fixed-size slot of the table's row slab:
//! - bytes 0..4, a little-endian word: the low 24 bits are, for a row, the
//!   head of its operation-record list (`0xFF_FFFF` if none), for a copy,
//!   the record that owns it; the high 8 bits are flags (`IN_USE`, always
//!   set on a slot in use so that the slab's zeroed first word marks a free
//!   slot; `COMMITTED`; `COPY`);
//! - bytes 4..8, a little-endian `u32`: for a committed row, the global
//!   checkpoint (GCI) of the commit that last wrote it (0: not known, as
//!   for rows written without an epoch); a node restart copies only the
//!   rows whose GCI its own disk does not reach, and a checkpoint carries
//!   it so a restore knows it too;
//! - the fixed part of the row (`schema::row`), `layout.fixed_bytes` bytes;
//! - if the table has variable-size columns: the variable part's chunk
//!   (`u32`) and its size class (`u8`).
//!
//! Header bytes per row matter: for a 68-byte row four of them are the
//! difference between 72 and 76 bytes a slot. The GCI's four are NDB's
//! choice too (its rows carry their GCI for the same node restart).

use super::locks::NO_RECORD;
use crate::hash_index::HashIndex;
use crate::memory::{ChunkRef, PagePool, Slab, VarAllocator, VarRef};
use crate::ordered_index::{KeySource, OrderedIndex};
use schema::key::encode_row_key;
use schema::table::ColumnId;
use schema::{ErrorCode, RowView, TableDef};

pub(crate) const HEADER_BYTES: usize = 8;
/// Where a slot's GCI is.
const GCI_AT: usize = 4;
/// The record index field of the header word; all ones means none.
const RECORD_BITS: u32 = 24;
const RECORD_MASK: u32 = (1 << RECORD_BITS) - 1;
/// The most operation records the header can name.
pub(crate) const RECORDS_MAX: u32 = RECORD_MASK;
pub(crate) const IN_USE: u8 = 1;
pub(crate) const COMMITTED: u8 = 2;
pub(crate) const COPY: u8 = 4;

pub(crate) struct Table {
    pub def: TableDef,
    pub rows: Slab,
    pub parts: VarAllocator,
    pub hash: HashIndex,
    pub ordered: Vec<OrderedIndex>,
    pub rows_committed: u64,
    pub scans_open: u32,
}

/// The length every key of an index has, if it is the same for all rows and
/// short enough for compact index leaves: NOT NULL columns of fixed-size types.
pub(crate) fn fixed_key_bytes(
    def: &TableDef,
    columns: &[schema::table::ColumnId],
) -> Option<usize> {
    let all_not_null = columns
        .iter()
        .all(|&column| !def.columns[usize::from(column)].nullable);
    let bytes = schema::key::key_bytes_max(def, columns)?;
    (all_not_null && bytes <= crate::ordered_index::FIXED_KEY_BYTES_MAX).then_some(bytes)
}

/// Bytes of a row slot for this table.
pub(crate) fn slot_bytes(def: &TableDef) -> u32 {
    let var_ref = if def.layout.var_columns > 0 { 5 } else { 0 };
    (HEADER_BYTES as u32 + def.layout.fixed_bytes + var_ref)
        .next_multiple_of(4)
        .max(crate::memory::slab::CHUNK_BYTES_MIN)
}

impl Table {
    pub fn new(def: TableDef, pool: &mut PagePool) -> Result<Table, ErrorCode> {
        let hash = HashIndex::new(pool)?;
        let ordered = def
            .ordered_indexes
            .iter()
            .map(|index| match fixed_key_bytes(&def, &index.columns) {
                Some(key_bytes) => OrderedIndex::with_fixed_key_bytes(key_bytes),
                None => OrderedIndex::new(),
            })
            .collect();
        Ok(Table {
            rows: Slab::new(slot_bytes(&def)),
            def,
            parts: VarAllocator::default(),
            hash,
            ordered,
            rows_committed: 0,
            scans_open: 0,
        })
    }

    /// Returns every page to the pool.
    pub fn release_all(&mut self, pool: &mut PagePool) {
        self.rows.release_all(pool);
        self.parts.release_all(pool);
        self.hash.release_all(pool);
        for index in &mut self.ordered {
            index.release_all(pool);
        }
        self.rows_committed = 0;
    }

    /// Stores a new row version in a new slot: the header, the fixed part
    /// and a newly stored variable part. On `TableFull` nothing is kept.
    pub fn new_version(
        &mut self,
        pool: &mut PagePool,
        fixed: &[u8],
        var: &[u8],
        record: u32,
        flags: u8,
    ) -> Result<ChunkRef, ErrorCode> {
        let slot = self.rows.allocate(pool)?;
        let stored = if self.def.layout.var_columns > 0 {
            match self.parts.store(pool, var) {
                Ok(stored) => Some(stored),
                Err(error) => {
                    self.rows.free(pool, slot);
                    return Err(error);
                }
            }
        } else {
            None
        };
        let bytes = self.rows.bytes_mut(pool, slot);
        bytes[0..4].copy_from_slice(&header_word(record, flags));
        bytes[GCI_AT..GCI_AT + 4].fill(0);
        bytes[HEADER_BYTES..HEADER_BYTES + fixed.len()].copy_from_slice(fixed);
        if let Some(stored) = stored {
            write_var_ref(&self.def, bytes, stored);
        }
        Ok(slot)
    }

    /// Frees a row version: its variable part and its slot.
    pub fn free_version(&mut self, pool: &mut PagePool, slot: ChunkRef) {
        free_var(&self.def, &self.rows, &mut self.parts, pool, slot);
        self.rows.free(pool, slot);
    }

    /// A mask with a bit for every ordered index.
    pub fn all_indexes(&self) -> u64 {
        let count = self.ordered.len();
        if count == 64 {
            u64::MAX
        } else {
            (1u64 << count) - 1
        }
    }
}

/// The header word for a record (`NO_RECORD` for none) and flags.
#[inline]
pub(crate) fn header_word(record: u32, flags: u8) -> [u8; 4] {
    debug_assert!(record == NO_RECORD || record < RECORDS_MAX);
    ((record & RECORD_MASK) | u32::from(flags) << RECORD_BITS).to_le_bytes()
}

/// A slot's record (`NO_RECORD` for none) and flags.
#[inline]
pub(crate) fn header(rows: &Slab, pool: &PagePool, slot: ChunkRef) -> (u32, u8) {
    let word = u32::from_le_bytes(rows.bytes(pool, slot)[0..4].try_into().unwrap());
    let record = word & RECORD_MASK;
    (
        if record == RECORD_MASK {
            NO_RECORD
        } else {
            record
        },
        (word >> RECORD_BITS) as u8,
    )
}

#[inline]
pub(crate) fn set_record(rows: &Slab, pool: &mut PagePool, slot: ChunkRef, record: u32) {
    let (_, flags) = header(rows, pool, slot);
    rows.bytes_mut(pool, slot)[0..4].copy_from_slice(&header_word(record, flags));
}

/// The GCI of the commit that last wrote a committed row (0: unknown).
#[inline]
pub(crate) fn gci(rows: &Slab, pool: &PagePool, slot: ChunkRef) -> u32 {
    u32::from_le_bytes(
        rows.bytes(pool, slot)[GCI_AT..GCI_AT + 4]
            .try_into()
            .unwrap(),
    )
}

#[inline]
pub(crate) fn set_gci(rows: &Slab, pool: &mut PagePool, slot: ChunkRef, gci: u32) {
    rows.bytes_mut(pool, slot)[GCI_AT..GCI_AT + 4].copy_from_slice(&gci.to_le_bytes());
}

#[inline]
pub(crate) fn set_flags(rows: &Slab, pool: &mut PagePool, slot: ChunkRef, flags: u8) {
    let (record, _) = header(rows, pool, slot);
    rows.bytes_mut(pool, slot)[0..4].copy_from_slice(&header_word(record, flags));
}

#[inline]
pub(crate) fn var_ref(def: &TableDef, slot_bytes: &[u8]) -> Option<VarRef> {
    if def.layout.var_columns == 0 {
        return None;
    }
    let at = HEADER_BYTES + def.layout.fixed_bytes as usize;
    Some(VarRef {
        chunk: ChunkRef::from_raw(u32::from_le_bytes(
            slot_bytes[at..at + 4].try_into().unwrap(),
        )),
        class: slot_bytes[at + 4],
    })
}

/// Writes a variable part's reference into a slot's bytes.
#[inline]
pub(crate) fn write_var_ref(def: &TableDef, slot_bytes: &mut [u8], var: VarRef) {
    let at = HEADER_BYTES + def.layout.fixed_bytes as usize;
    slot_bytes[at..at + 4].copy_from_slice(&var.chunk.raw().to_le_bytes());
    slot_bytes[at + 4] = var.class;
}

/// The row stored in `slot`.
#[inline]
pub(crate) fn row_view<'p>(
    def: &TableDef,
    rows: &Slab,
    parts: &VarAllocator,
    pool: &'p PagePool,
    slot: ChunkRef,
) -> RowView<'p> {
    let bytes = rows.bytes(pool, slot);
    let fixed = &bytes[HEADER_BYTES..HEADER_BYTES + def.layout.fixed_bytes as usize];
    let var = match var_ref(def, bytes) {
        Some(var) => parts.part(pool, var),
        None => &[],
    };
    RowView { fixed, var }
}

/// Frees a slot's variable part (if any); the slot itself stays.
pub(crate) fn free_var(
    def: &TableDef,
    rows: &Slab,
    parts: &mut VarAllocator,
    pool: &mut PagePool,
    slot: ChunkRef,
) {
    if let Some(var) = var_ref(def, rows.bytes(pool, slot)) {
        parts.free(pool, var);
    }
}

/// The full sortable key of an index, read from a row version.
pub(crate) struct RowKeys<'t> {
    pub def: &'t TableDef,
    pub rows: &'t Slab,
    pub parts: &'t VarAllocator,
    pub columns: &'t [ColumnId],
}

impl KeySource for RowKeys<'_> {
    #[inline]
    fn key(&self, pool: &PagePool, row: ChunkRef, out: &mut Vec<u8>) {
        let view = row_view(self.def, self.rows, self.parts, pool, row);
        encode_row_key(self.def, self.columns, view, out);
    }
}

/// Encodes the key of `index` (or the primary key with `None`) of the row in `slot`.
#[inline]
pub(crate) fn slot_key(
    table: &Table,
    pool: &PagePool,
    index: Option<usize>,
    slot: ChunkRef,
    out: &mut Vec<u8>,
) {
    out.clear();
    let columns = match index {
        Some(index) => &table.def.ordered_indexes[index].columns[..],
        None => &table.def.primary_key[..],
    };
    let view = row_view(&table.def, &table.rows, &table.parts, pool, slot);
    encode_row_key(&table.def, columns, view, out);
}

/// Adds `(key(slot), slot)` to every index in `mask`. On `TableFull`, the
/// entries added so far are removed again and the error returned.
pub(crate) fn index_insert(
    table: &mut Table,
    pool: &mut PagePool,
    slot: ChunkRef,
    mask: u64,
    key: &mut Vec<u8>,
) -> Result<(), ErrorCode> {
    let Table {
        def,
        rows,
        parts,
        ordered,
        ..
    } = table;
    for (index, tree) in ordered.iter_mut().enumerate() {
        if mask & (1 << index) == 0 {
            continue;
        }
        let keys = RowKeys {
            def,
            rows,
            parts,
            columns: &def.ordered_indexes[index].columns,
        };
        key.clear();
        keys.key(pool, slot, key);
        if let Err(error) = tree.insert(pool, key, slot, &keys) {
            let done = mask & ((1u64 << index) - 1);
            index_remove(table, pool, slot, done, key);
            return Err(error);
        }
    }
    Ok(())
}

/// Removes `(key(slot), slot)` from every index in `mask`. Never allocates.
pub(crate) fn index_remove(
    table: &mut Table,
    pool: &mut PagePool,
    slot: ChunkRef,
    mask: u64,
    key: &mut Vec<u8>,
) {
    let Table {
        def,
        rows,
        parts,
        ordered,
        ..
    } = table;
    for (index, tree) in ordered.iter_mut().enumerate() {
        if mask & (1 << index) == 0 {
            continue;
        }
        let keys = RowKeys {
            def,
            rows,
            parts,
            columns: &def.ordered_indexes[index].columns,
        };
        key.clear();
        keys.key(pool, slot, key);
        let removed = tree.remove(pool, key, slot, &keys);
        assert!(removed, "index entry missing for a row version");
    }
}
