//! The `sep` command line: arguments, files, progress, messages and exit codes.

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sep::{Error, Options, SimdLevel, Stats};
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[cfg(target_os = "linux")]
mod huge;
mod signals;
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOC: huge::HugePages = huge::HugePages;

/// sep: neural lossless compression.
#[derive(Parser)]
#[command(name = "sep", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compress FILE (or stdin) into FILE.sep; the input is kept.
    Compress(CompressArgs),
    /// Decompress FILE.sep (or stdin) into FILE; the archive is kept.
    Decompress(DecompressArgs),
    /// Show an archive's header, model and blocks.
    Info {
        /// The archive to describe.
        file: PathBuf,
    },
}

#[derive(Args)]
struct CommonArgs {
    /// Input file; `-` or nothing reads standard input.
    file: Option<PathBuf>,
    /// Write the output to OUT (`-` for standard output).
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Write to standard output.
    #[arg(short = 'c', long)]
    stdout: bool,
    /// Overwrite an existing output file; write compressed data to a terminal.
    #[arg(short, long)]
    force: bool,
    /// No progress bar and no summary.
    #[arg(short, long)]
    quiet: bool,
    /// Worker threads (default: all cores).
    #[arg(short = 'T', long, env = "SEP_THREADS", value_name = "N")]
    threads: Option<usize>,
}

#[derive(Args)]
struct CompressArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Compression level: 1 is fastest, 9 smallest (also -1 .. -9, --fast = -1, --best = -9;
    /// default 6).
    #[arg(long, value_name = "N")]
    level: Option<u8>,
    /// Maximum bytes per independent block (suffixes K, M, G).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    block_size: Option<u64>,
    /// Backbone network of the predictor.
    #[arg(long, value_enum, default_value = "pac")]
    model: ModelArg,
    /// The input is a raw array of this float type (f32, f16, bf16, f64): code it on the tensor
    /// path. safetensors and .npy files are recognised without it.
    #[arg(long, value_name = "TYPE")]
    dtype: Option<sep::DType>,
}

#[derive(Args)]
struct DecompressArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Refuse archives whose blocks may be larger than this (suffixes K, M, G; default 256M).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    memory: Option<u64>,
}

/// Backbones selectable on the command line.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ModelArg {
    /// PAC-style MLP over SEP patch features.
    Pac,
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

/// A message for the user; printed as `sep: error: ...`.
struct Failure(String);

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e.to_string())
    }
}

fn io_message(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    }
}

fn with_path(path: &Path, e: Error) -> Failure {
    match e {
        Error::Io(io) => Failure(format!("{}: {}", path.display(), io_message(&io))),
        e @ Error::MemoryLimit { .. } => {
            Failure(format!("{}: {e} (--memory raises it)", path.display()))
        }
        other => Failure(format!("{}: {other}", path.display())),
    }
}

fn is_stdio(p: &Option<PathBuf>) -> bool {
    p.as_deref().is_none_or(|p| p == Path::new("-"))
}

/// Where the input comes from: a mapped file, a streamed file or standard input.
enum Input {
    /// A regular file, mapped: its blocks are coded in place and their pages given back as
    /// each finishes, so resident memory does not grow with it.
    Mapped(memmap2::Mmap),
    Empty,
    Stream(Box<dyn Read>),
}

impl Input {
    fn open(path: &Option<PathBuf>) -> Result<(Input, Option<u64>, String), Failure> {
        let Some(path) = path.as_ref().filter(|_| !is_stdio(path)) else {
            return Ok((
                Input::Stream(Box::new(io::stdin().lock())),
                None,
                "stdin".into(),
            ));
        };
        let name = path.display().to_string();
        let meta =
            std::fs::metadata(path).map_err(|e| Failure(format!("{name}: {}", io_message(&e))))?;
        if meta.is_dir() {
            return Err(Failure(format!("{name}: is a directory")));
        }
        let file = File::open(path).map_err(|e| Failure(format!("{name}: {}", io_message(&e))))?;
        if !meta.is_file() {
            return Ok((Input::Stream(Box::new(file)), None, name));
        }
        if meta.len() == 0 {
            return Ok((Input::Empty, Some(0), name));
        }
        signals::mapping(&name);
        // SAFETY: the map is only read; a file another process truncates while it is read
        // faults, which `signals` turns into an error (and checksums catch a changed one).
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| Failure(format!("{name}: {}", io_message(&e))))?;
        Ok((Input::Mapped(map), Some(meta.len()), name))
    }

    /// A reader of the input.
    fn reader(&mut self) -> Box<dyn Read + '_> {
        match self {
            Input::Mapped(m) => Box::new(&m[..]),
            Input::Empty => Box::new(io::empty()),
            Input::Stream(r) => Box::new(r),
        }
    }
}

