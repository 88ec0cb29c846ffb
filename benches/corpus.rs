//! Corpus table: sep next to the anchor tools (zpaq -m5, bzip3, xz -9e, zstd -19, each where it is
//! installed) on real files, every tool timed in the same run.
//!
//! `cargo bench --bench corpus` runs every file of ../shared/corpora (unpacked to target/corpora);
//! `SEP_BENCH_FILES="text/book1 binary/obj2"` picks files (relative to target/corpora, or paths).
//! `SEP_BENCH_THREADS=N` runs sep with N threads (default: every core); `SEP_BENCH_REPS=N` times
//! every command (sep's and the other tools') N times and keeps the fastest, for noisy machines
//! (default 1). `SEP_BENCH_LEVELS="1 9 9:none"` also runs sep at those levels (`N:none`: with
//! `--net none`) and adds a levels table (totals over the files, next to the anchors' totals). The
//! pack column is sep with `--pack none` (its default is the automatic pack); `SEP_BENCH_PACK=0`
//! leaves it out. Prints markdown tables; `SEP_BENCH_OUT=path` also writes them to a file.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Wall time and peak resident memory of one finished child process.
struct Measured {
    secs: f64,
    peak_kib: u64,
}

/// Runs `cmd` with stdout into `out`, returns its time and peak RSS, or None if it failed.
fn measure(mut cmd: Command, out: &Path) -> Option<Measured> {
    let file = File::create(out).ok()?;
    cmd.stdout(Stdio::from(file))
        .stderr(Stdio::null())
        .stdin(Stdio::null());
    let start = Instant::now();
    let child = cmd.spawn().ok()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain old data; wait4 fills it for the child we just spawned.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = start.elapsed().as_secs_f64();
    if r != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return None;
    }
    Some(Measured {
        secs,
        peak_kib: usage.ru_maxrss as u64,
    })
}

/// `measure` of the command `make` builds, run `reps` times: the fastest time, the highest peak.
fn best_of(reps: usize, make: impl Fn() -> Command, out: &Path) -> Option<Measured> {
    let mut best: Option<Measured> = None;
    for _ in 0..reps.max(1) {
        let m = measure(make(), out)?;
        best = Some(match best {
            Some(b) => Measured {
                secs: b.secs.min(m.secs),
                peak_kib: b.peak_kib.max(m.peak_kib),
            },
            None => m,
        });
    }
    best
}

/// Whether two files hold the same bytes, compared a piece at a time: reading them whole would
/// grow this process, and a child's peak memory (`ru_maxrss`) starts from its parent's.
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let open = |p: &Path| std::io::BufReader::with_capacity(1 << 20, File::open(p).expect("open"));
    let (mut x, mut y) = (open(a), open(b));
    let (mut bx, mut by) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = x.read(&mut bx).expect("read");
        if n == 0 {
            return y.read(&mut by[..1]).expect("read") == 0;
        }
        if y.read_exact(&mut by[..n]).is_err() || bx[..n] != by[..n] {
            return false;
        }
    }
}

fn tool_exists(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn corpora() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dest = root.join("target/corpora");
    let st = Command::new("bash")
        .arg(root.join("../shared/corpora/unpack"))
        .arg(&dest)
        .stdout(Stdio::null())
        .status();
    assert!(
        matches!(st, Ok(s) if s.success()),
        "cannot unpack ../shared/corpora"
    );
    dest
}

fn files(base: &Path) -> Vec<(String, PathBuf)> {
    if let Ok(list) = std::env::var("SEP_BENCH_FILES") {
        return list
            .split([',', ' ', '\n'])
            .filter(|s| !s.is_empty())
            .map(|s| {
                let p = Path::new(s);
                let path = if p.exists() {
                    p.to_path_buf()
                } else {
                    base.join(s)
                };
                (s.to_string(), path)
            })
            .collect();
    }
    let mut v = Vec::new();
    for set in ["text", "binary", "tensors"] {
        let mut names: Vec<_> = fs::read_dir(base.join(set))
            .expect("corpus set")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            v.push((format!("{set}/{n}"), base.join(set).join(n)));
        }
    }
    v
}

