//! The stored codec: the payload is the block's bytes as they are. The encoder stores a block
//! that no codec makes smaller.

use super::block_codec::{BlockCodec, Seen};
use crate::error::{Error, Result};
use crate::format::checksum::xxh3_64;
use crate::format::Codec;

/// Checks a stored payload against its block's length `raw_len` and checksum `raw_hash` (the
/// payload's own, `payload_hash`, already checked, where the two are equal).
pub fn check(payload: &[u8], raw_len: usize, raw_hash: u64, payload_hash: u64) -> Result<()> {
    if payload.len() != raw_len || (payload_hash != raw_hash && xxh3_64(payload) != raw_hash) {
        return Err(Error::Checksum("a stored block".into()));
    }
    Ok(())
}

/// The stored codec. The choice stores a block without calling it (the payload is the block
/// itself, passed on without a copy); it is here so that every tag has its codec.
pub struct Stored;

impl BlockCodec for Stored {
    fn codec(&self) -> Codec {
        Codec::Stored
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        out.extend_from_slice(data);
        true
    }

    fn decode_memory(&self, _: &[u8], _: usize) -> u64 {
        0
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        if payload.len() != raw_len {
            return Err(Error::Checksum("a stored block".into()));
        }
        out.extend_from_slice(payload);
        Ok(Seen::Nothing)
    }
}
