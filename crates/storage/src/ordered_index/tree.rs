//! The B+tree itself: search, insert with splits, remove with merges,
//! in-place row replacement, range collection and the invariant check.
//!
//! Searches go down from the root choosing, in each internal node, the last
//! child whose first entry (the node's word for it) is before the probe, and
//! record the way down in a [`Path`]. Updates use the path to reach parents
//! instead of storing parent links in nodes, which would have to be rewritten
//! for every child a split or merge moves.

use super::node::{self, CHILDREN, INTERNAL_CAPACITY, LeafFormat, NODE_BYTES, Node, WORDS};
use super::word::{self, FullKeys, Probe};
use super::{Bound, Collected, KeySource};
use crate::memory::{ChunkRef, PAGE_SIZE_BYTES, PagePool, Slab};
use schema::ErrorCode;
use std::cmp::Ordering;

/// The deepest tree supported, for the fixed-size `Path`. Nodes hold
/// hundreds of items, so real trees stay under six levels; an insert that
/// would grow a tree past this fails with `TableFull` rather than panic.
const MAX_HEIGHT: usize = 24;
const CHUNKS_PER_PAGE: usize = PAGE_SIZE_BYTES / NODE_BYTES;
/// A leaf left with fewer entries than this after a removal merges with a
/// sibling if their entries fit in one node. A quarter leaves room for
/// inserts after a merge, so a merge is not soon undone by a split.
const INTERNAL_MERGE_BELOW: usize = INTERNAL_CAPACITY / 4;

/// The nodes from the root down to a leaf, and which child was taken in
/// each internal node.
struct Path {
    nodes: [ChunkRef; MAX_HEIGHT],
    indexes: [u16; MAX_HEIGHT],
}

impl Path {
    fn new() -> Path {
        Path {
            nodes: [ChunkRef::NONE; MAX_HEIGHT],
            indexes: [0; MAX_HEIGHT],
        }
    }

    #[inline]
    fn index(&self, depth: usize) -> usize {
        usize::from(self.indexes[depth])
    }
}

/// The first index in `low..high` where `before` is false (`high` if none);
/// `before` must be true for a run of indexes and false after it.
#[inline]
fn partition_point(
    mut low: usize,
    mut high: usize,
    mut before: impl FnMut(usize) -> bool,
) -> usize {
    while low < high {
        let middle = low + (high - low) / 2;
        if before(middle) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// How many of the `capacity + 1` items of a node split while inserting at
/// `slot` stay in the left node. Half, except at the ends of the tree: an
/// insert past the last item of the rightmost node (ascending keys) leaves
/// the left node full, and one at the front of the leftmost node (descending
/// keys) leaves the right node full, so sequential loads fill nodes.
fn split_point(slot: usize, capacity: usize, left_edge: bool, right_edge: bool) -> usize {
    if right_edge && slot == capacity {
        capacity
    } else if left_edge && slot <= 1 {
        slot + 1
    } else {
        capacity.div_ceil(2)
    }
}

/// Two distinct nodes at once, both writable.
fn two_nodes_mut(pool: &mut PagePool, first: ChunkRef, second: ChunkRef) -> (&mut Node, &mut Node) {
    assert_ne!(first, second);
    let first_offset = first.index() as usize * NODE_BYTES;
    let second_offset = second.index() as usize * NODE_BYTES;
    let (first_bytes, second_bytes) = if first.page() == second.page() {
        let page = pool.page_mut(first.page());
        if first_offset < second_offset {
            let (low, high) = page.split_at_mut(second_offset);
            (
                &mut low[first_offset..first_offset + NODE_BYTES],
                &mut high[..NODE_BYTES],
            )
        } else {
            let (low, high) = page.split_at_mut(first_offset);
            (
                &mut high[..NODE_BYTES],
                &mut low[second_offset..second_offset + NODE_BYTES],
            )
        }
    } else {
        let (first_page, second_page) = pool.pages_mut(first.page(), second.page());
        (
            &mut first_page[first_offset..first_offset + NODE_BYTES],
            &mut second_page[second_offset..second_offset + NODE_BYTES],
        )
    };
    (
        first_bytes.try_into().unwrap(),
        second_bytes.try_into().unwrap(),
    )
}

/// Which entries of a scan's far end are kept: those the probe says are
/// before it, or those it says are not.
struct EndTest<'k> {
    probe: Probe<'k>,
    keep_before: bool,
}

impl EndTest<'_> {
    #[inline]
    fn keeps<K: KeySource>(
        &self,
        stored: u128,
        pool: &PagePool,
        full: &mut FullKeys<'_, K>,
    ) -> bool {
        self.probe.before(stored, pool, full) == self.keep_before
    }
}

