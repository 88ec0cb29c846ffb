//! Corpus table: sep vs xz -9e vs zstd -19 on real files, each timed in the same run.
//!
//! `cargo bench --bench corpus` runs every file of ../shared/corpora (unpacked to target/corpora);
//! `SEP_BENCH_FILES="text/book1 binary/obj2"` picks files (relative to target/corpora, or paths).
//! `SEP_BENCH_THREADS=N` runs sep with N threads (default: every core); `SEP_BENCH_REPS=N` times
//! every command (sep's and the other tools') N times and keeps the fastest, for noisy machines
//! (default 1). Prints a markdown table; `SEP_BENCH_OUT=path` also writes it to a file.

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

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters files by substring.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let sep = env!("CARGO_BIN_EXE_sep");
    let base = corpora();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (xz, zstd) = (tool_exists("xz"), tool_exists("zstd"));
    // `SEP_BENCH_THREADS=1` times sep on one core, like xz and zstd.
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
    let mut table = String::new();
    table.push_str(
        "| file | size | sep | xz -9e | zstd -19 | sep/xz | sep comp KB/s | sep decomp KB/s | xz comp KB/s | zstd comp KB/s | zstd decomp KB/s | sep peak MB |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut totals = [0u64; 4];
    for (name, path) in files(&base) {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let size = fs::metadata(&path).map(|m| m.len()).unwrap_or_else(|e| {
            panic!("{}: {e}", path.display());
        });
        let archive = tmp.path().join("a.sep");
        let back = tmp.path().join("back");
        let c = || {
            let mut c = Command::new(sep);
            c.args(["compress", "-q", "-f", "-c", "-T", &t_arg])
                .arg(&path);
            c
        };
        let comp = best_of(reps, c, &archive).expect("sep compress failed");
        let sep_size = fs::metadata(&archive).expect("archive").len();
        let d = || {
            let mut d = Command::new(sep);
            d.args(["decompress", "-q", "-f", "-c", "-T", &t_arg])
                .arg(&archive);
            d
        };
        let dec = best_of(reps, d, &back).expect("sep decompress failed");
        assert!(same_bytes(&back, &path), "{name}: round trip differs");
        let other = |tool: &str, args: &[&str]| -> Option<(u64, f64)> {
            let out = tmp.path().join("other");
            let c = || {
                let mut c = Command::new(tool);
                c.args(args).arg(&path);
                c
            };
            let m = best_of(reps, c, &out)?;
            Some((fs::metadata(&out).ok()?.len(), m.secs))
        };
        let xz_r = if xz {
            other("xz", &["-9e", "-k", "-c", "-T1"])
        } else {
            None
        };
        let zs_r = if zstd {
            other("zstd", &["-19", "-c", "-q", "--single-thread"])
        } else {
            None
        };
        // zstd -d on the archive `other` left (zstd ran last).
        let zs_d = zs_r.and_then(|_| {
            let c = || {
                let mut c = Command::new("zstd");
                c.args(["-d", "-c", "-q"]).arg(tmp.path().join("other"));
                c
            };
            best_of(reps, c, &tmp.path().join("other.back")).map(|m| m.secs)
        });
        let ratio = |c: u64| size as f64 / c.max(1) as f64;
        let kbs = |secs: f64| size as f64 / 1000.0 / secs.max(1e-9);
        let cell =
            |r: Option<(u64, f64)>, f: &dyn Fn((u64, f64)) -> String| r.map_or("-".into(), f);
        totals[0] += size;
        totals[1] += sep_size;
        totals[2] += xz_r.map_or(0, |r| r.0);
        totals[3] += zs_r.map_or(0, |r| r.0);
        let row = format!(
            "| {name} | {size} | {:.3} | {} | {} | {} | {:.0} | {:.0} | {} | {} | {} | {:.0} |\n",
            ratio(sep_size),
            cell(xz_r, &|r| format!("{:.3}", ratio(r.0))),
            cell(zs_r, &|r| format!("{:.3}", ratio(r.0))),
            cell(xz_r, &|r| format!("{:.3}", r.0 as f64 / sep_size as f64)),
            kbs(comp.secs),
            kbs(dec.secs),
            cell(xz_r, &|r| format!("{:.0}", kbs(r.1))),
            cell(zs_r, &|r| format!("{:.0}", kbs(r.1))),
            zs_d.map_or("-".into(), |t| format!("{:.0}", kbs(t))),
            comp.peak_kib.max(dec.peak_kib) as f64 / 1024.0,
        );
        eprint!("{row}");
        table.push_str(&row);
    }
    table.push_str(&format!(
        "| **total** | {} | {:.3} | {} | {} | {} | | | | | | |\n",
        totals[0],
        totals[0] as f64 / totals[1].max(1) as f64,
        if xz {
            format!("{:.3}", totals[0] as f64 / totals[2].max(1) as f64)
        } else {
            "-".into()
        },
        if zstd {
            format!("{:.3}", totals[0] as f64 / totals[3].max(1) as f64)
        } else {
            "-".into()
        },
        if xz {
            format!("{:.3}", totals[2] as f64 / totals[1].max(1) as f64)
        } else {
            "-".into()
        },
    ));
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let header = format!(
        "Ratios are original/archive (higher is better); sep/xz is xz's archive size over sep's \
         (above 1: sep is smaller). sep ran with {threads} threads (`-T`); xz and zstd single-threaded. \
         Each time is the fastest of {reps} run(s). Machine: {cpu}, {cores} cores.\n\n"
    );
    println!("{header}{table}");
    if let Ok(out) = std::env::var("SEP_BENCH_OUT") {
        fs::write(&out, format!("{header}{table}")).expect("write SEP_BENCH_OUT");
    }
}
