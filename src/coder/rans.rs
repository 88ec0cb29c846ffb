//! Interleaved rANS with adaptive 16-bit frequency tables: the fast entropy coder of the tensor
//! path. Symbols are bytes; each context owns a table that is re-fitted from its counts on a
//! fixed schedule, so encoder and decoder see identical tables without sending any.

use crate::error::{Error, Result};

/// Bits of probability precision of every table.
pub const PROB_BITS: u32 = 16;
const TOTAL: u32 = 1 << PROB_BITS;
/// Lower bound of a coder state (states live in [LOW, LOW << 16)).
const LOW: u32 = 1 << 16;
/// Independent coder states, used round-robin so that decoding has parallel work.
pub const WAYS: usize = 4;
/// Counts are halved once a context has seen this many symbols since the last halving.
const HALVE_AT: u32 = 1 << 12;
/// Longest gap between two refits of a context's table.
const MAX_INTERVAL: u32 = 256;

/// Frequency model of one context over an alphabet of `N` (2..=256) symbols: counts plus the
/// table fitted from them.
#[derive(Clone)]
pub struct Adaptive<const N: usize> {
    counts: [u32; N],
    total: u32,
    /// `start | freq << 16` of every symbol.
    slots: [u32; N],
    /// First symbol whose range holds slot `c << 8`.
    coarse: [u8; 256],
    until_refit: u32,
    interval: u32,
}

impl<const N: usize> Default for Adaptive<N> {
    fn default() -> Self {
        let mut a = Adaptive {
            counts: [0; N],
            total: 0,
            slots: [0; N],
            coarse: [0; 256],
            until_refit: 16,
            interval: 16,
        };
        a.refit();
        a
    }
}

impl<const N: usize> Adaptive<N> {
    /// Slot range (`start | freq << 16`) of `sym` in the current table.
    #[inline(always)]
    pub fn slot(&self, sym: u8) -> u32 {
        self.slots[sym as usize]
    }

    /// Symbol whose range holds `slot` (0..65536).
    #[inline(always)]
    pub fn find(&self, slot: u32) -> u8 {
        let mut s = self.coarse[(slot >> 8) as usize] as usize;
        loop {
            let e = self.slots[s];
            if (e & 0xffff) + (e >> 16) > slot {
                return s as u8;
            }
            s += 1;
        }
    }

    /// Counts one occurrence of `sym`, refitting the table when its turn comes.
    #[inline(always)]
    pub fn update(&mut self, sym: u8) {
        self.counts[sym as usize] += 1;
        self.total += 1;
        self.until_refit -= 1;
        if self.until_refit == 0 {
            self.refit_scheduled();
        }
    }

    #[cold]
    fn refit_scheduled(&mut self) {
        if self.total >= HALVE_AT {
            self.total = 0;
            for c in self.counts.iter_mut() {
                *c = (*c + 1) >> 1;
                self.total += *c;
            }
        }
        self.refit();
        self.interval = (self.interval * 2).min(MAX_INTERVAL);
        self.until_refit = self.interval;
    }

    /// Fits the table to the counts: every symbol keeps at least one slot.
    fn refit(&mut self) {
        let spare = (TOTAL - N as u32) as u64;
        let mut freqs = [1u32; N];
        if self.total > 0 {
            // One division per refit; the scale is exact integer arithmetic on both sides.
            let scale = (spare << 32) / self.total as u64;
            for (f, &c) in freqs.iter_mut().zip(&self.counts) {
                *f = 1 + ((c as u64 * scale) >> 32) as u32;
            }
            let sum: u32 = freqs.iter().sum();
            // The rounding remainder goes to the first most frequent symbol.
            let top = *self.counts.iter().max().unwrap_or(&0);
            let best = self.counts.iter().position(|&c| c == top).unwrap_or(0);
            freqs[best] += TOTAL - sum;
        } else {
            for f in freqs.iter_mut() {
                *f = TOTAL / N as u32;
            }
            for f in freqs.iter_mut().take(TOTAL as usize % N) {
                *f += 1;
            }
        }
        let mut start = 0u32;
        for (s, &f) in freqs.iter().enumerate() {
            self.slots[s] = start | f << 16;
            start += f;
        }
        let mut s = 0usize;
        for c in 0..256u32 {
            while {
                let e = self.slots[s];
                (e & 0xffff) + (e >> 16) <= c << 8
            } {
                s += 1;
            }
            self.coarse[c as usize] = s as u8;
        }
    }
}

