//! Contexts of the experts: which earlier bytes select statistics (orders, words, sparse byte
//! patterns), and the long-range match model.
use super::tables::refill;

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
    /// The word before the previous one and the current word.
    WordSkip,
    /// The position in the text line and the byte above it in the line before.
    LineColumn,
    /// The byte above in the line before, the one after it, and the byte before.
    LineAbove,
    /// The `n` bytes before the predicted one and its position modulo 4 (aligned binary data).
    Aligned(usize),
    /// The bytes one and two records above (record length detected from the data).
    Column,
    /// The byte one record above and the byte before the predicted one.
    ColumnLeft,
}

/// Every hashed context a model may use. A model names its contexts by their places here (a
/// bit mask, recorded in the archive) and salts each context's hash with its place, so this
/// list only ever grows at the end.
pub const CATALOGUE: [ContextKind; MAX_HASHED] = [
    ContextKind::Order(2),
    ContextKind::Order(3),
    ContextKind::Order(4),
    ContextKind::Order(6),
    ContextKind::Order(8),
    ContextKind::Order(12),
    ContextKind::Word,
    ContextKind::Words2,
    ContextKind::Sparse(0b1010_1010),
    ContextKind::Sparse(0b10),
    ContextKind::Sparse(0b1100),
    ContextKind::Aligned(2),
    ContextKind::Column,
    ContextKind::ColumnLeft,
    ContextKind::Sparse(0b1111_0000),
    ContextKind::WordSkip,
    ContextKind::LineColumn,
    ContextKind::LineAbove,
    ContextKind::Order(5),
    ContextKind::Order(16),
    ContextKind::Order(24),
    ContextKind::Aligned(1),
    ContextKind::Aligned(4),
    ContextKind::Sparse(0b1110),
];
/// Most hashed contexts of a model (the catalogue's length).
pub const MAX_HASHED: usize = 24;

/// The contexts of mask `mask` (bit i: the catalogue's context i), each with its place in the
/// catalogue: the orders first, shortest first (the refinement chain's stages), then the
/// rest in catalogue order. Also returns how many are orders.
pub fn select(mask: u32) -> (Vec<(ContextKind, usize)>, usize) {
    let chosen = (0..MAX_HASHED).filter(|&i| mask >> i & 1 != 0);
    let order_len = |i: usize| match CATALOGUE[i] {
        ContextKind::Order(n) => Some(n),
        _ => None,
    };
    let mut orders: Vec<usize> = chosen.clone().filter(|&i| order_len(i).is_some()).collect();
    orders.sort_by_key(|&i| order_len(i));
    let n_orders = orders.len();
    let list = orders
        .into_iter()
        .chain(chosen.filter(|&i| order_len(i).is_none()))
        .map(|i| (CATALOGUE[i], i))
        .collect();
    (list, n_orders)
}

/// Shortest record length detected (shorter periods are left to the aligned contexts).
const RECORD_MIN: u32 = 4;
/// Shortest match the match model looks up.
const MATCH_MIN: usize = 6;

/// Per-lane state that is not in the shared tables: match and word positions.
#[derive(Clone)]
pub struct LaneState {
    /// Position in the block whose byte the match predicts next (`usize::MAX`: none).
    pub ptr: usize,
    /// Bytes the match has predicted right since it was found or last missed.
    pub len: usize,
    /// Misses since the match was found (a match survives a few, as in tables and records).
    pub misses: u32,
    word: u64,
    prev_word: u64,
    prev_word2: u64,
    /// Start of the current line and of the line before (positions in the block).
    line: usize,
    prev_line: usize,
    /// Detected record length (0: none).
    pub record: usize,
    rec_candidate: usize,
    rec_count: u32,
    last_pos: [u32; 256],
    last_dist: [u32; 256],
}

impl Default for LaneState {
    fn default() -> Self {
        LaneState {
            ptr: usize::MAX,
            len: 0,
            misses: 0,
            word: 0,
            prev_word: 0,
            prev_word2: 0,
            line: 0,
            prev_line: 0,
            record: 0,
            rec_candidate: 0,
            rec_count: 0,
            last_pos: [u32::MAX; 256],
            last_dist: [0; 256],
        }
    }
}

impl LaneState {
    /// Match confidence bucket: 0 = recovering after a miss, else by length.
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
pub(super) fn back(hist: &[u8], start: usize, pos: usize, i: usize) -> u64 {
    if pos >= start + i {
        hist[pos - i] as u64
    } else {
        0
    }
}

/// Byte `d` after the one above `pos` in the line before (0 where that line is shorter, or
/// before the lane).
#[inline]
fn above(hist: &[u8], start: usize, pos: usize, ls: &LaneState, d: usize) -> u64 {
    let q = ls.prev_line + (pos - ls.line.max(start)) + d;
    if q < ls.line && q >= start {
        hist[q] as u64
    } else {
        0
    }
}

/// Hash of context `kind` (its place `k` in the catalogue) for the byte at `pos`.
pub fn context_hash(
    kind: ContextKind,
    k: usize,
    hist: &[u8],
    start: usize,
    pos: usize,
    ls: &LaneState,
) -> u64 {
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
            h = mix(
                mix(h, ls.word),
                if ls.word == 0 {
                    back(hist, start, pos, 1)
                } else {
                    0
                },
            );
        }
        ContextKind::Words2 => h = mix(mix(h, ls.word), ls.prev_word),
        ContextKind::WordSkip => h = mix(mix(h, ls.word), ls.prev_word2),
        ContextKind::LineColumn => {
            let col = pos - ls.line.max(start);
            h = mix(mix(h, col.min(255) as u64), above(hist, start, pos, ls, 0));
        }
        ContextKind::LineAbove => {
            let up = |d| above(hist, start, pos, ls, d);
            h = mix(mix(mix(h, up(0)), up(1)), back(hist, start, pos, 1));
        }
        ContextKind::Aligned(n) => {
            for i in 1..=n {
                h = mix(h, back(hist, start, pos, i));
            }
            h = mix(h, (pos - start) as u64 & 3);
        }
        ContextKind::Column => {
            let r = ls.record;
            h = mix(
                mix(mix(h, r as u64), back(hist, start, pos, r)),
                back(hist, start, pos, 2 * r),
            );
        }
        ContextKind::ColumnLeft => {
            let r = ls.record;
            h = mix(
                mix(mix(h, r as u64), back(hist, start, pos, r)),
                back(hist, start, pos, 1),
            );
        }
    }
    h.wrapping_mul(K2)
}

