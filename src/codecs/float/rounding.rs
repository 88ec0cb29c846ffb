//! How stored floats were made from f32 numbers: kept as they are (f32), or rounded to a
//! 16-bit type (bf16 to nearest or toward zero, f16 to nearest). Gives the exact rounding the
//! scaled-integers decoder replays, and the interval of f32 numbers each stored value stands
//! for, which the encoder intersects to find a scale.

use super::DType;
use crate::error::{Error, Result};

/// A stored float type and the rounding that produced its values from f32 numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// f32, not rounded.
    F32,
    /// bf16, rounded to nearest, ties to even (as torch and NumPy convert).
    Bf16Nearest,
    /// bf16, rounded toward zero (the top 16 bits of the f32).
    Bf16Truncated,
    /// f16, rounded to nearest, ties to even.
    F16Nearest,
}

impl Form {
    /// The forms tried for values of `dtype`, most likely first.
    pub fn of(dtype: DType) -> &'static [Form] {
        match dtype {
            DType::F32 => &[Form::F32],
            DType::BF16 => &[Form::Bf16Nearest, Form::Bf16Truncated],
            DType::F16 => &[Form::F16Nearest],
            // Integers times a scale are not searched for in f64 or fp8 values.
            DType::F64 | DType::F8E4M3 | DType::F8E5M2 => &[],
        }
    }

    /// The stored type.
    pub fn dtype(self) -> DType {
        match self {
            Form::F32 => DType::F32,
            Form::Bf16Nearest | Form::Bf16Truncated => DType::BF16,
            Form::F16Nearest => DType::F16,
        }
    }

    /// Rounding byte stored after the dtype tag of a 16-bit payload.
    pub fn rounding_tag(self) -> u8 {
        match self {
            Form::F32 | Form::Bf16Nearest | Form::F16Nearest => 0,
            Form::Bf16Truncated => 1,
        }
    }

    /// The form of a 16-bit `dtype` with rounding byte `tag`.
    pub fn from_tags(dtype: DType, tag: u8) -> Result<Form> {
        match (dtype, tag) {
            (DType::BF16, 0) => Ok(Form::Bf16Nearest),
            (DType::BF16, 1) => Ok(Form::Bf16Truncated),
            (DType::F16, 0) => Ok(Form::F16Nearest),
            _ => Err(Error::Corrupt(format!(
                "scaled-integers block: rounding {tag} of {}",
                dtype.name()
            ))),
        }
    }

    /// Bits of -0.0.
    pub fn minus_zero(self) -> u32 {
        match self {
            Form::F32 => 0x8000_0000,
            _ => 0x8000,
        }
    }

    /// The stored bits of f32 `x` (low 16 bits for 16-bit forms).
    #[inline(always)]
    pub fn narrow(self, x: f32) -> u32 {
        let b = x.to_bits();
        match self {
            Form::F32 => b,
            Form::Bf16Nearest => b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16,
            Form::Bf16Truncated => b >> 16,
            Form::F16Nearest => f16_nearest(x),
        }
    }

    /// The exact f32 value of stored bits `v`.
    #[inline(always)]
    pub fn widen(self, v: u32) -> f32 {
        match self {
            Form::F32 => f32::from_bits(v),
            Form::Bf16Nearest | Form::Bf16Truncated => f32::from_bits(v << 16),
            Form::F16Nearest => f16_widen(v),
        }
    }

    /// The middle of the f32 numbers that round to stored bits `v`.
    #[inline(always)]
    pub fn middle(self, v: u32) -> f32 {
        match self {
            Form::Bf16Truncated => f32::from_bits((v << 16) | 0x8000),
            _ => self.widen(v),
        }
    }

    /// The magnitudes (as f64) of the numbers that round to the magnitude `m` (stored bits
    /// without the sign, not zero), boundaries counted in; `None` for infinity and NaN.
    #[inline(always)]
    pub fn preimage(self, m: u32) -> Option<(f64, f64)> {
        // Mantissa bits and exponent bias of the stored type.
        let (bits, bias) = match self {
            Form::F32 => (23, 127),
            Form::Bf16Nearest | Form::Bf16Truncated => (7, 127),
            Form::F16Nearest => (10, 15),
        };
        let inf = (2 * bias + 1) << bits;
        if m == 0 || m >= inf {
            return None;
        }
        let x = self.widen(m) as f64;
        // The distance to the next stored value above of exponent field `e` (subnormals are
        // spaced as the smallest normals), exact in f64.
        let step = |e: u32| f64::from_bits(((e.max(1) + 1023 - bias - bits) as u64) << 52);
        let e = m >> bits;
        let up = step(e);
        Some(match self {
            Form::F32 => (x, x),
            // The largest finite value rounds from numbers below f32::MAX, the bound.
            Form::Bf16Truncated => (
                x,
                if m + 1 == inf {
                    f32::MAX as f64
                } else {
                    x + up
                },
            ),
            Form::Bf16Nearest | Form::F16Nearest => {
                // A binade's first value lies half the smaller step of the one below away.
                let down = match m & ((1 << bits) - 1) {
                    0 => step(e - 1),
                    _ => up,
                };
                (x - down / 2.0, x + up / 2.0)
            }
        })
    }
}

