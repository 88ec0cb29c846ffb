//! The counts and rANS tables of one block, refitted between batches identically by the encoder
//! and the decoder; the exponent contexts; the large buffers kept for the thread's next block.

use super::prior::{Prior, LEVELS, PRIOR_SHIFT};
use super::split::BitLayout;
use super::symbols::*;
use crate::codecs::float::fill;
use crate::entropy::rans::fit;
use crate::simd::kernel_variants;
use std::ops::Range;

/// Exponent contexts of a block: each group of ways codes its exponents
/// with the table of the rounded mean exponent of the previous group's non-zero values.
pub(crate) const CONTEXTS: usize = 8;
/// The first context holds means up to the block's median exponent less this.
pub(crate) const BELOW_MEDIAN: u32 = 6;
/// Weight, in values, of the block's exponent counts (all contexts) in a context's table;
/// a context with fewer counts of its own is also refitted each time the block's counts
/// double.
pub(crate) const PRIOR: u64 = 256;
/// A context's counts are halved when they reach this total (its table is refitted, like a
/// mantissa-top table, once its count grew by a quarter).
pub(crate) const CONTEXT_HALVE: u32 = 1 << 14;
/// Weight, in values, of the block's mantissa-top counts (all exponents) in an exponent's
/// mantissa-top table; an exponent with fewer counts of its own is also refitted
/// each time the block's counts double.
pub(crate) const M_PRIOR: u64 = 64;
/// The block's exponent (and mantissa-top) counts are halved when they reach this total.
pub(crate) const G_HALVE: u32 = 1 << 16;

/// Picks each group's exponent context: the rounded mean exponent of the previous group's
/// non-zero values, less `base`, at most `top` (a group of +0.0 keeps the context).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Contexts {
    pub(crate) base: u32,
    pub(crate) top: u32,
    /// Context of the next group.
    pub next: u32,
}

impl Contexts {
    /// `CONTEXTS` contexts from `base`; the first group's is the block's median exponent's.
    pub(crate) fn from_base(base: u8) -> Self {
        Contexts {
            base: base as u32,
            top: CONTEXTS as u32 - 1,
            next: BELOW_MEDIAN.min(CONTEXTS as u32 - 1),
        }
    }

    /// Moves on past a group whose `count` non-zero values' exponents sum to `sum`.
    #[inline(always)]
    pub(crate) fn follow(&mut self, sum: u32, count: u32) {
        if count > 0 {
            // A shift where the count is a power of two (no +0.0 in a whole group): the same
            // quotient without a division's latency between groups.
            let mean = match count.is_power_of_two() {
                true => (2 * sum + count) >> (count.trailing_zeros() + 1),
                false => (2 * sum + count) / (2 * count),
            };
            self.next = mean.saturating_sub(self.base).min(self.top);
        }
    }

    /// `follow` for a group given as `E << 4 | M` values.
    #[inline(always)]
    pub(crate) fn follow_group(&mut self, em: &[u16]) {
        let (mut sum, mut count) = (0u32, 0u32);
        for &v in em {
            if v != ZERO_EM {
                sum += u32::from(v >> 4);
                count += 1;
            }
        }
        self.follow(sum, count);
    }
}

/// What a batch counted: the range of exponents other than +0.0's, which contexts (bit c) its
/// groups used, and how many values were +0.0.
pub(crate) struct Span {
    pub(crate) exponents: Range<usize>,
    pub(crate) contexts: u32,
    pub(crate) zeros: usize,
}

/// Large buffers of a `Tables` kept for the thread's next block (the histograms are left all
/// zero by every batch; an exponent table is only read where its context's last refit wrote
/// it, and `Tables::new` resets the mantissa-top rows that `m_dirty` names).
#[derive(Default)]
pub(crate) struct Spare {
    pub(crate) partial: Vec<u16>,
    pub(crate) e_dec: Vec<u8>,
    pub(crate) m_dec: Vec<u32>,
    /// `M` symbols of the block that left `m_dec`, and the exponents whose rows it
    /// refitted (all others still hold the uniform table).
    pub(crate) m_dirty: Option<(usize, Range<usize>)>,
}

thread_local! {
    pub(crate) static SPARE: std::cell::RefCell<Spare> = std::cell::RefCell::new(Spare::default());
}

