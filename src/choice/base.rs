//! The base of a delta archive (`--patch-from`): an earlier file of the same model, whose
//! tensors a new file's are matched to, so that each matched tensor can be coded against its
//! earlier values (codec `delta`). Safetensors files are matched by tensor name, dtype and
//! shape; the other containers `detect` reads (.npy, .npz, GGUF, ONNX, CTranslate2, PyTorch)
//! by their float arrays in order, where both files hold the same sequence of array types and
//! lengths.

use crate::codecs::float::DType;
use crate::containers::{Kind, Segment};
use crate::format::checksum::hex;
use crate::format::BaseId;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// A base file, whole in memory or mapped, with its identity.
#[derive(Clone)]
pub struct Base {
    bytes: Arc<dyn AsRef<[u8]> + Send + Sync>,
    /// Its SHA-256 and length, which an archive made against it records.
    pub id: BaseId,
}

impl fmt::Debug for Base {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Base({} bytes, sha256 {})",
            self.id.len,
            hex(&self.id.sha256)
        )
    }
}

impl Base {
    /// The base file `bytes` (a `Vec<u8>`, a memory map, ...), hashed once here.
    pub fn new(bytes: Arc<dyn AsRef<[u8]> + Send + Sync>) -> Self {
        let data = (*bytes).as_ref();
        let id = BaseId {
            sha256: Sha256::digest(data).into(),
            len: data.len() as u64,
        };
        Base { bytes, id }
    }

    /// Whether the bytes still hash to the base's SHA-256 (a mapped file another process may
    /// have written).
    pub fn unchanged(&self) -> bool {
        <[u8; 32]>::from(Sha256::digest(self.bytes())) == self.id.sha256
    }

    /// The base file's bytes.
    pub fn bytes(&self) -> &[u8] {
        (*self.bytes).as_ref()
    }

    /// Where the float tensors of `new` sit in the base: for each tensor matched, its span,
    /// neighbours that are neighbours in both files merged. Empty where nothing matches.
    /// `layout`: `new`'s segments, as `containers::layout` found them with `dtype` (what a file in
    /// no container holds, `--dtype`).
    pub(crate) fn spans(&self, new: &[u8], layout: &[Segment], dtype: Option<DType>) -> Vec<Span> {
        match (tensors(new), tensors(self.bytes())) {
            (Some(new), Some(old)) => by_name(&new, &old),
            _ => by_order(layout, &crate::containers::layout(self.bytes(), dtype)),
        }
    }
}

/// Spans of the tensors of `new` with the same name, dtype and shape in `old`.
fn by_name(new_tensors: &[Tensor], old: &[Tensor]) -> Vec<Span> {
    let old: HashMap<&str, &Tensor> = old.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut spans: Vec<Span> = Vec::new();
    for t in new_tensors {
        let Some(b) = old.get(t.name.as_str()) else {
            continue;
        };
        if b.dtype != t.dtype || b.shape != t.shape || b.end - b.start != t.end - t.start {
            continue;
        }
        match spans.last_mut() {
            Some(last) if last.end == t.start && last.base + (last.end - last.start) == b.start => {
                last.end = t.end
            }
            _ => spans.push(Span {
                start: t.start,
                end: t.end,
                base: b.start,
            }),
        }
    }
    spans
}

/// Spans of the float arrays of a new file paired in order with those of the base, given both
/// files' layouts, where they hold the same sequence of array types and lengths (the same
/// model saved by the same tool).
fn by_order(new: &[Segment], old: &[Segment]) -> Vec<Span> {
    let arrays = |layout: &[Segment]| {
        let mut at = 0u64;
        let mut out = Vec::new();
        for s in layout {
            if let Kind::Tensor(d) = s.kind {
                out.push((at, s.len, d));
            }
            at += s.len;
        }
        out
    };
    let (a, b) = (arrays(new), arrays(old));
    let same = a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| (x.1, x.2) == (y.1, y.2));
    match same {
        true => a
            .iter()
            .zip(&b)
            .map(|(x, y)| Span {
                start: x.0,
                end: x.0 + x.1,
                base: y.0,
            })
            .collect(),
        false => Vec::new(),
    }
}

/// Bytes `start..end` of the new file are the same tensors as the base's from `base` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub base: u64,
}

/// Where bytes `at..at + len` of the new file start in the base, if one span holds them all.
pub fn find(spans: &[Span], at: u64, len: u64) -> Option<u64> {
    let i = spans.partition_point(|s| s.end <= at);
    let s = spans.get(i)?;
    (s.start <= at && at + len <= s.end).then(|| s.base + (at - s.start))
}

/// A float tensor of a safetensors file: its name, dtype, shape and absolute byte range.
struct Tensor {
    name: String,
    dtype: safetensors::Dtype,
    shape: Vec<usize>,
    start: u64,
    end: u64,
}

/// The float tensors of a safetensors file in file order, or `None` if it is not one.
fn tensors(data: &[u8]) -> Option<Vec<Tensor>> {
    let (header_len, meta) = safetensors::SafeTensors::read_metadata(data).ok()?;
    let at = 8 + header_len as u64;
    let mut out: Vec<Tensor> = meta
        .tensors()
        .into_iter()
        .filter(|(_, t)| crate::containers::is_float(t.dtype))
        .map(|(name, t)| Tensor {
            name,
            dtype: t.dtype,
            shape: t.shape.clone(),
            start: at + t.data_offsets.0 as u64,
            end: at + t.data_offsets.1 as u64,
        })
        .filter(|t| t.end <= data.len() as u64 && t.start <= t.end)
        .collect();
    out.sort_by_key(|t| t.start);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::containers::layout;

    #[test]
    fn spans_are_found_merged_and_looked_up() {
        let spans = vec![
            Span {
                start: 100,
                end: 200,
                base: 50,
            },
            Span {
                start: 300,
                end: 400,
                base: 1000,
            },
        ];
        assert_eq!(find(&spans, 100, 100), Some(50));
        assert_eq!(find(&spans, 150, 20), Some(100));
        assert_eq!(find(&spans, 150, 60), None);
        assert_eq!(find(&spans, 250, 10), None);
        assert_eq!(find(&spans, 399, 1), Some(1099));
        assert_eq!(find(&spans, 400, 1), None);
        let file = include_bytes!("../../tests/data/conv.safetensors").to_vec();
        let base = Base::new(Arc::new(file.clone()));
        let spans = base.spans(&file, &layout(&file, None), None);
        assert_eq!(spans.len(), 1, "{spans:?}");
        assert_eq!(spans[0].start, spans[0].base);
        let text = b"not a tensor file";
        assert!(base.spans(text, &layout(text, None), None).is_empty());
    }

    #[test]
    fn other_files_pair_their_arrays_in_order() {
        let file = include_bytes!("../../tests/data/conv.safetensors");
        let values = &file[file.len() - 4096..];
        let base = Base::new(Arc::new(values.to_vec()));
        let whole = Span {
            start: 0,
            end: 4096,
            base: 0,
        };
        let spans = |new: &[u8], dtype| base.spans(new, &layout(new, dtype), dtype);
        assert_eq!(spans(values, Some(DType::F32)), vec![whole]);
        assert!(spans(&values[..2048], Some(DType::F32)).is_empty());
        assert!(spans(values, None).is_empty());
    }
}
