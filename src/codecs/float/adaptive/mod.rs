//! Adaptive symbol tables for the tensor path's rank and level codecs: counts refitted into
//! rANS frequencies between batches of values, with an escape for symbols not yet counted;
//! and the reader of their payloads' fields.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use crate::entropy::rans::{self, fit, Sym, Words};
use crate::error::{Error, Result};
use crate::simd::{kernels, Kernels};

/// Precision of the symbol tables.
pub(super) const BITS: u32 = 14;
/// Fewest slots of the escape in a fitted table.
pub(super) const ESCAPE: u32 = 1;
/// A table's counts are halved when they reach this total.
pub(super) const HALVE: u32 = 1 << 18;
/// Interleaved rANS states of a stream (each costs 4 bytes of final state; 16 give the
/// decoder enough independent work).
pub(super) const STATES: usize = 16;
/// Largest batch of values between two refits.
pub(super) const MAX_BATCH: usize = 4096;

/// End of the batch of values that starts at `at`: batches of 16, 16, 32, ... 2048 values,
/// then `MAX_BATCH` each.
pub(super) fn batch_end(at: usize) -> usize {
    match at {
        0 => 16,
        _ if at < MAX_BATCH => 2 * at,
        _ => at + MAX_BATCH,
    }
}

/// Fits `freqs` to `counts` at `bits` of precision, the rest of the `2^bits` slots left to
/// the escape: it weighs as many counts as there are symbols seen (at least `ESCAPE` slots,
/// all of them while nothing is counted), each counted symbol gets its share of the slots
/// rounded, at least 1, and the first most counted the rest.
fn share(counts: &[u32], bits: u32, freqs: &mut [u32]) {
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    let seen = counts.iter().filter(|&&c| c > 0).count() as u64;
    freqs.fill(0);
    if total == 0 {
        return;
    }
    let scale = ((1u64 << bits) << 32) / (total + seen);
    let escape = ((seen * scale + (1 << 31)) >> 32).max(ESCAPE as u64);
    let room = (1u64 << bits) - escape;
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
        // Many rare symbols: one more slot each, as the planes codec fits.
        fit(counts, bits, false, ESCAPE, freqs);
    }
}

/// Adaptive frequencies of the symbols in one context, refitted between batches; a symbol
/// without slots is coded as the escape (the last entry), then as `raw` bits.
pub(super) struct Table {
    counts: Vec<u32>,
    total: u32,
    fitted: u32,
    /// Slots per symbol and, last, the escape's.
    freqs: Vec<u32>,
    starts: Vec<u32>,
    /// Bits of an escaped symbol.
    raw: u32,
    /// Symbols from this one on come in pairs (a value and its negative, say) that learn
    /// from each other's counts.
    pairs: usize,
    /// Symbol of each slot, and one entry of padding (decoder only).
    slots: Vec<u16>,
    /// `start | freq << 16` of each symbol, the escape last (decoder only).
    enc: Vec<u32>,
    /// The kernel that decodes symbols.
    kernel: Kernels,
    /// Room for the weights `refit` shares out.
    weights: Vec<u32>,
    /// Counts of decoded symbols not yet in `counts`, `PARTS` per symbol (symbol `k` of a
    /// batch in part `k mod PARTS`, so that repeats of one symbol do not wait on each other).
    parts: Vec<u32>,
}

/// Partial counts per symbol while decoding.
const PARTS: usize = 4;

impl Table {
    /// A table of `symbols`, those from `pairs` on in pairs; `decoder` if it decodes.
    pub(super) fn new(symbols: usize, pairs: usize, decoder: bool) -> Self {
        let mut t = Table {
            counts: vec![0; symbols],
            total: 0,
            fitted: 0,
            freqs: vec![0; symbols + 1],
            starts: vec![0; symbols + 1],
            raw: usize::BITS - (symbols - 1).leading_zeros(),
            pairs,
            slots: vec![0; if decoder { (1 << BITS) + 1 } else { 0 }],
            enc: vec![0; if decoder { symbols + 1 } else { 0 }],
            kernel: kernels(),
            weights: Vec::with_capacity(symbols),
            parts: vec![0; if decoder { PARTS * symbols } else { 0 }],
        };
        t.refit();
        t
    }

    #[inline(always)]
    pub(super) fn count(&mut self, s: usize) {
        self.counts[s] += 1;
        self.total += 1;
    }

