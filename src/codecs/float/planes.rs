//! Tensor block codec. Each value is split into planes: `E`, the exponent (for f64 its top 8
//! bits), `M`, the sign and the next 3 bits (top of the mantissa), and the residual: the
//! remaining low bits. A value that is +0.0 exactly is one more `E` symbol and has neither `M`
//! nor residual. `E` and `M` are coded with rANS: `E` from a 12-bit table of the group's
//! exponent context (the previous group's rounded mean exponent: the local scale, e.g. of an
//! output channel), fitted to that context's counts so far with the block's as a prior (an
//! escape codes a symbol not in the table as 9 raw bits), `M` from an 8-bit table of the
//! value's exponent. Tables are refitted between batches of values
//! (16, 32, ... then every 4096), so within a batch every symbol decodes independently. The
//! residuals go through invariant bit packing (IBP), which stores bits that hardly vary (e.g.
//! the zero low half of widened bf16 weights) once per group. The block's counts start from a
//! prior: 4-bit levels of its `E` and `M` frequencies in a sample; only every other group is
//! counted past the block's first 16384 values; the coder's start states carry the block's last
//! residuals (`carry`).
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! ways (`u8`), plane layout (`u8`), context base (`u8`), the prior, residual
//! count (`u32`), rANS stream length (`u32`) + stream, then the IBP section of the residuals.

use super::{carry, fill, ibp, interleaved, DType};
use crate::entropy::rans::{self, fit};
use crate::error::{Error, Result};
#[cfg(target_arch = "x86_64")]
use crate::simd::{level, Level};
use std::mem::MaybeUninit;
use std::ops::Range;

/// Precision of the exponent table.
pub(super) const E_BITS: u32 = 12;
/// Precision of the mantissa-top tables.
pub(super) const M_BITS: u32 = 8;
/// Slots of the exponent table kept for the escape.
const ESCAPE: u32 = 1;
/// Index of the escape's slot range among a context's `E` symbols (after `ZERO`'s).
pub(super) const ESCAPE_SYM: usize = ZERO + 1;
/// Entries of a context's `E` symbol row: 256 exponents, `ZERO` and the escape, and room
/// to load 64 entries from any exponent on.
pub(super) const E_SYMS: usize = 256 + 64;
/// Bytes of a context's exponent decode table: a slot per 12-bit state, and room for a
/// 64-byte store at the last.
pub(super) const E_STRIDE: usize = (1 << E_BITS) + 64;
/// `E` symbol of a value that is +0.0 exactly (after the 256 exponents).
pub(super) const ZERO: usize = 256;
/// `E << 4 | M` of a +0.0 value, as the decoder reports it.
pub(super) const ZERO_EM: u16 = (ZERO as u16) << 4;
/// Bits of an escaped `E` symbol (raw values 256 and up all mean `ZERO`).
pub(super) const RAW_BITS: u32 = 9;
/// A table is refitted once its count grew by a quarter since its last fit (a mantissa-top
/// table after a block prior: by a half, and from `PRIOR_M_MIN` counts on).
const LAZY: u32 = 4;
const PRIOR_M_LAZY: u32 = 2;
/// Fewest own counts for which a mantissa-top table after a block prior is refitted for its
/// own counts' sake (below, the prior's weight dwarfs them).
const PRIOR_M_MIN: u32 = 16;
/// Largest batch between two refits.
const MAX_BATCH: usize = 4096;
/// First value of the first batch of which only every other group is
/// counted: past it the tables are fitted from enough values that half of them predict as
/// well, and counting and refitting take half the time.
const SAMPLE_FROM: usize = 4 * MAX_BATCH;
/// Values coded side by side in a group, one coder state each, for a block of `n` values:
/// more ways decode faster but each costs 4 bytes of final state (which start states that
/// carry residuals mostly pay back), and a group's exponent context is the mean of a wider
/// previous group.
fn lanes_for(n: usize) -> usize {
    match n {
        WIDE_FROM.. => 64,
        _ => 32,
    }
}
/// Fewest values of a block coded in 64 ways.
const WIDE_FROM: usize = 0x4000;
/// Mantissa-top counts per exponent are halved when they reach this total.
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

    /// Joins `E << 4 | M` (not `ZERO_EM`) and the residual back into a value, in `u32` for
    /// values of at most 32 bits (twice as many to a vector) or `u64`.
    #[inline(always)]
    fn join<T: ibp::Word>(self, em: u16, r: T) -> T {
        let low = self.low();
        let top = T::from((em >> 4) & 0xff) << 3 | T::from(em & 7);
        let sign = if self.signed {
            T::from((em >> 3) & 1)
        } else {
            r >> low
        };
        let one = T::from(1);
        sign << (self.bits - 1) | top << low | (r & ((one << low) - one))
    }
}

/// What a sample of a block shows: whether coding the sign with `M` pays, the median
/// exponent of the non-zero values, and the sample's counts of each `E` symbol and `M`.
struct Survey {
    signed: bool,
    median: u8,
    e: [u32; 257],
    /// Per sign and top 3 mantissa bits (`sign << 3 | m`).
    m: [u32; 16],
}

/// Surveys every 3rd value of `data` (a stride prime to the power-of-two periods tensors
/// tend to have). The sign goes with `M` if, given the exponent, it carries at least 0.02
/// bits less than 1 per value (more symbols per table cost about that).
fn survey<const W: usize>(data: &[u8], f: Fields) -> Survey {
    // One count per sampled value, by exponent, sign and top 3 mantissa bits.
    let mut by_em = vec![[0u32; 16]; 256];
    let mut sv = Survey {
        signed: false,
        median: 0,
        e: [0; 257],
        m: [0; 16],
    };
    for v in data.chunks_exact(W).step_by(3) {
        let v = read::<W>(v);
        if v == 0 {
            sv.e[ZERO] += 1;
            continue;
        }
        let e = (v >> (f.low() + 3)) as usize & ((1 << f.ebits) - 1);
        let sign = (v >> (f.bits - 1)) as usize & 1;
        by_em[e][sign << 3 | (v >> f.low()) as usize & 7] += 1;
    }
    let mut counts = vec![[0u64; 2]; 256];
    for ((row, c), n) in by_em.iter().zip(counts.iter_mut()).zip(sv.e.iter_mut()) {
        for (s, &k) in row.iter().enumerate() {
            c[s >> 3] += u64::from(k);
            sv.m[s] += k;
        }
        *n = (c[0] + c[1]) as u32;
    }
    let (mut bits, mut total) = (0f64, 0u64);
    for [a, b] in counts.iter().copied() {
        for c in [a, b] {
            if c > 0 {
                bits -= c as f64 * (c as f64 / (a + b) as f64).log2();
            }
        }
        total += a + b;
    }
    let mut below = 0u64;
    sv.median = counts
        .iter()
        .position(|[a, b]| {
            below += a + b;
            2 * below > total
        })
        .unwrap_or(0) as u8;
    sv.signed = total > 0 && bits < 0.98 * total as f64;
    sv
}

