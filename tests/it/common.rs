//! Helpers shared by the end-to-end tests: run the real `sep` binary, find the corpora.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

// The generators the library's unit tests use, from the same file.
#[path = "../../src/testing.rs"]
mod testing;
pub use testing::{mandelbrot_bitmap, smooth_field, smooth_raster, stft_basis, xorshift};

/// Result of one run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Runs `sep args...` in `dir` with `stdin` bytes and extra environment variables.
pub fn sep_env(dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sep"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("SEP_THREADS")
        .env_remove("SEP_KERNELS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn sep");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("wait sep");
    feeder.join().expect("feeder");
    Run {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Runs `sep args...` in `dir` with empty stdin.
pub fn sep(dir: &Path, args: &[&str]) -> Run {
    sep_env(dir, args, b"", &[])
}

/// Asserts a run succeeded.
pub fn ok(r: &Run) {
    assert_eq!(r.code, 0, "sep failed: {}", r.stderr);
}

/// Asserts a run failed the way users are promised: exit 1, one `sep: error:` line, no panic.
/// Text the context-mixing codec takes, `n` bytes, different per seed.
pub fn word_text(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed;
    let words = [
        "some", "words", "that", "scripts", "compress", "every", "day",
    ];
    let mut data = Vec::new();
    while data.len() < n {
        data.extend_from_slice(words[xorshift(&mut x) as usize % words.len()].as_bytes());
        data.push(if xorshift(&mut x).is_multiple_of(9) {
            b'\n'
        } else {
            b' '
        });
    }
    data.truncate(n);
    data
}

/// Asserts a usage error: `sep: error: ...` then the `--help` hint, exit status 1.
pub fn usage_fails(r: &Run, expect: &str) {
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", r.stderr);
    assert!(
        lines[0].starts_with("sep: error: ") && lines[0].contains(expect),
        "{}",
        r.stderr
    );
    assert_eq!(lines[1], "Try 'sep --help' for more information.");
}

pub fn fails_cleanly(r: &Run, expect: &str) {
    assert_eq!(r.code, 1, "expected exit 1, stderr: {}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {}", r.stderr);
    assert!(
        lines[0].starts_with("sep: error: "),
        "bad message: {}",
        lines[0]
    );
    assert!(
        lines[0].contains(expect),
        "message {:?} does not mention {expect:?}",
        lines[0]
    );
    assert!(!r.stderr.contains("panicked"));
}

/// Directory of the unpacked shared benchmark corpora (`../shared/corpora`, unpacked on first
/// use), for the few `#[ignore]`d tests that make a claim about those files; every other test
/// uses the committed test corpus (`test_corpus`).
pub fn corpora() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dest = root.join("target/corpora");
        let script = root.join("../shared/corpora/unpack");
        assert!(
            script.exists(),
            "the shared corpora are missing: expected {} (only the ignored tests need them)",
            script.display()
        );
        let st = Command::new("bash")
            .arg(&script)
            .arg(&dest)
            .stdout(Stdio::null())
            .status()
            .expect("run unpack");
        assert!(st.success(), "unpacking the corpora failed");
        dest
    })
}

/// One file of the test corpus as `corpora/test/MANIFEST.tsv` lists it.
struct Listed {
    name: String,
    size: u64,
    sha256: String,
}

fn manifest(root: &Path) -> Vec<Listed> {
    let text = std::fs::read_to_string(root.join("corpora/test/MANIFEST.tsv")).expect("manifest");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 7, "bad manifest line: {l}");
            Listed {
                name: f[0].to_string(),
                size: f[5].parse().expect("size"),
                sha256: f[6].to_string(),
            }
        })
        .collect()
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(data))
}

/// Whether `dir` holds every listed file with its size and sha256.
fn verified(dir: &Path, listed: &[Listed]) -> bool {
    listed.iter().all(|f| {
        let path = dir.join(&f.name);
        std::fs::metadata(&path).is_ok_and(|m| m.len() == f.size)
            && std::fs::read(&path).is_ok_and(|d| sha256_hex(&d) == f.sha256)
    })
}

