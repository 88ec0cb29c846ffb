//! Model containers end to end: Magika's real weights written into each container sep
//! recognises (GGUF, ONNX, CTranslate2, PyTorch), as their own tools lay them out; each file
//! round-trips through the binary with its float tensors on the tensor path.

use crate::common::*;
use crate::tensors::check_file;
use sep::internals::codecs::float::rounding::f16_nearest;
use sep::internals::containers::{layout, Kind};
use std::fs;

/// Magika's tensors, sorted by name: (name, shape, f32 bytes).
fn magika() -> Vec<(String, Vec<u64>, Vec<u8>)> {
    let src = corpus_file("tensors/magika.f32.safetensors");
    let st = ::safetensors::SafeTensors::deserialize(&src).unwrap();
    let mut names: Vec<String> = st.names().into_iter().map(String::from).collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let t = st.tensor(&name).unwrap();
            let shape = t.shape().iter().map(|&d| d as u64).collect();
            (name, shape, t.data().to_vec())
        })
        .collect()
}

/// f32 bytes as bf16 (truncated) and as f16 (rounded to nearest).
fn bf16(f32s: &[u8]) -> Vec<u8> {
    f32s.chunks_exact(4).flat_map(|b| [b[2], b[3]]).collect()
}

fn f16(f32s: &[u8]) -> Vec<u8> {
    f32s.chunks_exact(4)
        .flat_map(|b| {
            (f16_nearest(f32::from_le_bytes([b[0], b[1], b[2], b[3]])) as u16).to_le_bytes()
        })
        .collect()
}

/// Checks that `file`'s floats are found (over 90% of it), that it round-trips through the
/// binary on every thread count and kernel level with a float codec, and that it shrinks.
fn takes_the_tensor_path(name: &str, file: &[u8]) {
    let l = layout(file, None);
    let floats: u64 = l
        .iter()
        .filter(|s| matches!(s.kind, Kind::Tensor(_)))
        .map(|s| s.len)
        .sum();
    assert!(floats * 10 > file.len() as u64 * 9, "{name}: {l:?}");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join(name), file).unwrap();
    let archive = check_file(d, name, &[]);
    assert!(
        archive.len() * 100 < file.len() * 87,
        "{name}: {} -> {}",
        file.len(),
        archive.len()
    );
}

/// A GGUF file (version 3, data aligned to 32) of `tensors` (name, dims, ggml type, data)
/// after a little metadata: the architecture and a list of 500 tokens.
fn gguf(tensors: &[(String, Vec<u64>, u32, Vec<u8>)]) -> Vec<u8> {
    let string = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&2u64.to_le_bytes());
    string(&mut out, "general.architecture");
    out.extend_from_slice(&8u32.to_le_bytes());
    string(&mut out, "bert");
    string(&mut out, "tokenizer.ggml.tokens");
    out.extend_from_slice(&9u32.to_le_bytes());
    out.extend_from_slice(&8u32.to_le_bytes());
    out.extend_from_slice(&500u64.to_le_bytes());
    for i in 0..500 {
        string(&mut out, &format!("tok{i}"));
    }
    let mut offset = 0u64;
    for (name, dims, t, bytes) in tensors {
        string(&mut out, name);
        out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
        for d in dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offset = (offset + bytes.len() as u64).next_multiple_of(32);
    }
    for (_, _, _, bytes) in tensors {
        out.resize(out.len().next_multiple_of(32), 0);
        out.extend_from_slice(bytes);
    }
    out
}

