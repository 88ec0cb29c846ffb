//! The JPEG codec: a JPEG file recompressed losslessly by Lepton's model (the `lepton_jpeg`
//! crate): the image's coefficients are decoded from their Huffman codes and coded again with
//! an adaptive arithmetic coder that predicts each from its neighbours, about a fifth smaller;
//! the decoder rebuilds the original file byte for byte. The encoder keeps a payload only when
//! decoding it gives the block back exactly (`encode_lepton_verify`), so a JPEG it cannot
//! take (damaged, truncated, unusual) goes to the other codecs.
//!
//! Payload: the image's width and height (u16 each, little-endian, from its frame header),
//! then a Lepton file. The decoder holds Lepton to those dimensions and to the block's length,
//! which bound what it allocates (`decode_memory`), and checks the Lepton file's own header
//! (`check_header`) before Lepton reads it, as Lepton sizes buffers by its counts unchecked.

use super::block_codec::{BlockCodec, Seen};
use crate::error::{Error, Result};
use crate::format::Codec;
use lepton_jpeg::{EnabledFeatures, SingleThreadPool};

/// Bytes before the Lepton file.
const HEAD: usize = 4;
/// Widest and tallest image taken: Lepton's own limit.
const MAX_SIDE: u32 = 16386;
/// Most pixels of an image taken, which bounds the decoder's coefficient memory.
const MAX_PIXELS: u64 = 64 << 20;
/// Most pixels per byte of the file: a JPEG codes each 8x8 block in a few bits at least, so
/// a decoder refuses a block that claims more, whose work would not be bounded by its length.
const PIXELS_PER_BYTE: u64 = 512;
/// What decoding allocates besides the block, per pixel of the image: Lepton keeps every
/// component's coefficients (two bytes each, up to four full-size components), a progressive
/// image's twice while it merges them.
const BYTES_PER_PIXEL: u64 = 16;
/// Most scans of a JPEG taken (progressive files have about ten): decoding passes over the
/// whole image once a scan.
const MAX_SCANS: usize = 64;
/// What decoding allocates whatever the image: Lepton's model and buffers.
const FIXED: u64 = 8 << 20;

/// Where a JPEG file starts and what its frame header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Bytes of the file, start of image to end of image.
    pub len: usize,
    pub width: u16,
    pub height: u16,
}

/// The JPEG file at the start of `data`: its markers walked from the start of image to the
/// end of image, with the frame's size; `None` if `data` does not start with one whose
/// structure holds (the entropy-coded data is not checked: the codec's verification does).
pub fn frame(data: &[u8]) -> Option<Frame> {
    walk(data).ok()
}

/// `frame`, or where the walk stopped: how far a search for JPEGs may skip, so that the
/// markers of a chain that did not hold are not walked again from every start within it.
pub fn walk(data: &[u8]) -> std::result::Result<Frame, usize> {
    if !data.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Err(1);
    }
    let mut at = 2;
    let mut size = None;
    let mut scans = 0;
    loop {
        // Fill bytes (0xFF) may precede a marker.
        while data.get(at..at + 2) == Some(&[0xFF, 0xFF]) {
            at += 1;
        }
        let Some(&[0xFF, marker]) = data.get(at..at + 2) else {
            return Err(at);
        };
        at += 2;
        match marker {
            0xD9 => {
                return match size {
                    Some((width, height)) if scans > 0 => Ok(Frame {
                        len: at,
                        width,
                        height,
                    }),
                    _ => Err(at),
                };
            }
            // Restart markers and TEM carry no length.
            0xD0..=0xD7 | 0x01 => continue,
            0x00 | 0xD8 => return Err(at),
            _ => {}
        }
        let Some(&[hi, lo]) = data.get(at..at + 2) else {
            return Err(at);
        };
        let len = u16::from_be_bytes([hi, lo]) as usize;
        let Some(body) = data.get(at + 2..at + len).filter(|_| len >= 2) else {
            return Err(at);
        };
        // SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
        if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let Some(&[_, h0, h1, w0, w1]) = body.get(..5) else {
                return Err(at);
            };
            size = Some((u16::from_be_bytes([w0, w1]), u16::from_be_bytes([h0, h1])));
        }
        at += len;
        if marker == 0xDA {
            // Each scan is a pass over the whole image when decoding: their number bounds
            // the work per byte.
            scans += 1;
            if scans > MAX_SCANS {
                return Err(at);
            }
            // Entropy-coded data runs to the next marker that is not a stuffed zero or a
            // restart marker.
            loop {
                let Some(next) = data.get(at..).and_then(|d| memchr::memchr(0xFF, d)) else {
                    return Err(data.len());
                };
                at += next;
                match data.get(at + 1) {
                    Some(0x00 | 0xD0..=0xD7) => at += 2,
                    Some(0xFF) => at += 1,
                    Some(_) => break,
                    None => return Err(data.len()),
                }
            }
        }
    }
}

