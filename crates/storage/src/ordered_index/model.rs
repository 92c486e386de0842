//! Test support: an ordered index driven step by step next to a `BTreeSet`
//! oracle of `(key, row)`, with rows' keys kept in a map.
//!
//! Shared by the unit tests, which build the crate with tiny nodes so a few
//! hundred entries make a deep tree, and by `tests/ordered_index.rs`, which
//! runs the real node size (it includes this file with `#[path]`). It names
//! what it needs through `super::`, which both places import.

use super::{Bound, ChunkRef, Collected, KeySource, OrderedIndex, PagePool};
use proptest::prelude::*;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Rows' keys, as the engine would read them from the rows.
pub struct MapKeys(pub BTreeMap<ChunkRef, Vec<u8>>);

impl KeySource for MapKeys {
    fn key(&self, _pool: &PagePool, row: ChunkRef, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0[&row]);
    }
}

/// Which key a bound is made from.
#[derive(Debug, Clone)]
pub enum KeyPick {
    /// The key of the oracle's entry at this position (modulo its length).
    Existing(usize),
    Given(Vec<u8>),
}

#[derive(Debug, Clone)]
pub enum BoundSpec {
    Unbounded,
    /// The picked key cut to `length` bytes (if longer).
    Prefix {
        key: KeyPick,
        length: usize,
        inclusive: bool,
    },
    /// After the picked key with an existing row (`row: None`, the picked
    /// entry's own) or a row of its own.
    After {
        key: KeyPick,
        row: Option<u32>,
    },
}

#[derive(Debug, Clone)]
pub enum Operation {
    Insert(Vec<u8>),
    /// Inserts a new row with the key of an existing entry.
    InsertDuplicate(usize),
    /// Removes the oracle's entry at this position (modulo its length).
    Remove(usize),
    /// Removes an entry that is not there.
    RemoveMissing(Vec<u8>),
    /// Gives the entry at this position a new row, from the low or high end
    /// of the rows handed out so far (rows count up) so it moves.
    Replace {
        position: usize,
        higher: bool,
    },
    Collect {
        start: BoundSpec,
        end: BoundSpec,
        descending: bool,
        limit: usize,
        resume: bool,
    },
}

fn byte() -> impl Strategy<Value = u8> {
    prop::sample::select(vec![0u8, 1, 2, 0x61, 0x7f, 0xfe, 0xff])
}

/// Short keys, and keys sharing long stems around and past the 11 bytes a
/// word keeps, so full keys get compared.
pub fn key() -> impl Strategy<Value = Vec<u8>> {
    let stems: Vec<&'static [u8]> = vec![
        b"\x01",
        b"\x01abcdefgh",
        b"\x01abcdefghi",
        b"\x01abcdefghij",
        b"\x01abcdefghijk",
        b"\x01abcdefghijklmnopq",
        b"\x01abcdefghijklmnopr",
    ];
    let short = prop::collection::vec(byte(), 0..6);
    let long = (
        prop::sample::select(stems),
        prop::collection::vec(byte(), 0..4),
    )
        .prop_map(|(stem, tail)| [stem, &tail[..]].concat());
    prop_oneof![short, long]
}

fn key_pick() -> impl Strategy<Value = KeyPick> {
    prop_oneof![3 => any::<usize>().prop_map(KeyPick::Existing), 1 => key().prop_map(KeyPick::Given)]
}

fn bound_spec() -> impl Strategy<Value = BoundSpec> {
    prop_oneof![
        1 => Just(BoundSpec::Unbounded),
        4 => (key_pick(), 0usize..24, any::<bool>())
            .prop_map(|(key, length, inclusive)| BoundSpec::Prefix { key, length, inclusive }),
        2 => (key_pick(), prop::option::of(any::<u32>()))
            .prop_map(|(key, row)| BoundSpec::After { key, row }),
    ]
}

