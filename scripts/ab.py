#!/usr/bin/env python3
"""Interleaved speed comparison of two builds of sep on a noisy machine (A/B).

Usage: N=7 python3 scripts/ab.py OLD_SEP NEW_SEP FILE...
       N=10 python3 scripts/ab.py --harness OLD_TENSOR NEW_TENSOR FILE...

Each round runs OLD then NEW on every file, so that a slow or fast minute shifts both; prints
per file and direction the median speed of each and the median of the per-round NEW/OLD speed
ratios (above 1: NEW is faster), with how many rounds NEW won.

Command lines (default): OLD_SEP and NEW_SEP are two `sep` binaries (copies of
target/release/sep from two commits). Each compresses FILE (`compress -q -T THREADS -c`) and
decompresses its own archive (the two may write different format versions), output into a
temporary file; wall time, and CPU time (user + system) of the child. `zstd -d` of zstd -19's
archive runs in each round for scale (ZSTD=0: not). Environment: THREADS (default 1),
SEP_ARGS (more compress arguments, e.g. "--dtype f32" for a raw array).

--harness: OLD and NEW are two builds of benches/tensor.rs (`cargo bench --bench tensor
--no-run` prints its path; copy it per commit), run with SEP_REPS=REPS (default 5) and
SEP_ONLY=decode (ONLY=encode: the compress speeds); SEP_WHOLE=1 and the harness's other
variables pass through. Speeds are the harness's own MB/s (best of its REPS runs).
"""
import os, re, resource, shutil, statistics, subprocess, sys, tempfile, time


def usage(code):
    print(__doc__.split("\n\n")[1], file=sys.stderr if code else sys.stdout)
    sys.exit(code)


def summary(name, old, new, unit):
    """One line: the medians of each and the median per-round NEW/OLD ratio of speeds."""
    ratios = [n / o for o, n in zip(old, new)]
    print("%-44s old %7.1f new %7.1f %s  new/old %.3f (%d rounds, new faster in %d)" % (
        name[:44], statistics.median(old), statistics.median(new), unit,
        statistics.median(ratios), len(ratios), sum(r > 1 for r in ratios)), flush=True)


def run(cmd, out):
    """Wall and CPU seconds of `cmd` with stdout into the file `out`."""
    with open(out, "wb") as f:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, stdout=f, stderr=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def command_lines(old, new, files, rounds):
    threads = os.environ.get("THREADS", "1")
    extra = os.environ.get("SEP_ARGS", "").split()
    zstd = os.environ.get("ZSTD", "1") != "0"
    tmp = tempfile.mkdtemp()
    try:
        compare(old, new, files, rounds, threads, extra, zstd, tmp)
    finally:
        shutil.rmtree(tmp)


def compare(old, new, files, rounds, threads, extra, zstd, tmp):
    builds = (("old", old), ("new", new))
    for path in files:
        mb = os.path.getsize(path) / 1e6
        archive = {k: os.path.join(tmp, k + ".sep") for k, _ in builds}
        compress = lambda b: [b, "compress", "-q", "-T", threads, *extra, "-c", path]
        for k, b in builds:
            run(compress(b), archive[k])
        if zstd:
            run(["zstd", "-19", "-q", "-c", "--single-thread", path], os.path.join(tmp, "a.zst"))
        res = {}
        for _ in range(rounds):
            for k, b in builds:
                decompress = [b, "decompress", "-q", "-T", threads, "-c", archive[k]]
                for d, cmd in (("compress", compress(b)), ("decompress", decompress)):
                    wall, cpu = run(cmd, os.path.join(tmp, "out"))
                    res.setdefault((d, "wall", k), []).append(mb / wall)
                    res.setdefault((d, "cpu", k), []).append(mb / max(cpu, 1e-9))
            if zstd:
                unzstd = ["zstd", "-d", "-q", "-c", os.path.join(tmp, "a.zst")]
                wall, _ = run(unzstd, os.path.join(tmp, "out"))
                res.setdefault("zstd", []).append(mb / wall)
        name = os.path.basename(path)
        for d in ("compress", "decompress"):
            for clock in ("wall", "cpu"):
                summary("%s %s (%s)" % (name, d, clock),
                        res[(d, clock, "old")], res[(d, clock, "new")], "MB/s")
        if zstd:
            print("%-44s zstd -d %.0f MB/s" % (name[:44], statistics.median(res["zstd"])))


def harness(old, new, files, rounds):
    env = dict(os.environ, SEP_ONLY=os.environ.get("ONLY", "decode"),
               SEP_REPS=os.environ.get("REPS", "5"))
    half = "compress" if env["SEP_ONLY"] == "encode" else "decompress"
    speed = re.compile(r"^(\S+): .*\b%s ([0-9.]+) MB/s" % half)
    res = {}
    for _ in range(rounds):
        for k, b in (("old", old), ("new", new)):
            out = subprocess.run([b, *files], env=env, capture_output=True, text=True,
                                 check=True).stdout
            for m in map(speed.match, out.splitlines()):
                if m:
                    res.setdefault((m[1], k), []).append(float(m[2]))
    for path in files:
        summary("%s %s" % (os.path.basename(path), half),
                res[(path, "old")], res[(path, "new")], "MB/s")


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        usage(0 if args else 2)
    mode = command_lines
    if args[0] == "--harness":
        mode, args = harness, args[1:]
    if len(args) < 3:
        usage(2)
    mode(args[0], args[1], args[2:], int(os.environ.get("N", "7")))


if __name__ == "__main__":
    main()
