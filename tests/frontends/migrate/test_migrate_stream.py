"""migrate streams: the source read once, read-ahead bounded, checksums as written, full disks.

No TensorFlow: the ``tf1`` and ``safetensors`` outputs are written natively.
"""

from __future__ import annotations

import errno
import shutil
import threading
import time
from collections import namedtuple

import numpy as np
import pytest
from support.bundles import count_reads, write_checkpoint

from tf1compat_init import CheckpointCorruptError, open_checkpoint
from tf1compat_init.errors import DiskFullError
from tf1compat_init.migrate import _safetensors, _stream, migrate

pytestmark = pytest.mark.pure


@pytest.fixture
def src(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {f"layer_{i}/w": rng.standard_normal((64, 32)).astype(np.float32) for i in range(12)}
    tensors["big"] = rng.standard_normal((512, 256)).astype(np.float32)  # 512 KiB
    tensors["step"] = np.array(7, np.int64)
    tensors["names"] = np.array([b"a", b"bc"], dtype=object)
    return write_checkpoint(tmp_path / "src" / "model.ckpt", tensors), tensors


@pytest.mark.parametrize("fmt,name", [("tf1", "m.ckpt"), ("safetensors", "m.safetensors")])
def test_the_source_is_read_once(src, tmp_path, monkeypatch, fmt, name):
    prefix, tensors = src
    if fmt == "safetensors":
        tensors = {k: v for k, v in tensors.items() if k != "names"}
    reads = count_reads(monkeypatch, prefix)
    migrate(
        prefix, tmp_path / "out" / name, format=fmt, exclude=["^names$"] if fmt != "tf1" else ()
    )
    assert reads == dict.fromkeys(tensors, 1)


def test_the_output_equals_the_source_bit_for_bit(src, tmp_path):
    prefix, tensors = src
    got = open_checkpoint(migrate(prefix, tmp_path / "o" / "m.ckpt").destination).read()
    assert set(got) == set(tensors)
    for k, v in tensors.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        if v.dtype != object:
            assert got[k].tobytes() == v.tobytes(), k


class _SlowView:
    """A view whose reads take time and record how many bytes are held read ahead."""

    def __init__(self, sizes):
        self.sizes = sizes
        self.lock = threading.Lock()
        self.held = 0
        self.peak = 0
        self.order = []

    def nbytes(self, name):
        return self.sizes[name]

    def read_one(self, name):
        time.sleep(0.002)
        with self.lock:
            self.held += self.sizes[name]
            self.peak = max(self.peak, self.held)
            self.order.append(name)
        return name

    def release(self, name):
        with self.lock:
            self.held -= self.sizes[name]


def test_read_ahead_keeps_order_and_stays_in_its_window():
    sizes = {f"t{i}": 10 for i in range(40)} | {"huge": 500} | {f"u{i}": 10 for i in range(5)}
    view = _SlowView(sizes)
    seen = []
    for name, value in _stream.prefetched(view, list(sizes), window=50):
        assert value == name
        seen.append(name)
        time.sleep(0.001)  # writing
        view.release(name)
    assert seen == list(sizes) == view.order
    # the window (50) plus the tensor being written, or the one tensor larger than it alone
    assert view.peak <= max(500, 50 + 10)
    assert view.peak >= 30  # it did read ahead


def test_a_read_error_surfaces_at_its_tensor_and_stops_the_reading():
    Info = namedtuple("Info", "n")

    class Failing:
        def nbytes(self, name):
            return 1

        def read_one(self, name):
            if name == "c":
                raise CheckpointCorruptError("c: checksum mismatch")
            return Info(name)

    got = []
    with pytest.raises(CheckpointCorruptError, match="c: checksum"):
        for name, _ in _stream.prefetched(Failing(), ["a", "b", "c", "d"]):
            got.append(name)
    assert got == ["a", "b"]


def test_bytes_changed_after_writing_are_caught_by_their_checksum(src, tmp_path, monkeypatch):
    prefix, _ = src
    real_write = _safetensors.write

    def write_then_flip(view, path, progress, behind=None):
        crcs = real_write(view, path, progress, behind)
        with open(path, "r+b") as f:  # a bit flips on the way to the disk
            f.seek(-3, 2)
            b = f.read(1)
            f.seek(-3, 2)
            f.write(bytes([b[0] ^ 1]))
        return crcs

    monkeypatch.setattr(_safetensors, "write", write_then_flip)
    dst = tmp_path / "out" / "m.safetensors"
    with pytest.raises(CheckpointCorruptError, match="reads back different"):
        migrate(prefix, dst, format="safetensors", exclude=["^names$"])
    assert list(dst.parent.iterdir()) == []


def test_too_little_free_space_is_refused_before_writing(src, tmp_path, monkeypatch):
    prefix, tensors = src
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 1000, 1000))
    dst = tmp_path / "out" / "m.ckpt"
    with pytest.raises(DiskFullError) as e:
        migrate(prefix, dst)
    needed = sum(v.nbytes for k, v in tensors.items() if v.dtype != object)
    msg = str(e.value)
    assert str(dst) in msg and "1000 B free" in msg and "nothing was written" in msg
    assert int(msg.split("(")[1].split(" bytes")[0]) >= needed
    assert e.value.errno == errno.ENOSPC and isinstance(e.value, OSError)
    assert list(dst.parent.iterdir()) == []


