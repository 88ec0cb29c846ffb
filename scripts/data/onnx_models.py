#!/usr/bin/env python3
"""Usage: python3 scripts/data/onnx_models.py OUT_DIR MODEL.onnx...

ONNX models re-saved with their float weights cast to f16 and bf16 (by onnx's own serializer),
beside the original f32 model, to test sep's ONNX detection on models outside the corpora.
Needs: pip install onnx numpy. Models to try: the three of the rapidocr-onnxruntime 1.4.4
wheel (pip download --no-deps rapidocr-onnxruntime==1.4.4, then unzip it). The casts are files
to compress, not models to run.
"""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import os, shutil, sys
import numpy as np
import onnx
from onnx import numpy_helper


def tensors(model):
    """Every TensorProto of the main graph: initializers and Constant nodes' values."""
    yield from model.graph.initializer
    for node in model.graph.node:
        for at in node.attribute:
            if at.type == onnx.AttributeProto.TENSOR:
                yield at.t


def bf16_bytes(a):
    """f32 to bf16 with round-to-nearest-even, as little-endian bytes."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()


out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
for path in sys.argv[2:]:
    base = os.path.basename(path).removesuffix(".onnx")
    shutil.copyfile(path, f"{out_dir}/{base}.f32.onnx")
    for name in ("f16", "bf16"):
        m = onnx.load(path)
        for t in tensors(m):
            if t.data_type != onnx.TensorProto.FLOAT:
                continue
            a = numpy_helper.to_array(t)
            t.ClearField("float_data")
            if name == "f16":
                t.raw_data = a.astype("<f2").tobytes()
                t.data_type = onnx.TensorProto.FLOAT16
            else:
                t.raw_data = bf16_bytes(a)
                t.data_type = onnx.TensorProto.BFLOAT16
        onnx.save(m, f"{out_dir}/{base}.{name}.onnx")
    print(base)
