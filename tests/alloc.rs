//! The pipeline allocates its model tables once per worker, not per block and never per step.
//! (One test in this binary, so the global allocation counters see nothing else.)

use sep::internals::codecs::cm::{Backend, CmConfig, CpuBackend};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static CALLS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size.saturating_sub(layout.size()), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn counted<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    let (c0, b0) = (CALLS.load(Ordering::SeqCst), BYTES.load(Ordering::SeqCst));
    let r = f();
    (
        r,
        CALLS.load(Ordering::SeqCst) - c0,
        BYTES.load(Ordering::SeqCst) - b0,
    )
}

#[test]
fn workspaces_are_reused_across_blocks_and_steps_do_not_allocate() {
    // Three different blocks of real-looking text, 96 KiB each (one lane: ~98K steps a block).
    let words = [
        "the ", "quick ", "brown ", "fox ", "jumps ", "over ", "lazy ", "dogs; ", "sep\n",
    ];
    let make = |seed: usize| -> Vec<u8> {
        let mut v = Vec::new();
        let mut i = seed;
        while v.len() < 96 << 10 {
            i = i.wrapping_mul(1103515245).wrapping_add(12345);
            v.extend_from_slice(words[(i >> 16) % words.len()].as_bytes());
        }
        v.truncate(96 << 10);
        v
    };
    let blocks: Vec<Vec<u8>> = (1..=3).map(make).collect();
    let backend = CpuBackend::default();
    let model = CmConfig::default();
    let mut payloads = Vec::new();
    let mut stats = Vec::new();
    for b in &blocks {
        let (p, calls, bytes) = counted(|| backend.encode(b, &model, &|_| {}));
        payloads.push(p);
        stats.push((calls, bytes));
    }
    eprintln!("encode allocations per block (calls, bytes): {stats:?}");
    assert_eq!(
        backend.arena.created(),
        1,
        "one worker must keep one workspace"
    );
    let (first_calls, first_bytes) = stats[0];
    for &(calls, bytes) in &stats[1..] {
        // The first block allocates the tables (megabytes); later blocks only their buffers.
        assert!(
            bytes * 4 < first_bytes,
            "block reallocated its tables: {bytes} vs {first_bytes}"
        );
        // ~98K steps per block: any per-step allocation would show up as tens of thousands.
        assert!(
            calls < 2_000,
            "{calls} allocations for one block (first: {first_calls})"
        );
    }
    for (b, p) in blocks.iter().zip(&payloads) {
        let mut out = Vec::new();
        let (done, calls, _) = counted(|| backend.decode(p, b.len(), &model, &|_| {}, &mut out));
        done.expect("decodes");
        assert_eq!(&out, b);
        assert!(
            calls < 2_000,
            "{calls} allocations while decoding one block"
        );
    }
    assert_eq!(backend.arena.created(), 1);
}