pub fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        30 => key().prop_map(Operation::Insert),
        10 => any::<usize>().prop_map(Operation::InsertDuplicate),
        18 => any::<usize>().prop_map(Operation::Remove),
        2 => key().prop_map(Operation::RemoveMissing),
        8 => (any::<usize>(), any::<bool>()).prop_map(|(position, higher)| Operation::Replace { position, higher }),
        6 => (bound_spec(), bound_spec(), any::<bool>(), prop_oneof![1usize..4, 1usize..2000], any::<bool>())
            .prop_map(|(start, end, descending, limit, resume)| Operation::Collect {
                start,
                end,
                descending,
                limit,
                resume
            }),
    ]
}

/// How an entry's key, cut to the bound's length, compares with the bound.
fn prefix_order(key: &[u8], bound: &[u8]) -> Ordering {
    let compared = key.len().min(bound.len());
    key[..compared]
        .cmp(&bound[..compared])
        .then(if key.len() < bound.len() {
            Ordering::Less
        } else {
            Ordering::Equal
        })
}

/// Whether `(key, row)` is within `bound`, used as a scan's start (`is_start`)
/// or end, by the `Bound` docs.
fn within(key: &[u8], row: u32, bound: &Bound<'_>, is_start: bool, descending: bool) -> bool {
    // Whether the bound limits from below in ascending key order.
    let lower = is_start != descending;
    match *bound {
        Bound::Unbounded => true,
        Bound::Prefix {
            key: bound_key,
            inclusive,
        } => {
            let order = prefix_order(key, bound_key);
            match (lower, inclusive) {
                (true, true) => order != Ordering::Less,
                (true, false) => order == Ordering::Greater,
                (false, true) => order != Ordering::Greater,
                (false, false) => order == Ordering::Less,
            }
        }
        Bound::After {
            key: bound_key,
            row: bound_row,
        } => {
            let order = (key, row).cmp(&(bound_key, bound_row.raw()));
            match (is_start, descending) {
                (true, false) => order == Ordering::Greater,
                (true, true) => order == Ordering::Less,
                (false, false) => order != Ordering::Greater,
                (false, true) => order != Ordering::Less,
            }
        }
    }
}

/// A small deterministic generator for the tests that are not property tests.
pub struct Random(u64);

impl Random {
    pub fn new(seed: u64) -> Random {
        Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    /// A key like those `key()` makes.
    pub fn key(&mut self) -> Vec<u8> {
        const BYTES: [u8; 7] = [0, 1, 2, 0x61, 0x7f, 0xfe, 0xff];
        const STEMS: [&[u8]; 4] = [
            b"",
            b"\x01abcdefghi",
            b"\x01abcdefghijk",
            b"\x01abcdefghijklmnopq",
        ];
        let mut key = STEMS[self.below(STEMS.len())].to_vec();
        for _ in 0..self.below(6) {
            key.push(BYTES[self.below(BYTES.len())]);
        }
        key
    }
}

pub struct Model {
    pub pool: PagePool,
    pub index: OrderedIndex,
    pub keys: MapKeys,
    pub oracle: BTreeSet<(Vec<u8>, u32)>,
    /// Rows are handed out counting up, so a new row sorts after every
    /// older one among equal keys; `Replace` also takes rows from below.
    next_row_up: u32,
    next_row_down: u32,
    /// For an index of fixed-length keys: the length inserted keys are cut
    /// or zero-padded to (bounds and probes keep any length).
    fixed_key_bytes: Option<usize>,
}

impl Model {
    pub fn new(pool_bytes: u64) -> Model {
        Model {
            pool: PagePool::new(pool_bytes).unwrap(),
            index: OrderedIndex::new(),
            keys: MapKeys(BTreeMap::new()),
            oracle: BTreeSet::new(),
            next_row_up: 1 << 30,
            next_row_down: 1 << 30,
            fixed_key_bytes: None,
        }
    }

    /// A model of an index whose keys are all `key_bytes` long.
    pub fn with_fixed_keys(pool_bytes: u64, key_bytes: usize) -> Model {
        Model {
            index: OrderedIndex::with_fixed_key_bytes(key_bytes),
            fixed_key_bytes: Some(key_bytes),
            ..Model::new(pool_bytes)
        }
    }

