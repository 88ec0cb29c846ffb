//! Finding the deflate streams in a block: gzip members, zip entries of method 8, zlib streams
//! after a PDF's `stream` keyword, and a PNG's image data (one zlib stream cut across its IDAT
//! chunks, `png`), each whole and bounded.

use super::png;
use flate2::{Decompress, FlushDecompress, Status};

/// Most bytes the streams of a block may inflate to in all: what a block's context-mixing model
/// codes at most (the default block size), and a bound on a bomb.
pub const MAX_PLAIN: usize = 32 << 20;
/// Smallest stream worth rebuilding: below it, the record and entry cost what its data saves.
const MIN_STREAM: usize = 64;
/// Bytes inflated, in all, per byte of the data searched (and at least `MAX_PLAIN`), after
/// which the search for streams stops: it stays linear whatever the data (many headers whose
/// streams run long and then fail).
const WORK_PER_BYTE: usize = 4;

/// A deflate stream found in some data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream {
    /// Where its header starts (a gzip member's, a zip entry's, a zlib stream's).
    pub header: usize,
    /// Where its deflate data starts.
    pub start: usize,
    /// The deflate data's length.
    pub len: usize,
    /// The bytes it inflates to.
    pub inflated: usize,
    /// Its trailer's length (a gzip member's checksum and length, a zlib stream's checksum).
    pub trailer: usize,
    /// Whether it is a PNG's image data: then `start..start + len` is its IDAT chunks from the
    /// first's data to the last's checksum, which hold the zlib stream (`png`).
    pub png: bool,
}

impl Stream {
    /// Where it ends, with its trailer.
    pub fn end(&self) -> usize {
        self.start + self.len + self.trailer
    }
}

/// The whole deflate streams in `data` of at least `MIN_STREAM` bytes that inflate to at most
/// `MAX_PLAIN` each, found by their headers (gzip members, zip entries of method 8, zlib
/// streams after a PDF's `stream` keyword), in order, none overlapping.
pub fn find_streams(data: &[u8]) -> Vec<Stream> {
    let mut found = Vec::new();
    let mut budget = WORK_PER_BYTE.saturating_mul(data.len()).max(MAX_PLAIN);
    let mut headers = Headers::new(data);
    let mut at = 0;
    while budget > 0 {
        let Some(Header {
            at: header,
            start,
            trailer,
            png,
        }) = headers.next_from(at)
        else {
            break;
        };
        let whole = match png {
            true => png_extent(data, start, &mut budget),
            false => inflated_end(&data[start..], &mut budget),
        };
        match whole {
            Some((len, inflated)) if start + len + trailer <= data.len() => {
                let s = Stream {
                    header,
                    start,
                    len,
                    inflated,
                    trailer,
                    png,
                };
                if len >= MIN_STREAM {
                    found.push(s);
                }
                at = s.end();
            }
            _ => at = header + 1,
        }
    }
    found
}

/// The signatures before deflate streams: a gzip member's, a zip entry's, a PDF stream's, a
/// PNG file's.
const SIGNATURES: [&[u8]; 4] = [
    &[0x1F, 0x8B, 0x08],
    b"PK\x03\x04",
    b"stream",
    png::SIGNATURE,
];

/// A stream's header found.
struct Header {
    /// Where it starts.
    at: usize,
    /// Where its deflate data starts (a PNG's: its first IDAT chunk's data).
    start: usize,
    /// Its trailer's length.
    trailer: usize,
    /// Whether it is a PNG's.
    png: bool,
}

/// The headers of deflate streams in some data, found in order: each signature's next place
/// is kept until passed, so that the search reads the data once per signature.
struct Headers<'a> {
    data: &'a [u8],
    /// Each signature's next place at or after where the last search started.
    next: [Option<usize>; 4],
}

impl<'a> Headers<'a> {
    fn new(data: &'a [u8]) -> Self {
        let next = SIGNATURES.map(|s| memchr::memmem::find(data, s));
        Headers { data, next }
    }

    /// Where signature `i` next occurs at or after `from` (searches only go forward).
    fn place(&mut self, i: usize, from: usize) -> Option<usize> {
        if self.next[i].is_some_and(|n| n < from) {
            let rest = self.data.get(from..).unwrap_or_default();
            self.next[i] = memchr::memmem::find(rest, SIGNATURES[i]).map(|n| n + from);
        }
        self.next[i]
    }

