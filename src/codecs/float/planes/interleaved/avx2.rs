//! AVX2 kernels: a group of 16, 32 or 64 lanes in 2, 4 or 8 registers of 8 lanes, reading and
//! writing exactly the words of the scalar reference in `super`.

use super::super::symbols::{States, Symbols};
use super::super::symbols::{ESCAPE_SYM, E_BITS, E_STRIDE, M_BITS, RAW_BITS, ZERO, ZERO_EM};
use super::super::tables::{Contexts, Tables};
use crate::entropy::rans::avx2::refill;
use crate::entropy::rans::{Words, WAYS};
use std::arch::x86_64::*;

/// Permutations for compress-storing the lanes of a mask.
const COMPRESS: [[u32; 8]; 256] = crate::entropy::rans::avx2::lane_permutations(false);

crate::simd::avx2! {
/// `groups_avx512` with AVX2: groups of `8 R` ways in `R` registers of 8 ways.
pub(super) fn groups<const R: usize>(
    x: &mut States,
    w: &mut Words,
    tables: &Tables,
    em: &mut [u16],
    ctx: &mut Contexts,
    groups: &mut [u8],
) -> usize {
    let ways = 8 * R;
    let group_bytes = 3 * 2 * ways;
    let data = w.words;
    let mut pos = w.pos;
    // SAFETY: 8 R <= 64 states, so `x[8 r..]` holds the 8 each load reads.
    let mut xs: [__m256i; R] =
        std::array::from_fn(|r| unsafe { _mm256_loadu_si256(x[8 * r..].as_ptr().cast()) });
    let zero = _mm256_setzero_si256();
    let all = _mm256_set1_epi32(-1);
    let m12 = _mm256_set1_epi32(0xfff);
    let m9 = _mm256_set1_epi32(0x1ff);
    let m8 = _mm256_set1_epi32(0xff);
    let m4 = _mm256_set1_epi32(15);
    let low16 = _mm256_set1_epi32(0xffff);
    let zero_sym = _mm256_set1_epi32(ZERO as i32);
    let escape_sym = _mm256_set1_epi32(ESCAPE_SYM as i32);
    let zero_em = _mm256_set1_epi32(ZERO_EM as i32);
    let m_dec = tables.m_dec.as_ptr() as *const i32;
    // Lanes in `active` whose state fell below LOW take the next words, in lane order.
    macro_rules! renorm {
        ($xs:expr, $active:expr) => {{
            let need = _mm256_and_si256(
                $active,
                _mm256_cmpeq_epi32(_mm256_srli_epi32::<16>($xs), zero),
            );
            // SAFETY: a group starts only with `group_bytes` left past `pos`, and a group's
            // steps take at most 16 bytes each, which the refill reads.
            $xs = unsafe { refill($xs, need, data, &mut pos) };
        }};
    }
    let mut done = 0;
    while done + ways <= em.len() && pos + group_bytes <= data.len() {
        let c = ctx.next as usize;
        groups[done / ways] = c as u8;
        let esc_start = _mm256_set1_epi32(tables.escape_start[c] as i32);
        let zero_start = _mm256_set1_epi32(tables.zero_start[c] as i32);
        let e_dec = tables.e_dec[c * E_STRIDE..].as_ptr() as *const i32;
        let e_enc = tables.e_enc[c].as_ptr() as *const i32;
        // `E` symbols: exponents, which ways escaped, which are +0.0 (way masks).
        let mut e = [zero; R];
        let mut esc = [zero; R];
        let mut zeros = [zero; R];
        for r in 0..R {
            let slot = _mm256_and_si256(xs[r], m12);
            // The exponent byte of each slot.
            // SAFETY: slots are 12-bit, and the context's `E_STRIDE` bytes leave room for a
            // 4-byte read at the last.
            e[r] = _mm256_and_si256(unsafe { _mm256_i32gather_epi32::<1>(e_dec, slot) }, m8);
            // slot >= escape start (both below 2^13), and >= zero start short of that.
            esc[r] = _mm256_andnot_si256(_mm256_cmpgt_epi32(esc_start, slot), all);
            let past_zero = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero_start, slot), all);
            zeros[r] = _mm256_andnot_si256(esc[r], past_zero);
            let sym = _mm256_blendv_epi8(e[r], zero_sym, zeros[r]);
            let sym = _mm256_blendv_epi8(sym, escape_sym, esc[r]);
            // SAFETY: exponents, `ZERO` and `ESCAPE_SYM` are under the row's `E_SYMS` entries.
            let d = unsafe { _mm256_i32gather_epi32::<4>(e_enc, sym) };
            xs[r] = _mm256_add_epi32(
                _mm256_mullo_epi32(
                    _mm256_srli_epi32::<16>(d),
                    _mm256_srli_epi32::<{ E_BITS as i32 }>(xs[r]),
                ),
                _mm256_sub_epi32(slot, _mm256_and_si256(d, low16)),
            );
        }
        for x in xs.iter_mut() {
            renorm!(*x, all);
        }
        // Escaped ways take their symbol from the next 9 bits (256 and up: +0.0).
        if esc.iter().any(|&m| _mm256_testz_si256(m, m) == 0) {
            for r in 0..R {
                let raw = _mm256_and_si256(xs[r], m9);
                let big = _mm256_cmpgt_epi32(raw, m8);
                zeros[r] = _mm256_or_si256(zeros[r], _mm256_and_si256(esc[r], big));
                e[r] = _mm256_blendv_epi8(e[r], _mm256_and_si256(raw, m8), esc[r]);
                let shifted = _mm256_srli_epi32::<{ RAW_BITS as i32 }>(xs[r]);
                xs[r] = _mm256_blendv_epi8(xs[r], shifted, esc[r]);
            }
            for r in 0..R {
                renorm!(xs[r], esc[r]);
            }
        }
        let (mut sum, mut count) = (zero, 0);
        for r in 0..R {
            sum = _mm256_add_epi32(sum, _mm256_andnot_si256(zeros[r], e[r]));
            count += 8 - _mm256_movemask_ps(_mm256_castsi256_ps(zeros[r])).count_ones();
        }
        let half = _mm_add_epi32(
            _mm256_castsi256_si128(sum),
            _mm256_extracti128_si256::<1>(sum),
        );
        let half = _mm_add_epi32(half, _mm_shuffle_epi32::<0b01_00_11_10>(half));
        let half = _mm_add_epi32(half, _mm_shuffle_epi32::<0b10_11_00_01>(half));
        ctx.follow(_mm_cvtsi128_si32(half) as u32, count);
        // `M` symbols, from the table of each way's exponent; none for +0.0.
        let out = em[done..done + ways].as_mut_ptr();
        for r in 0..R {
            let idx = _mm256_or_si256(
                _mm256_slli_epi32::<{ M_BITS as i32 }>(e[r]),
                _mm256_and_si256(xs[r], m8),
            );
            // SAFETY: `E << 8 | slot` indexes the 256 rows of 256 entries of `m_dec`.
            let md = unsafe { _mm256_i32gather_epi32::<4>(m_dec, idx) };
            let freq = _mm256_and_si256(_mm256_srli_epi32::<4>(md), m9);
            let next = _mm256_add_epi32(
                _mm256_mullo_epi32(freq, _mm256_srli_epi32::<{ M_BITS as i32 }>(xs[r])),
                _mm256_srli_epi32::<13>(md),
            );
            xs[r] = _mm256_blendv_epi8(next, xs[r], zeros[r]);
            let v = _mm256_or_si256(_mm256_slli_epi32::<4>(e[r]), _mm256_and_si256(md, m4));
            let v = _mm256_blendv_epi8(v, zero_em, zeros[r]);
            // Values are below 2^13: pack to 16 bits, both halves' results side by side.
            let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(v, v));
            // SAFETY: `out` points at the group's `8 R` values, of which these are 8.
            unsafe { _mm_storeu_si128(out.add(8 * r).cast(), _mm256_castsi256_si128(packed)) };
        }
        for r in 0..R {
            renorm!(xs[r], _mm256_andnot_si256(zeros[r], all));
        }
        done += ways;
    }
    for (r, xs) in xs.iter().enumerate() {
        // SAFETY: as for the loads at the start.
        unsafe { _mm256_storeu_si256(x[8 * r..].as_mut_ptr().cast(), *xs) };
    }
    w.pos = pos;
    done
}
}

