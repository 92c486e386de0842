//! Ordered index tests on real nodes (4 KiB): the oracle model of
//! `src/ordered_index/model.rs` on random operations, a large randomized
//! run that builds a three-level tree, `TableFull` on a tiny pool, and an
//! ignored micro-timing (`cargo test --release -p storage --test
//! ordered_index -- --ignored --nocapture`).

use proptest::prelude::*;
use std::time::Instant;
use storage::memory::{ChunkRef, PagePool};
use storage::ordered_index::{Bound, Collected, KeySource, OrderedIndex};

#[path = "../src/ordered_index/model.rs"]
mod model;

use model::{Model, Operation, Random, operation};

const POOL_BYTES: u64 = 256 << 20;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn ordered_index_matches_the_oracle(operations in prop::collection::vec(operation(), 1..6000)) {
        Model::run(POOL_BYTES, &operations, 1499);
    }

    /// Compact leaves (row and key only) for 4-byte keys, as an INT NOT NULL
    /// index has: 510 entries a leaf.
    #[test]
    fn ordered_index_of_fixed_keys_matches_the_oracle(operations in prop::collection::vec(operation(), 1..6000)) {
        Model::run_fixed(POOL_BYTES, 4, &operations, 1499);
    }
}

#[test]
fn ordered_index_large_random_run() {
    let mut model = Model::new(POOL_BYTES);
    let mut random = Random::new(42);
    // Enough entries for three levels: ~200 leaves under each internal node.
    for step in 0..120_000 {
        let key = random.key();
        if random.below(8) == 0 {
            let mut number = key.clone();
            number.extend_from_slice(&(step as u32).to_be_bytes());
            model.insert(&number, true);
        } else {
            model.insert(&key, random.below(2) == 0);
        }
    }
    model.check();
    for step in 0..60_000usize {
        let operation = match random.below(10) {
            0..=5 => Operation::Remove(random.next() as usize),
            6 | 7 => Operation::Replace {
                position: random.next() as usize,
                higher: step % 2 == 0,
            },
            _ => Operation::Insert(random.key()),
        };
        model.apply(&operation);
        if step % 20_000 == 0 {
            let probe = random.key();
            let bound = Bound::Prefix {
                key: &probe,
                inclusive: true,
            };
            model.collect(bound, Bound::Unbounded, step % 40_000 == 0, 3000, true);
        }
    }
    model.check();
    model.empty(&mut random);
}

#[test]
fn ordered_index_table_full_leaves_it_unchanged() {
    for seed in 0..3 {
        Model::fill_until_full(seed);
    }
}

/// Keys made from the row number, so timing measures the index alone.
struct NumberedKeys {
    scramble: bool,
}

impl NumberedKeys {
    fn key(&self, number: u32) -> [u8; 5] {
        let value = if self.scramble { mix(number) } else { number };
        let bytes = value.to_be_bytes();
        [1, bytes[0], bytes[1], bytes[2], bytes[3]]
    }
}

impl KeySource for NumberedKeys {
    fn key(&self, _pool: &PagePool, row: ChunkRef, out: &mut Vec<u8>) {
        out.extend_from_slice(&NumberedKeys::key(self, row.raw()));
    }
}

/// A bijection of `u32` that scatters consecutive numbers (murmur3's
/// finalizer), so keys made from it arrive in random order.
fn mix(mut value: u32) -> u32 {
    value ^= value >> 16;
    value = value.wrapping_mul(0x85EB_CA6B);
    value ^= value >> 13;
    value = value.wrapping_mul(0xC2B2_AE35);
    value ^ (value >> 16)
}

fn rate(count: usize, started: Instant) -> String {
    let seconds = started.elapsed().as_secs_f64();
    format!(
        "{:>6.2} M/s ({:.0} ns each)",
        count as f64 / seconds / 1e6,
        seconds * 1e9 / count as f64
    )
}

#[test]
#[ignore = "timing; run in release with --nocapture"]
fn ordered_index_timing() {
    const COUNT: u32 = 2_000_000;
    for scramble in [false, true] {
        let keys = NumberedKeys { scramble };
        let mut pool = PagePool::new(1 << 30).unwrap();
        let mut index = OrderedIndex::new();
        let started = Instant::now();
        for number in 0..COUNT {
            index
                .insert(
                    &mut pool,
                    &keys.key(number),
                    ChunkRef::from_raw(number),
                    &keys,
                )
                .unwrap();
        }
        let order = if scramble { "random" } else { "sequential" };
        println!(
            "insert {order:>10}: {}, {} pages",
            rate(COUNT as usize, started),
            index.pages()
        );

        let started = Instant::now();
        let mut out = Vec::with_capacity(1000);
        let mut seen = 0;
        let mut last: Option<([u8; 5], ChunkRef)> = None;
        loop {
            out.clear();
            let start = match &last {
                Some((key, row)) => Bound::After { key, row: *row },
                None => Bound::Unbounded,
            };
            let collected =
                index.collect(&pool, start, Bound::Unbounded, false, &keys, &mut out, 1000);
            seen += out.len();
            if collected == Collected::Exhausted {
                break;
            }
            let row = *out.last().unwrap();
            last = Some((keys.key(row.raw()), row));
        }
        assert_eq!(seen, COUNT as usize);
        println!(
            "scan   {order:>10}: {} (batches of 1000)",
            rate(seen, started)
        );

        let started = Instant::now();
        let mut random = Random::new(1);
        for _ in 0..COUNT {
            let key = keys.key(random.below(COUNT as usize) as u32);
            out.clear();
            let bound = Bound::Prefix {
                key: &key,
                inclusive: true,
            };
            index.collect(&pool, bound, bound, false, &keys, &mut out, 1);
            assert_eq!(out.len(), 1);
        }
        println!("lookup {order:>10}: {}", rate(COUNT as usize, started));

        let started = Instant::now();
        for number in 0..COUNT {
            let row = ChunkRef::from_raw(number);
            assert!(index.replace_row(&mut pool, &keys.key(number), row, row, &keys));
        }
        println!("replace{order:>11}: {}", rate(COUNT as usize, started));

        let started = Instant::now();
        for number in 0..COUNT {
            let number = (u64::from(number) * 1_000_003 % u64::from(COUNT)) as u32;
            assert!(index.remove(
                &mut pool,
                &keys.key(number),
                ChunkRef::from_raw(number),
                &keys
            ));
        }
        println!(
            "remove {order:>10}: {} (random order)",
            rate(COUNT as usize, started)
        );
        assert_eq!(index.entries(), 0);
        index.release_all(&mut pool);
        assert_eq!(pool.pages_used(), 0);
    }
}
