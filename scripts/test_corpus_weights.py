#!/usr/bin/env python3
"""Float weights of an ONNX model as safetensors files for the committed test corpus
(corpora/test): f32 as stored, and exact casts of those f32 values to bf16 (round to nearest,
ties to even) and f16 (numpy's cast, round to nearest even). Deterministic: tensors in name
order, the same JSON header every time, so corpora/test/build reproduces MANIFEST.tsv's sha256.

Usage: python3 scripts/test_corpus_weights.py MODEL.onnx OUT_PREFIX DTYPE...
  DTYPE: f32, bf16 or f16; writes OUT_PREFIX.DTYPE.safetensors for each.
Takes every float32 tensor of 16 values or more, initializers and Constant nodes alike.
Needs: pip install onnx numpy."""
import json
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def weights(path):
    m = onnx.load(path)
    cands = [(i.name, i) for i in m.graph.initializer]
    for node in m.graph.node:
        if node.op_type == "Constant":
            for at in node.attribute:
                if at.type == onnx.AttributeProto.TENSOR:
                    cands.append((node.output[0], at.t))
    out = {}
    for name, t in cands:
        a = numpy_helper.to_array(t)
        if a.dtype == np.float32 and a.size >= 16:
            out[name] = np.ascontiguousarray(a)
    return dict(sorted(out.items()))


def bf16(v):
    u = v.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


CASTS = {
    "f32": ("F32", lambda v: v.astype("<f4")),
    "bf16": ("BF16", lambda v: bf16(v).astype("<u2")),
    "f16": ("F16", lambda v: v.astype("<f2")),
}


def write(path, tensors, dtype):
    tag, cast = CASTS[dtype]
    header, blobs, off = {}, [], 0
    for name, v in tensors.items():
        b = cast(v).tobytes()
        header[name] = {"dtype": tag, "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    if len(sys.argv) < 4 or any(d not in CASTS for d in sys.argv[3:]):
        sys.exit(__doc__)
    model, prefix = sys.argv[1], sys.argv[2]
    ts = weights(model)
    for dtype in sys.argv[3:]:
        write(f"{prefix}.{dtype}.safetensors", ts, dtype)
    print(f"{model}: {len(ts)} tensors, {sum(v.size for v in ts.values())} values")


if __name__ == "__main__":
    main()
