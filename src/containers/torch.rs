//! PyTorch checkpoints (`torch.save`, TorchScript archives): where their float storages lie.
//!
//! Two layouts. Since PyTorch 1.6 a checkpoint is a zip (read by the `zip` crate) whose members
//! `<name>/data/<key>` hold the storages, uncompressed, and `<name>/data.pkl` the pickled object
//! naming each key's storage type; TorchScript archives keep more under `constants/`, named by
//! `constants.pkl`. Before 1.6 (and with `_use_new_zipfile_serialization=False`) it is a stream
//! of five pickles (magic number, protocol version, system info, the object, the list of
//! storage keys), then each storage in that list's order as its element count (`u64`) and its
//! elements. Storages of f32, f16, bf16, f64 and fp8 take the tensor path; pickles, code,
//! integer storages and the zip's own records stay general data.

use super::pickle;
use super::segment::{around, Kind};
use crate::codecs::float::DType;
use std::collections::HashMap;

/// Storages smaller than this stay in the general data around them.
const MIN_TENSOR: u64 = 4 << 10;
/// The legacy layout's first pickle: protocol 2, the magic number as LONG1, STOP.
const LEGACY_MAGIC: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e";

/// Bytes per element and float type of a storage type.
fn storage_type(class: &str) -> Option<(u64, Option<DType>)> {
    Some(match class {
        "FloatStorage" => (4, Some(DType::F32)),
        "HalfStorage" => (2, Some(DType::F16)),
        "BFloat16Storage" => (2, Some(DType::BF16)),
        "DoubleStorage" => (8, Some(DType::F64)),
        "Float8_e4m3fnStorage" => (1, Some(DType::F8E4M3)),
        "Float8_e5m2Storage" => (1, Some(DType::F8E5M2)),
        "ByteStorage" | "CharStorage" | "BoolStorage" | "QUInt8Storage" | "QInt8Storage" => {
            (1, None)
        }
        "ShortStorage" => (2, None),
        "IntStorage" | "QInt32Storage" => (4, None),
        "LongStorage" | "ComplexFloatStorage" => (8, None),
        "ComplexDoubleStorage" => (16, None),
        _ => return None,
    })
}

/// Segments of a PyTorch checkpoint with float storages, or `None`.
pub fn stretches(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    if data.starts_with(b"PK\x03\x04") {
        zipped(data)
    } else if data.starts_with(LEGACY_MAGIC) {
        legacy(data)
    } else {
        None
    }
}

/// A stored (uncompressed) member's byte range.
fn stored(member: &zip::read::ZipFile<'_, std::io::Cursor<&[u8]>>) -> Option<(usize, usize)> {
    if member.compression() != zip::CompressionMethod::Stored {
        return None;
    }
    let start = usize::try_from(member.data_start()?).ok()?;
    let len = usize::try_from(member.compressed_size()).ok()?;
    Some((start, start.checked_add(len)?))
}

fn zipped(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(data)).ok()?;
    // Storage types by member name, from every `data.pkl` and `constants.pkl`.
    let mut types: HashMap<String, DType> = HashMap::new();
    let mut members = Vec::new();
    for i in 0..zip.len() {
        let member = zip.by_index_raw(i).ok()?;
        let name = member.name().ok()?.to_string();
        let Some(range) = stored(&member) else {
            continue;
        };
        let (dir, pkl) = match name.rsplit_once('/') {
            Some((prefix, "data.pkl")) => (format!("{prefix}/data/"), true),
            Some((prefix, "constants.pkl")) => (format!("{prefix}/constants/"), true),
            _ => (String::new(), false),
        };
        if pkl {
            let bytes = data.get(range.0..range.1)?;
            let p = pickle::walk(bytes, 0)?;
            for (key, class) in p.storages {
                if let Some((_, Some(d))) = storage_type(&class) {
                    types.insert(format!("{dir}{key}"), d);
                }
            }
        } else {
            members.push((name, range));
        }
    }
    let mut floats = Vec::new();
    for (name, (start, end)) in members {
        if let Some(&d) = types.get(&name) {
            let len = (end - start) as u64;
            if len >= MIN_TENSOR && len.is_multiple_of(d.width() as u64) {
                floats.push((start as u64, len, d));
            }
        }
    }
    around(data.len() as u64, floats)
}