/// Whether `meta` is a block device (a disk: written only with `-f`).
fn is_block_device(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        meta.file_type().is_block_device()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Where the output goes: standard output, a device or pipe written in place, or a temporary
/// file renamed into place on success.
enum Output {
    Stdout,
    /// An existing file that is not a regular file (`/dev/null`, a FIFO): renaming over it
    /// would replace it, so it is written directly.
    Special(File),
    File {
        tmp: tempfile::NamedTempFile,
        dest: PathBuf,
        force: bool,
    },
}

impl Output {
    fn create(dest: Option<PathBuf>, force: bool) -> Result<Output, Failure> {
        let Some(dest) = dest else {
            return Ok(Output::Stdout);
        };
        if dest.is_dir() {
            return Err(Failure(format!("{}: is a directory", dest.display())));
        }
        if let Ok(meta) = std::fs::metadata(&dest) {
            if !meta.is_file() && (force || !is_block_device(&meta)) {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&dest)
                    .map_err(|e| Failure(format!("{}: {}", dest.display(), io_message(&e))))?;
                return Ok(Output::Special(f));
            }
        }
        if !force && dest.symlink_metadata().is_ok() {
            return Err(Failure(format!(
                "{}: already exists (use -f to overwrite)",
                dest.display()
            )));
        }
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Named after its destination and recognisable, should a SIGKILL leave it behind.
        let name = dest.file_name().unwrap_or_default().to_string_lossy();
        let tmp = signals::guarded(|| {
            let tmp = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(".sep-partial")
                .tempfile_in(&dir);
            let path = tmp.as_ref().ok().map(|t| t.path().to_path_buf());
            (tmp, path)
        })
        .map_err(|e| Failure(format!("{}: {}", dir.display(), io_message(&e))))?;
        Ok(Output::File { tmp, dest, force })
    }

    fn writer(&mut self) -> Box<dyn Write + '_> {
        match self {
            Output::Stdout => Box::new(BufWriter::with_capacity(WRITE_BUFFER, io::stdout().lock())),
            Output::Special(f) => Box::new(BufWriter::with_capacity(WRITE_BUFFER, f)),
            Output::File { tmp, .. } => {
                Box::new(BufWriter::with_capacity(WRITE_BUFFER, tmp.as_file_mut()))
            }
        }
    }

    /// Moves the finished temporary file to its destination; copies `mode_from`'s permissions.
    fn commit(self, mode_from: Option<&Path>) -> Result<(), Failure> {
        let Output::File { tmp, dest, force } = self else {
            return Ok(());
        };
        let name = dest.display().to_string();
        if let Some(perm) = mode_from
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.permissions())
        {
            tmp.as_file()
                .set_permissions(perm)
                .map_err(|e| Failure(format!("{name}: {}", io_message(&e))))?;
        }
        let result = signals::guarded(|| {
            let done = match force {
                true => tmp.persist(&dest).map(|_| ()),
                false => tmp.persist_noclobber(&dest).map(|_| ()),
            };
            (done, None)
        });
        result.map_err(|e| {
            if e.error.kind() == io::ErrorKind::AlreadyExists {
                Failure(format!("{name}: already exists (use -f to overwrite)"))
            } else {
                Failure(format!("{name}: {}", io_message(&e.error)))
            }
        })
    }
}

