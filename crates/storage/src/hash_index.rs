//! The primary-key hash index of a partition: linear hashing in DataMemory.
//!
//! Linear hashing (as NDB's DBACC) grows the table one bucket at a time: when
//! the average chain gets too long, the bucket at the split pointer is split
//! in two, so there is never a stop-the-world rehash of the whole table.
//!
//! ## Layout
//! A bucket is 64 bytes, one cache line: a `u32` entry count, a `u32` link to
//! the next (overflow) bucket or `ChunkRef::NONE`, and seven entries of
//! `(u32 hash, u32 row)`. Primary buckets sit 512 to a page in "segment"
//! pages, bucket `b` at page `b / 512`, slot `b % 512`; overflow buckets come
//! from a slab. Every bucket of a chain but the last is full.
//!
//! The stored hash is the high 32 bits of the key hash: partitioning uses the
//! low bits, and a partition's keys all share those, so the bucket address
//! must come from the other half.

use crate::memory::{ChunkRef, PAGE_SIZE_BYTES, PageId, PagePool, Slab};
use schema::ErrorCode;

const BUCKET_BYTES: usize = 64;
const ENTRIES_PER_BUCKET: usize = 7;
const BUCKETS_PER_SEGMENT: u32 = (PAGE_SIZE_BYTES / BUCKET_BYTES) as u32;
/// Entries per bucket on average before a split: 5 of 7 slots keeps most
/// chains to one cache line.
const LOAD_FACTOR_MAX: u64 = 5;
/// Overflow buckets a split may need for the new chain; a split that needs
/// more (a pathological chain) is skipped.
const SPLIT_OVERFLOW_MAX: usize = 16;

/// Where a bucket lives: a primary bucket in a segment page, or an overflow chunk.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct BucketAt {
    page: PageId,
    offset: usize,
}

pub struct HashIndex {
    segments: Vec<PageId>,
    overflow: Slab,
    /// Buckets before doubling at the current level: `BUCKETS_PER_SEGMENT << level`.
    level_buckets: u32,
    /// Next bucket to split, below `level_buckets`.
    split: u32,
    entries: u64,
}

#[inline]
fn high_hash(hash: u64) -> u32 {
    (hash >> 32) as u32
}

#[inline]
fn read_u32(page: &[u8; PAGE_SIZE_BYTES], at: usize) -> u32 {
    u32::from_le_bytes(page[at..at + 4].try_into().unwrap())
}

