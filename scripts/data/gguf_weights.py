#!/usr/bin/env python3
"""Usage: python3 scripts/data/gguf_weights.py OUT_DIR FILE.safetensors...

Writes GGUF files of real weights with the gguf package (llama.cpp's writer): every float
tensor of each input safetensors file as OUT_DIR/NAME.f32.gguf, NAME.f16.gguf and
NAME.bf16.gguf, and NAME.q8_0.gguf (2-D tensors quantized to Q8_0, the rest f32), each with
a little metadata (architecture, name, a tokenizer list of 2,000 made-up tokens).
Needs numpy and gguf (`pip install gguf`).
"""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import os
import sys

import gguf
import numpy as np

from tensorfile import read_floats


def write(path, base, tensors, kind):
    w = gguf.GGUFWriter(path, "bert")
    w.add_name(base)
    w.add_token_list([f"tok{i:04d}" for i in range(2000)])
    for name, a in tensors:
        if kind == "f32":
            w.add_tensor(name, a)
        elif kind == "f16":
            w.add_tensor(name, a.astype(np.float16))
        elif kind == "bf16":
            q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.BF16)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.BF16)
        elif a.ndim == 2 and a.shape[-1] % 32 == 0:
            q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        tensors = [(name, a) for name, dtype, a in read_floats(path) if dtype == "F32"]
        base = os.path.basename(path).split(".")[0]
        for kind in ["f32", "f16", "bf16", "q8_0"]:
            write(os.path.join(out, f"{base}.{kind}.gguf"), base, tensors, kind)


if __name__ == "__main__":
    main()
