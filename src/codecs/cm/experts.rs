//! Contexts of the experts: which earlier bytes select statistics (orders, words, sparse and
//! masked byte patterns, indirect contexts), and the long-range match model.
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
    /// The `n` bytes before the predicted one (1 to 3; of the third, its low nibble) and the
    /// two bytes that followed them the last two times they occurred: what came after this
    /// before. The variants pair a table's entry with other bytes: 4, what followed the byte
    /// before, with the byte two back; 5, what followed the two bytes before, alone; 6, that
    /// with the byte three back; 7, what followed the two and a half, alone; 8, what followed
    /// the byte before, alone; 9, what followed the two and a half, with the byte four back.
    Indirect(usize),
    /// The eight bytes before the predicted one, masked (byte i back in bits 8(i-1)..8i).
    Masked(u64),
    /// The byte the match model expects (or none) with its match-length bucket (0) or with
    /// the byte before (1); the predictor hashes it, once the match is known
    /// (`expected_hash`).
    Expected(usize),
}

/// Every hashed context a model may use. A model names its contexts by their places here (a
/// bit mask, recorded in the archive) and salts each context's hash with its place, so this
/// list only ever grows at the end.
pub const CATALOGUE: [ContextKind; CATALOGUE_LEN] = [
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
/// The catalogue's length: the bits a context mask may have.
pub const CATALOGUE_LEN: usize = 24;

/// The contexts the wide model adds to its level's (`Params::wide`), at places
/// `CATALOGUE_LEN` on (which salt their hashes): indirect contexts, sparse and masked byte
/// patterns of binary data (single bytes further back, pairs, nibbles, top bits), order 1,
/// and the match model's expected byte.
pub const WIDE: [ContextKind; 40] = [
    ContextKind::Indirect(1),
    ContextKind::Indirect(2),
    ContextKind::Sparse(0b101),
    ContextKind::Sparse(0b1000),
    ContextKind::Order(1),
    ContextKind::Sparse(0b1010),
    ContextKind::Sparse(0b11_0000),
    ContextKind::Indirect(3),
    ContextKind::Masked(0xff << 32),
    ContextKind::Masked(0xff << 40),
    ContextKind::Masked(0xff << 56),
    ContextKind::Masked(0xffff << 48),
    ContextKind::Masked(0xffff << 8),
    ContextKind::Masked(0xffff << 24),
    ContextKind::Masked(0xf0f0_f0f0),
    ContextKind::Masked(0xf0f0_f0f0_f0f0_f0f0),
    ContextKind::Masked(0xf0_f0ff),
    ContextKind::Masked(0xff_00ff_00ff),
    ContextKind::Masked(0xff00_ff00_ff00),
    ContextKind::Masked(0xfcfc_fcfc),
    ContextKind::Masked(0xff_ff00_00ff),
    ContextKind::Masked(0xc0c0_c0c0_c0c0_c0c0),
    ContextKind::Masked(0xffff_ffff_0000),
    ContextKind::Masked(0xff_0000_ff00),
    ContextKind::Masked(0xffff_0000),
    ContextKind::Masked(0xff00_00ff),
    ContextKind::Masked(0xff_0000_00ff),
    ContextKind::Masked(0xff00_0000_00ff),
    ContextKind::Masked(0x0f0f_0f0f),
    ContextKind::Masked(0xe0e0_e0e0_e0e0),
    ContextKind::Masked(0xff_ffff_0000_0000),
    ContextKind::Masked(0x80ff),
    ContextKind::Indirect(4),
    ContextKind::Indirect(5),
    ContextKind::Indirect(6),
    ContextKind::Indirect(7),
    ContextKind::Indirect(8),
    ContextKind::Indirect(9),
    ContextKind::Expected(0),
    ContextKind::Expected(1),
];

/// Most hashed contexts of a model: the catalogue and the wide model's.
pub const MAX_HASHED: usize = CATALOGUE_LEN + WIDE.len();

/// The context at place `i`: the catalogue's, then the wide model's.
fn at_place(i: usize) -> ContextKind {
    match i.checked_sub(CATALOGUE_LEN) {
        None => CATALOGUE[i],
        Some(w) => WIDE[w],
    }
}

/// The contexts of mask `mask` (bit i: the catalogue's context i), with the wide model's
/// where `wide`, each with its place: the orders first, shortest first (the refinement
/// chain's stages), then the rest by place. Also returns how many are orders.
pub fn select(mask: u32, wide: bool) -> (Vec<(ContextKind, usize)>, usize) {
    let places = if wide { MAX_HASHED } else { CATALOGUE_LEN };
    let chosen = (0..places).filter(|&i| i >= CATALOGUE_LEN || mask >> i & 1 != 0);
    let order_len = |i: usize| match at_place(i) {
        ContextKind::Order(n) => Some(n),
        _ => None,
    };
    let mut orders: Vec<usize> = chosen.clone().filter(|&i| order_len(i).is_some()).collect();
    orders.sort_by_key(|&i| order_len(i));
    let n_orders = orders.len();
    let list = orders
        .into_iter()
        .chain(chosen.filter(|&i| order_len(i).is_none()))
        .map(|i| (at_place(i), i))
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
    /// The indirect contexts' table (empty in a model without them, `with_indirect`): per
    /// byte value, per pair of them and per pair with the low nibble of the byte before, the
    /// two bytes that followed their last two occurrences.
    after: Vec<u16>,
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
            after: Vec::new(),
        }
    }
}

