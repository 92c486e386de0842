//! The process's heap: mimalloc, called through its plain entry points
//! where a Rust layout allows.
//!
//! The `mimalloc` crate's allocator passes every request to
//! `mi_malloc_aligned`, whose fast path only covers blocks up to 1 KiB that
//! happen to be aligned; the rest (a 64 KiB receive buffer, a connection's
//! state) take its generic path. `mi_malloc` needs no alignment check at
//! all, and every block it returns is aligned to 8 bytes (its size classes
//! are multiples of the word), which is what nearly every Rust type asks
//! for. In callgrind the aligned entry points were 6.8% of the SQL node's
//! instructions per point select.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The alignment every `mi_malloc` block has: its size classes are
/// multiples of the machine word.
const PLAIN_ALIGNMENT: usize = std::mem::size_of::<usize>();

pub struct MiMalloc;

#[inline]
fn plain(layout: &Layout) -> bool {
    layout.align() <= PLAIN_ALIGNMENT
}

unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let block = if plain(&layout) {
            unsafe { mi_malloc(layout.size()) }
        } else {
            unsafe { mi_malloc_aligned(layout.size(), layout.align()) }
        };
        debug_assert_eq!(block as usize % layout.align(), 0, "misaligned block");
        block.cast()
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let block = if plain(&layout) {
            unsafe { mi_zalloc(layout.size()) }
        } else {
            unsafe { mi_zalloc_aligned(layout.size(), layout.align()) }
        };
        debug_assert_eq!(block as usize % layout.align(), 0, "misaligned block");
        block.cast()
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let block = if plain(&layout) {
            unsafe { mi_realloc(ptr.cast::<c_void>(), new_size) }
        } else {
            unsafe { mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()) }
        };
        debug_assert_eq!(block as usize % layout.align(), 0, "misaligned block");
        block.cast()
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every alignment a layout can ask for, across the size classes, comes
    /// back aligned, zeroed when asked, and keeps its bytes when it grows.
    #[test]
    fn blocks_are_aligned_zeroed_and_kept() {
        let allocator = MiMalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1usize, 7, 8, 24, 40, 100, 1000, 1025, 5000, 70_000] {
                let size = size.max(align);
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let block = allocator.alloc_zeroed(layout);
                    assert!(!block.is_null());
                    assert_eq!(block as usize % align, 0, "size {size} align {align}");
                    assert!((0..size).all(|i| *block.add(i) == 0));
                    for i in 0..size {
                        *block.add(i) = (i % 251) as u8;
                    }
                    let grown = allocator.realloc(block, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "grown {size} align {align}");
                    assert!((0..size).all(|i| *grown.add(i) == (i % 251) as u8));
                    allocator.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                    let block = allocator.alloc(layout);
                    assert_eq!(block as usize % align, 0, "size {size} align {align}");
                    allocator.dealloc(block, layout);
                }
            }
        }
    }
}
