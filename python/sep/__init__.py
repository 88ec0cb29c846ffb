"""sep: a neural lossless file compressor, from Python.

compress / decompress work on bytes; shard and concat spread one file over many workers
(each compresses its shard of the file, concat joins the shards into the archive one
``sep compress`` would write); decompress_range decodes only the blocks a range needs.
Errors raise SepError. Every call releases the GIL while it works.
"""

from ._native import SepError, compress, concat, decompress, decompress_range, shard

__all__ = ["SepError", "compress", "concat", "decompress", "decompress_range", "shard"]
