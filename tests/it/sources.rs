//! The in-memory and mapped entry points code blocks in place: they must write the archives the
//! streaming ones write, decode them (and the streamed ones) at any thread count and kernel
//! level, and refuse damaged archives as the streaming decoder does.

use crate::common::corpus_file;
use sep::Kernels;
use sep::Options;
use std::fs;

/// Options of `threads` and `block_size`, the process's kernels set to `kernels` (every level
/// gives the same bits, so tests running beside this one are unaffected).
fn opts(threads: usize, kernels: Kernels, block_size: u64) -> Options {
    sep::set_kernels(kernels);
    let mut o = Options::default();
    o.threads = threads;
    o.block_size = block_size;
    o
}

/// A mapped copy of `bytes` (kept alive by the returned file handle).
fn mapped(bytes: &[u8]) -> (tempfile::NamedTempFile, memmap2::Mmap) {
    let f = tempfile::NamedTempFile::new().unwrap();
    fs::write(f.path(), bytes).unwrap();
    // SAFETY: a private temporary file nothing else writes while it is mapped.
    let map = unsafe { memmap2::Mmap::map(f.as_file()) }.unwrap();
    (f, map)
}

#[test]
fn in_place_coding_matches_streaming_at_any_thread_count_and_kernel_level() {
    let files = [
        // Tensor blocks (several per file at this block size), and a general-purpose file.
        ("tensors/ppocr-cls.f16.safetensors", 64 << 10),
        ("text/Apache-2.0", 4 << 10),
    ];
    for (name, block_size) in files {
        let data = corpus_file(name);
        let auto = opts(2, Kernels::detect(), block_size);
        let (_file, map) = mapped(&data);
        // The streaming path learns the layout from the header, as the in-memory one does.
        let mut streamed = Vec::new();
        let len = data.len() as u64;
        sep::internals::compress_sized(&data[..], &mut streamed, &auto, len).unwrap();
        let mut in_memory = Vec::new();
        sep::compress_bytes(&data, &mut in_memory, &auto).unwrap();
        let mut from_map = Vec::new();
        let stats =
            sep::compress_mapped(&map, &mut from_map, &opts(1, Kernels::Scalar, block_size))
                .unwrap();
        assert!(stats.blocks > 1, "{name}: one block only");
        assert!(in_memory == streamed, "{name}: in-memory archive differs");
        assert!(from_map == streamed, "{name}: mapped archive differs");

        let (_afile, amap) = mapped(&streamed);
        for (threads, kernels) in [(1, Kernels::Scalar), (3, Kernels::detect())] {
            let o = opts(threads, kernels, block_size);
            let mut a = Vec::new();
            sep::decompress_bytes(&streamed, &mut a, &o).unwrap();
            assert!(a == data, "{name}: in-memory decode differs");
            let mut b = Vec::new();
            sep::decompress_mapped(&amap, &mut b, &o).unwrap();
            assert!(b == data, "{name}: mapped decode differs");
            // Appended after what the vector held (one thread: decoded in place, every block
            // after the first appended to earlier ones).
            let mut c = Vec::with_capacity(4 + data.len());
            c.extend_from_slice(b"held");
            let buffer = c.as_ptr();
            sep::decompress_to_vec(&streamed, &mut c, &o).unwrap();
            assert!(
                c[..4] == *b"held" && c[4..] == data,
                "{name}: decode into a vector differs"
            );
            // With room enough, the vector keeps its buffer (no block's buffer replaces it).
            assert_eq!(
                c.as_ptr(),
                buffer,
                "{name}: the vector's buffer was replaced"
            );
            let mut d = Vec::with_capacity(data.len());
            let buffer = d.as_ptr();
            sep::decompress_to_vec(&streamed, &mut d, &o).unwrap();
            assert!(
                d == data && d.as_ptr() == buffer,
                "{name}: into an empty vector"
            );
        }
    }
}

