//! Decoding of a batch's exponent and mantissa-top symbols into `E << 3 | M`: the scalar
//! reference for both stream orders and an AVX-512 kernel for groups of 32 lanes. Every path
//! reads the same words in the same order, so they agree bit for bit.

use super::planes::{Model, E_BITS, M_BITS};
use crate::coder::rans::{self, Words, WAYS};
use crate::engine::{level, KernelLevel};

/// Coder states, one per lane.
type States = [u32; WAYS];

/// Decodes an exponent from `x`; returns it and whether it is the escape.
#[inline(always)]
fn e_step(x: &mut u32, w: &mut Words, model: &Model) -> (u8, bool) {
    let slot = *x & ((1 << E_BITS) - 1);
    let d = model.e_dec[slot as usize];
    rans::step(x, E_BITS, (d >> 8 & 0xfff) + 1, d >> 20, w);
    (d as u8, slot >= model.escape_start)
}

/// Decodes an escaped exponent's 8 raw bits.
#[inline(always)]
fn raw_step(x: &mut u32, w: &mut Words) -> u8 {
    let e = *x as u8;
    rans::step(x, 8, 1, 0, w);
    e
}

/// Decodes the mantissa top of a value with exponent `e`; returns `e << 3 | m`.
#[inline(always)]
fn m_step(x: &mut u32, w: &mut Words, model: &Model, e: u8) -> u16 {
    let md = model.m_dec[(e as usize) << M_BITS | (*x & ((1 << M_BITS) - 1)) as usize];
    rans::step(x, M_BITS, md >> 3 & 0x1ff, md >> 12, w);
    (e as u16) << 3 | (md & 7) as u16
}

/// Format version 2 order: value j's exponent on state 2 (j & 1), its mantissa top on the next.
pub(super) fn pairs(x: &mut States, w: &mut Words, model: &Model, em: &mut [u16]) {
    for (j, v) in em.iter_mut().enumerate() {
        let s = 2 * (j & 1);
        let (mut e, esc) = e_step(&mut x[s], w, model);
        if esc {
            e = raw_step(&mut x[s], w);
        }
        *v = m_step(&mut x[s + 1], w, model, e);
    }
}

/// One group of up to 32 values, value l on state l: exponents, escapes, mantissa tops.
fn group_scalar(x: &mut States, w: &mut Words, model: &Model, em: &mut [u16]) {
    let mut es = [0u8; WAYS];
    let mut escaped = [false; WAYS];
    for l in 0..em.len() {
        (es[l], escaped[l]) = e_step(&mut x[l], w, model);
    }
    for l in 0..em.len() {
        if escaped[l] {
            es[l] = raw_step(&mut x[l], w);
        }
    }
    for (l, v) in em.iter_mut().enumerate() {
        *v = m_step(&mut x[l], w, model, es[l]);
    }
}

/// Which implementation decodes groups of lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// The scalar reference.
    Scalar,
    /// AVX-512F: a group in two registers.
    Avx512,
}

impl Kernel {
    /// The fastest kernel the process's kernel level allows.
    pub(super) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if level() == KernelLevel::Avx512 {
            return Kernel::Avx512;
        }
        let _ = level;
        Kernel::Scalar
    }

    /// Format version 3 order: the batch in groups of 32 lanes.
    pub(super) fn lanes(self, x: &mut States, w: &mut Words, model: &Model, em: &mut [u16]) {
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if self == Kernel::Avx512 {
            // SAFETY: AVX-512F support was checked when the level was chosen.
            done = unsafe { groups_avx512(x, w, model, em) };
        }
        for group in em[done..].chunks_mut(WAYS) {
            group_scalar(x, w, model, group);
        }
    }
}

