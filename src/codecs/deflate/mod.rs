//! Codec 15, `deflate`: the deflate streams in a block (gzip members, zlib streams, zip
//! entries, PNG image data: a `.gz` file, a jar, a PDF's streams, a PNG) replaced by the data
//! they inflate to, and the
//! records of the deflate encoder's decisions (`preflate-rs`) from which each stream is rebuilt
//! bit for bit. The bytes around the streams and their data form one sequence coded by the
//! context-mixing codec, so that a zip's entries and headers share one model. The encoder
//! rebuilds each stream before it keeps it: a stream that does not come back exactly stays as
//! it is among the bytes around.
//!
//! Where the context-mixing codec makes the sequence very small (a screenshot's pixels), LZMA is
//! tried on it as the general blocks' policy does, and kept where smaller.
//!
//! Payload: u32 `k` (bit 31: the sequence is an LZMA payload, codec 11's); for each of the `k` streams, u32s: the bytes before it (since the last
//! stream's end), its length, its inflated length, its record's length (bit 31: a PNG's image
//! data, whose record starts with its chunks' layout, `png::Layout`); the `k` records; then
//! the context-mixing payload (the archive's configuration) of the sequence: the bytes before
//! the first stream, its inflated data, the bytes before the second, ..., the bytes after the
//! last.

use super::block_codec::{BlockCodec, ProgressFn, Seen};
use super::cm::{Backend, CmConfig};
use super::lzma::{self, Effort, Literals, Lzma};
use crate::error::{Error, Result};
use crate::format::{cm_fits, Codec};
use png::Layout;
use preflate_rs::{preflate_whole_deflate_stream, recreate_whole_deflate_stream, PreflateConfig};

/// Deflate expands no byte to more than about this many (a length-258 match in one bit).
const MAX_RATIO: u64 = 1032;
/// Hash-chain lookups per position when the records are made: zlib's at level 9.
const CHAIN: u32 = 4096;
/// Bytes of a stream's entry in the payload's table.
const ENTRY: usize = 16;

mod png;
mod streams;

pub use streams::{find_streams, inflated_head, Stream, MAX_PLAIN};

/// Bit of a stream's record length in the payload's table: the stream is a PNG's image data.
const PNG_BIT: u32 = 1 << 31;
/// Bit of the payload's stream count: the sequence is coded by LZMA.
const LZMA_BIT: u32 = 1 << 31;
/// LZMA is tried on a sequence the context-mixing codec made under `1 / LZMA_SHARE` of (as on
/// general blocks, `choice::general`).
const LZMA_SHARE: usize = 5;

/// The deflate codec: the sequence of a block's bytes around its streams and their data coded
/// by the context-mixing codec with `config`.
pub struct Deflate<'a> {
    /// The block's context-mixing configuration (the archive's).
    pub config: &'a CmConfig,
    /// What runs the predictor.
    pub backend: &'a dyn Backend,
}

/// A stream's inflated data and record, checked by rebuilding the stream; `None` where
/// preflate cannot take it or the rebuilt stream differs.
fn analyse(stream: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let config = PreflateConfig {
        max_chain_length: CHAIN,
        plain_text_limit: MAX_PLAIN,
        // Checked below, by the decoder's own path.
        verify_compression: false,
    };
    let (result, plain) = guarded(|| preflate_whole_deflate_stream(stream, &config))?.ok()?;
    if result.compressed_size != stream.len() {
        return None;
    }
    let plain = plain.text().to_vec();
    let rebuilt = guarded(|| recreate_whole_deflate_stream(&plain, &result.corrections))?.ok()?;
    (rebuilt == stream).then_some((plain, result.corrections))
}