#[test]
fn damaged_archives_are_refused_in_memory_too() {
    let data = corpus_file("text/Apache-2.0");
    let o = opts(2, Kernels::detect(), 2 << 10);
    let mut archive = Vec::new();
    sep::compress_bytes(&data, &mut archive, &o).unwrap();
    let mut back = Vec::new();
    sep::decompress_bytes(&archive, &mut back, &o).unwrap();
    assert_eq!(back, data);
    for cut in (0..archive.len()).step_by(97) {
        assert!(
            sep::decompress_bytes(&archive[..cut], std::io::sink(), &o).is_err(),
            "truncated at {cut} decoded"
        );
    }
    for at in (0..archive.len()).step_by(89) {
        let mut bad = archive.clone();
        bad[at] ^= 0x10;
        assert!(
            sep::decompress_bytes(&bad, std::io::sink(), &o).is_err(),
            "flip at {at} decoded"
        );
    }
    let mut longer = archive.clone();
    longer.push(0);
    assert!(sep::decompress_bytes(&longer, std::io::sink(), &o).is_err());
    // Decoding into a vector (in place, on one thread): refused, and the vector as it was.
    let one = opts(1, Kernels::detect(), 2 << 10);
    let mut held = b"held".to_vec();
    for cut in (0..archive.len()).step_by(97) {
        assert!(sep::decompress_to_vec(&archive[..cut], &mut held, &one).is_err());
        assert_eq!(held, b"held", "truncated at {cut}: output left behind");
    }
    for at in (0..archive.len()).step_by(89) {
        let mut bad = archive.clone();
        bad[at] ^= 0x10;
        assert!(sep::decompress_to_vec(&bad, &mut held, &one).is_err());
        assert_eq!(held, b"held", "flip at {at}: output left behind");
    }
    assert!(sep::decompress_to_vec(&longer, &mut held, &one).is_err());
    assert_eq!(held, b"held");
}

#[test]
fn empty_and_tiny_inputs_in_memory() {
    let o = opts(1, Kernels::detect(), 1 << 20);
    for data in [&b""[..], b"x", b"\x93NUMPY"] {
        let mut archive = Vec::new();
        sep::compress_bytes(data, &mut archive, &o).unwrap();
        let mut back = Vec::new();
        sep::decompress_bytes(&archive, &mut back, &o).unwrap();
        assert_eq!(back, data);
    }
    assert!(sep::decompress_bytes(b"", std::io::sink(), &o).is_err());
}

#[test]
fn dequantized_blocks_decode_into_a_vector_in_place() {
    // int4 levels times a scale per row of 64, as dequantized weights: the scaled-integers
    // codec, whose blocks one thread decodes straight into the vector.
    let mut x = 7u64;
    let mut data = Vec::new();
    for row in 0..8192 {
        let scale = 0.001 + row as f32 * 1e-6;
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let q = (x % 16) as f32 - 8.0;
            data.extend_from_slice(&(q * scale).to_le_bytes());
        }
    }
    let mut o = opts(1, Kernels::detect(), 1 << 20);
    o.dtype = Some(sep::DType::F32);
    let mut archive = Vec::new();
    sep::compress_bytes(&data, &mut archive, &o).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    let codecs: Vec<&str> = info.blocks.iter().map(|b| b.codec.name()).collect();
    assert!(codecs.contains(&"scaled"), "codecs {codecs:?}");
    for kernels in [Kernels::Scalar, Kernels::detect()] {
        let o = opts(1, kernels, 1 << 20);
        let mut out = Vec::with_capacity(4 + data.len());
        out.extend_from_slice(b"held");
        let buffer = out.as_ptr();
        sep::decompress_to_vec(&archive, &mut out, &o).unwrap();
        assert!(out[..4] == *b"held" && out[4..] == data, "{kernels:?}");
        assert_eq!(out.as_ptr(), buffer, "the vector's buffer was replaced");
    }
}

#[test]
fn stored_blocks_decode_into_a_vector() {
    // Random bytes: stored blocks, appended as they are (and refused once damaged). The top
    // byte of a scrambled xorshift (xorshift64*): the model finds structure in the low byte
    // of a plain xorshift and codes it 3% smaller.
    let mut x = 3u64;
    let data: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect();
    let o = opts(1, Kernels::detect(), 32 << 10);
    let mut archive = Vec::new();
    sep::compress_bytes(&data, &mut archive, &o).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    assert!(info.blocks.iter().all(|b| b.codec.name() == "stored"));
    let mut out = b"held".to_vec();
    sep::decompress_to_vec(&archive, &mut out, &o).unwrap();
    assert!(out[..4] == *b"held" && out[4..] == data);
    let mut bad = archive.clone();
    bad[archive.len() / 2] ^= 1;
    let mut held = b"held".to_vec();
    assert!(sep::decompress_to_vec(&bad, &mut held, &o).is_err());
    assert_eq!(held, b"held");
    assert!(sep::decompress_bytes(&bad, std::io::sink(), &o).is_err());
}

