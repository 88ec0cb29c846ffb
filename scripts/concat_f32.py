#!/usr/bin/env python3
"""Writes the tensor data of safetensors files (their bytes after the header), one after the
other, as one raw array: a large input for timing `sep --dtype f32` on many blocks.
Usage: python3 benches/concat_f32.py OUT FILE.safetensors... (files may repeat)"""
import struct
import sys

with open(sys.argv[1], "wb") as out:
    for path in sys.argv[2:]:
        with open(path, "rb") as f:
            data = f.read()
        (n,) = struct.unpack("<Q", data[:8])
        out.write(data[8 + n :])
