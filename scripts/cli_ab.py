#!/usr/bin/env python3
"""Interleaved command-line speed comparison of two sep binaries on a noisy machine.

Usage: N=7 python3 scripts/cli_ab.py OLD_SEP NEW_SEP FILE...
Each round runs OLD then NEW (and zstd -d on zstd -19's archive, for scale) on every file:
`compress -T 1 -c FILE` and `decompress -T 1 -c FILE.sep` (each its own archive: the two may
write different format versions), stdout into a fresh file in a
temporary directory (created before the clock starts, as benches/corpus.rs does). Prints per
file and direction the median MB/s of each and the median of the per-round NEW/OLD ratios.
"""
import os, statistics, subprocess, sys, tempfile, time

old, new, files = sys.argv[1], sys.argv[2], sys.argv[3:]
rounds = int(os.environ.get("N", "7"))
tmp = tempfile.mkdtemp()


def timed(cmd, out):
    with open(out, "wb") as f:
        t = time.perf_counter()
        subprocess.run(cmd, stdout=f, stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t


for path in files:
    size = os.path.getsize(path)
    archives = {name: os.path.join(tmp, name + ".sep") for name in ("old", "new")}
    zarch = os.path.join(tmp, "a.zst")
    for name, b in (("old", old), ("new", new)):
        timed([b, "compress", "-q", "-T", "1", "-c", path], archives[name])
    timed(["zstd", "-19", "-q", "-c", "--single-thread", path], zarch)
    res = {}
    for _ in range(rounds):
        for name, b in (("old", old), ("new", new)):
            c = timed([b, "compress", "-q", "-T", "1", "-c", path], os.path.join(tmp, "c"))
            d = timed([b, "decompress", "-q", "-T", "1", "-c", archives[name]],
                      os.path.join(tmp, "d"))
            res.setdefault(("c", name), []).append(c)
            res.setdefault(("d", name), []).append(d)
        res.setdefault(("d", "zstd"), []).append(
            timed(["zstd", "-d", "-q", "-c", zarch], os.path.join(tmp, "z")))
    mbs = lambda t: size / 1e6 / t
    for k in ("c", "d"):
        ratio = statistics.median(o / n for o, n in zip(res[(k, "old")], res[(k, "new")]))
        line = "%-34s %s old %5.0f new %5.0f MB/s  new/old %.3f" % (
            os.path.basename(path)[:34], "compress  " if k == "c" else "decompress",
            mbs(statistics.median(res[(k, "old")])), mbs(statistics.median(res[(k, "new")])), ratio)
        if k == "d":
            line += "  (zstd -d %.0f MB/s)" % mbs(statistics.median(res[("d", "zstd")]))
        print(line, flush=True)
