//! Recent-values mode of the tensor path, for arrays whose values repeat exactly (dequantized
//! weights: integers times a scale per tensor, row or group). Each value is either a hit, one
//! of the block's last `K` distinct values, coded as its rank among them in float order, or a
//! miss; the misses, in order, go through the planes codec as an array of their own.
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! `K` (`u16`), miss count (`u32`), length (`u32`) + tensor payload of the misses, then the
//! rANS stream of the symbols (0 a miss, `r + 1` a hit of rank `r`).

use super::adaptive::STATES;
use super::adaptive::{
    batch_end, put_prefixed, put_values_and_tail, PayloadReader, Table, MAX_BATCH,
};
use super::distinct::Distinct;
use super::planes::read;
use super::DType;
use crate::codecs::block_codec::{BlockCodec, Seen};
use crate::entropy::rans;
use crate::error::{Error, Result};
use crate::format::Codec;
use crate::simd::kernel_variants;
use std::hint::select_unpredictable;

/// Cache sizes the encoder chooses from.
pub const SIZES: [usize; 3] = [16, 64, 256];
/// Largest cache size a payload may name.
const MAX_SIZE: usize = 1024;
/// Values looked at, in evenly spaced pieces, to tell whether values repeat at all.
const PROBE: usize = 1024;
/// Values simulated, in evenly spaced pieces, to predict the size for each cache size.
const TRIAL: usize = 16 << 10;
/// Pieces of the probe and of the trial.
const PIECES: usize = 4;

/// The last `K` distinct values, sorted by float order, each with the step it was last seen.
struct Cache {
    keys: Vec<u64>,
    /// The values of `keys`.
    vals: Vec<u64>,
    stamps: Vec<u32>,
    /// Cached values below +0.0 in float order (negative values).
    below: usize,
    size: usize,
    sign: u64,
    mask: u64,
}

impl Cache {
    fn new(size: usize, width: usize) -> Self {
        let bits = 8 * width as u32;
        Cache {
            keys: Vec::with_capacity(size),
            vals: Vec::with_capacity(size),
            stamps: Vec::with_capacity(size),
            below: 0,
            size,
            sign: 1 << (bits - 1),
            mask: u64::MAX >> (64 - bits),
        }
    }

    /// Sort key of a value: its bits mapped so that float order is integer order.
    #[inline(always)]
    fn key(&self, v: u64) -> u64 {
        // Positive values flip the sign, negative ones every bit; in arithmetic, as signs come
        // at random (a select was compiled to a branch).
        v ^ (self.sign | (self.mask ^ self.sign) & 0u64.wrapping_sub(u64::from(v & self.sign != 0)))
    }

    /// Value of a sort key (as `key`, without a branch).
    #[inline(always)]
    fn value(&self, key: u64) -> u64 {
        key ^ (self.sign
            | (self.mask ^ self.sign) & 0u64.wrapping_sub(u64::from(key & self.sign == 0)))
    }

    /// Rank of `key` if cached, else where it would go.
    fn find(&self, key: u64) -> std::result::Result<usize, usize> {
        self.settle(self.lower([key])[0], key)
    }

    /// For each key, the last rank whose key is at most it (or 0): binary searches side by
    /// side (each is a chain of dependent loads) and without branches on the comparisons
    /// (they come at random).
    #[inline(always)]
    fn lower<const N: usize>(&self, keys: [u64; N]) -> [usize; N] {
        let mut base = [0; N];
        let mut len = self.keys.len();
        while len > 1 {
            let half = len / 2;
            for j in 0..N {
                let b = base[j];
                base[j] = select_unpredictable(self.keys[b + half] <= keys[j], b + half, b);
            }
            len -= half;
        }
        base
    }

    /// `find`'s answer for `key` from its `lower` rank.
    #[inline(always)]
    fn settle(&self, base: usize, key: u64) -> std::result::Result<usize, usize> {
        match self.keys.get(base).map(|k| k.cmp(&key)) {
            None => Err(0),
            Some(std::cmp::Ordering::Equal) => Ok(base),
            Some(std::cmp::Ordering::Less) => Err(base + 1),
            Some(std::cmp::Ordering::Greater) => Err(base),
        }
    }

