//! Python bindings of sep (the module `sep._native`, which the `sep` package re-exports):
//! compress and decompress bytes, or files path to path as streams; incremental objects
//! (`stream`); compress one shard of a file and join shards into one archive (for engines that
//! spread a file over many workers), and decode a byte range.
//!
//! Every call releases the GIL while it works, so Python threads and engines run beside it.
//! Files are written to a temporary file beside the destination and renamed into place, so a
//! failed call leaves no partial output; an existing destination is kept unless `overwrite`.

use pyo3::create_exception;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sep::{Options, Pack, PackChoice};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod stream;

create_exception!(
    _native,
    SepError,
    PyOSError,
    "sep refused the input or the archive, or a file could not be read or written."
);

pub(crate) fn error(e: sep::Error) -> PyErr {
    SepError::new_err(e.to_string())
}

fn io_error(path: &Path, e: std::io::Error) -> PyErr {
    SepError::new_err(format!("{}: {e}", path.display()))
}

/// A pack file, read and checked.
fn load_pack(path: &str) -> PyResult<Arc<Pack>> {
    let p = Path::new(path);
    let bytes = std::fs::read(p).map_err(|e| io_error(p, e))?;
    Pack::from_file(&bytes)
        .map(Arc::new)
        .map_err(|e| SepError::new_err(format!("{path}: {e}")))
}

/// Compression options from the keyword arguments every compressing call takes.
pub(crate) fn options(
    level: u8,
    threads: Option<usize>,
    block_size: Option<u64>,
    pack: &str,
    net: &str,
) -> PyResult<Options> {
    let mut o = Options::default();
    o.level = level;
    if let Some(t) = threads {
        o.threads = t;
    }
    if let Some(b) = block_size {
        o.block_size = b;
    }
    o.pack = match pack {
        "auto" => PackChoice::Auto,
        "none" => PackChoice::Off,
        path => PackChoice::Given(load_pack(path)?),
    };
    o.network = match net {
        "auto" => true,
        "none" => false,
        other => {
            return Err(SepError::new_err(format!(
                "unknown net {other:?}: expected \"auto\" or \"none\""
            )))
        }
    };
    o.validate().map_err(error)?;
    Ok(o)
}

/// Decompression options: threads, and the packs an archive may need besides the built-in one.
pub(crate) fn decode_options(threads: Option<usize>, packs: Vec<String>) -> PyResult<Options> {
    let mut o = Options::default();
    if let Some(t) = threads {
        o.threads = t;
    }
    o.packs = packs
        .iter()
        .map(|p| load_pack(p))
        .collect::<PyResult<_>>()?;
    o.validate().map_err(error)?;
    Ok(o)
}

/// Writes `dst` through `write`, via a temporary file beside it (`.NAME.XXXXXX.sep-partial`,
/// as the command line names it) renamed into place when `write` succeeds and removed
/// otherwise; an existing `dst` is an error unless `overwrite`.
fn write_file<T>(
    dst: &Path,
    overwrite: bool,
    write: impl FnOnce(&mut BufWriter<&File>) -> sep::Result<T>,
) -> PyResult<T> {
    let exists = || {
        SepError::new_err(format!(
            "{}: already exists (overwrite=True replaces it)",
            dst.display()
        ))
    };
    if !overwrite && dst.exists() {
        return Err(exists());
    }
    let dir = match dst.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = dst
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".sep-partial")
        .tempfile_in(dir)
        .map_err(|e| io_error(dir, e))?;
    let mut out = BufWriter::new(tmp.as_file());
    let value = write(&mut out).map_err(error)?;
    out.flush().map_err(|e| io_error(tmp.path(), e))?;
    drop(out);
    tmp.as_file()
        .sync_all()
        .map_err(|e| io_error(tmp.path(), e))?;
    let placed = match overwrite {
        true => tmp.persist(dst).map(|_| ()),
        false => tmp.persist_noclobber(dst).map(|_| ()),
    };
    match placed {
        Ok(()) => Ok(value),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Err(exists()),
        Err(e) => Err(io_error(dst, e.error)),
    }
}

/// Maps `path` for reading.
fn map(path: &Path) -> PyResult<memmap2::Mmap> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    // SAFETY: the map is only read; a file truncated underneath would fault, as with any
    // mapped input, which the library's checksums do not guard against.
    unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io_error(path, e))
}

/// Compresses `data` into a complete archive.
#[pyfunction]
#[pyo3(signature = (data, *, level = 6, threads = None, block_size = None, pack = "auto", net = "auto"))]
fn compress(
    py: Python<'_>,
    data: &[u8],
    level: u8,
    threads: Option<usize>,
    block_size: Option<u64>,
    pack: &str,
    net: &str,
) -> PyResult<Py<PyBytes>> {
    let o = options(level, threads, block_size, pack, net)?;
    let out = py
        .detach(|| {
            let mut out = Vec::new();
            sep::compress_bytes(data, &mut out, &o).map(|_| out)
        })
        .map_err(error)?;
    Ok(PyBytes::new(py, &out).unbind())
}