    /// Fits the frequencies to the counts (`share`), each symbol of a pair weighted partly
    /// by its partner's counts.
    fn refit(&mut self) {
        let n = self.counts.len();
        let p = self.pairs.min(n);
        // A symbol of a pair weighs 7 of its own counts and 1 of its partner's (what it
        // learns from a partner; the two often differ, as int4's -8 and +8 do), others 8.
        let c = &self.counts;
        let mut weights = std::mem::take(&mut self.weights);
        weights.clear();
        weights.extend((0..n).map(|i| match i < p {
            true => 8 * c[i],
            false => {
                let j = p + ((i - p) ^ 1);
                7 * c[i] + c.get(j).copied().unwrap_or(c[i])
            }
        }));
        share(&weights, BITS, &mut self.freqs[..n]);
        self.weights = weights;
        let used: u32 = self.freqs[..n].iter().sum();
        self.freqs[n] = (1 << BITS) - used;
        let mut at = 0;
        for (st, &f) in self.starts.iter_mut().zip(&self.freqs) {
            *st = at;
            at += f;
        }
        if !self.slots.is_empty() {
            for (s, (&st, &f)) in self.starts.iter().zip(&self.freqs).enumerate() {
                if f > 0 {
                    self.slots[st as usize..(st + f) as usize].fill(s as u16);
                }
            }
            for (e, (&st, &f)) in self.enc.iter_mut().zip(self.starts.iter().zip(&self.freqs)) {
                *e = st | f << 16;
            }
        }
        self.fitted = self.total;
    }

