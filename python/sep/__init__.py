"""sep: a neural lossless file compressor, from Python.

- ``compress`` / ``decompress`` work on bytes; ``compress_file`` / ``decompress_file`` on paths,
  as streams (a file is never held whole in memory).
- ``open`` gives a file object like ``lzma.open``: binary (``"rb"``, ``"wb"``, ``"xb"``,
  ``"ab"`` is refused) or text (``"rt"``, ``"wt"``, with an encoding), streamed both ways.
- ``Compressor`` / ``Decompressor`` code a stream chunk by chunk, like
  ``lzma.LZMACompressor`` / ``lzma.LZMADecompressor``.
- ``save_tensors`` / ``load_tensors``: numpy arrays or PyTorch tensors to a compressed
  safetensors file and back, through sep's tensor codecs (no pickle).
- ``shard`` and ``concat`` spread one file over many workers (each compresses its shard of the
  file, ``concat`` joins the shards into the archive one ``sep compress`` would write);
  ``decompress_range`` decodes only the blocks a range needs.

Errors raise ``SepError`` (a subclass of ``OSError``) with one line. Every call releases the GIL
while it works.
"""

import io
import os

from ._native import (
    Compressor,
    Decompressor,
    SepError,
    compress,
    compress_file,
    concat,
    decompress,
    decompress_file,
    decompress_range,
    shard,
)
from .tensors import load_tensors, save_tensors

__all__ = [
    "Compressor",
    "Decompressor",
    "SepError",
    "SepFile",
    "compress",
    "compress_file",
    "concat",
    "decompress",
    "decompress_file",
    "decompress_range",
    "load_tensors",
    "open",
    "save_tensors",
    "shard",
]

# Bytes read from the underlying file per step when decoding.
_READ_SIZE = 1 << 20


class SepFile(io.BufferedIOBase):
    """A sep archive as a binary file object, read or written as a stream.

    Reading decodes the archive as it is read (every block's checksum, and the whole file's at
    the end, verified); writing compresses as it is written, the archive's end written on
    ``close()``. Use ``sep.open`` rather than this class directly.
    """

    def __init__(self, filename, mode="rb", **options):
        super().__init__()
        if mode not in ("r", "rb", "w", "wb", "x", "xb"):
            raise ValueError(f"invalid mode: {mode!r}")
        self._reading = mode.startswith("r")
        self._owns = isinstance(filename, (str, bytes, os.PathLike))
        if self._owns:
            self._fp = io.open(filename, mode[0] + "b")
        elif hasattr(filename, "read" if self._reading else "write"):
            self._fp = filename
        else:
            raise TypeError("filename must be a str, bytes or os.PathLike object, or a file")
        self._buffer = b""
        self._pos = 0
        if self._reading:
            self._coder = Decompressor(**options)
        else:
            self._coder = Compressor(**options)

    # -- reading

    def readable(self):
        self._check_open()
        return self._reading

    def _fill(self):
        """Decodes until some bytes are buffered or the archive ends; False at its end."""
        while not self._buffer:
            if self._coder.eof:
                return False
            chunk = self._fp.read(_READ_SIZE)
            self._buffer = self._coder.decompress(chunk)
            if not chunk and not self._buffer and not self._coder.eof:
                raise SepError("the archive is cut short: its end is missing")
        return True

    def read(self, size=-1):
        self._check_reading()
        if size is None or size < 0:
            parts = [self._buffer]
            self._buffer = b""
            while self._fill():
                parts.append(self._buffer)
                self._buffer = b""
            data = b"".join(parts)
        else:
            if not self._fill():
                return b""
            data, self._buffer = self._buffer[:size], self._buffer[size:]
        self._pos += len(data)
        return data

    def read1(self, size=-1):
        self._check_reading()
        if not self._fill():
            return b""
        if size is None or size < 0:
            size = len(self._buffer)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        self._pos += len(data)
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def peek(self, size=-1):
        self._check_reading()
        self._fill()
        return self._buffer

    # -- writing

    def writable(self):
        self._check_open()
        return not self._reading

    def write(self, data):
        self._check_open()
        if self._reading:
            raise io.UnsupportedOperation("not writable")
        data = bytes(data)
        self._fp.write(self._coder.compress(data))
        self._pos += len(data)
        return len(data)

    # -- both

    def seekable(self):
        return False

    def tell(self):
        self._check_open()
        return self._pos

    def close(self):
        if self.closed:
            return
        try:
            if not self._reading:
                self._fp.write(self._coder.flush())
        finally:
            try:
                if self._owns:
                    self._fp.close()
            finally:
                super().close()

    def fileno(self):
        return self._fp.fileno()

    def _check_open(self):
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def _check_reading(self):
        self._check_open()
        if not self._reading:
            raise io.UnsupportedOperation("not readable")


def open(filename, mode="rb", *, encoding=None, errors=None, newline=None, **options):
    """Opens a sep archive as a file object, like ``lzma.open``.

    ``mode``: ``"rb"`` (the default), ``"wb"`` or ``"xb"`` for bytes; ``"rt"``, ``"wt"`` or
    ``"xt"`` for text, with ``encoding``, ``errors`` and ``newline`` as ``io.TextIOWrapper``
    takes them. ``filename`` is a path or a file object. ``options`` go to ``Compressor``
    (``level``, ``threads``, ``block_size``, ``pack``, ``net``) or ``Decompressor``
    (``threads``, ``packs``). Both directions stream: memory stays at the blocks in flight.
    """
    if "t" in mode:
        if "b" in mode:
            raise ValueError(f"invalid mode: {mode!r}")
    elif encoding is not None or errors is not None or newline is not None:
        raise ValueError("encoding, errors and newline are for text mode only")
    binary = SepFile(filename, mode.replace("t", "").replace("b", "") + "b", **options)
    if "t" in mode:
        encoding = io.text_encoding(encoding) if hasattr(io, "text_encoding") else encoding
        return io.TextIOWrapper(binary, encoding, errors, newline)
    return binary
