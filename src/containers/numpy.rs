//! numpy files: a .npy file (magic, version, a Python dictionary naming dtype and shape, then
//! the array's bytes) and a .npz file (a zip of .npy files, read by the `zip` crate).

use super::segment::{around, Kind};
use crate::codecs::float::DType;

/// Segments of a .npy file holding little-endian floats, or `None`.
pub(super) fn npy(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    let (end, dtype, bytes) = npy_header(data)?;
    let rest = (data.len() - end) as u64;
    if bytes > rest {
        return None;
    }
    Some(vec![
        (end as u64, Kind::TensorHeader),
        (bytes, Kind::Tensor(dtype)),
        (rest - bytes, Kind::General),
    ])
}

/// A numpy .npz file (a zip of .npy files): the data of each stored (uncompressed) float
/// array takes the tensor path, everything else (zip and .npy headers, compressed members, the
/// zip's directory) the general one.
pub(super) fn npz(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    if !data.starts_with(b"PK\x03\x04") {
        return None;
    }
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(data)).ok()?;
    let mut arrays = Vec::new();
    for i in 0..zip.len() {
        let Ok(f) = zip.by_index_raw(i) else {
            continue;
        };
        let npy = f.name().is_ok_and(|n| n.ends_with(".npy"));
        if f.compression() != zip::CompressionMethod::Stored || !npy {
            continue;
        }
        let start = f.data_start()? as usize;
        let member = data.get(start..start.checked_add(f.compressed_size() as usize)?)?;
        if let Some((end, dtype, bytes)) = npy_header(member) {
            if bytes <= (member.len() - end) as u64 {
                arrays.push(((start + end) as u64, bytes, dtype));
            }
        }
    }
    around(data.len() as u64, arrays)
}

/// Length of the .npy preamble (magic, version, header length) before the header, from its
/// first 12 bytes, or `None` if they are not one.
pub(super) fn npy_preamble(data: &[u8]) -> Option<(usize, usize)> {
    if data.get(..6)? != b"\x93NUMPY" {
        return None;
    }
    match *data.get(6)? {
        1 => Some((
            10,
            u16::from_le_bytes([*data.get(8)?, *data.get(9)?]) as usize,
        )),
        2 | 3 => Some((
            12,
            u32::from_le_bytes(data.get(8..12)?.try_into().ok()?) as usize,
        )),
        _ => None,
    }
}

/// From a .npy file's start: where its data begins, its float type and its data length.
pub(super) fn npy_header(data: &[u8]) -> Option<(usize, DType, u64)> {
    let (start, len) = npy_preamble(data)?;
    let end = start.checked_add(len)?;
    let header = std::str::from_utf8(data.get(start..end)?).ok()?;
    let dtype = match entry(header, "descr")?.trim_matches(|c| c == '\'' || c == '"') {
        "<f2" => DType::F16,
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        _ => return None,
    };
    let shape = entry(header, "shape")?;
    let mut count = 1u64;
    for dim in shape
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        count = count.checked_mul(dim.parse().ok()?)?;
    }
    Some((end, dtype, count.checked_mul(dtype.width() as u64)?))
}

/// Text of `key`'s value in a .npy header dictionary (up to the next top-level comma).
fn entry<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
    }
    None
}
