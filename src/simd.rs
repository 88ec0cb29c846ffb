//! The SIMD level every kernel of the process runs at (scalar, AVX2, AVX-512): detected once,
//! or forced (`SEP_KERNELS`, a testing knob); every level computes identical bits.

use crate::error::{Error, Result};

// The CPU features of each level, written once: `avx2!`, `avx512!` and `avx512_vbmi!` compile
// the items they wrap with them enabled (x86-64 only). Such an item may only run at that level
// or above (`level()`), which the caller states in a SAFETY line.

/// Compiles the wrapped items with the AVX2 level's features (AVX2, POPCNT, BMI1/2, LZCNT).
macro_rules! avx2 {
    ($($item:item)*) => {$(
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,popcnt,bmi1,bmi2,lzcnt")]
        $item
    )*};
}

/// Compiles the wrapped items with the AVX-512 level's features (F, BW, DQ, VL and AVX2's).
macro_rules! avx512 {
    ($($item:item)*) => {$(
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,popcnt,bmi1,bmi2,lzcnt")]
        $item
    )*};
}

/// Compiles the wrapped items with the AVX-512 level's features and VBMI, which only some
/// AVX-512 CPUs have (`has_vbmi`).
macro_rules! avx512_vbmi {
    ($($item:item)*) => {$(
        #[cfg(target_arch = "x86_64")]
        #[target_feature(
            enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx2,popcnt,bmi1,bmi2,lzcnt"
        )]
        $item
    )*};
}

/// Defines the fn `$name` (generics declared `[$decl]`, passed `[$pass]`; both may be empty)
/// whose `$body` is compiled once per level, with that level's features enabled, and run at
/// the process's level: portable code the compiler vectorises as wide as the level allows,
/// computing the same bits at every level.
macro_rules! kernel_variants {
    ($(#[$meta:meta])* $vis:vis fn $name:ident [$($decl:tt)*] [$($pass:tt)*]
        ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name<$($decl)*>($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body<$($decl)*>($($arg: $ty),*) $(-> $ret)? $body
            $crate::simd::avx512! {
                fn avx512<$($decl)*>($($arg: $ty),*) $(-> $ret)? {
                    body::<$($pass)*>($($arg),*)
                }
            }
            $crate::simd::avx2! {
                fn avx2<$($decl)*>($($arg: $ty),*) $(-> $ret)? {
                    body::<$($pass)*>($($arg),*)
                }
            }
            #[cfg(target_arch = "x86_64")]
            match $crate::simd::kernels() {
                // SAFETY: the process's level is never above what the CPU supports.
                $crate::simd::Kernels::Avx512 => return unsafe { avx512::<$($pass)*>($($arg),*) },
                // SAFETY: as above.
                $crate::simd::Kernels::Avx2 => return unsafe { avx2::<$($pass)*>($($arg),*) },
                $crate::simd::Kernels::Scalar => {}
            }
            body::<$($pass)*>($($arg),*)
        }
    };
}

pub(crate) use {avx2, avx512, avx512_vbmi, kernel_variants};

/// Whether the CPU has AVX-512 VBMI (for `avx512_vbmi!` items, at the AVX-512 level).
pub fn has_vbmi() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512vbmi");
    #[cfg(not(target_arch = "x86_64"))]
    false
}
use std::sync::atomic::{AtomicU8, Ordering};

/// Process-wide level; `UNSET` until first use or `set_level`.
static LEVEL: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = u8::MAX;

/// The SIMD level the kernels of this process run at (the detected one unless set).
pub fn kernels() -> Kernels {
    match LEVEL.load(Ordering::Relaxed) {
        0 => Kernels::Scalar,
        1 => Kernels::Avx2,
        2 => Kernels::Avx512,
        _ => set_kernels(Kernels::detect()),
    }
}

/// Sets the process-wide SIMD level, capped at what the CPU supports; returns the level in force.
/// Every level computes identical bits, so changing it between runs changes speed only.
pub fn set_kernels(wanted: Kernels) -> Kernels {
    let l = wanted.min(Kernels::detect());
    LEVEL.store(l as u8, Ordering::Relaxed);
    l
}

/// SIMD level the kernels run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Kernels {
    /// Portable scalar code, the reference every other level must match bit for bit.
    Scalar,
    /// x86-64 AVX2 with POPCNT, BMI1/2 and LZCNT (+FMA available but never contracted).
    Avx2,
    /// x86-64 AVX-512 (F, BW, DQ, VL) and the above.
    Avx512,
}

impl Kernels {
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
                return Kernels::Avx512;
            }
            if bits && std::arch::is_x86_feature_detected!("avx2") {
                return Kernels::Avx2;
            }
        }
        Kernels::Scalar
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
            "scalar" => Kernels::Scalar,
            "avx2" => Kernels::Avx2,
            "avx512" => Kernels::Avx512,
            other => {
                return Err(Error::InvalidOption(format!(
                    "SEP_KERNELS={other}: expected scalar, avx2, avx512 or auto"
                )))
            }
        };
        Ok(wanted.min(Self::detect()))
    }

    /// Every level this CPU can run, lowest first.
    pub fn supported() -> Vec<Self> {
        let best = Self::detect();
        [Kernels::Scalar, Kernels::Avx2, Kernels::Avx512]
            .into_iter()
            .filter(|&l| l <= best)
            .collect()
    }

    /// Lower-case name of the level.
    pub fn name(self) -> &'static str {
        match self {
            Kernels::Scalar => "scalar",
            Kernels::Avx2 => "avx2",
            Kernels::Avx512 => "avx512",
        }
    }
}

/// Asks the CPU to bring `s[i]`'s cache line closer (a hint: no effect on results, nothing
/// when `i` is out of bounds or off x86-64).
#[inline(always)]
pub fn prefetch<T>(s: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < s.len() {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch reads no memory architecturally and cannot fault; the address
        // is inside `s` anyway, and SSE is part of every x86-64 CPU.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(s.as_ptr().add(i) as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (s, i);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_levels() {
        assert_eq!(Kernels::parse("scalar").unwrap(), Kernels::Scalar);
        assert_eq!(Kernels::parse("AUTO").unwrap(), Kernels::detect());
        assert!(Kernels::parse("avx2").unwrap() <= Kernels::detect());
        assert!(Kernels::parse("neon9").is_err());
    }
}