/// Runs `f`, a panic in it (preflate's on a record it cannot use) turned into `None`.
fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// The PNG image data `s` of `data` (its chunks from the first one's data to the last one's
/// checksum) as inflated data and a record that starts with the chunks' layout; `None` where
/// the chunks are not rebuilt exactly.
fn analyse_png(data: &[u8], s: &Stream) -> Option<(Vec<u8>, Vec<u8>)> {
    let stream = &data[s.start..s.start + s.len];
    let pieces = png::pieces(data, s.start)?;
    let zlib = png::joined(data, s.start, &pieces);
    let layout = Layout::of(&zlib, pieces)?;
    let deflate = zlib.get(2..zlib.len().checked_sub(4)?)?;
    // The chunks' checksums and framing as the decoder makes them (a stored checksum that is
    // wrong declines the PNG); `analyse` checks the stream itself.
    if layout.rebuild(deflate).ok()? != stream {
        return None;
    }
    let (plain, record) = analyse(deflate)?;
    Some((plain, [layout.to_bytes(), record].concat()))
}

/// A stream's entry in a payload.
#[derive(Clone, Copy)]
struct Entry {
    /// Bytes before it, since the last stream's end.
    gap: usize,
    /// Its length.
    len: usize,
    /// Its inflated length.
    inflated: usize,
    /// Its record's length.
    record: usize,
    /// Whether it is a PNG's image data.
    png: bool,
}

/// A payload's fields.
struct Parts<'p> {
    /// Whether the sequence is coded by LZMA (else by the context-mixing codec).
    lzma: bool,
    entries: Vec<Entry>,
    records: &'p [u8],
    /// The sequence's length.
    sequence: usize,
    inner: &'p [u8],
}

/// Reads a payload's fields for a block of `raw_len` bytes, checking them against each other.
fn parse(payload: &[u8], raw_len: usize) -> Result<Parts<'_>> {
    let bad = |what: String| Error::Corrupt(format!("deflate block: {what}"));
    let u32_at = |i: usize| -> Result<usize> {
        let b = payload
            .get(i..i + 4)
            .ok_or(Error::Truncated("deflate block"))?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let first = u32_at(0)?;
    let (k, lzma) = (first & !(LZMA_BIT as usize), first & LZMA_BIT as usize != 0);
    if k == 0 || k > payload.len() / ENTRY {
        return Err(bad(format!("{k} streams")));
    }
    let (mut entries, mut covered, mut plain, mut records) = (Vec::new(), 0usize, 0usize, 0usize);
    for i in 0..k {
        let at = 4 + i * ENTRY;
        let record = u32_at(at + 12)?;
        let e = Entry {
            gap: u32_at(at)?,
            len: u32_at(at + 4)?,
            inflated: u32_at(at + 8)?,
            record: record & !(PNG_BIT as usize),
            png: record & PNG_BIT as usize != 0,
        };
        covered = covered.saturating_add(e.gap).saturating_add(e.len);
        plain = plain.saturating_add(e.inflated);
        records = records.saturating_add(e.record);
        if e.len == 0 || e.inflated as u64 > e.len as u64 * MAX_RATIO {
            return Err(bad(format!(
                "{} inflated bytes from a {}-byte stream",
                e.inflated, e.len
            )));
        }
        entries.push(e);
    }
    if covered > raw_len || plain > MAX_PLAIN {
        return Err(bad(format!(
            "streams of {covered} bytes inflating to {plain} in a block of {raw_len}"
        )));
    }
    let rest = &payload[4 + k * ENTRY..];
    if records >= rest.len() {
        return Err(Error::Truncated("deflate block"));
    }
    let (records, inner) = rest.split_at(records);
    // The sequence: the bytes around the streams, and their data.
    let sequence = raw_len - entries.iter().map(|e| e.len).sum::<usize>() + plain;
    // The context-mixing codec's bound on its work, as for its own blocks.
    if !lzma && !cm_fits(sequence as u64, inner.len() as u64) {
        return Err(bad("a sequence too long for its payload".into()));
    }
    Ok(Parts {
        lzma,
        entries,
        records,
        sequence,
        inner,
    })
}

