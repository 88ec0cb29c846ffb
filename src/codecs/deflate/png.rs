//! A PNG's image data: one zlib stream cut across a run of IDAT chunks (each: its data's
//! length, big-endian, the type `IDAT`, the data, a CRC-32 of type and data). The codec keeps
//! the inflated data and, beside the stream's record, the chunks' layout (`Layout`), from which
//! the chunks are rebuilt around the rebuilt stream, their checksums computed afresh: the
//! encoder keeps a PNG only where that gives back its bytes exactly.
//!
//! Layout bytes: u32 `m` (the chunks, at least 1), `m` u32 data lengths, the zlib header (2
//! bytes) and Adler-32 check (4 bytes) as they were; all little-endian but the check.

use crate::error::{Error, Result};

/// A PNG file's first eight bytes.
pub const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Bytes of a chunk besides its data: length, type, checksum.
const FRAME: usize = 12;

/// Where the first IDAT chunk's data starts in a PNG that starts `png` (with its signature),
/// found by walking the chunks before it; `None` where there is none before `IEND` or the
/// data ends.
pub fn first_idat(png: &[u8]) -> Option<usize> {
    let mut at = SIGNATURE.len();
    loop {
        let head = png.get(at..at + 8)?;
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        match &head[4..] {
            b"IDAT" => return Some(at + 8),
            b"IEND" => return None,
            _ => at = at.checked_add(FRAME)?.checked_add(len)?,
        }
    }
}

/// The data lengths of the run of whole IDAT chunks whose first one's data starts at `start`
/// in `data` (its length and type the 8 bytes before).
pub fn pieces(data: &[u8], start: usize) -> Option<Vec<usize>> {
    let mut at = start.checked_sub(8)?;
    let mut out = Vec::new();
    while let Some(head) = data.get(at..at + 8) {
        if &head[4..] != b"IDAT" {
            break;
        }
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let end = at.checked_add(FRAME)?.checked_add(len)?;
        if end > data.len() {
            return None;
        }
        out.push(len);
        at = end;
    }
    (!out.is_empty()).then_some(out)
}

/// The bytes from the first chunk's data to the last one's checksum, for chunks of these data
/// lengths.
pub fn extent(pieces: &[usize]) -> usize {
    pieces.iter().sum::<usize>() + FRAME * pieces.len() - 8
}

/// The chunks' data joined: the zlib stream (the chunks at `start`, of these lengths).
pub fn joined(data: &[u8], start: usize, pieces: &[usize]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pieces.iter().sum());
    let mut at = start;
    for &n in pieces {
        out.extend_from_slice(&data[at..at + n]);
        at += n + FRAME;
    }
    out
}

/// How a zlib stream lies in a run of IDAT chunks.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    /// The chunks' data lengths.
    pub pieces: Vec<usize>,
    /// The zlib header.
    pub header: [u8; 2],
    /// The Adler-32 check after the deflate data.
    pub check: [u8; 4],
}

impl Layout {
    /// The layout of the zlib stream `zlib` cut into chunks of data lengths `pieces`.
    pub fn of(zlib: &[u8], pieces: Vec<usize>) -> Option<Self> {
        let n = zlib.len();
        Some(Layout {
            pieces,
            header: zlib.get(..2)?.try_into().ok()?,
            check: zlib.get(n.checked_sub(4)?..)?.try_into().ok()?,
        })
    }

    /// Its bytes, which precede the stream's record.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = (self.pieces.len() as u32).to_le_bytes().to_vec();
        for &n in &self.pieces {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        out.extend_from_slice(&self.header);
        out.extend_from_slice(&self.check);
        out
    }