/// Entries of the indirect contexts' table: after one byte, two, and two and a nibble.
const AFTER_LEN: usize = 256 + (1 << 16) + (1 << 20);

/// Where in the indirect contexts' table the `n` bytes before position `pos` (1 to 3) lead.
#[inline]
fn after_at(hist: &[u8], start: usize, pos: usize, n: usize) -> usize {
    let b1 = back(hist, start, pos, 1) as usize;
    let b2 = back(hist, start, pos, 2) as usize;
    match n {
        1 => b1,
        2 => 256 + (b1 | b2 << 8),
        _ => 256 + (1 << 16) + (b1 | b2 << 8 | (back(hist, start, pos, 3) as usize & 0xf) << 16),
    }
}

impl LaneState {
    /// A lane's state with the indirect contexts' table.
    pub fn with_indirect() -> Self {
        LaneState {
            after: vec![0; AFTER_LEN],
            ..LaneState::default()
        }
    }

    /// Bytes of a lane's indirect contexts' table.
    pub const INDIRECT_BYTES: usize = 2 * AFTER_LEN;

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
        ContextKind::Indirect(n) => {
            // Which table entry (what followed 1, 2 or 2.5 bytes) and which bytes beside it.
            let of = match n {
                1 | 4 | 8 => 1,
                2 | 5 | 6 => 2,
                _ => 3,
            };
            let key = ls.after.get(after_at(hist, start, pos, of)).copied();
            let at = |i| back(hist, start, pos, i);
            let with = match n {
                1 => at(1),
                2 | 3 => at(1) | at(2) << 8,
                4 => at(2),
                6 => at(3),
                9 => at(4),
                _ => 0,
            };
            h = mix(mix(h, with), key.unwrap_or(0) as u64);
        }
        ContextKind::Masked(m) => {
            let last8 = (1..=8).fold(0, |v, i| v | back(hist, start, pos, i) << (8 * (i - 1)));
            h = mix(h, last8 & m);
        }
        // Hashed by the predictor once the match is known (`expected_hash`).
        ContextKind::Expected(_) => {}
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

/// Hash of context `Expected(which)` at place `k`: the byte the match model expects
/// (`None`: no match) with its length bucket `bucket` (`which` 0) or the byte before, `b1`.
pub fn expected_hash(k: usize, which: usize, expected: Option<u8>, bucket: usize, b1: u32) -> u64 {
    let e = expected.map_or(0, |b| b as u64 | 256);
    let with = match which {
        0 => bucket as u64,
        _ => b1 as u64 | 1 << 12,
    };
    mix(mix(mix(K2, k as u64 + 1), e), with).wrapping_mul(K2)
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
        // What followed one, two, and two and a half bytes before: this one.
        if !ls.after.is_empty() {
            for n in 1..=3 {
                let at = after_at(hist, start, pos, n);
                ls.after[at] = ls.after[at] << 8 | b as u16;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_model_adds_its_contexts_after_the_catalogue() {
        let mask = (1 << 24) - 1;
        let (plain, orders) = select(mask, false);
        let (wide, wide_orders) = select(mask, true);
        assert_eq!(plain.len(), CATALOGUE_LEN);
        assert_eq!(wide.len(), MAX_HASHED);
        // Order 1 joins the orders, first (the chain's stages run shortest first).
        assert_eq!(wide_orders, orders + 1);
        assert!(matches!(wide[0], (ContextKind::Order(1), 28)));
        assert!(wide[wide_orders..]
            .iter()
            .all(|(k, _)| !matches!(k, ContextKind::Order(_))));
        let mut places: Vec<usize> = wide.iter().map(|&(_, p)| p).collect();
        places.sort();
        assert_eq!(places, (0..MAX_HASHED).collect::<Vec<_>>());
    }

    #[test]
    fn indirect_contexts_follow_what_came_after_a_byte() {
        // "xa" then "xb": after "x" came 'a', then 'b'.
        let hist = b"xaxbx";
        let mut ls = LaneState::with_indirect();
        let mut table = MatchTable::new_in(hist.len(), Vec::new());
        let hash =
            |ls: &LaneState, pos| context_hash(ContextKind::Indirect(1), 24, hist, 0, pos, ls);
        let before = hash(&ls, 1);
        for pos in 0..4 {
            table.update(hist, 0, pos, &mut ls, |_| true);
        }
        assert_eq!(ls.after[b'x' as usize], u16::from_be_bytes(*b"ab"));
        // Predicting after the last 'x' (position 5): the context has learnt what followed.
        assert_ne!(hash(&ls, 5), before);
        // Without the table the context is its byte alone, and nothing is learnt.
        let mut plain = LaneState::default();
        for pos in 0..4 {
            table.update(hist, 0, pos, &mut plain, |_| true);
        }
        assert!(plain.after.is_empty());
        assert_eq!(hash(&plain, 5), hash(&LaneState::default(), 1));
    }
}
