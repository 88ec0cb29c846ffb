//! Packs: trained on real text, they start the model of every block that names them; an
//! archive that needs one decodes only with exactly that pack, at any thread count and kernel
//! level; bad packs and missing packs are refused in one line, with no output.

use crate::common::*;
use sep::Kernels;
use sep::{Error, Options, Pack, PackChoice, PackSpec};
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
        network: None,
        base: None,
    }
}

/// A pack trained on `data`.
fn pack(data: &[u8], name: &str) -> (Vec<u8>, Arc<Pack>) {
    let bytes = sep::pretrain(data, &spec(name), &|_| {}).unwrap();
    let pack = Arc::new(Pack::from_file(&bytes).unwrap());
    (bytes, pack)
}

fn opts(threads: usize, kernels: Kernels) -> Options {
    sep::set_kernels(kernels);
    let mut o = Options::default();
    o.threads = threads;
    o.block_size = 48 << 10;
    o
}

/// The archive of `data` compressed with `o` and `pack`.
fn archive(data: &[u8], mut o: Options, pack: PackChoice) -> Vec<u8> {
    o.pack = pack;
    let mut out = Vec::new();
    sep::compress_bytes(data, &mut out, &o).unwrap();
    out
}

#[test]
fn a_pack_starts_the_model_and_is_needed_to_decode() {
    // Trained on one manual, used on another.
    let train = corpus_file("text/developers-reference.txt");
    let text = corpus_file("text/debian-policy.txt");
    let data = &text[..96 << 10];
    let (bytes, english) = pack(&train[..160 << 10], "english");
    // Training is deterministic: the same data gives the same pack, byte for byte.
    let again = sep::pretrain(&train[..160 << 10], &spec("english"), &|_| {}).unwrap();
    assert!(again == bytes, "the same training gave another pack");
    let (_, other) = pack(&train[200 << 10..260 << 10], "english");
    assert_ne!(
        english.sha256_hex(),
        other.sha256_hex(),
        "packs are told apart by their hash"
    );

    let plain = archive(data, opts(2, Kernels::detect()), PackChoice::Off);
    let packed = archive(
        data,
        opts(2, Kernels::detect()),
        PackChoice::Given(english.clone()),
    );
    assert!(
        packed.len() * 100 < plain.len() * 97,
        "a pack of English did not help English: {} vs {}",
        packed.len(),
        plain.len()
    );
    let info = sep::inspect(std::io::Cursor::new(&packed)).unwrap();
    assert_eq!(info.pack, Some(("english".into(), english.sha256_hex())));
    assert_eq!(info.blocks.len(), 2);

    for (threads, kernels) in [(1, Kernels::Scalar), (3, Kernels::detect())] {
        let mut o = opts(threads, kernels);
        o.packs = vec![other.clone(), english.clone()];
        let mut out = Vec::new();
        sep::decompress_to_vec(&packed, &mut out, &o).unwrap();
        assert!(out == data, "{threads} threads, {kernels:?}");
    }
    sep::set_kernels(Kernels::detect());
    // Without the pack, or with another of the same name: refused, nothing written.
    for packs in [vec![], vec![other.clone()]] {
        let mut o = opts(2, Kernels::detect());
        o.packs = packs;
        let mut out = Vec::new();
        match sep::decompress_to_vec(&packed, &mut out, &o) {
            Err(Error::PackMissing { name, sha256 }) => {
                assert_eq!((name.as_str(), sha256), ("english", english.sha256_hex()))
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
        let mut o = opts(1, Kernels::detect());
        o.level = level;
        o.pack = PackChoice::Given(good.clone());
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
    let r = sep(
        d,
        &[
            "pretrain",
            "-q",
            "--table-log",
            "14",
            "-o",
            "w.pack",
            "train",
        ],
    );
    ok(&r);
    assert!(r.stderr.is_empty(), "pretrain -q said: {}", r.stderr);
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
    // `--net none` at level 9 (whose model otherwise runs a network): recorded, decoded
    // without being told.
    let r = sep(d, &["-q", "-9", "--net", "none", "-o", "n.sep", "f.txt"]);
    ok(&r);
    let info = sep(d, &["info", "n.sep"]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("no network (switched off)"));
    let r = sep(d, &["-d", "-c", "n.sep"]);
    ok(&r);
    assert_eq!(r.stdout, data);
    // A built-in pack by its name (where the build has them); a file of that name is `./NAME`.
    if sep::internals::codecs::cm::pack::BUILTIN {
        ok(&sep(
            d,
            &["-q", "-9", "--pack", "text9", "-o", "b.sep", "f.txt"],
        ));
        let info = sep(d, &["info", "b.sep"]);
        assert!(String::from_utf8_lossy(&info.stdout).contains("pack:           text9 (sha256 "));
        fails_cleanly(
            &sep(d, &["-q", "--pack", "text9", "-o", "c.sep", "f.txt"]),
            "trained for another model",
        );
        fails_cleanly(
            &sep(d, &["-q", "--pack", "./text9", "-o", "c.sep", "f.txt"]),
            "no such file",
        );
    }
}

#[test]
fn every_block_continues_the_pack_history() {
    let book = corpus_file("text/developers-reference.txt");
    let train = &book[..96 << 10];
    // The file is the training data's end, which only a pack's history still holds, with
    // every 97th letter's case changed (a copy would be coded past the context-mixing codec's
    // ratio limit, by zstd).
    let mut data = train[(96 - 32) << 10..].to_vec();
    for b in data.iter_mut().step_by(97) {
        *b ^= 0x20 * b.is_ascii_alphabetic() as u8;
    }
    let data = &data[..];
    for level in [sep::DEFAULT_LEVEL, 9] {
        let mut sizes = Vec::new();
        for history in [0, 48 << 10] {
            let mut s = spec("book");
            s.level = level;
            s.history = history;
            let bytes = sep::pretrain(train, &s, &|_| {}).unwrap();
            let pack = Arc::new(Pack::from_file(&bytes).unwrap());
            assert_eq!(pack.history_len(), history);
            let mut o = opts(2, Kernels::detect());
            o.level = level;
            o.block_size = sep::internals::format::PACKED_MIN;
            let packed = archive(data, o, PackChoice::Given(pack.clone()));
            for (threads, kernels) in [(1, Kernels::Scalar), (3, Kernels::detect())] {
                let mut o = opts(threads, kernels);
                o.level = level;
                o.packs = vec![pack.clone()];
                let mut out = Vec::new();
                sep::decompress_to_vec(&packed, &mut out, &o).unwrap();
                assert!(out == data, "level {level}, {threads} threads, {kernels:?}");
            }
            sep::set_kernels(Kernels::detect());
            sizes.push(packed.len());
        }
        assert!(
            sizes[1] * 2 < sizes[0],
            "level {level}: the history did not carry into the blocks: {sizes:?}"
        );
    }
    // The history itself, predicted past the context-mixing codec's 128:1 limit, stays neural
    // (padded to the limit), not zstd's.
    let mut s = spec("book");
    s.history = 48 << 10;
    let pack = Arc::new(Pack::from_file(&sep::pretrain(train, &s, &|_| {}).unwrap()).unwrap());
    let data = &train[(96 - 32) << 10..];
    let mut o = opts(1, Kernels::detect());
    let packed = archive(data, o.clone(), PackChoice::Given(pack.clone()));
    let info = sep::inspect(std::io::Cursor::new(&packed)).unwrap();
    assert_eq!(info.blocks[0].codec, sep::Codec::Cm);
    assert!(
        info.blocks[0].payload_bytes < data.len() as u64 / 100,
        "{info:?}"
    );
    let mut out = Vec::new();
    o.packs = vec![pack];
    sep::decompress_to_vec(&packed, &mut out, &o).unwrap();
    assert!(out == data);
}

#[test]
fn text_takes_the_builtin_pack_and_other_data_none() {
    let text = corpus_file("text/Apache-2.0");
    let binary = corpus_file("binary/dirname");
    let builtin = sep::internals::codecs::cm::pack::builtin("text").unwrap();
    let compress = |data: &[u8], pack| archive(data, opts(2, Kernels::detect()), pack);
    let auto = compress(&text, PackChoice::Auto);
    let off = compress(&text, PackChoice::Off);
    assert!(
        auto.len() * 100 < off.len() * 90,
        "the built-in pack did not help text: {} vs {}",
        auto.len(),
        off.len()
    );
    let info = sep::inspect(std::io::Cursor::new(&auto)).unwrap();
    assert_eq!(info.pack, Some(("text".into(), builtin.sha256_hex())));
    // Binary data names no pack and codes as without one.
    let auto_bin = compress(&binary, PackChoice::Auto);
    assert!(auto_bin == compress(&binary, PackChoice::Off));
    // Text, then a binary block: the archive names the pack, the binary block starts fresh.
    let long = corpus_file("text/findutils-NEWS");
    let mixed = [&long[..2 * binary.len()], &binary[..]].concat();
    let mut o = opts(2, Kernels::detect());
    o.block_size = binary.len() as u64;
    let mixed_archive = archive(&mixed, o, PackChoice::Auto);
    let info = sep::inspect(std::io::Cursor::new(&mixed_archive)).unwrap();
    assert!(info.pack.is_some());
    let bin_block = info.blocks.last().unwrap();
    let off_bin = sep::inspect(std::io::Cursor::new(&auto_bin)).unwrap();
    assert_eq!(bin_block.payload_bytes, off_bin.blocks[0].payload_bytes);
    // Every build has the pack: decoded without being given one, at any thread count and
    // kernel level.
    for (threads, kernels) in [(1, Kernels::Scalar), (3, Kernels::detect())] {
        for (a, data) in [(&auto, &text), (&mixed_archive, &mixed)] {
            let mut out = Vec::new();
            sep::decompress_to_vec(a, &mut out, &opts(threads, kernels)).unwrap();
            assert!(out == *data, "{threads} threads, {kernels:?}");
        }
    }
    sep::set_kernels(Kernels::detect());
    // A block that says it starts from a pack, in an archive that names none: refused.
    let payload = sep::internals::codecs::cm::encode(
        &text,
        sep::internals::codecs::cm::Params::default(),
        Some(&builtin),
        Default::default(),
        &|_| {},
    )
    .0;
    let r = sep::internals::codecs::cm::decode(
        &payload,
        text.len(),
        sep::internals::codecs::cm::Params::default(),
        None,
        Default::default(),
        &|_| {},
        &mut Vec::new(),
    )
    .0;
    assert!(matches!(r, Err(Error::Corrupt(_))), "{r:?}");
}

#[test]
fn only_the_first_block_may_be_short_and_packed() {
    use sep::internals::codecs::cm::{self, CmConfig, Params};
    use sep::internals::format::PACKED_MIN;
    let builtin = cm::pack::builtin("text").unwrap();
    let text = corpus_file("text/findutils-NEWS");
    let short = &text[..4096];
    let payload = cm::encode(
        short,
        Params::default(),
        Some(&builtin),
        Default::default(),
        &|_| {},
    )
    .0;
    let config = CmConfig::default()
        .attach(builtin.clone())
        .unwrap()
        .to_bytes();
    let block = (sep::Codec::Cm, short.len() as u64, payload);
    let crafted_archive = crafted(Some(config), 1 << 20, &[block.clone(), block]);
    // Each block alone: the first decodes (to the bytes `crafted` gives a wrong checksum),
    // the second, short and packed, is refused before its model is set up.
    let range = |r: std::ops::Range<u64>| {
        let mut out = Vec::new();
        sep::decompress_range(
            std::io::Cursor::new(&crafted_archive),
            &mut out,
            &Options::default(),
            r,
        )
    };
    let first = range(0..10);
    assert!(matches!(first, Err(Error::Checksum(_))), "{first:?}");
    match range(4096..4106) {
        Err(Error::Corrupt(m)) => assert!(m.contains("pack it may not use"), "{m}"),
        r => panic!("a short packed second block was decoded: {r:?}"),
    }
    // The encoder keeps the rule: short blocks after the first start fresh.
    let mut o = opts(1, Kernels::detect());
    o.block_size = PACKED_MIN / 2;
    let data = &text[..PACKED_MIN as usize];
    let packed = archive(data, o.clone(), PackChoice::Auto);
    let fresh = archive(data, o, PackChoice::Off);
    let (p, f) = (
        sep::inspect(std::io::Cursor::new(&packed)).unwrap(),
        sep::inspect(std::io::Cursor::new(&fresh)).unwrap(),
    );
    assert!(p.pack.is_some());
    assert!(p.blocks[0].payload_bytes < f.blocks[0].payload_bytes);
    assert_eq!(p.blocks[1].payload_bytes, f.blocks[1].payload_bytes);
    let mut out = Vec::new();
    sep::decompress_to_vec(&packed, &mut out, &opts(2, Kernels::Scalar)).unwrap();
    sep::set_kernels(Kernels::detect());
    assert!(out == data);
}

#[test]
fn archives_of_the_tables_grown_four_times_still_decode() {
    // Written at 3c4dfe4 with the built-in pack, before a block's tables were sized to it
    // (transforms bit 2): its tables are four times the pack's. (Drop it with that pack.)
    let old = repo_file("tests/data/golden/v2/packed-grown.tar-NEWS.sep");
    let original = corpus_file("text/tar-NEWS");
    for (threads, kernels) in [(1, Kernels::Scalar), (2, Kernels::detect())] {
        let mut out = Vec::new();
        sep::decompress_to_vec(&old, &mut out, &opts(threads, kernels)).unwrap();
        assert!(out == original, "decodes to other bytes");
    }
    sep::set_kernels(Kernels::detect());
    // Today's encoder sizes the tables to the block: another archive, within 1% of the size.
    let mut o = Options::default();
    o.threads = 1;
    let now = archive(&original, o, PackChoice::Auto);
    assert_ne!(now, old);
    assert!(now.len() <= old.len() + old.len() / 100);
}

#[test]
fn a_pack_carries_a_network_that_every_block_from_it_mixes_in() {
    let net = repo_file("tests/data/net/frozen-small.safetensors");
    let train = corpus_file("text/developers-reference.txt");
    let data = &corpus_file("text/debian-policy.txt")[..96 << 10];
    let mut with = spec("networked");
    with.network = Some(net.clone());
    let bytes = sep::pretrain(&train[..64 << 10], &with, &|_| {}).unwrap();
    let networked = Arc::new(Pack::from_file(&bytes).unwrap());
    let (_, plain) = pack(&train[..64 << 10], "networked");
    let a = archive(
        data,
        opts(2, Kernels::detect()),
        PackChoice::Given(networked.clone()),
    );
    let b = archive(data, opts(2, Kernels::detect()), PackChoice::Given(plain));
    assert_ne!(a, b, "the network changed nothing");
    for (threads, kernels) in [(1, Kernels::Scalar), (2, Kernels::detect())] {
        let mut o = opts(threads, kernels);
        o.packs = vec![networked.clone()];
        let mut out = Vec::new();
        sep::decompress_to_vec(&a, &mut out, &o).unwrap();
        assert!(out == data, "decodes to other bytes");
    }
    sep::set_kernels(Kernels::detect());
    // `--net none`: the same pack starts the model, its network does not run; recorded, so
    // the archive decodes without being told.
    let mut off = opts(1, Kernels::detect());
    off.network = false;
    let c = archive(data, off, PackChoice::Given(networked.clone()));
    assert_ne!(a, c, "the network ran with --net none");
    let mut o = opts(2, Kernels::detect());
    o.packs = vec![networked.clone()];
    let mut out = Vec::new();
    sep::decompress_to_vec(&c, &mut out, &o).unwrap();
    assert!(out == data, "decodes to other bytes without the network");
    // A damaged network is refused with the pack, in one line.
    let mut bad = spec("networked");
    bad.network = Some(net[..net.len() / 2].to_vec());
    let e = sep::pretrain(&train[..4 << 10], &bad, &|_| {}).unwrap_err();
    assert!(e.to_string().contains("network"), "{e}");
}

#[cfg(feature = "builtin-pack")]
#[test]
fn a_pack_shares_the_tables_of_a_builtin_pack() {
    let net = repo_file("tests/data/net/frozen-small.safetensors");
    let train = corpus_file("text/developers-reference.txt");
    let data = &corpus_file("text/debian-policy.txt")[..24 << 10];
    let mut s = spec("shared");
    s.level = 9;
    s.network = Some(net);
    s.base = Some("text".into());
    let bytes = sep::pretrain(&train[..16 << 10], &s, &|_| {}).unwrap();
    let text = sep::internals::codecs::cm::pack::builtin("text").unwrap();
    // It holds what depends on its model only: a fraction of its base.
    assert!(bytes.len() * 4 < 24 << 20, "{} bytes", bytes.len());
    let shared = Arc::new(Pack::from_file(&bytes).unwrap());
    assert_eq!(shared.base().map(|b| b.hex()), Some(text.sha256_hex()));
    let mut o = opts(2, Kernels::detect());
    o.level = 9;
    let a = archive(data, o.clone(), PackChoice::Given(shared.clone()));
    for (threads, kernels) in [(1, Kernels::Scalar), (3, Kernels::detect())] {
        let mut o = opts(threads, kernels);
        o.packs = vec![shared.clone()];
        let mut out = Vec::new();
        sep::decompress_to_vec(&a, &mut out, &o).unwrap();
        assert!(out == data, "{threads} threads, {kernels:?}");
    }
    sep::set_kernels(Kernels::detect());
    // A base this build does not hold (its hash changed in the file): refused, in one line.
    let hex = text.sha256_hex();
    let at = bytes.windows(64).position(|w| w == hex.as_bytes()).unwrap();
    let mut other = bytes.clone();
    other[at] = if other[at] == b'0' { b'1' } else { b'0' };
    match Pack::from_file(&other) {
        Err(Error::BadPack(m)) => assert!(m.contains("not built into") && !m.contains('\n'), "{m}"),
        r => panic!("read a pack without its base: {:?}", r.map(|_| ())),
    }
    // Only a built-in pack is a base.
    s.base = Some("nonesuch".into());
    assert!(matches!(
        sep::pretrain(&train[..4 << 10], &s, &|_| {}),
        Err(Error::BadPack(_))
    ));
}

#[cfg(feature = "builtin-pack")]
#[test]
fn level_9_starts_text_from_its_builtin_pack_with_its_network() {
    let data = &corpus_file("text/debian-policy.txt")[..20 << 10];
    let mut o = opts(1, Kernels::detect());
    o.level = 9;
    let with = archive(data, o.clone(), PackChoice::Auto);
    o.network = false;
    let without = archive(data, o.clone(), PackChoice::Auto);
    for a in [&with, &without] {
        let info = sep::inspect(std::io::Cursor::new(a)).unwrap();
        assert_eq!(info.pack.map(|p| p.0).as_deref(), Some("text9"));
    }
    assert!(
        with.len() < without.len(),
        "{} vs {}",
        with.len(),
        without.len()
    );
    for (threads, kernels) in [(2, Kernels::Scalar), (1, Kernels::detect())] {
        let mut out = Vec::new();
        sep::decompress_to_vec(&with, &mut out, &opts(threads, kernels)).unwrap();
        assert!(out == data, "{threads} threads, {kernels:?}");
    }
    sep::set_kernels(Kernels::detect());
}

#[cfg(feature = "builtin-pack")]
#[test]
fn level_9_starts_source_code_from_the_code_pack() {
    let code = corpus_file("text/hiperfifo.c");
    let mut o = opts(1, Kernels::detect());
    o.level = 9;
    let picked = |data: &[u8], o: &Options| {
        let a = archive(data, o.clone(), PackChoice::Auto);
        let info = sep::inspect(std::io::Cursor::new(&a)).unwrap();
        (info.pack.map(|p| p.0), a)
    };
    let (name, with) = picked(&code, &o);
    assert_eq!(name.as_deref(), Some("code9"));
    // The default level has one text pack, which takes code too.
    let (name, _) = picked(&code, &opts(1, Kernels::detect()));
    assert_eq!(name.as_deref(), Some("text"));
    o.network = false;
    let (name, without) = picked(&code, &o);
    assert_eq!(name.as_deref(), Some("code9"));
    assert!(
        with.len() < without.len(),
        "{} vs {}",
        with.len(),
        without.len()
    );
    let mut out = Vec::new();
    sep::decompress_to_vec(&with, &mut out, &opts(2, Kernels::Scalar)).unwrap();
    assert!(out == code);
    sep::set_kernels(Kernels::detect());
}

#[cfg(feature = "builtin-pack")]
#[test]
fn archives_naming_a_superseded_builtin_pack_still_decode() {
    // Written at level 9 with the first `text9` (pretrained/text9-v1.pack), which the current
    // one replaced: every build keeps it so that such archives decode, and no level picks it.
    let old = repo_file("tests/data/golden/v2/text9-v1.sed.1.sep");
    let original = corpus_file("text/sed.1");
    let named = sep::inspect(std::io::Cursor::new(&old))
        .unwrap()
        .pack
        .unwrap();
    let builtins = sep::builtin_packs().unwrap();
    let superseded = builtins
        .iter()
        .find(|(p, _)| p.sha256_hex() == named.1)
        .unwrap();
    assert_eq!((superseded.0.name(), superseded.1), ("text9", false));
    for (threads, kernels) in [(1, Kernels::Scalar), (2, Kernels::detect())] {
        let mut out = Vec::new();
        sep::decompress_to_vec(&old, &mut out, &opts(threads, kernels)).unwrap();
        assert!(out == original, "decodes to other bytes");
    }
    sep::set_kernels(Kernels::detect());
    let mut o = opts(1, Kernels::detect());
    o.level = 9;
    let now = sep::inspect(std::io::Cursor::new(archive(
        &original,
        o,
        PackChoice::Auto,
    )))
    .unwrap()
    .pack
    .unwrap();
    assert_eq!(now.0, "text9");
    assert_ne!(now.1, named.1, "level 9 picked the superseded pack");
}
