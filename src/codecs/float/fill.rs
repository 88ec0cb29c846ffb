//! Rows of the mantissa-top decode tables, filled from the symbols' slot ranges: slot `t` of
//! symbol `s` (frequency `f`, first slot `start`) holds `s | f << 4 | (t - start) << 13`.

#[cfg(target_arch = "x86_64")]
use crate::simd::{kernels, Kernels};
use std::ops::Range;

/// Fills a 256-slot row from its symbols' frequencies (in slot order, summing to 256).
#[inline(always)]
pub(super) fn m_row(row: &mut [u32], freqs: &[u32]) {
    assert_eq!(row.len(), 256);
    #[cfg(target_arch = "x86_64")]
    if freqs.len() <= 16 && kernels() == Kernels::Avx512 {
        // SAFETY: the kernel level guarantees AVX-512F; the row has 256 entries.
        unsafe { m_row_avx512(row, freqs) };
        return;
    }
    m_row_scalar(row, freqs);
}

/// `m_row` a symbol at a time.
fn m_row_scalar(row: &mut [u32], freqs: &[u32]) {
    let mut start = 0;
    for (s, &f) in freqs.iter().enumerate() {
        ramp::<13>(row, start..start + f as usize, s as u32 | f << 4);
        start += f as usize;
    }
}

crate::simd::avx512! {
/// `m_row` 16 slots at a time: a bit marks each range's first slot; in each chunk the
/// marked lanes take their range's rank (among the symbols with slots), a running maximum
/// carries it to the lanes after them, and the rank selects the range's entry less its
/// first slot (shifted), to which the slot (shifted) is added.
fn m_row_avx512(row: &mut [u32], freqs: &[u32]) {
    use std::arch::x86_64::*;
    let (mut base, mut marks) = ([0u32; 16], [0u16; 16]);
    let (mut ranks, mut start) = (0usize, 0u32);
    for (s, &f) in freqs.iter().enumerate() {
        if f > 0 && start < 256 {
            base[ranks] = (s as u32 | f << 4).wrapping_sub(start << 13);
            marks[start as usize >> 4] |= 1 << (start & 15);
            ranks += 1;
        }
        start += f;
    }
    // SAFETY: `base` holds the 16 entries the load reads.
    let base = unsafe { _mm512_loadu_si512(base.as_ptr().cast()) };
    let iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    // Rank of the next range to begin.
    let mut next = 0i32;
    for (c, &m) in marks.iter().enumerate() {
        // Lanes before the chunk's first mark are in the range begun before it.
        let before = _mm512_set1_epi32(next - 1);
        let mut rank =
            _mm512_mask_expand_epi32(before, m, _mm512_add_epi32(iota, _mm512_set1_epi32(next)));
        rank = _mm512_max_epi32(rank, _mm512_alignr_epi32::<15>(rank, before));
        rank = _mm512_max_epi32(rank, _mm512_alignr_epi32::<14>(rank, before));
        rank = _mm512_max_epi32(rank, _mm512_alignr_epi32::<12>(rank, before));
        rank = _mm512_max_epi32(rank, _mm512_alignr_epi32::<8>(rank, before));
        next += m.count_ones() as i32;
        let slot = _mm512_add_epi32(iota, _mm512_set1_epi32(16 * c as i32));
        let entry = _mm512_add_epi32(
            _mm512_permutexvar_epi32(rank, base),
            _mm512_slli_epi32::<13>(slot),
        );
        let at = &mut row[16 * c..16 * c + 16];
        // SAFETY: `at` holds the 16 entries the store writes.
        unsafe { _mm512_storeu_si512(at.as_mut_ptr().cast(), entry) };
    }
}
}

/// Fills a symbol's `slots` of a decode `table` (symbols in slot order): `entry | k << SHIFT`
/// for its `k`th slot. Whole 16-entry stores: one that runs past the symbol's slots is
/// overwritten by the next symbol's; near the table's end, a store that ends there if it
/// stays within the symbol's slots, else one entry at a time.
#[inline(always)]
fn ramp<const SHIFT: u32>(table: &mut [u32], slots: Range<usize>, entry: u32) {
    const CHUNK: usize = 16;
    // `entry` has no bits at SHIFT and up, so `|` is `+`: a broadcast plus a constant ramp.
    let value = |k: usize| entry + ((k as u32) << SHIFT);
    let chunk = |k: usize| -> [u32; CHUNK] {
        let base = value(k);
        std::array::from_fn(|i| base + ((i as u32) << SHIFT))
    };
    let (start, end) = (slots.start, slots.end);
    let mut at = start;
    while at < end {
        if at + CHUNK <= table.len() {
            table[at..at + CHUNK].copy_from_slice(&chunk(at - start));
            at += CHUNK;
        } else if end == table.len() && end - CHUNK >= start {
            let at = end - CHUNK;
            table[at..end].copy_from_slice(&chunk(at - start));
            return;
        } else {
            for (t, k) in table[at..end].iter_mut().zip(at - start..) {
                *t = value(k);
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// Random partitions of 256 slots into 1 to 16 symbols (some with no slots).
    fn partitions() -> Vec<Vec<u32>> {
        let mut x = 9u64;
        (0..2000)
            .map(|_| {
                let k = 1 + xorshift(&mut x) as usize % 16;
                let mut cuts: Vec<u32> = (0..k - 1)
                    .map(|_| (xorshift(&mut x) % 257) as u32)
                    .collect();
                cuts.extend([0, 256]);
                cuts.sort_unstable();
                cuts.windows(2).map(|w| w[1] - w[0]).collect()
            })
            .collect()
    }

    #[test]
    fn rows_fill_exactly_their_slots() {
        for freqs in partitions() {
            let mut want = vec![u32::MAX; 256];
            let mut start = 0;
            for (s, &f) in freqs.iter().enumerate() {
                for k in 0..f {
                    want[(start + k) as usize] = s as u32 | f << 4 | k << 13;
                }
                start += f;
            }
            let mut scalar = vec![u32::MAX; 256];
            m_row_scalar(&mut scalar, &freqs);
            assert_eq!(scalar, want, "{freqs:?}");
            #[cfg(target_arch = "x86_64")]
            if Kernels::detect() == Kernels::Avx512 {
                let mut vector = vec![u32::MAX; 256];
                // SAFETY: AVX-512F was detected; the row has 256 entries.
                unsafe { m_row_avx512(&mut vector, &freqs) };
                assert_eq!(vector, want, "{freqs:?}");
            }
        }
    }
}
