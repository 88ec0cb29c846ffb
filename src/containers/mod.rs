//! Parsers of the files people store, finding the float arrays in them: safetensors
//! (`safetensors`), .npy and .npz (`numpy`), GGUF (`gguf`), ONNX (`onnx`), CTranslate2 (`ct2`),
//! PyTorch checkpoints (`torch`, with its `pickle` walker), or a raw array of a dtype the user
//! names; and within general data, JPEG files (`jpeg`) and deflate streams (`deflate`). Each
//! parser reads only within its input through one bounded `reader::Reader` or a
//! crate, and returns `None` on anything it does not understand; none knows a codec.

mod ct2;
mod deflate;
mod gguf;
mod jpeg;
mod numpy;
mod onnx;
mod pickle;
mod reader;
mod safetensors;
mod segment;
mod torch;

pub(crate) use self::safetensors::is_float;
pub use segment::{Kind, Segment};

use crate::codecs::float::DType;
use std::io::Read;

/// Splits `data` into segments, merging neighbours of the same kind. `raw` is the dtype the
/// user gave for a file that is neither safetensors nor .npy.
pub fn layout(data: &[u8], raw: Option<DType>) -> Vec<Segment> {
    let parts = safetensors::stretches(data)
        .or_else(|| numpy::npy(data))
        .or_else(|| numpy::npz(data))
        .or_else(|| gguf::stretches(data))
        .or_else(|| onnx::stretches(data))
        .or_else(|| ct2::stretches(data))
        .or_else(|| torch::stretches(data))
        .unwrap_or_else(|| match raw {
            Some(d) => vec![(data.len() as u64, Kind::Tensor(d))],
            None => deflate::split(data, jpeg::stretches(data)),
        });
    merge(parts)
}

/// Segments from (length, kind) parts: empty ones dropped, neighbours of one kind merged
/// unless both are large tensors.
fn merge(parts: Vec<(u64, Kind)>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    for (len, kind) in parts {
        if len == 0 {
            continue;
        }
        // Small integer tensors stay in the general data around them, whose context LZMA
        // shares among them.
        let kind = match kind {
            Kind::Quantized if len < OWN_SEGMENT => Kind::General,
            k => k,
        };
        match out.last_mut() {
            // Large tensors stay apart so that each gets its own codec choice and statistics;
            // so does every JPEG file and deflate stream, which their codecs take whole or not
            // at all.
            Some(last)
                if last.kind == kind
                    && !matches!(kind, Kind::Jpeg | Kind::Deflate)
                    && (last.len < OWN_SEGMENT || len < OWN_SEGMENT) =>
            {
                last.len += len
            }
            _ => out.push(Segment { len, kind }),
        }
    }
    out
}

/// Tensors of at least this many bytes get a segment (and so blocks) of their own.
const OWN_SEGMENT: u64 = 64 << 10;

/// Largest safetensors header read from a stream to find its structure.
const MAX_STREAM_HEADER: u64 = 16 << 20;