@pytest.mark.parametrize("fmt,name", [("tf1", "m.ckpt"), ("safetensors", "m.safetensors")])
def test_a_disk_that_fills_up_while_writing(src, tmp_path, monkeypatch, fmt, name):
    prefix, _ = src
    from tf1compat_init.bundle import storage

    real_open = storage.open_exclusive

    class Filling:
        def __init__(self, f):
            self.f, self.n = f, 0

        def write(self, data):
            self.n += len(memoryview(data).cast("B"))
            if self.n > 100_000:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(data)

        def __getattr__(self, attr):
            return getattr(self.f, attr)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

    def filling_open(path):
        f = real_open(path)
        return Filling(f) if ".tf1compat-tmp-" in path and ".index" not in path else f

    monkeypatch.setattr(storage, "open_exclusive", filling_open)
    dst = tmp_path / "out" / name
    dst.parent.mkdir()
    with pytest.raises(DiskFullError) as e:
        migrate(prefix, dst, format=fmt, exclude=["^names$"] if fmt != "tf1" else ())
    msg = str(e.value)
    assert str(dst) in msg and "filled up" in msg and "temporary output was removed" in msg
    assert list(dst.parent.iterdir()) == []  # no output, no temporary directory, no lock
    open_checkpoint(prefix).read()  # the source is intact


def test_add_raw_writes_what_add_writes(tmp_path):
    from tf1compat_init.bundle.writer import BundleWriter

    value = np.arange(3000, dtype=np.float32).reshape(30, 100)
    with BundleWriter(tmp_path / "a") as w:
        w.add("x", value, "float32")
    raw = value.reshape(-1).view(np.uint8)
    with BundleWriter(tmp_path / "b") as w:
        crc = w.add_raw("x", "float32", (30, 100), [raw[:1000], raw[1000:5000], raw[5000:]])
    for suffix in (".index", ".data-00000-of-00001"):
        assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
    from tf1compat_init.bundle.crc import crc32c

    assert crc == crc32c(raw)
    with BundleWriter(tmp_path / "c") as w, pytest.raises(ValueError, match="needs 12000"):
        w.add_raw("x", "float32", (30, 100), [raw[:10]])


def test_raw_chunks_stream_a_tensor_and_check_its_crc_at_the_end(src):
    prefix, tensors = src
    reader = open_checkpoint(prefix).bundle
    pieces = list(reader.raw_chunks("big", 100_000))
    assert [len(p) for p in pieces][:-1] == [100_000] * (len(pieces) - 1)
    assert b"".join(pieces) == tensors["big"].tobytes()
    with pytest.raises(ValueError, match="no plain byte layout"):
        list(reader.raw_chunks("names"))


def test_a_flipped_byte_in_a_streamed_tensor_installs_nothing(src, tmp_path):
    prefix, tensors = src
    entry = open_checkpoint(prefix).bundle.entries["big"]
    data = f"{prefix}.data-00000-of-00001"
    with open(data, "r+b") as f:
        f.seek(entry.offset + entry.size - 5)
        b = f.read(1)
        f.seek(entry.offset + entry.size - 5)
        f.write(bytes([b[0] ^ 0x10]))
    for fmt, name in (("tf1", "m.ckpt"), ("safetensors", "m.safetensors")):
        dst = tmp_path / fmt / name
        with pytest.raises(CheckpointCorruptError, match="checksum mismatch for tensor 'big'"):
            migrate(prefix, dst, format=fmt, exclude=["^names$"])
        assert list(dst.parent.iterdir()) == []