/// Most exponents a prior covers: the span the decode kernels look up in registers.
const WINDOW: usize = 64;
/// A prior's counts are its levels times 2 to this.
const PRIOR_SHIFT: u32 = 3;
/// Counts, in a 4096-value scale, that a block prior's 4-bit levels stand for (about 1.7x
/// apart).
const LEVELS: [u32; 16] = [
    0, 1, 2, 3, 5, 8, 14, 24, 40, 68, 116, 197, 335, 570, 969, 1647,
];

/// The level nearest (geometrically) to `count` of `total`, rescaled to 4096; at least 1 for
/// a count above 0.
fn prior_level(count: u32, total: u64) -> u8 {
    if count == 0 || total == 0 {
        return 0;
    }
    // Compare count * 4096 / total with the geometric midpoints, squared, in integers.
    let c = u128::from(count) << 12;
    let t = u128::from(total);
    let mut q = 1;
    while q < 15 && c * c > u128::from(LEVELS[q] * LEVELS[q + 1]) * t * t {
        q += 1;
    }
    q as u8
}

/// A block prior: the levels of the block's `E` symbols from `lowest` on
/// (then `ZERO`'s) and of its `M` symbols, from a sample; seeds the block's counts so that
/// its first values are coded with tables near the block's own instead of near uniform.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Prior {
    lowest: u8,
    e: Vec<u8>,
    zero: u8,
    m: Vec<u8>,
}

impl Prior {
    /// The prior of a surveyed block whose `M` symbols number `m_syms`.
    fn from_survey(sv: &Survey, m_syms: usize) -> Self {
        let total: u64 = sv.e.iter().map(|&c| u64::from(c)).sum();
        let first = sv.e[..ZERO].iter().position(|&c| c > 0);
        let last = sv.e[..ZERO].iter().rposition(|&c| c > 0);
        let (lowest, e) = match (first, last) {
            // At most `WINDOW` exponents, those of the most values: rarer outliers escape
            // when they come, so the decoder keeps looking exponents up in registers until
            // then.
            (Some(first), Some(last)) => {
                let mass = |a: usize| -> u64 {
                    sv.e[a..(a + WINDOW).min(last + 1)]
                        .iter()
                        .map(|&c| u64::from(c))
                        .sum()
                };
                let start = (first..=last.saturating_sub(WINDOW - 1).max(first))
                    .rev()
                    .max_by_key(|&a| mass(a))
                    .unwrap_or(first);
                let end = (start + WINDOW - 1).min(last);
                // Trimmed to the exponents the sample showed.
                let a = (start..=end).find(|&e| sv.e[e] > 0).unwrap_or(start);
                let b = (a..=end).rev().find(|&e| sv.e[e] > 0).unwrap_or(a);
                (a, (a..=b).map(|e| prior_level(sv.e[e], total)).collect())
            }
            _ => (0, Vec::new()),
        };
        let mut m = [0u32; 16];
        for (s, &c) in sv.m.iter().enumerate() {
            m[s % m_syms] += c;
        }
        let m_total: u64 = m.iter().map(|&c| u64::from(c)).sum();
        Prior {
            lowest: lowest as u8,
            e,
            zero: prior_level(sv.e[ZERO], total),
            m: m[..m_syms]
                .iter()
                .map(|&c| prior_level(c, m_total))
                .collect(),
        }
    }

    /// Appends the prior: lowest exponent, number of exponents, then 4-bit levels two to a
    /// byte (low first): the exponents', `ZERO`'s and the `M` symbols'.
    fn write(&self, out: &mut Vec<u8>) {
        out.push(self.lowest);
        out.push(self.e.len() as u8);
        let levels: Vec<u8> = self
            .e
            .iter()
            .chain([&self.zero])
            .chain(&self.m)
            .copied()
            .collect();
        out.extend(
            levels
                .chunks(2)
                .map(|p| p[0] | p.get(1).map_or(0, |h| h << 4)),
        );
    }

    /// Reads a prior with `m_syms` `M` levels from the start of `body`; returns it and its
    /// length in bytes.
    fn read(body: &[u8], m_syms: usize) -> Result<(Self, usize)> {
        let bad = || Error::Corrupt("tensor block: prior cut short".into());
        let (&lowest, rest) = body.split_first().ok_or_else(bad)?;
        let (&k, rest) = rest.split_first().ok_or_else(bad)?;
        let k = k as usize;
        // Exponents past 255 do not exist (the encoder writes at most `WINDOW`).
        if lowest as usize + k > ZERO {
            return Err(Error::Corrupt("tensor block: prior out of range".into()));
        }
        let count = k + 1 + m_syms;
        let bytes = rest.get(..count.div_ceil(2)).ok_or_else(bad)?;
        let level = |i: usize| (bytes[i / 2] >> (4 * (i % 2))) & 15;
        let prior = Prior {
            lowest,
            e: (0..k).map(level).collect(),
            zero: level(k),
            m: (k + 1..count).map(level).collect(),
        };
        Ok((prior, 2 + count.div_ceil(2)))
    }
}

/// Exponent contexts of a block: each group of lanes codes its exponents
/// with the table of the rounded mean exponent of the previous group's non-zero values.
pub(super) const CONTEXTS: usize = 8;
/// The first context holds means up to the block's median exponent less this.
const BELOW_MEDIAN: u32 = 6;
/// Weight, in values, of the block's exponent counts (all contexts) in a context's table;
/// a context with fewer counts of its own is also refitted each time the block's counts
/// double.
const PRIOR: u64 = 256;
/// A context's counts are halved when they reach this total (its table is refitted, like a
/// mantissa-top table, once its count grew by a quarter).
const CONTEXT_HALVE: u32 = 1 << 14;
/// Weight, in values, of the block's mantissa-top counts (all exponents) in an exponent's
/// mantissa-top table; an exponent with fewer counts of its own is also refitted
/// each time the block's counts double.
const M_PRIOR: u64 = 64;
/// The block's exponent (and mantissa-top) counts are halved when they reach this total.
const G_HALVE: u32 = 1 << 16;

/// Picks each group's exponent context: the rounded mean exponent of the previous group's
/// non-zero values, less `base`, at most `top` (a group of +0.0 keeps the context).
#[derive(Clone, Copy, Debug)]
pub(super) struct Contexts {
    base: u32,
    top: u32,
    /// Context of the next group.
    pub next: u32,
}

impl Contexts {
    /// `CONTEXTS` contexts from `base`; the first group's is the block's median exponent's.
    fn from_base(base: u8) -> Self {
        Contexts {
            base: base as u32,
            top: CONTEXTS as u32 - 1,
            next: BELOW_MEDIAN.min(CONTEXTS as u32 - 1),
        }
    }

