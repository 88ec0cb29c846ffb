//! Count-based experts over the bytes already coded: dense order-0/1/2 statistics, hashed
//! higher-order contexts with a few symbols each, and a long-range match model.
//!
//! Each expert turns its statistics into log-probability evidence for the next byte; the mixer
//! weighs that evidence by learned, confidence-dependent weights in the logit domain.

use crate::engine::kernels::ln_fixed;

/// Orders of the hashed context experts.
pub const HASHED_ORDERS: [usize; 4] = [3, 4, 6, 8];
/// Symbols remembered per hashed context.
const SLOT_SYMS: usize = 7;
/// Count total that triggers halving in hashed contexts.
const SLOT_LIMIT: u32 = 250;
/// Count total that triggers halving in dense tables.
const DENSE_LIMIT: [u32; 3] = [60_000, 2_000, 250];
/// Shortest match the match model looks up.
const MATCH_MIN: usize = 6;
/// Confidence classes per hashed expert: 7 total-count buckets x 4 distinct-symbol buckets.
pub const SLOT_CLASSES: usize = 28;
/// Confidence classes of the dense experts (total-count buckets).
pub const DENSE_CLASSES: usize = 8;
/// Match-length buckets.
pub const MATCH_CLASSES: usize = 16;

/// One hashed context: a check tag and up to `SLOT_SYMS` symbols with counts.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Slot {
    check: u16,
    total: u16,
    n: u8,
    syms: [u8; SLOT_SYMS],
    counts: [u16; SLOT_SYMS],
}

/// Evidence of one expert for one lane: sparse (symbol, value) pairs or a dense row, with the
/// index of the weight that scales it.
#[derive(Clone, Copy, Default)]
pub struct Sparse {
    /// Number of valid entries.
    pub n: u8,
    /// Symbols with evidence.
    pub syms: [u8; SLOT_SYMS],
    /// Log-odds evidence of each symbol against an unseen one.
    pub vals: [f32; SLOT_SYMS],
    /// Weight index (class) selected by the expert's confidence; `usize::MAX` when inactive.
    pub class: usize,
}

fn bucket_total(t: u32) -> usize {
    match t {
        0..=1 => 0,
        2 => 1,
        3..=4 => 2,
        5..=8 => 3,
        9..=16 => 4,
        17..=40 => 5,
        _ => 6,
    }
}

/// Statistics of all experts, shared by every lane of a block.
pub struct Experts {
    c0: Vec<u16>,
    t0: u32,
    c1: Vec<u16>,
    t1: Vec<u32>,
    c2: Vec<u16>,
    t2: Vec<u32>,
    slots: Vec<Vec<Slot>>,
    slot_bits: u32,
    match_table: Vec<u32>,
    match_bits: u32,
    /// ln(c + 0.5) for every dense count value.
    ln_count: Vec<f32>,
}

/// Per-lane match state: where the current match continues and how long it is.
#[derive(Clone, Copy, Default)]
pub struct MatchState {
    /// Position in the block whose byte is predicted next (valid when len > 0).
    pub ptr: usize,
    /// Length of the current match in bytes.
    pub len: usize,
}

impl MatchState {
    /// Length bucket for the match weight and the net's features (0 = no match).
    pub fn bucket(&self) -> usize {
        match self.len {
            0 => 0,
            1..=15 => 1 + (self.len - 1) / 2, // 1..=7
            16..=31 => 8 + (self.len - 16) / 4, // 8..=11
            32..=63 => 12,
            64..=127 => 13,
            128..=511 => 14,
            _ => 15,
        }
    }
}

