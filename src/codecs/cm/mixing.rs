//! Bitwise context-mixing primitives: adaptive bit counters, stretch/squash, a gated logistic
//! mixer and an adaptive probability map (SSE). Integer or fixed-order float arithmetic only.

use super::tables::refill;
use crate::engine::kernels::{bound, dot_fixed, exp_fixed, ln_fixed};
use std::sync::OnceLock;

/// Bits of a counter's probability.
const P_BITS: u32 = 22;
/// Counter count field width.
const N_MASK: u32 = 1023;

/// A fresh counter: probability 1/2, no observations.
pub const COUNTER_INIT: u32 = 1 << (P_BITS - 1) << 10;

/// Learning rates 2^16 / (n + 1.5) for each observation count n.
const RATES: [u32; 1024] = {
    let mut r = [0u32; 1024];
    let mut n = 0;
    while n < 1024 {
        let x = 131_072 / (2 * n as u32 + 3);
        r[n] = if x > 1 { x } else { 1 };
        n += 1;
    }
    r
};

/// Probability that the next bit is 1, in 12 bits, of a counter.
#[inline]
pub fn counter_p12(c: u32) -> usize {
    (c >> (10 + P_BITS - 12)) as usize
}

/// Moves counter `c` towards `bit`, with a rate that slows until `limit` observations.
#[inline]
pub fn counter_update(c: &mut u32, bit: u32, limit: u32) {
    let n = *c & N_MASK;
    let p = (*c >> 10) as i64;
    let target = if bit != 0 { (1i64 << P_BITS) - 1 } else { 0 };
    let p = p + (((target - p) * RATES[n as usize] as i64) >> 16);
    *c = ((p as u32) << 10) | (n + 1).min(limit);
}

/// stretch(p) = ln(p / (1 - p)) for 12-bit probabilities (bucket centres).
pub fn stretch_table() -> &'static [f32; 4096] {
    static T: OnceLock<[f32; 4096]> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = [0f32; 4096];
        for (i, x) in t.iter_mut().enumerate() {
            let p = (i as f32 + 0.5) / 4096.0;
            *x = ln_fixed(p) - ln_fixed(1.0 - p);
        }
        t
    })
}

/// stretch of a probability given as a float in (0, 1).
#[inline]
pub fn stretch(p: f32) -> f32 {
    let p = bound(p, 1.0 / 65536.0, 1.0 - 1.0 / 65536.0);
    ln_fixed(p) - ln_fixed(1.0 - p)
}

/// squash(x) = 1 / (1 + e^-x).
#[inline]
pub fn squash(x: f32) -> f32 {
    1.0 / (1.0 + exp_fixed(-x))
}

/// A logistic mixer: weight sets selected by a context, trained online by gradient descent.
pub struct Mixer {
    n: usize,
    w: Vec<f32>,
    uses: Vec<u32>,
    lr: f32,
    lr_start: f32,
    sel: usize,
    x: Vec<f32>,
    p: f32,
}

impl Mixer {
    /// `n` inputs, `sets` selectable weight sets, learning rate decaying from `lr_start` towards
    /// `lr` as a set gets used, initial weight `w0`.
    pub fn new(n: usize, sets: usize, lr: f32, lr_start: f32, w0: f32) -> Self {
        Mixer {
            n,
            w: vec![w0; n * sets],
            uses: vec![0; sets],
            lr,
            lr_start,
            sel: 0,
            x: vec![0.0; n],
            p: 0.5,
        }
    }

    /// The weights and each set's uses.
    pub fn state(&self) -> (&[f32], &[u32]) {
        (&self.w, &self.uses)
    }

    /// Takes weights and uses saved by `state` from a mixer of the same shape (which the
    /// caller has checked).
    pub fn load(&mut self, w: &[f32], uses: &[u32]) {
        self.w.copy_from_slice(w);
        self.uses.copy_from_slice(uses);
    }

    /// Mixes inputs `x` with weight set `sel`; returns (stretched output, probability).
    #[inline(always)]
    pub fn mix(&mut self, x: &[f32], sel: usize) -> (f32, f32) {
        self.sel = sel * self.n;
        self.x[..self.n].copy_from_slice(&x[..self.n]);
        let w = &self.w[self.sel..self.sel + self.n];
        let dot = bound(dot_fixed(w, &x[..self.n]), -15.0, 15.0);
        self.p = squash(dot);
        (dot, self.p)
    }

    /// Trains the last mixed weight set on the observed bit.
    #[inline(always)]
    pub fn update(&mut self, bit: u32) {
        let set = self.sel / self.n;
        let u = self.uses[set];
        self.uses[set] = u.saturating_add(1);
        let lr = self.lr + (self.lr_start - self.lr) * (1024.0 / (1024.0 + u as f32));
        let err = (bit as f32 - self.p) * lr;
        let w = &mut self.w[self.sel..self.sel + self.n];
        for (wi, &xi) in w.iter_mut().zip(&self.x) {
            *wi += err * xi;
        }
    }
}

