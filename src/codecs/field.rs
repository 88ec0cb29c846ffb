//! The field codec: a block of 16- or 32-bit values that vary smoothly along rows and down
//! columns (the fields of a weather or ocean model, a raster, a medical image, a grid of
//! measurements) is rewritten as the residuals of a plane predictor, which the context-mixing codec
//! then codes. Each value, read in the block's byte order, becomes a key: a 32-bit value an
//! order-preserving one (floats compare as their keys do), a 16-bit value itself (integers,
//! whose differences wrap the same signed or not). The key is predicted from its neighbours
//! left, up and up-left (`left + up - upleft`, with `up` the value `width` places back; a width
//! of 1 extrapolates the last two values) and the zigzagged difference, as wide as the value,
//! is written either value by value (high byte first) or as byte planes, high bytes first.
//! The bytes before the first value (fewer than a value's, where a header of odd length puts
//! the values off their alignment) and after the last whole one are copied as they are.
//!
//! Payload: flags (`u8`: bit 0, values big-endian; bit 1, byte planes; bit 2, 16-bit values;
//! bits 3-4, bytes before the first value, fewer than a value's; bit 5, the residuals' model
//! mixes leanly, one mixer and one probability map), row width (`u32`, 1 to `MAX_WIDTH`),
//! then a context-mixing payload of the residual bytes, as long as the block (FORMAT.md, codec 10).

use super::block_codec::{BlockCodec, ProgressFn, Seen};
use super::cm::{Backend, CmConfig, DEFAULT_LEVEL};
use crate::error::{Error, Result};
use crate::format::{cm_fits, Codec};
use std::borrow::Cow;

/// Widest row a payload may name.
pub const MAX_WIDTH: u32 = 1 << 16;

/// How a block's values are read and their residuals laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Bytes per value: 2 or 4.
    pub bytes: u8,
    /// Values are stored high byte first.
    pub big_endian: bool,
    /// Residuals as byte planes (one per byte of a value) rather than value by value.
    pub planes: bool,
    /// Values per row: the distance to the value above.
    pub width: u32,
    /// Bytes before the first value, fewer than `bytes`.
    pub skip: u8,
}

const BIG_ENDIAN: u8 = 1;
const PLANES: u8 = 2;
const SHORT: u8 = 4;
/// Flags bits of `skip`.
const SKIP_SHIFT: u32 = 3;
const SKIP: u8 = 3 << SKIP_SHIFT;
const LEAN: u8 = 32;

/// Order-preserving key of a 32-bit float's bits (a negative float's bits reversed).
#[inline]
pub fn key(bits: u32) -> u32 {
    match bits >> 31 {
        1 => !bits,
        _ => bits | 0x8000_0000,
    }
}

#[inline]
fn unkey(k: u32) -> u32 {
    match k >> 31 {
        1 => k & 0x7fff_ffff,
        _ => !k,
    }
}

/// A residual of `bytes`-byte values with its magnitude in the high bits and its sign in bit
/// 0, as wide as the values.
#[inline]
pub fn zigzag(r: u32, bytes: u8) -> u32 {
    match bytes {
        2 => ((r << 1) ^ ((r as i16 >> 15) as u32)) & 0xffff,
        _ => (r << 1) ^ ((r as i32 >> 31) as u32),
    }
}

/// The residual whose zigzag form is `z`.
#[inline]
fn unzigzag(z: u32) -> u32 {
    (z >> 1) ^ 0u32.wrapping_sub(z & 1)
}

/// The plane predictor's guess for key `i`, from the keys before it (`at(j)`: key `j`).
#[inline]
pub fn predict(at: impl Fn(usize) -> u32, i: usize, width: usize) -> u32 {
    match i {
        0 => 0,
        i if i <= width => at(i - 1),
        i => at(i - 1)
            .wrapping_add(at(i - width))
            .wrapping_sub(at(i - width - 1)),
    }
}

