//! Incremental compression and decompression (`Compressor`, `Decompressor`), as the standard
//! library's `lzma.LZMACompressor` and `LZMADecompressor` work: chunks go in, archive or
//! original bytes come out. Each object runs the library's streaming coder on a thread of its
//! own, fed through a bounded channel (so that a producer faster than the coder waits, and
//! memory stays at the coder's blocks in flight), its output gathered for the next call.

use crate::{decode_options, error, options, SepError};
use pyo3::exceptions::PyEOFError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::io::{Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Chunks in the channel before a sender waits.
const QUEUED: usize = 4;

/// What the coder's thread and the calling object share.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Bytes the coder wrote, not yet returned.
    output: Vec<u8>,
    /// Chunks sent and chunks the coder's reader took.
    sent: u64,
    taken: u64,
    /// Whether the reader waits for a chunk that is not there.
    hungry: bool,
    /// Whether the coder's thread ended.
    done: bool,
    /// Once the coder ends: the bytes its reader held and did not read (after an archive),
    /// and the channel, which may hold chunks sent since.
    left: Vec<u8>,
    rest: Option<Receiver<Vec<u8>>>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic on the coder's thread is reported by its join; the state stays usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The coder's input: the chunks sent, in order, until the sender is dropped.
struct Chunks {
    rx: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
    shared: Arc<Shared>,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.chunk.len() {
            let next = match self.rx.try_recv() {
                Ok(c) => Some(c),
                Err(_) => {
                    self.shared.lock().hungry = true;
                    self.shared.changed.notify_all();
                    self.rx.recv().ok()
                }
            };
            let Some(c) = next else {
                return Ok(0);
            };
            let mut s = self.shared.lock();
            s.hungry = false;
            s.taken += 1;
            drop(s);
            (self.chunk, self.at) = (c, 0);
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The coder's output, gathered for the calling object.
struct Gathered(Arc<Shared>);

impl Write for Gathered {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A coder on its own thread, fed chunks.
struct Coder {
    tx: Option<SyncSender<Vec<u8>>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<sep::Result<sep::Stats>>>,
}

impl Coder {
    /// Starts `run` on the chunks sent, writing to the gathered output.
    fn start(
        run: impl FnOnce(&mut Chunks, Gathered) -> sep::Result<sep::Stats> + Send + 'static,
    ) -> Self {
        let (tx, rx) = sync_channel(QUEUED);
        let shared = Arc::new(Shared::default());
        let mine = shared.clone();
        let thread = std::thread::spawn(move || {
            let mut input = Chunks {
                rx,
                chunk: Vec::new(),
                at: 0,
                shared: mine.clone(),
            };
            let result = run(&mut input, Gathered(mine.clone()));
            let left = input.chunk.split_off(input.at);
            let mut s = mine.lock();
            (s.done, s.left, s.rest) = (true, left, Some(input.rx));
            drop(s);
            mine.changed.notify_all();
            result
        });
        Coder {
            tx: Some(tx),
            shared,
            thread: Some(thread),
        }
    }

    /// Sends `data` (waiting, without the GIL, while the channel is full); false once the coder
    /// has stopped taking input.
    fn send(&mut self, py: Python<'_>, data: Vec<u8>) -> bool {
        let Some(tx) = &self.tx else {
            return false;
        };
        let sent = py.detach(|| tx.send(data).is_ok());
        if sent {
            self.shared.lock().sent += 1;
        }
        sent
    }

    /// Waits, without the GIL, until the coder has taken every chunk sent and waits for more,
    /// or has ended.
    fn settle(&self, py: Python<'_>) {
        py.detach(|| {
            let mut s = self.shared.lock();
            while !(s.done || (s.hungry && s.taken == s.sent)) {
                s = self
                    .shared
                    .changed
                    .wait(s)
                    .unwrap_or_else(|p| p.into_inner());
            }
        })
    }

    /// The output gathered since the last call.
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut self.shared.lock().output)
    }

    /// Ends the input and waits for the coder: its result.
    fn finish(&mut self, py: Python<'_>) -> PyResult<sep::Stats> {
        self.tx = None;
        let Some(thread) = self.thread.take() else {
            return Err(SepError::new_err("the stream has ended"));
        };
        match py.detach(|| thread.join()) {
            Ok(r) => r.map_err(error),
            Err(_) => Err(SepError::new_err("the coder stopped unexpectedly")),
        }
    }
}

/// Compresses a stream given in chunks into one archive, as `lzma.LZMACompressor` does:
/// `compress(chunk)` returns the archive's bytes ready so far (often none: blocks are coded
/// whole), `flush()` the rest, after which the object takes no more.
#[pyclass(module = "sep._native")]
pub struct Compressor {
    coder: Coder,
}

#[pymethods]
impl Compressor {
    #[new]
    #[pyo3(signature = (*, level = 6, threads = None, block_size = None, pack = "auto", net = "auto"))]
    fn new(
        level: u8,
        threads: Option<usize>,
        block_size: Option<u64>,
        pack: &str,
        net: &str,
    ) -> PyResult<Self> {
        let o = options(level, threads, block_size, pack, net)?;
        let coder = Coder::start(move |input, output| sep::compress(input, output, &o));
        Ok(Compressor { coder })
    }

    /// Takes `data`; returns the archive's bytes ready so far.
    fn compress(&mut self, py: Python<'_>, data: &[u8]) -> PyResult<Py<PyBytes>> {
        if !self.coder.send(py, data.to_vec()) {
            // The coder ended early: its error, or the stream was already flushed.
            self.coder.finish(py)?;
            return Err(SepError::new_err("compress() after flush()"));
        }
        Ok(PyBytes::new(py, &self.coder.take()).unbind())
    }

    /// Ends the stream; returns the rest of the archive.
    fn flush(&mut self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
        self.coder.finish(py)?;
        Ok(PyBytes::new(py, &self.coder.take()).unbind())
    }
}

/// Decompresses one archive given in chunks, as `lzma.LZMADecompressor` does:
/// `decompress(chunk)` returns the original bytes decoded so far; `eof` is true once the
/// archive has ended (every checksum verified), and `unused_data` holds what came after it.
#[pyclass(module = "sep._native")]
pub struct Decompressor {
    coder: Coder,
    eof: bool,
    unused: Vec<u8>,
}

#[pymethods]
impl Decompressor {
    #[new]
    #[pyo3(signature = (*, threads = 1, packs = Vec::new()))]
    fn new(threads: Option<usize>, packs: Vec<String>) -> PyResult<Self> {
        let o = decode_options(threads, packs)?;
        let coder = Coder::start(move |input, output| sep::decompress_first(input, output, &o));
        Ok(Decompressor {
            coder,
            eof: false,
            unused: Vec::new(),
        })
    }

    /// Takes `data`; returns the original bytes decoded so far.
    fn decompress(&mut self, py: Python<'_>, data: &[u8]) -> PyResult<Py<PyBytes>> {
        if self.eof {
            return Err(PyEOFError::new_err("already at the end of the archive"));
        }
        if !data.is_empty() {
            self.coder.send(py, data.to_vec());
        }
        self.coder.settle(py);
        let out = self.coder.take();
        if self.coder.shared.lock().done {
            self.coder.finish(py)?;
            self.eof = true;
            let mut s = self.coder.shared.lock();
            let mut unused = std::mem::take(&mut s.left);
            if let Some(rx) = s.rest.take() {
                unused.extend(rx.try_iter().flatten());
            }
            self.unused = unused;
        }
        Ok(PyBytes::new(py, &out).unbind())
    }

    /// Whether the archive has ended.
    #[getter]
    fn eof(&self) -> bool {
        self.eof
    }

    /// The bytes after the archive's end (empty until `eof`).
    #[getter]
    fn unused_data(&self, py: Python<'_>) -> Py<PyBytes> {
        PyBytes::new(py, &self.unused).unbind()
    }

    /// Whether more input is needed before more output can come (false once `eof`).
    #[getter]
    fn needs_input(&self) -> bool {
        !self.eof
    }
}
