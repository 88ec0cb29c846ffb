//! Safetensors headers made more compressible: each tensor's `"data_offsets":[start,end]` is
//! rewritten as the start's distance from the previous tensor's end and the length's
//! difference from what its dtype and shape give, both left empty when zero (they nearly always
//! are), then zstd-coded. The rewrite is kept only where it reverses to the exact bytes.

use crate::codecs::block_codec::{set_payload, BlockCodec, Seen};
use crate::error::{Error, Result};
use crate::format::Codec;

/// The key whose numbers are rewritten.
const KEY: &[u8] = b"\"data_offsets\":[";
/// zstd level of the rewritten text. Over the 19 weight files measured, level 9 took 0.03-0.22
/// ms a header and 15 took 0.13-2.8 ms (19: up to 5.5 ms), a quarter of compressing a 0.5 MB
/// file, for 25 bytes a file on average (at most 55); 12 was larger than 9. Written nowhere:
/// decoding is the same.
const LEVEL: i32 = 9;

/// Bytes per element of a safetensors dtype name. The list is part of the format (a decoder
/// must predict what the encoder did), so it is written here rather than taken from the
/// `safetensors` crate, whose list grows between versions.
fn dtype_width(name: &[u8]) -> Option<u64> {
    Some(match name {
        b"BOOL" | b"U8" | b"I8" | b"F8_E5M2" | b"F8_E4M3" => 1,
        b"U16" | b"I16" | b"F16" | b"BF16" => 2,
        b"U32" | b"I32" | b"F32" => 4,
        b"U64" | b"I64" | b"F64" => 8,
        _ => return None,
    })
}

/// The value of `"key":` in `object` (text up to the key of the offsets), up to the next `,`
/// or `}` outside brackets; `None` if absent.
fn field<'a>(object: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = find(object, key)? + key.len();
    let rest = &object[at..];
    let end = match rest.first()? {
        b'[' => rest.iter().position(|&b| b == b']')? + 1,
        _ => rest
            .iter()
            .position(|&b| b == b',' || b == b'}')
            .unwrap_or(rest.len()),
    };
    Some(&rest[..end])
}

/// Byte length a tensor's dtype and shape give, read from the object text before its offsets.
fn predicted_len(object: &[u8]) -> Option<u64> {
    let dtype = field(object, b"\"dtype\":")?;
    let width = dtype_width(dtype.strip_prefix(b"\"")?.strip_suffix(b"\"")?)?;
    let shape = field(object, b"\"shape\":")?;
    let dims = shape.strip_prefix(b"[")?.strip_suffix(b"]")?;
    let mut n = 1u64;
    if !dims.is_empty() {
        for d in dims.split(|&b| b == b',') {
            n = n.checked_mul(std::str::from_utf8(d).ok()?.parse().ok()?)?;
        }
    }
    n.checked_mul(width)
}

/// A decimal number at the start of `text` written the canonical way (no sign, no leading
/// zero) and its length in bytes.
fn canonical(text: &[u8]) -> Option<(u64, usize)> {
    let len = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 || len > 19 || (len > 1 && text[0] == b'0') {
        return None;
    }
    let v = std::str::from_utf8(&text[..len]).ok()?.parse().ok()?;
    Some((v, len))
}

/// Longest text of a tensor's object before its offsets (from the `{` that opens it) that the
/// rewrite reads its dtype and shape from: a tensor's object is a few dozen bytes (dtype, a
/// shape of a few numbers), so this bounds the decoder's work per offset pair. The encoder
/// declines a header with a longer one, and the decoder refuses it.
const OBJECT_MAX: usize = 1024;

/// Where the object holding the key at `at` starts (after the last `{` before it), if it is
/// at most `OBJECT_MAX` bytes before `at`.
fn object_start(text: &[u8], at: usize) -> Option<usize> {
    let from = at.saturating_sub(OBJECT_MAX + 1);
    let brace = text[from..at].iter().rposition(|&b| b == b'{')?;
    Some(from + brace + 1)
}

/// The rewritten text of `data`, or `None` if it holds no offsets or any of them is not
/// written the canonical way.
fn rewrite(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len());
    let (mut at, mut prev_end, mut found) = (0usize, 0u64, false);
    while let Some(p) = find(&data[at..], KEY) {
        let nums = at + p + KEY.len();
        let (start, a) = canonical(&data[nums..])?;
        if data.get(nums + a) != Some(&b',') {
            return None;
        }
        let (end, b) = canonical(&data[nums + a + 1..])?;
        if data.get(nums + a + 1 + b) != Some(&b']') || end < start {
            return None;
        }
        out.extend_from_slice(&data[at..nums]);
        let gap = start as i128 - prev_end as i128;
        if gap != 0 {
            out.extend_from_slice(gap.to_string().as_bytes());
        }
        out.push(b',');
        let predicted = predicted_len(&data[object_start(data, nums)?..nums]);
        let extra = (end - start) as i128 - predicted.map_or(0, |n| n as i128);
        if extra != 0 {
            out.extend_from_slice(extra.to_string().as_bytes());
        }
        out.push(b']');
        at = nums + a + 1 + b + 1;
        prev_end = end;
        found = true;
    }
    out.extend_from_slice(&data[at..]);
    found.then_some(out)
}

