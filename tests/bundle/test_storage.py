"""tf1compat_init.bundle.storage: which paths are URLs, the remote-call timeout setting, local
writes in pieces.

Reads and writes through ``tf.io.gfile`` (``ram://``) are tested in test_remote.py.
"""

from __future__ import annotations

import io
import os
import sys

import pytest

from tf1compat_init.bundle import storage

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    "path, url",
    [
        ("gs://bucket/model.ckpt", True),
        ("ram://x/y", True),
        ("file:///tmp/a", True),
        ("hdfs+ha://n/p", True),
        ("/tmp/model.ckpt", False),
        ("relative/dir", False),
        ("C:\\models\\ckpt", False),
        ("://no-scheme", False),
        ("1gs://starts-with-a-digit", False),
        ("dir/with://inside", False),
    ],
)
def test_is_url(path, url):
    assert storage.is_url(path) is url


@pytest.mark.parametrize(
    "raw, seconds",
    [
        (None, storage.DEFAULT_TIMEOUT),
        ("", storage.DEFAULT_TIMEOUT),
        ("  ", storage.DEFAULT_TIMEOUT),
        ("120", 120.0),
        ("0.5", 0.5),
        ("0", None),
        ("none", None),
        ("OFF", None),
    ],
)
def test_timeout_from_the_environment(monkeypatch, raw, seconds):
    if raw is None:
        monkeypatch.delenv(storage.TIMEOUT_ENV, raising=False)
    else:
        monkeypatch.setenv(storage.TIMEOUT_ENV, raw)
    assert storage.timeout() == seconds


@pytest.mark.parametrize("raw", ["-1", "soon", "nan", "inf", "1e999"])
def test_a_bad_timeout_names_the_variable_and_the_fix(monkeypatch, raw):
    monkeypatch.setenv(storage.TIMEOUT_ENV, raw)
    with pytest.raises(ValueError, match=f"TF1COMPAT_REMOTE_TIMEOUT='{raw}'.*positive"):
        storage.timeout()


class _Recording(io.RawIOBase):
    """A raw file that keeps what it is given and the size of each write call."""

    def __init__(self):
        self.sizes, self.data = [], bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.sizes.append(len(b))
        self.data += bytes(b)
        return len(b)


def test_local_writes_go_down_in_pieces_of_at_most_write_chunk():
    raw = _Recording()
    w = storage.LocalWriter(raw)
    big = bytes(range(256)) * ((3 * storage.WRITE_CHUNK + 5) // 256 + 1)
    assert w.write(b"head") == 4
    assert w.write(memoryview(big)) == len(big)
    w.flush()
    assert bytes(raw.data) == b"head" + big
    assert max(raw.sizes) <= storage.WRITE_CHUNK and len(raw.sizes) >= 4


def test_pwrite_all_writes_everything_in_pieces(tmp_path, monkeypatch):
    sizes, real = [], os.pwrite

    def short_pwrite(fd, data, offset):  # the kernel may write less than asked
        sizes.append(len(data))
        return real(fd, bytes(data)[: max(len(data) // 2, 1)], offset)

    monkeypatch.setattr(os, "pwrite", short_pwrite)
    path = tmp_path / "f"
    path.write_bytes(bytes(10))
    data = bytes(range(256)) * (2 * storage.WRITE_CHUNK // 256 + 3)
    fd = os.open(path, os.O_WRONLY)
    try:
        assert storage.pwrite_all(fd, data, 10) == 10 + len(data)
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(10) + data
    assert max(sizes) <= storage.WRITE_CHUNK


def test_open_exclusive_refuses_an_existing_file_and_chunks_writes(tmp_path):
    path = tmp_path / "x"
    with storage.open_exclusive(str(path)) as f:
        assert isinstance(f, storage.LocalWriter)
        f.write(b"abc")
    assert path.read_bytes() == b"abc"
    with pytest.raises(FileExistsError):
        storage.open_exclusive(str(path))


def test_long_local_writes_start_the_kernels_writeback(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(storage, "start_writeback", lambda fd: started.append(fd))
    monkeypatch.setattr(storage, "WRITEBACK_EVERY", 3 << 20)
    with storage.open_exclusive(str(tmp_path / "x")) as f:
        for _ in range(10):
            f.write(bytes(1 << 20))
    assert len(started) == 3  # after 3, 6 and 9 MiB
    fd = os.open(tmp_path / "y", os.O_WRONLY | os.O_CREAT)
    writeback = storage.Writeback(fd)
    try:
        storage.pwrite_all(fd, bytes(7 << 20), 0, writeback)
    finally:
        os.close(fd)
    assert len(started) == 5  # past 3 and 6 MiB
    assert (tmp_path / "y").stat().st_size == 7 << 20


def test_start_writeback_works_on_a_real_file(tmp_path):
    with storage.open_exclusive(str(tmp_path / "x")) as f:
        f.write(b"x" * 4096)
        f.flush()
        storage.start_writeback(f.fileno())  # Linux: sync_file_range; elsewhere nothing
    assert (tmp_path / "x").read_bytes() == b"x" * 4096


def test_wait_written_waits_for_a_range_of_a_real_file(tmp_path):
    """Linux: ``sync_file_range`` over the range, through any descriptor of the file (a
    read-only one included), says it worked; elsewhere it cannot tell."""
    path = tmp_path / "x"
    with storage.open_exclusive(str(path)) as f:
        f.write(b"x" * 8192)
        f.flush()
        with open(path, "rb") as r:
            said = storage.wait_written(r.fileno(), 4096, 4096)
        assert storage.wait_written(f.fileno(), 0, 0) is False  # nothing to wait for
    assert said is (sys.platform.startswith("linux"))
    assert path.read_bytes() == b"x" * 8192