/// A buffer of `len` entries: `spare` if it has that length, else zeroed.
pub(crate) fn reuse<T: Clone + Default>(spare: &mut Vec<T>, len: usize) -> Vec<T> {
    if spare.len() == len {
        std::mem::take(spare)
    } else {
        vec![T::default(); len]
    }
}

/// Stores `buf` in `spare` unless it is empty (an encoder's decode tables).
pub(crate) fn keep<T>(spare: &mut Vec<T>, buf: Vec<T>) {
    if !buf.is_empty() {
        *spare = buf;
    }
}

/// Counts and tables of one block, refitted between batches identically on both sides.
pub(crate) struct Tables {
    /// Per context, per `E` symbol (256 exponents and `ZERO`).
    pub(crate) e_counts: Vec<[u32; 257]>,
    pub(crate) e_total: Vec<u32>,
    /// Per context: `e_total` when its table was last fitted.
    pub(crate) e_fit: Vec<u32>,
    /// Per context: `g_total` when its table was last fitted.
    pub(crate) g_fit: Vec<u32>,
    /// Per `E` symbol over all contexts.
    pub(crate) global: [u32; 257],
    pub(crate) g_total: u32,
    /// Per `M` over all exponents, and its total.
    pub(crate) gm: [u32; 16],
    pub(crate) gm_total: u32,
    /// Per exponent: `gm_total` when its table was last fitted.
    pub(crate) gm_fit: Vec<u32>,
    /// Lowest and highest exponent (not `ZERO`) counted so far (`e_lo > e_hi`: none).
    pub(crate) e_lo: usize,
    pub(crate) e_hi: usize,
    /// Per context, `E` slot ranges (`start | freq << 16`, freq 0 = not in the table yet),
    /// the escape's after `ZERO`'s.
    pub(crate) e_enc: Vec<[u32; E_SYMS]>,
    /// Per context: first slot of `ZERO` (its slots run up to the escape's).
    pub(crate) zero_start: [u32; CONTEXTS],
    /// Per context: first slot of the escape (the escape holds every slot from here on).
    pub(crate) escape_start: [u32; CONTEXTS],
    /// Per context (`E_STRIDE` bytes each), per slot: the exponent whose range holds it
    /// (any value in the slots of `ZERO` and the escape).
    pub(crate) e_dec: Vec<u8>,
    /// Per `E << 4 | M` (rows up to 511 so that 13-bit indexes need no check): count in
    /// earlier batches; `ZERO` counts at `ZERO_EM`.
    pub(crate) m_counts: Box<[[u32; 16]; 512]>,
    pub(crate) m_total: Vec<u32>,
    /// Per exponent: `m_total` when its table was last fitted.
    pub(crate) m_fit: Vec<u32>,
    /// Per exponent and `M`: `start | freq << 16`.
    pub(crate) m_enc: Box<[[u32; 16]; 256]>,
    /// Per exponent, per slot: `M` | freq << 4 | (slot - start) << 13.
    pub(crate) m_dec: Vec<u32>,
    /// Two partial histograms of `E << 4 | M` per context (`2 CONTEXTS` rows of 8192) for
    /// `count_batch` (16 bits: a batch is at most 4096 values), zero between batches.
    pub(crate) partial: Vec<u16>,
    /// `M` symbols per exponent: 16 with the sign, else 8.
    pub(crate) m_syms: usize,
    /// Exponents whose mantissa-top table was refitted since the block began.
    pub(crate) m_dirty: Range<usize>,
    /// Whether the decode tables (`e_dec`, `m_dec`) are kept (the encoder needs none).
    pub(crate) decoding: bool,
    /// A mantissa-top table is refitted for its own counts once they reach `m_min` and grew
    /// by a `m_lazy`th since its last fit.
    pub(crate) m_lazy: u32,
    pub(crate) m_min: u32,
}

