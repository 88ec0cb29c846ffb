//! The fast predictor of the fastest level: the full predictor's bit histories, contexts and
//! match model, but one lane, two slots per context line, and integer arithmetic from the
//! histories to the coder (stretch and squash by table, one mixer of 16-bit weights chosen by
//! the bits of the byte so far, one probability map on the byte before). No network, no
//! refinement chain, no order-0 counters, and the range coder runs on the same thread.

use super::experts::{context_hash, select, ContextKind, LaneState, MatchTable, CATALOGUE_LEN};
use super::mixing::{counter_p12, counter_update, Apm, COUNTER_INIT};
use super::predictor::Params;
use super::states::{Histories, HistoryMap, MAP_LIMIT};
use super::tables::{refill, Workspace, FIXED_MAX};
use crate::codecs::lanes::Lanes;
use crate::engine::kernels::{exp_fixed, ln_fixed};
use std::sync::OnceLock;

/// Mixer inputs besides the hashed contexts: order 1, match, match strength, bias.
const N_EXTRA: usize = 4;
/// Most mixer inputs.
const MAX_IN: usize = CATALOGUE_LEN + N_EXTRA;
/// Counter limit of the dense low orders and the match counters.
const LIMIT_DENSE: u32 = 1023;
/// Stretched probabilities are in 1/256 units of ln(p / (1 - p)), within +-`ST_MAX`.
const ST_MAX: i32 = 2047;
/// Slot layout: byte 0 is the check tag (0: empty), 1..16 the bit histories of a nibble's tree.
const SLOT: usize = 16;
/// Most slots of a model (log2).
const SLOTS_MAX_LOG: u32 = 22;
/// Mixer weight of 1.0.
const W_ONE: i32 = 1 << 12;
/// Uses of a weight set per step of its learning rate's decay (log2).
const LR_USE_SHIFT: usize = 4;
/// Steps of the learning rate's decay (then it stays at the trained rate's last step).
const LR_STEPS: usize = 4096;
/// Update shift of the probability map (higher adapts slower).
const APM_RATE: u32 = 7;

/// stretch(p) for 12-bit probabilities (bucket centres), in 1/256 units.
fn stretch_table() -> &'static [i16; 4096] {
    static T: OnceLock<[i16; 4096]> = OnceLock::new();
    T.get_or_init(|| {
        std::array::from_fn(|i| {
            let p = (i as f32 + 0.5) / 4096.0;
            let s = (ln_fixed(p) - ln_fixed(1.0 - p)) * 256.0;
            s.round().clamp(-ST_MAX as f32, ST_MAX as f32) as i16
        })
    })
}

/// squash(s) = 1 / (1 + e^-s) as 16 bits (1..=65535) for s in 1/256 units, index s + 2048.
fn squash_table() -> &'static [u16; 4096] {
    static T: OnceLock<[u16; 4096]> = OnceLock::new();
    T.get_or_init(|| {
        std::array::from_fn(|i| {
            let s = (i as f32 - 2048.0) / 256.0;
            let p = 65536.0 / (1.0 + exp_fixed(-s));
            (p as u32).clamp(1, 65535) as u16
        })
    })
}

#[inline]
fn squash16(s: i32) -> u32 {
    squash_table()[(s.clamp(-ST_MAX, ST_MAX) + 2048) as usize] as u32
}

