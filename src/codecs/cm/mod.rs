//! The context-mixing codec: every bit of a block is predicted by a model that learns while it
//! codes (context mixing of count experts, a match model and the SEP network) and range-coded. A
//! block is cut into lanes, contiguous segments predicted side by side as one batch. Encoding runs
//! the predictor on the worker (the producer) while a second thread range-codes its predictions;
//! decoding codes inline, since each prediction needs the bit before it.
//!
//! Payload: transforms (`u8`: bit 0, the x86 call transform; bit 1, the model starts from the
//! archive's pack; bit 2, with bit 1, its tables sized to the block; bit 3, the default level's
//! model; bit 4, the bilevel image expert, whose row length (`u32`) follows; bit 5, the wide
//! model), lane count
//! (`u16`), each lane's coded length (`u32`), then the lanes' range-coded streams (FORMAT.md,
//! codec 1).

mod backend;
mod bilevel;
mod coding;
mod config;
mod experts;
mod fast;
mod mixing;
mod net_inputs;
pub mod pack;
mod predictor;
mod runs;
mod states;
mod tables;

pub use backend::{Arena, Backend, CpuBackend};
pub use bilevel::detect as bilevel_rows;
pub use coding::{decode, encode, need, train};
pub use config::{looks_like_text, CmConfig, DEFAULT_LEVEL, LEVELS};
pub use pack::{Geometry, Pack, PackId};
pub use predictor::{Params, Predictor};
pub use tables::Workspace;

use super::block_codec::{BlockCodec, ProgressFn, Seen};
use crate::error::Result;
use crate::format::{cm_fits, Codec};

/// The context-mixing codec with configuration `config`, its predictor run by `backend`, its
/// progress reported to `progress` as it goes. It declines a payload of more than
/// `CM_MAX_RATIO` bytes per byte, which decoders refuse (the codec pads to the limit, so a
/// block is never near it).
pub struct Cm<'a> {
    /// The configuration (decoding: the archive's).
    pub config: &'a CmConfig,
    /// What runs the predictor.
    pub backend: &'a dyn Backend,
    /// Told of the block's bytes as they are coded.
    pub progress: ProgressFn<'a>,
}

impl BlockCodec for Cm<'_> {
    fn codec(&self) -> Codec {
        Codec::Cm
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        *out = self.backend.encode(data, self.config, self.progress);
        cm_fits(data.len() as u64, out.len() as u64)
    }

    fn decode_memory(&self, payload: &[u8], raw_len: usize) -> u64 {
        let config = self.config;
        coding::need(payload, raw_len, config.params, config.pack.as_deref())
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        self.backend
            .decode(payload, raw_len, self.config, self.progress, out)?;
        Ok(Seen::Nothing)
    }

    fn reports_progress(&self) -> bool {
        true
    }
}
