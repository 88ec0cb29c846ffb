//! Micro-benchmarks: matmul per SIMD level at the model's shapes, the network's training step,
//! the whole predictor, the binary range coder and the tensor path.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sep::internals::codecs::cm::{self, Params};
use sep::internals::codecs::lanes::Lanes;
use sep::internals::codecs::net::{NetConfig, Network};
use sep::internals::engine::kernels::{matmul_acc, outer_acc};
use sep::internals::entropy::BitEncoder;
use sep::internals::simd::{set_kernels, Kernels};
use std::hint::black_box;

/// Real text for the model benchmarks: the start of the shared corpus's book1 if unpacked,
/// else a generated stand-in.
fn sample_text(len: usize) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/corpora/text/book1");
    match std::fs::read(path) {
        Ok(mut v) if v.len() >= len => {
            v.truncate(len);
            v
        }
        _ => (0..len)
            .map(|i| b"the cat sat on a mat, "[i % 22])
            .collect(),
    }
}

fn matmul(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul");
    // (name, rows, k, n): the network's layers with 16 lanes (3 kept patches per lane).
    let shapes = [
        ("w2 fwd 16x32x256", 16, 32, 256),
        ("w1 fwd 16x96x32", 16, 96, 32),
        ("fusion 48x64x32", 48, 64, 32),
    ];
    let levels = [Kernels::Scalar, Kernels::Avx2, Kernels::Avx512];
    for (name, rows, k, n) in shapes {
        let x: Vec<f32> = (0..rows * k)
            .map(|i| ((i * 7) % 13) as f32 * 0.1 - 0.6)
            .collect();
        let w: Vec<f32> = (0..k * n)
            .map(|i| ((i * 5) % 11) as f32 * 0.1 - 0.5)
            .collect();
        let mut out = vec![0.0f32; rows * n];
        let mut dw = vec![0.0f32; k * n];
        g.throughput(Throughput::Elements((2 * rows * k * n) as u64));
        for level in levels {
            if set_kernels(level) != level {
                continue;
            }
            g.bench_function(
                BenchmarkId::new(format!("{name} flops"), level.name()),
                |b| b.iter(|| matmul_acc(black_box(&x), black_box(&w), &mut out, k, n)),
            );
            g.bench_function(
                BenchmarkId::new(format!("{name} grad-w flops"), level.name()),
                |b| b.iter(|| outer_acc(black_box(&x), black_box(&out), &mut dw, k, n)),
            );
        }
    }
    set_kernels(Kernels::detect());
    g.finish();
}

fn model(c: &mut Criterion) {
    let text = sample_text(1 << 20);
    let mut g = c.benchmark_group("model");
    g.sample_size(10);
    // The online network alone: forward + backward + Adam per step, over 16 lanes and over
    // one (the predictor's default).
    let pac = NetConfig::default();
    for lanes_n in [16, 1] {
        let lanes = Lanes::new(text.len(), lanes_n, 1);
        let nets: [(String, Network); 1] = [(
            format!("pac, {lanes_n} lanes"),
            Network::new(pac, lanes.count),
        )];
        for (name, mut net) in nets {
            let matches = vec![(None, 0usize); lanes.count];
            let steps = 4096 / lanes_n;
            g.throughput(Throughput::Bytes((steps * lanes.count) as u64));
            let mut step0 = 64;
            g.bench_function(format!("network fwd+bwd+adam, {name}"), |b| {
                b.iter(|| {
                    for s in step0..step0 + steps {
                        net.forward(&text, &lanes, s, lanes.count, &matches);
                        let ys: Vec<u8> =
                            (0..lanes.count).map(|l| text[lanes.start(l) + s]).collect();
                        net.learn(&ys);
                    }
                    step0 += steps;
                    if step0 + steps >= lanes.lane_len {
                        step0 = 64;
                    }
                })
            });
        }
    }
    // The whole predictor (context mixing + network), bits coded by a real coder.
    let block = &text[..256 << 10];
    g.throughput(Throughput::Bytes(block.len() as u64));
    g.bench_function("predictor+coder encode, 256 KiB block", |b| {
        b.iter(|| {
            cm::encode(block, Params::default(), None, Default::default(), &|_| {})
                .0
                .len()
        })
    });
    g.finish();
}

