//! The policy for general blocks: the context-mixing codec where its predicted gain pays for
//! its time, else the fast codecs (the float codecs on an array the sample guesses, zstd,
//! LZMA); the field codec for smooth fields, which the context-mixing codec then codes.

use super::candidates::{lzma, zstd, zstd_strong, Best, Setup, LZMA_TENSOR_MIN, STRONG_MAX};
use super::sample::{aligned_sample, float_guess, Guess, Prediction, CM_MIN_GAIN};
use super::{field, tensor};
use crate::codecs::cm::Cm;
use crate::codecs::field::Field;
use crate::codecs::float::{self, swapped};
use crate::codecs::lzma::Effort;
use crate::codecs::{BlockCodec, ProgressFn};
use crate::format::Codec;

/// LZMA is tried on a block that the context-mixing codec made under `1 / LZMA_SHARE` of its
/// size: where LZMA won (masked ocean grids, tables of strings: 9-17x), the context-mixing
/// codec made more than 9x; on text and code (3-5x) it never wins.
const LZMA_SHARE: usize = 5;
/// ... and where LZMA could make the block under what the context-mixing codec made, if it
/// made this share of the size predicted for zstd from the sample (measured: 0.37-0.75).
const LZMA_REACH: f64 = 0.5;
/// General blocks of at least this many bytes (outside tensor files) are also tried as arrays
/// of each float type (`float_guess`).
const GUESS_MIN: usize = 16 << 10;
/// Added to the share of a general block's sample that the planes codec makes (`float_guess`)
/// before the context-mixing codec's predicted share is set against it: a margin for that
/// prediction, which is pessimistic (raw PP-OCRv4 det f32 weights: predicted 0.919, made 0.841,
/// the tensor codec 0.839; binary/geo, 32-bit floats of another format: predicted 0.627, made
/// 0.443, where the planes codec's sample made 0.610).
pub(super) const GUESS_HANDICAP: f64 = 0.03;
/// How far under its order-0 entropy zstd may take a sample that still counts as showing no
/// structure beyond its values' statistics (raw trained weights: zstd 0.4-0.7% above it; the
/// middle of each file of the binary corpora, whose structure the context-mixing codec finds:
/// 4% (binary/geo) to 74% under).
pub(super) const FLAT: f64 = 0.01;
/// Bytes from the middle of a block that `cm_trial` codes.
const CM_TRIAL: usize = 16 << 10;

/// The fraction of a slice from the middle of `data` (at least `CM_TRIAL` bytes long) that
/// the context-mixing codec makes of it, starting fresh.
fn cm_trial(data: &[u8], setup: &Setup) -> f64 {
    let len = CM_TRIAL.min(data.len());
    let at = ((data.len() - len) / 2) & !7;
    let slice = &data[at..at + len];
    let fresh = setup.cm.without_pack();
    let payload = setup.backend.encode(slice, &fresh, &|_| {});
    payload.len() as f64 / len.max(1) as f64
}

/// What the estimates say of a general block.
struct Estimates {
    /// zstd's and order-0's predictions for the whole block.
    whole: Prediction,
    /// The same for the middle of the block, where it was sampled.
    centre: Option<Prediction>,
    /// The float type the middle looks like, and the share the planes codec makes of it.
    floats: Option<(Guess, f64)>,
    /// Whether the context-mixing codec is predicted to pay for its time.
    worth_cm: bool,
}