    /// End of a batch: halves the counts at `HALVE` and refits once they grew by a quarter.
    pub(super) fn end_batch(&mut self) {
        let due = self.total >= HALVE || 4 * (self.total - self.fitted) >= self.fitted;
        if due && !self.parts.is_empty() {
            for (c, p) in self
                .counts
                .iter_mut()
                .zip(self.parts.chunks_exact_mut(PARTS))
            {
                *c += p.iter().sum::<u32>();
                p.fill(0);
            }
        }
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
    pub(super) fn put(&self, s: usize, way: usize, enc: &mut rans::Encoder) {
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

    /// Queues a whole stream's `syms` (symbol `i` on state `i mod STATES`), refitting
    /// between batches as the decoder will.
    pub(super) fn put_all(&mut self, syms: &[u16], enc: &mut rans::Encoder) {
        let mut end = batch_end(0);
        for (i, &s) in syms.iter().enumerate() {
            if i == end {
                self.end_batch();
                end = batch_end(end);
            }
            self.put(s as usize, i % STATES, enc);
            self.count(s as usize);
        }
    }

    /// Decodes the stream's symbols from number `at` on into `out`, ending each batch whose
    /// end `end` it reaches (and moving `end` to the next).
    pub(super) fn get_span(
        &mut self,
        states: &mut [u32; rans::WAYS],
        words: &mut rans::Words,
        at: usize,
        end: &mut usize,
        out: &mut [u16],
    ) -> Result<()> {
        let mut done = 0;
        while done < out.len() {
            let stop = (*end - (at + done)).min(out.len() - done);
            self.get_all(states, words, at + done, &mut out[done..done + stop])?;
            done += stop;
            if at + done == *end {
                self.end_batch();
                *end = batch_end(*end);
            }
        }
        Ok(())
    }

    /// Decodes `out.len()` symbols into `out`, symbol `k` from state `(first + k) mod
    /// STATES`, and counts them.
    pub(super) fn get_all(
        &mut self,
        states: &mut [u32; rans::WAYS],
        words: &mut rans::Words,
        first: usize,
        out: &mut [u16],
    ) -> Result<()> {
        let escape = self.counts.len();
        let mut k = 0;
        while k < out.len() {
            if (first + k).is_multiple_of(STATES) {
                let x: &mut [u32; STATES] = (&mut states[..STATES]).try_into().expect("16 states");
                k += self
                    .kernel
                    .adaptive::<BITS>(x, words, &self.slots, &self.enc, &mut out[k..]);
            }
            // The scalar reference up to the next group of 16 (past an escape, say).
            let stop = out.len().min(k + STATES - (first + k) % STATES);
            for k in k..stop {
                let x = &mut states[(first + k) % STATES];
                let slot = *x & ((1 << BITS) - 1);
                let s = self.slots[slot as usize] as usize;
                let f = self.freqs[s];
                rans::step(x, BITS, f, slot - self.starts[s], words);
                out[k] = s as u16;
                if s == escape {
                    let s = (*x & ((1 << self.raw) - 1)) as usize;
                    rans::step(x, self.raw, 1, 0, words);
                    if s >= escape {
                        return Err(Error::Corrupt("tensor block: bad escaped symbol".into()));
                    }
                    out[k] = s as u16;
                }
            }
            k = stop;
        }
        for (k, &s) in out.iter().enumerate() {
            self.parts[PARTS * s as usize + k % PARTS] += 1;
        }
        self.total += out.len() as u32;
        Ok(())
    }
}

/// Adaptive frequencies of a small alphabet (`N` symbols, at most 64) in one context of a
/// stream that picks a context for each symbol, weighted towards the last few dozen symbols
/// (event streams whose mix changes within a row of values): counts start at 1, grow by
/// `CONTEXT_STEP`, are halved from `CONTEXT_HALVE` on, and are refitted every `CONTEXT_REFIT`
/// symbols.
pub(super) struct Context<const N: usize> {
    counts: [u32; N],
    total: u32,
    /// Slots per symbol, and where each starts (the last ends at `1 << CONTEXT_BITS`).
    freqs: [u32; N],
    starts: [u32; N],
    /// Symbols coded since the last refit.
    since: u32,
}

/// Precision of a context's frequencies.
const CONTEXT_BITS: u32 = 15;
const CONTEXT_STEP: u32 = 32;
const CONTEXT_HALVE: u32 = 2048;
const CONTEXT_REFIT: u32 = 16;

impl<const N: usize> Context<N> {
    /// A context with all symbols equally likely to start with.
    pub(super) fn new() -> Self {
        const { assert!(N >= 2 && N <= 64) };
        let mut c = Context {
            counts: [1; N],
            total: N as u32,
            freqs: [0; N],
            starts: [0; N],
            since: 0,
        };
        c.refit();
        c
    }

    /// Shares the slots out in proportion to the counts (through one reciprocal of their
    /// total), at least one each, the rounding left to the first most counted symbol.
    fn refit(&mut self) {
        let scale = (1u64 << (CONTEXT_BITS + 32)) / self.total as u64;
        let mut sum = 0u32;
        let (mut top, mut best) = (0, 0);
        for (i, (f, &c)) in self.freqs.iter_mut().zip(&self.counts).enumerate() {
            *f = ((c as u64 * scale) >> 32).max(1) as u32;
            sum += *f;
            if c > top {
                (top, best) = (c, i);
            }
        }
        // The most counted symbol has at least 2^15 / 64 - 1 slots, more than the ones the
        // floors took or the minimums added.
        self.freqs[best] = (self.freqs[best] + (1 << CONTEXT_BITS)) - sum;
        let mut at = 0;
        for (st, &f) in self.starts.iter_mut().zip(&self.freqs) {
            *st = at;
            at += f;
        }
    }

    /// Counts symbol `s`, refitting when due.
    #[inline(always)]
    fn update(&mut self, s: usize) {
        self.counts[s] += CONTEXT_STEP;
        self.total += CONTEXT_STEP;
        self.since += 1;
        if self.since == CONTEXT_REFIT {
            self.since = 0;
            if self.total >= CONTEXT_HALVE {
                self.total = 0;
                for c in self.counts.iter_mut() {
                    *c = (*c + 1) >> 1;
                    self.total += *c;
                }
            }
            self.refit();
        }
    }

    /// Queues symbol `s` on state `way` and counts it.
    #[inline(always)]
    pub(super) fn put(&mut self, s: usize, way: usize, enc: &mut rans::Encoder) {
        let sym = Sym {
            start: self.starts[s],
            freq: self.freqs[s],
            bits: CONTEXT_BITS,
        };
        enc.put(sym, way);
        self.update(s);
    }

    /// Decodes one symbol from state `x` and counts it.
    #[inline(always)]
    pub(super) fn get(&mut self, x: &mut u32, words: &mut rans::Words) -> usize {
        let slot = *x & ((1 << CONTEXT_BITS) - 1);
        let s = self.starts[1..]
            .iter()
            .take_while(|&&st| st <= slot)
            .count();
        rans::step(x, CONTEXT_BITS, self.freqs[s], slot - self.starts[s], words);
        self.update(s);
        s
    }
}

/// Appends a field of a `u32` length and the bytes `write` appends after it
/// (`PayloadReader::prefixed` reads it); returns their count.
pub(super) fn put_prefixed(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    write(out);
    let len = out.len() - at - 4;
    out[at..at + 4].copy_from_slice(&(len as u32).to_le_bytes());
    len
}

/// Appends the value count `n` and the `tail` (the bytes after the last whole value) of an
/// array, as `PayloadReader::values_and_tail` reads them.
pub(super) fn put_values_and_tail(out: &mut Vec<u8>, n: usize, tail: &[u8]) {
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
}

/// Reads the payload's fields in order.
pub(super) struct PayloadReader<'a> {
    /// What is left to read.
    pub(super) rest: &'a [u8],
    /// The codec's name, for errors.
    what: &'static str,
}

impl<'a> PayloadReader<'a> {
    /// Reads `payload` of codec `what`.
    pub(super) fn new(payload: &'a [u8], what: &'static str) -> Self {
        PayloadReader {
            rest: payload,
            what,
        }
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(Error::Corrupt(format!("{} payload too short", self.what)));
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }

    /// The next `u32`.
    pub(super) fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next field of a `u32` length and that many bytes (`put_prefixed`'s).
    pub(super) fn prefixed(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// The value count and tail (the bytes after the last whole value) of an array of
    /// `width`-byte values that must take `raw_len` bytes.
    pub(super) fn values_and_tail(
        &mut self,
        width: usize,
        raw_len: usize,
    ) -> Result<(usize, &'a [u8])> {
        let n = self.u32()? as usize;
        let t = self.take(1)?[0] as usize;
        let tail = self.take(t)?;
        if t >= width || n.checked_mul(width).and_then(|b| b.checked_add(t)) != Some(raw_len) {
            return Err(Error::Corrupt(format!(
                "{} block: length does not match its record",
                self.what
            )));
        }
        Ok((n, tail))
    }
}

impl Kernels {
    /// Decodes symbols of an adaptive table (precision `BITS`) into `out`, symbol `k` on
    /// state `k mod 16`, with a vector kernel while it can; returns how many it decoded (the
    /// caller decodes the rest, at least a group of 16, with the scalar reference). `slots`
    /// maps each slot to its symbol, with one entry of padding; `enc` maps each symbol, the
    /// escape last, to `start | freq << 16`.
    fn adaptive<const BITS: u32>(
        self,
        x: &mut [u32; 16],
        w: &mut Words,
        slots: &[u16],
        enc: &[u32],
        out: &mut [u16],
    ) -> usize {
        assert!(BITS <= 15 && slots.len() > 1 << BITS && enc.len() <= 1 << 15);
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512 support was checked when the level was chosen; the slot table
            // is padded for the gathers' 4-byte reads and every symbol indexes `enc`.
            Kernels::Avx512 => unsafe { avx512::adaptive::<BITS>(x, w, slots, enc, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX2.
            Kernels::Avx2 => unsafe { avx2::adaptive(BITS, x, w, slots, enc, out) },
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// Symbols about normal around `center` (the middle of `symbols` if 0), with rare new
    /// ones.
    fn symbols(n: usize, symbols: usize, center: usize, seed: u64) -> Vec<u16> {
        let center = match center {
            0 => symbols / 2,
            c => c,
        } as u64;
        let mut x = seed;
        (0..n)
            .map(|i| {
                let r = xorshift(&mut x);
                if r.is_multiple_of(97) {
                    // Rare symbols anywhere, escaped when first seen.
                    (r >> 8) as u16 % symbols as u16
                } else {
                    let spread = 2 + (i / 1000) as u64 % 40;
                    let a = (r >> 8) % spread;
                    let b = (r >> 24) % spread;
                    (center + a).saturating_sub(b) as u16
                }
            })
            .collect()
    }

    #[test]
    fn every_kernel_decodes_what_the_table_coded() {
        // Symbols in the middle of a large alphabet, of a mid-sized one, of a small one, and
        // near the start of a large one (the first 32 and beyond, as scaled integers' levels).
        let cases = [
            (20_000, 2050, 0, 1),
            (5_003, 300, 0, 2),
            (70, 12, 0, 3),
            (30_000, 2050, 12, 4),
        ];
        for (n, sym_count, center, seed) in cases {
            let syms = symbols(n, sym_count, center, seed);
            let mut tab = Table::new(sym_count, 4, false);
            let mut enc = rans::Encoder::new(n, STATES);
            tab.put_all(&syms, &mut enc);
            let mut stream = Vec::new();
            enc.finish(&mut stream);
            for kernel in Kernels::supported() {
                let (mut st, mut words) = rans::Decoder::new(&stream, STATES).unwrap().split();
                let mut tab = Table::new(sym_count, 4, true);
                tab.kernel = kernel;
                let mut out = vec![0u16; n];
                let (mut at, mut end) = (0, batch_end(0));
                let mut step = 1;
                while at < n {
                    // Uneven calls: groups of 16 start in the middle of some.
                    let stop = (at + step).min(n);
                    tab.get_span(&mut st, &mut words, at, &mut end, &mut out[at..stop])
                        .unwrap();
                    at = stop;
                    step = step % 53 + 7;
                }
                assert_eq!(out, syms, "{kernel:?}");
                rans::Decoder::join(st, words).finish().unwrap();
            }
        }
    }
}