impl Tables {
    pub(crate) fn new(f: BitLayout, decoding: bool) -> Self {
        let ctxs = CONTEXTS;
        let tables = usize::from(decoding);
        let m_syms = if f.signed { 16 } else { 8 };
        let (partial, e_dec, m_dec, m_stale) = SPARE.with(|spare| {
            let spare = &mut *spare.borrow_mut();
            let m_len = (tables * 256) << M_BITS;
            // Rows of a reused `m_dec` that differ from the uniform table (an encoder, which
            // keeps no decode tables, leaves the record to the next decoder).
            let m_stale = match decoding {
                false => 0..0,
                true => match spare.m_dirty.take() {
                    Some((k, dirty)) if k == m_syms && spare.m_dec.len() == m_len => dirty,
                    _ => 0..256,
                },
            };
            (
                reuse(&mut spare.partial, (2 * ctxs) << 13),
                reuse(&mut spare.e_dec, tables * ctxs * E_STRIDE),
                reuse(&mut spare.m_dec, m_len),
                m_stale,
            )
        });
        let mut m = Tables {
            e_counts: vec![[0; 257]; ctxs],
            e_total: vec![0; ctxs],
            e_fit: vec![0; ctxs],
            g_fit: vec![0; ctxs],
            global: [0; 257],
            g_total: 0,
            gm: [0; 16],
            gm_total: 0,
            gm_fit: vec![0; 257],
            e_lo: ZERO,
            e_hi: 0,
            e_enc: vec![[0; E_SYMS]; ctxs],
            zero_start: [0; CONTEXTS],
            escape_start: [0; CONTEXTS],
            e_dec,
            m_counts: Box::new([[0; 16]; 512]),
            m_total: vec![0; 257],
            m_fit: vec![0; 257],
            m_enc: Box::new([[0; 16]; 256]),
            m_dec,
            partial,
            m_syms,
            m_dirty: 0..0,
            decoding,
            m_lazy: LAZY,
            m_min: 0,
        };
        for c in 0..ctxs {
            m.refit_e(c);
        }
        // Every mantissa-top table starts uniform (nothing counted): fitted once and copied
        // to every exponent, and to the rows of a reused decode table that are not.
        m.refit_m(0);
        let first = m.m_enc[0];
        m.m_enc.iter_mut().for_each(|row| *row = first);
        if decoding {
            let (first, rest) = m.m_dec.split_at_mut(1 << M_BITS);
            for e in m_stale.start.max(1)..m_stale.end {
                rest[(e - 1) << M_BITS..e << M_BITS].copy_from_slice(first);
            }
        }
        m.m_dirty = 0..0;
        m
    }

    /// Starts the block's counts from `prior` (before its first batch), refits every table
    /// from them, and from then on refits mantissa-top tables by the prior's rules.
    pub(crate) fn seed(&mut self, prior: &Prior) {
        self.m_lazy = PRIOR_M_LAZY;
        self.m_min = PRIOR_M_MIN;
        for (j, &q) in prior.e.iter().enumerate() {
            let e = prior.lowest as usize + j;
            self.global[e] = LEVELS[q as usize] << PRIOR_SHIFT;
            if q > 0 {
                self.e_lo = self.e_lo.min(e);
                self.e_hi = self.e_hi.max(e);
            }
        }
        self.global[ZERO] = LEVELS[prior.zero as usize] << PRIOR_SHIFT;
        self.g_total = self.global.iter().sum();
        for (g, &q) in self.gm.iter_mut().zip(&prior.m) {
            *g = LEVELS[q as usize] << PRIOR_SHIFT;
        }
        self.gm_total = self.gm.iter().sum();
        for c in 0..CONTEXTS {
            self.refit_e(c);
        }
        if self.e_lo <= self.e_hi {
            // No exponent has counts of its own yet: one fit of the prior serves them all.
            self.refit_m(self.e_lo);
            for e in self.e_lo + 1..=self.e_hi {
                self.copy_m(self.e_lo, e);
            }
        }
    }

    /// Gives exponent `to`, which has no counts of its own, the mantissa-top table of `from`,
    /// fitted just now from the block's counts alone: what `refit_m(to)` would make.
    pub(crate) fn copy_m(&mut self, from: usize, to: usize) {
        debug_assert!(self.m_total[from] == 0 && self.m_total[to] == 0);
        self.m_enc[to] = self.m_enc[from];
        if self.decoding {
            self.m_dec
                .copy_within(from << M_BITS..(from + 1) << M_BITS, to << M_BITS);
        }
        self.gm_fit[to] = self.gm_fit[from];
        self.m_fit[to] = 0;
        self.m_dirty = self.m_dirty.start.min(to)..self.m_dirty.end.max(to + 1);
    }

    /// Keeps the large buffers for the thread's next block (only after a block's last batch
    /// ended, which leaves the histograms zero).
    pub(crate) fn recycle(self) {
        debug_assert!(self.partial.iter().all(|&h| h == 0));
        SPARE.with(|spare| {
            let spare = &mut *spare.borrow_mut();
            keep(&mut spare.partial, self.partial);
            keep(&mut spare.e_dec, self.e_dec);
            if !self.m_dec.is_empty() {
                spare.m_dirty = Some((self.m_syms, self.m_dirty));
            }
            keep(&mut spare.m_dec, self.m_dec);
        });
    }

