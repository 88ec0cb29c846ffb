//! The ONNX container (a protobuf `ModelProto`): where its float tensors lie.
//!
//! An ONNX file is one protobuf message: the model's fields (ir_version first), its graph, and
//! in the graph the nodes and initializers. Weights are `TensorProto`s, either the graph's
//! initializers or the value of a `Constant` node's attribute (subgraphs of `If` and `Loop`
//! nodes hold more of both). A tensor's values are little-endian in `raw_data`, or, for f32
//! and f64, in a packed `float_data` / `double_data` field: contiguous bytes either way, which
//! take the tensor path when the tensor's `data_type` is a float type sep codes; the rest (the
//! graph's structure, names, integer tensors, small tensors) stays general data.
//!
//! The protobuf wire format is walked here, message by message, with every length checked
//! against its enclosing message: only the offsets of the tensors' bytes are needed, where a
//! schema-driven protobuf crate would decode and copy every tensor.

use super::segment::{around, Kind};
use crate::codecs::float::DType;

/// Tensors smaller than this stay in the general data around them (a block of their own
/// would cost more than their values save).
const MIN_TENSOR: u64 = 4 << 10;
/// Deepest nesting of subgraphs followed.
const MAX_DEPTH: u32 = 16;

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// One field of a message: its number, wire type, and for length-delimited fields the
/// payload's absolute range; for varints the value.
struct ProtoField {
    number: u64,
    wire: u8,
    value: u64,
    start: usize,
    end: usize,
}

/// The fields of the message in `data[start..end]`; `None` at the first malformed one.
struct ProtoFields<'a> {
    data: &'a [u8],
    at: usize,
    end: usize,
}

impl<'a> ProtoFields<'a> {
    fn new(data: &'a [u8], start: usize, end: usize) -> Self {
        ProtoFields {
            data,
            at: start,
            end,
        }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            if self.at >= self.end {
                return None;
            }
            let b = self.data[self.at];
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// The next field; `Some(None)` at the message's end, `None` if it is malformed.
    fn next_field(&mut self) -> Option<Option<ProtoField>> {
        if self.at == self.end {
            return Some(None);
        }
        let key = self.varint()?;
        let (number, wire) = (key >> 3, (key & 7) as u8);
        if number == 0 {
            return None;
        }
        let mut f = ProtoField {
            number,
            wire,
            value: 0,
            start: self.at,
            end: self.at,
        };
        match wire {
            VARINT => f.value = self.varint()?,
            FIXED64 | FIXED32 => {
                let n = if wire == FIXED64 { 8 } else { 4 };
                if self.end - self.at < n {
                    return None;
                }
                self.at += n;
            }
            LEN => {
                let n = usize::try_from(self.varint()?).ok()?;
                if self.end - self.at < n {
                    return None;
                }
                f.start = self.at;
                self.at += n;
                f.end = self.at;
            }
            _ => return None,
        }
        Some(Some(f))
    }
}

/// The float type of an ONNX `TensorProto.DataType`, if sep codes it.
fn float_type(t: u64) -> Option<DType> {
    match t {
        1 => Some(DType::F32),
        10 => Some(DType::F16),
        11 => Some(DType::F64),
        16 => Some(DType::BF16),
        // FLOAT8E4M3FN and FLOAT8E5M2, the layouts of sep's fp8 types.
        17 => Some(DType::F8E4M3),
        19 => Some(DType::F8E5M2),
        _ => None,
    }
}

/// Adds the float bytes of the `TensorProto` in `data[start..end]` to `found`.
fn tensor(data: &[u8], start: usize, end: usize, found: &mut Vec<(u64, u64, DType)>) -> Option<()> {
    let mut fields = ProtoFields::new(data, start, end);
    let mut dtype = None;
    let mut values = None;
    while let Some(f) = fields.next_field()? {
        match (f.number, f.wire) {
            (2, VARINT) => dtype = Some(f.value),
            // raw_data, and packed float_data / double_data.
            (9 | 4 | 10, LEN) => values = Some((f.number, f.start, f.end)),
            _ => {}
        }
    }
    let d = dtype.and_then(float_type);
    if let (Some(d), Some((field, s, e))) = (d, values) {
        let typed = match field {
            4 => d == DType::F32,
            10 => d == DType::F64,
            _ => true,
        };
        let len = (e - s) as u64;
        if typed && len >= MIN_TENSOR && len.is_multiple_of(d.width() as u64) {
            found.push((s as u64, len, d));
        }
    }
    Some(())
}

/// Walks the `GraphProto` in `data[start..end]`: initializers, and the tensors and subgraphs
/// of its nodes' attributes.
fn graph(
    data: &[u8],
    start: usize,
    end: usize,
    depth: u32,
    found: &mut Vec<(u64, u64, DType)>,
) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut fields = ProtoFields::new(data, start, end);
    while let Some(f) = fields.next_field()? {
        match (f.number, f.wire) {
            (5, LEN) => tensor(data, f.start, f.end, found)?,
            (1, LEN) => node(data, f.start, f.end, depth, found)?,
            _ => {}
        }
    }
    Some(())
}

/// Walks a `NodeProto`'s attributes: a tensor (`t`), tensors, a subgraph (`g`), subgraphs.
fn node(
    data: &[u8],
    start: usize,
    end: usize,
    depth: u32,
    found: &mut Vec<(u64, u64, DType)>,
) -> Option<()> {
    let mut fields = ProtoFields::new(data, start, end);
    while let Some(f) = fields.next_field()? {
        if (f.number, f.wire) != (5, LEN) {
            continue;
        }
        let mut attr = ProtoFields::new(data, f.start, f.end);
        while let Some(a) = attr.next_field()? {
            match (a.number, a.wire) {
                (5 | 10, LEN) => tensor(data, a.start, a.end, found)?,
                (6 | 11, LEN) => graph(data, a.start, a.end, depth + 1, found)?,
                _ => {}
            }
        }
    }
    Some(())
}