/// A tool sep is compared with: how to compress a file into `out` and decompress `out` again.
struct Anchor {
    name: &'static str,
    /// Command compressing `input`; its archive is `archive(out)`.
    compress: fn(&Path, &Path) -> Command,
    /// Where the archive of `compress` lies, given the path its stdout went to.
    archive: fn(&Path) -> PathBuf,
    /// Command decompressing the archive (to stdout or into a folder next to it).
    decompress: fn(&Path) -> Command,
}

fn cmd(tool: &str, args: &[&str], file: &Path) -> Command {
    let mut c = Command::new(tool);
    c.args(args).arg(file);
    c
}

fn stdout_archive(out: &Path) -> PathBuf {
    out.to_path_buf()
}

/// The anchors, in table order. zpaq and bzip3 use every core, as sep does; xz and zstd one.
const ANCHORS: [Anchor; 4] = [
    Anchor {
        name: "zpaq -m5",
        compress: |input, out| {
            // zpaq adds to an archive that exists: each run starts without one.
            let _ = fs::remove_file(out.with_extension("zpaq"));
            let mut c = Command::new("zpaq");
            c.arg("a")
                .arg(out.with_extension("zpaq"))
                .arg(input)
                .arg("-m5");
            c
        },
        archive: |out| out.with_extension("zpaq"),
        decompress: |archive| {
            let mut c = Command::new("zpaq");
            c.arg("x")
                .arg(archive)
                .arg("-to")
                .arg(archive.with_extension("x"))
                .arg("-f");
            c
        },
    },
    Anchor {
        name: "bzip3",
        compress: |input, _| cmd("bzip3", &["-e", "-c"], input),
        archive: stdout_archive,
        decompress: |archive| cmd("bzip3", &["-d", "-c"], archive),
    },
    Anchor {
        name: "xz -9e",
        compress: |input, _| cmd("xz", &["-9e", "-k", "-c", "-T1"], input),
        archive: stdout_archive,
        decompress: |archive| cmd("xz", &["-d", "-c", "-T1"], archive),
    },
    Anchor {
        name: "zstd -19",
        compress: |input, _| cmd("zstd", &["-19", "-c", "-q", "--single-thread"], input),
        archive: stdout_archive,
        decompress: |archive| cmd("zstd", &["-d", "-c", "-q"], archive),
    },
];

fn tool_of(a: &Anchor) -> &'static str {
    a.name.split(' ').next().unwrap_or(a.name)
}

/// The table's first two lines: sep's columns (with `--pack none` where `pack_column`), then
/// each anchor's.
fn table_head(anchors: &[&Anchor], pack_column: bool) -> String {
    let mut table = String::from("| file | size | sep |");
    if pack_column {
        table.push_str(" sep --pack none |");
    }
    for a in anchors {
        table.push_str(&format!(" {} |", a.name));
    }
    table.push_str(" sep comp KB/s | sep decomp KB/s |");
    for a in anchors {
        table.push_str(&format!(" {} comp / dec KB/s |", a.name));
    }
    table.push_str(" sep peak MB |\n|---|");
    table.push_str(&"---:|".repeat(5 + 2 * anchors.len() + pack_column as usize));
    table.push('\n');
    table
}