/// The fast predictor's state of one block.
pub struct FastPredictor {
    lanes: Lanes,
    kinds: Vec<(ContextKind, usize)>,
    hist: Vec<u8>,
    state: LaneState,
    matches: MatchTable,
    slots: Vec<u8>,
    slot_mask: usize,
    /// Per context, a counter (`cm`'s layout) per bit history: what the history predicts.
    maps: Vec<u32>,
    /// Order 1 counters, by the byte before and the bits seen.
    t1: Vec<u32>,
    /// Match counters, by length bucket and the bit the match expects.
    tm: [u32; 64 * 2],
    /// Mixer weights (1/4096 units), one set of `n_in` per value of the bits seen (`c0`).
    weights: Vec<i16>,
    /// Updates each weight set has had (its learning rate decays with them).
    uses: Vec<u32>,
    n_in: usize,
    /// Mixer learning rate by a weight set's uses (`LR_USE_SHIFT`), decaying from the
    /// start rate towards the trained one.
    lr_by_use: Vec<i32>,
    /// Probability map on (byte before, bits seen): 33 interpolated buckets each.
    apm: Vec<u16>,
    apm_at: usize,
    stretch: &'static [i16; 4096],
    squash: &'static [u16; 4096],
    histories: &'static Histories,
    // Per-byte and per-bit state.
    ctx: [u64; CATALOGUE_LEN],
    /// Each context's slot for the current nibble (its first byte in `slots`).
    slot: [usize; CATALOGUE_LEN],
    /// Mixer inputs (1/256 units).
    x: [i16; MAX_IN],
    p_mix: u32,
    c0: u32,
    nib: u32,
    b1: u32,
    /// The bit the match expects, while it still agrees with the byte's bits.
    expect: Option<u32>,
    match_byte: u32,
    match_bucket: usize,
}

impl FastPredictor {
    /// A fresh model for a block of `len` bytes, built in `ws`'s memory.
    pub fn new_in(cfg: Params, len: usize, ws: Workspace) -> Self {
        let (kinds, _) = select(cfg.contexts, false);
        let n = kinds.len();
        let n_in = n + N_EXTRA;
        let n_slots = Self::slots_for(cfg, len);
        let slots = refill(ws.slots, n_slots * SLOT, 0);
        let hist = refill(ws.hist, len, 0);
        let row: [u16; 33] = std::array::from_fn(|j| squash16(j as i32 * 128 - 2048) as u16);
        let mut apm = refill(ws.apm_order1, 65536 * 33, 0);
        for r in apm.chunks_exact_mut(33) {
            r.copy_from_slice(&row);
        }
        let map = HistoryMap::new().p;
        // Learning rates in 1/4096 units of the float mixer's (1e-4 units in `Params`).
        let rate = |r: u16| (r as i32 * 4096 / 10_000).max(1);
        FastPredictor {
            lanes: Self::lanes_for(len),
            kinds,
            hist,
            state: LaneState::default(),
            matches: MatchTable::new_in(len, ws.matches),
            slots,
            slot_mask: n_slots - 1,
            maps: (0..n).flat_map(|_| map.iter().copied()).collect(),
            t1: vec![COUNTER_INIT; 65536],
            tm: [COUNTER_INIT; 64 * 2],
            weights: vec![(W_ONE * 3 / 10) as i16; n_in * 256],
            uses: vec![0; 256],
            n_in,
            lr_by_use: (0..LR_STEPS)
                .map(|i| {
                    let (lr, start) = (rate(cfg.mix_lr), rate(cfg.mix_lr_start));
                    lr + (start - lr) * 1024 / (1024 + (i << LR_USE_SHIFT) as i32)
                })
                .collect(),
            apm,
            apm_at: 0,
            stretch: stretch_table(),
            squash: squash_table(),
            histories: Histories::get(),
            ctx: [0; CATALOGUE_LEN],
            slot: [0; CATALOGUE_LEN],
            x: [0; MAX_IN],
            p_mix: 1 << 15,
            c0: 1,
            nib: 1,
            b1: 0,
            expect: None,
            match_byte: 0,
            match_bucket: 0,
        }
    }

    /// The lanes of a block of `len` bytes: one.
    pub fn lanes_for(len: usize) -> Lanes {
        Lanes::new(len, 1, 1)
    }

    /// Slots of the model of a block of `len` bytes: scaled to the block and to how many
    /// contexts claim them.
    fn slots_for(cfg: Params, len: usize) -> usize {
        let n = select(cfg.contexts, false).0.len();
        let want = (len.saturating_mul(2 * n) / 9).max(1).next_power_of_two();
        want.clamp(1 << 12, 1 << SLOTS_MAX_LOG)
    }

