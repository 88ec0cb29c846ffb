//! The policy for the blocks of tensors: float arrays (the planes codec and the layers over it
//! for dequantized and structured arrays, the byte-table codec for fp8, zstd where the sample
//! promises), quantized integers, and tensor-file headers.

use super::candidates::{
    lzma, zstd, zstd_strong, Best, Setup, LZMA_TENSOR_MIN, STRONG_MAX, ZSTD_LEVEL,
};
use super::sample::{repeats, sample, zstd_fraction};
use crate::codecs::float::bytes::ByteTable;
use crate::codecs::float::copies::Copies;
use crate::codecs::float::recent::{self, Recent};
use crate::codecs::float::scaled::Scaled;
use crate::codecs::float::tensor_header::TensorHeader;
use crate::codecs::float::{self, DType, Planes};
use crate::codecs::lzma::Effort;
use crate::codecs::BlockCodec;
use crate::format::Codec;

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
pub(super) const COPIES_MIN: f64 = 0.1;
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
/// Blocks of scaled integers predict the planes codec's size from their first
/// `1 / SCALED_SAMPLE`, and skip it where scaled integers are below `SCALED_MARGIN` of that.
const SCALED_SAMPLE: usize = 8;
const SCALED_MARGIN: f64 = 0.8;
/// How much larger than the planes codec's the byte-table codec's payload of an fp8 block may
/// be and still be chosen (it decodes about three times as fast).
const BYTES_MARGIN: f64 = 0.01;

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

/// The candidates of a float block that the layers over the planes codec found.
struct Layers {
    scaled: Option<Vec<u8>>,
    copies: Option<Vec<u8>>,
    repeated: Option<float::repeated::Coded>,
}

/// Tries the layers over the planes codec: scaled integers, copies, repeated values, each
/// where the block's sample (`share` of repeated windows) says it may apply.
fn layers(data: &[u8], dtype: DType, share: f64, spare: &mut Vec<u8>) -> Layers {
    // The layers look for values that recur among 2^16 or more; an fp8 value recurs by
    // nature, so fp8 blocks take the planes codec or zstd.
    if dtype.width() == 1 {
        return Layers {
            scaled: None,
            copies: None,
            repeated: None,
        };
    }
    // Values that are integers times a scale (dequantized weights) as integers.
    let scaled = Scaled { dtype }.encode(data);
    // Arrays built from a formula as copies of earlier values, where many windows repeat and
    // scaled integers did not apply (dequantized weights repeat too). A 16-bit table's pairs
    // of values rarely repeat even where its values do (silero's STFT basis in f16: 0.027, as
    // low as trained weights), so there copies are first tried on a slice.
    let copies = match scaled.is_none()
        && (share >= COPIES_MIN || dtype.width() == 2 && copies_promise(data, dtype))
    {
        true => Copies { dtype }.encode(data),
        false => None,
    };
    // Values that recur exactly among mostly distinct ones (never-trained classes, dead
    // channels), where the sample has them and neither scaled integers nor copies applied.
    let plain = scaled.is_none() && copies.is_none();
    let repeated = match plain && (REPEATED_MIN..REPEATED_MAX).contains(&share) {
        true => match float::repeated::encode_chosen(data, dtype, std::mem::take(spare)) {
            Ok(r) => Some(r),
            Err(back) => {
                *spare = back;
                None
            }
        },
        false => None,
    };
    Layers {
        scaled,
        copies,
        repeated,
    }
}

/// Whether a layer's payload is so far under the planes codec's size, predicted from the
/// block's first part, that the planes codec need not run (a quarter of the encode time of
/// such blocks).
fn planes_hopeless(data: &[u8], dtype: DType, l: &Layers) -> bool {
    let predicted = || {
        let cut = (data.len() / SCALED_SAMPLE / dtype.width()) * dtype.width();
        let part = float::encode(&data[..cut], dtype).len() * SCALED_SAMPLE;
        (cut > 0).then_some(part as f64)
    };
    let under =
        |p: &Vec<u8>, margin: f64| predicted().is_some_and(|part| (p.len() as f64) < margin * part);
    l.scaled.as_ref().is_some_and(|p| under(p, SCALED_MARGIN))
        || l.copies.as_ref().is_some_and(|p| under(p, COPIES_MARGIN))
        || l.repeated
            .as_ref()
            .and_then(|r| {
                r.plain_estimate
                    .map(|e| (r.payload.len() as f64) < REPEATED_MARGIN * e)
            })
            .unwrap_or(false)
}

