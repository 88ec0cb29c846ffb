use super::*;
use crate::testing::xorshift;

fn words(n: usize, bits: u32, invariant: u64, seed: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|i| {
            let w = xorshift(&mut x) & width_mask(bits);
            // One word in 16 breaks the invariant bits.
            if i % 16 == 5 {
                w
            } else {
                (w & !invariant) | (0xA5A5_A5A5_A5A5_A5A5 & invariant)
            }
        })
        .collect()
}

#[test]
fn plain_groups_pack_alike_on_every_path() {
    for bits in 1..=64 {
        for n in [15, 16, 17, 100, GROUP - 1, GROUP] {
            let mut x = bits as u64 * 1000 + n as u64;
            let w: Vec<u64> = (0..n)
                .map(|_| xorshift(&mut x) & width_mask(bits))
                .collect();
            let mut packed = Vec::new();
            pack_with(&w, bits, &mut packed, false);
            let mut fast = Vec::new();
            pack_with(&w, bits, &mut fast, use_bmi2());
            assert_eq!(packed, fast, "bits {bits}, {n} words");
            // Random words have no invariant bits: the group is packed plainly (mode 0).
            if bits >= 7 && n == GROUP {
                assert_eq!(packed[2], 0, "bits {bits}");
            }
            let mut back = vec![0u64; n];
            unpack_with(&packed, bits, &mut back, use_bmi2()).unwrap();
            assert_eq!(back, w);
        }
    }
}

#[test]
fn bit_fields_read_back_and_count_their_bytes() {
    let mut out = vec![7u8];
    let mut w = BitWriter::new(&mut out);
    let fields = [
        (5u64, 3u32),
        (0x1_2345, 17),
        (1, 1),
        (0xdead_beef_f00d, 48),
        (3, 2),
    ];
    for &(v, n) in &fields {
        w.put(v, n);
    }
    w.finish();
    // 71 bits: 9 bytes after the one already there.
    assert_eq!(out.len(), 10);
    let mut r = BitReader::new(&out[1..]);
    for (k, &(v, n)) in fields.iter().enumerate() {
        assert_eq!(r.get(n), v);
        let bits: u32 = fields[..=k].iter().map(|f| f.1).sum();
        assert_eq!(r.consumed(), bits.div_ceil(8) as usize);
    }
    assert!(!r.overrun());
    // Past the end: zeros, counted past the data's bytes, or an overrun where a load
    // comes up short of the read.
    assert_eq!(r.get(8), 0);
    assert_eq!(r.consumed(), 10);
    assert!(!r.overrun());
    let mut short = BitReader::new(&out[1..3]);
    assert_eq!(short.get(20), 5 | 0x345 << 3);
    assert!(short.overrun());
}

#[test]
fn roundtrips_with_both_bit_paths() {
    for (bits, inv) in [
        (16, 0xff00),
        (16, 0),
        (48, 0xffff_0000_00f0),
        (64, u64::MAX),
        (7, 0x7f),
        (21, 0),
        (53, 0),
        (57, 0),
        (58, 0),
        (5, 0),
    ] {
        for n in [0, 1, 100, GROUP, GROUP + 3, 3 * GROUP] {
            let w = words(n, bits, inv & width_mask(bits), n as u64 + 7);
            let mut packed = Vec::new();
            pack_with(&w, bits, &mut packed, false);
            let mut fast = Vec::new();
            pack_with(&w, bits, &mut fast, use_bmi2());
            assert_eq!(packed, fast, "bit paths differ");
            if inv != 0 && n >= GROUP {
                let ratio = packed.len() as f64 * 8.0 / (n as f64 * bits as f64);
                // 15 words in 16 keep only their variant bits; one bit each says which.
                let (b, i) = (bits as f64, inv.count_ones() as f64);
                let expect = ((b - i) * 15.0 / 16.0 + b / 16.0 + 1.0) / b;
                assert!(
                    ratio < expect + 0.02,
                    "bits {bits}: ratio {ratio} vs {expect}"
                );
            }
            for bmi2 in [false, use_bmi2()] {
                let mut back = vec![0u64; n];
                let used = unpack_with(&packed, bits, &mut back, bmi2).unwrap();
                assert_eq!(used, packed.len());
                assert_eq!(back, w);
            }
        }
    }
}

#[test]
fn groups_where_every_word_participates() {
    // Contiguous, scattered and no variant bits (mode 2, without a bitmap).
    for (bits, inv) in [
        (21, 0xffff),
        (48, 0xffff_0000_00f0),
        (64, 0xf0f0_f0f0_0000_ffff),
        (7, 0x7f),
    ] {
        let mut x = bits as u64;
        let w: Vec<u64> = (0..GROUP + 100)
            .map(|_| (xorshift(&mut x) & width_mask(bits) & !inv) | (0x5a5a_5a5a_5a5a_5a5a & inv))
            .collect();
        for bmi2 in [false, use_bmi2()] {
            let mut packed = Vec::new();
            pack_with(&w, bits, &mut packed, bmi2);
            assert_eq!(packed[4], 2, "bits {bits}: mode of the first group");
            let mut back = vec![0u64; w.len()];
            let used = unpack_with(&packed, bits, &mut back, bmi2).unwrap();
            assert_eq!(used, packed.len());
            assert_eq!(back, w, "bits {bits}");
            let cut = &packed[..packed.len() - 1];
            assert!(
                unpack_with(cut, bits, &mut back, bmi2).is_err(),
                "bits {bits}"
            );
        }
    }
}

#[test]
fn narrow_words_unpack_alike_into_u32() {
    // Plain groups (no invariant bits), masked groups and groups where every word
    // participates, on both sides of the 25-bit vector limit, with both bit paths.
    for bits in [1, 5, 16, 20, 25, 26, 32] {
        for inv in [0, 0b1010_0000, width_mask(bits) & !1] {
            let n = 2 * GROUP + 37;
            let w = words(n, bits, inv & width_mask(bits), bits as u64 + inv);
            let mut packed = Vec::new();
            pack(&w, bits, &mut packed);
            for bmi2 in [false, use_bmi2()] {
                let mut u = Unpacker::new(&packed, bits, n, bmi2).unwrap();
                let mut narrow = vec![0u32; n];
                for chunk in narrow.chunks_mut(GROUP) {
                    u.group(chunk).unwrap();
                }
                assert_eq!(u.consumed(), packed.len());
                let wide: Vec<u64> = narrow.iter().map(|&x| x as u64).collect();
                assert!(wide == w, "bits {bits}, invariant {inv:#x}, bmi2 {bmi2}");
            }
        }
    }
}

#[test]
fn damage_is_an_error_not_a_panic() {
    let w = words(2 * GROUP, 16, 0xf0f0, 1);
    let mut packed = Vec::new();
    pack(&w, 16, &mut packed);
    for cut in [0, 3, 8, 9, 30, packed.len() - 1] {
        let mut back = vec![0u64; w.len()];
        assert!(unpack(&packed[..cut], 16, &mut back).is_err());
    }
}