    /// `E` symbol (`start | freq << 16`, freq 0 = escape) of exponent `e` in context `c`.
    #[cfg(test)]
    pub(crate) fn e_sym(&self, c: usize, e: usize) -> u32 {
        self.e_enc[c][e.min(ZERO)]
    }

    /// The lowest exponent with slots and the number of exponents from there to the highest
    /// (exponents between them may have none).
    #[inline(always)]
    pub(crate) fn e_window(&self) -> (usize, usize) {
        match self.e_lo <= self.e_hi {
            true => (self.e_lo, self.e_hi + 1 - self.e_lo),
            false => (0, 0),
        }
    }

    /// The escape's `start | freq << 16` in context `c`.
    #[inline(always)]
    pub(crate) fn escape(&self, c: usize) -> u32 {
        self.e_enc[c][ESCAPE_SYM]
    }

    #[inline(always)]
    pub(crate) fn refit_e(&mut self, c: usize) {
        self.e_total[c] = halve(&mut self.e_counts[c], self.e_total[c], CONTEXT_HALVE);
        // Only the exponents the block has shown so far (and `ZERO`, last) can have slots.
        let range = self.e_lo..(self.e_hi + 1).max(self.e_lo);
        let k = range.len();
        let mut counts = [0u32; 258];
        counts[..k].copy_from_slice(&self.e_counts[c][range.clone()]);
        counts[k] = self.e_counts[c][ZERO];
        let global = self.global[range.clone()]
            .iter()
            .chain([&self.global[ZERO]]);
        with_prior(&mut counts[..=k], global, self.g_total, PRIOR);
        let mut freqs = [0u32; 258];
        let fitted = fit(&counts[..=k], E_BITS, false, ESCAPE, &mut freqs[..=k]);
        let mut start = 0u32;
        for (e, &f) in range.clone().chain([ZERO]).zip(&freqs) {
            self.e_enc[c][e] = start | f << 16;
            start += f;
        }
        self.zero_start[c] = self.e_enc[c][ZERO] & 0xffff;
        self.escape_start[c] = start;
        // The escape holds every slot left: ESCAPE of them once fitted, else all.
        debug_assert!(!fitted || start == (1 << E_BITS) - ESCAPE);
        self.e_enc[c][ESCAPE_SYM] = start | ((1 << E_BITS) - start) << 16;
        if self.decoding {
            let table = &mut self.e_dec[c * E_STRIDE..][..E_STRIDE];
            // Whole 64-byte stores, in slot order: each run's overshoot is overwritten by
            // the next run, the last one's lands in the slots of `ZERO` and the escape or
            // past the table's 4096 slots.
            for (e, &f) in range.zip(&freqs) {
                let start = (self.e_enc[c][e] & 0xffff) as usize;
                for at in (start..start + f as usize).step_by(64) {
                    table[at..at + 64].copy_from_slice(&[e as u8; 64]);
                }
            }
        }
        self.e_fit[c] = self.e_total[c];
        self.g_fit[c] = self.g_total;
    }

    #[inline(always)]
    pub(crate) fn refit_m(&mut self, e: usize) {
        self.m_total[e] = halve(&mut self.m_counts[e], self.m_total[e], M_HALVE);
        let k = self.m_syms;
        let mut freqs = [0u32; 16];
        let mut weights = self.m_counts[e];
        with_prior(&mut weights, &self.gm, self.gm_total, M_PRIOR);
        fit(&weights[..k], M_BITS, true, 0, &mut freqs[..k]);
        self.gm_fit[e] = self.gm_total;
        let mut start = 0u32;
        for (s, &f) in freqs[..k].iter().enumerate() {
            self.m_enc[e][s] = start | f << 16;
            start += f;
        }
        if self.decoding {
            fill::m_row(&mut self.m_dec[e << M_BITS..(e + 1) << M_BITS], &freqs[..k]);
        }
        self.m_fit[e] = self.m_total[e];
        self.m_dirty = match self.m_dirty.is_empty() {
            true => e..e + 1,
            false => self.m_dirty.start.min(e)..self.m_dirty.end.max(e + 1),
        };
    }