    /// The most bytes a model for a block of `len` bytes allocates (besides the block).
    pub fn need(cfg: Params, len: usize) -> u64 {
        (Self::slots_for(cfg, len) * SLOT
            + len
            + MatchTable::bytes_for(len)
            + Apm::bytes_for(65536)) as u64
            + FIXED_MAX
    }

    /// Gives the model's large tables back for the next block.
    pub fn into_workspace(self) -> Workspace {
        Workspace {
            hist: self.hist,
            slots: self.slots,
            matches: self.matches.into_buffer(),
            apm_order1: self.apm,
            apm_order2: Vec::new(),
        }
    }

    /// Lane geometry of this block (always one lane).
    pub fn lanes(&self) -> Lanes {
        self.lanes
    }

    /// Prepares the byte at `step`.
    pub fn begin_step(&mut self, step: usize, _active: usize) {
        for (c, &(kind, place)) in self.ctx.iter_mut().zip(&self.kinds) {
            *c = context_hash(kind, place, &self.hist, 0, step, &self.state);
        }
        self.c0 = 1;
        self.nib = 1;
        self.b1 = match step {
            0 => 0,
            _ => self.hist[step - 1] as u32,
        };
        let predicted = MatchTable::predicted(&self.hist, &self.state, |q| q < step);
        self.match_byte = predicted.unwrap_or(0) as u32;
        self.match_bucket = predicted.map_or(0, |_| self.state.bucket());
        self.expect = predicted.map(|b| b as u32 >> 7);
        self.prefetch_lines(1);
    }

