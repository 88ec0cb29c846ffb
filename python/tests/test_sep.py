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


def test_open_writes_and_reads_a_tar_as_a_stream(tmp_path):
    import tarfile

    names = ["README.md", "FORMAT.md", "docs/design.md"]
    path = tmp_path / "docs.tar.sep"
    with sep.open(path, "wb", threads=2, block_size=64 << 10) as f:
        with tarfile.open(fileobj=f, mode="w|") as tar:
            for n in names:
                tar.add(ROOT / n, arcname=n)
    # The command line decodes what sep.open wrote.
    assert sep.decompress(path.read_bytes())[:100]
    with sep.open(path, "rb") as f:
        with tarfile.open(fileobj=f, mode="r|") as tar:
            got = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
    assert got == {n: (ROOT / n).read_bytes() for n in names}


def test_open_in_text_mode_with_an_encoding(tmp_path):
    text = "naïve café, 東京\n" * 500 + real_text().decode("utf-8")[:20000]
    path = tmp_path / "t.sep"
    with sep.open(path, "wt", encoding="utf-16-le") as f:
        f.write(text)
    with sep.open(path, "rt", encoding="utf-16-le") as f:
        assert f.read() == text
    with sep.open(path, "rt", encoding="utf-16-le") as f:
        assert f.readline() == "naïve café, 東京\n"
    with pytest.raises(ValueError):
        sep.open(path, "rbt")
    with pytest.raises(FileExistsError):
        sep.open(path, "xb")


def test_archives_from_python_equal_the_command_lines(tmp_path):
    data = real_text()
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    whole = sep.compress(data, block_size=32 << 10, threads=1)
    c = sep.Compressor(block_size=32 << 10, threads=1)
    streamed = b"".join(c.compress(data[i : i + 7000]) for i in range(0, len(data), 7000))
    streamed += c.flush()
    dst = tmp_path / "out.sep"
    sep.compress_file(src, dst, block_size=32 << 10, threads=1)
    with sep.open(tmp_path / "open.sep", "wb", block_size=32 << 10, threads=1) as f:
        f.write(data)
    # A stream's archive is the same whichever way its bytes came.
    assert streamed == dst.read_bytes() == (tmp_path / "open.sep").read_bytes()
    assert sep.decompress(streamed) == data
    assert len(whole) <= len(streamed) * 1.01
    back = tmp_path / "back.txt"
    sep.decompress_file(dst, back)
    assert back.read_bytes() == data
    with pytest.raises(sep.SepError, match="already exists"):
        sep.decompress_file(dst, back)