    /// Moves on past a group whose `count` non-zero values' exponents sum to `sum`.
    #[inline(always)]
    pub(super) fn follow(&mut self, sum: u32, count: u32) {
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
    pub(super) fn follow_group(&mut self, em: &[u16]) {
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
pub(super) struct Span {
    exponents: Range<usize>,
    contexts: u32,
    zeros: usize,
}

/// Large buffers of a `Model` kept for the thread's next block (the histograms are left all
/// zero by every batch; an exponent table is only read where its context's last refit wrote
/// it, and `Model::new` resets the mantissa-top rows that `m_dirty` names).
#[derive(Default)]
struct Spare {
    partial: Vec<u16>,
    e_dec: Vec<u8>,
    m_dec: Vec<u32>,
    /// `M` symbols of the block that left `m_dec`, and the exponents whose rows it
    /// refitted (all others still hold the uniform table).
    m_dirty: Option<(usize, Range<usize>)>,
}

thread_local! {
    static SPARE: std::cell::RefCell<Spare> = std::cell::RefCell::new(Spare::default());
}

/// A buffer of `len` entries: `spare` if it has that length, else zeroed.
fn reuse<T: Clone + Default>(spare: &mut Vec<T>, len: usize) -> Vec<T> {
    if spare.len() == len {
        std::mem::take(spare)
    } else {
        vec![T::default(); len]
    }
}

/// Stores `buf` in `spare` unless it is empty (an encoder's decode tables).
fn keep<T>(spare: &mut Vec<T>, buf: Vec<T>) {
    if !buf.is_empty() {
        *spare = buf;
    }
}

/// Calls the fn `$body` (generics declared `[$decl]`, passed `[$pass]`; both may be empty)
/// compiled for the process's kernel level: with AVX-512 or AVX2 enabled, or for the baseline.
macro_rules! at_level {
    ($body:ident [$($decl:tt)*] [$($pass:tt)*] ($($arg:ident: $ty:ty),*) -> $ret:ty) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,popcnt,bmi1,bmi2,lzcnt")]
        unsafe fn avx512<$($decl)*>($($arg: $ty),*) -> $ret {
            $body::<$($pass)*>($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,popcnt,bmi1,bmi2,lzcnt")]
        unsafe fn avx2<$($decl)*>($($arg: $ty),*) -> $ret {
            $body::<$($pass)*>($($arg),*)
        }
        // SAFETY: the kernel level is never above what the CPU supports.
        #[cfg(target_arch = "x86_64")]
        match level() {
            Level::Avx512 => return unsafe { avx512::<$($pass)*>($($arg),*) },
            Level::Avx2 => return unsafe { avx2::<$($pass)*>($($arg),*) },
            Level::Scalar => {}
        }
        $body::<$($pass)*>($($arg),*)
    }};
}

/// Defines the fn `$name` (generics declared `[$decl]`, passed `[$pass]`; both may be empty)
/// whose `$body` is compiled for the process's kernel level, as `at_level!` calls it.
macro_rules! leveled {
    ($(#[$meta:meta])* fn $name:ident [$($decl:tt)*] [$($pass:tt)*]
        ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$meta])*
        fn $name<$($decl)*>($($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn body<$($decl)*>($($arg: $ty),*) -> $ret $body
            at_level!(body [$($decl)*] [$($pass)*] ($($arg: $ty),*) -> $ret)
        }
    };
}

/// Counts and tables of one block, refitted between batches identically on both sides.
pub(super) struct Model {
    /// Per context, per `E` symbol (256 exponents and `ZERO`).
    e_counts: Vec<[u32; 257]>,
    e_total: Vec<u32>,
    /// Per context: `e_total` when its table was last fitted.
    e_fit: Vec<u32>,
    /// Per context: `g_total` when its table was last fitted.
    g_fit: Vec<u32>,
    /// Per `E` symbol over all contexts.
    global: [u32; 257],
    g_total: u32,
    /// Per `M` over all exponents, and its total.
    gm: [u32; 16],
    gm_total: u32,
    /// Per exponent: `gm_total` when its table was last fitted.
    gm_fit: Vec<u32>,
    /// Lowest and highest exponent (not `ZERO`) counted so far (`e_lo > e_hi`: none).
    e_lo: usize,
    e_hi: usize,
    /// Per context, `E` slot ranges (`start | freq << 16`, freq 0 = not in the table yet),
    /// the escape's after `ZERO`'s.
    pub(super) e_enc: Vec<[u32; E_SYMS]>,
    /// Per context: first slot of `ZERO` (its slots run up to the escape's).
    pub(super) zero_start: [u32; CONTEXTS],
    /// Per context: first slot of the escape (the escape holds every slot from here on).
    pub(super) escape_start: [u32; CONTEXTS],
    /// Per context (`E_STRIDE` bytes each), per slot: the exponent whose range holds it
    /// (any value in the slots of `ZERO` and the escape).
    pub(super) e_dec: Vec<u8>,
    /// Per `E << 4 | M` (rows up to 511 so that 13-bit indexes need no check): count in
    /// earlier batches; `ZERO` counts at `ZERO_EM`.
    m_counts: Box<[[u32; 16]; 512]>,
    m_total: Vec<u32>,
    /// Per exponent: `m_total` when its table was last fitted.
    m_fit: Vec<u32>,
    /// Per exponent and `M`: `start | freq << 16`.
    m_enc: Box<[[u32; 16]; 256]>,
    /// Per exponent, per slot: `M` | freq << 4 | (slot - start) << 13.
    pub(super) m_dec: Vec<u32>,
    /// Two partial histograms of `E << 4 | M` per context (`2 CONTEXTS` rows of 8192) for
    /// `count_batch` (16 bits: a batch is at most 4096 values), zero between batches.
    partial: Vec<u16>,
    /// `M` symbols per exponent: 16 with the sign, else 8.
    m_syms: usize,
    /// Exponents whose mantissa-top table was refitted since the block began.
    m_dirty: Range<usize>,
    /// Whether the decode tables (`e_dec`, `m_dec`) are kept (the encoder needs none).
    decoding: bool,
    /// A mantissa-top table is refitted for its own counts once they reach `m_min` and grew
    /// by a `m_lazy`th since its last fit.
    m_lazy: u32,
    m_min: u32,
}

impl Model {
    fn new(f: Fields, decoding: bool) -> Self {
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
        let mut m = Model {
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
    fn seed(&mut self, prior: &Prior) {
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
    fn copy_m(&mut self, from: usize, to: usize) {
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
    fn recycle(self) {
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
    fn e_sym(&self, c: usize, e: usize) -> u32 {
        self.e_enc[c][e.min(ZERO)]
    }

    /// The lowest exponent with slots and the number of exponents from there to the highest
    /// (exponents between them may have none).
    #[inline(always)]
    pub(super) fn e_window(&self) -> (usize, usize) {
        match self.e_lo <= self.e_hi {
            true => (self.e_lo, self.e_hi + 1 - self.e_lo),
            false => (0, 0),
        }
    }

    /// The escape's `start | freq << 16` in context `c`.
    #[inline(always)]
    fn escape(&self, c: usize) -> u32 {
        self.e_enc[c][ESCAPE_SYM]
    }

    #[inline(always)]
    fn refit_e(&mut self, c: usize) {
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
    fn refit_m(&mut self, e: usize) {
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
    /// `lanes` with the contexts `ctx` (every other group only, if sampled and past
    /// `SAMPLE_FROM`): two partial histograms per context, taking turns, so that a repeated
    /// symbol does not wait on its last count, merged by `end_batch` over the range the batch
    /// used.
    fn count_batch(&mut self, em: &[u16], ctx: &[u8], lanes: usize, at: usize) -> Span {
        #[inline(always)]
        fn body(model: &mut Model, em: &[u16], ctx: &[u8], lanes: usize, at: usize) -> Span {
            model.count_batch_body(em, ctx, lanes, at)
        }
        let model = self;
        at_level!(body [] [] (model: &mut Model, em: &[u16], ctx: &[u8], lanes: usize, at: usize) -> Span)
    }

    #[inline(always)]
    fn count_batch_body(&mut self, em: &[u16], ctx: &[u8], lanes: usize, at: usize) -> Span {
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
        for (group, &c) in em.chunks(lanes).zip(ctx).step_by(step) {
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
    fn end_batch(&mut self, span: Span) {
        #[inline(always)]
        fn body(model: &mut Model, span: Span) {
            model.end_batch_body(span)
        }
        let model = self;
        at_level!(body [] [] (model: &mut Model, span: Span) -> ())
    }

    #[inline(always)]
    fn end_batch_body(&mut self, span: Span) {
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

/// The sum of a row of counts, added in halves (a few vector adds, not one lane at a time).
#[inline(always)]
fn row_sum(row: &[u32; 16]) -> u32 {
    let half: [u32; 8] = std::array::from_fn(|i| row[i] + row[i + 8]);
    let quarter: [u32; 4] = std::array::from_fn(|i| half[i] + half[i + 4]);
    quarter[0] + quarter[1] + quarter[2] + quarter[3]
}

/// Halves `counts` (rounding up) if their `total` reached `limit`; returns their total.
#[inline(always)]
fn halve(counts: &mut [u32], total: u32, limit: u32) -> u32 {
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
fn due(total: u32, fitted: u32, lazy: u32) -> bool {
    total > fitted && lazy * (total - fitted) >= fitted
}

/// Turns `weights`, holding a table's own counts, into its fitting weights: the counts in
/// sixteenths plus `prior` values' worth of the block's counts `block` (total `block_total`).
#[inline(always)]
fn with_prior<'a>(
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
fn encode_w<const W: usize, const EB: u32>(
    data: &[u8],
    kernel: interleaved::Kernel,
    out: &mut Vec<u8>,
) {
    let mut f = Fields {
        bits: 8 * W as u32,
        ebits: EB,
        signed: false,
    };
    let sv = survey::<W>(data, f);
    f.signed = sv.signed;
    let base = (sv.median as u32).saturating_sub(BELOW_MEDIAN) as u8;
    let mut ctx = Contexts::from_base(base);
    let n = data.len() / W;
    let mut model = Model::new(f, false);
    let prior = Prior::from_survey(&sv, model.m_syms);
    model.seed(&prior);
    let lanes = lanes_for(n);
    let mut syms = interleaved::Symbols::new(n, lanes);
    let mut em = vec![0u16; MAX_BATCH];
    let mut group_ctx = [0u8; MAX_BATCH / 16];
    // Residuals not yet packed, `residual[..held]`: fewer than an IBP group (GROUP
    // residuals, whatever the batches) between batches.
    let mut residual = vec![0u64; ibp::GROUP + MAX_BATCH];
    let mut held = 0;
    let mut carried = Vec::new();
    let mut packer = ibp::Packer::new(f.rbits(), n);
    let (mut i, mut k, mut residuals) = (0usize, 0u32, 0u32);
    while i < n {
        let end = (i + batch_len(k)).min(n);
        let em = &mut em[..end - i];
        let rest = &mut residual[held..held + em.len()];
        let zeros = split_all::<W, EB>(&data[i * W..end * W], f, em, rest);
        // The residuals of the values other than +0.0, in order.
        if zeros > 0 {
            // Without a branch per value: every residual is moved, and kept if not +0.0's
            // (`kept <= held + j`, so no residual is overwritten before it is read).
            let mut kept = held;
            for (j, &v) in em.iter().enumerate() {
                residual[kept] = residual[held + j];
                kept += usize::from(v != ZERO_EM);
            }
        }
        held += em.len() - zeros;
        residuals += (end - i - zeros) as u32;
        if end == n {
            // The block's last residuals go to the coder's start states, not to IBP.
            let v = carry::count(lanes, f.rbits(), em.len() - zeros);
            carried.extend_from_slice(&residual[held - v..held]);
            held -= v;
            residuals -= v as u32;
        }
        if held >= ibp::GROUP {
            packer.group(&residual[..ibp::GROUP]);
            residual.copy_within(ibp::GROUP..held, 0);
            held -= ibp::GROUP;
        }
        // Every symbol of the batch from the tables fitted before it, each group's exponent
        // from its context's.
        let m_enc: &[u32; 4096] = model
            .m_enc
            .as_flattened()
            .try_into()
            .expect("256 rows of 16");
        for (gi, g) in (i..end).step_by(lanes).enumerate() {
            let ge = (g + lanes).min(end);
            let c = ctx.next as usize;
            group_ctx[gi] = c as u8;
            let row = &model.e_enc[c];
            let group = &em[g - i..ge - i];
            let (e_syms, m_syms) = (&mut syms.e[g..ge], &mut syms.m[g..ge]);
            let escaped = look_up(row, m_enc, group, e_syms, m_syms);
            // Exponents not in the context's table yet take the escape and their raw bits.
            if escaped {
                let escape = model.escape(c);
                for (j, (&v, e_sym)) in group.iter().zip(e_syms).enumerate() {
                    if *e_sym >> 16 == 0 {
                        syms.escapes.push(((g + j) as u32, v >> 4));
                        *e_sym = escape;
                    }
                }
            }
            ctx.follow_group(group);
            syms.groups.push((g as u32, (ge - g) as u32));
        }
        let groups = (end - i).div_ceil(lanes);
        let span = model.count_batch(em, &group_ctx[..groups], lanes, i);
        model.end_batch(span);
        i = end;
        k += 1;
    }
    model.recycle();
    if held > 0 {
        packer.group(&residual[..held]);
    }
    out.push(lanes as u8);
    out.push(u8::from(f.signed));
    out.push(base);
    prior.write(out);
    out.extend_from_slice(&residuals.to_le_bytes());
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    let start = carry::states(carried, f.rbits(), lanes);
    kernel.encode(&mut syms, &start, out);
    syms.recycle();
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    packer.finish(out);
}

/// The residuals of a block in order, unpacked an IBP group at a time.
struct Residuals<'a, R> {
    unpacker: ibp::Unpacker<'a>,
    /// Residuals not unpacked yet.
    left: usize,
    /// `RESIDUAL_GROUPS` groups' room; the residuals not taken yet are `buf[at..end]`.
    buf: Vec<R>,
    at: usize,
    end: usize,
}

/// IBP groups' room in `Residuals::buf`: the residuals left over are moved to its start
/// only when the next group would not fit after them.
const RESIDUAL_GROUPS: usize = 4;

impl<R: ibp::Word> Residuals<'_, R> {
    /// The next `k` (at most GROUP) residuals.
    fn take(&mut self, k: usize) -> Result<&[R]> {
        if self.end - self.at < k {
            let g = self.left.min(ibp::GROUP);
            if self.end + g > self.buf.len() {
                self.buf.copy_within(self.at..self.end, 0);
                self.end -= self.at;
                self.at = 0;
            }
            self.unpacker.group(&mut self.buf[self.end..self.end + g])?;
            self.end += g;
            self.left -= g;
            if self.end - self.at < k {
                return Err(Error::Corrupt("tensor block: residuals run out".into()));
            }
        }
        self.at += k;
        Ok(&self.buf[self.at - k..self.at])
    }
}

/// Decodes a block of `W`-byte values with `EB` exponent bits, residuals unpacked as `R`
/// (`u32` for values of at most 4 bytes).
fn decode_w<const W: usize, const EB: u32, R: ibp::Word>(
    body: &[u8],
    n: usize,
    kernel: interleaved::Kernel,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    let bad = |what: &str| Error::Corrupt(format!("tensor block: {what}"));
    // Ways, sign mode and context base; the prior follows.
    let top_len = 3;
    let top = body
        .get(..top_len)
        .ok_or_else(|| bad("missing lane and stream lengths"))?;
    let lanes = top[0] as usize;
    if lanes != 32 && lanes != 64 {
        return Err(bad("unknown lane count"));
    }
    if top[1] > 1 {
        return Err(bad("unknown sign mode"));
    }
    let f = Fields {
        bits: 8 * W as u32,
        ebits: EB,
        signed: top[1] == 1,
    };
    let mut ctx = Contexts::from_base(top[2]);
    let mut model = Model::new(f, true);
    let (prior, prior_len) = Prior::read(&body[top_len..], model.m_syms)?;
    model.seed(&prior);
    let mut head_len = top_len + prior_len;
    let head = body
        .get(head_len..head_len + 8)
        .ok_or_else(|| bad("missing lane and stream lengths"))?;
    head_len += 8;
    let count = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if count > n {
        return Err(bad("more residuals than values"));
    }
    let stream = body
        .get(head_len..head_len + len)
        .ok_or_else(|| bad("stream cut short"))?;
    let rest = &body[head_len + len..];
    let mut residuals = Residuals {
        unpacker: ibp::Unpacker::for_level(rest, f.rbits(), count)?,
        left: count,
        buf: vec![R::default(); RESIDUAL_GROUPS * ibp::GROUP],
        at: 0,
        end: 0,
    };
    let mut em = vec![0u16; MAX_BATCH];
    let mut group_ctx = [0u8; MAX_BATCH / 16];
    // A batch's residuals spread over its values, for batches with +0.0 values.
    let mut spread_buf = Vec::new();
    spread_buf.resize(MAX_BATCH, R::default());
    // The last batch's residuals with those the start states carry, and the states the
    // decoder must end on (found in the last batch; with no values, carrying nothing).
    let mut last = Vec::new();
    let mut x0 = carry::states([], f.rbits(), lanes);
    let (mut x, mut words) = rans::Decoder::new(stream, lanes)?.split();
    let start = out.len();
    out.reserve(n * W);
    // Written batch by batch below, every byte once; not zeroed first.
    let values = &mut out.spare_capacity_mut()[..n * W];
    let (mut i, mut k) = (0usize, 0u32);
    while i < n {
        let end = (i + batch_len(k)).min(n);
        let em = &mut em[..end - i];
        let groups = &mut group_ctx[..em.len().div_ceil(lanes)];
        kernel.lanes(&mut x, &mut words, &model, em, lanes, &mut ctx, groups);
        let span = model.count_batch(em, groups, lanes, i);
        let zeros = span.zeros;
        let nonzero = em.len() - zeros;
        // The last batch's last residuals are in the coder's start states, on which the
        // decoder has just ended.
        let carries = end == n;
        let v = match carries {
            true => carry::count(lanes, f.rbits(), nonzero),
            false => 0,
        };
        let mut res = residuals.take(nonzero - v)?;
        if carries {
            last.clear();
            last.extend_from_slice(res);
            carry::take(&x, f.rbits(), lanes, v, &mut last)?;
            x0 = x;
            res = &last;
        }
        let slots = &mut values[i * W..end * W];
        match (zeros > 0, f.signed) {
            (false, true) => join_all::<W, EB, true, false, R>(em, res, slots),
            (false, false) => join_all::<W, EB, false, false, R>(em, res, slots),
            (true, signed) => {
                // Each value's residual in its place first (+0.0 values take none).
                let spread = &mut spread_buf[..em.len()];
                spread_residuals(em, res, spread);
                match signed {
                    true => join_all::<W, EB, true, true, R>(em, spread, slots),
                    false => join_all::<W, EB, false, true, R>(em, spread, slots),
                }
            }
        }
        // SAFETY: `join_all` wrote every byte of `slots` (W per value of the batch).
        seen(unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<u8>(), slots.len()) });
        model.end_batch(span);
        i = end;
        k += 1;
    }
    if residuals.left != 0 || residuals.at != residuals.end {
        return Err(bad("residuals left over"));
    }
    if residuals.unpacker.consumed() != rest.len() {
        return Err(bad("unexpected bytes after the data"));
    }
    rans::Decoder::join(x, words).finish_at(&x0)?;
    model.recycle();
    // SAFETY: the batches cover values 0..n and every value's W bytes were written.
    unsafe { out.set_len(start + n * W) };
    Ok(())
}

leveled! {
/// Splits each W-byte value of `data` into `em` (`E << 4 | M`) and `rest` (the residual);
/// returns how many were +0.0 (with the widest vectors allowed).
fn split_all [const W: usize, const EB: u32] [W, EB]
    (data: &[u8], f: Fields, em: &mut [u16], rest: &mut [u64]) -> usize {
    // The widths as constants (every shift by a constant).
    let f = Fields {
        bits: 8 * W as u32,
        ebits: EB,
        signed: f.signed,
    };
    let mut zeros = 0;
    for ((v, o), r) in data.chunks_exact(W).zip(em.iter_mut()).zip(rest.iter_mut()) {
        let (top, low) = f.split(read::<W>(v));
        *o = top;
        *r = low;
        zeros += usize::from(top == ZERO_EM);
    }
    zeros
}
}

leveled! {
/// Writes the symbols of a group's values given as `E << 4 | M`: `E` from its context's
/// `row` (an exponent not in it yet gets freq 0), `M` from `m_enc` (0 for +0.0); returns
/// whether any exponent was not in the row (with the widest vectors allowed).
fn look_up [] [] (
    row: &[u32; E_SYMS],
    m_enc: &[u32; 4096],
    em: &[u16],
    e_syms: &mut [u32],
    m_syms: &mut [u32],
) -> bool {
    let mut escaped = false;
    for ((&v, e_sym), m_sym) in em.iter().zip(e_syms).zip(m_syms) {
        let ee = row[(v as usize >> 4).min(ZERO)];
        escaped |= ee >> 16 == 0;
        *e_sym = ee;
        // No mantissa top for +0.0 (a zero symbol is skipped).
        *m_sym = m_enc[v as usize & 0xfff] & 0u32.wrapping_sub(u32::from(v != ZERO_EM));
    }
    escaped
}
}

/// Gives each value of `em` its residual in `out`: the next of `res` (the residuals of the
/// values that are not +0.0, in order), 0 for +0.0; without a branch per value.
fn spread_residuals<R: ibp::Word>(em: &[u16], res: &[R], out: &mut [R]) {
    let mut j = 0;
    for (o, &v) in out.iter_mut().zip(em) {
        *o = res.get(j).copied().unwrap_or_default();
        j += usize::from(v != ZERO_EM);
    }
}

leveled! {
/// Joins each `E << 4 | M` with its residual into `out`, W bytes per value, the sign coded
/// with `M` if `S`; `ZERO_EM` (only if `Z`) gives +0.0 (with the widest vectors allowed).
fn join_all [const W: usize, const EB: u32, const S: bool, const Z: bool, R: ibp::Word]
    [W, EB, S, Z, R]
    (em: &[u16], res: &[R], out: &mut [MaybeUninit<u8>]) -> () {
    let f = Fields {
        bits: 8 * W as u32,
        ebits: EB,
        signed: S,
    };
    for ((o, &v), &r) in out.chunks_exact_mut(W).zip(em).zip(res) {
        // Values of at most 4 bytes in 32-bit lanes (twice as many to a vector).
        let zero = Z && v == ZERO_EM;
        let bytes = match W <= 4 {
            true => {
                let joined = f.join(v, r.low32());
                u64::from(if zero { 0 } else { joined }).to_le_bytes()
            }
            false => {
                let joined = f.join(v, r.to_u64());
                (if zero { 0 } else { joined }).to_le_bytes()
            }
        };
        let value: [u8; W] = std::array::from_fn(|t| bytes[t]);
        // SAFETY: `o` is W bytes long, and `[u8; W]` has alignment 1.
        unsafe { o.as_mut_ptr().cast::<[u8; W]>().write(value) };
    }
}
}

/// The first `W` bytes of `v` as a little-endian integer.
#[inline(always)]
pub(super) fn read<const W: usize>(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..W].copy_from_slice(&v[..W]);
    u64::from_le_bytes(b)
}

/// Codes `data`, an array of `dtype` values (a partial last value is kept raw).
pub fn encode(data: &[u8], dtype: DType) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(data, dtype, &mut out);
    out
}

/// `encode` into `out`, replacing what it held (its room is reused).
pub fn encode_into(data: &[u8], dtype: DType, out: &mut Vec<u8>) {
    out.clear();
    encode_to(data, dtype, interleaved::Kernel::detect(), out)
}

/// `encode`, appended to `out`.
pub fn encode_append(data: &[u8], dtype: DType, out: &mut Vec<u8>) {
    encode_to(data, dtype, interleaved::Kernel::detect(), out)
}

#[cfg(test)]
fn encode_with(data: &[u8], dtype: DType, kernel: interleaved::Kernel) -> Vec<u8> {
    let mut out = Vec::new();
    encode_to(data, dtype, kernel, &mut out);
    out
}

/// Appends the payload of `data` to `out`.
fn encode_to(data: &[u8], dtype: DType, kernel: interleaved::Kernel, out: &mut Vec<u8>) {
    let w = dtype.width();
    let n = data.len() / w;
    let tail = &data[n * w..];
    // Room for a payload as large as the data (weights take ~0.85 of it): never regrown.
    out.reserve(data.len() + 64);
    out.push(dtype.tag());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
    let body = &data[..n * w];
    match dtype {
        DType::F16 => encode_w::<2, 5>(body, kernel, out),
        DType::BF16 => encode_w::<2, 8>(body, kernel, out),
        DType::F32 => encode_w::<4, 8>(body, kernel, out),
        DType::F64 => encode_w::<8, 8>(body, kernel, out),
    }
}

/// Decodes a payload written by `encode` that must hold exactly `raw_len` bytes.
pub fn decode(payload: &[u8], raw_len: usize) -> Result<Vec<u8>> {
    decode_with(payload, raw_len, interleaved::Kernel::detect())
}

/// Decodes a payload, appending it to `out`; `seen` gets the output piece by piece, in order, as it is written
/// (while it is still in cache).
pub(super) fn decode_as(
    payload: &[u8],
    raw_len: usize,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    decode_into(payload, raw_len, interleaved::Kernel::detect(), out, seen)
}

fn decode_with(payload: &[u8], raw_len: usize, kernel: interleaved::Kernel) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    decode_into(payload, raw_len, kernel, &mut out, &mut |_| {})?;
    Ok(out)
}

fn decode_into(
    payload: &[u8],
    raw_len: usize,
    kernel: interleaved::Kernel,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
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
    out.reserve(raw_len);
    match dtype {
        DType::F16 => decode_w::<2, 5, u32>(body, n, kernel, out, seen)?,
        DType::BF16 => decode_w::<2, 8, u32>(body, n, kernel, out, seen)?,
        DType::F32 => decode_w::<4, 8, u32>(body, n, kernel, out, seen)?,
        DType::F64 => decode_w::<8, 8, u64>(body, n, kernel, out, seen)?,
    }
    out.extend_from_slice(tail);
    seen(tail);
    Ok(())
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
    fn the_output_is_seen_in_order_as_written() {
        // Every piece of the output once, in order, the tail included, for each layout.
        for (dtype, n, tail) in [
            (DType::F32, 9000, 3),
            (DType::BF16, 100, 1),
            (DType::F64, 5000, 0),
        ] {
            let mut data = to_bytes(dtype, &weights(n, 7));
            data.extend((0..tail).map(|i| i as u8 + 1));
            let packed = encode_with(&data, dtype, interleaved::Kernel::detect());
            let (mut out, mut seen) = (vec![9u8; 3], Vec::new());
            let mut pieces = 0;
            let see = &mut |piece: &[u8]| {
                seen.extend_from_slice(piece);
                pieces += 1;
            };
            decode_as(&packed, data.len(), &mut out, see).unwrap();
            // Appended to what the buffer held.
            assert_eq!(out[..3], [9; 3]);
            assert_eq!(out[3..], data);
            assert_eq!(seen, data);
            assert!(pieces > 1);
        }
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
        use crate::entropy::rans::Sym;
        let mut f = Fields {
            bits: 8 * W as u32,
            ebits: EB,
            signed: false,
        };
        let sv = survey::<W>(data, f);
        f.signed = sv.signed;
        let mut ctx = Contexts::from_base((sv.median as u32).saturating_sub(BELOW_MEDIAN) as u8);
        let sym = |packed: u32, bits: u32| Sym {
            start: packed & 0xffff,
            freq: packed >> 16,
            bits,
        };
        let n = data.len() / W;
        let lanes = lanes_for(n);
        let mut model = Model::new(f, false);
        model.seed(&Prior::from_survey(&sv, model.m_syms));
        let mut enc = rans::Encoder::new(2 * n, lanes);
        let (mut i, mut k) = (0usize, 0u32);
        let mut start = [rans::LOW; rans::WAYS];
        while i < n {
            let end = (i + batch_len(k)).min(n);
            let em: Vec<u16> = data[i * W..end * W]
                .chunks_exact(W)
                .map(|v| f.split(read::<W>(v)).0)
                .collect();
            if end == n {
                // The residuals of the last batch's last values other than +0.0.
                let rest: Vec<u64> = data[i * W..end * W]
                    .chunks_exact(W)
                    .map(read::<W>)
                    .filter(|&v| v != 0)
                    .map(|v| f.split(v).1)
                    .collect();
                let v = carry::count(lanes, f.rbits(), rest.len());
                start = carry::states(rest[rest.len() - v..].iter().copied(), f.rbits(), lanes);
            }
            let mut contexts = Vec::new();
            for group in em.chunks(lanes) {
                let c = ctx.next as usize;
                contexts.push(c as u8);
                for (l, &v) in group.iter().enumerate() {
                    let ee = model.e_sym(c, (v >> 4) as usize);
                    enc.put(
                        sym(if ee >> 16 != 0 { ee } else { model.escape(c) }, E_BITS),
                        l,
                    );
                }
                for (l, &v) in group.iter().enumerate() {
                    if model.e_sym(c, (v >> 4) as usize) >> 16 == 0 {
                        enc.put(sym((v >> 4) as u32 | 1 << 16, RAW_BITS), l);
                    }
                }
                for (l, &v) in group.iter().enumerate() {
                    if v != ZERO_EM {
                        let m = model.m_enc[(v >> 4) as usize][v as usize & 15];
                        enc.put(sym(m, M_BITS), l);
                    }
                }
                ctx.follow_group(group);
            }
            let span = model.count_batch(&em, &contexts, lanes, i);
            model.end_batch(span);
            i = end;
            k += 1;
        }
        let mut out = Vec::new();
        enc.finish_from(&start, &mut out);
        out
    }

    /// The rANS stream inside a payload (no tail).
    fn stream_of(payload: &[u8]) -> &[u8] {
        // Tag, count, tail length, ways, sign mode, context base; then the prior.
        let m_syms = if payload[7] == 1 { 16 } else { 8 };
        let at = 9 + Prior::read(&payload[9..], m_syms).unwrap().1;
        let len = u32::from_le_bytes(payload[at + 4..at + 8].try_into().unwrap()) as usize;
        &payload[at + 8..at + 8 + len]
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

    /// Weights in rows of 256 whose scales differ by powers of two (as output channels of a
    /// layer do), so that the exponent contexts change from group to group.
    fn scaled_rows(n: usize) -> Vec<f32> {
        let mut w = weights(n, 31);
        for (i, v) in w.iter_mut().enumerate() {
            *v *= (2f32).powi((i / 256 % 6) as i32 - 3);
        }
        w
    }

    /// Rows of 256 scaled by 2^-15 to 2^14: 33 to 64 exponents from the lowest to the
    /// highest (the decoder's second way to look up slot ranges).
    fn wide_rows(n: usize) -> Vec<f32> {
        let mut w = weights(n, 37);
        for (i, v) in w.iter_mut().enumerate() {
            *v *= (2f32).powi((i / 256 % 30) as i32 - 15);
        }
        w
    }

    /// Weights with every 13th value scaled down by up to `2^-(depth - 1)`: the block's
    /// exponents span more than 64 (or 128) as they come.
    fn outliers(n: usize, depth: usize) -> Vec<f32> {
        let mut w = weights(n, 41);
        for (i, v) in w.iter_mut().enumerate().step_by(13) {
            *v *= (2f32).powi(-((i / 13 % depth) as i32));
        }
        w
    }

    #[test]
    fn local_scale_is_modelled() {
        // The same values with the rows' scales in order and shuffled: only the exponent
        // contexts tell them apart (the order-0 statistics are identical).
        let rows = scaled_rows(200_000);
        let mut shuffled = rows.clone();
        let mut x = 5u64;
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, xorshift(&mut x) as usize % (i + 1));
        }
        let a = encode(&to_bytes(DType::BF16, &rows), DType::BF16).len();
        let b = encode(&to_bytes(DType::BF16, &shuffled), DType::BF16).len();
        // Statically the context is worth 0.46 of the exponent's 3.2 bits here (of about 11
        // bits per value); 0.03 * 11 = 0.33 bits of it must show.
        assert!(a * 100 < b * 97, "{a} vs {b}");
    }

    #[test]
    fn every_kernel_encodes_the_documented_stream() {
        // 32 and 64 ways.
        let f16s = to_bytes(DType::F16, &weights(30_007, 3));
        let f32s = with_escapes(70_001);
        let big = with_escapes(270_003);
        let signed = to_bytes(DType::F16, &skewed_signs(40_000));
        let rows = to_bytes(DType::F32, &scaled_rows(150_001));
        for kernel in interleaved::Kernel::supported() {
            let got = encode_with(&rows, DType::F32, kernel);
            assert!(
                stream_of(&got) == reference_stream::<4, 8>(&rows),
                "{kernel:?}"
            );
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
    fn sampled_blocks_count_every_other_group_past_the_threshold() {
        let f = Fields {
            bits: 32,
            ebits: 8,
            signed: true,
        };
        // Exponent 120 throughout; group g of 32 values has `M` = g mod 16.
        let em: Vec<u16> = (0..MAX_BATCH)
            .map(|i| ((120 << 4) | (i / 32 % 16)) as u16)
            .collect();
        let ctx = vec![0u8; MAX_BATCH / 32];
        for (at, half) in [
            (SAMPLE_FROM - MAX_BATCH, false),
            (SAMPLE_FROM, true),
            (3 * SAMPLE_FROM, true),
        ] {
            let mut model = Model::new(f, false);
            let span = model.count_batch(&em, &ctx, 32, at);
            model.end_batch(span);
            let want = if half { MAX_BATCH / 2 } else { MAX_BATCH };
            assert_eq!(model.e_total[0] as usize, want, "{at}");
            let odd_counted = (1..16).step_by(2).any(|m| model.m_counts[120][m] > 0);
            assert_eq!(odd_counted, !half, "{at}");
        }
    }

    #[test]
    fn sparse_blocks_round_trip() {
        // +0.0 in every batch (two values in five), -0.0 here and there; both sign layouts.
        let mut x = 77u64;
        for mut w in [weights(60_000, 5), skewed_signs(60_000)] {
            for v in w.iter_mut() {
                match xorshift(&mut x) % 20 {
                    0..8 => *v = 0.0,
                    8 => *v = -0.0,
                    _ => {}
                }
            }
            for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
                let data = to_bytes(dtype, &w);
                let packed = encode(&data, dtype);
                for kernel in interleaved::Kernel::supported() {
                    let back = decode_with(&packed, data.len(), kernel);
                    assert!(back.unwrap() == data, "{dtype:?} {kernel:?}");
                }
            }
        }
    }

    #[test]
    fn residuals_carried_by_the_start_states_round_trip() {
        // Blocks shorter than a group, at the lane-count threshold, ending with a batch of a
        // few values or of +0.0 only (nothing to carry).
        for n in [
            1,
            2,
            17,
            100,
            4_097,
            WIDE_FROM - 1,
            WIDE_FROM,
            WIDE_FROM + 3,
            20_480,
        ] {
            for zero_tail in [0, 5, 3_000] {
                let mut w = weights(n, n as u64);
                let len = w.len();
                w[len - zero_tail.min(len)..]
                    .iter_mut()
                    .for_each(|v| *v = 0.0);
                for dtype in [DType::BF16, DType::F32, DType::F64] {
                    let data = to_bytes(dtype, &w);
                    let packed = encode(&data, dtype);
                    for kernel in interleaved::Kernel::supported() {
                        let back = decode_with(&packed, data.len(), kernel);
                        assert!(
                            back.unwrap() == data,
                            "{n} {zero_tail} {dtype:?} {kernel:?}"
                        );
                    }
                }
            }
        }
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
        let rows = to_bytes(DType::F16, &scaled_rows(100_000));
        let rows32 = to_bytes(DType::F32, &scaled_rows(300_000));
        let wide = to_bytes(DType::F32, &wide_rows(200_000));
        // Exponent windows of 65 to 128, and of more than 128.
        let deep = to_bytes(DType::F32, &outliers(100_000, 90));
        let deeper = to_bytes(DType::F32, &outliers(100_000, 140));
        let cases = [
            (&deep, DType::F32),
            (&deeper, DType::F32),
            (&wide, DType::F32),
            (&rows, DType::F16),
            (&rows32, DType::F32),
            (&f16s, DType::F16),
            (&f32s, DType::F32),
            (&big, DType::F32),
            (&signed, DType::BF16),
        ];
        for (data, dtype) in cases {
            let packed = encode_with(data, dtype, interleaved::Kernel::detect());
            for kernel in interleaved::Kernel::supported() {
                let back = decode_with(&packed, data.len(), kernel).unwrap();
                assert!(back == *data, "{kernel:?}");
            }
        }
    }

    #[test]
    fn reused_tables_decode_like_fresh_ones() {
        // Blocks with and without the sign in `M`, of different scales, one after another
        // on one thread (reusing the last block's tables) and each on a fresh thread.
        let blocks = [
            to_bytes(DType::F32, &skewed_signs(30_000)),
            to_bytes(DType::F32, &scaled_rows(30_000)),
            to_bytes(DType::F32, &skewed_signs(20_000)),
            to_bytes(DType::F32, &weights(25_000, 13)),
        ];
        let packed: Vec<Vec<u8>> = blocks.iter().map(|b| encode(b, DType::F32)).collect();
        assert_ne!(packed[0][7], packed[1][7], "sign modes must differ");
        for _ in 0..2 {
            for (p, b) in packed.iter().zip(&blocks) {
                assert!(decode(p, b.len()).unwrap() == *b);
                let fresh = std::thread::scope(|s| s.spawn(|| decode(p, b.len())).join());
                assert!(fresh.unwrap().unwrap() == *b);
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
        // 32 and 64 ways; damage in the rANS stream reaches the vector kernels' bounds.
        let cases = [
            (DType::F16, 6000),
            (DType::F32, 6000),
            (DType::F64, 6000),
            (DType::F32, 70_000),
            (DType::BF16, 140_000),
        ];
        for (dtype, n) in cases {
            let data = to_bytes(dtype, &weights(n, 4));
            let packed = encode_with(&data, dtype, interleaved::Kernel::detect());
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
                let got = decode_with(&bad, data.len(), interleaved::Kernel::Scalar);
                if let Ok(d) = &got {
                    assert_eq!(d.len(), data.len());
                }
                for kernel in interleaved::Kernel::supported() {
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
    fn priors_read_back_and_bad_ones_are_errors() {
        let data = with_escapes(20_000);
        let f = Fields {
            bits: 32,
            ebits: 8,
            signed: false,
        };
        let sv = survey::<4>(&data, f);
        for m_syms in [8, 16] {
            let p = Prior::from_survey(&sv, m_syms);
            assert!(p.e.len() <= WINDOW && p.e.iter().any(|&q| q > 10), "{p:?}");
            let mut out = Vec::new();
            p.write(&mut out);
            assert_eq!(Prior::read(&out, m_syms).unwrap(), (p, out.len()));
            for cut in 0..out.len() {
                assert!(Prior::read(&out[..cut], m_syms).is_err());
            }
        }
        // Exponents past 255.
        assert!(Prior::read(
            &[
                200, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
            ],
            8
        )
        .is_err());
        // Levels are nearest on a log scale and never 0 for a count.
        assert_eq!(prior_level(1, 1 << 30), 1);
        assert_eq!(prior_level(0, 10), 0);
        assert_eq!(prior_level(10, 10), 15);
        assert_eq!(
            prior_level(10, 40 * 10),
            LEVELS.iter().position(|&l| l == 116).unwrap() as u8
        );
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
