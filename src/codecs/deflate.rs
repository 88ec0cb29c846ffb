//! Codec 15, `deflate`: a deflate stream (raw, or in a gzip member, a zlib stream or a zip
//! entry) replaced by the data it inflates to, coded by the context-mixing codec, and the
//! record of the deflate encoder's decisions (`preflate-rs`) from which the stream is rebuilt
//! bit for bit. The encoder rebuilds the stream itself before it writes a payload: a stream
//! that does not come back exactly is left to the other codecs.
//!
//! Payload: u16 `head` and u16 `tail` (the bytes before and after the deflate stream: a gzip,
//! zlib or zip entry header, a trailer), u32 the inflated length, u32 the record's length, the
//! head's bytes, the tail's bytes, the record, then the context-mixing payload of the inflated
//! data (coded with the archive's configuration).

use super::block_codec::{BlockCodec, ProgressFn, Seen};
use super::cm::{Backend, CmConfig};
use crate::error::{Error, Result};
use crate::format::{cm_fits, Codec};
use preflate_rs::{preflate_whole_deflate_stream, recreate_whole_deflate_stream, PreflateConfig};

/// Fixed part of the payload.
const FIXED: usize = 12;
/// Most bytes a stream may inflate to: what one block's context-mixing model codes at most
/// (the block size), and a bound on a bomb.
pub const MAX_PLAIN: usize = 32 << 20;
/// Deflate expands no byte to more than about this many (a length-258 match in one bit).
const MAX_RATIO: u64 = 1032;
/// Longest tail kept beside the stream: a trailer, not data the stream did not cover.
const MAX_TAIL: usize = 64;
/// Hash-chain lookups per position when the records are made: zlib's at level 9.
const CHAIN: u32 = 4096;

/// The deflate codec: its inflated data coded by the context-mixing codec with `config`.
pub struct Deflate<'a> {
    /// The block's context-mixing configuration (the archive's).
    pub config: &'a CmConfig,
    /// What runs the predictor.
    pub backend: &'a dyn Backend,
    /// For a configuration whose pack is for text only: whether inflated data looks like text
    /// (other data then starts without the pack, as a block would). Encoding only.
    pub text_test: Option<fn(&[u8]) -> bool>,
}

/// Where a stream's deflate data starts in `data`: after a gzip member's header, a zlib
/// header or a zip local entry's header; at 0 where there is none.
pub fn deflate_start(data: &[u8]) -> Option<usize> {
    if data.starts_with(&[0x1F, 0x8B, 0x08]) {
        return gzip_header(data);
    }
    if data.starts_with(b"PK\x03\x04") {
        let [m0, m1] = [*data.get(8)?, *data.get(9)?];
        let name = u16::from_le_bytes([*data.get(26)?, *data.get(27)?]) as usize;
        let extra = u16::from_le_bytes([*data.get(28)?, *data.get(29)?]) as usize;
        return (u16::from_le_bytes([m0, m1]) == 8).then_some(30 + name + extra);
    }
    if let [cmf, flg, ..] = *data {
        // Deflate with a window of at most 32 KiB, no preset dictionary, a valid check.
        let zlib = cmf & 0x0F == 8 && cmf >> 4 <= 7 && flg & 0x20 == 0;
        if zlib && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0 {
            return Some(2);
        }
    }
    Some(0)
}

