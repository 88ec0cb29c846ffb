//! Decoder of format version 2 tensor payloads, kept as it was written: the same planes as
//! today (exponent, top 3 mantissa bits given the exponent, residual through IBP) but with the
//! sign in the residual, mantissa tops refitted after every batch, and the rANS symbols coded
//! value by value on 4 states. Version 3 payloads are `planes`'s.

use super::{ibp, DType};
use crate::coder::rans::{self, fit};
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
    let mut residuals = ibp::Unpacker::for_level(rest, f.rbits(), n, true)?;
    let mut group = vec![0u64; ibp::GROUP];
    let mut model = Model::new();
    let (mut states, mut words) = rans::Decoder::new(stream, 4)?.split();
    let [x0, x1, x2, x3] = states.first_chunk_mut::<4>().ok_or_else(|| bad("states"))?;
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
            let (e0, m0) = decode_one(x0, x1, &mut words, &model);
            let (e1, m1) = decode_one(x2, x3, &mut words, &model);
            model.count(e0, m0);
            model.count(e1, m1);
            pair[..W].copy_from_slice(&f.join(e0, m0, r[0]).to_le_bytes()[..W]);
            pair[W..].copy_from_slice(&f.join(e1, m1, r[1]).to_le_bytes()[..W]);
        }
        let last = pairs.into_remainder();
        if !last.is_empty() {
            let (e, m) = decode_one(x0, x1, &mut words, &model);
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
    rans::Decoder::join(states, words).finish()
}

#[inline(always)]
/// Decodes a version 2 tensor payload that must hold exactly `raw_len` bytes.
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
