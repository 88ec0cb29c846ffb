//! Tensor block codec. Each value is split into planes: `E`, the exponent (for f64 its top 8
//! bits), `M`, the next 3 bits (top of the mantissa), and the residual: the sign and the
//! remaining low bits. `E` and `M` are coded with rANS: `E` from a 12-bit table fitted to the
//! block's exponent counts so far (an escape codes an exponent not seen yet as 8 raw bits),
//! `M` from an 8-bit table of the value's exponent. Tables are refitted between batches of
//! values (16, 32, ... then every 4096), so within a batch every symbol decodes independently.
//! The residual goes through invariant bit packing (IBP), which stores bits that hardly vary
//! (e.g. the zero low half of widened bf16 weights) once per group.
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! rANS stream length (`u32`) + stream, then the IBP section of the residuals.

use super::{ibp, DType};
use crate::coder::rans::{self, fit, Sym};
use crate::error::{Error, Result};

/// Precision of the exponent table.
const E_BITS: u32 = 12;
/// Precision of the mantissa-top tables.
const M_BITS: u32 = 8;
/// Slots of the exponent table kept for the escape.
const ESCAPE: u32 = 1;
/// Escape marker in the exponent decode table.
const ESC_SYM: u64 = 256;
/// Largest batch between two refits.
const MAX_BATCH: usize = 4096;
/// Exponent counts are halved when they reach this total; mantissa-top counts per exponent
/// at `M_HALVE`.
const E_HALVE: u32 = 1 << 13;
const M_HALVE: u32 = 1 << 12;

/// Bit layout of one dtype's values as coded here.
#[derive(Clone, Copy)]
struct Fields {
    /// Width of a value in bits.
    bits: u32,
    /// Bits of `E`.
    ebits: u32,
}

impl Fields {
    /// Bits below `M`.
    #[inline(always)]
    fn low(self) -> u32 {
        self.bits - 1 - self.ebits - 3
    }

    /// Bits of the residual (sign + low bits).
    #[inline(always)]
    fn rbits(self) -> u32 {
        self.low() + 1
    }

    /// Splits a value into (E, M, residual).
    #[inline(always)]
    fn split(self, v: u64) -> (u8, u8, u64) {
        let low = self.low();
        let e = (v >> (low + 3)) as u32 & ((1 << self.ebits) - 1);
        let m = (v >> low) as u8 & 7;
        let sign = v >> (self.bits - 1);
        let r = sign << low | (v & ((1u64 << low) - 1));
        (e as u8, m, r)
    }

    /// Joins (E, M, residual) back into a value.
    #[inline(always)]
    fn join(self, e: u8, m: u8, r: u64) -> u64 {
        let low = self.low();
        (r >> low) << (self.bits - 1)
            | (e as u64) << (low + 3)
            | (m as u64) << low
            | (r & ((1u64 << low) - 1))
    }
}

/// Counts and tables of one block, refitted between batches identically on both sides.
struct Model {
    e_counts: [u32; 256],
    e_total: u32,
    /// Exponent slot ranges (`start | freq << 16`, freq 0 = not in the table yet).
    e_enc: [u32; 256],
    escape_start: u32,
    /// Per slot: symbol (256 = escape) | freq << 16 | (slot - start) << 32.
    e_dec: Vec<u64>,
    m_counts: Vec<[u32; 8]>,
    m_total: Vec<u32>,
    /// Per exponent and mantissa-top symbol: `start | freq << 16`.
    m_enc: Vec<[u32; 8]>,
    /// Per exponent, per slot: symbol | freq << 3 | (slot - start) << 12.
    m_dec: Vec<u32>,
}

impl Model {
    fn new() -> Self {
        let mut m = Model {
            e_counts: [0; 256],
            e_total: 0,
            e_enc: [0; 256],
            escape_start: 0,
            e_dec: vec![0; 1 << E_BITS],
            m_counts: vec![[0; 8]; 256],
            m_total: vec![0; 256],
            m_enc: vec![[0; 8]; 256],
            m_dec: vec![0; 256 << M_BITS],
        };
        m.refit_e();
        for e in 0..256 {
            m.refit_m(e);
        }
        m
    }

    fn refit_e(&mut self) {
        if self.e_total >= E_HALVE {
            self.e_total = 0;
            for c in self.e_counts.iter_mut() {
                *c = (*c + 1) >> 1;
                self.e_total += *c;
            }
        }
        let mut freqs = [0u32; 256];
        let fitted = fit(&self.e_counts, E_BITS, false, ESCAPE, &mut freqs);
        let (mut start, mut slot) = (0u32, 0usize);
        for (s, &f) in freqs.iter().enumerate() {
            self.e_enc[s] = start | f << 16;
            for k in 0..f {
                self.e_dec[slot] = s as u64 | (f as u64) << 16 | (k as u64) << 32;
                slot += 1;
            }
            start += f;
        }
        let esc = if fitted { ESCAPE } else { 1 << E_BITS };
        self.escape_start = start;
        for k in 0..esc {
            self.e_dec[slot] = ESC_SYM | (esc as u64) << 16 | (k as u64) << 32;
            slot += 1;
        }
    }

