//! Whether a general block is smooth 16- or 32-bit fields, and in which shape the field codec
//! should code it. A cheap test on the middle of the block comes first: its values' keys lie much
//! closer to their left neighbour's than to their median (fields of a physical model: 5-7 bits
//! closer per value; trained weights, text and code: about 1 bit or less). Only then are the
//! row width and byte layout searched, the shapes tried on a slice with the fast predictor,
//! and the best checked with the block's own model.

use crate::codecs::cm::{Backend, CmConfig};
use crate::codecs::field::{self, residual_config, zigzag, Shape};

/// Values in the middle of a block that the smoothness test and the width search look at.
const PROBE: usize = 16 << 10;
/// Widest row searched for.
const SEARCH: usize = 4096;
/// Fewest values in a block for the test to mean anything.
const MIN_VALUES: usize = 1024;
/// Bits per value by which the left neighbours must beat the median for a block to count as
/// smooth: 32-bit values, 16-bit values (a raster's noise is a larger share of fewer bits).
const SMOOTH_BITS: [u64; 2] = [4, 3];
/// Bytes from the middle of the block that each shape is tried on with the fast predictor, at
/// most; a block under four times as long gives a quarter of itself.
const TRIAL: usize = 128 << 10;
/// Bytes from the centre of each quarter of the block on which the best shape is checked with
/// the block's own model (one slice from the middle took binary/mr, where its middle is not
/// like the rest).
const CHECK: usize = 16 << 10;
/// Share of a block under `32 * CHECK` bytes that the four slices of the check take, as a
/// divisor: the trials on a small block would otherwise cost more than coding it.
const CHECK_SHARE: usize = 8;
/// Fewest bytes of a trial or check slice.
const MIN_SLICE: usize = 2 << 10;

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

/// The keys of `data`'s middle as `bytes`-byte values, with their byte order and the first
/// value's place (16-bit values only), if they look like a smooth field: in the order and from
/// the place where the last `PROBE` values lie closest to their neighbours (a field of round
/// values read in the wrong order has small keys, but not close ones), they lie much closer
/// to them than to their median.
fn smoothest(data: &[u8], bytes: u8) -> Option<(Vec<u32>, bool, u8)> {
    let probe = middle(data, bytes as usize * (PROBE + SEARCH + 1));
    if probe.len() < bytes as usize * MIN_VALUES {
        return None;
    }
    // 32-bit values are read from the block's first byte only: from another place, the halves
    // of coarse values can lie closer than the values do, and the field goes unseen.
    let places = if bytes == 2 { 0..2 } else { 0..1 };
    let (keys, (left, spread), big_endian, skip) = places
        .flat_map(|skip| [(false, skip), (true, skip)])
        .filter_map(|(be, skip)| {
            let keys = field::keys(&probe[skip as usize..], bytes, be);
            let d = distances(&keys[keys.len().saturating_sub(PROBE)..])?;
            Some((keys, d, be, skip))
        })
        .min_by_key(|c| c.1 .0)?;
    let compared = PROBE.min(keys.len() - 1) as u64;
    let need = SMOOTH_BITS[(bytes == 2) as usize] * compared;
    (spread >= left + need).then_some((keys, big_endian, skip))
}

/// Candidate shapes for `data`, a general block, for each value size (32 bits first) at which
/// its middle looks like a smooth field: rows of width 1 (extrapolation along the values) and
/// of the width whose plane predictor fits the probe best, each as values and as planes.
pub fn candidates(data: &[u8]) -> Vec<Shape> {
    let mut shapes = Vec::new();
    for bytes in [4u8, 2] {
        let Some((keys, big_endian, skip)) = smoothest(data, bytes) else {
            continue;
        };
        let n = keys.len();
        // The width whose plane predictor leaves the smallest residuals over the probe's last
        // values (all of which have a row above them).
        let from = n - PROBE.min(n / 2);
        let cost = |w: usize| -> u64 {
            (from..n)
                .map(|i| {
                    bits(zigzag(
                        keys[i].wrapping_sub(field::predict(|j| keys[j], i, w)),
                        bytes,
                    ))
                })
                .sum()
        };
        let width = (2..=SEARCH.min(from - 1))
            .min_by_key(|&w| cost(w))
            .unwrap_or(1);
        for width in [1, width as u32] {
            for planes in [true, false] {
                let s = Shape {
                    bytes,
                    big_endian,
                    planes,
                    width,
                    skip,
                };
                if !shapes.contains(&s) {
                    shapes.push(s);
                }
            }
        }
    }
    shapes
}

