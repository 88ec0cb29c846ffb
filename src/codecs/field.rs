//! The field codec: a block of 32-bit values that vary smoothly along rows and down columns
//! (the fields of a weather or ocean model, a raster, a grid of measurements) is rewritten as
//! the residuals of a plane predictor, which the neural codec then codes. Each value, read in
//! the block's byte order, becomes an order-preserving key (floats compare as their keys do);
//! the key is predicted from its neighbours left, up and up-left (`left + up - upleft`, with
//! `up` the value `width` places back; a width of 1 extrapolates the last two values) and the
//! zigzagged difference is written either value by value (high byte first) or as four byte
//! planes, high bytes first. Bytes after the last whole value are copied as they are.
//!
//! Payload: flags (`u8`: bit 0, values big-endian; bit 1, byte planes), row width (`u32`, 1 to
//! `MAX_WIDTH`), then a neural payload of the residual bytes, as long as the block (FORMAT.md,
//! codec 10).

use super::neural::{Backend, NeuralConfig};
use super::ProgressFn;
use crate::error::{Error, Result};

/// Widest row a payload may name.
pub const MAX_WIDTH: u32 = 1 << 16;

/// How a block's values are read and their residuals laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Values are stored high byte first.
    pub big_endian: bool,
    /// Residuals as four byte planes rather than value by value.
    pub planes: bool,
    /// Values per row: the distance to the value above.
    pub width: u32,
}

const BIG_ENDIAN: u8 = 1;
const PLANES: u8 = 2;

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

/// A residual with its magnitude in the high bits and its sign in bit 0.
#[inline]
pub fn zigzag(r: u32) -> u32 {
    (r << 1) ^ ((r as i32 >> 31) as u32)
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

/// The key of the value whose four bytes `c` begins with, read in the given byte order.
#[inline]
fn key_of(c: &[u8], big_endian: bool) -> u32 {
    let b = [c[0], c[1], c[2], c[3]];
    key(match big_endian {
        true => u32::from_be_bytes(b),
        false => u32::from_le_bytes(b),
    })
}

/// The keys of `data`'s whole values, read in the given byte order.
pub fn keys(data: &[u8], big_endian: bool) -> Vec<u32> {
    data.chunks_exact(4)
        .map(|c| key_of(c, big_endian))
        .collect()
}

/// The residual form of `data` (as long as `data`).
pub fn forward(data: &[u8], shape: Shape) -> Vec<u8> {
    let keys = keys(data, shape.big_endian);
    let n = keys.len();
    let width = shape.width as usize;
    let mut out = vec![0u8; data.len()];
    for i in 0..n {
        let r = keys[i].wrapping_sub(predict(|j| keys[j], i, width));
        let z = zigzag(r).to_be_bytes();
        match shape.planes {
            true => (0..4).for_each(|k| out[k * n + i] = z[k]),
            false => out[4 * i..4 * i + 4].copy_from_slice(&z),
        }
    }
    out[4 * n..].copy_from_slice(&data[4 * n..]);
    out
}

/// Appends the block whose residual form is `residuals` to `out`. The keys the predictor
/// needs are read back from what is already written (no second copy of the block).
pub fn inverse(residuals: &[u8], shape: Shape, out: &mut Vec<u8>) {
    let n = residuals.len() / 4;
    let width = shape.width as usize;
    let start = out.len();
    out.reserve(residuals.len());
    for i in 0..n {
        let z = match shape.planes {
            true => [0, 1, 2, 3].map(|k| residuals[k * n + i]),
            false => [0, 1, 2, 3].map(|k| residuals[4 * i + k]),
        };
        let z = u32::from_be_bytes(z);
        let r = (z >> 1) ^ 0u32.wrapping_sub(z & 1);
        let p = predict(
            |j| key_of(&out[start + 4 * j..], shape.big_endian),
            i,
            width,
        );
        let bits = unkey(r.wrapping_add(p));
        out.extend_from_slice(&match shape.big_endian {
            true => bits.to_be_bytes(),
            false => bits.to_le_bytes(),
        });
    }
    out.extend_from_slice(&residuals[4 * n..]);
}

/// Codes `data` as `shape` says with the neural codec's `model` on `backend`.
pub fn encode(
    data: &[u8],
    shape: Shape,
    backend: &dyn Backend,
    model: &NeuralConfig,
    progress: ProgressFn,
) -> Vec<u8> {
    let flags = (shape.big_endian as u8 * BIG_ENDIAN) | (shape.planes as u8 * PLANES);
    let mut payload = vec![flags];
    payload.extend_from_slice(&shape.width.to_le_bytes());
    payload.extend_from_slice(&backend.encode(&forward(data, shape), model, progress));
    payload
}

/// The shape a payload names and its neural payload.
fn parse(payload: &[u8]) -> Result<(Shape, &[u8])> {
    let [flags, a, b, c, d, inner @ ..] = payload else {
        return Err(Error::Truncated("field block"));
    };
    let width = u32::from_le_bytes([*a, *b, *c, *d]);
    if flags & !(BIG_ENDIAN | PLANES) != 0 || !(1..=MAX_WIDTH).contains(&width) {
        return Err(Error::Corrupt(format!(
            "field block of flags {flags:#x}, width {width}"
        )));
    }
    let shape = Shape {
        big_endian: flags & BIG_ENDIAN != 0,
        planes: flags & PLANES != 0,
        width,
    };
    Ok((shape, inner))
}

/// Decodes a field payload of a `raw_len`-byte block, appending the block to `out`.
pub fn decode(
    payload: &[u8],
    raw_len: usize,
    backend: &dyn Backend,
    model: &NeuralConfig,
    progress: ProgressFn,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (shape, inner) = parse(payload)?;
    let mut residuals = Vec::new();
    backend.decode(inner, raw_len, model, progress, &mut residuals)?;
    if residuals.len() != raw_len {
        return Err(Error::Corrupt("field block of the wrong length".into()));
    }
    inverse(&residuals, shape, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::neural::CpuBackend;
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
            for width in [1, 2, 3, 7, 100, 2000] {
                for (big_endian, planes) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let shape = Shape {
                        big_endian,
                        planes,
                        width,
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
        let model = NeuralConfig::for_level(1, <_>::default());
        let shape = Shape {
            big_endian: true,
            planes: true,
            width: 90,
        };
        let payload = encode(&field, shape, &backend, &model, &|_| {});
        let plain = backend.encode(&field, &model, &|_| {});
        assert!(
            payload.len() < plain.len(),
            "{} {}",
            payload.len(),
            plain.len()
        );
        let mut out = Vec::new();
        decode(&payload, field.len(), &backend, &model, &|_| {}, &mut out).unwrap();
        assert_eq!(out, field);
        // Hostile shapes are refused before any decoding.
        for bad in [[4u8, 90, 0, 0, 0], [0, 0, 0, 0, 0], [0, 1, 0, 1, 0]] {
            let mut p = payload.clone();
            p[..5].copy_from_slice(&bad);
            assert!(decode(&p, field.len(), &backend, &model, &|_| {}, &mut out).is_err());
        }
        assert!(decode(
            &payload[..3],
            field.len(),
            &backend,
            &model,
            &|_| {},
            &mut out
        )
        .is_err());
    }
}
