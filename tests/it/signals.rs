//! Stopping sep: SIGINT and SIGTERM during a compression or a decompression leave no file
//! behind, and an input or archive truncated by another process during a run gives a clean
//! error, not a crash.

use crate::common::xorshift;
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// About 400 KB of text the context-mixing codec takes (slowly: a run lasts seconds).
fn text() -> Vec<u8> {
    let words = [
        "stop", "signal", "while", "the", "archive", "is", "written", "to", "disk",
    ];
    let mut x = 0xfeed_u64;
    let mut out = Vec::new();
    while out.len() < 400_000 {
        out.extend_from_slice(words[xorshift(&mut x) as usize % words.len()].as_bytes());
        out.push(b' ');
    }
    out
}

/// Starts `sep args...` in `dir`.
fn start(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_sep"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The files of `dir` other than `keep`.
fn others(dir: &Path, keep: &[&str]) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect()
}

/// Waits for `child` and returns its exit code (None if a signal ended it) and first line.
fn finish(child: Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    (
        out.status.code(),
        err.lines().next().unwrap_or("").to_string(),
    )
}

/// A folder holding the text as `t` and its archive as `t.sep`.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("t"), text()).unwrap();
    let args = [
        "compress",
        "-q",
        "-T",
        "2",
        "--block-size",
        "64K",
        "t",
        "-o",
        "t.sep",
    ];
    crate::common::ok(&crate::common::sep(d, &args));
    dir
}

#[test]
fn signals_remove_the_partial_output() {
    let dir = folder();
    let d = dir.path();
    let runs: [(&[&str], &str); 2] = [
        (
            &["compress", "-q", "-T", "1", "t", "-o", "out.sep"],
            "out.sep",
        ),
        (
            &["decompress", "-q", "-T", "1", "t.sep", "-o", "out"],
            "out",
        ),
    ];
    for (args, _) in runs {
        for (signal, code) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129)] {
            let child = start(d, args);
            std::thread::sleep(Duration::from_millis(400));
            let pid = child.id().to_string();
            assert!(Command::new("kill")
                .args([signal, &pid])
                .status()
                .unwrap()
                .success());
            let (status, _) = finish(child);
            assert_eq!(status, Some(code), "{args:?} {signal}");
            let left = others(d, &["t", "t.sep"]);
            assert!(left.is_empty(), "{args:?} {signal} left {left:?}");
        }
    }
}

#[test]
fn files_truncated_during_a_run_give_a_clean_error() {
    let dir = folder();
    let d = dir.path();
    let data = fs::read(d.join("t")).unwrap();
    let archive = fs::read(d.join("t.sep")).unwrap();
    let cases: [(&[&str], &str); 2] = [
        (
            &[
                "compress",
                "-q",
                "-T",
                "1",
                "--block-size",
                "64K",
                "in",
                "-o",
                "out",
            ],
            "in",
        ),
        (&["decompress", "-q", "-T", "1", "in", "-o", "out"], "in"),
    ];
    for (args, input) in cases {
        let bytes = if args[0] == "compress" {
            &data
        } else {
            &archive
        };
        fs::write(d.join(input), bytes).unwrap();
        let child = start(d, args);
        std::thread::sleep(Duration::from_millis(400));
        fs::OpenOptions::new()
            .write(true)
            .open(d.join(input))
            .unwrap()
            .set_len(1000)
            .unwrap();
        let (status, line) = finish(child);
        assert_eq!(status, Some(1), "{args:?}: {line}");
        assert!(line.starts_with("sep: error: "), "{args:?}: {line}");
        assert!(
            line.contains("the file changed while it was being read"),
            "{args:?}: {line}"
        );
        let left = others(d, &["t", "t.sep", input]);
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}
