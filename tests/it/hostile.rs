//! Hostile inputs, round two: files without an end where a file is needed, the packs directory
//! of `SEP_PACKS`, names that would break a message, listings that check what they list, the
//! messages of odd archives and pipes, and the mode of new files.

use crate::common::{crafted, fails_cleanly, ok, sep, sep_env, word_text};
use std::fs;
use std::path::Path;

/// A text file `f` in `d`, and its archive `f.sep` made with `args` besides.
fn text_and_archive(d: &Path, args: &[&str]) -> Vec<u8> {
    let data = word_text(5, 30_000);
    fs::write(d.join("f"), &data).unwrap();
    let mut a = vec!["compress", "-q", "-k", "-f"];
    a.extend_from_slice(args);
    a.push("f");
    ok(&sep(d, &a));
    data
}

#[test]
fn bases_and_packs_must_be_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    text_and_archive(d, &[]);
    // Each would read /dev/zero until memory ran out.
    for args in [
        &["compress", "-q", "-f", "--patch-from", "/dev/zero", "f"][..],
        &["compress", "-q", "-f", "--pack", "/dev/zero", "f"][..],
        &[
            "decompress",
            "-q",
            "--pack",
            "/dev/zero",
            "f.sep",
            "-o",
            "out",
        ][..],
        &[
            "decompress",
            "-q",
            "--patch-from",
            "/dev/zero",
            "f.sep",
            "-o",
            "out",
        ][..],
    ] {
        fails_cleanly(&sep(d, args), "/dev/zero: not a regular file");
        assert!(!d.join("out").exists());
    }
}

#[test]
fn sep_packs_is_read_only_when_an_archive_needs_a_pack() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("train"), word_text(1, 40_000)).unwrap();
    ok(&sep(
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
    ));
    // No pack needed: a missing directory or an empty value is never read.
    let data = text_and_archive(d, &["--pack", "none"]);
    for dir in ["", "/nonexistent/packs"] {
        let r = sep_env(d, &["-dc", "f.sep"], b"", &[("SEP_PACKS", dir)]);
        ok(&r);
        assert!(r.stdout == data && r.stderr.is_empty(), "{}", r.stderr);
    }
    // A pack needed and the directory missing: the error names SEP_PACKS.
    text_and_archive(d, &["--pack", "w.pack"]);
    let r = sep_env(
        d,
        &["-dc", "f.sep"],
        b"",
        &[("SEP_PACKS", "/nonexistent/packs")],
    );
    fails_cleanly(
        &r,
        "SEP_PACKS=/nonexistent/packs: no such file or directory",
    );
    // A damaged pack beside the right one is skipped with a warning.
    let packs = d.join("packs");
    fs::create_dir(&packs).unwrap();
    fs::copy(d.join("w.pack"), packs.join("w.pack")).unwrap();
    fs::write(packs.join("broken.pack"), b"not a pack").unwrap();
    let env = [("SEP_PACKS", packs.to_str().unwrap())];
    let r = sep_env(d, &["-dc", "f.sep"], b"", &env);
    ok(&r);
    assert!(r.stdout == data);
    assert!(
        r.stderr.starts_with("sep: warning: SEP_PACKS: ") && r.stderr.contains("broken.pack"),
        "{}",
        r.stderr
    );
    // A damaged copy of the pack needed, named for it, is an error naming it.
    fs::remove_file(packs.join("broken.pack")).unwrap();
    fs::write(packs.join("w.pack"), b"not a pack either").unwrap();
    fails_cleanly(&sep_env(d, &["-dc", "f.sep"], b"", &env), "w.pack");
}

#[test]
fn a_block_whose_tables_pass_the_memory_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A block of about 200 KB: its context-mixing tables (about 25 MB) are over a limit of
    // 2 MiB, which its length alone is not.
    let data = text_and_archive(d, &["--pack", "none"]);
    let r = sep(
        d,
        &["decompress", "-q", "--memory", "2M", "f.sep", "-o", "out"],
    );
    fails_cleanly(&r, "decoding needs");
    assert!(r.stderr.contains("--memory raises it"), "{}", r.stderr);
    assert!(!d.join("out").exists());
    ok(&sep(
        d,
        &["decompress", "-q", "--memory", "32M", "f.sep", "-o", "out"],
    ));
    assert!(fs::read(d.join("out")).unwrap() == data);
}

