//! The block codecs, one module each, encoder and decoder side by side, every one behind the
//! same interface, [`BlockCodec`]: `stored`, `zstd`, `lzma`, `cm` (context mixing: the predictor
//! that learns while it codes), `field` (smooth 16- and 32-bit fields as residuals for `cm`), the
//! float codecs under `float` (among them `delta`, a tensor against the same tensor of an
//! earlier file); `net` holds the SEP networks that `cm` may mix in and `lanes` how a block is
//! cut into lanes for both.
//! Which codec a block gets is `choice`'s business; every decoder is reached through one entry,
//! [`Setup::decode`], which finds the codec by its tag ([`by_tag`]) and checks that it appended
//! exactly the block's bytes.

pub mod cm;
pub mod field;
pub mod float;
pub mod lanes;
pub mod lzma;
pub mod net;
pub mod stored;
pub mod x86;
pub mod zstd;

use crate::error::{Error, Result};
use crate::format::checksum::{xxh3_64, Xxh3};
use crate::format::Codec;
use cm::{Backend, CmConfig};

/// Progress callback: called with the number of input bytes just finished.
pub type ProgressFn<'a> = &'a (dyn Fn(u64) + Sync);

/// What coding a block needs besides its bytes and the codec's own settings.
#[derive(Clone, Copy)]
pub struct Setup<'a> {
    /// The context-mixing codec's configuration (decoding: the archive header's).
    pub cm: &'a CmConfig,
    /// What runs the context-mixing codec's predictor.
    pub backend: &'a dyn Backend,
    /// Told of every block's bytes as they are decoded.
    pub progress: ProgressFn<'a>,
    /// The base file of the archive's delta blocks, if it has one (`--patch-from`).
    pub base: Option<&'a [u8]>,
}

/// Whether a decoder handed every piece of its output to the `seen` callback as it wrote it
/// (while in cache), so that the caller need not read the block again to hash it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Every byte went through `seen`, in order.
    All,
    /// None did.
    Nothing,
}

/// One block codec: the encoder and the decoder of one tag of the format. A codec's own
/// settings (a zstd level, a float type) are the fields of its value; what every codec may
/// need besides (the context-mixing configuration, progress, a base file) is the `Setup`.
pub trait BlockCodec: Sync {
    /// Its tag in the archive.
    fn codec(&self) -> Codec;

    /// A trial encode of `data`: its payload, written into `out` (cleared first, so that its
    /// room is reused), and `true`; or `false` where the codec declines the block (not a block
    /// it codes, or a payload a decoder would refuse).
    fn encode_into(&self, data: &[u8], setup: &Setup, out: &mut Vec<u8>) -> bool;

    /// `encode_into` a new vector: the payload, or `None`.
    fn encode(&self, data: &[u8], setup: &Setup) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(data, setup, &mut out).then_some(out)
    }

    /// Decodes `payload`, a block of `raw_len` bytes, appending exactly those bytes to `out`
    /// (on an error `out` may hold part of them). A codec may hand each piece of its output to
    /// `seen` as it writes it, and then says so.
    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        setup: &Setup,
        out: &mut Vec<u8>,
        seen: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen>;

    /// Whether the decoder reports its own progress (as it goes) rather than the caller once
    /// the block is done.
    fn reports_progress(&self) -> bool {
        false
    }
}

/// The codec of each tag, with the settings its decoder ignores (they are in the payload).
pub fn by_tag(codec: Codec) -> &'static dyn BlockCodec {
    use float::DType::F32;
    match codec {
        Codec::Stored => &stored::Stored,
        Codec::Cm => &cm::Cm,
        Codec::Zstd => &zstd::Zstd { level: 0 },
        Codec::Planes => &float::Planes { dtype: F32 },
        Codec::TensorHeader => &float::tensor_header::TensorHeader,
        Codec::Recent => &float::recent::Recent {
            dtype: F32,
            size: 0,
        },
        Codec::Scaled => &float::scaled::Scaled { dtype: F32 },
        Codec::Repeated => &float::repeated::Repeated { dtype: F32 },
        Codec::Copies => &float::copies::Copies { dtype: F32 },
        Codec::Swapped => &float::swapped::SWAPPED,
        Codec::Field => &field::Field { shape: None },
        Codec::Lzma => &lzma::Lzma {
            literals: lzma::Literals::Bytes,
            effort: lzma::Effort::Quick,
        },
        Codec::Delta => &float::delta::Delta {
            base: (0, &[]),
            width: 4,
        },
        Codec::Bytes => &float::bytes::Bytes,
    }
}

impl Setup<'_> {
    /// Decodes `payload`, a block that `codec` made of `raw_len` bytes whose xxh3-64 the
    /// archive records as `raw_hash` (and the payload's as `payload_hash`), appending exactly
    /// those bytes to `out`; on an error `out` may hold part of them.
    pub fn decode(
        &self,
        codec: Codec,
        payload: &[u8],
        raw_len: usize,
        hashes: (u64, u64),
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (raw_hash, payload_hash) = hashes;
        if codec == Codec::Stored {
            stored::check(payload, raw_len, raw_hash, payload_hash)?;
        }
        let start = out.len();
        let decoder = by_tag(codec);
        let mut h = Xxh3::new();
        let seen = decoder.decode(payload, raw_len, self, out, &mut |piece| h.update(piece))?;
        if !decoder.reports_progress() {
            (self.progress)(raw_len as u64);
        }
        let block = out.get(start..).unwrap_or_default();
        let hash = match (codec, seen) {
            // A stored block's payload checksum, checked already, is its output's.
            (Codec::Stored, _) => raw_hash,
            (_, Seen::All) => h.digest(),
            (_, Seen::Nothing) => xxh3_64(block),
        };
        if block.len() != raw_len || hash != raw_hash {
            return Err(Error::Checksum("a block's bytes".into()));
        }
        Ok(())
    }
}
