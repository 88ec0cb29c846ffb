//! Safetensors files: an 8-byte header length, a JSON header (parsed by the `safetensors`
//! crate) naming each tensor's dtype and byte range, then the tensors' data.

use super::segment::Kind;
use crate::codecs::float::DType;

pub(super) fn tensor_kind(d: safetensors::Dtype) -> Kind {
    match d {
        safetensors::Dtype::F16 => Kind::Tensor(DType::F16),
        safetensors::Dtype::BF16 => Kind::Tensor(DType::BF16),
        safetensors::Dtype::F32 => Kind::Tensor(DType::F32),
        safetensors::Dtype::F64 => Kind::Tensor(DType::F64),
        safetensors::Dtype::F8_E4M3 => Kind::Tensor(DType::F8E4M3),
        safetensors::Dtype::F8_E5M2 => Kind::Tensor(DType::F8E5M2),
        safetensors::Dtype::I8 | safetensors::Dtype::U8 => Kind::Quantized,
        _ => Kind::General,
    }
}

/// Whether tensors of safetensors dtype `d` take the float codecs.
pub(crate) fn is_float(d: safetensors::Dtype) -> bool {
    matches!(tensor_kind(d), Kind::Tensor(_))
}

/// Segments of a well-formed safetensors file, or `None`.
pub(super) fn stretches(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    // Cheap checks first: header length in range and a JSON object right after it.
    let n = u64::from_le_bytes(data.get(..8)?.try_into().ok()?);
    if n < 2 || n > data.len() as u64 - 8 || data[8] != b'{' {
        return None;
    }
    let (header_len, meta) = safetensors::SafeTensors::read_metadata(data).ok()?;
    let mut parts = tensor_parts(&meta, 8 + header_len as u64, Some(data.len() as u64))?;
    let at: u64 = parts.iter().map(|p| p.0).sum();
    parts.push((data.len() as u64 - at, Kind::General));
    Some(parts)
}

/// Header segment and tensor segments (in file order) of safetensors metadata whose data
/// starts at `base`; `None` if tensors overlap or run past `total`.
pub(super) fn tensor_parts(
    meta: &safetensors::tensor::Metadata,
    base: u64,
    total: Option<u64>,
) -> Option<Vec<(u64, Kind)>> {
    let mut tensors: Vec<_> = meta.tensors().into_values().collect();
    tensors.sort_by_key(|t| t.data_offsets);
    let mut parts = vec![(base, Kind::TensorHeader)];
    let mut at = base;
    for t in tensors {
        let s = base.checked_add(t.data_offsets.0 as u64)?;
        let e = base.checked_add(t.data_offsets.1 as u64)?;
        if s < at || e < s || total.is_some_and(|n| e > n) {
            return None;
        }
        parts.push((s - at, Kind::General));
        // Only whole elements go to the planes codec.
        let kind = match tensor_kind(t.dtype) {
            Kind::Tensor(d) if (e - s) % d.width() as u64 != 0 => Kind::General,
            k => k,
        };
        parts.push((e - s, kind));
        at = e;
    }
    Some(parts)
}
