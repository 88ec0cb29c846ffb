#!/usr/bin/env python3
"""Usage: python3 scripts/data/onnx_weights.py OUT_DIR MODEL.onnx...

Float weights of ONNX models as safetensors files (f32, and cast to f16 and bf16), to test
the tensor path on weights outside the shared corpora. Needs: pip install onnx safetensors numpy.
Models to try: e.g. the three models in the rapidocr-onnxruntime 1.4.4 wheel: pip download --no-deps
rapidocr-onnxruntime, then unzip it.
"""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import onnx, numpy as np, sys, os, json, struct
from onnx import numpy_helper
from safetensors.numpy import save_file
out_dir = sys.argv[1]
for path in sys.argv[2:]:
    m = onnx.load(path)
    ts = {}
    cands = [(i.name, i) for i in m.graph.initializer]
    for node in m.graph.node:
        if node.op_type == 'Constant':
            for at in node.attribute:
                if at.type == onnx.AttributeProto.TENSOR:
                    cands.append((node.output[0], at.t))
    for name, t in cands:
        a = numpy_helper.to_array(t)
        if a.dtype == np.float32 and a.size >= 16:
            ts[name] = np.ascontiguousarray(a)
    base = os.path.basename(path).replace('.onnx', '')
    save_file(ts, f'{out_dir}/{base}.f32.safetensors')
    save_file({k: v.astype(np.float16) for k, v in ts.items()}, f'{out_dir}/{base}.f16.safetensors')
    # bf16: top half of f32 with round-to-nearest-even, stored as uint16 then viewed
    def bf16(v):
        u = v.view(np.uint32).astype(np.uint64)
        r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        return r
    # safetensors.numpy has no bf16 dtype; write via the torch-free path: build manually
    header = {}; off = 0; blobs = []
    for k, v in ts.items():
        b = bf16(v).tobytes()
        header[k] = {"dtype": "BF16", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        off += len(b); blobs.append(b)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(f'{out_dir}/{base}.bf16.safetensors', 'wb') as f:
        f.write(struct.pack('<Q', len(h))); f.write(h)
        for b in blobs: f.write(b)
    print(base, len(ts), sum(v.size for v in ts.values()))