/// A block of float values of `dtype`.
pub(super) fn floats(
    data: &[u8],
    dtype: DType,
    setup: &Setup,
    best: &mut Best,
    mut spare: Vec<u8>,
) {
    let layered = dtype.width() > 1;
    let s = sample(data);
    let share = repeats(&s, dtype.width());
    let l = layers(data, dtype, share, &mut spare);
    if !planes_hopeless(data, dtype, &l) {
        Planes { dtype }.encode_into(data, &mut spare);
        best.consider(Codec::Planes, spare);
    }
    // One-byte values from one table decode three times as fast as the planes codec's, which
    // keeps them only where it is `BYTES_MARGIN` smaller.
    if !layered {
        if let Some(b) = ByteTable.encode(data) {
            let near = (b.len() as f64) < (1.0 + BYTES_MARGIN) * best.len() as f64;
            if near && b.len() < data.len() {
                best.codec = Codec::ByteTable;
                best.payload = b;
            }
        }
    }
    let Layers {
        scaled,
        copies,
        repeated,
    } = l;
    if let Some(r) = repeated {
        best.consider(Codec::Repeated, r.payload);
    }
    // A value the planes codec codes at its average cost (a miss, below).
    let values = (data.len() / dtype.width()).max(1);
    let miss_bits = 8.0 * best.len() as f64 / values as f64;
    if let Some(p) = scaled {
        best.consider(Codec::Scaled, p);
    }
    // Values that repeat exactly (dequantized weights) as ranks among recent ones; not tried
    // where scaled integers already won (every measured block: it codes their levels without
    // a palette).
    let size = match best.codec {
        _ if !layered => None,
        Codec::Scaled => None,
        _ => recent::choose(data, dtype, miss_bits, best.len()),
    };
    if let Some(size) = size {
        best.try_codec(&Recent { dtype, size });
    }
    if let Some(p) = copies {
        best.consider(Codec::Copies, p);
    }
    floats_zstd(data, &s, share, best);
    (setup.progress)(data.len() as u64);
}

/// zstd on a float block, only where the sample says it could win (structured arrays, runs
/// of repeated values). The sample at level 9: at 3, silero's STFT basis (zstd -19: 4.4x)
/// looked like 1.18x and went to the planes codec (1.22x).
fn floats_zstd(data: &[u8], s: &[u8], share: f64, best: &mut Best) {
    // Where the best so far is under half the block and under half of what zstd's fastest
    // level makes of the sample, level 9 is not tried either (blocks of scaled integers);
    // nor where its windows hardly repeat (trained weights).
    let small = 2 * best.len() < data.len();
    let hopeless = share < REPEATS_MIN
        || small && zstd_fraction(s, 1) * data.len() as f64 > 2.0 * best.len() as f64;
    // Where copies won, zstd's matches are plentiful, and its strongest level goes further
    // past the sample's level than elsewhere.
    let reach = match (best.codec, data.len() <= STRONG_MAX) {
        (Codec::Copies, true) => COPIES_REACH_STRONG,
        (Codec::Copies, false) => COPIES_REACH,
        _ => 1.0,
    };
    if !hopeless && zstd_fraction(s, ZSTD_LEVEL) * (data.len() as f64) < reach * best.len() as f64 {
        best.try_codec(&zstd_strong(data));
    }
}

/// A block of a quantized tensor's one-byte integers.
pub(super) fn quantized(data: &[u8], setup: &Setup, best: &mut Best) {
    // Quantized weights hold little beyond their values' frequencies.
    best.try_codec(&ByteTable);
    // Values whose neighbours predict them (a per-tensor scale over rows of different
    // magnitudes, a table) are LZMA's, whose literals see the previous byte; above its range,
    // zstd's where the sample's windows repeat and its level-9 size promises less.
    if (LZMA_TENSOR_MIN..=STRONG_MAX).contains(&data.len()) {
        if !setup.cm.params.fast {
            lzma(best, Effort::Quick);
        }
    } else {
        let s = sample(data);
        if repeats(&s, 1) >= REPEATS_MIN
            && zstd_fraction(&s, ZSTD_LEVEL) * (data.len() as f64) < best.len() as f64
        {
            best.try_codec(&zstd_strong(data));
        }
    }
    (setup.progress)(data.len() as u64);
}

/// A tensor file's header: plain zstd only where the header codec's rewrite does not apply
/// (its text is the header's with fewer digits, coded at a higher level).
pub(super) fn header(data: &[u8], setup: &Setup, best: &mut Best) {
    match TensorHeader.encode(data) {
        Some(h) => best.consider(Codec::TensorHeader, h),
        None => best.try_codec(&zstd()),
    }
    (setup.progress)(data.len() as u64);
}
