//! Tensor block codec. Each value is split into planes: `E`, the exponent (for f64 its top 8
//! bits), `M`, the sign and the next 3 bits (top of the mantissa), and the residual: the
//! remaining low bits. A value that is +0.0 exactly is one more `E` symbol and has neither `M`
//! nor residual. `E` and `M` are coded with rANS: `E` from a 12-bit table fitted to the
//! block's exponent counts so far (an escape codes a symbol not seen yet as 9 raw bits), `M`
//! from an 8-bit table of the value's exponent. Tables are refitted between batches of values
//! (16, 32, ... then every 4096), so within a batch every symbol decodes independently. The
//! residuals go through invariant bit packing (IBP), which stores bits that hardly vary (e.g.
//! the zero low half of widened bf16 weights) once per group.
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! lanes (`u8`), residual count (`u32`), rANS stream length (`u32`) + stream, then the IBP
//! section of the residuals.

use super::{ibp, lanes, DType};
use crate::coder::rans::{self, fit};
#[cfg(target_arch = "x86_64")]
use crate::engine::{level, KernelLevel};
use crate::error::{Error, Result};
use std::mem::MaybeUninit;
use std::ops::Range;

/// Precision of the exponent table.
pub(super) const E_BITS: u32 = 12;
/// Precision of the mantissa-top tables.
pub(super) const M_BITS: u32 = 8;
/// Slots of the exponent table kept for the escape.
const ESCAPE: u32 = 1;
/// `E` symbol of a value that is +0.0 exactly (after the 256 exponents).
pub(super) const ZERO: usize = 256;
/// `E << 4 | M` of a +0.0 value, as the decoder reports it.
pub(super) const ZERO_EM: u16 = (ZERO as u16) << 4;
/// Bits of an escaped `E` symbol (raw values 256 and up all mean `ZERO`).
pub(super) const RAW_BITS: u32 = 9;
/// A mantissa-top table is refitted once its exponent's count grew by a quarter since its
/// last fit.
const LAZY: u32 = 4;
/// Largest batch between two refits.
const MAX_BATCH: usize = 4096;
/// Values coded side by side in a group, one coder state each, for a block of `n` values:
/// more lanes decode faster but each costs 4 bytes of final state.
fn lanes_for(n: usize) -> usize {
    match n {
        0..0x1_0000 => 16,
        0x1_0000..0x2_0000 => 32,
        _ => 64,
    }
}
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
    /// Whether the sign is coded with `M` (else it leads the residual).
    signed: bool,
}

impl Fields {
    /// Bits below `M`.
    #[inline(always)]
    fn low(self) -> u32 {
        self.bits - 1 - self.ebits - 3
    }

    /// Width of the residual.
    #[inline(always)]
    fn rbits(self) -> u32 {
        self.low() + u32::from(!self.signed)
    }

    /// Splits a value into `E << 4 | M` (M = top 3 mantissa bits, with the sign above them
    /// if `signed`) and the residual; +0.0 gives `ZERO_EM`.
    #[inline(always)]
    fn split(self, v: u64) -> (u16, u64) {
        if v == 0 {
            return (ZERO_EM, 0);
        }
        let low = self.low();
        let e = (v >> (low + 3)) as u16 & ((1 << self.ebits) - 1);
        let m = (v >> low) as u16 & 7;
        let sign = v >> (self.bits - 1);
        let rest = v & ((1u64 << low) - 1);
        if self.signed {
            (e << 4 | (sign as u16) << 3 | m, rest)
        } else {
            (e << 4 | m, sign << low | rest)
        }
    }

    /// Joins `E << 4 | M` (not `ZERO_EM`) and the residual back into a value.
    #[inline(always)]
    fn join(self, em: u16, r: u64) -> u64 {
        let low = self.low();
        let top = ((em >> 4) as u64 & 0xff) << 3 | (em & 7) as u64;
        let sign = if self.signed {
            (em >> 3) as u64 & 1
        } else {
            r >> low
        };
        sign << (self.bits - 1) | top << low | (r & ((1u64 << low) - 1))
    }
}

