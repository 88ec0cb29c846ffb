#!/usr/bin/env python3
"""Usage: python3 scripts/data/fp8_weights.py OUT_DIR FILE.safetensors...

Writes fp8 casts of real weights, as fp8 checkpoints hold them: for every float tensor of
each input safetensors file, OUT_DIR/NAME.e4m3.safetensors (F8_E4M3, with a per-tensor f32
scale so the largest magnitude maps to 448, as FP8 inference stacks quantize weights) and
OUT_DIR/NAME.e5m2.safetensors (F8_E5M2, scaled to 57344), each tensor beside its
`NAME.scale` (F32, one value). Needs numpy and ml_dtypes.
"""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import os
import sys

import ml_dtypes
import numpy as np

from tensorfile import read_floats, write

FP8 = {
    "e4m3": ("F8_E4M3", ml_dtypes.float8_e4m3fn, 448.0),
    "e5m2": ("F8_E5M2", ml_dtypes.float8_e5m2, 57344.0),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        tensors = [(name, a) for name, _, a in read_floats(path)]
        base = os.path.basename(path).split(".")[0]
        for kind, (tag, dtype, top) in FP8.items():
            rows = []
            for name, a in tensors:
                amax = float(np.abs(a).max()) or 1.0
                scale = np.float32(amax / top)
                rows.append((name, tag, (a / scale).astype(dtype).view(np.uint8).reshape(a.shape)))
                rows.append((name + ".scale", "F32", np.array([scale], dtype=np.float32)))
            write(os.path.join(out, f"{base}.{kind}.safetensors"), rows)


if __name__ == "__main__":
    main()