#[test]
fn names_in_messages_stay_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A missing file whose name holds a line end and an escape sequence.
    let r = sep(d, &["-d", "a\nb\x1b[2Jc.sep"]);
    fails_cleanly(&r, "a\\nb\\x1b[2Jc.sep");
    assert!(!r.stderr.contains('\x1b'));
}

#[test]
fn odd_archives_and_pipes_are_named_for_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A block claiming no bytes at all.
    let empty = crafted(None, 16, &[(sep::Codec::Stored, 0, Vec::new())]);
    fs::write(d.join("z.sep"), &empty).unwrap();
    fails_cleanly(&sep(d, &["-dc", "z.sep"]), "a block of length 0");
    // A stored block of 180 bytes with a 22-byte payload, in the trailer's table as in its
    // record: `info` and `-l` refuse it as decoding does.
    let lying = crafted(None, 1 << 10, &[(sep::Codec::Stored, 180, vec![7; 22])]);
    fs::write(d.join("l.sep"), &lying).unwrap();
    fails_cleanly(&sep(d, &["-dc", "l.sep"]), "stored block of 180 bytes");
    fails_cleanly(&sep(d, &["info", "l.sep"]), "stored block of 180 bytes");
    fails_cleanly(&sep(d, &["-l", "l.sep"]), "stored block of 180 bytes");
    // `--range` on a pipe: it needs a file, and says so.
    let made = std::process::Command::new("mkfifo")
        .arg(d.join("pipe"))
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: no mkfifo");
        return;
    }
    // A writer, or opening the pipe would wait for one.
    let pipe = d.join("pipe");
    let writer = std::thread::spawn(move || fs::write(pipe, b"not an archive"));
    let r = sep(d, &["-d", "--range", "0:1", "-c", "pipe"]);
    let _ = writer.join();
    fails_cleanly(&r, "--range reads an archive file, not a stream");
    assert!(!r.stderr.contains("changed"), "{}", r.stderr);
}

#[test]
fn new_files_take_the_mode_the_umask_gives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    text_and_archive(d, &[]);
    let sh = |script: &str| {
        let sep = env!("CARGO_BIN_EXE_sep");
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(script.replace("SEP", sep))
            .current_dir(d)
            .status()
            .unwrap();
        assert!(status.success(), "{script}");
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = |name: &str| fs::metadata(d.join(name)).unwrap().permissions().mode() & 0o777;
    ok(&sep(d, &["-q", "-k", "--shard", "0/1", "f"]));
    sh("umask 022; SEP -q < f -o from-stdin.sep");
    assert_eq!(mode("from-stdin.sep"), 0o644);
    sh("umask 077; SEP -q < f -o private.sep; SEP concat f.0-of-1.sep -o joined.sep");
    assert_eq!(mode("private.sep"), 0o600);
    assert_eq!(mode("joined.sep"), 0o600);
    sh("umask 002; SEP concat f.0-of-1.sep -o group.sep");
    assert_eq!(mode("group.sep"), 0o664);
}

/// Writes the crafted archives of the hostile findings to `fuzz/regressions/archive-bytes/`
/// (run once by hand: `SEP_WRITE_REGRESSIONS=1 cargo test --release --test it write_regressions
/// -- --ignored`), where the fuzz replay keeps them.
#[test]
#[ignore = "writes fuzz/regressions; run by hand"]
fn write_regressions() {
    if std::env::var_os("SEP_WRITE_REGRESSIONS").is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/archive-bytes");
    let zstd = |b: &[u8]| zstd::bulk::compress(b, 3).unwrap();
    let key = b"\"data_offsets\":[";
    // Offset pairs with no object: quadratic once.
    let pairs: Vec<u8> = (0..4096)
        .flat_map(|_| key.iter().chain(b",]"))
        .copied()
        .collect();
    let a = crafted(
        None,
        1 << 20,
        &[(sep::Codec::TensorHeader, 4096 * 20, zstd(&pairs))],
    );
    fs::write(dir.join("tensor-header-no-object"), a).unwrap();
    // Pairs restoring to 40 bytes each past the block's length.
    let mut grow = b"{".to_vec();
    for _ in 0..2000 {
        grow.extend_from_slice(key);
        grow.extend_from_slice(format!("{},]{{", u64::MAX / 4).as_bytes());
    }
    let a = crafted(
        None,
        1 << 20,
        &[(sep::Codec::TensorHeader, 4096, zstd(&grow))],
    );
    fs::write(dir.join("tensor-header-grows"), a).unwrap();
    // A network 1024 wide, which no encoder writes.
    let mut wide = sep::internals::codecs::cm::CmConfig::for_level(9);
    wide.params.net.hidden = 1024;
    let a = crafted(
        Some(wide.to_bytes()),
        1 << 16,
        &[(sep::Codec::Cm, 1 << 14, vec![0; 1 << 8])],
    );
    fs::write(dir.join("cm-wide-network"), a).unwrap();
    // A byte-table block whose stream ends long before the 4 MiB it claims.
    let mut x = 3u64;
    let values: Vec<u8> = (0..4096)
        .map(|_| (crate::common::xorshift(&mut x) % 5) as u8)
        .collect();
    let payload = sep::internals::codecs::float::bytes::encode(&values);
    let a = crafted(None, 4 << 20, &[(sep::Codec::ByteTable, 4 << 20, payload)]);
    fs::write(dir.join("byte-table-short"), a).unwrap();
}

