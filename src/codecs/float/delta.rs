//! Codec 12, `delta`: an array of floats coded against the same array in an earlier file, the
//! base (`--patch-from`), value by value.
//!
//! Each value and its base value are mapped to integers in the values' order (sign-magnitude
//! bits: a negative value's bits flipped, a positive value's sign bit set), and the wrapping
//! difference of the two, read as a signed number of the values' width, is coded: whether it is
//! zero; if not, its magnitude's bit length (a binary tree), its sign, the top
//! `MODELLED` bits under its leading one, all with adaptive probabilities, and the rest of its
//! bits as they are. The contexts are the base value's top 8 bits below its sign (a float's
//! exponent), the bit length the last two differences predict at that exponent (an optimizer
//! moves neighbouring weights by similar amounts, whatever their size), the last values'
//! zero-ness and the last sign.
//!
//! Payload: width (1 byte: 1, 2 or 4), the base offset of the block's first value (8 bytes LE),
//! the length R of the range-coded stream (8 bytes LE), the stream (`entropy::range`, R bytes),
//! then the raw bits, packed from each byte's lowest bit up.

use crate::codecs::block_codec::{set_payload, BlockCodec, Seen};
use crate::entropy::{BitDecoder, BitEncoder};
use crate::error::{Error, Result};
use crate::format::Codec;

/// Bits under a difference's leading one that get adaptive probabilities; the rest are near
/// uniform and are written as they are.
const MODELLED: u32 = 5;
/// Bits of a bit length's tree (lengths 1..=32).
const LEN_BITS: u32 = 5;
/// The most observations after which a probability still adapts at `1 / (n + 2)`.
const RATE_LIMIT: u16 = 60;
/// Bytes before the stream.
const HEAD: usize = 17;

/// Widths of the values this codec takes.
pub fn supports(width: usize) -> bool {
    matches!(width, 1 | 2 | 4)
}

/// An adaptive probability of a 1 (in 1/65536) with the count that sets its rate.
#[derive(Clone, Copy)]
struct Bit {
    p: u16,
    n: u16,
}

impl Default for Bit {
    fn default() -> Self {
        Bit { p: 32768, n: 0 }
    }
}

/// `2^16 / (n + 2)` for each count `n`: an update's step without a division.
const RATES: [i32; RATE_LIMIT as usize + 1] = {
    let mut r = [0; RATE_LIMIT as usize + 1];
    let mut n = 0;
    while n <= RATE_LIMIT as usize {
        r[n] = 65536 / (n as i32 + 2);
        n += 1;
    }
    r
};

impl Bit {
    #[inline]
    fn update(&mut self, bit: bool) {
        let target = if bit { 65535i32 } else { 0 };
        let p = self.p as i32;
        let step = ((target - p) * RATES[self.n as usize]) >> 16;
        self.p = (p + step).clamp(32, 65503) as u16;
        self.n = (self.n + 1).min(RATE_LIMIT);
    }
}

/// What codes the modelled bits: the encoder writes the bit it is given, the decoder returns
/// the bit it reads; both then update the probability alike.
trait Coder {
    fn bit(&mut self, b: &mut Bit, bit: bool) -> Result<bool>;
    fn raw(&mut self, n: u32, bits: u64) -> Result<u64>;
}

struct DeltaEncoder {
    range: BitEncoder,
    raw: Vec<u8>,
    acc: u64,
    filled: u32,
}

impl Coder for DeltaEncoder {
    #[inline]
    fn bit(&mut self, b: &mut Bit, bit: bool) -> Result<bool> {
        self.range.encode_bit(bit, b.p as u32);
        b.update(bit);
        Ok(bit)
    }

    #[inline]
    fn raw(&mut self, n: u32, bits: u64) -> Result<u64> {
        self.acc |= bits << self.filled;
        self.filled += n;
        while self.filled >= 8 {
            self.raw.push(self.acc as u8);
            self.acc >>= 8;
            self.filled -= 8;
        }
        Ok(bits)
    }
}

struct DeltaDecoder<'a> {
    range: BitDecoder,
    raw: &'a [u8],
    at: usize,
    acc: u64,
    filled: u32,
}

