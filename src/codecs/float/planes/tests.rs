use super::*;
use crate::testing::xorshift;
use prior::{prior_level, LEVELS, WINDOW};

/// Deterministic float-like data: gaussian-ish magnitudes via a sum of uniforms.
fn weights(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed;
    let mut next = move || (xorshift(&mut x) >> 11) as f64 / (1u64 << 53) as f64;
    (0..n)
        .map(|_| ((next() + next() + next() - 1.5) * 0.05) as f32)
        .collect()
}

fn to_bytes(dtype: DType, w: &[f32]) -> Vec<u8> {
    let mut out = Vec::new();
    for &v in w {
        match dtype {
            DType::F32 => out.extend_from_slice(&v.to_le_bytes()),
            DType::F64 => out.extend_from_slice(&(v as f64).to_le_bytes()),
            DType::BF16 => out.extend_from_slice(&((v.to_bits() >> 16) as u16).to_le_bytes()),
            // Truncated fp8 of the value times 64 (weights of about 0.05 spread over the
            // exponents as scaled fp8 weights do).
            DType::F8E4M3 => out.push(fp8(v * 64.0, 3, 7)),
            DType::F8E5M2 => out.push(fp8(v * 64.0, 2, 15)),
            DType::F16 => {
                // Truncating conversion is enough for test data: exponent rebias + mantissa.
                let b = v.to_bits();
                let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
                let h = if e <= 0 {
                    0
                } else {
                    ((e as u32) << 10) | ((b >> 13) & 0x3ff)
                };
                out.extend_from_slice(&((h | (b >> 16) & 0x8000) as u16).to_le_bytes());
            }
        }
    }
    out
}

/// `x` as fp8 with `mantissa` bits and exponent bias `bias`, truncated (no overflow here).
fn fp8(x: f32, mantissa: u32, bias: i32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs();
    if a < 2f32.powi(1 - bias) {
        return sign | (a / 2f32.powi(1 - bias - mantissa as i32)) as u8;
    }
    let e = a.log2().floor() as i32;
    let m = ((a / 2f32.powi(e) - 1.0) * (1 << mantissa) as f32) as u8;
    sign | ((e + bias) as u8) << mantissa | m.min((1 << mantissa) - 1)
}

/// Every dtype the planes codec takes.
const ALL: [DType; 6] = [
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
    DType::F8E4M3,
    DType::F8E5M2,
];

#[test]
fn the_output_is_seen_in_order_as_written() {
    // Every piece of the output once, in order, the tail included, for each layout.
    for (dtype, n, tail) in [
        (DType::F32, 9000, 3),
        (DType::BF16, 100, 1),
        (DType::F64, 5000, 0),
    ] {
        let mut data = to_bytes(dtype, &weights(n, 7));
        data.extend((0..tail).map(|i| i as u8 + 1));
        let packed = encode_with(&data, dtype, crate::simd::kernels());
        let (mut out, mut seen) = (vec![9u8; 3], Vec::new());
        let mut pieces = 0;
        let see = &mut |piece: &[u8]| {
            seen.extend_from_slice(piece);
            pieces += 1;
        };
        decode_as(&packed, data.len(), &mut out, see).unwrap();
        // Appended to what the buffer held.
        assert_eq!(out[..3], [9; 3]);
        assert_eq!(out[3..], data);
        assert_eq!(seen, data);
        assert!(pieces > 1);
    }
}

#[test]
fn roundtrips_every_dtype_and_compresses() {
    let w = weights(50_000, 5);
    for dtype in ALL {
        let mut data = to_bytes(dtype, &w);
        for extra in [0usize, 1] {
            data.extend(std::iter::repeat_n(0x5a, extra));
            let packed = encode(&data, dtype);
            assert_eq!(decode(&packed, data.len()).unwrap(), data, "{dtype:?}");
            assert!(
                packed.len() < data.len(),
                "{dtype:?}: {} >= {}",
                packed.len(),
                data.len()
            );
        }
    }
    for n in [0usize, 1, 2, 3, 7] {
        let data: Vec<u8> = (0..n as u8).collect();
        let packed = encode(&data, DType::F32);
        assert_eq!(decode(&packed, n).unwrap(), data);
    }
}

