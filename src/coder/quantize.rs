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
    /// Left cumulative frequency of each byte value; entry 256 equals [`TOTAL`].
    cdf: [u32; 257],
    cdf_valid: bool,
}

impl Default for FreqTable {
    fn default() -> Self {
        let mut t = FreqTable {
            freq: [TOTAL / 256; 256],
            cdf: [0; 257],
            cdf_valid: false,
        };
        t.build_cdf();
        t
    }
}

impl FreqTable {
    /// Left cumulative frequency and frequency of `symbol`.
    #[inline]
    pub fn left_and_freq(&self, symbol: u8) -> (u32, u32) {
        let s = symbol as usize;
        if self.cdf_valid {
            return (self.cdf[s], self.freq[s]);
        }
        // Sum of the first `s` entries; summed in 8 independent partials so it vectorises.
        let mut acc = [0u32; 8];
        let full = s / 8 * 8;
        for chunk in self.freq[..full].chunks_exact(8) {
            for k in 0..8 {
                acc[k] += chunk[k];
            }
        }
        let mut left: u32 = acc.iter().sum();
        for &f in &self.freq[full..s] {
            left += f;
        }
        (left, self.freq[s])
    }

    /// Builds the cumulative table used by the decoder's search.
    pub fn build_cdf(&mut self) {
        let mut run = 0u32;
        for (c, &f) in self.cdf.iter_mut().zip(self.freq.iter()) {
            *c = run;
            run += f;
        }
        self.cdf[256] = run;
        self.cdf_valid = true;
    }

    /// Symbol whose interval contains `quantile`, with its left cumulative and frequency.
    /// Requires [`FreqTable::build_cdf`] to have run.
    #[inline]
    pub fn find(&self, quantile: u32) -> (u8, u32, u32) {
        debug_assert!(self.cdf_valid);
        // Branch-light binary search over cdf[0..256]: largest s with cdf[s] <= quantile.
        let mut lo = 0usize;
        let mut step = 128usize;
        while step > 0 {
            if self.cdf[lo + step] <= quantile {
                lo += step;
            }
            step >>= 1;
        }
        (lo as u8, self.cdf[lo], self.freq[lo])
    }
}

/// Quantises `probs` (non-negative, any scale up to 1.0 each) into `table`.
///
/// Non-finite or negative entries count as zero; an all-zero input gives the uniform table.
pub fn quantize(probs: &[f32; 256], table: &mut FreqTable) {
    let mut w = [0u32; 256];
    let scale = (1u32 << FIXED_SHIFT) as f32;
    for (wi, &p) in w.iter_mut().zip(probs.iter()) {
        // `as` saturates: NaN -> 0, negatives -> 0, > 1.0 clamps below.
        let v = (p * scale) as u32;
        *wi = v.min(1 << FIXED_SHIFT);
    }
    quantize_fixed(&w, table);
}

/// Quantises fixed-point weights (each at most 2^20) into `table`.
pub fn quantize_fixed(w: &[u32; 256], table: &mut FreqTable) {
    let sum: u64 = w.iter().map(|&x| x as u64).sum();
    if sum == 0 {
        *table = FreqTable::default();
        return;
    }
    // m = BUDGET * 2^32 / sum, so that (w * m) >> 32 ~= w * BUDGET / sum, never exceeding it.
    let m = (BUDGET << 32) / sum;
    let mut total = 0u32;
    let mut best = 0usize;
    let mut best_w = 0u32;
    for (i, (&wi, f)) in w.iter().zip(table.freq.iter_mut()).enumerate() {
        let q = 1 + ((wi as u64 * m) >> 32) as u32;
        *f = q;
        total += q;
        if wi > best_w {
            best_w = wi;
            best = i;
        }
    }
    // Rounding leaves a small remainder; the most probable symbol takes it.
    table.freq[best] += TOTAL - total;
    table.cdf_valid = false;
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
    fn left_sum_and_search_agree_with_cdf() {
        let mut t = FreqTable::default();
        let mut p = [0f32; 256];
        for (i, x) in p.iter_mut().enumerate() {
            *x = ((i * 37) % 101) as f32 / 12000.0;
        }
        quantize(&p, &mut t);
        let direct: Vec<(u32, u32)> = (0..=255u8).map(|s| t.left_and_freq(s)).collect();
        t.build_cdf();
        for s in 0..=255u8 {
            assert_eq!(direct[s as usize], t.left_and_freq(s));
            let (l, f) = direct[s as usize];
            assert_eq!(t.find(l), (s, l, f));
            assert_eq!(t.find(l + f - 1), (s, l, f));
        }
    }
}
