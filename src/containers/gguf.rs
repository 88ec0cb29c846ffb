//! The GGUF container (llama.cpp's model files): where its float tensors lie.
//!
//! A GGUF file is a header (magic `GGUF`, version 2 or 3, tensor and key-value counts), typed
//! key-value metadata (the tokenizer's vocabulary among them), a table of tensors (name,
//! dimensions, ggml type, offset into the data), then the tensors' data, aligned to
//! `general.alignment` (32 by default). Tensors of type F32, F16, BF16 and F64 take the tensor
//! path; everything else (header, metadata, quantized blocks, padding) the general one.
//! Read here from the bytes (no well-kept Rust crate parses GGUF without loading the model);
//! every count and length is checked against the file before it is used.

use super::reader::Reader;
use super::segment::{around, Kind};
use crate::codecs::float::DType;

/// Default alignment of the data section.
const ALIGNMENT: u64 = 32;

/// A GGUF string: its length, then its bytes.
fn string<'a>(r: &mut Reader<'a>) -> Option<&'a [u8]> {
    let n = r.u64()?;
    r.take(n)
}

/// Skips a value of metadata type `t`; returns it as a u64 where it is an unsigned integer
/// of at most 64 bits (what `general.alignment` is).
fn value(r: &mut Reader, t: u32, depth: u32) -> Option<Option<u64>> {
    let fixed = |n: u64, r: &mut Reader| -> Option<Option<u64>> {
        let b = r.take(n)?;
        let mut v = [0u8; 8];
        v[..b.len()].copy_from_slice(b);
        Some(Some(u64::from_le_bytes(v)))
    };
    match t {
        0 | 1 | 7 => fixed(1, r),
        2 | 3 => fixed(2, r),
        4..=6 => fixed(4, r),
        10..=12 => fixed(8, r),
        8 => string(r).map(|_| None),
        // An array: element type, count, elements (arrays of arrays at most one deep).
        9 if depth == 0 => {
            let et = r.u32()?;
            let n = r.u64()?;
            // Every element takes at least a byte: a count past the file is a bad file.
            if n > r.left() as u64 {
                return None;
            }
            for _ in 0..n {
                value(r, et, depth + 1)?;
            }
            Some(None)
        }
        _ => None,
    }
}

/// The float type of a ggml tensor type, if it is one.
fn float_type(t: u32) -> Option<DType> {
    match t {
        0 => Some(DType::F32),
        1 => Some(DType::F16),
        28 => Some(DType::F64),
        30 => Some(DType::BF16),
        _ => None,
    }
}

/// Segments of a well-formed GGUF file, or `None`.
pub fn stretches(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    let mut r = Reader::new(data);
    if r.take(4)? != b"GGUF" || !(2..=3).contains(&r.u32()?) {
        return None;
    }
    let tensors = r.u64()?;
    let kvs = r.u64()?;
    // Each key-value pair and each tensor entry takes more than 8 bytes.
    let room = data.len() as u64 / 8;
    if tensors > room || kvs > room {
        return None;
    }
    let mut alignment = ALIGNMENT;
    for _ in 0..kvs {
        let key = string(&mut r)?;
        let t = r.u32()?;
        let v = value(&mut r, t, 0)?;
        if key == b"general.alignment" {
            alignment = v.filter(|&a| a > 0 && a.is_power_of_two() && a <= 1 << 20)?;
        }
    }
    let mut floats = Vec::new();
    for _ in 0..tensors {
        string(&mut r)?;
        let dims = r.u32()?;
        if dims > 8 {
            return None;
        }
        let mut count = 1u64;
        for _ in 0..dims {
            count = count.checked_mul(r.u64()?)?;
        }
        let t = r.u32()?;
        let offset = r.u64()?;
        if let Some(d) = float_type(t) {
            floats.push((offset, count.checked_mul(d.width() as u64)?, d));
        }
    }
    let base = (r.at() as u64).checked_next_multiple_of(alignment)?;
    let floats = floats
        .into_iter()
        .map(|(offset, bytes, d)| Some((base.checked_add(offset)?, bytes, d)))
        .collect::<Option<Vec<_>>>()?;
    around(data.len() as u64, floats)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF file (version 3) with `kv` metadata entries already encoded and `tensors`
    /// (name, dims, ggml type, data), data aligned to 32.
    pub(crate) fn gguf(kv: &[Vec<u8>], tensors: &[(&str, &[u64], u32, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(kv.len() as u64).to_le_bytes());
        for k in kv {
            out.extend_from_slice(k);
        }
        let mut offset = 0u64;
        for (name, dims, t, bytes) in tensors {
            out.extend_from_slice(&(name.len() as u64).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for d in *dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            offset = (offset + bytes.len() as u64).next_multiple_of(ALIGNMENT);
        }
        for (_, _, _, bytes) in tensors {
            out.resize(out.len().next_multiple_of(ALIGNMENT as usize), 0);
            out.extend_from_slice(bytes);
        }
        out
    }

    /// A string key-value pair, and an array of strings.
    fn kv_string(key: &str, v: &str) -> Vec<u8> {
        let mut out = (key.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&8u32.to_le_bytes());
        out.extend_from_slice(&(v.len() as u64).to_le_bytes());
        out.extend_from_slice(v.as_bytes());
        out
    }

    fn kv_strings(key: &str, vs: &[&str]) -> Vec<u8> {
        let mut out = (key.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&9u32.to_le_bytes());
        out.extend_from_slice(&8u32.to_le_bytes());
        out.extend_from_slice(&(vs.len() as u64).to_le_bytes());
        for v in vs {
            out.extend_from_slice(&(v.len() as u64).to_le_bytes());
            out.extend_from_slice(v.as_bytes());
        }
        out
    }

    #[test]
    fn float_tensors_are_found_and_the_rest_is_general() {
        let kv = [
            kv_string("general.architecture", "bert"),
            kv_strings("tokenizer.ggml.tokens", &["[PAD]", "the", "##s", "cat"]),
        ];
        let f32s: Vec<u8> = (0..3000u32)
            .flat_map(|i| (i as f32 * 0.01).to_le_bytes())
            .collect();
        let f16s: Vec<u8> = (0..777u32).flat_map(|i| (i as u16).to_le_bytes()).collect();
        let q8 = vec![7u8; 34 * 10];
        let file = gguf(
            &kv,
            &[
                ("a", &[1000, 3], 0, f32s.clone()),
                ("q", &[320], 8, q8),
                ("b", &[777], 1, f16s.clone()),
            ],
        );
        let p = stretches(&file).unwrap();
        let total: u64 = p.iter().map(|x| x.0).sum();
        assert_eq!(total, file.len() as u64);
        let floats: Vec<_> = p.iter().filter(|x| x.1 != Kind::General).collect();
        assert_eq!(
            floats,
            [
                &(f32s.len() as u64, Kind::Tensor(DType::F32)),
                &(f16s.len() as u64, Kind::Tensor(DType::F16))
            ]
        );
        // Cut files, counts past the file, and other magic are not GGUF.
        for cut in [3, 20, 60, file.len() - 1] {
            assert!(stretches(&file[..cut]).is_none(), "cut at {cut}");
        }
        let mut bad = file.clone();
        bad[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(stretches(&bad).is_none());
        let mut bad = file.clone();
        bad[0] = b'X';
        assert!(stretches(&bad).is_none());
    }
}