/// The key of the value that `c` begins with, read as `shape` says.
#[inline]
fn key_of(c: &[u8], bytes: u8, big_endian: bool) -> u32 {
    match (bytes, big_endian) {
        (2, true) => u16::from_be_bytes([c[0], c[1]]) as u32,
        (2, false) => u16::from_le_bytes([c[0], c[1]]) as u32,
        (_, true) => key(u32::from_be_bytes([c[0], c[1], c[2], c[3]])),
        (_, false) => key(u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    }
}

/// The keys of `data`'s whole `bytes`-byte values, read in the given byte order.
pub fn keys(data: &[u8], bytes: u8, big_endian: bool) -> Vec<u32> {
    data.chunks_exact(bytes as usize)
        .map(|c| key_of(c, bytes, big_endian))
        .collect()
}

/// The residual form of `data` (as long as `data`).
pub fn forward(data: &[u8], shape: Shape) -> Vec<u8> {
    let skip = (shape.skip as usize).min(data.len());
    let mut out = data[..skip].to_vec();
    out.extend(residuals(&data[skip..], shape));
    out
}

/// The residuals of `data`, whose first value starts at its first byte.
fn residuals(data: &[u8], shape: Shape) -> Vec<u8> {
    let b = shape.bytes as usize;
    let keys = keys(data, shape.bytes, shape.big_endian);
    let n = keys.len();
    let width = shape.width as usize;
    let mut out = vec![0u8; data.len()];
    for i in 0..n {
        let r = keys[i].wrapping_sub(predict(|j| keys[j], i, width));
        let z = zigzag(r, shape.bytes).to_be_bytes();
        let z = &z[4 - b..];
        match shape.planes {
            true => (0..b).for_each(|k| out[k * n + i] = z[k]),
            false => out[b * i..b * i + b].copy_from_slice(z),
        }
    }
    out[b * n..].copy_from_slice(&data[b * n..]);
    out
}

/// Appends the block whose residual form is `residuals` to `out`. The keys the predictor
/// needs are read back from what is already written (no second copy of the block).
pub fn inverse(residuals: &[u8], shape: Shape, out: &mut Vec<u8>) {
    let skip = (shape.skip as usize).min(residuals.len());
    out.extend_from_slice(&residuals[..skip]);
    let residuals = &residuals[skip..];
    let b = shape.bytes as usize;
    let n = residuals.len() / b;
    let width = shape.width as usize;
    let start = out.len();
    out.reserve(residuals.len());
    for i in 0..n {
        let z = (0..b).fold(0u32, |z, k| {
            let byte = match shape.planes {
                true => residuals[k * n + i],
                false => residuals[b * i + k],
            };
            z << 8 | byte as u32
        });
        let p = predict(
            |j| key_of(&out[start + b * j..], shape.bytes, shape.big_endian),
            i,
            width,
        );
        let k = unzigzag(z).wrapping_add(p);
        match (shape.bytes, shape.big_endian) {
            (2, true) => out.extend_from_slice(&(k as u16).to_be_bytes()),
            (2, false) => out.extend_from_slice(&(k as u16).to_le_bytes()),
            (_, true) => out.extend_from_slice(&unkey(k).to_be_bytes()),
            (_, false) => out.extend_from_slice(&unkey(k).to_le_bytes()),
        }
    }
    out.extend_from_slice(&residuals[b * n..]);
}

/// Codes `data` as `shape` says, its residuals with the context-mixing configuration `config`
/// on `backend` (a lean model is recorded as such: the archive's may not be).
pub fn encode(
    data: &[u8],
    shape: Shape,
    backend: &dyn Backend,
    config: &CmConfig,
    progress: ProgressFn,
) -> Vec<u8> {
    let flags = (shape.big_endian as u8 * BIG_ENDIAN)
        | (shape.planes as u8 * PLANES)
        | ((shape.bytes == 2) as u8 * SHORT)
        | (shape.skip << SKIP_SHIFT)
        | (config.params.lean as u8 * LEAN);
    let mut payload = vec![flags];
    payload.extend_from_slice(&shape.width.to_le_bytes());
    payload.extend_from_slice(&backend.encode(&forward(data, shape), config, progress));
    payload
}

/// The shape a payload names, whether its residuals' model is lean, and its context-mixing payload.
fn parse(payload: &[u8]) -> Result<(Shape, bool, &[u8])> {
    let [flags, a, b, c, d, inner @ ..] = payload else {
        return Err(Error::Truncated("field block"));
    };
    let width = u32::from_le_bytes([*a, *b, *c, *d]);
    let bytes = if flags & SHORT != 0 { 2 } else { 4 };
    let skip = (flags & SKIP) >> SKIP_SHIFT;
    if flags & !(BIG_ENDIAN | PLANES | SHORT | SKIP | LEAN) != 0
        || skip >= bytes
        || !(1..=MAX_WIDTH).contains(&width)
    {
        return Err(Error::Corrupt(format!(
            "field block of flags {flags:#x}, width {width}"
        )));
    }
    let shape = Shape {
        bytes,
        big_endian: flags & BIG_ENDIAN != 0,
        planes: flags & PLANES != 0,
        width,
        skip,
    };
    Ok((shape, flags & LEAN != 0, inner))
}

/// The configuration that decodes a payload's residuals: the archive's `config`, leaned where
/// the payload says its model is lean.
fn inner_config(lean: bool, config: &CmConfig) -> Cow<'_, CmConfig> {
    match lean {
        true => Cow::Owned(config.leaned()),
        false => Cow::Borrowed(config),
    }
}

