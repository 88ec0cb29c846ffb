#!/usr/bin/env python3
"""Usage: python3 scripts/containers_pco12.py FILE.onnx|model.bin|FILE.pt|FILE.jit...

pcodec level 12 on the float tensors of ONNX models, CTranslate2 model files and PyTorch
checkpoints (zip or legacy; read without torch), the rest of each file counted as it is (as
scripts/pco12.py does for safetensors): the anchor for sep's container detection.
Needs: pip install numpy pcodec onnx.
"""
import sys

if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import io, pickle, struct, sys, zipfile
import numpy as np
from pcodec import standalone, ChunkConfig

# f32, f16 as themselves; bf16 as uint16 (pcodec has no bf16).
NP = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


def onnx_tensors(path):
    import onnx

    ts = []

    def walk(g):
        ts.extend(g.initializer)
        for node in g.node:
            for at in node.attribute:
                if at.type == onnx.AttributeProto.TENSOR:
                    ts.append(at.t)
                elif at.type == onnx.AttributeProto.GRAPH:
                    walk(at.g)
                elif at.type == onnx.AttributeProto.GRAPHS:
                    for sub in at.graphs:
                        walk(sub)

    walk(onnx.load(path).graph)
    kinds = {1: "f32", 10: "f16", 16: "bf16"}
    for t in ts:
        if t.data_type in kinds:
            raw = t.raw_data or np.array(t.float_data, dtype=np.float32).tobytes()
            yield kinds[t.data_type], raw


def ct2_tensors(path):
    b = open(path, "rb").read()
    at = 4

    def string():
        nonlocal at
        n = struct.unpack_from("<H", b, at)[0]
        at += 2 + n

    string()
    at += 4
    (count,) = struct.unpack_from("<I", b, at)
    at += 4
    kinds = {0: "f32", 4: "f16", 5: "bf16"}
    for _ in range(count):
        string()
        rank = b[at]
        at += 1 + 4 * rank
        t = b[at]
        (n,) = struct.unpack_from("<I", b, at + 1)
        at += 5
        if t in kinds:
            yield kinds[t], b[at : at + n]
        at += n


TORCH = {"FloatStorage": "f32", "HalfStorage": "f16", "BFloat16Storage": "bf16"}
WIDTH = {"f32": 4, "f16": 2, "bf16": 2}


class Anything:
    """Stands for every class a checkpoint's pickle names (torch is not imported)."""

    def __init__(self, *a, **k):
        pass

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass


class Storages(pickle.Unpickler):
    """Unpickles a checkpoint's object without torch, noting each storage's type by key."""

    def __init__(self, f, seen):
        super().__init__(f)
        self.seen = seen

    def find_class(self, module, name):
        return type(name, (Anything,), {})

    def persistent_load(self, pid):
        self.seen[str(pid[2])] = pid[1].__name__
        return None


def torch_tensors(path):
    b = open(path, "rb").read()
    if b.startswith(b"PK"):
        z = zipfile.ZipFile(path)
        for pkl in [n for n in z.namelist() if n.endswith(("/data.pkl", "/constants.pkl"))]:
            seen = {}
            Storages(io.BytesIO(z.read(pkl)), seen).load()
            sub = pkl.rsplit("/", 1)[0] + ("/data/" if pkl.endswith("data.pkl") else "/constants/")
            for key, cls in seen.items():
                if cls in TORCH:
                    yield TORCH[cls], z.read(sub + key)
        return
    f = io.BytesIO(b)
    for _ in range(3):
        pickle.load(f)
    seen = {}
    Storages(f, seen).load()
    for key in pickle.load(f):
        (n,) = struct.unpack("<q", f.read(8))
        cls = seen[key]
        width = WIDTH.get(TORCH.get(cls), {"LongStorage": 8, "IntStorage": 4}.get(cls, 1))
        raw = f.read(n * width)
        if cls in TORCH:
            yield TORCH[cls], raw


for f in sys.argv[1:]:
    size = len(open(f, "rb").read())
    if f.endswith(".onnx"):
        tensors = onnx_tensors(f)
    elif f.endswith((".pt", ".pth", ".jit")):
        tensors = torch_tensors(f)
    else:
        tensors = ct2_tensors(f)
    out = size
    for kind, raw in tensors:
        arr = np.frombuffer(raw, dtype=NP[kind])
        if arr.size == 0:
            continue
        c = standalone.simple_compress(arr, ChunkConfig(compression_level=12))
        out += len(c) - len(raw)
    print(f"{f} pcodec-12 bytes {out}")
