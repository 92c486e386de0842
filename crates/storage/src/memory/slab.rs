//! Fixed-size chunks carved out of DataMemory pages.
//!
//! A slab owns whole pages and cuts each into `chunks_per_page` chunks of
//! `chunk_bytes`. Freed chunks go on an intrusive free list and are reused
//! before any new chunk is cut, so deletes free slots for the next insert.
//! Pages go back to the pool only when the whole slab is released (DROP,
//! TRUNCATE), as in NDB.
//!
//! A freed chunk has its first eight bytes overwritten: bytes 0..4 are zero
//! and bytes 4..8 link to the next free chunk. Users that scan a slab's
//! chunks (the row store) keep a nonzero word at bytes 0..4 of every chunk in
//! use, and so tell used chunks from free ones.

use super::page_pool::{PAGE_COUNT_MAX, PAGE_SIZE_BYTES, PageId, PagePool};
use schema::ErrorCode;

/// Bits of a `ChunkRef` that hold the chunk's index within its page.
const INDEX_BITS: u32 = 11;
/// The most chunks a page can be cut into.
pub const CHUNKS_PER_PAGE_MAX: u32 = 1 << INDEX_BITS;
/// The smallest chunk: a page of these holds `CHUNKS_PER_PAGE_MAX` chunks.
pub const CHUNK_BYTES_MIN: u32 = (PAGE_SIZE_BYTES as u32) / CHUNKS_PER_PAGE_MAX;

/// A chunk's address: page id in the high 21 bits, index in the low 11.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ChunkRef(u32);

impl ChunkRef {
    pub const NONE: ChunkRef = ChunkRef(u32::MAX);

    #[inline]
    pub fn new(page: PageId, index: u32) -> ChunkRef {
        debug_assert!(page < PAGE_COUNT_MAX);
        debug_assert!(index < CHUNKS_PER_PAGE_MAX);
        ChunkRef(page << INDEX_BITS | index)
    }

    #[inline]
    pub fn page(self) -> PageId {
        self.0 >> INDEX_BITS
    }

    #[inline]
    pub fn index(self) -> u32 {
        self.0 & (CHUNKS_PER_PAGE_MAX - 1)
    }

    #[inline]
    pub fn raw(self) -> u32 {
        self.0
    }

    #[inline]
    pub fn from_raw(raw: u32) -> ChunkRef {
        ChunkRef(raw)
    }

    #[inline]
    pub fn is_none(self) -> bool {
        self == ChunkRef::NONE
    }
}

/// A set of pages cut into chunks of one size.
#[derive(Debug)]
pub struct Slab {
    chunk_bytes: u32,
    chunks_per_page: u32,
    /// Pages in allocation order; the last one may be partly cut.
    pages: Vec<PageId>,
    /// Chunks cut so far from the last page.
    last_page_cut: u32,
    free_head: ChunkRef,
    chunks_used: u64,
}

impl Slab {
    pub fn new(chunk_bytes: u32) -> Slab {
        assert!(chunk_bytes >= 8, "a chunk must hold the free-list link");
        assert!(chunk_bytes as usize <= PAGE_SIZE_BYTES);
        let chunks_per_page = (PAGE_SIZE_BYTES as u32 / chunk_bytes).min(CHUNKS_PER_PAGE_MAX);
        Slab {
            chunk_bytes,
            chunks_per_page,
            pages: Vec::new(),
            last_page_cut: chunks_per_page,
            free_head: ChunkRef::NONE,
            chunks_used: 0,
        }
    }

    pub fn chunk_bytes(&self) -> u32 {
        self.chunk_bytes
    }

    /// A chunk, from the free list if it has one, else newly cut. Its bytes
    /// are undefined.
    #[inline]
    pub fn allocate(&mut self, pool: &mut PagePool) -> Result<ChunkRef, ErrorCode> {
        if !self.free_head.is_none() {
            let chunk = self.free_head;
            let bytes = self.bytes(pool, chunk);
            self.free_head =
                ChunkRef::from_raw(u32::from_le_bytes(bytes[4..8].try_into().unwrap()));
            self.chunks_used += 1;
            return Ok(chunk);
        }
        if self.last_page_cut == self.chunks_per_page {
            let page = pool.allocate()?;
            self.pages.push(page);
            self.last_page_cut = 0;
        }
        let chunk = ChunkRef::new(*self.pages.last().unwrap(), self.last_page_cut);
        self.last_page_cut += 1;
        self.chunks_used += 1;
        Ok(chunk)
    }