#[test]
fn machine_code_takes_the_x86_transform_and_decodes_anywhere() {
    // This test's own executable: x86-64 code, whose calls the context-mixing codec makes absolute.
    let exe = fs::read(std::env::current_exe().unwrap()).unwrap();
    let window = 192 << 10;
    let data = (0..exe.len().saturating_sub(window))
        .step_by(64 << 10)
        .map(|at| &exe[at..at + window])
        .find(|w| sep::internals::codecs::x86::detect(w))
        .expect("no x86 code found");
    let mut archive = Vec::new();
    sep::compress_bytes(data, &mut archive, &opts(2, Kernels::detect(), 64 << 10)).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    assert!(info.blocks.iter().any(|b| b.codec.name() == "cm"));
    for (threads, kernels) in [(1, Kernels::Scalar), (3, Kernels::detect())] {
        let mut out = Vec::new();
        sep::decompress_to_vec(&archive, &mut out, &opts(threads, kernels, 1 << 20)).unwrap();
        assert!(out == data, "{threads} threads, {kernels:?}");
    }
    sep::set_kernels(Kernels::detect());
}

#[test]
fn every_level_round_trips_and_is_recorded() {
    // Real text: a corpus file's first 96 KiB, cut into two blocks.
    let text = corpus_file("text/debian-policy.txt");
    let data = &text[..96 << 10];
    let mut sizes = Vec::new();
    for level in sep::LEVELS {
        let mut o = opts(2, Kernels::detect(), 48 << 10);
        o.level = level;
        let mut archive = Vec::new();
        sep::compress_bytes(data, &mut archive, &o).unwrap();
        let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
        assert_eq!(info.level, level);
        assert!(info.blocks.iter().all(|b| b.codec.name() == "cm"));
        for (threads, kernels) in [(1, Kernels::Scalar), (3, Kernels::detect())] {
            let mut out = Vec::new();
            sep::decompress_to_vec(&archive, &mut out, &opts(threads, kernels, 1 << 20)).unwrap();
            assert!(out == data, "level {level}, {threads} threads, {kernels:?}");
        }
        sizes.push(archive.len());
    }
    sep::set_kernels(Kernels::detect());
    // More model, smaller archive: the slowest level beats the fastest.
    assert!(sizes[8] < sizes[0], "{sizes:?}");
}

#[test]
fn a_range_decodes_only_the_blocks_covering_it() {
    let text = corpus_file("text/debian-policy.txt");
    let data = &text[..200_000];
    let mut archive = Vec::new();
    let o = opts(2, Kernels::detect(), 20_000);
    sep::compress_bytes(data, &mut archive, &o).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    assert_eq!(info.blocks.len(), 10);
    for (start, end) in [
        (0, 0),
        (0, 200_000),
        (19_999, 20_001),
        (55_000, 56_000),
        (199_999, 200_000),
    ] {
        let mut out = Vec::new();
        let stats = sep::decompress_range(std::io::Cursor::new(&archive), &mut out, &o, start..end)
            .unwrap();
        assert!(out == data[start as usize..end as usize], "{start}..{end}");
        assert_eq!(stats.original_bytes, end - start);
        if end - start <= 1000 {
            // One or two blocks of the ten are read.
            assert!(stats.blocks <= 2, "{start}..{end}: {} blocks", stats.blocks);
            assert!(
                stats.archive_bytes < archive.len() as u64 / 3,
                "{start}..{end}"
            );
        }
    }
    let mut out = Vec::new();
    assert!(
        sep::decompress_range(std::io::Cursor::new(&archive), &mut out, &o, 0..200_001).is_err()
    );
    // A damaged block is found if the range needs it, and only then.
    let mut bad = archive.clone();
    let b5 = &info.blocks[5];
    bad[(b5.offset + b5.payload_bytes / 2) as usize] ^= 1;
    let mut out = Vec::new();
    let r = sep::decompress_range(std::io::Cursor::new(&bad), &mut out, &o, 100_001..100_002);
    assert!(r.is_err(), "damaged block 5 decoded");
    let mut out = Vec::new();
    sep::decompress_range(std::io::Cursor::new(&bad), &mut out, &o, 0..1000).unwrap();
    assert!(out == data[..1000]);
}

