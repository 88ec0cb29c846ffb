//! Round trips on real corpus files and the determinism contract (threads, kernel level).

use crate::common::*;
use std::fs;

/// A representative subset of the test corpus: release notes, markup, C source, a man page,
/// two x86-64 executables, and the first 128 KiB of a float-weights file (the shared benchmark
/// corpora run whole in the ignored test and the bench).
const SUBSET: &[(&str, usize)] = &[
    ("text/tar-NEWS", usize::MAX),
    ("text/policy-ch-archive.html", usize::MAX),
    ("text/hiperfifo.c", usize::MAX),
    ("text/sed.1", usize::MAX),
    ("binary/xargs", usize::MAX),
    ("binary/dirname", usize::MAX),
    ("tensors/ppocr-cls.f32.safetensors", 128 << 10),
];

#[test]
fn corpus_subset_round_trips() {
    for &(name, limit) in SUBSET {
        let mut data = corpus_file(name);
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
    fs::write(d.join("p"), corpus_file("text/findutils-NEWS")).unwrap();
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

/// Every file of the shared benchmark corpora; slow, run with
/// `cargo test --release -- --ignored` beside `../shared`.
#[test]
#[ignore = "needs ../shared/corpora: run with --ignored"]
fn all_corpora_round_trip() {
    for set in ["text", "binary", "tensors"] {
        for path in shared_corpus_files(set) {
            let data = fs::read(&path).unwrap();
            let a = round_trip(&data, &[]);
            eprintln!("{}: {} -> {}", path.display(), data.len(), a.len());
        }
    }
}