fn progress_bar(total: Option<u64>, quiet: bool) -> Option<ProgressBar> {
    if quiet || !io::stderr().is_terminal() {
        return None;
    }
    let bar = match total {
        Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template(
                "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    Some(bar)
}

fn options(threads: Option<usize>, bar: &Option<ProgressBar>) -> Result<Options, Failure> {
    sep::set_simd_level(SimdLevel::from_env()?);
    let mut opts = Options::default();
    if let Some(t) = threads {
        opts.threads = t;
    }
    if let Some(bar) = bar.clone() {
        opts.progress = Some(Arc::new(move |n| bar.inc(n)));
    }
    if let Some(bar) = bar.clone() {
        // Running ratio of the blocks written so far, shown next to the bar.
        let sizes = Arc::new(std::sync::Mutex::new((0u64, 0u64)));
        opts.on_block = Some(Arc::new(move |raw, archived| {
            if let Ok(mut s) = sizes.lock() {
                s.0 += raw;
                s.1 += archived;
                bar.set_message(format!("ratio {:.3}", s.0 as f64 / s.1.max(1) as f64));
            }
        }));
    }
    opts.validate()?;
    Ok(opts)
}

fn summary(name: &str, stats: &Stats, started: Instant, compressing: bool) {
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    let ratio = stats.original_bytes as f64 / stats.archive_bytes.max(1) as f64;
    let (from, to) = if compressing {
        (stats.original_bytes, stats.archive_bytes)
    } else {
        (stats.archive_bytes, stats.original_bytes)
    };
    eprintln!(
        "sep: {name}: {from} -> {to} bytes (ratio {ratio:.3}) in {secs:.2} s, {:.0} KB/s",
        stats.original_bytes as f64 / 1000.0 / secs
    );
}

/// Output destination: `None` is standard output.
fn destination(
    args: &CommonArgs,
    default: impl FnOnce(&Path) -> Result<PathBuf, Failure>,
) -> Result<Option<PathBuf>, Failure> {
    if args.stdout {
        return Ok(None);
    }
    match &args.output {
        Some(p) if p == Path::new("-") => Ok(None),
        Some(p) => Ok(Some(p.clone())),
        None if is_stdio(&args.file) => Ok(None),
        None => default(args.file.as_deref().unwrap_or(Path::new("-"))).map(Some),
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Output buffer size: it gathers the small writes (records, headers); blocks, which are
/// larger, go straight to the file instead of being copied through it (a 1 MiB buffer copied
/// every block under 1 MiB: 5% of decompressing a file of small tensors).
const WRITE_BUFFER: usize = 64 << 10;

/// Writer that remembers whether a write failed, so errors name the right file.
struct Tracked<W> {
    inner: W,
    failed: bool,
}

impl<W: Write> Write for Tracked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).inspect_err(|_| self.failed = true)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().inspect_err(|_| self.failed = true)
    }
}

/// Refuses to read and write the same file.
fn check_distinct(input: Option<&PathBuf>, dest: Option<&PathBuf>) -> Result<(), Failure> {
    match (input, dest) {
        (Some(i), Some(d)) if same_file(i, d) => Err(Failure(format!(
            "{}: input and output are the same file",
            d.display()
        ))),
        _ => Ok(()),
    }
}

/// One compression or decompression: opens the input, runs `codec` into a temporary output
/// that is renamed into place on success, prints the summary.
fn run_codec(
    c: &CommonArgs,
    dest: Option<PathBuf>,
    compressing: bool,
    configure: impl FnOnce(&mut Options) -> Result<(), Failure>,
    codec: impl FnOnce(&mut Input, &mut dyn Write, &Options) -> sep::Result<Stats>,
) -> Result<(), Failure> {
    let in_path = c.file.as_ref().filter(|_| !is_stdio(&c.file));
    check_distinct(in_path, dest.as_ref())?;
    if in_path.is_none() && io::stdin().is_terminal() && (!compressing || !c.force) {
        // As xz and zstd do: typed input is never what was meant (and would wait silently).
        return Err(Failure(
            match compressing {
                true => "refusing to read the data to compress from a terminal (redirect, or -f)",
                false => "refusing to read compressed data from a terminal",
            }
            .into(),
        ));
    }
    if compressing && dest.is_none() && io::stdout().is_terminal() && !c.force {
        return Err(Failure(
            "refusing to write compressed data to a terminal (use -o, redirect, or -f)".into(),
        ));
    }
    let (mut input, len, name) = Input::open(&c.file)?;
    let bar = progress_bar(if compressing { len } else { None }, c.quiet);
    let mut opts = options(c.threads, &bar)?;
    configure(&mut opts)?;
    let mut out = Output::create(dest.clone(), c.force)?;
    let started = Instant::now();
    let out_name = dest.clone().unwrap_or_else(|| PathBuf::from("stdout"));
    let stats = {
        let mut w = Tracked {
            inner: out.writer(),
            failed: false,
        };
        let result = codec(&mut input, &mut w, &opts).and_then(|s| {
            w.flush()?;
            Ok(s)
        });
        result.map_err(|e| {
            // A mapped file that shrank during the run reads as zeros up to its last page:
            // say so rather than call the data corrupt.
            let shrank = in_path
                .and_then(|p| std::fs::metadata(p).ok())
                .is_some_and(|m| Some(m.len()) != len);
            if shrank && !w.failed {
                return Failure(format!("{name}: the file changed while it was being read"));
            }
            let blame = if w.failed {
                out_name.as_path()
            } else {
                Path::new(&name)
            };
            with_path(blame, e)
        })?
    };
    out.commit(in_path.map(|p| p.as_path()))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if !c.quiet {
        summary(&name, &stats, started, compressing);
    }
    Ok(())
}

fn run_compress(args: CompressArgs) -> Result<(), Failure> {
    let c = &args.common;
    let dest = destination(c, |p| {
        let mut s = p.as_os_str().to_owned();
        s.push(".sep");
        Ok(PathBuf::from(s))
    })?;
    let configure = |opts: &mut Options| {
        if let Some(level) = args.level {
            opts.level = level;
        }
        if let Some(bs) = args.block_size {
            opts.block_size = bs;
        }
        opts.dtype = args.dtype;
        opts.backbone = match args.model {
            ModelArg::Pac => sep::Backbone::Pac,
        };
        opts.validate().map_err(Failure::from)
    };
    run_codec(c, dest, true, configure, |input, w, o| match input {
        Input::Mapped(m) => sep::compress_mapped(m, w, o),
        other => sep::compress(other.reader(), w, o),
    })
}

fn run_decompress(args: DecompressArgs) -> Result<(), Failure> {
    let c = &args.common;
    let dest = destination(c, |p| {
        match p.to_str().and_then(|s| s.strip_suffix(".sep")) {
            Some(stem) if !stem.is_empty() && !stem.ends_with('/') => Ok(PathBuf::from(stem)),
            _ => Err(Failure(format!(
                "{}: unknown suffix, expected .sep (use -o OUT or -c)",
                p.display()
            ))),
        }
    })?;
    run_codec(
        c,
        dest,
        false,
        |opts| {
            if let Some(m) = args.memory {
                opts.memory = m;
            }
            Ok(())
        },
        |input, w, o| match input {
            Input::Mapped(m) => sep::decompress_mapped(m, w, o),
            other => sep::decompress(other.reader(), w, o),
        },
    )
}

fn run_info(file: PathBuf) -> Result<(), Failure> {
    if file.is_dir() {
        return Err(Failure(format!("{}: is a directory", file.display())));
    }
    let f = File::open(&file).map_err(|e| with_path(&file, e.into()))?;
    let info = sep::inspect(io::BufReader::new(f)).map_err(|e| with_path(&file, e))?;
    let ratio = |orig: u64, arch: u64| orig as f64 / arch.max(1) as f64;
    let mut s = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        s,
        "archive:        {} ({} bytes)",
        file.display(),
        info.archive_bytes
    );
    let _ = writeln!(s, "format version: {}", info.version);
    let _ = writeln!(s, "engine version: {}", info.engine_version);
    let _ = writeln!(s, "level:          {}", info.level);
    let _ = writeln!(s, "neural codec:   {}", info.neural);
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
    io::stdout()
        .write_all(s.as_bytes())
        .map_err(|e| Failure(format!("stdout: {}", io_message(&e))))
}

/// The arguments with xz's level flags (`-1` .. `-9`, `--fast`, `--best`) spelt as `--level`.
fn level_flags(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut rest = false;
    args.map(|a| {
        let level = match a.to_str() {
            _ if rest => None,
            Some("--") => {
                rest = true;
                None
            }
            Some("--fast") => Some('1'),
            Some("--best") => Some('9'),
            Some(s) => match s.as_bytes() {
                [b'-', d @ b'1'..=b'9'] => Some(*d as char),
                _ => None,
            },
            None => None,
        };
        level.map_or(a, |d| format!("--level={d}").into())
    })
    .collect()
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(level_flags(std::env::args_os()));
    if let Err(e) = signals::watch() {
        eprintln!("sep: error: cannot watch for signals: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.cmd {
        Cmd::Compress(a) => run_compress(a),
        Cmd::Decompress(a) => run_decompress(a),
        Cmd::Info { file } => run_info(file),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg)) => {
            eprintln!("sep: error: {msg}");
            ExitCode::FAILURE
        }
    }
}