    /// Looks `keys` up in turn, the first seen at step `t0`: a hit refreshes its value's
    /// step, a miss is cached; `each` gets each key's index and symbol (0 a miss) and ends
    /// the run by returning false.
    fn code(&mut self, keys: &[u64], t0: usize, mut each: impl FnMut(usize, usize) -> bool) {
        const SIDE: usize = 8;
        for (g, group) in keys.chunks(SIDE).enumerate() {
            let base = match group.try_into() {
                Ok(g) => self.lower::<SIDE>(g),
                Err(_) => [0; SIDE],
            };
            let mut fresh = group.len() == SIDE;
            // After a miss the cache changed: the group's later keys are looked up again
            // (as are those of a short last group).
            for (j, &key) in group.iter().enumerate() {
                let i = g * SIDE + j;
                let t = (t0 + i) as u32;
                let found = match fresh {
                    true => self.settle(base[j], key),
                    false => self.find(key),
                };
                let s = match found {
                    Ok(rank) => {
                        self.stamps[rank] = t;
                        self.symbol(rank)
                    }
                    Err(at) => {
                        self.insert(key, at, t);
                        fresh = false;
                        0
                    }
                };
                if !each(i, s) {
                    return;
                }
            }
        }
    }

    /// Adds `key` (not cached) at rank `at`, seen at step `t`, evicting the least recently
    /// seen value if the cache is full.
    fn insert(&mut self, key: u64, at: usize, t: u32) {
        let value = self.value(key);
        self.below += usize::from(key < self.sign);
        if self.keys.len() < self.size {
            self.keys.insert(at, key);
            self.vals.insert(at, value);
            self.stamps.insert(at, t);
            return;
        }
        // The least recently used, then one shift of the values between it and the new one's
        // place.
        let old = oldest(&self.stamps);
        self.below -= usize::from(self.keys[old] < self.sign);
        let to = match old < at {
            true => {
                self.keys.copy_within(old + 1..at, old);
                self.vals.copy_within(old + 1..at, old);
                self.stamps.copy_within(old + 1..at, old);
                at - 1
            }
            false => {
                self.keys.copy_within(at..old, at + 1);
                self.vals.copy_within(at..old, at + 1);
                self.stamps.copy_within(at..old, at + 1);
                at
            }
        };
        self.keys[to] = key;
        self.vals[to] = value;
        self.stamps[to] = t;
    }

    /// Symbol of a hit at `rank`: its distance from the first value at or above +0.0,
    /// interleaved by sign (0, -1, 1, -2, ...), plus one.
    #[inline(always)]
    fn symbol(&self, rank: usize) -> usize {
        match rank.checked_sub(self.below) {
            Some(d) => 2 * d + 1,
            None => 2 * (self.below - rank),
        }
    }

    /// Rank of a hit's symbol (not 0), if it names a cached value.
    #[inline(always)]
    fn rank(&self, symbol: usize) -> Option<usize> {
        // Without a branch on the sign (it is taken at random): below the first, the rank
        // wraps past the cache.
        let d = symbol >> 1;
        let r = match symbol & 1 {
            1 => self.below.wrapping_add(d),
            _ => self.below.wrapping_sub(d),
        };
        (r < self.keys.len()).then_some(r)
    }
}

kernel_variants! {
/// Index of the smallest stamp (the first, of equals), compiled for the process's SIMD level
/// (an unsigned minimum per lane).
fn oldest [] [] (stamps: &[u32]) -> usize {
    oldest_in(stamps)
}
}

/// `oldest`, in passes that vectorise: the minimum, the piece of 16 that holds it, its place
/// there.
#[inline(always)]
fn oldest_in(stamps: &[u32]) -> usize {
    let first = stamps.iter().copied().min().unwrap_or(0);
    for (c, piece) in stamps.chunks(16).enumerate() {
        if piece.iter().fold(false, |any, &s| any | (s == first)) {
            return 16 * c + piece.iter().position(|&s| s == first).unwrap_or(0);
        }
    }
    0
}

