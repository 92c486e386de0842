//! The byte layout of one B+tree node, a slab chunk of [`NODE_BYTES`], and
//! the column operations inserts, splits and merges are made of.
//!
//! Every multi-byte field is little-endian. A node is a 16-byte header
//! followed by columns of fixed-width slots:
//!
//! | bytes  | field                                                        |
//! |--------|--------------------------------------------------------------|
//! | 0..4   | previous leaf (`ChunkRef` raw, `NONE` at the left end); internal nodes: unused |
//! | 4..8   | next leaf (`ChunkRef` raw, `NONE` at the right end); internal nodes: unused |
//! | 8..10  | count: entries in a leaf, children in an internal node       |
//! | 10     | level: 0 for a leaf, its children's level + 1 otherwise       |
//! | 11     | [`NODE_MARK`], to catch a stale or foreign chunk in debug builds |
//! | 12..16 | zero                                                         |
//!
//! A leaf then holds entry words (see `word`) from byte 16, in ascending
//! order, in its tree's [`LeafFormat`]: whole 16-byte words
//! ([`LEAF_CAPACITY`] of them), or, for an index whose keys all have the
//! same length of at most 11 bytes (NOT NULL integer, date and similar
//! columns), just the row (4 bytes, little-endian) and the key's bytes, from
//! which the 16-byte word is rebuilt exactly: an INT NOT NULL index then
//! takes 8 bytes an entry instead of 16, and its leaves hold 510 entries. An internal node holds
//! [`INTERNAL_CAPACITY`] words from byte 16 and as many children (4-byte
//! `ChunkRef`s) from [`CHILDREN`]`.offset`: word `i` (for `i ≥ 1`) is the
//! first entry of child `i`'s subtree, exactly, so it always names a live
//! row whose full key can be read. Word 0 is not maintained (a subtree's
//! first entry is recorded by its parent), which keeps most minimum changes
//! from climbing to the root.

use super::word;
use crate::memory::ChunkRef;

/// Bytes in one node. Measured at 2, 4 and 8 KiB (see the module docs of
/// `ordered_index`); unit tests use tiny nodes so that a few hundred entries
/// already make deep trees.
pub(super) const NODE_BYTES: usize = if cfg!(test) { 512 } else { 4096 };
const HEADER_BYTES: usize = 16;
const WORD_BYTES: usize = 16;
const CHILD_BYTES: usize = 4;
/// Entries a leaf holds.
pub(super) const LEAF_CAPACITY: usize = (NODE_BYTES - HEADER_BYTES) / WORD_BYTES;
/// Children an internal node holds.
pub(super) const INTERNAL_CAPACITY: usize =
    (NODE_BYTES - HEADER_BYTES) / (WORD_BYTES + CHILD_BYTES);
/// Byte 11 of every node in use.
const NODE_MARK: u8 = 0xB7;

const PREVIOUS_OFFSET: usize = 0;
const NEXT_OFFSET: usize = 4;
const COUNT_OFFSET: usize = 8;
const LEVEL_OFFSET: usize = 10;
const MARK_OFFSET: usize = 11;

pub(super) type Node = [u8; NODE_BYTES];

/// A column of fixed-width slots inside a node.
#[derive(Clone, Copy)]
pub(super) struct Column {
    offset: usize,
    width: usize,
}

/// Entry words of a leaf, separator words of an internal node.
pub(super) const WORDS: Column = Column {
    offset: HEADER_BYTES,
    width: WORD_BYTES,
};
/// Children of an internal node.
pub(super) const CHILDREN: Column = Column {
    offset: HEADER_BYTES + WORD_BYTES * INTERNAL_CAPACITY,
    width: CHILD_BYTES,
};

const _: () = assert!(CHILDREN.offset + CHILD_BYTES * INTERNAL_CAPACITY <= NODE_BYTES);
const _: () = assert!(LEAF_CAPACITY <= u16::MAX as usize && INTERNAL_CAPACITY >= 4);

impl Column {
    #[inline]
    fn range(self, slot: usize, slots: usize) -> std::ops::Range<usize> {
        let start = self.offset + slot * self.width;
        start..start + slots * self.width
    }
}