/// The length of a gzip member's header (RFC 1952), or `None` if it does not fit in `data`.
fn gzip_header(data: &[u8]) -> Option<usize> {
    let flags = *data.get(3)?;
    if flags & 0xE0 != 0 {
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

/// The deflate stream of `data` from `start`: its length, inflated data and record, checked by
/// rebuilding it; `None` where preflate cannot take it or the rebuilt stream differs.
fn analyse(data: &[u8], start: usize) -> Option<(usize, Vec<u8>, Vec<u8>)> {
    let config = PreflateConfig {
        max_chain_length: CHAIN,
        plain_text_limit: MAX_PLAIN,
        // Checked below, by the decoder's own path.
        verify_compression: false,
    };
    let stream = &data[start..];
    let (result, plain) = guarded(|| preflate_whole_deflate_stream(stream, &config))?.ok()?;
    let len = result.compressed_size;
    let plain = plain.text().to_vec();
    if len == 0 || len > stream.len() || plain.len() > MAX_PLAIN {
        return None;
    }
    let rebuilt = guarded(|| recreate_whole_deflate_stream(&plain, &result.corrections))?.ok()?;
    (rebuilt == stream[..len]).then_some((len, plain, result.corrections))
}

/// Runs `f`, a panic in it (preflate's on a record it cannot use) turned into `None`.
fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// The fields of a payload: head, tail, inflated length, record, and the inner payload.
struct Parts<'p> {
    head: &'p [u8],
    tail: &'p [u8],
    plain_len: usize,
    record: &'p [u8],
    inner: &'p [u8],
}

/// Reads a payload's fields for a block of `raw_len` bytes, checking them against each other.
fn parse(payload: &[u8], raw_len: usize) -> Result<Parts<'_>> {
    let bad = |what: &str| Error::Corrupt(format!("deflate block: {what}"));
    if payload.len() < FIXED {
        return Err(Error::Truncated("deflate block"));
    }
    let u16_at = |i: usize| u16::from_le_bytes([payload[i], payload[i + 1]]) as usize;
    let u32_at = |i: usize| {
        u32::from_le_bytes([payload[i], payload[i + 1], payload[i + 2], payload[i + 3]]) as usize
    };
    let (head, tail, plain_len, record) = (u16_at(0), u16_at(2), u32_at(4), u32_at(8));
    let stream = raw_len
        .checked_sub(head + tail)
        .filter(|&n| n > 0)
        .ok_or_else(|| bad("head and tail longer than the block"))?;
    if tail > MAX_TAIL || plain_len > MAX_PLAIN || plain_len as u64 > stream as u64 * MAX_RATIO {
        return Err(bad(&format!(
            "{plain_len} inflated bytes from a {stream}-byte stream"
        )));
    }
    let rest = &payload[FIXED..];
    if rest.len() < head + tail + record {
        return Err(Error::Truncated("deflate block"));
    }
    let (head_bytes, rest) = rest.split_at(head);
    let (tail_bytes, rest) = rest.split_at(tail);
    let (record_bytes, inner) = rest.split_at(record);
    // The context-mixing codec's bound on its work, as for its own blocks.
    if inner.is_empty() || !cm_fits(plain_len as u64, inner.len() as u64) {
        return Err(bad("inflated data too long for its payload"));
    }
    Ok(Parts {
        head: head_bytes,
        tail: tail_bytes,
        plain_len,
        record: record_bytes,
        inner,
    })
}

/// No progress: the block's is reported when it is done (its inflated data is longer).
fn quiet(_: u64) {}

