//! Round trips on real corpus files and the determinism contract (threads, kernel level).

use crate::common::*;
use std::fs;

/// A representative subset: prose, markup, source, executables, seismic samples, and the first
/// 128 KiB of a float-weights file (the whole corpus runs in the ignored test and the bench).
const SUBSET: &[(&str, usize)] = &[
    ("text/paper1", usize::MAX),
    ("text/cp.html", usize::MAX),
    ("text/fields.c", usize::MAX),
    ("text/xargs.1", usize::MAX),
    ("binary/obj2", usize::MAX),
    ("binary/sum", usize::MAX),
    ("binary/geo", usize::MAX),
    ("tensors/silero-vad-16k.f32.safetensors", 128 << 10),
];

#[test]
fn corpus_subset_round_trips() {
    for &(name, limit) in SUBSET {
        let mut data = fs::read(corpora().join(name)).unwrap();
        data.truncate(limit);
        let archive = round_trip(&data, &[]);
        // Text and executables must shrink; float weights may be stored (small constant overhead).
        let limit = if name.starts_with("tensors/") {
            data.len() + 200
        } else {
            data.len() * 3 / 4
        };
        assert!(
            archive.len() < limit,
            "{name}: {} -> {}",
            data.len(),
            archive.len()
        );
    }
}

#[test]
fn archives_identical_across_threads_and_kernels_and_decode_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::copy(corpora().join("text/paper2"), d.join("p")).unwrap();
    let data = fs::read(d.join("p")).unwrap();
    let archive = compress_identically(
        d,
        &["compress", "-q", "-c", "--block-size", "16K", "p"],
        &[
            ("1", "auto"),
            ("2", "auto"),
            ("2", "scalar"),
            ("1", "scalar"),
        ],
    );
    fs::write(d.join("p.sep"), &archive).unwrap();
    decodes_everywhere(
        d,
        "p.sep",
        &data,
        &[
            ("1", "scalar"),
            ("2", "scalar"),
            ("2", "auto"),
            ("3", "auto"),
        ],
    );
}

/// Every file of the shared corpora; slow, run with `cargo test --release -- --ignored`.
#[test]
#[ignore]
fn all_corpora_round_trip() {
    for set in ["text", "binary", "tensors"] {
        for path in corpus_files(set) {
            let data = fs::read(&path).unwrap();
            let a = round_trip(&data, &[]);
            eprintln!("{}: {} -> {}", path.display(), data.len(), a.len());
        }
    }
}
