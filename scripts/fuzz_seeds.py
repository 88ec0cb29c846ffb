#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora from the golden archives (tests/data/golden): each
archive for the archive targets, and each block's payload, after its length as a u32, for the
target of its codec.
Usage: python3 scripts/fuzz_seeds.py OUT_DIR"""
import glob, os, struct, sys

CODECS = ["stored", "neural", "zstd", "planes", "tensor-header", "recent", "scaled", "repeated", "copies"]
ARCHIVE_TARGETS = ["archive-bytes", "archive-vec", "archive-stream", "inspect"]

def blocks(a):
    """(codec name, original length, payload) of each block of archive `a`."""
    at = 24 + struct.unpack_from("<I", a, 20)[0] + 8
    while a[at] != 0xFF:
        raw_len, payload_len = struct.unpack_from("<QQ", a, at + 1)
        start = at + 37
        yield CODECS[a[at]], raw_len, a[start:start + payload_len]
        at = start + payload_len

out = sys.argv[1]
for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "../tests/data/golden/v*/*.sep"))):
    a = open(path, "rb").read()
    name = os.path.basename(path)
    for t in ARCHIVE_TARGETS:
        os.makedirs(os.path.join(out, t), exist_ok=True)
        open(os.path.join(out, t, name), "wb").write(a)
    # The range target: two offsets (a range inside the data, and one past it), then the archive.
    os.makedirs(os.path.join(out, "archive-range"), exist_ok=True)
    for lo, hi in [(0, 1000), (5000, 1 << 20)]:
        open(os.path.join(out, "archive-range", f"{name}.{lo}"), "wb").write(struct.pack("<II", lo, hi) + a)
    for i, (codec, raw_len, payload) in enumerate(blocks(a)):
        if codec == "stored":
            continue
        d = os.path.join(out, "codec-" + codec)
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, f"{name}.{i}"), "wb").write(struct.pack("<I", raw_len) + payload)
