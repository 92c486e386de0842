//! Asks Linux to back DataMemory with transparent huge pages.
//!
//! Rows, hash buckets and index nodes are reached in random order across
//! the whole pool; with 4 KiB pages nearly every such access also misses the
//! TLB. With the machine's transparent huge pages in `madvise` mode (the
//! common default), memory gets 2 MiB pages only where a process asks.

/// The size of a huge page on x86-64 and arm64 Linux.
const HUGE_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// Advises huge pages for the 2 MiB-aligned part of `memory`. Best effort:
/// a kernel without transparent huge pages simply keeps small ones.
pub fn advise_huge_pages(memory: &mut [u8]) {
    let start = memory.as_mut_ptr() as usize;
    let aligned_start = start.next_multiple_of(HUGE_PAGE_BYTES);
    let end = start + memory.len();
    let aligned_end = end - end % HUGE_PAGE_BYTES;
    if aligned_end <= aligned_start {
        return;
    }
    // SAFETY: the range lies inside `memory`, which we borrow mutably, and
    // MADV_HUGEPAGE changes only how the kernel backs it, never its contents.
    let result = unsafe {
        rustix::mm::madvise(
            aligned_start as *mut core::ffi::c_void,
            aligned_end - aligned_start,
            rustix::mm::Advice::LinuxHugepage,
        )
    };
    // Refusal is not an error worth stopping for: the pool works either way.
    let _ = result;
}
