//! The tensor path end to end: detection on every corpus file, safetensors / .npy / raw arrays
//! round-tripped byte-identically through the binary, determinism across threads and kernels.

use crate::common::*;
use sep::internals::choice::cm_predicted;
use sep::internals::containers::{layout, sniff_stream, Kind};
use std::fs;

#[test]
fn detection_never_misfires_on_the_corpora() {
    for set in ["text", "binary"] {
        for path in corpus_files(set) {
            let data = fs::read(&path).unwrap();
            let l = layout(&data, None);
            assert!(
                l.iter().all(|s| s.kind == Kind::General),
                "{}: {l:?}",
                path.display()
            );
            // Nor on the same bytes as a stream, whose head is given back whole.
            let (head, streamed) = sniff_stream(&mut &data[..]).unwrap();
            assert!(streamed.is_none(), "{}: {streamed:?}", path.display());
            assert!(data.starts_with(&head), "{}", path.display());
            // And the codec choice keeps the context-mixing model for every block of them.
            for block in data.chunks(sep::DEFAULT_BLOCK_SIZE as usize) {
                assert!(cm_predicted(block), "{}", path.display());
            }
        }
    }
    for path in corpus_files("tensors") {
        let data = fs::read(&path).unwrap();
        let l = layout(&data, None);
        let floats: u64 = l
            .iter()
            .filter(|s| matches!(s.kind, Kind::Tensor(_)))
            .map(|s| s.len)
            .sum();
        assert_eq!(l.iter().map(|s| s.len).sum::<u64>(), data.len() as u64);
        // Over 99% of the tensors' bytes, all after the JSON header (up to 6% of a file of
        // many small tensors), are found as floats.
        let header = 8 + u64::from_le_bytes(data[..8].try_into().unwrap());
        assert!(
            floats * 100 > (data.len() as u64 - header) * 99,
            "{}: {floats} of {} bytes",
            path.display(),
            data.len()
        );
    }
}

/// Compresses `name` in `d` with each (threads, kernels), checks the archives are identical,
/// that a block went through the tensor codec, and that every decode gives the file back.
pub(crate) fn check_file(d: &std::path::Path, name: &str, extra: &[&str]) -> Vec<u8> {
    check_file_with(d, name, extra, " planes ")
}

/// `check_file`, a block having gone through the codec `codec` (its name in `sep info`).
fn check_file_with(d: &std::path::Path, name: &str, extra: &[&str], codec: &str) -> Vec<u8> {
    let data = fs::read(d.join(name)).unwrap();
    let mut args = vec!["compress", "-q", "-c", "--block-size", "1M"];
    args.extend_from_slice(extra);
    args.push(name);
    let runs = [("1", "auto"), ("2", "auto"), ("2", "scalar"), ("1", "avx2")];
    let packed = compress_identically(d, &args, &runs);
    let archive = format!("{name}.sep");
    fs::write(d.join(&archive), &packed).unwrap();
    let info = sep(d, &["info", &archive]);
    ok(&info);
    let info = String::from_utf8(info.stdout).unwrap();
    assert!(info.contains(codec), "{name}: {info}");
    // The context-mixing model, ~60 KB/s, would set the whole file's speed.
    assert!(!info.contains(" cm "), "{name}: {info}");
    decodes_everywhere(
        d,
        &archive,
        &data,
        &[("1", "scalar"), ("3", "auto"), ("2", "avx2")],
    );
    packed
}

#[test]
fn safetensors_files_round_trip_and_shrink() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for path in corpus_files("tensors") {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        fs::copy(&path, d.join(&name)).unwrap();
        let size = fs::metadata(d.join(&name)).unwrap().len() as usize;
        let archive = check_file(d, &name, &[]);
        let info = sep(d, &["info", &format!("{name}.sep")]);
        let info = String::from_utf8(info.stdout).unwrap();
        let first = info.lines().find(|l| l.trim_start().starts_with("0 "));
        assert!(
            first.is_some_and(|l| l.contains(" tensor-header ")),
            "{name}: {info}"
        );
        // Every float file here compresses by more than 15% on the tensor path.
        assert!(
            archive.len() * 100 < size * 87,
            "{name}: {size} -> {}",
            archive.len()
        );
    }
}

