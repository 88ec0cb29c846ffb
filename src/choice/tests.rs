use super::candidates::ZSTD_STRONG;
use super::general::{FLAT, GUESS_HANDICAP};
use super::sample::{
    aligned_sample, cm_predicted, float_guess, order0, repeats, sample, Guess, Prediction, SAMPLE,
};
use super::tensor::COPIES_MIN;
use super::{code_block, Place, Setup};
use crate::codecs::cm::{CmConfig, CpuBackend};
use crate::codecs::float::{self, DType};
use crate::codecs::zstd as zstd_codec;
use crate::containers::Kind;
use crate::format::Codec;
use crate::testing::xorshift;

/// `data` at `place`, coded with the default model.
fn coded(data: &[u8], place: Place) -> (Codec, Vec<u8>) {
    let (cm, backend) = (CmConfig::default(), CpuBackend::default());
    let setup = Setup {
        cm: &cm,
        backend: &backend,
        progress: &|_| {},
    };
    code_block(data, place, &setup, Vec::new())
}

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
    coded(
        data,
        Place {
            kind: Kind::General,
            tensor_file: false,
            base: None,
        },
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
    let (codec, payload) = coded(&data, tensor(Kind::Tensor(DType::F32)));
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
        let (codec, _) = coded(&half, tensor(Kind::Tensor(dtype)));
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
