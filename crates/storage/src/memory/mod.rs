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