#[test]
fn npy_and_raw_arrays_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Float weights (the first 60,000 of Magika's convolution kernel) taken from a corpus file,
    // written as .npy and as a raw f32 array with an odd trailing byte.
    let src = corpus_file("tensors/magika.f32.safetensors");
    let st = ::safetensors::SafeTensors::deserialize(&src).unwrap();
    let (_, conv) = st
        .tensors()
        .into_iter()
        .max_by_key(|(_, t)| t.data().len())
        .unwrap();
    assert_eq!(conv.shape(), [512, 256, 5, 1]);
    let floats = &conv.data()[..4 * 60_000];
    let mut header = "{'descr': '<f4', 'fortran_order': False, 'shape': (60000,), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
    npy.extend_from_slice(header.as_bytes());
    npy.extend_from_slice(floats);
    fs::write(d.join("w.npy"), &npy).unwrap();
    check_file(d, "w.npy", &[]);
    // The .npy from stdin: recognised from its header, also with data after the array or cut
    // short (the rest then codes as it can).
    let mut longer = npy.clone();
    longer.extend_from_slice(b"trailing");
    let short = &npy[..npy.len() - 1000];
    for input in [&npy[..], &longer[..], short] {
        let r = sep_env(d, &["compress", "-q", "-c"], input, &[]);
        ok(&r);
        fs::write(d.join("s.sep"), &r.stdout).unwrap();
        let info = String::from_utf8(sep(d, &["info", "s.sep"]).stdout).unwrap();
        assert!(info.contains(" planes "), "{info}");
        let back = sep(d, &["decompress", "-q", "-c", "s.sep"]);
        ok(&back);
        assert!(back.stdout == input, "npy from stdin");
    }
    // The same array and a second one in an .npz (numpy's zip of .npy files, stored), beside
    // a text member: the arrays take the tensor path.
    let mut npz = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut npz);
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in [
        ("w.npy", &npy[..]),
        ("notes.txt", b"two arrays\n"),
        ("v.npy", &npy),
    ] {
        zip.start_file(name, stored).unwrap();
        std::io::Write::write_all(&mut zip, bytes).unwrap();
    }
    zip.finish().unwrap();
    fs::write(d.join("w.npz"), npz.into_inner()).unwrap();
    check_file(d, "w.npz", &[]);
    let mut raw = floats.to_vec();
    raw.push(7);
    fs::write(d.join("w.f32"), &raw).unwrap();
    check_file(d, "w.f32", &["--dtype", "f32"]);
    // Without --dtype the block's sample codes best as f32 values, and shows nothing beyond their
    // statistics: the tensor codecs, not the context-mixing model (which `check_file` refuses).
    fs::write(d.join("w.bin"), &raw).unwrap();
    check_file(d, "w.bin", &[]);
    // The same raw array from stdin.
    let r = sep_env(d, &["compress", "-q", "-c", "--dtype", "f32"], &raw, &[]);
    ok(&r);
    let back = sep_env(d, &["decompress", "-q", "-c"], &r.stdout, &[]);
    ok(&back);
    assert!(back.stdout == raw);
    // A bad --dtype is a usage error (exit code 1, as xz), and writes nothing.
    fs::remove_file(d.join("w.f32.sep")).ok();
    let r = sep(d, &["compress", "-q", "--dtype", "f12", "w.f32"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("unknown dtype 'f12'"), "{}", r.stderr);
    assert!(!d.join("w.f32.sep").exists());
}