/// Reads the start of a stream and, if it is a safetensors or .npy file, returns its segments
/// (the stream's length being unknown, the last tensor's end is where they stop). Returns the
/// bytes read, which the caller must still code, in front of the rest of the stream.
pub fn sniff_stream(input: &mut impl Read) -> std::io::Result<(Vec<u8>, Option<Vec<Segment>>)> {
    let mut head = Vec::new();
    input.by_ref().take(8).read_to_end(&mut head)?;
    if head.len() < 8 {
        return Ok((head, None));
    }
    if head.starts_with(b"\x93NUMPY") {
        input.by_ref().take(4).read_to_end(&mut head)?;
        let Some((start, len)) = numpy::npy_preamble(&head) else {
            return Ok((head, None));
        };
        if len as u64 > MAX_STREAM_HEADER {
            return Ok((head, None));
        }
        let want = (start + len).saturating_sub(head.len()) as u64;
        input.by_ref().take(want).read_to_end(&mut head)?;
        let parts = numpy::npy_header(&head).map(|(end, dtype, bytes)| {
            vec![
                (end as u64, Kind::TensorHeader),
                (bytes, Kind::Tensor(dtype)),
            ]
        });
        return Ok((head, parts.map(merge)));
    }
    let n = u64::from_le_bytes(head[..8].try_into().unwrap_or([0; 8]));
    if !(2..=MAX_STREAM_HEADER).contains(&n) {
        return Ok((head, None));
    }
    input.by_ref().take(n).read_to_end(&mut head)?;
    if head.len() as u64 != 8 + n || head[8] != b'{' {
        return Ok((head, None));
    }
    let parts = serde_json::from_slice::<::safetensors::tensor::Metadata>(&head[8..])
        .ok()
        .and_then(|meta| safetensors::tensor_parts(&meta, 8 + n, None));
    Ok((head, parts.map(merge)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zip of `members` (name, bytes), each stored.
    fn zip_of(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, bytes) in members {
            zip.start_file(*name, stored).unwrap();
            std::io::Write::write_all(&mut zip, bytes).unwrap();
        }
        zip.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn npz_arrays_take_the_tensor_path() {
        let header = "{'descr': '<f2', 'fortran_order': False, 'shape': (3000, 20), }\n";
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
        npy.extend_from_slice(header.as_bytes());
        npy.extend((0..120_000u32).map(|i| (i * 7 % 251) as u8));
        let npz = zip_of(&[("a.npy", &npy), ("readme.txt", b"hello"), ("b.npy", &npy)]);
        let segs = layout(&npz, None);
        let tensors: Vec<_> = segs
            .iter()
            .filter(|s| s.kind == Kind::Tensor(DType::F16))
            .collect();
        assert_eq!(tensors.len(), 2, "{segs:?}");
        assert!(tensors.iter().all(|s| s.len == 120_000), "{segs:?}");
        assert_eq!(segs.iter().map(|s| s.len).sum::<u64>(), npz.len() as u64);
        // A zip of other things, and a cut one, stay general data.
        let text = zip_of(&[("a.txt", b"some text, not an array"), ("b.npy", b"not npy")]);
        assert!(layout(&text, None).iter().all(|s| s.kind == Kind::General));
        let cut = &npz[..npz.len() / 2];
        assert!(layout(cut, None).iter().all(|s| s.kind == Kind::General));
    }

    fn st_file(entries: &[(&str, &str, usize)]) -> Vec<u8> {
        let mut json = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
        let mut off = 0;
        let mut body = Vec::new();
        for (name, dt, bytes) in entries {
            let w = match *dt {
                "F32" | "I32" => 4,
                "F64" => 8,
                "U8" | "I8" => 1,
                _ => 2,
            };
            json += &format!(
                ",\"{name}\":{{\"dtype\":\"{dt}\",\"shape\":[{}],\"data_offsets\":[{off},{}]}}",
                bytes / w,
                off + bytes
            );
            off += bytes;
            body.extend((0..*bytes).map(|i| (i * 7) as u8));
        }
        json.push('}');
        while (json.len() + 8) % 8 != 0 {
            json.push(' ');
        }
        let mut out = (json.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(json.as_bytes());
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn safetensors_segments_follow_the_header() {
        let f = st_file(&[
            ("a", "F32", 400),
            ("b", "F32", 40),
            ("c", "I32", 12),
            ("d", "BF16", 6),
            ("e", "BF16", 70_000),
            ("f", "BF16", 80_000),
        ]);
        let l = layout(&f, None);
        let h = f.len() as u64 - 150_458;
        assert_eq!(
            l,
            vec![
                Segment {
                    len: h,
                    kind: Kind::TensorHeader
                },
                Segment {
                    len: 440,
                    kind: Kind::Tensor(DType::F32)
                },
                Segment {
                    len: 12,
                    kind: Kind::General
                },
                Segment {
                    len: 70_006,
                    kind: Kind::Tensor(DType::BF16)
                },
                Segment {
                    len: 80_000,
                    kind: Kind::Tensor(DType::BF16)
                },
            ]
        );
        // One-byte integers: a large tensor on its own, small ones with the general data.
        let f = st_file(&[("q", "I8", 70_000), ("s", "F32", 4), ("r", "U8", 100)]);
        let kinds: Vec<_> = layout(&f, None).iter().map(|s| (s.len, s.kind)).collect();
        assert_eq!(
            kinds[1..],
            [
                (70_000, Kind::Quantized),
                (4, Kind::Tensor(DType::F32)),
                (100, Kind::General)
            ]
        );
        // A damaged header is not safetensors.
        let mut bad = f.clone();
        bad[10] = b'#';
        assert_eq!(
            layout(&bad, None),
            vec![Segment {
                len: f.len() as u64,
                kind: Kind::General
            }]
        );
    }

    #[test]
    fn npy_and_raw() {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }";
        let mut f = b"\x93NUMPY\x01\x00".to_vec();
        let mut h = header.to_string();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        f.extend_from_slice(&(h.len() as u16).to_le_bytes());
        f.extend_from_slice(h.as_bytes());
        let hl = f.len() as u64;
        f.extend(std::iter::repeat_n(1u8, 60));
        assert_eq!(
            layout(&f, None),
            vec![
                Segment {
                    len: hl,
                    kind: Kind::TensorHeader
                },
                Segment {
                    len: 60,
                    kind: Kind::Tensor(DType::F32)
                },
            ]
        );
        assert_eq!(
            layout(b"plain text", Some(DType::F16)),
            vec![Segment {
                len: 10,
                kind: Kind::Tensor(DType::F16)
            }]
        );
        assert_eq!(layout(b"", None), vec![]);
    }
}
