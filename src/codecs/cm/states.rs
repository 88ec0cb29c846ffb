//! Bit histories: one byte per context node standing for how many zeros and ones the node has
//! seen, the older side discounted whenever the other bit comes (so a history follows data
//! whose statistics drift), and adaptive maps from a history to a probability. A history is
//! indirect: what it predicts is learnt from what followed the same history elsewhere.

use super::mixing::{counter_p12, counter_update};
use std::sync::OnceLock;

/// Largest count of one bit while the other count is 0, 1, and 2 or more.
const LIMITS: [u8; 3] = [48, 32, 24];

/// The histories: their counts and successors, numbered in the order they are first reached
/// from the empty history (number 0).
pub struct Histories {
    /// Successor of each history after a 0 and after a 1.
    next: [[u8; 2]; 256],
    /// Count of zeros and of ones of each history.
    counts: [[u8; 2]; 256],
    /// Number of histories.
    len: usize,
}

/// The counts after bit `y` from counts `n`: `n[y]` grows, the other side, if over 2, is
/// roughly halved; then `n[y]` is held within its limit.
fn step(n: [u8; 2], y: usize) -> [u8; 2] {
    let mut m = n;
    m[y] = m[y].saturating_add(1);
    if m[1 - y] > 2 {
        m[1 - y] = m[1 - y] / 2 + 1;
    }
    let limit = LIMITS[m[1 - y].min(2) as usize];
    m[y] = m[y].min(limit);
    m
}

impl Histories {
    fn build() -> Self {
        let mut h = Histories {
            next: [[0; 2]; 256],
            counts: [[0; 2]; 256],
            len: 1,
        };
        let mut i = 0;
        while i < h.len {
            for y in 0..2 {
                let n = step(h.counts[i], y);
                let j = match h.counts[..h.len].iter().position(|&c| c == n) {
                    Some(j) => j,
                    None => {
                        assert!(h.len < 256, "bit histories must fit a byte");
                        h.counts[h.len] = n;
                        h.len += 1;
                        h.len - 1
                    }
                };
                h.next[i][y] = j as u8;
            }
            i += 1;
        }
        h
    }

    /// The table, built once.
    pub fn get() -> &'static Histories {
        static H: OnceLock<Histories> = OnceLock::new();
        H.get_or_init(Histories::build)
    }

    /// History `s` after bit `y`.
    #[inline(always)]
    pub fn next(&self, s: u8, y: u32) -> u8 {
        self.next[s as usize][y as usize]
    }

    /// Whether history `s` has seen only one bit value (and at least one bit).
    #[inline(always)]
    pub fn one_sided(&self, s: u8) -> bool {
        let [a, b] = self.counts[s as usize];
        (a == 0) != (b == 0)
    }

    /// Observations a history stands for (zeros plus ones).
    #[inline(always)]
    pub fn total(&self, s: u8) -> u32 {
        let [a, b] = self.counts[s as usize];
        a as u32 + b as u32
    }
}

/// Maps bit histories to probabilities, one adaptive counter per history, learnt online.
pub struct HistoryMap {
    /// One counter (`cm`'s layout) per history.
    pub(super) p: Vec<u32>,
}

/// A map's counters slow down until this many observations.
pub(super) const MAP_LIMIT: u32 = 1023;

impl HistoryMap {
    /// A map starting each history at the probability its counts suggest.
    pub fn new() -> Self {
        let h = Histories::get();
        let p = (0..256)
            .map(|s| {
                let [n0, n1] = h.counts[s];
                let p = (n1 as f64 + 0.4) / (n0 as f64 + n1 as f64 + 0.8);
                // 22-bit probability, count 0 (the counter layout of `cm`).
                ((p * (1u32 << 22) as f64) as u32).min((1 << 22) - 1) << 10
            })
            .collect();
        HistoryMap { p }
    }

    /// Probability (12 bits) that the next bit is 1 after history `s`.
    #[inline(always)]
    pub fn p12(&self, s: u8) -> usize {
        counter_p12(self.p[s as usize])
    }

    /// Learns that `bit` followed history `s`.
    #[inline(always)]
    pub fn update(&mut self, s: u8, bit: u32) {
        counter_update(&mut self.p[s as usize], bit, MAP_LIMIT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histories_fit_a_byte_and_follow_the_bits() {
        let h = Histories::get();
        assert!(h.len <= 256 && h.len > 100, "{} histories", h.len);
        let mut s = 0u8;
        for _ in 0..100 {
            s = h.next(s, 1);
        }
        assert_eq!(h.counts[s as usize], [0, LIMITS[0]]);
        // A zero after a long run of ones keeps little of the run.
        s = h.next(s, 0);
        assert_eq!(h.counts[s as usize], [1, LIMITS[0] / 2 + 1]);
        let m = HistoryMap::new();
        assert!(m.p12(s) > 2048);
    }
}