/// A safetensors file of dequantized weights: two tensors of `rows` x 512 small integers
/// (`levels` of them, about normal) times a scale per row (`per_row`) or per tensor, as f32
/// or, if `bf16`, those f32 values cut to bf16; with `palette`, the integers pick among
/// random values instead (a codebook, not multiples of a scale).
pub fn dequantized(rows: usize, levels: u64, per_row: bool, bf16: bool, palette: bool) -> Vec<u8> {
    let mut x = 0x9e37_79b9_u64;
    let mut next = move || xorshift(&mut x) >> 11;
    let (mut header, mut data) = (String::from("{"), Vec::new());
    for t in 0..2 {
        let start = data.len();
        let mut scale = 0.001 + (next() % 1000) as f32 * 1e-5;
        for _ in 0..rows {
            if per_row {
                scale = 0.001 + (next() % 1000) as f32 * 1e-5;
            }
            for _ in 0..512 {
                let q = (0..4).map(|_| next() % levels).sum::<u64>() as f32;
                let w = match palette {
                    true => f32::from_bits(
                        0x3800_0000 + (q as u32).wrapping_mul(0x9e37_79b9) % 0x800_0000,
                    ),
                    false => (q - (2 * (levels - 1)) as f32) * scale,
                };
                match bf16 {
                    true => data.extend_from_slice(&w.to_le_bytes()[2..]),
                    false => data.extend_from_slice(&w.to_le_bytes()),
                }
            }
        }
        let sep = if t == 0 { "" } else { "," };
        let dtype = if bf16 { "BF16" } else { "F32" };
        header += &format!(
            "{sep}\"w{t}\":{{\"dtype\":\"{dtype}\",\"shape\":[{rows},512],\"data_offsets\":[{start},{}]}}",
            data.len()
        );
    }
    header.push('}');
    safetensors(&header, &data)
}

#[test]
fn dequantized_weights_take_their_codecs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Integers times scales go to the scaled-integers codec (bf16 ones cut from f32 too),
    // values from a palette to the recent-values codec.
    let cases = [
        ("deq8.safetensors", 64, false, false, false, " scaled "),
        ("deq4.safetensors", 4, true, false, false, " scaled "),
        ("deq8.bf16.safetensors", 16, false, true, false, " scaled "),
        (
            "palette.bf16.safetensors",
            16,
            false,
            true,
            true,
            " recent ",
        ),
    ];
    for (name, levels, per_row, bf16, palette, codec) in cases {
        let file = dequantized(300, levels, per_row, bf16, palette);
        fs::write(d.join(name), &file).unwrap();
        let archive = check_file_with(d, name, &[], codec);
        // Against the tensor codec alone on the second tensor, twice: at least a third smaller.
        let dtype = if bf16 {
            sep::DType::BF16
        } else {
            sep::DType::F32
        };
        let second = &file[file.len() - 300 * 512 * dtype.width()..];
        let tensor = sep::internals::codecs::float::encode(second, dtype);
        assert!(
            3 * archive.len() < 2 * 2 * tensor.len(),
            "{name}: {} bytes",
            archive.len()
        );
    }
    let archives = [
        "deq4.safetensors.sep",
        "deq8.bf16.safetensors.sep",
        "palette.bf16.safetensors.sep",
    ];
    for name in archives {
        let archive = fs::read(d.join(name)).unwrap();
        // Damaged, it fails cleanly.
        let step = (archive.len() / 200).max(1);
        damage_fails_cleanly(d, &archive, (0..archive.len()).step_by(step), 0x10);
    }
}

