//! AVX-512F kernels: a group of 16, 32 or 64 ways in 1, 2 or 4 registers, reading and
//! writing exactly the words of the scalar reference in `super`.

use super::super::symbols::{States, Symbols};
use super::super::symbols::{ESCAPE_SYM, E_BITS, E_STRIDE, M_BITS, RAW_BITS, ZERO, ZERO_EM};
use super::super::tables::{Contexts, Tables};
use crate::entropy::rans::{Words, WAYS};
use std::arch::x86_64::*;

crate::simd::avx512! {
/// Decodes whole groups of `16 R` ways (register r holds ways 16 r to 16 r + 15, so `R`
/// dependency chains overlap) while the stream has room for a group's worst case (3 words
/// per way) past the current position; returns the number of values decoded. Each group's
/// exponent context comes from `ctx` and is recorded in `groups`.
pub(super) fn groups<const R: usize>(
    x: &mut States,
    w: &mut Words,
    tables: &Tables,
    em: &mut [u16],
    ctx: &mut Contexts,
    groups: &mut [u8],
) -> usize {
    let ways = 16 * R;
    let group_bytes = 3 * 2 * ways;
    let data = w.words;
    let mut pos = w.pos;
    // SAFETY: 16 R <= 64 states, so `x[16 r..]` holds the 16 each load reads.
    let mut xs: [__m512i; R] =
        std::array::from_fn(|r| unsafe { _mm512_loadu_si512(x[16 * r..].as_ptr().cast()) });
    let low = _mm512_set1_epi32(1 << 16);
    let m12 = _mm512_set1_epi32(0xfff);
    let low16 = _mm512_set1_epi32(0xffff);
    let thirty_two = _mm512_set1_epi32(32);
    let sixty_four = _mm512_set1_epi32(64);
    let one_twenty_eight = _mm512_set1_epi32(128);
    let m9 = _mm512_set1_epi32(0x1ff);
    let m8 = _mm512_set1_epi32(0xff);
    let m4 = _mm512_set1_epi32(15);
    let zero_sym = _mm512_set1_epi32(ZERO as i32);
    let zero_em = _mm512_set1_epi32(ZERO_EM as i32);
    let m_dec = tables.m_dec.as_ptr() as *const i32;
    // Lanes in `active` whose state fell below LOW take the next words, in lane order.
    macro_rules! renorm {
        ($xs:expr, $active:expr) => {{
            let need = _mm512_mask_cmplt_epu32_mask($active, $xs, low);
            // SAFETY: a group starts only with `group_bytes` left past `pos`, and a group's
            // steps take at most 32 bytes each, which this load reads.
            let next = unsafe { _mm256_loadu_si256(data.as_ptr().add(pos).cast()) };
            let fill = _mm512_maskz_expand_epi32(need, _mm512_cvtepu16_epi32(next));
            $xs = _mm512_mask_or_epi32($xs, need, _mm512_slli_epi32::<16>($xs), fill);
            pos += 2 * need.count_ones() as usize;
        }};
    }
    let mut done = 0;
    while done + ways <= em.len() && pos + group_bytes <= data.len() {
        let c = ctx.next as usize;
        groups[done / ways] = c as u8;
        let zero_start = _mm512_set1_epi32(tables.zero_start[c] as i32);
        let esc_start = _mm512_set1_epi32(tables.escape_start[c] as i32);
        let e_dec = tables.e_dec[c * E_STRIDE..].as_ptr() as *const i32;
        let row = &tables.e_enc[c];
        let e_enc = row.as_ptr() as *const i32;
        // The slot ranges of the (at most) 128 highest exponents are looked up in registers
        // (a gather costs far more than a few permutations); with more, the ways that hold
        // one below them (rare in weights: under 2^-127 of the largest) gather theirs. Only
        // the registers the window reaches are loaded: it ends at the row's 256th entry at
        // most.
        let (lowest, all) = tables.e_window();
        let (lowest, span) = (lowest + all.saturating_sub(128), all.min(128));
        let window: [__m512i; 8] = std::array::from_fn(|t| match 16 * t < span {
            // SAFETY: the window ends at entry 256 at most, and a row has `E_SYMS` = 320.
            true => unsafe { _mm512_loadu_si512(row[lowest + 16 * t..].as_ptr().cast()) },
            false => _mm512_setzero_si512(),
        });
        let lowest = _mm512_set1_epi32(lowest as i32);
        let zero_entry = _mm512_set1_epi32(row[ZERO] as i32);
        let escape_entry = _mm512_set1_epi32(row[ESCAPE_SYM] as i32);
        // `E` symbols: exponents, which ways escaped, which are +0.0.
        let mut e = [_mm512_setzero_si512(); R];
        let mut esc = [0u16; R];
        let mut zero = [0u16; R];
        for r in 0..R {
            let slot = _mm512_and_si512(xs[r], m12);
            // The exponent byte of each slot.
            // SAFETY: slots are 12-bit, and the context's `E_STRIDE` bytes leave room for a
            // 4-byte read at the last.
            e[r] = _mm512_and_si512(unsafe { _mm512_i32gather_epi32::<1>(slot, e_dec) }, m8);
            esc[r] = _mm512_cmpge_epu32_mask(slot, esc_start);
            zero[r] = _mm512_cmpge_epu32_mask(slot, zero_start) & !esc[r];
            let at = _mm512_sub_epi32(e[r], lowest);
            // The entries of 64 exponents held in four registers: two permutations, a blend.
            let of_64 = |w: &[__m512i]| {
                let low = _mm512_permutex2var_epi32(w[0], at, w[1]);
                let high = _mm512_permutex2var_epi32(w[2], at, w[3]);
                _mm512_mask_blend_epi32(_mm512_test_epi32_mask(at, thirty_two), low, high)
            };
            let d = if span <= 32 {
                _mm512_permutex2var_epi32(window[0], at, window[1])
            } else if span <= 64 {
                of_64(&window[..4])
            } else {
                let (low, high) = (of_64(&window[..4]), of_64(&window[4..]));
                let d = _mm512_mask_blend_epi32(_mm512_test_epi32_mask(at, sixty_four), low, high);
                // Exponents below the window wrap to a large `at` (+0.0 and escaped ways
                // take other entries below).
                let below = match all > 128 {
                    true => _mm512_cmpge_epu32_mask(at, one_twenty_eight) & !(zero[r] | esc[r]),
                    false => 0,
                };
                match below {
                    0 => d,
                    // SAFETY: exponents are bytes, under the row's `E_SYMS` entries.
                    _ => unsafe { _mm512_mask_i32gather_epi32::<4>(d, below, e[r], e_enc) },
                }
            };
            let d = _mm512_mask_mov_epi32(d, zero[r], zero_entry);
            let d = _mm512_mask_mov_epi32(d, esc[r], escape_entry);
            xs[r] = _mm512_add_epi32(
                _mm512_mullo_epi32(
                    _mm512_srli_epi32::<16>(d),
                    _mm512_srli_epi32::<E_BITS>(xs[r]),
                ),
                _mm512_sub_epi32(slot, _mm512_and_si512(d, low16)),
            );
        }
        for x in xs.iter_mut() {
            renorm!(*x, 0xffff);
        }
        // Escaped ways take their symbol from the next 9 bits (256 and up: +0.0).
        if esc.iter().any(|&m| m != 0) {
            for r in 0..R {
                let raw = _mm512_and_si512(xs[r], m9);
                zero[r] |= _mm512_mask_cmpge_epu32_mask(esc[r], raw, zero_sym);
                e[r] = _mm512_mask_and_epi32(e[r], esc[r], raw, m8);
                xs[r] = _mm512_mask_srli_epi32::<RAW_BITS>(xs[r], esc[r], xs[r]);
            }
            for r in 0..R {
                renorm!(xs[r], esc[r]);
            }
        }
        let mut sum = _mm512_maskz_mov_epi32(!zero[0], e[0]);
        let mut count = (!zero[0]).count_ones();
        for r in 1..R {
            sum = _mm512_mask_add_epi32(sum, !zero[r], sum, e[r]);
            count += (!zero[r]).count_ones();
        }
        ctx.follow(_mm512_reduce_add_epi32(sum) as u32, count);
        // `M` symbols, from the table of each way's exponent; none for +0.0.
        let out = em[done..done + ways].as_mut_ptr();
        for r in 0..R {
            let idx = _mm512_or_si512(
                _mm512_slli_epi32::<M_BITS>(e[r]),
                _mm512_and_si512(xs[r], m8),
            );
            // SAFETY: `E << 8 | slot` indexes the 256 rows of 256 entries of `m_dec`.
            let md = unsafe { _mm512_i32gather_epi32::<4>(idx, m_dec) };
            let freq = _mm512_and_si512(_mm512_srli_epi32::<4>(md), m9);
            let next = _mm512_add_epi32(
                _mm512_mullo_epi32(freq, _mm512_srli_epi32::<M_BITS>(xs[r])),
                _mm512_srli_epi32::<13>(md),
            );
            xs[r] = _mm512_mask_mov_epi32(xs[r], !zero[r], next);
            let v = _mm512_or_si512(_mm512_slli_epi32::<4>(e[r]), _mm512_and_si512(md, m4));
            let v = _mm512_mask_mov_epi32(v, zero[r], zero_em);
            // SAFETY: `out` points at the group's `16 R` values, of which these are 16.
            unsafe { _mm256_storeu_si256(out.add(16 * r).cast(), _mm512_cvtepi32_epi16(v)) };
        }
        for r in 0..R {
            renorm!(xs[r], !zero[r]);
        }
        done += ways;
    }
    for (r, xs) in xs.iter().enumerate() {
        // SAFETY: as for the loads at the start.
        unsafe { _mm512_storeu_si512(x[16 * r..].as_mut_ptr().cast(), *xs) };
    }
    w.pos = pos;
    done
}
}