fn legacy(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    let mut at = 0;
    let mut object = None;
    let mut keys = None;
    for i in 0..5 {
        let p = pickle::walk(data, at)?;
        at = p.end;
        match i {
            3 => object = Some(p.storages),
            4 => keys = Some(p.strings),
            _ => {}
        }
    }
    let types: HashMap<_, _> = object?.into_iter().collect();
    let mut floats = Vec::new();
    for key in keys? {
        let (width, dtype) = storage_type(types.get(&key)?)?;
        let count = u64::from_le_bytes(data.get(at..at.checked_add(8)?)?.try_into().ok()?);
        at += 8;
        let len = count.checked_mul(width)?;
        let end = at.checked_add(usize::try_from(len).ok()?)?;
        if end > data.len() {
            return None;
        }
        if let Some(d) = dtype.filter(|_| len >= MIN_TENSOR) {
            floats.push((at as u64, len, d));
        }
        at = end;
    }
    if at != data.len() {
        return None;
    }
    around(data.len() as u64, floats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::containers::pickle::tests::state_dict;

    fn f32s(n: u32) -> Vec<u8> {
        (0..n)
            .flat_map(|i| (i as f32 * 0.25).to_le_bytes())
            .collect()
    }

    /// A legacy checkpoint of `items` (name, storage type, key, bytes).
    fn legacy_file(items: &[(&str, &str, &str, Vec<u8>)], width: u64) -> Vec<u8> {
        let mut out = LEGACY_MAGIC.to_vec();
        out.extend_from_slice(b"\x80\x02M\xe9\x03.");
        out.extend_from_slice(b"\x80\x02}q\x00.");
        let meta: Vec<_> = items.iter().map(|(n, c, k, _)| (*n, *c, *k)).collect();
        out.extend_from_slice(&state_dict(&meta));
        out.extend_from_slice(b"\x80\x02]q\x00(");
        let mut sorted: Vec<_> = items.iter().collect();
        sorted.sort_by_key(|i| i.2);
        for (_, _, k, _) in &sorted {
            out.push(b'X');
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(k.as_bytes());
        }
        out.extend_from_slice(b"e.");
        for (_, _, _, bytes) in sorted {
            out.extend_from_slice(&(bytes.len() as u64 / width).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    #[test]
    fn legacy_checkpoints_have_their_storages_found() {
        let (a, b) = (f32s(3000), f32s(5000));
        let file = legacy_file(
            &[
                ("w", "FloatStorage", "94", a.clone()),
                ("v", "FloatStorage", "12", b.clone()),
            ],
            4,
        );
        let p = stretches(&file).unwrap();
        assert_eq!(p.iter().map(|x| x.0).sum::<u64>(), file.len() as u64);
        let floats: Vec<_> = p.iter().filter(|x| x.1 != Kind::General).collect();
        // Keys in sorted order: "12" (5000 values) first.
        assert_eq!(
            floats,
            [
                &(b.len() as u64, Kind::Tensor(DType::F32)),
                &(a.len() as u64, Kind::Tensor(DType::F32))
            ]
        );
        for cut in [10, 40, file.len() / 2, file.len() - 1] {
            assert!(stretches(&file[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = file.clone();
        longer.push(0);
        assert!(stretches(&longer).is_none());
    }

    #[test]
    fn zip_checkpoints_have_their_storages_found() {
        use std::io::Write;
        let (a, b) = (f32s(3000), f32s(700));
        let pkl = state_dict(&[("w", "FloatStorage", "0"), ("i", "LongStorage", "1")]);
        let mut out = Vec::new();
        {
            let mut z = zip::ZipWriter::new(std::io::Cursor::new(&mut out));
            let stored = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored);
            z.start_file("archive/data.pkl", stored).unwrap();
            z.write_all(&pkl).unwrap();
            z.start_file("archive/data/0", stored).unwrap();
            z.write_all(&a).unwrap();
            z.start_file("archive/data/1", stored).unwrap();
            z.write_all(&b).unwrap();
            z.start_file("archive/version", stored).unwrap();
            z.write_all(b"3\n").unwrap();
            z.finish().unwrap();
        }
        let p = stretches(&out).unwrap();
        assert_eq!(p.iter().map(|x| x.0).sum::<u64>(), out.len() as u64);
        let floats: Vec<_> = p.iter().filter(|x| x.1 != Kind::General).collect();
        assert_eq!(floats, [&(a.len() as u64, Kind::Tensor(DType::F32))]);
    }
}
