#!/usr/bin/env python3
"""Usage: python3 scripts/fuzz_seeds.py OUT_DIR

Writes the fuzz targets' seed corpora from the golden archives (tests/data/golden): each
archive for the archive targets, and each block's payload, after its length as a u32, for the
target of its codec.
"""
import sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import glob, os, struct, sys

CODECS = ["stored", "cm", "zstd", "planes", "tensor-header", "recent", "scaled", "repeated", "copies", "swapped", "field", "lzma", "delta", "bytes", "jpeg", "deflate"]
ARCHIVE_TARGETS = ["archive-bytes", "archive-vec", "archive-stream", "inspect"]

def blocks(a):
    """(codec name, original length, payload) of each block of archive `a`."""
    flags = struct.unpack_from("<H", a, 6)[0]
    # The configuration, then a part's fields (flag bit 0) and a base's (flag bit 1).
    at = 24 + struct.unpack_from("<I", a, 20)[0] + 48 * (flags & 1) + 40 * (flags >> 1 & 1) + 8
    while a[at] != 0xFF:
        raw_len, payload_len = struct.unpack_from("<QQ", a, at + 1)
        start = at + 37
        yield CODECS[a[at]], raw_len, a[start:start + payload_len]
        at = start + payload_len

# Golden archives not taken as seeds: level 9's first bilevel archive (decode-only, an older
# encoder's) decodes in about 16 s in the instrumented build, past the fuzzer's 10 s limit per
# input on a slow machine; `wide-bilevel-at-9.bitmap.sep` seeds the same expert in a fraction
# of that. The tests still decode it (tests/it/golden.rs).
SLOW = {"bilevel-at-9.bitmap.sep"}

out = sys.argv[1]
for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "../tests/data/golden/v*/*.sep"))):
    a = open(path, "rb").read()
    name = os.path.basename(path)
    if name in SLOW:
        continue
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

# The layout target: small files of each container sep recognises.
import io, json, pickle, sys as _sys, types, zipfile

def layout_seeds():
    floats = struct.pack("<1024f", *[i * 0.01 for i in range(1024)])
    halves = struct.pack("<1024e", *[i * 0.01 for i in range(1024)])
    seeds = {}
    head = json.dumps({"w": {"dtype": "F32", "shape": [1024], "data_offsets": [0, 4096]}}).encode()
    seeds["safetensors"] = struct.pack("<Q", len(head)) + head + floats
    npy_head = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1024,), }"
    npy_head += b" " * (63 - (10 + len(npy_head)) % 64) + b"\n"
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(npy_head)) + npy_head + floats
    seeds["npy"] = npy
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("w.npy", npy)
    seeds["npz"] = buf.getvalue()
    # GGUF v3: one f32 tensor, no metadata, data aligned to 32.
    g = b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + struct.pack("<Q", 1) + b"w" + struct.pack("<IQIQ", 1, 1024, 0, 0)
    seeds["gguf"] = g + b"\0" * (-len(g) % 32) + floats
    # ONNX: ir_version, a graph with one f32 initializer in raw_data and one f16 Constant node.
    def varint(v):
        out = b""
        while v >= 0x80:
            out += bytes([(v & 0x7F) | 0x80])
            v >>= 7
        return out + bytes([v])
    def field(n, payload):
        return varint(n << 3 | 2) + varint(len(payload)) + payload
    def tensor(dtype, raw):
        return varint(1 << 3) + varint(1024) + varint(2 << 3) + varint(dtype) + field(8, b"w") + field(9, raw)
    attr = field(1, b"value") + field(5, tensor(10, halves))
    node = field(4, b"Constant") + field(5, attr)
    graph = field(1, node) + field(2, b"g") + field(5, tensor(1, floats))
    seeds["onnx"] = varint(1 << 3) + varint(8) + field(7, graph)
    # CTranslate2, binary version 6.
    def s(t):
        return struct.pack("<H", len(t) + 1) + t + b"\0"
    seeds["ct2"] = (struct.pack("<I", 6) + s(b"Spec") + struct.pack("<II", 1, 1) + s(b"w")
                    + bytes([1]) + struct.pack("<I", 1024) + bytes([0]) + struct.pack("<I", 4096)
                    + floats + struct.pack("<I", 0))
    # PyTorch: pickles that name storages as torch.save does, written by Python's pickle.
    torch = types.ModuleType("torch")
    class FloatStorage:
        pass
    FloatStorage.__module__ = "torch"
    FloatStorage.__qualname__ = "FloatStorage"
    torch.FloatStorage = FloatStorage
    _sys.modules["torch"] = torch
    class Saver(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, FloatStorage):
                return ("storage", FloatStorage, "0", "cpu", 1024)
            return None
    def dump(obj):
        f = io.BytesIO()
        Saver(f, protocol=2).dump(obj)
        return f.getvalue()
    state = dump({"w": FloatStorage()})
    legacy = (dump(0x1950A86A20F9469CFC6C) + dump(1001) + dump({"little_endian": True})
              + state + dump(["0"]) + struct.pack("<q", 1024) + floats)
    seeds["torch-legacy"] = legacy
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", state)
        z.writestr("archive/data/0", floats)
        z.writestr("archive/version", b"3\n")
    seeds["torch-zip"] = buf.getvalue()
    d = os.path.join(out, "layout")
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        open(os.path.join(d, name), "wb").write(data)

layout_seeds()

# The pack target also reads network files (`sep pretrain --net`): the test fixture's.
d = os.path.join(out, "pack")
os.makedirs(d, exist_ok=True)
net = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "net", "frozen-small.safetensors")
open(os.path.join(d, "network"), "wb").write(open(net, "rb").read())
