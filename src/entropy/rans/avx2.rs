//! AVX2 helpers of the interleaved rANS decoders: refilling the states that need it from the
//! next words of the stream, in lane order.

use std::arch::x86_64::*;

/// For each 8-bit mask, the lane permutation that moves consecutive words into the set lanes
/// (`expand`) or the set lanes to the front, in order (its inverse, to compress).
pub(crate) const fn lane_permutations(expand: bool) -> [[u32; 8]; 256] {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut lane, mut next) = (0, 0);
        while lane < 8 {
            if m >> lane & 1 != 0 {
                if expand {
                    t[m][lane] = next as u32;
                } else {
                    t[m][next] = lane as u32;
                }
                next += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    t
}

/// Permutations for expand-loading words into the lanes of a mask.
const EXPAND: [[u32; 8]; 256] = lane_permutations(true);
crate::simd::avx2! {
/// The states `x` whose lanes are set in `need` (all bits of a lane) shifted up 16 bits and
/// filled with the next words at `data[*pos..]`, in lane order; `*pos` moves past them.
///
/// # Safety
/// `data` has 16 bytes from `*pos` on.
#[inline]
pub(crate) unsafe fn refill(
    x: __m256i,
    need: __m256i,
    data: &[u8],
    pos: &mut usize,
) -> __m256i {
    let mask = _mm256_movemask_ps(_mm256_castsi256_ps(need)) as usize;
    // SAFETY: the caller guarantees the 16 bytes the load reads.
    let next = _mm256_cvtepu16_epi32(unsafe { _mm_loadu_si128(data.as_ptr().add(*pos).cast()) });
    // SAFETY: a row of `EXPAND` holds the 8 entries the load reads.
    let order = unsafe { _mm256_loadu_si256(EXPAND[mask].as_ptr().cast()) };
    let fill = _mm256_permutevar8x32_epi32(next, order);
    *pos += 2 * mask.count_ones() as usize;
    _mm256_blendv_epi8(x, _mm256_or_si256(_mm256_slli_epi32::<16>(x), fill), need)
}
}