/// The extra runs `SEP_BENCH_LEVELS` asks for: each a level, without a network where written
/// `N:none`.
fn extra_runs() -> Vec<Vec<String>> {
    std::env::var("SEP_BENCH_LEVELS")
        .map(|l| {
            l.split_whitespace()
                .map(|x| match x.split_once(':') {
                    Some((n, net)) => vec![format!("-{n}"), "--net".into(), net.into()],
                    None => vec![format!("-{x}")],
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The processor's model name, from /proc/cpuinfo.
fn cpu_name() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The table of the extra runs' totals over `original` bytes, beside sep's default run (its
/// archive bytes, and compress seconds, decompress seconds and peak KiB) and the anchors'.
fn levels_table(
    original: u64,
    levels: &[Vec<String>],
    level_totals: &[(u64, f64, f64, u64)],
    default_run: (u64, (f64, f64, u64)),
    anchors: &[&Anchor],
    anchor_totals: &[(u64, f64, f64)],
) -> String {
    let mut table = String::new();

    let ratio = |b: u64| original as f64 / b.max(1) as f64;
    table.push_str(
        "\nLevels, totals over the files above:\n\n| run | archive bytes | ratio | \
             compress s | decompress s | peak MB |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut rows: Vec<(String, u64, f64, f64, String)> = levels
        .iter()
        .zip(level_totals)
        .map(|(l, t)| {
            let peak = format!("{:.0}", t.3 as f64 / 1024.0);
            (format!("sep {}", l.join(" ")), t.0, t.1, t.2, peak)
        })
        .collect();
    let (default_bytes, (c, d, p)) = default_run;
    let peak = format!("{:.0}", p as f64 / 1024.0);
    rows.push(("sep (default)".into(), default_bytes, c, d, peak));
    for (a, t) in anchors.iter().zip(anchor_totals) {
        rows.push((a.name.to_string(), t.0, t.1, t.2, "-".into()));
    }
    for (name, bytes, c, d, peak) in rows {
        table.push_str(&format!(
            "| {name} | {bytes} | {:.3} | {c:.1} | {d:.1} | {peak} |\n",
            ratio(bytes)
        ));
    }
    table
}

/// Archive size, compress and decompress time of one anchor on one file.
struct Run {
    bytes: u64,
    comp: f64,
    dec: f64,
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters files by substring.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let sep = env!("CARGO_BIN_EXE_sep");
    let base = corpora();
    let tmp = tempfile::tempdir().expect("tempdir");
    let anchors: Vec<&Anchor> = ANCHORS
        .iter()
        .filter(|a| tool_exists(tool_of(a)) || tool_of(a) == "zpaq" && zpaq_exists())
        .collect();
    // `SEP_BENCH_THREADS=1` times sep on one core.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = std::env::var("SEP_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(cores);
    let t_arg = threads.to_string();
    let reps: usize = std::env::var("SEP_BENCH_REPS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    let pack_column = std::env::var("SEP_BENCH_PACK").map_or(true, |v| v != "0");
    let mut table = table_head(&anchors, pack_column);
    let mut totals = vec![0u64; 2 + anchors.len()];
    let mut unpacked_total = 0u64;
    // Per extra level, and per anchor: total archive bytes, compress and decompress seconds,
    // peak KiB.
    let levels = extra_runs();
    let mut level_totals = vec![(0u64, 0f64, 0f64, 0u64); levels.len()];
    let mut anchor_totals = vec![(0u64, 0f64, 0f64); anchors.len()];
    let mut default_totals = (0f64, 0f64, 0u64);
    for (name, path) in files(&base) {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let size = fs::metadata(&path).map(|m| m.len()).unwrap_or_else(|e| {
            panic!("{}: {e}", path.display());
        });
        let archive = tmp.path().join("a.sep");
        let back = tmp.path().join("back");
        // sep with `flags` both ways, checked: compress and decompress times, archive bytes.
        let sep_run = |flags: &[&str]| {
            let mut args = vec!["compress", "-q", "-f", "-c", "-T", &t_arg];
            args.extend_from_slice(flags);
            let comp =
                best_of(reps, || cmd(sep, &args, &path), &archive).expect("sep compress failed");
            let d = ["decompress", "-q", "-f", "-c", "-T", &t_arg];
            let dec =
                best_of(reps, || cmd(sep, &d, &archive), &back).expect("sep decompress failed");
            assert!(
                same_bytes(&back, &path),
                "{name} {flags:?}: round trip differs"
            );
            (comp, dec, fs::metadata(&archive).expect("archive").len())
        };
        let (comp, dec, sep_size) = sep_run(&[]);
        let unpacked = pack_column.then(|| sep_run(&["--pack", "none"]).2);
        let runs: Vec<Option<Run>> = anchors
            .iter()
            .map(|a| {
                let out = tmp.path().join("other");
                let c = best_of(reps, || (a.compress)(&path, &out), &out)?;
                let archive = (a.archive)(&out);
                let bytes = fs::metadata(&archive).ok()?.len();
                let d = best_of(reps, || (a.decompress)(&archive), &back)?;
                Some(Run {
                    bytes,
                    comp: c.secs,
                    dec: d.secs,
                })
            })
            .collect();
        for (flags, t) in levels.iter().zip(&mut level_totals) {
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            let (comp, dec, bytes) = sep_run(&flags);
            t.0 += bytes;
            t.1 += comp.secs;
            t.2 += dec.secs;
            t.3 = t.3.max(comp.peak_kib.max(dec.peak_kib));
        }
        for (r, t) in runs.iter().zip(&mut anchor_totals) {
            if let Some(r) = r {
                t.0 += r.bytes;
                t.1 += r.comp;
                t.2 += r.dec;
            }
        }
        default_totals.0 += comp.secs;
        default_totals.1 += dec.secs;
        default_totals.2 = default_totals.2.max(comp.peak_kib.max(dec.peak_kib));
        let ratio = |c: u64| size as f64 / c.max(1) as f64;
        let kbs = |secs: f64| size as f64 / 1000.0 / secs.max(1e-9);
        totals[0] += size;
        totals[1] += sep_size;
        let mut row = format!("| {name} | {size} | {:.3} |", ratio(sep_size));
        if let Some(u) = unpacked {
            unpacked_total += u;
            row.push_str(&format!(" {:.3} |", ratio(u)));
        }
        for (i, r) in runs.iter().enumerate() {
            totals[2 + i] += r.as_ref().map_or(0, |r| r.bytes);
            row.push_str(&match r {
                Some(r) => format!(" {:.3} |", ratio(r.bytes)),
                None => " - |".into(),
            });
        }
        row.push_str(&format!(" {:.0} | {:.0} |", kbs(comp.secs), kbs(dec.secs)));
        for r in &runs {
            row.push_str(&match r {
                Some(r) => format!(" {:.0} / {:.0} |", kbs(r.comp), kbs(r.dec)),
                None => " - |".into(),
            });
        }
        row.push_str(&format!(
            " {:.0} |\n",
            comp.peak_kib.max(dec.peak_kib) as f64 / 1024.0
        ));
        eprint!("{row}");
        table.push_str(&row);
    }
    table.push_str(&format!("| **total** | {} |", totals[0]));
    let (first, rest) = totals[1..].split_at(1);
    let shown: Vec<u64> = match pack_column {
        true => [first, &[unpacked_total], rest].concat(),
        false => totals[1..].to_vec(),
    };
    for t in &shown {
        table.push_str(&format!(" {:.3} |", totals[0] as f64 / (*t).max(1) as f64));
    }
    table.push_str(&" |".repeat(3 + anchors.len()));
    table.push('\n');
    let cpu = cpu_name();
    let header = format!(
        "Ratios are original/archive (higher is better). sep ran with {threads} threads (`-T`), \
         zpaq -m5 and bzip3 with their defaults (every core), xz and zstd single-threaded. \
         Each time is the fastest of {reps} run(s); KB/s are of the original size. Machine: {cpu}, \
         {cores} cores.\n\n"
    );
    if !levels.is_empty() {
        let default_run = (totals[1], default_totals);
        table.push_str(&levels_table(
            totals[0],
            &levels,
            &level_totals,
            default_run,
            &anchors,
            &anchor_totals,
        ));
    }
    println!("{header}{table}");
    if let Ok(out) = std::env::var("SEP_BENCH_OUT") {
        fs::write(&out, format!("{header}{table}")).expect("write SEP_BENCH_OUT");
    }
}

/// zpaq has no `--version`; it prints its usage (and exits 0) when run bare.
fn zpaq_exists() -> bool {
    Command::new("zpaq")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}
