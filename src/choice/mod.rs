//! Which codec a block gets. Each candidate's size is predicted from a cheap look at the block
//! (a zstd pass and an order-0 entropy over a sample; the planes codec itself, which is fast),
//! and the slow context-mixing model is only run where its predicted gain pays for its time: never in
//! a file with tensors, whose speed is the tensor path's.

pub mod base;
mod field;
mod sample;
pub mod text;

pub use sample::cm_predicted;

use crate::codecs::cm::{Backend, CmConfig};
use crate::codecs::float::{self, DType};
use crate::codecs::lzma::{Effort, Literals};
use crate::codecs::{self, zstd as zstd_codec, ProgressFn};
use crate::containers::Kind;
use crate::format::{cm_fits, Codec};
use sample::{
    aligned_sample, float_guess, repeats, sample, zstd_fraction, Guess, Prediction, CM_MIN_GAIN,
};

/// zstd level of the fast general codec.
const ZSTD_LEVEL: i32 = 9;
/// zstd level for the small general blocks of tensor files (structured arrays, mixed small
/// tensors): the strongest; it decodes as fast as any level (headers take `ZSTD_LEVEL`: the
/// header codec beats both on every weight file measured, and level 19 costs ~1 ms even there).
const ZSTD_STRONG: i32 = 19;
/// A tensor block's zstd sample is only taken where at least this share of its windows
/// repeat (`repeats`). Measured on 471 tensor blocks (weights, dequantized weights, the binary
/// corpora read as each float type): every block zstd won had at least 0.034; trained weights
/// had at most 0.005 (f32) and 0.0197 (bf16). Counting takes half the time of the sample.
const REPEATS_MIN: f64 = 0.02;
/// A tensor block's sample share of repeated values (`repeats`) from which the repeated-values
/// layer is tried: 0.016 on PP-OCRv4 rec's classifier weights, at most 0.005 on trained f32
/// weights measured; up from `REPEATED_MAX` values repeat as dequantized weights do (scaled
/// integers, recent values).
const REPEATED_MIN: f64 = 0.008;
const REPEATED_MAX: f64 = 0.5;
/// The planes codec is skipped where the repeated-values layer is below this share of the
/// size predicted for it.
const REPEATED_MARGIN: f64 = 0.997;
/// A tensor block's sample share of repeated values (`repeats`) from which the copies layer
/// is tried: it keeps a block only where at most half its values are literals (first
/// sightings, mostly), but the sample's pieces see far fewer repeats than the whole block
/// (silero's STFT basis: 0.23 against 0.83; trained weights: at most 0.02).
const COPIES_MIN: f64 = 0.1;
/// Share of a 16-bit block on which copies are tried first (`copies_promise`), and the
/// fewest bytes tried (a table's rows must fit several times).
const COPIES_SLICE: usize = 64;
const COPIES_SLICE_MIN: usize = 16 << 10;
/// The share of the planes codec's size under which copies on a slice promise enough to be
/// tried on the whole block: a table's first rows are mostly literals (silero's STFT basis in
/// f16: 0.52 on the slice, 0.12 on the whole), trained weights make more than 0.85.
const COPIES_PROMISE: f64 = 0.75;
/// The planes codec is skipped where copies are below this share of the size predicted for it
/// (silero's STFT basis: 0.11).
const COPIES_MARGIN: f64 = 0.5;
/// Where copies won, zstd is still tried if the sample's zstd size is under this multiple of
/// theirs (blocks coded at `ZSTD_STRONG`, and others).
const COPIES_REACH_STRONG: f64 = 2.0;
const COPIES_REACH: f64 = 1.25;
/// LZMA is tried on a context-mixing block that the context-mixing codec made under `1 / LZMA_SHARE` of its
/// size: where LZMA won (masked ocean grids, tables of strings: 9-17x), the context-mixing codec made
/// more than 9x; on text and code (3-5x) it never wins.
const LZMA_SHARE: usize = 5;
/// ... and where LZMA could make the block under what the context-mixing codec made, if it made this
/// share of the size predicted for zstd from the sample (measured: 0.37-0.75).
const LZMA_REACH: f64 = 0.5;
/// Fewest bytes of a general block in a tensor file on which LZMA is tried after zstd however
/// little zstd made of it: on the small weights and protobuf of an ONNX model it makes 5-10%
/// less than zstd -19; on smaller blocks its fixed cost per try outweighs that.
const LZMA_TENSOR_MIN: usize = 8 << 10;
/// Largest block coded at `ZSTD_STRONG` (it compresses at a few MB/s).
const STRONG_MAX: usize = 1 << 20;
/// Blocks of scaled integers predict the planes codec's size from their first
/// `1 / SCALED_SAMPLE`, and skip it where scaled integers are below `SCALED_MARGIN` of that.
const SCALED_SAMPLE: usize = 8;
const SCALED_MARGIN: f64 = 0.8;

