//! Packs: trained on real text, they start the model of every block that names them; an
//! archive that needs one decodes only with exactly that pack, at any thread count and kernel
//! level; bad packs and missing packs are refused in one line, with no output.

use crate::common::*;
use sep::SimdLevel as Level;
use sep::{Error, Options, Pack, PackSpec};
use std::fs;
use std::sync::Arc;

fn spec(name: &str) -> PackSpec {
    PackSpec {
        name: name.into(),
        kind: "text".into(),
        description: "test".into(),
        level: sep::DEFAULT_LEVEL,
        slots_log: 16,
        history: 4 << 10,
    }
}

/// A pack trained on `data`.
fn pack(data: &[u8], name: &str) -> (Vec<u8>, Arc<Pack>) {
    let bytes = sep::pretrain(data, &spec(name), &|_| {}).unwrap();
    let pack = Arc::new(Pack::from_file(&bytes).unwrap());
    (bytes, pack)
}

fn opts(threads: usize, kernels: Level) -> Options {
    sep::set_simd_level(kernels);
    let mut o = Options::default();
    o.threads = threads;
    o.block_size = 48 << 10;
    o
}

#[test]
fn a_pack_starts_the_model_and_is_needed_to_decode() {
    // Trained on one book, used on another.
    let train = fs::read(corpora().join("text/book2")).unwrap();
    let text = fs::read(corpora().join("text/book1")).unwrap();
    let data = &text[..96 << 10];
    let (bytes, english) = pack(&train[..160 << 10], "english");
    // Training is deterministic: the same data gives the same pack, byte for byte.
    let again = sep::pretrain(&train[..160 << 10], &spec("english"), &|_| {}).unwrap();
    assert!(again == bytes, "the same training gave another pack");
    let (_, other) = pack(&train[200 << 10..260 << 10], "english");
    assert_ne!(english.id, other.id, "packs are told apart by their hash");

    let mut plain = Vec::new();
    sep::compress_bytes(data, &mut plain, &opts(2, Level::detect())).unwrap();
    let mut o = opts(2, Level::detect());
    o.pack = Some(english.clone());
    let mut archive = Vec::new();
    sep::compress_bytes(data, &mut archive, &o).unwrap();
    assert!(
        archive.len() * 100 < plain.len() * 97,
        "a pack of English did not help English: {} vs {}",
        archive.len(),
        plain.len()
    );
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    assert_eq!(info.pack, Some(("english".into(), english.id.hex())));
    assert_eq!(info.blocks.len(), 2);

    for (threads, kernels) in [(1, Level::Scalar), (3, Level::detect())] {
        let mut o = opts(threads, kernels);
        o.packs = vec![other.clone(), english.clone()];
        let mut out = Vec::new();
        sep::decompress_to_vec(&archive, &mut out, &o).unwrap();
        assert!(out == data, "{threads} threads, {kernels:?}");
    }
    sep::set_simd_level(Level::detect());
    // Without the pack, or with another of the same name: refused, nothing written.
    for packs in [vec![], vec![other.clone()]] {
        let mut o = opts(2, Level::detect());
        o.packs = packs;
        let mut out = Vec::new();
        match sep::decompress_to_vec(&archive, &mut out, &o) {
            Err(Error::PackMissing { name, sha256 }) => {
                assert_eq!((name.as_str(), sha256), ("english", english.id.hex()))
            }
            r => panic!("decoded without its pack: {r:?}"),
        }
        assert!(out.is_empty());
    }
}

#[test]
fn bad_packs_are_refused() {
    let train = word_text(7, 40_000);
    let (bytes, good) = pack(&train, "words");
    for cut in [0, 7, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            matches!(Pack::from_file(&bytes[..cut]), Err(Error::BadPack(_))),
            "a pack cut at {cut} was read"
        );
    }
    // A pack of the default level starts no other level's model.
    for level in [1, 9] {
        let mut o = opts(1, Level::detect());
        o.level = level;
        o.pack = Some(good.clone());
        let r = sep::compress_bytes(&train, &mut Vec::new(), &o);
        assert!(matches!(r, Err(Error::BadPack(_))), "level {level}: {r:?}");
    }
    let mut s = spec("");
    assert!(sep::pretrain(&train, &s, &|_| {}).is_err(), "empty name");
    s = spec("x");
    s.slots_log = 30;
    assert!(
        sep::pretrain(&train, &s, &|_| {}).is_err(),
        "table too large"
    );
    s = spec("x");
    s.level = 1;
    assert!(sep::pretrain(&train, &s, &|_| {}).is_err(), "level 1");
}