/// Decompresses a complete archive, verifying every checksum.
#[pyfunction]
#[pyo3(signature = (archive, *, threads = None, packs = Vec::new()))]
fn decompress(
    py: Python<'_>,
    archive: &[u8],
    threads: Option<usize>,
    packs: Vec<String>,
) -> PyResult<Py<PyBytes>> {
    let o = decode_options(threads, packs)?;
    let out = py
        .detach(|| {
            let mut out = Vec::new();
            sep::decompress_to_vec(archive, &mut out, &o).map(|_| out)
        })
        .map_err(error)?;
    Ok(PyBytes::new(py, &out).unbind())
}

/// Compresses the file `src` into the archive `dst` as a stream (the file is read as it is
/// coded, never whole). Returns (original bytes, archive bytes).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (src, dst, *, level = 6, threads = None, block_size = None, pack = "auto", net = "auto", overwrite = false))]
fn compress_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    level: u8,
    threads: Option<usize>,
    block_size: Option<u64>,
    pack: &str,
    net: &str,
    overwrite: bool,
) -> PyResult<(u64, u64)> {
    let o = options(level, threads, block_size, pack, net)?;
    let input = File::open(&src).map_err(|e| io_error(&src, e))?;
    py.detach(|| {
        write_file(&dst, overwrite, |out| {
            sep::compress(std::io::BufReader::new(input), out, &o)
                .map(|s| (s.original_bytes, s.archive_bytes))
        })
    })
}

/// Decompresses the archive file `src` into `dst` as a stream, verifying every checksum
/// before `dst` appears. Returns (original bytes, archive bytes).
#[pyfunction]
#[pyo3(signature = (src, dst, *, threads = None, packs = Vec::new(), overwrite = false))]
fn decompress_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    threads: Option<usize>,
    packs: Vec<String>,
    overwrite: bool,
) -> PyResult<(u64, u64)> {
    let o = decode_options(threads, packs)?;
    let input = File::open(&src).map_err(|e| io_error(&src, e))?;
    py.detach(|| {
        write_file(&dst, overwrite, |out| {
            sep::decompress(std::io::BufReader::new(input), out, &o)
                .map(|s| (s.original_bytes, s.archive_bytes))
        })
    })
}

/// Compresses shard `index` (from 0) of `count` of the file `src` into the archive `dst`: the
/// file is cut into `count` runs of whole blocks, a pure function of its length and the
/// options, so every worker agrees without talking. Returns (original bytes, archive bytes).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (src, dst, index, count, *, level = 6, threads = 1, block_size = None, pack = "auto", net = "auto", overwrite = false))]
fn shard(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    index: u32,
    count: u32,
    level: u8,
    threads: usize,
    block_size: Option<u64>,
    pack: &str,
    net: &str,
    overwrite: bool,
) -> PyResult<(u64, u64)> {
    let o = options(level, Some(threads), block_size, pack, net)?;
    let input = map(&src)?;
    py.detach(|| {
        write_file(&dst, overwrite, |out| {
            sep::compress_part(&input, out, &o, index, count)
                .map(|s| (s.original_bytes, s.archive_bytes))
        })
    })
}

/// Joins the shards `shard` wrote, given in order, into the archive of the whole file at
/// `dst`, without recompressing; refuses shards that do not fit together (missing, repeated,
/// reordered, other options or another file) before writing anything. Returns (original
/// bytes, archive bytes).
#[pyfunction]
#[pyo3(signature = (parts, dst, *, overwrite = false))]
fn concat(
    py: Python<'_>,
    parts: Vec<PathBuf>,
    dst: PathBuf,
    overwrite: bool,
) -> PyResult<(u64, u64)> {
    let mut files = parts
        .iter()
        .map(|p| File::open(p).map_err(|e| io_error(p, e)))
        .collect::<PyResult<Vec<_>>>()?;
    py.detach(|| {
        write_file(&dst, overwrite, |out| {
            sep::concat(&mut files, out).map(|s| (s.original_bytes, s.archive_bytes))
        })
    })
}

/// The original bytes `start..end` of the archive file `src`, reading and decoding only the
/// blocks that cover them.
#[pyfunction]
#[pyo3(signature = (src, start, end, *, threads = None, packs = Vec::new()))]
fn decompress_range(
    py: Python<'_>,
    src: PathBuf,
    start: u64,
    end: u64,
    threads: Option<usize>,
    packs: Vec<String>,
) -> PyResult<Py<PyBytes>> {
    let o = decode_options(threads, packs)?;
    let file = File::open(&src).map_err(|e| io_error(&src, e))?;
    let out = py
        .detach(|| {
            let mut out = Vec::new();
            sep::decompress_range(std::io::BufReader::new(file), &mut out, &o, start..end)
                .map(|_| out)
        })
        .map_err(error)?;
    Ok(PyBytes::new(py, &out).unbind())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SepError", m.py().get_type::<SepError>())?;
    m.add_function(wrap_pyfunction!(compress, m)?)?;
    m.add_function(wrap_pyfunction!(decompress, m)?)?;
    m.add_function(wrap_pyfunction!(shard, m)?)?;
    m.add_function(wrap_pyfunction!(concat, m)?)?;
    m.add_function(wrap_pyfunction!(decompress_range, m)?)?;
    m.add_function(wrap_pyfunction!(compress_file, m)?)?;
    m.add_function(wrap_pyfunction!(decompress_file, m)?)?;
    m.add_class::<stream::Compressor>()?;
    m.add_class::<stream::Decompressor>()?;
    Ok(())
}