/// A safetensors file of `header` (JSON text) and the tensors' bytes `data`.
pub fn safetensors(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A safetensors file of one f32 classifier layer, `rows` by 3000: the columns of never-trained
/// classes (one in 40) share one value per row, the others are distinct weights.
pub fn classifier(rows: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_u64;
    let mut unit = move || (xorshift(&mut x) >> 11) as f32 / (1u64 << 53) as f32;
    let mut data = Vec::new();
    for _ in 0..rows {
        let shared = (unit() - 0.5) * 0.1;
        for c in 0..3000u64 {
            let w = match c * 2_654_435_761 % 40 {
                0 => shared,
                _ => (unit() + unit() + unit() - 1.5) * 0.1,
            };
            data.extend_from_slice(&w.to_le_bytes());
        }
    }
    let header = format!(
        "{{\"fc.weight\":{{\"dtype\":\"F32\",\"shape\":[{rows},3000],\"data_offsets\":[0,{}]}}}}",
        data.len()
    );
    safetensors(&header, &data)
}

#[test]
fn transform_bases_take_the_copies_codec() {
    // A windowed cosine and sine basis (an audio model's STFT) and a trained-like tensor after
    // it: the basis goes to the copies codec, at under 60% of zstd -19's size.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let basis = stft_basis(128);
    fs::write(d.join("stft.safetensors"), stft_file()).unwrap();
    check_file_with(d, "stft.safetensors", &[], " copies ");
    let info = String::from_utf8(sep(d, &["info", "stft.safetensors.sep"]).stdout).unwrap();
    let line = info.lines().find(|l| l.contains(" copies ")).unwrap();
    let archived: usize = line.split_whitespace().nth(4).unwrap().parse().unwrap();
    let z = zstd::bulk::compress(&basis, 19).unwrap();
    assert!(
        5 * archived < 3 * z.len(),
        "{archived} against zstd -19's {}",
        z.len()
    );
}

/// A safetensors file of a windowed cosine and sine basis of 128 points and a trained-like
/// tensor of 20,000 values after it.
pub fn stft_file() -> Vec<u8> {
    let basis = stft_basis(128);
    let mut x = 0x1234_u64;
    let mut data = basis.clone();
    for _ in 0..20_000 {
        let w = ((xorshift(&mut x) >> 40) as f32 / (1u32 << 24) as f32 - 0.5) * 0.2;
        data.extend_from_slice(&w.to_le_bytes());
    }
    let header = format!(
        "{{\"stft\":{{\"dtype\":\"F32\",\"shape\":[130,128],\"data_offsets\":[0,{}]}},\
         \"w\":{{\"dtype\":\"F32\",\"shape\":[20000],\"data_offsets\":[{},{}]}}}}",
        basis.len(),
        basis.len(),
        data.len()
    );
    safetensors(&header, &data)
}

#[test]
fn repeated_values_take_their_codec() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = classifier(120);
    fs::write(d.join("fc.safetensors"), &file).unwrap();
    let archive = check_file_with(d, "fc.safetensors", &[], " repeated ");
    // Smaller than the tensor codec alone on the weights.
    let tensor = sep::internals::codecs::float::encode(
        &file[file.len() - 120 * 3000 * 4..],
        sep::DType::F32,
    );
    assert!(
        archive.len() < tensor.len(),
        "{} against {}",
        archive.len(),
        tensor.len()
    );
    // Damaged, it fails cleanly.
    let step = (archive.len() / 150).max(1);
    damage_fails_cleanly(d, &archive, (0..archive.len()).step_by(step), 0x10);
}

#[test]
fn damaged_tensor_archives_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let raw: Vec<u8> = (0..20_000u32)
        .flat_map(|i| ((i % 251) as f32 * 0.013 - 1.0).to_le_bytes())
        .collect();
    fs::write(d.join("w"), &raw).unwrap();
    ok(&sep(d, &["compress", "-q", "--dtype", "f32", "w"]));
    let archive = fs::read(d.join("w.sep")).unwrap();
    let step = (archive.len() / 300).max(1);
    damage_fails_cleanly(d, &archive, (0..archive.len()).step_by(step), 0x10);
    // A safetensors file: every byte up to the end of its header block.
    let conv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/conv.safetensors");
    fs::copy(conv, d.join("s")).unwrap();
    ok(&sep(d, &["compress", "-q", "s"]));
    let archive = fs::read(d.join("s.sep")).unwrap();
    let info = String::from_utf8(sep(d, &["info", "s.sep"]).stdout).unwrap();
    assert!(info.contains(" tensor-header "), "{info}");
    damage_fails_cleanly(d, &archive, 0..300.min(archive.len()), 0x04);
}

