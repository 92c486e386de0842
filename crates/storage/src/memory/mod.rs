//! DataMemory: the page pool every row, variable part and index entry of a
//! data node lives in, and the allocators that carve pages into chunks.
//!
//! The pool is reserved once, at start, from the configured size; nothing on
//! an operation path allocates from the general heap. An allocation that finds
//! no free page fails with `ErrorCode::TableFull` (NDB 827) and leaves every
//! structure as it was.

pub mod page_pool;
pub mod slab;
pub mod var_allocator;

pub use page_pool::{PAGE_SIZE_BYTES, PageId, PagePool};
pub use slab::{ChunkRef, Slab};
pub use var_allocator::{VarAllocator, VarRef};

/// Hints the CPU to load the cache line at `bytes` soon. Scans use it to
/// overlap the cache misses of rows that index order scatters over memory.
#[inline(always)]
pub fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults or changes memory,
    // and `bytes` is a valid slice anyway.
    unsafe {
        core::arch::x86_64::_mm_prefetch(
            bytes.as_ptr().cast::<i8>(),
            core::arch::x86_64::_MM_HINT_T0,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
