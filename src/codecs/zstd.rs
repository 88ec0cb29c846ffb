//! The zstd codec: the payload is one zstd frame. Compression and decompression go through one
//! context per thread: a fresh context allocates its tables anew, and their first touch (page
//! faults) cost more than compressing a 64 KiB sample, once per block.

use super::block_codec::{set_payload, BlockCodec, Seen};
use crate::error::{Error, Result};
use crate::format::Codec;
use std::cell::RefCell;
use zstd::bulk::{Compressor, Decompressor};

thread_local! {
    static COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `data` compressed at `level` (the bytes `zstd::bulk::compress` gives), or `None` if zstd
/// fails.
pub fn compress(data: &[u8], level: i32) -> Option<Vec<u8>> {
    COMPRESSOR.with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        let z = match c.as_mut() {
            Some(z) => {
                z.set_compression_level(level).ok()?;
                z
            }
            None => c.insert(Compressor::new(level).ok()?),
        };
        z.compress(data).ok()
    })
}

/// Decodes a payload of `raw_len` bytes, appending them to `out`.
pub fn decode(payload: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let corrupt = |e: std::io::Error| Error::Corrupt(format!("zstd block: {e}"));
    if out.is_empty() {
        // Straight into the buffer's room (no zeroing first).
        out.reserve(raw_len);
        decompress_to(payload, out).map_err(corrupt)?;
        return Ok(());
    }
    let start = out.len();
    out.resize(start + raw_len, 0);
    let n = with_decompressor(|z| z.decompress_to_buffer(payload, &mut out[start..]))
        .map_err(corrupt)?;
    out.truncate(start + n);
    Ok(())
}

/// Runs `f` with the thread's decompression context.
fn with_decompressor<T>(
    f: impl FnOnce(&mut Decompressor<'static>) -> std::io::Result<T>,
) -> std::io::Result<T> {
    DECOMPRESSOR.with(|d| {
        let mut d = d
            .try_borrow_mut()
            .map_err(|_| std::io::Error::other("zstd context in use"))?;
        match d.as_mut() {
            Some(z) => f(z),
            None => f(d.insert(Decompressor::new()?)),
        }
    })
}

/// Decompresses the frame `payload` into `out` (cleared first), which must hold its whole
/// content; returns its length.
pub fn decompress_to(payload: &[u8], out: &mut Vec<u8>) -> std::io::Result<usize> {
    with_decompressor(|z| {
        out.clear();
        z.decompress_to_buffer(payload, out)
    })
}

/// The zstd codec at `level` (decoding needs no level).
pub struct Zstd {
    /// The compression level.
    pub level: i32,
}

impl BlockCodec for Zstd {
    fn codec(&self) -> Codec {
        Codec::Zstd
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        set_payload(out, compress(data, self.level))
    }

    fn decode_memory(&self, _: &[u8], _: usize) -> u64 {
        // The decoding context: a block is decoded whole into its buffer, with no window.
        1 << 20
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        decode(payload, raw_len, out)?;
        Ok(Seen::Nothing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_context_writes_what_a_fresh_one_does() {
        let text: Vec<u8> = (0..200_000u32).map(|i| (i * i % 251) as u8).collect();
        for level in [19, 1, 9, 15, 9] {
            let z = compress(&text, level).unwrap();
            assert_eq!(
                z,
                zstd::bulk::compress(&text, level).unwrap(),
                "level {level}"
            );
            let mut back = Vec::with_capacity(text.len());
            assert_eq!(decompress_to(&z, &mut back).unwrap(), text.len());
            assert_eq!(back, text);
        }
        // Too little room is an error, not a partial result.
        let z = compress(&text, 3).unwrap();
        let mut small = Vec::with_capacity(100);
        assert!(decompress_to(&z, &mut small).is_err());
    }
}
