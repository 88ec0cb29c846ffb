//! The block codecs, one module each, encoder and decoder side by side: `stored`, `zstd`, `lzma`,
//! `cm` (context mixing: the predictor that learns while it codes), `net` (the SEP networks it may mix in), `lanes`, `field` (smooth 32-bit fields as residuals
//! for the context-mixing codec), the float codecs under `float`, and `delta` (a tensor against the same
//! tensor of an earlier file).
//! Which codec a block gets is `choice`'s business; here every decoder is reached through one
//! entry, [`Decoder::decode`], which appends exactly the block's bytes to the caller's buffer.

pub mod cm;
pub mod delta;
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

/// What decoding a block needs besides its payload.
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
        let start = out.len();
        // The planes and repeated-values codecs hash their output as they write it (while it
        // is in cache); the others' is hashed after.
        let mut streamed = None;
        match codec {
            Codec::Stored => {
                stored::check(payload, raw_len, raw_hash, payload_hash)?;
                out.extend_from_slice(payload);
                streamed = Some(raw_hash);
            }
            Codec::Cm => self
                .backend
                .decode(payload, raw_len, self.cm, self.progress, out)?,
            Codec::Zstd => zstd::decode(payload, raw_len, out)?,
            Codec::Lzma => lzma::decode(payload, raw_len, out)?,
            Codec::Delta => {
                let base = self.base.ok_or_else(|| {
                    Error::Corrupt("a delta block in an archive made against no base".into())
                })?;
                delta::decode(payload, base, raw_len, out)?
            }
            Codec::Planes => {
                streamed = Some(hashed(|seen| {
                    float::decode_append(payload, raw_len, out, seen)
                })?);
            }
            Codec::Bytes => {
                streamed = Some(hashed(|seen| {
                    float::bytes::decode(payload, raw_len, out, seen)
                })?);
            }
            Codec::TensorHeader => float::tensor_header::decode(payload, raw_len, out)?,
            Codec::Recent => float::recent::decode(payload, raw_len, out)?,
            Codec::Scaled => float::scaled::decode(payload, raw_len, out)?,
            Codec::Repeated => {
                streamed = Some(hashed(|seen| {
                    float::repeated::decode(payload, raw_len, out, seen)
                })?);
            }
            Codec::Copies => float::copies::decode(payload, raw_len, out)?,
            Codec::Field => {
                field::decode(payload, raw_len, self.backend, self.cm, self.progress, out)?
            }
            Codec::Swapped => {
                let [tag, width, inner @ ..] = payload else {
                    return Err(Error::Truncated("swapped block"));
                };
                let (inner_codec, width) = (Codec::from_tag(*tag)?, *width as usize);
                if !matches!(width, 2 | 4 | 8) || !raw_len.is_multiple_of(width) {
                    return Err(Error::Corrupt(format!(
                        "swapped block of {width}-byte values"
                    )));
                }
                decode_float(inner_codec, inner, raw_len, out, &mut |_| {})?;
                float::swap_order(out.get_mut(start..).unwrap_or_default(), width);
            }
        }
        if !matches!(codec, Codec::Cm | Codec::Field) {
            (self.progress)(raw_len as u64);
        }
        let block = out.get(start..).unwrap_or_default();
        let hash = streamed.unwrap_or_else(|| xxh3_64(block));
        if block.len() != raw_len || hash != raw_hash {
            return Err(Error::Checksum("a block's bytes".into()));
        }
        Ok(())
    }
}

/// Decodes a float codec's payload (the inner codec of a swapped block), appending to `out`.
fn decode_float(
    codec: Codec,
    payload: &[u8],
    raw_len: usize,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    match codec {
        Codec::Planes => float::decode_append(payload, raw_len, out, seen),
        Codec::Recent => float::recent::decode(payload, raw_len, out),
        Codec::Scaled => float::scaled::decode(payload, raw_len, out),
        Codec::Repeated => float::repeated::decode(payload, raw_len, out, seen),
        Codec::Copies => float::copies::decode(payload, raw_len, out),
        c => Err(Error::Corrupt(format!(
            "a swapped block of codec {}",
            c.name()
        ))),
    }
}

/// Runs `decode`, which hands its output over piece by piece as it writes it, and returns
/// the output's xxh3-64.
fn hashed(decode: impl FnOnce(&mut dyn FnMut(&[u8])) -> Result<()>) -> Result<u64> {
    let mut h = Xxh3::new();
    decode(&mut |piece| h.update(piece))?;
    Ok(h.digest())
}
