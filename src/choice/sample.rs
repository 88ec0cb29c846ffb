//! Cheap measurements of a block that predict what the codecs would make of it: evenly spaced
//! samples, zstd's and the order-0 entropy's share of a sample, how many of a float sample's
//! windows repeat, and as which float type a general block codes best.

use super::candidates::ZSTD_LEVEL;
use crate::codecs::float::distinct::{Distinct, Key};
use crate::codecs::float::{self, DType};
use crate::codecs::zstd as zstd_codec;

/// Bytes of the block looked at to predict sizes (taken as evenly spaced pieces).
pub(super) const SAMPLE: usize = 64 << 10;
const PIECES: usize = 4;
/// The context-mixing codec runs only if its predicted size is smaller than the best fast codec's
/// by at least this fraction of the block: it costs ~1000x their time.
pub(super) const CM_MIN_GAIN: f64 = 0.01;
/// Share of the redundancy left by zstd that the context-mixing codec is predicted to remove as
/// well (measured on the shared corpora: sep's archives are 16% smaller than zstd -19's in total).
const CM_EXTRA: f64 = 0.15;
/// What a general block is tried as: an array of a float type, in either byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Guess {
    /// The float type.
    pub dtype: DType,
    /// Whether the values are big-endian (each value's bytes reversed before coding).
    pub big_endian: bool,
}

const fn guess(dtype: DType, big_endian: bool) -> Guess {
    Guess { dtype, big_endian }
}

/// The guesses, widest first, little-endian before big-endian (ties keep the first).
/// Big-endian 16-bit floats are left out: no format measured stores them.
const GUESSES: [Guess; 6] = [
    guess(DType::F64, false),
    guess(DType::F64, true),
    guess(DType::F32, false),
    guess(DType::F32, true),
    guess(DType::BF16, false),
    guess(DType::F16, false),
];

/// Evenly spaced pieces of `data`, `SAMPLE` bytes in all (or all of it if smaller).
pub(super) fn sample(data: &[u8]) -> Vec<u8> {
    if data.len() <= SAMPLE {
        return data.to_vec();
    }
    let step = (data.len() - PIECE) / (PIECES - 1);
    pieces(data, |i| i * step)
}

/// Length of each of a sample's `PIECES` pieces.
const PIECE: usize = SAMPLE / PIECES;

/// The `PIECES` pieces of `data` starting at `at(0)`, `at(1)`, ..., one after the other.
pub(super) fn pieces(data: &[u8], at: impl Fn(usize) -> usize) -> Vec<u8> {
    let mut s = Vec::with_capacity(SAMPLE);
    for i in 0..PIECES {
        s.extend_from_slice(&data[at(i)..at(i) + PIECE]);
    }
    s
}

/// Pieces of `data`, `SAMPLE` bytes in all (or all of it if smaller), each centred in its
/// quarter of the block (the edges of a block are where a file keeps its headers: a
/// checkpoint's pickle, an archive's directory) and starting at a multiple of 8 bytes (so that
/// values of any width stay whole).
pub(super) fn aligned_sample(data: &[u8]) -> Vec<u8> {
    let whole = data.len() & !7;
    if whole <= SAMPLE {
        return data[..whole].to_vec();
    }
    pieces(data, |i| {
        ((2 * i + 1) * whole / (2 * PIECES) - PIECE / 2) & !7
    })
}

/// The float type and byte order as whose array the planes codec codes `s` (a general
/// block's `aligned_sample`) best, with the fraction of `s` it makes: a raw dump of weights, a
/// checkpoint's tensor storages or a scientific format's fields, which carry no header that
/// sep reads.
pub(super) fn float_guess(s: &[u8]) -> Option<(Guess, f64)> {
    let mut swapped = Vec::new();
    GUESSES
        .iter()
        .map(|&g| {
            let sample = match g.big_endian {
                true => {
                    swapped.clear();
                    swapped.extend_from_slice(s);
                    float::swap_order(&mut swapped, g.dtype.width());
                    &swapped[..]
                }
                false => s,
            };
            (
                g,
                float::encode(sample, g.dtype).len() as f64 / s.len() as f64,
            )
        })
        .reduce(|a, b| if b.1 < a.1 { b } else { a })
}

