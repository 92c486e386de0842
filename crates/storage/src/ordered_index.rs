//! Ordered indexes: a B+tree per index and partition, its nodes in DataMemory.
//!
//! Entries are `(key, row)`: `key` is the sortable encoding of the indexed
//! columns (`schema::key`), compared bytewise; `row` is the chunk of the row
//! version the entry belongs to. Entries are ordered by key, then by
//! `row.raw()`, so equal keys (a non-unique index) have a total order too.
//! Nodes keep a fixed-size prefix of each key; when prefixes tie, the full
//! key is fetched through `KeySource` from the row itself.
//!
//! ## Entry words
//! Each entry is stored as one 16-byte word, a little-endian `u128`:
//!
//! | bytes (in memory) | bits    | content                                        |
//! |-------------------|---------|------------------------------------------------|
//! | 0..4              | 31..0   | `row.raw()`                                    |
//! | 4                 | 39..32  | length class: the key's length if at most 11, else 12 |
//! | 5..16             | 127..40 | the key's first 11 bytes, zero-padded, most significant first |
//!
//! Comparing two words as integers orders their entries as `(key, row)`
//! does unless both keys are longer than 11 bytes and share their first 11:
//! only then are full keys read from the rows. Eleven bytes hold the common
//! keys whole: an INT or BIGINT (4 or 8 bytes, one more if nullable), a
//! DATETIME, two INTs, a DATE and an INT, so those never need a row read; a
//! 16-byte word keeps slots aligned and a search a walk over one array. The
//! row sits in the low bytes so a scan reads it as the word's first four
//! bytes.
//!
//! ## Nodes
//! A node is one 4 KiB chunk of a `Slab` (8 per 32 KiB page). Multi-byte
//! header fields are little-endian:
//!
//! | bytes  | field                                                         |
//! |--------|---------------------------------------------------------------|
//! | 0..4   | previous leaf (`ChunkRef` raw; `NONE` at the left end and in internal nodes) |
//! | 4..8   | next leaf (`ChunkRef` raw; `NONE` at the right end and in internal nodes) |
//! | 8..10  | count: entries in a leaf, children in an internal node        |
//! | 10     | level: 0 for a leaf, children's level + 1 above               |
//! | 11     | `0xB7`, marks a node in use (checked in debug builds)         |
//! | 12..16 | zero                                                          |
//!
//! A leaf holds up to 255 entry words from byte 16, ascending; a leaf of an
//! index made `with_fixed_key_bytes(n)` (every key exactly `n ≤ 11` bytes)
//! stores each entry as its row (4 bytes) and key (`n` bytes) instead, and
//! rebuilds the word when it reads one, so an INT NOT NULL index holds 510
//! entries a leaf and costs half the memory. An internal
//! node holds up to 204 words from byte 16 and 204 children (`ChunkRef`,
//! 4 bytes) from byte 3280; word `i ≥ 1` is exactly the first entry under
//! child `i`, so every word names a live row whose key can be read, and word
//! 0 is unused (the parent records that subtree's first entry). Leaves are
//! linked both ways so scans walk them without climbing the tree; parents
//! are not linked, updates remember the way down instead.
//!
//! Why 4 KiB: with 2, 4 and 8 KiB nodes and 2 million 5-byte keys
//! (`ordered_index_timing` in `tests/ordered_index.rs`), sequential and
//! random inserts, lookups and scans ran within noise of one another; 8 KiB
//! nodes were about a fifth slower to remove from (longer shifts). 4 KiB
//! keeps the tree a level shallower than 2 KiB sooner, and is one OS page.
//!
//! ## Updates
//! An insert into a full leaf splits it in half, and the split climbs while
//! parents are full; at the ends of the tree (ascending or descending loads)
//! a split leaves the old node full instead, so loaded indexes are dense
//! (random loads leave nodes about 70% full). The
//! nodes a split needs are counted before anything changes, so `TableFull`
//! leaves the index as it was. A removal frees a node that empties and merges
//! one below a quarter full with a sibling when both fit in one node; the
//! root is replaced by its only child while it has one. `replace_row` moves
//! the entry among its equal-key neighbours, across leaves if need be, by
//! moving neighbours one slot each, so it never allocates.
//!
//! Nothing on the insert, remove, replace or collect paths allocates from the
//! heap: the full-key buffer is kept in the index and reused.

mod node;
mod tree;
mod word;

#[cfg(test)]
mod model;
#[cfg(test)]
mod tests;

use crate::memory::{ChunkRef, PagePool};
use node::LeafFormat;
use schema::ErrorCode;
use std::cell::RefCell;
use tree::Tree;
use word::{FullKeys, Scratch};

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
    Prefix {
        key: &'a [u8],
        inclusive: bool,
    },
    /// Strictly past this entry in the scan's direction: where a scan resumes.
    /// The entry need not be in the index any more. As an `end` bound it
    /// keeps the entries up to and including this one.
    After {
        key: &'a [u8],
        row: ChunkRef,
    },
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
pub struct OrderedIndex {
    tree: Tree,
    /// Where full keys are read to, reused so comparisons do not allocate.
    /// A cell, not a lock: an index belongs to one LDM thread, and `collect`
    /// (which has `&self`) borrows it only around a full-key comparison.
    scratch: RefCell<Vec<u8>>,
}

