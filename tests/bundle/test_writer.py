"""tf1compat_init.bundle.writer: single-shard checkpoints the reader (and TensorFlow) read back.

That TensorFlow itself reads what this writer writes is tested in
tests/frontends/migrate/test_migrate.py (every migrate output is loaded with
``tf.train.load_checkpoint`` there); here, without TensorFlow: the bytes, the index and the
writer's refusals.
"""

from __future__ import annotations

import numpy as np
import pytest

from tf1compat_init.bundle.dtypes import numpy_dtype
from tf1compat_init.bundle.reader import BundleReader
from tf1compat_init.bundle.table import _read_table
from tf1compat_init.bundle.writer import BundleWriter, build_table, dtype_enum
from tf1compat_init.errors import UnsupportedCheckpointError

pytestmark = pytest.mark.pure

TENSORS = {
    "dense/kernel": np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5,
    "dense/bias": np.array([-0.0, np.inf, np.nan], np.float32),
    "global_step": np.int64(1234),
    "embedding/ids": np.array([[1, 2], [3, 4]], np.int32),
    "flags": np.array([True, False]),
    "names": np.array([b"a", b"", "\u00e9".encode()], dtype=object),
    "empty": np.zeros((0, 3), np.float64),
}


def test_every_tensor_reads_back_bit_for_bit(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with BundleWriter(prefix) as w:
        for key, value in TENSORS.items():
            w.add(key, value)
    reader = BundleReader(prefix)
    assert sorted(reader.entries) == sorted(TENSORS)
    for key, value in TENSORS.items():
        got = reader.read(key)
        assert got.shape == np.shape(value), key
        if got.dtype == object:
            assert [bytes(x) for x in got.reshape(-1)] == list(value.reshape(-1)), key
        else:
            assert got.dtype == np.asarray(value).dtype, key
            assert got.tobytes() == np.asarray(value).tobytes(), key


def test_an_explicit_dtype_is_recorded(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with BundleWriter(prefix) as w:
        w.add("q", np.array([1, -2], np.int8), "qint8")
    reader = BundleReader(prefix)
    assert reader.entries["q"].dtype == "qint8"
    assert reader.read("q").dtype == numpy_dtype("qint8")


def test_the_index_is_a_sorted_table_with_the_header_first(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with BundleWriter(prefix) as w:
        for key in ["b", "a", "c/d"]:
            w.add(key, np.float32(1))
        assert w.bytes_written == 12
    keys = [k for k, _ in _read_table(prefix + ".index")]
    assert keys == [b"", b"a", b"b", b"c/d"]


def test_build_table_spans_blocks_and_reads_back_in_order(tmp_path):
    items = [(f"key/{i:05d}".encode(), bytes([i % 251]) * (i % 97)) for i in range(3000)]
    path = tmp_path / "t.index"
    path.write_bytes(build_table(items))
    assert _read_table(str(path)) == items


def test_refusals(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with pytest.raises(ValueError, match="duplicate checkpoint key 'a'"), BundleWriter(prefix) as w:
        w.add("a", np.float32(1))
        w.add("a", np.float32(2))
    assert not (tmp_path / "model.ckpt.index").exists()  # an aborted bundle has no index
    with BundleWriter(str(tmp_path / "m2")) as w:
        with pytest.raises(ValueError, match="may not be empty"):
            w.add("", np.float32(1))
        with pytest.raises(UnsupportedCheckpointError, match="'variant'"):
            w.add("v", np.float32(1), "variant")
    with pytest.raises(FileExistsError):
        BundleWriter(str(tmp_path / "m2"))


@pytest.mark.parametrize("name, number", [("float32", 1), ("int64", 9), ("string", 7)])
def test_dtype_enum_is_tensorflows_number(name, number):
    assert dtype_enum(name) == number


@pytest.mark.parametrize("name", ["resource", "variant", "no_such_dtype"])
def test_dtype_enum_refuses_dtypes_with_no_byte_layout(name):
    with pytest.raises(UnsupportedCheckpointError):
        dtype_enum(name)
