//! The AVX-512F kernel of the adaptive tables' decoder: 16 states in one register, reading
//! and writing exactly the words of the scalar reference in `super`.

use crate::entropy::rans::Words;
use std::arch::x86_64::*;

crate::simd::avx512! {
/// Decodes symbols of an adaptive table 16 at a time, symbol `k` on state `k mod 16` (the
/// 16 states in one register), until a group holds the escape, fewer than 16 symbols are
/// left or the stream has less than 32 bytes past the position; returns the number decoded.
/// `slots` maps each slot to its symbol (with one entry of padding), `enc` each symbol to
/// `start | freq << 16`.
pub(super) fn adaptive<const BITS: u32>(
    x: &mut [u32; 16],
    w: &mut Words,
    slots: &[u16],
    enc: &[u32],
    out: &mut [u16],
) -> usize {
    debug_assert!(slots.len() > 1 << BITS && enc.len() < 1 << 16);
    let data = w.words;
    let mut pos = w.pos;
    // SAFETY: `x` holds the 16 states the load reads.
    let mut xs = unsafe { _mm512_loadu_si512(x.as_ptr().cast()) };
    let low = _mm512_set1_epi32(1 << 16);
    let low16 = _mm512_set1_epi32(0xffff);
    let mask = _mm512_set1_epi32((1 << BITS) - 1);
    let escape = _mm512_set1_epi32(enc.len() as i32 - 1);
    let (slots_at, enc_at) = (slots.as_ptr() as *const i32, enc.as_ptr() as *const i32);
    // The first 32 symbols' entries in registers: a group whose symbols are all among them
    // (levels near zero, say) takes them by a permutation, not a gather.
    let mut first = [0u32; 32];
    let k = enc.len().min(32);
    first[..k].copy_from_slice(&enc[..k]);
    // SAFETY: `first` holds the 32 entries the two loads read.
    let (low_half, high_half) = unsafe {
        (
            _mm512_loadu_si512(first.as_ptr().cast()),
            _mm512_loadu_si512(first[16..].as_ptr().cast()),
        )
    };
    let thirty_two = _mm512_set1_epi32(32);
    let mut done = 0;
    while done + 16 <= out.len() && pos + 32 <= data.len() {
        let slot = _mm512_and_si512(xs, mask);
        // SAFETY: slots are under 2^BITS, and the slot table has an entry of padding for the
        // last slot's 4-byte read.
        let s = _mm512_and_si512(unsafe { _mm512_i32gather_epi32::<2>(slot, slots_at) }, low16);
        if _mm512_cmpeq_epi32_mask(s, escape) != 0 {
            break;
        }
        let d = match _mm512_cmpge_epu32_mask(s, thirty_two) {
            0 => _mm512_permutex2var_epi32(low_half, s, high_half),
            // SAFETY: every symbol the slot table holds indexes `enc`.
            _ => unsafe { _mm512_i32gather_epi32::<4>(s, enc_at) },
        };
        let y = _mm512_add_epi32(
            _mm512_mullo_epi32(_mm512_srli_epi32::<16>(d), _mm512_srli_epi32::<BITS>(xs)),
            _mm512_sub_epi32(slot, _mm512_and_si512(d, low16)),
        );
        let need = _mm512_cmplt_epu32_mask(y, low);
        // SAFETY: the loop runs only with 32 bytes left past `pos`.
        let next = unsafe { _mm256_loadu_si256(data.as_ptr().add(pos).cast()) };
        let fill = _mm512_maskz_expand_epi32(need, _mm512_cvtepu16_epi32(next));
        xs = _mm512_mask_or_epi32(y, need, _mm512_slli_epi32::<16>(y), fill);
        pos += 2 * need.count_ones() as usize;
        let at = &mut out[done..done + 16];
        // SAFETY: `at` holds the 16 symbols the store writes.
        unsafe { _mm256_storeu_si256(at.as_mut_ptr().cast(), _mm512_cvtepi32_epi16(s)) };
        done += 16;
    }
    // SAFETY: `x` holds the 16 states the store writes.
    unsafe { _mm512_storeu_si512(x.as_mut_ptr().cast(), xs) };
    w.pos = pos;
    done
}
}
