//! The one interface of the block codecs: `BlockCodec`, what every codec implements.

use crate::error::Result;
use crate::format::Codec;

/// Progress callback: called with the number of input bytes just finished.
pub type ProgressFn<'a> = &'a (dyn Fn(u64) + Sync);

/// Whether a decoder handed every piece of its output to the `seen` callback as it wrote it
/// (while in cache), so that the caller need not read the block again to hash it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Every byte went through `seen`, in order.
    All,
    /// None did.
    Nothing,
}

/// One block codec: the encoder and the decoder of one tag of the format. What a codec needs
/// besides the block (a zstd level, a float type, the context-mixing configuration and what
/// runs it, a base file) are the fields of its value; a decoder reads the rest from the
/// payload.
pub trait BlockCodec: Sync {
    /// Its tag in the archive.
    fn codec(&self) -> Codec;

    /// A trial encode of `data`: its payload, written into `out` (cleared first, so that its
    /// room is reused), and `true`; or `false` where the codec declines the block (not a block
    /// it codes, or a payload a decoder would refuse).
    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool;

    /// `encode_into` a new vector: the payload, or `None`.
    fn encode(&self, data: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(data, &mut out).then_some(out)
    }

    /// Decodes `payload`, a block of `raw_len` bytes, appending exactly those bytes to `out`
    /// (on an error `out` may hold part of them). A codec may hand each piece of its output to
    /// `seen` as it writes it, and then says so.
    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        seen: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen>;

    /// The most bytes decoding `payload`, a block of `raw_len` bytes, allocates besides the
    /// payload and the block itself (counted against `Options::memory` before decoding): by
    /// default scratch as long as the block.
    fn decode_memory(&self, payload: &[u8], raw_len: usize) -> u64 {
        let _ = payload;
        raw_len as u64
    }

    /// Whether the decoder reports its own progress (as it goes) rather than the caller once
    /// the block is done.
    fn reports_progress(&self) -> bool {
        false
    }
}

/// Puts `payload`, where there is one, in `out`: what `encode_into` returns for an encoder that
/// makes a new vector.
pub fn set_payload(out: &mut Vec<u8>, payload: Option<Vec<u8>>) -> bool {
    match payload {
        Some(p) => {
            *out = p;
            true
        }
        None => false,
    }
}
