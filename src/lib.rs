//! sep: a neural lossless compressor. Compress, decompress and inspect archives.
//!
//! Data flows one way: `format` (archive layout) -> `pipeline` (blocks) -> `model` (prediction)
//! -> `coder` (integer frequencies and range coding); `engine` holds the deterministic kernels.

pub mod coder;
pub mod engine;
mod error;
pub mod format;
pub mod model;
pub mod pipeline;
pub mod select;
pub mod tensor;
#[cfg(test)]
mod testing;

pub use error::{Error, Result};

use engine::KernelLevel;
use format::{Header, Trailer};
use model::ModelConfig;
use pipeline::{InMemory, Streamed};
use std::io::{Read, Seek, Write};
use std::sync::Arc;

/// Default maximum raw bytes per block.
pub const DEFAULT_BLOCK_SIZE: u64 = 8 << 20;

/// Settings of a compression or decompression run.
#[derive(Clone)]
pub struct Options {
    /// Blocks coded at once (worker threads).
    pub threads: usize,
    /// Maximum raw bytes per block (compression only; decoding uses the archive's).
    pub block_size: u64,
    /// Predictor configuration (compression only; decoding uses the archive's).
    pub model: ModelConfig,
    /// SIMD level of the numeric kernels.
    pub kernels: KernelLevel,
    /// Called with the number of input bytes finished, from worker threads.
    pub progress: Option<Arc<dyn Fn(u64) + Send + Sync>>,
    /// Called after each block is written with its original and archived sizes.
    pub on_block: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
    /// Length of the input if known (compression only): blocks are then cut evenly.
    pub size_hint: Option<u64>,
    /// Element type of an input that is a raw float array (compression only).
    pub dtype: Option<tensor::DType>,
    /// Structure of the input if known (compression only), e.g. `tensor::layout` of the whole
    /// input (the command line sets it for regular files).
    pub layout: Option<Vec<tensor::Segment>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            block_size: DEFAULT_BLOCK_SIZE,
            model: ModelConfig::default(),
            kernels: KernelLevel::detect(),
            progress: None,
            on_block: None,
            size_hint: None,
            dtype: None,
            layout: None,
        }
    }
}

impl Options {
    /// Checks that the settings are in range.
    pub fn validate(&self) -> Result<()> {
        if self.threads == 0 || self.threads > 1024 {
            return Err(Error::InvalidOption(format!(
                "threads must be 1..=1024, got {}",
                self.threads
            )));
        }
        if self.block_size == 0 || self.block_size > format::MAX_BLOCK_SIZE {
            return Err(Error::InvalidOption(format!(
                "block size must be 1..={} bytes, got {}",
                format::MAX_BLOCK_SIZE,
                self.block_size
            )));
        }
        Ok(())
    }
}

/// Sizes of a finished run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Bytes of original data.
    pub original_bytes: u64,
    /// Bytes of archive.
    pub archive_bytes: u64,
    /// Number of blocks.
    pub blocks: u64,
}

/// Compresses everything `input` yields into a complete archive on `output`. Without a
/// layout or dtype in `opts`, a stream that starts like a safetensors or .npy file takes the
/// tensor path from its header.
pub fn compress(input: impl Read, mut output: impl Write, opts: &Options) -> Result<Stats> {
    if opts.layout.is_some() || opts.dtype.is_some() {
        return pipeline::compress(&mut Streamed(input), &mut output, opts);
    }
    let mut input = input;
    let (head, layout) = tensor::sniff_stream(&mut input)?;
    let mut opts = opts.clone();
    opts.layout = layout;
    pipeline::compress(
        &mut Streamed(head.as_slice().chain(input)),
        &mut output,
        &opts,
    )
}

/// Compresses `input`, whole in memory, into a complete archive on `output`, coding its blocks
/// in place; its structure is detected from the bytes unless `opts` gives a layout.
pub fn compress_bytes(input: &[u8], mut output: impl Write, opts: &Options) -> Result<Stats> {
    let opts = in_memory(input, opts);
    pipeline::compress(&mut InMemory::new(input), &mut output, &opts)
}

/// `compress_bytes` of a mapped file, whose pages are given back as blocks finish, so resident
/// memory does not grow with the file.
pub fn compress_mapped(
    input: &memmap2::Mmap,
    mut output: impl Write,
    opts: &Options,
) -> Result<Stats> {
    let opts = in_memory(input, opts);
    pipeline::compress(&mut InMemory::mapped(input), &mut output, &opts)
}

/// `opts` for an input known whole: its length, and its layout unless one is given.
fn in_memory(input: &[u8], opts: &Options) -> Options {
    let mut opts = opts.clone();
    opts.size_hint = Some(input.len() as u64);
    if opts.layout.is_none() {
        opts.layout = Some(tensor::layout(input, opts.dtype));
    }
    opts
}

/// Decompresses a complete archive from `input` onto `output`, verifying every checksum.
pub fn decompress(input: impl Read, mut output: impl Write, opts: &Options) -> Result<Stats> {
    pipeline::decompress(&mut Streamed(input), &mut output, opts)
}

/// `decompress` of an archive whole in memory, its blocks decoded in place.
pub fn decompress_bytes(archive: &[u8], mut output: impl Write, opts: &Options) -> Result<Stats> {
    pipeline::decompress(&mut InMemory::new(archive), &mut output, opts)
}

/// `decompress_bytes` onto the end of `out`, which is left as it was if the archive is
/// refused; with one thread, tensor blocks are decoded straight into `out` (no copy).
pub fn decompress_to_vec(archive: &[u8], out: &mut Vec<u8>, opts: &Options) -> Result<Stats> {
    pipeline::decompress_to_vec(&mut InMemory::new(archive), out, opts)
}

/// `decompress_bytes` of a mapped archive, whose pages are given back as blocks finish.
pub fn decompress_mapped(
    archive: &memmap2::Mmap,
    mut output: impl Write,
    opts: &Options,
) -> Result<Stats> {
    pipeline::decompress(&mut InMemory::mapped(archive), &mut output, opts)
}

/// Header, model and block table of an archive, as shown by `sep info`.
#[derive(Clone, Debug)]
pub struct Info {
    /// The archive header.
    pub header: Header,
    /// The model configuration, decoded.
    pub model: ModelConfig,
    /// Totals and block table.
    pub trailer: Trailer,
    /// Size of the archive in bytes.
    pub archive_bytes: u64,
}

/// Reads the header and block table of a seekable archive without decoding any block.
pub fn inspect(mut input: impl Read + Seek) -> Result<Info> {
    let (header, _) = Header::read(&mut input)?;
    let model = ModelConfig::from_bytes(&header.model_config)?;
    let trailer = Trailer::read_from_end(&mut input)?;
    let archive_bytes = input.seek(std::io::SeekFrom::End(0))?;
    Ok(Info {
        header,
        model,
        trailer,
        archive_bytes,
    })
}