/// The documented symbol order through the generic rANS encoder: the stream every
/// encoder kernel must write.
fn reference_stream<const W: usize, const EB: u32>(data: &[u8]) -> Vec<u8> {
    use crate::entropy::rans::Sym;
    let mut f = BitLayout {
        bits: 8 * W as u32,
        ebits: EB,
        signed: false,
    };
    let sv = survey::<W>(data, f);
    f.signed = sv.signed;
    let mut ctx = Contexts::from_base((sv.median as u32).saturating_sub(BELOW_MEDIAN) as u8);
    let sym = |packed: u32, bits: u32| Sym {
        start: packed & 0xffff,
        freq: packed >> 16,
        bits,
    };
    let n = data.len() / W;
    let ways = ways_for(n);
    let mut tables = Tables::new(f, false);
    tables.seed(&Prior::from_survey(&sv, tables.m_syms));
    let mut enc = rans::Encoder::new(2 * n, ways);
    let (mut i, mut k) = (0usize, 0u32);
    let mut start = [rans::LOW; rans::WAYS];
    while i < n {
        let end = (i + batch_len(k)).min(n);
        let em: Vec<u16> = data[i * W..end * W]
            .chunks_exact(W)
            .map(|v| f.split(read::<W>(v)).0)
            .collect();
        if end == n {
            // The residuals of the last batch's last values other than +0.0.
            let rest: Vec<u64> = data[i * W..end * W]
                .chunks_exact(W)
                .map(read::<W>)
                .filter(|&v| v != 0)
                .map(|v| f.split(v).1)
                .collect();
            let v = carry::count(ways, f.rbits(), rest.len());
            start = carry::states(rest[rest.len() - v..].iter().copied(), f.rbits(), ways);
        }
        let mut contexts = Vec::new();
        for group in em.chunks(ways) {
            let c = ctx.next as usize;
            contexts.push(c as u8);
            for (l, &v) in group.iter().enumerate() {
                let ee = tables.e_sym(c, (v >> 4) as usize);
                enc.put(
                    sym(if ee >> 16 != 0 { ee } else { tables.escape(c) }, E_BITS),
                    l,
                );
            }
            for (l, &v) in group.iter().enumerate() {
                if tables.e_sym(c, (v >> 4) as usize) >> 16 == 0 {
                    enc.put(sym((v >> 4) as u32 | 1 << 16, RAW_BITS), l);
                }
            }
            for (l, &v) in group.iter().enumerate() {
                if v != ZERO_EM {
                    let m = tables.m_enc[(v >> 4) as usize][v as usize & 15];
                    enc.put(sym(m, M_BITS), l);
                }
            }
            ctx.follow_group(group);
        }
        let span = tables.count_batch(&em, &contexts, ways, i);
        tables.end_batch(span);
        i = end;
        k += 1;
    }
    let mut out = Vec::new();
    enc.finish_from(&start, &mut out);
    out
}

/// The rANS stream inside a payload (no tail).
fn stream_of(payload: &[u8]) -> &[u8] {
    // Tag, count, tail length, ways, sign mode, context base; then the prior.
    let m_syms = if payload[7] == 1 { 16 } else { 8 };
    let at = 9 + Prior::read(&payload[9..], m_syms).unwrap().1;
    let len = u32::from_le_bytes(payload[at + 4..at + 8].try_into().unwrap()) as usize;
    &payload[at + 8..at + 8 + len]
}

/// Weights with never-seen exponents in both halves of many 32-value groups, +0.0 (its
/// own symbol) and -0.0 (not) here and there.
fn with_escapes(n: usize) -> Vec<u8> {
    let w = weights(n, 11);
    let mut bits: Vec<u32> = w.iter().map(|v| v.to_bits()).collect();
    for (i, b) in bits.iter_mut().enumerate() {
        if i % 37 == 5 || i % 1000 < 40 {
            *b = 0;
        } else if i % 101 == 7 {
            *b = 0x8000_0000;
        }
    }
    let rare = (0u32..256).filter(|e| !(100..=127).contains(e));
    for (k, e) in rare.enumerate() {
        let at = 64 + 32 * (k / 2) + if k % 2 == 0 { 3 } else { 20 };
        bits[at] = bits[at] & 0x807f_ffff | e << 23;
    }
    bits.iter().flat_map(|b| b.to_le_bytes()).collect()
}

/// Weights in rows of 256 whose scales differ by powers of two (as output channels of a
/// layer do), so that the exponent contexts change from group to group.
fn scaled_rows(n: usize) -> Vec<f32> {
    let mut w = weights(n, 31);
    for (i, v) in w.iter_mut().enumerate() {
        *v *= (2f32).powi((i / 256 % 6) as i32 - 3);
    }
    w
}