/// Segments of a well-formed ONNX file holding float tensors of at least `MIN_TENSOR` bytes,
/// or `None`.
pub fn stretches(data: &[u8]) -> Option<Vec<(u64, Kind)>> {
    // Serialisers write the fields in number order: ir_version (field 1, a varint) first.
    if data.first() != Some(&0x08) {
        return None;
    }
    let mut fields = ProtoFields::new(data, 0, data.len());
    let mut found = Vec::new();
    let mut has_graph = false;
    while let Some(f) = fields.next_field()? {
        match (f.number, f.wire) {
            (1, VARINT) if f.value == 0 || f.value > 64 => return None,
            (7, LEN) => {
                graph(data, f.start, f.end, 0, &mut found)?;
                has_graph = true;
            }
            // ModelProto's other fields, each with its own wire type.
            (1 | 5, VARINT) | (2 | 3 | 4 | 6 | 8 | 14 | 20 | 25 | 26, LEN) => {}
            _ => return None,
        }
    }
    if !has_graph {
        return None;
    }
    around(data.len() as u64, found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn len_field(number: u64, payload: &[u8], out: &mut Vec<u8>) {
        varint(number << 3 | 2, out);
        varint(payload.len() as u64, out);
        out.extend_from_slice(payload);
    }

    fn varint_field(number: u64, v: u64, out: &mut Vec<u8>) {
        varint(number << 3, out);
        varint(v, out);
    }

    /// A TensorProto: dims, data type, name, values in `raw_data` (field 9) or packed field.
    pub(crate) fn tensor_proto(
        name: &str,
        dims: &[u64],
        dtype: u64,
        field: u64,
        values: &[u8],
    ) -> Vec<u8> {
        let mut t = Vec::new();
        for &d in dims {
            varint_field(1, d, &mut t);
        }
        varint_field(2, dtype, &mut t);
        len_field(8, name.as_bytes(), &mut t);
        len_field(field, values, &mut t);
        t
    }

    /// A model whose graph has `inits` as initializers and `consts` as Constant nodes.
    pub(crate) fn model(inits: &[Vec<u8>], consts: &[Vec<u8>]) -> Vec<u8> {
        let mut g = Vec::new();
        for (i, c) in consts.iter().enumerate() {
            let mut attr = Vec::new();
            len_field(1, b"value", &mut attr);
            len_field(5, c, &mut attr);
            varint_field(20, 4, &mut attr);
            let mut node = Vec::new();
            len_field(2, format!("c{i}").as_bytes(), &mut node);
            len_field(4, b"Constant", &mut node);
            len_field(5, &attr, &mut node);
            len_field(1, &node, &mut g);
        }
        len_field(2, b"graph", &mut g);
        for t in inits {
            len_field(5, t, &mut g);
        }
        let mut m = Vec::new();
        varint_field(1, 8, &mut m);
        len_field(2, b"sep-test", &mut m);
        len_field(7, &g, &mut m);
        let mut opset = Vec::new();
        varint_field(2, 17, &mut opset);
        len_field(8, &opset, &mut m);
        m
    }

    #[test]
    fn float_tensors_are_found_and_the_rest_is_general() {
        let f32s: Vec<u8> = (0..3000u32)
            .flat_map(|i| (i as f32 * 0.01).to_le_bytes())
            .collect();
        let f16s: Vec<u8> = (0..4100u32)
            .flat_map(|i| (i as u16).to_le_bytes())
            .collect();
        let ints: Vec<u8> = (0..2000u64).flat_map(|i| i.to_le_bytes()).collect();
        let small: Vec<u8> = (0..16u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let file = model(
            &[
                tensor_proto("w", &[1000, 3], 1, 9, &f32s),
                tensor_proto("ids", &[2000], 7, 9, &ints),
                tensor_proto("b", &[16], 1, 9, &small),
            ],
            &[
                tensor_proto("k", &[4100], 10, 9, &f16s),
                tensor_proto("p", &[3000], 1, 4, &f32s),
            ],
        );
        let p = stretches(&file).unwrap();
        assert_eq!(p.iter().map(|x| x.0).sum::<u64>(), file.len() as u64);
        let floats: Vec<_> = p.iter().filter(|x| x.1 != Kind::General).collect();
        assert_eq!(
            floats,
            [
                &(f16s.len() as u64, Kind::Tensor(DType::F16)),
                &(f32s.len() as u64, Kind::Tensor(DType::F32)),
                &(f32s.len() as u64, Kind::Tensor(DType::F32)),
            ]
        );
        // The tensors' bytes are where the parts say.
        let mut at = 0usize;
        let mut seen = Vec::new();
        for (len, kind) in &p {
            if *kind != Kind::General {
                seen.push(file[at..at + *len as usize].to_vec());
            }
            at += *len as usize;
        }
        assert_eq!(seen, [f16s.clone(), f32s.clone(), f32s.clone()]);
        // Cut files, a length past its message, and other first bytes are not ONNX.
        for cut in [1, 20, 100, file.len() / 2, file.len() - 1] {
            assert!(stretches(&file[..cut]).is_none(), "cut at {cut}");
        }
        let mut bad = file.clone();
        bad[0] = b'{';
        assert!(stretches(&bad).is_none());
        // A model without float tensors is left to the general path.
        assert!(stretches(&model(&[tensor_proto("ids", &[2000], 7, 9, &ints)], &[])).is_none());
    }
}
