//! JPEG files within general data (a photo alone, a tar or other archive of them): found by
//! their start-of-image marker and walked marker by marker to their end, each given a stretch
//! of its own so that it becomes one block for the JPEG codec.

use super::segment::Kind;
use crate::codecs::jpeg::walk;

/// Smallest JPEG given a stretch of its own: smaller ones stay in the general data around
/// them (an icon, a thumbnail), whose context they share.
const MIN_LEN: usize = 2 << 10;

/// The stretches of `data`: general data around the JPEG files in it.
pub(super) fn stretches(data: &[u8]) -> Vec<(u64, Kind)> {
    let mut parts = Vec::new();
    let (mut at, mut general) = (0, 0);
    while let Some(found) = find_soi(&data[at..]) {
        let start = at + found;
        match walk(&data[start..]) {
            Ok(f) if f.len >= MIN_LEN => {
                parts.push(((start - general) as u64, Kind::General));
                parts.push((f.len as u64, Kind::Jpeg));
                at = start + f.len;
                general = at;
            }
            // A small JPEG stays in the general data, and so does a chain of markers that
            // did not hold, which is not walked again from a start within it.
            Ok(f) => at = start + f.len,
            Err(reached) => at = start + reached.max(1),
        }
    }
    parts.push(((data.len() - general) as u64, Kind::General));
    parts
}

/// Where the first start-of-image marker followed by another marker is.
fn find_soi(data: &[u8]) -> Option<usize> {
    memchr::memmem::find(data, &[0xFF, 0xD8, 0xFF])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_of_markers_that_does_not_hold_is_walked_once() {
        // 1 MiB of application segments, each holding a start of image and another marker,
        // with no end of image: walked again from every start within it, quadratic.
        let mut data = vec![0xFF, 0xD8];
        while data.len() < 1 << 20 {
            data.extend_from_slice(&[0xFF, 0xE1, 0x00, 0x07, 0xFF, 0xD8, 0xFF, 0xE1, 0x00]);
        }
        let t = std::time::Instant::now();
        assert_eq!(stretches(&data), vec![(data.len() as u64, Kind::General)]);
        // Linear is milliseconds; quadratic, minutes.
        assert!(t.elapsed().as_secs() < 20);
    }
}