/// Whether coding the sign with `M` pays on `data`: the sign given the exponent must carry
/// at least 0.02 bits less than 1 per value (more symbols per table cost about that).
fn sign_pays<const W: usize>(data: &[u8], f: Fields) -> bool {
    let mut counts = vec![[0u64; 2]; 256];
    // Every 3rd value: a stride prime to the power-of-two periods tensors tend to have.
    for v in data.chunks_exact(W).step_by(3) {
        let v = read::<W>(v);
        if v != 0 {
            let e = (v >> (f.low() + 3)) as usize & ((1 << f.ebits) - 1);
            counts[e][(v >> (f.bits - 1)) as usize & 1] += 1;
        }
    }
    let (mut bits, mut total) = (0f64, 0u64);
    for [a, b] in counts {
        for c in [a, b] {
            if c > 0 {
                bits -= c as f64 * (c as f64 / (a + b) as f64).log2();
            }
        }
        total += a + b;
    }
    total > 0 && bits < 0.98 * total as f64
}

/// Counts and tables of one block, refitted between batches identically on both sides.
pub(super) struct Model {
    /// Per `E` symbol (256 exponents and `ZERO`).
    e_counts: [u32; 257],
    e_total: u32,
    /// `E` slot ranges (`start | freq << 16`, freq 0 = not in the table yet).
    e_enc: [u32; 257],
    /// First slot of `ZERO` (its slots run up to the escape's).
    pub(super) zero_start: u32,
    /// First slot of the escape (the escape holds every slot from here on).
    pub(super) escape_start: u32,
    /// Per slot: exponent (0 for `ZERO` and the escape) | (freq - 1) << 8 | (slot - start) << 20.
    pub(super) e_dec: Vec<u32>,
    /// Per `E << 4 | M` (rows up to 511 so that 13-bit indexes need no check): count in the
    /// current and earlier batches; `ZERO` counts at `ZERO_EM`.
    m_counts: Box<[[u32; 16]; 512]>,
    m_total: Vec<u32>,
    /// Per exponent: `m_total` when its table was last fitted.
    m_fit: Vec<u32>,
    /// Per exponent and `M`: `start | freq << 16`.
    m_enc: Box<[[u32; 16]; 256]>,
    /// Per exponent, per slot: `M` | freq << 4 | (slot - start) << 13.
    pub(super) m_dec: Vec<u32>,
    /// Four partial histograms of `E << 4 | M` for `count_batch`, zero between batches.
    partial: Box<[[u32; 8192]; 4]>,
    /// `M` symbols per exponent: 16 with the sign, else 8.
    m_syms: usize,
}

impl Model {
    fn new(f: Fields) -> Self {
        let mut m = Model {
            e_counts: [0; 257],
            e_total: 0,
            e_enc: [0; 257],
            zero_start: 0,
            escape_start: 0,
            e_dec: vec![0; 1 << E_BITS],
            m_counts: Box::new([[0; 16]; 512]),
            m_total: vec![0; 257],
            m_fit: vec![0; 257],
            m_enc: Box::new([[0; 16]; 256]),
            m_dec: vec![0; 256 << M_BITS],
            partial: Box::new([[0; 8192]; 4]),
            m_syms: if f.signed { 16 } else { 8 },
        };
        m.refit_e();
        for e in 0..256 {
            m.refit_m(e);
        }
        m
    }

