//! Byte-table codec, for tensors of one-byte values (fp8): every byte is one symbol of a single
//! table of the block's byte frequencies, written in the payload, and the symbols are
//! rANS-coded on interleaved states (value `k` on state `k mod ways`). Weights cast to fp8 hold
//! little beyond their values' frequencies (a model of the local scale measured no better), so
//! one static table loses next to nothing against the planes codec's adaptive ones and decodes
//! with one table look-up per value, without counting or refitting.
//!
//! Payload: precision `bits` (`u8`, 10 to 14: the table's frequencies sum to `2^bits`, none
//! above `2^(24 - bits)`, so that a slot's byte, offset and frequency fit 32 bits), `ways`
//! (`u8`: 16, 32 or 64), the table, then the rANS stream (`rans::write_stream`'s layout: the
//! `ways` final states, then the words) to the payload's end. The block's last `3 ways` values
//! (its whole rows of `ways` values if fewer) are not in the stream: the encoder's start
//! states hold them, value `j` of them in byte `j / ways` of state `j mod ways`, under a top
//! byte of 1 (so every value costs the 4 bytes of final state less). The table: a 32-byte bitmap of
//! the bytes present (bit `b % 8` of byte `b / 8`), then for each present byte in increasing
//! order a LEB128 number: where the byte 128 lower (the same fp8 value with the other sign) is
//! present, the zigzag of its frequency minus that one's; else, where the byte 1 lower is
//! present and in the same group of 8 (the next smaller mantissa), the zigzag of the difference
//! to it; otherwise its frequency minus 1.

use crate::codecs::block_codec::{BlockCodec, Seen};
use crate::entropy::rans::{self, fit, Decoder, Words, LOW, WAYS};
use crate::error::{Error, Result};
use crate::format::Codec;
use crate::simd::{kernels, Kernels};

/// Fewest and most bits of precision a table may have.
const MIN_BITS: u32 = 10;
const MAX_BITS: u32 = 14;
/// Values decoded between two hand-overs of the output to the caller (while in cache).
const CHUNK: usize = 1 << 16;

/// Rows of `ways` values carried by the coder's start states (the encoder's, which the decoder
/// ends on): the block's last values, 3 bytes a state under a top byte of 1 (which keeps the
/// state in [LOW, LOW << 16)).
const CARRIED: usize = 3;

/// Values carried by the start states in a block of `n` values.
fn carried(n: usize, ways: usize) -> usize {
    (n / ways).min(CARRIED) * ways
}

/// Coder states for a block of `n` values: each costs 4 bytes of final state, and more give
/// the decoder more independent work.
fn ways_for(n: usize) -> usize {
    match n {
        0..0x1000 => 16,
        0x1000..0x8000 => 32,
        _ => 64,
    }
}

/// Encodes `data`, one value per byte.
pub fn encode(data: &[u8]) -> Vec<u8> {
    let mut counts = [0u32; 256];
    for &b in data {
        counts[b as usize] += 1;
    }
    // An empty block's table still sums to `2^bits`.
    counts[0] += u32::from(data.is_empty());
    // The precision that makes the values and the table smallest.
    let mut freqs = [0u32; 256];
    let mut best = (f64::MAX, MAX_BITS);
    for bits in MIN_BITS..=MAX_BITS {
        if !fit(&counts, bits, false, 0, &mut freqs) {
            break;
        }
        if freqs.iter().any(|&f| f > most(bits)) {
            continue;
        }
        let coded: f64 = counts
            .iter()
            .zip(&freqs)
            .filter(|(&c, _)| c > 0)
            .map(|(&c, &f)| c as f64 * (bits as f64 - (f as f64).log2()))
            .sum();
        let size = coded / 8.0 + table(&freqs).len() as f64;
        if size < best.0 {
            best = (size, bits);
        }
    }
    let bits = best.1;
    fit(&counts, bits, false, 0, &mut freqs);
    let mut start = [0u32; 256];
    let mut at = 0;
    for (s, &f) in start.iter_mut().zip(&freqs) {
        *s = at;
        at += f;
    }
    let ways = ways_for(data.len());
    let mut out = vec![bits as u8, ways as u8];
    out.extend_from_slice(&table(&freqs));
    let coded = data.len() - carried(data.len(), ways);
    let mut x = [LOW; WAYS];
    for (w, x) in x[..ways].iter_mut().enumerate() {
        *x = 1 << 24;
        for (i, v) in data[coded..].iter().skip(w).step_by(ways).enumerate() {
            *x |= (*v as u32) << (8 * i);
        }
    }
    // Last value first, so that the decoder runs forwards; a word is spilled when the state
    // would leave [LOW, LOW << 16).
    let mut words = Vec::with_capacity(data.len() / 2 + WAYS);
    for (k, &b) in data[..coded].iter().enumerate().rev() {
        let (f, s) = (freqs[b as usize], start[b as usize]);
        let x = &mut x[k % ways];
        if *x as u64 >= (f as u64) << (32 - bits) {
            words.push(*x as u16);
            *x >>= 16;
        }
        *x = ((*x / f) << bits) + *x % f + s;
    }
    rans::write_stream(&words, &x[..ways], &mut out);
    out
}

