//! The pool of 32 KiB pages that is DataMemory.
//!
//! Pages are handed out by id and returned by id; the pool keeps a stack of
//! free ids so both are O(1). The memory is reserved with one zeroed
//! allocation at start, so the operating system commits it page by page as
//! it is first written, and nothing is allocated afterwards.

use schema::{Error, ErrorCode};

/// Bytes in one DataMemory page (NDB's page size).
pub const PAGE_SIZE_BYTES: usize = 32 * 1024;

/// The most pages a pool can hold: `ChunkRef` keeps 21 bits of page id, and
/// the all-ones value is reserved for "none". That is just under 64 GiB.
pub const PAGE_COUNT_MAX: u32 = (1 << 21) - 1;

/// The fewest pages a pool may be configured with.
pub const PAGE_COUNT_MIN: u32 = 4;

pub type PageId = u32;

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Page([u8; PAGE_SIZE_BYTES]);

/// DataMemory: a fixed number of pages, reserved at start.
pub struct PagePool {
    pages: Box<[Page]>,
    /// Ids of free pages; the top of the stack is handed out next.
    free: Vec<PageId>,
}

impl PagePool {
    /// Reserves `size_bytes` of DataMemory, rounded down to whole pages.
    pub fn new(size_bytes: u64) -> Result<PagePool, Error> {
        let count = size_bytes / PAGE_SIZE_BYTES as u64;
        if count < u64::from(PAGE_COUNT_MIN) {
            return Err(Error::new(
                ErrorCode::BadConfiguration,
                format!(
                    "DataMemory must be at least {} KiB",
                    PAGE_COUNT_MIN as usize * PAGE_SIZE_BYTES / 1024
                ),
            ));
        }
        if count > u64::from(PAGE_COUNT_MAX) {
            return Err(Error::new(
                ErrorCode::BadConfiguration,
                format!(
                    "DataMemory must be at most {} bytes",
                    u64::from(PAGE_COUNT_MAX) * PAGE_SIZE_BYTES as u64
                ),
            ));
        }
        let count = count as u32;
        // One zeroed allocation: the allocator takes fresh zero pages from
        // the OS, which commits them only when first written.
        let zeroed = Box::<[Page]>::new_zeroed_slice(count as usize);
        // SAFETY: a `Page` is an array of bytes, for which all zeros is a
        // valid value.
        let pages = unsafe { zeroed.assume_init() };
        // Hand out low ids first, which keeps a small table's pages together.
        let free = (0..count).rev().collect();
        Ok(PagePool { pages, free })
    }

    /// All of DataMemory as bytes, for a runtime to advise the operating
    /// system about it (huge pages) before it is first touched.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let length = self.pages.len() * PAGE_SIZE_BYTES;
        // SAFETY: `Page` is `repr(C)` around a byte array with no padding
        // (its size is a multiple of its alignment), so the boxed slice of
        // pages is `length` contiguous initialized bytes, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.pages.as_mut_ptr().cast::<u8>(), length) }
    }

    /// Writes every page once, so the operating system commits all of
    /// DataMemory now rather than on first use: as an NDB data node does at
    /// start, which keeps page faults off the operation paths.
    pub fn touch_all(&mut self) {
        const OS_PAGE_BYTES: usize = 4096;
        for page in self.pages.iter_mut() {
            for offset in (0..PAGE_SIZE_BYTES).step_by(OS_PAGE_BYTES) {
                page.0[offset] = 0;
            }
        }
    }

    /// Takes a free page. Its contents are whatever its last owner left.
    #[inline]
    pub fn allocate(&mut self) -> Result<PageId, ErrorCode> {
        self.free.pop().ok_or(ErrorCode::TableFull)
    }

    /// Returns a page to the pool.
    #[inline]
    pub fn release(&mut self, page: PageId) {
        debug_assert!((page as usize) < self.pages.len());
        debug_assert!(!self.free.contains(&page), "page {page} released twice");
        self.free.push(page);
    }

    #[inline]
    pub fn page(&self, page: PageId) -> &[u8; PAGE_SIZE_BYTES] {
        &self.pages[page as usize].0
    }

    #[inline]
    pub fn page_mut(&mut self, page: PageId) -> &mut [u8; PAGE_SIZE_BYTES] {
        &mut self.pages[page as usize].0
    }

    /// Two distinct pages at once, both writable.
    pub fn pages_mut(
        &mut self,
        first: PageId,
        second: PageId,
    ) -> (&mut [u8; PAGE_SIZE_BYTES], &mut [u8; PAGE_SIZE_BYTES]) {
        assert_ne!(first, second);
        let (low, high, swapped) = if first < second {
            (first, second, false)
        } else {
            (second, first, true)
        };
        let (head, tail) = self.pages.split_at_mut(high as usize);
        let low_page = &mut head[low as usize].0;
        let high_page = &mut tail[0].0;
        if swapped {
            (high_page, low_page)
        } else {
            (low_page, high_page)
        }
    }

    pub fn pages_total(&self) -> u32 {
        self.pages.len() as u32
    }

    pub fn pages_free(&self) -> u32 {
        self.free.len() as u32
    }

    pub fn pages_used(&self) -> u32 {
        self.pages_total() - self.pages_free()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_until_empty_then_reports_table_full() {
        let mut pool = PagePool::new(5 * PAGE_SIZE_BYTES as u64 + 100).unwrap();
        assert_eq!(pool.pages_total(), 5);
        let pages: Vec<_> = (0..5).map(|_| pool.allocate().unwrap()).collect();
        assert_eq!(pool.allocate(), Err(ErrorCode::TableFull));
        pool.release(pages[2]);
        assert_eq!(pool.allocate(), Ok(pages[2]));
        assert_eq!(pool.pages_used(), 5);
    }

    #[test]
    fn refuses_sizes_out_of_range() {
        assert_eq!(
            PagePool::new(1024).err().unwrap().code,
            ErrorCode::BadConfiguration
        );
    }

    #[test]
    fn two_pages_at_once() {
        let mut pool = PagePool::new(8 * PAGE_SIZE_BYTES as u64).unwrap();
        let (a, b) = pool.pages_mut(3, 1);
        a[0] = 3;
        b[0] = 1;
        assert_eq!(pool.page(3)[0], 3);
        assert_eq!(pool.page(1)[0], 1);
    }
}
