//! Interleaved rANS with small table-driven symbol lookups: the fast entropy coder of the tensor
//! path. Each coded symbol carries its own precision (`bits`: its frequencies sum to
//! `2^bits`), so tables of different sizes share one stream. Tables are fitted from counts by
//! `fit`, which encoder and decoder run on identical counts, so no table is ever sent.

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;

use crate::error::{Error, Result};

/// Lower bound of a coder state (states live in [LOW, LOW << 16)).
pub(crate) const LOW: u32 = 1 << 16;
/// Independent coder states the encoder keeps; the caller says which one codes each symbol
/// (the decoder must use the same), so that consecutive symbols can decode in parallel.
pub const WAYS: usize = 64;

/// One coded symbol: its slot range and the precision of its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sym {
    /// First slot.
    pub start: u32,
    /// Number of slots (>= 1).
    pub freq: u32,
    /// The table has `2^bits` slots (1..=16).
    pub bits: u32,
}

impl Sym {
    /// Packs into 64 bits with the state that codes it: start (16), freq (24), bits (8), way.
    #[inline(always)]
    fn pack(self, way: usize) -> u64 {
        self.start as u64 | (self.freq as u64) << 16 | (self.bits as u64) << 40 | (way as u64) << 48
    }
}

/// Fits `freqs` (same length as `counts`, summing to `2^bits`) to the counts: every symbol
/// with a count, and every symbol at all when `all` is set, gets at least one slot; `extra`
/// slots (an escape) are kept aside. Returns false if no slot could be given (nothing counted
/// and not `all`); `freqs` is then all zero.
#[inline(always)]
pub fn fit(counts: &[u32], bits: u32, all: bool, extra: u32, freqs: &mut [u32]) -> bool {
    let total_slots = 1u32 << bits;
    // Branch-free passes (they vectorise) for the total, the symbols present and the
    // largest count; then the first symbol with that count.
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    let seen = counts.iter().map(|&c| u32::from(c > 0)).sum::<u32>();
    let top = counts.iter().fold(0, |a, &c| a.max(c));
    let best = counts.iter().position(|&c| c == top).unwrap_or(0);
    let present = if all { counts.len() as u32 } else { seen };
    if present == 0 || present + extra > total_slots {
        freqs.iter_mut().for_each(|f| *f = 0);
        return false;
    }
    let spare = (total_slots - extra - present) as u64;
    if total == 0 {
        // Only reachable with `all`: uniform, the first symbols one slot more.
        let n = counts.len() as u32;
        let share = (total_slots - extra) / n;
        let rest = (total_slots - extra) % n;
        for (i, f) in freqs.iter_mut().enumerate() {
            *f = share + u32::from((i as u32) < rest);
        }
        return true;
    }
    // One division per fit; the scale is exact integer arithmetic on both sides.
    let scale = (spare << 32) / total;
    let mut sum = 0u32;
    for (f, &c) in freqs.iter_mut().zip(counts) {
        *f = if c > 0 || all {
            1 + ((c as u64 * scale) >> 32) as u32
        } else {
            0
        };
        sum += *f;
    }
    // The rounding remainder goes to the first most frequent symbol.
    freqs[best] += total_slots - extra - sum;
    true
}

/// Encodes symbols (in coding order) into `out`, one at a time with any precision and state
/// (the planes codec's lane encoder is tested against it).
pub struct Encoder {
    syms: Vec<u64>,
    ways: usize,
}

impl Encoder {
    /// An encoder with states 0 to `ways - 1` (at most `WAYS`), expecting about `n` symbols.
    pub fn new(n: usize, ways: usize) -> Self {
        Encoder {
            syms: Vec::with_capacity(n),
            ways: ways.clamp(1, WAYS),
        }
    }

    /// Queues one symbol, coded by state `way` (< the encoder's ways).
    #[inline(always)]
    pub fn put(&mut self, s: Sym, way: usize) {
        self.syms.push(s.pack(way % self.ways));
    }

    /// Writes the stream: symbols are coded last to first so that decoding runs forwards.
    pub fn finish(self, out: &mut Vec<u8>) {
        self.finish_from(&[LOW; WAYS], out);
    }