    /// The two-slot line (its first byte) and check tag of context `k` for the nibble that
    /// starts with the byte's bits `c0`.
    #[inline(always)]
    fn line(&self, k: usize, c0: u32) -> (usize, u8) {
        let h = self.ctx[k].wrapping_add((c0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let h = h ^ (h >> 29);
        (
            ((h as usize) & self.slot_mask & !1) * SLOT,
            ((h >> 56) as u8) | 1,
        )
    }

    /// Prefetches every context's line for the nibble that starts with bits `c0`.
    fn prefetch_lines(&self, c0: u32) {
        for k in 0..self.kinds.len() {
            crate::simd::prefetch(&self.slots, self.line(k, c0).0);
        }
    }

    /// Finds (or claims) each context's slot for the nibble that starts now: one of the two
    /// slots of the line its hash names.
    fn select_slots(&mut self) {
        for k in 0..self.kinds.len() {
            let (a, check) = self.line(k, self.c0);
            let b = a + SLOT;
            self.slot[k] = if self.slots[a] == check {
                a
            } else if self.slots[b] == check {
                b
            } else {
                // Replace the less used (observations of its root).
                let total = |at: usize| self.histories.total(self.slots[at + 1]);
                let v = if total(b) < total(a) { b } else { a };
                self.slots[v] = check;
                self.slots[v + 1..v + SLOT].fill(0);
                v
            };
        }
    }

    /// Probability (16 bits) that the next bit is 1.
    #[inline]
    pub fn predict_bit(&mut self, _lane: usize) -> u32 {
        if self.nib == 1 {
            self.select_slots();
        }
        // Tables as local slices, so that stores to one do not reload the others.
        let (st, nib, n) = (self.stretch, self.nib as usize, self.kinds.len());
        let (slots, maps, x) = (&self.slots[..], &self.maps[..], &mut self.x);
        for (k, (x, &at)) in x.iter_mut().zip(&self.slot[..n]).enumerate() {
            let s = slots[at + nib] as usize;
            *x = st[counter_p12(maps[k << 8 | s])];
        }
        let c0 = self.c0 as usize;
        x[n] = st[counter_p12(self.t1[(self.b1 as usize) << 8 | c0])];
        (x[n + 1], x[n + 2]) = match self.expect {
            Some(e) => {
                let p = st[counter_p12(self.tm[self.match_bucket * 2 + e as usize])];
                let strength = self.match_bucket as i16 * 64;
                (p, if e == 1 { strength } else { -strength })
            }
            None => (0, 0),
        };
        x[n + 3] = 64;
        let w = &self.weights[c0 * self.n_in..(c0 + 1) * self.n_in];
        // Products of 16-bit values summed in 32 bits: exact for up to 32 inputs.
        let dot: i32 = w
            .iter()
            .zip(&x[..self.n_in])
            .map(|(&w, &x)| w as i32 * x as i32)
            .sum();
        let s = (dot >> 12).clamp(-ST_MAX, ST_MAX);
        self.p_mix = self.squash[(s + 2048) as usize] as u32;
        // The map: interpolate between the two buckets around s; the nearer one learns.
        let pos = (s + 2048) as usize;
        let (lo, frac) = (pos >> 7, (pos & 127) as u32);
        let base = ((self.b1 as usize) << 8 | c0) * 33 + lo;
        let (a, b) = (self.apm[base] as u32, self.apm[base + 1] as u32);
        self.apm_at = base + (frac >= 64) as usize;
        let p_apm = (a * (128 - frac) + b * frac) >> 7;
        ((self.p_mix + 3 * p_apm) / 4).clamp(1, 65535)
    }

    /// Learns the bit (after `predict_bit`).
    #[inline]
    pub fn update_bit(&mut self, _lane: usize, bit: bool) {
        let y = bit as u32;
        let (nib, n, histories) = (self.nib as usize, self.kinds.len(), self.histories);
        let (slots, maps) = (&mut self.slots[..], &mut self.maps[..]);
        for (k, &at) in self.slot[..n].iter().enumerate() {
            let s = slots[at + nib];
            counter_update(&mut maps[k << 8 | s as usize], y, MAP_LIMIT);
            slots[at + nib] = histories.next(s, y);
        }
        let c0 = self.c0 as usize;
        counter_update(&mut self.t1[(self.b1 as usize) << 8 | c0], y, LIMIT_DENSE);
        if let Some(e) = self.expect {
            counter_update(
                &mut self.tm[self.match_bucket * 2 + e as usize],
                y,
                LIMIT_DENSE,
            );
        }
        // Mixer: w += lr * err * x, err in 12 bits, x in 1/256 units, w in 1/4096, rounded.
        let u = self.uses[c0];
        self.uses[c0] = u.saturating_add(1);
        let lr = self.lr_by_use[(u as usize >> LR_USE_SHIFT).min(LR_STEPS - 1)];
        // Everything in 16 bits (one SIMD lane per weight): err * lr / 16 is within an i16,
        // x * 2 too, and the rounded high half of their product is the step.
        let err = (((((y << 16) as i32 - self.p_mix as i32) >> 4) * lr) >> 4) as i16;
        let w = &mut self.weights[c0 * self.n_in..(c0 + 1) * self.n_in];
        for (w, &x) in w.iter_mut().zip(&self.x) {
            let d = ((((x * 2) as i32 * err as i32) >> 16) as i16 + 1) >> 1;
            *w = w.saturating_add(d);
        }
        let v = self.apm[self.apm_at] as i32;
        let target = if bit { 65535 } else { 0 };
        self.apm[self.apm_at] = (v + ((target - v) >> APM_RATE)) as u16;
        self.c0 = (self.c0 << 1) | y;
        self.nib = (self.nib << 1) | y;
        let bitpos = 31 - self.c0.leading_zeros();
        self.expect = match self.expect {
            Some(e) if e == y && bitpos < 8 => Some(self.match_byte >> (7 - bitpos) & 1),
            _ => None,
        };
        if self.nib >= 16 {
            self.nib = 1;
        } else if self.nib >= 8 && self.c0 < 16 {
            // One bit before the second nibble: its lines are one of two; ask for both.
            self.prefetch_lines(self.c0 << 1);
            self.prefetch_lines(self.c0 << 1 | 1);
        }
    }

    /// Ends `step`: records the byte and updates the match and word state.
    pub fn end_step(&mut self, step: usize, bytes: &[u8]) {
        if let Some(&y) = bytes.first() {
            self.hist[step] = y;
            self.matches
                .update(&self.hist, 0, step, &mut self.state, |q| q <= step);
        }
    }
}
