//! The `sep` command line: the operations on each file named (compress, decompress, test,
//! list), their options, and the messages and exit status (0: done; 1: an error; 2: only
//! warnings, as xz). The grammar is in `args`, files in `files`, messages in `report`.

use args::{Cli, Cmd, Flags, Personality};
use clap::{CommandFactory, Parser};
use files::{check_distinct, with_path, Input, Output};
use indicatif::ProgressBar;
use sep::{Error, Kernels, Options, Stats};
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

mod args;
mod files;
#[cfg(target_os = "linux")]
mod huge;
mod report;
mod signals;
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOC: huge::HugePages = huge::HugePages;

/// A message for the user; printed as `sep: error: ...`.
pub struct Failure(pub String);

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e.to_string())
    }
}

/// What is done to each file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Compress,
    Decompress,
    Test,
    List,
}

/// How one file ended, short of an error.
enum Done {
    Ok,
    /// Skipped, with a warning (exit status 2 unless something failed).
    Warned(String),
}

fn options(flags: &Flags, bar: &Option<ProgressBar>) -> Result<Options, Failure> {
    sep::set_kernels(Kernels::from_env()?);
    let mut opts = Options::default();
    if let Some(t) = flags.threads.filter(|&t| t > 0) {
        opts.threads = t;
    }
    if let Some(level) = flags.level {
        opts.level = level;
    }
    if let Some(bs) = flags.block_size {
        opts.block_size = bs;
    }
    if let Some(m) = flags.memory {
        opts.memory = m;
    }
    opts.dtype = flags.dtype;
    opts.pack = match flags.pack.as_deref() {
        Some(p) if p == Path::new("none") => sep::PackChoice::Off,
        Some(p) if p == Path::new("auto") => sep::PackChoice::Auto,
        // A built-in pack's name is a keyword like `auto` (`./text` is the file).
        Some(p) => match sep::builtin_packs()?
            .into_iter()
            .find(|(b, current)| *current && Path::new(b.name()) == p)
            .map(|(b, _)| b)
        {
            Some(b) => sep::PackChoice::Given(b),
            None => sep::PackChoice::Given(Arc::new(load_pack(p)?)),
        },
        None => sep::PackChoice::Auto,
    };
    // Read only when an archive needs a pack not otherwise given.
    if let Some(dir) = std::env::var_os("SEP_PACKS").filter(|d| !d.is_empty()) {
        opts.pack_lookup = Some(packs_in(PathBuf::from(dir)));
    }
    opts.network = flags.net == args::NetArg::Auto;
    if let Some(path) = &flags.patch_from {
        opts.base = Some(Arc::new(load_base(path)?));
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

/// Opens (maps) the base file of `--patch-from`, which must be a regular file (a device or a
/// pipe could have no end), and hashes it.
fn load_base(path: &Path) -> Result<sep::Base, Failure> {
    let bytes: Arc<dyn AsRef<[u8]> + Send + Sync> = match files::Input::open(&Some(path.into()))? {
        (files::Input::Mapped(map), _, _) => Arc::new(map),
        (files::Input::Empty, _, _) => Arc::new(Vec::new()),
        (files::Input::Stream(_), _, name) => {
            return Err(Failure(format!(
                "{name}: not a regular file (--patch-from needs one)"
            )))
        }
    };
    Ok(sep::Base::new(bytes))
}

/// Most bytes a network file may have.
const NETWORK_MAX: u64 = 64 << 20;

/// Reads `path`, which must be a regular file (a device or a pipe could have no end) of at
/// most `max` bytes, as a `what` must be.
fn read_regular(path: &Path, what: &str, max: u64) -> Result<Vec<u8>, Failure> {
    let meta = std::fs::metadata(path).map_err(|e| with_path(path, e.into()))?;
    if !meta.is_file() {
        return Err(Failure(format!(
            "{}: not a regular file (a {what} must be one)",
            files::shown(path)
        )));
    }
    if meta.len() > max {
        return Err(Failure(format!(
            "{}: over {} MiB (a {what} is at most that)",
            files::shown(path),
            max >> 20
        )));
    }
    std::fs::read(path).map_err(|e| with_path(path, e.into()))
}

/// Reads and parses a pack file.
fn load_pack(path: &Path) -> Result<sep::Pack, Failure> {
    let bytes = read_regular(path, "pack", u64::MAX)?;
    sep::Pack::from_file(&bytes).map_err(|e| Failure(format!("{}: {e}", files::shown(path))))
}

/// Looks a pack up among the `*.pack` files of `dir` (`SEP_PACKS`) when an archive needs it:
/// a file that is not a pack is skipped with a warning, unless it is named for the pack
/// needed.
fn packs_in(dir: PathBuf) -> sep::PackLookup {
    Arc::new(move |name: &str, sha256: &str| {
        let shown = files::shown(&dir);
        let entries = std::fs::read_dir(&dir).map_err(|e| {
            sep::Error::PackLookup(format!("SEP_PACKS={shown}: {}", files::io_message(&e)))
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pack") && p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            match load_pack(&path) {
                Ok(p) if p.name() == name && p.sha256_hex() == sha256 => {
                    return Ok(Some(Arc::new(p)))
                }
                Ok(_) => {}
                Err(Failure(m)) if path.file_stem().is_some_and(|s| s == name) => {
                    return Err(sep::Error::PackLookup(format!("SEP_PACKS: {m}")))
                }
                Err(Failure(m)) => eprintln!("sep: warning: SEP_PACKS: {m} (skipped)"),
            }
        }
        Ok(None)
    })
}

/// `sep pretrain`: reads the inputs (directories walked in name order) and the network file
/// `net` for the pack to carry, trains the pack, writes it to `output` (not over an existing
/// file without `force`).
fn run_pretrain(
    inputs: &[PathBuf],
    net: Option<&Path>,
    output: PathBuf,
    mut spec: sep::PackSpec,
    force: bool,
    quiet: bool,
) -> Result<(), Failure> {
    if let Some(path) = net {
        spec.network = Some(read_regular(path, "network file", NETWORK_MAX)?);
    }
    let mut paths = Vec::new();
    for p in inputs {
        match p.is_dir() {
            true => files::walk(p, &mut paths).map_err(|e| with_path(p, e.into()))?,
            false => paths.push(p.clone()),
        }
    }
    let mut data = Vec::new();
    for p in &paths {
        check_distinct(Some(p), Some(&output))?;
        let f = File::open(p).map_err(|e| with_path(p, e.into()))?;
        // Reads one byte past the limit at most, so that a huge input is refused unread.
        let room = PRETRAIN_MAX + 1 - data.len() as u64;
        io::Read::read_to_end(&mut io::Read::take(f, room), &mut data)
            .map_err(|e| with_path(p, e.into()))?;
        if data.len() as u64 > PRETRAIN_MAX {
            return Err(Failure(format!(
                "training data over {} MiB: give fewer files",
                PRETRAIN_MAX >> 20
            )));
        }
    }
    if data.is_empty() {
        return Err(Failure("no training data".into()));
    }
    let bar = report::progress_bar(
        Some(data.len() as u64),
        !quiet && io::stderr().is_terminal(),
    );
    let progress = |n: u64| {
        if let Some(b) = &bar {
            b.inc(n)
        }
    };
    let pack = sep::pretrain(&data, &spec, &progress)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut out = Output::create(Some(output.clone()), force)?;
    let mut w = out.writer();
    w.write_all(&pack).and_then(|()| w.flush()).map_err(|e| {
        Failure(format!(
            "{}: {}",
            files::shown(&output),
            files::io_message(&e)
        ))
    })?;
    drop(w);
    out.commit(None)?;
    if !quiet {
        eprintln!(
            "sep: pack {} ({} bytes) from {} bytes of {} files",
            files::shown(&output),
            pack.len(),
            data.len(),
            paths.len()
        );
    }
    Ok(())
}

/// Most training data `sep pretrain` reads: the model holds all of it.
const PRETRAIN_MAX: u64 = 1 << 30;

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

/// One file's run: opens `input` (`None`: standard input), codes it into `dest` (`None`:
/// standard output; nothing at all when testing), renames the output into place with the
/// input's metadata, removes the input if asked, prints the summary.
fn run_one(
    mode: Mode,
    flags: &Flags,
    input: Option<&Path>,
    dest: Option<PathBuf>,
) -> Result<(), Failure> {
    let compressing = mode == Mode::Compress;
    let testing = mode == Mode::Test;
    check_distinct(input.map(Path::to_path_buf).as_ref(), dest.as_ref())?;
    if input.is_none() && io::stdin().is_terminal() && (!compressing || !flags.force) {
        // As xz and zstd do: typed input is never what was meant (and would wait silently).
        return Err(Failure(
            match compressing {
                true => "refusing to read the data to compress from a terminal (redirect, or -f)",
                false => "refusing to read compressed data from a terminal",
            }
            .into(),
        ));
    }
    if compressing && dest.is_none() && io::stdout().is_terminal() && !flags.force {
        return Err(Failure(
            "refusing to write compressed data to a terminal (use -o, redirect, or -f)".into(),
        ));
    }
    let in_path = input.map(Path::to_path_buf);
    let (mut source, len, name) = Input::open(&in_path)?;
    let in_meta = in_path.as_ref().and_then(|p| std::fs::metadata(p).ok());
    let show_bar = !flags.quiet && io::stderr().is_terminal();
    // The archive knows its original size: the bar shows a total when decompressing too.
    let total = match (&source, compressing) {
        (_, true) => len,
        (Input::Mapped(m), false) if show_bar && flags.range.is_none() => {
            sep::inspect(io::Cursor::new(&m[..]))
                .ok()
                .map(|i| i.original_bytes)
        }
        _ => None,
    };
    let bar = report::progress_bar(total, show_bar);
    let opts = options(flags, &bar)?;
    let mut out = match testing {
        true => None,
        false => Some(Output::create(dest.clone(), flags.force)?),
    };
    let started = Instant::now();
    let out_name = dest.clone().unwrap_or_else(|| PathBuf::from("stdout"));
    let stats = {
        let mut sink = io::sink();
        let mut w = Tracked {
            inner: match out.as_mut() {
                Some(o) => o.writer(),
                None => Box::new(&mut sink),
            },
            failed: false,
        };
        let result = code(mode, flags, &mut source, &mut w, &opts).and_then(|s| {
            w.flush()?;
            Ok(s)
        });
        result.map_err(|e| {
            // A mapped file that shrank during the run reads as zeros up to its last page:
            // say so rather than call the data corrupt.
            let shrank = in_path
                .as_ref()
                .and_then(|p| std::fs::metadata(p).ok())
                .is_some_and(|m| m.is_file() && Some(m.len()) != len);
            if shrank && !w.failed {
                return Failure(format!("{name}: the file changed while it was being read"));
            }
            if w.failed && out_name == Path::new("stdout") && broken_pipe(&e) {
                // As xz: a reader that went away (`sep -dc f.sep | head`) ends sep quietly.
                quiet_exit();
            }
            let blame = if w.failed {
                out_name.as_path()
            } else {
                Path::new(&name)
            };
            with_path(blame, e)
        })?
    };
    let wrote_file = matches!(out, Some(Output::File { .. }));
    if let Some(o) = out {
        o.commit(in_meta.as_ref())?;
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if flags.rm && wrote_file {
        if let Some(p) = &in_path {
            std::fs::remove_file(p)
                .map_err(|e| Failure(format!("{}: {}", files::shown(p), files::io_message(&e))))?;
        }
    }
    if !flags.quiet && (flags.verbose || io::stderr().is_terminal()) {
        report::summary(&name, &stats, started, compressing);
    }
    Ok(())
}

/// Runs the library on the input: a part of it with `--shard` (compressing), a range with
/// `--range` (decompressing), which need the whole file.
fn code(
    mode: Mode,
    flags: &Flags,
    input: &mut Input,
    w: &mut dyn Write,
    o: &Options,
) -> sep::Result<Stats> {
    let stream = |msg: &str| Err(Error::InvalidOption(msg.into()));
    match (mode, flags.shard, &flags.range, input) {
        (Mode::Compress, Some((i, n)), _, Input::Mapped(m)) => sep::compress_part(m, w, o, i, n),
        (Mode::Compress, Some((i, n)), _, Input::Empty) => sep::compress_part(&[], w, o, i, n),
        (Mode::Compress, Some(_), _, _) => stream("--shard reads a file, not a stream"),
        (Mode::Compress, None, _, Input::Mapped(m)) => sep::compress_mapped(m, w, o),
        (Mode::Compress, None, _, other) => sep::compress(other.reader(), w, o),
        (_, _, Some(r), Input::Mapped(m)) => {
            sep::decompress_range(io::Cursor::new(&m[..]), w, o, r.clone())
        }
        (_, _, Some(_), _) => stream("--range reads an archive file, not a stream"),
        (_, _, None, Input::Mapped(m)) => sep::decompress_mapped(m, w, o),
        (_, _, None, other) => sep::decompress(other.reader(), w, o),
    }
}

fn broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io(io) if io.kind() == io::ErrorKind::BrokenPipe)
}

/// Exits as a process killed by SIGPIPE would look to its shell.
fn quiet_exit() -> ! {
    std::process::exit(128 + 13)
}

/// Compresses, decompresses or tests one input, choosing its output's name.
fn process(mode: Mode, flags: &Flags, input: Option<&Path>) -> Result<Done, Failure> {
    let to_stdout = flags.stdout || flags.output.as_deref() == Some(Path::new("-"));
    let dest = match (&flags.output, input) {
        _ if to_stdout || mode == Mode::Test => None,
        (Some(o), _) => Some(o.clone()),
        (None, None) => None,
        (None, Some(p)) => match mode {
            Mode::Compress if files::has_suffix(p) && !flags.force => {
                return Ok(Done::Warned(format!(
                    "{}: already has the .sep suffix, skipped (-f compresses it again)",
                    files::shown(p)
                )));
            }
            Mode::Compress => Some(files::archive_name(p, flags.shard)),
            _ => Some(files::original_name(p)?),
        },
    };
    run_one(mode, flags, input, dest).map(|()| Done::Ok)
}

/// `-l`: one line per archive (`-lv`: `info`'s description of each).
fn list(flags: &Flags, inputs: &[Option<PathBuf>]) -> bool {
    let mut failed = false;
    let mut infos = Vec::new();
    let mut out = String::new();
    if !flags.verbose {
        out.push_str(report::LIST_HEADER);
        out.push('\n');
    }
    for input in inputs {
        let Some(path) = input else {
            eprintln!("sep: error: --list reads archive files, not standard input");
            failed = true;
            continue;
        };
        match inspect(path) {
            Ok(info) => {
                match flags.verbose {
                    true => out.push_str(&report::describe(&info, path)),
                    false => out.push_str(&report::list_line(&info, path)),
                }
                out.push('\n');
                infos.push(info);
            }
            Err(Failure(m)) => {
                eprintln!("sep: error: {m}");
                failed = true;
            }
        }
    }
    if infos.len() > 1 && !flags.verbose {
        out.push_str(&report::list_total(&infos));
        out.push('\n');
    }
    if !infos.is_empty() {
        write_stdout(out.as_bytes());
    }
    failed
}

fn inspect(path: &Path) -> Result<sep::Info, Failure> {
    if path.is_dir() {
        return Err(Failure(format!("{}: is a directory", files::shown(path))));
    }
    let f = File::open(path).map_err(|e| with_path(path, e.into()))?;
    sep::inspect(io::BufReader::new(f)).map_err(|e| with_path(path, e))
}

fn write_stdout(bytes: &[u8]) {
    if let Err(e) = io::stdout().write_all(bytes) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            quiet_exit();
        }
        eprintln!("sep: error: stdout: {}", files::io_message(&e));
        std::process::exit(1);
    }
}