/// Adaptive probability map: refines a probability given a context, interpolating 33 buckets
/// of the stretched input.
pub struct Apm {
    t: Vec<u16>,
    idx: usize,
    rate: u32,
}

impl Apm {
    /// `contexts` contexts, update shift `rate` (higher adapts slower).
    pub fn new(contexts: usize, rate: u32) -> Self {
        Self::new_in(contexts, rate, Vec::new())
    }

    /// Like `new`, reusing `t`'s memory.
    pub fn new_in(contexts: usize, rate: u32, t: Vec<u16>) -> Self {
        // Every context starts from the same row: computed once, copied.
        let row: [u16; 33] = std::array::from_fn(|j| {
            let p = squash((j as f32 - 16.0) * 0.5);
            ((p * 65535.0) as u32).clamp(1, 65535) as u16
        });
        let mut t = refill(t, contexts * 33, 0);
        for r in t.chunks_exact_mut(33) {
            r.copy_from_slice(&row);
        }
        Apm { t, idx: 0, rate }
    }

    /// Bytes of the tables of maps of `contexts` contexts in all.
    pub fn bytes_for(contexts: usize) -> usize {
        2 * 33 * contexts
    }

    /// Gives the table's memory back for reuse.
    pub fn into_buffer(self) -> Vec<u16> {
        self.t
    }

    /// The table.
    pub fn table(&self) -> &[u16] {
        &self.t
    }

    /// Takes a table saved by `table` from a map of the same size (which the caller has
    /// checked).
    pub fn load(&mut self, t: &[u16]) {
        self.t.copy_from_slice(t);
    }

    /// Takes a table saved by `table` from a map with 2^k times fewer contexts, indexed by a
    /// hash's top bits times `group` (which the caller has checked): each of its groups of
    /// contexts fills the 2^k groups whose hashes extend its own.
    pub fn load_spread(&mut self, t: &[u16], group: usize) {
        let g = group * 33;
        let copies = self.t.len() / t.len().max(1);
        for (dst, src) in self.t.chunks_exact_mut(g * copies).zip(t.chunks_exact(g)) {
            for d in dst.chunks_exact_mut(g) {
                d.copy_from_slice(src);
            }
        }
    }

    /// Refined probability (16 bits) of stretched input `st` in context `cx`.
    #[inline]
    pub fn refine(&mut self, st: f32, cx: usize) -> u32 {
        let pos = (bound(st, -7.999, 7.999) + 8.0) * 2.0; // 0..32
                                                          // SAFETY of the cast: pos is finite and
                                                          // in [0, 32).
        let lo = unsafe { pos.to_int_unchecked::<i32>() } as usize;
        let frac = pos - lo as f32;
        let base = cx * 33 + lo;
        let a = self.t[base] as f32;
        let b = self.t[base + 1] as f32;
        self.idx = if frac < 0.5 { base } else { base + 1 };
        (a + (b - a) * frac) as u32
    }

    /// Moves the bucket nearest to the last input towards `bit`.
    #[inline]
    pub fn update(&mut self, bit: u32) {
        let v = self.t[self.idx] as i32;
        let target = if bit != 0 { 65535 } else { 0 };
        let nv = v + ((target - v) >> self.rate);
        self.t[self.idx] = nv.clamp(1, 65535) as u16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_learn_and_squash_inverts_stretch() {
        let mut c = COUNTER_INIT;
        for _ in 0..50 {
            counter_update(&mut c, 1, 255);
        }
        assert!(counter_p12(c) > 4000);
        let mut fast = c;
        for _ in 0..50 {
            counter_update(&mut c, 0, 255);
            counter_update(&mut fast, 0, 4);
        }
        // A slow counter averages its 100 observations; a capped one follows the recent ones.
        assert!((1700..2400).contains(&counter_p12(c)), "{}", counter_p12(c));
        assert!(counter_p12(fast) < 100, "{}", counter_p12(fast));
        for p in [0.01f32, 0.3, 0.5, 0.9, 0.999] {
            assert!((squash(stretch(p)) - p).abs() < 1e-4);
        }
    }

    #[test]
    fn mixer_learns_a_reliable_input() {
        let mut m = Mixer::new(2, 1, 0.02, 0.02, 0.0);
        let mut loss_late = 0.0;
        for i in 0..4000 {
            let bit = (i * 7 % 10 < 8) as u32;
            let x = [if bit == 1 { 2.0 } else { -2.0 }, 0.3];
            let (_, p) = m.mix(&x, 0);
            if i > 3000 {
                loss_late += -(if bit == 1 { p } else { 1.0 - p }).ln();
            }
            m.update(bit);
        }
        assert!(loss_late / 1000.0 < 0.05, "{loss_late}");
    }
}
