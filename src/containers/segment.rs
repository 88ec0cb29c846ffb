//! What the parsers say of a stretch of their input: its kind, and the parts of a file around
//! its float arrays.

use crate::codecs::float::DType;

/// What a stretch of the input holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Anything: metadata, integers, text.
    General,
    /// A tensor file's header (safetensors JSON or .npy dictionary, with what precedes it).
    TensorHeader,
    /// Consecutive values of one float type.
    Tensor(DType),
    /// A quantized tensor's one-byte integers (int8, uint8, int4 packed two to a byte).
    Quantized,
    /// One whole JPEG file (`jpeg`), in a stretch of general data or alone.
    Jpeg,
    /// One deflate stream with its header (`deflate`): a gzip member, a zip entry, a zlib
    /// stream.
    Deflate,
}

impl Kind {
    /// Whether the stretch holds a tensor's values (float or one-byte integers).
    pub fn is_tensor(self) -> bool {
        matches!(self, Kind::Tensor(_) | Kind::Quantized)
    }
}

/// A stretch of the input and what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Length in bytes.
    pub len: u64,
    /// Its content.
    pub kind: Kind,
}

/// The parts of a file of `total` bytes whose float arrays are `floats` (start, length, type):
/// general data around them. `None` if there are none, or they overlap or run past the end.
pub(super) fn around(total: u64, mut floats: Vec<(u64, u64, DType)>) -> Option<Vec<(u64, Kind)>> {
    if floats.is_empty() {
        return None;
    }
    floats.sort_by_key(|f| f.0);
    let mut parts = Vec::new();
    let mut at = 0u64;
    for (start, len, dtype) in floats {
        let end = start.checked_add(len)?;
        if start < at || end > total {
            return None;
        }
        parts.push((start - at, Kind::General));
        parts.push((len, Kind::Tensor(dtype)));
        at = end;
    }
    parts.push((total - at, Kind::General));
    Some(parts)
}