/// The inputs named, directories expanded with `-r` (`None`: standard input).
fn inputs(mode: Mode, flags: &Flags, names: Vec<PathBuf>) -> Vec<Result<Option<PathBuf>, Failure>> {
    if names.is_empty() {
        return vec![Ok(None)];
    }
    let mut out = Vec::new();
    for name in names {
        if name == Path::new("-") {
            out.push(Ok(None));
        } else if flags.recursive && name.is_dir() {
            let mut found = Vec::new();
            if let Err(e) = files::walk(&name, &mut found) {
                out.push(Err(Failure(format!(
                    "{}: {}",
                    files::shown(&name),
                    files::io_message(&e)
                ))));
            }
            // Compressing takes what is not an archive yet; the rest take the archives.
            let wanted = |p: &PathBuf| files::has_suffix(p) != (mode == Mode::Compress);
            out.extend(found.into_iter().filter(wanted).map(|p| Ok(Some(p))));
        } else if name.is_dir() {
            out.push(Err(Failure(format!(
                "{}: is a directory (-r goes into it)",
                files::shown(&name)
            ))));
        } else {
            out.push(Ok(Some(name)));
        }
    }
    out
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("sep: error: {msg}\nTry 'sep --help' for more information.");
    ExitCode::FAILURE
}

