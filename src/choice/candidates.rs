//! What every policy of the choice shares: the `Setup` it codes with, the smallest coding of
//! a block found so far (`Best`), and the fast general codecs it tries (zstd at two levels,
//! LZMA).

use crate::codecs::cm::{Backend, CmConfig};
use crate::codecs::lzma::{Effort, Literals, Lzma};
use crate::codecs::zstd::Zstd;
use crate::codecs::{BlockCodec, ProgressFn};
use crate::format::Codec;

/// zstd level of the fast general codec.
pub(super) const ZSTD_LEVEL: i32 = 9;
/// zstd level for the small general blocks of tensor files (structured arrays, mixed small
/// tensors): the strongest; it decodes as fast as any level (headers take `ZSTD_LEVEL`: the
/// header codec beats both on every weight file measured, and level 19 costs ~1 ms even there).
pub(super) const ZSTD_STRONG: i32 = 19;
/// Largest block coded at `ZSTD_STRONG` (it compresses at a few MB/s).
pub(super) const STRONG_MAX: usize = 1 << 20;
/// Fewest bytes of a general block in a tensor file on which LZMA is tried after zstd however
/// little zstd made of it: on the small weights and protobuf of an ONNX model it makes 5-10%
/// less than zstd -19; on smaller blocks its fixed cost per try outweighs that. (Quantized
/// tensors from this size up to `STRONG_MAX` take LZMA's quick preset for the same reason.)
pub(super) const LZMA_TENSOR_MIN: usize = 8 << 10;
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

/// The smallest coding of a block found so far (storing it to start with).
pub(super) struct Best<'a> {
    pub(super) data: &'a [u8],
    pub(super) codec: Codec,
    pub(super) payload: Vec<u8>,
}

impl<'a> Best<'a> {
    /// `data` stored.
    pub(super) fn stored(data: &'a [u8]) -> Self {
        Best {
            data,
            codec: Codec::Stored,
            payload: Vec::new(),
        }
    }

    /// Archived size of the current choice.
    pub(super) fn len(&self) -> usize {
        match self.codec {
            Codec::Stored => self.data.len(),
            _ => self.payload.len(),
        }
    }

    /// Keeps `payload` if it is smaller than the current choice.
    pub(super) fn consider(&mut self, codec: Codec, payload: Vec<u8>) {
        if payload.len() < self.len() {
            self.codec = codec;
            self.payload = payload;
        }
    }

    /// Encodes the block with `codec` and keeps the payload if it is smaller.
    pub(super) fn try_codec(&mut self, codec: &dyn BlockCodec) {
        if let Some(p) = codec.encode(self.data) {
            self.consider(codec.codec(), p);
        }
    }
}

/// zstd at `ZSTD_LEVEL`.
pub(super) fn zstd() -> Zstd {
    Zstd { level: ZSTD_LEVEL }
}

/// zstd at `ZSTD_STRONG` for blocks of at most `STRONG_MAX` bytes, else at `ZSTD_LEVEL`.
pub(super) fn zstd_strong(data: &[u8]) -> Zstd {
    match data.len() <= STRONG_MAX {
        true => Zstd { level: ZSTD_STRONG },
        false => zstd(),
    }
}

/// Tries the LZMA codec on the block; where it wins, tries it again with literals by position
/// in 32-bit words (masked float grids: 2% smaller).
pub(super) fn lzma(best: &mut Best, effort: Effort) {
    for literals in [Literals::Bytes, Literals::Words] {
        match (Lzma { literals, effort }).encode(best.data) {
            Some(l) if l.len() < best.len() => best.consider(Codec::Lzma, l),
            _ => return,
        }
    }
}