impl Coder for DeltaDecoder<'_> {
    #[inline]
    fn bit(&mut self, b: &mut Bit, _: bool) -> Result<bool> {
        let bit = self.range.decode_bit(b.p as u32)?;
        b.update(bit);
        Ok(bit)
    }

    #[inline]
    fn raw(&mut self, n: u32, _: u64) -> Result<u64> {
        while self.filled < n {
            let byte = *self
                .raw
                .get(self.at)
                .ok_or(Error::Truncated("delta block's raw bits"))?;
            self.acc |= (byte as u64) << self.filled;
            self.at += 1;
            self.filled += 8;
        }
        let bits = self.acc & ((1u64 << n) - 1);
        self.acc >>= n;
        self.filled -= n;
        Ok(bits)
    }
}

/// The adaptive state, the same on both sides.
struct Model {
    zero: Vec<Bit>,
    len: Vec<Bit>,
    sign: Vec<Bit>,
    top: Vec<Bit>,
    /// The last two values' zero-ness.
    zeros: usize,
    /// The last two nonzero differences' scales: bit length plus the base's top bits, which
    /// is about the same for an update of one size whatever the value it moves.
    last_abs: isize,
    prev_abs: isize,
    /// The last nonzero difference's sign (1 positive, 2 negative; 0 before any).
    last_sign: usize,
}

impl Model {
    fn new() -> Self {
        Model {
            zero: vec![Bit::default(); 256 * 4 * 33],
            len: vec![Bit::default(); (256 * 33) << LEN_BITS],
            sign: vec![Bit::default(); 2 * 3],
            top: vec![Bit::default(); 33 << MODELLED],
            zeros: 0,
            last_abs: 0,
            prev_abs: 0,
            last_sign: 0,
        }
    }

    /// Codes the signed difference `d` (the encoder's; the decoder passes 0) of a value whose
    /// base has top bits `e` and sign `negative`; returns the difference coded.
    #[inline]
    fn code(&mut self, c: &mut impl Coder, e: usize, negative: bool, d: i64) -> Result<i64> {
        // The bit length the last differences' scale predicts at this value's scale.
        let expect = ((self.last_abs + self.prev_abs + 1) / 2 - e as isize).clamp(0, 32) as usize;
        let nonzero = c.bit(&mut self.zero[(e * 33 + expect) * 4 + self.zeros], d != 0)?;
        self.zeros = (self.zeros << 1 | nonzero as usize) & 3;
        if !nonzero {
            return Ok(0);
        }
        let m = d.unsigned_abs();
        let want = 63 - m.max(1).leading_zeros(); // bit length - 1
        let lens = &mut self.len[(e * 33 + expect) << LEN_BITS..][..1 << LEN_BITS];
        let mut node = 1usize;
        for i in (0..LEN_BITS).rev() {
            let b = c.bit(&mut lens[node], want >> i & 1 == 1)?;
            node = node << 1 | b as usize;
        }
        let below = (node - (1 << LEN_BITS)) as u32; // bits under the leading one
        let s = c.bit(
            &mut self.sign[negative as usize * 3 + self.last_sign],
            d < 0,
        )?;
        let modelled = below.min(MODELLED);
        let top = &mut self.top[(below as usize) << MODELLED..][..1 << MODELLED];
        let mut v = 1u64;
        let mut node = 1usize;
        for i in 0..modelled {
            let b = c.bit(&mut top[node], m >> (below - 1 - i) & 1 == 1)?;
            node = node << 1 | b as usize;
            v = v << 1 | b as u64;
        }
        let rest = below - modelled;
        if rest > 0 {
            v = v << rest | c.raw(rest, m & ((1u64 << rest) - 1))?;
        }
        self.prev_abs = self.last_abs;
        self.last_abs = below as isize + 1 + e as isize;
        self.last_sign = 1 + s as usize;
        Ok(if s { -(v as i64) } else { v as i64 })
    }
}