/// Unpacks a ustar archive (regular files and directories only) into `dest`.
fn untar(tar: &[u8], dest: &Path) {
    let field = |h: &[u8]| {
        let end = h.iter().position(|&b| b == 0).unwrap_or(h.len());
        String::from_utf8(h[..end].to_vec()).expect("tar name")
    };
    let mut at = 0;
    while at + 512 <= tar.len() && tar[at..at + 512].iter().any(|&b| b != 0) {
        let h = &tar[at..at + 512];
        let (name, prefix) = (field(&h[..100]), field(&h[345..500]));
        let name = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let size = field(&h[124..136]);
        let size = usize::from_str_radix(size.trim(), 8).expect("tar size");
        assert!(
            !name.starts_with('/') && !name.split('/').any(|c| c == ".."),
            "unsafe tar path {name}"
        );
        let data = &tar[at + 512..at + 512 + size];
        match h[156] {
            b'0' | 0 => {
                let path = dest.join(&name);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                std::fs::write(&path, data).expect("write corpus file");
            }
            b'5' => std::fs::create_dir_all(dest.join(&name)).expect("mkdir"),
            t => panic!("tar entry {name}: type {t} not expected"),
        }
        at += 512 + size.div_ceil(512) * 512;
    }
}

/// Directory of the test corpus: real files of Debian and PyPI packages (prose, HTML, C, a man
/// page, x86-64 executables, trained float weights), committed as `corpora/test/corpus.tar.xz`
/// and listed in `corpora/test/MANIFEST.tsv`. Unpacked on first use into `target/test-corpus`,
/// every file checked against the manifest; test processes running at once each unpack into a
/// directory of their own and rename it into place, so none sees a half-written corpus.
pub fn test_corpus() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let listed = manifest(root);
        let dest = root.join("target/test-corpus");
        if verified(&dest, &listed) {
            return dest;
        }
        let xz = std::fs::read(root.join("corpora/test/corpus.tar.xz")).expect("corpus.tar.xz");
        let mut tar = Vec::new();
        std::io::Read::read_to_end(&mut liblzma::read::XzDecoder::new(&xz[..]), &mut tar)
            .expect("unpack corpus.tar.xz");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tag = format!("{}-{nanos}", std::process::id());
        let fresh = root.join(format!("target/test-corpus.new-{tag}"));
        untar(&tar, &fresh);
        assert!(
            verified(&fresh, &listed),
            "corpora/test/corpus.tar.xz does not match corpora/test/MANIFEST.tsv"
        );
        for _ in 0..10 {
            if std::fs::rename(&fresh, &dest).is_ok() {
                return dest;
            }
            // Another process put a corpus in place first: keep it if it is whole, else move
            // it aside (atomically) and try again.
            if verified(&dest, &listed) {
                std::fs::remove_dir_all(&fresh).ok();
                return dest;
            }
            let old = root.join(format!("target/test-corpus.old-{tag}"));
            if std::fs::rename(&dest, &old).is_ok() {
                std::fs::remove_dir_all(&old).ok();
            }
        }
        panic!(
            "could not put the test corpus in place at {}",
            dest.display()
        );
    })
}

