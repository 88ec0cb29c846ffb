use super::*;
use crate::testing::xorshift;

/// `rows` rows of `cols` f32 values: integers in `-levels..=levels` (about normal) times
/// a scale per row.
fn dequantized(rows: usize, cols: usize, levels: u64, seed: u64) -> Vec<u8> {
    let mut x = seed;
    let mut out = Vec::new();
    for _ in 0..rows {
        let scale = 0.001 + (xorshift(&mut x) % 1000) as f32 * 1e-5;
        for _ in 0..cols {
            let q = (0..4)
                .map(|_| xorshift(&mut x) % (levels / 2 + 1))
                .sum::<u64>();
            let q = q as f32 - (2 * (levels / 2)) as f32;
            out.extend_from_slice(&(q * scale).to_le_bytes());
        }
    }
    out
}

fn roundtrip(data: &[u8]) -> usize {
    let mut p = Vec::new();
    encode_into(data, Form::F32, &mut p);
    let mut out = Vec::new();
    decode(&p, data.len(), &mut out).unwrap();
    assert!(out == data, "{} bytes", data.len());
    p.len()
}

#[test]
fn levels_round_trip() {
    for k in [-K_MAX, -5, -1, 0, 1, 7, K_MAX] {
        assert_eq!(unzigzag(zigzag(k)), k);
        assert!(LEVEL + zigzag(k) < SYMBOLS);
    }
    let data = dequantized(50, 300, 15, 7);
    for cut in [0, 1, 4, 5, 127, 999, data.len() - 3, data.len()] {
        roundtrip(&data[..cut]);
    }
    // Values that fit no scale (noise, NaNs, -0.0) code as misses.
    let mut x = 9;
    let mut noise: Vec<u8> = (0..40_000).map(|_| xorshift(&mut x) as u8).collect();
    noise[..4].copy_from_slice(&(-0.0f32).to_le_bytes());
    noise[4..8].copy_from_slice(&f32::NAN.to_le_bytes());
    roundtrip(&noise);
    let mut mixed = data.clone();
    mixed.extend_from_slice(&noise);
    mixed.extend_from_slice(&data);
    roundtrip(&mixed);
}

#[test]
fn scaled_integers_code_small_and_are_recognised() {
    // 29 levels (std 4.6) and a scale per row of 768: about 4.2 bits a value.
    let data = dequantized(300, 768, 15, 3);
    assert_eq!(plausible(&data, DType::F32), [Form::F32]);
    let bytes = roundtrip(&data);
    assert!(bytes * 7 < data.len(), "{bytes} of {}", data.len());
    let mut x = 5;
    let noise: Vec<u8> = (0..100_000).map(|_| xorshift(&mut x) as u8).collect();
    assert!(plausible(&noise, DType::F32).is_empty());
}

/// `data` (f32 values) as `form`'s 16-bit type, rounded its way.
fn narrowed(data: &[u8], form: Form) -> Vec<u8> {
    data.chunks_exact(4)
        .flat_map(|b| {
            let x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (form.narrow(x) as u16).to_le_bytes()
        })
        .collect()
}

/// `groups` groups of `len` f32 values: integers in `-8..=7` times a scale per group
/// that has 11 significant bits (an f16), as Q4_0 weights dequantized.
/// With `signed`, every other scale is negative (as Q4_0's `max / -8` where the largest
/// value is positive), which makes its zeros -0.0.
fn q4_groups(groups: usize, len: usize, seed: u64, signed: bool) -> Vec<u8> {
    let mut x = seed;
    let mut out = Vec::new();
    for g in 0..groups {
        let scale = super::super::rounding::f16_widen(super::super::rounding::f16_nearest(
            0.001 + (xorshift(&mut x) % 9000) as f32 * 1e-6,
        ));
        let scale = match signed && g % 2 == 1 {
            true => -scale,
            false => scale,
        };
        for _ in 0..len {
            let q = (0..4).map(|_| xorshift(&mut x) % 7).sum::<u64>() as i64 - 12;
            out.extend_from_slice(&(q.clamp(-8, 7) as f32 * scale).to_le_bytes());
        }
    }
    out
}

