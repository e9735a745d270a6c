"""CRC32C on every backend (``crc32c``, ``google-crc32c``, pure Python): known vectors,
properties against the pure-Python table, every zero-copy input the engine passes, and
TensorFlow's own checks (TFRecord masked CRCs, checkpoints TensorFlow reads back)."""

from __future__ import annotations

import functools
import mmap
import os
import struct
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tf1compat_init.bundle import crc as _crc
from tf1compat_init.bundle.crc import crc32c, mask_crc, unmask_crc

BACKENDS = ["crc32c", "google-crc32c", "python"]
_MODULES = {"crc32c": "crc32c", "google-crc32c": "google_crc32c", "python": None}


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Forces one backend for the test, then puts back the one chosen before."""
    name = request.param
    if _MODULES[name]:
        pytest.importorskip(_MODULES[name])
    saved = _crc._chosen
    _crc._select(name)
    assert _crc.backend_name() == name
    yield name
    _crc._chosen = saved


def _reference(data: bytes, crc: int = 0) -> int:
    return _crc._crc_python(data, crc)


# -- selection ------------------------------------------------------------------------------


@pytest.mark.pure
def test_the_fastest_installed_backend_is_chosen(monkeypatch):
    pytest.importorskip("crc32c")
    monkeypatch.setattr(_crc, "_chosen", None)
    assert _crc.backend_name() == "crc32c"
    assert _crc.crc32c_extender() is __import__("crc32c").crc32c  # no wrapper in the hot loop


@pytest.mark.pure
def test_fallbacks_in_order_when_a_backend_is_missing(monkeypatch):
    """Without ``crc32c``, ``google-crc32c``; without both, pure Python with a warning."""
    pytest.importorskip("google_crc32c")

    def missing():
        raise ImportError("not installed")

    monkeypatch.setattr(_crc, "_chosen", None)
    monkeypatch.setitem(_crc._BACKENDS, "crc32c", missing)
    assert _crc.backend_name() == "google-crc32c"
    monkeypatch.setattr(_crc, "_chosen", None)
    monkeypatch.setitem(_crc._BACKENDS, "google-crc32c", missing)
    assert _crc.backend_name() == "python"
    with pytest.raises(ImportError, match="'crc32c' is not usable"):
        _crc._select("crc32c")
    with pytest.raises(ValueError, match="unknown crc32c backend 'zlib'"):
        _crc._select("zlib")


@pytest.mark.pure
def test_a_backend_with_wrong_results_is_refused(monkeypatch, caplog):
    monkeypatch.setattr(_crc, "_chosen", None)
    monkeypatch.setitem(_crc._BACKENDS, "crc32c", lambda: lambda data, crc=0: 0)
    assert _crc.backend_name() != "crc32c"
    assert "gives wrong checksums" in caplog.text


# -- vectors and properties, per backend ------------------------------------------------------


@pytest.mark.pure
def test_known_vectors(backend):
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283
    # RFC 3720 (iSCSI), B.4.
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    # LevelDB's crc32c_test: the masked value of "foo" round-trips, the mask moves it.
    assert mask_crc(crc32c(b"foo")) != crc32c(b"foo")
    assert unmask_crc(mask_crc(crc32c(b"foo"))) == crc32c(b"foo")


@pytest.mark.pure
@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=3000), cut=st.integers(0, 3000), seed=st.integers(0, 2**32 - 1))
def test_matches_the_table_and_extends(data, cut, seed):
    for name in BACKENDS:
        if _MODULES[name] and not _importable(_MODULES[name]):
            continue
        extend = _crc._load(name)
        assert extend is not None, name
        cut = min(cut, len(data))
        want = _reference(data, seed)
        assert extend(data, seed) == want, name
        assert extend(data[cut:], extend(data[:cut], seed)) == want, name
        arr = np.frombuffer(data, np.uint8)
        assert extend(memoryview(data)[cut:]) == _reference(data[cut:]), name
        assert extend(arr[cut:]) == _reference(data[cut:]), name


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=3000), cut=st.integers(0, 3000))
def test_combine_joins_the_crcs_of_two_pieces(data, cut):
    from tf1compat_init.bundle import fastread

    cut = min(cut, len(data))
    a, b = data[:cut], data[cut:]
    assert _crc.crc32c_combine(crc32c(a), crc32c(b), len(b)) == crc32c(data)
    assert fastread.crc32c_combine is _crc.crc32c_combine  # its old home still exports it


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


@pytest.mark.pure
def test_every_input_the_engine_passes_is_read_in_place(backend, tmp_path):
    """Memoryviews of an mmap, numpy arrays of any dtype, slices at odd offsets,
    non-contiguous arrays (copied first), ml_dtypes values, through ``crc32c`` and
    through the raw extender the engine's loops call."""
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 256, (1 << 16) + 13, dtype=np.uint8).tobytes()  # > 32 KiB
    path = tmp_path / "blob"
    path.write_bytes(raw)
    extend = _crc.crc32c_extender()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = memoryview(mm)
        try:
            assert crc32c(mm) == extend(view) == _reference(raw)
            assert extend(view[7:40007]) == crc32c(view[7:40007]) == _reference(raw[7:40007])
            mapped = np.frombuffer(mm, np.uint8)
            assert extend(mapped[5:]) == _reference(raw[5:])
            del mapped
        finally:
            view.release()
    a = np.frombuffer(raw[:65536], np.float32).reshape(128, 128)
    assert crc32c(a) == _reference(a.tobytes())
    assert crc32c(a[:, ::2]) == _reference(np.ascontiguousarray(a[:, ::2]).tobytes())
    assert crc32c(a.T) == _reference(np.ascontiguousarray(a.T).tobytes())
    assert crc32c(bytearray(raw)) == _reference(raw)
    assert crc32c(memoryview(a)) == _reference(raw[:65536])  # a 2-D float memoryview
    ml_dtypes = pytest.importorskip("ml_dtypes")
    b = np.frombuffer(raw[:512], ml_dtypes.bfloat16)
    assert crc32c(b) == _reference(raw[:512])
    with pytest.raises(TypeError, match="object array"):
        crc32c(np.array([b"x"], dtype=object))


