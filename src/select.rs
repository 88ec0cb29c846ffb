//! Which codec a block gets. Each candidate's size is predicted from a cheap look at the block
//! (a zstd pass and an order-0 entropy over a sample; the tensor codec itself, which is fast),
//! and the slow neural model is only run where its predicted gain pays for its time.

use crate::format::Codec;
use crate::model::ModelConfig;
use crate::pipeline::{Backend, ProgressFn};
use crate::tensor::{self, Kind};

/// Bytes of the block looked at to predict sizes (taken as evenly spaced pieces).
const SAMPLE: usize = 64 << 10;
const PIECES: usize = 4;
/// zstd level of the fast general codec.
const ZSTD_LEVEL: i32 = 9;
/// The neural model runs only if its predicted size is at least this much smaller (per mille)
/// than the best fast codec's: it costs ~1000x their time.
const NEURAL_MIN_GAIN: f64 = 0.01;
/// Largest tensor block the neural model is tried on (it runs at ~60 KB/s per core).
const NEURAL_TENSOR_MAX: usize = 1 << 20;
/// Share of the redundancy left by zstd that the neural model is predicted to remove as well
/// (measured on the shared corpora: sep's archives are 16% smaller than zstd -19's in total).
const NEURAL_EXTRA: f64 = 0.15;

/// Evenly spaced pieces of `data`, `SAMPLE` bytes in all (or all of it if smaller).
fn sample(data: &[u8]) -> Vec<u8> {
    if data.len() <= SAMPLE {
        return data.to_vec();
    }
    let piece = SAMPLE / PIECES;
    let step = (data.len() - piece) / (PIECES - 1);
    (0..PIECES)
        .flat_map(|i| &data[i * step..i * step + piece])
        .copied()
        .collect()
}

/// Order-0 entropy of `data` as a fraction of its size.
fn order0(data: &[u8]) -> f64 {
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

/// zstd-compressed `data`, or `None` if zstd fails (it does not on valid input).
fn zstd(data: &[u8]) -> Option<Vec<u8>> {
    zstd::bulk::compress(data, ZSTD_LEVEL).ok()
}

/// Size of `data` under zstd as a fraction, predicted from a sample.
fn zstd_fraction(data: &[u8]) -> f64 {
    let s = sample(data);
    match zstd(&s) {
        Some(z) if !s.is_empty() => z.len() as f64 / s.len() as f64,
        _ => 1.0,
    }
}

/// Whether the neural model's predicted size beats the fast codecs' by enough to pay for its
/// time, given zstd's predicted fraction `z`.
fn worth_neural(data: &[u8], z: f64) -> bool {
    let fast = z.min(1.0);
    let neural = 1.0 - (1.0 + NEURAL_EXTRA) * (1.0 - z.min(order0(&sample(data))));
    neural < fast - NEURAL_MIN_GAIN
}

/// Whether a general block holding `data` would be given to the neural model.
pub fn neural_predicted(data: &[u8]) -> bool {
    worth_neural(data, zstd_fraction(data))
}

/// Codes `data` (a block holding `kind`) with the codec predicted to be best; returns the
/// codec and payload (empty for `Stored`: the payload is the data itself).
pub fn code_block(
    data: &[u8],
    kind: Kind,
    backend: &dyn Backend,
    model: &ModelConfig,
    progress: ProgressFn,
) -> (Codec, Vec<u8>) {
    let mut best = (Codec::Stored, Vec::new());
    // A codec is kept only if it beats everything so far, storing included.
    let consider = |codec: Codec, payload: Vec<u8>, best: &mut (Codec, Vec<u8>)| {
        let best_len = if best.0 == Codec::Stored {
            data.len()
        } else {
            best.1.len()
        };
        if payload.len() < best_len {
            *best = (codec, payload);
        }
    };
    let z = zstd_fraction(data);
    match kind {
        Kind::Tensor(dtype) => {
            consider(Codec::Tensor, tensor::encode(data, dtype), &mut best);
            // zstd only where the sample says it could win (e.g. runs of repeated values).
            let current = if best.0 == Codec::Stored {
                data.len()
            } else {
                best.1.len()
            };
            if z * (data.len() as f64) < current as f64 {
                if let Some(p) = zstd(data) {
                    consider(Codec::Zstd, p, &mut best);
                }
                // Structured arrays (not weights): the neural model may do better still, but
                // only on small tensors, so that weight files keep tensor-path speed.
                if data.len() <= NEURAL_TENSOR_MAX && worth_neural(data, z) {
                    consider(
                        Codec::Model,
                        backend.encode(data, model, &|_| {}),
                        &mut best,
                    );
                }
            }
            progress(data.len() as u64);
        }
        Kind::General => {
            if worth_neural(data, z) {
                consider(
                    Codec::Model,
                    backend.encode(data, model, progress),
                    &mut best,
                );
            } else {
                if z < 1.0 {
                    if let Some(p) = zstd(data) {
                        consider(Codec::Zstd, p, &mut best);
                    }
                }
                progress(data.len() as u64);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predictions_follow_the_data() {
        let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog; "
            .iter()
            .cycle()
            .take(200_000)
            .copied()
            .collect();
        assert!(zstd_fraction(&text) < 0.05);
        assert!(order0(&text) < 0.6);
        let mut x = 1u64;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(zstd_fraction(&noise) > 0.99);
        assert!(order0(&noise) > 0.99);
        assert!(!neural_predicted(&noise));
        assert!(neural_predicted(&text));
        assert_eq!(sample(&noise).len(), SAMPLE);
        assert_eq!(sample(&noise[..100]).len(), 100);
    }
}
