#!/usr/bin/env python3
"""Trains a SEP network for one data type on its corpus (pretrained/corpus.py) with JAX on CPU,
checkpointing as it goes so that a run resumes where it stopped.

The network predicts each byte's 256-way distribution from the bytes before it:
- byte embedding (`E` wide), then patches: a patch ends after a separator (any byte not an
  ASCII letter or digit, or one of 128..255) or after `PMAX` bytes: the adaptive stride, which
  for text runs the backbone about once a word instead of once a byte;
- dimension fusion: a patch's byte embeddings (padded to `PMAX`) concatenated and mapped to
  `D` wide;
- the backbone, once per patch: `pac`, an MLP over the last `K` patches' fused vectors, or
  `trace`, causal linear attention over all the patches before;
- the head, once per byte: the backbone's output after the last finished patch, with the
  embeddings of the bytes of the current patch so far, through an MLP to 256 logits.

Usage: pretrained/train.py TYPE [--backbone pac|trace] [--steps N] [--until N] [--minutes M]
                           [--mix TYPE2:WEIGHT]... [--crlf SHARE] [--init RUN] [--lr LR]
                           [--warmup N]
Checkpoints go to target/pretrained/TYPE-BACKBONE/ (ckpt.pkl, log.tsv).
"""

import argparse
import math
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

E, PMAX, D, K, HB, HH = 32, 8, 192, 6, 768, 384
WINDOW, WARM = 512, 64
# Patches of a window computed: bytes in later ones (a window of many separators) are left
# out of the loss.
NP = 224


def is_separator(x):
    letter = ((x >= 65) & (x <= 90)) | ((x >= 97) & (x <= 122))
    digit = (x >= 48) & (x <= 57)
    return ~(letter | digit | (x >= 128))


def patches(x):
    """For windows `x` [B, L] of bytes: each byte's patch index, each byte's place in its patch,
    and the patches' bytes [B, L, PMAX] (256 where there is none)."""
    b, l = x.shape
    idx = np.arange(l)[None, :].repeat(b, 0)
    sep = is_separator(x)
    last = np.maximum.accumulate(np.where(sep, idx, -1), axis=1)
    dist = idx - last  # 0 at a separator
    # A patch ends after a separator, or after PMAX bytes of a run of non-separators.
    end = sep | (dist % PMAX == 0)
    start = np.concatenate([np.ones((b, 1), bool), end[:, :-1]], axis=1)
    pid = np.cumsum(start, axis=1) - 1
    first = np.maximum.accumulate(np.where(start, idx, 0), axis=1)
    place = idx - first
    pbytes = np.full((b, l, PMAX), 256, np.int32)
    rows = np.arange(b)[:, None].repeat(l, 1)
    pbytes[rows, pid, place] = x
    return pid, place, pbytes[:, :NP]


def batch(sources, rng, b, crlf=0.0):
    """A batch of `b` windows of WINDOW bytes from random places of `sources` ((bytes, weight)
    pairs), each window's source drawn by weight; with probability `crlf` a window has its
    line ends as CR LF (files from other systems: the corpora's are LF only)."""
    if len(sources) == 1:
        # One draw for all, as the held-out batches have always been drawn.
        pick = np.zeros(b, int)
        starts = rng.integers(0, len(sources[0][0]) - WINDOW, b)
    else:
        weights = np.array([w for _, w in sources], float)
        pick = rng.choice(len(sources), size=b, p=weights / weights.sum())
        starts = [int(rng.integers(0, len(sources[i][0]) - WINDOW)) for i in pick]
    crlfs = rng.random(b) < crlf if crlf > 0 else np.zeros(b, bool)
    rows = []
    for i, s, c in zip(pick, starts, crlfs):
        data = sources[i][0]
        w = data[s : s + WINDOW]
        if c:
            w = data[s : s + 2 * WINDOW].replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")[:WINDOW]
        rows.append(np.frombuffer(w, np.uint8))
    x = np.stack(rows).astype(np.int32)
    pid, place, pbytes = patches(x)
    # The bytes of each byte's patch before it: its patch's bytes, those at or past its place
    # masked.
    partial = pbytes[np.arange(x.shape[0])[:, None], np.minimum(pid, NP - 1)]  # [B, L, PMAX]
    partial = np.where(np.arange(PMAX)[None, None, :] < place[..., None], partial, 256)
    return x, pid, place, pbytes, partial


