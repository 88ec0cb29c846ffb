//! Count-based experts over the bytes already coded: dense order-0/1/2 statistics, hashed
//! contexts (higher orders, words, sparse byte patterns) with a few symbols each, and a
//! long-range match model.
//!
//! Each expert turns its statistics into log-probability evidence for the next byte; the mixer
//! weighs that evidence by learned, confidence-dependent weights in the logit domain.

use crate::engine::kernels::{ln_fixed, sum_fixed};

/// A hashed context: which earlier bytes (or which words) select the statistics.
#[derive(Clone, Copy, Debug)]
pub enum ContextKind {
    /// The `n` bytes before the predicted one.
    Order(usize),
    /// Bytes at the given distances (bit i set: byte i+1 back), for binary structure.
    Sparse(u32),
    /// The current word's letters (case folded) plus the byte before it.
    Word,
    /// The previous and the current word.
    Words2,
}

/// The hashed experts, in weight-table order.
pub const HASHED: [ContextKind; 10] = [
    ContextKind::Order(3),
    ContextKind::Order(4),
    ContextKind::Order(5),
    ContextKind::Order(6),
    ContextKind::Order(8),
    ContextKind::Order(12),
    ContextKind::Word,
    ContextKind::Words2,
    ContextKind::Sparse(0b1110),
    ContextKind::Sparse(0b1010_1010),
];
/// Number of hashed experts.
pub const N_HASHED: usize = HASHED.len();
/// How many leading entries of `HASHED` are plain orders (they pick the weight set).
pub const N_ORDERS: usize = 6;
/// Symbols remembered per hashed context.
const SLOT_SYMS: usize = 7;
/// Count total that triggers halving in hashed contexts.
const SLOT_LIMIT: u16 = 250;
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

/// One hashed context: a check tag, up to `SLOT_SYMS` symbols with counts, the last one seen.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Slot {
    check: u16,
    total: u16,
    n: u8,
    last: u8,
    syms: [u8; SLOT_SYMS],
    counts: [u16; SLOT_SYMS],
}

