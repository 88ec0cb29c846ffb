"""The Python package: round trips of real text, shards joined into the single-machine
archive, ranges, and clear errors with no output on bad input."""

import os
import threading
from pathlib import Path

import pytest

import sep

ROOT = Path(__file__).resolve().parents[2]


def real_text() -> bytes:
    """The repository's own documentation: real text, always there."""
    parts = [ROOT / "README.md", ROOT / "FORMAT.md", ROOT / "docs" / "design.md"]
    return b"".join(p.read_bytes() for p in parts)


def test_round_trip_at_any_thread_count():
    data = real_text()
    archive = sep.compress(data, threads=2, block_size=32 << 10)
    assert len(archive) < len(data) // 2
    assert sep.decompress(archive, threads=1) == data
    assert sep.decompress(archive, threads=3) == data
    # The archive does not depend on the thread count.
    assert sep.compress(data, threads=1, block_size=32 << 10) == archive


def test_levels_packs_and_models():
    data = real_text()[: 64 << 10]
    fast = sep.compress(data, level=1, pack="none")
    small = sep.compress(data, level=6, pack="none")
    assert len(small) < len(fast)
    assert sep.decompress(fast) == data
    assert sep.decompress(sep.compress(data, level=9, net="none", pack="none")) == data
    # The built-in text pack makes text smaller.
    assert len(sep.compress(data)) < len(small)


def test_shards_join_into_the_single_machine_archive(tmp_path):
    data = real_text()
    src = tmp_path / "input.txt"
    src.write_bytes(data)
    opts = dict(block_size=16 << 10, level=6)
    whole = sep.compress(data, threads=1, **opts)
    parts = []
    for i in range(4):
        part = tmp_path / f"input.{i}-of-4.sep"
        original, archived = sep.shard(src, part, i, 4, **opts)
        assert archived == part.stat().st_size
        parts.append(part)
    joined = tmp_path / "joined.sep"
    original, archived = sep.concat(parts, joined)
    assert original == len(data)
    assert joined.read_bytes() == whole
    assert sep.decompress(joined.read_bytes()) == data


def test_a_range_decodes_only_its_blocks(tmp_path):
    data = real_text()
    path = tmp_path / "a.sep"
    path.write_bytes(sep.compress(data, block_size=16 << 10))
    assert sep.decompress_range(path, 20000, 30000) == data[20000:30000]
    assert sep.decompress_range(path, 0, 1) == data[:1]


def test_bad_input_raises_and_writes_nothing(tmp_path):
    data = real_text()
    archive = sep.compress(data, block_size=16 << 10)
    with pytest.raises(sep.SepError):
        sep.decompress(archive[: len(archive) // 2])
    flipped = bytearray(archive)
    flipped[len(flipped) // 2] ^= 0x40
    with pytest.raises(sep.SepError):
        sep.decompress(bytes(flipped))
    with pytest.raises(sep.SepError):
        sep.compress(data, net="gpt")
    with pytest.raises(sep.SepError):
        sep.compress(data, pack=str(tmp_path / "missing.pack"))
    src = tmp_path / "input.txt"
    src.write_bytes(data)
    parts = [tmp_path / f"p{i}.sep" for i in range(3)]
    for i, p in enumerate(parts):
        sep.shard(src, p, i, 3, block_size=16 << 10)
    # Reordered, missing and repeated shards, and an existing destination.
    for bad in ([parts[1], parts[0], parts[2]], parts[:2], [parts[0], parts[0], parts[2]]):
        out = tmp_path / "out.sep"
        with pytest.raises(sep.SepError):
            sep.concat(bad, out)
        assert not out.exists()
    with pytest.raises(sep.SepError):
        sep.shard(src, parts[0], 0, 3, block_size=16 << 10)
    with pytest.raises(sep.SepError):
        sep.shard(tmp_path / "missing.txt", tmp_path / "x.sep", 0, 1)
    assert not (tmp_path / "x.sep").exists()
    # No temporary file is left behind.
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]


def test_calls_release_the_gil():
    data = real_text()
    results = [None, None]

    def work(i):
        results[i] = sep.decompress(sep.compress(data, threads=1))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [data, data]
