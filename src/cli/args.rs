//! The command line's grammar: sep's subcommands and the xz/zstd form (`sep [-z|-d|-t|-l]
//! [flags] FILE...`), the level flags (`-1` .. `-9`) spelt out before clap reads them, and
//! the names sep answers to (`unsep` decompresses, `sepcat` decompresses to standard output).

use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  sep -k big.log               compress into big.log.sep (keep big.log)
  sep -d big.log.sep           decompress into big.log
  sep -9 -T0 a b               smallest archives, every core, one per file
  sep -t a.sep; sep -l a.sep   test an archive; list what it holds
  tar c dir | sep > dir.tar.sep
  sep compress FILE / sep decompress FILE.sep / sep info FILE.sep   (subcommands)";

/// sep: neural lossless compression.
#[derive(Parser)]
#[command(
    name = "sep",
    version,
    about,
    after_help = EXAMPLES,
    max_term_width = 100,
    args_conflicts_with_subcommands = true,
    args_override_self = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub mode: ModeFlags,
    #[command(flatten)]
    pub flags: Flags,
    /// Files to compress (or decompress, test, list); none or `-`: standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Compress FILEs (or stdin) into FILE.sep; the input is kept.
    Compress(SubArgs),
    /// Decompress FILE.sep (or stdin) into FILE; the archive is kept.
    Decompress(SubArgs),
    /// Show an archive's header, model and blocks.
    Info {
        /// The archive to describe.
        file: PathBuf,
    },
    /// Join parts written with --shard, in order, into the archive of the whole file.
    Concat {
        /// The parts, in order.
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// The archive to write.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Overwrite OUT if it exists.
        #[arg(short, long)]
        force: bool,
    },
    /// Train a pack (a pre-trained starting state of the model) on INPUTs (files, or
    /// directories: every file in them); compress with it by --pack PACK.
    Pretrain {
        /// Training files or directories.
        #[arg(required = true, value_name = "INPUT")]
        inputs: Vec<PathBuf>,
        /// The pack file to write.
        #[arg(short, long, value_name = "PACK")]
        output: PathBuf,
        /// The pack's name, recorded in archives (default: PACK's file name without extension).
        #[arg(long)]
        name: Option<String>,
        /// The kind of data it is for (text, code, markup, exe, ...).
        #[arg(long = "type", value_name = "NAME", default_value = "general")]
        kind: String,
        /// Where the training data came from (kept in the pack).
        #[arg(long, default_value = "")]
        description: String,
        /// The level whose model it starts, 2 .. 9 (default 6).
        #[arg(long, value_name = "N", default_value_t = 6)]
        level: u8,
        /// log2 of the model's context slots (16 bytes each): the pack's size and the table of
        /// every block compressed with it.
        #[arg(long, value_name = "N", default_value_t = 20)]
        table_log: u32,
        /// How much of the training data's end the pack keeps, which every block compressed
        /// with it continues (K, M suffixes).
        #[arg(long, value_name = "BYTES", default_value = "1M", value_parser = parse_size)]
        history: u64,
        /// A pre-trained network (pretrained/export.py) for the pack to carry: blocks that start
        /// from the pack mix in its predictions.
        #[arg(long, value_name = "FILE")]
        net: Option<PathBuf>,
        /// A built-in pack (`text`) whose tables the pack shares: training starts from them and
        /// the pack holds only what depends on its level and network, so it is small (its
        /// table size and history are the base's).
        #[arg(long, value_name = "NAME")]
        base: Option<String>,
        /// Overwrite PACK if it exists.
        #[arg(short, long)]
        force: bool,
        /// No progress bar and no summary line.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    Manpage,
}

/// The operation of the xz form (compress unless told otherwise).
#[derive(Args, Default)]
#[group(multiple = false)]
pub struct ModeFlags {
    /// Compress (the default).
    #[arg(short = 'z', long)]
    pub compress: bool,
    /// Decompress.
    #[arg(short = 'd', long, visible_alias = "uncompress")]
    pub decompress: bool,
    /// Decompress and verify, writing nothing.
    #[arg(short = 't', long)]
    pub test: bool,
    /// List each archive's sizes, ratio, codecs and level (-lv: every block).
    #[arg(short = 'l', long)]
    pub list: bool,
}

