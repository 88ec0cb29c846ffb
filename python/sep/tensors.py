"""Tensors to a sep archive and back, without pickle: the tensors are laid out as a safetensors
file (its JSON header, then each tensor's little-endian bytes), which sep recognises and codes
with its tensor codecs, streamed through ``sep.open``. ``load_tensors`` reads any compressed
safetensors file, the command line's ``sep model.safetensors`` included.

numpy arrays of every dtype safetensors names go both ways; bfloat16 and the fp8 types need
``ml_dtypes`` for numpy (PyTorch tensors carry them natively).
"""

import json

# safetensors' dtype names by numpy's (kind, itemsize) names, and back.
_BY_NUMPY = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint64": "U64",
    "uint32": "U32",
    "uint16": "U16",
    "uint8": "U8",
    "bool": "BOOL",
}
_TO_NUMPY = {v: k for k, v in _BY_NUMPY.items()}
# PyTorch's dtype names by safetensors', for the types numpy has no name for without ml_dtypes.
_TORCH = {"BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}


def _numpy_dtype(name):
    import numpy as np

    numpy_name = _TO_NUMPY.get(name)
    if numpy_name is None:
        raise ValueError(f"unknown safetensors dtype {name!r}")
    try:
        return np.dtype(numpy_name)
    except TypeError:
        import ml_dtypes  # noqa: F401  (registers bfloat16 and the fp8 types with numpy)

        return np.dtype(getattr(ml_dtypes, numpy_name))


def _as_bytes(value):
    """A tensor's safetensors dtype, shape and little-endian bytes (numpy or PyTorch)."""
    module = type(value).__module__
    if module.startswith("torch"):
        import torch

        t = value.detach().to("cpu").contiguous()
        name = str(t.dtype).replace("torch.", "")
        dtype = _BY_NUMPY.get(name)
        if dtype is None:
            raise ValueError(f"tensors of {t.dtype} are not supported")
        raw = t.view(torch.uint8) if t.dim() > 0 else t.reshape(1).view(torch.uint8)
        return dtype, list(t.shape), raw.numpy().tobytes()
    import numpy as np

    a = np.asarray(value)
    # (ascontiguousarray would make a 0-d array 1-d.)
    a = np.ascontiguousarray(a) if a.ndim else a
    dtype = _BY_NUMPY.get(a.dtype.name)
    if dtype is None:
        raise ValueError(f"arrays of {a.dtype} are not supported")
    return dtype, list(a.shape), a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


def save_tensors(tensors, path, *, metadata=None, **options):
    """Writes ``tensors`` (a mapping of names to numpy arrays or PyTorch tensors) to the sep
    archive ``path``: a safetensors file, compressed as a stream. ``metadata`` (str to str)
    goes into the safetensors header; ``options`` to ``sep.open`` (``level``, ``threads``,
    ``block_size``; an existing ``path`` is replaced unless ``mode="xb"``)."""
    from . import open as sep_open

    mode = options.pop("mode", "wb")
    parts = {name: _as_bytes(v) for name, v in tensors.items()}
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    at = 0
    for name, (dtype, shape, data) in parts.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(data)]}
        at += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with sep_open(path, mode, **options) as f:
        f.write(len(head).to_bytes(8, "little"))
        f.write(head)
        for _, _, data in parts.values():
            f.write(data)


def load_tensors(path, *, framework="numpy", **options):
    """Reads the tensors of a compressed safetensors file (``save_tensors``' or the command
    line's) as a dict of numpy arrays (``framework="numpy"``) or PyTorch tensors
    (``"torch"``), decoding it as a stream; ``options`` go to ``sep.open`` (``threads``,
    ``packs``)."""
    from . import SepError
    from . import open as sep_open

    if framework not in ("numpy", "torch"):
        raise ValueError(f"unknown framework {framework!r}: numpy or torch")
    with sep_open(path, "rb", **options) as f:
        size = int.from_bytes(f.read(8), "little")
        head = f.read(size)
        if len(head) != size or size == 0:
            raise SepError(f"{path}: not a safetensors file")
        try:
            header = json.loads(head)
        except ValueError:
            raise SepError(f"{path}: not a safetensors file (its header is not JSON)") from None
        header.pop("__metadata__", None)
        order = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
        out, at = {}, 0
        for name, info in order:
            start, end = info["data_offsets"]
            if start < at:
                raise SepError(f"{path}: tensors overlap")
            f.read(start - at)
            data = f.read(end - start)
            if len(data) != end - start:
                raise SepError(f"{path}: cut short in tensor {name!r}")
            at = end
            out[name] = _from_bytes(info["dtype"], info["shape"], data, framework)
        f.read()
    return {name: out[name] for name in header}


def _from_bytes(dtype, shape, data, framework):
    if framework == "torch":
        import torch

        name = _TORCH.get(dtype) or _TO_NUMPY.get(dtype)
        if name is None:
            raise ValueError(f"unknown safetensors dtype {dtype!r}")
        raw = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0)
        return raw.to(torch.uint8).view(getattr(torch, name)).reshape(shape)
    import numpy as np

    values = np.frombuffer(bytearray(data), dtype=_numpy_dtype(dtype).newbyteorder("<"))
    return values.astype(values.dtype.newbyteorder("="), copy=False).reshape(shape)
