//! Probability quantisation: 256 float probabilities to integer frequencies with a fixed total.
//!
//! The only float operation is `p * 2^20` followed by truncation, which is exact and identical on
//! every platform; everything after it is integer arithmetic, so encoder and decoder always build
//! the same table from the same model output.

/// Bits of precision of the frequency tables (total = 2^PRECISION).
pub const PRECISION: usize = 24;
/// Fixed sum of every frequency table.
pub const TOTAL: u32 = 1 << PRECISION;
/// Fixed-point scale applied to the float probabilities before integer processing.
const FIXED_SHIFT: u32 = 20;
/// Mass shared out in proportion to the model after every symbol got its minimum of 1.
const BUDGET: u64 = (TOTAL - 256) as u64;

/// Integer frequencies of the 256 byte values, summing to [`TOTAL`], each at least 1.
#[derive(Clone)]
pub struct FreqTable {
    /// Frequency of each byte value.
    pub freq: [u32; 256],
}

impl Default for FreqTable {
    fn default() -> Self {
        FreqTable {
            freq: [TOTAL / 256; 256],
        }
    }
}

impl FreqTable {
    /// Left cumulative frequency and frequency of `symbol`.
    #[inline]
    pub fn left_and_freq(&self, symbol: u8) -> (u32, u32) {
        let s = symbol as usize;
        // Sum of the first `s` entries in 8 independent partials, so it vectorises.
        let mut acc = [0u32; 8];
        let full = s / 8 * 8;
        for chunk in self.freq[..full].chunks_exact(8) {
            for k in 0..8 {
                acc[k] += chunk[k];
            }
        }
        let left = acc.iter().sum::<u32>() + self.freq[full..s].iter().sum::<u32>();
        (left, self.freq[s])
    }

    /// Symbol whose interval contains `quantile` (< [`TOTAL`]), with its left cumulative and
    /// frequency.
    #[inline]
    pub fn find(&self, quantile: u32) -> (u8, u32, u32) {
        // Two levels: sums of 16 blocks of 16 (vectorised), then a walk inside one block.
        let mut sums = [0u32; 16];
        for (sum, block) in sums.iter_mut().zip(self.freq.chunks_exact(16)) {
            *sum = block.iter().sum();
        }
        let mut left = 0u32;
        let mut b = 0usize;
        while b < 15 && left + sums[b] <= quantile {
            left += sums[b];
            b += 1;
        }
        let mut i = b * 16;
        while i < b * 16 + 15 && left + self.freq[i] <= quantile {
            left += self.freq[i];
            i += 1;
        }
        (i as u8, left, self.freq[i])
    }
}

/// Quantises the first 256 entries of `probs` (missing ones count as zero; each non-negative, up
/// to 1.0) into `table`.
///
/// Non-finite or negative entries count as zero; an all-zero input gives the uniform table.
/// Runs at the engine's SIMD level; every level produces the same table.
pub fn quantize(probs: &[f32], table: &mut FreqTable) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::engine::{level, KernelLevel};
        match level() {
            // SAFETY: the level is only ever set to one the CPU supports (engine::set_level).
            KernelLevel::Avx512 => return unsafe { quantize_avx512(probs, table) },
            KernelLevel::Avx2 => return unsafe { quantize_avx2(probs, table) },
            KernelLevel::Scalar => {}
        }
    }
    quantize_body(probs, table)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,bmi1,bmi2,lzcnt")]