/// Rows of 256 scaled by 2^-15 to 2^14: 33 to 64 exponents from the lowest to the
/// highest (the decoder's second way to look up slot ranges).
fn wide_rows(n: usize) -> Vec<f32> {
    let mut w = weights(n, 37);
    for (i, v) in w.iter_mut().enumerate() {
        *v *= (2f32).powi((i / 256 % 30) as i32 - 15);
    }
    w
}

/// Weights with every 13th value scaled down by up to `2^-(depth - 1)`: the block's
/// exponents span more than 64 (or 128) as they come.
fn outliers(n: usize, depth: usize) -> Vec<f32> {
    let mut w = weights(n, 41);
    for (i, v) in w.iter_mut().enumerate().step_by(13) {
        *v *= (2f32).powi(-((i / 13 % depth) as i32));
    }
    w
}

#[test]
fn local_scale_is_modelled() {
    // The same values with the rows' scales in order and shuffled: only the exponent
    // contexts tell them apart (the order-0 statistics are identical).
    let rows = scaled_rows(200_000);
    let mut shuffled = rows.clone();
    let mut x = 5u64;
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, xorshift(&mut x) as usize % (i + 1));
    }
    let a = encode(&to_bytes(DType::BF16, &rows), DType::BF16).len();
    let b = encode(&to_bytes(DType::BF16, &shuffled), DType::BF16).len();
    // Statically the context is worth 0.46 of the exponent's 3.2 bits here (of about 11
    // bits per value); 0.03 * 11 = 0.33 bits of it must show.
    assert!(a * 100 < b * 97, "{a} vs {b}");
}

#[test]
fn every_kernel_encodes_the_documented_stream() {
    // 32 and 64 ways.
    let f16s = to_bytes(DType::F16, &weights(30_007, 3));
    let f32s = with_escapes(70_001);
    let big = with_escapes(270_003);
    let signed = to_bytes(DType::F16, &skewed_signs(40_000));
    let rows = to_bytes(DType::F32, &scaled_rows(150_001));
    for kernel in Kernels::supported() {
        let got = encode_with(&rows, DType::F32, kernel);
        assert!(
            stream_of(&got) == reference_stream::<4, 8>(&rows),
            "{kernel:?}"
        );
        for data in [&f16s, &signed] {
            let got = encode_with(data, DType::F16, kernel);
            assert!(
                stream_of(&got) == reference_stream::<2, 5>(data),
                "{kernel:?}"
            );
        }
        for data in [&f32s, &big] {
            let got = encode_with(data, DType::F32, kernel);
            assert!(
                stream_of(&got) == reference_stream::<4, 8>(data),
                "{kernel:?}"
            );
        }
    }
}

/// Weights three quarters of which are positive: the sign is worth coding with `M`.
fn skewed_signs(n: usize) -> Vec<f32> {
    let mut w = weights(n, 21);
    for (i, v) in w.iter_mut().enumerate() {
        if i % 4 != 0 {
            *v = v.abs();
        }
    }
    w
}

#[test]
fn sampled_blocks_count_every_other_group_past_the_threshold() {
    let f = BitLayout {
        bits: 32,
        ebits: 8,
        signed: true,
    };
    // Exponent 120 throughout; group g of 32 values has `M` = g mod 16.
    let em: Vec<u16> = (0..MAX_BATCH)
        .map(|i| ((120 << 4) | (i / 32 % 16)) as u16)
        .collect();
    let ctx = vec![0u8; MAX_BATCH / 32];
    for (at, half) in [
        (SAMPLE_FROM - MAX_BATCH, false),
        (SAMPLE_FROM, true),
        (3 * SAMPLE_FROM, true),
    ] {
        let mut tables = Tables::new(f, false);
        let span = tables.count_batch(&em, &ctx, 32, at);
        tables.end_batch(span);
        let want = if half { MAX_BATCH / 2 } else { MAX_BATCH };
        assert_eq!(tables.e_total[0] as usize, want, "{at}");
        let odd_counted = (1..16).step_by(2).any(|m| tables.m_counts[120][m] > 0);
        assert_eq!(odd_counted, !half, "{at}");
    }
}

