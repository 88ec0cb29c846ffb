#!/usr/bin/env python3
"""Re-saves the float tensors of safetensors files as numpy .npz files (np.savez: a zip of
stored .npy members), for measuring sep's .npz path against other tools. bf16 tensors, which
numpy lacks, are widened to f32.
Usage: python3 scripts/npz.py OUT_DIR FILE.safetensors..."""
import json, os, struct, sys
import numpy as np

DT = {"F32": np.float32, "F16": np.float16, "F64": np.float64}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for path in sys.argv[2:]:
    raw = open(path, "rb").read()
    n = struct.unpack_from("<Q", raw, 0)[0]
    header = json.loads(raw[8:8 + n])
    arrays = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        body = raw[8 + n + lo:8 + n + hi]
        if t["dtype"] == "BF16":
            a = (np.frombuffer(body, np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] in DT:
            a = np.frombuffer(body, DT[t["dtype"]])
        else:
            continue
        arrays[name.replace("/", "_")] = a.reshape(t["shape"])
    dest = os.path.join(out, os.path.basename(path).replace(".safetensors", ".npz"))
    np.savez(dest, **arrays)
    print(dest, os.path.getsize(dest))
