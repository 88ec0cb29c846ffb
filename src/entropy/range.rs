//! Binary range coding through constriction: each bit is coded with the probability the
//! context-mixing codec's model gives it (a 16-bit P(1), scaled to the coder's 24-bit precision).

use crate::error::{Error, Result};
use constriction::stream::model::{DecoderModel, EncoderModel, EntropyModel};
use constriction::stream::queue::{DefaultRangeDecoder, DefaultRangeEncoder};
use constriction::stream::{Decode, Encode};
use std::num::NonZeroU32;

/// Bits of precision of the coder's probabilities.
const PRECISION: usize = 24;

/// A binary event with P(bit = 1) = p1 / 2^16, p1 in 1..=65535.
struct BitModel(u32);

impl BitModel {
    /// Frequency of a 1 at the coder's precision.
    #[inline]
    fn one(&self) -> u32 {
        self.0.clamp(1, 65535) << (PRECISION - 16)
    }
}

impl EntropyModel<PRECISION> for BitModel {
    type Symbol = bool;
    type Probability = u32;
}

impl EncoderModel<PRECISION> for BitModel {
    #[inline]
    fn left_cumulative_and_probability(
        &self,
        bit: impl std::borrow::Borrow<bool>,
    ) -> Option<(u32, NonZeroU32)> {
        let one = self.one();
        let zero = (1u32 << PRECISION) - one;
        if *bit.borrow() {
            NonZeroU32::new(one).map(|f| (zero, f))
        } else {
            NonZeroU32::new(zero).map(|f| (0, f))
        }
    }
}

impl DecoderModel<PRECISION> for BitModel {
    #[inline]
    fn quantile_function(&self, quantile: u32) -> (bool, u32, NonZeroU32) {
        let one = self.one();
        let zero = (1u32 << PRECISION) - one;
        if quantile < zero {
            (false, 0, NonZeroU32::new(zero).unwrap_or(NonZeroU32::MIN))
        } else {
            (true, zero, NonZeroU32::new(one).unwrap_or(NonZeroU32::MIN))
        }
    }
}

/// Encodes a stream of bits.
#[derive(Default)]
pub struct BitEncoder {
    inner: DefaultRangeEncoder,
}

impl BitEncoder {
    /// A fresh encoder with no output yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Encodes one binary event with P(1) = p1 / 2^16 (p1 clamped to 1..=65535).
    #[inline]
    pub fn encode_bit(&mut self, bit: bool, p1: u32) {
        // Cannot fail: both outcomes have nonzero probability; the Vec backend is infallible.
        let _ = self.inner.encode_symbol(bit, BitModel(p1));
    }

    /// Finishes the stream and returns its bytes (a multiple of 4, little-endian words).
    pub fn finish(self) -> Vec<u8> {
        let words = match self.inner.into_compressed() {
            Ok(w) => w,
            Err(never) => match never {},
        };
        let mut out = Vec::with_capacity(words.len() * 4);
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// Decodes a stream of bits.
pub struct BitDecoder {
    inner: DefaultRangeDecoder,
}

impl BitDecoder {
    /// Starts decoding `bytes` as produced by [`BitEncoder::finish`].
    pub fn new(bytes: &[u8]) -> Result<Self> {
        if !bytes.len().is_multiple_of(4) {
            return Err(Error::Corrupt(
                "coded stream length is not a multiple of 4".into(),
            ));
        }
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let inner = match DefaultRangeDecoder::from_compressed(words) {
            Ok(d) => d,
            Err(never) => match never {},
        };
        Ok(Self { inner })
    }

    /// Decodes one binary event with P(1) = p1 / 2^16 (p1 clamped to 1..=65535).
    #[inline]
    pub fn decode_bit(&mut self, p1: u32) -> Result<bool> {
        self.inner
            .decode_symbol(BitModel(p1))
            .map_err(|_| Error::Corrupt("coded data is invalid".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        let bits: Vec<(bool, u32)> = (0..20_000u32)
            .map(|i| {
                (
                    (i * 7919) % 13 < 3,
                    [1, 300, 32768, 60000, 65535, 70000][(i % 6) as usize],
                )
            })
            .collect();
        let mut enc = BitEncoder::new();
        for &(b, p) in &bits {
            enc.encode_bit(b, p);
        }
        let bytes = enc.finish();
        let mut dec = BitDecoder::new(&bytes).unwrap();
        for &(b, p) in &bits {
            assert_eq!(dec.decode_bit(p).unwrap(), b);
        }
    }

    #[test]
    fn garbage_decodes_without_panic() {
        let mut dec = BitDecoder::new(&[0xff; 64]).unwrap();
        for i in 0..1000 {
            let _ = dec.decode_bit(i * 61);
        }
        assert!(BitDecoder::new(&[1, 2, 3]).is_err());
    }
}