/// Runs `mode` on every input, each with its own output and error.
fn run_files(mode: Mode, flags: &Flags, names: Vec<PathBuf>) -> ExitCode {
    if let Some(l) = flags.level.filter(|l| !sep::LEVELS.contains(l)) {
        return usage_error(&format!("level {l} is not one of 1 .. 9 (-1 .. -9)"));
    }
    if flags.stdout && flags.output.is_some() {
        return usage_error("-c and -o are two outputs: give one");
    }
    let inputs = inputs(mode, flags, names);
    if flags.output.is_some() && inputs.len() > 1 {
        return usage_error("-o names one output: give one input file, or none");
    }
    let mut failed = false;
    let mut warned = false;
    if mode == Mode::List {
        let (ok, bad): (Vec<_>, Vec<_>) = inputs.into_iter().partition(Result::is_ok);
        for Failure(m) in bad.into_iter().filter_map(Result::err) {
            eprintln!("sep: error: {m}");
            failed = true;
        }
        let ok: Vec<_> = ok.into_iter().filter_map(Result::ok).collect();
        failed |= list(flags, &ok);
    } else {
        for input in inputs {
            match input.and_then(|i| process(mode, flags, i.as_deref())) {
                Ok(Done::Ok) => {}
                Ok(Done::Warned(m)) => {
                    if !flags.quiet {
                        eprintln!("sep: warning: {m}");
                    }
                    warned = true;
                }
                Err(Failure(m)) => {
                    eprintln!("sep: error: {m}");
                    failed = true;
                }
            }
        }
    }
    match (failed, warned) {
        (true, _) => ExitCode::FAILURE,
        (false, true) => ExitCode::from(2),
        _ => ExitCode::SUCCESS,
    }
}