/// Flips `mask` into `archive` at each of `positions` in turn and checks that decoding it in
/// `d` exits 1 without a panic or any output left behind.
fn damage_fails_cleanly(
    d: &std::path::Path,
    archive: &[u8],
    positions: impl Iterator<Item = usize>,
    mask: u8,
) {
    for i in positions {
        let mut bad = archive.to_vec();
        bad[i] ^= mask;
        fs::write(d.join("bad.sep"), &bad).unwrap();
        let r = sep(d, &["decompress", "-q", "-f", "bad.sep"]);
        assert_eq!(r.code, 1, "byte {i}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "byte {i}: {}", r.stderr);
        assert!(!d.join("bad").exists(), "partial output left for byte {i}");
    }
}

#[test]
fn safetensors_from_stdin_take_the_tensor_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = corpus_file("tensors/ppocr-cls.f16.safetensors");
    let from_file = {
        fs::write(d.join("m"), &file).unwrap();
        let r = sep(d, &["compress", "-q", "-c", "m"]);
        ok(&r);
        r.stdout
    };
    // The same bytes on stdin, then with data after the last tensor.
    let mut longer = file.clone();
    longer.extend_from_slice(b"trailing bytes");
    for input in [&file, &longer] {
        let r = sep_env(d, &["compress", "-q", "-c"], input, &[("SEP_THREADS", "2")]);
        ok(&r);
        if input.len() == file.len() {
            // Same blocks; only the header's block size (unknown length on stdin) differs.
            assert_eq!(
                r.stdout.len(),
                from_file.len(),
                "stdin and file archives differ"
            );
        }
        fs::write(d.join("s.sep"), &r.stdout).unwrap();
        let info = String::from_utf8(sep(d, &["info", "s.sep"]).stdout).unwrap();
        assert!(info.contains(" planes "), "{info}");
        let back = sep(d, &["decompress", "-q", "-c", "s.sep"]);
        ok(&back);
        assert!(back.stdout == *input);
    }
    // A stream whose first 8 bytes read as a small header length but is not safetensors.
    let mut odd = 100u64.to_le_bytes().to_vec();
    odd.extend((0..5000u32).map(|i| (i * 31 % 251) as u8));
    let r = sep_env(d, &["compress", "-q", "-c"], &odd, &[]);
    ok(&r);
    let back = sep_env(d, &["decompress", "-q", "-c"], &r.stdout, &[]);
    ok(&back);
    assert!(back.stdout == odd);
}

/// `x` as fp8 with `mantissa` bits and exponent bias `bias` (truncated; saturating at the
/// largest finite value `max`): E4M3 is (3, 7, 448), E5M2 (2, 15, 57344).
fn to_fp8(x: f32, mantissa: u32, bias: i32, max: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs().min(max);
    let min_normal = 2f32.powi(1 - bias);
    if a < min_normal {
        let step = 2f32.powi(1 - bias - mantissa as i32);
        return sign | (a / step) as u8;
    }
    let e = a.log2().floor() as i32;
    let m = ((a / 2f32.powi(e) - 1.0) * (1 << mantissa) as f32) as u8;
    sign | ((e + bias) as u8) << mantissa | m.min((1 << mantissa) - 1)
}

/// Magika's f32 tensors (name, shape, values), in name order.
fn magika_f32() -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let src = corpus_file("tensors/magika.f32.safetensors");
    let st = ::safetensors::SafeTensors::deserialize(&src).unwrap();
    let mut names: Vec<String> = st.names().into_iter().map(String::from).collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let t = st.tensor(&name).unwrap();
            let values = t
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            (name, t.shape().to_vec(), values)
        })
        .collect()
}