/// Hash of the `order` bytes before `pos` within `[start, pos)`, bytes before `start` read as 0.
fn context_hash(hist: &[u8], start: usize, pos: usize, order: usize) -> u64 {
    let mut h: u64 = (order as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for i in 1..=order {
        let b = if pos >= start + i { hist[pos - i] } else { 0 };
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01B3).rotate_left(7);
    }
    h.wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

impl Experts {
    /// Empty statistics sized for a block of `len` bytes.
    pub fn new(len: usize) -> Self {
        // Hashed tables scale with the block (fewer slots for small inputs), 2^12..=2^20 slots.
        let slot_bits = (usize::BITS - len.max(1).leading_zeros()).clamp(12, 20);
        let match_bits = (slot_bits + 1).min(22);
        Experts {
            c0: vec![0; 256],
            t0: 0,
            c1: vec![0; 256 * 256],
            t1: vec![0; 256],
            c2: vec![0; 65536 * 256],
            t2: vec![0; 65536],
            slots: HASHED_ORDERS
                .iter()
                .map(|_| vec![Slot::default(); 1 << slot_bits])
                .collect(),
            slot_bits,
            match_table: vec![u32::MAX; 1 << match_bits],
            match_bits,
            ln_count: (0..=u16::MAX as u32).map(|c| ln_fixed(c as f32 + 0.5)).collect(),
        }
    }

    /// Adds the dense experts' evidence for a lane at `pos` (segment starting at `start`) into
    /// `z` scaled by the class weights in `w`, and records the classes used in `classes`.
    pub fn dense(
        &self,
        hist: &[u8],
        start: usize,
        pos: usize,
        w: &[f32],
        z: &mut [f32],
        classes: &mut [usize; 3],
    ) {
        let b1 = if pos > start { hist[pos - 1] as usize } else { 0 };
        let b2 = if pos > start + 1 { hist[pos - 2] as usize } else { 0 };
        let rows: [(&[u16], u32); 3] = [
            (&self.c0[..], self.t0),
            (&self.c1[b1 * 256..b1 * 256 + 256], self.t1[b1]),
            (&self.c2[(b2 * 256 + b1) * 256..(b2 * 256 + b1) * 256 + 256], self.t2[b2 * 256 + b1]),
        ];
        for (o, (row, total)) in rows.iter().enumerate() {
            let class = o * DENSE_CLASSES + bucket_total(*total).min(DENSE_CLASSES - 1);
            classes[o] = class;
            if *total == 0 {
                continue;
            }
            let wk = w[class];
            for (zs, &c) in z.iter_mut().zip(row.iter()) {
                *zs += wk * self.ln_count[c as usize];
            }
        }
    }

    /// Accumulates the dense experts' weight gradients for output gradient `dz` into `g`.
    pub fn dense_grad(
        &self,
        hist: &[u8],
        start: usize,
        pos: usize,
        dz: &[f32],
        classes: &[usize; 3],
        g: &mut [f32],
    ) {
        let b1 = if pos > start { hist[pos - 1] as usize } else { 0 };
        let b2 = if pos > start + 1 { hist[pos - 2] as usize } else { 0 };
        let x2 = b2 * 256 + b1;
        let rows: [(&[u16], u32); 3] = [
            (&self.c0[..], self.t0),
            (&self.c1[b1 * 256..b1 * 256 + 256], self.t1[b1]),
            (&self.c2[x2 * 256..x2 * 256 + 256], self.t2[x2]),
        ];
        for (o, (row, total)) in rows.iter().enumerate() {
            if *total == 0 {
                continue;
            }
            let mut acc = [0f32; 16];
            for (i, (&d, &c)) in dz.iter().zip(row.iter()).enumerate() {
                acc[i % 16] += d * self.ln_count[c as usize];
            }
            g[classes[o]] += crate::engine::kernels::sum_fixed(&acc);
        }
    }

    /// Evidence of every hashed-order expert for a lane at `pos`.
    pub fn hashed(&self, hist: &[u8], start: usize, pos: usize, out: &mut [Sparse]) {
        for (k, &order) in HASHED_ORDERS.iter().enumerate() {
            let h = context_hash(hist, start, pos, order);
            let slot = &self.slots[k][(h >> (64 - self.slot_bits)) as usize];
            let e = &mut out[k];
            e.n = 0;
            e.class = usize::MAX;
            if pos < start + order || slot.check != (h as u16) || slot.n == 0 {
                continue;
            }
            let m = slot.n as usize;
            let total = slot.total as u32;
            // Escape mass ~ distinct symbols seen (PPM method C); evidence = ln(c (256-m) / esc).
            let base = ln_fixed((256 - m) as f32) - ln_fixed(m as f32);
            for i in 0..m {
                e.syms[i] = slot.syms[i];
                e.vals[i] = self.ln_count[slot.counts[i] as usize] + base;
            }
            e.n = m as u8;
            e.class = k * SLOT_CLASSES + bucket_total(total) * 4 + (m - 1).min(3);
        }
    }

    /// Updates every expert with the byte at `pos` (already written to `hist`) of the lane
    /// starting at `start`, and advances the lane's match state. `known(q)` tells whether
    /// position `q` of the block has been coded by its lane.
    pub fn update(
        &mut self,
        hist: &[u8],
        start: usize,
        pos: usize,
        ms: &mut MatchState,
        known: impl Fn(usize) -> bool,
    ) {
        let b = hist[pos];
        let bi = b as usize;
        let b1 = if pos > start { hist[pos - 1] as usize } else { 0 };
        let b2 = if pos > start + 1 { hist[pos - 2] as usize } else { 0 };
        bump_dense(&mut self.c0, &mut self.t0, bi, DENSE_LIMIT[0]);
        bump_dense(&mut self.c1[b1 * 256..b1 * 256 + 256], &mut self.t1[b1], bi, DENSE_LIMIT[1]);
        let x2 = b2 * 256 + b1;
        bump_dense(&mut self.c2[x2 * 256..x2 * 256 + 256], &mut self.t2[x2], bi, DENSE_LIMIT[2]);
        for (k, &order) in HASHED_ORDERS.iter().enumerate() {
            if pos < start + order {
                continue;
            }
            let h = context_hash(hist, start, pos, order);
            let slot = &mut self.slots[k][(h >> (64 - self.slot_bits)) as usize];
            if slot.check != h as u16 {
                *slot = Slot {
                    check: h as u16,
                    ..Slot::default()
                };
            }
            bump_slot(slot, b);
        }
        // Match model: extend the current match, or look one up for the next position.
        if ms.len > 0 && known(ms.ptr) && hist[ms.ptr] == b {
            ms.len += 1;
            ms.ptr += 1;
        } else {
            ms.len = 0;
        }
        let next = pos + 1;
        if next < start + MATCH_MIN {
            return;
        }
        let h = context_hash(hist, start, next, MATCH_MIN);
        let idx = (h >> (64 - self.match_bits)) as usize;
        let cand = self.match_table[idx];
        self.match_table[idx] = next as u32;
        if ms.len > 0 || cand == u32::MAX {
            return;
        }
        // Verify the candidate and measure the match length backwards (capped at 32).
        let c = cand as usize;
        let mut len = 0;
        while len < 32
            && c > len
            && next > start + len
            && known(c - 1 - len)
            && hist[c - 1 - len] == hist[next - 1 - len]
        {
            len += 1;
        }
        if len >= MATCH_MIN {
            ms.len = len;
            ms.ptr = c;
        }
    }

    /// The byte the lane's match predicts, if its source position is known.
    pub fn match_byte(hist: &[u8], ms: &MatchState, known: impl Fn(usize) -> bool) -> Option<u8> {
        (ms.len > 0 && ms.ptr < hist.len() && known(ms.ptr)).then(|| hist[ms.ptr])
    }
}

fn bump_dense(row: &mut [u16], total: &mut u32, b: usize, limit: u32) {
    row[b] += 1;
    *total += 1;
    if *total > limit {
        let mut t = 0;
        for c in row.iter_mut() {
            *c = (*c + 1) >> 1;
            t += *c as u32;
        }
        *total = t;
    }
}

fn bump_slot(slot: &mut Slot, b: u8) {
    let n = slot.n as usize;
    match slot.syms[..n].iter().position(|&s| s == b) {
        Some(i) => slot.counts[i] += 1,
        None if n < SLOT_SYMS => {
            slot.syms[n] = b;
            slot.counts[n] = 1;
            slot.n += 1;
        }
        None => {
            // Replace the least frequent symbol (the last such on ties).
            let mut j = 0;
            for i in 1..n {
                if slot.counts[i] <= slot.counts[j] {
                    j = i;
                }
            }
            slot.total -= slot.counts[j];
            slot.syms[j] = b;
            slot.counts[j] = 1;
        }
    }
    slot.total += 1;
    if slot.total as u32 > SLOT_LIMIT {
        let mut t = 0;
        for c in slot.counts[..slot.n as usize].iter_mut() {
            *c = (*c + 1) >> 1;
            t += *c;
        }
        slot.total = t;
    }
}