def init(key, backbone):
    import jax
    import jax.numpy as jnp

    def dense(k, n_in, n_out):
        return {
            "w": jax.random.normal(k, (n_in, n_out)) * math.sqrt(1.0 / n_in),
            "b": jnp.zeros((n_out,)),
        }

    ks = jax.random.split(key, 8)
    p = {
        "emb": jax.random.normal(ks[0], (257, E)) * 0.5,
        "fuse": dense(ks[1], PMAX * E, D),
        "head1": dense(ks[4], D + PMAX * E, HH),
        "head2": dense(ks[5], HH, 256),
    }
    if backbone == "pac":
        p["bb1"] = dense(ks[2], K * D, HB)
        p["bb2"] = dense(ks[3], HB, D)
    else:
        p["q"] = dense(ks[2], D, D)
        p["k"] = dense(ks[3], D, D)
        p["v"] = dense(ks[6], D, D)
        p["ff1"] = dense(ks[7], 2 * D, HB)
        p["ff2"] = dense(jax.random.split(ks[7])[0], HB, D)
    p["emb"] = p["emb"].at[256].set(0.0)
    return p


def forward(p, x, pid, place, pbytes, partial, backbone):
    import jax
    import jax.numpy as jnp

    act = jax.nn.gelu
    lin = lambda d, v: v @ d["w"] + d["b"]
    emb = p["emb"].at[256].set(0.0)
    b, l = x.shape
    fused = act(lin(p["fuse"], emb[pbytes].reshape(b, NP, PMAX * E)))  # [B, NP, D]
    if backbone == "pac":
        # The last K patches, the newest first; patches before the window are zeros.
        padded = jnp.concatenate([jnp.zeros((b, K - 1, D)), fused], axis=1)
        ctx = jnp.concatenate([padded[:, K - 1 - j : K - 1 - j + NP] for j in range(K)], axis=-1)
        h = lin(p["bb2"], act(lin(p["bb1"], ctx)))
    else:
        q = jax.nn.elu(lin(p["q"], fused)) + 1
        kk = jax.nn.elu(lin(p["k"], fused)) + 1
        v = lin(p["v"], fused)
        # Causal linear attention, in its quadratic form for training (decoding keeps the
        # running sums of k v^T and k instead: the same values).
        a = jnp.tril(jnp.einsum("bld,bmd->blm", q, kk))
        att = jnp.einsum("blm,bmd->bld", a, v) / (a.sum(-1, keepdims=True) + 1e-6)
        h = lin(p["ff2"], act(lin(p["ff1"], jnp.concatenate([fused, att], -1))))
    # Each byte sees the backbone after the patch before its own (zeros for the first).
    hp = jnp.concatenate([jnp.zeros((b, 1, D)), h], axis=1)
    ctx = jnp.take_along_axis(hp, jnp.minimum(pid, NP)[..., None], axis=1)
    cur = emb[partial].reshape(b, l, PMAX * E)
    hid = act(lin(p["head1"], jnp.concatenate([ctx, cur], -1)))
    return lin(p["head2"], hid)


