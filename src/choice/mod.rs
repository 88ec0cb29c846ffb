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
mod candidates;
mod field;
mod general;
mod sample;
mod tensor;
pub mod text;

#[cfg(test)]
mod tests;

pub use candidates::Setup;
pub use sample::cm_predicted;

use crate::codecs::deflate::Deflate;
use crate::codecs::float::delta::Delta;
use crate::codecs::jpeg::Jpeg;
use crate::containers::Kind;
use crate::format::Codec;
use candidates::Best;

/// A delta block (`--patch-from`) under this share of the block's bytes is kept without trying
/// the other codecs: they make trained weights no smaller than 0.6 of them.
const DELTA_SURE: f64 = 0.4;

/// A JPEG block the JPEG codec takes to under this share of its bytes is kept without
/// trying the other codecs (photos: 0.7-0.8).
const JPEG_SURE: f64 = 0.9;

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
    if let (Some((at, base)), Kind::Tensor(dtype)) = (place.base, place.kind) {
        let width = dtype.width();
        best.try_codec(&Delta { base, at, width });
        if (best.len() as f64) < DELTA_SURE * data.len() as f64 {
            (setup.progress)(data.len() as u64);
            return (best.codec, best.payload);
        }
    }
    match place.kind {
        Kind::Tensor(dtype) => tensor::floats(data, dtype, setup, &mut best, spare),
        Kind::Quantized => tensor::quantized(data, setup, &mut best),
        Kind::TensorHeader => tensor::header(data, setup, &mut best),
        Kind::General => general::general(data, place.tensor_file, setup, &mut best, spare),
        Kind::Jpeg => {
            // A JPEG the codec declines (damaged, unusual) is general data, and so is one it
            // takes little off (a small image), which the other codecs then try to beat.
            best.try_codec(&Jpeg);
            if best.codec != Codec::Jpeg || best.len() as f64 > JPEG_SURE * data.len() as f64 {
                general::general(data, place.tensor_file, setup, &mut best, spare);
            } else {
                (setup.progress)(data.len() as u64);
            }
        }
        Kind::Deflate => {
            // A stream the codec declines (one it cannot rebuild exactly) is general data.
            best.try_codec(&Deflate {
                config: setup.cm,
                backend: setup.backend,
            });
            match best.codec {
                Codec::Deflate => (setup.progress)(data.len() as u64),
                _ => general::general(data, place.tensor_file, setup, &mut best, spare),
            }
        }
    }
    (best.codec, best.payload)
}