/// Decodes whole groups while the stream has room for a group's worst case (3 words per
/// lane) past the current position; returns the number of values decoded. Lanes 0-15 and
/// 16-31 live in two registers whose dependency chains overlap.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn groups_avx512(x: &mut States, w: &mut Words, model: &Model, em: &mut [u16]) -> usize {
    use std::arch::x86_64::*;
    const GROUP_BYTES: usize = 3 * 2 * WAYS;
    let data = w.words;
    let mut pos = w.pos;
    let mut xa = _mm512_loadu_si512(x.as_ptr().cast());
    let mut xb = _mm512_loadu_si512(x.as_ptr().add(16).cast());
    let low = _mm512_set1_epi32(1 << 16);
    let m12 = _mm512_set1_epi32(0xfff);
    let m9 = _mm512_set1_epi32(0x1ff);
    let m8 = _mm512_set1_epi32(0xff);
    let m3 = _mm512_set1_epi32(7);
    let one = _mm512_set1_epi32(1);
    let esc_start = _mm512_set1_epi32(model.escape_start as i32);
    let e_dec = model.e_dec.as_ptr() as *const i32;
    let m_dec = model.m_dec.as_ptr() as *const i32;
    // Lanes in `active` whose state fell below LOW take the next words, in lane order.
    macro_rules! renorm {
        ($xs:ident, $active:expr) => {{
            let need = _mm512_mask_cmplt_epu32_mask($active, $xs, low);
            // In bounds: a group starts only with GROUP_BYTES left, at most 32 bytes a step.
            let next = _mm256_loadu_si256(data.as_ptr().add(pos).cast());
            let fill = _mm512_maskz_expand_epi32(need, _mm512_cvtepu16_epi32(next));
            $xs = _mm512_mask_or_epi32($xs, need, _mm512_slli_epi32::<16>($xs), fill);
            pos += 2 * need.count_ones() as usize;
        }};
    }
    // Exponent step: returns the decoded symbols and the escaped lanes.
    macro_rules! e_step {
        ($xs:ident) => {{
            let slot = _mm512_and_si512($xs, m12);
            let d = _mm512_i32gather_epi32::<4>(slot, e_dec);
            let esc = _mm512_cmpge_epu32_mask(slot, esc_start);
            let freq = _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32::<8>(d), m12), one);
            $xs = _mm512_add_epi32(
                _mm512_mullo_epi32(freq, _mm512_srli_epi32::<E_BITS>($xs)),
                _mm512_srli_epi32::<20>(d),
            );
            (_mm512_and_si512(d, m8), esc)
        }};
    }
    // Escaped lanes take their exponent from the next 8 bits.
    macro_rules! raw_step {
        ($xs:ident, $e:ident, $esc:expr) => {{
            $e = _mm512_mask_and_epi32($e, $esc, $xs, m8);
            $xs = _mm512_mask_srli_epi32::<8>($xs, $esc, $xs);
        }};
    }
    // Mantissa-top step: returns `e << 3 | m`.
    macro_rules! m_step {
        ($xs:ident, $e:expr) => {{
            let idx = _mm512_or_si512(_mm512_slli_epi32::<M_BITS>($e), _mm512_and_si512($xs, m8));
            let md = _mm512_i32gather_epi32::<4>(idx, m_dec);
            let freq = _mm512_and_si512(_mm512_srli_epi32::<3>(md), m9);
            $xs = _mm512_add_epi32(
                _mm512_mullo_epi32(freq, _mm512_srli_epi32::<M_BITS>($xs)),
                _mm512_srli_epi32::<12>(md),
            );
            _mm512_or_si512(_mm512_slli_epi32::<3>($e), _mm512_and_si512(md, m3))
        }};
    }
    let mut done = 0;
    while done + WAYS <= em.len() && pos + GROUP_BYTES <= data.len() {
        let (mut ea, esc_a) = e_step!(xa);
        let (mut eb, esc_b) = e_step!(xb);
        renorm!(xa, 0xffff);
        renorm!(xb, 0xffff);
        if esc_a | esc_b != 0 {
            raw_step!(xa, ea, esc_a);
            raw_step!(xb, eb, esc_b);
            renorm!(xa, esc_a);
            renorm!(xb, esc_b);
        }
        let va = m_step!(xa, ea);
        let vb = m_step!(xb, eb);
        renorm!(xa, 0xffff);
        renorm!(xb, 0xffff);
        let out = em.as_mut_ptr().add(done);
        _mm256_storeu_si256(out.cast(), _mm512_cvtepi32_epi16(va));
        _mm256_storeu_si256(out.add(16).cast(), _mm512_cvtepi32_epi16(vb));
        done += WAYS;
    }
    _mm512_storeu_si512(x.as_mut_ptr().cast(), xa);
    _mm512_storeu_si512(x.as_mut_ptr().add(16).cast(), xb);
    w.pos = pos;
    done
}
