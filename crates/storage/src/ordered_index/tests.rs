//! Unit tests, run with the tiny nodes `cfg(test)` builds (31 entries a
//! leaf, 24 children an internal node), so that a few hundred entries make a
//! tree of three or four levels and every split, merge and root change is
//! exercised; `tests/ordered_index.rs` runs the same model on real nodes.

use super::model::{Model, Operation, Random, operation};
use super::node::{INTERNAL_CAPACITY, LEAF_CAPACITY};
use super::{Bound, ChunkRef, OrderedIndex, PagePool};
use proptest::prelude::*;

const POOL_BYTES: u64 = 64 << 20;

#[test]
fn tiny_nodes_in_unit_tests() {
    assert_eq!((LEAF_CAPACITY, INTERNAL_CAPACITY), (31, 24));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn matches_the_oracle(operations in prop::collection::vec(operation(), 1..1500)) {
        Model::run(POOL_BYTES, &operations, 97);
    }

    /// The same on an index of fixed 4-byte keys (INT NOT NULL), whose
    /// leaves store only rows and keys, and of fixed 9-byte keys.
    #[test]
    fn fixed_keys_match_the_oracle(
        operations in prop::collection::vec(operation(), 1..1500),
        key_bytes in prop::sample::select(vec![1usize, 4, 9, 11]),
    ) {
        Model::run_fixed(POOL_BYTES, key_bytes, &operations, 97);
    }

    /// Mostly inserts, then mostly removals: deep trees that grow and shrink.
    #[test]
    fn grows_and_shrinks(
        growing in prop::collection::vec(operation(), 500..2500),
        shrinking in prop::collection::vec(any::<usize>(), 0..2500),
    ) {
        let mut operations: Vec<Operation> = growing
            .into_iter()
            .filter(|operation| !matches!(operation, Operation::Remove(_)))
            .collect();
        operations.extend(shrinking.into_iter().map(Operation::Remove));
        Model::run(POOL_BYTES, &operations, 211);
    }
}

#[test]
fn ascending_and_descending_loads_fill_nodes() {
    for descending in [false, true] {
        let mut model = Model::new(POOL_BYTES);
        for number in 0..5000u32 {
            let number = if descending { 5000 - number } else { number };
            let key = [&[1u8][..], &number.to_be_bytes()].concat();
            assert!(model.insert(&key, true));
        }
        model.check();
        // Full leaves but the last: 5000 entries in ⌈5000 / 31⌉ = 162 leaves
        // and 8 internal nodes fit in 3 pages of 64 nodes; half-full nodes
        // would take 6.
        assert_eq!(model.index.pages(), 3);
        model.empty(&mut Random::new(5));
    }
}

#[test]
fn long_equal_runs_move_rows_across_leaves() {
    let mut model = Model::new(POOL_BYTES);
    let long_key = b"\x01abcdefghijklmnopqrstuvwxyz".to_vec();
    for round in 0..400 {
        model.insert(&long_key, round % 3 != 0);
        model.insert(b"\x01abcdefghijklmnopqrstuvwxy", true);
        model.insert(b"\x01abcdefghijklmnopqrstuvwxyz\x00", true);
    }
    model.check();
    let mut random = Random::new(11);
    for step in 0..300 {
        let run: Vec<u32> = model
            .oracle
            .iter()
            .filter(|(key, _)| *key == long_key)
            .map(|(_, row)| *row)
            .collect();
        let old = run[random.below(run.len())];
        model.apply(&Operation::Remove(usize::MAX)); // keeps sizes moving
        if !model.oracle.contains(&(long_key.clone(), old)) {
            continue;
        }
        // Rows from both ends of those handed out: the entry crosses the run.
        let position = model
            .oracle
            .iter()
            .position(|entry| *entry == (long_key.clone(), old))
            .unwrap();
        model.apply(&Operation::Replace {
            position,
            higher: step % 2 == 0,
        });
        if step % 25 == 0 {
            model.check();
        }
    }
    model.check();
    model.empty(&mut random);
}

#[test]
fn prefix_bounds_on_long_keys() {
    let mut model = Model::new(POOL_BYTES);
    let mut random = Random::new(3);
    for _ in 0..3000 {
        let key = random.key();
        model.insert(&key, true);
    }
    model.check();
    let probes: [&[u8]; 6] = [
        b"",
        b"\x01abcdefghi",
        b"\x01abcdefghijk",
        b"\x01abcdefghijk\x00",
        b"\x01abcdefghijklmnopq\x7f",
        b"\xff",
    ];
    for start in probes {
        for end in probes {
            for (start_inclusive, end_inclusive, descending) in
                (0..8).map(|bits| (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0))
            {
                let start = Bound::Prefix {
                    key: start,
                    inclusive: start_inclusive,
                };
                let end = Bound::Prefix {
                    key: end,
                    inclusive: end_inclusive,
                };
                for limit in [1, 40, usize::MAX] {
                    model.collect(start, end, descending, limit, limit == 40);
                }
            }
        }
    }
    model.empty(&mut random);
}

#[test]
fn table_full_leaves_the_index_unchanged() {
    for seed in 0..4 {
        Model::fill_until_full(seed);
    }
}

#[test]
fn empty_index() {
    let mut pool = PagePool::new(4 * 32 * 1024).unwrap();
    let mut index = OrderedIndex::default();
    let keys = super::model::MapKeys(Default::default());
    let mut out = Vec::new();
    let collected = index.collect(
        &pool,
        Bound::Unbounded,
        Bound::Unbounded,
        false,
        &keys,
        &mut out,
        10,
    );
    assert_eq!(collected, super::Collected::Exhausted);
    assert!(out.is_empty());
    assert!(!index.remove(&mut pool, b"x", ChunkRef::from_raw(1), &keys));
    assert!(!index.replace_row(
        &mut pool,
        b"x",
        ChunkRef::from_raw(1),
        ChunkRef::from_raw(2),
        &keys
    ));
    index.check_invariants(&pool, &keys);
    index.release_all(&mut pool);
    assert_eq!(
        (index.entries(), index.pages(), pool.pages_used()),
        (0, 0, 0)
    );
}

#[test]
fn index_can_move_to_its_thread() {
    // An index belongs to one LDM thread (no locks on the data path), but
    // the engine that owns it is built on one thread and run on another.
    fn movable<T: Send>() {}
    movable::<OrderedIndex>();
}