    fn refit_m(&mut self, e: usize) {
        if self.m_total[e] >= M_HALVE {
            self.m_total[e] = 0;
            for c in self.m_counts[e].iter_mut() {
                *c = (*c + 1) >> 1;
                self.m_total[e] += *c;
            }
        }
        let mut freqs = [0u32; 8];
        fit(&self.m_counts[e], M_BITS, true, 0, &mut freqs);
        let table = &mut self.m_dec[e << M_BITS..(e + 1) << M_BITS];
        let (mut start, mut slot) = (0u32, 0usize);
        for (s, &f) in freqs.iter().enumerate() {
            self.m_enc[e][s] = start | f << 16;
            for k in 0..f {
                table[slot] = s as u32 | f << 3 | k << 12;
                slot += 1;
            }
            start += f;
        }
    }

    /// Counts one value of the current batch (tables change only at `end_batch`).
    #[inline(always)]
    fn count(&mut self, e: u8, m: u8) {
        self.m_counts[e as usize][m as usize] += 1;
    }

    /// Ends a batch: refits the mantissa-top tables of the exponents it counted, brings the
    /// exponent counts up to date and refits the exponent table.
    fn end_batch(&mut self) {
        for e in 0..256 {
            let sum: u32 = self.m_counts[e].iter().sum();
            let new = sum - self.m_total[e];
            if new > 0 {
                self.e_counts[e] += new;
                self.e_total += new;
                self.m_total[e] = sum;
                self.refit_m(e);
            }
        }
        self.refit_e();
    }
}

/// Length of batch number `k` (0-based): 16, 16, 32, ..., 2048 fill the first IBP group,
/// then one batch per group.
#[inline(always)]
fn batch_len(k: u32) -> usize {
    match k {
        0 => 16,
        _ => (8usize << k.min(9)).min(MAX_BATCH),
    }
}

#[inline(always)]
fn sym(packed: u32, bits: u32) -> Sym {
    Sym {
        start: packed & 0xffff,
        freq: packed >> 16,
        bits,
    }
}

/// Value width `W` (bytes) and exponent bits `EB` are constants so every shift is one.
fn encode_w<const W: usize, const EB: u32>(data: &[u8], out: &mut Vec<u8>) {
    let f = Fields {
        bits: 8 * W as u32,
        ebits: EB,
    };
    let n = data.len() / W;
    let mut model = Model::new();
    let mut enc = rans::Encoder::with_capacity(2 * n + 64);
    let mut residual = Vec::with_capacity(n);
    let (mut i, mut k) = (0usize, 0u32);
    while i < n {
        let end = (i + batch_len(k)).min(n);
        for (j, v) in data[i * W..end * W].chunks_exact(W).enumerate() {
            // Value j's exponent (and escape) go to state 2 (j & 1), its mantissa top to the next.
            let way = 2 * (j & 1);
            let (e, m, r) = f.split(read::<W>(v));
            let ee = model.e_enc[e as usize];
            if ee >> 16 != 0 {
                enc.put(sym(ee, E_BITS), way);
            } else {
                let freq = if model.escape_start == 0 {
                    1 << E_BITS
                } else {
                    ESCAPE
                };
                let escape = Sym {
                    start: model.escape_start,
                    freq,
                    bits: E_BITS,
                };
                enc.put(escape, way);
                let raw = Sym {
                    start: e as u32,
                    freq: 1,
                    bits: 8,
                };
                enc.put(raw, way);
            }
            enc.put(sym(model.m_enc[e as usize][m as usize], M_BITS), way + 1);
            model.count(e, m);
            residual.push(r);
        }
        model.end_batch();
        i = end;
        k += 1;
    }
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    enc.finish(out);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    ibp::pack(&residual, f.rbits(), out);
}

