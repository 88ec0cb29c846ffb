//! Files: the input (mapped, streamed or standard input), the output (a temporary file renamed
//! into place on success, or written in place where it is a device or pipe), the file
//! metadata carried from input to output as xz carries it, and error messages about files.

use crate::signals;
use crate::Failure;
use sep::Error;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Output buffer size: it gathers the small writes (records, headers); blocks, which are
/// larger, go straight to the file instead of being copied through it.
const WRITE_BUFFER: usize = 64 << 10;

/// A file's name as a message shows it: on one line, with no byte a terminal would act on
/// (control characters are written as escapes: `\n`, `\t`, `\r`, others as `\xNN` or
/// `\u{N}`; bytes that are not UTF-8 as the replacement character).
pub fn shown(path: impl AsRef<Path>) -> String {
    let mut out = String::new();
    for c in path.as_ref().to_string_lossy().chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x100 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

pub fn io_message(e: &io::Error) -> String {
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

pub fn with_path(path: &Path, e: Error) -> Failure {
    match e {
        Error::Io(io) => Failure(format!("{}: {}", shown(path), io_message(&io))),
        e @ (Error::MemoryLimit { .. } | Error::MemoryNeed { .. }) => {
            Failure(format!("{}: {e} (--memory raises it)", shown(path)))
        }
        other => Failure(format!("{}: {other}", shown(path))),
    }
}

pub fn is_stdio(p: &Option<PathBuf>) -> bool {
    p.as_deref().is_none_or(|p| p == Path::new("-"))
}

/// Where the input comes from: a mapped file, a streamed file or standard input.
pub enum Input {
    /// A regular file, mapped: its blocks are coded in place and their pages given back as
    /// each finishes, so resident memory does not grow with it.
    Mapped(memmap2::Mmap),
    Empty,
    Stream(Box<dyn Read>),
}

impl Input {
    pub fn open(path: &Option<PathBuf>) -> Result<(Input, Option<u64>, String), Failure> {
        let Some(path) = path.as_ref().filter(|_| !is_stdio(path)) else {
            return Ok((
                Input::Stream(Box::new(io::stdin().lock())),
                None,
                "stdin".into(),
            ));
        };
        let name = shown(path);
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
    pub fn reader(&mut self) -> Box<dyn Read + '_> {
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
pub enum Output {
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
    pub fn create(dest: Option<PathBuf>, force: bool) -> Result<Output, Failure> {
        let Some(dest) = dest else {
            return Ok(Output::Stdout);
        };
        if dest.is_dir() {
            return Err(Failure(format!("{}: is a directory", shown(&dest))));
        }
        if let Ok(meta) = std::fs::metadata(&dest) {
            if !meta.is_file() && (force || !is_block_device(&meta)) {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&dest)
                    .map_err(|e| Failure(format!("{}: {}", shown(&dest), io_message(&e))))?;
                return Ok(Output::Special(f));
            }
        }
        if !force && dest.symlink_metadata().is_ok() {
            return Err(Failure(format!(
                "{}: already exists (use -f to overwrite)",
                shown(&dest)
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
        .map_err(|e| Failure(format!("{}: {}", shown(&dir), io_message(&e))))?;
        Ok(Output::File { tmp, dest, force })
    }

    pub fn writer(&mut self) -> Box<dyn Write + '_> {
        match self {
            Output::Stdout => Box::new(BufWriter::with_capacity(WRITE_BUFFER, io::stdout().lock())),
            Output::Special(f) => Box::new(BufWriter::with_capacity(WRITE_BUFFER, f)),
            Output::File { tmp, .. } => {
                Box::new(BufWriter::with_capacity(WRITE_BUFFER, tmp.as_file_mut()))
            }
        }
    }

    /// Moves the finished temporary file to its destination, with `from`'s metadata.
    pub fn commit(self, from: Option<&std::fs::Metadata>) -> Result<(), Failure> {
        let Output::File { tmp, dest, force } = self else {
            return Ok(());
        };
        let name = shown(&dest);
        let carried = match from {
            Some(meta) => copy_metadata(meta, tmp.as_file()),
            // A new file (from standard input, `concat`, `pretrain`): the mode a plain
            // `creat` would give, not the temporary file's private one.
            None => new_file_mode(tmp.as_file()),
        };
        carried.map_err(|e| Failure(format!("{name}: {}", io_message(&e))))?;
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

/// Gives `to` the permission bits of a file created with mode 0666 under the process's umask.
fn new_file_mode(to: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: umask only swaps the process's mask; it is set straight back, before any
        // other thread of sep creates a file (outputs are created on the main thread).
        let mask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        to.set_permissions(std::fs::Permissions::from_mode(0o666 & !(mask as u32)))?;
    }
    #[cfg(not(unix))]
    let _ = to;
    Ok(())
}

/// Gives `to` the metadata xz carries over: modification and access times, the permission
/// bits without setuid, setgid and sticky, and the owner and group where allowed (as root).
fn copy_metadata(from: &std::fs::Metadata, to: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        // Owner first: changing it may clear permission bits. Refused unless root: ignored.
        let _ = std::os::unix::fs::fchown(to, Some(from.uid()), Some(from.gid()));
        to.set_permissions(std::fs::Permissions::from_mode(from.mode() & 0o777))?;
    }
    #[cfg(not(unix))]
    to.set_permissions(from.permissions())?;
    let mut times = std::fs::FileTimes::new();
    if let Ok(t) = from.modified() {
        times = times.set_modified(t);
    }
    if let Ok(t) = from.accessed() {
        times = times.set_accessed(t);
    }
    to.set_times(times)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Refuses to read and write the same file.
pub fn check_distinct(input: Option<&PathBuf>, dest: Option<&PathBuf>) -> Result<(), Failure> {
    match (input, dest) {
        (Some(i), Some(d)) if same_file(i, d) => Err(Failure(format!(
            "{}: input and output are the same file",
            shown(d)
        ))),
        _ => Ok(()),
    }
}

/// Whether `path` names an archive by its suffix.
pub fn has_suffix(path: &Path) -> bool {
    path.to_str()
        .and_then(|s| s.strip_suffix(".sep"))
        .is_some_and(|stem| !stem.is_empty() && !stem.ends_with('/'))
}

/// The archive's name for an input: FILE.sep, or FILE.I-of-N.sep for part I of N.
pub fn archive_name(path: &Path, shard: Option<(u32, u32)>) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    if let Some((i, n)) = shard {
        s.push(format!(".{i}-of-{n}"));
    }
    s.push(".sep");
    PathBuf::from(s)
}

/// The output's name for an archive: FILE for FILE.sep.
pub fn original_name(path: &Path) -> Result<PathBuf, Failure> {
    match path.to_str().and_then(|s| s.strip_suffix(".sep")) {
        Some(stem) if has_suffix(path) => Ok(PathBuf::from(stem)),
        _ => Err(Failure(format!(
            "{}: unknown suffix, expected .sep (use -o OUT or -c)",
            shown(path)
        ))),
    }
}

/// Every file under `dir`, in name order, for `-r`.
pub fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<_>>()?;
    entries.sort();
    for p in entries {
        let meta = std::fs::symlink_metadata(&p)?;
        if meta.is_dir() {
            walk(&p, out)?;
        } else if meta.is_file() {
            out.push(p);
        }
    }
    Ok(())
}