crate::simd::avx2! {
/// Exact 32-bit quotients `y / f` (f >= 1) through f64, as `super::encode_group_scalar` needs.
#[inline]
fn quotient(y: __m256i, f: __m256i) -> __m256i {
    // u32 -> f64 exactly: the value in the low mantissa bits of 2^52, minus 2^52.
    let magic = _mm256_set1_epi64x(0x4330_0000_0000_0000);
    let two52 = _mm256_castsi256_pd(magic);
    let widen = |v: __m128i| {
        _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_cvtepu32_epi64(v), magic)),
            two52,
        )
    };
    let half = |y: __m128i, f: __m128i| {
        let q = _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(_mm256_div_pd(
            widen(y),
            widen(f),
        ));
        // Back: q + 2^52 holds q in its low 32 bits.
        _mm256_castpd_si256(_mm256_add_pd(q, two52))
    };
    let lo = half(_mm256_castsi256_si128(y), _mm256_castsi256_si128(f));
    let hi = half(
        _mm256_extracti128_si256::<1>(y),
        _mm256_extracti128_si256::<1>(f),
    );
    // The low 32 bits of each 64-bit way, lo's four then hi's four.
    let pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    let lo = _mm256_permutevar8x32_epi32(lo, pick);
    let hi = _mm256_permutevar8x32_epi32(hi, pick);
    _mm256_permute2x128_si256::<0x20>(lo, hi)
}
}

