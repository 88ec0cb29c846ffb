//! Recent-values mode of the tensor path, for arrays whose values repeat exactly (dequantized
//! weights: integers times a scale per tensor, row or group). Each value is either a hit, one
//! of the block's last `K` distinct values, coded as its rank among them in float order, or a
//! miss; the misses, in order, go through the tensor codec as an array of their own.
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! `K` (`u16`), miss count (`u32`), length (`u32`) + tensor payload of the misses, then the
//! rANS stream of the symbols (0 a miss, `r + 1` a hit of rank `r`).

use super::DType;
use crate::coder::rans::{self, fit, Sym, WAYS};
use crate::error::{Error, Result};
use std::hint::select_unpredictable;

/// Cache sizes the encoder chooses from.
pub const SIZES: [usize; 3] = [16, 64, 256];
/// Largest cache size a payload may name.
const MAX_SIZE: usize = 1024;
/// Precision of the symbol tables.
const BITS: u32 = 14;
/// Fewest slots of the escape in a fitted table.
const ESCAPE: u32 = 1;
/// A table's counts are halved when they reach this total.
const HALVE: u32 = 1 << 18;
/// Largest batch of values between two refits.
const MAX_BATCH: usize = 4096;
/// Values looked at, in evenly spaced pieces, to tell whether values repeat at all.
const PROBE: usize = 1024;
/// Values simulated, in evenly spaced pieces, to predict the size for each cache size.
const TRIAL: usize = 16 << 10;
/// Pieces of the probe and of the trial.
const PIECES: usize = 4;