/// A signed decimal at the start of `text` (empty: 0) and its length, ended by `stop`.
fn signed(text: &[u8], stop: u8) -> Option<(i128, usize)> {
    // A number of i128 takes at most 40 bytes: no need to look further.
    let len = text.iter().take(41).position(|&b| b == stop)?;
    if len == 0 {
        return Some((0, 0));
    }
    let v = std::str::from_utf8(&text[..len]).ok()?.parse().ok()?;
    Some((v, len))
}

/// Reverses `rewrite`, into at most `limit` bytes (`None` past them). Each offset pair costs
/// at most its text, its object's `OBJECT_MAX` bytes and the 40 bytes it restores to.
fn restore(text: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len().min(limit));
    let (mut at, mut prev_end) = (0usize, 0i128);
    while let Some(p) = find(&text[at..], KEY) {
        let nums = at + p + KEY.len();
        let (gap, a) = signed(&text[nums..], b',')?;
        let (extra, b) = signed(&text[nums + a + 1..], b']')?;
        if out.len() + (nums - at) > limit {
            return None;
        }
        out.extend_from_slice(&text[at..nums]);
        // The object's text before the offsets is the same in both forms.
        let object = &out[object_start(&out, out.len())?..];
        let predicted = predicted_len(object).map_or(0, |n| n as i128);
        let start = prev_end.checked_add(gap)?;
        let end = start.checked_add(predicted)?.checked_add(extra)?;
        if start < 0 || end < start || end > u64::MAX as i128 {
            return None;
        }
        out.extend_from_slice(format!("{start},{end}]").as_bytes());
        if out.len() > limit {
            return None;
        }
        at = nums + a + 1 + b + 1;
        prev_end = end;
    }
    if out.len() + (text.len() - at) > limit {
        return None;
    }
    out.extend_from_slice(&text[at..]);
    Some(out)
}

/// First position of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The coded form of a block holding safetensors header text, or `None` if the rewrite does
/// not apply to it (no offsets, or offsets written some other way).
pub fn encode(data: &[u8]) -> Option<Vec<u8>> {
    let text = rewrite(data)?;
    // Kept only if it reverses exactly, and no longer than the block (the decoder's bound).
    if text.len() > data.len() || restore(&text, data.len())? != data {
        return None;
    }
    crate::codecs::zstd::compress(&text, LEVEL)
}

/// Decodes a payload written by `encode`, appending the block's `raw_len` bytes to `out`.
pub fn decode(payload: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let bad = |what: &str| Error::Corrupt(format!("header block: {what}"));
    // The rewritten text is never longer than the block (`encode` checks).
    let mut text = Vec::with_capacity(raw_len);
    crate::codecs::zstd::decompress_to(payload, &mut text).map_err(|e| bad(&e.to_string()))?;
    let data = restore(&text, raw_len).ok_or_else(|| bad("offsets do not decode"))?;
    if data.len() != raw_len {
        return Err(bad("wrong length"));
    }
    out.extend_from_slice(&data);
    Ok(())
}

/// The tensor-header codec.
pub struct TensorHeader;