/// A value's bits as an integer in the values' order (`width` bytes, little-endian).
#[inline]
fn ordered(bits: u64, width: usize) -> u64 {
    let sign = 1u64 << (8 * width - 1);
    match bits & sign != 0 {
        true => !bits & mask(width),
        false => bits | sign,
    }
}

/// The inverse of `ordered`.
#[inline]
fn unordered(o: u64, width: usize) -> u64 {
    let sign = 1u64 << (8 * width - 1);
    match o & sign != 0 {
        true => o & !sign,
        false => !o & mask(width),
    }
}

#[inline]
fn mask(width: usize) -> u64 {
    (1u64 << (8 * width)) - 1
}

#[inline]
fn read(bytes: &[u8], width: usize) -> u64 {
    let mut v = [0u8; 8];
    v[..width].copy_from_slice(bytes);
    u64::from_le_bytes(v)
}

/// The context of a base value: its top 8 bits under the sign, and the sign.
#[inline]
fn context(b: u64, width: usize) -> (usize, bool) {
    let bits = 8 * width as u32;
    let abs = b & (mask(width) >> 1);
    let e = match width {
        1 => abs,
        _ => abs >> (bits - 9),
    };
    (e as usize, b >> (bits - 1) != 0)
}

/// Codes `data` against `base` (as long as it), values of `width` bytes, the base's first
/// value being at `base_offset` in its file. `None` if the width is not supported or the
/// lengths differ.
pub fn encode(data: &[u8], base: &[u8], base_offset: u64, width: usize) -> Option<Vec<u8>> {
    if !supports(width) || data.len() != base.len() || !data.len().is_multiple_of(width) {
        return None;
    }
    let mut w = DeltaEncoder {
        range: BitEncoder::new(),
        raw: Vec::new(),
        acc: 0,
        filled: 0,
    };
    let mut model = Model::new();
    let half = 1i64 << (8 * width - 1);
    for (x, b) in data.chunks_exact(width).zip(base.chunks_exact(width)) {
        let (xb, bb) = (read(x, width), read(b, width));
        let diff = ordered(xb, width).wrapping_sub(ordered(bb, width)) & mask(width);
        let d = match diff as i64 >= half {
            true => diff as i64 - (half << 1),
            false => diff as i64,
        };
        let (e, negative) = context(bb, width);
        // Cannot fail: the writer's methods return Ok.
        let _ = model.code(&mut w, e, negative, d);
    }
    if w.filled > 0 {
        w.raw.push(w.acc as u8);
    }
    let stream = w.range.finish();
    let mut out = Vec::with_capacity(HEAD + 8 + stream.len() + w.raw.len());
    out.push(width as u8);
    out.extend_from_slice(&base_offset.to_le_bytes());
    out.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    out.extend_from_slice(&stream);
    out.extend_from_slice(&w.raw);
    Some(out)
}

/// Decodes a payload made by `encode` against `base` (the whole base file), appending exactly
/// `raw_len` bytes to `out`.
pub fn decode(payload: &[u8], base: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let head = payload.get(..HEAD).ok_or(Error::Truncated("delta block"))?;
    let width = head[0] as usize;
    if !supports(width) || !raw_len.is_multiple_of(width) {
        return Err(Error::Corrupt(format!(
            "delta block of {width}-byte values"
        )));
    }
    let offset = u64::from_le_bytes(head[1..9].try_into().unwrap_or_default());
    let stream_len = u64::from_le_bytes(head[9..17].try_into().unwrap_or_default());
    let base = usize::try_from(offset)
        .ok()
        .and_then(|o| base.get(o..o.checked_add(raw_len)?))
        .ok_or_else(|| Error::Corrupt("a delta block reaches past its base".into()))?;
    let rest = &payload[HEAD..];
    let stream_len = usize::try_from(stream_len)
        .ok()
        .filter(|&n| n <= rest.len())
        .ok_or(Error::Truncated("delta block's stream"))?;
    let (stream, raw) = rest.split_at(stream_len);
    let mut r = DeltaDecoder {
        range: BitDecoder::new(stream)?,
        raw,
        at: 0,
        acc: 0,
        filled: 0,
    };
    let mut model = Model::new();
    out.reserve(raw_len);
    for b in base.chunks_exact(width) {
        let bb = read(b, width);
        let (e, negative) = context(bb, width);
        let d = model.code(&mut r, e, negative, 0)?;
        let o = ordered(bb, width).wrapping_add(d as u64) & mask(width);
        out.extend_from_slice(&unordered(o, width).to_le_bytes()[..width]);
    }
    Ok(())
}