def test_streamed_tensors_stay_in_the_window(src):
    """A tensor larger than the window streams in chunks: the reader never runs ahead."""
    prefix, tensors = src
    from tf1compat_init.migrate import rename_checkpoint

    view = rename_checkpoint(prefix)
    reader = view.base.bundle
    real = type(reader).raw_chunks
    state = {"read": 0, "written": 0, "max_ahead": 0}

    def tracked(self, key, chunk):
        for piece in real(self, key, chunk):
            state["read"] += len(piece)
            state["max_ahead"] = max(state["max_ahead"], state["read"] - state["written"])
            yield piece

    window, chunk = 64 << 10, 16 << 10
    got = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(reader), "raw_chunks", tracked)
        for name, value in _stream.prefetched(view, list(view.variables), window, chunk):
            if isinstance(value, _stream.Chunks):
                parts = []
                for piece in value:
                    time.sleep(0.0005)  # writing is slower than reading
                    parts.append(bytes(piece))
                    state["written"] += len(piece)
                got[name] = b"".join(parts)
            else:
                got[name] = value
    assert got["big"] == tensors["big"].tobytes()  # 512 KiB through a 64 KiB window
    assert state["max_ahead"] <= window + chunk
    assert isinstance(got["names"], np.ndarray)  # strings are read whole


def test_raw_chunks_into_a_buffer_reuse_it(src):
    """With ``into``, every chunk is a view of the caller's buffer; the CRC is still checked."""
    prefix, tensors = src
    reader = open_checkpoint(prefix).bundle
    buf = bytearray(100_000)
    got = b""
    for piece in reader.raw_chunks("big", len(buf), into=buf):
        assert piece.obj is buf
        got += bytes(piece)
    assert got == tensors["big"].tobytes()


def test_tf1_bytes_changed_after_writing_are_caught_by_the_read_back(src, tmp_path, monkeypatch):
    prefix, _ = src
    from tf1compat_init.migrate import _tf1

    real_write = _tf1.write

    def write_then_flip(view, out, progress, behind=None):
        n = real_write(view, out, progress, behind)
        from tf1compat_init.bundle.reader import BundleReader

        entry = BundleReader(out, index_path=out + _tf1.PENDING_INDEX).entries["big"]
        with open(f"{out}.data-00000-of-00001", "r+b") as f:
            f.seek(entry.offset + 7)
            b = f.read(1)
            f.seek(entry.offset + 7)
            f.write(bytes([b[0] ^ 1]))
        return n

    monkeypatch.setattr(_tf1, "write", write_then_flip)
    dst = tmp_path / "out" / "m.ckpt"
    with pytest.raises(CheckpointCorruptError, match="'big' reads back different: checksum"):
        migrate(prefix, dst)
    assert list(dst.parent.iterdir()) == []


def test_check_in_threads_checks_each_name_once_and_raises_the_first_failure():
    names = [f"n{i}" for i in range(40)]
    seen, buffers = [], set()
    lock = threading.Lock()

    def check(name, buf):
        with lock:
            seen.append(name)
            buffers.add(id(buf))
        time.sleep(0.001)

    _stream.check_in_threads(names, check, threads=2, chunk=16)
    assert sorted(seen) == sorted(names) and len(seen) == len(names)
    assert len(buffers) == 2  # one buffer per thread, reused

    def failing(name, buf):
        if name in ("n5", "n9"):
            time.sleep(0.02 if name == "n5" else 0)  # n9 fails first in time
            raise CheckpointCorruptError(f"{name} differs")

    with pytest.raises(CheckpointCorruptError, match="n5 differs"):  # first in order
        _stream.check_in_threads(names, failing, threads=2, chunk=16)


@pytest.mark.parametrize("pread", [True, False])
def test_range_crc_reads_a_range_through_one_buffer(tmp_path, pread):
    """``range_crc``: the CRC32C of a byte range read a buffer at a time, at an offset
    (``preadv``) or through the file's position (the one-thread fallback); a file that
    ends early reads short."""
    from tf1compat_init.bundle.crc import crc32c

    data = bytes(range(256)) * 40
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    buf = bytearray(1000)
    with open(path, "rb", buffering=0) as f:
        assert _stream.range_crc(f, 100, 9000, buf, pread) == (crc32c(data[100:9000]), 8900)
        assert _stream.range_crc(f, 5, 5, buf, pread) == (0, 0)
        crc, n = _stream.range_crc(f, 10_000, 12_000, buf, pread)
        assert (crc, n) == (crc32c(data[10_000:]), len(data) - 10_000)