impl BlockCodec for Deflate<'_> {
    fn codec(&self) -> Codec {
        Codec::Deflate
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        let Some(start) = deflate_start(data) else {
            return false;
        };
        if start > u16::MAX as usize {
            return false;
        }
        let Some((len, plain, record)) = analyse(data, start) else {
            return false;
        };
        let tail = &data[start + len..];
        if tail.len() > MAX_TAIL || plain.is_empty() {
            return false;
        }
        let progress: ProgressFn = &quiet;
        let unpacked;
        let config = match self.text_test.is_some_and(|text| !text(&plain)) {
            true => {
                unpacked = self.config.without_pack();
                &unpacked
            }
            false => self.config,
        };
        let inner = self.backend.encode(&plain, config, progress);
        out.clear();
        out.extend_from_slice(&(start as u16).to_le_bytes());
        out.extend_from_slice(&(tail.len() as u16).to_le_bytes());
        out.extend_from_slice(&(plain.len() as u32).to_le_bytes());
        out.extend_from_slice(&(record.len() as u32).to_le_bytes());
        out.extend_from_slice(&data[..start]);
        out.extend_from_slice(tail);
        out.extend_from_slice(&record);
        out.extend_from_slice(&inner);
        // What the decoder would refuse is not written.
        out.len() < data.len() && parse(out, data.len()).is_ok()
    }

    fn decode_memory(&self, payload: &[u8], raw_len: usize) -> u64 {
        let Ok(p) = parse(payload, raw_len) else {
            return 0;
        };
        // The inflated data, its model's tables, and the rebuilding's window and tokens.
        let tables = super::cm::need(
            p.inner,
            p.plain_len,
            self.config.params,
            self.config.pack.as_deref(),
        );
        3 * p.plain_len as u64 + raw_len as u64 + tables + (4 << 20)
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
        let mut plain = Vec::new();
        let progress: ProgressFn = &quiet;
        self.backend
            .decode(p.inner, p.plain_len, self.config, progress, &mut plain)?;
        if plain.len() != p.plain_len {
            return Err(bad("inflated data of the wrong length".into()));
        }
        let stream = match guarded(|| recreate_whole_deflate_stream(&plain, p.record)) {
            Some(Ok(s)) => s,
            Some(Err(e)) => return Err(bad(format!("record refused ({:?})", e.exit_code()))),
            None => return Err(bad("record refused".into())),
        };
        if p.head.len() + stream.len() + p.tail.len() != raw_len {
            return Err(bad(format!(
                "a {}-byte stream where the block holds {}",
                stream.len(),
                raw_len - p.head.len() - p.tail.len()
            )));
        }
        out.extend_from_slice(p.head);
        out.extend_from_slice(&stream);
        out.extend_from_slice(p.tail);
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

    fn round_trip(block: &[u8]) -> Vec<u8> {
        let config = CmConfig::for_level(crate::codecs::cm::DEFAULT_LEVEL);
        let backend = CpuBackend::default();
        let codec = Deflate {
            config: &config,
            backend: &backend,
            text_test: None,
        };
        let payload = codec.encode(block).expect("the codec takes the stream");
        let mut out = Vec::new();
        codec
            .decode(&payload, block.len(), &mut out, &mut |_| {})
            .unwrap();
        assert!(out == block);
        payload
    }

    #[test]
    fn gzip_zlib_and_raw_streams_come_back_exactly() {
        let data = text(60_000);
        for level in [1, 6, 9] {
            let gz = gzip(&data, level);
            let payload = round_trip(&gz);
            // The record is a small part of the stream (flate2 deflates with miniz_oxide).
            let record = u32::from_le_bytes(payload[8..12].try_into().unwrap()) as usize;
            assert!(
                record < gz.len() / 10,
                "level {level}: {record} of {}",
                gz.len()
            );
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&data).unwrap();
        round_trip(&z.finish().unwrap());
        let mut d = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        d.write_all(&data).unwrap();
        round_trip(&d.finish().unwrap());
    }

    #[test]
    fn what_is_not_a_whole_stream_is_declined() {
        let config = CmConfig::for_level(crate::codecs::cm::DEFAULT_LEVEL);
        let backend = CpuBackend::default();
        let codec = Deflate {
            config: &config,
            backend: &backend,
            text_test: None,
        };
        let gz = gzip(&text(20_000), 6);
        // Cut short; followed by more than a trailer; not deflate at all.
        assert!(codec.encode(&gz[..gz.len() / 2]).is_none());
        let mut longer = gz.clone();
        longer.extend_from_slice(&text(1000));
        assert!(codec.encode(&longer).is_none());
        assert!(codec.encode(&text(5000)).is_none());
    }

    #[test]
    fn damaged_payloads_are_errors() {
        let gz = gzip(&text(30_000), 9);
        let payload = round_trip(&gz);
        let config = CmConfig::for_level(crate::codecs::cm::DEFAULT_LEVEL);
        let backend = CpuBackend::default();
        let codec = Deflate {
            config: &config,
            backend: &backend,
            text_test: None,
        };
        let head = u16::from_le_bytes([payload[0], payload[1]]) as usize;
        let tail = u16::from_le_bytes([payload[2], payload[3]]) as usize;
        let record = FIXED + head + tail;
        let mut s = 11u64;
        for i in 0..200 {
            let mut p = payload.clone();
            match i % 4 {
                0 => p.truncate(p.len() * (i % 97) / 97),
                // A byte of the fixed fields, the record, the inner payload.
                1 => p[i % FIXED] ^= 1 << (i % 8),
                2 => p[record + i % 40] ^= 1 << (i % 8),
                _ => {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let at = record + (s >> 33) as usize % (p.len() - record);
                    p[at] ^= 0x40;
                }
            }
            let mut out = Vec::new();
            // An error, or the block's length of bytes (whose checksum the archive checks).
            if codec.decode(&p, gz.len(), &mut out, &mut |_| {}).is_ok() {
                assert_eq!(out.len(), gz.len(), "damage {i}");
            }
        }
    }
}
