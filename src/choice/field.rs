//! Whether a general block is smooth 32-bit fields, and in which shape the field codec should
//! code it. A cheap test on the middle of the block comes first: its values' keys lie much
//! closer to their left neighbour's than to their median (fields of a physical model: 5-7 bits
//! closer per value; trained weights, text and code: about 1 bit or less). Only then are the
//! row width and byte layout searched, the shapes tried on a slice with the fast predictor,
//! and the best checked with the block's own model.

use crate::codecs::field::{self, zigzag, Shape};
use crate::codecs::neural::{Backend, NeuralConfig};

/// Values in the middle of a block that the smoothness test and the width search look at.
const PROBE: usize = 16 << 10;
/// Widest row searched for.
const SEARCH: usize = 4096;
/// Fewest values in a block for the test to mean anything.
const MIN_VALUES: usize = 1024;
/// Bits per value by which the left neighbours must beat the median for a block to count as
/// smooth.
const SMOOTH_BITS: u64 = 4;
/// Bytes from the middle of the block that each shape is tried on with the fast predictor.
const TRIAL: usize = 128 << 10;
/// Bytes from the centre of each quarter of the block on which the best shape is checked with
/// the block's own model (one slice from the middle took binary/mr, where its middle is not
/// like the rest).
const CHECK: usize = 16 << 10;

/// Significant bits of `d`.
fn bits(d: u32) -> u64 {
    (32 - d.leading_zeros()) as u64
}

/// Distance between two keys.
fn gap(a: u32, b: u32) -> u32 {
    a.abs_diff(b)
}

/// The middle `len` bytes of `data`, starting at a multiple of 4.
fn middle(data: &[u8], len: usize) -> &[u8] {
    let len = len.min(data.len()) & !3;
    let start = ((data.len() - len) / 2) & !3;
    &data[start..start + len]
}

/// `piece` bytes from the centre of each quarter of `data`, each starting at a multiple of 4,
/// or all of `data` (its whole values) if it is shorter than the four.
fn quarters(data: &[u8], piece: usize) -> Vec<u8> {
    if data.len() < 4 * piece {
        return data[..data.len() & !3].to_vec();
    }
    (0..4)
        .flat_map(|i| {
            let start = ((2 * i + 1) * data.len() / 8 - piece / 2) & !3;
            &data[start..start + piece]
        })
        .copied()
        .collect()
}

/// Bits of the distances of keys `k` to their left neighbours and to their median, in all.
fn distances(k: &[u32]) -> Option<(u64, u64)> {
    let mut sorted = k.to_vec();
    sorted.sort_unstable();
    let median = *sorted.get(sorted.len() / 2)?;
    let left = k.windows(2).map(|w| bits(gap(w[1], w[0]))).sum();
    let spread = k.iter().skip(1).map(|&v| bits(gap(v, median))).sum();
    Some((left, spread))
}

/// Candidate shapes for `data`, a general block, if its middle looks like smooth 32-bit fields:
/// rows of width 1 (extrapolation along the values) and of the width whose plane predictor
/// fits the probe best, each as values and as planes.
pub fn candidates(data: &[u8]) -> Vec<Shape> {
    let probe = middle(data, 4 * (PROBE + SEARCH + 1));
    if probe.len() < 4 * MIN_VALUES {
        return Vec::new();
    }
    // The byte order in which the last `PROBE` values lie closest to their neighbours (a
    // field of round values read in the wrong order has small keys, but not close ones), if
    // they are much closer than to their median.
    let Some((keys, (left, spread), big_endian)) = [false, true]
        .into_iter()
        .filter_map(|be| {
            let keys = field::keys(probe, be);
            let d = distances(&keys[keys.len().saturating_sub(PROBE)..])?;
            Some((keys, d, be))
        })
        .min_by_key(|c| c.1 .0)
    else {
        return Vec::new();
    };
    if spread < left + SMOOTH_BITS * PROBE.min(keys.len() - 1) as u64 {
        return Vec::new();
    }
    let n = keys.len();
    // The width whose plane predictor leaves the smallest residuals over the probe's last
    // values (all of which have a row above them).
    let from = n - PROBE.min(n / 2);
    let cost = |w: usize| -> u64 {
        (from..n)
            .map(|i| {
                bits(zigzag(keys[i].wrapping_sub(field::predict(
                    |j| keys[j],
                    i,
                    w,
                ))))
            })
            .sum()
    };
    let width = (2..=SEARCH.min(from - 1))
        .min_by_key(|&w| cost(w))
        .unwrap_or(1);
    let mut shapes = Vec::new();
    for width in [1, width as u32] {
        for planes in [true, false] {
            let s = Shape {
                big_endian,
                planes,
                width,
            };
            if !shapes.contains(&s) {
                shapes.push(s);
            }
        }
    }
    shapes
}

/// The shape in which the field codec promises to beat the neural codec's `model` on `data`,
/// or `None`: the candidates tried on a slice with the fast predictor, and the best of them
/// checked on smaller slices with `model` itself (the fast predictor favours residuals on
/// some blocks that the full model codes better as they are).
pub fn choose(data: &[u8], backend: &dyn Backend, model: &NeuralConfig) -> Option<Shape> {
    let shapes = candidates(data);
    if shapes.is_empty() {
        return None;
    }
    let size = |bytes: &[u8], model: &NeuralConfig| backend.encode(bytes, model, &|_| {}).len();
    let slice = middle(data, TRIAL);
    let fast = NeuralConfig::for_level(1, <_>::default());
    let plain = size(slice, &fast);
    let (shape, _) = shapes
        .into_iter()
        .map(|s| (s, size(&field::forward(slice, s), &fast)))
        .filter(|&(_, n)| n < plain)
        .min_by_key(|c| c.1)?;
    let check = quarters(data, CHECK);
    let model = model.without_pack();
    (size(&field::forward(&check, shape), &model) < size(&check, &model)).then_some(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::neural::CpuBackend;

    #[test]
    fn fields_are_found_and_text_and_noise_are_not() {
        let field = crate::testing::smooth_field(300, 150, true);
        let shapes = candidates(&field);
        assert!(shapes.iter().all(|s| s.big_endian));
        assert!(shapes.iter().any(|s| s.width == 150), "{shapes:?}");
        let backend = CpuBackend::default();
        let model = NeuralConfig::default();
        assert!(choose(&field, &backend, &model).is_some());
        let le = crate::testing::smooth_field(300, 150, false);
        assert!(candidates(&le).iter().all(|s| !s.big_endian));
        let text: Vec<u8> = b"a smooth field is not a text; ".repeat(10_000);
        assert!(candidates(&text).is_empty());
        let mut x = 3u64;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| crate::testing::xorshift(&mut x) as u8)
            .collect();
        assert!(candidates(&noise).is_empty());
        assert!(candidates(&field[..100]).is_empty());
    }
}