#[derive(Args, Default)]
pub struct SubArgs {
    #[command(flatten)]
    pub flags: Flags,
    /// Input files; none or `-`: standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Args, Default, Clone)]
pub struct Flags {
    /// Write to standard output.
    #[arg(short = 'c', long, visible_alias = "to-stdout")]
    pub stdout: bool,
    /// Write the output to OUT (one input only; `-`: standard output).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Overwrite existing outputs; compress FILE.sep again; write archives to a terminal.
    #[arg(short, long)]
    pub force: bool,
    /// Keep the input files (the default; for scripts written for xz).
    #[arg(short, long, conflicts_with = "rm")]
    pub keep: bool,
    /// Remove each input file once its output is written.
    #[arg(long)]
    pub rm: bool,
    /// Into directories: every file in them.
    #[arg(short, long)]
    pub recursive: bool,
    /// Level, 1 (fastest) .. 9 (smallest); also -1 .. -9, --fast, --best (default 6).
    #[arg(long, value_name = "N")]
    pub level: Option<u8>,
    /// Worker threads; 0: every core (the default).
    #[arg(short = 'T', long, env = "SEP_THREADS", value_name = "N")]
    pub threads: Option<usize>,
    /// No progress bar, no summary, no warnings.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// A summary per file even when stderr is not a terminal (-lv: every block).
    #[arg(short, long)]
    pub verbose: bool,
    /// Most bytes per independent block when compressing (suffixes K, M, G).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub block_size: Option<u64>,
    /// Most memory decoding may take; an archive that needs more is refused (default 1G).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Compress only part I (from 0) of N of FILE, for `sep concat` to join.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<(u32, u32)>,
    /// Decompress only original bytes START..END (suffixes K, M, G), reading only the blocks
    /// that cover them.
    #[arg(long, value_name = "START:END", value_parser = parse_range)]
    pub range: Option<std::ops::Range<u64>>,
    /// The input is a raw array of this float type (f32, f16, bf16, f64, f8e4m3, f8e5m2).
    #[arg(long, value_name = "TYPE")]
    pub dtype: Option<sep::DType>,
    /// Start the model from this pack (`sep pretrain`); decompressing, the pack an archive
    /// needs (also found in the directory SEP_PACKS names). `auto` (the default): for text,
    /// the level's built-in pack (`text` at the default level; at level 9 `text9` or `code9`,
    /// whose network suits the file); `none`: no pack; `text`, `text9`, `code9`: that
    /// built-in pack.
    #[arg(long, value_name = "PATH|auto|none|NAME")]
    pub pack: Option<PathBuf>,
    /// The predictor's network: `auto` (the default) runs the pack's pre-trained network
    /// where it has one, else the level's own (level 9); `none` runs none, at any level.
    #[arg(
        long,
        value_name = "auto|none",
        value_enum,
        default_value = "auto",
        hide_possible_values = true
    )]
    pub net: NetArg,
    /// Code each float tensor of FILE against the same tensor of BASE, an earlier checkpoint;
    /// decompressing, the base the archive was made against.
    #[arg(long, value_name = "BASE")]
    pub patch_from: Option<PathBuf>,
}

/// The network choices of the command line.
#[derive(Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum NetArg {
    /// The pack's pre-trained network, else the level's own.
    #[default]
    Auto,
    /// No network.
    None,
}

/// Parses a byte count with an optional K/M/G (binary) suffix.
fn parse_size(s: &str) -> Result<u64, String> {
    let (num, shift) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 10),
        Some((i, 'm' | 'M')) => (&s[..i], 20),
        Some((i, 'g' | 'G')) => (&s[..i], 30),
        _ => (s, 0),
    };
    let n: u64 = num.parse().map_err(|_| format!("not a size: {s}"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("too large: {s}"))
}

