//! The planes codec's rANS stream in groups of ways: decoding a batch's exponent and
//! mantissa-top symbols into `E << 3 | M`, and encoding a block's symbols. The scalar code here
//! is the reference; `avx512` and `avx2` hold vector kernels that read
//! and write the same words in the same order, so every path agrees bit for bit.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use super::symbols::{
    set_len, States, Symbols, ESCAPE_SYM, E_BITS, E_STRIDE, M_BITS, RAW_BITS, ZERO, ZERO_EM,
};
use super::tables::{Contexts, Tables};
use crate::entropy::rans::{self, Words, WAYS};
use crate::simd::Kernels;

/// Decodes an `E` symbol from `x` with the table of context `c`: returns the exponent
/// (`ZERO` for +0.0) and whether it is the escape.
#[inline(always)]
fn e_step(x: &mut u32, w: &mut Words, tables: &Tables, c: usize) -> (u16, bool) {
    let slot = *x & ((1 << E_BITS) - 1);
    let e = tables.e_dec[c * E_STRIDE + slot as usize];
    let escaped = slot >= tables.escape_start[c];
    let zero = !escaped && slot >= tables.zero_start[c];
    let sym = match (escaped, zero) {
        (true, _) => ESCAPE_SYM,
        (_, true) => ZERO,
        _ => e as usize,
    };
    let d = tables.e_enc[c][sym];
    rans::step(x, E_BITS, d >> 16, slot - (d & 0xffff), w);
    (if zero { ZERO as u16 } else { e as u16 }, escaped)
}

/// Decodes an escaped `E` symbol's raw bits (256 and up: `ZERO`).
#[inline(always)]
fn raw_step(x: &mut u32, w: &mut Words) -> u16 {
    let e = *x & ((1 << RAW_BITS) - 1);
    rans::step(x, RAW_BITS, 1, 0, w);
    e.min(ZERO as u32) as u16
}

/// Decodes `M` for a value with exponent `e`; returns `E << 4 | M` (`ZERO_EM` without a step
/// for +0.0).
#[inline(always)]
fn m_step(x: &mut u32, w: &mut Words, tables: &Tables, e: u16) -> u16 {
    if e as usize >= ZERO {
        return ZERO_EM;
    }
    let md = tables.m_dec[(e as usize) << M_BITS | (*x & ((1 << M_BITS) - 1)) as usize];
    rans::step(x, M_BITS, md >> 4 & 0x1ff, md >> 13, w);
    e << 4 | (md & 15) as u16
}

/// One group of up to 64 values, value l on state l: `E` symbols (context `c`), escapes,
/// `M` symbols.
fn group_scalar(x: &mut States, w: &mut Words, tables: &Tables, em: &mut [u16], c: usize) {
    let mut es = [0u16; WAYS];
    let mut escaped = [false; WAYS];
    for l in 0..em.len() {
        (es[l], escaped[l]) = e_step(&mut x[l], w, tables, c);
    }
    for l in 0..em.len() {
        if escaped[l] {
            es[l] = raw_step(&mut x[l], w);
        }
    }
    for (l, v) in em.iter_mut().enumerate() {
        *v = m_step(&mut x[l], w, tables, es[l]);
    }
}

// The vector kernels, as methods of the SIMD level that runs them.
impl Kernels {
    /// Decodes a batch in groups of `ways` (16, 32 or 64) values, each with the exponent
    /// context `ctx` picks for it, which is recorded in `groups` (one per group).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decode_batch(
        self,
        x: &mut States,
        w: &mut Words,
        tables: &Tables,
        em: &mut [u16],
        ways: usize,
        ctx: &mut Contexts,
        groups: &mut [u8],
    ) {
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if self == Kernels::Avx512 {
            // SAFETY: AVX-512F support was checked when the level was chosen.
            done = unsafe {
                match ways {
                    16 => avx512::groups::<1>(x, w, tables, em, ctx, groups),
                    32 => avx512::groups::<2>(x, w, tables, em, ctx, groups),
                    64 => avx512::groups::<4>(x, w, tables, em, ctx, groups),
                    _ => 0,
                }
            };
        } else if self == Kernels::Avx2 {
            // SAFETY: AVX2 support was checked when the level was chosen.
            done = unsafe {
                match ways {
                    16 => avx2::groups::<2>(x, w, tables, em, ctx, groups),
                    32 => avx2::groups::<4>(x, w, tables, em, ctx, groups),
                    64 => avx2::groups::<8>(x, w, tables, em, ctx, groups),
                    _ => 0,
                }
            };
        }
        let first = done / ways;
        for (group, c) in em[done..].chunks_mut(ways).zip(&mut groups[first..]) {
            *c = ctx.next as u8;
            group_scalar(x, w, tables, group, ctx.next as usize);
            ctx.follow_group(group);
        }
    }
}

