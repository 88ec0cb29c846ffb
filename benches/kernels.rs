//! Micro-benchmarks: the entropy coder (quantise + encode, decode) at the model's 256-way output.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sep::coder::{quantize, FreqTable, LaneDecoder, LaneEncoder};
use std::hint::black_box;

/// Distinct distributions in the workload: a model's output sits in cache when it is coded, so
/// the benchmark cycles through a cache-sized set instead of streaming megabytes from memory.
const DISTS: usize = 256;

/// Softmax-like distributions of varied sharpness with the symbol each one codes.
fn workload(n: usize) -> (Vec<[f32; 256]>, Vec<u8>) {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut dists = Vec::with_capacity(DISTS);
    let mut peaks = Vec::with_capacity(DISTS);
    for i in 0..DISTS {
        let peak = (rnd() % 256) as usize;
        peaks.push(peak as u8);
        let sharp = 1.0 + (i % 7) as f32;
        let mut p = [0f32; 256];
        let mut s = 0.0;
        for (k, v) in p.iter_mut().enumerate() {
            let d = (k as f32 - peak as f32).abs();
            *v = 1.0 / (1.0 + d * sharp) + (rnd() % 100) as f32 * 1e-5;
            s += *v;
        }
        p.iter_mut().for_each(|v| *v /= s);
        dists.push(p);
    }
    // Two symbols in three are the distribution's peak, the rest are uniform.
    let syms = (0..n)
        .map(|i| {
            if rnd() % 3 == 0 {
                (rnd() % 256) as u8
            } else {
                peaks[i % DISTS]
            }
        })
        .collect();
    (dists, syms)
}

fn coder(c: &mut Criterion) {
    const N: usize = 1 << 16;
    let (dists, syms) = workload(N);
    let mut g = c.benchmark_group("coder");
    g.throughput(Throughput::Bytes(N as u64));
    g.bench_function(BenchmarkId::new("quantise+encode", N), |b| {
        b.iter(|| {
            let mut t = FreqTable::default();
            let mut enc = LaneEncoder::new();
            for (p, &s) in dists.iter().cycle().zip(&syms) {
                quantize(p, &mut t);
                enc.encode(s, &t);
            }
            black_box(enc.finish())
        })
    });
    let mut t = FreqTable::default();
    let mut enc = LaneEncoder::new();
    for (p, &s) in dists.iter().cycle().zip(&syms) {
        quantize(p, &mut t);
        enc.encode(s, &t);
    }
    let bytes = enc.finish();
    g.bench_function(BenchmarkId::new("quantise+decode", N), |b| {
        b.iter(|| {
            let mut t = FreqTable::default();
            let mut dec = LaneDecoder::new(&bytes).expect("valid");
            let mut acc = 0u32;
            for p in dists.iter().cycle().take(N) {
                quantize(p, &mut t);
                acc += dec.decode(&t).expect("valid") as u32;
            }
            black_box(acc)
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(3));
    targets = coder
}
criterion_main!(benches);