/// End of the batch of values that starts at `at`: batches of 16, 16, 32, ... 2048 values,
/// then `MAX_BATCH` each.
fn batch_end(at: usize) -> usize {
    match at {
        0 => 16,
        _ if at < MAX_BATCH => 2 * at,
        _ => at + MAX_BATCH,
    }
}

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
        // Without a branch (signs come at random): positive values flip the sign, negative
        // ones every bit.
        v ^ select_unpredictable(v & self.sign != 0, self.mask, self.sign)
    }

    /// Value of a sort key.
    #[inline(always)]
    fn value(&self, key: u64) -> u64 {
        key ^ select_unpredictable(key & self.sign == 0, self.mask, self.sign)
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
        // The least recently used (two passes that vectorise), then one shift of the values
        // between it and the new one's place.
        let first = self.stamps.iter().copied().min().unwrap_or(0);
        let old = self.stamps.iter().position(|&s| s == first).unwrap_or(0);
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

/// Adaptive frequencies of the symbols in one context, refitted between batches; a symbol
/// without slots is coded as the escape (the last entry), then as `raw` bits.
struct Table {
    counts: Vec<u32>,
    total: u32,
    fitted: u32,
    /// Slots per symbol and, last, the escape's.
    freqs: Vec<u32>,
    starts: Vec<u32>,
    /// Bits of an escaped symbol.
    raw: u32,
    /// Symbol of each slot (decoder only).
    slots: Vec<u16>,
}

impl Table {
    fn new(symbols: usize, decoder: bool) -> Self {
        let mut t = Table {
            counts: vec![0; symbols],
            total: 0,
            fitted: 0,
            freqs: vec![0; symbols + 1],
            starts: vec![0; symbols + 1],
            raw: usize::BITS - (symbols - 1).leading_zeros(),
            slots: vec![0; if decoder { 1 << BITS } else { 0 }],
        };
        t.refit();
        t
    }

    #[inline(always)]
    fn count(&mut self, s: usize) {
        self.counts[s] += 1;
        self.total += 1;
    }

    /// Fits the frequencies to the counts: the escape weighs as many counts as there are
    /// symbols seen (at least `ESCAPE` slots, all of them while nothing is counted), each
    /// counted symbol gets its share of the slots rounded, at least 1, and the first most
    /// counted the rest.
    fn refit(&mut self) {
        let n = self.counts.len();
        let (counts, freqs) = (&self.counts[..], &mut self.freqs[..n]);
        let total: u64 = counts.iter().map(|&c| c as u64).sum();
        let seen = counts.iter().filter(|&&c| c > 0).count() as u64;
        freqs.fill(0);
        if total > 0 {
            // The escape weighs as much as the symbols seen so far.
            let scale = ((1u64 << BITS) << 32) / (total + seen);
            let escape = ((seen * scale + (1 << 31)) >> 32).max(1);
            let room = (1u64 << BITS) - escape;
            let mut sum = 0u64;
            for (f, &c) in freqs.iter_mut().zip(counts) {
                if c > 0 {
                    *f = (((c as u64 * scale + (1 << 31)) >> 32) as u32).max(1);
                    sum += *f as u64;
                }
            }
            let top = counts.iter().copied().max().unwrap_or(0);
            let best = counts.iter().position(|&c| c == top).unwrap_or(0);
            if sum <= room {
                freqs[best] += (room - sum) as u32;
            } else if (freqs[best] as u64) > sum - room {
                freqs[best] -= (sum - room) as u32;
            } else {
                // Many rare symbols: one more slot each, as the tensor codec fits.
                fit(counts, BITS, false, ESCAPE, freqs);
            }
        }
        let used: u32 = freqs.iter().sum();
        self.freqs[n] = (1 << BITS) - used;
        let mut at = 0;
        for (st, &f) in self.starts.iter_mut().zip(&self.freqs) {
            *st = at;
            at += f;
        }
        if !self.slots.is_empty() {
            for (s, (&st, &f)) in self.starts.iter().zip(&self.freqs).enumerate() {
                self.slots[st as usize..(st + f) as usize].fill(s as u16);
            }
        }
        self.fitted = self.total;
    }

    /// End of a batch: halves the counts at `HALVE` and refits once they grew by a quarter.
    fn end_batch(&mut self) {
        let halved = self.total >= HALVE;
        if halved {
            self.total = 0;
            for c in self.counts.iter_mut() {
                *c = (*c + 1) >> 1;
                self.total += *c;
            }
        }
        if halved || (self.total > self.fitted && 4 * (self.total - self.fitted) >= self.fitted) {
            self.refit();
        }
    }

    /// Queues symbol `s` on state `way`.
    #[inline(always)]
    fn put(&self, s: usize, way: usize, enc: &mut rans::Encoder) {
        let sym = |start, freq, bits| Sym { start, freq, bits };
        match self.freqs[s] {
            0 => {
                let e = self.counts.len();
                enc.put(sym(self.starts[e], self.freqs[e], BITS), way);
                enc.put(sym(s as u32, 1, self.raw), way);
            }
            f => enc.put(sym(self.starts[s], f, BITS), way),
        }
    }

    /// Decodes a symbol from state `x`.
    #[inline(always)]
    fn get(&self, x: &mut u32, words: &mut rans::Words) -> Result<usize> {
        let slot = *x & ((1 << BITS) - 1);
        let s = self.slots[slot as usize] as usize;
        rans::step(x, BITS, self.freqs[s], slot - self.starts[s], words);
        if s < self.counts.len() {
            return Ok(s);
        }
        let s = (*x & ((1 << self.raw) - 1)) as usize;
        rans::step(x, self.raw, 1, 0, words);
        match s < self.counts.len() {
            true => Ok(s),
            false => Err(Error::Corrupt("recent-values block: bad escape".into())),
        }
    }
}

/// The symbol table of a cache of `size`: symbols 0 (a miss) to `2 size`.
fn table(size: usize, decoder: bool) -> Table {
    Table::new(2 * size + 1, decoder)
}

#[inline(always)]
fn read<const W: usize>(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..W].copy_from_slice(&v[..W]);
    u64::from_le_bytes(b)
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
    // Most values of most weights are distinct: then nothing is simulated.
    let (mut distinct, mut seen) = (0, 0);
    for r in pieces(n, PROBE) {
        let mut v: Vec<u64> = r.map(value).collect();
        seen += v.len();
        v.sort_unstable();
        v.dedup();
        distinct += v.len();
    }
    if seen == 0 || 2 * distinct > seen {
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
    let mut enc = rans::Encoder::new(n, WAYS);
    let mut end = batch_end(0);
    for (i, &s) in syms.iter().enumerate() {
        if i == end {
            tab.end_batch();
            end = batch_end(end);
        }
        tab.put(s as usize, i % WAYS, &mut enc);
        tab.count(s as usize);
    }
    out.clear();
    out.push(dtype.tag());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
    out.extend_from_slice(&(size as u16).to_le_bytes());
    out.extend_from_slice(&((misses.len() / W) as u32).to_le_bytes());
    let inner = super::encode(&misses, dtype);
    out.extend_from_slice(&(inner.len() as u32).to_le_bytes());
    out.extend_from_slice(&inner);
    enc.finish(out);
}

/// Reads the payload's fields in order.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(Error::Corrupt("recent-values payload too short".into()));
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Decodes a payload of archive format `version` (10 and later) into `out` (`raw_len` bytes).
pub fn decode(payload: &[u8], raw_len: usize, version: u16, out: &mut Vec<u8>) -> Result<()> {
    let corrupt = |what: &str| Error::Corrupt(format!("recent-values block: {what}"));
    let mut f = Fields { rest: payload };
    let dtype = DType::from_tag(f.take(1)?[0])?;
    let w = dtype.width();
    let n = f.u32()? as usize;
    let t = f.take(1)?[0] as usize;
    let tail = f.take(t)?;
    if t >= w || n.checked_mul(w).and_then(|b| b.checked_add(t)) != Some(raw_len) {
        return Err(corrupt("length does not match its record"));
    }
    let s = f.take(2)?;
    let size = u16::from_le_bytes([s[0], s[1]]) as usize;
    if !(1..=MAX_SIZE).contains(&size) {
        return Err(corrupt("bad cache size"));
    }
    let m = f.u32()? as usize;
    if m > n {
        return Err(corrupt("more misses than values"));
    }
    let inner_len = f.u32()? as usize;
    let inner = f.take(inner_len)?;
    let mut misses = Vec::new();
    super::decode_version(inner, m * w, version, &mut misses, &mut |_| {})?;
    out.clear();
    out.resize(raw_len, 0);
    match w {
        2 => decode_w::<2>(f.rest, size, &misses, &mut out[..n * w])?,
        4 => decode_w::<4>(f.rest, size, &misses, &mut out[..n * w])?,
        _ => decode_w::<8>(f.rest, size, &misses, &mut out[..n * w])?,
    }
    out[n * w..].copy_from_slice(tail);
    Ok(())
}

fn decode_w<const W: usize>(
    stream: &[u8],
    size: usize,
    misses: &[u8],
    out: &mut [u8],
) -> Result<()> {
    let corrupt = |what: &str| Error::Corrupt(format!("recent-values block: {what}"));
    let (mut st, mut words) = rans::Decoder::new(stream, WAYS)?.split();
    let mut tab = table(size, true);
    let mut cache = Cache::new(size, W);
    let mut misses = misses.chunks_exact(W);
    let mut syms = [0u16; MAX_BATCH];
    let (mut at, mut end) = (0, batch_end(0));
    for batch in out.chunks_mut(MAX_BATCH * W) {
        // Symbols first (they decode independently), up to each refit; then the values.
        let n = batch.len() / W;
        let mut done = 0;
        while done < n {
            let stop = (end - at).min(n - done);
            for (k, sym) in syms[done..done + stop].iter_mut().enumerate() {
                let s = tab.get(&mut st[(at + k) % WAYS], &mut words)?;
                tab.count(s);
                *sym = s as u16;
            }
            done += stop;
            at += stop;
            if at == end {
                tab.end_batch();
                end = batch_end(end);
            }
        }
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
        let mut out = Vec::new();
        decode(&p, data.len(), crate::format::VERSION, &mut out).unwrap();
        assert!(out == data, "size {size}, {} bytes", data.len());
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
            assert!(decode(&p[..cut], data.len(), crate::format::VERSION, &mut out).is_err());
        }
        assert!(decode(&p, data.len() + 4, crate::format::VERSION, &mut out).is_err());
        for at in (0..p.len()).step_by(7) {
            let mut q = p.clone();
            q[at] ^= 0x10;
            // Any outcome but a panic; a decode that succeeds is caught by the block checksum.
            let _ = decode(&q, data.len(), crate::format::VERSION, &mut out);
        }
    }
}