    /// Counts a batch of values given as `E << 4 | M` that begins at value `at`, in groups of
    /// `ways` with the contexts `ctx` (every other group only, if sampled and past
    /// `SAMPLE_FROM`): two partial histograms per context, taking turns, so that a repeated
    /// symbol does not wait on its last count, merged by `end_batch` over the range the batch
    /// used.
    pub(crate) fn count_batch(&mut self, em: &[u16], ctx: &[u8], ways: usize, at: usize) -> Span {
        count_batch(self, em, ctx, ways, at)
    }

    #[inline(always)]
    pub(crate) fn count_batch_body(
        &mut self,
        em: &[u16],
        ctx: &[u8],
        ways: usize,
        at: usize,
    ) -> Span {
        // One pass (16-bit lanes throughout: a batch has at most 4096 values, of which +0.0).
        // +0.0 (`ZERO_EM`, the only symbol from 0x1000 on) is left out of the range: its
        // row is merged apart, not with every row between it and the exponents used.
        let (mut lo, mut hi, mut zeros) = (0x1fffu16, 0u16, 0u16);
        for &v in em {
            lo = lo.min(v & 0x1fff);
            hi = hi.max(v & 0xfff);
            zeros += u16::from(v == ZERO_EM);
        }
        let (lo, hi) = (lo as usize, hi as usize);
        let (h0, h1) = self.partial.split_at_mut(CONTEXTS << 13);
        let mut contexts = 0u32;
        // Batches past `SAMPLE_FROM` start at a multiple of `MAX_BATCH`, an even number of
        // groups: the groups counted are every other group of the block.
        let step = match at >= SAMPLE_FROM {
            true => 2,
            false => 1,
        };
        for (group, &c) in em.chunks(ways).zip(ctx).step_by(step) {
            let c = (c as usize).min(CONTEXTS - 1);
            contexts |= 1 << c;
            let at = c << 13..(c + 1) << 13;
            let (h0, h1) = (&mut h0[at.clone()], &mut h1[at]);
            let quads = group.chunks_exact(4);
            for &v in quads.remainder() {
                h0[v as usize & 0x1fff] += 1;
            }
            for q in quads {
                h0[q[0] as usize & 0x1fff] += 1;
                h1[q[1] as usize & 0x1fff] += 1;
                h0[q[2] as usize & 0x1fff] += 1;
                h1[q[3] as usize & 0x1fff] += 1;
            }
        }
        Span {
            exponents: lo >> 4..(hi >> 4) + 1,
            contexts,
            zeros: zeros as usize,
        }
    }

    /// Ends a batch: merges its counts, refits the mantissa-top tables of the exponents it
    /// counted and the exponent tables due.
    pub(crate) fn end_batch(&mut self, span: Span) {
        end_batch(self, span)
    }