/// Decodes a field payload of a `raw_len`-byte block coded with the archive's configuration
/// `config`, appending the block to `out`.
pub fn decode(
    payload: &[u8],
    raw_len: usize,
    backend: &dyn Backend,
    config: &CmConfig,
    progress: ProgressFn,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (shape, lean, inner) = parse(payload)?;
    let mut residuals = Vec::new();
    let config = inner_config(lean, config);
    backend.decode(inner, raw_len, &config, progress, &mut residuals)?;
    if residuals.len() != raw_len {
        return Err(Error::Corrupt("field block of the wrong length".into()));
    }
    inverse(&residuals, shape, out);
    Ok(())
}

/// The configuration that codes a field's residuals, for a block whose configuration is `config`:
/// up to the default level, whose speed is bounded, lean mixing (on residuals it takes a few
/// percent more bytes and about 40% less time), beyond it the block's own.
pub fn residual_config(config: &CmConfig) -> CmConfig {
    match config.level <= DEFAULT_LEVEL {
        true => config.without_pack().leaned(),
        false => config.without_pack(),
    }
}

/// The field codec in `shape` (encoding declines without one; decoding reads it from the
/// payload), its residuals coded by the context-mixing codec: encoding with
/// `residual_config(config)`, decoding with the archive's configuration `config`, leaned
/// where the payload says so.
pub struct Field<'a> {
    /// How the block's values are read.
    pub shape: Option<Shape>,
    /// The block's context-mixing configuration.
    pub config: &'a CmConfig,
    /// What runs the predictor.
    pub backend: &'a dyn Backend,
    /// Told of the block's bytes as they are coded.
    pub progress: ProgressFn<'a>,
}

