//! What sep tells the user: the progress bar, the summary after each file, and the archive
//! descriptions of `info` and `-l`. Sizes are in binary units everywhere (KiB, MiB).

use indicatif::{BinaryBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use sep::{Info, Stats};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// A progress bar on stderr when it is a terminal: with the total, rate and time left where the
/// total is known (compressing a file, decompressing an archive), a spinner otherwise.
pub fn progress_bar(total: Option<u64>, show: bool) -> Option<ProgressBar> {
    if !show {
        return None;
    }
    let bar = match total {
        Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template(
                "{bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta} \
                 {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{spinner} {binary_bytes} {binary_bytes_per_sec} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    Some(bar)
}

/// The line after a file: sizes from and to, ratio, time and rate (of the original bytes).
pub fn summary(name: &str, stats: &Stats, started: Instant, compressing: bool) {
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    let ratio = stats.original_bytes as f64 / stats.archive_bytes.max(1) as f64;
    let (from, to) = match compressing {
        true => (stats.original_bytes, stats.archive_bytes),
        false => (stats.archive_bytes, stats.original_bytes),
    };
    let rate = (stats.original_bytes as f64 / secs) as u64;
    // Decoding: the memory it held at once, which `--memory` must allow.
    let held = match compressing {
        true => String::new(),
        false => format!(", {} held", BinaryBytes(stats.memory_peak)),
    };
    eprintln!(
        "sep: {name}: {} -> {} (ratio {ratio:.3}) in {secs:.2} s, {}/s{held}",
        BinaryBytes(from),
        BinaryBytes(to),
        BinaryBytes(rate)
    );
}

fn ratio(orig: u64, arch: u64) -> f64 {
    orig as f64 / arch.max(1) as f64
}

/// The codecs of an archive's blocks, each once, in order of first use.
fn codecs(info: &Info) -> String {
    let mut names: Vec<&str> = Vec::new();
    for b in &info.blocks {
        if !names.contains(&b.codec.name()) {
            names.push(b.codec.name());
        }
    }
    match names.is_empty() {
        true => "-".into(),
        false => names.join(","),
    }
}

/// The header of `-l`'s table.
pub const LIST_HEADER: &str =
    "  Blocks   Compressed Uncompressed   Ratio Level  Codecs            Filename";

/// One line of `-l`: an archive's blocks, sizes, ratio, level, codecs and name.
pub fn list_line(info: &Info, name: &Path) -> String {
    format!(
        "{:>8} {:>12} {:>12} {:>7.3} {:>5}  {:<17} {}",
        info.blocks.len(),
        BinaryBytes(info.archive_bytes).to_string(),
        BinaryBytes(info.original_bytes).to_string(),
        ratio(info.original_bytes, info.archive_bytes),
        info.level,
        codecs(info),
        crate::files::shown(name)
    )
}

/// The total line of `-l` over several archives.
pub fn list_total(infos: &[Info]) -> String {
    let blocks: usize = infos.iter().map(|i| i.blocks.len()).sum();
    let arch: u64 = infos.iter().map(|i| i.archive_bytes).sum();
    let orig: u64 = infos.iter().map(|i| i.original_bytes).sum();
    format!(
        "{blocks:>8} {:>12} {:>12} {:>7.3} {:>5}  {:<17} {} files",
        BinaryBytes(arch).to_string(),
        BinaryBytes(orig).to_string(),
        ratio(orig, arch),
        "",
        "",
        infos.len()
    )
}

/// `sep info`'s (and `-lv`'s) description: header, model and the block table.
pub fn describe(info: &Info, name: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "archive:        {} ({} bytes)",
        crate::files::shown(name),
        info.archive_bytes
    );
    let _ = writeln!(s, "format version: {}", info.version);
    let _ = writeln!(s, "engine version: {}", info.engine_version);
    let _ = writeln!(s, "level:          {}", info.level);
    if let Some(p) = info.part {
        let _ = writeln!(
            s,
            "part:           {} of {} (from byte {} of {}; sep concat joins the parts)",
            p.index, p.count, p.start, p.whole_len
        );
    }
    let _ = writeln!(s, "cm codec:       {}", info.cm);
    if let Some((name, hash)) = &info.pack {
        let _ = writeln!(s, "pack:           {name} (sha256 {hash})");
    }
    if let Some((len, hash)) = &info.base {
        let _ = writeln!(
            s,
            "base:           {len} bytes (sha256 {hash}; --patch-from)"
        );
    }
    let _ = writeln!(s, "block size:     {} bytes", info.block_size);
    let _ = writeln!(s, "original size:  {} bytes", info.original_bytes);
    let _ = writeln!(
        s,
        "ratio:          {:.3}",
        ratio(info.original_bytes, info.archive_bytes)
    );
    let _ = writeln!(
        s,
        "checksum:       xxh3-64 {:016x} (of the block checksums)",
        info.checksum
    );
    let _ = writeln!(s, "blocks:         {}", info.blocks.len());
    let _ = writeln!(
        s,
        "{:>6} {:>12} {:<13} {:>12} {:>12} {:>7}",
        "block", "offset", "codec", "original", "archived", "ratio"
    );
    for (i, b) in info.blocks.iter().enumerate() {
        let _ = writeln!(
            s,
            "{i:>6} {:>12} {:<13} {:>12} {:>12} {:>7.3}",
            b.offset,
            b.codec.name(),
            b.original_bytes,
            b.payload_bytes,
            ratio(b.original_bytes, b.payload_bytes)
        );
    }
    s
}