/// General blocks of at least this many bytes (outside tensor files) are also tried as arrays
/// of each float type (`float_guess`).
const GUESS_MIN: usize = 16 << 10;
/// Added to the share of a general block's sample that the planes codec makes (`float_guess`)
/// before the context-mixing codec's predicted share is set against it: a margin for that prediction,
/// which is pessimistic (raw PP-OCRv4 det f32 weights: predicted 0.919, made 0.841, the tensor
/// codec 0.839; binary/geo, 32-bit floats of another format: predicted 0.627, made 0.443,
/// where the planes codec's sample made 0.610).
const GUESS_HANDICAP: f64 = 0.03;
/// A delta block (`--patch-from`) under this share of the block's bytes is kept without trying
/// the other codecs: they make trained weights no smaller than 0.6 of them.
const DELTA_SURE: f64 = 0.4;
/// How much larger than the planes codec's the byte-table codec's payload of an fp8 block may
/// be and still be chosen (it decodes about three times as fast).
const BYTES_MARGIN: f64 = 0.01;
/// Bytes from the middle of a block that `cm_trial` codes.
const CM_TRIAL: usize = 16 << 10;

/// The fraction of a slice from the middle of `data` (at least `CM_TRIAL` bytes long)
/// that the context-mixing codec's `model` makes of it, starting fresh.
fn cm_trial(data: &[u8], backend: &dyn Backend, model: &CmConfig) -> f64 {
    let len = CM_TRIAL.min(data.len());
    let at = ((data.len() - len) / 2) & !7;
    let slice = &data[at..at + len];
    backend.encode(slice, &model.without_pack(), &|_| {}).len() as f64 / len.max(1) as f64
}

/// How far under its order-0 entropy zstd may take a sample that still counts as showing no
/// structure beyond its values' statistics (raw trained weights: zstd 0.4-0.7% above it; the
/// middle of each file of the binary corpora, whose structure the context-mixing codec finds: 4%
/// (binary/geo) to 74% under).
const FLAT: f64 = 0.01;

/// Whether the copies layer makes under `COPIES_PROMISE` of what the planes codec makes of a
/// slice of `data` (its start: `1 / COPIES_SLICE` of it, at least `COPIES_SLICE_MIN` bytes).
fn copies_promise(data: &[u8], dtype: DType) -> bool {
    let w = dtype.width();
    let cut = (data.len() / COPIES_SLICE)
        .max(COPIES_SLICE_MIN)
        .min(data.len())
        / w
        * w;
    let part = &data[..cut];
    float::copies::encode_chosen(part, dtype).is_some_and(|c| {
        (c.len() as f64) < COPIES_PROMISE * float::encode(part, dtype).len() as f64
    })
}

/// zstd-compressed `data`, or `None` if zstd fails (it does not on valid input).
fn zstd(data: &[u8]) -> Option<Vec<u8>> {
    zstd_codec::compress(data, ZSTD_LEVEL)
}

/// `zstd` at `ZSTD_STRONG` for blocks of at most `STRONG_MAX` bytes, else at `ZSTD_LEVEL`.
fn zstd_strong(data: &[u8]) -> Option<Vec<u8>> {
    match data.len() <= STRONG_MAX {
        true => zstd_codec::compress(data, ZSTD_STRONG),
        false => zstd(data),
    }
}
/// Tries the LZMA codec on `data`; where it wins, tries it again with literals by position in
/// 32-bit words (masked float grids: 2% smaller).
fn lzma(data: &[u8], best: &mut Best, effort: Effort) {
    for literals in [Literals::Bytes, Literals::Words] {
        match codecs::lzma::encode(data, literals, effort) {
            Some(l) if l.len() < best.len() => best.consider(Codec::Lzma, l),
            _ => return,
        }
    }
}

