#!/usr/bin/env python3
"""Usage: python3 scripts/data/onnx_int8.py OUT_DIR MODEL.onnx...

Quantizes ONNX models' weights to 8 bits with onnxruntime's own dynamic quantization
(`quantize_dynamic`: per-tensor int8 or uint8 weights beside their scales and zero points; the
matrix products only where the convolutions' weights are not initializers), as ONNX models
are shipped for CPU inference. Needs: pip install onnx onnxruntime.
"""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import os
import sys

from onnxruntime.quantization import QuantType, quantize_dynamic

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for path in sys.argv[2:]:
    base = os.path.basename(path).rsplit(".", 1)[0]
    for kind, t in (("qint8", QuantType.QInt8), ("quint8", QuantType.QUInt8)):
        target = os.path.join(out, f"{base}.{kind}.onnx")
        try:
            quantize_dynamic(path, target, weight_type=t)
        except ValueError:
            # Some graphs' convolutions take weights that are not initializers: their
            # matrix products only.
            quantize_dynamic(path, target, weight_type=t, op_types_to_quantize=["MatMul", "Gemm"])
