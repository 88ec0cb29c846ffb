"""Reading and writing safetensors files with numpy alone, for the scripts that make test
files from real weights (imported by checkpoint_series.py, fp8_weights.py, gguf_weights.py and
int8_weights.py; not run itself)."""
import json
import struct

import numpy as np

_FLOATS = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


def read_floats(path):
    """Yields (name, dtype tag, values as float32) of each float tensor of a safetensors
    file, in the order of their data."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    header.pop("__metadata__", None)
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        a, b = t["data_offsets"]
        raw = body[a:b]
        if t["dtype"] == "BF16":
            values = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] in _FLOATS:
            values = np.frombuffer(raw, dtype=_FLOATS[t["dtype"]]).astype(np.float32)
        else:
            continue
        yield name, t["dtype"], values.reshape(t["shape"])


def write(path, tensors):
    """Writes (name, dtype tag, array) tensors, in order, as a safetensors file."""
    header, blobs, off = {}, [], 0
    for name, dtype, a in tensors:
        b = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