    fn fresh_row(&mut self, higher: bool, key: &[u8]) -> ChunkRef {
        let raw = if higher {
            self.next_row_up += 1;
            self.next_row_up
        } else {
            self.next_row_down -= 1;
            self.next_row_down
        };
        let row = ChunkRef::from_raw(raw);
        self.keys.0.insert(row, key.to_vec());
        row
    }

    fn nth(&self, position: usize) -> Option<(Vec<u8>, u32)> {
        if self.oracle.is_empty() {
            return None;
        }
        self.oracle
            .iter()
            .nth(position % self.oracle.len())
            .cloned()
    }

    /// Inserts `(key, fresh row)`; false (and nothing changed) on `TableFull`.
    pub fn insert(&mut self, key: &[u8], higher: bool) -> bool {
        let mut key = key.to_vec();
        if let Some(length) = self.fixed_key_bytes {
            key.resize(length, 0);
        }
        let row = self.fresh_row(higher, &key);
        self.insert_entry(&key, row)
    }

    /// Inserts `(key, row)`, `row` having that key already.
    pub fn insert_entry(&mut self, key: &[u8], row: ChunkRef) -> bool {
        match self.index.insert(&mut self.pool, key, row, &self.keys) {
            Ok(()) => {
                self.oracle.insert((key.to_vec(), row.raw()));
                true
            }
            Err(code) => {
                assert_eq!(code, schema::ErrorCode::TableFull);
                false
            }
        }
    }

    pub fn remove(&mut self, key: &[u8], row: u32) -> bool {
        let removed = self
            .index
            .remove(&mut self.pool, key, ChunkRef::from_raw(row), &self.keys);
        assert_eq!(
            removed,
            self.oracle.remove(&(key.to_vec(), row)),
            "remove ({key:?}, {row})"
        );
        removed
    }

    fn key_of(&self, pick: &KeyPick) -> Vec<u8> {
        match pick {
            KeyPick::Existing(position) => {
                self.nth(*position).map(|(key, _)| key).unwrap_or_default()
            }
            KeyPick::Given(key) => key.clone(),
        }
    }

    fn bound_parts(&self, spec: &BoundSpec) -> (Vec<u8>, Option<ChunkRef>) {
        match spec {
            BoundSpec::Unbounded => (Vec::new(), None),
            BoundSpec::Prefix { key, length, .. } => {
                let mut key = self.key_of(key);
                key.truncate(*length);
                (key, None)
            }
            BoundSpec::After {
                key: KeyPick::Existing(position),
                row: None,
            } => match self.nth(*position) {
                Some((key, row)) => (key, Some(ChunkRef::from_raw(row))),
                None => (Vec::new(), Some(ChunkRef::from_raw(0))),
            },
            BoundSpec::After { key, row } => {
                // Rows near those handed out, so some tie with real entries' keys.
                let row = row.map_or(self.next_row_up, |row| (1 << 30) - 64 + row % 128);
                (self.key_of(key), Some(ChunkRef::from_raw(row)))
            }
        }
    }