/// Writes crafted tensor-header archives of 128 KiB, 512 KiB and 1 MiB blocks into the folder
/// `SEP_HOSTILE_DIR` names, for timing their decode against block size (by hand:
/// `SEP_HOSTILE_DIR=DIR cargo test --release --test it write_scaling -- --ignored`):
/// `bare-N` with no object around its offset pairs, `objects-N` with one `{` a pair; and
/// context-mixing archives whose tables are large (`cm-every-context-xN`), for memory.
#[test]
#[ignore = "writes timing inputs; run by hand"]
fn write_scaling() {
    let Some(dir) = std::env::var_os("SEP_HOSTILE_DIR") else {
        return;
    };
    let dir = Path::new(&dir);
    let key = b"\"data_offsets\":[";
    for kib in [128usize, 512, 1024] {
        for (name, pair) in [("bare", &b",]"[..]), ("objects", &b",]{"[..])] {
            let n = (kib << 10) / (key.len() + pair.len());
            let mut text = b"{".to_vec();
            text.extend((0..n).flat_map(|_| key.iter().chain(pair)));
            // Restored, each pair's empty numbers become `0,0`.
            let raw = 1 + n * (key.len() + pair.len() + 2);
            let payload = zstd::bulk::compress(&text, 3).unwrap();
            let a = crafted(
                None,
                4 << 20,
                &[(sep::Codec::TensorHeader, raw as u64, payload)],
            );
            fs::write(dir.join(format!("{name}-{kib}")), a).unwrap();
        }
    }
    // Pairs restoring to 40 bytes each from 19 claimed as a block of the text's length: the
    // output is refused as it passes the block, not after.
    for kib in [1024usize, 8 << 10, 32 << 10] {
        let pair = format!("{},]{{", u64::MAX / 4);
        let n = (kib << 10) / (key.len() + pair.len());
        let mut text = b"{".to_vec();
        text.extend((0..n).flat_map(|_| key.iter().chain(pair.as_bytes())));
        let payload = zstd::bulk::compress(&text, 19).unwrap();
        let raw = text.len() as u64;
        let a = crafted(None, 32 << 20, &[(sep::Codec::TensorHeader, raw, payload)]);
        fs::write(dir.join(format!("grow-{kib}")), a).unwrap();
    }
    // Context-mixing blocks of 1.5 MiB with every context of the catalogue (their tables:
    // about 300 MB), one and three of them, from payloads of 1/128 of a block.
    let mut every = sep::internals::codecs::cm::CmConfig::for_level(9);
    every.params.contexts = (1 << 24) - 1;
    let raw = 3u64 << 19;
    // No transforms, one lane, its stream zeros (which decode to some bytes).
    let stream = (raw / 128) as usize + 64;
    let mut payload = vec![0u8, 1, 0];
    payload.extend_from_slice(&(stream as u32).to_le_bytes());
    payload.resize(7 + stream, 0);
    for n in [1, 3] {
        let blocks = vec![(sep::Codec::Cm, raw, payload.clone()); n];
        let a = crafted(Some(every.to_bytes()), raw, &blocks);
        fs::write(dir.join(format!("cm-every-context-x{n}")), a).unwrap();
    }
}