/// `sep concat`: the parts, checked, joined into OUT (written only if all fit together).
fn run_concat(parts: &[PathBuf], output: PathBuf, force: bool) -> Result<(), Failure> {
    let mut files = Vec::with_capacity(parts.len());
    for p in parts {
        check_distinct(Some(p), Some(&output))?;
        let f = File::open(p).map_err(|e| with_path(p, e.into()))?;
        files.push(io::BufReader::new(f));
    }
    let mut out = Output::create(Some(output.clone()), force)?;
    let mut w = out.writer();
    sep::concat(&mut files, &mut w).map_err(|e| match e {
        Error::Io(_) => with_path(&output, e),
        e => Failure(format!("sep concat: {e}")),
    })?;
    w.flush().map_err(|e| {
        Failure(format!(
            "{}: {}",
            files::shown(&output),
            files::io_message(&e)
        ))
    })?;
    drop(w);
    out.commit(None)
}

fn run_info(file: &Path) -> ExitCode {
    match inspect(file) {
        Ok(info) => {
            write_stdout(report::describe(&info, file).as_bytes());
            ExitCode::SUCCESS
        }
        Err(Failure(m)) => {
            eprintln!("sep: error: {m}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    sep::quiet_guarded_panics();
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match Personality::of(argv.first()) {
        Personality::Sep => {}
        Personality::Unsep => argv.insert(1.min(argv.len()), "-d".into()),
        Personality::Sepcat => argv.insert(1.min(argv.len()), "-dc".into()),
    }
    let cli = match Cli::try_parse_from(args::normalise(argv.into_iter())) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            return usage_error(first.trim_start_matches("error: "));
        }
    };
    if let Err(e) = signals::watch() {
        eprintln!("sep: error: cannot watch for signals: {e}");
        return ExitCode::FAILURE;
    }
    let (mode, flags, files) = match cli.cmd {
        Some(Cmd::Compress(a)) => (Mode::Compress, a.flags, a.files),
        Some(Cmd::Decompress(a)) => (Mode::Decompress, a.flags, a.files),
        Some(Cmd::Info { file }) => return run_info(&file),
        Some(Cmd::Concat {
            parts,
            output,
            force,
        }) => {
            return match run_concat(&parts, output, force) {
                Ok(()) => ExitCode::SUCCESS,
                Err(Failure(m)) => {
                    eprintln!("sep: error: {m}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Cmd::Pretrain {
            inputs,
            output,
            name,
            kind,
            description,
            level,
            table_log,
            history,
            net,
            base,
            force,
            quiet,
        }) => {
            let name = name.unwrap_or_else(|| {
                output
                    .file_stem()
                    .map_or("pack".into(), |s| s.to_string_lossy().into_owned())
            });
            let spec = sep::PackSpec {
                name,
                kind,
                description,
                level,
                slots_log: table_log,
                history: usize::try_from(history).unwrap_or(usize::MAX),
                network: None,
                base,
            };
            return match run_pretrain(&inputs, net.as_deref(), output, spec, force, quiet) {
                Ok(()) => ExitCode::SUCCESS,
                Err(Failure(m)) => {
                    eprintln!("sep: error: {m}");
                    ExitCode::FAILURE
                }
            };
        }
        Some(Cmd::Completions { shell }) => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "sep", &mut out);
            write_stdout(&out);
            return ExitCode::SUCCESS;
        }
        Some(Cmd::Manpage) => {
            let mut out = Vec::new();
            if let Err(e) = clap_mangen::Man::new(Cli::command()).render(&mut out) {
                eprintln!("sep: error: man page: {e}");
                return ExitCode::FAILURE;
            }
            write_stdout(&out);
            return ExitCode::SUCCESS;
        }
        None => {
            let m = &cli.mode;
            let mode = match (m.decompress, m.test, m.list) {
                (true, _, _) => Mode::Decompress,
                (_, true, _) => Mode::Test,
                (_, _, true) => Mode::List,
                _ => Mode::Compress,
            };
            (mode, cli.flags, cli.files)
        }
    };
    run_files(mode, &flags, files)
}