/// The table's bytes (payload layout above) for `freqs`.
fn table(freqs: &[u32; 256]) -> Vec<u8> {
    let mut out = vec![0u8; 32];
    for (b, &f) in freqs.iter().enumerate() {
        if f > 0 {
            out[b / 8] |= 1 << (b % 8);
        }
    }
    for (b, &f) in freqs.iter().enumerate() {
        let n = match (f, guess(freqs, b)) {
            (0, _) => continue,
            (f, Some(g)) => zigzag(f as i64 - g as i64),
            (f, None) => f as u64 - 1,
        };
        leb128(n, &mut out);
    }
    out
}

/// The frequency a table's byte `b` is written against, from those before it: the same value
/// with the other sign, else the next smaller mantissa of the same exponent (fp8's bytes are
/// sign, exponent, mantissa), where present.
fn guess(freqs: &[u32; 256], b: usize) -> Option<u32> {
    match b {
        128.. if freqs[b - 128] > 0 => Some(freqs[b - 128]),
        _ if !b.is_multiple_of(8) && freqs[b - 1] > 0 => Some(freqs[b - 1]),
        _ => None,
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn leb128(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads a LEB128 number of at most 3 bytes (a frequency needs 15 bits at most).
fn read_leb128(p: &[u8], at: &mut usize) -> Result<u32> {
    let mut n = 0u32;
    for i in 0..3 {
        let b = *p.get(*at).ok_or(Error::Truncated("byte-table payload"))?;
        *at += 1;
        n |= ((b & 0x7f) as u32) << (7 * i);
        if b < 0x80 {
            return Ok(n);
        }
    }
    Err(Error::Corrupt("byte-table frequency too long".into()))
}

/// Largest frequency a table of `bits` of precision may give a byte: a slot's entry holds the
/// byte, the slot's offset in the byte's range and the frequency less 1 in 32 bits.
fn most(bits: u32) -> u32 {
    1 << (24 - bits)
}

/// What the decoder needs of a table: each slot's entry, `byte | (slot - start) << 8 |
/// (freq - 1) << (8 + bits)`.
struct FreqTable {
    bits: u32,
    slots: Vec<u32>,
}

/// Reads the precision and table at the payload's start; returns them and where the stream
/// starts.
fn read_table(p: &[u8]) -> Result<(FreqTable, usize, usize)> {
    let [bits, ways, map @ ..] = p else {
        return Err(Error::Truncated("byte-table payload"));
    };
    let (bits, ways) = (*bits as u32, *ways as usize);
    if !(MIN_BITS..=MAX_BITS).contains(&bits) || !matches!(ways, 16 | 32 | 64) {
        return Err(Error::Corrupt(format!(
            "byte-table payload of {bits} bits and {ways} ways"
        )));
    }
    let map = map
        .get(..32)
        .ok_or(Error::Truncated("byte-table payload"))?;
    let mut at = 2 + 32;
    let mut freqs = [0u32; 256];
    let total = 1u32 << bits;
    for b in 0..256 {
        if map[b / 8] >> (b % 8) & 1 == 0 {
            continue;
        }
        let n = read_leb128(p, &mut at)?;
        let f = match guess(&freqs, b) {
            Some(g) => g as i64 + ((n >> 1) as i64 ^ -((n & 1) as i64)),
            None => n as i64 + 1,
        };
        if !(1..=most(bits).min(total) as i64).contains(&f) {
            return Err(Error::Corrupt("byte-table frequency out of range".into()));
        }
        freqs[b] = f as u32;
    }
    if freqs.iter().sum::<u32>() != total {
        return Err(Error::Corrupt(
            "byte-table frequencies do not add up".into(),
        ));
    }
    let mut t = FreqTable {
        bits,
        slots: Vec::with_capacity(total as usize),
    };
    for (b, &f) in freqs.iter().enumerate() {
        t.slots
            .extend((0..f).map(|k| b as u32 | k << 8 | (f.max(1) - 1) << (8 + bits)));
    }
    Ok((t, ways, at))
}

/// Decodes a payload of `raw_len` values, appending them to `out`; `seen` gets them piece by
/// piece as they are written.
pub fn decode(
    payload: &[u8],
    raw_len: usize,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    let (t, ways, at) = read_table(payload)?;
    let (mut x, mut w) = Decoder::new(&payload[at..], ways)?.split();
    let kernel = kernels();
    let coded = raw_len - carried(raw_len, ways);
    // Chunks are whole groups, so value `k` of the block is on state `k mod ways` in each. The
    // output grows a chunk at a time, and a stream that ends before the block does is refused
    // at that chunk, not after the whole declared length.
    let mut left = coded;
    while left > 0 {
        let at = out.len();
        out.resize(at + CHUNK.min(left), 0);
        let chunk = &mut out[at..];
        let done = kernel.byte_groups(&mut x, &mut w, &t, ways, chunk);
        decode_scalar(&mut x, &mut w, &t, ways, &mut chunk[done..]);
        if w.pos > w.words.len() {
            return Err(Error::Corrupt(
                "byte-table stream ends before its block".into(),
            ));
        }
        seen(chunk);
        left -= chunk.len();
    }
    let at = out.len();
    out.resize(at + raw_len - coded, 0);
    let tail = &mut out[at..];
    // The last values, from the states the encoder started with; the stream must be spent.
    let rows = tail.len() / ways;
    for (w, &x) in x[..ways].iter().enumerate() {
        if x >> (8 * rows) != 1 << (24 - 8 * rows) {
            return Err(Error::Corrupt("byte-table stream does not decode".into()));
        }
        for (i, v) in tail.iter_mut().skip(w).step_by(ways).enumerate() {
            *v = (x >> (8 * i)) as u8;
        }
    }
    seen(tail);
    Decoder::join(x, w).finish_at(&x)
}

/// The reference decoder: values in order, value `k` of `out` on state `k mod ways` (`out`
/// starts at a whole group).
fn decode_scalar(x: &mut [u32; WAYS], w: &mut Words, t: &FreqTable, ways: usize, out: &mut [u8]) {
    let mask = (1u32 << t.bits) - 1;
    for group in out.chunks_mut(ways) {
        for (x, v) in x.iter_mut().zip(group) {
            let e = t.slots[(*x & mask) as usize];
            let freq = (e >> (8 + t.bits)) + 1;
            rans::step(x, t.bits, freq, e >> 8 & mask, w);
            *v = e as u8;
        }
    }
}

impl Kernels {
    /// Decodes whole groups of `ways` values into `out` with a vector kernel while the
    /// stream has room for a group's worst case; returns how many values it decoded.
    fn byte_groups(
        self,
        x: &mut [u32; WAYS],
        w: &mut Words,
        t: &FreqTable,
        ways: usize,
        out: &mut [u8],
    ) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512 support was checked when the level was chosen; the slot table
            // has an entry for every slot under 2^bits.
            Kernels::Avx512 => unsafe {
                match ways {
                    16 => avx512::groups::<1>(x, w, t, out),
                    32 => avx512::groups::<2>(x, w, t, out),
                    _ => avx512::groups::<4>(x, w, t, out),
                }
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 support was checked when the level was chosen; as above.
            Kernels::Avx2 => unsafe {
                match ways {
                    16 => avx2::groups::<2>(x, w, t, ways, out),
                    _ => avx2::groups::<4>(x, w, t, ways, out),
                }
            },
            _ => 0,
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::FreqTable;
    use crate::entropy::rans::avx2::refill;
    use crate::entropy::rans::{Words, WAYS};
    use std::arch::x86_64::*;

    crate::simd::avx2! {
    /// Decodes whole groups of `ways` values, `8 R` ways at a time in `R` registers of 8 (the
    /// ways in order, so the words are read as `decode_scalar` reads them).
    pub(super) fn groups<const R: usize>(
        x: &mut [u32; WAYS],
        w: &mut Words,
        t: &FreqTable,
        ways: usize,
        out: &mut [u8],
    ) -> usize {
        let data = w.words;
        let mut pos = w.pos;
        let zero = _mm256_setzero_si256();
        let one = _mm256_set1_epi32(1);
        let mask = _mm256_set1_epi32((1 << t.bits) - 1);
        let shift = _mm_cvtsi32_si128(t.bits as i32);
        let freq_shift = _mm_cvtsi32_si128(8 + t.bits as i32);
        // Byte 0 of each 32-bit lane to the low 4 bytes of its 128-bit half.
        let low_bytes = _mm256_setr_epi8(
            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1, -1,
            -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        );
        let slots = t.slots.as_ptr() as *const i32;
        let mut done = 0;
        // A group takes at most one word per value.
        while done + ways <= out.len() && pos + 2 * ways <= data.len() {
            for c in (0..ways).step_by(8 * R) {
                // SAFETY: `c + 8 R <= ways <= WAYS`, so `x[c + 8 r..]` holds the 8 states
                // each load reads.
                let mut xs: [__m256i; R] = std::array::from_fn(|r| unsafe {
                    _mm256_loadu_si256(x[c + 8 * r..].as_ptr().cast())
                });
                let mut ys = [zero; R];
                for r in 0..R {
                    let slot = _mm256_and_si256(xs[r], mask);
                    // SAFETY: slots are under 2^bits, the slot table's length.
                    let e = unsafe { _mm256_i32gather_epi32::<4>(slots, slot) };
                    let freq = _mm256_add_epi32(_mm256_srl_epi32(e, freq_shift), one);
                    let offset = _mm256_and_si256(_mm256_srli_epi32::<8>(e), mask);
                    ys[r] = _mm256_add_epi32(
                        _mm256_mullo_epi32(freq, _mm256_srl_epi32(xs[r], shift)),
                        offset,
                    );
                    let b = _mm256_shuffle_epi8(e, low_bytes);
                    let b = _mm_unpacklo_epi32(
                        _mm256_castsi256_si128(b),
                        _mm256_extracti128_si256::<1>(b),
                    );
                    // SAFETY: `out[done + c + 8 r..]` holds the 8 bytes the store writes.
                    unsafe { _mm_storel_epi64(out.as_mut_ptr().add(done + c + 8 * r).cast(), b) };
                }
                for (x, &y) in xs.iter_mut().zip(&ys) {
                    let need = _mm256_cmpeq_epi32(_mm256_srli_epi32::<16>(y), zero);
                    // SAFETY: the group started with 2 bytes per value left past `pos`, and
                    // the 8 values before these took at most 16 of them each.
                    *x = unsafe { refill(y, need, data, &mut pos) };
                }
                for (r, xs) in xs.iter().enumerate() {
                    // SAFETY: as for the loads.
                    unsafe { _mm256_storeu_si256(x[c + 8 * r..].as_mut_ptr().cast(), *xs) };
                }
            }
            done += ways;
        }
        w.pos = pos;
        done
    }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::FreqTable;
    use crate::entropy::rans::{Words, WAYS};
    use std::arch::x86_64::*;

    crate::simd::avx512! {
    /// Decodes whole groups of `16 R` values (register r holds states 16 r to 16 r + 15, so
    /// `R` dependency chains overlap), reading exactly the words `decode_scalar` reads.
    pub(super) fn groups<const R: usize>(
        x: &mut [u32; WAYS],
        w: &mut Words,
        t: &FreqTable,
        out: &mut [u8],
    ) -> usize {
        let ways = 16 * R;
        let data = w.words;
        let mut pos = w.pos;
        // SAFETY: 16 R <= 64 states, so `x[16 r..]` holds the 16 each load reads.
        let mut xs: [__m512i; R] =
            std::array::from_fn(|r| unsafe { _mm512_loadu_si512(x[16 * r..].as_ptr().cast()) });
        let low = _mm512_set1_epi32(1 << 16);
        let one = _mm512_set1_epi32(1);
        let mask = _mm512_set1_epi32((1 << t.bits) - 1);
        let shift = _mm_cvtsi32_si128(t.bits as i32);
        let freq_shift = _mm_cvtsi32_si128(8 + t.bits as i32);
        let slots = t.slots.as_ptr() as *const i32;
        let mut done = 0;
        // A group takes at most one word per value.
        while done + ways <= out.len() && pos + 2 * ways <= data.len() {
            // Every register's look-ups first, then the renormalisations (which wait on
            // each other through `pos`).
            let mut ys = [_mm512_setzero_si512(); R];
            for r in 0..R {
                let slot = _mm512_and_si512(xs[r], mask);
                // SAFETY: slots are under 2^bits, the slot table's length.
                let e = unsafe { _mm512_i32gather_epi32::<4>(slot, slots) };
                let freq = _mm512_add_epi32(_mm512_srl_epi32(e, freq_shift), one);
                let offset = _mm512_and_si512(_mm512_srli_epi32::<8>(e), mask);
                ys[r] = _mm512_add_epi32(
                    _mm512_mullo_epi32(freq, _mm512_srl_epi32(xs[r], shift)),
                    offset,
                );
                // SAFETY: `out[done + 16 r..]` holds the 16 bytes the store writes.
                unsafe {
                    _mm_storeu_si128(
                        out.as_mut_ptr().add(done + 16 * r).cast(),
                        _mm512_cvtepi32_epi8(e),
                    )
                };
            }
            for r in 0..R {
                let y = ys[r];
                let need = _mm512_cmplt_epu32_mask(y, low);
                // SAFETY: the group started with 2 bytes per value left past `pos`, and each
                // register's values take at most 32 of them.
                let next = unsafe { _mm256_loadu_si256(data.as_ptr().add(pos).cast()) };
                let fill = _mm512_maskz_expand_epi32(need, _mm512_cvtepu16_epi32(next));
                xs[r] = _mm512_mask_or_epi32(y, need, _mm512_slli_epi32::<16>(y), fill);
                pos += 2 * need.count_ones() as usize;
            }
            done += ways;
        }
        for (r, xs) in xs.iter().enumerate() {
            // SAFETY: as for the loads at the start.
            unsafe { _mm512_storeu_si512(x[16 * r..].as_mut_ptr().cast(), *xs) };
        }
        w.pos = pos;
        done
    }
    }
}

/// The byte-table codec.
pub struct ByteTable;

impl BlockCodec for ByteTable {
    fn codec(&self) -> Codec {
        Codec::ByteTable
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        *out = encode(data);
        true
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        seen: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        decode(payload, raw_len, out, seen)?;
        Ok(Seen::All)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::{set_kernels, Kernels};
    use crate::testing::xorshift;

    /// fp8-like bytes: a sign, an exponent around `centre`, a mantissa.
    fn weights(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                let r = xorshift(&mut s);
                let e = (8 + (r % 5) as i64 - ((r >> 8) % 5) as i64).clamp(0, 15) as u8;
                (r >> 16) as u8 & 0x80 | e << 3 | (r >> 24) as u8 & 7
            })
            .collect()
    }

    fn roundtrip(data: &[u8]) -> usize {
        let p = encode(data);
        for l in [Kernels::Scalar, Kernels::Avx2, Kernels::detect()] {
            set_kernels(l);
            let mut out = vec![9u8];
            let mut hashed = 0;
            decode(&p, data.len(), &mut out, &mut |b| hashed += b.len()).expect("decodes");
            assert_eq!(&out[1..], data);
            assert_eq!(hashed, data.len());
        }
        p.len()
    }

    #[test]
    fn roundtrips_every_size_and_compresses() {
        for n in [0, 1, 15, 16, 17, 100, 4095, 4096, 40_000, 200_003] {
            let data = weights(n, n as u64 + 1);
            let size = roundtrip(&data);
            // About 7 bits of entropy a value, and a table of about 100 bytes.
            if n >= 4096 {
                assert!(size * 8 < n * 8 - n / 4, "{n}: {size}");
            }
        }
        // One value only, one value most of the time (too frequent for a slot's entry at 14
        // bits), and all 256.
        assert!(roundtrip(&[0x38; 5000]) < 300);
        let mostly: Vec<u8> = weights(50_000, 3)
            .iter()
            .enumerate()
            .map(|(k, &b)| if k % 3 > 0 { 0 } else { b })
            .collect();
        let p = encode(&mostly);
        assert!(p[0] <= 12, "precision {}", p[0]);
        roundtrip(&mostly);
        roundtrip(&(0..=255).cycle().take(70_000).collect::<Vec<u8>>());
    }

    #[test]
    fn bad_payloads_are_refused() {
        let data = weights(10_000, 7);
        let p = encode(&data);
        let mut out = Vec::new();
        for cut in [0, 1, 2, 20, 40, p.len() / 2, p.len() - 1] {
            out.clear();
            assert!(decode(&p[..cut], data.len(), &mut out, &mut |_| {}).is_err());
        }
        for (at, v) in [(0, 9u8), (0, 15), (1, 48), (2 + 8, 0)] {
            let mut q = p.clone();
            q[at] = v;
            out.clear();
            assert!(decode(&q, data.len(), &mut out, &mut |_| {}).is_err());
        }
        // One byte with all 2^14 slots: more than a slot's entry holds.
        let mut q = vec![14u8, 16, 1];
        q.extend_from_slice(&[0; 31]);
        leb128(16383, &mut q);
        q.extend_from_slice(&[0, 1, 0, 0].repeat(16));
        out.clear();
        assert!(decode(&q, 100, &mut out, &mut |_| {}).is_err());
        // A flipped bit of the stream decodes to other bytes or fails, never panics.
        for at in [40, p.len() / 3, p.len() - 3] {
            let mut q = p.clone();
            q[at] ^= 4;
            out.clear();
            let r = decode(&q, data.len(), &mut out, &mut |_| {});
            assert!(r.is_err() || out != data);
        }
    }

    #[test]
    fn a_short_stream_is_refused_before_its_declared_length() {
        let mut x = 9u64;
        let data: Vec<u8> = (0..70_000).map(|_| (xorshift(&mut x) % 7) as u8).collect();
        let payload = encode(&data);
        // The same payload for a block claiming 64 MiB: refused within the first chunks, and
        // its output never grows to the length claimed.
        let mut out = Vec::new();
        let mut seen = 0;
        let r = decode(&payload, 64 << 20, &mut out, &mut |p| seen += p.len());
        assert!(r.is_err());
        assert!(out.len() <= 4 * CHUNK, "grew to {}", out.len());
        assert!(seen <= 4 * CHUNK);
    }
}