/// The shape in which the field codec promises to beat the context-mixing codec's configuration
/// `config` on `data`, or `None`: the candidates tried on a slice with the fast predictor, and the
/// best of each value size checked on smaller slices, its residuals with the model that would code
/// them and the slices as they are with `config` itself (the fast predictor favours residuals on
/// some blocks that the full model codes better as they are, and one size over the other on some
/// that it does not).
pub fn choose(data: &[u8], backend: &dyn Backend, config: &CmConfig) -> Option<Shape> {
    let shapes = candidates(data);
    if shapes.is_empty() {
        return None;
    }
    let size = |bytes: &[u8], config: &CmConfig| backend.encode(bytes, config, &|_| {}).len();
    let slice = middle(data, TRIAL.min(data.len() / 4).max(MIN_SLICE));
    let fast = CmConfig::for_level(1);
    let plain = size(slice, &fast);
    let tried: Vec<(Shape, usize)> = shapes
        .into_iter()
        .map(|s| (s, size(&field::forward(slice, s), &fast)))
        .filter(|&(_, n)| n < plain)
        .collect();
    let best = |bytes: u8| {
        tried
            .iter()
            .filter(|c| c.0.bytes == bytes)
            .min_by_key(|c| c.1)
            .map(|c| c.0)
    };
    let piece = CHECK.min(data.len() / 4 / CHECK_SHARE).max(MIN_SLICE) & !3;
    let check = quarters(data, piece);
    let plain = size(&check, &config.without_pack());
    let residual = residual_config(config);
    [best(4), best(2)]
        .into_iter()
        .flatten()
        .map(|s| (s, size(&field::forward(&check, s), &residual)))
        .filter(|&(_, n)| n < plain)
        .min_by_key(|c| c.1)
        .map(|c| c.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::cm::CpuBackend;

    #[test]
    fn residuals_mix_leanly_up_to_the_default_level() {
        let at = |level| residual_config(&CmConfig::for_level(level));
        assert!(at(crate::codecs::cm::DEFAULT_LEVEL).params.lean && at(3).params.lean);
        assert!(!at(7).params.lean && !at(9).params.lean);
        assert_eq!(at(9).params, CmConfig::for_level(9).params);
    }

    #[test]
    fn fields_are_found_and_text_and_noise_are_not() {
        let field = crate::testing::smooth_field(300, 150, true);
        let shapes = candidates(&field);
        assert!(shapes.iter().all(|s| s.big_endian));
        assert!(shapes.iter().any(|s| s.width == 150), "{shapes:?}");
        let backend = CpuBackend::default();
        let config = CmConfig::default();
        assert!(choose(&field, &backend, &config).is_some());
        let le = crate::testing::smooth_field(300, 150, false);
        assert!(candidates(&le).iter().all(|s| !s.big_endian));
        // A 16-bit raster is read as 16-bit values, little-endian, in its rows.
        let raster = crate::testing::smooth_raster(160, 200);
        let shapes = candidates(&raster);
        assert!(
            shapes.iter().all(|s| s.bytes == 2 && !s.big_endian),
            "{shapes:?}"
        );
        assert!(shapes.iter().any(|s| s.width == 200), "{shapes:?}");
        assert!(choose(&raster, &backend, &config).is_some());
        // Behind a header of odd length, its values start a byte in.
        let odd = [&b"raster:"[..], &raster[..]].concat();
        let shapes = candidates(&odd);
        assert!(
            !shapes.is_empty() && shapes.iter().all(|s| s.bytes == 2 && s.skip == 1),
            "{shapes:?}"
        );
        assert!(candidates(&field).iter().all(|s| s.bytes == 4));
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
