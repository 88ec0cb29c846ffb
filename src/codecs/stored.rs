//! The stored codec: the payload is the block's bytes as they are. The encoder stores a block
//! that no codec makes smaller.

use crate::error::{Error, Result};
use crate::format::checksum::xxh3_64;

/// Checks a stored payload against its block's length `raw_len` and checksum `raw_hash` (the
/// payload's own, `payload_hash`, already checked, where the two are equal).
pub fn check(payload: &[u8], raw_len: usize, raw_hash: u64, payload_hash: u64) -> Result<()> {
    if payload.len() != raw_len || (payload_hash != raw_hash && xxh3_64(payload) != raw_hash) {
        return Err(Error::Checksum("a stored block".into()));
    }
    Ok(())
}