/// The symbol table of a cache of `size`: symbols 0 (a miss) to `2 size`, the ranks as
/// pairs of equal distance from +0.0.
fn table(size: usize, decoder: bool) -> Table {
    Table::new(2 * size + 1, 1, decoder)
}

/// The cache size predicted to code `data` (an array of `dtype`) smallest in this mode, if
/// its predicted size is below `limit` bytes; `miss_bits` is the predicted cost of a miss.
pub fn choose(data: &[u8], dtype: DType, miss_bits: f64, limit: usize) -> Option<usize> {
    match dtype.width() {
        2 => choose_w::<2>(data, miss_bits, limit),
        4 => choose_w::<4>(data, miss_bits, limit),
        _ => choose_w::<8>(data, miss_bits, limit),
    }
}

/// `PIECES` evenly spaced ranges of `len` values each (fewer if `n` is small) out of `n`.
fn pieces(n: usize, len: usize) -> Vec<std::ops::Range<usize>> {
    if n <= len * PIECES {
        return std::iter::once(0..n).collect();
    }
    let step = (n - len) / (PIECES - 1);
    (0..PIECES).map(|i| i * step..i * step + len).collect()
}

fn choose_w<const W: usize>(data: &[u8], miss_bits: f64, limit: usize) -> Option<usize> {
    let n = data.len() / W;
    let value = |i: usize| read::<W>(&data[i * W..]);
    // Most values of most weights are distinct: then nothing is simulated. Values distinct
    // within each piece are counted until they are known to be more than half.
    let probe = pieces(n, PROBE);
    let seen: usize = probe.iter().map(|r| r.len()).sum();
    let mut set = Distinct::<u64>::new(probe.iter().map(|r| r.len()).max().unwrap_or(0));
    let mut distinct = 0;
    for r in probe {
        set.clear();
        for i in r {
            distinct += usize::from(set.insert(value(i)));
            if 2 * distinct > seen {
                return None;
            }
        }
    }
    if seen == 0 {
        return None;
    }
    let trial = pieces(n, TRIAL);
    let seen: usize = trial.iter().map(|r| r.len()).sum();
    let mut best: Option<(f64, usize)> = None;
    // Largest first: it usually wins, and a smaller cache's simulation stops once its misses
    // alone cost more than the best so far.
    for size in SIZES.into_iter().rev() {
        // The sample's symbols at their own frequencies, each symbol seen costing half a
        // count's worth of bits to learn, and the misses at `miss_bits`.
        let bound = best.map_or(limit as f64, |(b, _)| b) * 8.0 * seen as f64 / n as f64;
        let mut counts = vec![0u32; 2 * size + 1];
        for r in trial.iter().cloned() {
            let mut cache = Cache::new(size, W);
            let keys: Vec<u64> = r.map(|i| cache.key(value(i))).collect();
            cache.code(&keys, 0, |_, s| {
                counts[s] += 1;
                s != 0 || counts[0] as f64 * miss_bits <= bound
            });
        }
        if counts[0] as f64 * miss_bits > bound {
            continue;
        }
        let total = seen as f64;
        let mut bits = counts[0] as f64 * miss_bits;
        for &c in counts.iter().filter(|&&c| c > 0) {
            bits += c as f64 * (total / c as f64).log2() + 0.5 * total.log2();
        }
        let bytes = bits / 8.0 * n as f64 / seen as f64;
        if best.is_none_or(|(b, _)| bytes < b) {
            best = Some((bytes, size));
        }
    }
    best.filter(|&(b, _)| b < limit as f64).map(|(_, s)| s)
}

/// Codes `data`, an array of `dtype`, with a cache of `size` (1..=1024) values, into `out`.
pub fn encode_into(data: &[u8], dtype: DType, size: usize, out: &mut Vec<u8>) {
    match dtype.width() {
        2 => encode_w::<2>(data, dtype, size, out),
        4 => encode_w::<4>(data, dtype, size, out),
        _ => encode_w::<8>(data, dtype, size, out),
    }
}