    #[inline(always)]
    fn refit_e(&mut self) {
        if self.e_total >= E_HALVE {
            let mut total = 0;
            for c in self.e_counts.iter_mut() {
                *c = (*c + 1) >> 1;
                total += *c;
            }
            self.e_total = total;
        }
        let mut freqs = [0u32; 257];
        let fitted = fit(&self.e_counts, E_BITS, false, ESCAPE, &mut freqs);
        // Each slot first gets its symbol's entry less `start << 20`, then (wrapping) plus
        // `slot << 20`, which leaves `(slot - start) << 20`.
        let table = &mut self.e_dec[..1 << E_BITS];
        let mut start = 0u32;
        for (s, &f) in freqs.iter().enumerate() {
            self.e_enc[s] = start | f << 16;
            if s == ZERO {
                self.zero_start = start;
            }
            if f > 0 {
                let base = ((s as u32 & 0xff) | (f - 1) << 8).wrapping_sub(start << 20);
                table[start as usize..(start + f) as usize].fill(base);
            }
            start += f;
        }
        let esc = if fitted { ESCAPE } else { 1 << E_BITS };
        self.escape_start = start;
        table[start as usize..].fill(((esc - 1) << 8).wrapping_sub(start << 20));
        add_slots::<20>(table);
    }

    #[inline(always)]
    fn refit_m(&mut self, e: usize) {
        if self.m_total[e] >= M_HALVE {
            let mut total = 0;
            for c in self.m_counts[e].iter_mut() {
                *c = (*c + 1) >> 1;
                total += *c;
            }
            self.m_total[e] = total;
        }
        let k = self.m_syms;
        let mut freqs = [0u32; 16];
        fit(&self.m_counts[e][..k], M_BITS, true, 0, &mut freqs[..k]);
        let table = &mut self.m_dec[e << M_BITS..(e + 1) << M_BITS];
        let mut start = 0u32;
        for (s, &f) in freqs[..k].iter().enumerate() {
            self.m_enc[e][s] = start | f << 16;
            let base = (s as u32 | f << 4).wrapping_sub(start << 13);
            table[start as usize..(start + f) as usize].fill(base);
            start += f;
        }
        add_slots::<13>(table);
    }