/// The bytes of the repository's file `path` (e.g. `tests/data/conv.safetensors`).
pub fn repo_file(path: &str) -> Vec<u8> {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The bytes of `name` (e.g. `text/tar-NEWS`) in the test corpus.
pub fn corpus_file(name: &str) -> Vec<u8> {
    std::fs::read(test_corpus().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Names the files of one set (`text`, `binary`, `tensors`) of the test corpus.
pub fn corpus_files(set: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(test_corpus().join(set))
        .expect("corpus dir")
        .map(|e| e.expect("entry").path())
        .collect();
    v.sort();
    v
}

/// Names the files of one set of the shared benchmark corpora (ignored tests only).
pub fn shared_corpus_files(set: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpora().join(set))
        .expect("corpus dir")
        .map(|e| e.expect("entry").path())
        .collect();
    v.sort();
    v
}

/// Compresses `data` in a fresh directory with `args`, decompresses it and checks equality;
/// returns the archive bytes.
pub fn round_trip(data: &[u8], args: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("f"), data).expect("write");
    let mut c = vec!["compress", "-q", "f"];
    c.extend_from_slice(args);
    ok(&sep(dir.path(), &c));
    std::fs::remove_file(dir.path().join("f")).expect("rm");
    ok(&sep(dir.path(), &["decompress", "-q", "f.sep"]));
    let back = std::fs::read(dir.path().join("f")).expect("read back");
    assert!(
        back == data,
        "round trip changed the data ({} bytes)",
        data.len()
    );
    std::fs::read(dir.path().join("f.sep")).expect("archive")
}

/// Runs `sep args...` in `dir` under each (threads, kernels) setting, asserts every run gives
/// the same archive on stdout, and returns it.
pub fn compress_identically(dir: &Path, args: &[&str], runs: &[(&str, &str)]) -> Vec<u8> {
    let mut archives: Vec<Vec<u8>> = Vec::new();
    for &(threads, kernels) in runs {
        let r = sep_env(
            dir,
            args,
            b"",
            &[("SEP_THREADS", threads), ("SEP_KERNELS", kernels)],
        );
        ok(&r);
        assert!(
            archives.iter().all(|a| *a == r.stdout),
            "{args:?}: archives differ with {threads} threads / {kernels}"
        );
        archives.push(r.stdout);
    }
    archives.swap_remove(0)
}

/// Decompresses `archive` (in `dir`) to stdout under each (threads, kernels) setting and
/// asserts every output equals `data`.
pub fn decodes_everywhere(dir: &Path, archive: &str, data: &[u8], runs: &[(&str, &str)]) {
    decodes_everywhere_with(dir, &["decompress", "-q", "-c", archive], data, runs)
}

/// `decodes_everywhere` with the decompressing command's arguments given in full.
pub fn decodes_everywhere_with(dir: &Path, args: &[&str], data: &[u8], runs: &[(&str, &str)]) {
    for &(threads, kernels) in runs {
        let r = sep_env(
            dir,
            args,
            b"",
            &[("SEP_THREADS", threads), ("SEP_KERNELS", kernels)],
        );
        ok(&r);
        assert!(
            r.stdout == data,
            "{args:?}: decode with {threads} threads / {kernels} differs"
        );
    }
}

/// An archive of blocks (codec, declared original length, payload) whose every checksum but
/// the blocks' original ones is right (block i claims checksum i), with the header's block
/// size `block_size` and context-mixing configuration `cm` (default: the default level's).
pub fn crafted(
    cm: Option<Vec<u8>>,
    block_size: u64,
    blocks: &[(sep::Codec, u64, Vec<u8>)],
) -> Vec<u8> {
    use sep::internals::format::{
        checksum::xxh3_64, BlockRecord, DataHash, Header, TableEntry, Trailer,
    };
    let header = Header {
        version: sep::internals::format::VERSION,
        flags: 0,
        engine_version: sep::internals::engine::ENGINE_VERSION,
        block_size,
        cm_config: cm.unwrap_or_else(|| sep::internals::codecs::cm::CmConfig::default().to_bytes()),
        part: None,
        base: None,
    };
    let mut out = header.to_bytes();
    let (mut hash, mut table, mut total) = (DataHash::default(), Vec::new(), 0);
    for (i, (codec, raw_len, payload)) in blocks.iter().enumerate() {
        let rec = BlockRecord {
            codec: *codec,
            raw_len: *raw_len,
            payload_len: payload.len() as u64,
            raw_hash: i as u64,
            payload_hash: xxh3_64(payload),
        };
        table.push(TableEntry {
            offset: out.len() as u64,
            raw_len: *raw_len,
            payload_len: payload.len() as u64,
            codec: *codec,
        });
        rec.write(&mut out).unwrap();
        out.extend_from_slice(payload);
        hash.block(i as u64);
        total += raw_len;
    }
    let trailer = Trailer {
        total_len: total,
        data_hash: hash.digest(),
        table,
    };
    trailer.write(&mut out).unwrap();
    out
}

/// Decodes `archive` in memory at each of `runs`' thread counts and kernel levels, checking
/// that it gives `data` back (`what` names the case in a failure); leaves the kernels detected.
pub fn decodes_in_memory(archive: &[u8], data: &[u8], runs: &[(usize, sep::Kernels)], what: &str) {
    for &(threads, kernels) in runs {
        sep::set_kernels(kernels);
        let mut o = sep::Options::default();
        o.threads = threads;
        let mut out = Vec::new();
        sep::decompress_to_vec(archive, &mut out, &o).unwrap();
        assert!(out == data, "{what}: {threads} threads, {kernels:?}");
    }
    sep::set_kernels(sep::Kernels::detect());
}
