//! Streams an input through independent blocks: the calling thread reads blocks and writes
//! results in order, a pool of workers codes blocks concurrently (each through the backend),
//! and the number of blocks in flight is bounded so memory does not grow with the input.

mod buffers;
mod compress;
mod counting;
mod decompress;
mod options;
mod parts;
mod plan;
mod range;
mod source;
mod workers;

pub use options::{Options, PackChoice, PackLookup, Stats, DEFAULT_BLOCK_SIZE, DEFAULT_MEMORY};

pub(crate) use compress::compress;
pub(crate) use decompress::{decompress, decompress_to_vec, After};
pub(crate) use parts::{compress_part, concat};
pub use plan::Known;
pub(crate) use range::decompress_range;
pub(crate) use source::{InMemory, Streamed};
