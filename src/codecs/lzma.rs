//! The LZMA codec: liblzma's LZMA2 (its strongest preset, 9 extreme, or a quick one), for
//! blocks whose long exact repeats an LZ77 coder with a large window codes better than the
//! context-mixing codec's match model (tables of repeated records, masked grids, metadata of model
//! files).
//!
//! Payload: a raw LZMA2 stream, with no container around it (no header, index or check: the
//! block record's checksum covers the output). The dictionary size is not stored: it is the
//! smallest power of two at least the block's length, from 4 KiB to `MAX_DICT`; the literal
//! and position settings are in the stream.

use super::block_codec::{set_payload, BlockCodec, Seen};
use crate::error::{Error, Result};
use crate::format::Codec;
use liblzma::stream::{Action, Filters, LzmaOptions, Status, Stream, PRESET_EXTREME};

/// Largest dictionary: with preset 9 the encoder takes about 11 times this in memory.
const MAX_DICT: usize = 16 << 20;
const MIN_DICT: usize = 4 << 10;

/// How hard the encoder searches (decoding does not depend on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effort {
    /// Preset 9, extreme: the smallest output, about 1-4 MB/s.
    Strongest,
    /// Preset 2: a few percent larger, several times faster.
    Quick,
}

/// How the literal coder splits its contexts: by the previous byte's high bits (text and
/// code), or by position in 4-byte words (arrays of 32-bit values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Literals {
    Bytes,
    Words,
}

/// The LZMA2 filter chain for a block of `raw_len` bytes. LZMA2 streams carry their literal
/// and position settings, so a decoder needs only the dictionary size.
fn filters(raw_len: usize, literals: Literals, effort: Effort) -> Result<Filters> {
    let preset = match effort {
        Effort::Strongest => 9 | PRESET_EXTREME,
        Effort::Quick => 2,
    };
    let mut options = LzmaOptions::new_preset(preset)
        .map_err(|e| Error::Corrupt(format!("lzma options: {e}")))?;
    let dict = raw_len.clamp(MIN_DICT, MAX_DICT).next_power_of_two();
    options.dict_size(dict as u32);
    if literals == Literals::Words {
        options.literal_context_bits(0).literal_position_bits(2);
    }
    let mut filters = Filters::new();
    filters.lzma2(&options);
    Ok(filters)
}

/// `data` as an LZMA2 stream, or `None` if liblzma fails (it does not on valid input).
pub fn encode(data: &[u8], literals: Literals, effort: Effort) -> Option<Vec<u8>> {
    let filters = filters(data.len(), literals, effort).ok()?;
    let mut stream = Stream::new_raw_encoder(&filters).ok()?;
    let mut out = Vec::with_capacity(data.len() / 4 + 64);
    loop {
        let read = stream.total_in() as usize;
        match stream
            .process_vec(data.get(read..)?, &mut out, Action::Finish)
            .ok()?
        {
            Status::StreamEnd => return Some(out),
            _ => out.reserve(out.capacity().max(4096)),
        }
    }
}

/// Decodes an LZMA payload of a `raw_len`-byte block, appending the block to `out`.
pub fn decode(payload: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let corrupt = |e: liblzma::stream::Error| Error::Corrupt(format!("lzma block: {e}"));
    let mut stream =
        Stream::new_raw_decoder(&filters(raw_len, Literals::Bytes, Effort::Strongest)?)
            .map_err(corrupt)?;
    let start = out.len();
    // One byte of room past the block, so that a stream that goes on is caught.
    out.reserve_exact(raw_len + 1);
    loop {
        let (read, written) = (stream.total_in(), stream.total_out());
        let rest = payload.get(read as usize..).unwrap_or_default();
        let status = stream
            .process_vec(rest, out, Action::Finish)
            .map_err(corrupt)?;
        if out.len() - start > raw_len {
            return Err(Error::Corrupt("lzma block longer than its record".into()));
        }
        match status {
            Status::StreamEnd => break,
            _ if stream.total_in() == read && stream.total_out() == written => {
                return Err(Error::Truncated("lzma block"));
            }
            _ => {}
        }
    }
    if out.len() - start != raw_len || stream.total_in() as usize != payload.len() {
        return Err(Error::Corrupt("lzma block of the wrong length".into()));
    }
    Ok(())
}

/// The LZMA codec with its encoder's literal and effort settings (decoding needs neither).
pub struct Lzma {
    /// How literals are modelled.
    pub literals: Literals,
    /// Which preset.
    pub effort: Effort,
}

impl Lzma {
    /// Bytes decoding `raw_len` bytes takes besides them: liblzma's dictionary buffer, and its
    /// decoder's state beside it.
    pub fn bytes_for(raw_len: usize) -> u64 {
        (raw_len.clamp(MIN_DICT, MAX_DICT).next_power_of_two() + (1 << 20)) as u64
    }
}

impl BlockCodec for Lzma {
    fn codec(&self) -> Codec {
        Codec::Lzma
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        set_payload(out, encode(data, self.literals, self.effort))
    }

    fn decode_memory(&self, _: &[u8], raw_len: usize) -> u64 {
        Lzma::bytes_for(raw_len)
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
    use crate::testing::xorshift;

    #[test]
    fn round_trips_and_refuses_what_does_not_fit() {
        let mut x = 5u64;
        let record: Vec<u8> = (0..700).map(|_| xorshift(&mut x) as u8).collect();
        let mut data = Vec::new();
        for i in 0..60u8 {
            data.extend_from_slice(&record);
            data.push(i);
        }
        for data in [&data[..], &data[..1], &[][..]] {
            for (literals, effort) in [
                (Literals::Bytes, Effort::Strongest),
                (Literals::Words, Effort::Strongest),
                (Literals::Bytes, Effort::Quick),
            ] {
                let payload = encode(data, literals, effort).unwrap();
                let mut out = vec![7];
                decode(&payload, data.len(), &mut out).unwrap();
                assert_eq!(&out[1..], data);
            }
        }
        let payload = encode(&data, Literals::Bytes, Effort::Strongest).unwrap();
        assert!(payload.len() < data.len() / 10);
        let mut out = Vec::new();
        assert!(decode(&payload, data.len() - 1, &mut out).is_err());
        assert!(decode(&payload, data.len() + 1, &mut out).is_err());
        assert!(decode(&payload[..payload.len() / 2], data.len(), &mut out).is_err());
        let mut flipped = payload.clone();
        flipped[payload.len() / 2] ^= 0x10;
        out.clear();
        // A flipped bit is an error or other bytes (the block checksum catches those).
        if decode(&flipped, data.len(), &mut out).is_ok() {
            assert_ne!(out, data);
        }
    }
}
