#!/usr/bin/env python3
"""Usage: [LR=1e-3] [DTYPE=f32|bf16] [FROZEN=... FREEZE_AT=N] python3 scripts/data/checkpoint_series.py OUT_DIR STEPS EVERY TEXT_FILE...

A checkpoint series from real training steps: a small byte-level language model (embedding,
one hidden layer of 512, softmax over 256 bytes; about 0.4M parameters) trained with Adam on
text given on the command line, saved as safetensors every EVERY steps: f32, or with DTYPE=bf16
the master weights rounded to bf16 (to nearest, ties to even), as mixed-precision training saves
them. The test data of checkpoint deltas (`--patch-from`). Needs: pip install numpy safetensors.
With FROZEN=emb,w1 FREEZE_AT=N those tensors stop training after step N.
"""
import sys

if len(sys.argv) < 5 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import os, sys
import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensorfile import write  # noqa: E402

out, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text = np.frombuffer(b"".join(open(f, "rb").read() for f in sys.argv[4:]), dtype=np.uint8)
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(1)
CTX, EMB, HID, BATCH = 8, 32, 512, 256
LR = float(os.environ.get("LR", "1e-3"))
DTYPE = os.environ.get("DTYPE", "f32")
# Tensors that do not train after step FREEZE_AT (a fine-tune of the head only, say).
FROZEN = [k for k in os.environ.get("FROZEN", "").split(",") if k]
FREEZE_AT = int(os.environ.get("FREEZE_AT", "0"))


def save_bf16(tensors, path):
    """A safetensors file of `tensors` (f32 arrays) rounded to bf16, tensors in name order."""
    rounded = []
    for name in sorted(tensors):
        bits = tensors[name].astype(np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        rounded.append((name, "BF16", bits.astype(np.uint16).reshape(tensors[name].shape)))
    write(path, rounded)


p = {
    "emb": rng.normal(0, 0.1, (256, EMB)).astype(np.float32),
    "w1": rng.normal(0, (CTX * EMB) ** -0.5, (CTX * EMB, HID)).astype(np.float32),
    "b1": np.zeros(HID, np.float32),
    "w2": rng.normal(0, HID**-0.5, (HID, 256)).astype(np.float32),
    "b2": np.zeros(256, np.float32),
}
m = {k: np.zeros_like(v) for k, v in p.items()}
v = {k: np.zeros_like(v) for k, v in p.items()}
for step in range(1, steps + 1):
    at = rng.integers(CTX, len(text), BATCH)
    ctx = np.stack([text[at - CTX + i] for i in range(CTX)], 1)
    y = text[at]
    x = p["emb"][ctx].reshape(BATCH, -1)
    h = np.maximum(x @ p["w1"] + p["b1"], 0)
    z = h @ p["w2"] + p["b2"]
    z -= z.max(1, keepdims=True)
    pr = np.exp(z)
    pr /= pr.sum(1, keepdims=True)
    loss = -np.log(pr[np.arange(BATCH), y] + 1e-9).mean()
    dz = pr
    dz[np.arange(BATCH), y] -= 1
    dz /= BATCH
    g = {"w2": h.T @ dz, "b2": dz.sum(0)}
    dh = (dz @ p["w2"].T) * (h > 0)
    g["w1"] = x.T @ dh
    g["b1"] = dh.sum(0)
    dx = (dh @ p["w1"].T).reshape(BATCH, CTX, EMB)
    g["emb"] = np.zeros_like(p["emb"])
    np.add.at(g["emb"], ctx, dx)
    for k in p:
        if k in FROZEN and step > FREEZE_AT:
            continue
        m[k] = 0.9 * m[k] + 0.1 * g[k]
        v[k] = 0.999 * v[k] + 0.001 * g[k] ** 2
        mh, vh = m[k] / (1 - 0.9**step), v[k] / (1 - 0.999**step)
        p[k] = (p[k] - LR * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
    if step % every == 0:
        path = f"{out}/step{step:06d}.safetensors"
        if DTYPE == "bf16":
            save_bf16(p, path)
        else:
            save_file(p, path)
        print(step, "loss %.3f" % loss, flush=True)