/// Floats with no header to say so (a raw dump, a checkpoint's tensor storages): where the
/// middle of the block shows nothing beyond its values' statistics (zstd finds no more than
/// their order-0 entropy) and the planes codec, its sample size taken `GUESS_HANDICAP` larger,
/// counts as one more fast codec that the context-mixing model is not predicted to beat, the
/// context-mixing codec is skipped (trained weights). The middle, because a block's edges may
/// hold a header (a checkpoint's pickle, an archive's directory) that the general sample sees
/// much of. The floats are only guessed where they can decide: the middle is flat, or the
/// context-mixing model is not predicted to run anyway (a text goes to it without them).
fn estimate(data: &[u8], tensor_file: bool, setup: &Setup) -> Estimates {
    let whole = Prediction::of(data);
    let middle = (!tensor_file && data.len() >= GUESS_MIN).then(|| aligned_sample(data));
    let centre = middle.as_deref().map(Prediction::of_sample);
    let flat = centre.as_ref().is_some_and(|c| c.zstd >= c.order0 - FLAT);
    let predicted = whole.worth_cm();
    let floats = match &middle {
        Some(s) if flat || !predicted => float_guess(s),
        _ => None,
    };
    // The estimates see bytes, not values: where they give the block to the planes codec, a
    // slice from its middle coded with the block's model decides (16-bit integers that the
    // planes codec takes for floats: the model sees each high byte's neighbours; trained
    // weights stay with the planes codec), if the model makes the slice smaller at all (random
    // bytes stay stored).
    let worth_cm = match (floats, &centre) {
        (Some((_, fraction)), Some(c))
            if flat && !c.worth_cm_against(fraction + GUESS_HANDICAP) =>
        {
            cm_trial(data, setup) < fraction.min(1.0 - CM_MIN_GAIN)
        }
        _ => predicted,
    };
    Estimates {
        whole,
        centre,
        floats,
        worth_cm,
    }
}

/// A general block.
pub(super) fn general(
    data: &[u8],
    tensor_file: bool,
    setup: &Setup,
    best: &mut Best,
    spare: Vec<u8>,
) {
    let e = estimate(data, tensor_file, setup);
    // Smooth 32-bit fields (a climate model's output) as residuals for the context-mixing
    // codec, where trials on slices promise more than the context-mixing codec on the block
    // itself; the float codecs below still compete. Not at the fastest level, whose blocks
    // the trials would take longer than.
    let fast = setup.cm.params.fast;
    let shape = match !tensor_file && !fast && data.len() >= GUESS_MIN {
        true => field::choose(data, setup.backend, setup.cm),
        false => None,
    };
    if shape.is_some() {
        best.try_codec(&Field {
            shape,
            config: setup.cm,
            backend: setup.backend,
            progress: setup.progress,
        });
    }
    // The field codec reported the block's progress.
    let progress: ProgressFn = match shape {
        Some(_) => &|_| {},
        None => setup.progress,
    };
    let setup = &Setup { progress, ..*setup };
    // Never in a file with tensors: the context-mixing codec (~60 KB/s per core) would set
    // its speed (a 1.8 KB header took 6x as long as the 7 MB of weights after it).
    if !tensor_file && e.worth_cm && shape.is_none() {
        by_cm(data, &e, setup, best);
    } else {
        by_fast_codecs(data, tensor_file, &e, setup, best, spare);
    }
}

/// The context-mixing codec, and LZMA where the block is very redundant.
fn by_cm(data: &[u8], e: &Estimates, setup: &Setup, best: &mut Best) {
    // The automatic pack is for text: other blocks start fresh.
    let mut cm = setup.cm.for_block(data);
    let highest = cm.level == *crate::codecs::cm::LEVELS.end();
    // At the highest level, a block that starts fresh gets the wide model, and the bilevel
    // expert where it looks like a 1-bit image.
    if highest && cm.pack.is_none() {
        cm.to_mut().params.wide = true;
        if let Some(width) = crate::codecs::cm::bilevel_rows(data) {
            cm.to_mut().params.bilevel = width as u32;
        }
    }
    let cm = &cm;
    // The codec declines a payload of more than `CM_MAX_RATIO` bytes per byte, which
    // decoders refuse; should one come, zstd takes the block.
    let codec = Cm {
        config: cm,
        backend: setup.backend,
        progress: setup.progress,
    };
    match codec.encode(data) {
        Some(payload) => best.consider(Codec::Cm, payload),
        None => best.try_codec(&zstd_strong(data)),
    }
    // At the highest level, a block the pack does not start is also coded with the default
    // level's model, and that kept where smaller: more contexts and the online network cost a
    // little on some small binaries (obj1, sum, a fax bitmap), so the level that asks for the
    // smallest archive never makes a block larger than the default does.
    if highest && cm.pack.is_none() && cm.params.default_variant().is_some() {
        let mut default = cm.clone().into_owned();
        default.params.default_model = true;
        let quiet: ProgressFn = &|_| {};
        if let Some(payload) = (Cm {
            config: &default,
            backend: setup.backend,
            progress: quiet,
        })
        .encode(data)
        {
            best.consider(Codec::Cm, payload);
        }
    }
    // Where the block is very redundant, its long repeats may be an LZ77 coder's, if even the
    // sample's zstd size predicts LZMA close (not at the fastest level).
    let zstd_size = e.whole.zstd * data.len() as f64;
    if !setup.cm.params.fast
        && LZMA_SHARE * best.len() < data.len()
        && LZMA_REACH * zstd_size < best.len() as f64
    {
        lzma(best, Effort::Strongest);
    }
}

