//! The xz/zstd form of the command line, row by row of the conventions scripts rely on: several
//! files, -z/-d/-t/-l, -k/--rm, levels, -T0, -r, -v, the unsep and sepcat names, metadata,
//! usage errors, the suffix rule, -c with -o, a closed pipe, and a script written for xz.

use crate::common::*;
use std::fs;
use std::path::Path;
use std::process::Command;

fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn several_files_each_with_its_output_and_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a"), word_text(1, 5000)).unwrap();
    fs::write(d.join("b"), word_text(2, 7000)).unwrap();
    // A missing file fails alone: the others are still done, and the status says so.
    let r = sep(d, &["-q", "a", "missing", "b"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("missing: no such file"), "{}", r.stderr);
    assert_eq!(names(d), ["a", "a.sep", "b", "b.sep"]);
    // -d on both archives, -f to overwrite the kept inputs.
    fs::remove_file(d.join("a")).unwrap();
    ok(&sep(d, &["-d", "-q", "-f", "a.sep", "b.sep"]));
    assert_eq!(fs::read(d.join("a")).unwrap(), word_text(1, 5000));
    assert_eq!(fs::read(d.join("b")).unwrap(), word_text(2, 7000));
}

#[test]
fn test_and_list_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a"), word_text(3, 30000)).unwrap();
    fs::write(d.join("b"), word_text(4, 9000)).unwrap();
    ok(&sep(d, &["-z", "-q", "-9", "a", "b"]));
    fs::remove_file(d.join("a")).unwrap();
    ok(&sep(d, &["-t", "a.sep", "b.sep"]));
    assert!(!d.join("a").exists(), "-t wrote its output");
    let r = sep(d, &["-l", "a.sep", "b.sep"]);
    ok(&r);
    let t = String::from_utf8(r.stdout).unwrap();
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 4, "header, two archives, total: {t}");
    assert!(
        lines[1].contains("a.sep") && lines[1].contains(" cm "),
        "{t}"
    );
    assert!(lines[1].contains(" 9 "), "level 9 shown: {t}");
    assert!(lines[3].contains("2 files"), "{t}");
    // -lv: the whole description of each.
    let r = sep(d, &["-lv", "a.sep"]);
    ok(&r);
    assert!(String::from_utf8(r.stdout).unwrap().contains("block size:"));
    // A damaged archive fails the test.
    let mut bad = fs::read(d.join("a.sep")).unwrap();
    let at = bad.len() / 2;
    bad[at] ^= 4;
    fs::write(d.join("bad.sep"), bad).unwrap();
    let r = sep(d, &["-t", "-q", "bad.sep", "b.sep"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("sep: error: bad.sep: "),
        "{}",
        r.stderr
    );
}

#[test]
fn keep_and_rm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a"), word_text(5, 4000)).unwrap();
    ok(&sep(d, &["-k", "-q", "a"]));
    assert!(d.join("a").exists());
    ok(&sep(d, &["--rm", "-q", "-f", "a"]));
    assert_eq!(names(d), ["a.sep"]);
    ok(&sep(d, &["-d", "--rm", "-q", "a.sep"]));
    assert_eq!(names(d), ["a"]);
    assert_eq!(fs::read(d.join("a")).unwrap(), word_text(5, 4000));
    // With -c there is no output file: the input stays.
    let r = sep(d, &["--rm", "-q", "-c", "a"]);
    ok(&r);
    assert!(d.join("a").exists());
    usage_fails(&sep(d, &["-k", "--rm", "a"]), "--rm");
}

#[test]
fn levels_threads_and_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a"), word_text(6, 20000)).unwrap();
    ok(&sep(d, &["-q", "-1", "-T0", "a"]));
    let fast = fs::read(d.join("a.sep")).unwrap();
    ok(&sep(d, &["-q", "-f", "-k9", "a"]));
    let best = fs::read(d.join("a.sep")).unwrap();
    assert_ne!(fast, best);
    usage_fails(&sep(d, &["-19", "a"]), "level");
    // -v: a summary although stderr is not a terminal; without it, nothing.
    let r = sep(d, &["-d", "-c", "a.sep"]);
    ok(&r);
    assert_eq!(r.stdout, word_text(6, 20000));
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    let r = sep(d, &["-d", "-c", "-v", "a.sep"]);
    ok(&r);
    assert!(
        r.stderr.contains("a.sep:") && r.stderr.contains("ratio"),
        "{}",
        r.stderr
    );
}