    fn bound<'a>(spec: &BoundSpec, parts: &'a (Vec<u8>, Option<ChunkRef>)) -> Bound<'a> {
        match spec {
            BoundSpec::Unbounded => Bound::Unbounded,
            BoundSpec::Prefix { inclusive, .. } => Bound::Prefix {
                key: &parts.0,
                inclusive: *inclusive,
            },
            BoundSpec::After { .. } => Bound::After {
                key: &parts.0,
                row: parts.1.unwrap(),
            },
        }
    }

    /// Collects once, and (with `resume`) again in short steps that resume
    /// after the last entry, checking both against the oracle.
    pub fn collect(
        &self,
        start: Bound<'_>,
        end: Bound<'_>,
        descending: bool,
        limit: usize,
        resume: bool,
    ) {
        let mut expected: Vec<(Vec<u8>, u32)> = self
            .oracle
            .iter()
            .filter(|(key, row)| {
                within(key, *row, &start, true, descending)
                    && within(key, *row, &end, false, descending)
            })
            .cloned()
            .collect();
        if descending {
            expected.reverse();
        }
        let mut out = vec![ChunkRef::NONE];
        let collected = self.index.collect(
            &self.pool, start, end, descending, &self.keys, &mut out, limit,
        );
        assert_eq!(out[0], ChunkRef::NONE, "collect does not clear `out`");
        let rows: Vec<u32> = out[1..].iter().map(|row| row.raw()).collect();
        let wanted: Vec<u32> = expected.iter().take(limit).map(|(_, row)| *row).collect();
        assert_eq!(
            rows, wanted,
            "collect({start:?}, {end:?}, descending {descending}, limit {limit})"
        );
        match expected.len().cmp(&limit) {
            Ordering::Less => assert_eq!(collected, Collected::Exhausted),
            Ordering::Greater => assert_eq!(collected, Collected::Limit),
            Ordering::Equal => {}
        }
        if !resume {
            return;
        }
        // Resume in steps of a few entries after the last one returned.
        let step = limit.clamp(1, 7);
        let mut resumed: Vec<u32> = Vec::new();
        let mut last: Option<(Vec<u8>, ChunkRef)> = None;
        loop {
            let mut out = Vec::new();
            let from = match &last {
                Some((key, row)) => Bound::After { key, row: *row },
                None => start,
            };
            let collected = self.index.collect(
                &self.pool, from, end, descending, &self.keys, &mut out, step,
            );
            assert!(out.len() <= step);
            resumed.extend(out.iter().map(|row| row.raw()));
            assert!(
                resumed.len() <= expected.len(),
                "resuming returns entries again: {resumed:?}"
            );
            if let Some(&row) = out.last() {
                last = Some((self.keys.0[&row].clone(), row));
            }
            if collected == Collected::Exhausted {
                break;
            }
            assert_eq!(
                out.len(),
                step,
                "a scan stopped at its limit collected the limit"
            );
        }
        let all: Vec<u32> = expected.iter().map(|(_, row)| *row).collect();
        assert_eq!(
            resumed, all,
            "resumed collect({start:?}, {end:?}, descending {descending})"
        );
    }

    pub fn apply(&mut self, operation: &Operation) {
        match operation {
            Operation::Insert(key) => {
                self.insert(key, true);
            }
            Operation::InsertDuplicate(position) => {
                if let Some((key, _)) = self.nth(*position) {
                    let higher = position % 2 == 0;
                    self.insert(&key, higher);
                }
            }
            Operation::Remove(position) => {
                if let Some((key, row)) = self.nth(*position) {
                    assert!(self.remove(&key, row));
                }
            }
            Operation::RemoveMissing(key) => {
                // A row that exists with another key, and one with no entry.
                let row = self.nth(key.len()).map_or(7, |(_, row)| row);
                if !self.oracle.contains(&(key.clone(), row)) {
                    assert!(!self.remove(key, row));
                }
                assert!(!self.remove(key, self.next_row_up + 1));
            }
            Operation::Replace { position, higher } => {
                if let Some((key, old)) = self.nth(*position) {
                    let new = self.fresh_row(*higher, &key);
                    let replaced = self.index.replace_row(
                        &mut self.pool,
                        &key,
                        ChunkRef::from_raw(old),
                        new,
                        &self.keys,
                    );
                    assert!(replaced, "replace_row of an entry that is there");
                    self.oracle.remove(&(key.clone(), old));
                    self.oracle.insert((key, new.raw()));
                }
                let missing = self.next_row_up + 2;
                assert!(!self.index.replace_row(
                    &mut self.pool,
                    b"missing",
                    ChunkRef::from_raw(missing),
                    ChunkRef::from_raw(missing + 1),
                    &self.keys
                ));
            }
            Operation::Collect {
                start,
                end,
                descending,
                limit,
                resume,
            } => {
                let start_parts = self.bound_parts(start);
                let end_parts = self.bound_parts(end);
                let start_bound = Model::bound(start, &start_parts);
                let end_bound = Model::bound(end, &end_parts);
                self.collect(start_bound, end_bound, *descending, *limit, *resume);
            }
        }
    }

    /// Invariants, and the whole contents both ways.
    pub fn check(&self) {
        self.index.check_invariants(&self.pool, &self.keys);
        assert_eq!(self.index.entries(), self.oracle.len() as u64);
        for descending in [false, true] {
            self.collect(
                Bound::Unbounded,
                Bound::Unbounded,
                descending,
                usize::MAX,
                false,
            );
        }
    }

    /// Removes every entry in a scrambled order, then releases the pages.
    pub fn empty(&mut self, random: &mut Random) {
        let mut entries: Vec<(Vec<u8>, u32)> = self.oracle.iter().cloned().collect();
        for position in (1..entries.len()).rev() {
            entries.swap(position, random.below(position + 1));
        }
        for (done, (key, row)) in entries.iter().enumerate() {
            assert!(self.remove(key, *row));
            if done % 997 == 0 {
                self.index.check_invariants(&self.pool, &self.keys);
            }
        }
        self.check();
        assert_eq!(self.index.entries(), 0);
        self.index.release_all(&mut self.pool);
        assert_eq!(self.index.pages(), 0);
        assert_eq!(self.pool.pages_used(), 0);
    }

    /// Runs `operations`, checking everything every `check_every` steps and
    /// at the end, then empties the index.
    pub fn run(pool_bytes: u64, operations: &[Operation], check_every: usize) {
        Model::run_model(Model::new(pool_bytes), operations, check_every);
    }

    /// `run` on an index of fixed-length keys.
    pub fn run_fixed(
        pool_bytes: u64,
        key_bytes: usize,
        operations: &[Operation],
        check_every: usize,
    ) {
        Model::run_model(
            Model::with_fixed_keys(pool_bytes, key_bytes),
            operations,
            check_every,
        );
    }

    fn run_model(mut model: Model, operations: &[Operation], check_every: usize) {
        for (done, operation) in operations.iter().enumerate() {
            model.apply(operation);
            if done % check_every == check_every - 1 {
                model.check();
            }
        }
        model.check();
        model.empty(&mut Random::new(operations.len() as u64));
    }

    /// Fills a 4-page pool until an insert fails, checks each failure left
    /// the index as it was, and that it still works; then empties it.
    pub fn fill_until_full(seed: u64) {
        let mut model = Model::new(4 * 32 * 1024);
        let mut random = Random::new(seed);
        let mut failures = 0;
        while failures < 50 {
            let key = random.key();
            let (entries, pages, used) = (
                model.index.entries(),
                model.index.pages(),
                model.pool.pages_used(),
            );
            if model.insert(&key, random.below(2) == 0) {
                continue;
            }
            failures += 1;
            assert_eq!(model.index.entries(), entries);
            assert_eq!(model.index.pages(), pages);
            assert_eq!(model.pool.pages_used(), used);
            assert_eq!(
                model.pool.pages_free(),
                0,
                "TableFull only once the pool is used up"
            );
            // ...and the slab's pages too, but for fewer nodes than a split
            // through every level and a new root would take.
            let nodes_owned = pages * (32 * 1024 / OrderedIndex::NODE_BYTES);
            let nodes_free = nodes_owned - model.index.nodes() as usize;
            assert!(
                nodes_free <= model.index.height(),
                "TableFull with {nodes_free} nodes free"
            );
            if failures % 10 == 1 {
                model.check();
                // Room made by a removal is used again.
                let (key, row) = model.nth(random.next() as usize).unwrap();
                model.remove(&key, row);
                assert!(model.insert_entry(&key, ChunkRef::from_raw(row)));
            }
        }
        model.check();
        model.empty(&mut random);
    }
}