/// Evidence of one hashed expert for one lane.
#[derive(Clone, Copy, Default)]
pub struct Sparse {
    /// Number of valid entries (0: the expert has nothing to say).
    pub n: u8,
    /// Symbols with evidence.
    pub syms: [u8; SLOT_SYMS],
    /// Log-odds evidence of each symbol against an unseen one.
    pub vals: [f32; SLOT_SYMS],
    /// The symbol seen last in this context.
    pub last: u8,
    /// Confidence class (weight index within the expert).
    pub class: usize,
    /// Slot index and check tag of the context, reused by the update.
    slot: usize,
    check: u16,
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

/// Per-lane state that is not in the shared tables: match and word positions.
#[derive(Clone, Copy, Default)]
pub struct LaneState {
    /// Position in the block whose byte the match predicts next (valid when `len > 0`).
    pub ptr: usize,
    /// Length of the current match in bytes.
    pub len: usize,
    word: u64,
    prev_word: u64,
}

impl LaneState {
    /// Match-length bucket (0 = no match).
    pub fn bucket(&self) -> usize {
        match self.len {
            0 => 0,
            1..=15 => 1 + (self.len - 1) / 2,
            16..=31 => 8 + (self.len - 16) / 4,
            32..=63 => 12,
            64..=127 => 13,
            128..=511 => 14,
            _ => 15,
        }
    }
}

const K1: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xD6E8_FEB8_6659_FD93;

#[inline]
fn mix(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(K1).rotate_left(23)
}

/// Byte `i` back from `pos` within the lane starting at `start` (0 before the lane).
#[inline]
fn back(hist: &[u8], start: usize, pos: usize, i: usize) -> u64 {
    if pos >= start + i {
        hist[pos - i] as u64
    } else {
        0
    }
}

/// Hash of context `kind` for the byte at `pos`.
fn context_hash(kind: ContextKind, k: usize, hist: &[u8], start: usize, pos: usize, ls: &LaneState) -> u64 {
    let mut h = mix(K2, k as u64 + 1);
    match kind {
        ContextKind::Order(n) => {
            for i in 1..=n {
                h = mix(h, back(hist, start, pos, i));
            }
        }
        ContextKind::Sparse(mask) => {
            for i in 0..32 {
                if mask & (1 << i) != 0 {
                    h = mix(h, back(hist, start, pos, i + 1) | ((i as u64) << 8));
                }
            }
        }
        ContextKind::Word => {
            h = mix(mix(h, ls.word), if ls.word == 0 { back(hist, start, pos, 1) } else { 0 });
        }
        ContextKind::Words2 => h = mix(mix(h, ls.word), ls.prev_word),
    }
    h.wrapping_mul(K2)
}

/// Statistics of all experts, shared by every lane of a block.
pub struct Experts {
    c0: Vec<u16>,
    t0: u32,
    c1: Vec<u16>,
    t1: Vec<u32>,
    c2: Vec<u16>,
    t2: Vec<u32>,
    slots: Vec<Slot>,
    slot_bits: u32,
    match_table: Vec<u32>,
    match_bits: u32,
    /// ln(c + 0.5) for every count value.
    ln_count: Vec<f32>,
}

impl Experts {
    /// Empty statistics sized for a block of `len` bytes.
    pub fn new(len: usize) -> Self {
        // Each hashed expert gets 2^12..=2^20 slots, scaled to the block.
        let slot_bits = (usize::BITS - len.max(1).leading_zeros()).clamp(12, 20);
        let match_bits = (slot_bits + 1).min(22);
        Experts {
            c0: vec![0; 256],
            t0: 0,
            c1: vec![0; 256 * 256],
            t1: vec![0; 256],
            c2: vec![0; 65536 * 256],
            t2: vec![0; 65536],
            slots: vec![Slot::default(); N_HASHED << slot_bits],
            slot_bits,
            match_table: vec![u32::MAX; 1 << match_bits],
            match_bits,
            ln_count: (0..=u16::MAX as u32).map(|c| ln_fixed(c as f32 + 0.5)).collect(),
        }
    }

    /// The three dense rows (order 0, 1, 2) for the byte at `pos`, with their totals.
    fn dense_rows(&self, hist: &[u8], start: usize, pos: usize) -> [(&[u16], u32); 3] {
        let b1 = back(hist, start, pos, 1) as usize;
        let x2 = back(hist, start, pos, 2) as usize * 256 + b1;
        [
            (&self.c0[..], self.t0),
            (&self.c1[b1 * 256..b1 * 256 + 256], self.t1[b1]),
            (&self.c2[x2 * 256..x2 * 256 + 256], self.t2[x2]),
        ]
    }

