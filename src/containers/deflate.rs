//! Deflate streams within general data: gzip members (a `.gz` file, a `.tar.gz`, gzip inside a
//! tar), zip entries (zip, docx/xlsx/odt/epub, jar/whl/apk) and zlib streams after a PDF's
//! `stream` keyword, each found by its header and inflated to find where it ends; each then
//! gets a stretch of its own (its header, the stream, and a gzip or zlib trailer) for the
//! deflate codec, which takes it whole or not at all.

use super::segment::Kind;
use crate::codecs::deflate::{deflate_start, MAX_PLAIN};
use flate2::{Decompress, FlushDecompress, Status};

/// Smallest stream given a stretch of its own: smaller ones stay in the general data around
/// them, whose context they share and where a block's costs weigh less.
const MIN_LEN: usize = 1 << 10;
/// Bytes inflated, in all, per byte of the input searched, after which no more candidates are
/// tried: the search stays linear whatever the input (many headers whose streams run long and
/// then fail).
const WORK_PER_BYTE: usize = 4;
/// A gzip member's trailer: CRC-32 and length.
const GZIP_TRAILER: usize = 8;
/// A zlib stream's trailer: Adler-32.
const ZLIB_TRAILER: usize = 4;

/// Splits the general parts of `parts` (stretches of `data`, in order) around the deflate
/// streams in them.
pub(super) fn split(data: &[u8], parts: Vec<(u64, Kind)>) -> Vec<(u64, Kind)> {
    let mut out = Vec::new();
    let mut budget = WORK_PER_BYTE.saturating_mul(data.len()).max(MAX_PLAIN);
    let mut at = 0usize;
    for (len, kind) in parts {
        let end = at + len as usize;
        match kind {
            Kind::General => out.extend(stretches(&data[at..end], &mut budget)),
            k => out.push((len, k)),
        }
        at = end;
    }
    out
}

/// The stretches of `part`: general data around the deflate streams in it.
fn stretches(part: &[u8], budget: &mut usize) -> Vec<(u64, Kind)> {
    let mut parts = Vec::new();
    let mut headers = Headers::new(part);
    let (mut at, mut general) = (0, 0);
    while *budget > 0 {
        let Some((start, head)) = headers.next_from(at) else {
            break;
        };
        match inflated_end(&part[start + head..], budget) {
            Some(n) => {
                // A zip entry's sizes and checksum are in its header or after its data.
                let trailer = match (part[start], head) {
                    (0x1F, _) => GZIP_TRAILER,
                    (_, 2) => ZLIB_TRAILER,
                    _ => 0,
                };
                let len = (head + n + trailer).min(part.len() - start);
                if n >= MIN_LEN {
                    parts.push(((start - general) as u64, Kind::General));
                    parts.push((len as u64, Kind::Deflate));
                    general = start + len;
                }
                at = start + len.max(1);
            }
            None => at = start + 1,
        }
    }
    parts.push(((part.len() - general) as u64, Kind::General));
    parts
}

/// The signatures before deflate streams: a gzip member's, a zip entry's, a PDF stream's.
const SIGNATURES: [&[u8]; 3] = [&[0x1F, 0x8B, 0x08], b"PK\x03\x04", b"stream"];

/// The headers of deflate streams in some data, found in order: each signature's next place
/// is kept until passed, so that the search reads the data once per signature.
struct Headers<'a> {
    data: &'a [u8],
    /// Each signature's next place at or after where the last search started.
    next: [Option<usize>; 3],
    /// Where the last search started.
    from: usize,
}

impl<'a> Headers<'a> {
    fn new(data: &'a [u8]) -> Self {
        let next = SIGNATURES.map(|s| memchr::memmem::find(data, s));
        Headers {
            data,
            next,
            from: 0,
        }
    }

    /// Where signature `i` next occurs at or after `from`.
    fn place(&mut self, i: usize, from: usize) -> Option<usize> {
        if self.next[i].is_some_and(|n| n < from) || from < self.from {
            let rest = self.data.get(from..).unwrap_or_default();
            self.next[i] = memchr::memmem::find(rest, SIGNATURES[i]).map(|n| n + from);
        }
        self.next[i]
    }