#[test]
fn recursive_into_directories() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("t/u")).unwrap();
    fs::write(d.join("t/x"), word_text(7, 3000)).unwrap();
    fs::write(d.join("t/u/y"), word_text(8, 3000)).unwrap();
    let r = sep(d, &["-q", "t"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("is a directory"), "{}", r.stderr);
    ok(&sep(d, &["-q", "-r", "--rm", "t"]));
    assert_eq!(names(&d.join("t")), ["u", "x.sep"]);
    assert_eq!(names(&d.join("t/u")), ["y.sep"]);
    // A second run finds nothing left to compress (archives are not compressed again).
    ok(&sep(d, &["-q", "-r", "t"]));
    assert_eq!(names(&d.join("t")), ["u", "x.sep"]);
    ok(&sep(d, &["-d", "-q", "-r", "--rm", "t"]));
    assert_eq!(fs::read(d.join("t/u/y")).unwrap(), word_text(8, 3000));
    assert_eq!(names(&d.join("t")), ["u", "x"]);
}

#[cfg(unix)]
#[test]
fn unsep_and_sepcat_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["unsep", "sepcat"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_sep"), d.join(name)).unwrap();
    }
    fs::write(d.join("a"), word_text(9, 6000)).unwrap();
    ok(&sep(d, &["-q", "a"]));
    let cat = Command::new(d.join("sepcat"))
        .arg("a.sep")
        .current_dir(d)
        .output()
        .unwrap();
    assert!(cat.status.success());
    assert_eq!(cat.stdout, word_text(9, 6000));
    fs::remove_file(d.join("a")).unwrap();
    let un = Command::new(d.join("unsep"))
        .arg("a.sep")
        .current_dir(d)
        .output()
        .unwrap();
    assert!(
        un.status.success(),
        "{}",
        String::from_utf8_lossy(&un.stderr)
    );
    assert_eq!(fs::read(d.join("a")).unwrap(), word_text(9, 6000));
}

#[cfg(unix)]
#[test]
fn mtime_and_permissions_carry_over_without_setuid() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a"), word_text(10, 5000)).unwrap();
    let then = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    let f = fs::File::options().write(true).open(d.join("a")).unwrap();
    f.set_modified(then).unwrap();
    f.set_permissions(fs::Permissions::from_mode(0o4751))
        .unwrap();
    drop(f);
    ok(&sep(d, &["-q", "a"]));
    let meta = fs::metadata(d.join("a.sep")).unwrap();
    assert_eq!(meta.modified().unwrap(), then);
    assert_eq!(meta.permissions().mode() & 0o7777, 0o751);
    fs::remove_file(d.join("a")).unwrap();
    ok(&sep(d, &["-d", "-q", "a.sep"]));
    let meta = fs::metadata(d.join("a")).unwrap();
    assert_eq!(meta.modified().unwrap(), then);
    assert_eq!(meta.permissions().mode() & 0o7777, 0o751);
}

#[test]
fn usage_errors_suffix_and_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a"), word_text(11, 3000)).unwrap();
    usage_fails(&sep(d, &["--frobnicate", "a"]), "--frobnicate");
    usage_fails(&sep(d, &["-c", "-o", "x", "a"]), "-c and -o");
    usage_fails(&sep(d, &["-o", "x", "a", "a"]), "-o");
    usage_fails(&sep(d, &["-d", "-t", "a"]), "cannot be used with");
    assert!(!d.join("x").exists());
    // An archive given to compress is skipped with a warning (status 2), as xz does.
    ok(&sep(d, &["-q", "a"]));
    let r = sep(d, &["a.sep"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("already has the .sep suffix"),
        "{}",
        r.stderr
    );
    assert!(!d.join("a.sep.sep").exists());
    // Decompressing a name without the suffix is an error.
    let r = sep(d, &["-d", "a"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("unknown suffix"), "{}", r.stderr);
}

#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = word_text(12, 3 << 20);
    fs::write(d.join("a"), &data).unwrap();
    ok(&sep(d, &["-q", "-1", "a"]));
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; '{}' -dc a.sep | head -c 10 >/dev/null",
            env!("CARGO_BIN_EXE_sep")
        ))
        .current_dir(d)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(141));
}