fn encode_w<const W: usize>(data: &[u8], dtype: DType, size: usize, out: &mut Vec<u8>) {
    let size = size.clamp(1, MAX_SIZE);
    let n = data.len() / W;
    let tail = &data[n * W..];
    let mut cache = Cache::new(size, W);
    let mut syms = Vec::with_capacity(n);
    let mut misses = Vec::new();
    let mut keys = Vec::with_capacity(MAX_BATCH);
    for (c, chunk) in data[..n * W].chunks(MAX_BATCH * W).enumerate() {
        keys.clear();
        keys.extend(chunk.chunks_exact(W).map(|v| cache.key(read::<W>(v))));
        cache.code(&keys, c * MAX_BATCH, |i, s| {
            syms.push(s as u16);
            if s == 0 {
                misses.extend_from_slice(&chunk[i * W..i * W + W]);
            }
            true
        });
    }
    let mut tab = table(size, false);
    let mut enc = rans::Encoder::new(n, STATES);
    tab.put_all(&syms, &mut enc);
    out.clear();
    out.push(dtype.tag());
    put_values_and_tail(out, n, tail);
    out.extend_from_slice(&(size as u16).to_le_bytes());
    out.extend_from_slice(&((misses.len() / W) as u32).to_le_bytes());
    put_prefixed(out, |o| super::encode_append(&misses, dtype, o));
    enc.finish(out);
}

/// Decodes a payload, appending its `raw_len` bytes to `out`.
pub fn decode(payload: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let corrupt = |what: &str| Error::Corrupt(format!("recent-values block: {what}"));
    let mut f = PayloadReader::new(payload, "recent-values");
    let dtype = DType::from_tag(f.take(1)?[0])?;
    let w = dtype.width();
    // fp8 blocks never take this codec (`choice`).
    if w == 1 {
        return Err(corrupt("fp8 values"));
    }
    let (n, tail) = f.values_and_tail(w, raw_len)?;
    let s = f.take(2)?;
    let size = u16::from_le_bytes([s[0], s[1]]) as usize;
    if !(1..=MAX_SIZE).contains(&size) {
        return Err(corrupt("bad cache size"));
    }
    let m = f.u32()? as usize;
    if m > n {
        return Err(corrupt("more misses than values"));
    }
    let inner = f.prefixed()?;
    let mut misses = Vec::new();
    super::decode_append(inner, m * w, &mut misses, &mut |_| {})?;
    match w {
        2 => decode_w::<2>(f.rest, size, &misses, n, out)?,
        4 => decode_w::<4>(f.rest, size, &misses, n, out)?,
        _ => decode_w::<8>(f.rest, size, &misses, n, out)?,
    }
    out.extend_from_slice(tail);
    Ok(())
}

/// Decodes `values` values of `W` bytes, appending them to `out` a batch at a time (its room
/// grows with what is decoded, never from the declared count alone).
fn decode_w<const W: usize>(
    stream: &[u8],
    size: usize,
    misses: &[u8],
    values: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    let corrupt = |what: &str| Error::Corrupt(format!("recent-values block: {what}"));
    let (mut st, mut words) = rans::Decoder::new(stream, STATES)?.split();
    let mut tab = table(size, true);
    let mut cache = Cache::new(size, W);
    let mut misses = misses.chunks_exact(W);
    let mut syms = [0u16; MAX_BATCH];
    let (mut at, mut end) = (0, batch_end(0));
    let start = out.len();
    while at < values {
        // Symbols first (they decode independently), up to each refit; then the values.
        let n = MAX_BATCH.min(values - at);
        out.resize(start + (at + n) * W, 0);
        let batch = &mut out[start + at * W..];
        tab.get_span(&mut st, &mut words, at, &mut end, &mut syms[..n])?;
        at += n;
        let first = at - n;
        for (k, &s) in syms[..n].iter().enumerate() {
            let t = (first + k) as u32;
            let o = &mut batch[k * W..k * W + W];
            if s == 0 {
                let v = misses.next().ok_or_else(|| corrupt("too few misses"))?;
                let key = cache.key(read::<W>(v));
                match cache.find(key) {
                    Ok(_) => return Err(corrupt("a miss is cached")),
                    Err(at) => cache.insert(key, at, t),
                }
                o.copy_from_slice(v);
                continue;
            }
            let Some(rank) = cache.rank(s as usize) else {
                return Err(corrupt("rank out of range"));
            };
            cache.stamps[rank] = t;
            o.copy_from_slice(&cache.vals[rank].to_le_bytes()[..W]);
        }
    }
    if misses.next().is_some() {
        return Err(corrupt("unused misses"));
    }
    rans::Decoder::join(st, words).finish()
}

