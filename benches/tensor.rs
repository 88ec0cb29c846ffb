//! Float codecs' tuning harness: ratio and single-core speed of the planes codec on the float
//! segments of each file given (other segments counted at their raw size).
//! Usage: cargo bench --bench tensor -- FILE...
//! `SEP_DTYPE=f32` (or f16, bf16, f64) reads raw arrays; `SEP_KERNELS` picks the kernel level;
//! `SEP_REPS` runs (best kept); `SEP_ONLY=encode|decode` repeats one half only (profiles);
//! `SEP_SEGMENTS=1` also prints each tensor segment's size, ratio and speeds.
//! `SEP_WHOLE=1` measures the whole product instead, on one thread, in memory: every block as
//! `sep compress` codes it (header, the codec each block is given), checksums included, and
//! decoded with `decompress_to_vec` (`SEP_WRITER=1`: `decompress_bytes` into a writer); ratio
//! and speeds are of the whole file (`SEP_ONLY=encode` decodes once, untimed); `SEP_ZSTD=19`
//! also times zstd at that level on the same data and thread, and gives sep's speeds as multiples
//! of its.

use sep::internals::codecs::float::{decode, encode};
use sep::internals::containers::{layout, Kind};
use sep::{DType, Kernels};
use std::time::Instant;

fn main() {
    sep::set_kernels(Kernels::from_env().expect("SEP_KERNELS"));
    let raw: Option<DType> = std::env::var("SEP_DTYPE")
        .ok()
        .map(|d| d.parse().expect("SEP_DTYPE"));
    // `cargo bench` passes `--bench`.
    for path in std::env::args().skip(1).filter(|a| !a.starts_with("--")) {
        let data = std::fs::read(&path).expect("read");
        if std::env::var_os("SEP_WHOLE").is_some() {
            whole(&path, &data, raw);
            continue;
        }
        let (mut at, mut packed, mut tensor_bytes) = (0usize, 0usize, 0usize);
        let (mut t_enc, mut t_dec) = (0f64, 0f64);
        for seg in layout(&data, raw) {
            let part = &data[at..at + seg.len as usize];
            at += seg.len as usize;
            match seg.kind {
                Kind::General
                | Kind::TensorHeader
                | Kind::Quantized
                | Kind::Jpeg
                | Kind::Deflate => packed += part.len(),
                Kind::Tensor(d) => {
                    // Best of SEP_REPS (default 3) runs of each, to see through a noisy machine.
                    let (mut te, mut td) = (f64::MAX, f64::MAX);
                    let (mut p, mut back) = (Vec::new(), Vec::new());
                    let reps = reps();
                    // SEP_ONLY=decode (or encode) repeats just that half, for profiles.
                    let only = std::env::var("SEP_ONLY").unwrap_or_default();
                    for rep in 0..reps {
                        if only != "decode" || rep == 0 {
                            let t = Instant::now();
                            p = encode(part, d);
                            te = te.min(t.elapsed().as_secs_f64());
                        }
                        if only == "encode" && rep > 0 {
                            continue;
                        }
                        let t = Instant::now();
                        back = decode(&p, part.len()).expect("decode");
                        td = td.min(t.elapsed().as_secs_f64());
                    }
                    t_enc += te;
                    t_dec += td;
                    // SEP_SEGMENTS=1 prints each tensor segment's size and speeds.
                    if std::env::var_os("SEP_SEGMENTS").is_some() {
                        let mb = part.len() as f64 / 1e6;
                        println!(
                            "  {:>9} B {:?} ratio {:.4} compress {:.0} MB/s decompress {:.0} MB/s",
                            part.len(),
                            d,
                            part.len() as f64 / p.len() as f64,
                            mb / te,
                            mb / td
                        );
                    }
                    assert!(back == part, "round trip failed");
                    packed += p.len();
                    tensor_bytes += part.len();
                }
            }
        }
        let mb = tensor_bytes as f64 / 1e6;
        println!(
            "{path}: {} -> {packed} ratio {:.4}  compress {:.0} MB/s  decompress {:.0} MB/s",
            data.len(),
            data.len() as f64 / packed as f64,
            mb / t_enc,
            mb / t_dec
        );
    }
}

/// Runs of each half to keep the best of: `SEP_REPS`, default 3.
fn reps() -> usize {
    std::env::var("SEP_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

/// Best of `reps()` runs of `f`, in seconds, and its last result.
fn best_of<T>(f: impl FnMut() -> T) -> (f64, T) {
    best_of_n(reps(), f)
}

/// Best of `n` runs of `f`, in seconds, and its last result.
fn best_of_n<T>(n: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut last = None;
    for _ in 0..n.max(1) {
        let t = Instant::now();
        last = Some(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, last.expect("at least one run"))
}

/// The `SEP_WHOLE=1` measurement of one file (`SEP_ONLY=decode` compresses once).
fn whole(path: &str, data: &[u8], raw: Option<DType>) {
    let mut opts = sep::Options::default();
    opts.threads = 1;
    opts.dtype = raw;
    let compress = || {
        let mut packed = Vec::with_capacity(data.len());
        sep::compress_bytes(data, &mut packed, &opts).expect("compress");
        packed
    };
    let only = std::env::var("SEP_ONLY").unwrap_or_default();
    let (te, packed) = match only.as_str() {
        "decode" => (f64::NAN, compress()),
        _ => best_of(compress),
    };
    let mut back = Vec::with_capacity(data.len());
    // SEP_WRITER=1 decodes through a writer (`decompress_bytes`), each block copied to it.
    let writer = std::env::var_os("SEP_WRITER").is_some();
    // SEP_ONLY=encode decodes once (a round-trip check), untimed.
    let decode_reps = match only.as_str() {
        "encode" => 1,
        _ => reps(),
    };
    let (td, ()) = best_of_n(decode_reps, || {
        back.clear();
        match writer {
            true => sep::decompress_bytes(&packed, &mut back, &opts),
            false => sep::decompress_to_vec(&packed, &mut back, &opts),
        }
        .expect("decompress");
    });
    assert!(back == data, "round trip failed");
    let mb = data.len() as f64 / 1e6;
    println!(
        "{path}: {} -> {} ratio {:.4}  compress {:.0} MB/s  decompress {:.0} MB/s",
        data.len(),
        packed.len(),
        data.len() as f64 / packed.len() as f64,
        mb / te,
        mb / td
    );
    // SEP_ZSTD=LEVEL: zstd in memory on the same thread, in the same run (compress once,
    // decompress best of `reps()`), and sep's speeds as multiples of its.
    if let Some(level) = std::env::var("SEP_ZSTD").ok().and_then(|l| l.parse().ok()) {
        let t = std::time::Instant::now();
        let z = zstd::bulk::compress(data, level).expect("zstd");
        let zc = t.elapsed().as_secs_f64();
        let (zd, out) = best_of(|| zstd::bulk::decompress(&z, data.len()).expect("unzstd"));
        assert!(out == data, "zstd round trip failed");
        println!(
            "  zstd -{level}: ratio {:.4}  compress {:.1} MB/s  decompress {:.0} MB/s;  sep/zstd: compress {:.2}x  decompress {:.2}x",
            data.len() as f64 / z.len() as f64,
            mb / zc,
            mb / zd,
            zc / te,
            zd / td
        );
    }
}