/// Decodes one value's (E, M): E (and an escaped E) from state `xe`, M from `xm`.
#[inline(always)]
fn decode_one(xe: &mut u32, xm: &mut u32, w: &mut rans::Words, model: &Model) -> (u8, u8) {
    let d = model.e_dec[(*xe & ((1 << E_BITS) - 1)) as usize];
    rans::step(xe, E_BITS, (d >> 16) as u32 & 0xffff, (d >> 32) as u32, w);
    let e = if d & 0x1ff == ESC_SYM {
        let raw = *xe & 0xff;
        rans::step(xe, 8, 1, 0, w);
        raw as u8
    } else {
        d as u8
    };
    let md = model.m_dec[(e as usize) << M_BITS | (*xm & ((1 << M_BITS) - 1)) as usize];
    rans::step(xm, M_BITS, (md >> 3) & 0x1ff, md >> 12, w);
    (e, (md & 7) as u8)
}

fn decode_w<const W: usize, const EB: u32>(body: &[u8], n: usize, out: &mut Vec<u8>) -> Result<()> {
    let bad = |what: &str| Error::Corrupt(format!("tensor block: {what}"));
    let f = Fields {
        bits: 8 * W as u32,
        ebits: EB,
    };
    let len = body
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| bad("missing stream length"))?;
    let stream = body
        .get(4..4 + len)
        .ok_or_else(|| bad("stream cut short"))?;
    let rest = &body[4 + len..];
    let mut residuals = ibp::Unpacker::for_level(rest, f.rbits(), n)?;
    let mut group = vec![0u64; ibp::GROUP];
    let mut model = Model::new();
    let (states, mut words) = rans::Decoder::new(stream)?.split();
    let [mut x0, mut x1, mut x2, mut x3] = states;
    let start = out.len();
    out.resize(start + n * W, 0);
    let (mut i, mut k) = (0usize, 0u32);
    while i < n {
        if i % ibp::GROUP == 0 {
            let len = (n - i).min(ibp::GROUP);
            residuals.group(&mut group[..len])?;
        }
        let end = (i + batch_len(k)).min(n);
        let g0 = i % ibp::GROUP;
        let res = &group[g0..g0 + (end - i)];
        let slots = &mut out[start + i * W..start + end * W];
        // Pairs of values: even ones on states 0/1, odd ones on 2/3.
        let mut pairs = slots.chunks_exact_mut(2 * W);
        for (pair, r) in (&mut pairs).zip(res.chunks_exact(2)) {
            let (e0, m0) = decode_one(&mut x0, &mut x1, &mut words, &model);
            let (e1, m1) = decode_one(&mut x2, &mut x3, &mut words, &model);
            model.count(e0, m0);
            model.count(e1, m1);
            pair[..W].copy_from_slice(&f.join(e0, m0, r[0]).to_le_bytes()[..W]);
            pair[W..].copy_from_slice(&f.join(e1, m1, r[1]).to_le_bytes()[..W]);
        }
        let last = pairs.into_remainder();
        if !last.is_empty() {
            let (e, m) = decode_one(&mut x0, &mut x1, &mut words, &model);
            model.count(e, m);
            last.copy_from_slice(&f.join(e, m, res[res.len() - 1]).to_le_bytes()[..W]);
        }
        model.end_batch();
        i = end;
        k += 1;
    }
    if residuals.consumed() != rest.len() {
        return Err(bad("unexpected bytes after the data"));
    }
    rans::Decoder::join([x0, x1, x2, x3], words).finish()
}

#[inline(always)]
fn read<const W: usize>(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..W].copy_from_slice(&v[..W]);
    u64::from_le_bytes(b)
}

/// Codes `data`, an array of `dtype` values (a partial last value is kept raw).
pub fn encode(data: &[u8], dtype: DType) -> Vec<u8> {
    let w = dtype.width();
    let n = data.len() / w;
    let tail = &data[n * w..];
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    out.push(dtype.tag());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
    let body = &data[..n * w];
    match dtype {
        DType::F16 => encode_w::<2, 5>(body, &mut out),
        DType::BF16 => encode_w::<2, 8>(body, &mut out),
        DType::F32 => encode_w::<4, 8>(body, &mut out),
        DType::F64 => encode_w::<8, 8>(body, &mut out),
    }
    out
}