    /// The first header at or after `from`: where its stream starts, and the length of what
    /// precedes the deflate data from there (a gzip member's or zip entry's header, a zlib
    /// header).
    fn next_from(&mut self, mut from: usize) -> Option<(usize, usize)> {
        loop {
            let places = [0, 1, 2].map(|i| self.place(i, from));
            self.from = from;
            let (i, at) = places
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.map(|p| (i, p)))
                .min_by_key(|&(_, p)| p)?;
            let found = match i {
                // After `stream` and its line end, a zlib header.
                2 => {
                    let eol = eol(&self.data[at + 6..]);
                    let body = at + 6 + eol;
                    let zlib = deflate_start(&self.data[body..]) == Some(2);
                    (zlib && eol > 0).then_some((body, 2))
                }
                _ => deflate_start(&self.data[at..])
                    .filter(|&h| h > 0)
                    .map(|h| (at, h)),
            };
            if found.is_some() {
                return found;
            }
            from = at + 1;
        }
    }
}

/// The length of the line end at the start of `data` (LF or CR LF), 0 if none.
fn eol(data: &[u8]) -> usize {
    match data {
        [b'\r', b'\n', ..] => 2,
        [b'\n', ..] => 1,
        _ => 0,
    }
}

/// Where the raw deflate stream at the start of `data` ends, if it is whole and inflates to
/// at most `MAX_PLAIN` bytes; the bytes inflated are taken from `budget`.
fn inflated_end(data: &[u8], budget: &mut usize) -> Option<usize> {
    let mut z = Decompress::new(false);
    let mut scratch = vec![0u8; 64 << 10];
    loop {
        let (before_in, before_out) = (z.total_in(), z.total_out());
        let status = z
            .decompress(
                &data[before_in as usize..],
                &mut scratch,
                FlushDecompress::None,
            )
            .ok()?;
        let made = (z.total_out() - before_out) as usize;
        *budget = budget.saturating_sub(made.max(1));
        if z.total_out() as usize > MAX_PLAIN || *budget == 0 {
            return None;
        }
        match status {
            Status::StreamEnd => return Some(z.total_in() as usize),
            // No progress: the input ended within the stream.
            _ if z.total_in() == before_in && made == 0 => return None,
            _ => {}
        }
    }
}

/// The first `n` bytes (or fewer) that the deflate stream at the start of `data` (a gzip
/// member, zip entry or zlib stream) inflates to; `None` if `data` does not start with one.
pub fn inflated_head(data: &[u8], n: usize) -> Option<Vec<u8>> {
    let head = deflate_start(data).filter(|&h| h > 0)?;
    let mut z = Decompress::new(false);
    let mut out = vec![0u8; n];
    z.decompress(data.get(head..)?, &mut out, FlushDecompress::None)
        .ok()?;
    out.truncate(z.total_out() as usize);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn text(n: usize) -> Vec<u8> {
        let mut s = 3u64;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                b"abcdefgh ijk\n"[(s >> 33) as usize % 13]
            })
            .collect()
    }

    #[test]
    fn gzip_members_and_pdf_streams_get_stretches_of_their_own() {
        let gz = gzip(&text(50_000));
        let mut data = b"some text before ".to_vec();
        data.extend_from_slice(&gz);
        data.extend_from_slice(b" between ");
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&text(40_000)).unwrap();
        let zlib = z.finish().unwrap();
        data.extend_from_slice(b"<< /Filter /FlateDecode >>\nstream\r\n");
        let pdf_at = data.len();
        data.extend_from_slice(&zlib);
        data.extend_from_slice(b"\r\nendstream\n");
        let parts = split(&data, vec![(data.len() as u64, Kind::General)]);
        assert_eq!(
            parts,
            vec![
                (17, Kind::General),
                (gz.len() as u64, Kind::Deflate),
                (pdf_at as u64 - 17 - gz.len() as u64, Kind::General),
                (zlib.len() as u64, Kind::Deflate),
                (12, Kind::General),
            ]
        );
    }

    #[test]
    fn headers_of_streams_that_do_not_hold_cost_linear_time() {
        // Gzip headers nested in stored blocks: each header's stream holds the next one whole,
        // and runs to the end of its unit, where it is cut short. Every candidate inflates
        // thousands of bytes before it fails: 8 GB in all without a bound.
        let mut unit = vec![b'a'; 100];
        while unit.len() < 60_000 {
            let n = unit.len() as u16;
            let mut outer = vec![0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0, 0, 3, 0x00];
            outer.extend_from_slice(&n.to_le_bytes());
            outer.extend_from_slice(&(!n).to_le_bytes());
            outer.extend_from_slice(&unit);
            unit = outer;
        }
        let mut data = Vec::new();
        while data.len() < 4 << 20 {
            data.extend_from_slice(&unit);
        }
        let t = std::time::Instant::now();
        let parts = split(&data, vec![(data.len() as u64, Kind::General)]);
        assert_eq!(parts, vec![(data.len() as u64, Kind::General)]);
        // Bounded, well under a second.
        assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
    }
}