#[test]
fn fp8_casts_of_real_weights_take_the_tensor_path_and_shrink() {
    // Magika's f32 weights cast to fp8 with a per-tensor scale (largest magnitude to fp8's
    // largest), as fp8 checkpoints are made, each tensor beside its f32 scale.
    let tensors = magika_f32();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (tag, mantissa, bias, max, most) in [
        ("F8_E4M3", 3, 7, 448.0f32, 87),
        ("F8_E5M2", 2, 15, 57344.0, 75),
    ] {
        let (mut header, mut data) = (Vec::new(), Vec::new());
        for (name, shape, values) in &tensors {
            let amax = values.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-30);
            let scale = amax / max;
            let start = data.len();
            data.extend(
                values
                    .iter()
                    .map(|&v| to_fp8(v / scale, mantissa, bias, max)),
            );
            let shape: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
            header.push(format!(
                "\"{name}\":{{\"dtype\":\"{tag}\",\"shape\":[{}],\"data_offsets\":[{start},{}]}}",
                shape.join(","),
                data.len()
            ));
            let start = data.len();
            data.extend_from_slice(&scale.to_le_bytes());
            header.push(format!(
                "\"{name}.scale\":{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[{start},{}]}}",
                data.len()
            ));
        }
        let file = safetensors(&format!("{{{}}}", header.join(",")), &data);
        let name = format!("magika.{tag}.safetensors");
        fs::write(d.join(&name), &file).unwrap();
        let archive = check_file_with(d, &name, &[], " bytes ");
        assert!(
            archive.len() * 100 < file.len() * most,
            "{tag}: {} -> {}",
            file.len(),
            archive.len()
        );
    }
}

#[test]
fn int8_and_packed_int4_weights_take_the_byte_table_codec() {
    // Magika's f32 weights of two or more dimensions quantized per row, a row being all the
    // values of one output channel (largest magnitude to 127, or to 7 for int4 packed two to a
    // byte), each beside its f32 row scales, as weight-only quantized checkpoints hold them.
    let tensors = magika_f32();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (tag, top) in [("I8", 127f32), ("U8", 7.0)] {
        let (mut header, mut data) = (Vec::new(), Vec::new());
        for (name, shape, values) in &tensors {
            if shape.len() < 2 {
                continue;
            }
            let (rows, cols) = (shape[0], shape[1..].iter().product::<usize>());
            let start = data.len();
            let mut scales = Vec::new();
            for row in values.chunks(cols) {
                let scale = row.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-30) / top;
                let q: Vec<i8> = row.iter().map(|&v| (v / scale).round() as i8).collect();
                match tag {
                    "I8" => data.extend(q.iter().map(|&v| v as u8)),
                    _ => data.extend(
                        q.chunks(2)
                            .map(|p| (p[0] + 8) as u8 | ((p[1] + 8) as u8) << 4),
                    ),
                }
                scales.extend_from_slice(&scale.to_le_bytes());
            }
            let width = if tag == "I8" { cols } else { cols / 2 };
            header.push(format!(
                "\"{name}\":{{\"dtype\":\"{tag}\",\"shape\":[{rows},{width}],\"data_offsets\":[{start},{}]}}",
                data.len()
            ));
            let start = data.len();
            data.extend_from_slice(&scales);
            header.push(format!(
                "\"{name}.scale\":{{\"dtype\":\"F32\",\"shape\":[{rows}],\"data_offsets\":[{start},{}]}}",
                data.len()
            ));
        }
        let file = safetensors(&format!("{{{}}}", header.join(",")), &data);
        let name = format!("magika.{tag}.safetensors");
        fs::write(d.join(&name), &file).unwrap();
        let archive = check_file_with(d, &name, &[], " bytes ");
        // Under zstd -19 (at about the values' order-0 entropy).
        let zstd = zstd::encode_all(&file[..], 19).unwrap();
        assert!(
            archive.len() < zstd.len(),
            "{tag}: {} against zstd -19's {}",
            archive.len(),
            zstd.len()
        );
    }
}