    /// Counts a batch of values given as `E << 4 | M`: four partial histograms, so that
    /// repeats of a symbol do not wait on each other, merged over the range the batch used.
    /// Returns the range of `E` symbols the batch holds.
    fn count_batch(&mut self, em: &[u16]) -> Range<usize> {
        // SAFETY: the kernel level is never above what the CPU supports.
        #[cfg(target_arch = "x86_64")]
        match level() {
            KernelLevel::Avx512 => return unsafe { self.count_batch_avx512(em) },
            KernelLevel::Avx2 => return unsafe { self.count_batch_avx2(em) },
            KernelLevel::Scalar => {}
        }
        self.count_batch_body(em)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2")]
    unsafe fn count_batch_avx512(&mut self, em: &[u16]) -> Range<usize> {
        self.count_batch_body(em)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn count_batch_avx2(&mut self, em: &[u16]) -> Range<usize> {
        self.count_batch_body(em)
    }

    #[inline(always)]
    fn count_batch_body(&mut self, em: &[u16]) -> Range<usize> {
        let counts = self.m_counts.as_flattened_mut();
        let lo = em.iter().fold(0x1fff, |a, &v| a.min(v & 0x1fff)) as usize;
        let hi = em.iter().fold(0, |a, &v| a.max(v & 0x1fff)) as usize;
        let exponents = lo >> 4..(hi >> 4) + 1;
        if em.len() < 512 {
            for &v in em {
                counts[v as usize & 0x1fff] += 1;
            }
            return exponents;
        }
        let [h0, h1, h2, h3] = &mut *self.partial;
        let quads = em.chunks_exact(4);
        for &v in quads.remainder() {
            counts[v as usize & 0x1fff] += 1;
        }
        for q in quads {
            h0[q[0] as usize & 0x1fff] += 1;
            h1[q[1] as usize & 0x1fff] += 1;
            h2[q[2] as usize & 0x1fff] += 1;
            h3[q[3] as usize & 0x1fff] += 1;
        }
        for i in lo..=hi {
            counts[i] += h0[i] + h1[i] + h2[i] + h3[i];
            (h0[i], h1[i], h2[i], h3[i]) = (0, 0, 0, 0);
        }
        exponents
    }

    /// Ends a batch: refits the mantissa-top tables of the exponents it counted, brings the
    /// exponent counts up to date and refits the exponent table.
    /// Exponents outside `exponents` must not have been counted in the batch.
    fn end_batch(&mut self, exponents: Range<usize>) {
        // SAFETY: the kernel level is never above what the CPU supports.
        #[cfg(target_arch = "x86_64")]
        match level() {
            KernelLevel::Avx512 => return unsafe { self.end_batch_avx512(exponents) },
            KernelLevel::Avx2 => return unsafe { self.end_batch_avx2(exponents) },
            KernelLevel::Scalar => {}
        }
        self.end_batch_body(exponents)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2")]
    unsafe fn end_batch_avx512(&mut self, exponents: Range<usize>) {
        self.end_batch_body(exponents)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn end_batch_avx2(&mut self, exponents: Range<usize>) {
        self.end_batch_body(exponents)
    }

    #[inline(always)]
    fn end_batch_body(&mut self, exponents: Range<usize>) {
        for e in exponents.start..exponents.end.min(ZERO + 1) {
            let sum: u32 = self.m_counts[e].iter().sum();
            let new = sum - self.m_total[e];
            if new > 0 {
                self.e_counts[e] += new;
                self.e_total += new;
                self.m_total[e] = sum;
                if e < ZERO && LAZY * (sum - self.m_fit[e]) >= self.m_fit[e] {
                    self.refit_m(e);
                    self.m_fit[e] = self.m_total[e];
                }
            }
        }
        self.refit_e();
    }
}

/// Adds `slot << SHIFT` (wrapping) to every entry of a decode table.
#[inline(always)]
fn add_slots<const SHIFT: u32>(table: &mut [u32]) {
    for (slot, t) in table.iter_mut().enumerate() {
        *t = t.wrapping_add((slot as u32) << SHIFT);
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

/// Value width `W` (bytes) and exponent bits `EB` are constants so every shift is one.
fn encode_w<const W: usize, const EB: u32>(data: &[u8], kernel: lanes::Kernel, out: &mut Vec<u8>) {
    let mut f = Fields {
        bits: 8 * W as u32,
        ebits: EB,
        signed: false,
    };
    f.signed = sign_pays::<W>(data, f);
    let n = data.len() / W;
    let mut model = Model::new(f);
    let lanes = lanes_for(n);
    let mut syms = lanes::Symbols::new(n, lanes);
    let mut em = vec![0u16; MAX_BATCH];
    // Residuals not yet packed (IBP groups hold GROUP residuals, whatever the batches).
    let mut residual = Vec::with_capacity(ibp::GROUP);
    let mut packer = ibp::Packer::new(f.rbits(), n);
    let (mut i, mut k, mut residuals) = (0usize, 0u32, 0u32);
    while i < n {
        let end = (i + batch_len(k)).min(n);
        let em = &mut em[..end - i];
        let values = data[i * W..end * W].chunks_exact(W);
        for (v, o) in values.zip(em.iter_mut()) {
            let (top, rest) = f.split(read::<W>(v));
            *o = top;
            if top != ZERO_EM {
                residual.push(rest);
                residuals += 1;
                if residual.len() == ibp::GROUP {
                    packer.group(&residual);
                    residual.clear();
                }
            }
        }
        // Every symbol of the batch from the tables fitted before it.
        let escape = model.escape_start | ((1 << E_BITS) - model.escape_start) << 16;
        let m_enc = model.m_enc.as_flattened();
        let slots = syms.e[i..end].iter_mut().zip(&mut syms.m[i..end]);
        for (j, (&v, (e_sym, m_sym))) in em.iter().zip(slots).enumerate() {
            let e = (v >> 4) as usize;
            let ee = model.e_enc[e.min(ZERO)];
            *e_sym = if ee >> 16 != 0 {
                ee
            } else {
                syms.escapes.push(((i + j) as u32, e as u16));
                escape
            };
            // No mantissa top for +0.0 (a zero symbol is skipped).
            *m_sym = if v == ZERO_EM {
                0
            } else {
                m_enc[v as usize & 0xfff]
            };
        }
        for g in (i..end).step_by(lanes) {
            syms.groups.push((g as u32, (end - g).min(lanes) as u32));
        }
        let exponents = model.count_batch(em);
        model.end_batch(exponents);
        i = end;
        k += 1;
    }
    if !residual.is_empty() {
        packer.group(&residual);
    }
    out.push(lanes as u8);
    out.push(u8::from(f.signed));
    out.extend_from_slice(&residuals.to_le_bytes());
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    kernel.encode(&mut syms, out);
    syms.recycle();
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    packer.finish(out);
}

/// The residuals of a block in order, unpacked an IBP group at a time.
struct Residuals<'a> {
    unpacker: ibp::Unpacker<'a>,
    /// Residuals not unpacked yet.
    left: usize,
    buf: Vec<u64>,
    at: usize,
}

impl Residuals<'_> {
    /// The next `k` (at most GROUP) residuals.
    fn take(&mut self, k: usize) -> Result<&[u64]> {
        if self.buf.len() - self.at < k {
            self.buf.drain(..self.at);
            self.at = 0;
            let g = self.left.min(ibp::GROUP);
            let have = self.buf.len();
            self.buf.resize(have + g, 0);
            self.unpacker.group(&mut self.buf[have..])?;
            self.left -= g;
            if self.buf.len() < k {
                return Err(Error::Corrupt("tensor block: residuals run out".into()));
            }
        }
        self.at += k;
        Ok(&self.buf[self.at - k..self.at])
    }
}

fn decode_w<const W: usize, const EB: u32>(
    body: &[u8],
    n: usize,
    kernel: lanes::Kernel,
    out: &mut Vec<u8>,
) -> Result<()> {
    let bad = |what: &str| Error::Corrupt(format!("tensor block: {what}"));
    let head = body
        .get(..10)
        .ok_or_else(|| bad("missing lane and stream lengths"))?;
    let lanes = head[0] as usize;
    if lanes != 16 && lanes != 32 && lanes != 64 {
        return Err(bad("unknown lane count"));
    }
    if head[1] > 1 {
        return Err(bad("unknown sign mode"));
    }
    let f = Fields {
        bits: 8 * W as u32,
        ebits: EB,
        signed: head[1] == 1,
    };
    let count = u32::from_le_bytes([head[2], head[3], head[4], head[5]]) as usize;
    let len = u32::from_le_bytes([head[6], head[7], head[8], head[9]]) as usize;
    if count > n {
        return Err(bad("more residuals than values"));
    }
    let stream = body
        .get(10..10 + len)
        .ok_or_else(|| bad("stream cut short"))?;
    let rest = &body[10 + len..];
    let mut residuals = Residuals {
        unpacker: ibp::Unpacker::for_level(rest, f.rbits(), count)?,
        left: count,
        buf: Vec::with_capacity(2 * ibp::GROUP),
        at: 0,
    };
    let mut em = vec![0u16; MAX_BATCH];
    let mut model = Model::new(f);
    let (mut x, mut words) = rans::Decoder::new(stream, lanes)?.split();
    let start = out.len();
    out.reserve(n * W);
    // Written batch by batch below, every byte once; not zeroed first.
    let values = &mut out.spare_capacity_mut()[..n * W];
    let (mut i, mut k) = (0usize, 0u32);
    while i < n {
        let end = (i + batch_len(k)).min(n);
        let em = &mut em[..end - i];
        kernel.lanes(&mut x, &mut words, &model, em, lanes);
        let exponents = model.count_batch(em);
        let zeros = em.iter().filter(|&&v| v == ZERO_EM).count();
        let res = residuals.take(em.len() - zeros)?;
        let slots = &mut values[i * W..end * W];
        if zeros == 0 && f.signed {
            join_all::<W, EB, true>(em, res, slots);
        } else if zeros == 0 {
            join_all::<W, EB, false>(em, res, slots);
        } else {
            let mut res = res.iter();
            for (o, &v) in slots.chunks_exact_mut(W).zip(em.iter()) {
                let value = match v {
                    ZERO_EM => 0,
                    _ => f.join(v, res.next().copied().unwrap_or(0)),
                };
                for (o, b) in o.iter_mut().zip(value.to_le_bytes()) {
                    o.write(b);
                }
            }
        }
        model.end_batch(exponents);
        i = end;
        k += 1;
    }
    if residuals.left != 0 || residuals.at != residuals.buf.len() {
        return Err(bad("residuals left over"));
    }
    if residuals.unpacker.consumed() != rest.len() {
        return Err(bad("unexpected bytes after the data"));
    }
    rans::Decoder::join(x, words).finish()?;
    // SAFETY: the batches cover values 0..n and every value's W bytes were written.
    unsafe { out.set_len(start + n * W) };
    Ok(())
}

/// Joins each `E << 4 | M` (none `ZERO_EM`) with its residual into `out`, W bytes per value,
/// the sign coded with `M` if `S` (with the widest vectors allowed).
fn join_all<const W: usize, const EB: u32, const S: bool>(
    em: &[u16],
    res: &[u64],
    out: &mut [MaybeUninit<u8>],
) {
    #[inline(always)]
    fn body<const W: usize, const EB: u32, const S: bool>(
        em: &[u16],
        res: &[u64],
        out: &mut [MaybeUninit<u8>],
    ) {
        let f = Fields {
            bits: 8 * W as u32,
            ebits: EB,
            signed: S,
        };
        for ((o, &v), &r) in out.chunks_exact_mut(W).zip(em).zip(res) {
            let bytes = f.join(v, r).to_le_bytes();
            let value: [u8; W] = std::array::from_fn(|t| bytes[t]);
            // SAFETY: `o` is W bytes long, and `[u8; W]` has alignment 1.
            unsafe { o.as_mut_ptr().cast::<[u8; W]>().write(value) };
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2")]
    unsafe fn avx512<const W: usize, const EB: u32, const S: bool>(
        em: &[u16],
        res: &[u64],
        out: &mut [MaybeUninit<u8>],
    ) {
        body::<W, EB, S>(em, res, out)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn avx2<const W: usize, const EB: u32, const S: bool>(
        em: &[u16],
        res: &[u64],
        out: &mut [MaybeUninit<u8>],
    ) {
        body::<W, EB, S>(em, res, out)
    }
    // SAFETY: the kernel level is never above what the CPU supports.
    #[cfg(target_arch = "x86_64")]
    match level() {
        KernelLevel::Avx512 => return unsafe { avx512::<W, EB, S>(em, res, out) },
        KernelLevel::Avx2 => return unsafe { avx2::<W, EB, S>(em, res, out) },
        KernelLevel::Scalar => {}
    }
    body::<W, EB, S>(em, res, out)
}

#[inline(always)]
fn read<const W: usize>(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..W].copy_from_slice(&v[..W]);
    u64::from_le_bytes(b)
}

/// Codes `data`, an array of `dtype` values (a partial last value is kept raw).
pub fn encode(data: &[u8], dtype: DType) -> Vec<u8> {
    encode_with(data, dtype, lanes::Kernel::detect())
}

fn encode_with(data: &[u8], dtype: DType, kernel: lanes::Kernel) -> Vec<u8> {
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
        DType::F16 => encode_w::<2, 5>(body, kernel, &mut out),
        DType::BF16 => encode_w::<2, 8>(body, kernel, &mut out),
        DType::F32 => encode_w::<4, 8>(body, kernel, &mut out),
        DType::F64 => encode_w::<8, 8>(body, kernel, &mut out),
    }
    out
}

/// Decodes a payload written by `encode` that must hold exactly `raw_len` bytes.
pub fn decode(payload: &[u8], raw_len: usize) -> Result<Vec<u8>> {
    decode_with(payload, raw_len, lanes::Kernel::detect())
}

fn decode_with(payload: &[u8], raw_len: usize, kernel: lanes::Kernel) -> Result<Vec<u8>> {
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
        DType::F16 => decode_w::<2, 5>(body, n, kernel, &mut out)?,
        DType::BF16 => decode_w::<2, 8>(body, n, kernel, &mut out)?,
        DType::F32 => decode_w::<4, 8>(body, n, kernel, &mut out)?,
        DType::F64 => decode_w::<8, 8>(body, n, kernel, &mut out)?,
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

    /// The documented symbol order through the generic rANS encoder: the stream every
    /// encoder kernel must write.
    fn reference_stream<const W: usize, const EB: u32>(data: &[u8]) -> Vec<u8> {
        use crate::coder::rans::Sym;
        let mut f = Fields {
            bits: 8 * W as u32,
            ebits: EB,
            signed: false,
        };
        f.signed = sign_pays::<W>(data, f);
        let sym = |packed: u32, bits: u32| Sym {
            start: packed & 0xffff,
            freq: packed >> 16,
            bits,
        };
        let n = data.len() / W;
        let mut model = Model::new(f);
        let mut enc = rans::Encoder::new(2 * n, lanes_for(n));
        let (mut i, mut k) = (0usize, 0u32);
        while i < n {
            let end = (i + batch_len(k)).min(n);
            let em: Vec<u16> = data[i * W..end * W]
                .chunks_exact(W)
                .map(|v| f.split(read::<W>(v)).0)
                .collect();
            for group in em.chunks(lanes_for(n)) {
                for (l, &v) in group.iter().enumerate() {
                    let ee = model.e_enc[(v >> 4) as usize];
                    let escape = model.escape_start | ((1 << E_BITS) - model.escape_start) << 16;
                    enc.put(sym(if ee >> 16 != 0 { ee } else { escape }, E_BITS), l);
                }
                for (l, &v) in group.iter().enumerate() {
                    if model.e_enc[(v >> 4) as usize] >> 16 == 0 {
                        enc.put(sym((v >> 4) as u32 | 1 << 16, RAW_BITS), l);
                    }
                }
                for (l, &v) in group.iter().enumerate() {
                    if v != ZERO_EM {
                        let m = model.m_enc[(v >> 4) as usize][v as usize & 15];
                        enc.put(sym(m, M_BITS), l);
                    }
                }
            }
            let exponents = model.count_batch(&em);
            model.end_batch(exponents);
            i = end;
            k += 1;
        }
        let mut out = Vec::new();
        enc.finish(&mut out);
        out
    }

    /// The rANS stream inside a payload of `encode` (no tail).
    fn stream_of(payload: &[u8]) -> &[u8] {
        let len = u32::from_le_bytes(payload[12..16].try_into().unwrap()) as usize;
        &payload[16..16 + len]
    }

    /// Weights with never-seen exponents in both halves of many 32-value groups, +0.0 (its
    /// own symbol) and -0.0 (not) here and there.
    fn with_escapes(n: usize) -> Vec<u8> {
        let w = weights(n, 11);
        let mut bits: Vec<u32> = w.iter().map(|v| v.to_bits()).collect();
        for (i, b) in bits.iter_mut().enumerate() {
            if i % 37 == 5 || i % 1000 < 40 {
                *b = 0;
            } else if i % 101 == 7 {
                *b = 0x8000_0000;
            }
        }
        let rare = (0u32..256).filter(|e| !(100..=127).contains(e));
        for (k, e) in rare.enumerate() {
            let at = 64 + 32 * (k / 2) + if k % 2 == 0 { 3 } else { 20 };
            bits[at] = bits[at] & 0x807f_ffff | e << 23;
        }
        bits.iter().flat_map(|b| b.to_le_bytes()).collect()
    }

    #[test]
    fn every_kernel_encodes_the_documented_stream() {
        // 16, 32 and 64 lanes.
        let f16s = to_bytes(DType::F16, &weights(30_007, 3));
        let f32s = with_escapes(70_001);
        let big = with_escapes(270_003);
        let signed = to_bytes(DType::F16, &skewed_signs(40_000));
        for kernel in lanes::Kernel::supported() {
            for data in [&f16s, &signed] {
                let got = encode_with(data, DType::F16, kernel);
                assert!(
                    stream_of(&got) == reference_stream::<2, 5>(data),
                    "{kernel:?}"
                );
            }
            for data in [&f32s, &big] {
                let got = encode_with(data, DType::F32, kernel);
                assert!(
                    stream_of(&got) == reference_stream::<4, 8>(data),
                    "{kernel:?}"
                );
            }
        }
    }

    /// Weights three quarters of which are positive: the sign is worth coding with `M`.
    fn skewed_signs(n: usize) -> Vec<f32> {
        let mut w = weights(n, 21);
        for (i, v) in w.iter_mut().enumerate() {
            if i % 4 != 0 {
                *v = v.abs();
            }
        }
        w
    }

    #[test]
    fn sign_mode_follows_the_data() {
        for (w, signed) in [(weights(50_000, 8), 0), (skewed_signs(50_000), 1)] {
            let data = to_bytes(DType::F32, &w);
            let packed = encode(&data, DType::F32);
            // tag, count, tail length, lanes, then the plane layout byte.
            assert_eq!(packed[7], signed);
            assert_eq!(decode(&packed, data.len()).unwrap(), data);
        }
    }

    #[test]
    fn every_kernel_decodes_the_same() {
        let f16s = to_bytes(DType::F16, &weights(30_007, 3));
        let f32s = with_escapes(70_000);
        let big = with_escapes(270_000);
        let signed = to_bytes(DType::BF16, &skewed_signs(100_000));
        let cases = [
            (&f16s, DType::F16),
            (&f32s, DType::F32),
            (&big, DType::F32),
            (&signed, DType::BF16),
        ];
        for (data, dtype) in cases {
            let packed = encode(data, dtype);
            for kernel in lanes::Kernel::supported() {
                let back = decode_with(&packed, data.len(), kernel).unwrap();
                assert!(back == *data, "{kernel:?}");
            }
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
        // 16, 32 and 64 lanes; damage in the rANS stream reaches the vector kernels' bounds.
        let cases = [
            (DType::F16, 6000),
            (DType::F32, 6000),
            (DType::F64, 6000),
            (DType::F32, 70_000),
            (DType::BF16, 140_000),
        ];
        for (dtype, n) in cases {
            let data = to_bytes(dtype, &weights(n, 4));
            let packed = encode(&data, dtype);
            for _ in 0..if n > 10_000 { 60 } else { 400 } {
                let mut bad = packed.clone();
                for _ in 0..1 + rnd() % 4 {
                    let i = rnd() as usize % bad.len();
                    bad[i] ^= 1 << (rnd() % 8);
                }
                if rnd() % 4 == 0 {
                    bad.truncate(rnd() as usize % bad.len());
                }
                // Either an error or some bytes of the right length; never a panic; and the
                // same from every kernel.
                let got = decode_with(&bad, data.len(), lanes::Kernel::Scalar);
                if let Ok(d) = &got {
                    assert_eq!(d.len(), data.len());
                }
                for kernel in lanes::Kernel::supported() {
                    let fast = decode_with(&bad, data.len(), kernel);
                    assert!(
                        got.as_ref().ok() == fast.as_ref().ok(),
                        "{kernel:?} disagrees"
                    );
                    assert_eq!(got.is_ok(), fast.is_ok());
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
