//! Deflate streams within general data (`codecs::deflate::find_streams`: gzip members, zip
//! entries, a PDF's zlib streams, a PNG's image data): each run of them, with the bytes between (a zip's headers),
//! gets a stretch of its own for the deflate codec, which codes the bytes and the streams' data
//! as one sequence.

use super::segment::Kind;
use crate::codecs::deflate::{find_streams, MAX_PLAIN};

/// Most bytes a run of streams spans: well within a block, so that the plan does not cut one.
const RUN_MAX: usize = 8 << 20;

/// Splits the general parts of `parts` (stretches of `data`, in order) around the runs of
/// deflate streams in them.
pub(super) fn split(data: &[u8], parts: Vec<(u64, Kind)>) -> Vec<(u64, Kind)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    for (len, kind) in parts {
        let end = at + len as usize;
        match kind {
            Kind::General => out.extend(stretches(&data[at..end])),
            k => out.push((len, k)),
        }
        at = end;
    }
    out
}

/// The stretches of `part`: general data around the runs of deflate streams in it, each run
/// spanning at most `RUN_MAX` bytes and inflating to at most `MAX_PLAIN`.
fn stretches(part: &[u8]) -> Vec<(u64, Kind)> {
    // The runs: where each starts and ends, and what it inflates to.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for s in find_streams(part) {
        match runs.last_mut() {
            Some((start, end, inflated))
                if s.end() - *start <= RUN_MAX && *inflated + s.inflated <= MAX_PLAIN =>
            {
                *end = s.end();
                *inflated += s.inflated;
            }
            _ => runs.push((s.header, s.end(), s.inflated)),
        }
    }
    let mut parts = Vec::new();
    let mut general = 0;
    for (start, end, _) in runs {
        parts.push(((start - general) as u64, Kind::General));
        parts.push(((end - start) as u64, Kind::Deflate));
        general = end;
    }
    parts.push(((part.len() - general) as u64, Kind::General));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn a_run_of_streams_is_one_stretch() {
        let mut x = 3u64;
        let text: Vec<u8> = (0..30_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                b"abcdefgh ijk\n"[(x >> 33) as usize % 13]
            })
            .collect();
        let gz = gzip(&text);
        let mut data = b"before".to_vec();
        for _ in 0..3 {
            data.extend_from_slice(&gz);
            data.extend_from_slice(b" between ");
        }
        let run = 3 * gz.len() + 2 * 9;
        assert_eq!(
            split(&data, vec![(data.len() as u64, Kind::General)]),
            vec![
                (6, Kind::General),
                (run as u64, Kind::Deflate),
                (9, Kind::General)
            ]
        );
    }
}