    /// Adds the dense experts' evidence, scaled by the class weights `w`, into `z`; records the
    /// classes used.
    pub fn dense(&self, hist: &[u8], start: usize, pos: usize, w: &[f32], z: &mut [f32], classes: &mut [usize; 3]) {
        for (o, (row, total)) in self.dense_rows(hist, start, pos).iter().enumerate() {
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
    pub fn dense_grad(&self, hist: &[u8], start: usize, pos: usize, dz: &[f32], classes: &[usize; 3], g: &mut [f32]) {
        for (o, (row, total)) in self.dense_rows(hist, start, pos).iter().enumerate() {
            if *total == 0 {
                continue;
            }
            let mut acc = [0f32; 16];
            for (i, (&d, &c)) in dz.iter().zip(row.iter()).enumerate() {
                acc[i % 16] += d * self.ln_count[c as usize];
            }
            g[classes[o]] += sum_fixed(&acc);
        }
    }

    /// Evidence of every hashed expert for the byte at `pos` of a lane.
    pub fn hashed(&self, hist: &[u8], start: usize, pos: usize, ls: &LaneState, out: &mut [Sparse; N_HASHED]) {
        for (k, kind) in HASHED.iter().enumerate() {
            let h = context_hash(*kind, k, hist, start, pos, ls);
            let e = &mut out[k];
            e.slot = (k << self.slot_bits) | (h >> (64 - self.slot_bits)) as usize;
            e.check = h as u16;
            e.n = 0;
            let slot = &self.slots[e.slot];
            if slot.check != e.check || slot.n == 0 {
                continue;
            }
            let m = slot.n as usize;
            // Escape mass ~ distinct symbols seen (PPM method C); evidence = ln(c (256-m) / m).
            let base = ln_fixed((256 - m) as f32) - ln_fixed(m as f32);
            for i in 0..m {
                e.syms[i] = slot.syms[i];
                e.vals[i] = self.ln_count[slot.counts[i] as usize] + base;
            }
            e.n = m as u8;
            e.last = slot.last;
            e.class = bucket_total(slot.total as u32) * 4 + (m - 1).min(3);
        }
    }

    /// Learns the byte at `pos` (already in `hist`) of the lane starting at `start`: updates the
    /// tables (hashed slots as looked up by `hashed`) and the lane's match and word state.
    /// `known(q)` tells whether position `q` of the block has been coded by its lane.
    pub fn update(
        &mut self,
        hist: &[u8],
        start: usize,
        pos: usize,
        looked_up: &[Sparse; N_HASHED],
        ls: &mut LaneState,
        known: impl Fn(usize) -> bool,
    ) {
        let b = hist[pos];
        let bi = b as usize;
        let b1 = back(hist, start, pos, 1) as usize;
        let x2 = back(hist, start, pos, 2) as usize * 256 + b1;
        bump_dense(&mut self.c0, &mut self.t0, bi, DENSE_LIMIT[0]);
        bump_dense(&mut self.c1[b1 * 256..b1 * 256 + 256], &mut self.t1[b1], bi, DENSE_LIMIT[1]);
        bump_dense(&mut self.c2[x2 * 256..x2 * 256 + 256], &mut self.t2[x2], bi, DENSE_LIMIT[2]);
        for e in looked_up.iter() {
            let slot = &mut self.slots[e.slot];
            if slot.check != e.check {
                *slot = Slot {
                    check: e.check,
                    ..Slot::default()
                };
            }
            bump_slot(slot, b);
        }
        // Words: letters (case folded) extend the current word; anything else ends it.
        if b.is_ascii_alphabetic() {
            ls.word = mix(ls.word.wrapping_add(K1), b.to_ascii_lowercase() as u64);
        } else if ls.word != 0 {
            ls.prev_word = ls.word;
            ls.word = 0;
        }
        // Match model: extend the current match, or look one up for the next position.
        if ls.len > 0 && known(ls.ptr) && hist[ls.ptr] == b {
            ls.len += 1;
            ls.ptr += 1;
        } else {
            ls.len = 0;
        }
        let next = pos + 1;
        if next < start + MATCH_MIN {
            return;
        }
        let mut h = K1;
        for i in 1..=MATCH_MIN {
            h = mix(h, hist[next - i] as u64);
        }
        let idx = (h.wrapping_mul(K2) >> (64 - self.match_bits)) as usize;
        let cand = self.match_table[idx];
        self.match_table[idx] = next as u32;
        if ls.len > 0 || cand == u32::MAX {
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
            ls.len = len;
            ls.ptr = c;
        }
    }

    /// The byte the lane's match predicts, if its source position is known.
    pub fn match_byte(hist: &[u8], ls: &LaneState, known: impl Fn(usize) -> bool) -> Option<u8> {
        (ls.len > 0 && ls.ptr < hist.len() && known(ls.ptr)).then(|| hist[ls.ptr])
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
    slot.last = b;
    slot.total += 1;
    if slot.total > SLOT_LIMIT {
        let mut t = 0;
        for c in slot.counts[..slot.n as usize].iter_mut() {
            *c = (*c + 1) >> 1;
            t += *c;
        }
        slot.total = t;
    }
}
