//! JPEG files within general data (a photo alone, a tar or other archive of them): found by
//! their start-of-image marker and walked marker by marker to their end, each given a stretch
//! of its own so that it becomes one block for the JPEG codec.

use super::segment::Kind;
use crate::codecs::jpeg::frame;

/// Smallest JPEG given a stretch of its own: smaller ones stay in the general data around
/// them (an icon, a thumbnail), whose context they share.
const MIN_LEN: usize = 2 << 10;

/// The stretches of `data`: general data around the JPEG files in it.
pub(super) fn stretches(data: &[u8]) -> Vec<(u64, Kind)> {
    let mut parts = Vec::new();
    let (mut at, mut general) = (0, 0);
    while let Some(found) = find_soi(&data[at..]) {
        let start = at + found;
        match frame(&data[start..]).filter(|f| f.len >= MIN_LEN) {
            Some(f) => {
                parts.push(((start - general) as u64, Kind::General));
                parts.push((f.len as u64, Kind::Jpeg));
                at = start + f.len;
                general = at;
            }
            None => at = start + 1,
        }
    }
    parts.push(((data.len() - general) as u64, Kind::General));
    parts
}

/// Where the first start-of-image marker followed by another marker is.
fn find_soi(data: &[u8]) -> Option<usize> {
    memchr::memmem::find(data, &[0xFF, 0xD8, 0xFF])
}
