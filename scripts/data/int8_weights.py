#!/usr/bin/env python3
"""Usage: python3 scripts/data/int8_weights.py OUT_DIR FILE.safetensors...

Writes int8 and packed int4 quantizations of real weights, as weight-only quantized
checkpoints hold them: for every 2-D float tensor of each input safetensors file, per output
row a scale mapping the row's largest magnitude to 127 (int8) or 7 (int4), the rounded values
as I8 (OUT_DIR/NAME.int8.safetensors) or as offset-binary nibbles packed two to a byte, low
nibble first, as U8 (OUT_DIR/NAME.int4.safetensors), each tensor beside its F32 `NAME.scale`
(one value per row); other tensors are kept as they are. Needs numpy.
"""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import os
import sys

import numpy as np

from tensorfile import read_floats, write


def quantized(a, top):
    scale = np.abs(a).max(axis=1, keepdims=True) / top
    scale[scale == 0] = 1
    return np.clip(np.round(a / scale), -top, top).astype(np.int8), scale.astype(np.float32).ravel()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        base = os.path.basename(path).split(".")[0]
        int8, int4 = [], []
        for name, dtype, a in read_floats(path):
            if a.ndim != 2:
                kept = (name, "F32", a.astype(np.float32))
                int8.append(kept)
                int4.append(kept)
                continue
            q, s = quantized(a, 127)
            int8 += [(name, "I8", q), (name + ".scale", "F32", s)]
            q, s = quantized(a, 7)
            nibbles = (q.astype(np.int16) + 8).astype(np.uint8).reshape(q.shape[0], -1)
            packed = nibbles[:, 0::2] | nibbles[:, 1::2] << 4
            int4 += [(name, "U8", packed), (name + ".scale", "F32", s)]
        write(os.path.join(out, f"{base}.int8.safetensors"), int8)
        write(os.path.join(out, f"{base}.int4.safetensors"), int4)


if __name__ == "__main__":
    main()