@functools.cache
def _thread_ranges() -> tuple[list[memoryview], list[int]]:
    """Views of one buffer and their reference CRCs (computed once for every backend)."""
    rng = np.random.default_rng(4)
    buf = rng.integers(0, 256, 4 << 20, dtype=np.uint8)
    view = memoryview(buf)
    sizes = [64 << 10, 4096, 1 << 20, 33, 32 << 10]
    ranges = [view[i * 37 : i * 37 + sizes[i % len(sizes)]] for i in range(40)]
    return ranges, [_reference(bytes(r)) for r in ranges]


@pytest.mark.pure
def test_parallel_threads_agree(backend):
    """The check pass runs the extender in threads over views of one buffer."""
    ranges, want = _thread_ranges()
    extend = _crc.crc32c_extender()
    got: dict[int, list[int]] = {}

    def work(t: int) -> None:
        got[t] = [extend(r) for r in ranges]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[t] == want for t in range(4))


# -- against TensorFlow's own CRC ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return pytest.importorskip("tensorflow")


def _records(rng: np.random.Generator) -> list[bytes]:
    sizes = [0, 1, 7, 100, 4095, 40000, 70001]
    return [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in sizes]


def _tfrecord_frames(blob: bytes) -> list[tuple[bytes, int, bytes, int]]:
    """(length bytes, stored masked CRC of them, data, stored masked CRC of it) per record."""
    out, pos = [], 0
    while pos < len(blob):
        head = blob[pos : pos + 8]
        (n,) = struct.unpack("<Q", head)
        (head_crc,) = struct.unpack("<I", blob[pos + 8 : pos + 12])
        data = blob[pos + 12 : pos + 12 + n]
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + n : pos + 16 + n])
        out.append((head, head_crc, data, data_crc))
        pos += 16 + n
    return out


def test_tfrecord_crcs_written_by_tensorflow(backend, tf, tmp_path):
    """TensorFlow's TFRecord writer stores masked CRC32Cs of each length and payload."""
    records = _records(np.random.default_rng(5))
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    frames = _tfrecord_frames(open(path, "rb").read())
    assert [d for _, _, d, _ in frames] == records
    for head, head_crc, data, data_crc in frames:
        assert mask_crc(crc32c(head)) == head_crc
        assert mask_crc(crc32c(np.frombuffer(data, np.uint8))) == data_crc
        assert unmask_crc(data_crc) == crc32c(memoryview(data))


