//! Decoding allocates no more than it reserves against `Options::memory` (reported as
//! `Stats::memory_peak`) beyond a small allowance per thread, whatever the codec; a block's
//! reservation is made before its tables are allocated, so a limit below it refuses the archive;
//! and a small archive that starts from the built-in pack reserves what its block needs, not the
//! pack's largest tables. (One test in this binary, so that the allocation counters see nothing
//! else.)

#[allow(dead_code, unused_imports)]
#[path = "it/common.rs"]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Peak;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Ordering::SeqCst) + by;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: forwards to the system allocator unchanged; only counts the bytes live.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size() as isize);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counted as the new block allocated before the old one is freed, as a move does.
        grew(new_size as isize);
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Peak = Peak;

/// Heap a decoding may hold beyond what it reserves, per thread: the float codecs' scratch
/// kept per thread, the zstd contexts, the threads' own bookkeeping.
const PER_THREAD: u64 = 4 << 20;

/// Decodes `archive`, returning its stats and the most heap held at once above what was live
/// before.
fn decode_peak(archive: &[u8], opts: &sep::Options) -> sep::Result<(sep::Stats, u64)> {
    let mut out = Vec::new();
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let stats = sep::decompress_bytes(archive, &mut out, opts)?;
    let peak = (PEAK.load(Ordering::SeqCst) - before).max(0) as u64;
    Ok((stats, peak))
}

/// Smooth 16-bit values, a field's.
fn field() -> Vec<u8> {
    (0..256 * 512)
        .flat_map(|i: u32| {
            let (x, y) = ((i % 512) as f64, (i / 512) as f64);
            let v = 30000.0 + 8000.0 * (x / 37.0).sin() * (y / 23.0).cos() + x * 3.0;
            (v as u16).to_le_bytes()
        })
        .collect()
}

/// One random stretch repeated: long matches, LZMA's.
fn repeats() -> Vec<u8> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let piece: Vec<u8> = (0..150_000)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect();
    piece.repeat(4)
}