/// Makes `node` an empty node of `level`, without siblings.
pub(super) fn initialize(node: &mut Node, level: u8) {
    node[..HEADER_BYTES].fill(0);
    node[PREVIOUS_OFFSET..PREVIOUS_OFFSET + 4].copy_from_slice(&ChunkRef::NONE.raw().to_le_bytes());
    node[NEXT_OFFSET..NEXT_OFFSET + 4].copy_from_slice(&ChunkRef::NONE.raw().to_le_bytes());
    node[LEVEL_OFFSET] = level;
    node[MARK_OFFSET] = NODE_MARK;
}

#[inline]
pub(super) fn is_marked(node: &Node) -> bool {
    node[MARK_OFFSET] == NODE_MARK
}

#[inline]
fn read_u32(node: &Node, offset: usize) -> u32 {
    u32::from_le_bytes(node[offset..offset + 4].try_into().unwrap())
}

#[inline]
fn write_u32(node: &mut Node, offset: usize, value: u32) {
    node[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
}

#[inline]
pub(super) fn count(node: &Node) -> usize {
    usize::from(u16::from_le_bytes([
        node[COUNT_OFFSET],
        node[COUNT_OFFSET + 1],
    ]))
}

#[inline]
pub(super) fn set_count(node: &mut Node, count: usize) {
    debug_assert!(count <= (NODE_BYTES - HEADER_BYTES) / 5);
    node[COUNT_OFFSET..COUNT_OFFSET + 2].copy_from_slice(&(count as u16).to_le_bytes());
}

#[inline]
pub(super) fn level(node: &Node) -> u8 {
    node[LEVEL_OFFSET]
}

#[inline]
pub(super) fn previous(node: &Node) -> ChunkRef {
    ChunkRef::from_raw(read_u32(node, PREVIOUS_OFFSET))
}

#[inline]
pub(super) fn set_previous(node: &mut Node, leaf: ChunkRef) {
    write_u32(node, PREVIOUS_OFFSET, leaf.raw());
}

#[inline]
pub(super) fn next(node: &Node) -> ChunkRef {
    ChunkRef::from_raw(read_u32(node, NEXT_OFFSET))
}

#[inline]
pub(super) fn set_next(node: &mut Node, leaf: ChunkRef) {
    write_u32(node, NEXT_OFFSET, leaf.raw());
}

#[inline]
pub(super) fn word(node: &Node, slot: usize) -> u128 {
    u128::from_le_bytes(node[WORDS.range(slot, 1)].try_into().unwrap())
}

#[inline]
pub(super) fn set_word(node: &mut Node, slot: usize, word: u128) {
    node[WORDS.range(slot, 1)].copy_from_slice(&word.to_le_bytes());
}

/// How a tree's leaves store their entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LeafFormat {
    /// The length every key has, or 0 if keys vary (whole words are stored).
    key_bytes: usize,
    /// Bytes of one stored entry.
    entry_bytes: usize,
    /// Entries a leaf holds.
    pub capacity: usize,
}

impl LeafFormat {
    /// Whole 16-byte words: keys of any length.
    pub const WORDS: LeafFormat = LeafFormat {
        key_bytes: 0,
        entry_bytes: WORD_BYTES,
        capacity: LEAF_CAPACITY,
    };

    /// Row and key bytes, for keys that are all `key_bytes` long.
    pub fn fixed(key_bytes: usize) -> LeafFormat {
        assert!(
            (1..=word::PREFIX_BYTES).contains(&key_bytes),
            "fixed keys must fit in a word's prefix"
        );
        let entry_bytes = 4 + key_bytes;
        LeafFormat {
            key_bytes,
            entry_bytes,
            capacity: (NODE_BYTES - HEADER_BYTES) / entry_bytes,
        }
    }

    #[inline]
    pub fn column(self) -> Column {
        Column {
            offset: HEADER_BYTES,
            width: self.entry_bytes,
        }
    }

    /// A word as a leaf stores it.
    #[inline]
    pub fn encode(self, word: u128) -> LeafEntry {
        let mut bytes = [0u8; WORD_BYTES];
        if self.key_bytes == 0 {
            bytes = word.to_le_bytes();
        } else {
            bytes[..4].copy_from_slice(&(word as u32).to_le_bytes());
            bytes[4..4 + self.key_bytes].copy_from_slice(&word.to_be_bytes()[..self.key_bytes]);
        }
        LeafEntry {
            bytes,
            length: self.entry_bytes,
        }
    }