    #[inline(always)]
    pub(crate) fn end_batch_body(&mut self, span: Span) {
        let exponents = span.exponents.start..span.exponents.end.min(ZERO);
        let zero = (span.zeros > 0).then_some(ZERO);
        let stride = CONTEXTS << 13;
        // Sums kept in locals while the rows are merged (not read and written back per row).
        let (mut e_lo, mut e_hi) = (self.e_lo, self.e_hi);
        let (mut gm, mut gm_add, mut g_add) = ([0u32; 16], 0u32, 0u32);
        for c in 0..CONTEXTS {
            if span.contexts >> c & 1 == 0 {
                continue;
            }
            let mut c_add = 0u32;
            for e in exponents.clone().chain(zero) {
                let at = c << 13 | e << 4;
                let mut row = [0u32; 16];
                for p in 0..2 {
                    let part = &mut self.partial[p * stride + at..][..16];
                    for (r, h) in row.iter_mut().zip(part.iter_mut()) {
                        *r += u32::from(*h);
                        *h = 0;
                    }
                }
                let sum = row_sum(&row);
                // Without a branch on `sum` (rows with and without counts alternate at
                // random): an empty row adds nothing.
                for (n, r) in self.m_counts[e].iter_mut().zip(row) {
                    *n += r;
                }
                if e < ZERO {
                    // All ones if the row is empty: no lower `e_lo`, no higher `e_hi`.
                    let empty = usize::from(sum == 0).wrapping_neg();
                    e_lo = e_lo.min(e | empty);
                    e_hi = e_hi.max(e & !empty);
                    for (n, r) in gm.iter_mut().zip(row) {
                        *n += r;
                    }
                    gm_add += sum;
                }
                self.m_total[e] += sum;
                self.e_counts[c][e] += sum;
                c_add += sum;
                self.global[e] += sum;
            }
            self.e_total[c] += c_add;
            g_add += c_add;
        }
        (self.e_lo, self.e_hi) = (e_lo, e_hi);
        for (n, r) in self.gm.iter_mut().zip(gm) {
            *n += r;
        }
        self.gm_total += gm_add;
        self.g_total += g_add;
        for e in exponents.clone() {
            if self.m_total[e] >= self.m_min && due(self.m_total[e], self.m_fit[e], self.m_lazy) {
                self.refit_m(e);
            }
        }
        if self.e_lo <= self.e_hi {
            if self.gm_total >= G_HALVE {
                self.gm_total = halve(&mut self.gm, self.gm_total, G_HALVE);
                self.gm_fit.iter_mut().for_each(|g| *g >>= 1);
            }
            // Exponents with few counts of their own follow the block's mantissa tops; those
            // with none (between a block's rare small exponents and the rest) all get the
            // same table, fitted once.
            let mut empty = None;
            for e in self.e_lo..=self.e_hi {
                if (self.m_total[e] as u64) < M_PRIOR && due(self.gm_total, self.gm_fit[e], 1) {
                    match (self.m_total[e], empty) {
                        (0, Some(fitted)) => self.copy_m(fitted, e),
                        (0, None) => {
                            self.refit_m(e);
                            empty = Some(e);
                        }
                        _ => self.refit_m(e),
                    }
                }
            }
        }
        if self.g_total >= G_HALVE {
            self.g_total = halve(&mut self.global, self.g_total, G_HALVE);
            self.g_fit.iter_mut().for_each(|g| *g >>= 1);
        }
        for c in 0..CONTEXTS {
            let total = self.e_total[c];
            let own = span.contexts >> c & 1 != 0 && due(total, self.e_fit[c], LAZY);
            // A context with few counts of its own follows the block's.
            let prior = (total as u64) < PRIOR && due(self.g_total, self.g_fit[c], 1);
            if own || prior {
                self.refit_e(c);
            }
        }
    }
}

/// The sum of a row of counts, added in halves (a few vector adds, not one way at a time).
#[inline(always)]
pub(crate) fn row_sum(row: &[u32; 16]) -> u32 {
    let half: [u32; 8] = std::array::from_fn(|i| row[i] + row[i + 8]);
    let quarter: [u32; 4] = std::array::from_fn(|i| half[i] + half[i + 4]);
    quarter[0] + quarter[1] + quarter[2] + quarter[3]
}

/// Halves `counts` (rounding up) if their `total` reached `limit`; returns their total.
#[inline(always)]
pub(crate) fn halve(counts: &mut [u32], total: u32, limit: u32) -> u32 {
    if total < limit {
        return total;
    }
    counts
        .iter_mut()
        .map(|n| {
            *n = (*n + 1) >> 1;
            *n
        })
        .sum()
}

/// Whether a table fitted when a count total was `fitted` is due for a refit at `total`: the
/// total grew by at least a `lazy`th of `fitted`.
#[inline(always)]
pub(crate) fn due(total: u32, fitted: u32, lazy: u32) -> bool {
    total > fitted && lazy * (total - fitted) >= fitted
}

/// Turns `weights`, holding a table's own counts, into its fitting weights: the counts in
/// sixteenths plus `prior` values' worth of the block's counts `block` (total `block_total`).
#[inline(always)]
pub(crate) fn with_prior<'a>(
    weights: &mut [u32],
    block: impl IntoIterator<Item = &'a u32>,
    block_total: u32,
    prior: u64,
) {
    let scale = match block_total {
        0 => 0,
        t => (prior << 36) / t as u64,
    };
    for (w, &g) in weights.iter_mut().zip(block) {
        *w = (*w << 4) + ((g as u64 * scale) >> 32) as u32;
    }
}

kernel_variants! {
/// `Tables::count_batch`, compiled for the process's SIMD level.
pub(crate) fn count_batch [] [] (tables: &mut Tables, em: &[u16], ctx: &[u8], ways: usize, at: usize) -> Span {
    tables.count_batch_body(em, ctx, ways, at)
}
}

kernel_variants! {
/// `Tables::end_batch`, compiled for the process's SIMD level.
pub(crate) fn end_batch [] [] (tables: &mut Tables, span: Span) {
    tables.end_batch_body(span)
}
}
