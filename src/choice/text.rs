//! Which of the built-in packs that fit a level suits an input.

use crate::codecs::cm::Pack;
use std::sync::Arc;

/// Bytes of an input's start that decide whether its archive names the text pack.
pub const TEXT_HEAD: usize = 64 << 10;

/// Bytes of an input's start on which the packs' networks are compared: enough to tell prose
/// from source code, a few hundredths of a second each.
const NETWORK_HEAD: usize = 4 << 10;

/// Of `packs` (those that fit the level), the one whose network codes `head`'s start in the
/// fewest bits: the code network's pack for source code, the text network's for prose. The
/// first where fewer than two have a network to compare.
pub fn pick_pack(packs: Vec<Arc<Pack>>, head: &[u8]) -> Option<Arc<Pack>> {
    if packs.iter().filter(|p| p.network.is_some()).count() < 2 {
        return packs.into_iter().next();
    }
    let sample = &head[..head.len().min(NETWORK_HEAD)];
    // The first of equals, as the packs are listed.
    packs
        .into_iter()
        .min_by_key(|p| p.network.as_ref().map_or(u64::MAX, |n| n.cost(sample)))
}
