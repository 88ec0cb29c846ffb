//! The AVX2 kernel of the adaptive tables' decoder: `avx512::adaptive` in two registers of 8.

use crate::entropy::rans::avx2::refill;
use crate::entropy::rans::Words;
use std::arch::x86_64::*;

crate::simd::avx2! {
/// `avx512::adaptive` with AVX2: the 16 states in two registers of 8.
pub(super) fn adaptive(
    bits: u32,
    x: &mut [u32; 16],
    w: &mut Words,
    slots: &[u16],
    enc: &[u32],
    out: &mut [u16],
) -> usize {
    debug_assert!(slots.len() > 1 << bits && enc.len() < 1 << 16);
    let data = w.words;
    let mut pos = w.pos;
    let shift = _mm_cvtsi32_si128(bits as i32);
    // SAFETY: `x` holds 16 states, 8 past `8 r`.
    let mut xs: [__m256i; 2] =
        std::array::from_fn(|r| unsafe { _mm256_loadu_si256(x[8 * r..].as_ptr().cast()) });
    let zero = _mm256_setzero_si256();
    let low16 = _mm256_set1_epi32(0xffff);
    let mask = _mm256_set1_epi32((1 << bits) - 1);
    let escape = _mm256_set1_epi32(enc.len() as i32 - 1);
    let (slots_at, enc_at) = (slots.as_ptr() as *const i32, enc.as_ptr() as *const i32);
    let mut done = 0;
    while done + 16 <= out.len() && pos + 32 <= data.len() {
        let mut slot = [zero; 2];
        let mut s = [zero; 2];
        for r in 0..2 {
            slot[r] = _mm256_and_si256(xs[r], mask);
            // SAFETY: slots are under 2^bits, and the slot table has an entry of padding for
            // the last slot's 4-byte read.
            let gathered = unsafe { _mm256_i32gather_epi32::<2>(slots_at, slot[r]) };
            s[r] = _mm256_and_si256(gathered, low16);
        }
        let hit = _mm256_or_si256(
            _mm256_cmpeq_epi32(s[0], escape),
            _mm256_cmpeq_epi32(s[1], escape),
        );
        if _mm256_testz_si256(hit, hit) == 0 {
            break;
        }
        for r in 0..2 {
            // SAFETY: every symbol the slot table holds indexes `enc`.
            let d = unsafe { _mm256_i32gather_epi32::<4>(enc_at, s[r]) };
            let y = _mm256_add_epi32(
                _mm256_mullo_epi32(_mm256_srli_epi32::<16>(d), _mm256_srl_epi32(xs[r], shift)),
                _mm256_sub_epi32(slot[r], _mm256_and_si256(d, low16)),
            );
            let need = _mm256_cmpeq_epi32(_mm256_srli_epi32::<16>(y), zero);
            // SAFETY: the loop runs only with 32 bytes left past `pos`, and the two halves'
            // refills take at most 16 each.
            xs[r] = unsafe { refill(y, need, data, &mut pos) };
        }
        // Symbols are below 2^16, so the saturating pack keeps them whole.
        let packed = _mm256_packus_epi32(s[0], s[1]);
        let ordered = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
        let at = &mut out[done..done + 16];
        // SAFETY: `at` holds the 16 symbols the store writes.
        unsafe { _mm256_storeu_si256(at.as_mut_ptr().cast(), ordered) };
        done += 16;
    }
    for (r, xs) in xs.iter().enumerate() {
        // SAFETY: as for the loads at the start.
        unsafe { _mm256_storeu_si256(x[8 * r..].as_mut_ptr().cast(), *xs) };
    }
    w.pos = pos;
    done
}
}
