//! End-to-end behaviour of the `sep` command: names, streams, overwrite rules, `info`.

use crate::common::*;
use std::fs;

#[test]
fn default_names_keep_input_and_refuse_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = b"hello hello hello sep\n".repeat(50);
    fs::write(d.join("a.txt"), &data).unwrap();
    ok(&sep(d, &["compress", "-q", "a.txt"]));
    assert_eq!(
        fs::read(d.join("a.txt")).unwrap(),
        data,
        "input must be kept"
    );
    let archive = fs::read(d.join("a.txt.sep")).unwrap();
    assert!(archive.len() < data.len());

    // Second compress refuses to overwrite, leaves the archive untouched.
    fails_cleanly(&sep(d, &["compress", "-q", "a.txt"]), "already exists");
    assert_eq!(fs::read(d.join("a.txt.sep")).unwrap(), archive);

    // Decompress refuses to overwrite a.txt, then does with -f.
    fs::write(d.join("a.txt"), b"other").unwrap();
    fails_cleanly(
        &sep(d, &["decompress", "-q", "a.txt.sep"]),
        "already exists",
    );
    assert_eq!(fs::read(d.join("a.txt")).unwrap(), b"other");
    ok(&sep(d, &["decompress", "-q", "-f", "a.txt.sep"]));
    assert_eq!(fs::read(d.join("a.txt")).unwrap(), data);
    assert!(d.join("a.txt.sep").exists(), "archive must be kept");

    // compress -f overwrites.
    fs::write(d.join("a.txt.sep"), b"junk").unwrap();
    ok(&sep(d, &["compress", "-q", "-f", "a.txt"]));
    assert_eq!(fs::read(d.join("a.txt.sep")).unwrap(), archive);
    // No temporary files left behind.
    let names: Vec<_> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "unexpected files: {names:?}");
}

#[test]
fn output_option_and_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data: Vec<u8> = (0..20_000u32).map(|i| (i % 7 + i / 300) as u8).collect();
    fs::write(d.join("in"), &data).unwrap();
    ok(&sep(d, &["compress", "-q", "in", "-o", "x.bin"]));
    let archive = fs::read(d.join("x.bin")).unwrap();
    // -c writes the same archive to stdout.
    let r = sep(d, &["compress", "-q", "-c", "in"]);
    ok(&r);
    assert_eq!(r.stdout, archive);
    // decompress -o and -c.
    ok(&sep(d, &["decompress", "-q", "x.bin", "-o", "out"]));
    assert_eq!(fs::read(d.join("out")).unwrap(), data);
    let r = sep(d, &["decompress", "-q", "-c", "x.bin"]);
    ok(&r);
    assert_eq!(r.stdout, data);
    // Without -o, a name not ending in .sep is refused.
    fails_cleanly(&sep(d, &["decompress", "-q", "x.bin"]), "unknown suffix");
}

#[test]
fn stdin_to_stdout_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = b"streamed through standard input and output; ".repeat(400);
    let c = sep_env(d, &["compress", "-q"], &data, &[]);
    ok(&c);
    let c2 = sep_env(d, &["compress", "-q", "-"], &data, &[]);
    ok(&c2);
    assert_eq!(c.stdout, c2.stdout);
    let back = sep_env(d, &["decompress", "-q"], &c.stdout, &[]);
    ok(&back);
    assert_eq!(back.stdout, data);
    let back = sep_env(d, &["decompress", "-q", "-", "-o", "f"], &c.stdout, &[]);
    ok(&back);
    assert_eq!(fs::read(d.join("f")).unwrap(), data);
    // Nothing written into the directory by the pure stream runs except f.
    assert_eq!(fs::read_dir(d).unwrap().count(), 1);
}

#[test]
fn empty_and_tiny_inputs() {
    let empty = round_trip(b"", &[]);
    assert!(empty.len() < 128, "empty archive is {} bytes", empty.len());
    let one = round_trip(b"x", &[]);
    // One block costs its 37-byte record and a 25-byte table entry on top of the empty archive.
    assert_eq!(one.len(), empty.len() + 37 + 25 + 1, "1-byte archive");
    round_trip(&[0u8; 2], &[]);
    round_trip(&[255u8; 3], &["--block-size", "1"]);
}

#[test]
fn incompressible_data_is_stored_with_small_overhead() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let data: Vec<u8> = (0..300_000)
        .map(|_| (xorshift(&mut x) >> 24) as u8)
        .collect();
    let a = round_trip(&data, &["--block-size", "100K"]);
    // 3 blocks: constant header/trailer plus a few dozen bytes per block.
    assert!(
        a.len() <= data.len() + 300,
        "archive {} for {}",
        a.len(),
        data.len()
    );
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("r.sep"), &a).unwrap();
    let r = sep(dir.path(), &["info", "r.sep"]);
    ok(&r);
    let text = String::from_utf8(r.stdout).unwrap();
    assert_eq!(text.matches(" stored ").count(), 3, "{text}");
}

