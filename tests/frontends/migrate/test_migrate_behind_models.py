"""migrate --format tf2 / keras of an output the page cache cannot keep: read back behind.

The memory available is faked small (``_behind.memory_available``), so that a small model
takes the path a 10 GiB one takes on a 24 GiB machine: each streamed value is read back
right after it is written, and the check at the end holds the output's index (tf2) or
datasets (keras) to what was read back.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support import behind as behind_support  # noqa: E402
from support import keras_stream_check  # noqa: E402
from support.bundles import write_checkpoint  # noqa: E402

from tf1compat_init import CheckpointCorruptError  # noqa: E402
from tf1compat_init.checkpoint import target_variables  # noqa: E402
from tf1compat_init.migrate import _behind, migrate  # noqa: E402


class _Module(tf.Module):
    def __init__(self):
        super().__init__()
        self.kernel = tf.Variable(tf.zeros([64, 48]))
        self.bias = tf.Variable(tf.zeros([48]))
        self.step = tf.Variable(tf.zeros([], tf.int64))
        self.table = [tf.Variable(tf.zeros([40, 20], tf.float64))]


def _module():
    return _Module()


def _keras():
    return keras_stream_check.build(tf.keras)


def _keras_wide():
    keras = tf.keras
    layers = [keras.layers.Dense(48, name="wide"), keras.layers.Dense(2, name="out")]
    return keras.Sequential([keras.Input((64,), name="x"), *layers], name="wide_net")


CASES = [
    ("tf2", _module, "ckpt"),
    ("keras", _keras, "m.weights.h5"),  # a scalar, written by Keras' walk
    ("keras", _keras_wide, "m.weights.h5"),  # a 12 KiB kernel
]


def _source(tmp_path, factory):
    rng = np.random.default_rng(3)
    values = {
        name: (rng.standard_normal(t.shape) * 10).astype(t.dtype)
        for name, t in target_variables(factory()).items()
    }
    return write_checkpoint(tmp_path / "src" / "ckpt", values)


@pytest.fixture
def little_memory(monkeypatch):
    return behind_support.little_memory(monkeypatch)


def _files(result):
    out = {}
    for path in result.files:
        with open(path, "rb") as f:
            out[os.path.basename(path)] = f.read()
    return out


@pytest.mark.parametrize("chunk", [None, 256])
@pytest.mark.parametrize("fmt,factory,name", CASES)
def test_behind_writes_the_same_output_and_it_loads(
    tmp_path, monkeypatch, little_memory, fmt, factory, name, chunk
):
    """With ``chunk``, the source comes in such pieces, and a value larger than a batch
    is read back in several, as it is written."""
    from tf1compat_init.migrate import _keras_stream, _stream, _tf2_stream

    src = _source(tmp_path, factory)
    with monkeypatch.context() as m:
        m.setattr(_behind, "memory_available", lambda: 1 << 50)
        plain = migrate(src, tmp_path / "plain" / name, format=fmt, model=factory)
    assert little_memory == []
    reads = []
    real_crc, real_prefetched = _stream.range_crc, _stream.prefetched

    def counting(f, begin, end, buf, pread, crc=0):
        reads.append((begin, end))
        return real_crc(f, begin, end, buf, pread, crc)

    monkeypatch.setattr(_behind, "range_crc", counting)
    if chunk:
        module = _tf2_stream if fmt == "tf2" else _keras_stream
        monkeypatch.setattr(module, "prefetched", lambda v, n: real_prefetched(v, n, chunk=chunk))
    got = migrate(src, tmp_path / "behind" / name, format=fmt, model=factory)
    [behind] = little_memory
    begin, end, _ = max(behind.checked.values(), key=lambda r: r[1] - r[0])
    pieces = [r for r in reads if begin <= r[0] < end]
    if factory is not _keras:
        assert end - begin > _behind.BATCH
    if chunk and end - begin > _behind.BATCH:
        assert len(pieces) > 1, (begin, end, reads)
    else:
        assert pieces == [(begin, end)]
    if fmt == "tf2":  # every key but the object graph (a string), model's own values too
        keys = set(tf.train.load_checkpoint(got.destination).get_variable_to_shape_map())
        assert set(behind.checked) == keys - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
    else:  # every streamed dataset but a scalar, which Keras' walk writes
        assert len(behind.checked) == len(got.tensors) - (factory is _keras)
    assert _files(got) == _files(plain)
    model = factory()
    if fmt == "tf2":
        tf.train.Checkpoint(model=model).restore(got.destination).assert_consumed()
    else:
        model.load_weights(got.destination)
    want = tf.train.load_checkpoint(str(src))
    for target, key in got.tensors.items():
        [t] = [t for n, t in target_variables(model).items() if n == target]
        np.testing.assert_array_equal(t.parts[0].variable.numpy(), want.get_tensor(key))


@pytest.mark.parametrize("fmt,factory,name", CASES)
def test_a_byte_changed_before_its_read_back_is_caught(
    tmp_path, monkeypatch, little_memory, fmt, factory, name
):
    src = _source(tmp_path, factory)
    flipped = behind_support.flip_before_read_back(monkeypatch, 8)
    dst = tmp_path / "out" / name
    with pytest.raises(CheckpointCorruptError, match="reads back different.*right after"):
        migrate(src, dst, format=fmt, model=factory)
    assert flipped and list(dst.parent.iterdir()) == []
