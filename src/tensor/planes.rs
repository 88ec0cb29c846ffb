//! Tensor block codec. Each value is split into planes: `E`, the exponent (for f64 its top 8
//! bits), `M`, the next 3 bits (top of the mantissa), and the residual: the sign and the
//! remaining low bits. `E` is coded with adaptive rANS in the context of the two previous
//! values' exponents, `M` in the context of `E`; the residual goes through invariant bit
//! packing (IBP), which stores bits that hardly vary (e.g. the zero low half of widened
//! bf16 weights) once per group.
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! rANS stream length (`u32`) + stream, then the IBP section of the residuals.

use super::{ibp, DType};
use crate::coder::rans::{self, Adaptive};
use crate::error::{Error, Result};

/// Bit layout of one dtype's values as coded here.
#[derive(Clone, Copy)]
struct Fields {
    /// Width of a value in bits.
    bits: u32,
    /// Bits of `E`.
    ebits: u32,
}

impl Fields {
    fn of(dtype: DType) -> Self {
        match dtype {
            DType::F16 => Fields { bits: 16, ebits: 5 },
            DType::BF16 => Fields { bits: 16, ebits: 8 },
            DType::F32 => Fields { bits: 32, ebits: 8 },
            DType::F64 => Fields { bits: 64, ebits: 8 },
        }
    }

    /// Bits below `M`.
    #[inline(always)]
    fn low(self) -> u32 {
        self.bits - 1 - self.ebits - 3
    }

    /// Bits of the residual (sign + low bits).
    #[inline(always)]
    fn rbits(self) -> u32 {
        self.low() + 1
    }

    /// Splits a value into (E, M, residual).
    #[inline(always)]
    fn split(self, v: u64) -> (u8, u8, u64) {
        let low = self.low();
        let e = (v >> (low + 3)) as u32 & ((1 << self.ebits) - 1);
        let m = (v >> low) as u8 & 7;
        let sign = v >> (self.bits - 1);
        let r = sign << low | (v & ((1u64 << low) - 1));
        (e as u8, m, r)
    }

    /// Joins (E, M, residual) back into a value.
    #[inline(always)]
    fn join(self, e: u8, m: u8, r: u64) -> u64 {
        let low = self.low();
        (r >> low) << (self.bits - 1)
            | (e as u64) << (low + 3)
            | (m as u64) << low
            | (r & ((1u64 << low) - 1))
    }
}

#[inline(always)]
fn read<const W: usize>(data: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..W].copy_from_slice(&data[i * W..i * W + W]);
    u64::from_le_bytes(b)
}

/// Context models of one block.
struct Models {
    e: Vec<Adaptive<256>>,
    m: Vec<Adaptive<8>>,
}

impl Models {
    fn new() -> Self {
        Models {
            e: vec![Adaptive::default(); 256],
            m: vec![Adaptive::default(); 256],
        }
    }
}

fn encode_w<const W: usize>(data: &[u8], dtype: DType, out: &mut Vec<u8>) {
    let f = Fields::of(dtype);
    let n = data.len() / W;
    let mut models = Models::new();
    let mut ranges = Vec::with_capacity(2 * n);
    let mut residual = Vec::with_capacity(n);
    let (mut p1, mut p2) = (0u8, 0u8);
    for i in 0..n {
        let (e, m, r) = f.split(read::<W>(data, i));
        let em = &mut models.e[p1.max(p2) as usize];
        ranges.push(em.slot(e));
        em.update(e);
        let mm = &mut models.m[e as usize];
        ranges.push(mm.slot(m));
        mm.update(m);
        residual.push(r);
        p2 = p1;
        p1 = e;
    }
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    rans::encode(&ranges, out);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    ibp::pack(&residual, f.rbits(), out);
}

fn decode_w<const W: usize>(body: &[u8], n: usize, dtype: DType, out: &mut Vec<u8>) -> Result<()> {
    let bad = |what: &str| Error::Corrupt(format!("tensor block: {what}"));
    let f = Fields::of(dtype);
    let len = body
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| bad("missing stream length"))?;
    let stream = body
        .get(4..4 + len)
        .ok_or_else(|| bad("stream cut short"))?;
    let rest = &body[4 + len..];
    let mut residual = vec![0u64; n];
    if ibp::unpack(rest, f.rbits(), &mut residual)? != rest.len() {
        return Err(bad("unexpected bytes after the data"));
    }
    let mut models = Models::new();
    let mut dec = rans::Decoder::new(stream)?;
    let (mut p1, mut p2) = (0u8, 0u8);
    let start = out.len();
    out.resize(start + n * W, 0);
    for (i, (slot, &r)) in out[start..].chunks_exact_mut(W).zip(&residual).enumerate() {
        let em = &mut models.e[p1.max(p2) as usize];
        let e = dec.decode(2 * i, em);
        em.update(e);
        let mm = &mut models.m[e as usize];
        let m = dec.decode(2 * i + 1, mm);
        mm.update(m);
        slot.copy_from_slice(&f.join(e, m, r).to_le_bytes()[..W]);
        p2 = p1;
        p1 = e;
    }
    dec.finish()
}