    /// A layout read from the start of `record`, and the rest of it (the stream's record).
    pub fn read(record: &[u8]) -> Result<(Self, &[u8])> {
        let bad = || Error::Corrupt("deflate block: a PNG's chunk layout cut short".into());
        let u32_at = |i: usize| -> Result<usize> {
            let b = record.get(i..i + 4).ok_or_else(bad)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        let m = u32_at(0)?;
        if m == 0 || m > record.len() / 4 {
            return Err(bad());
        }
        let pieces = (0..m)
            .map(|i| u32_at(4 + 4 * i))
            .collect::<Result<Vec<_>>>()?;
        let at = 4 + 4 * m;
        let fixed = record.get(at..at + 6).ok_or_else(bad)?;
        let layout = Layout {
            pieces,
            header: [fixed[0], fixed[1]],
            check: [fixed[2], fixed[3], fixed[4], fixed[5]],
        };
        Ok((layout, &record[at + 6..]))
    }

    /// The chunks, from the first one's data to the last one's checksum, around the deflate
    /// data `deflate`: an error where the lengths do not add up.
    pub fn rebuild(&self, deflate: &[u8]) -> Result<Vec<u8>> {
        let total = self
            .pieces
            .iter()
            .try_fold(0usize, |s, &n| s.checked_add(n));
        if total != Some(deflate.len() + 6) {
            return Err(Error::Corrupt(
                "deflate block: a PNG's chunks do not hold its stream".into(),
            ));
        }
        let mut zlib = Vec::with_capacity(deflate.len() + 6);
        zlib.extend_from_slice(&self.header);
        zlib.extend_from_slice(deflate);
        zlib.extend_from_slice(&self.check);
        let mut out = Vec::with_capacity(extent(&self.pieces));
        let mut rest = &zlib[..];
        for (i, &n) in self.pieces.iter().enumerate() {
            let (piece, after) = rest.split_at(n);
            rest = after;
            if i > 0 {
                out.extend_from_slice(&(n as u32).to_be_bytes());
                out.extend_from_slice(b"IDAT");
            }
            out.extend_from_slice(piece);
            let mut crc = flate2::Crc::new();
            crc.update(b"IDAT");
            crc.update(piece);
            out.extend_from_slice(&crc.sum().to_be_bytes());
        }
        Ok(out)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A PNG whose image data `zlib` is cut into chunks of `cuts` bytes (the last takes the
    /// rest), with a header chunk before and an end chunk after.
    pub fn png_file(zlib: &[u8], cuts: &[usize]) -> Vec<u8> {
        let chunk = |kind: &[u8], data: &[u8]| {
            let mut c = (data.len() as u32).to_be_bytes().to_vec();
            c.extend_from_slice(kind);
            c.extend_from_slice(data);
            let mut crc = flate2::Crc::new();
            crc.update(kind);
            crc.update(data);
            c.extend_from_slice(&crc.sum().to_be_bytes());
            c
        };
        let mut out = SIGNATURE.to_vec();
        out.extend(chunk(b"IHDR", &[0, 0, 1, 0, 0, 0, 0, 64, 8, 0, 0, 0, 0]));
        let mut rest = zlib;
        for &n in cuts {
            let (piece, after) = rest.split_at(n.min(rest.len()));
            out.extend(chunk(b"IDAT", piece));
            rest = after;
        }
        out.extend(chunk(b"IDAT", rest));
        out.extend(chunk(b"IEND", &[]));
        out
    }

    #[test]
    fn chunks_are_found_and_rebuilt_around_their_stream() {
        let zlib: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let png = png_file(&zlib, &[2, 1000, 1]);
        let start = first_idat(&png).unwrap();
        assert_eq!(start, 8 + 25 + 8);
        let pieces = pieces(&png, start).unwrap();
        assert_eq!(pieces, vec![2, 1000, 1, 5000 - 1003]);
        assert_eq!(joined(&png, start, &pieces), zlib);
        let region = &png[start..start + extent(&pieces)];
        assert_eq!(&png[start + extent(&pieces)..][4..8], b"IEND");
        let layout = Layout::of(&zlib, pieces).unwrap();
        let bytes = layout.to_bytes();
        let record = [&bytes[..], b"record"].concat();
        let (read, rest) = Layout::read(&record).unwrap();
        assert_eq!((&read, rest), (&layout, &b"record"[..]));
        assert_eq!(read.rebuild(&zlib[2..zlib.len() - 4]).unwrap(), region);
        // Deflate data of another length does not fit the chunks.
        assert!(read.rebuild(&zlib[2..zlib.len() - 5]).is_err());
        // Damaged layouts are errors, never panics.
        for cut in 0..bytes.len() {
            assert!(Layout::read(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = bytes.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let (big, _) = Layout::read(&huge).unwrap();
        assert!(big.rebuild(&zlib[2..zlib.len() - 4]).is_err());
    }

    #[test]
    fn a_png_without_image_data_or_cut_short_has_none() {
        let zlib = vec![0x78, 0x9c, 1, 2, 3, 4, 5, 6];
        let png = png_file(&zlib, &[]);
        let start = first_idat(&png).unwrap();
        assert!(pieces(&png[..png.len() - 20], start).is_none());
        let mut no_idat = png.clone();
        let at = start - 4;
        no_idat[at..at + 4].copy_from_slice(b"IDAX");
        assert!(first_idat(&no_idat).is_none());
    }
}