/// Share of a tensor sample's windows (4 bytes, 8 for 8-byte values, one per value) that
/// appeared earlier in it: zstd's matches can only beat the planes codec's value model where
/// windows repeat (structured arrays, palettes, runs); on trained float weights almost none do.
pub(super) fn repeats(s: &[u8], width: usize) -> f64 {
    let win = width.max(4);
    let n = if s.len() >= win {
        (s.len() - win) / width + 1
    } else {
        0
    };
    if n == 0 {
        return 0.0;
    }
    // 4-byte windows in a table of `u32`: half the memory to touch.
    let repeated = match win {
        4 => TABLE32.with(|t| {
            let key = |w: &[u8]| u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            count_repeats(n, s.windows(4).step_by(width).take(n).map(key), t)
        }),
        _ => TABLE64.with(|t| {
            let key = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or_default());
            count_repeats(n, s.chunks_exact(8).take(n).map(key), t)
        }),
    };
    repeated as f64 / n as f64
}

/// How many of the `n` windows `keys` equal an earlier one, counted in a set whose memory is
/// the thread's `table` (reused: fresh memory would cost a page fault per 4 KiB).
pub(super) fn count_repeats<K: Key>(
    n: usize,
    keys: impl Iterator<Item = K>,
    table: &std::cell::Cell<Vec<K>>,
) -> usize {
    let mut set = Distinct::in_slots(table.take(), n);
    let mut repeated = 0;
    for k in keys {
        repeated += usize::from(!set.insert(k));
    }
    table.set(set.into_slots());
    repeated
}

thread_local! {
    /// `repeats`' hash tables, kept for the thread's next block.
    static TABLE32: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
    static TABLE64: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Order-0 entropy of `data` as a fraction of its size.
pub(super) fn order0(data: &[u8]) -> f64 {
    let mut counts = [0u64; 256];
    for &b in data {
        counts[b as usize] += 1;
    }
    let n = data.len().max(1) as f64;
    let bits: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| -(c as f64) * (c as f64 / n).log2())
        .sum();
    bits / 8.0 / n
}

/// Sizes of a block under the cheap estimators, as fractions of its size, from one sample.
pub(super) struct Prediction {
    /// zstd at `ZSTD_LEVEL`.
    pub(super) zstd: f64,
    /// Order-0 entropy.
    pub(super) order0: f64,
}

/// zstd's size at `level` on `s`, as a fraction of its size (1 if empty).
pub(super) fn zstd_fraction(s: &[u8], level: i32) -> f64 {
    match zstd_codec::compress(s, level) {
        Some(z) if !s.is_empty() => z.len() as f64 / s.len() as f64,
        _ => 1.0,
    }
}

impl Prediction {
    pub(super) fn of(data: &[u8]) -> Self {
        Self::of_sample(&sample(data))
    }

    /// The prediction from a sample `s` already taken.
    pub(super) fn of_sample(s: &[u8]) -> Self {
        Prediction {
            zstd: zstd_fraction(s, ZSTD_LEVEL),
            order0: order0(s),
        }
    }

    /// Whether the context-mixing codec's predicted size beats the fast codecs' by enough to pay
    /// for its time.
    pub(super) fn worth_cm(&self) -> bool {
        self.worth_cm_against(1.0)
    }

    /// `worth_cm`, with one more fast codec predicted to make `other` of the block.
    pub(super) fn worth_cm_against(&self, other: f64) -> bool {
        let fast = self.zstd.min(other).min(1.0);
        let cm = 1.0 - (1.0 + CM_EXTRA) * (1.0 - self.zstd.min(self.order0));
        cm < fast - CM_MIN_GAIN
    }
}

/// Whether a general block holding `data` would be given to the context-mixing codec.
pub fn cm_predicted(data: &[u8]) -> bool {
    Prediction::of(data).worth_cm()
}
