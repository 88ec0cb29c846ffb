"""Type stubs of sep's native module (``sep._native``), which ``sep`` re-exports."""

from os import PathLike
from typing import List, Optional, Tuple, Union

_Path = Union[str, PathLike]

class SepError(OSError):
    """sep refused the input or the archive, or a file could not be read or written."""

def compress(
    data: bytes,
    *,
    level: int = 6,
    threads: Optional[int] = None,
    block_size: Optional[int] = None,
    pack: str = "auto",
    net: str = "auto",
) -> bytes:
    """Compresses ``data`` into a complete archive."""

def decompress(
    archive: bytes, *, threads: Optional[int] = None, packs: List[str] = ...
) -> bytes:
    """Decompresses a complete archive, verifying every checksum."""

def compress_file(
    src: _Path,
    dst: _Path,
    *,
    level: int = 6,
    threads: Optional[int] = None,
    block_size: Optional[int] = None,
    pack: str = "auto",
    net: str = "auto",
    overwrite: bool = False,
) -> Tuple[int, int]:
    """Compresses the file ``src`` into ``dst`` as a stream; (original, archive) bytes."""

def decompress_file(
    src: _Path,
    dst: _Path,
    *,
    threads: Optional[int] = None,
    packs: List[str] = ...,
    overwrite: bool = False,
) -> Tuple[int, int]:
    """Decompresses the archive file ``src`` into ``dst`` as a stream; (original, archive)."""

def shard(
    src: _Path,
    dst: _Path,
    index: int,
    count: int,
    *,
    level: int = 6,
    threads: int = 1,
    block_size: Optional[int] = None,
    pack: str = "auto",
    net: str = "auto",
    overwrite: bool = False,
) -> Tuple[int, int]:
    """Compresses shard ``index`` of ``count`` of the file ``src`` into ``dst``."""

def concat(parts: List[_Path], dst: _Path, *, overwrite: bool = False) -> Tuple[int, int]:
    """Joins shards, in order, into the archive of the whole file."""

def decompress_range(
    src: _Path,
    start: int,
    end: int,
    *,
    threads: Optional[int] = None,
    packs: List[str] = ...,
) -> bytes:
    """The original bytes ``start..end`` of the archive file ``src``."""

class Compressor:
    """Compresses a stream given in chunks into one archive (like ``lzma.LZMACompressor``)."""

    def __init__(
        self,
        *,
        level: int = 6,
        threads: Optional[int] = None,
        block_size: Optional[int] = None,
        pack: str = "auto",
        net: str = "auto",
    ) -> None: ...
    def compress(self, data: bytes) -> bytes:
        """Takes ``data``; returns the archive's bytes ready so far."""
    def flush(self) -> bytes:
        """Ends the stream; returns the rest of the archive."""

class Decompressor:
    """Decompresses one archive given in chunks (like ``lzma.LZMADecompressor``)."""

    def __init__(self, *, threads: Optional[int] = 1, packs: List[str] = ...) -> None: ...
    def decompress(self, data: bytes) -> bytes:
        """Takes ``data``; returns the original bytes decoded so far."""
    @property
    def eof(self) -> bool:
        """Whether the archive has ended."""
    @property
    def unused_data(self) -> bytes:
        """The bytes after the archive's end (empty until ``eof``)."""
    @property
    def needs_input(self) -> bool:
        """Whether more input is needed before more output can come."""
