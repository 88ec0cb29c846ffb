#!/usr/bin/env python3
"""Writes fp8 casts of real weights, as fp8 checkpoints hold them: for every float tensor of
each input safetensors file, OUT_DIR/NAME.e4m3.safetensors (F8_E4M3, with a per-tensor f32
scale so the largest magnitude maps to 448, as FP8 inference stacks quantize weights) and
OUT_DIR/NAME.e5m2.safetensors (F8_E5M2, scaled to 57344), each tensor beside its
`NAME.scale` (F32, one value). Needs numpy and ml_dtypes.
Usage: python3 scripts/fp8_weights.py OUT_DIR FILE.safetensors..."""
import json
import os
import struct
import sys

import ml_dtypes
import numpy as np

FLOATS = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16, "F64": np.float64}
FP8 = {
    "e4m3": ("F8_E4M3", ml_dtypes.float8_e4m3fn, 448.0),
    "e5m2": ("F8_E5M2", ml_dtypes.float8_e5m2, 57344.0),
}


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] not in FLOATS:
            continue
        a, b = t["data_offsets"]
        yield name, np.frombuffer(body[a:b], dtype=FLOATS[t["dtype"]]).reshape(t["shape"])


def write(path, tensors):
    header, blobs, off = {}, [], 0
    for name, dtype, a in tensors:
        b = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        tensors = list(read(path))
        base = os.path.basename(path).split(".")[0]
        for kind, (tag, dtype, top) in FP8.items():
            rows = []
            for name, a in tensors:
                a = a.astype(np.float32)
                amax = float(np.abs(a).max()) or 1.0
                scale = np.float32(amax / top)
                rows.append((name, tag, (a / scale).astype(dtype).view(np.uint8).reshape(a.shape)))
                rows.append((name + ".scale", "F32", np.array([scale], dtype=np.float32)))
            write(os.path.join(out, f"{base}.{kind}.safetensors"), rows)


if __name__ == "__main__":
    main()