/// Parses `I/N`: part I (from 0) of N.
fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("not I/N with 0 <= I < N: {s}");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    match i < n {
        true => Ok((i, n)),
        false => Err(bad()),
    }
}

/// Parses `START:END` byte offsets (each with an optional K/M/G suffix).
fn parse_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("not START:END: {s}"))?;
    let (start, end) = (parse_size(a)?, parse_size(b)?);
    match start <= end {
        true => Ok(start..end),
        false => Err(format!("the range ends before it starts: {s}")),
    }
}

/// The name sep was run as: `unsep` decompresses, `sepcat` decompresses to standard output.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Personality {
    Sep,
    Unsep,
    Sepcat,
}

impl Personality {
    pub fn of(argv0: Option<&OsString>) -> Self {
        let name = argv0
            .map(std::path::Path::new)
            .and_then(|p| p.file_stem())
            .and_then(|s| s.to_str())
            .unwrap_or("sep");
        match name {
            "unsep" => Personality::Unsep,
            "sepcat" => Personality::Sepcat,
            _ => Personality::Sep,
        }
    }
}

/// Short options that take a value (the rest of a cluster, or the next argument, is theirs).
const VALUED: &[char] = &['o', 'T'];

/// The arguments with the level flags spelt `--level=N`: `-N` (a digit run, as in `-9` or
/// `-k9`; the last wins), `--fast` and `--best`. A digit run that is not 1..9 is kept as
/// `--level=NN`, which the level check then refuses in one line.
pub fn normalise(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut rest = false;
    let mut value_next = false;
    for a in args {
        let s = match a.to_str() {
            Some(s) if !rest && !value_next => s.to_string(),
            _ => {
                value_next = false;
                out.push(a);
                continue;
            }
        };
        match s.as_str() {
            "--" => {
                rest = true;
                out.push(a);
            }
            "--fast" => out.push("--level=1".into()),
            "--best" => out.push("--level=9".into()),
            _ if s.starts_with("--") || !s.starts_with('-') || s == "-" => {
                value_next = matches!(s.as_str(), "--output" | "--threads" | "--level");
                out.push(a)
            }
            _ => {
                // A cluster of short flags: pull out the digit runs.
                let mut kept = String::from("-");
                let mut level: Option<String> = None;
                let mut chars = s[1..].chars().peekable();
                while let Some(c) = chars.next() {
                    if c.is_ascii_digit() {
                        let mut run = c.to_string();
                        while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                            run.push(d);
                            chars.next();
                        }
                        level = Some(run);
                    } else if VALUED.contains(&c) {
                        kept.push(c);
                        kept.extend(chars.by_ref());
                        value_next = kept.ends_with(c);
                    } else {
                        kept.push(c);
                    }
                }
                if kept.len() > 1 {
                    out.push(kept.into());
                }
                if let Some(l) = level {
                    out.push(format!("--level={l}").into());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(args: &[&str]) -> Vec<String> {
        normalise(args.iter().map(OsString::from))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn level_flags_are_spelt_out() {
        assert_eq!(norm(&["-9", "f"]), ["--level=9", "f"]);
        assert_eq!(norm(&["-k9d", "f"]), ["-kd", "--level=9", "f"]);
        assert_eq!(norm(&["-1", "-9"]), ["--level=1", "--level=9"]);
        assert_eq!(norm(&["-19"]), ["--level=19"]);
        assert_eq!(norm(&["--best", "--fast"]), ["--level=9", "--level=1"]);
        // Values of -T and -o are not levels, in the cluster or after it.
        assert_eq!(norm(&["-T2", "-9"]), ["-T2", "--level=9"]);
        assert_eq!(norm(&["-kT", "4", "f"]), ["-kT", "4", "f"]);
        assert_eq!(norm(&["-o", "-5", "f"]), ["-o", "-5", "f"]);
        assert_eq!(norm(&["--", "-9"]), ["--", "-9"]);
        assert_eq!(norm(&["-"]), ["-"]);
    }
}