#[cfg(unix)]
#[test]
fn a_script_written_for_xz_runs_with_sep() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a"), word_text(13, 40000)).unwrap();
    fs::write(d.join("b"), word_text(14, 10000)).unwrap();
    let script = "set -e; xz -k -T0 a b; xz -t a.xz; xz -dc a.xz | cmp - a; xz -l a.xz";
    let script = script.replace("xz -", "\"$SEP\" -").replace(".xz", ".sep");
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("SEP", env!("CARGO_BIN_EXE_sep"))
        .current_dir(d)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("a.sep"));
    assert!(d.join("b.sep").exists() && d.join("a").exists());
}

#[cfg(unix)]
#[test]
fn decompressing_shows_total_and_time_left_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("no `script` (util-linux) to give sep a terminal: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A million bytes of real text: the test corpus's text files, one after another.
    let text: Vec<u8> = corpus_files("text")
        .iter()
        .flat_map(|p| fs::read(p).unwrap())
        .collect();
    assert!(text.len() >= 1_000_000, "{} bytes of text", text.len());
    fs::write(d.join("a"), &text[..1_000_000]).unwrap();
    ok(&sep(d, &["-q", "-1", "--rm", "a"]));
    // `script` runs sep on a pseudo-terminal and copies what it draws to stdout.
    let cmd = format!("'{}' -d a.sep", env!("CARGO_BIN_EXE_sep"));
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out.status.success());
    let drawn = String::from_utf8_lossy(&out.stdout);
    assert!(
        drawn.contains("/976.56 KiB") && drawn.contains("ETA"),
        "{drawn}"
    );
    // The summary, in the bar's units.
    assert!(drawn.contains("-> 976.56 KiB (ratio"), "{drawn}");
    assert_eq!(fs::read(d.join("a")).unwrap(), &text[..1_000_000]);
}

#[test]
fn a_range_of_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = word_text(15, 100_000);
    fs::write(d.join("a"), &data).unwrap();
    ok(&sep(d, &["-q", "--block-size", "16K", "a"]));
    let r = sep(d, &["-d", "-c", "--range", "30000:30100", "a.sep"]);
    ok(&r);
    assert_eq!(r.stdout, &data[30000..30100]);
    let r = sep(d, &["-d", "-q", "--range", "1K:2K", "-o", "part", "a.sep"]);
    ok(&r);
    assert_eq!(fs::read(d.join("part")).unwrap(), &data[1024..2048]);
    fails_cleanly(
        &sep(d, &["-d", "-c", "--range", "0:200000", "a.sep"]),
        "range",
    );
    usage_fails(&sep(d, &["-d", "-c", "--range", "9:3", "a.sep"]), "range");
}

#[test]
fn shards_and_concat() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("a"), word_text(16, 60_000)).unwrap();
    let r = sep(d, &["-q", "-c", "--block-size", "8K", "a"]);
    ok(&r);
    let whole = r.stdout;
    for i in 0..3 {
        let shard = format!("{i}/3");
        ok(&sep(
            d,
            &["-q", "--block-size", "8K", "--shard", &shard, "a"],
        ));
    }
    let info = String::from_utf8(sep(d, &["info", "a.1-of-3.sep"]).stdout).unwrap();
    assert!(info.contains("part:           1 of 3"), "{info}");
    let parts = ["a.0-of-3.sep", "a.1-of-3.sep", "a.2-of-3.sep"];
    let mut args = vec!["concat"];
    args.extend(parts);
    args.extend(["-o", "joined.sep"]);
    ok(&sep(d, &args));
    assert_eq!(fs::read(d.join("joined.sep")).unwrap(), whole);
    // Out of order: one line, no output.
    let r = sep(
        d,
        &["concat", parts[1], parts[0], parts[2], "-o", "bad.sep"],
    );
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("out of order"), "{}", r.stderr);
    assert!(!d.join("bad.sep").exists());
    usage_fails(&sep(d, &["--shard", "3/3", "a"]), "I/N");
}

#[test]
fn completions_and_man_page_come_from_the_definition() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let r = sep(d, &["completions", "bash"]);
    ok(&r);
    let script = String::from_utf8(r.stdout).unwrap();
    assert!(
        script.contains("complete") && script.contains("--shard"),
        "{script}"
    );
    let r = sep(d, &["manpage"]);
    ok(&r);
    let man = String::from_utf8(r.stdout).unwrap();
    assert!(
        man.contains(".TH sep") && man.contains("decompress"),
        "{man}"
    );
    usage_fails(&sep(d, &["completions", "tcsh"]), "tcsh");
}
