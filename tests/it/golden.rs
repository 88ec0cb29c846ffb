//! Golden archives: one small archive per codec, written by this format version's encoder from
//! inputs generated here, kept under `tests/data/golden/v{VERSION}`. Every archive must decode
//! to its input at any thread count and SIMD level, and the encoder must still write exactly
//! those bytes: an encoder change that alters them needs a new format version (FORMAT.md) and
//! new golden archives (`SEP_BLESS=1 cargo test --release golden` writes them).

use crate::common::{smooth_field, smooth_raster, xorshift};
use crate::tensors::{classifier, dequantized, safetensors, stft_file};
use sep::{Codec, Kernels, Options};
use std::path::PathBuf;

/// One golden archive: its name, its input, the codecs its blocks must include, and whether
/// the encoder still writes it (archives of an earlier encoder of this format version only
/// decode).
struct Case {
    name: &'static str,
    input: Vec<u8>,
    codecs: &'static [Codec],
    written: bool,
    /// The base file it is coded against (`--patch-from`), if any.
    base: Option<Vec<u8>>,
    /// The compression level it is written at.
    level: u8,
}

/// English-like text from a fixed list of words.
fn text(len: usize) -> Vec<u8> {
    let words = [
        "the", "archive", "of", "a", "model", "that", "learns", "while", "it", "codes", "every",
        "bit", "and", "predicts", "next", "byte", "from", "what", "came", "before", "so",
    ];
    let mut x = 0x5eed_u64;
    let mut out = Vec::new();
    while out.len() < len {
        out.extend_from_slice(words[xorshift(&mut x) as usize % words.len()].as_bytes());
        out.push(if xorshift(&mut x).is_multiple_of(11) {
            b'\n'
        } else {
            b' '
        });
    }
    out.truncate(len);
    out
}

/// A safetensors file of small 32-bit integers (coded by zstd) and weight-like f32 values (the
/// planes codec), after its header (the tensor-header codec).
fn mixed_tensors() -> Vec<u8> {
    let mut x = 0x77_u64;
    let mut data = Vec::new();
    for i in 0..4096u32 {
        data.extend_from_slice(&(i % 7 + (i / 512)).to_le_bytes());
    }
    let ints = data.len();
    for _ in 0..8192 {
        let w = ((xorshift(&mut x) >> 40) as f32 / (1u32 << 24) as f32 - 0.5) * 0.1;
        data.extend_from_slice(&w.to_le_bytes());
    }
    let header = format!(
        "{{\"ids\":{{\"dtype\":\"I32\",\"shape\":[4096],\"data_offsets\":[0,{ints}]}},\
         \"w\":{{\"dtype\":\"F32\",\"shape\":[8192],\"data_offsets\":[{ints},{}]}}}}",
        data.len()
    );
    safetensors(&header, &data)
}

/// A safetensors file of one fp8 E4M3 tensor of weight-like values (sums of uniform bytes
/// around the middle exponents) beside its f32 scale.
fn fp8_tensors() -> Vec<u8> {
    let mut x = 0xf8_u64;
    let mut data: Vec<u8> = (0..20_000)
        .map(|_| {
            let r = xorshift(&mut x);
            let magnitude = ((r & 0x3f) + ((r >> 8) & 0x3f) + ((r >> 16) & 0x1f)) as u8;
            (magnitude.min(0x7e)) | ((r >> 40) as u8 & 0x80)
        })
        .collect();
    let n = data.len();
    data.extend_from_slice(&0.0123f32.to_le_bytes());
    let header = format!(
        "{{\"w\":{{\"dtype\":\"F8_E4M3\",\"shape\":[100,200],\"data_offsets\":[0,{n}]}},\
         \"w.scale\":{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[{n},{}]}}}}",
        n + 4
    );
    safetensors(&header, &data)
}

/// Weight-like f32 values stored big-endian, with no header (a raw field of a scientific
/// format): the planes codec under the byte-order swap.
fn big_endian_floats() -> Vec<u8> {
    let mut x = 0xbe_u64;
    (0..8192)
        .flat_map(|_| {
            let u: f32 = (0..4).map(|_| (xorshift(&mut x) >> 40) as f32).sum();
            (0.02 * (u / (1u64 << 24) as f32 - 2.0)).to_be_bytes()
        })
        .collect()
}