#[test]
fn rounded_forms_round_trip_and_code_small() {
    let rows = dequantized(64, 768, 15, 11);
    let groups = q4_groups(1500, 32, 12, true);
    for form in [Form::Bf16Nearest, Form::Bf16Truncated, Form::F16Nearest] {
        for (what, f32s, most) in [("rows", &rows, 0.4), ("groups of 32", &groups, 0.45)] {
            let data = narrowed(f32s, form);
            let chosen = choose(&data, form.dtype());
            assert!(chosen.is_some(), "{form:?} {what}: not recognised");
            let mut p = Vec::new();
            encode_into(&data, form, &mut p);
            let mut out = Vec::new();
            decode(&p, data.len(), &mut out).unwrap();
            assert!(out == data, "{form:?} {what}");
            assert!(
                (p.len() as f64) < most * data.len() as f64,
                "{form:?} {what}: {} of {}",
                p.len(),
                data.len()
            );
            // Cut anywhere, with noise after: still exact.
            let mut x = 4;
            let mut mixed = data[..data.len() / 3 + 1].to_vec();
            mixed.extend((0..5001).map(|_| xorshift(&mut x) as u8));
            encode_into(&mixed, form, &mut p);
            // Appended after what `out` held.
            decode(&p, mixed.len(), &mut out).unwrap();
            assert!(out[..data.len()] == data, "{form:?} {what}: overwritten");
            assert!(out[data.len()..] == mixed, "{form:?} {what} mixed");
        }
    }
    // Values rounded to nearest are told from values cut where they differ.
    let data = narrowed(&groups, Form::Bf16Nearest);
    assert_eq!(choose(&data, DType::BF16), Some(Form::Bf16Nearest));
    let mut x = 3;
    let noise: Vec<u8> = (0..100_000).map(|_| xorshift(&mut x) as u8).collect();
    assert_eq!(choose(&noise, DType::BF16), None);
    assert_eq!(choose(&noise, DType::F16), None);
}

/// `n` f32 values: integers in `-127..=127` (uniform) times a scale that changes every
/// `group` values, to any of 1,000 with 24 significant bits.
fn wide_levels(n: usize, group: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    let mut scale = 0.0;
    (0..n)
        .map(|i| {
            if i % group == 0 {
                scale = 1e-4 * (1.0 + (xorshift(&mut x) % 1000) as f32 / 1000.0);
            }
            ((xorshift(&mut x) % 255) as f32 - 127.0) * scale
        })
        .flat_map(f32::to_le_bytes)
        .collect()
}

#[test]
fn blocks_that_lose_on_the_trial_are_not_tried_whole() {
    // Levels of 8 bits under a new scale every 32 values, in bf16: they look like scaled
    // integers, but a level costs about what the planes codec pays for the value, and
    // the scales come on top.
    let data = narrowed(&wide_levels(6 * TRIAL, 32, 5), Form::Bf16Nearest);
    assert_eq!(choose(&data, DType::BF16), Some(Form::Bf16Nearest));
    assert!(!promising(&data, Form::Bf16Nearest, None));
    assert!(encode_chosen(&data, DType::BF16).is_none());
    // The same under a scale per 256 values code smaller, and are coded.
    let data = narrowed(&wide_levels(6 * TRIAL, 256, 5), Form::Bf16Nearest);
    assert!(promising(&data, Form::Bf16Nearest, None));
    let p = encode_chosen(&data, DType::BF16).expect("scaled integers");
    let mut out = Vec::new();
    decode(&p, data.len(), &mut out).unwrap();
    assert!(out == data);
    // A block no longer than the trial is tried whole (its payloads are compared whole).
    let short = narrowed(&wide_levels(TRIAL, 32, 5), Form::Bf16Nearest);
    assert!(promising(&short, Form::Bf16Nearest, None));
}

#[test]
fn scales_are_coded_where_smaller() {
    // Many scales with few significant bits (f16s, groups of 32): through the planes codec.
    let data = q4_groups(400, 32, 5, false);
    let mut p = Vec::new();
    encode_into(&data, Form::F32, &mut p);
    assert_eq!(p[10], SCALES_CODED);
    // Negative scales (zeros -0.0) are coded as such: about the same size, not paying for
    // a zero of the wrong sign in every other group.
    let signed = q4_groups(400, 32, 5, true);
    let mut q = Vec::new();
    encode_into(&signed, Form::F32, &mut q);
    assert!(
        100 * q.len() < 101 * p.len(),
        "{} against {}",
        q.len(),
        p.len()
    );
    let mut out = Vec::new();
    decode(&q, signed.len(), &mut out).unwrap();
    assert!(out == signed);
    // One scale: as it is.
    let data = dequantized(1, 3000, 15, 8);
    encode_into(&data, Form::F32, &mut p);
    assert_eq!(p[10], SCALES_RAW);
    out.clear();
    decode(&p, data.len(), &mut out).unwrap();
    assert!(out == data);
    let mut bad = p.clone();
    bad[10] = 7;
    assert!(decode(&bad, data.len(), &mut out).is_err());
}

#[test]
fn corrupt_payloads_are_errors() {
    let f32s = dequantized(20, 200, 15, 9);
    for form in [Form::F32, Form::Bf16Nearest, Form::F16Nearest] {
        let data = match form {
            Form::F32 => f32s.clone(),
            _ => narrowed(&f32s, form),
        };
        let mut p = Vec::new();
        encode_into(&data, form, &mut p);
        let mut out = Vec::new();
        for cut in [0, 1, 5, 9, 14, p.len() / 2, p.len() - 1] {
            assert!(decode(&p[..cut], data.len(), &mut out).is_err());
        }
        let longer = data.len() + form.dtype().width();
        assert!(decode(&p, longer, &mut out).is_err());
        for at in (0..p.len()).step_by(5) {
            let mut q = p.clone();
            q[at] ^= 0x10;
            // Any outcome but a panic; a decode that succeeds is caught by the block
            // checksum.
            let _ = decode(&q, data.len(), &mut out);
        }
    }
}