#[test]
fn sparse_blocks_round_trip() {
    // +0.0 in every batch (two values in five), -0.0 here and there; both sign layouts.
    let mut x = 77u64;
    for mut w in [weights(60_000, 5), skewed_signs(60_000)] {
        for v in w.iter_mut() {
            match xorshift(&mut x) % 20 {
                0..8 => *v = 0.0,
                8 => *v = -0.0,
                _ => {}
            }
        }
        for dtype in ALL {
            let data = to_bytes(dtype, &w);
            let packed = encode(&data, dtype);
            for kernel in Kernels::supported() {
                let back = decode_with(&packed, data.len(), kernel);
                assert!(back.unwrap() == data, "{dtype:?} {kernel:?}");
            }
        }
    }
}

#[test]
fn residuals_carried_by_the_start_states_round_trip() {
    // Blocks shorter than a group, at the way-count threshold, ending with a batch of a
    // few values or of +0.0 only (nothing to carry).
    for n in [
        1,
        2,
        17,
        100,
        4_097,
        WIDE_FROM - 1,
        WIDE_FROM,
        WIDE_FROM + 3,
        20_480,
    ] {
        for zero_tail in [0, 5, 3_000] {
            let mut w = weights(n, n as u64);
            let len = w.len();
            w[len - zero_tail.min(len)..]
                .iter_mut()
                .for_each(|v| *v = 0.0);
            for dtype in [DType::BF16, DType::F32, DType::F64, DType::F8E4M3] {
                let data = to_bytes(dtype, &w);
                let packed = encode(&data, dtype);
                for kernel in Kernels::supported() {
                    let back = decode_with(&packed, data.len(), kernel);
                    assert!(
                        back.unwrap() == data,
                        "{n} {zero_tail} {dtype:?} {kernel:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn sign_mode_follows_the_data() {
    for (w, signed) in [(weights(50_000, 8), 0), (skewed_signs(50_000), 1)] {
        let data = to_bytes(DType::F32, &w);
        let packed = encode(&data, DType::F32);
        // tag, count, tail length, ways, then the plane layout byte.
        assert_eq!(packed[7], signed);
        assert_eq!(decode(&packed, data.len()).unwrap(), data);
    }
    // An fp8 value's sign is its whole residual: never coded with `M`, and a payload that
    // says otherwise is refused.
    let data = to_bytes(DType::F8E4M3, &skewed_signs(50_000));
    let mut packed = encode(&data, DType::F8E4M3);
    assert_eq!(packed[7], 0);
    assert_eq!(decode(&packed, data.len()).unwrap(), data);
    packed[7] = 1;
    assert!(decode(&packed, data.len()).is_err());
}

#[test]
fn every_kernel_decodes_the_same() {
    let f16s = to_bytes(DType::F16, &weights(30_007, 3));
    let f32s = with_escapes(70_000);
    let big = with_escapes(270_000);
    let signed = to_bytes(DType::BF16, &skewed_signs(100_000));
    let fp8 = to_bytes(DType::F8E4M3, &scaled_rows(100_000));
    let rows = to_bytes(DType::F16, &scaled_rows(100_000));
    let rows32 = to_bytes(DType::F32, &scaled_rows(300_000));
    let wide = to_bytes(DType::F32, &wide_rows(200_000));
    // Exponent windows of 65 to 128, and of more than 128.
    let deep = to_bytes(DType::F32, &outliers(100_000, 90));
    let deeper = to_bytes(DType::F32, &outliers(100_000, 140));
    let cases = [
        (&deep, DType::F32),
        (&deeper, DType::F32),
        (&wide, DType::F32),
        (&rows, DType::F16),
        (&rows32, DType::F32),
        (&f16s, DType::F16),
        (&f32s, DType::F32),
        (&big, DType::F32),
        (&signed, DType::BF16),
        (&fp8, DType::F8E4M3),
    ];
    for (data, dtype) in cases {
        let packed = encode_with(data, dtype, crate::simd::kernels());
        for kernel in Kernels::supported() {
            let back = decode_with(&packed, data.len(), kernel).unwrap();
            assert!(back == *data, "{kernel:?}");
        }
    }
}

#[test]
fn reused_tables_decode_like_fresh_ones() {
    // Blocks with and without the sign in `M`, of different scales, one after another
    // on one thread (reusing the last block's tables) and each on a fresh thread.
    let blocks = [
        to_bytes(DType::F32, &skewed_signs(30_000)),
        to_bytes(DType::F32, &scaled_rows(30_000)),
        to_bytes(DType::F32, &skewed_signs(20_000)),
        to_bytes(DType::F32, &weights(25_000, 13)),
    ];
    let packed: Vec<Vec<u8>> = blocks.iter().map(|b| encode(b, DType::F32)).collect();
    assert_ne!(packed[0][7], packed[1][7], "sign modes must differ");
    for _ in 0..2 {
        for (p, b) in packed.iter().zip(&blocks) {
            assert!(decode(p, b.len()).unwrap() == *b);
            let fresh = std::thread::scope(|s| s.spawn(|| decode(p, b.len())).join());
            assert!(fresh.unwrap().unwrap() == *b);
        }
    }
}

#[test]
fn invariant_low_bits_are_found() {
    // f32 values widened from bf16: the low 16 bits are all zero.
    let w = weights(40_000, 9);
    let data: Vec<u8> = w
        .iter()
        .flat_map(|v| f32::from_bits(v.to_bits() & 0xffff_0000).to_le_bytes())
        .collect();
    let packed = encode(&data, DType::F32);
    assert_eq!(decode(&packed, data.len()).unwrap(), data);
    // About 10.7 bits per value are left (exponent and sign + 7 mantissa bits).
    assert!(
        packed.len() * 28 < data.len() * 10,
        "{} bytes",
        packed.len()
    );
}

#[test]
fn random_damage_never_panics() {
    let mut x = 77u64;
    let mut rnd = move || xorshift(&mut x);
    // 32 and 64 ways; damage in the rANS stream reaches the vector kernels' bounds.
    let cases = [
        (DType::F16, 6000),
        (DType::F32, 6000),
        (DType::F64, 6000),
        (DType::F32, 70_000),
        (DType::BF16, 140_000),
    ];
    for (dtype, n) in cases {
        let data = to_bytes(dtype, &weights(n, 4));
        let packed = encode_with(&data, dtype, crate::simd::kernels());
        for _ in 0..if n > 10_000 { 60 } else { 400 } {
            let mut bad = packed.clone();
            for _ in 0..1 + rnd() % 4 {
                let i = rnd() as usize % bad.len();
                bad[i] ^= 1 << (rnd() % 8);
            }
            if rnd() % 4 == 0 {
                bad.truncate(rnd() as usize % bad.len());
            }
            // Either an error or some bytes of the right length; never a panic; and the
            // same from every kernel.
            let got = decode_with(&bad, data.len(), Kernels::Scalar);
            if let Ok(d) = &got {
                assert_eq!(d.len(), data.len());
            }
            for kernel in Kernels::supported() {
                let fast = decode_with(&bad, data.len(), kernel);
                assert!(
                    got.as_ref().ok() == fast.as_ref().ok(),
                    "{kernel:?} disagrees"
                );
                assert_eq!(got.is_ok(), fast.is_ok());
            }
        }
    }
}

#[test]
fn priors_read_back_and_bad_ones_are_errors() {
    let data = with_escapes(20_000);
    let f = BitLayout {
        bits: 32,
        ebits: 8,
        signed: false,
    };
    let sv = survey::<4>(&data, f);
    for m_syms in [8, 16] {
        let p = Prior::from_survey(&sv, m_syms);
        assert!(p.e.len() <= WINDOW && p.e.iter().any(|&q| q > 10), "{p:?}");
        let mut out = Vec::new();
        p.write(&mut out);
        assert_eq!(Prior::read(&out, m_syms).unwrap(), (p, out.len()));
        for cut in 0..out.len() {
            assert!(Prior::read(&out[..cut], m_syms).is_err());
        }
    }
    // Exponents past 255.
    assert!(Prior::read(
        &[
            200, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        ],
        8
    )
    .is_err());
    // Levels are nearest on a log scale and never 0 for a count.
    assert_eq!(prior_level(1, 1 << 30), 1);
    assert_eq!(prior_level(0, 10), 0);
    assert_eq!(prior_level(10, 10), 15);
    assert_eq!(
        prior_level(10, 40 * 10),
        LEVELS.iter().position(|&l| l == 116).unwrap() as u8
    );
}

#[test]
fn damaged_payloads_are_errors() {
    let data = to_bytes(DType::F32, &weights(10_000, 2));
    let packed = encode(&data, DType::F32);
    for cut in [0, 1, 5, 6, 20, packed.len() / 2, packed.len() - 1] {
        assert!(decode(&packed[..cut], data.len()).is_err(), "cut {cut}");
    }
    assert!(decode(&packed, data.len() + 4).is_err());
    let mut flipped = packed.clone();
    flipped[40] ^= 0x10;
    if let Ok(d) = decode(&flipped, data.len()) {
        assert_ne!(d, data);
    }
}