/// Two smooth f32 fields stored big-endian, each behind a header of 64 integers (a climate
/// model's output): the field codec.
fn fields() -> Vec<u8> {
    let mut data = Vec::new();
    for (i, rows) in [40, 50].into_iter().enumerate() {
        data.extend((0..64u32).flat_map(|w| (w * 3 + i as u32).to_be_bytes()));
        data.extend(smooth_field(rows, 96, true));
    }
    data
}

/// A 16-bit raster of 180 rows of 200 behind a header of text, as a medical image stores
/// one: the field codec with 16-bit values.
fn raster() -> Vec<u8> {
    let mut data = b"rows 180, columns 200, 16 bits little-endian\n".to_vec();
    data.extend(smooth_raster(180, 200));
    data
}

/// 1,500 picks among 64 random words of 48 bytes: each word recurs with every other after it, so
/// the context-mixing codec's match model, which follows one earlier occurrence, keeps losing the
/// thread where LZMA codes each word as a match: the LZMA codec.
fn words() -> Vec<u8> {
    let mut x = 0x1a_u64;
    let words: Vec<Vec<u8>> = (0..64)
        .map(|_| (0..48).map(|_| xorshift(&mut x) as u8).collect())
        .collect();
    (0..1500)
        .flat_map(|_| words[xorshift(&mut x) as usize % 64].clone())
        .collect()
}