impl BlockCodec for Field<'_> {
    fn codec(&self) -> Codec {
        Codec::Field
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        let Some(shape) = self.shape else {
            return false;
        };
        let config = residual_config(self.config);
        *out = encode(data, shape, self.backend, &config, self.progress);
        cm_fits(data.len() as u64, out.len() as u64)
    }

    fn decode_memory(&self, payload: &[u8], raw_len: usize) -> u64 {
        // The residuals, and the context-mixing model that decodes them.
        let Ok((_, lean, inner)) = parse(payload) else {
            return 0;
        };
        let config = inner_config(lean, self.config);
        let tables = super::cm::need(inner, raw_len, config.params, config.pack.as_deref());
        raw_len as u64 + tables
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        decode(
            payload,
            raw_len,
            self.backend,
            self.config,
            self.progress,
            out,
        )?;
        Ok(Seen::Nothing)
    }

    fn reports_progress(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::cm::CpuBackend;
    use crate::testing::xorshift;

    #[test]
    fn keys_keep_the_order_of_floats() {
        let xs = [
            f32::NEG_INFINITY,
            -2.5,
            -0.0,
            0.0,
            1e-40,
            1.0,
            3.0e38,
            f32::INFINITY,
        ];
        let ks: Vec<u32> = xs.iter().map(|x| key(x.to_bits())).collect();
        assert!(ks.windows(2).all(|w| w[0] < w[1]));
        for x in xs {
            assert_eq!(unkey(key(x.to_bits())), x.to_bits());
        }
    }

    #[test]
    fn residuals_invert_for_every_shape_and_length() {
        let mut s = 7u64;
        for len in [0, 1, 3, 4, 5, 17, 400, 4099] {
            let data: Vec<u8> = (0..len).map(|_| xorshift(&mut s) as u8).collect();
            let widths = [1, 2, 3, 7, 100, 2000].into_iter();
            for (width, bytes, skip) in widths.flat_map(|w| [(w, 2, 1), (w, 4, 0), (w, 4, 3)]) {
                for (big_endian, planes) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let shape = Shape {
                        bytes,
                        big_endian,
                        planes,
                        width,
                        skip,
                    };
                    let r = forward(&data, shape);
                    assert_eq!(r.len(), data.len());
                    let mut back = vec![9];
                    inverse(&r, shape, &mut back);
                    assert_eq!(&back[1..], &data[..], "{len} {shape:?}");
                }
            }
        }
    }

    #[test]
    fn a_smooth_field_round_trips_smaller_than_its_bytes() {
        let field = crate::testing::smooth_field(120, 90, true);
        let backend = CpuBackend::default();
        let config = CmConfig::for_level(1);
        let shape = Shape {
            bytes: 4,
            big_endian: true,
            planes: true,
            width: 90,
            skip: 0,
        };
        let payload = encode(&field, shape, &backend, &config, &|_| {});
        let plain = backend.encode(&field, &config, &|_| {});
        assert!(
            payload.len() < plain.len(),
            "{} {}",
            payload.len(),
            plain.len()
        );
        let mut out = Vec::new();
        decode(&payload, field.len(), &backend, &config, &|_| {}, &mut out).unwrap();
        assert_eq!(out, field);
        // Hostile shapes are refused before any decoding.
        for bad in [
            [0x40u8, 90, 0, 0, 0],
            [4 | 2 << 3, 90, 0, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 1, 0, 1, 0],
        ] {
            let mut p = payload.clone();
            p[..5].copy_from_slice(&bad);
            assert!(decode(&p, field.len(), &backend, &config, &|_| {}, &mut out).is_err());
        }
        assert!(decode(
            &payload[..3],
            field.len(),
            &backend,
            &config,
            &|_| {},
            &mut out
        )
        .is_err());
    }

    #[test]
    fn lean_residuals_decode_with_the_archives_model() {
        let field = crate::testing::smooth_raster(60, 80);
        let backend = CpuBackend::default();
        let config = CmConfig::default();
        let shape = Shape {
            bytes: 2,
            big_endian: false,
            planes: false,
            width: 80,
            skip: 0,
        };
        let payload = encode(&field, shape, &backend, &config.leaned(), &|_| {});
        assert_eq!(payload[0] & LEAN, LEAN);
        let full = encode(&field, shape, &backend, &config, &|_| {});
        assert_ne!(payload[5..], full[5..]);
        let mut out = Vec::new();
        decode(&payload, field.len(), &backend, &config, &|_| {}, &mut out).unwrap();
        assert_eq!(out, field);
        // Without the flag, the residuals are read with the full model: other bytes or an error.
        let mut unflagged = payload.clone();
        unflagged[0] &= !LEAN;
        let mut wrong = Vec::new();
        let read = decode(
            &unflagged,
            field.len(),
            &backend,
            &config,
            &|_| {},
            &mut wrong,
        );
        assert!(read.is_err() || wrong != field);
    }
}
