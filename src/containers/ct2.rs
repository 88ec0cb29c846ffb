//! The CTranslate2 model file (`model.bin`): where its float variables lie.
//!
//! Binary versions 4 to 6, little-endian: the version (`u32`), the spec's name (a string: `u16`
//! length counting a closing NUL, the bytes, the NUL), its revision (`u32`), the variable count
//! (`u32`), then each variable: name, rank (`u8`), dimensions (`u32` each), type (`u8`: 0 f32,
//! 1 int8, 2 int16, 3 int32, 4 f16, 5 bf16), byte count (`u32`) and its values, unaligned;
//! then the alias count (`u32`) and pairs of names. f32, f16 and bf16 variables take the tensor
//! path; the rest (names, integer and quantized weights) stays general data. A file must end
//! where its last alias does, and each variable's byte count match its shape.

use super::reader::Reader;
use super::segment::{around, Kind};
use crate::codecs::float::DType;

/// Variables smaller than this stay in the general data around them.
const MIN_TENSOR: u64 = 4 << 10;

/// A string: its length counts the closing NUL, and no other byte is NUL.
fn string<'a>(r: &mut Reader<'a>) -> Option<&'a [u8]> {
    let n = r.u16()?;
    let s = r.take(n.into())?;
    let (&last, text) = s.split_last()?;
    (last == 0 && !text.contains(&0)).then_some(text)
}

fn float_type(t: u8) -> Option<DType> {
    match t {
        0 => Some(DType::F32),
        4 => Some(DType::F16),
        5 => Some(DType::BF16),
        _ => None,
    }
}

/// Bytes per value of each variable type.
fn width(t: u8) -> Option<u64> {
    match t {
        0 | 3 => Some(4),
        1 => Some(1),
        2 | 4 | 5 => Some(2),
        _ => None,
    }
}

/// Segments of a well-formed CTranslate2 model file with float variables of at least
/// `MIN_TENSOR` bytes, or `None`.
pub fn stretches(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    let mut r = Reader::new(data);
    if !(4..=6).contains(&r.u32()?) {
        return None;
    }
    let name = string(&mut r)?;
    if name.is_empty() || !name.iter().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    r.u32()?;
    let variables = r.u32()?;
    let mut floats = Vec::new();
    for _ in 0..variables {
        string(&mut r)?;
        let rank = r.u8()?;
        let mut count = 1u64;
        for _ in 0..rank {
            count = count.checked_mul(u64::from(r.u32()?))?;
        }
        let t = r.u8()?;
        let bytes = u64::from(r.u32()?);
        if count.checked_mul(width(t)?)? != bytes {
            return None;
        }
        let start = r.at() as u64;
        r.take(bytes)?;
        if let Some(d) = float_type(t).filter(|_| bytes >= MIN_TENSOR) {
            floats.push((start, bytes, d));
        }
    }
    let aliases = r.u32()?;
    for _ in 0..aliases {
        string(&mut r)?;
        string(&mut r)?;
    }
    if r.left() != 0 {
        return None;
    }
    around(data.len() as u64, floats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&(s.len() as u16 + 1).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    }

    /// A model file (binary version 6) of `(name, dims, type id, bytes)` variables and aliases.
    fn model(vars: &[(&str, &[u32], u8, Vec<u8>)], aliases: &[(&str, &str)]) -> Vec<u8> {
        let mut out = 6u32.to_le_bytes().to_vec();
        string("TransformerSpec", &mut out);
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&(vars.len() as u32).to_le_bytes());
        for (name, dims, t, bytes) in vars {
            string(name, &mut out);
            out.push(dims.len() as u8);
            for d in *dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.push(*t);
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out.extend_from_slice(&(aliases.len() as u32).to_le_bytes());
        for (a, b) in aliases {
            string(a, &mut out);
            string(b, &mut out);
        }
        out
    }

    #[test]
    fn float_variables_are_found_and_the_rest_is_general() {
        let f32s: Vec<u8> = (0..3000u32)
            .flat_map(|i| (i as f32 * 0.01).to_le_bytes())
            .collect();
        let f16s: Vec<u8> = (0..2100u32)
            .flat_map(|i| (i as u16).to_le_bytes())
            .collect();
        let int8 = vec![3u8; 6000];
        let file = model(
            &[
                ("encoder/embeddings/weight", &[1000, 3], 0, f32s.clone()),
                ("encoder/layer_0/weight", &[6000], 1, int8),
                ("encoder/layer_0/scale", &[2], 0, vec![0; 8]),
                ("decoder/weight", &[30, 70], 4, f16s.clone()),
            ],
            &[("decoder/embeddings/weight", "encoder/embeddings/weight")],
        );
        let p = stretches(&file).unwrap();
        assert_eq!(p.iter().map(|x| x.0).sum::<u64>(), file.len() as u64);
        let floats: Vec<_> = p.iter().filter(|x| x.1 != Kind::General).collect();
        assert_eq!(
            floats,
            [
                &(f32s.len() as u64, Kind::Tensor(DType::F32)),
                &(f16s.len() as u64, Kind::Tensor(DType::F16))
            ]
        );
        // Cut or extended files, a shape that does not match its bytes, other versions.
        for cut in [3, 30, file.len() / 2, file.len() - 1] {
            assert!(stretches(&file[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = file.clone();
        longer.push(0);
        assert!(stretches(&longer).is_none());
        let mut bad = file.clone();
        bad[0] = 7;
        assert!(stretches(&bad).is_none());
        let bad = model(&[("w", &[1000, 4], 0, f32s.clone())], &[]);
        assert!(stretches(&bad).is_none());
    }
}