#[test]
fn info_describes_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Text the context-mixing codec takes (not so redundant that zstd is chosen instead).
    let mut x = 3u64;
    let words = ["info", "lists", "every", "block", "of", "the", "archive"];
    let mut data = Vec::new();
    while data.len() < 27000 {
        data.extend_from_slice(words[xorshift(&mut x) as usize % words.len()].as_bytes());
        data.push(b' ');
    }
    data.truncate(27000);
    fs::write(d.join("f"), &data).unwrap();
    ok(&sep(d, &["compress", "-q", "--block-size", "10000", "f"]));
    let size = fs::metadata(d.join("f.sep")).unwrap().len();
    let r = sep(d, &["info", "f.sep"]);
    ok(&r);
    let t = String::from_utf8(r.stdout).unwrap();
    assert!(t.contains(&format!("({size} bytes)")), "{t}");
    let version = format!("format version: {}", sep::internals::format::VERSION);
    assert!(t.contains(&version), "{t}");
    assert!(t.contains("original size:  27000 bytes"), "{t}");
    assert!(t.contains("blocks:         3"), "{t}");
    assert_eq!(t.matches(" cm ").count(), 3, "{t}");
    fails_cleanly(&sep(d, &["info", "f"]), "not a sep archive");
}

#[test]
fn refuses_bad_options() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("f"), b"data").unwrap();
    fails_cleanly(
        &sep(d, &["compress", "-q", "--threads", "5000", "f"]),
        "threads",
    );
    fails_cleanly(
        &sep_env(d, &["compress", "-q", "f"], b"", &[("SEP_KERNELS", "vliw")]),
        "SEP_KERNELS",
    );
    fails_cleanly(
        &sep(d, &["compress", "-q", "--block-size", "2G", "f"]),
        "block size",
    );
    assert!(!d.join("f.sep").exists());
}

#[cfg(unix)]
#[test]
fn output_to_a_pipe_is_written_in_place() {
    // `-o` naming a FIFO (as `/dev/null` is a device): sep must write into it, not rename a
    // temporary file over it, with or without -f.
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = b"pipes and devices are not files\n".repeat(300);
    fs::write(d.join("a.txt"), &data).unwrap();
    ok(&sep(d, &["compress", "-q", "a.txt"]));
    let fifo = d.join("pipe");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    for force in [false, true] {
        // Held open for writing until sep is done, so that the reader never waits on a
        // writer that will not come (and sees the end once sep and this have closed it).
        let keeper = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(fifo).unwrap())
        };
        let mut args = vec!["decompress", "-q", "-o", "pipe", "a.txt.sep"];
        if force {
            args.insert(1, "-f");
        }
        let run = sep(d, &args);
        drop(keeper);
        ok(&run);
        assert!(reader.join().unwrap() == data, "force {force}");
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }
}

#[test]
fn compressed_data_is_not_read_from_a_terminal() {
    // `script` (util-linux) gives the command a terminal on stdin; without it, nothing to do.
    let has_script = std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_script {
        eprintln!("no `script` (util-linux) to give sep a terminal: skipped");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_sep");
    for (args, expect) in [
        (
            "decompress",
            "refusing to read compressed data from a terminal",
        ),
        (
            "compress -o x.sep",
            "refusing to read the data to compress from a terminal",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("script")
            .args(["-qec", &format!("{bin} {args}"), "/dev/null"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(expect), "{args}: {text}");
        assert_eq!(out.status.code(), Some(1), "{args}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "{args}");
    }
}

#[test]
fn levels_are_chosen_by_xz_flags_and_shown_by_info() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = word_text(5, 20000);
    fs::write(d.join("f"), &data).unwrap();
    for (flag, level) in [
        ("-1", 1),
        ("--fast", 1),
        ("-9", 9),
        ("--best", 9),
        ("--level=4", 4),
    ] {
        ok(&sep(d, &["compress", "-q", "-f", flag, "f"]));
        let r = sep(d, &["info", "f.sep"]);
        ok(&r);
        let t = String::from_utf8(r.stdout).unwrap();
        assert!(
            t.contains(&format!("level:          {level}\n")),
            "{flag}: {t}"
        );
        fs::remove_file(d.join("f")).unwrap();
        ok(&sep(d, &["decompress", "-q", "f.sep"]));
        assert_eq!(fs::read(d.join("f")).unwrap(), data, "{flag}");
    }
    ok(&sep(d, &["compress", "-q", "-f", "f"]));
    let t = String::from_utf8(sep(d, &["info", "f.sep"]).stdout).unwrap();
    assert!(t.contains("level:          6\n"), "{t}");
    usage_fails(
        &sep(d, &["compress", "-q", "-f", "--level", "10", "f"]),
        "level 10",
    );
}
