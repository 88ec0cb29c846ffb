#!/usr/bin/env python3
"""Usage: python3 scripts/data/dequantized.py OUT_DIR

Writes safetensors files of dequantized f32 weights (integers times a scale), the kind a
quantized model exported back to float holds: OUT_DIR/deq8.f32.safetensors (int8 values, one
scale per tensor), OUT_DIR/deq4row.f32.safetensors (int4 values, one scale per row),
OUT_DIR/deq8row.f32.safetensors (int8, a scale per row) and OUT_DIR/deq4g128.f32.safetensors
(int4, a scale per group of 128 values along a row). Six 512x768 tensors each, from a fixed
seed (the first two files as written before the last two were added). Each also as
NAME.bf16.safetensors: the f32 values cut to bf16 (their top 16 bits), and as
NAME.bf16r.safetensors: rounded to the nearest bf16, ties to even (as torch converts), and as
NAME.f16.safetensors: rounded to the nearest f16 (as NumPy converts). Then deq4g32h: int4
values in groups of 32 along a row, each with an f16 scale, written the same four ways. Last,
deq4q40: llama.cpp's Q4_0 as it quantizes normal weights (per group of 32, d = the value of
largest magnitude / -8 stored as f16, levels (int)(x / d + 8.5) - 8 up to 7), dequantized as
level * d (zeros of groups with a negative d are -0.0), written the same four ways.
"""
import sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import json
import struct
import sys

import numpy as np


def write(path, tensors):
    _write(path, tensors, "F32")
    bf16 = [(name, (a.view(np.uint32) >> 16).astype(np.uint16)) for name, a in tensors]
    _write(path.replace(".f32.", ".bf16."), bf16, "BF16")
    rounded = []
    for name, a in tensors:
        u = a.view(np.uint32).astype(np.uint64)
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        rounded.append((name, r))
    _write(path.replace(".f32.", ".bf16r."), rounded, "BF16")
    _write(path.replace(".f32.", ".f16."), [(n, a.astype(np.float16)) for n, a in tensors], "F16")


def _write(path, tensors, dtype):
    header, blobs, off = {}, [], 0
    for name, a in tensors:
        b = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


rng = np.random.default_rng(1)
out = sys.argv[1]
t = []
for i in range(6):
    q = np.clip(np.round(rng.normal(0, 30, (512, 768))), -127, 127).astype(np.float32)
    t.append((f"w{i}", (q * np.float32(rng.uniform(0.001, 0.01))).astype(np.float32)))
write(f"{out}/deq8.f32.safetensors", t)
t = []
for i in range(6):
    q = np.clip(np.round(rng.normal(0, 3, (512, 768))), -8, 7).astype(np.float32)
    scale = rng.uniform(0.001, 0.01, (512, 1)).astype(np.float32)
    t.append((f"w{i}", (q * scale).astype(np.float32)))
write(f"{out}/deq4row.f32.safetensors", t)
t = []
for i in range(6):
    q = np.clip(np.round(rng.normal(0, 30, (512, 768))), -127, 127).astype(np.float32)
    scale = rng.uniform(0.001, 0.01, (512, 1)).astype(np.float32)
    t.append((f"w{i}", (q * scale).astype(np.float32)))
write(f"{out}/deq8row.f32.safetensors", t)
t = []
for i in range(6):
    q = np.clip(np.round(rng.normal(0, 3, (512, 6, 128))), -8, 7).astype(np.float32)
    scale = rng.uniform(0.001, 0.01, (512, 6, 1)).astype(np.float32)
    t.append((f"w{i}", (q * scale).reshape(512, 768).astype(np.float32)))
write(f"{out}/deq4g128.f32.safetensors", t)
t = []
for i in range(6):
    q = np.clip(np.round(rng.normal(0, 3, (512, 24, 32))), -8, 7).astype(np.float32)
    scale = rng.uniform(0.001, 0.01, (512, 24, 1)).astype(np.float16).astype(np.float32)
    t.append((f"w{i}", (q * scale).reshape(512, 768).astype(np.float32)))
write(f"{out}/deq4g32h.f32.safetensors", t)
t = []
for i in range(6):
    w = rng.normal(0, 0.02, (512, 24, 32)).astype(np.float32)
    top = np.take_along_axis(w, np.argmax(np.abs(w), axis=2)[..., None], axis=2)
    d = (top / -8).astype(np.float32)
    inv = np.where(d != 0, 1 / d, 0).astype(np.float32)
    q = np.minimum(15, (w * inv + 8.5).astype(np.int8)).astype(np.float32) - 8
    dh = d.astype(np.float16).astype(np.float32)
    t.append((f"w{i}", (q * dh).reshape(512, 768).astype(np.float32)))
write(f"{out}/deq4q40.f32.safetensors", t)