unsafe fn quantize_avx2(probs: &[f32], table: &mut FreqTable) {
    quantize_body(probs, table)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,popcnt,bmi1,bmi2,lzcnt")]
unsafe fn quantize_avx512(probs: &[f32], table: &mut FreqTable) {
    quantize_body(probs, table)
}

/// The quantiser; only exact float operations, then integers, so any SIMD level gives equal bits.
#[inline(always)]
fn quantize_body(probs: &[f32], table: &mut FreqTable) {
    let scale = (1u32 << FIXED_SHIFT) as f32;
    let mut w = [0u32; 256];
    for (wi, &p) in w.iter_mut().zip(probs.iter()) {
        // NaN and negatives become 0 and the cap is 2^20, so v is finite and in range.
        let v = crate::engine::kernels::bound(p * scale, 0.0, scale);
        // SAFETY: v is finite and within 0..=2^20, representable as i32; truncation is exact.
        *wi = unsafe { v.to_int_unchecked::<i32>() } as u32;
    }
    quantize_fixed(&w, table);
}

/// Quantises fixed-point weights (each at most 2^20) into `table`.
#[inline(always)]
pub fn quantize_fixed(w: &[u32; 256], table: &mut FreqTable) {
    // Each w <= 2^20, so the sum of 256 fits in u32.
    let sum: u32 = w.iter().fold(0u32, |a, &x| a.wrapping_add(x));
    if sum == 0 {
        *table = FreqTable::default();
        return;
    }
    // m = floor(BUDGET * 2^24 / sum): (w * m) >> 24 ~= w * BUDGET / sum and never exceeds it.
    let m = (BUDGET << 24) / sum as u64;
    let mut total = 0u32;
    if m <= u32::MAX as u64 {
        // Common case (sum >= 2^16): 32x32->64 multiplies, which vectorise.
        let m32 = m as u32;
        for (&wi, f) in w.iter().zip(table.freq.iter_mut()) {
            *f = 1 + ((wi as u64 * m32 as u64) >> 24) as u32;
            total = total.wrapping_add(*f);
        }
    } else {
        for (&wi, f) in w.iter().zip(table.freq.iter_mut()) {
            *f = 1 + ((wi as u64 * m) >> 24) as u32;
            total = total.wrapping_add(*f);
        }
    }
    // Rounding leaves a small remainder; the first most probable symbol takes it.
    let max = w.iter().fold(0u32, |a, &x| a.max(x));
    let best = w.iter().position(|&x| x == max).unwrap_or(0);
    table.freq[best] += TOTAL - total;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(table: &FreqTable) {
        assert!(table.freq.iter().all(|&f| f >= 1));
        assert_eq!(
            table.freq.iter().map(|&f| f as u64).sum::<u64>(),
            TOTAL as u64
        );
    }

    #[test]
    fn totals_are_exact_for_varied_inputs() {
        let mut t = FreqTable::default();
        check(&t);
        let mut p = [0f32; 256];
        quantize(&p, &mut t);
        check(&t);
        p[7] = 1.0;
        quantize(&p, &mut t);
        check(&t);
        assert_eq!(t.freq[7], TOTAL - 255);
        let mut seed = 12345u32;
        for _ in 0..200 {
            let mut s = 0.0;
            for x in p.iter_mut() {
                seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
                *x = (seed >> 8) as f32 / (1u32 << 24) as f32;
                *x = *x * *x * *x;
                s += *x;
            }
            for x in p.iter_mut() {
                *x /= s;
            }
            quantize(&p, &mut t);
            check(&t);
        }
        p.fill(f32::NAN);
        quantize(&p, &mut t);
        check(&t);
        p.fill(f32::INFINITY);
        quantize(&p, &mut t);
        check(&t);
        p.fill(-1.0);
        quantize(&p, &mut t);
        check(&t);
    }

    #[test]
    fn every_simd_level_gives_the_scalar_table() {
        let mut seed = 99u32;
        let mut p = [0f32; 256];
        for round in 0..500 {
            for (i, x) in p.iter_mut().enumerate() {
                seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
                let r = (seed >> 8) as f32 / (1u32 << 24) as f32;
                *x = match round % 5 {
                    0 => r,
                    1 => r * r * r * r * 1e-3,
                    2 => {
                        if i == round % 256 {
                            0.999
                        } else {
                            r * 1e-6
                        }
                    }
                    3 => r - 0.5,
                    _ => r * 4.0,
                };
            }
            let mut want = FreqTable::default();
            quantize_body(&p, &mut want);
            #[cfg(target_arch = "x86_64")]
            {
                let best = crate::engine::KernelLevel::detect();
                if best >= crate::engine::KernelLevel::Avx2 {
                    let mut t = FreqTable::default();
                    unsafe { quantize_avx2(&p, &mut t) };
                    assert_eq!(t.freq, want.freq, "avx2, round {round}");
                }
                if best >= crate::engine::KernelLevel::Avx512 {
                    let mut t = FreqTable::default();
                    unsafe { quantize_avx512(&p, &mut t) };
                    assert_eq!(t.freq, want.freq, "avx512, round {round}");
                }
            }
        }
    }

    #[test]
    fn left_sum_and_search_agree_with_prefix_sums() {
        let mut t = FreqTable::default();
        let mut p = [0f32; 256];
        for (i, x) in p.iter_mut().enumerate() {
            *x = ((i * 37) % 101) as f32 / 12000.0;
        }
        quantize(&p, &mut t);
        let mut run = 0;
        for s in 0..=255u8 {
            let (l, f) = t.left_and_freq(s);
            assert_eq!((l, f), (run, t.freq[s as usize]));
            run += f;
            assert_eq!(t.find(l), (s, l, f));
            assert_eq!(t.find(l + f - 1), (s, l, f));
        }
    }
}