    /// `finish` with the states starting at `start` (each in `[LOW, LOW << 16)`) instead of
    /// `LOW`: the decoder ends on them.
    pub fn finish_from(self, start: &[u32; WAYS], out: &mut Vec<u8>) {
        let mut states = *start;
        // At most one word per symbol; renormalisation is written without a branch (it is
        // taken at random, about one symbol in five).
        let mut words = vec![0u16; self.syms.len() + 2 * WAYS];
        let mut n = 0;
        for &s in self.syms.iter().rev() {
            let start = (s & 0xffff) as u32;
            let freq = ((s >> 16) & 0xff_ffff) as u32;
            let bits = ((s >> 40) & 0xff) as u32;
            let x = &mut states[(s >> 48) as usize];
            let spill = *x as u64 >= (freq as u64) << (32 - bits);
            words[n] = *x as u16;
            n += spill as usize;
            let y = if spill { *x >> 16 } else { *x };
            *x = ((y / freq) << bits) + (y % freq) + start;
        }
        write_stream(&words[..n], &states[..self.ways], out);
    }
}

/// Appends a stream as the decoder reads it: the encoder's final `states` (state 0 first, high
/// word then low), then `words` (spilled in coding order, last to first symbol) reversed.
pub(crate) fn write_stream(words: &[u16], states: &[u32], out: &mut Vec<u8>) {
    out.reserve(2 * (words.len() + 2 * states.len()));
    for x in states {
        out.extend_from_slice(&((x >> 16) as u16).to_le_bytes());
        out.extend_from_slice(&(*x as u16).to_le_bytes());
    }
    let at = out.len();
    out.resize(at + 2 * words.len(), 0);
    for (o, w) in out[at..].chunks_exact_mut(2).zip(words.iter().rev()) {
        o.copy_from_slice(&w.to_le_bytes());
    }
}

/// Reader of a stream's 16-bit words; reading past the end yields zeros (and leaves the
/// position past the end, which `Decoder::finish` reports).
pub struct Words<'a> {
    /// The whole stream.
    pub(crate) words: &'a [u8],
    /// Byte position of the next word.
    pub(crate) pos: usize,
}

impl Words<'_> {
    #[inline(always)]
    fn next(&mut self) -> u32 {
        let w = self.peek();
        self.pos += 2;
        w
    }

    /// The next word, or 0 past the end (`finish` then finds the position past the end).
    #[inline(always)]
    fn peek(&self) -> u32 {
        match self.words.get(self.pos..self.pos + 2) {
            Some(w) => u16::from_le_bytes([w[0], w[1]]) as u32,
            None => 0,
        }
    }
}

/// Consumes one symbol from state `x`, given its table's `bits`, its `freq` and
/// `offset` = slot - start (the slot is `x`'s low `bits` bits).
#[inline(always)]
pub fn step(x: &mut u32, bits: u32, freq: u32, offset: u32, w: &mut Words) {
    let y = freq * (*x >> bits) + offset;
    // Without a branch: renormalisation is taken at random, about one symbol in five.
    let refill = y < LOW;
    let next = w.peek();
    *x = if refill { y << 16 | next } else { y };
    w.pos += 2 * refill as usize;
}

/// Decoder over the words an `Encoder` wrote.
pub struct Decoder<'a> {
    states: [u32; WAYS],
    words: Words<'a>,
}

impl<'a> Decoder<'a> {
    /// Starts decoding `words`, written with the first `ways` states (`WAYS` for every stream
    /// this build writes; 4 in format version 2).
    pub fn new(words: &'a [u8], ways: usize) -> Result<Self> {
        let ways = ways.min(WAYS);
        if words.len() < 4 * ways || !words.len().is_multiple_of(2) {
            return Err(Error::Corrupt("entropy-coded stream too short".into()));
        }
        // States the stream does not use stay at their final value.
        let mut d = Decoder {
            states: [LOW; WAYS],
            words: Words { words, pos: 0 },
        };
        for i in 0..ways {
            let hi = d.words.next();
            let lo = d.words.next();
            d.states[i] = hi << 16 | lo;
        }
        Ok(d)
    }

    /// The states and the word reader, for a loop that keeps the states in locals (`step`).
    pub fn split(self) -> ([u32; WAYS], Words<'a>) {
        (self.states, self.words)
    }

    /// Puts a decoder back together after `split`.
    pub fn join(states: [u32; WAYS], words: Words<'a>) -> Self {
        Decoder { states, words }
    }

    /// Checks that the stream was consumed exactly and the states returned to their start.
    pub fn finish(&self) -> Result<()> {
        self.finish_at(&[LOW; WAYS])
    }