/// The length of the sequence a payload for a block of `raw_len` bytes codes, if the decoder
/// takes its fields (for the fuzz target, which keeps the context-mixing work short).
pub fn sequence_len(payload: &[u8], raw_len: usize) -> Option<usize> {
    parse(payload, raw_len).ok().map(|p| p.sequence)
}

/// No progress: the block's is reported when it is done (its sequence is longer).
fn quiet(_: u64) {}

impl Deflate<'_> {
    /// The payload of `data`, whose streams are `streams`: `None` if none is rebuilt exactly.
    fn encode_streams(&self, data: &[u8], streams: &[Stream]) -> Option<Vec<u8>> {
        let (mut table, mut records, mut sequence) = (Vec::new(), Vec::new(), Vec::new());
        let mut at = 0;
        let mut k = 0u32;
        for s in streams {
            let stream = &data[s.start..s.start + s.len];
            let analysed = match s.png {
                true => analyse_png(data, s),
                false => analyse(stream),
            };
            let Some((plain, record)) = analysed else {
                continue;
            };
            let gap = s.start - at;
            let record_len = u32::try_from(record.len()).ok().filter(|&r| r < PNG_BIT)?;
            let png = if s.png { PNG_BIT } else { 0 };
            for v in [gap, s.len, plain.len()] {
                table.extend_from_slice(&u32::try_from(v).ok()?.to_le_bytes());
            }
            table.extend_from_slice(&(record_len | png).to_le_bytes());
            sequence.extend_from_slice(&data[at..s.start]);
            sequence.extend_from_slice(&plain);
            records.extend_from_slice(&record);
            at = s.start + s.len;
            k += 1;
        }
        if k == 0 {
            return None;
        }
        sequence.extend_from_slice(&data[at..]);
        // A pack for text only starts the sequence where it looks like text, as a block.
        let config = &self.config.for_block(&sequence);
        let progress: ProgressFn = &quiet;
        let mut inner = self.backend.encode(&sequence, config, progress);
        if LZMA_SHARE * inner.len() < sequence.len() {
            let lzma = lzma::encode(&sequence, Literals::Bytes, Effort::Strongest);
            if let Some(l) = lzma.filter(|l| l.len() < inner.len()) {
                inner = l;
                k |= LZMA_BIT;
            }
        }
        let mut out = k.to_le_bytes().to_vec();
        out.extend_from_slice(&table);
        out.extend_from_slice(&records);
        out.extend_from_slice(&inner);
        Some(out)
    }
}