/// Lepton's settings, the same for both sides but the limits, which a decoder takes from the
/// payload: one thread (blocks are sep's unit of parallelism), one partition.
fn features(width: u32, height: u32, len: usize) -> EnabledFeatures {
    let mut f = EnabledFeatures::compat_lepton_vector_write();
    f.max_jpeg_width = width;
    f.max_jpeg_height = height;
    f.max_jpeg_file_size = u32::try_from(len).unwrap_or(u32::MAX);
    f.max_partitions = 1;
    f.max_processor_threads = 1;
    f
}

/// The JPEG codec.
pub struct Jpeg;

impl BlockCodec for Jpeg {
    fn codec(&self) -> Codec {
        Codec::Jpeg
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        let Some(f) = frame(data).filter(|f| f.len == data.len()) else {
            return false;
        };
        let (w, h) = (f.width as u32, f.height as u32);
        if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE || !within(w, h, data.len()) {
            return false;
        }
        let features = features(w, h, data.len());
        let coded = lepton_jpeg::catch_unwind_result(|| {
            lepton_jpeg::encode_lepton_verify(data, &features, &SingleThreadPool::default())
        });
        let Ok((lepton, _)) = coded else {
            return false;
        };
        // What the decoder would refuse is not written.
        if lepton.len() + HEAD >= data.len() || check_header(&lepton, data.len()).is_err() {
            return false;
        }
        out.clear();
        out.extend_from_slice(&f.width.to_le_bytes());
        out.extend_from_slice(&f.height.to_le_bytes());
        out.extend_from_slice(&lepton);
        true
    }

    fn decode_memory(&self, payload: &[u8], raw_len: usize) -> u64 {
        let (w, h) = size(payload).unwrap_or((0, 0));
        // Lepton holds its header twice.
        FIXED + BYTES_PER_PIXEL * w as u64 * h as u64 + 2 * header_max(raw_len) as u64
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        let bad = |why: String| Error::Corrupt(format!("a JPEG block: {why}"));
        let (w, h) = size(payload).ok_or_else(|| bad("no image size".into()))?;
        if !within(w, h, raw_len) {
            return Err(bad(format!(
                "an image of {w}x{h} pixels in {raw_len} bytes"
            )));
        }
        check_header(&payload[HEAD..], raw_len)?;
        let features = features(w, h, raw_len);
        let start = out.len();
        let mut lepton = &payload[HEAD..];
        let decoded = lepton_jpeg::catch_unwind_result(|| {
            lepton_jpeg::decode_lepton(&mut lepton, out, &features, &SingleThreadPool::default())
        });
        if let Err(e) = decoded {
            return Err(bad(format!("{:?}", e.exit_code())));
        }
        if out.len() - start != raw_len {
            return Err(bad(format!(
                "{} bytes where the block has {raw_len}",
                out.len() - start
            )));
        }
        Ok(Seen::Nothing)
    }
}

/// Whether an image of `w` x `h` pixels in a file of `len` bytes is within the limits.
fn within(w: u32, h: u32, len: usize) -> bool {
    let pixels = w as u64 * h as u64;
    pixels <= MAX_PIXELS && pixels <= PIXELS_PER_BYTE * len as u64
}

