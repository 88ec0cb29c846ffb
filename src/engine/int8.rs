//! Integer kernels of the frozen (pre-trained) networks: int8 weights times int8 activations,
//! summed in `i32`, then rescaled in fixed point. Integer sums do not depend on their order, so
//! every SIMD level (the compiler vectorises the same portable code as wide as the level allows)
//! computes the same bits; nothing saturates (a row of up to `COLS_MAX` products of at most
//! 2^14 stays far inside `i32`), and the rescaling uses no float.

use crate::simd::kernel_variants;

/// Most inputs of a row: the sum of its products then stays within `i32`.
pub const COLS_MAX: usize = 1 << 16;

kernel_variants! {
    /// `out[r] = sum_c w[r * cols + c] * x[c]` for each of the `out.len()` rows of `w`, with
    /// `cols = x.len()` (at most `COLS_MAX`).
    pub fn matvec_i8 [] [] (w: &[i8], x: &[i8], out: &mut [i32]) {
        let cols = x.len();
        for (o, row) in out.iter_mut().zip(w.chunks_exact(cols)) {
            *o = row
                .iter()
                .zip(x)
                .map(|(&a, &b)| i32::from(a) * i32::from(b))
                .sum();
        }
    }
}

/// A row's fixed-point rescaling: `(acc * mult + add) >> shift`, rounded to nearest (ties
/// up), as an `i32` (saturated: a row whose scale is out of range clamps, the same everywhere).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rescale {
    /// The multiplier: the row's scale in units of `2^-shift`.
    pub mult: i32,
    /// The bias, in the same units as `acc * mult`.
    pub add: i64,
    /// The shift, at most 62.
    pub shift: u32,
}

impl Rescale {
    /// `acc` rescaled.
    #[inline]
    pub fn apply(self, acc: i32) -> i32 {
        // The product fits (2^62 at most); a file's bias may be anything, so the sum saturates.
        let v = (i64::from(acc) * i64::from(self.mult)).saturating_add(self.add);
        let half = (1i64 << self.shift) >> 1;
        let r = v.saturating_add(half) >> self.shift;
        r.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
    }
}

/// `acc` through each row's rescaling, then `table` (indexed by the result clamped to the
/// table's range, `offset` at 0): a layer's activation, e.g. GELU quantised to int8.
pub fn activate(acc: &[i32], rows: &[Rescale], table: &[i8], offset: i32, out: &mut [i8]) {
    let last = table.len() as i32 - 1;
    for ((o, &a), r) in out.iter_mut().zip(acc).zip(rows) {
        let at = (r.apply(a).saturating_add(offset)).clamp(0, last);
        *o = table[at as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::{kernels, set_kernels, Kernels};
    use crate::testing::xorshift;

    /// The plain definition: one product at a time, in order.
    fn reference(w: &[i8], x: &[i8], out: &mut [i32]) {
        for (r, o) in out.iter_mut().enumerate() {
            let mut s = 0i32;
            for c in 0..x.len() {
                s += w[r * x.len() + c] as i32 * x[c] as i32;
            }
            *o = s;
        }
    }

    #[test]
    fn every_level_computes_the_plain_sums() {
        let before = kernels();
        let mut s = 7u64;
        for (rows, cols) in [(1, 1), (3, 17), (64, 255), (256, 1152), (5, 4099)] {
            let w: Vec<i8> = (0..rows * cols).map(|_| xorshift(&mut s) as i8).collect();
            let mut x: Vec<i8> = (0..cols).map(|_| xorshift(&mut s) as i8).collect();
            // The extremes, whose products are the largest.
            x[0] = -128;
            let mut want = vec![0; rows];
            reference(&w, &x, &mut want);
            for level in [Kernels::Scalar, Kernels::Avx2, Kernels::Avx512] {
                if set_kernels(level) != level {
                    continue;
                }
                let mut got = vec![0; rows];
                matvec_i8(&w, &x, &mut got);
                assert_eq!(got, want, "{level:?}, {rows}x{cols}");
            }
            // One product changed changes its row's sum: the comparison can fail.
            let mut w2 = w.clone();
            w2[cols - 1] = w2[cols - 1].wrapping_add(1);
            let mut other = vec![0; rows];
            matvec_i8(&w2, &x, &mut other);
            assert_ne!(other[0], want[0]);
        }
        set_kernels(before);
    }

    #[test]
    fn rescaling_rounds_and_saturates() {
        let r = Rescale {
            mult: 3,
            add: 0,
            shift: 2,
        };
        // 5 * 3 / 4 = 3.75 -> 4; -5 * 3 / 4 = -3.75 -> -4; 2 * 3 / 4 = 1.5 -> 2 (ties up).
        assert_eq!((r.apply(5), r.apply(-5), r.apply(2)), (4, -4, 2));
        let big = Rescale {
            mult: i32::MAX,
            add: 0,
            shift: 0,
        };
        assert_eq!(big.apply(i32::MAX), i32::MAX);
        let table: Vec<i8> = (-4..4).collect();
        let mut out = [0i8; 3];
        let unit = Rescale {
            mult: 1,
            add: 0,
            shift: 0,
        };
        activate(&[-100, 1, 100], &[unit; 3], &table, 4, &mut out);
        assert_eq!(out, [-4, 1, 3]);
    }
}
