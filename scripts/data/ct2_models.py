#!/usr/bin/env python3
"""Usage: python3 scripts/data/ct2_models.py OUT_DIR FILE.safetensors...

CTranslate2 model files (model.bin) of real weights, written by CTranslate2's own serializer
and quantizer: every float tensor of a safetensors file as a variable of a model spec, saved as
float32 and float16 (bfloat16 needs torch in CTranslate2, which does not install here; int8
applies only to the weights of an architecture's linear layers, which this generic spec has none
of).
Needs: pip install ctranslate2 numpy safetensors (ctranslate2 imports without torch).
Writes OUT_DIR/NAME.QUANT.ct2.bin (the model.bin of each conversion).
"""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import os, re, shutil, sys, tempfile
import numpy as np
from ctranslate2.specs import model_spec
from safetensors.numpy import load_file


class WeightsSpec(model_spec.ModelSpec):
    """A model spec whose variables are given arrays (CTranslate2's converters fill specs of
    a model architecture the same way, one attribute per weight)."""

    def __init__(self, arrays):
        super().__init__()
        for name, a in arrays.items():
            setattr(self, name, a)

    @property
    def name(self):
        return "WeightsSpec"


out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
for path in sys.argv[2:]:
    arrays = {
        re.sub(r"\W", "_", k): v.astype(np.float32)
        for k, v in sorted(load_file(path).items())
        if v.dtype.kind == "f"
    }
    base = os.path.basename(path).split(".")[0]
    for quant in ("float32", "float16"):
        spec = WeightsSpec(arrays)
        spec.validate()
        spec.optimize(quantization=quant)
        with tempfile.TemporaryDirectory() as d:
            spec.save(d)
            shutil.copyfile(f"{d}/model.bin", f"{out_dir}/{base}.{quant}.ct2.bin")
    print(base)
