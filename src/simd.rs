//! The SIMD level every kernel of the process runs at (scalar, AVX2, AVX-512): detected once,
//! or forced (`SEP_KERNELS`, a testing knob); every level computes identical bits.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU8, Ordering};

/// Process-wide level; `UNSET` until first use or `set_level`.
static LEVEL: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = u8::MAX;

/// The SIMD level the kernels of this process run at (the detected one unless set).
pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        0 => Level::Scalar,
        1 => Level::Avx2,
        2 => Level::Avx512,
        _ => set_level(Level::detect()),
    }
}

/// Sets the process-wide SIMD level, capped at what the CPU supports; returns the level in force.
/// Every level computes identical bits, so changing it between runs changes speed only.
pub fn set_level(wanted: Level) -> Level {
    let l = wanted.min(Level::detect());
    LEVEL.store(l as u8, Ordering::Relaxed);
    l
}

/// SIMD level the kernels run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Portable scalar code, the reference every other level must match bit for bit.
    Scalar,
    /// x86-64 AVX2 with POPCNT, BMI1/2 and LZCNT (+FMA available but never contracted).
    Avx2,
    /// x86-64 AVX-512 (F, BW, DQ, VL) and the above.
    Avx512,
}

impl Level {
    /// The best level this CPU supports.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            // The bit-manipulation extensions come with every AVX2 CPU; kernels use them
            // (a popcount on a rANS renormalisation's critical path).
            let bits = std::arch::is_x86_feature_detected!("popcnt")
                && std::arch::is_x86_feature_detected!("bmi1")
                && std::arch::is_x86_feature_detected!("bmi2")
                && std::arch::is_x86_feature_detected!("lzcnt");
            if bits
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
            {
                return Level::Avx512;
            }
            if bits && std::arch::is_x86_feature_detected!("avx2") {
                return Level::Avx2;
            }
        }
        Level::Scalar
    }

    /// Level from `SEP_KERNELS` (`scalar`, `avx2`, `avx512`, `auto`), capped at what the CPU has.
    pub fn from_env() -> Result<Self> {
        match std::env::var("SEP_KERNELS") {
            Ok(v) => Self::parse(&v),
            Err(std::env::VarError::NotPresent) => Ok(Self::detect()),
            Err(_) => Err(Error::InvalidOption(
                "SEP_KERNELS is not valid UTF-8".into(),
            )),
        }
    }

    /// Parses a level name; a level above what the CPU supports falls back to the best available.
    pub fn parse(name: &str) -> Result<Self> {
        let wanted = match name.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => return Ok(Self::detect()),
            "scalar" => Level::Scalar,
            "avx2" => Level::Avx2,
            "avx512" => Level::Avx512,
            other => {
                return Err(Error::InvalidOption(format!(
                    "SEP_KERNELS={other}: expected scalar, avx2, avx512 or auto"
                )))
            }
        };
        Ok(wanted.min(Self::detect()))
    }

    /// Lower-case name of the level.
    pub fn name(self) -> &'static str {
        match self {
            Level::Scalar => "scalar",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_levels() {
        assert_eq!(Level::parse("scalar").unwrap(), Level::Scalar);
        assert_eq!(Level::parse("AUTO").unwrap(), Level::detect());
        assert!(Level::parse("avx2").unwrap() <= Level::detect());
        assert!(Level::parse("neon9").is_err());
    }
}