#[test]
fn decoding_holds_what_it_reserves_and_refuses_what_does_not_fit() {
    let text = |n: &str| common::corpus_file(n);
    let mut cases: Vec<(&str, Vec<u8>, sep::Options)> = Vec::new();
    let opts = |f: &dyn Fn(&mut sep::Options)| {
        let mut o = sep::Options::default();
        o.threads = 1;
        f(&mut o);
        o
    };
    cases.push((
        "text, the built-in pack",
        text("text/Apache-2.0"),
        opts(&|_| {}),
    ));
    cases.push((
        "text, level 1",
        text("text/tar-NEWS"),
        opts(&|o| o.level = 1),
    ));
    cases.push((
        "text, level 9",
        text("text/findutils-NEWS"),
        opts(&|o| o.level = 9),
    ));
    cases.push((
        "text, 2 threads, 3 blocks",
        text("text/developers-reference.txt"),
        opts(&|o| {
            o.threads = 2;
            o.block_size = 128 << 10;
            o.pack = sep::PackChoice::Off;
        }),
    ));
    // A level-9 pack with a pre-trained network (the test fixture's), which adds the maps
    // that refine the network's probability.
    let spec = sep::PackSpec {
        name: "networked".into(),
        kind: "text".into(),
        description: "test".into(),
        level: 9,
        slots_log: 14,
        history: 4 << 10,
        network: Some(common::repo_file("tests/data/net/frozen-small.safetensors")),
        base: None,
    };
    let bytes = sep::pretrain(&text("text/tar-NEWS")[..16 << 10], &spec, &|_| {}).unwrap();
    let networked = std::sync::Arc::new(sep::Pack::from_file(&bytes).unwrap());
    cases.push((
        "text, level 9, a pack with a network",
        text("text/findutils-NEWS")[..32 << 10].to_vec(),
        opts(&|o| {
            o.level = 9;
            o.pack = sep::PackChoice::Given(networked.clone());
        }),
    ));
    cases.push(("executable", text("binary/xargs"), opts(&|_| {})));
    cases.push((
        "executable, level 9 (the wide model)",
        text("binary/xargs"),
        opts(&|o| o.level = 9),
    ));
    cases.push((
        "tensors, f32",
        text("tensors/ppocr-cls.f32.safetensors"),
        opts(&|_| {}),
    ));
    cases.push((
        "tensors, f16",
        text("tensors/ppocr-cls.f16.safetensors"),
        opts(&|_| {}),
    ));
    cases.push(("a 16-bit field", field(), opts(&|_| {})));
    cases.push(("long repeats", repeats(), opts(&|_| {})));
    cases.push((
        "a JPEG",
        common::repo_file("tests/data/jpeg/flower-of-life.jpg"),
        opts(&|_| {}),
    ));
    cases.push((
        "a gzip member",
        common::repo_file("tests/data/deflate/sed.1.gz"),
        opts(&|_| {}),
    ));
    let mut codecs = std::collections::BTreeSet::new();
    for (name, data, o) in &cases {
        let mut archive = Vec::new();
        sep::compress_bytes(data, &mut archive, o).unwrap();
        let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
        codecs.extend(info.blocks.iter().map(|b| b.codec.name()));
        let (stats, _) = decode_peak(&archive, o).unwrap();
        // At the limit it needed, kept tables are freed as blocks need their room.
        let mut at_need = o.clone();
        at_need.memory = stats.memory_peak;
        let (_, peak) = decode_peak(&archive, &at_need).unwrap();
        let allowed = stats.memory_peak + PER_THREAD * o.threads as u64;
        eprintln!(
            "{name}: {} bytes, reserved {} KiB, heap peak {} KiB",
            data.len(),
            stats.memory_peak >> 10,
            peak >> 10
        );
        assert!(
            peak <= allowed,
            "{name}: heap peak {peak} over the {} reserved",
            stats.memory_peak
        );
        // A limit just under the reservation refuses the archive (a one-thread run holds one
        // block at a time, so no waiting makes room), before its tables are allocated.
        let mut tight = o.clone();
        tight.memory = stats.memory_peak - 1;
        if o.threads == 1 {
            match decode_peak(&archive, &tight) {
                Err(sep::Error::MemoryNeed { .. }) => {}
                r => panic!("{name}: under the limit: {:?}", r.map(|(s, _)| s)),
            }
        }
    }
    // The costliest configurations a header may name (16 lanes, a network 32 wide, every
    // context): the context-mixing decoder within what it reserves.
    use sep::internals::codecs::cm::{need, Backend, CmConfig, CpuBackend};
    let data = text("text/tar-NEWS");
    {
        let mut config = CmConfig::for_level(9);
        config.params.max_lanes = 16;
        config.params.min_lane = 1 << 10;
        config.params.net.hidden = 32;
        config.params.contexts = (1 << 24) - 1;
        let payload = CpuBackend::default().encode(&data, &config, &|_| {});
        let reserved = need(&payload, data.len(), config.params, None) + data.len() as u64;
        let mut out = Vec::new();
        let before = LIVE.load(Ordering::SeqCst);
        PEAK.store(before, Ordering::SeqCst);
        let backend = CpuBackend::default();
        backend
            .decode(&payload, data.len(), &config, &|_| {}, &mut out)
            .unwrap();
        let peak = (PEAK.load(Ordering::SeqCst) - before) as u64;
        drop(backend);
        assert_eq!(out, data);
        eprintln!(
            "widest: reserved {} KiB, heap peak {} KiB",
            reserved >> 10,
            peak >> 10
        );
        assert!(
            peak <= reserved,
            "heap peak {peak} over the {reserved} reserved"
        );
    }
    for c in [
        "cm",
        "field",
        "planes",
        "stored",
        "tensor-header",
        "jpeg",
        "deflate",
    ] {
        assert!(codecs.contains(c), "no {c} block among {codecs:?}");
    }
    // An 11 KB block from the built-in pack (25 MB, 2^20 slots of 16 bytes): twice the pack's
    // table (the pack's slots fill it), not four times.
    let (_, data, o) = &cases[0];
    let mut archive = Vec::new();
    sep::compress_bytes(data, &mut archive, o).unwrap();
    let (stats, _) = decode_peak(&archive, o).unwrap();
    assert!(stats.memory_peak < 80 << 20, "{}", stats.memory_peak);
}