/// The recent-values codec for values of `dtype`, keeping the last `size` distinct values
/// (what `choose` found best).
pub struct Recent {
    /// The values' type.
    pub dtype: DType,
    /// Distinct values kept.
    pub size: usize,
}

impl BlockCodec for Recent {
    fn codec(&self) -> Codec {
        Codec::Recent
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        encode_into(data, self.dtype, self.size, out);
        true
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
    use crate::testing::xorshift;

    /// `rows` rows of `cols` f32 values: small integers times a scale per row.
    fn dequantized(rows: usize, cols: usize, levels: u64, seed: u64) -> Vec<u8> {
        let mut x = seed;
        let mut out = Vec::new();
        for _ in 0..rows {
            let scale = 0.001 + (xorshift(&mut x) % 1000) as f32 * 1e-5;
            for _ in 0..cols {
                let a = xorshift(&mut x) % levels;
                let b = xorshift(&mut x) % levels;
                let q = (a + b) as f32 - (levels - 1) as f32;
                out.extend_from_slice(&(q * scale).to_le_bytes());
            }
        }
        out
    }

    fn roundtrip(data: &[u8], dtype: DType, size: usize) -> usize {
        let mut p = Vec::new();
        encode_into(data, dtype, size, &mut p);
        // Appended after what `out` held.
        let mut out = b"held".to_vec();
        decode(&p, data.len(), &mut out).unwrap();
        assert!(out[..4] == *b"held", "size {size}: overwritten");
        assert!(out[4..] == *data, "size {size}, {} bytes", data.len());
        p.len()
    }

    #[test]
    fn roundtrips_every_width_and_size() {
        let data = dequantized(40, 300, 8, 7);
        for size in [1, 2, 16, 64, 256, 1024] {
            for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
                for cut in [0, 1, 5, 999, data.len() - 3, data.len()] {
                    roundtrip(&data[..cut], dtype, size);
                }
            }
        }
    }

    #[test]
    fn repeated_values_code_small_and_are_chosen() {
        // Per-row scales and 15 levels: about 3.4 bits a value once each row's values are
        // cached, against 32 raw.
        let data = dequantized(300, 768, 8, 3);
        let bytes = roundtrip(&data, DType::F32, 16);
        assert!(bytes * 6 < data.len(), "{bytes} of {}", data.len());
        assert_eq!(choose(&data, DType::F32, 26.0, data.len()), Some(16));
        assert_eq!(choose(&data, DType::F32, 26.0, bytes / 2), None);
        // Distinct values are never tried.
        let mut x = 5;
        let noise: Vec<u8> = (0..100_000).map(|_| xorshift(&mut x) as u8).collect();
        assert_eq!(choose(&noise, DType::F32, 26.0, noise.len()), None);
    }

    #[test]
    fn corrupt_payloads_are_errors() {
        let data = dequantized(20, 200, 8, 9);
        let mut p = Vec::new();
        encode_into(&data, DType::F32, 16, &mut p);
        let mut out = Vec::new();
        for cut in [0, 1, 5, 9, p.len() / 2, p.len() - 1] {
            assert!(decode(&p[..cut], data.len(), &mut out).is_err());
        }
        assert!(decode(&p, data.len() + 4, &mut out).is_err());
        for at in (0..p.len()).step_by(7) {
            let mut q = p.clone();
            q[at] ^= 0x10;
            // Any outcome but a panic; a decode that succeeds is caught by the block checksum.
            let _ = decode(&q, data.len(), &mut out);
        }
    }
}