def loss_fn(p, x, pid, place, pbytes, partial, backbone):
    import jax
    import jax.numpy as jnp

    logits = forward(p, x, pid, place, pbytes, partial, backbone)[:, WARM:]
    target = x[:, WARM:]
    keep = (pid[:, WARM:] < NP).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits)
    nll = -jnp.take_along_axis(logp, target[..., None], axis=-1)[..., 0]
    return (nll * keep).sum() / keep.sum() / math.log(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("type")
    ap.add_argument("--backbone", default="pac", choices=["pac", "trace"])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--minutes", type=float, default=1e9)
    ap.add_argument("--until", type=int, help="stop at this step (the schedule stays --steps)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument(
        "--mix",
        action="append",
        default=[],
        metavar="TYPE:WEIGHT",
        help="another corpus to draw windows from, with its weight (TYPE's own is 1)",
    )
    ap.add_argument("--crlf", type=float, default=0.15, help="share of windows with CR LF")
    ap.add_argument(
        "--init",
        metavar="RUN",
        help="start from another run's weights (target/pretrained/RUN/ckpt.pkl), with a fresh "
        "optimizer and schedule: fine-tuning one type's network from another's",
    )
    ap.add_argument("--warmup", type=int, default=500, help="steps of learning-rate warm-up")
    args = ap.parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    corpus = ROOT / "target/pretrained/corpus"
    mix = [(args.type, 1.0)] + [(m.split(":")[0], float(m.split(":")[1])) for m in args.mix]
    train = [((corpus / f"{t}.train").read_bytes(), w) for t, w in mix]
    held = {t: (corpus / f"{t}.heldout").read_bytes() for t, _ in mix}
    out = ROOT / f"target/pretrained/{args.type}-{args.backbone}"
    out.mkdir(parents=True, exist_ok=True)
    sched = optax.warmup_cosine_decay_schedule(0.0, args.lr, args.warmup, args.steps, args.lr * 0.05)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=1e-4))
    ckpt = out / "ckpt.pkl"
    params = init(jax.random.PRNGKey(0), args.backbone)
    if args.init:
        with open(ROOT / f"target/pretrained/{args.init}/ckpt.pkl", "rb") as f:
            params = jax.tree_util.tree_map(jnp.asarray, pickle.load(f)["params"])
        print(f"starting from {args.init}'s weights", flush=True)
    state = opt.init(params)
    step = 0
    if ckpt.exists():
        with open(ckpt, "rb") as f:
            saved = pickle.load(f)
        params = jax.tree_util.tree_map(jnp.asarray, saved["params"])
        state = jax.tree_util.tree_map(jnp.asarray, saved["state"])
        step = saved["step"]
        print(f"resumed at step {step}", flush=True)
    lf = lambda p, *a: loss_fn(p, *a, args.backbone)

    @jax.jit
    def update(params, state, *a):
        loss, grads = jax.value_and_grad(lf)(params, *a)
        upd, state = opt.update(grads, state, params)
        return optax.apply_updates(params, upd), state, loss

    evaluate = jax.jit(lf)
    rng = np.random.default_rng(step)
    # Fixed held-out batches per type (LF only, as the files are), the same every run.
    held_batches = {}
    for t, h in held.items():
        held_rng = np.random.default_rng(12345)
        held_batches[t] = [batch([(h, 1.0)], held_rng, 32) for _ in range(8)]
    log_path = out / "log.tsv"
    columns = "step\tseconds\ttrain_bpb\theldout_bpb" + "".join(
        f"\theldout_{t}" for t, _ in mix[1:]
    )
    last_header = ""
    if log_path.exists():
        last_header = next(
            (l.rstrip("\n") for l in reversed(log_path.read_text().splitlines(True)) if l.startswith("step")),
            "",
        )
    log = open(log_path, "a")
    # A run with other corpora than the last writes its columns' header again.
    if last_header != columns:
        log.write(columns + "\n")
    started = time.time()
    running = []
    last = min(args.steps, args.until or args.steps)
    while step < last and time.time() - started < args.minutes * 60:
        params, state, loss = update(params, state, *batch(train, rng, args.batch, args.crlf))
        running.append(float(loss))
        step += 1
        out_of_time = time.time() - started >= args.minutes * 60
        if step % 250 == 0 or step == last or out_of_time:
            hs = [np.mean([float(evaluate(params, *hb)) for hb in held_batches[t]]) for t, _ in mix]
            t = time.time() - started
            shown = " ".join(f"{k} {h:.3f}" for (k, _), h in zip(mix, hs))
            print(f"step {step} {t:.0f}s train {np.mean(running):.3f} held-out {shown}", flush=True)
            log.write(f"{step}\t{t:.0f}\t{np.mean(running):.4f}\t" + "\t".join(f"{h:.4f}" for h in hs) + "\n")
            log.flush()
            running = []
            saved = {
                "params": jax.tree_util.tree_map(np.asarray, params),
                "state": jax.tree_util.tree_map(np.asarray, state),
                "step": step,
            }
            with open(out / "ckpt.tmp", "wb") as f:
                pickle.dump(saved, f)
            os.replace(out / "ckpt.tmp", ckpt)


if __name__ == "__main__":
    main()