    /// `finish` for a stream whose encoder started its states at `start`.
    pub fn finish_at(&self, start: &[u32; WAYS]) -> Result<()> {
        let w = &self.words;
        if w.pos != w.words.len() || self.states != *start {
            return Err(Error::Corrupt(
                "entropy-coded stream does not decode".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    fn skewed(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                let v = xorshift(&mut x);
                let r = (v >> 40) as u32 % 1000;
                match r {
                    0..=599 => 7,
                    600..=899 => 8 + (r % 3) as u8,
                    _ => (v >> 8) as u8,
                }
            })
            .collect()
    }

    /// Static table from the data's own counts, precision `bits`.
    fn table(data: &[u8], bits: u32) -> (Vec<u32>, Vec<u32>) {
        let mut counts = vec![0u32; 256];
        for &s in data {
            counts[s as usize] += 1;
        }
        let mut freqs = vec![0u32; 256];
        assert!(fit(&counts, bits, true, 0, &mut freqs));
        assert_eq!(freqs.iter().sum::<u32>(), 1 << bits);
        let mut starts = vec![0u32; 256];
        let mut at = 0;
        for s in 0..256 {
            starts[s] = at;
            at += freqs[s];
        }
        (freqs, starts)
    }

    fn roundtrip(data: &[u8], bits: u32) -> usize {
        let (freqs, starts) = table(data, bits);
        let mut enc = Encoder::new(data.len(), WAYS);
        for (i, &s) in data.iter().enumerate() {
            let sym = Sym {
                start: starts[s as usize],
                freq: freqs[s as usize],
                bits,
            };
            enc.put(sym, i % 3);
        }
        let mut out = Vec::new();
        enc.finish(&mut out);
        let (mut st, mut w) = Decoder::new(&out, WAYS).unwrap().split();
        for (i, &s) in data.iter().enumerate() {
            let slot = st[i % 3] & ((1 << bits) - 1);
            let got = (0..256)
                .rfind(|&k| starts[k] <= slot && freqs[k] > 0)
                .unwrap();
            assert_eq!(got, s as usize, "symbol {i}");
            step(&mut st[i % 3], bits, freqs[got], slot - starts[got], &mut w);
        }
        Decoder::join(st, w).finish().unwrap();
        out.len()
    }

    #[test]
    fn roundtrips_and_compresses() {
        for bits in [8, 12, 15] {
            for n in [0, 1, 2, 3, 5, 17, 1000, 100_000] {
                roundtrip(&skewed(n, n as u64 + 1), bits);
            }
        }
        let data = skewed(200_000, 9);
        let n = roundtrip(&data, 12);
        // Entropy of the source is about 2.4 bits per symbol.
        assert!(n * 8 < data.len() * 26 / 10, "{n} bytes for {}", data.len());
    }

    #[test]
    fn fit_keeps_every_needed_symbol() {
        let counts = [0u32, 5, 0, 1_000_000, 1];
        let mut f = [0u32; 5];
        assert!(fit(&counts, 8, false, 1, &mut f));
        assert_eq!(f.iter().sum::<u32>(), 255);
        assert!(f[0] == 0 && f[2] == 0 && f[1] >= 1 && f[4] >= 1);
        assert!(fit(&counts, 8, true, 0, &mut f));
        assert!(f.iter().all(|&x| x >= 1));
        assert!(!fit(&[0, 0], 8, false, 1, &mut f[..2]));
        assert!(fit(&[0, 0, 0], 4, true, 1, &mut f[..3]));
        assert_eq!(f[..3], [5, 5, 5]);
    }

    #[test]
    fn corrupt_streams_are_reported() {
        let data = skewed(5000, 3);
        let (freqs, starts) = table(&data, 12);
        let mut enc = Encoder::new(data.len(), WAYS);
        for (i, &s) in data.iter().enumerate() {
            let sym = Sym {
                start: starts[s as usize],
                freq: freqs[s as usize],
                bits: 12,
            };
            enc.put(sym, i % WAYS);
        }
        let mut out = Vec::new();
        enc.finish(&mut out);
        out.truncate(out.len() - 2);
        let (mut st, mut w) = Decoder::new(&out, WAYS).unwrap().split();
        for i in 0..data.len() {
            let slot = st[i % WAYS] & 0xfff;
            let k = (0..256)
                .rfind(|&k| starts[k] <= slot && freqs[k] > 0)
                .unwrap();
            step(&mut st[i % WAYS], 12, freqs[k], slot - starts[k], &mut w);
        }
        assert!(Decoder::join(st, w).finish().is_err());
    }
}
