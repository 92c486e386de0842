//! Ordered indexes: a B+tree per index and partition, its nodes in DataMemory.
//!
//! CONTRACT (implemented by the ordered-index work item; see the module docs
//! that replace this paragraph for the node format).
//!
//! Entries are `(key, row)`: `key` is the sortable encoding of the indexed
//! columns (`schema::key`), compared bytewise; `row` is the chunk of the row
//! version the entry belongs to. Entries are ordered by key, then by
//! `row.raw()`, so equal keys (a non-unique index) have a total order too.
//! Nodes keep a fixed-size prefix of each key; when prefixes tie, the full
//! key is fetched through `KeySource` from the row itself.

use crate::memory::{ChunkRef, PagePool};
use schema::ErrorCode;

/// Gives the full sortable key an entry stands for, read from its row.
pub trait KeySource {
    /// Appends the full sortable key of the row at `row` for this index to
    /// `out`. Rows live in the same pool as the index's nodes, so the pool is
    /// passed in (shared) whenever the index needs a key.
    fn key(&self, pool: &PagePool, row: ChunkRef, out: &mut Vec<u8>);
}

/// Where a range scan starts or stops.
///
/// `start` bounds the scan where it begins in its direction (the low end
/// ascending, the high end descending), `end` where it stops. A `Prefix`
/// bound compares only the first `key.len()` bytes of each entry's key, so a
/// prefix of the index's columns bounds every key that starts with it.
#[derive(Debug, Clone, Copy)]
pub enum Bound<'a> {
    Unbounded,
    Prefix { key: &'a [u8], inclusive: bool },
    /// Strictly past this entry in the scan's direction: where a scan resumes.
    After { key: &'a [u8], row: ChunkRef },
}

/// Why `collect` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collected {
    /// Every entry up to the end bound was collected.
    Exhausted,
    /// `limit` entries were collected; there may be more.
    Limit,
}

/// One ordered index of one partition.
pub struct OrderedIndex {}

impl OrderedIndex {
    pub fn new() -> OrderedIndex {
        todo!("ordered index")
    }

    /// Adds an entry. On `TableFull` the index is exactly as before.
    pub fn insert(
        &mut self,
        pool: &mut PagePool,
        key: &[u8],
        row: ChunkRef,
        keys: &impl KeySource,
    ) -> Result<(), ErrorCode> {
        let _ = (pool, key, row, keys);
        todo!()
    }

    /// Removes an entry; false if it was not there. Never allocates.
    pub fn remove(&mut self, pool: &mut PagePool, key: &[u8], row: ChunkRef, keys: &impl KeySource) -> bool {
        let _ = (pool, key, row, keys);
        todo!()
    }

    /// Points the entry `(key, old)` at `new` in place; false if it was not
    /// there. Never allocates (a commit uses it and must not fail). The caller
    /// guarantees `(key, new)` sorts where `(key, old)` did, or the order is
    /// restored by the implementation.
    pub fn replace_row(
        &mut self,
        pool: &mut PagePool,
        key: &[u8],
        old: ChunkRef,
        new: ChunkRef,
        keys: &impl KeySource,
    ) -> bool {
        let _ = (pool, key, old, new, keys);
        todo!()
    }

    /// Appends to `out` the rows of up to `limit` entries from `start` to
    /// `end`, in key order (descending if asked), and says whether it stopped
    /// at the limit. `out` is not cleared first.
    #[allow(clippy::too_many_arguments)]
    pub fn collect(
        &self,
        pool: &PagePool,
        start: Bound<'_>,
        end: Bound<'_>,
        descending: bool,
        keys: &impl KeySource,
        out: &mut Vec<ChunkRef>,
        limit: usize,
    ) -> Collected {
        let _ = (pool, start, end, descending, keys, out, limit);
        todo!()
    }

    /// Returns every node to the pool; the index is empty afterwards.
    pub fn release_all(&mut self, pool: &mut PagePool) {
        let _ = pool;
        todo!()
    }

    pub fn entries(&self) -> u64 {
        todo!()
    }

    /// DataMemory pages the index's nodes occupy.
    pub fn pages(&self) -> usize {
        todo!()
    }
}