    /// Whether `allocate` would succeed without taking a page from the pool.
    pub fn has_free_chunk(&self) -> bool {
        !self.free_head.is_none() || self.last_page_cut < self.chunks_per_page
    }

    /// Puts a chunk on the free list.
    #[inline]
    pub fn free(&mut self, pool: &mut PagePool, chunk: ChunkRef) {
        debug_assert!(self.chunks_used > 0);
        let next = self.free_head.raw();
        let bytes = self.bytes_mut(pool, chunk);
        bytes[0..4].fill(0);
        bytes[4..8].copy_from_slice(&next.to_le_bytes());
        self.free_head = chunk;
        self.chunks_used -= 1;
    }

    #[inline]
    fn offset(&self, chunk: ChunkRef) -> usize {
        (chunk.index() * self.chunk_bytes) as usize
    }

    #[inline]
    pub fn bytes<'p>(&self, pool: &'p PagePool, chunk: ChunkRef) -> &'p [u8] {
        let offset = self.offset(chunk);
        &pool.page(chunk.page())[offset..offset + self.chunk_bytes as usize]
    }

    #[inline]
    pub fn bytes_mut<'p>(&self, pool: &'p mut PagePool, chunk: ChunkRef) -> &'p mut [u8] {
        let offset = self.offset(chunk);
        &mut pool.page_mut(chunk.page())[offset..offset + self.chunk_bytes as usize]
    }

    /// Returns every page to the pool; the slab is empty afterwards.
    pub fn release_all(&mut self, pool: &mut PagePool) {
        for page in self.pages.drain(..) {
            pool.release(page);
        }
        self.last_page_cut = self.chunks_per_page;
        self.free_head = ChunkRef::NONE;
        self.chunks_used = 0;
    }

    pub fn pages(&self) -> &[PageId] {
        &self.pages
    }

    /// Chunks ever cut from the `position`-th page (all but the last are full).
    #[inline]
    pub fn chunks_cut(&self, position: usize) -> u32 {
        if position + 1 == self.pages.len() {
            self.last_page_cut
        } else {
            self.chunks_per_page
        }
    }

    pub fn chunks_used(&self) -> u64 {
        self.chunks_used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_chunks_and_releases_pages() {
        let mut pool = PagePool::new(4 * PAGE_SIZE_BYTES as u64).unwrap();
        let mut slab = Slab::new(1000);
        let chunks: Vec<_> = (0..70).map(|_| slab.allocate(&mut pool).unwrap()).collect();
        assert_eq!(slab.pages().len(), 3); // 32 chunks per page
        assert_eq!(slab.chunks_cut(2), 6);
        slab.free(&mut pool, chunks[5]);
        slab.free(&mut pool, chunks[40]);
        assert_eq!(slab.allocate(&mut pool).unwrap(), chunks[40]);
        assert_eq!(slab.allocate(&mut pool).unwrap(), chunks[5]);
        assert_eq!(slab.chunks_used(), 70);
        // One page left in the pool: 32 more chunks fit, then it is full.
        for _ in 0..(32 - 6 + 32) {
            slab.allocate(&mut pool).unwrap();
        }
        assert_eq!(slab.allocate(&mut pool), Err(ErrorCode::TableFull));
        slab.release_all(&mut pool);
        assert_eq!(pool.pages_used(), 0);
    }

    #[test]
    fn chunk_refs_pack_page_and_index() {
        let chunk = ChunkRef::new(PAGE_COUNT_MAX - 1, CHUNKS_PER_PAGE_MAX - 1);
        assert_eq!(chunk.page(), PAGE_COUNT_MAX - 1);
        assert_eq!(chunk.index(), CHUNKS_PER_PAGE_MAX - 1);
        assert!(!chunk.is_none());
    }
}