/// Encodes one symbol (`start`, `freq`, precision `BITS`) on state `x`, spilling a word first
/// if needed.
#[inline(always)]
fn put<const BITS: u32>(x: &mut u32, start: u32, freq: u32, words: &mut [u16], n: &mut usize) {
    if *x >> (32 - BITS) >= freq {
        words[*n] = *x as u16;
        *n += 1;
        *x >>= 16;
    }
    *x = ((*x / freq) << BITS) + *x % freq + start;
}

/// Encodes one group in reverse (`M` symbols, escapes, `E` symbols; last way first).
fn encode_group_scalar(
    x: &mut States,
    s: &Symbols,
    (g0, len): (u32, u32),
    escapes: &[(u32, u16)],
    words: &mut [u16],
    n: &mut usize,
) {
    let g0 = g0 as usize;
    for l in (0..len as usize).rev() {
        let m = s.m[g0 + l];
        if m != 0 {
            put::<M_BITS>(&mut x[l], m & 0xffff, m >> 16, words, n);
        }
    }
    for &(at, e) in escapes.iter().rev() {
        put::<RAW_BITS>(&mut x[at as usize - g0], e as u32, 1, words, n);
    }
    for l in (0..len as usize).rev() {
        let e = s.e[g0 + l];
        put::<E_BITS>(&mut x[l], e & 0xffff, e >> 16, words, n);
    }
}

impl Kernels {
    /// Writes the rANS stream of `syms`, the states starting at `start`, to `out` (the layout
    /// of `rans::write_stream`; tests check it is what the generic `rans::Encoder` writes for
    /// the same symbols).
    pub(super) fn encode(self, syms: &mut Symbols, start: &States, out: &mut Vec<u8>) {
        let mut x: States = *start;
        // At most one word per symbol, and room for a vector store past the last one.
        let mut words = std::mem::take(&mut syms.words);
        set_len(
            &mut words,
            syms.e.len() + syms.m.len() + syms.escapes.len() + 2 * WAYS,
        );
        let s = &*syms;
        let mut n = 0;
        let mut esc_end = s.escapes.len();
        for &(g0, len) in s.groups.iter().rev() {
            let mut esc_start = esc_end;
            while esc_start > 0 && s.escapes[esc_start - 1].0 >= g0 {
                esc_start -= 1;
            }
            let escapes = &s.escapes[esc_start..esc_end];
            esc_end = esc_start;
            #[cfg(target_arch = "x86_64")]
            if self == Kernels::Avx512 && len as usize == s.ways {
                let (x, words, n) = (&mut x, &mut words, &mut n);
                // SAFETY: AVX-512F support was checked when the level was chosen; `words`
                // keeps 2 * WAYS spare entries past any symbol's word.
                let done = unsafe {
                    match s.ways {
                        16 => avx512::encode_group::<1>(x, s, g0, escapes, words, n),
                        32 => avx512::encode_group::<2>(x, s, g0, escapes, words, n),
                        64 => avx512::encode_group::<4>(x, s, g0, escapes, words, n),
                        _ => false,
                    }
                };
                if done {
                    continue;
                }
            }
            #[cfg(target_arch = "x86_64")]
            if self == Kernels::Avx2 && len as usize == s.ways {
                let (x, words, n) = (&mut x, &mut words, &mut n);
                // SAFETY: AVX2 support was checked when the level was chosen; `words` keeps
                // 2 * WAYS spare entries past any symbol's word.
                unsafe {
                    match s.ways {
                        16 => avx2::encode_group::<2>(x, s, g0, escapes, words, n),
                        32 => avx2::encode_group::<4>(x, s, g0, escapes, words, n),
                        _ => avx2::encode_group::<8>(x, s, g0, escapes, words, n),
                    }
                };
                continue;
            }
            encode_group_scalar(&mut x, s, (g0, len), escapes, &mut words, &mut n);
        }
        rans::write_stream(&words[..n], &x[..s.ways], out);
        syms.words = words;
    }
}
