#!/usr/bin/env python3
"""Bits per byte of a trained network (pretrained/train.py's checkpoint) alone on files, each
byte predicted from at most the window's bytes before it (windows of 512 overlapping by 64):
what the network knows before any context mixing. For measurement only: nothing here trains.

Usage: pretrained/evaluate.py TYPE BACKBONE FILE...
"""

import math
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train as T  # noqa: E402


def main():
    import jax
    import jax.numpy as jnp

    kind, backbone, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    ckpt = T.ROOT / f"target/pretrained/{kind}-{backbone}/ckpt.pkl"
    with open(ckpt, "rb") as f:
        saved = pickle.load(f)
    params = jax.tree_util.tree_map(jnp.asarray, saved["params"])
    print(f"{kind}-{backbone} at step {saved['step']}")

    @jax.jit
    def nll(p, x, pid, place, pbytes, partial):
        logits = T.forward(p, x, pid, place, pbytes, partial, backbone)
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, x[..., None], axis=-1)[..., 0] / math.log(2)

    for f in files:
        data = np.frombuffer(Path(f).read_bytes(), np.uint8)
        step = T.WINDOW - T.WARM
        last = max(len(data) - T.WINDOW, 0)
        starts = sorted(set(range(0, last + 1, step)) | {last})
        bits_at = np.full(len(data), np.nan)
        for i in range(0, len(starts), 32):
            chunk = starts[i : i + 32]
            x = np.zeros((len(chunk), T.WINDOW), np.int32)
            for r, s in enumerate(chunk):
                piece = data[s : s + T.WINDOW]
                x[r, : len(piece)] = piece
            pid, place, pbytes = T.patches(x)
            partial = pbytes[np.arange(len(chunk))[:, None], np.minimum(pid, T.NP - 1)]
            partial = np.where(np.arange(T.PMAX)[None, None, :] < place[..., None], partial, 256)
            bits = np.asarray(nll(params, x, pid, place, pbytes, partial))
            for r, s in enumerate(chunk):
                lo = 0 if s == 0 else T.WARM
                hi = min(T.WINDOW, len(data) - s)
                at = np.arange(lo, hi)
                at = at[(pid[r, lo:hi] < T.NP) & np.isnan(bits_at[s + at])]
                bits_at[s + at] = bits[r, at]
        total, count = np.nansum(bits_at), int(np.sum(~np.isnan(bits_at)))
        print(f"{Path(f).name}\t{len(data)}\t{total / max(count, 1):.3f} bits/byte")


if __name__ == "__main__":
    main()
