//! The block codecs, one module each, encoder and decoder side by side, every one behind the
//! same interface, [`BlockCodec`]: `stored`, `zstd`, `lzma`, `cm` (context mixing: the predictor
//! that learns while it codes), `jpeg` (JPEG files recompressed), `deflate` (deflate streams as their data and a record that rebuilds them), `field` (smooth 16- and 32-bit fields as residuals for `cm`), the
//! float codecs under `float` (among them `delta`, a tensor against the same tensor of an
//! earlier file); `net` holds the SEP networks that `cm` may mix in and `lanes` how a block is
//! cut into lanes for both.
//! Which codec a block gets is `choice`'s business; every decoder is reached through one entry,
//! [`Decoder::decode`], which finds the codec by its tag and checks that it appended exactly the
//! block's bytes.

mod block_codec;
pub mod cm;
pub mod deflate;
pub mod field;
pub mod float;
pub mod jpeg;
pub mod lanes;
pub mod lzma;
pub mod net;
pub mod stored;
pub mod x86;
pub mod zstd;

pub use block_codec::{BlockCodec, ProgressFn, Seen};

use crate::error::{Error, Result};
use crate::format::checksum::{xxh3_64, Xxh3};
use crate::format::Codec;
use cm::{Backend, CmConfig};

/// What decoding a block needs besides its payload: what the archive's header and the caller
/// give.
#[derive(Clone, Copy)]
pub struct Decoder<'a> {
    /// The context-mixing codec's configuration, from the archive header.
    pub cm: &'a CmConfig,
    /// What runs the context-mixing codec's predictor.
    pub backend: &'a dyn Backend,
    /// Told of every block's bytes as they are decoded.
    pub progress: ProgressFn<'a>,
    /// The base file of the archive's delta blocks, if it has one (`--patch-from`).
    pub base: Option<&'a [u8]>,
}

impl Decoder<'_> {
    /// The decoder of each tag (the settings only an encoder uses left at any value); `None`
    /// for a delta block in an archive made against no base.
    fn by_tag(&self, codec: Codec) -> Option<Box<dyn BlockCodec + '_>> {
        use float::DType::F32;
        let (config, backend, progress) = (self.cm, self.backend, self.progress);
        Some(match codec {
            Codec::Stored => Box::new(stored::Stored),
            Codec::Cm => Box::new(cm::Cm {
                config,
                backend,
                progress,
            }),
            Codec::Zstd => Box::new(zstd::Zstd { level: 0 }),
            Codec::Planes => Box::new(float::Planes { dtype: F32 }),
            Codec::TensorHeader => Box::new(float::tensor_header::TensorHeader),
            Codec::Recent => Box::new(float::recent::Recent {
                dtype: F32,
                size: 0,
            }),
            Codec::Scaled => Box::new(float::scaled::Scaled { dtype: F32 }),
            Codec::Repeated => Box::new(float::repeated::Repeated { dtype: F32 }),
            Codec::Copies => Box::new(float::copies::Copies { dtype: F32 }),
            Codec::Swapped => Box::new(float::swapped::Swapped {
                inner: &float::Planes { dtype: F32 },
                width: 4,
            }),
            Codec::Field => Box::new(field::Field {
                shape: None,
                config,
                backend,
                progress,
            }),
            Codec::Lzma => Box::new(lzma::Lzma {
                literals: lzma::Literals::Bytes,
                effort: lzma::Effort::Quick,
            }),
            Codec::Delta => Box::new(float::delta::Delta {
                base: self.base?,
                at: 0,
                width: 4,
            }),
            Codec::ByteTable => Box::new(float::bytes::ByteTable),
            Codec::Jpeg => Box::new(jpeg::Jpeg),
            Codec::Deflate => Box::new(deflate::Deflate { config, backend }),
        })
    }

    /// The most bytes decoding `payload`, a block of `raw_len` bytes that `codec` made,
    /// allocates besides the payload: its bytes (none for a stored block, whose bytes are its
    /// payload's) and its codec's tables (`BlockCodec::decode_memory`).
    pub fn memory(&self, codec: Codec, payload: &[u8], raw_len: u64) -> u64 {
        let raw = usize::try_from(raw_len).unwrap_or(usize::MAX);
        let tables = self
            .by_tag(codec)
            .map_or(0, |d| d.decode_memory(payload, raw));
        let out = if codec == Codec::Stored { 0 } else { raw_len };
        out.saturating_add(tables)
    }

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
        let decoder = self.by_tag(codec).ok_or_else(|| {
            Error::Corrupt("a delta block in an archive made against no base".into())
        })?;
        let start = out.len();
        let mut h = Xxh3::new();
        let seen = decoder.decode(payload, raw_len, out, &mut |piece| h.update(piece))?;
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