#[test]
fn the_command_line_trains_uses_and_needs_a_pack() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir(d.join("train")).unwrap();
    fs::write(d.join("train/a.txt"), word_text(1, 30_000)).unwrap();
    fs::write(d.join("train/b.txt"), word_text(2, 30_000)).unwrap();
    let data = word_text(3, 20_000);
    fs::write(d.join("f.txt"), &data).unwrap();
    ok(&sep(
        d,
        &["pretrain", "--table-log", "14", "-o", "w.pack", "train"],
    ));
    fails_cleanly(
        &sep(d, &["pretrain", "-o", "w.pack", "train"]),
        "already exists",
    );
    ok(&sep(d, &["-q", "--pack", "w.pack", "f.txt"]));
    fs::remove_file(d.join("f.txt")).unwrap();
    let info = sep(d, &["info", "f.txt.sep"]);
    ok(&info);
    assert!(String::from_utf8_lossy(&info.stdout).contains("pack:           w (sha256 "));
    // Without the pack: one line naming it, no output file.
    fails_cleanly(&sep(d, &["-d", "-q", "f.txt.sep"]), "needs pack w (sha256 ");
    assert!(!d.join("f.txt").exists());
    fails_cleanly(
        &sep(d, &["-d", "-q", "--pack", "train/a.txt", "f.txt.sep"]),
        "bad pack",
    );
    ok(&sep(
        d,
        &["-d", "-q", "-k", "--pack", "w.pack", "f.txt.sep"],
    ));
    assert_eq!(fs::read(d.join("f.txt")).unwrap(), data);
    fs::remove_file(d.join("f.txt")).unwrap();
    // Found in the directory SEP_PACKS names.
    fs::create_dir(d.join("packs")).unwrap();
    fs::rename(d.join("w.pack"), d.join("packs/w.pack")).unwrap();
    let packs = d.join("packs");
    let r = sep_env(
        d,
        &["-d", "-q", "f.txt.sep"],
        b"",
        &[("SEP_PACKS", packs.to_str().unwrap())],
    );
    ok(&r);
    assert_eq!(fs::read(d.join("f.txt")).unwrap(), data);
}

#[test]
fn every_block_continues_the_pack_history() {
    let book = fs::read(corpora().join("text/book2")).unwrap();
    let train = &book[..64 << 10];
    // The file is the training data's end, which only a pack's history still holds.
    let data = &train[(64 - 8) << 10..];
    for level in [sep::DEFAULT_LEVEL, 9] {
        let mut sizes = Vec::new();
        for history in [0, 16 << 10] {
            let mut s = spec("book");
            s.level = level;
            s.history = history;
            let bytes = sep::pretrain(train, &s, &|_| {}).unwrap();
            let pack = Arc::new(Pack::from_file(&bytes).unwrap());
            assert_eq!(pack.state.history.len(), history);
            let mut o = opts(2, Level::detect());
            o.level = level;
            o.block_size = 4 << 10;
            o.pack = Some(pack.clone());
            let mut archive = Vec::new();
            sep::compress_bytes(data, &mut archive, &o).unwrap();
            for (threads, kernels) in [(1, Level::Scalar), (3, Level::detect())] {
                let mut o = opts(threads, kernels);
                o.level = level;
                o.packs = vec![pack.clone()];
                let mut out = Vec::new();
                sep::decompress_to_vec(&archive, &mut out, &o).unwrap();
                assert!(out == data, "level {level}, {threads} threads, {kernels:?}");
            }
            sep::set_simd_level(Level::detect());
            sizes.push(archive.len());
        }
        assert!(
            sizes[1] * 2 < sizes[0],
            "level {level}: the history did not carry into the blocks: {sizes:?}"
        );
    }
}