crate::simd::avx2! {
/// `super::encode_group_scalar` for a whole group of `8 R` ways in `R` registers of 8.
pub(super) fn encode_group<const R: usize>(
    x: &mut States,
    s: &Symbols,
    g0: u32,
    escapes: &[(u32, u16)],
    words: &mut [u16],
    n: &mut usize,
) {
    let g0 = g0 as usize;
    // SAFETY: 8 R <= 64 states, so `x[8 r..]` holds the 8 each load reads.
    let mut xs: [__m256i; R] =
        std::array::from_fn(|r| unsafe { _mm256_loadu_si256(x[8 * r..].as_ptr().cast()) });
    let reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    let low16 = _mm256_set1_epi32(0xffff);
    let zero = _mm256_setzero_si256();
    let all = _mm256_set1_epi32(-1);
    let one = _mm256_set1_epi32(1);
    let out = words.as_mut_ptr();
    // The low words of the ways in `spill` (a way mask), last way first.
    macro_rules! emit {
        ($xs:expr, $spill:expr) => {{
            let mask = _mm256_movemask_ps(_mm256_castsi256_ps($spill)) as u8;
            let rev = _mm256_permutevar8x32_epi32(_mm256_and_si256($xs, low16), reverse);
            let order = &COMPRESS[mask.reverse_bits() as usize];
            // SAFETY: a row of `COMPRESS` holds the 8 entries the load reads.
            let order = unsafe { _mm256_loadu_si256(order.as_ptr().cast()) };
            let packed = _mm256_permutevar8x32_epi32(rev, order);
            let words16 = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(packed, packed));
            // SAFETY: `words` keeps 2 WAYS entries spare past any symbol's word, more than
            // the 8 this store writes.
            unsafe { _mm_storeu_si128(out.add(*n).cast(), _mm256_castsi256_si128(words16)) };
            *n += mask.count_ones() as usize;
        }};
    }
    // One symbol per way from `syms` (`start | freq << 16` per way; 0: no symbol),
    // precision `$bits`; registers last to first.
    macro_rules! phase {
        ($syms:expr, $bits:expr, $top:expr) => {{
            for r in (0..R).rev() {
                let at = &$syms[g0 + 8 * r..g0 + 8 * r + 8];
                // SAFETY: `at` holds the 8 symbols the load reads.
                let sym = unsafe { _mm256_loadu_si256(at.as_ptr().cast()) };
                let freq = _mm256_srli_epi32::<16>(sym);
                let active = _mm256_andnot_si256(_mm256_cmpeq_epi32(freq, zero), all);
                // Both sides below 2^13: a signed comparison is exact.
                let top = _mm256_srli_epi32::<$top>(xs[r]);
                let spill = _mm256_andnot_si256(_mm256_cmpgt_epi32(freq, top), active);
                emit!(xs[r], spill);
                let y = _mm256_blendv_epi8(xs[r], _mm256_srli_epi32::<16>(xs[r]), spill);
                // Lanes without a symbol divide by 1 and are not kept.
                let q = quotient(y, _mm256_max_epu32(freq, one));
                let rest = _mm256_sub_epi32(y, _mm256_mullo_epi32(q, freq));
                let next = _mm256_add_epi32(
                    _mm256_add_epi32(_mm256_slli_epi32::<$bits>(q), rest),
                    _mm256_and_si256(sym, low16),
                );
                xs[r] = _mm256_blendv_epi8(xs[r], next, active);
            }
        }};
    }
    phase!(s.m, { M_BITS as i32 }, { 32 - M_BITS as i32 });
    if !escapes.is_empty() {
        // Escaped ways take their `E` symbol as raw bits.
        let mut esc = [0i32; WAYS];
        let mut es = [0u32; WAYS];
        for &(at, e) in escapes {
            let l = at as usize - g0;
            esc[l] = -1;
            es[l] = e as u32;
        }
        for r in (0..R).rev() {
            // SAFETY: `esc` and `es` hold 64 entries, 8 past `8 r`.
            let (m, e) = unsafe {
                (
                    _mm256_loadu_si256(esc[8 * r..].as_ptr().cast()),
                    _mm256_loadu_si256(es[8 * r..].as_ptr().cast()),
                )
            };
            let top = _mm256_srli_epi32::<{ 32 - RAW_BITS as i32 }>(xs[r]);
            let spill = _mm256_andnot_si256(_mm256_cmpeq_epi32(top, zero), m);
            emit!(xs[r], spill);
            let y = _mm256_blendv_epi8(xs[r], _mm256_srli_epi32::<16>(xs[r]), spill);
            let coded = _mm256_add_epi32(_mm256_slli_epi32::<{ RAW_BITS as i32 }>(y), e);
            xs[r] = _mm256_blendv_epi8(xs[r], coded, m);
        }
    }
    phase!(s.e, { E_BITS as i32 }, { 32 - E_BITS as i32 });
    for (r, xs) in xs.iter().enumerate() {
        // SAFETY: as for the loads at the start.
        unsafe { _mm256_storeu_si256(x[8 * r..].as_mut_ptr().cast(), *xs) };
    }
}
}