    /// The first header at or after `from`.
    fn next_from(&mut self, mut from: usize) -> Option<Header> {
        loop {
            let places = [0, 1, 2, 3].map(|i| self.place(i, from));
            let (i, at) = places
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.map(|p| (i, p)))
                .min_by_key(|&(_, p)| p)?;
            let rest = &self.data[at..];
            let header = |start: usize, trailer: usize| Header {
                at,
                start: at + start,
                trailer,
                png: i == 3,
            };
            let found = match i {
                0 => gzip_header(rest).map(|h| header(h, 8)),
                1 => zip_header(rest).map(|h| header(h, 0)),
                // After `stream` and its line end, a zlib header.
                2 => {
                    let body = 6 + eol(&rest[6..]);
                    (body > 6 && zlib_header(&rest[body..])).then(|| header(body + 2, 4))
                }
                _ => png::first_idat(rest).map(|start| header(start, 0)),
            };
            if found.is_some() {
                return found;
            }
            from = at + 1;
        }
    }
}

/// The length of a gzip member's header (RFC 1952) at the start of `data`, if whole.
fn gzip_header(data: &[u8]) -> Option<usize> {
    let flags = *data.get(3)?;
    if !data.starts_with(&[0x1F, 0x8B, 0x08]) || flags & 0xE0 != 0 {
        return None;
    }
    let mut at = 10;
    if flags & 4 != 0 {
        let n = u16::from_le_bytes([*data.get(at)?, *data.get(at + 1)?]) as usize;
        at += 2 + n;
    }
    for bit in [8, 16] {
        // A zero-terminated name, then comment.
        if flags & bit != 0 {
            at += memchr::memchr(0, data.get(at..)?)? + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    (at <= data.len()).then_some(at)
}

/// The length of a zip local entry's header at the start of `data`, if it is whole and the
/// entry is deflated (method 8).
fn zip_header(data: &[u8]) -> Option<usize> {
    let field = |i: usize| Some(u16::from_le_bytes([*data.get(i)?, *data.get(i + 1)?]) as usize);
    if !data.starts_with(b"PK\x03\x04") || field(8)? != 8 {
        return None;
    }
    let at = 30 + field(26)? + field(28)?;
    (at <= data.len()).then_some(at)
}

/// Whether `data` starts with a zlib header: deflate with a window of at most 32 KiB, no
/// preset dictionary, a valid check.
pub(super) fn zlib_header(data: &[u8]) -> bool {
    match *data {
        [cmf, flg, ..] => {
            cmf & 0x0F == 8
                && cmf >> 4 <= 7
                && flg & 0x20 == 0
                && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
        }
        _ => false,
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

/// Where the raw deflate stream at the start of `data` ends and how many bytes it inflates to,
/// if it is whole and inflates to at most `MAX_PLAIN`; the bytes inflated are taken from
/// `budget`.
fn inflated_end(data: &[u8], budget: &mut usize) -> Option<(usize, usize)> {
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
            Status::StreamEnd => return Some((z.total_in() as usize, z.total_out() as usize)),
            // No progress: the input ended within the stream.
            _ if z.total_in() == before_in && made == 0 => return None,
            _ => {}
        }
    }
}

/// The first `n` bytes (or fewer) that the first deflate stream in `data`, if it starts within
/// its first 64 bytes (a gzip member's or zip entry's header), inflates to.
pub fn inflated_head(data: &[u8], n: usize) -> Option<Vec<u8>> {
    // Its header and the deflate data that make `n` bytes lie within this much of the start:
    // the search need not read the rest of a large input.
    let data = &data[..data.len().min(2 * n + (128 << 10))];
    let Header { at, start, png, .. } = Headers::new(data).next_from(0)?;
    if at > 64 || png {
        return None;
    }
    let mut z = Decompress::new(false);
    let mut out = vec![0u8; n];
    z.decompress(&data[start..], &mut out, FlushDecompress::None)
        .ok()?;
    out.truncate(z.total_out() as usize);
    Some(out)
}

/// The extent of the PNG image data whose first IDAT chunk's data starts at `start` (the
/// chunks' bytes from there to the last one's checksum) and the bytes it inflates to, if its
/// chunks hold one whole zlib stream and nothing after it; the bytes inflated are taken from
/// `budget`.
fn png_extent(data: &[u8], start: usize, budget: &mut usize) -> Option<(usize, usize)> {
    let pieces = png::pieces(data, start)?;
    let zlib = png::joined(data, start, &pieces);
    if !zlib_header(&zlib) {
        return None;
    }
    let (len, inflated) = inflated_end(&zlib[2..], budget)?;
    (2 + len + 4 == zlib.len()).then(|| (png::extent(&pieces), inflated))
}