/// Shortest JPEG taken (Lepton counts the two bytes of its end of image within it).
const MIN_LEN: usize = 64;
/// Bytes of a Lepton file's fixed header.
const LEPTON_FIXED: usize = 28;

/// Most bytes a Lepton file's header may inflate to for a JPEG of `raw_len` bytes: the JPEG's
/// own headers and the bytes after its end, within the file's length, and per-scan restart
/// counts.
fn header_max(raw_len: usize) -> usize {
    raw_len.saturating_add(64 << 10)
}

/// Checks a Lepton file's header against a block of `raw_len` bytes, as the encoder writes
/// it: its magic, the JPEG's size, one partition; and in its zlib-compressed part, every
/// count Lepton would size a buffer by within the bytes that follow it, the JPEG's headers
/// and the bytes after its end within the block, at most `MAX_SCANS` scans, one hand-off of
/// at most 8 bits left over.
fn check_header(lepton: &[u8], raw_len: usize) -> Result<()> {
    use std::io::Read;
    let bad = |why: &str| Err(Error::Corrupt(format!("a JPEG block: {why}")));
    let Some(fixed) = lepton.get(..LEPTON_FIXED) else {
        return bad("a Lepton header cut short");
    };
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    if raw_len < MIN_LEN
        || fixed[..2] != [0xCF, 0x84]
        || fixed[4] != 1
        || u32_at(fixed, 20) as usize != raw_len
    {
        return bad("not a Lepton file of the block's length in one partition");
    }
    let packed = u32_at(fixed, 24) as usize;
    let Some(packed) = lepton.get(LEPTON_FIXED..LEPTON_FIXED.saturating_add(packed)) else {
        return bad("a Lepton header past the payload");
    };
    let cap = header_max(raw_len);
    let mut header = Vec::new();
    let inflated = flate2::read::ZlibDecoder::new(packed)
        .take(cap as u64 + 1)
        .read_to_end(&mut header);
    if inflated.is_err() || header.len() > cap {
        return bad("an unreadable Lepton header");
    }
    // Its records: a three-byte tag, then a count of what follows where it has one.
    let (mut at, mut jpeg_bytes, mut handoffs) = (0, 0usize, 0);
    while at < header.len() {
        let Some(tag) = header.get(at..at + 3) else {
            return bad("a Lepton header record cut short");
        };
        at += 3;
        let count = |at: usize| header.get(at..at + 4).map(|c| u32_at(c, 0) as usize);
        let body = match tag {
            b"HDR" if at == 3 => count(at).inspect(|&n| jpeg_bytes += n).map(|n| 4 + n),
            b"GRB" => count(at).inspect(|&n| jpeg_bytes += n).map(|n| 4 + n),
            b"FRS" => count(at).map(|n| 4 + n),
            b"CRS" => count(at).map(|n| 4usize.saturating_add(n.saturating_mul(4))),
            b"P0D" => Some(1),
            b"EEE" => Some(28),
            // One hand-off: its bits left over from a byte (a count past a byte's 8 would
            // run Lepton's bit writer past its register).
            b"HH\x01" if header.get(at + 7).is_some_and(|&bits| bits <= 8) => {
                handoffs += 1;
                Some(16)
            }
            _ => None,
        };
        match body {
            Some(n) if n <= header.len() - at => {
                if tag == b"HDR" && scans(&header[at + 4..at + n]).is_none_or(|s| s > MAX_SCANS) {
                    return bad("its JPEG headers unreadable or of too many scans");
                }
                at += n;
            }
            _ => return bad("a Lepton header record out of bounds"),
        }
    }
    if at == 0 || handoffs != 1 || jpeg_bytes > raw_len {
        return bad("a Lepton header of another shape than the encoder writes");
    }
    Ok(())
}

/// How many scans the JPEG headers `h` hold (a start of image, then marker segments with
/// their lengths); `None` if they do not walk.
fn scans(h: &[u8]) -> Option<usize> {
    let mut at = if h.starts_with(&[0xFF, 0xD8]) { 2 } else { 0 };
    let mut n = 0;
    while at < h.len() {
        let &[0xFF, marker, hi, lo] = h.get(at..at + 4)? else {
            return None;
        };
        n += (marker == 0xDA) as usize;
        at += 2 + u16::from_be_bytes([hi, lo]) as usize;
    }
    Some(n)
}