#[test]
fn parts_join_into_the_archive_of_the_whole_input() {
    let text = corpus_file("text/debian-policy.txt");
    let data = &text[..300_000];
    let o = opts(2, Kernels::detect(), 40_000);
    let mut whole = Vec::new();
    sep::compress_bytes(data, &mut whole, &o).unwrap();
    for count in [1u32, 3, 8, 11] {
        let parts: Vec<Vec<u8>> = (0..count)
            .map(|i| {
                let mut p = Vec::new();
                sep::compress_part(data, &mut p, &o, i, count).unwrap();
                p
            })
            .collect();
        // Each part is an archive of its own bytes.
        for p in &parts {
            let info = sep::inspect(std::io::Cursor::new(p)).unwrap();
            let part = info.part.expect("a part");
            let at = part.start as usize;
            let mut out = Vec::new();
            sep::decompress_to_vec(p, &mut out, &o).unwrap();
            assert!(out == data[at..at + out.len()], "{count} parts");
        }
        let mut joined = Vec::new();
        let mut readers: Vec<_> = parts.iter().map(std::io::Cursor::new).collect();
        sep::concat(&mut readers, &mut joined).unwrap();
        assert!(
            joined == whole,
            "{count} parts joined differ from one compress"
        );
    }
    let parts: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            let mut p = Vec::new();
            sep::compress_part(data, &mut p, &o, i, 3).unwrap();
            p
        })
        .collect();
    let refused = |ps: Vec<Vec<u8>>| {
        let mut readers: Vec<_> = ps.iter().map(std::io::Cursor::new).collect();
        let mut out = Vec::new();
        sep::concat(&mut readers, &mut out).is_err() && out.is_empty()
    };
    let (a, b, c) = (parts[0].clone(), parts[1].clone(), parts[2].clone());
    assert!(refused(vec![a.clone(), c.clone(), b.clone()]), "reordered");
    assert!(refused(vec![a.clone(), b.clone()]), "missing");
    assert!(refused(vec![a.clone(), b.clone(), b.clone()]), "repeated");
    let mut other = Vec::new();
    sep::compress_part(&text[1..300_001], &mut other, &o, 1, 3).unwrap();
    assert!(refused(vec![a.clone(), other, c.clone()]), "another input");
    let mut o9 = opts(2, Kernels::detect(), 40_000);
    o9.level = 1;
    let mut other = Vec::new();
    sep::compress_part(data, &mut other, &o9, 1, 3).unwrap();
    assert!(refused(vec![a.clone(), other, c.clone()]), "other options");
    assert!(
        refused(vec![a.clone(), b[..b.len() - 9].to_vec(), c.clone()]),
        "truncated"
    );
    assert!(refused(vec![a, b, whole.clone()]), "a whole archive");
    let mut bad = Vec::new();
    assert!(sep::compress_part(data, &mut bad, &o, 3, 3).is_err());
}

#[test]
fn damaged_parts_are_refused_or_fail_to_decode() {
    let text = corpus_file("text/tar-NEWS");
    let data = &text[..6000];
    let mut o = opts(1, Kernels::detect(), 2000);
    o.level = 1;
    let parts: Vec<Vec<u8>> = (0..2)
        .map(|i| {
            let mut p = Vec::new();
            sep::compress_part(data, &mut p, &o, i, 2).unwrap();
            p
        })
        .collect();
    for at in (0..parts[1].len()).step_by(3) {
        let mut bad = parts.clone();
        bad[1][at] ^= 0x10;
        let mut readers: Vec<_> = bad.iter().map(std::io::Cursor::new).collect();
        let mut joined = Vec::new();
        if sep::concat(&mut readers, &mut joined).is_err() {
            assert!(joined.is_empty(), "byte {at}: refused after writing");
            continue;
        }
        // What concat cannot see (a payload byte) the decoder's checksums do.
        let mut out = Vec::new();
        let decoded = sep::decompress_to_vec(&joined, &mut out, &o);
        assert!(
            decoded.is_err() || out == data,
            "byte {at}: decoded to other bytes"
        );
        assert!(decoded.is_err(), "byte {at}: a damaged part decoded");
    }
}

#[test]
fn the_first_archive_of_a_stream_is_read_to_its_end_and_no_further() {
    let text = corpus_file("text/tar-NEWS");
    let o = opts(2, Kernels::detect(), 16 << 10);
    let (mut one, mut two) = (Vec::new(), Vec::new());
    sep::compress_bytes(&text[..40_000], &mut one, &o).unwrap();
    sep::compress_bytes(&text[40_000..], &mut two, &o).unwrap();
    let mut stream = one.clone();
    stream.extend_from_slice(&two);
    stream.extend_from_slice(b"after");
    let mut input = std::io::Cursor::new(&stream);
    let (mut first, mut second) = (Vec::new(), Vec::new());
    let s = sep::decompress_first(&mut input, &mut first, &o).unwrap();
    assert_eq!(
        (s.archive_bytes, input.position()),
        (one.len() as u64, one.len() as u64)
    );
    sep::decompress_first(&mut input, &mut second, &o).unwrap();
    assert!(first == text[..40_000] && second == text[40_000..]);
    assert_eq!(&stream[input.position() as usize..], b"after");
    // The whole-archive entry point still refuses what follows an archive.
    assert!(sep::decompress(&stream[..], &mut Vec::new(), &o).is_err());
}