/// The longest key `with_fixed_key_bytes` takes: what a word's prefix holds.
pub const FIXED_KEY_BYTES_MAX: usize = word::PREFIX_BYTES;

/// Room for most keys from the start, so the buffer seldom grows.
const SCRATCH_BYTES: usize = 256;

impl Default for OrderedIndex {
    fn default() -> OrderedIndex {
        OrderedIndex::new()
    }
}

impl OrderedIndex {
    /// An index whose keys may have any length: leaves hold whole words.
    pub fn new() -> OrderedIndex {
        OrderedIndex::with_leaf_format(LeafFormat::WORDS)
    }

    /// An index whose keys are all `key_bytes` long (at most
    /// `FIXED_KEY_BYTES_MAX`): leaves hold only the row and the key, which
    /// halves an INT NOT NULL index.
    pub fn with_fixed_key_bytes(key_bytes: usize) -> OrderedIndex {
        OrderedIndex::with_leaf_format(LeafFormat::fixed(key_bytes))
    }

    fn with_leaf_format(format: LeafFormat) -> OrderedIndex {
        OrderedIndex {
            tree: Tree::new(format),
            scratch: RefCell::new(Vec::with_capacity(SCRATCH_BYTES)),
        }
    }

    /// Adds an entry. On `TableFull` the index is exactly as before.
    pub fn insert(
        &mut self,
        pool: &mut PagePool,
        key: &[u8],
        row: ChunkRef,
        keys: &impl KeySource,
    ) -> Result<(), ErrorCode> {
        let scratch = self.scratch.get_mut();
        self.tree.insert(
            pool,
            key,
            row,
            &mut FullKeys {
                keys,
                scratch: Scratch::Owned(scratch),
            },
        )
    }

    /// Removes an entry; false if it was not there. Never allocates.
    pub fn remove(
        &mut self,
        pool: &mut PagePool,
        key: &[u8],
        row: ChunkRef,
        keys: &impl KeySource,
    ) -> bool {
        let scratch = self.scratch.get_mut();
        self.tree.remove(
            pool,
            key,
            row,
            &mut FullKeys {
                keys,
                scratch: Scratch::Owned(scratch),
            },
        )
    }

    /// Points the entry `(key, old)` at `new` in place; false if it was not
    /// there. Never allocates (a commit uses it and must not fail). The caller
    /// guarantees `(key, new)` sorts where `(key, old)` did, or the order is
    /// restored by the implementation.
    ///
    /// `keys` must give the same key for `new` as for `old` (both versions
    /// exist during the call). The entry moves past the entries with key
    /// `key` whose rows lie between `old` and `new`, in time linear in their
    /// number.
    pub fn replace_row(
        &mut self,
        pool: &mut PagePool,
        key: &[u8],
        old: ChunkRef,
        new: ChunkRef,
        keys: &impl KeySource,
    ) -> bool {
        let scratch = self.scratch.get_mut();
        self.tree.replace_row(
            pool,
            key,
            old,
            new,
            &mut FullKeys {
                keys,
                scratch: Scratch::Owned(scratch),
            },
        )
    }

    /// Appends to `out` the rows of up to `limit` entries from `start` to
    /// `end`, in key order (descending if asked), and says whether it stopped
    /// at the limit. `out` is not cleared first.
    ///
    /// `Limit` is also returned when exactly `limit` entries were left and
    /// the last leaf read did not show that none follow; a `limit` of 0
    /// returns `Limit` at once.
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
        let full = &mut FullKeys {
            keys,
            scratch: Scratch::Shared(&self.scratch),
        };
        self.tree
            .collect(pool, start, end, descending, full, out, limit)
    }

    /// Returns every node to the pool; the index is empty afterwards.
    pub fn release_all(&mut self, pool: &mut PagePool) {
        self.tree.release_all(pool);
    }

    pub fn entries(&self) -> u64 {
        self.tree.entries()
    }

    /// DataMemory pages the index's nodes occupy.
    pub fn pages(&self) -> usize {
        self.tree.pages()
    }

    /// Bytes of one node (a slab chunk).
    pub const NODE_BYTES: usize = node::NODE_BYTES;

    /// Nodes in use. `pages()` hold `pages() * PAGE_SIZE_BYTES / NODE_BYTES`;
    /// the rest are free for later splits.
    pub fn nodes(&self) -> u64 {
        self.tree.nodes()
    }

    /// Levels of nodes: 0 when empty, 1 when the root is a leaf.
    pub fn height(&self) -> usize {
        self.tree.height()
    }

    /// Asserts the tree's invariants: entries strictly ascending by
    /// `(full key, row)` and agreeing with their rows' keys, every internal
    /// word equal to its child's first entry, all leaves at one depth and
    /// linked in order both ways, no empty node, no node over capacity, an
    /// internal root with two children or more, the entry count, and every
    /// slab chunk in use reachable. Reads every key; for tests.
    pub fn check_invariants(&self, pool: &PagePool, keys: &impl KeySource) {
        self.tree.check_invariants(pool, keys);
    }
}