fn cases() -> Vec<Case> {
    let mut x = 9_u64;
    vec![
        Case {
            name: "neural.txt",
            input: text(3000),
            codecs: &[Codec::Cm],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "stored.bin",
            input: (0..2000).map(|_| xorshift(&mut x) as u8).collect(),
            codecs: &[Codec::Stored],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "mixed.safetensors",
            input: mixed_tensors(),
            codecs: &[Codec::TensorHeader, Codec::Zstd, Codec::Planes],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "scaled.safetensors",
            input: dequantized(16, 64, false, false, false),
            codecs: &[Codec::Scaled],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "recent.bf16.safetensors",
            input: dequantized(16, 16, false, true, true),
            codecs: &[Codec::Recent],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "repeated.safetensors",
            input: classifier(8),
            codecs: &[Codec::Repeated],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "copies.safetensors",
            input: stft_file(),
            codecs: &[Codec::Copies],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        // Written before fp8 tensors took the byte-table codec.
        Case {
            name: "fp8.safetensors",
            input: fp8_tensors(),
            codecs: &[Codec::TensorHeader, Codec::Planes],
            written: false,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "fp8-bytes.safetensors",
            input: fp8_tensors(),
            codecs: &[Codec::TensorHeader, Codec::ByteTable],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "swapped.f32be",
            input: big_endian_floats(),
            codecs: &[Codec::Swapped],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        // Written before the default level's field residuals took lean mixing.
        Case {
            name: "field.f32be",
            input: fields(),
            codecs: &[Codec::Field],
            written: false,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "field-lean.f32be",
            input: fields(),
            codecs: &[Codec::Field],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        // Written before the default level's field residuals took lean mixing.
        Case {
            name: "field.u16le",
            input: raster(),
            codecs: &[Codec::Field],
            written: false,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "field-lean.u16le",
            input: raster(),
            codecs: &[Codec::Field],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "lzma.bin",
            input: words(),
            codecs: &[Codec::Lzma],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "jpeg.jpg",
            input: crate::common::repo_file("tests/data/jpeg/flower-of-life.jpg"),
            codecs: &[Codec::Jpeg],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "deflate.gz",
            input: crate::common::repo_file("tests/data/deflate/sed.1.gz"),
            codecs: &[Codec::Deflate],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "deflate.png",
            input: crate::common::repo_file("tests/data/deflate/mandelbrot.png"),
            codecs: &[Codec::Deflate],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "deflate-lzma.png",
            input: crate::common::repo_file("tests/data/deflate/blocks.png"),
            codecs: &[Codec::Deflate],
            written: true,
            base: None,
            level: sep::DEFAULT_LEVEL,
        },
        Case {
            name: "default-model-at-9.dirname",
            input: crate::common::corpus_file("binary/dirname"),
            codecs: &[Codec::Cm],
            written: false,
            base: None,
            level: 9,
        },
        Case {
            name: "bilevel-at-9.bitmap",
            input: crate::common::mandelbrot_bitmap(90, 400),
            codecs: &[Codec::Cm],
            written: false,
            base: None,
            level: 9,
        },
        // The wide model's archives are of small inputs: instrumented fuzzing builds decode
        // every golden archive as a seed, and the model is several times slower there.
        Case {
            name: "wide-at-9.dirname-part",
            input: crate::common::corpus_file("binary/dirname")[8 << 10..16 << 10].to_vec(),
            codecs: &[Codec::Cm],
            written: true,
            base: None,
            level: 9,
        },
        Case {
            name: "wide-bilevel-at-9.bitmap",
            input: crate::common::mandelbrot_bitmap(40, 240),
            codecs: &[Codec::Cm],
            written: true,
            base: None,
            level: 9,
        },
        Case {
            name: "delta.safetensors",
            input: stepped(&mixed_tensors()),
            codecs: &[Codec::Delta],
            written: true,
            base: Some(mixed_tensors()),
            level: sep::DEFAULT_LEVEL,
        },
    ]
}

/// A safetensors file whose f32 tensor `w` (its last 32 KiB) moved as an optimizer step moves
/// weights: most values by a few units in their last place.
fn stepped(file: &[u8]) -> Vec<u8> {
    let mut out = file.to_vec();
    let at = out.len() - (32 << 10);
    let mut x = 0xde17a_u64;
    for v in out[at..].chunks_exact_mut(4) {
        let r = xorshift(&mut x);
        let low = u16::from_le_bytes([v[0], v[1]]).wrapping_add((r % 13) as u16);
        v[..2].copy_from_slice(&low.to_le_bytes());
    }
    out
}

/// Where this version's golden archives are kept.
fn golden_dir() -> PathBuf {
    let version = sep::internals::format::VERSION;
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/golden/v{version}"))
}

/// The golden archives are of the format without a pack: an archive made with the built-in
/// pack changes whenever the pack is retrained (tests/it/packs.rs covers those).
fn options(threads: usize, case: &Case) -> Options {
    let base = &case.base;
    let mut o = Options::default();
    o.threads = threads;
    o.level = case.level;
    o.pack = sep::PackChoice::Off;
    o.base = base
        .clone()
        .map(|b| std::sync::Arc::new(sep::Base::new(std::sync::Arc::new(b))));
    o
}

#[test]
fn golden_archives_decode_everywhere() {
    for case in cases() {
        let path = golden_dir().join(format!("{}.sep", case.name));
        let archive = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (SEP_BLESS=1 writes it)", path.display()));
        let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
        for codec in case.codecs {
            assert!(
                info.blocks.iter().any(|b| b.codec == *codec),
                "{}: no {} block",
                case.name,
                codec.name()
            );
        }
        for (threads, level) in [(1, Kernels::Scalar), (2, Kernels::detect())] {
            sep::set_kernels(level);
            let mut out = Vec::new();
            sep::decompress_to_vec(&archive, &mut out, &options(threads, &case)).unwrap();
            assert!(out == case.input, "{}: decodes to other bytes", case.name);
        }
        sep::set_kernels(Kernels::detect());
    }
}

#[test]
fn the_encoder_still_writes_the_golden_archives() {
    let bless = std::env::var_os("SEP_BLESS").is_some();
    for case in cases().into_iter().filter(|c| c.written) {
        let path = golden_dir().join(format!("{}.sep", case.name));
        let mut archive = Vec::new();
        sep::compress_bytes(&case.input, &mut archive, &options(2, &case)).unwrap();
        if bless {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &archive).unwrap();
            continue;
        }
        let golden = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (SEP_BLESS=1 writes it)", path.display()));
        assert!(
            archive == golden,
            "{}: the encoder's output changed; a change that alters archives needs a new format \
             version and new golden archives (SEP_BLESS=1)",
            case.name
        );
    }
}