#[inline]
fn write_u32(page: &mut [u8; PAGE_SIZE_BYTES], at: usize, value: u32) {
    page[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

impl HashIndex {
    /// An index with one segment of buckets, taken from the pool.
    pub fn new(pool: &mut PagePool) -> Result<HashIndex, ErrorCode> {
        let page = pool.allocate()?;
        let mut index = HashIndex {
            segments: Vec::with_capacity(64),
            overflow: Slab::new(BUCKET_BYTES as u32),
            level_buckets: BUCKETS_PER_SEGMENT,
            split: 0,
            entries: 0,
        };
        index.segments.push(page);
        index.clear_segment(pool, page);
        Ok(index)
    }

    fn clear_segment(&self, pool: &mut PagePool, page: PageId) {
        let bytes = pool.page_mut(page);
        for bucket in 0..BUCKETS_PER_SEGMENT as usize {
            let at = bucket * BUCKET_BYTES;
            write_u32(bytes, at, 0);
            write_u32(bytes, at + 4, ChunkRef::NONE.raw());
        }
    }

    fn bucket_count(&self) -> u32 {
        self.level_buckets + self.split
    }

    #[inline]
    fn bucket_number(&self, high: u32) -> u32 {
        let bucket = high & (self.level_buckets - 1);
        if bucket < self.split {
            high & (self.level_buckets * 2 - 1)
        } else {
            bucket
        }
    }

    #[inline]
    fn primary(&self, bucket: u32) -> BucketAt {
        BucketAt {
            page: self.segments[(bucket / BUCKETS_PER_SEGMENT) as usize],
            offset: (bucket % BUCKETS_PER_SEGMENT) as usize * BUCKET_BYTES,
        }
    }

    #[inline]
    fn overflow_at(&self, chunk: ChunkRef) -> BucketAt {
        BucketAt {
            page: chunk.page(),
            offset: chunk.index() as usize * BUCKET_BYTES,
        }
    }

    #[inline]
    fn next(&self, pool: &PagePool, at: BucketAt) -> Option<BucketAt> {
        let link = ChunkRef::from_raw(read_u32(pool.page(at.page), at.offset + 4));
        (!link.is_none()).then(|| self.overflow_at(link))
    }

    /// The first row whose entry has this hash and which `is_match` accepts.
    #[inline]
    pub fn find(
        &self,
        pool: &PagePool,
        hash: u64,
        mut is_match: impl FnMut(ChunkRef) -> bool,
    ) -> Option<ChunkRef> {
        let high = high_hash(hash);
        let mut at = Some(self.primary(self.bucket_number(high)));
        while let Some(bucket) = at {
            let page = pool.page(bucket.page);
            let count = read_u32(page, bucket.offset) as usize;
            for slot in 0..count {
                let entry = bucket.offset + 8 + slot * 8;
                if read_u32(page, entry) == high {
                    let row = ChunkRef::from_raw(read_u32(page, entry + 4));
                    if is_match(row) {
                        return Some(row);
                    }
                }
            }
            at = self.next(pool, bucket);
        }
        None
    }

    /// Adds an entry. On `TableFull` the index is unchanged.
    pub fn insert(
        &mut self,
        pool: &mut PagePool,
        hash: u64,
        row: ChunkRef,
    ) -> Result<(), ErrorCode> {
        let high = high_hash(hash);
        let mut bucket = self.primary(self.bucket_number(high));
        loop {
            let count = read_u32(pool.page(bucket.page), bucket.offset) as usize;
            if count < ENTRIES_PER_BUCKET {
                let page = pool.page_mut(bucket.page);
                let entry = bucket.offset + 8 + count * 8;
                write_u32(page, entry, high);
                write_u32(page, entry + 4, row.raw());
                write_u32(page, bucket.offset, count as u32 + 1);
                break;
            }
            match self.next(pool, bucket) {
                Some(next) => bucket = next,
                None => {
                    let chunk = self.overflow.allocate(pool)?;
                    let fresh = self.overflow_at(chunk);
                    let page = pool.page_mut(fresh.page);
                    write_u32(page, fresh.offset, 1);
                    write_u32(page, fresh.offset + 4, ChunkRef::NONE.raw());
                    write_u32(page, fresh.offset + 8, high);
                    write_u32(page, fresh.offset + 12, row.raw());
                    write_u32(pool.page_mut(bucket.page), bucket.offset + 4, chunk.raw());
                    break;
                }
            }
        }
        self.entries += 1;
        if self.entries > u64::from(self.bucket_count()) * LOAD_FACTOR_MAX {
            // A split that finds no memory is skipped: chains just grow longer.
            let _ = self.split_one(pool);
        }
        Ok(())
    }

    /// Removes the entry `(hash, row)`; false if absent. Never allocates.
    pub fn remove(&mut self, pool: &mut PagePool, hash: u64, row: ChunkRef) -> bool {
        let high = high_hash(hash);
        let first = self.primary(self.bucket_number(high));
        // Find the entry and the chain's last bucket (and the one before it).
        let mut found: Option<(BucketAt, usize)> = None;
        let mut before_last: Option<BucketAt> = None;
        let mut last = first;
        let mut at = Some(first);
        while let Some(bucket) = at {
            let page = pool.page(bucket.page);
            let count = read_u32(page, bucket.offset) as usize;
            if found.is_none() {
                for slot in 0..count {
                    let entry = bucket.offset + 8 + slot * 8;
                    if read_u32(page, entry) == high && read_u32(page, entry + 4) == row.raw() {
                        found = Some((bucket, slot));
                        break;
                    }
                }
            }
            at = self.next(pool, bucket);
            if let Some(next) = at {
                before_last = Some(bucket);
                last = next;
            }
        }
        let Some((bucket, slot)) = found else {
            return false;
        };
        // Move the chain's last entry into the hole, keeping every bucket but
        // the last full.
        let last_count = read_u32(pool.page(last.page), last.offset) as usize;
        assert!(last_count > 0);
        let last_entry = last.offset + 8 + (last_count - 1) * 8;
        let (moved_hash, moved_row) = {
            let page = pool.page(last.page);
            (read_u32(page, last_entry), read_u32(page, last_entry + 4))
        };
        let page = pool.page_mut(bucket.page);
        write_u32(page, bucket.offset + 8 + slot * 8, moved_hash);
        write_u32(page, bucket.offset + 8 + slot * 8 + 4, moved_row);
        write_u32(pool.page_mut(last.page), last.offset, last_count as u32 - 1);
        if last_count == 1
            && let Some(previous) = before_last
        {
            let link = ChunkRef::from_raw(read_u32(pool.page(previous.page), previous.offset + 4));
            write_u32(
                pool.page_mut(previous.page),
                previous.offset + 4,
                ChunkRef::NONE.raw(),
            );
            self.overflow.free(pool, link);
        }
        self.entries -= 1;
        true
    }

    /// Splits the bucket at the split pointer into itself and its image one
    /// level up. Allocates the new bucket (and any overflow it needs) first,
    /// so a failure leaves the index as it was.
    fn split_one(&mut self, pool: &mut PagePool) -> Result<(), ErrorCode> {
        let old = self.split;
        let new = self.level_buckets + old;
        let new_segment = (new / BUCKETS_PER_SEGMENT) as usize;
        let mut added_segment = false;
        if new_segment == self.segments.len() {
            let page = pool.allocate()?;
            self.clear_segment(pool, page);
            self.segments.push(page);
            added_segment = true;
        }
        let mask = self.level_buckets * 2 - 1;
        // Count the movers to know how many overflow buckets the new chain needs.
        let mut movers = 0usize;
        let mut at = Some(self.primary(old));
        while let Some(bucket) = at {
            let page = pool.page(bucket.page);
            let count = read_u32(page, bucket.offset) as usize;
            for slot in 0..count {
                if read_u32(page, bucket.offset + 8 + slot * 8) & mask == new {
                    movers += 1;
                }
            }
            at = self.next(pool, bucket);
        }
        let overflow_needed = movers.div_ceil(ENTRIES_PER_BUCKET).saturating_sub(1);
        if overflow_needed > SPLIT_OVERFLOW_MAX {
            self.undo_segment(pool, added_segment);
            return Err(ErrorCode::TableFull);
        }
        let mut reserved = [ChunkRef::NONE; SPLIT_OVERFLOW_MAX];
        for index in 0..overflow_needed {
            match self.overflow.allocate(pool) {
                Ok(chunk) => reserved[index] = chunk,
                Err(error) => {
                    for chunk in &reserved[..index] {
                        self.overflow.free(pool, *chunk);
                    }
                    self.undo_segment(pool, added_segment);
                    return Err(error);
                }
            }
        }
        // Walk the old chain: keep stayers compacted in place, append movers
        // to the new chain.
        let mut write_bucket = self.primary(old);
        let mut write_slot = 0usize;
        let mut new_bucket = self.primary(new);
        let mut new_slot = 0usize;
        let mut reserved_used = 0usize;
        let mut read = Some(self.primary(old));
        while let Some(bucket) = read {
            let count = read_u32(pool.page(bucket.page), bucket.offset) as usize;
            let following = self.next(pool, bucket);
            for slot in 0..count {
                let (hash, row) = {
                    let page = pool.page(bucket.page);
                    let entry = bucket.offset + 8 + slot * 8;
                    (read_u32(page, entry), read_u32(page, entry + 4))
                };
                if hash & mask == new {
                    if new_slot == ENTRIES_PER_BUCKET {
                        write_u32(
                            pool.page_mut(new_bucket.page),
                            new_bucket.offset,
                            new_slot as u32,
                        );
                        let chunk = reserved[reserved_used];
                        reserved_used += 1;
                        write_u32(
                            pool.page_mut(new_bucket.page),
                            new_bucket.offset + 4,
                            chunk.raw(),
                        );
                        new_bucket = self.overflow_at(chunk);
                        write_u32(
                            pool.page_mut(new_bucket.page),
                            new_bucket.offset + 4,
                            ChunkRef::NONE.raw(),
                        );
                        new_slot = 0;
                    }
                    let page = pool.page_mut(new_bucket.page);
                    write_u32(page, new_bucket.offset + 8 + new_slot * 8, hash);
                    write_u32(page, new_bucket.offset + 12 + new_slot * 8, row);
                    new_slot += 1;
                } else {
                    if write_slot == ENTRIES_PER_BUCKET {
                        write_u32(
                            pool.page_mut(write_bucket.page),
                            write_bucket.offset,
                            write_slot as u32,
                        );
                        write_bucket = self
                            .next(pool, write_bucket)
                            .expect("compaction never passes the reader");
                        write_slot = 0;
                    }
                    let page = pool.page_mut(write_bucket.page);
                    write_u32(page, write_bucket.offset + 8 + write_slot * 8, hash);
                    write_u32(page, write_bucket.offset + 12 + write_slot * 8, row);
                    write_slot += 1;
                }
            }
            read = following;
        }
        write_u32(
            pool.page_mut(new_bucket.page),
            new_bucket.offset,
            new_slot as u32,
        );
        assert_eq!(reserved_used, overflow_needed);
        // Cut the old chain after the last bucket written; free the rest.
        write_u32(
            pool.page_mut(write_bucket.page),
            write_bucket.offset,
            write_slot as u32,
        );
        let mut tail = ChunkRef::from_raw(read_u32(
            pool.page(write_bucket.page),
            write_bucket.offset + 4,
        ));
        write_u32(
            pool.page_mut(write_bucket.page),
            write_bucket.offset + 4,
            ChunkRef::NONE.raw(),
        );
        while !tail.is_none() {
            let at = self.overflow_at(tail);
            let next = ChunkRef::from_raw(read_u32(pool.page(at.page), at.offset + 4));
            self.overflow.free(pool, tail);
            tail = next;
        }
        self.split += 1;
        if self.split == self.level_buckets {
            self.level_buckets *= 2;
            self.split = 0;
        }
        Ok(())
    }

    fn undo_segment(&mut self, pool: &mut PagePool, added: bool) {
        if added {
            pool.release(self.segments.pop().unwrap());
        }
    }

    /// Returns every page to the pool.
    pub fn release_all(&mut self, pool: &mut PagePool) {
        for page in self.segments.drain(..) {
            pool.release(page);
        }
        self.overflow.release_all(pool);
        self.entries = 0;
    }

    pub fn entries(&self) -> u64 {
        self.entries
    }

    pub fn pages(&self) -> usize {
        self.segments.len() + self.overflow.pages().len()
    }

    /// Every entry, for tests and checkers.
    pub fn for_each(&self, pool: &PagePool, mut visit: impl FnMut(u32, ChunkRef)) {
        for bucket in 0..self.bucket_count() {
            let mut at = Some(self.primary(bucket));
            while let Some(b) = at {
                let page = pool.page(b.page);
                let count = read_u32(page, b.offset) as usize;
                for slot in 0..count {
                    let entry = b.offset + 8 + slot * 8;
                    assert_eq!(
                        self.bucket_number(read_u32(page, entry)),
                        bucket,
                        "entry in the wrong bucket"
                    );
                    visit(
                        read_u32(page, entry),
                        ChunkRef::from_raw(read_u32(page, entry + 4)),
                    );
                }
                at = self.next(pool, b);
                if at.is_some() {
                    assert_eq!(
                        count, ENTRIES_PER_BUCKET,
                        "a non-last bucket of a chain is not full"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn mix(value: u64) -> u64 {
        let mut x = value.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 29;
        x.wrapping_mul(0xBF58_476D_1CE4_E5B9)
    }

    #[test]
    fn grows_by_splits_and_finds_everything() {
        let mut pool = PagePool::new(400 * PAGE_SIZE_BYTES as u64).unwrap();
        let mut index = HashIndex::new(&mut pool).unwrap();
        let count = 100_000u32;
        for i in 0..count {
            index
                .insert(&mut pool, mix(u64::from(i)), ChunkRef::from_raw(i))
                .unwrap();
        }
        assert!(index.bucket_count() > count / 6);
        for i in (0..count).step_by(7) {
            let found = index.find(&pool, mix(u64::from(i)), |row| row.raw() == i);
            assert_eq!(found, Some(ChunkRef::from_raw(i)));
        }
        assert_eq!(index.find(&pool, mix(u64::from(count + 1)), |_| true), None);
        for i in (0..count).filter(|i| i % 3 != 0) {
            assert!(index.remove(&mut pool, mix(u64::from(i)), ChunkRef::from_raw(i)));
        }
        assert!(!index.remove(&mut pool, mix(1), ChunkRef::from_raw(1)));
        let mut seen = BTreeSet::new();
        index.for_each(&pool, |_, row| assert!(seen.insert(row.raw())));
        let expected: BTreeSet<u32> = (0..count).filter(|i| i % 3 == 0).collect();
        assert_eq!(seen, expected);
        assert_eq!(index.entries(), expected.len() as u64);
        index.release_all(&mut pool);
        assert_eq!(pool.pages_used(), 0);
    }

    #[test]
    fn colliding_hashes_chain_through_overflow_buckets() {
        let mut pool = PagePool::new(16 * PAGE_SIZE_BYTES as u64).unwrap();
        let mut index = HashIndex::new(&mut pool).unwrap();
        for i in 0..50 {
            index
                .insert(&mut pool, 42 << 32, ChunkRef::from_raw(i))
                .unwrap();
        }
        for i in 0..50 {
            assert!(index.find(&pool, 42 << 32, |row| row.raw() == i).is_some());
        }
        for i in (0..50).rev() {
            assert!(index.remove(&mut pool, 42 << 32, ChunkRef::from_raw(i)));
            index.for_each(&pool, |_, _| {});
        }
        assert_eq!(index.pages(), 2); // the segment and the (now empty) overflow slab page
    }

    #[test]
    fn full_pool_refuses_insert_and_keeps_entries() {
        let mut pool = PagePool::new(4 * PAGE_SIZE_BYTES as u64).unwrap();
        let mut index = HashIndex::new(&mut pool).unwrap();
        let mut inserted = 0u32;
        loop {
            match index.insert(
                &mut pool,
                mix(u64::from(inserted)),
                ChunkRef::from_raw(inserted),
            ) {
                Ok(()) => inserted += 1,
                Err(error) => {
                    assert_eq!(error, ErrorCode::TableFull);
                    break;
                }
            }
        }
        assert_eq!(index.entries(), u64::from(inserted));
        for i in 0..inserted {
            assert!(
                index
                    .find(&pool, mix(u64::from(i)), |row| row.raw() == i)
                    .is_some()
            );
        }
    }
}