/// Codes `data`, an array of `dtype` values (a partial last value is kept raw).
pub fn encode(data: &[u8], dtype: DType) -> Vec<u8> {
    let w = dtype.width();
    let n = data.len() / w;
    let tail = &data[n * w..];
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    out.push(dtype.tag());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
    let body = &data[..n * w];
    match w {
        2 => encode_w::<2>(body, dtype, &mut out),
        4 => encode_w::<4>(body, dtype, &mut out),
        _ => encode_w::<8>(body, dtype, &mut out),
    }
    out
}

/// Decodes a payload written by `encode` that must hold exactly `raw_len` bytes.
pub fn decode(payload: &[u8], raw_len: usize) -> Result<Vec<u8>> {
    let bad = |what: &str| Error::Corrupt(format!("tensor block: {what}"));
    let (&tag, rest) = payload.split_first().ok_or_else(|| bad("empty"))?;
    let dtype = DType::from_tag(tag)?;
    let w = dtype.width();
    let head = rest.get(..5).ok_or_else(|| bad("header cut short"))?;
    let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let tail_len = head[4] as usize;
    if tail_len >= w || n.checked_mul(w).and_then(|b| b.checked_add(tail_len)) != Some(raw_len) {
        return Err(bad("sizes do not match the block"));
    }
    let tail = rest
        .get(5..5 + tail_len)
        .ok_or_else(|| bad("tail cut short"))?;
    let body = &rest[5 + tail_len..];
    let mut out = Vec::with_capacity(raw_len);
    match w {
        2 => decode_w::<2>(body, n, dtype, &mut out)?,
        4 => decode_w::<4>(body, n, dtype, &mut out)?,
        _ => decode_w::<8>(body, n, dtype, &mut out)?,
    }
    out.extend_from_slice(tail);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic float-like data: gaussian-ish magnitudes via a sum of uniforms.
    fn weights(n: usize, seed: u64) -> Vec<f32> {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| ((next() + next() + next() - 1.5) * 0.05) as f32)
            .collect()
    }

    fn to_bytes(dtype: DType, w: &[f32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in w {
            match dtype {
                DType::F32 => out.extend_from_slice(&v.to_le_bytes()),
                DType::F64 => out.extend_from_slice(&(v as f64).to_le_bytes()),
                DType::BF16 => out.extend_from_slice(&((v.to_bits() >> 16) as u16).to_le_bytes()),
                DType::F16 => {
                    // Truncating conversion is enough for test data: exponent rebias + mantissa.
                    let b = v.to_bits();
                    let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
                    let h = if e <= 0 {
                        0
                    } else {
                        ((e as u32) << 10) | ((b >> 13) & 0x3ff)
                    };
                    out.extend_from_slice(&((h | (b >> 16) & 0x8000) as u16).to_le_bytes());
                }
            }
        }
        out
    }

    #[test]
    fn roundtrips_every_dtype_and_compresses() {
        let w = weights(50_000, 5);
        for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            let mut data = to_bytes(dtype, &w);
            for extra in [0usize, 1] {
                data.extend(std::iter::repeat_n(0x5a, extra));
                let packed = encode(&data, dtype);
                assert_eq!(decode(&packed, data.len()).unwrap(), data, "{dtype:?}");
                assert!(
                    packed.len() < data.len(),
                    "{dtype:?}: {} >= {}",
                    packed.len(),
                    data.len()
                );
            }
        }
        for n in [0usize, 1, 2, 3, 7] {
            let data: Vec<u8> = (0..n as u8).collect();
            let packed = encode(&data, DType::F32);
            assert_eq!(decode(&packed, n).unwrap(), data);
        }
    }

    #[test]
    fn invariant_low_bits_are_found() {
        // f32 values widened from bf16: the low 16 bits are all zero.
        let w = weights(40_000, 9);
        let data: Vec<u8> = w
            .iter()
            .flat_map(|v| f32::from_bits(v.to_bits() & 0xffff_0000).to_le_bytes())
            .collect();
        let packed = encode(&data, DType::F32);
        assert_eq!(decode(&packed, data.len()).unwrap(), data);
        // About 10.7 bits per value are left (exponent and sign + 7 mantissa bits).
        assert!(
            packed.len() * 28 < data.len() * 10,
            "{} bytes",
            packed.len()
        );
    }

    #[test]
    fn damaged_payloads_are_errors() {
        let data = to_bytes(DType::F32, &weights(10_000, 2));
        let packed = encode(&data, DType::F32);
        for cut in [0, 1, 5, 6, 20, packed.len() / 2, packed.len() - 1] {
            assert!(decode(&packed[..cut], data.len()).is_err(), "cut {cut}");
        }
        assert!(decode(&packed, data.len() + 4).is_err());
        let mut flipped = packed.clone();
        flipped[40] ^= 0x10;
        if let Ok(d) = decode(&flipped, data.len()) {
            assert_ne!(d, data);
        }
    }
}