crate::simd::avx512! {
/// `encode_group_scalar` for a whole group of `16 R` ways held in `R` registers; the
/// quotients come from f64 division, exact for 32-bit states and frequencies up to 2^12.
pub(super) fn encode_group<const R: usize>(
    x: &mut States,
    s: &Symbols,
    g0: u32,
    escapes: &[(u32, u16)],
    words: &mut [u16],
    n: &mut usize,
) -> bool {
    let g0 = g0 as usize;
    // SAFETY: 16 R <= 64 states, so `x[16 r..]` holds the 16 each load reads.
    let mut xs: [__m512i; R] =
        std::array::from_fn(|r| unsafe { _mm512_loadu_si512(x[16 * r..].as_ptr().cast()) });
    let reverse = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let low16 = _mm512_set1_epi32(0xffff);
    let out = words.as_mut_ptr();
    // The low words of the ways in `spill`, last way first.
    macro_rules! emit {
        ($xs:expr, $spill:expr) => {{
            let spill: u16 = $spill;
            let rev = _mm512_permutexvar_epi32(reverse, $xs);
            let packed = _mm512_maskz_compress_epi32(spill.reverse_bits(), rev);
            // SAFETY: `words` keeps 2 WAYS entries spare past any symbol's word, more than
            // the 16 this store writes.
            unsafe { _mm256_storeu_si256(out.add(*n).cast(), _mm512_cvtepi32_epi16(packed)) };
            *n += spill.count_ones() as usize;
        }};
    }
    // Exact `y / f` for 32-bit `y` and `f` <= 2^12.
    macro_rules! quotient {
        ($y:expr, $f:expr) => {{
            let (y, f) = ($y, $f);
            let lo = _mm512_div_pd(
                _mm512_cvtepu32_pd(_mm512_castsi512_si256(y)),
                _mm512_cvtepu32_pd(_mm512_castsi512_si256(f)),
            );
            let hi = _mm512_div_pd(
                _mm512_cvtepu32_pd(_mm512_extracti64x4_epi64::<1>(y)),
                _mm512_cvtepu32_pd(_mm512_extracti64x4_epi64::<1>(f)),
            );
            _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm512_cvttpd_epu32(lo)),
                _mm512_cvttpd_epu32(hi),
            )
        }};
    }
    // One symbol per way from `syms` (`start | freq << 16` per way; 0: no symbol),
    // precision `$bits`; registers last to first.
    macro_rules! phase {
        ($syms:expr, $bits:expr, $top:expr) => {{
            for r in (0..R).rev() {
                let at = &$syms[g0 + 16 * r..g0 + 16 * r + 16];
                // SAFETY: `at` holds the 16 symbols the load reads.
                let sym = unsafe { _mm512_loadu_si512(at.as_ptr().cast()) };
                let freq = _mm512_srli_epi32::<16>(sym);
                let active = _mm512_test_epi32_mask(freq, freq);
                let top = _mm512_srli_epi32::<$top>(xs[r]);
                let spill = _mm512_mask_cmpge_epu32_mask(active, top, freq);
                emit!(xs[r], spill);
                let y = _mm512_mask_srli_epi32::<16>(xs[r], spill, xs[r]);
                let q = quotient!(y, freq);
                let rest = _mm512_sub_epi32(y, _mm512_mullo_epi32(q, freq));
                let next = _mm512_add_epi32(
                    _mm512_add_epi32(_mm512_slli_epi32::<$bits>(q), rest),
                    _mm512_and_si512(sym, low16),
                );
                xs[r] = _mm512_mask_mov_epi32(xs[r], active, next);
            }
        }};
    }
    phase!(s.m, M_BITS, { 32 - M_BITS });
    if !escapes.is_empty() {
        // Escaped ways take their `E` symbol as raw bits.
        let mut mask = 0u64;
        let mut es = [0u32; WAYS];
        for &(at, e) in escapes {
            let l = at as usize - g0;
            mask |= 1 << l;
            es[l] = e as u32;
        }
        for r in (0..R).rev() {
            let m = (mask >> (16 * r)) as u16;
            // SAFETY: `es` holds 64 entries, 16 past `16 r`.
            let e = unsafe { _mm512_loadu_si512(es[16 * r..].as_ptr().cast()) };
            let limit = _mm512_set1_epi32(1 << (32 - RAW_BITS));
            let spill = _mm512_mask_cmpge_epu32_mask(m, xs[r], limit);
            emit!(xs[r], spill);
            let y = _mm512_mask_srli_epi32::<16>(xs[r], spill, xs[r]);
            xs[r] = _mm512_mask_add_epi32(xs[r], m, _mm512_slli_epi32::<RAW_BITS>(y), e);
        }
    }
    phase!(s.e, E_BITS, { 32 - E_BITS });
    for (r, xs) in xs.iter().enumerate() {
        // SAFETY: as for the loads at the start.
        unsafe { _mm512_storeu_si512(x[16 * r..].as_mut_ptr().cast(), *xs) };
    }
    true
}
}