/// The image size a payload starts with.
fn size(payload: &[u8]) -> Option<(u32, u32)> {
    let head = payload.get(..HEAD)?;
    let w = u16::from_le_bytes([head[0], head[1]]) as u32;
    let h = u16::from_le_bytes([head[2], head[3]]) as u32;
    (w > 0 && h > 0 && w <= MAX_SIDE && h <= MAX_SIDE).then_some((w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/data/jpeg/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn real_jpegs_round_trip_smaller() {
        for (name, width, height) in [
            ("video-progressive.jpg", 150, 103),
            ("flower-of-life.jpg", 0, 0),
        ] {
            let data = file(name);
            let f = frame(&data).unwrap();
            assert_eq!(f.len, data.len(), "{name}");
            if width > 0 {
                assert_eq!((f.width, f.height), (width, height), "{name}");
            }
            let payload = Jpeg.encode(&data).unwrap();
            assert!(payload.len() < data.len(), "{name}: {}", payload.len());
            let mut out = vec![7];
            Jpeg.decode(&payload, data.len(), &mut out, &mut |_| {})
                .unwrap();
            assert!(out[1..] == data[..], "{name}");
        }
    }

    #[test]
    fn what_is_not_a_whole_jpeg_is_declined() {
        let data = file("flower-of-life.jpg");
        // Truncated, with something after it, or not a JPEG at all.
        assert!(Jpeg.encode(&data[..data.len() - 100]).is_none());
        let mut longer = data.clone();
        longer.extend_from_slice(b"trailing");
        assert!(Jpeg.encode(&longer).is_none());
        assert!(Jpeg.encode(b"\xFF\xD8\xFF\xE0 not really").is_none());
        assert!(frame(&data[1..]).is_none());
        // A progressive JPEG whose scans stop short (ended as a whole file would be), and one
        // whose progression Lepton does not take.
        let cut = file("video-progressive-truncated.jpg");
        assert!(frame(&cut).is_some() && Jpeg.encode(&cut).is_none());
        let separate = file("stripe-separate-dc.jpg");
        assert!(frame(&separate).is_some() && Jpeg.encode(&separate).is_none());
        // A flipped bit in the entropy-coded data: the file's structure holds, and the codec
        // takes it only if it rebuilds it exactly.
        let mut flipped = data.clone();
        let at = flipped.len() - 2000;
        flipped[at] ^= 0x10;
        if let Some(p) = Jpeg.encode(&flipped) {
            let mut out = Vec::new();
            Jpeg.decode(&p, flipped.len(), &mut out, &mut |_| {})
                .unwrap();
            assert!(out == flipped);
        }
    }

    #[test]
    fn damaged_payloads_are_errors() {
        let data = file("video-progressive.jpg");
        let payload = Jpeg.encode(&data).unwrap();
        let decode = |p: &[u8], len: usize| Jpeg.decode(p, len, &mut Vec::new(), &mut |_| {});
        // Every cut, a wrong length, a size larger than the block allows, flipped bytes.
        for cut in [0, 3, HEAD, HEAD + 10, payload.len() / 2, payload.len() - 1] {
            assert!(decode(&payload[..cut], data.len()).is_err(), "cut at {cut}");
        }
        assert!(decode(&payload, data.len() - 1).is_err());
        assert!(decode(&payload, data.len() + 1).is_err());
        let mut huge = payload.clone();
        huge[..4].copy_from_slice(&[0xFF, 0x3F, 0xFF, 0x3F]);
        assert!(decode(&huge, data.len()).is_err());
        // Flipped bytes: an error or other bytes (which the block's checksum catches), never
        // a panic or a hang.
        for at in (HEAD..payload.len()).step_by(97) {
            let mut p = payload.clone();
            p[at] ^= 0x5A;
            let _ = decode(&p, data.len());
        }
        assert!(decode(&payload, data.len()).is_ok());
    }
}