pub(super) struct Tree {
    slab: Slab,
    /// How leaves store entries, chosen from the index's key type.
    leaf: LeafFormat,
    root: ChunkRef,
    /// Levels of nodes: 0 when empty, 1 when the root is a leaf.
    height: usize,
    entries: u64,
}

impl Tree {
    pub fn new(leaf: LeafFormat) -> Tree {
        let slab = Slab::new(NODE_BYTES as u32);
        assert_eq!(slab.chunk_bytes() as usize, NODE_BYTES);
        Tree {
            slab,
            leaf,
            root: ChunkRef::NONE,
            height: 0,
            entries: 0,
        }
    }

    #[inline]
    fn leaf_word(&self, node: &Node, slot: usize) -> u128 {
        node::leaf_word(node, slot, self.leaf)
    }

    pub fn entries(&self) -> u64 {
        self.entries
    }

    pub fn pages(&self) -> usize {
        self.slab.pages().len()
    }

    pub fn nodes(&self) -> u64 {
        self.slab.chunks_used()
    }

    pub fn height(&self) -> usize {
        self.height
    }

    #[inline]
    fn node<'p>(&self, pool: &'p PagePool, chunk: ChunkRef) -> &'p Node {
        let node: &Node = self.slab.bytes(pool, chunk).try_into().unwrap();
        debug_assert!(
            node::is_marked(node),
            "chunk {chunk:?} is not a node of this index"
        );
        node
    }

    #[inline]
    fn node_mut<'p>(&self, pool: &'p mut PagePool, chunk: ChunkRef) -> &'p mut Node {
        let node: &mut Node = self.slab.bytes_mut(pool, chunk).try_into().unwrap();
        debug_assert!(
            node::is_marked(node),
            "chunk {chunk:?} is not a node of this index"
        );
        node
    }

    /// Chunks the slab can hand out: every chunk of its pages not in use
    /// (freed ones and those not cut yet), and those of every free page of
    /// the pool.
    fn chunks_available(&self, pool: &PagePool) -> usize {
        let chunks_owned = self.slab.pages().len() * CHUNKS_PER_PAGE;
        chunks_owned - self.slab.chunks_used() as usize
            + pool.pages_free() as usize * CHUNKS_PER_PAGE
    }

    /// A new empty node. Callers have checked `chunks_available` first.
    fn allocate_node(&mut self, pool: &mut PagePool, level: u8) -> ChunkRef {
        let chunk = self
            .slab
            .allocate(pool)
            .expect("chunks were counted before the insert changed anything");
        let node: &mut Node = self.slab.bytes_mut(pool, chunk).try_into().unwrap();
        node::initialize(node, level);
        chunk
    }

    fn free_node(&mut self, pool: &mut PagePool, chunk: ChunkRef) {
        self.node_mut(pool, chunk)[..].fill(0);
        self.slab.free(pool, chunk);
    }

    /// Goes from the root to the leaf where the entries before `probe` end,
    /// recording the way in `path`; returns that end's slot in the leaf.
    fn descend<K: KeySource>(
        &self,
        pool: &PagePool,
        probe: &Probe<'_>,
        full: &mut FullKeys<'_, K>,
        path: &mut Path,
    ) -> usize {
        debug_assert!(self.height > 0);
        let leaf_depth = self.height - 1;
        let mut chunk = self.root;
        for depth in 0..leaf_depth {
            let node = self.node(pool, chunk);
            // Word `i ≥ 1` is child `i`'s first entry; take the last child
            // whose first entry is before the probe, or child 0.
            let index = partition_point(1, node::count(node), |slot| {
                probe.before(node::word(node, slot), pool, full)
            }) - 1;
            path.nodes[depth] = chunk;
            path.indexes[depth] = index as u16;
            chunk = node::child(node, index);
        }
        path.nodes[leaf_depth] = chunk;
        let leaf = self.node(pool, chunk);
        partition_point(0, node::count(leaf), |slot| {
            probe.before(self.leaf_word(leaf, slot), pool, full)
        })
    }

    /// The leftmost or rightmost leaf.
    fn edge_leaf(&self, pool: &PagePool, rightmost: bool) -> ChunkRef {
        let mut chunk = self.root;
        for _ in 1..self.height {
            let node = self.node(pool, chunk);
            chunk = node::child(node, if rightmost { node::count(node) - 1 } else { 0 });
        }
        chunk
    }

    /// Records that the first entry under `path.nodes[depth]` is now
    /// `minimum`: in the nearest ancestor that keeps a word for it.
    fn set_minimum(&self, pool: &mut PagePool, path: &Path, depth: usize, minimum: u128) {
        for parent_depth in (0..depth).rev() {
            let index = path.index(parent_depth);
            if index > 0 {
                node::set_word(
                    self.node_mut(pool, path.nodes[parent_depth]),
                    index,
                    minimum,
                );
                return;
            }
        }
    }

    /// Finds the entry `(key, row)`: its path and slot.
    fn find<K: KeySource>(
        &self,
        pool: &PagePool,
        key: &[u8],
        row: ChunkRef,
        full: &mut FullKeys<'_, K>,
        path: &mut Path,
    ) -> Option<usize> {
        if self.height == 0 {
            return None;
        }
        let probe = Probe::entry(key, row, true);
        let after = self.descend(pool, &probe, full, path);
        // Entries up to and including the one sought are before the probe;
        // it is in this leaf because its subtree's first entry is before it.
        let slot = after.checked_sub(1)?;
        let leaf = self.node(pool, path.nodes[self.height - 1]);
        (probe.compare(self.leaf_word(leaf, slot), pool, full) == Ordering::Equal).then_some(slot)
    }

    pub fn insert<K: KeySource>(
        &mut self,
        pool: &mut PagePool,
        key: &[u8],
        row: ChunkRef,
        full: &mut FullKeys<'_, K>,
    ) -> Result<(), ErrorCode> {
        assert!(!row.is_none(), "an entry needs a row");
        assert!(
            self.leaf.admits(key),
            "a key of {} bytes in an index of fixed-length keys",
            key.len()
        );
        let entry = word::entry_word(key, row);
        if self.height == 0 {
            if self.chunks_available(pool) == 0 {
                return Err(ErrorCode::TableFull);
            }
            let leaf = self.allocate_node(pool, 0);
            let format = self.leaf;
            let node = self.node_mut(pool, leaf);
            node::set_leaf_word(node, 0, entry, format);
            node::set_count(node, 1);
            self.root = leaf;
            self.height = 1;
            self.entries = 1;
            return Ok(());
        }
        let probe = Probe::entry(key, row, true);
        let mut path = Path::new();
        let slot = self.descend(pool, &probe, full, &mut path);
        let leaf_depth = self.height - 1;
        let leaf = path.nodes[leaf_depth];
        debug_assert!(
            slot == 0
                || probe.compare(self.leaf_word(self.node(pool, leaf), slot - 1), pool, full)
                    != Ordering::Equal,
            "the entry ({key:?}, {row:?}) is already in the index"
        );
        // A new first entry of a leaf only happens in the leftmost leaf: any
        // other was reached through a word (its first entry) before the new
        // entry. So no ancestor word needs changing below.
        debug_assert!(slot > 0 || path.indexes[..leaf_depth].iter().all(|&index| index == 0));
        let count = node::count(self.node(pool, leaf));
        if count < self.leaf.capacity {
            let format = self.leaf;
            let node = self.node_mut(pool, leaf);
            node::insert(
                node,
                format.column(),
                count,
                slot,
                format.encode(entry).as_ref(),
            );
            node::set_count(node, count + 1);
        } else {
            self.split_and_insert(pool, &path, slot, entry)?;
        }
        self.entries += 1;
        Ok(())
    }

    /// Whether the node at `depth` on `path` is the leftmost, and the
    /// rightmost, of its level.
    fn edges(&self, pool: &PagePool, path: &Path, depth: usize) -> (bool, bool) {
        let left_edge = path.indexes[..depth].iter().all(|&index| index == 0);
        let right_edge = (0..depth)
            .all(|above| path.index(above) + 1 == node::count(self.node(pool, path.nodes[above])));
        (left_edge, right_edge)
    }

    /// Inserts `entry` at `slot` of the full leaf at the end of `path`,
    /// splitting it and as many ancestors as are full. Fails before changing
    /// anything if the nodes that takes cannot all be had.
    fn split_and_insert(
        &mut self,
        pool: &mut PagePool,
        path: &Path,
        slot: usize,
        entry: u128,
    ) -> Result<(), ErrorCode> {
        let leaf_depth = self.height - 1;
        // The leaf's new sibling, one more per full ancestor the split
        // climbs through, and a new root if it climbs through the root.
        let mut needed = 1;
        let mut depth = leaf_depth;
        while depth > 0 && node::count(self.node(pool, path.nodes[depth - 1])) == INTERNAL_CAPACITY
        {
            needed += 1;
            depth -= 1;
        }
        if depth == 0 {
            needed += 1;
        }
        let too_deep = depth == 0 && self.height == MAX_HEIGHT;
        if too_deep || self.chunks_available(pool) < needed {
            return Err(ErrorCode::TableFull);
        }

        let leaf = path.nodes[leaf_depth];
        let sibling = self.allocate_node(pool, 0);
        let format = self.leaf;
        let (left, right) = two_nodes_mut(pool, leaf, sibling);
        let keep = split_point(
            slot,
            format.capacity,
            node::previous(left).is_none(),
            node::next(left).is_none(),
        );
        node::split_insert(
            left,
            right,
            format.column(),
            format.capacity,
            slot,
            format.encode(entry).as_ref(),
            keep,
        );
        node::set_count(left, keep);
        node::set_count(right, format.capacity + 1 - keep);
        let following = node::next(left);
        node::set_next(left, sibling);
        node::set_previous(right, leaf);
        node::set_next(right, following);
        let mut separator = node::leaf_word(right, 0, format);
        if !following.is_none() {
            node::set_previous(self.node_mut(pool, following), sibling);
        }

        // Give the new node a place in the parent, splitting upwards.
        let mut new_child = sibling;
        let mut depth = leaf_depth;
        loop {
            if depth == 0 {
                let level = node::level(self.node(pool, self.root)) + 1;
                let root = self.allocate_node(pool, level);
                let old_root = self.root;
                let node = self.node_mut(pool, root);
                node::set_word(node, 0, 0);
                node::set_child(node, 0, old_root);
                node::set_word(node, 1, separator);
                node::set_child(node, 1, new_child);
                node::set_count(node, 2);
                self.root = root;
                self.height += 1;
                return Ok(());
            }
            let parent_depth = depth - 1;
            let parent = path.nodes[parent_depth];
            let index = path.index(parent_depth) + 1;
            let count = node::count(self.node(pool, parent));
            if count < INTERNAL_CAPACITY {
                let node = self.node_mut(pool, parent);
                node::insert(node, WORDS, count, index, &separator.to_le_bytes());
                node::insert(node, CHILDREN, count, index, &new_child.raw().to_le_bytes());
                node::set_count(node, count + 1);
                return Ok(());
            }
            let (left_edge, right_edge) = self.edges(pool, path, parent_depth);
            let level = node::level(self.node(pool, parent));
            let sibling = self.allocate_node(pool, level);
            let (left, right) = two_nodes_mut(pool, parent, sibling);
            let keep = split_point(index, INTERNAL_CAPACITY, left_edge, right_edge);
            node::split_insert(
                left,
                right,
                WORDS,
                INTERNAL_CAPACITY,
                index,
                &separator.to_le_bytes(),
                keep,
            );
            node::split_insert(
                left,
                right,
                CHILDREN,
                INTERNAL_CAPACITY,
                index,
                &new_child.raw().to_le_bytes(),
                keep,
            );
            node::set_count(left, keep);
            node::set_count(right, INTERNAL_CAPACITY + 1 - keep);
            // The right node's word 0 is its first entry: the parent's word.
            separator = node::word(right, 0);
            new_child = sibling;
            depth = parent_depth;
        }
    }

    pub fn remove<K: KeySource>(
        &mut self,
        pool: &mut PagePool,
        key: &[u8],
        row: ChunkRef,
        full: &mut FullKeys<'_, K>,
    ) -> bool {
        let mut path = Path::new();
        let Some(slot) = self.find(pool, key, row, full, &mut path) else {
            return false;
        };
        let leaf_depth = self.height - 1;
        let format = self.leaf;
        let node = self.node_mut(pool, path.nodes[leaf_depth]);
        let count = node::count(node) - 1;
        node::remove(node, format.column(), count + 1, slot);
        node::set_count(node, count);
        self.entries -= 1;
        if slot == 0 && count > 0 {
            let minimum = node::leaf_word(node, 0, format);
            self.set_minimum(pool, &path, leaf_depth, minimum);
        }
        self.rebalance(pool, &mut path);
        true
    }

    /// After the leaf at the end of `path` lost an entry: frees empty nodes,
    /// merges small ones with a sibling, climbing while parents lose
    /// children, and shortens the tree while the root has one child.
    fn rebalance(&mut self, pool: &mut PagePool, path: &mut Path) {
        let leaf_depth = self.height - 1;
        let mut depth = leaf_depth;
        while depth > 0 {
            let chunk = path.nodes[depth];
            let count = node::count(self.node(pool, chunk));
            if count == 0 {
                if depth == leaf_depth {
                    self.unlink_leaf(pool, chunk);
                }
                self.free_node(pool, chunk);
                self.remove_child(pool, path, depth - 1, path.index(depth - 1));
            } else {
                let merge_below = if depth == leaf_depth {
                    self.leaf.capacity / 4
                } else {
                    INTERNAL_MERGE_BELOW
                };
                if count >= merge_below || !self.merge_with_sibling(pool, path, depth) {
                    return;
                }
            }
            depth -= 1;
        }
        // The root lost an item.
        if node::count(self.node(pool, self.root)) == 0 {
            let root = self.root;
            self.free_node(pool, root);
            self.root = ChunkRef::NONE;
            self.height = 0;
            assert_eq!(self.entries, 0);
            assert_eq!(self.slab.chunks_used(), 0);
            return;
        }
        while self.height > 1 && node::count(self.node(pool, self.root)) == 1 {
            let root = self.root;
            self.root = node::child(self.node(pool, root), 0);
            self.free_node(pool, root);
            self.height -= 1;
        }
    }

    fn unlink_leaf(&self, pool: &mut PagePool, leaf: ChunkRef) {
        let node = self.node(pool, leaf);
        let (preceding, following) = (node::previous(node), node::next(node));
        if !preceding.is_none() {
            node::set_next(self.node_mut(pool, preceding), following);
        }
        if !following.is_none() {
            node::set_previous(self.node_mut(pool, following), preceding);
        }
    }

    /// Removes child `index` (and its word) from the internal node at
    /// `depth` on `path`.
    fn remove_child(&self, pool: &mut PagePool, path: &Path, depth: usize, index: usize) {
        let node = self.node_mut(pool, path.nodes[depth]);
        let count = node::count(node);
        node::remove(node, WORDS, count, index);
        node::remove(node, CHILDREN, count, index);
        node::set_count(node, count - 1);
        if index == 0 && count > 1 {
            // Child 1 became child 0, and its first entry the node's.
            let minimum = node::word(node, 0);
            self.set_minimum(pool, path, depth, minimum);
        }
    }

    /// Merges the node at `depth` on `path` with its left or right sibling
    /// under the same parent, if their items fit in one node.
    fn merge_with_sibling(&mut self, pool: &mut PagePool, path: &Path, depth: usize) -> bool {
        let is_leaf = depth == self.height - 1;
        let capacity = if is_leaf {
            self.leaf.capacity
        } else {
            INTERNAL_CAPACITY
        };
        let parent = self.node(pool, path.nodes[depth - 1]);
        let index = path.index(depth - 1);
        let count = node::count(self.node(pool, path.nodes[depth]));
        let fits = |sibling: ChunkRef| count + node::count(self.node(pool, sibling)) <= capacity;
        let (left_index, right_index) = if index > 0 && fits(node::child(parent, index - 1)) {
            (index - 1, index)
        } else if index + 1 < node::count(parent) && fits(node::child(parent, index + 1)) {
            (index, index + 1)
        } else {
            return false;
        };
        let (left, right) = (
            node::child(parent, left_index),
            node::child(parent, right_index),
        );
        let separator = node::word(parent, right_index);
        self.merge_nodes(pool, left, right, separator, is_leaf);
        self.remove_child(pool, path, depth - 1, right_index);
        true
    }

    /// Moves every item of `right` to the end of its left sibling `left` and
    /// frees `right`; `separator` is `right`'s first entry.
    fn merge_nodes(
        &mut self,
        pool: &mut PagePool,
        left: ChunkRef,
        right: ChunkRef,
        separator: u128,
        is_leaf: bool,
    ) {
        let format = self.leaf;
        let (left_node, right_node) = two_nodes_mut(pool, left, right);
        let (left_count, right_count) = (node::count(left_node), node::count(right_node));
        if is_leaf {
            node::append(
                left_node,
                left_count,
                right_node,
                right_count,
                format.column(),
            );
            let following = node::next(right_node);
            node::set_next(left_node, following);
            if !following.is_none() {
                node::set_previous(self.node_mut(pool, following), left);
            }
        } else {
            // Right's word 0 is not kept; under `left` it needs to be.
            node::set_word(right_node, 0, separator);
            node::append(left_node, left_count, right_node, right_count, WORDS);
            node::append(left_node, left_count, right_node, right_count, CHILDREN);
        }
        node::set_count(self.node_mut(pool, left), left_count + right_count);
        self.free_node(pool, right);
    }

    /// Moves `path` to the next leaf, which must exist.
    fn advance(&self, pool: &PagePool, path: &mut Path) {
        self.step(pool, path, true);
    }

    /// Moves `path` to the previous leaf, which must exist.
    fn retreat(&self, pool: &PagePool, path: &mut Path) {
        self.step(pool, path, false);
    }

    fn step(&self, pool: &PagePool, path: &mut Path, forward: bool) {
        let leaf_depth = self.height - 1;
        // The deepest ancestor with a child beyond the one taken.
        let mut depth = leaf_depth;
        loop {
            assert!(depth > 0, "no leaf beyond the last");
            depth -= 1;
            let index = path.index(depth);
            let can_step = if forward {
                index + 1 < node::count(self.node(pool, path.nodes[depth]))
            } else {
                index > 0
            };
            if can_step {
                path.indexes[depth] = if forward { index + 1 } else { index - 1 } as u16;
                break;
            }
        }
        // Then the nearest edge of that child's subtree.
        while depth < leaf_depth {
            let child = node::child(self.node(pool, path.nodes[depth]), path.index(depth));
            depth += 1;
            path.nodes[depth] = child;
            if depth < leaf_depth {
                let count = node::count(self.node(pool, child));
                path.indexes[depth] = if forward { 0 } else { count - 1 } as u16;
            }
        }
    }

    pub fn replace_row<K: KeySource>(
        &mut self,
        pool: &mut PagePool,
        key: &[u8],
        old: ChunkRef,
        new: ChunkRef,
        full: &mut FullKeys<'_, K>,
    ) -> bool {
        assert!(!new.is_none(), "an entry needs a row");
        let mut path = Path::new();
        let Some(mut hole) = self.find(pool, key, old, full, &mut path) else {
            return false;
        };
        if old == new {
            return true;
        }
        // `(key, new)` belongs after the entries with key `key` and a row
        // below `new` (or before those above it). Take the entry out, leaving
        // a hole; move the hole past each such neighbour by moving the
        // neighbour into it, across leaves if need be (all are the same key,
        // so only rows really move); then fill it. Nothing is allocated.
        let leaf_depth = self.height - 1;
        let entry = word::with_row(
            self.leaf_word(self.node(pool, path.nodes[leaf_depth]), hole),
            new,
        );
        let target = Probe::entry(key, new, false);
        let forward = new.raw() > old.raw();
        loop {
            let leaf = path.nodes[leaf_depth];
            let node = self.node(pool, leaf);
            let neighbour = if forward {
                if hole + 1 < node::count(node) {
                    Some((leaf, hole + 1))
                } else {
                    Some((node::next(node), 0)).filter(|(next, _)| !next.is_none())
                }
            } else if hole > 0 {
                Some((leaf, hole - 1))
            } else {
                let preceding = node::previous(node);
                (!preceding.is_none())
                    .then(|| (preceding, node::count(self.node(pool, preceding)) - 1))
            };
            let passed = neighbour.filter(|&(neighbour_leaf, neighbour_slot)| {
                let neighbour_word =
                    self.leaf_word(self.node(pool, neighbour_leaf), neighbour_slot);
                // Forward the hole passes entries before `(key, new)`,
                // backward those after it.
                target.before(neighbour_word, pool, full) == forward
            });
            let Some((neighbour_leaf, neighbour_slot)) = passed else {
                let format = self.leaf;
                node::set_leaf_word(self.node_mut(pool, leaf), hole, entry, format);
                if hole == 0 {
                    self.set_minimum(pool, &path, leaf_depth, entry);
                }
                return true;
            };
            let moved = self.leaf_word(self.node(pool, neighbour_leaf), neighbour_slot);
            let format = self.leaf;
            node::set_leaf_word(self.node_mut(pool, leaf), hole, moved, format);
            if hole == 0 {
                self.set_minimum(pool, &path, leaf_depth, moved);
            }
            if neighbour_leaf != leaf {
                if forward {
                    self.advance(pool, &mut path);
                } else {
                    self.retreat(pool, &mut path);
                }
                assert_eq!(
                    path.nodes[leaf_depth], neighbour_leaf,
                    "leaf links disagree with the tree"
                );
            }
            hole = neighbour_slot;
        }
    }

    /// Where a scan starts: a leaf and the slot of its first entry
    /// (ascending), or the slot after its first entry (descending).
    fn scan_start<K: KeySource>(
        &self,
        pool: &PagePool,
        start: Bound<'_>,
        descending: bool,
        full: &mut FullKeys<'_, K>,
    ) -> (ChunkRef, usize) {
        // Ascending, the scan starts at the first entry not before the probe;
        // descending, it starts below the first entry not before the probe.
        let probe = match start {
            Bound::Unbounded => {
                let leaf = self.edge_leaf(pool, descending);
                let slot = if descending {
                    node::count(self.node(pool, leaf))
                } else {
                    0
                };
                return (leaf, slot);
            }
            Bound::Prefix { key, inclusive } => Probe::prefix(key, inclusive == descending),
            Bound::After { key, row } => Probe::entry(key, row, !descending),
        };
        let mut path = Path::new();
        let slot = self.descend(pool, &probe, full, &mut path);
        (path.nodes[self.height - 1], slot)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn collect<K: KeySource>(
        &self,
        pool: &PagePool,
        start: Bound<'_>,
        end: Bound<'_>,
        descending: bool,
        full: &mut FullKeys<'_, K>,
        out: &mut Vec<ChunkRef>,
        limit: usize,
    ) -> Collected {
        if limit == 0 {
            return Collected::Limit;
        }
        if self.height == 0 {
            return Collected::Exhausted;
        }
        // Ascending keeps the entries before the end probe; descending those
        // not before it.
        let end_test = match end {
            Bound::Unbounded => None,
            Bound::Prefix { key, inclusive } => Some(EndTest {
                probe: Probe::prefix(key, inclusive != descending),
                keep_before: !descending,
            }),
            Bound::After { key, row } => Some(EndTest {
                probe: Probe::entry(key, row, !descending),
                keep_before: !descending,
            }),
        };
        let (mut leaf, mut slot) = self.scan_start(pool, start, descending, full);
        let keeps = |stored: u128, full: &mut FullKeys<'_, K>| {
            end_test
                .as_ref()
                .is_none_or(|test| test.keeps(stored, pool, full))
        };
        let mut remaining = limit;
        loop {
            let node = self.node(pool, leaf);
            let count = node::count(node);
            // Only the next `remaining` entries matter. Testing the far one of
            // them against the end settles the window at once, unless the end
            // is inside it; then a search finds where.
            let (first, last, end_here) = if descending {
                // Entries `..slot` of this leaf come next, downwards.
                let window = slot.saturating_sub(remaining)..slot;
                if window.is_empty() || keeps(self.leaf_word(node, window.start), full) {
                    (window.start, window.end, false)
                } else {
                    let first = partition_point(window.start + 1, window.end, |at| {
                        !keeps(self.leaf_word(node, at), full)
                    });
                    (first, window.end, true)
                }
            } else {
                let window = slot..count.min(slot.saturating_add(remaining));
                if window.is_empty() || keeps(self.leaf_word(node, window.end - 1), full) {
                    (window.start, window.end, false)
                } else {
                    let last = partition_point(window.start, window.end - 1, |at| {
                        keeps(self.leaf_word(node, at), full)
                    });
                    (window.start, last, true)
                }
            };
            if descending {
                out.extend(
                    (first..last)
                        .rev()
                        .map(|at| node::leaf_row(node, at, self.leaf)),
                );
            } else {
                out.extend((first..last).map(|at| node::leaf_row(node, at, self.leaf)));
            }
            remaining -= last - first;
            if end_here {
                return Collected::Exhausted;
            }
            let beyond = if descending {
                node::previous(node)
            } else {
                node::next(node)
            };
            if remaining == 0 {
                // Whether another entry follows: the next one in this leaf
                // says; at the leaf's end, only whether a leaf follows.
                let following = if descending {
                    first.checked_sub(1)
                } else {
                    Some(last).filter(|&at| at < count)
                };
                let more = match following {
                    Some(at) => keeps(self.leaf_word(node, at), full),
                    None => !beyond.is_none(),
                };
                return if more {
                    Collected::Limit
                } else {
                    Collected::Exhausted
                };
            }
            if beyond.is_none() {
                return Collected::Exhausted;
            }
            leaf = beyond;
            slot = if descending {
                node::count(self.node(pool, leaf))
            } else {
                0
            };
        }
    }

    pub fn release_all(&mut self, pool: &mut PagePool) {
        self.slab.release_all(pool);
        self.root = ChunkRef::NONE;
        self.height = 0;
        self.entries = 0;
    }

    /// Asserts every structural invariant; reads every entry's full key.
    pub fn check_invariants<K: KeySource>(&self, pool: &PagePool, keys: &K) {
        if self.height == 0 {
            assert!(self.root.is_none());
            assert_eq!(self.entries, 0);
            assert_eq!(self.slab.chunks_used(), 0);
            return;
        }
        let mut leaves = Vec::new();
        let mut nodes = 0;
        self.check_node(
            pool,
            self.root,
            self.height - 1,
            true,
            &mut leaves,
            &mut nodes,
        );
        assert_eq!(
            nodes,
            self.slab.chunks_used(),
            "every chunk in use is a node of the tree"
        );

        let mut previous_entry: Option<(Vec<u8>, u32)> = None;
        let mut entries = 0;
        for (position, &leaf) in leaves.iter().enumerate() {
            let node = self.node(pool, leaf);
            let expected_previous = if position == 0 {
                ChunkRef::NONE
            } else {
                leaves[position - 1]
            };
            let expected_next = leaves.get(position + 1).copied().unwrap_or(ChunkRef::NONE);
            assert_eq!(
                node::previous(node),
                expected_previous,
                "previous link of leaf {leaf:?}"
            );
            assert_eq!(
                node::next(node),
                expected_next,
                "next link of leaf {leaf:?}"
            );
            for slot in 0..node::count(node) {
                let stored = self.leaf_word(node, slot);
                let row = word::row_of(stored);
                let mut key = Vec::new();
                keys.key(pool, row, &mut key);
                assert_eq!(
                    word::entry_word(&key, row),
                    stored,
                    "entry of row {row:?} disagrees with its key"
                );
                let entry = (key, row.raw());
                if let Some(previous_entry) = &previous_entry {
                    assert!(
                        previous_entry < &entry,
                        "entries out of order: {previous_entry:?} then {entry:?}"
                    );
                }
                previous_entry = Some(entry);
                entries += 1;
            }
        }
        assert_eq!(entries, self.entries, "entry count");
    }

    /// Checks the subtree at `chunk`, returns its first entry.
    fn check_node(
        &self,
        pool: &PagePool,
        chunk: ChunkRef,
        level: usize,
        is_root: bool,
        leaves: &mut Vec<ChunkRef>,
        nodes: &mut u64,
    ) -> u128 {
        *nodes += 1;
        let node = self.node(pool, chunk);
        assert_eq!(
            usize::from(node::level(node)),
            level,
            "level of node {chunk:?}"
        );
        let count = node::count(node);
        assert!(count >= 1, "node {chunk:?} is empty");
        if level == 0 {
            assert!(count <= self.leaf.capacity);
            leaves.push(chunk);
            return self.leaf_word(node, 0);
        }
        assert!(count <= INTERNAL_CAPACITY);
        assert!(
            !is_root || count >= 2,
            "an internal root has two children or more"
        );
        let mut minimum = 0;
        for index in 0..count {
            let child_minimum = self.check_node(
                pool,
                node::child(node, index),
                level - 1,
                false,
                leaves,
                nodes,
            );
            if index == 0 {
                minimum = child_minimum;
            } else {
                assert_eq!(
                    node::word(node, index),
                    child_minimum,
                    "word {index} of node {chunk:?} is not its child's first entry"
                );
            }
        }
        minimum
    }
}