/// The smallest coding of a block found so far (storing it to start with).
struct Best<'a> {
    data: &'a [u8],
    codec: Codec,
    payload: Vec<u8>,
}

impl Best<'_> {
    /// Archived size of the current choice.
    fn len(&self) -> usize {
        match self.codec {
            Codec::Stored => self.data.len(),
            _ => self.payload.len(),
        }
    }

    /// Keeps `payload` if it is smaller than the current choice.
    fn consider(&mut self, codec: Codec, payload: Vec<u8>) {
        if payload.len() < self.len() {
            self.codec = codec;
            self.payload = payload;
        }
    }
}

/// What a block is, besides its bytes.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    /// What it holds.
    pub kind: Kind,
    /// Whether it is from a file with tensors.
    pub tensor_file: bool,
    /// Where its values start in the base file (`--patch-from`) and those values, if the block
    /// lies in a tensor that matched one of the base's.
    pub base: Option<(u64, &'a [u8])>,
}

/// Codes `data` (a block at `place`) with the codec predicted to be best; returns the codec and payload (empty for `Stored`: the payload
/// is the data itself). `spare` is a buffer whose room the payload may take.
pub fn code_block(
    data: &[u8],
    place: Place,
    backend: &dyn Backend,
    cm: &CmConfig,
    progress: ProgressFn,
    mut spare: Vec<u8>,
) -> (Codec, Vec<u8>) {
    let Place {
        kind, tensor_file, ..
    } = place;
    let mut best = Best {
        data,
        codec: Codec::Stored,
        payload: Vec::new(),
    };
    // Against the same tensor of the base; where that takes under `DELTA_SURE` of the block,
    // nothing else is tried.
    if let (Some((at, base)), Kind::Tensor(dtype)) = (place.base, kind) {
        if let Some(d) = codecs::delta::encode(data, base, at, dtype.width()) {
            best.consider(Codec::Delta, d);
            if (best.len() as f64) < DELTA_SURE * data.len() as f64 {
                progress(data.len() as u64);
                return (best.codec, best.payload);
            }
        }
    }
    match kind {
        Kind::Tensor(dtype) => {
            // The layers over the planes codec look for values that recur among 2^16 or more;
            // an fp8 value recurs by nature, so fp8 blocks take the planes codec or zstd.
            let layered = dtype.width() > 1;
            // Values that are integers times a scale (dequantized weights) as integers.
            let scaled = match layered {
                true => float::scaled::encode_chosen(data, dtype),
                false => None,
            };
            let s = sample(data);
            let share = repeats(&s, dtype.width());
            // Arrays built from a formula as copies of earlier values, where many windows
            // repeat and scaled integers did not apply (dequantized weights repeat too).
            // A 16-bit table's pairs of values rarely repeat even where its values do (silero's
            // STFT basis in f16: 0.027, as low as trained weights), so there copies are first
            // tried on a slice.
            let copies = match layered
                && scaled.is_none()
                && (share >= COPIES_MIN || dtype.width() == 2 && copies_promise(data, dtype))
            {
                true => float::copies::encode_chosen(data, dtype),
                false => None,
            };
            // Values that recur exactly among mostly distinct ones (never-trained classes, dead
            // channels), where the sample has them and neither scaled integers nor copies
            // applied.
            let plain = layered && scaled.is_none() && copies.is_none();
            let repeated = match plain && (REPEATED_MIN..REPEATED_MAX).contains(&share) {
                true => match float::repeated::encode_chosen(data, dtype, spare) {
                    Ok(r) => {
                        spare = Vec::new();
                        Some(r)
                    }
                    Err(back) => {
                        spare = back;
                        None
                    }
                },
                false => None,
            };
            // The planes codec, unless its size predicted from the block's first part is well
            // above what scaled integers made (a quarter of the encode time of such blocks), or
            // predicted from the plain values of the repeated-values layer above what the layer
            // made.
            // Likewise where copies are well under the size predicted (a formula's table).
            let predicted = || {
                let cut = (data.len() / SCALED_SAMPLE / dtype.width()) * dtype.width();
                let part = float::encode(&data[..cut], dtype).len() * SCALED_SAMPLE;
                (cut > 0).then_some(part as f64)
            };
            let under = |p: &Vec<u8>, margin: f64| {
                predicted().is_some_and(|part| (p.len() as f64) < margin * part)
            };
            let sure = scaled.as_ref().is_some_and(|p| under(p, SCALED_MARGIN))
                || copies.as_ref().is_some_and(|p| under(p, COPIES_MARGIN))
                || repeated
                    .as_ref()
                    .and_then(|r| {
                        r.plain_estimate
                            .map(|e| (r.payload.len() as f64) < REPEATED_MARGIN * e)
                    })
                    .unwrap_or(false);
            if !sure {
                float::encode_into(data, dtype, &mut spare);
                best.consider(Codec::Planes, spare);
            }
            // One-byte values from one table decode three times as fast as the planes codec's,
            // which keeps them only where it is `BYTES_MARGIN` smaller.
            if !layered {
                let b = float::bytes::encode(data);
                let near = (b.len() as f64) < (1.0 + BYTES_MARGIN) * best.len() as f64;
                if near && b.len() < data.len() {
                    best = Best {
                        data,
                        codec: Codec::Bytes,
                        payload: b,
                    };
                }
            }
            if let Some(r) = repeated {
                best.consider(Codec::Repeated, r.payload);
            }
            // A value the planes codec codes at its average cost (a miss, below).
            let values = (data.len() / dtype.width()).max(1);
            let miss_bits = 8.0 * best.len() as f64 / values as f64;
            if let Some(p) = scaled {
                best.consider(Codec::Scaled, p);
            }
            // Values that repeat exactly (dequantized weights) as ranks among recent ones; not
            // tried where scaled integers already won (every measured block: it codes their
            // levels without a palette).
            let recent = match best.codec {
                _ if !layered => None,
                Codec::Scaled => None,
                _ => float::recent::choose(data, dtype, miss_bits, best.len()),
            };
            if let Some(size) = recent {
                let mut p = Vec::new();
                float::recent::encode_into(data, dtype, size, &mut p);
                best.consider(Codec::Recent, p);
            }
            if let Some(p) = copies {
                best.consider(Codec::Copies, p);
            }
            // zstd only where the sample says it could win (structured arrays, runs of
            // repeated values).
            // The sample at level 9: at 3, silero's STFT basis (zstd -19: 4.4x) looked like 1.18x and
            // went to the planes codec (1.22x).
            // Where the best so far is under half the block and under half of what zstd's
            // fastest level makes of the sample, level 9 is not tried either (blocks of scaled
            // integers).
            // Nor where its windows hardly repeat (trained weights).
            let small = 2 * best.len() < data.len();
            let hopeless = share < REPEATS_MIN
                || small && zstd_fraction(&s, 1) * data.len() as f64 > 2.0 * best.len() as f64;
            // Where copies won, zstd's matches are plentiful, and its strongest level goes
            // further past the sample's level than elsewhere.
            let reach = match (best.codec, data.len() <= STRONG_MAX) {
                (Codec::Copies, true) => COPIES_REACH_STRONG,
                (Codec::Copies, false) => COPIES_REACH,
                _ => 1.0,
            };
            if !hopeless
                && zstd_fraction(&s, ZSTD_LEVEL) * (data.len() as f64) < reach * best.len() as f64
            {
                if let Some(z) = zstd_strong(data) {
                    best.consider(Codec::Zstd, z);
                }
            }
            progress(data.len() as u64);
        }
        Kind::Quantized => {
            // Quantized weights hold little beyond their values' frequencies.
            let b = float::bytes::encode(data);
            if b.len() < data.len() {
                best.consider(Codec::Bytes, b);
            }
            // Values whose neighbours predict them (a per-tensor scale over rows of different
            // magnitudes, a table) are LZMA's, whose literals see the previous byte; above its
            // range, zstd's where the sample's windows repeat and its level-9 size promises less.
            if (LZMA_TENSOR_MIN..=STRONG_MAX).contains(&data.len()) {
                if !cm.params.fast {
                    lzma(data, &mut best, Effort::Quick);
                }
            } else {
                let s = sample(data);
                if repeats(&s, 1) >= REPEATS_MIN
                    && zstd_fraction(&s, ZSTD_LEVEL) * (data.len() as f64) < best.len() as f64
                {
                    if let Some(z) = zstd_strong(data) {
                        best.consider(Codec::Zstd, z);
                    }
                }
            }
            progress(data.len() as u64);
        }
        Kind::TensorHeader => {
            // Plain zstd only where the header codec's rewrite does not apply: its text is the
            // header's with fewer digits, coded at a higher level.
            match float::tensor_header::encode(data) {
                Some(h) => best.consider(Codec::TensorHeader, h),
                None => {
                    if let Some(z) = zstd(data) {
                        best.consider(Codec::Zstd, z);
                    }
                }
            }
            progress(data.len() as u64);
        }
        Kind::General => {
            let p = Prediction::of(data);
            // Floats with no header to say so (a raw dump, a checkpoint's tensor storages):
            // where the middle of the block shows nothing beyond its values' statistics (zstd
            // finds no more than their order-0 entropy) and the planes codec, its sample size
            // taken `GUESS_HANDICAP` larger, counts as one more fast codec that the context-mixing
            // model is not predicted to beat, the context-mixing codec is skipped (trained weights). The
            // middle, because a block's edges may hold a header (a checkpoint's pickle, an
            // archive's directory) that the general sample sees much of.
            // The floats are only guessed where they can decide: the middle is flat, or the
            // context-mixing model is not predicted to run anyway (a text goes to it without them).
            let middle = (!tensor_file && data.len() >= GUESS_MIN).then(|| aligned_sample(data));
            let centre = middle.as_deref().map(Prediction::of_sample);
            let flat = centre.as_ref().is_some_and(|c| c.zstd >= c.order0 - FLAT);
            let predicted = p.worth_cm();
            let floats = match &middle {
                Some(s) if flat || !predicted => float_guess(s),
                _ => None,
            };
            // The estimates see bytes, not values: where they give the block to the planes
            // codec, a slice from its middle coded with the block's model decides (16-bit
            // integers that the planes codec takes for floats: the model sees each high
            // byte's neighbours; trained weights stay with the planes codec), if the model
            // makes the slice smaller at all (random bytes stay stored).
            let worth_cm = match (floats, &centre) {
                (Some((_, fraction)), Some(c))
                    if flat && !c.worth_cm_against(fraction + GUESS_HANDICAP) =>
                {
                    cm_trial(data, backend, cm) < fraction.min(1.0 - CM_MIN_GAIN)
                }
                _ => predicted,
            };
            // Smooth 32-bit fields (a climate model's output) as residuals for the context-mixing
            // codec, where trials on slices promise more than the context-mixing codec on the block
            // itself; the float codecs below still compete. Not at the fastest level, whose
            // blocks the trials would take longer than.
            let shape = match !tensor_file && !cm.params.fast && data.len() >= GUESS_MIN {
                true => field::choose(data, backend, cm),
                false => None,
            };
            if let Some(shape) = shape {
                let model = field::residual_model(cm);
                let payload = codecs::field::encode(data, shape, backend, &model, progress);
                if cm_fits(data.len() as u64, payload.len() as u64) {
                    best.consider(Codec::Field, payload);
                }
            }
            // The field codec reported the block's progress.
            let progress: ProgressFn = match shape {
                Some(_) => &|_| {},
                None => progress,
            };
            // Never in a file with tensors: the context-mixing codec (~60 KB/s per core) would set its
            // speed (a 1.8 KB header took 6x as long as the 7 MB of weights after it).
            if !tensor_file && worth_cm && shape.is_none() {
                // The automatic pack is for text: other blocks start fresh.
                let unpacked;
                let model = match cm.text_only && !text::looks_like_text(data) {
                    true => {
                        unpacked = cm.without_pack();
                        &unpacked
                    }
                    false => cm,
                };
                let payload = backend.encode(data, model, progress);
                // A payload holding more than `CM_MAX_RATIO` bytes per byte is refused by
                // decoders (it would bound nothing); the codec pads to the limit, and should a
                // payload still break it, zstd takes the block.
                match cm_fits(data.len() as u64, payload.len() as u64) {
                    true => best.consider(Codec::Cm, payload),
                    false => {
                        if let Some(z) = zstd_strong(data) {
                            best.consider(Codec::Zstd, z);
                        }
                    }
                }
                // Where the block is very redundant, its long repeats may be an LZ77 coder's,
                // if even the sample's zstd size predicts LZMA close (not at the fastest level).
                let zstd_size = p.zstd * data.len() as f64;
                if !cm.params.fast
                    && LZMA_SHARE * best.len() < data.len()
                    && LZMA_REACH * zstd_size < best.len() as f64
                {
                    lzma(data, &mut best, Effort::Strongest);
                }
            } else {
                let mut reported = false;
                // The block as an array of the type guessed, every tensor codec in turn.
                let beats_zstd = |f: &(Guess, f64)| centre.as_ref().is_some_and(|c| f.1 < c.zstd);
                if let Some((g, _)) = floats.filter(beats_zstd) {
                    let kind = Kind::Tensor(g.dtype);
                    reported = true;
                    // A big-endian guess codes the values byte-reversed.
                    let swapped = g.big_endian.then(|| {
                        let mut s = data.to_vec();
                        float::swap_order(&mut s, g.dtype.width());
                        s
                    });
                    let values = swapped.as_deref().unwrap_or(data);
                    let place = Place {
                        kind,
                        tensor_file,
                        base: None,
                    };
                    let (codec, payload) = code_block(values, place, backend, cm, progress, spare);
                    match (g.big_endian, codec) {
                        (_, Codec::Stored) => {}
                        (false, codec) => best.consider(codec, payload),
                        // Only a float codec's payload is wrapped (zstd on the block as it is,
                        // below, stands for the others).
                        (true, Codec::Zstd) => {}
                        (true, codec) => {
                            let mut wrapped = vec![codec.tag(), g.dtype.width() as u8];
                            wrapped.extend_from_slice(&payload);
                            best.consider(Codec::Swapped, wrapped);
                        }
                    }
                }
                // zstd unless its sample predicts it larger than what the planes codecs made.
                let zstd_size = p.zstd * data.len() as f64;
                if p.zstd < 1.0 && (best.codec == Codec::Stored || zstd_size < best.len() as f64) {
                    // Tensor files take the strongest level on small blocks.
                    let z = match tensor_file {
                        true => zstd_strong(data),
                        false => zstd(data),
                    };
                    if let Some(z) = z {
                        best.consider(Codec::Zstd, z);
                    }
                }
                // LZMA where zstd found many repeats (in tensor files, up to `STRONG_MAX`), and
                // at its quick effort on the other blocks of tensor files from
                // `LZMA_TENSOR_MIN` to `STRONG_MAX` (not at the fastest level).
                let repeats = 2 * best.len() < data.len();
                let tried = match tensor_file {
                    true => data.len() <= STRONG_MAX && (repeats || data.len() >= LZMA_TENSOR_MIN),
                    false => repeats,
                };
                if best.codec == Codec::Zstd && !cm.params.fast && tried {
                    let effort = match repeats {
                        true => Effort::Strongest,
                        false => Effort::Quick,
                    };
                    lzma(data, &mut best, effort);
                }
                if !reported {
                    progress(data.len() as u64);
                }
            }
        }
    }
    (best.codec, best.payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;
    use sample::{order0, SAMPLE};

    /// A block of `kind` in a tensor file, with no base.
    fn tensor(kind: Kind) -> Place<'static> {
        Place {
            kind,
            tensor_file: true,
            base: None,
        }
    }

    /// `data` coded as a general block outside tensor files, with the default model.
    fn general(data: &[u8]) -> (Codec, Vec<u8>) {
        let backend = crate::codecs::cm::CpuBackend::default();
        code_block(
            data,
            Place {
                kind: Kind::General,
                tensor_file: false,
                base: None,
            },
            &backend,
            &CmConfig::default(),
            &|_| {},
            Vec::new(),
        )
    }

    #[test]
    fn predictions_follow_the_data() {
        let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog; "
            .iter()
            .cycle()
            .take(200_000)
            .copied()
            .collect();
        assert!(Prediction::of(&text).zstd < 0.05);
        assert!(order0(&text) < 0.6);
        let mut x = 1u64;
        let noise: Vec<u8> = (0..200_000).map(|_| xorshift(&mut x) as u8).collect();
        assert!(Prediction::of(&noise).zstd > 0.99);
        assert!(order0(&noise) > 0.99);
        assert!(!cm_predicted(&noise));
        assert!(cm_predicted(&text));
        assert_eq!(sample(&noise).len(), SAMPLE);
        assert_eq!(sample(&noise[..100]).len(), 100);
    }

    #[test]
    fn structured_tensors_go_to_copies() {
        // An STFT basis, 258 rows of 256: zstd -19 codes it at ~4x (and takes 30 times as long
        // as the planes codec), the planes codec at ~1.2x, copies of earlier values best.
        let data = crate::testing::stft_basis(256);
        let backend = crate::codecs::cm::CpuBackend::default();
        let model = CmConfig::default();
        let kind = Kind::Tensor(DType::F32);
        let (codec, payload) =
            code_block(&data, tensor(kind), &backend, &model, &|_| {}, Vec::new());
        assert_eq!(codec, Codec::Copies);
        let z = zstd_codec::compress(&data, ZSTD_STRONG).unwrap();
        assert!(
            2 * payload.len() < z.len(),
            "{} against {}",
            payload.len(),
            z.len()
        );
    }

    #[test]
    fn structured_16_bit_tensors_go_to_copies() {
        // The same basis in f16 and bf16 (truncated: the table's values still recur), whose
        // pairs of values hardly repeat in the sample: copies are found by their slice.
        let data = crate::testing::stft_basis(256);
        for dtype in [DType::F16, DType::BF16] {
            let half: Vec<u8> = data
                .chunks_exact(4)
                .flat_map(|b| {
                    let x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    match dtype {
                        DType::F16 => (float::rounding::f16_nearest(x) as u16).to_le_bytes(),
                        _ => [b[2], b[3]],
                    }
                })
                .collect();
            assert!(repeats(&sample(&half), 2) < COPIES_MIN, "{dtype:?}");
            let backend = crate::codecs::cm::CpuBackend::default();
            let model = CmConfig::default();
            let kind = Kind::Tensor(dtype);
            let (codec, _) = code_block(&half, tensor(kind), &backend, &model, &|_| {}, Vec::new());
            assert_eq!(codec, Codec::Copies, "{dtype:?}");
        }
    }

    #[test]
    fn raw_float_arrays_take_the_tensor_codecs() {
        // Weights-like f32 values (about normal, a scale per row of 512) with no header: a
        // general block outside tensor files.
        let mut x = 11u64;
        let mut scale = 0.0f32;
        let data: Vec<u8> = (0..300_000)
            .flat_map(|i| {
                if i % 512 == 0 {
                    scale = 0.01 * (1 + xorshift(&mut x) % 8) as f32;
                }
                let u: f32 = (0..4).map(|_| (xorshift(&mut x) >> 40) as f32).sum();
                (scale * (u / (1u64 << 24) as f32 - 2.0)).to_le_bytes()
            })
            .collect();
        let (g, fraction) = float_guess(&aligned_sample(&data)).expect("a guess");
        assert_eq!(
            g,
            Guess {
                dtype: DType::F32,
                big_endian: false
            }
        );
        let p = Prediction::of(&data);
        assert!(
            p.worth_cm(),
            "without the guess, the context-mixing codec would run"
        );
        assert!(!p.worth_cm_against(fraction + GUESS_HANDICAP));
        let (codec, payload) = general(&data);
        assert_eq!(codec, Codec::Planes);
        assert!(payload.len() < data.len() * 9 / 10);
        assert!(float::decode(&payload, data.len()).expect("decodes") == data);
        // The same values big-endian: found so, and coded as the little-endian ones were.
        let mut be = data.clone();
        float::swap_order(&mut be, 4);
        let (g, _) = float_guess(&aligned_sample(&be)).expect("a guess");
        assert_eq!(
            g,
            Guess {
                dtype: DType::F32,
                big_endian: true
            }
        );
        let (codec, wrapped) = general(&be);
        assert_eq!(codec, Codec::Swapped);
        assert_eq!(wrapped[..2], [Codec::Planes.tag(), 4]);
        assert_eq!(wrapped[2..], payload[..]);
        // Text is still predicted to gain from the context-mixing codec over its guess.
        let text: Vec<u8> = (0..40_000u32)
            .flat_map(|i| format!("line {} of {}; ", i * 7 % 1000, i % 13).into_bytes())
            .collect();
        let guessed = float_guess(&aligned_sample(&text)).map_or(1.0, |g| g.1 + GUESS_HANDICAP);
        assert!(Prediction::of(&text).worth_cm_against(guessed));
        // Sample pieces start at multiples of 8 bytes whatever the length.
        assert_eq!(aligned_sample(&data[..1_000_003]).len(), SAMPLE);
        assert_eq!(aligned_sample(&data[..1003]).len(), 1000);
    }

    #[test]
    fn noisy_16_bit_integers_go_to_the_context_mixing_codec() {
        // A scan's volume of big-endian 16-bit integers, each a smooth signal under noise of
        // about 10 bits: the planes codec, taking them for floats, is what the estimates
        // expect to win, but the context-mixing codec, seeing each high byte's neighbours, does.
        let mut x = 5u64;
        let data: Vec<u8> = (0..40_000u32)
            .flat_map(|i| {
                let (col, row) = ((i % 33) as f32, (i / 33) as f32);
                let noise: f32 = (0..3).map(|_| (xorshift(&mut x) % 1000) as f32).sum();
                let v = 8000.0 + 6000.0 * (col / 5.0).sin() * (row / 7.0).cos() + noise;
                (v as i16).to_be_bytes()
            })
            .collect();
        let sample = aligned_sample(&data);
        let (_, fraction) = float_guess(&sample).expect("a guess");
        let centre = Prediction::of_sample(&sample);
        assert!(centre.zstd >= centre.order0 - FLAT, "not flat");
        assert!(!centre.worth_cm_against(fraction + GUESS_HANDICAP));
        let (codec, payload) = general(&data);
        assert_eq!(codec, Codec::Cm, "{fraction}");
        assert!((payload.len() as f64) < fraction * data.len() as f64);
        let mut out = Vec::new();
        let (r, _) = crate::codecs::cm::decode(
            &payload,
            data.len(),
            CmConfig::default().params,
            None,
            Default::default(),
            &|_| {},
            &mut out,
        );
        r.expect("decodes");
        assert!(out == data);
    }

    #[test]
    fn repeats_count_earlier_windows() {
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        // Weights-like values: no window repeats; a palette of 8 values: nearly all do.
        let mut x = 7u64;
        let noise: Vec<f32> = (0..16_384)
            .map(|_| (xorshift(&mut x) as u32 >> 9) as f32 / (1u32 << 23) as f32 - 0.5)
            .collect();
        assert!(repeats(&f32s(&noise), 4) < 0.001);
        let palette: Vec<f32> = noise.iter().map(|v| (v * 8.0).round()).collect();
        assert!(repeats(&f32s(&palette), 4) > 0.99);
        // Exactly: windows 0, 1, 2 are new, the second 0 and 1 repeat; three 16-bit ones make
        // two windows of two values (the last value starts none), the second a repeat.
        assert_eq!(repeats(&f32s(&[0.0, 1.0, 2.0, 0.0, 1.0]), 4), 0.4);
        assert_eq!(repeats(&[1, 0, 1, 0, 1, 0], 2), 0.5);
        // A window equal to the free-slot marker is counted like any other.
        let ones = [0xffu8; 24];
        assert_eq!(repeats(&ones, 8), 2.0 / 3.0);
        assert_eq!(repeats(&[], 4), 0.0);
    }
}