/// The block as an array of the float type guessed, every tensor codec in turn (a big-endian
/// guess codes the values byte-reversed, in a swapped block); whether it ran.
fn as_floats(data: &[u8], e: &Estimates, setup: &Setup, best: &mut Best, spare: Vec<u8>) -> bool {
    let beats_zstd = |f: &(Guess, f64)| e.centre.as_ref().is_some_and(|c| f.1 < c.zstd);
    let Some((g, _)) = e.floats.filter(beats_zstd) else {
        return false;
    };
    let swapped_values = g.big_endian.then(|| {
        let mut s = data.to_vec();
        float::swap_order(&mut s, g.dtype.width());
        s
    });
    let values = swapped_values.as_deref().unwrap_or(data);
    let mut floats = Best::stored(values);
    tensor::floats(values, g.dtype, setup, &mut floats, spare);
    match (g.big_endian, floats.codec) {
        (_, Codec::Stored) => {}
        (false, codec) => best.consider(codec, floats.payload),
        // Only a float codec's payload is wrapped (zstd on the block as it is, below, stands
        // for the others).
        (true, codec) => {
            if let Some(wrapped) = swapped::wrap(codec, g.dtype.width(), &floats.payload) {
                best.consider(Codec::Swapped, wrapped);
            }
        }
    }
    true
}

/// The fast codecs: the float codecs where the sample guessed floats, zstd unless predicted
/// larger, LZMA where zstd found many repeats.
fn by_fast_codecs(
    data: &[u8],
    tensor_file: bool,
    e: &Estimates,
    setup: &Setup,
    best: &mut Best,
    spare: Vec<u8>,
) {
    let reported = as_floats(data, e, setup, best, spare);
    // zstd unless its sample predicts it larger than what the float codecs made.
    let p = &e.whole;
    let zstd_size = p.zstd * data.len() as f64;
    if p.zstd < 1.0 && (best.codec == Codec::Stored || zstd_size < best.len() as f64) {
        // Tensor files take the strongest level on small blocks.
        match tensor_file {
            true => best.try_codec(&zstd_strong(data)),
            false => best.try_codec(&zstd()),
        }
    }
    // LZMA where zstd found many repeats (in tensor files, up to `STRONG_MAX`), and at its
    // quick effort on the other blocks of tensor files from `LZMA_TENSOR_MIN` to `STRONG_MAX`
    // (not at the fastest level).
    let repeats = 2 * best.len() < data.len();
    let tried = match tensor_file {
        true => data.len() <= STRONG_MAX && (repeats || data.len() >= LZMA_TENSOR_MIN),
        false => repeats,
    };
    if best.codec == Codec::Zstd && !setup.cm.params.fast && tried {
        let effort = match repeats {
            true => Effort::Strongest,
            false => Effort::Quick,
        };
        lzma(best, effort);
    }
    if !reported {
        (setup.progress)(data.len() as u64);
    }
}
