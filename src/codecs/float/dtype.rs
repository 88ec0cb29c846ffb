//! The element types of float arrays, their tags in payloads, and their byte order.

use crate::error::{Error, Result};

/// Reverses the byte order of each `width`-byte value of `bytes` in place (big-endian arrays
/// to little-endian and back); a partial last value is left as it is.
pub fn swap_order(bytes: &mut [u8], width: usize) {
    for v in bytes.chunks_exact_mut(width) {
        v.reverse();
    }
}

/// Element type of a float array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// fp8 E4M3 (the OCP "fn" variant: no infinities, one NaN pattern per sign).
    F8E4M3,
    /// fp8 E5M2 (the top byte of an IEEE half).
    F8E5M2,
}

impl DType {
    /// Bytes per element.
    pub fn width(self) -> usize {
        match self {
            DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// Tag byte stored in tensor block payloads.
    pub fn tag(self) -> u8 {
        match self {
            DType::F16 => 1,
            DType::BF16 => 2,
            DType::F32 => 3,
            DType::F64 => 4,
            DType::F8E4M3 => 5,
            DType::F8E5M2 => 6,
        }
    }

    /// Dtype of a tag byte.
    pub fn from_tag(t: u8) -> Result<Self> {
        match t {
            1 => Ok(DType::F16),
            2 => Ok(DType::BF16),
            3 => Ok(DType::F32),
            4 => Ok(DType::F64),
            5 => Ok(DType::F8E4M3),
            6 => Ok(DType::F8E5M2),
            _ => Err(Error::Corrupt(format!("unknown tensor dtype {t}"))),
        }
    }

    /// Lower-case name, as accepted by `--dtype`.
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
        }
    }
}

impl std::str::FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "f16" | "fp16" | "float16" => Ok(DType::F16),
            "bf16" | "bfloat16" => Ok(DType::BF16),
            "f32" | "fp32" | "float32" => Ok(DType::F32),
            "f64" | "fp64" | "float64" => Ok(DType::F64),
            "f8e4m3" | "fp8e4m3" | "e4m3" | "float8_e4m3fn" => Ok(DType::F8E4M3),
            "f8e5m2" | "fp8e5m2" | "e5m2" | "float8_e5m2" => Ok(DType::F8E5M2),
            _ => Err(format!(
                "unknown dtype '{s}' (expected f16, bf16, f32, f64, f8e4m3 or f8e5m2)"
            )),
        }
    }
}