fn coder(c: &mut Criterion) {
    const N: usize = 1 << 16;
    let mut g = c.benchmark_group("coder");
    let bits: Vec<(bool, u32)> = (0..N * 8)
        .map(|i| (i % 5 == 0, 6000 + (i as u32 * 37) % 50000))
        .collect();
    g.throughput(Throughput::Bytes(N as u64));
    g.bench_function(BenchmarkId::new("8 bits encode", N), |b| {
        b.iter(|| {
            let mut enc = BitEncoder::new();
            for &(bit, p) in &bits {
                enc.encode_bit(bit, p);
            }
            black_box(enc.finish())
        })
    });
    g.finish();
}

/// Float weights for the tensor benchmarks: the minilm f32 corpus file's tensor data if
/// unpacked, else generated gaussian-like values.
fn sample_weights() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/corpora/tensors/minilm-layer0.f32.safetensors");
    if let Ok(v) = std::fs::read(path) {
        let n = u64::from_le_bytes(v[..8].try_into().expect("8 bytes")) as usize;
        return v[8 + n..].to_vec();
    }
    let mut x = 1u64;
    (0..1 << 20)
        .flat_map(|_| {
            let mut u = 0.0;
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                u += (x >> 11) as f64 / (1u64 << 53) as f64;
            }
            (((u - 1.5) * 0.05) as f32).to_le_bytes()
        })
        .collect()
}

/// The tensor path on one core: whole codec (planes + rANS + IBP) and IBP alone.
fn tensor(c: &mut Criterion) {
    use sep::internals::codecs::float::{decode, encode, ibp};
    use sep::DType;
    let data = sample_weights();
    let mut g = c.benchmark_group("tensor");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function(BenchmarkId::new("f32 encode", data.len()), |b| {
        b.iter(|| black_box(encode(&data, DType::F32)))
    });
    let packed = encode(&data, DType::F32);
    g.bench_function(BenchmarkId::new("f32 decode", data.len()), |b| {
        b.iter(|| black_box(decode(&packed, data.len()).expect("valid")))
    });
    // The same bytes through zstd level 3 (the `zstd` crate sep links), timed in this run.
    g.bench_function(BenchmarkId::new("zstd-3 compress", data.len()), |b| {
        b.iter(|| black_box(zstd::bulk::compress(&data, 3).expect("zstd")))
    });
    let zpacked = zstd::bulk::compress(&data, 3).expect("zstd");
    g.bench_function(BenchmarkId::new("zstd-3 decompress", data.len()), |b| {
        b.iter(|| black_box(zstd::bulk::decompress(&zpacked, data.len()).expect("zstd")))
    });
    // IBP on widened-bf16 words (low 16 bits zero): the case it exists for.
    let words: Vec<u64> = data
        .chunks_exact(4)
        .map(|c| (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) & 0xffff_0000) as u64)
        .collect();
    g.throughput(Throughput::Bytes(4 * words.len() as u64));
    g.bench_function(BenchmarkId::new("ibp pack 32-bit", words.len()), |b| {
        b.iter(|| {
            let mut out = Vec::new();
            ibp::pack(&words, 32, &mut out);
            black_box(out)
        })
    });
    let mut ibp_bytes = Vec::new();
    ibp::pack(&words, 32, &mut ibp_bytes);
    g.bench_function(BenchmarkId::new("ibp unpack 32-bit", words.len()), |b| {
        let mut back = vec![0u64; words.len()];
        b.iter(|| black_box(ibp::unpack(&ibp_bytes, 32, &mut back).expect("valid")))
    });
    g.finish();
    eprintln!(
        "tensor f32: {} -> {} bytes (ratio {:.4}; zstd-3 {:.4}); ibp on widened bf16: ratio {:.3}",
        data.len(),
        packed.len(),
        data.len() as f64 / packed.len() as f64,
        data.len() as f64 / zpacked.len() as f64,
        (4 * words.len()) as f64 / ibp_bytes.len() as f64
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(3));
    targets = coder, tensor, matmul, model
}
criterion_main!(benches);