/// The delta codec against `base`, the whole base file (`--patch-from`): encoding codes a
/// block whose base values start at `at` in it, as values of `width` bytes (declining a
/// block that runs past the base's end); decoding reads the offset and width from the payload.
pub struct Delta<'a> {
    /// The base file.
    pub base: &'a [u8],
    /// Where the block's base values start in it (encoding).
    pub at: u64,
    /// Bytes per value (encoding).
    pub width: usize,
}

impl BlockCodec for Delta<'_> {
    fn codec(&self) -> Codec {
        Codec::Delta
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        let values = usize::try_from(self.at)
            .ok()
            .and_then(|at| self.base.get(at..at.checked_add(data.len())?));
        set_payload(
            out,
            values.and_then(|v| encode(data, v, self.at, self.width)),
        )
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        decode(payload, self.base, raw_len, out)?;
        Ok(Seen::Nothing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// The f32 weights of the test convolution file, and the same after an optimizer step of
    /// `lr` in a direction of random signs, with a share of them left as they were.
    fn checkpoints(lr: f32) -> (Vec<u8>, Vec<u8>) {
        let file = include_bytes!("../../../tests/data/conv.safetensors");
        let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
        let base = file[8 + n..].to_vec();
        let mut s = 7u64;
        let new = base
            .chunks_exact(4)
            .flat_map(|c| {
                let w = f32::from_le_bytes(c.try_into().unwrap());
                let r = xorshift(&mut s);
                let step = match r % 4 {
                    0 => 0.0,
                    1 => lr,
                    _ => -lr * (r % 7) as f32 / 3.0,
                };
                (w + step).to_le_bytes()
            })
            .collect();
        (base, new)
    }

    #[test]
    fn deltas_round_trip_at_each_width() {
        let (base, new) = checkpoints(1e-4);
        for width in [1, 2, 4] {
            let p = encode(&new, &base, 123, width).unwrap();
            let mut file = vec![0u8; 123];
            file.extend_from_slice(&base);
            let mut out = vec![9u8];
            decode(&p, &file, new.len(), &mut out).unwrap();
            assert_eq!(&out[1..], &new[..], "width {width}");
        }
    }

    #[test]
    fn small_steps_take_less_than_the_values() {
        let (base, new) = checkpoints(1e-6);
        let p = encode(&new, &base, 0, 4).unwrap();
        assert!(p.len() * 2 < new.len(), "{} of {}", p.len(), new.len());
        let (base, same) = (base.clone(), base);
        let p = encode(&same, &base, 0, 4).unwrap();
        assert!(p.len() * 50 < same.len(), "{} of {}", p.len(), same.len());
    }

    #[test]
    fn damaged_payloads_and_short_bases_are_refused() {
        let (base, new) = checkpoints(1e-4);
        let p = encode(&new, &base, 0, 4).unwrap();
        let mut out = Vec::new();
        assert!(decode(&p, &base[..base.len() - 4], new.len(), &mut out).is_err());
        for cut in [0, 5, HEAD, p.len() / 2] {
            let mut out = Vec::new();
            let r = decode(&p[..cut], &base, new.len(), &mut out);
            assert!(r.is_err() || out != new, "cut at {cut}");
        }
        let mut bad = p.clone();
        bad[0] = 3;
        assert!(decode(&bad, &base, new.len(), &mut Vec::new()).is_err());
        let mut bad = p.clone();
        bad[16] ^= 0x80;
        assert!(decode(&bad, &base, new.len(), &mut Vec::new()).is_err());
        let mut bad = p;
        bad[HEAD + 40] ^= 0x10;
        let mut out = Vec::new();
        let r = decode(&bad, &base, new.len(), &mut out);
        assert!(r.is_err() || out != new);
    }
}