/// Encodes symbols given as slot ranges (`start | freq << 16`, in coding order).
pub fn encode(ranges: &[u32], out: &mut Vec<u8>) {
    let mut states = [LOW; WAYS];
    let mut words: Vec<u16> = Vec::with_capacity(ranges.len() / 2 + 2 * WAYS);
    for (i, &r) in ranges.iter().enumerate().rev() {
        let (start, freq) = (r & 0xffff, r >> 16);
        let x = &mut states[i % WAYS];
        if *x >= freq << 16 {
            words.push(*x as u16);
            *x >>= 16;
        }
        *x = ((*x / freq) << PROB_BITS) + (*x % freq) + start;
    }
    for x in states.iter().rev() {
        words.push(*x as u16);
        words.push((*x >> 16) as u16);
    }
    out.reserve(words.len() * 2);
    for w in words.iter().rev() {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// Decoder over the words `encode` wrote.
pub struct Decoder<'a> {
    states: [u32; WAYS],
    words: &'a [u8],
    pos: usize,
    overrun: bool,
}

impl<'a> Decoder<'a> {
    /// Starts decoding `words`.
    pub fn new(words: &'a [u8]) -> Result<Self> {
        if words.len() < 4 * WAYS || words.len() % 2 != 0 {
            return Err(Error::Corrupt("entropy-coded stream too short".into()));
        }
        let mut d = Decoder {
            states: [0; WAYS],
            words,
            pos: 0,
            overrun: false,
        };
        for i in 0..WAYS {
            let hi = d.word();
            let lo = d.word();
            d.states[i] = hi << 16 | lo;
        }
        Ok(d)
    }

    #[inline(always)]
    fn word(&mut self) -> u32 {
        match self.words.get(self.pos..self.pos + 2) {
            Some(w) => {
                self.pos += 2;
                u16::from_le_bytes([w[0], w[1]]) as u32
            }
            None => {
                self.overrun = true;
                0
            }
        }
    }

    /// Decodes symbol number `i` (coding order) with `model`, without updating the model.
    #[inline(always)]
    pub fn decode<const N: usize>(&mut self, i: usize, model: &Adaptive<N>) -> u8 {
        let x = self.states[i % WAYS];
        let slot = x & (TOTAL - 1);
        let sym = model.find(slot);
        let r = model.slot(sym);
        let mut x = (r >> 16) * (x >> PROB_BITS) + slot - (r & 0xffff);
        if x < LOW {
            x = x << 16 | self.word();
        }
        self.states[i % WAYS] = x;
        sym
    }

    /// Checks that the stream was consumed exactly and the states returned to their start.
    pub fn finish(&self) -> Result<()> {
        if self.overrun || self.pos != self.words.len() || self.states.iter().any(|&x| x != LOW) {
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

    fn skewed(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let r = (x >> 40) as u32 % 1000;
                match r {
                    0..=599 => 7,
                    600..=899 => 8 + (r % 3) as u8,
                    _ => (x >> 8) as u8,
                }
            })
            .collect()
    }

    fn roundtrip(data: &[u8]) -> usize {
        let mut model = Adaptive::<256>::default();
        let ranges: Vec<u32> = data
            .iter()
            .map(|&s| {
                let r = model.slot(s);
                model.update(s);
                r
            })
            .collect();
        let mut out = Vec::new();
        encode(&ranges, &mut out);
        let mut model = Adaptive::<256>::default();
        let mut dec = Decoder::new(&out).unwrap();
        for (i, &s) in data.iter().enumerate() {
            let got = dec.decode(i, &model);
            assert_eq!(got, s, "symbol {i}");
            model.update(got);
        }
        dec.finish().unwrap();
        out.len()
    }

    #[test]
    fn roundtrips_and_compresses() {
        for n in [0, 1, 2, 3, 5, 17, 1000, 100_000] {
            roundtrip(&skewed(n, n as u64 + 1));
        }
        let data = skewed(200_000, 9);
        let n = roundtrip(&data);
        // Entropy of the source is about 2.4 bits per symbol.
        assert!(n * 8 < data.len() * 26 / 10, "{n} bytes for {}", data.len());
        let all: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        roundtrip(&all);
    }

    #[test]
    fn corrupt_streams_are_reported() {
        let data = skewed(5000, 3);
        let mut model = Adaptive::<256>::default();
        let ranges: Vec<u32> = data
            .iter()
            .map(|&s| {
                let r = model.slot(s);
                model.update(s);
                r
            })
            .collect();
        let mut out = Vec::new();
        encode(&ranges, &mut out);
        out.truncate(out.len() - 2);
        let mut dec = Decoder::new(&out).unwrap();
        let mut model = Adaptive::<256>::default();
        for i in 0..data.len() {
            let s = dec.decode(i, &model);
            model.update(s);
        }
        assert!(dec.finish().is_err());
    }
}
