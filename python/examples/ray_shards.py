"""Compress one large file in shards on a Ray cluster, join the shards, and check the result.

The recipe: every Ray task compresses one shard of the file with ``sep.shard`` (one thread
each; the cut is a pure function of the file's length and the options, so tasks need not
talk), then ``sep.concat`` joins the shards, in order, into the archive a single
``sep compress`` with the same options writes. Each worker needs the whole file (a shared
filesystem) and the same options.

    python python/examples/ray_shards.py FILE [--shards 4] [--workers 2] [--block-size 1M]
        [--compare]

starts a local cluster of ``--workers`` worker processes (``ray.init(address=...)`` joins an
existing one instead), prints a table of the phases' times and the engine's own overhead, and
checks that the joined archive decodes to FILE. ``--compare`` also times one single-threaded
``sep.compress`` of the same file with the same options and checks the archives are equal.
``--make-input SIZE SOURCE...`` first writes FILE from the sources, repeated, up to SIZE bytes.
"""

import argparse
import os
import sys
import tempfile
import time

import ray

import sep


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


@ray.remote(num_cpus=1)
def compress_shard(src, dst, index, count, options):
    """One shard on one thread; returns its sizes, its compute time and the worker's pid."""
    start = time.perf_counter()
    original, archived = sep.shard(src, dst, index, count, threads=1, overwrite=True, **options)
    return original, archived, time.perf_counter() - start, os.getpid()


@ray.remote(num_cpus=1)
def ready():
    time.sleep(0.5)
    return sep.__name__


def make_input(path, total, sources):
    with open(path, "wb") as out:
        written = 0
        while written < total:
            for s in sources:
                with open(s, "rb") as f:
                    chunk = f.read(total - written)
                out.write(chunk)
                written += len(chunk)
                if written >= total:
                    break


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--block-size", type=size, default=size("1M"))
    p.add_argument("--level", type=int, default=6)
    p.add_argument("--address", help="an existing Ray cluster to join")
    p.add_argument("--compare", action="store_true")
    p.add_argument("--make-input", nargs="+", metavar=("SIZE", "SOURCE"))
    args = p.parse_args()
    if args.make_input:
        make_input(args.file, size(args.make_input[0]), args.make_input[1:])
    src = os.path.abspath(args.file)
    options = {"block_size": args.block_size, "level": args.level}
    length = os.path.getsize(src)
    work = tempfile.mkdtemp(prefix="sep-ray-")
    parts = [os.path.join(work, f"part.{i}-of-{args.shards}.sep") for i in range(args.shards)]
    joined = os.path.join(work, "joined.sep")

    t0 = time.perf_counter()
    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    # Start the workers (each imports sep) so their start counts as the engine's.
    ray.get([ready.remote() for _ in range(args.workers)])
    t1 = time.perf_counter()
    results = ray.get(
        [compress_shard.remote(src, parts[i], i, args.shards, options) for i in range(args.shards)]
    )
    t2 = time.perf_counter()
    original, archived = sep.concat(parts, joined, overwrite=True)
    t3 = time.perf_counter()
    ray.shutdown()
    t4 = time.perf_counter()

    assert original == length, (original, length)
    with open(joined, "rb") as f:
        archive = f.read()
    with open(src, "rb") as f:
        data = f.read()
    back = sep.decompress(archive)
    t5 = time.perf_counter()
    if back != data:
        sys.exit("the joined archive does not decode to the input")

    busy = {}
    for _, _, secs, pid in results:
        busy[pid] = busy.get(pid, 0.0) + secs
    busiest = max(busy.values())
    print(f"input {length} bytes, {args.shards} shards, {len(busy)} worker processes used")
    print("| phase | seconds |")
    print("|---|---:|")
    print(f"| Ray start | {t1 - t0:.2f} |")
    print(f"| shards (wall) | {t2 - t1:.2f} |")
    print(f"| busiest worker's compression | {busiest:.2f} |")
    print(f"| engine overhead in the shard phase | {t2 - t1 - busiest:.2f} |")
    print(f"| concat | {t3 - t2:.2f} |")
    print(f"| Ray stop | {t4 - t3:.2f} |")
    print(f"| decompress and compare (2 threads) | {t5 - t4:.2f} |")
    print(f"archive {archived} bytes, ratio {length / archived:.3f}; decodes to the input")
    if args.compare:
        s0 = time.perf_counter()
        single = sep.compress(data, threads=1, **options)
        s1 = time.perf_counter()
        same = single == archive
        print(f"single sep.compress on 1 thread: {s1 - s0:.2f} s; identical archive: {same}")
        print(f"shards over {args.workers} workers / single: {(t2 - t1 + t3 - t2) / (s1 - s0):.3f} "
              f"(with Ray's start and stop: {(t4 - t0) / (s1 - s0):.3f})")
        if not same:
            sys.exit("the joined archive differs from the single-machine one")


if __name__ == "__main__":
    main()