/// f16 bits of f32 `x`, rounded to nearest, ties to even (subnormals, overflow to infinity,
/// NaN kept quiet).
#[inline(always)]
pub fn f16_nearest(x: f32) -> u32 {
    let b = x.to_bits();
    let sign = (b >> 16) & 0x8000;
    let a = b & 0x7fff_ffff;
    // Every case computed and one selected, without branches (runs of values vectorise).
    // Normal: rebias the exponent (127 to 15), round away 13 bits.
    let r = a.wrapping_sub(0x3800_0000);
    let normal = r.wrapping_add(0xfff + ((r >> 13) & 1)) >> 13;
    // Subnormal: units of 2^-24, rounded by f32 addition to 2^23, whose low bits then hold
    // them (1024 is the smallest normal).
    let y = f32::from_bits(a.min(0x3880_0000)) * 16_777_216.0;
    let tiny = (y + 8_388_608.0).to_bits() - 0x4b00_0000;
    let m = if a >= 0x3880_0000 { normal } else { tiny };
    // 65520 and up round to infinity; NaN stays quiet.
    let m = if a >= 0x477f_f000 { 0x7c00 } else { m };
    let m = if a > 0x7f80_0000 { 0x7e00 } else { m };
    sign | m
}

/// The f32 value of f16 bits `v` (low 16 bits).
#[inline(always)]
pub fn f16_widen(v: u32) -> f32 {
    let sign = (v & 0x8000) << 16;
    let e = (v >> 10) & 0x1f;
    let m = v & 0x3ff;
    let mag = match e {
        0 => (m as f32 * (1.0 / 16_777_216.0)).to_bits(),
        0x1f => 0x7f80_0000 | (m << 13),
        _ => ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(sign | mag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// f16 rounding to nearest, ties to even, in f64 arithmetic (the reference).
    fn f16_reference(x: f32) -> u32 {
        if x.is_nan() {
            return ((x.to_bits() >> 16) & 0x8000) | 0x7e00;
        }
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        let a = (x as f64).abs();
        if a >= 65520.0 {
            // Half an ulp beyond the largest finite value or more: infinity.
            return sign | 0x7c00;
        }
        // The largest magnitude not above `a` (magnitudes are ordered as their bits), then the
        // nearer of it and the next, ties to the even one.
        let (mut lo, mut hi) = (0u32, 0x7bff);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match f16_widen(mid) as f64 <= a {
                true => lo = mid,
                false => hi = mid - 1,
            }
        }
        let below = a - f16_widen(lo) as f64;
        let above = f16_widen(lo + 1) as f64 - a;
        let best = match below.partial_cmp(&above) {
            Some(std::cmp::Ordering::Less) => lo,
            Some(std::cmp::Ordering::Greater) => lo + 1,
            _ => lo + (lo & 1),
        };
        sign | best
    }

    #[test]
    fn f16_conversions_match_the_reference() {
        for v in 0..=0xffffu32 {
            let x = f16_widen(v);
            if x.is_nan() {
                assert_eq!(f16_nearest(x) & 0x7e00, 0x7e00);
                continue;
            }
            assert_eq!(f16_nearest(x), v, "{v:#x}");
        }
        let mut s = 3;
        let mut special = vec![
            65519.0f32,
            65520.0,
            65504.0,
            2.0f32.powi(-25),
            2.0f32.powi(-24),
        ];
        special.extend((0..3000).map(|_| {
            let e = (xorshift(&mut s) % 40) as i32 - 28;
            (xorshift(&mut s) % 100_000) as f32 * 1e-5 * 2.0f32.powi(e)
        }));
        // Exact midpoints between neighbours (ties).
        special.extend(
            (1..2000u32).map(|m| ((f16_widen(m) as f64 + f16_widen(m + 1) as f64) / 2.0) as f32),
        );
        for x in special {
            for x in [x, -x] {
                assert_eq!(f16_nearest(x), f16_reference(x), "{x:e}");
            }
        }
    }

    /// The preimage as the means of neighbouring values (the definition).
    fn preimage_by_neighbours(form: Form, m: u32) -> Option<(f64, f64)> {
        let inf = match form {
            Form::F32 => 0x7f80_0000,
            Form::Bf16Nearest | Form::Bf16Truncated => 0x7f80,
            Form::F16Nearest => 0x7c00,
        };
        if m == 0 || m >= inf {
            return None;
        }
        let w = |m: u32| form.widen(m) as f64;
        Some(match form {
            Form::F32 => (w(m), w(m)),
            Form::Bf16Truncated => match m + 1 == inf {
                true => (w(m), f32::MAX as f64),
                false => (w(m), w(m + 1)),
            },
            Form::Bf16Nearest | Form::F16Nearest => {
                let next = match m + 1 == inf {
                    true => 2.0 * w(m) - w(m - 1),
                    false => w(m + 1),
                };
                ((w(m - 1) + w(m)) / 2.0, (w(m) + next) / 2.0)
            }
        })
    }

    #[test]
    fn preimages_are_the_means_of_neighbours() {
        for form in [Form::Bf16Nearest, Form::Bf16Truncated, Form::F16Nearest] {
            for m in 0..0x8000u32 {
                assert_eq!(
                    form.preimage(m),
                    preimage_by_neighbours(form, m),
                    "{form:?} {m:#x}"
                );
            }
        }
        for m in (0..0x8000_0000u32)
            .step_by(9973)
            .chain([1, 0x7f7f_ffff, 0x7f80_0000])
        {
            assert_eq!(Form::F32.preimage(m), preimage_by_neighbours(Form::F32, m));
        }
    }

    #[test]
    fn preimages_round_to_their_value() {
        for form in [Form::Bf16Nearest, Form::Bf16Truncated, Form::F16Nearest] {
            for m in [1u32, 2, 0x3c00, 0x3c01, 0x3f80, 0x4000, 0x7bff, 0x7f7f] {
                // bf16's subnormals are f32 subnormals, too coarse for the probes below.
                if form != Form::F16Nearest && m < 0x80 {
                    continue;
                }
                let Some((lo, hi)) = form.preimage(m) else {
                    continue;
                };
                let inside = [lo * (1.0 + 1e-6), (lo + hi) / 2.0, hi * (1.0 - 1e-6)];
                for x in inside {
                    assert_eq!(form.narrow(x as f32), m, "{form:?} {m:#x} {x:e}");
                }
                for x in [lo * (1.0 - 1e-5), hi * (1.0 + 1e-5)] {
                    assert_ne!(form.narrow(x as f32), m, "{form:?} {m:#x} {x:e}");
                }
                assert_eq!(form.narrow(form.middle(m)), m);
            }
        }
    }
}