/// Decodes a payload written by `encode` that must hold exactly `raw_len` bytes.
pub fn decode(payload: &[u8], raw_len: usize) -> Result<Vec<u8>> {
    let bad = |what: &str| Error::Corrupt(format!("tensor block: {what}"));
    let (&tag, rest) = payload.split_first().ok_or_else(|| bad("empty"))?;
    let dtype = DType::from_tag(tag)?;
    let w = dtype.width();
    let head = rest.get(..5).ok_or_else(|| bad("header cut short"))?;
    let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let tail_len = head[4] as usize;
    if tail_len >= w || n.checked_mul(w).and_then(|b| b.checked_add(tail_len)) != Some(raw_len) {
        return Err(bad("sizes do not match the block"));
    }
    let tail = rest
        .get(5..5 + tail_len)
        .ok_or_else(|| bad("tail cut short"))?;
    let body = &rest[5 + tail_len..];
    let mut out = Vec::with_capacity(raw_len);
    match dtype {
        DType::F16 => decode_w::<2, 5>(body, n, &mut out)?,
        DType::BF16 => decode_w::<2, 8>(body, n, &mut out)?,
        DType::F32 => decode_w::<4, 8>(body, n, &mut out)?,
        DType::F64 => decode_w::<8, 8>(body, n, &mut out)?,
    }
    out.extend_from_slice(tail);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// Deterministic float-like data: gaussian-ish magnitudes via a sum of uniforms.
    fn weights(n: usize, seed: u64) -> Vec<f32> {
        let mut x = seed;
        let mut next = move || (xorshift(&mut x) >> 11) as f64 / (1u64 << 53) as f64;
        (0..n)
            .map(|_| ((next() + next() + next() - 1.5) * 0.05) as f32)
            .collect()
    }

    fn to_bytes(dtype: DType, w: &[f32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in w {
            match dtype {
                DType::F32 => out.extend_from_slice(&v.to_le_bytes()),
                DType::F64 => out.extend_from_slice(&(v as f64).to_le_bytes()),
                DType::BF16 => out.extend_from_slice(&((v.to_bits() >> 16) as u16).to_le_bytes()),
                DType::F16 => {
                    // Truncating conversion is enough for test data: exponent rebias + mantissa.
                    let b = v.to_bits();
                    let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
                    let h = if e <= 0 {
                        0
                    } else {
                        ((e as u32) << 10) | ((b >> 13) & 0x3ff)
                    };
                    out.extend_from_slice(&((h | (b >> 16) & 0x8000) as u16).to_le_bytes());
                }
            }
        }
        out
    }

    #[test]
    fn roundtrips_every_dtype_and_compresses() {
        let w = weights(50_000, 5);
        for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            let mut data = to_bytes(dtype, &w);
            for extra in [0usize, 1] {
                data.extend(std::iter::repeat_n(0x5a, extra));
                let packed = encode(&data, dtype);
                assert_eq!(decode(&packed, data.len()).unwrap(), data, "{dtype:?}");
                assert!(
                    packed.len() < data.len(),
                    "{dtype:?}: {} >= {}",
                    packed.len(),
                    data.len()
                );
            }
        }
        for n in [0usize, 1, 2, 3, 7] {
            let data: Vec<u8> = (0..n as u8).collect();
            let packed = encode(&data, DType::F32);
            assert_eq!(decode(&packed, n).unwrap(), data);
        }
    }

    #[test]
    fn invariant_low_bits_are_found() {
        // f32 values widened from bf16: the low 16 bits are all zero.
        let w = weights(40_000, 9);
        let data: Vec<u8> = w
            .iter()
            .flat_map(|v| f32::from_bits(v.to_bits() & 0xffff_0000).to_le_bytes())
            .collect();
        let packed = encode(&data, DType::F32);
        assert_eq!(decode(&packed, data.len()).unwrap(), data);
        // About 10.7 bits per value are left (exponent and sign + 7 mantissa bits).
        assert!(
            packed.len() * 28 < data.len() * 10,
            "{} bytes",
            packed.len()
        );
    }

    #[test]
    fn random_damage_never_panics() {
        let mut x = 77u64;
        let mut rnd = move || xorshift(&mut x);
        for dtype in [DType::F16, DType::F32, DType::F64] {
            let data = to_bytes(dtype, &weights(6000, 4));
            let packed = encode(&data, dtype);
            for _ in 0..400 {
                let mut bad = packed.clone();
                for _ in 0..1 + rnd() % 4 {
                    let i = rnd() as usize % bad.len();
                    bad[i] ^= 1 << (rnd() % 8);
                }
                if rnd() % 4 == 0 {
                    bad.truncate(rnd() as usize % bad.len());
                }
                // Either an error or some bytes of the right length; never a panic.
                if let Ok(d) = decode(&bad, data.len()) {
                    assert_eq!(d.len(), data.len());
                }
            }
        }
    }

    #[test]
    fn damaged_payloads_are_errors() {
        let data = to_bytes(DType::F32, &weights(10_000, 2));
        let packed = encode(&data, DType::F32);
        for cut in [0, 1, 5, 6, 20, packed.len() / 2, packed.len() - 1] {
            assert!(decode(&packed[..cut], data.len()).is_err(), "cut {cut}");
        }
        assert!(decode(&packed, data.len() + 4).is_err());
        let mut flipped = packed.clone();
        flipped[40] ^= 0x10;
        if let Ok(d) = decode(&flipped, data.len()) {
            assert_ne!(d, data);
        }
    }
}
