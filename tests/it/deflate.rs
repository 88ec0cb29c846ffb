//! Deflate streams: gzip members, zip entries, PDF streams and PNG image data found inside any
//! input, each
//! coded as its inflated data and a record that rebuilds it where the deflate codec rebuilds
//! it exactly, the rest by the other codecs; the whole decodes bit-exactly at any thread count
//! and SIMD level, and a decompression bomb costs nothing.

use crate::common::*;
use sep::internals::containers::{layout, Kind};
use sep::{Codec, Kernels, Options};

/// A zip local entry holding `deflate` (raw deflate of `plain`), as zip writers write one
/// whose sizes they know.
fn zip_entry(name: &str, deflate: &[u8], plain: &[u8]) -> Vec<u8> {
    let mut e = b"PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00\x00\x00".to_vec();
    e.extend_from_slice(&crc32(plain).to_le_bytes());
    e.extend_from_slice(&(deflate.len() as u32).to_le_bytes());
    e.extend_from_slice(&(plain.len() as u32).to_le_bytes());
    e.extend_from_slice(&(name.len() as u16).to_le_bytes());
    e.extend_from_slice(&0u16.to_le_bytes());
    e.extend_from_slice(name.as_bytes());
    e.extend_from_slice(deflate);
    e
}

/// CRC-32 (IEEE), bit by bit: test data only.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Adler-32: test data only.
fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    b << 16 | a
}

#[test]
fn deflate_streams_inside_other_data_are_found_and_rebuilt() {
    let gz = repo_file("tests/data/deflate/sed.1.gz");
    let plain = corpus_file("text/sed.1");
    // gzip's member: a 10-byte header, the deflate stream, an 8-byte trailer.
    let deflate = &gz[10..gz.len() - 8];
    let text = corpus_file("text/tar-NEWS");
    let mut input = text[..3000].to_vec();
    input.extend_from_slice(&gz);
    input.extend_from_slice(&text[3000..4000]);
    input.extend_from_slice(&zip_entry("sed.1", deflate, &plain));
    input.extend_from_slice(b"PK\x01\x02 and the rest of a central directory\n");
    input.extend_from_slice(b"<< /Length 4100 /Filter /FlateDecode >>\nstream\r\n\x78\xda");
    input.extend_from_slice(deflate);
    input.extend_from_slice(&adler32(&plain).to_be_bytes());
    input.extend_from_slice(b"\r\nendstream\nendobj\n");
    // One run of streams, from the gzip member's header to the zlib stream's trailer, with
    // the text, zip header and PDF dictionary between.
    let runs: Vec<u64> = layout(&input, None)
        .iter()
        .filter(|s| s.kind == Kind::Deflate)
        .map(|s| s.len)
        .collect();
    let run_end = input.len() - b"\r\nendstream\nendobj\n".len();
    assert_eq!(runs, [(run_end - 3000) as u64]);

    let mut o = Options::default();
    o.threads = 2;
    let mut archive = Vec::new();
    sep::compress_bytes(&input, &mut archive, &o).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    let deflated: Vec<_> = info
        .blocks
        .iter()
        .filter(|b| b.codec == Codec::Deflate)
        .collect();
    assert_eq!(deflated.len(), 1);
    // The three copies of the page share one model: the block is little over one copy's
    // gzip (apart, each copy would take about nine tenths of it).
    assert!(
        deflated[0].payload_bytes < gz.len() as u64 * 3 / 2,
        "{:?}",
        deflated[0]
    );
    let runs = [(1, Kernels::Scalar), (2, Kernels::detect())];
    decodes_in_memory(&archive, &input, &runs, "gzip, zip and PDF streams");
}

#[test]
fn a_png_in_a_tar_comes_back_exactly_with_its_chunks() {
    let png = repo_file("tests/data/deflate/mandelbrot.png");
    // A tar member's header (its name and size; the rest of the fields do not matter here),
    // the PNG padded to 512 bytes, then text.
    let mut input = b"mandelbrot.png".to_vec();
    input.resize(124, 0);
    input.extend_from_slice(format!("{:011o}\0", png.len()).as_bytes());
    input.resize(512, 0);
    input.extend_from_slice(&png);
    input.resize(input.len().div_ceil(512) * 512, 0);
    input.extend_from_slice(&corpus_file("text/tar-NEWS")[..5000]);
    let mut o = Options::default();
    o.threads = 1;
    let mut archive = Vec::new();
    sep::compress_bytes(&input, &mut archive, &o).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    assert!(info.blocks.iter().any(|b| b.codec == Codec::Deflate));
    // The picture's data inflated and modelled: smaller than the PNG it came in.
    assert!(archive.len() < png.len() + 2000, "{}", archive.len());
    let runs = [(2, Kernels::Scalar), (1, Kernels::detect())];
    decodes_in_memory(&archive, &input, &runs, "a PNG in a tar");
}

#[test]
fn a_decompression_bomb_is_passed_over_as_general_data() {
    // 64 MiB of one byte value in a gzip member of about 64 KB: past what a block codes, it
    // is left as it is, found and passed over in a moment.
    let mut bomb = vec![0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0, 0, 3];
    let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut z, &vec![b'a'; 64 << 20]).unwrap();
    bomb.extend_from_slice(&z.finish().unwrap());
    bomb.extend_from_slice(&[0; 8]);
    let t = std::time::Instant::now();
    let parts = layout(&bomb, None);
    assert!(parts.iter().all(|s| s.kind == Kind::General));
    assert!(t.elapsed().as_secs() < 20);
    let mut o = Options::default();
    o.threads = 1;
    let mut archive = Vec::new();
    sep::compress_bytes(&bomb, &mut archive, &o).unwrap();
    let mut out = Vec::new();
    sep::decompress_to_vec(&archive, &mut out, &o).unwrap();
    assert!(out == bomb);
}
