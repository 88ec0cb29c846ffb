//! The command line's allocator: buffers of 2 MiB or more are mapped on their own, aligned to
//! and advised for transparent huge pages, so that filling a fresh block buffer takes one page
//! fault per 2 MiB instead of one per 4 KiB (a fault cost a fifth of decoding time); smaller
//! allocations go to the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};

/// Huge page size.
const HUGE: usize = 2 << 20;
/// Alignment every mapping has.
const PAGE: usize = 4096;
/// Allocations from this size on are mapped on their own, on huge pages.
const MIN: usize = HUGE;

/// The system allocator, with large buffers mapped on 2 MiB pages.
pub struct HugePages;

/// `n` rounded up to whole huge pages.
fn round(n: usize) -> usize {
    n.div_ceil(HUGE) * HUGE
}

/// A fresh zeroed mapping of `size` bytes aligned to a huge page, or null.
///
/// # Safety
/// `size` must be at least 1 and far below `usize::MAX`.
unsafe fn map(size: usize) -> *mut u8 {
    let len = round(size);
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let start = raw as usize;
    let aligned = start.div_ceil(HUGE) * HUGE;
    unsafe {
        if aligned > start {
            libc::munmap(raw, aligned - start);
        }
        let end = start + len + HUGE;
        if end > aligned + len {
            libc::munmap((aligned + len) as *mut libc::c_void, end - aligned - len);
        }
        // Only a hint: without transparent huge pages this is an ordinary mapping.
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    aligned as *mut u8
}

/// Whether a block of `size` bytes aligned to `align` is mapped here.
fn mapped(size: usize, align: usize) -> bool {
    size >= MIN && align <= HUGE
}

// SAFETY: mapped blocks are whole huge pages aligned to HUGE (so to any `align <= HUGE`; one
// moved by `mremap` is page-aligned, and only blocks with `align <= PAGE` are moved), zeroed
// by the kernel, unmapped exactly once with the length they were last mapped with; the rest
// is the system allocator's.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !mapped(l.size(), l.align()) {
            return unsafe { System.alloc(l) };
        }
        unsafe { map(l.size()) }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !mapped(l.size(), l.align()) {
            return unsafe { System.alloc_zeroed(l) };
        }
        unsafe { map(l.size()) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if !mapped(l.size(), l.align()) {
            return unsafe { System.dealloc(p, l) };
        }
        unsafe {
            libc::munmap(p as *mut libc::c_void, round(l.size()));
        }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let (was, will) = (mapped(l.size(), l.align()), mapped(new, l.align()));
        if !was && !will {
            return unsafe { System.realloc(p, l, new) };
        }
        if was && will && round(new) == round(l.size()) {
            // The same pages hold it.
            return p;
        }
        if was && will && l.align() <= PAGE {
            // Pages move without a copy (a growing Vec doubles through here).
            let q = unsafe {
                libc::mremap(
                    p as *mut libc::c_void,
                    round(l.size()),
                    round(new),
                    libc::MREMAP_MAYMOVE,
                )
            };
            if q == libc::MAP_FAILED {
                return std::ptr::null_mut();
            }
            unsafe { libc::madvise(q, round(new), libc::MADV_HUGEPAGE) };
            return q as *mut u8;
        }
        let nl = unsafe { Layout::from_size_align_unchecked(new, l.align()) };
        let q = unsafe { self.alloc(nl) };
        if !q.is_null() {
            unsafe {
                std::ptr::copy_nonoverlapping(p, q, l.size().min(new));
                self.dealloc(p, l);
            }
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_blocks_are_aligned_zeroed_and_keep_their_bytes_when_resized() {
        let a = HugePages;
        let l = Layout::from_size_align(3 << 20, 64).unwrap();
        // SAFETY: sizes are non-zero; each pointer is used within its size and freed once.
        unsafe {
            let p = a.alloc_zeroed(l);
            assert!(!p.is_null() && (p as usize).is_multiple_of(HUGE));
            assert!((0..l.size()).step_by(4093).all(|i| *p.add(i) == 0));
            for i in (0..l.size()).step_by(997) {
                *p.add(i) = (i % 251) as u8;
            }
            // Grows across whole pages, shrinks within them, then to a small block and back.
            let mut size = l.size();
            let mut p = p;
            for new in [5 << 20, (4 << 20) + 1, 1000, 3 << 20] {
                let q = a.realloc(p, Layout::from_size_align(size, 64).unwrap(), new);
                assert!(!q.is_null() && (q as usize).is_multiple_of(64));
                let kept = size.min(new).min(1000);
                assert!((0..kept).step_by(997).all(|i| *q.add(i) == (i % 251) as u8));
                p = q;
                size = new;
            }
            a.dealloc(p, Layout::from_size_align(size, 64).unwrap());
            let small = Layout::from_size_align(100, 8).unwrap();
            let s = a.alloc(small);
            assert!(!s.is_null());
            a.dealloc(s, small);
        }
    }
}
