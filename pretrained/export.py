#!/usr/bin/env python3
"""Quantises a trained PAC network (pretrained/train.py's checkpoint) to the integer network
sep runs (src/codecs/net/frozen.rs), and holds the reference of that integer arithmetic.

The integer network, byte by byte (all of it exact integer arithmetic, so any machine gets the
same bits):
- int8 activations in units of 1/32; the embedding is such a table (row 256: zeros, the byte
  that is not there);
- each layer: int8 weights (a scale per output), sums in i32, then a fixed-point rescaling
  `(acc * mult + add + 2^(S-1)) >> S` (S = 22) to the layer's output units: for a GELU layer
  1/16, clamped to [-8, 8) and looked up in a 256-entry GELU table (int8 out, units 1/32); for
  the backbone's output 1/32, clamped to int8; for the logits 1/16, kept in i32;
- the distribution: counts `EXP[min(max - logit, 511)] + 1`, EXP[k] = round(2^16 exp(-k/16)).
The layers: fuse (a finished patch's byte embeddings, padded to 8, -> D, GELU), bb1 (the last K
patches' fused vectors, newest first, zeros where none -> HB, GELU), bb2 (-> D: the backbone's
output after that patch), head1 (the output after the last finished patch and the current
patch's byte embeddings so far, padded -> HH, GELU), head2 (-> 256 logits). A patch ends after
a separator (not an ASCII letter or digit, and below 128) or after 8 bytes.

Usage: pretrained/export.py TYPE OUT.safetensors   (from target/pretrained/TYPE-pac/ckpt.pkl)
       pretrained/export.py --fixture DIR          (a small random network and its counts on a
                                                    text, for src/codecs/net/frozen.rs's test)
"""

import json
import math
import pickle
import struct
import sys
from pathlib import Path

import numpy as np

S = 22
PMAX = 8
LAYERS = ["fuse", "bb1", "bb2", "head1", "head2"]
# Output units (1/n) of each layer's rescaling.
UNITS = {"fuse": 16, "bb1": 16, "bb2": 32, "head1": 16, "head2": 16}


def gelu(z):
    return 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))


GELU = np.clip(np.round(32 * gelu((np.arange(256) - 128) / 16)), -128, 127).astype(np.int8)
EXP = np.round(65536 * np.exp(-np.arange(512) / 16)).astype(np.int64)


def quantise(params):
    """The integer network of float parameters (train.py's layout: w [in, out])."""
    emb = np.asarray(params["emb"], np.float64).copy()
    emb[256] = 0
    # The tables too: a decoder computes no GELU nor exp of its own (no libm: the same bits
    # everywhere).
    q = {
        "emb": np.clip(np.round(emb * 32), -128, 127).astype(np.int8),
        "gelu": GELU,
        "exp": EXP.astype(np.int32),
    }
    for name in LAYERS:
        w = np.asarray(params[name]["w"], np.float64).T  # [out, in]
        b = np.asarray(params[name]["b"], np.float64)
        scale = np.maximum(np.abs(w).max(axis=1), 1e-9) / 127
        q[f"{name}.w"] = np.clip(np.round(w / scale[:, None]), -127, 127).astype(np.int8)
        unit = UNITS[name]
        q[f"{name}.mult"] = np.round(scale * unit / 32 * 2**S).astype(np.int32)
        q[f"{name}.add"] = np.round(b * unit * 2**S).astype(np.int64)
    return q


def rescale(acc, mult, add):
    return (acc.astype(np.int64) * mult.astype(np.int64) + add + (1 << (S - 1))) >> S


def layer(q, name, x):
    acc = q[f"{name}.w"].astype(np.int32) @ x.astype(np.int32)
    z = rescale(acc, q[f"{name}.mult"], q[f"{name}.add"])
    if name in ("fuse", "bb1", "head1"):
        return GELU[np.clip(z + 128, 0, 255)]
    if name == "bb2":
        return np.clip(z, -128, 127).astype(np.int8)
    return z


def separator(b):
    return not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b >= 128)


def counts(q, data):
    """The integer network's counts [len, 256] for each byte of `data`, from the block's start."""
    e = q["emb"].shape[1]
    d = q["bb2.w"].shape[0]
    k = q["bb1.w"].shape[1] // d
    fused, h, patch, out = [], np.zeros(d, np.int8), [], []
    for b in data:
        cur = np.concatenate([q["emb"][c] for c in patch + [256] * (PMAX - len(patch))])
        logits = layer(q, "head2", layer(q, "head1", np.concatenate([h, cur])))
        out.append(EXP[np.minimum(logits.max() - logits, 511)] + 1)
        patch.append(b)
        if separator(b) or len(patch) == PMAX:
            fused.insert(0, layer(q, "fuse", np.concatenate([q["emb"][c] for c in patch + [256] * (PMAX - len(patch))])))
            fused = fused[:k]
            ctx = np.concatenate(fused + [np.zeros(d, np.int8)] * (k - len(fused)))
            h = layer(q, "bb2", layer(q, "bb1", ctx))
            patch = []
    return np.array(out)


def save(q, path, meta):
    """A safetensors file of the integer network's tensors."""
    kinds = {np.int8: "I8", np.int32: "I32", np.int64: "I64"}
    header, blobs, at = {}, [], 0
    for name in sorted(q):
        a = np.ascontiguousarray(q[name])
        raw = a.tobytes()
        header[name] = {"dtype": kinds[a.dtype.type], "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    header["__metadata__"] = meta
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def fixture(out):
    """A small random network (E 4, D 8, K 2, HB 16, HH 16) and its counts on a text."""
    rng = np.random.default_rng(55)
    e, d, k, hb, hh = 4, 8, 2, 16, 16
    dims = {"fuse": (PMAX * e, d), "bb1": (k * d, hb), "bb2": (hb, d), "head1": (d + PMAX * e, hh), "head2": (hh, 256)}
    params = {"emb": rng.normal(0, 1, (257, e))}
    for name, (i, o) in dims.items():
        params[name] = {"w": rng.normal(0, 1 / math.sqrt(i), (i, o)), "b": rng.normal(0, 0.1, o)}
    q = quantise(params)
    text = b"The network of sep, frozen: patches end at separators or after 8 bytes (abcdefghijk)\n"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save(q, out / "frozen-small.safetensors", {"format": "sep-net", "backbone": "pac"})
    c = counts(q, text)
    (out / "frozen-small.txt").write_bytes(text)
    (out / "frozen-small.counts").write_bytes(c.astype("<u4").tobytes())


def main():
    if sys.argv[1] == "--fixture":
        fixture(sys.argv[2])
        return
    kind, path = sys.argv[1], sys.argv[2]
    root = Path(__file__).resolve().parent.parent
    with open(root / f"target/pretrained/{kind}-pac/ckpt.pkl", "rb") as f:
        saved = pickle.load(f)
    q = quantise(saved["params"])
    save(q, path, {"format": "sep-net", "backbone": "pac", "type": kind, "step": str(saved["step"])})


if __name__ == "__main__":
    main()