impl BlockCodec for Deflate<'_> {
    fn codec(&self) -> Codec {
        Codec::Deflate
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        let streams = find_streams(data);
        let Some(payload) = self.encode_streams(data, &streams) else {
            return false;
        };
        *out = payload;
        // What the decoder would refuse is not written.
        out.len() < data.len() && parse(out, data.len()).is_ok()
    }

    fn decode_memory(&self, payload: &[u8], raw_len: usize) -> u64 {
        let Ok(p) = parse(payload, raw_len) else {
            return 0;
        };
        // The sequence, its model's tables (or LZMA's dictionary), and a stream's rebuilding
        // (its data, window and tokens).
        let tables = match p.lzma {
            true => Lzma::bytes_for(p.sequence),
            false => super::cm::need(
                p.inner,
                p.sequence,
                self.config.params,
                self.config.pack.as_deref(),
            ),
        };
        let largest = p
            .entries
            .iter()
            .map(|e| e.inflated + e.len)
            .max()
            .unwrap_or(0);
        p.sequence as u64 + tables + 3 * largest as u64 + (4 << 20)
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        let p = parse(payload, raw_len)?;
        let bad = |what: String| Error::Corrupt(format!("deflate block: {what}"));
        let mut sequence = Vec::new();
        let progress: ProgressFn = &quiet;
        match p.lzma {
            true => lzma::decode(p.inner, p.sequence, &mut sequence)?,
            false => {
                self.backend
                    .decode(p.inner, p.sequence, self.config, progress, &mut sequence)?;
            }
        }
        if sequence.len() != p.sequence {
            return Err(bad("a sequence of the wrong length".into()));
        }
        let (mut at, mut records) = (0, p.records);
        for e in &p.entries {
            out.extend_from_slice(&sequence[at..at + e.gap]);
            let plain = &sequence[at + e.gap..at + e.gap + e.inflated];
            at += e.gap + e.inflated;
            let (record, rest) = records.split_at(e.record);
            records = rest;
            let (layout, record) = match e.png {
                true => {
                    let (layout, rest) = Layout::read(record)?;
                    (Some(layout), rest)
                }
                false => (None, record),
            };
            let stream = match guarded(|| recreate_whole_deflate_stream(plain, record)) {
                Some(Ok(s)) => s,
                Some(Err(e)) => return Err(bad(format!("record refused ({:?})", e.exit_code()))),
                None => return Err(bad("record refused".into())),
            };
            let stream = match layout {
                Some(layout) => layout.rebuild(&stream)?,
                None => stream,
            };
            if stream.len() != e.len {
                return Err(bad(format!(
                    "a {}-byte stream where the table says {}",
                    stream.len(),
                    e.len
                )));
            }
            out.extend_from_slice(&stream);
        }
        out.extend_from_slice(&sequence[at..]);
        Ok(Seen::Nothing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::cm::CpuBackend;
    use std::io::Write;

    fn text(n: usize) -> Vec<u8> {
        let words = [
            "deflate ", "stream ", "record ", "the ", "of ", "bits\n", "gzip ",
        ];
        let mut s = 5u64;
        let mut out = Vec::new();
        while out.len() < n {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.extend_from_slice(words[(s >> 33) as usize % words.len()].as_bytes());
        }
        out.truncate(n);
        out
    }

    fn gzip(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    fn with_codec(f: impl FnOnce(&Deflate)) {
        let config = CmConfig::for_level(crate::codecs::cm::DEFAULT_LEVEL);
        let backend = CpuBackend::default();
        f(&Deflate {
            config: &config,
            backend: &backend,
        });
    }

    fn round_trip(codec: &Deflate, block: &[u8]) -> Vec<u8> {
        let payload = codec.encode(block).expect("the codec takes the block");
        let mut out = Vec::new();
        codec
            .decode(&payload, block.len(), &mut out, &mut |_| {})
            .unwrap();
        assert!(out == block);
        payload
    }

    #[test]
    fn gzip_members_and_pdf_streams_are_found_whole() {
        let gz = gzip(&text(50_000), 9);
        let mut data = b"some text before ".to_vec();
        data.extend_from_slice(&gz);
        data.extend_from_slice(b" between << /Filter /FlateDecode >>\nstream\r\n");
        let pdf_at = data.len();
        let z = zlib(&text(40_000));
        data.extend_from_slice(&z);
        data.extend_from_slice(b"\r\nendstream\n");
        let found = find_streams(&data);
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].header, found[0].start), (17, 27));
        assert_eq!((found[0].end(), found[0].inflated), (17 + gz.len(), 50_000));
        assert_eq!(
            (found[1].start, found[1].end()),
            (pdf_at + 2, pdf_at + z.len())
        );
        // A stream cut short is no stream.
        assert!(find_streams(&gz[..gz.len() / 2]).is_empty());
    }

    #[test]
    fn streams_and_the_bytes_around_them_come_back_exactly() {
        with_codec(|codec| {
            let data = text(60_000);
            for level in [1, 6, 9] {
                let gz = gzip(&data, level);
                let payload = round_trip(codec, &gz);
                // The record is a small part of the stream (flate2 deflates with miniz_oxide).
                let record = u32::from_le_bytes(payload[16..20].try_into().unwrap()) as usize;
                assert!(
                    record < gz.len() / 10,
                    "level {level}: {record} of {}",
                    gz.len()
                );
            }
            // Two members with text around and between: one sequence.
            let mut two = b"header ".to_vec();
            two.extend_from_slice(&gzip(&text(9000), 6));
            two.extend_from_slice(&text(3000));
            two.extend_from_slice(&gzip(&data, 9));
            two.extend_from_slice(b" footer");
            let payload = round_trip(codec, &two);
            assert_eq!(u32::from_le_bytes(payload[..4].try_into().unwrap()), 2);
            // Data with no stream is declined.
            assert!(codec.encode(&text(5000)).is_none());
        });
    }

    /// Rows of an 8-bit grey image (a gradient with noise), each after its filter byte.
    fn raster(width: usize, height: usize) -> Vec<u8> {
        let mut s = 3u64;
        let mut out = Vec::new();
        for y in 0..height {
            out.push((y % 5) as u8);
            for x in 0..width {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                out.push(((x + 2 * y) / 3 + (s >> 61) as usize) as u8);
            }
        }
        out
    }

    #[test]
    fn png_image_data_comes_back_exactly_across_its_chunks() {
        with_codec(|codec| {
            let pixels = raster(300, 200);
            let z = zlib(&pixels);
            let png = super::png::tests::png_file(&z, &[8192, 8192]);
            let found = find_streams(&png);
            assert_eq!(found.len(), 1);
            assert!(found[0].png);
            assert_eq!(found[0].inflated, pixels.len());
            let payload = round_trip(codec, &png);
            assert!(
                payload.len() < png.len() * 9 / 10,
                "{} of {}",
                payload.len(),
                png.len()
            );
            // A wrong checksum in a chunk: the PNG is not rebuilt, and not taken.
            let mut bad = png.clone();
            let crc_at = found[0].start + 8192;
            bad[crc_at] ^= 1;
            assert!(codec.encode(&bad).is_none());
            // Image data followed by more than its stream in the chunks is not taken either.
            let mut longer = z.clone();
            longer.push(0);
            assert!(find_streams(&super::png::tests::png_file(&longer, &[])).is_empty());
        });
    }

    #[test]
    fn a_very_redundant_sequence_may_go_to_lzma() {
        with_codec(|codec| {
            // A screenshot's rows: flat runs of a few colours, each row after its filter byte.
            let mut pixels = Vec::new();
            for y in 0..400usize {
                pixels.push(0);
                for x in 0..600usize {
                    let c = if (x / 40 + y / 25) % 3 == 0 {
                        0xEE
                    } else {
                        0x30
                    };
                    pixels.extend_from_slice(&[c, c, (x / 150) as u8 * 60]);
                }
            }
            let png = super::png::tests::png_file(&zlib(&pixels), &[4096]);
            let payload = round_trip(codec, &png);
            let first = u32::from_le_bytes(payload[..4].try_into().unwrap());
            assert_eq!(first, LZMA_BIT | 1);
        });
    }

    #[test]
    fn damaged_payloads_are_errors() {
        with_codec(|codec| {
            let mut block = gzip(&text(30_000), 9);
            block.extend_from_slice(&gzip(&text(7_000), 4));
            let payload = round_trip(codec, &block);
            let table = 4 + 2 * ENTRY;
            let mut s = 11u64;
            for i in 0..200 {
                let mut p = payload.clone();
                match i % 4 {
                    0 => p.truncate(p.len() * (i % 97) / 97),
                    // A byte of the table, of the first record, of the inner payload.
                    1 => p[i % table] ^= 1 << (i % 8),
                    2 => p[table + i % 40] ^= 1 << (i % 8),
                    _ => {
                        s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                        let at = table + (s >> 33) as usize % (p.len() - table);
                        p[at] ^= 0x40;
                    }
                }
                let mut out = Vec::new();
                // An error, or the block's length of bytes (whose checksum the archive checks).
                if codec.decode(&p, block.len(), &mut out, &mut |_| {}).is_ok() {
                    assert_eq!(out.len(), block.len(), "damage {i}");
                }
            }
        });
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
        assert!(find_streams(&data).is_empty());
        // Bounded, well under a second.
        assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
    }
}
