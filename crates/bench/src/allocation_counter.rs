//! A global allocator wrapper that counts allocations, so benchmarks can
//! report heap allocations per operation.
//!
//! Counting is off until `start_counting`: the counter is one cache line
//! that every allocating thread would write, and on two cores the SQL
//! node's workers and receivers would pass it back and forth on every
//! allocation. Off, an allocation only reads a flag that never changes.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

/// Wraps another global allocator and counts `alloc`, `alloc_zeroed` and
/// `realloc` calls once `start_counting` was called.
pub struct CountingAllocator<A>(pub A);

/// Counts every allocation of the process from now on (a benchmark that
/// reports allocations per operation calls this first).
pub fn start_counting() {
    COUNTING.store(true, Ordering::Relaxed);
}

/// Allocations counted so far by the whole process (none before
/// `start_counting`).
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

#[inline]
fn count() {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAllocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { self.0.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { self.0.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.0.dealloc(ptr, layout) }
    }
}