def test_incremental_objects_and_what_follows_an_archive():
    data = real_text()
    archive = sep.compress(data, block_size=16 << 10)
    d = sep.Decompressor()
    out = []
    stream = archive + b"next"
    for i in range(0, len(stream), 1000):
        assert not d.eof
        out.append(d.decompress(stream[i : i + 1000]))
    assert d.eof and b"".join(out) == data
    assert d.unused_data == b"next"
    with pytest.raises(EOFError):
        d.decompress(b"more")
    # A damaged archive raises one line.
    bad = bytearray(archive)
    bad[len(bad) // 2] ^= 0x10
    d = sep.Decompressor()
    with pytest.raises(sep.SepError) as e:
        d.decompress(bytes(bad))
    assert "\n" not in str(e.value)
    assert issubclass(sep.SepError, OSError)
    c = sep.Compressor()
    c.compress(data)
    c.flush()
    with pytest.raises(sep.SepError):
        c.compress(b"after the end")


STREAM_SCRIPT = """
import resource, sys
import sep
base = open(sys.argv[1], "rb").read()
block, total = 1 << 20, int(sys.argv[2]) << 20
c = sep.Compressor(level=1, block_size=4 << 20, threads=2)
d = sep.Decompressor(threads=2)
made = checked = 0
for i in range(total // block):
    rot = (i * 7919) % len(base)
    chunk = ((base[rot:] + base[:rot]) * (block // len(base) + 1))[:block]
    checked += len(d.decompress(c.compress(chunk)))
    made += len(chunk)
checked += len(d.decompress(c.flush()))
assert d.eof and checked == made == total
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def test_a_long_stream_through_the_objects_keeps_memory_bounded(tmp_path):
    """A stream of varied text through the incremental objects, 1 MiB at a time, at the
    fastest level, in a process of its own: its peak memory is what the coders' models and
    blocks in flight (4 MiB each) take, the same for a long stream as for a short one
    (SEP_STREAM_MIB sets the long one's length; the notebook's figure is for 200)."""
    import subprocess
    import sys

    base = tmp_path / "base.txt"
    base.write_bytes(real_text())

    def peak(mib):
        out = subprocess.run(
            [sys.executable, "-c", STREAM_SCRIPT, str(base), str(mib)],
            capture_output=True,
            check=True,
            text=True,
        )
        return int(out.stdout.strip())

    mib = int(os.environ.get("SEP_STREAM_MIB", "64"))
    short, long = peak(16), peak(mib)
    print(f"peak {short} MiB over a 16 MiB stream, {long} MiB over a {mib} MiB stream")
    assert long - short < 2 * 4 + 8


def test_tensors_of_every_float_dtype_round_trip_bit_for_bit(tmp_path):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    # Weights as training leaves them: normal values, a few exact zeros and extremes.
    w = rng.normal(0, 0.02, size=(256, 192))
    w[0, :4] = [0.0, -0.0, np.inf, np.nan]
    tensors = {
        "w64": w,
        "w32": w.astype(np.float32),
        "w16": w.astype(np.float16),
        "steps": np.arange(1000, dtype=np.int64),
        "mask": rng.random(300) > 0.5,
        "scalar": np.float32(3.5),
    }
    try:
        import ml_dtypes

        tensors["wbf16"] = w.astype(ml_dtypes.bfloat16)
        tensors["w8"] = w.astype(ml_dtypes.float8_e4m3fn)
    except ImportError:
        pass
    path = tmp_path / "model.safetensors.sep"
    sep.save_tensors(tensors, path, metadata={"step": 7})
    back = sep.load_tensors(path)
    assert list(back) == list(tensors)
    for name, a in tensors.items():
        b = back[name]
        assert b.dtype == np.asarray(a).dtype and b.shape == np.shape(a), name
        assert np.asarray(a).tobytes() == b.tobytes(), name
    # The tensor codecs took the weights: smaller than zstd could make random normals.
    raw = sum(np.asarray(a).nbytes for a in tensors.values())
    assert path.stat().st_size < raw * 0.85
    # What the command line would make of the same safetensors file decodes the same.
    plain = sep.decompress(path.read_bytes())
    assert plain[8:9] == b"{"
    with pytest.raises(FileExistsError):
        sep.save_tensors(tensors, path, mode="xb")
    with pytest.raises(FileNotFoundError):
        sep.load_tensors(tmp_path / "missing.sep")
    # A damaged archive: one line, an OSError like the standard library's compressors raise.
    bad = bytearray(path.read_bytes())
    bad[len(bad) // 2] ^= 0x20
    (tmp_path / "bad.sep").write_bytes(bytes(bad))
    with pytest.raises(sep.SepError):
        sep.load_tensors(tmp_path / "bad.sep")


def test_tensors_from_and_to_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    t = {"w": torch.randn(64, 32, dtype=torch.bfloat16), "b": torch.zeros(32)}
    path = tmp_path / "t.sep"
    sep.save_tensors(t, path)
    back = sep.load_tensors(path, framework="torch")
    for name in t:
        assert back[name].dtype == t[name].dtype and torch.equal(back[name], t[name])


def test_archives_equal_the_command_lines_for_the_same_options(tmp_path):
    """Where the repository's command line is built (CI builds it before these tests)."""
    import subprocess

    cli = ROOT / "target" / "release" / "sep"
    if not cli.exists():
        pytest.skip("no target/release/sep: cargo build --release first")
    data = real_text()
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    args = [str(cli), "-q", "-c", "-T", "1", "--block-size", "32K", "-9"]
    whole = subprocess.run(args + [str(src)], capture_output=True, check=True).stdout
    assert sep.compress(data, level=9, threads=1, block_size=32 << 10) == whole
    # A stream (standard input) against the streaming paths.
    streamed = subprocess.run(args, input=data, capture_output=True, check=True).stdout
    dst = tmp_path / "out.sep"
    sep.compress_file(src, dst, level=9, threads=1, block_size=32 << 10)
    assert dst.read_bytes() == streamed