/// The match model's table: for each hash of the last `MATCH_MIN` bytes, the position after
/// their latest occurrence.
pub struct MatchTable {
    table: Vec<u32>,
    bits: u32,
}

impl MatchTable {
    /// An empty table sized for a block of `len` bytes, reusing `buf`'s memory.
    pub fn new_in(len: usize, buf: Vec<u32>) -> Self {
        let bits = Self::bits_for(len);
        let table = refill(buf, 1 << bits, u32::MAX);
        MatchTable { table, bits }
    }

    /// Index bits of the table for a block of `len` bytes.
    fn bits_for(len: usize) -> u32 {
        (usize::BITS - len.max(1).leading_zeros()).clamp(12, 22)
    }

    /// Bytes of the table for a block of `len` bytes.
    pub fn bytes_for(len: usize) -> usize {
        4 << Self::bits_for(len)
    }

    /// Gives the table's memory back for reuse.
    pub fn into_buffer(self) -> Vec<u32> {
        self.table
    }

    /// Learns the byte at `pos` (already in `hist`) of the lane starting at `start`: advances
    /// the lane's word and match state. `known(q)` tells whether position `q` has been coded.
    pub fn update(
        &mut self,
        hist: &[u8],
        start: usize,
        pos: usize,
        ls: &mut LaneState,
        known: impl Fn(usize) -> bool,
    ) {
        let b = hist[pos];
        // Words: letters (case folded) extend the current word; anything else ends it.
        if b.is_ascii_alphabetic() {
            ls.word = mix(ls.word.wrapping_add(K1), b.to_ascii_lowercase() as u64);
        } else if ls.word != 0 {
            ls.prev_word2 = ls.prev_word;
            ls.prev_word = ls.word;
            ls.word = 0;
        }
        if b == b'\n' {
            ls.prev_line = ls.line;
            ls.line = pos + 1;
        }
        // Record length: a byte value recurring at the same distance three times in a row.
        let rel = (pos - start) as u32;
        let last = ls.last_pos[b as usize];
        if last != u32::MAX {
            let d = rel - last;
            if d >= RECORD_MIN && d == ls.last_dist[b as usize] {
                if d as usize == ls.rec_candidate {
                    ls.rec_count += 1;
                    if ls.rec_count >= 4 {
                        ls.record = d as usize;
                    }
                } else if ls.rec_count <= 1 {
                    ls.rec_candidate = d as usize;
                    ls.rec_count = 1;
                } else {
                    ls.rec_count -= 1;
                }
            }
            ls.last_dist[b as usize] = d;
        }
        ls.last_pos[b as usize] = rel;
        // Follow the current match through a few misses, or look a new one up.
        if ls.ptr != usize::MAX {
            if known(ls.ptr) && hist[ls.ptr] == b {
                ls.len += 1;
            } else {
                ls.len = 0;
                ls.misses += 1;
            }
            ls.ptr += 1;
            if ls.misses > 64 && ls.len < 16 {
                ls.ptr = usize::MAX;
            }
        }
        let next = pos + 1;
        if next < start + MATCH_MIN {
            return;
        }
        let mut h = K1;
        for i in 1..=MATCH_MIN {
            h = mix(h, hist[next - i] as u64);
        }
        let idx = (h.wrapping_mul(K2) >> (64 - self.bits)) as usize;
        let cand = self.table[idx];
        self.table[idx] = next as u32;
        if ls.len >= 16 || cand == u32::MAX {
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
        if len >= MATCH_MIN && len > ls.len {
            ls.len = len;
            ls.ptr = c;
            ls.misses = 0;
        }
    }

    /// Records every position in `from..to` of `hist` (positions whose `MATCH_MIN` bytes
    /// before them all lie in `hist[..to]`) as `update` would, without following any match.
    pub fn insert(&mut self, hist: &[u8], from: usize, to: usize) {
        for next in from.max(MATCH_MIN)..to {
            let mut h = K1;
            for i in 1..=MATCH_MIN {
                h = mix(h, hist[next - i] as u64);
            }
            let idx = (h.wrapping_mul(K2) >> (64 - self.bits)) as usize;
            self.table[idx] = next as u32;
        }
    }

    /// The byte the lane's match predicts, if its source position is known.
    pub fn predicted(hist: &[u8], ls: &LaneState, known: impl Fn(usize) -> bool) -> Option<u8> {
        (ls.ptr < hist.len() && known(ls.ptr)).then(|| hist[ls.ptr])
    }
}
