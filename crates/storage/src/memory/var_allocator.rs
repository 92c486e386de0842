//! Variable-size parts in size classes.
//!
//! Each class is a slab; a request takes the smallest class that fits. Class
//! sizes grow by an eighth (at least 8 bytes), so a part wastes under 12.5 %
//! of its chunk. The class number is kept in the chunk's own header so that
//! a chunk can be freed from its reference alone.
//!
//! Chunk layout: bytes 0..2 the part's length (little-endian), byte 2 the
//! class, byte 3 zero, then the part.

use super::page_pool::{PAGE_SIZE_BYTES, PagePool};
use super::slab::{CHUNK_BYTES_MIN, ChunkRef, Slab};
use schema::ErrorCode;

/// Bytes of header in front of each variable part.
pub const VAR_HEADER_BYTES: usize = 4;

#[derive(Debug)]
pub struct VarAllocator {
    classes: Vec<Slab>,
}

impl Default for VarAllocator {
    fn default() -> Self {
        let mut classes = Vec::new();
        let mut size = CHUNK_BYTES_MIN;
        loop {
            classes.push(Slab::new(size));
            if size as usize == PAGE_SIZE_BYTES {
                break;
            }
            let step = (size / 8).next_multiple_of(8).max(8);
            size = (size + step).min(PAGE_SIZE_BYTES as u32);
        }
        assert!(classes.len() <= usize::from(u8::MAX));
        VarAllocator { classes }
    }
}

/// Where a variable part is: its chunk and its size class.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct VarRef {
    pub chunk: ChunkRef,
    pub class: u8,
}

impl VarAllocator {
    fn class_for(&self, bytes: usize) -> usize {
        let needed = (bytes + VAR_HEADER_BYTES) as u32;
        self.classes
            .partition_point(|slab| slab.chunk_bytes() < needed)
    }

    /// Stores `part` in a new chunk.
    pub fn store(&mut self, pool: &mut PagePool, part: &[u8]) -> Result<VarRef, ErrorCode> {
        let class = self.class_for(part.len());
        assert!(
            class < self.classes.len(),
            "variable part larger than a page"
        );
        let slab = &mut self.classes[class];
        let chunk = slab.allocate(pool)?;
        let bytes = slab.bytes_mut(pool, chunk);
        bytes[0..2].copy_from_slice(&(part.len() as u16).to_le_bytes());
        bytes[2] = class as u8;
        bytes[3] = 0;
        bytes[VAR_HEADER_BYTES..VAR_HEADER_BYTES + part.len()].copy_from_slice(part);
        Ok(VarRef {
            chunk,
            class: class as u8,
        })
    }

    /// The part stored at `var`.
    #[inline]
    pub fn part<'p>(&self, pool: &'p PagePool, var: VarRef) -> &'p [u8] {
        let bytes = self.classes[usize::from(var.class)].bytes(pool, var.chunk);
        let length = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        &bytes[VAR_HEADER_BYTES..VAR_HEADER_BYTES + length]
    }

    pub fn free(&mut self, pool: &mut PagePool, var: VarRef) {
        self.classes[usize::from(var.class)].free(pool, var.chunk);
    }

    pub fn release_all(&mut self, pool: &mut PagePool) {
        for slab in &mut self.classes {
            slab.release_all(pool);
        }
    }

    pub fn pages(&self) -> usize {
        self.classes.iter().map(|slab| slab.pages().len()).sum()
    }

    pub fn chunks_used(&self) -> u64 {
        self.classes.iter().map(Slab::chunks_used).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_of_every_size_round_trip_and_free() {
        let mut pool = PagePool::new(64 * PAGE_SIZE_BYTES as u64).unwrap();
        let mut parts = VarAllocator::default();
        let mut stored = Vec::new();
        for length in [0usize, 1, 12, 13, 100, 257, 1000, 5000, 30_000] {
            let part: Vec<u8> = (0..length).map(|i| (i * 7 + length) as u8).collect();
            let var = parts.store(&mut pool, &part).unwrap();
            stored.push((var, part));
        }
        for (var, part) in &stored {
            assert_eq!(parts.part(&pool, *var), &part[..]);
        }
        for (var, _) in &stored {
            parts.free(&mut pool, *var);
        }
        assert_eq!(parts.chunks_used(), 0);
        parts.release_all(&mut pool);
        assert_eq!(pool.pages_used(), 0);
    }

    #[test]
    fn classes_waste_at_most_an_eighth() {
        let parts = VarAllocator::default();
        for pair in parts.classes.windows(2) {
            let (small, large) = (pair[0].chunk_bytes(), pair[1].chunk_bytes());
            assert!(
                large - small <= (small / 8).next_multiple_of(8).max(8),
                "{small} -> {large}"
            );
        }
    }
}