def _write_tfrecord(path: str, records: list[bytes], damage: int | None = None) -> None:
    with open(path, "wb") as f:
        for i, r in enumerate(records):
            head = struct.pack("<Q", len(r))
            crc = mask_crc(crc32c(r))
            if i == damage:
                crc ^= 1
            f.write(head + struct.pack("<I", mask_crc(crc32c(head))) + r + struct.pack("<I", crc))


def test_tfrecords_we_checksum_are_read_by_tensorflow(backend, tf, tmp_path):
    records = _records(np.random.default_rng(6))
    good, bad = str(tmp_path / "ours.tfrecord"), str(tmp_path / "bad.tfrecord")
    _write_tfrecord(good, records)
    assert [t.numpy() for t in tf.data.TFRecordDataset(good)] == records
    _write_tfrecord(bad, records, damage=5)  # TensorFlow does check: a wrong CRC is refused
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.TFRecordDataset(bad))


def test_checkpoints_we_write_are_read_by_tensorflow(backend, tf, tmp_path):
    """Our writer's data CRCs (numeric, strings, > 32 KiB) pass TensorFlow's checks."""
    from tf1compat_init.bundle.writer import BundleWriter

    rng = np.random.default_rng(7)
    values = {
        "big": rng.standard_normal((129, 131)).astype(np.float32),
        "odd": rng.integers(0, 256, 7, dtype=np.uint8),
        "f64": rng.standard_normal(5),
        "strings": np.array([b"", b"a", b"\x00" * 300, b"xyz" * 50], dtype=object),
    }
    prefix = str(tmp_path / "ours")
    with BundleWriter(prefix) as w:
        for key, value in values.items():
            w.add(key, value)
    reader = tf.train.load_checkpoint(prefix)
    for key, value in values.items():
        got = reader.get_tensor(key)
        if value.dtype == object:
            assert list(got) == list(value)
        else:
            assert got.dtype == value.dtype and np.array_equal(got, value)
    data = prefix + ".data-00000-of-00001"
    blob = bytearray(open(data, "rb").read())
    blob[100] ^= 0x40  # inside "big": TensorFlow checks the CRC we wrote
    open(data, "wb").write(bytes(blob))
    with pytest.raises(tf.errors.OpError, match="Checksum does not match"):
        tf.train.load_checkpoint(prefix).get_tensor("big")


def test_checkpoints_tensorflow_writes_are_verified(backend, tf, tmp_path):
    """TensorFlow's stored CRCs check out on both our read paths; a flipped byte does not."""
    import tf1compat_init as tci
    from tf1compat_init.bundle.fastread import FastReader
    from tf1compat_init.bundle.reader import BundleReader

    rng = np.random.default_rng(8)
    values = {
        "big": rng.standard_normal((300, 301)).astype(np.float32),
        "small": rng.standard_normal(3).astype(np.float32),
        "i64": rng.integers(-(2**40), 2**40, 9),
        "s": tf.constant([b"one", b"two" * 40]),
    }
    root = tf.train.Checkpoint(**{k: tf.Variable(v) for k, v in values.items()})
    prefix = root.write(str(tmp_path / "tf"))
    reader = BundleReader(prefix)
    numeric = [k for k in reader.entries if k.startswith(("big", "small", "i64"))]
    assert len(numeric) == 3
    for key in reader.entries:
        reader.read(key)  # raises on a mismatch
    with FastReader(reader, threads=2) as fast:
        fast.verify(numeric)
    big = next(k for k in numeric if k.startswith("big"))
    entry = reader.entries[big]
    data = reader.data_path(entry.shard_id)
    blob = bytearray(open(data, "rb").read())
    blob[entry.offset + entry.size - 3] ^= 1
    open(data, "wb").write(bytes(blob))
    reader = BundleReader(prefix)
    with pytest.raises(tci.CheckpointCorruptError, match="checksum mismatch"):
        reader.read(big)
    with FastReader(reader, threads=2) as fast:
        with pytest.raises(tci.CheckpointCorruptError, match="checksum mismatch"):
            fast.verify(numeric)
