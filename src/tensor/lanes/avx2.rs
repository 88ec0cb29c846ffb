//! AVX2 kernel: a group of 16, 32 or 64 lanes in 2, 4 or 8 registers of 8 lanes, reading
//! exactly the words of the scalar reference in `super`.

use super::States;
use crate::coder::rans::Words;
use crate::tensor::planes::{Model, E_BITS, M_BITS};
use std::arch::x86_64::*;

/// For each 8-bit mask, the permutation that moves consecutive words into the set lanes.
const EXPAND: [[u32; 8]; 256] = {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut lane, mut next) = (0, 0);
        while lane < 8 {
            if m >> lane & 1 != 0 {
                t[m][lane] = next;
                next += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// `groups_avx512` with AVX2: groups of `8 R` lanes in `R` registers of 8 lanes.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn groups<const R: usize>(
    x: &mut States,
    w: &mut Words,
    model: &Model,
    em: &mut [u16],
) -> usize {
    let lanes = 8 * R;
    let group_bytes = 3 * 2 * lanes;
    let data = w.words;
    let mut pos = w.pos;
    let mut xs: [__m256i; R] =
        std::array::from_fn(|r| _mm256_loadu_si256(x[8 * r..].as_ptr().cast()));
    let zero = _mm256_setzero_si256();
    let all = _mm256_set1_epi32(-1);
    let m12 = _mm256_set1_epi32(0xfff);
    let m9 = _mm256_set1_epi32(0x1ff);
    let m8 = _mm256_set1_epi32(0xff);
    let m3 = _mm256_set1_epi32(7);
    let one = _mm256_set1_epi32(1);
    let esc_start = _mm256_set1_epi32(model.escape_start as i32);
    let e_dec = model.e_dec.as_ptr() as *const i32;
    let m_dec = model.m_dec.as_ptr() as *const i32;
    // Lanes in `active` whose state fell below LOW take the next words, in lane order.
    macro_rules! renorm {
        ($xs:expr, $active:expr) => {{
            let need = _mm256_and_si256(
                $active,
                _mm256_cmpeq_epi32(_mm256_srli_epi32::<16>($xs), zero),
            );
            let mask = _mm256_movemask_ps(_mm256_castsi256_ps(need)) as usize;
            // In bounds: a group starts only with group_bytes left, at most 16 bytes a step.
            let next = _mm256_cvtepu16_epi32(_mm_loadu_si128(data.as_ptr().add(pos).cast()));
            let order = _mm256_loadu_si256(EXPAND[mask].as_ptr().cast());
            let fill = _mm256_permutevar8x32_epi32(next, order);
            let refilled = _mm256_or_si256(_mm256_slli_epi32::<16>($xs), fill);
            $xs = _mm256_blendv_epi8($xs, refilled, need);
            pos += 2 * mask.count_ones() as usize;
        }};
    }
    let mut done = 0;
    while done + lanes <= em.len() && pos + group_bytes <= data.len() {
        let mut e = [zero; R];
        let mut esc = [zero; R];
        for r in 0..R {
            let slot = _mm256_and_si256(xs[r], m12);
            let d = _mm256_i32gather_epi32::<4>(e_dec, slot);
            // slot >= escape start, both below 2^13.
            esc[r] = _mm256_andnot_si256(_mm256_cmpgt_epi32(esc_start, slot), all);
            let freq = _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32::<8>(d), m12), one);
            xs[r] = _mm256_add_epi32(
                _mm256_mullo_epi32(freq, _mm256_srli_epi32::<{ E_BITS as i32 }>(xs[r])),
                _mm256_srli_epi32::<20>(d),
            );
            e[r] = _mm256_and_si256(d, m8);
        }
        for x in xs.iter_mut() {
            renorm!(*x, all);
        }
        if esc.iter().any(|&m| _mm256_testz_si256(m, m) == 0) {
            for r in 0..R {
                e[r] = _mm256_blendv_epi8(e[r], _mm256_and_si256(xs[r], m8), esc[r]);
                xs[r] = _mm256_blendv_epi8(xs[r], _mm256_srli_epi32::<8>(xs[r]), esc[r]);
            }
            for r in 0..R {
                renorm!(xs[r], esc[r]);
            }
        }
        let out = em.as_mut_ptr().add(done);
        for r in 0..R {
            let idx = _mm256_or_si256(
                _mm256_slli_epi32::<{ M_BITS as i32 }>(e[r]),
                _mm256_and_si256(xs[r], m8),
            );
            let md = _mm256_i32gather_epi32::<4>(m_dec, idx);
            let freq = _mm256_and_si256(_mm256_srli_epi32::<3>(md), m9);
            xs[r] = _mm256_add_epi32(
                _mm256_mullo_epi32(freq, _mm256_srli_epi32::<{ M_BITS as i32 }>(xs[r])),
                _mm256_srli_epi32::<12>(md),
            );
            let v = _mm256_or_si256(_mm256_slli_epi32::<3>(e[r]), _mm256_and_si256(md, m3));
            // Values are below 2^11: pack to 16 bits, both halves' results side by side.
            let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(v, v));
            _mm_storeu_si128(out.add(8 * r).cast(), _mm256_castsi256_si128(packed));
        }
        for x in xs.iter_mut() {
            renorm!(*x, all);
        }
        done += lanes;
    }
    for (r, xs) in xs.iter().enumerate() {
        _mm256_storeu_si256(x[8 * r..].as_mut_ptr().cast(), *xs);
    }
    w.pos = pos;
    done
}