#[test]
fn gguf_files_take_the_tensor_path() {
    // f32 and bf16 tensors (ggml types 0 and 30), and an int8 copy of one in Q8_0's layout
    // (type 8: blocks of an f16 scale and 32 int8 values), which stays general data.
    let mut tensors = Vec::new();
    for (i, (name, shape, data)) in magika().into_iter().enumerate() {
        let dims: Vec<u64> = shape.into_iter().rev().collect();
        match i % 2 {
            0 => tensors.push((name, dims, 0u32, data)),
            _ => tensors.push((name, dims, 30u32, bf16(&data))),
        }
    }
    let q8: Vec<u8> = tensors[0]
        .3
        .chunks_exact(4 * 32)
        .flat_map(|block| {
            let mut b = vec![0x00, 0x3c];
            b.extend(block.chunks_exact(4).map(|v| (v[3] ^ v[1]) & 0x7f));
            b
        })
        .collect();
    let blocks = q8.len() as u64 / 34;
    tensors.push(("q8".into(), vec![blocks * 32], 8, q8));
    takes_the_tensor_path("magika.gguf", &gguf(&tensors));
}

/// A protobuf field: key, then a varint value or a length-delimited payload.
fn proto_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn proto_len(number: u64, payload: &[u8], out: &mut Vec<u8>) {
    proto_varint(number << 3 | 2, out);
    proto_varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

/// An ONNX model (ModelProto, as onnx writes it: ir_version first) whose graph holds
/// `(name, dims, data_type, raw_data)` tensors: even ones as initializers, odd ones as the
/// values of Constant nodes.
fn onnx(tensors: &[(String, Vec<u64>, u64, Vec<u8>)]) -> Vec<u8> {
    let mut graph = Vec::new();
    let mut inits = Vec::new();
    for (i, (name, dims, dtype, raw)) in tensors.iter().enumerate() {
        let mut t = Vec::new();
        for &d in dims {
            proto_varint(1 << 3, &mut t);
            proto_varint(d, &mut t);
        }
        proto_varint(2 << 3, &mut t);
        proto_varint(*dtype, &mut t);
        proto_len(8, name.as_bytes(), &mut t);
        proto_len(9, raw, &mut t);
        if i % 2 == 0 {
            proto_len(5, &t, &mut inits);
        } else {
            let mut attr = Vec::new();
            proto_len(1, b"value", &mut attr);
            proto_len(5, &t, &mut attr);
            let mut node = Vec::new();
            proto_len(2, name.as_bytes(), &mut node);
            proto_len(4, b"Constant", &mut node);
            proto_len(5, &attr, &mut node);
            proto_len(1, &node, &mut graph);
        }
    }
    proto_len(2, b"magika", &mut graph);
    graph.extend_from_slice(&inits);
    let mut m = Vec::new();
    proto_varint(1 << 3, &mut m);
    proto_varint(8, &mut m);
    proto_len(2, b"sep tests", &mut m);
    proto_len(7, &graph, &mut m);
    m
}

#[test]
fn onnx_models_take_the_tensor_path() {
    // f32 initializers, bf16 Constant nodes (data types 1 and 16), and an int64 tensor, which
    // stays general data.
    let mut tensors = Vec::new();
    for (i, (name, dims, data)) in magika().into_iter().enumerate() {
        match i % 2 {
            0 => tensors.push((name, dims, 1u64, data)),
            _ => tensors.push((name, dims, 16u64, bf16(&data))),
        }
    }
    let ids: Vec<u8> = (0..4096u64)
        .flat_map(|i| (i * 7 % 1000).to_le_bytes())
        .collect();
    tensors.push(("position_ids".into(), vec![4096], 7, ids));
    takes_the_tensor_path("magika.onnx", &onnx(&tensors));
}

/// A CTranslate2 model file (binary version 6) of `(name, dims, type id, bytes)` variables and
/// one alias, laid out as CTranslate2's serializer writes it.
fn ct2(vars: &[(String, Vec<u32>, u8, Vec<u8>)]) -> Vec<u8> {
    let string = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(&(s.len() as u16 + 1).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    };
    let mut out = 6u32.to_le_bytes().to_vec();
    string(&mut out, "TransformerEncoderModelSpec");
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(vars.len() as u32).to_le_bytes());
    for (name, dims, t, bytes) in vars {
        string(&mut out, name);
        out.push(dims.len() as u8);
        for d in dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.push(*t);
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out.extend_from_slice(&1u32.to_le_bytes());
    string(&mut out, "decoder/embeddings/weight");
    string(&mut out, &vars[0].0);
    out
}

#[test]
fn ctranslate2_models_take_the_tensor_path() {
    // f32 and f16 variables (type ids 0 and 4), and an int8 copy of one (type 1), which stays
    // general data.
    let mut vars = Vec::new();
    for (i, (name, shape, data)) in magika().into_iter().enumerate() {
        let dims: Vec<u32> = shape.iter().map(|&d| d as u32).collect();
        let name = name.replace('.', "/");
        match i % 2 {
            0 => vars.push((name, dims, 0u8, data)),
            _ => vars.push((name, dims, 4u8, f16(&data))),
        }
    }
    let int8: Vec<u8> = vars[0].3.chunks_exact(4).map(|v| v[3] ^ v[1]).collect();
    let n = int8.len() as u32;
    vars.push(("encoder/int8/weight".into(), vec![n], 1, int8));
    takes_the_tensor_path("model.bin", &ct2(&vars));
}

/// `data.pkl` of a state dict as `torch.save` pickles it (protocol 2): each tensor a
/// `_rebuild_tensor_v2` call whose storage is a persistent id `('storage', class, key, 'cpu',
/// numel)`, classes memoised after their first use.
fn torch_pickle(items: &[(&str, &str, &str, usize)]) -> Vec<u8> {
    let s = |p: &mut Vec<u8>, v: &str| {
        p.push(b'X');
        p.extend_from_slice(&(v.len() as u32).to_le_bytes());
        p.extend_from_slice(v.as_bytes());
    };
    let mut p = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01(".to_vec();
    let mut memo: Vec<&str> = Vec::new();
    for (name, class, key, numel) in items {
        s(&mut p, name);
        p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
        s(&mut p, "storage");
        match memo.iter().position(|c| c == class) {
            Some(i) => p.extend_from_slice(&[b'h', i as u8 + 2]),
            None => {
                p.extend_from_slice(format!("ctorch\n{class}\n").as_bytes());
                memo.push(class);
                p.extend_from_slice(&[b'q', memo.len() as u8 + 1]);
            }
        }
        s(&mut p, key);
        s(&mut p, "cpu");
        p.push(b'J');
        p.extend_from_slice(&(*numel as u32).to_le_bytes());
        p.extend_from_slice(b"tQK\x00J");
        p.extend_from_slice(&(*numel as u32).to_le_bytes());
        p.extend_from_slice(b"\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR");
    }
    p.extend_from_slice(b"u.");
    p
}

#[test]
fn pytorch_checkpoints_take_the_tensor_path() {
    use std::io::Write;
    // A `torch.save` zip: f32 and f16 storages, and an int64 one, which stays general data.
    let mut items = Vec::new();
    let mut storages = Vec::new();
    for (i, (name, _, data)) in magika().into_iter().enumerate() {
        let (class, bytes, width) = match i % 2 {
            0 => ("FloatStorage", data, 4),
            _ => ("HalfStorage", f16(&data), 2),
        };
        items.push((name, class, i.to_string(), bytes.len() / width));
        storages.push(bytes);
    }
    let ids: Vec<u8> = (0..512u64).flat_map(|i| i.to_le_bytes()).collect();
    items.push((
        "position_ids".into(),
        "LongStorage",
        items.len().to_string(),
        512,
    ));
    storages.push(ids);
    let meta: Vec<(&str, &str, &str, usize)> = items
        .iter()
        .map(|(n, c, k, e)| (n.as_str(), *c, k.as_str(), *e))
        .collect();
    let mut file = Vec::new();
    {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(&mut file));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        z.start_file("magika/data.pkl", stored).unwrap();
        z.write_all(&torch_pickle(&meta)).unwrap();
        for (key, bytes) in storages.iter().enumerate() {
            z.start_file(format!("magika/data/{key}"), stored).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.start_file("magika/version", stored).unwrap();
        z.write_all(b"3\n").unwrap();
        z.finish().unwrap();
    }
    takes_the_tensor_path("magika.pt", &file);
}