impl BlockCodec for TensorHeader {
    fn codec(&self) -> Codec {
        Codec::TensorHeader
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        set_payload(out, encode(data))
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        decode(payload, raw_len, out)?;
        Ok(Seen::Nothing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `decode` into a new vector.
    fn decode(payload: &[u8], raw_len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        super::decode(payload, raw_len, &mut out)?;
        Ok(out)
    }

    /// A tensor's name, dtype and shape.
    type Tensor = (String, &'static str, Vec<u64>);

    /// A safetensors header (length, then JSON) for `tensors`, packed in order.
    fn header(tensors: &[Tensor]) -> Vec<u8> {
        let json = json(tensors);
        let mut out = (json.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(json.as_bytes());
        out
    }

    /// The JSON of `header`.
    fn json(tensors: &[Tensor]) -> String {
        let mut json = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
        let mut at = 0;
        for (name, dtype, shape) in tensors {
            let n: u64 = shape.iter().product::<u64>() * dtype_width(dtype.as_bytes()).unwrap();
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            json += &format!(
                ",\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
                dims.join(","),
                at + n
            );
            at += n;
        }
        json.push('}');
        json
    }

    fn round_trip(data: &[u8]) -> Vec<u8> {
        let payload = encode(data).expect("offsets rewritten");
        assert_eq!(decode(&payload, data.len()).unwrap(), data);
        payload
    }

    #[test]
    fn offsets_are_implied_and_restored() {
        let list: Vec<Tensor> = (0..60)
            .map(|i| {
                let dtype = ["F32", "BF16", "I64", "U8"][i % 4];
                (format!("layer.{i}.weight"), dtype, vec![3 + i as u64, 7, 2])
            })
            .collect();
        let data = header(&list);
        // Every offset follows from the shapes: none is left in the text.
        let text = rewrite(&data).unwrap();
        assert_eq!(
            text.windows(18)
                .filter(|w| w == b"\"data_offsets\":[,]")
                .count(),
            60
        );
        let payload = round_trip(&data);
        assert!(payload.len() < zstd::bulk::compress(&data, LEVEL).unwrap().len());
        // A scalar (empty shape), a gap, a tensor placed before the previous one and a length
        // the shape does not give are written out and restored.
        let odd = json(&list).replacen("\"shape\":[3,7,2]", "\"shape\":[]", 1);
        let odd = odd
            .replacen("[168,", "[170,", 1)
            .replacen(",840]", ",778]", 1);
        let text = rewrite(odd.as_bytes()).unwrap();
        assert!(
            text.windows(3).any(|w| w == b"-62"),
            "{}",
            String::from_utf8_lossy(&text)
        );
        round_trip(odd.as_bytes());
        let swapped = odd.replacen("[0,168]", "[5000,5168]", 1);
        round_trip(swapped.as_bytes());
    }

    #[test]
    fn other_text_is_left_alone() {
        // No offsets, offsets written another way, or text that already looks rewritten.
        for text in [
            &b"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}"[..],
            b"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[00,8]}}",
            b"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0, 8]}}",
            b"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}",
            b"{\"a\":{\"data_offsets\":[0,8]},\"b\":{\"data_offsets\":[,]}}",
        ] {
            assert!(encode(text).is_none(), "{}", String::from_utf8_lossy(text));
        }
        // An unknown dtype or a shape that is not numbers: the length is written out.
        round_trip(b"{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}");
        round_trip(b"{\"a\":{\"dtype\":\"F32\",\"shape\":[x],\"data_offsets\":[0,8]}}");
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let list: Vec<Tensor> = (0..20)
            .map(|i| (format!("t{i}"), "F16", vec![i as u64 + 1, 5]))
            .collect();
        let data = header(&list);
        let payload = encode(&data).unwrap();
        assert!(decode(&payload, data.len() - 1).is_err());
        assert!(decode(&payload[..payload.len() / 2], data.len()).is_err());
        for i in 0..payload.len() {
            let mut bad = payload.clone();
            bad[i] ^= 0x24;
            // Either an error or other bytes (which the block checksum then refuses).
            if let Ok(out) = decode(&bad, data.len()) {
                assert_eq!(out.len(), data.len());
            }
        }
        // Rewritten text whose numbers overflow or go below zero.
        for text in [
            &b"\"data_offsets\":[-1,]"[..],
            b"\"data_offsets\":[99999999999999999999999999999999999999,]",
            b"\"data_offsets\":[,-5]",
            b"\"data_offsets\":[1",
        ] {
            let z = zstd::bulk::compress(text, 3).unwrap();
            assert!(decode(&z, text.len()).is_err());
        }
    }

    #[test]
    fn crafted_offsets_cost_linear_work_and_bounded_memory() {
        // Pairs with no object around them (no `{` within reach): each once made the decoder
        // scan back over all it had restored, quadratic in the block. Restored as the old
        // decoder did (each pair `0,0]`), the block has exactly this length.
        let pairs = 128 << 10 >> 4;
        let text = KEY
            .iter()
            .chain(b",]")
            .copied()
            .cycle()
            .take(18 * pairs)
            .collect::<Vec<u8>>();
        let restored = pairs * (KEY.len() + 4);
        let payload = crate::codecs::zstd::compress(&text, 3).unwrap();
        assert!(decode(&payload, restored).is_err());
        // An object (its text to the end of the key) of `OBJECT_MAX` bytes is read, a longer one
        // is out of reach.
        let mut far = b"{".to_vec();
        far.resize(1 + OBJECT_MAX - KEY.len(), b' ');
        far.extend_from_slice(b"\"data_offsets\":[,]");
        assert_eq!(restore(&far, usize::MAX).unwrap().len(), far.len() + 2);
        far.insert(1, b' ');
        assert!(restore(&far, usize::MAX).is_none());
        // A pair restoring to 40 bytes from 18 is refused as soon as the output passes the
        // block's length, not after.
        let big = format!("{{\"data_offsets\":[{},]", u64::MAX);
        assert!(restore(big.as_bytes(), 40).is_none());
        assert!(restore(big.as_bytes(), 80).is_some());
        // A number longer than any an encoder writes is not read to its end.
        let long = format!("{{\"data_offsets\":[{},]", "1".repeat(50));
        assert!(restore(long.as_bytes(), usize::MAX).is_none());
    }
}
