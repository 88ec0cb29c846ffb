//! JPEG files: found inside any input (here, an archive-like stream of text and photos), each
//! coded by the JPEG codec where it rebuilds them exactly, the rest by the other codecs; the
//! whole decodes bit-exactly at any thread count and SIMD level.

use crate::common::*;
use sep::internals::containers::{layout, Kind};
use sep::{Codec, Kernels, Options};

#[test]
fn jpegs_inside_other_data_are_found_and_recompressed() {
    let text = corpus_file("text/tar-NEWS");
    let photos = [
        "flower-of-life.jpg",
        "video-progressive.jpg",
        "stripe-separate-dc.jpg",
        "video-progressive-truncated.jpg",
    ]
    .map(|n| repo_file(&format!("tests/data/jpeg/{n}")));
    let mut input = Vec::new();
    for (i, p) in photos.iter().enumerate() {
        input.extend_from_slice(&text[i * 5000..i * 5000 + 3000]);
        input.extend_from_slice(p);
    }
    input.extend_from_slice(&text[..1000]);
    // Each whole JPEG is a stretch of its own (the truncated one too: its structure holds).
    let jpegs: Vec<u64> = layout(&input, None)
        .iter()
        .filter(|s| s.kind == Kind::Jpeg)
        .map(|s| s.len)
        .collect();
    assert_eq!(
        jpegs,
        photos.iter().map(|p| p.len() as u64).collect::<Vec<_>>()
    );

    let mut o = Options::default();
    o.threads = 2;
    let mut archive = Vec::new();
    sep::compress_bytes(&input, &mut archive, &o).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    // The two Lepton takes are JPEG blocks and smaller; the two it does not take are coded
    // by another codec.
    let coded: Vec<(u64, Codec)> = info
        .blocks
        .iter()
        .map(|b| (b.original_bytes, b.codec))
        .collect();
    for (p, jpeg) in photos.iter().zip([true, true, false, false]) {
        let found = coded.iter().find(|(n, _)| *n == p.len() as u64);
        assert_eq!(found.map(|f| f.1 == Codec::Jpeg), Some(jpeg), "{coded:?}");
    }
    let runs = [(1, Kernels::Scalar), (3, Kernels::detect())];
    decodes_in_memory(&archive, &input, &runs, "photos among other data");
}