    /// Whether a key can be stored in this format.
    #[inline]
    pub fn admits(self, key: &[u8]) -> bool {
        self.key_bytes == 0 || key.len() == self.key_bytes
    }
}

/// An entry in a leaf's stored form.
pub(super) struct LeafEntry {
    bytes: [u8; WORD_BYTES],
    length: usize,
}

impl AsRef<[u8]> for LeafEntry {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.length]
    }
}

/// Entry `slot` of a leaf, as a whole word.
#[inline]
pub(super) fn leaf_word(node: &Node, slot: usize, format: LeafFormat) -> u128 {
    if format.key_bytes == 0 {
        return word(node, slot);
    }
    let at = HEADER_BYTES + slot * format.entry_bytes;
    let row = ChunkRef::from_raw(read_u32(node, at));
    word::entry_word(&node[at + 4..at + 4 + format.key_bytes], row)
}

#[inline]
pub(super) fn set_leaf_word(node: &mut Node, slot: usize, word: u128, format: LeafFormat) {
    let at = HEADER_BYTES + slot * format.entry_bytes;
    node[at..at + format.entry_bytes].copy_from_slice(format.encode(word).as_ref());
}

/// The row of leaf entry `slot`: every format stores it first.
#[inline]
pub(super) fn leaf_row(node: &Node, slot: usize, format: LeafFormat) -> ChunkRef {
    ChunkRef::from_raw(read_u32(node, HEADER_BYTES + slot * format.entry_bytes))
}

#[inline]
pub(super) fn child(node: &Node, slot: usize) -> ChunkRef {
    ChunkRef::from_raw(read_u32(node, CHILDREN.offset + slot * CHILD_BYTES))
}

#[inline]
pub(super) fn set_child(node: &mut Node, slot: usize, child: ChunkRef) {
    write_u32(node, CHILDREN.offset + slot * CHILD_BYTES, child.raw());
}

/// Puts `item` at `slot` of a column holding `count` items, shifting the
/// rest up by one.
#[inline]
pub(super) fn insert(node: &mut Node, column: Column, count: usize, slot: usize, item: &[u8]) {
    debug_assert!(slot <= count && item.len() == column.width);
    let tail = column.range(slot, count - slot);
    node.copy_within(tail.clone(), tail.start + column.width);
    node[column.range(slot, 1)].copy_from_slice(item);
}

/// Removes `slot` of a column holding `count` items, shifting the rest down.
#[inline]
pub(super) fn remove(node: &mut Node, column: Column, count: usize, slot: usize) {
    debug_assert!(slot < count);
    let tail = column.range(slot + 1, count - slot - 1);
    node.copy_within(tail, column.offset + slot * column.width);
}

/// Inserts `item` at `slot` of a full column of `count` items in `left`,
/// keeping the first `keep` of the `count + 1` items in `left` and moving
/// the rest to the empty `right`.
pub(super) fn split_insert(
    left: &mut Node,
    right: &mut Node,
    column: Column,
    count: usize,
    slot: usize,
    item: &[u8],
    keep: usize,
) {
    assert!(slot <= count && (1..=count).contains(&keep));
    if slot < keep {
        // The item stays left: the last `count - keep + 1` old items move.
        let moved = column.range(keep - 1, count - keep + 1);
        right[column.range(0, count - keep + 1)].copy_from_slice(&left[moved]);
        insert(left, column, keep - 1, slot, item);
    } else {
        // The item goes right, between the old items before and after it.
        let before = slot - keep;
        right[column.range(0, before)].copy_from_slice(&left[column.range(keep, before)]);
        right[column.range(before, 1)].copy_from_slice(item);
        right[column.range(before + 1, count - slot)]
            .copy_from_slice(&left[column.range(slot, count - slot)]);
    }
}

/// Appends the first `source_count` items of `source`'s column after the
/// first `destination_count` of `destination`'s.
pub(super) fn append(
    destination: &mut Node,
    destination_count: usize,
    source: &Node,
    source_count: usize,
    column: Column,
) {
    destination[column.range(destination_count, source_count)]
        .copy_from_slice(&source[column.range(0, source_count)]);
}
