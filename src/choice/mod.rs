//! Which codec a block gets. Each candidate's size is predicted from a cheap look at the block
//! (a zstd pass and an order-0 entropy over a sample; the planes codec itself, which is fast),
//! and the slow context-mixing model is only run where its predicted gain pays for its time:
//! never in a file with tensors, whose speed is the tensor path's.
//!
//! The policy is one small function per kind of block (`tensor` for float arrays, quantized
//! integers and tensor headers; `general` for everything else), each trying codecs through
//! the one codec interface and keeping the smallest payload; every threshold is a constant
//! documented beside the function that uses it.

pub mod base;
mod field;
mod general;
mod sample;
mod tensor;
pub mod text;

#[cfg(test)]
mod tests;

pub use sample::cm_predicted;

use crate::codecs::cm::{Backend, CmConfig};
use crate::codecs::float::delta::Delta;
use crate::codecs::lzma::{Effort, Literals, Lzma};
use crate::codecs::zstd::Zstd;
use crate::codecs::{BlockCodec, ProgressFn};
use crate::containers::Kind;
use crate::format::Codec;

/// zstd level of the fast general codec.
const ZSTD_LEVEL: i32 = 9;
/// zstd level for the small general blocks of tensor files (structured arrays, mixed small
/// tensors): the strongest; it decodes as fast as any level (headers take `ZSTD_LEVEL`: the
/// header codec beats both on every weight file measured, and level 19 costs ~1 ms even there).
const ZSTD_STRONG: i32 = 19;
/// Largest block coded at `ZSTD_STRONG` (it compresses at a few MB/s).
const STRONG_MAX: usize = 1 << 20;
/// A tensor block's zstd sample is only taken where at least this share of its windows
/// repeat (`repeats`). Measured on 471 tensor blocks (weights, dequantized weights, the binary
/// corpora read as each float type): every block zstd won had at least 0.034; trained weights
/// had at most 0.005 (f32) and 0.0197 (bf16). Counting takes half the time of the sample.
const REPEATS_MIN: f64 = 0.02;
/// Fewest bytes of a general block in a tensor file on which LZMA is tried after zstd however
/// little zstd made of it: on the small weights and protobuf of an ONNX model it makes 5-10%
/// less than zstd -19; on smaller blocks its fixed cost per try outweighs that. (Quantized
/// tensors from this size up to `STRONG_MAX` take LZMA's quick preset for the same reason.)
const LZMA_TENSOR_MIN: usize = 8 << 10;
/// A delta block (`--patch-from`) under this share of the block's bytes is kept without trying
/// the other codecs: they make trained weights no smaller than 0.6 of them.
const DELTA_SURE: f64 = 0.4;

/// What the policy codes with besides the block: the context-mixing configuration and what
/// runs it, and where progress goes.
#[derive(Clone, Copy)]
pub struct Setup<'a> {
    /// The context-mixing codec's configuration for the block.
    pub cm: &'a CmConfig,
    /// What runs the context-mixing codec's predictor.
    pub backend: &'a dyn Backend,
    /// Told of the block's bytes as they are coded.
    pub progress: ProgressFn<'a>,
}

/// What a block is, besides its bytes.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    /// What it holds.
    pub kind: Kind,
    /// Whether it is from a file with tensors.
    pub tensor_file: bool,
    /// Where its values start in the base file (`--patch-from`) and the base file's bytes, if
    /// the block lies in a tensor that matched one of the base's.
    pub base: Option<(u64, &'a [u8])>,
}

/// Codes `data` (a block at `place`) with the codec predicted to be best; returns the codec
/// and payload (empty for `Stored`: the payload is the data itself). `spare` is a buffer whose
/// room the payload may take.
pub fn code_block(data: &[u8], place: Place, setup: &Setup, spare: Vec<u8>) -> (Codec, Vec<u8>) {
    let mut best = Best::stored(data);
    // Against the same tensor of the base; where that takes under `DELTA_SURE` of the block,
    // nothing else is tried.
    if let (Some(base), Kind::Tensor(dtype)) = (place.base, place.kind) {
        let (at, base) = base;
        let width = dtype.width();
        best.try_codec(&Delta { base, at, width });
        if best.codec == Codec::Delta && (best.len() as f64) < DELTA_SURE * data.len() as f64 {
            (setup.progress)(data.len() as u64);
            return (best.codec, best.payload);
        }
    }
    match place.kind {
        Kind::Tensor(dtype) => tensor::floats(data, dtype, setup, &mut best, spare),
        Kind::Quantized => tensor::quantized(data, setup, &mut best),
        Kind::TensorHeader => tensor::header(data, setup, &mut best),
        Kind::General => general::general(data, place.tensor_file, setup, &mut best, spare),
    }
    (best.codec, best.payload)
}

/// The smallest coding of a block found so far (storing it to start with).
struct Best<'a> {
    data: &'a [u8],
    codec: Codec,
    payload: Vec<u8>,
}

impl<'a> Best<'a> {
    /// `data` stored.
    fn stored(data: &'a [u8]) -> Self {
        Best {
            data,
            codec: Codec::Stored,
            payload: Vec::new(),
        }
    }

    /// Archived size of the current choice.
    fn len(&self) -> usize {
        match self.codec {
            Codec::Stored => self.data.len(),
            _ => self.payload.len(),
        }
    }

    /// Keeps `payload` if it is smaller than the current choice.
    fn consider(&mut self, codec: Codec, payload: Vec<u8>) {
        if payload.len() < self.len() {
            self.codec = codec;
            self.payload = payload;
        }
    }

    /// Encodes the block with `codec` and keeps the payload if it is smaller.
    fn try_codec(&mut self, codec: &dyn BlockCodec) {
        if let Some(p) = codec.encode(self.data) {
            self.consider(codec.codec(), p);
        }
    }
}

/// zstd at `ZSTD_LEVEL`.
fn zstd() -> Zstd {
    Zstd { level: ZSTD_LEVEL }
}

/// zstd at `ZSTD_STRONG` for blocks of at most `STRONG_MAX` bytes, else at `ZSTD_LEVEL`.
fn zstd_strong(data: &[u8]) -> Zstd {
    match data.len() <= STRONG_MAX {
        true => Zstd { level: ZSTD_STRONG },
        false => zstd(),
    }
}

/// Tries the LZMA codec on the block; where it wins, tries it again with literals by position
/// in 32-bit words (masked float grids: 2% smaller).
fn lzma(best: &mut Best, effort: Effort) {
    for literals in [Literals::Bytes, Literals::Words] {
        match (Lzma { literals, effort }).encode(best.data) {
            Some(l) if l.len() < best.len() => best.consider(Codec::Lzma, l),
            _ => return,
        }
    }
}
