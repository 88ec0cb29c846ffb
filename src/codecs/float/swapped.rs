//! The swapped codec: a big-endian float array coded by a float codec after its values are
//! byte-reversed, so that the float codecs see little-endian values.
//!
//! Payload: the inner codec's tag (`u8`: planes, recent, scaled, repeated or copies), the
//! values' width (`u8`: 2, 4 or 8), then the inner codec's payload (FORMAT.md, codec 9).

use super::copies::Copies;
use super::recent::Recent;
use super::repeated::Repeated;
use super::scaled::Scaled;
use super::{swap_order, DType, Planes};
use crate::codecs::block_codec::{BlockCodec, Seen};
use crate::error::{Error, Result};
use crate::format::Codec;

/// The decoder of `codec` where it may be the inner codec of a swapped block (a float codec
/// that needs nothing but its payload), with the settings its decoder ignores.
fn inner(codec: Codec) -> Option<&'static dyn BlockCodec> {
    const D: DType = DType::F32;
    Some(match codec {
        Codec::Planes => &Planes { dtype: D },
        Codec::Recent => &Recent { dtype: D, size: 0 },
        Codec::Scaled => &Scaled { dtype: D },
        Codec::Repeated => &Repeated { dtype: D },
        Codec::Copies => &Copies { dtype: D },
        _ => return None,
    })
}

/// Whether `codec` may be the inner codec of a swapped block.
fn inner_allowed(codec: Codec) -> bool {
    inner(codec).is_some()
}

/// The swapped payload of `payload`, what `inner` made of the byte-reversed values of
/// `width` bytes; `None` where `inner` is not a float codec.
pub fn wrap(inner: Codec, width: usize, payload: &[u8]) -> Option<Vec<u8>> {
    if !inner_allowed(inner) {
        return None;
    }
    let mut wrapped = Vec::with_capacity(2 + payload.len());
    wrapped.extend_from_slice(&[inner.tag(), width as u8]);
    wrapped.extend_from_slice(payload);
    Some(wrapped)
}

/// The swapped codec over `inner`, for values of `width` bytes.
pub struct Swapped<'a> {
    /// The float codec that codes the byte-reversed values.
    pub inner: &'a dyn BlockCodec,
    /// Bytes per value.
    pub width: usize,
}

impl BlockCodec for Swapped<'_> {
    fn codec(&self) -> Codec {
        Codec::Swapped
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        let mut values = data.to_vec();
        swap_order(&mut values, self.width);
        match self.inner.encode(&values) {
            Some(p) => match wrap(self.inner.codec(), self.width, &p) {
                Some(w) => {
                    *out = w;
                    true
                }
                None => false,
            },
            None => false,
        }
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        let [tag, width, inner @ ..] = payload else {
            return Err(Error::Truncated("swapped block"));
        };
        let (inner_codec, width) = (Codec::from_tag(*tag)?, *width as usize);
        if !matches!(width, 2 | 4 | 8) || !raw_len.is_multiple_of(width) {
            return Err(Error::Corrupt(format!(
                "swapped block of {width}-byte values"
            )));
        }
        let Some(decoder) = self::inner(inner_codec) else {
            return Err(Error::Corrupt(format!(
                "a swapped block of codec {}",
                inner_codec.name()
            )));
        };
        let start = out.len();
        decoder.decode(inner, raw_len, out, &mut |_| {})?;
        swap_order(out.get_mut(start..).unwrap_or_default(), width);
        Ok(Seen::Nothing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    #[test]
    fn big_endian_values_round_trip_through_each_float_codec() {
        let mut x = 3u64;
        let le: Vec<u8> = (0..5000)
            .flat_map(|_| (((xorshift(&mut x) % 2000) as f32 - 1000.0) / 64.0).to_le_bytes())
            .collect();
        let mut be = le.clone();
        swap_order(&mut be, 4);
        let planes = Planes { dtype: DType::F32 };
        let codec = Swapped {
            inner: &planes,
            width: 4,
        };
        let payload = codec.encode(&be).expect("planes codes any array");
        assert_eq!(payload[..2], [Codec::Planes.tag(), 4]);
        assert_eq!(payload[2..], planes.encode(&le).expect("planes")[..]);
        let mut out = vec![7];
        codec
            .decode(&payload, be.len(), &mut out, &mut |_| {})
            .expect("decodes");
        assert!(out[0] == 7 && out[1..] == be[..]);
        // Not a float codec inside, and a width that is not a value's: refused.
        let mut bad = payload.clone();
        bad[0] = Codec::Zstd.tag();
        assert!(codec
            .decode(&bad, be.len(), &mut Vec::new(), &mut |_| {})
            .is_err());
        bad = payload.clone();
        bad[1] = 3;
        assert!(codec
            .decode(&bad, be.len(), &mut Vec::new(), &mut |_| {})
            .is_err());
    }
}
