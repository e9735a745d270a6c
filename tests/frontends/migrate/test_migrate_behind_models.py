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


CASES = [("tf2", _module, "ckpt"), ("keras", _keras, "m.weights.h5")]


def _source(tmp_path, factory):
    rng = np.random.default_rng(3)
    values = {
        name: (rng.standard_normal(t.shape) * 10).astype(t.dtype)
        for name, t in target_variables(factory()).items()
    }
    return write_checkpoint(tmp_path / "src" / "ckpt", values)


@pytest.fixture
def little_memory(monkeypatch):
    """Every local output read back behind, in small batches; returns the Behinds made."""
    monkeypatch.setattr(_behind, "memory_available", lambda: 0)
    monkeypatch.setattr(_behind, "BATCH", 4 << 10)
    monkeypatch.setattr(_behind, "LAG", 8 << 10)
    made = []
    real = _behind.Behind.__init__

    def init(self, *a, **k):
        real(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(_behind.Behind, "__init__", init)
    return made


def _files(result):
    out = {}
    for path in result.files:
        with open(path, "rb") as f:
            out[os.path.basename(path)] = f.read()
    return out


@pytest.mark.parametrize("fmt,factory,name", CASES)
def test_behind_writes_the_same_output_and_it_loads(
    tmp_path, monkeypatch, little_memory, fmt, factory, name
):
    src = _source(tmp_path, factory)
    with monkeypatch.context() as m:
        m.setattr(_behind, "memory_available", lambda: 1 << 50)
        plain = migrate(src, tmp_path / "plain" / name, format=fmt, model=factory)
    assert little_memory == []
    got = migrate(src, tmp_path / "behind" / name, format=fmt, model=factory)
    [behind] = little_memory
    if fmt == "tf2":  # every key but the object graph (a string), model's own values too
        keys = set(tf.train.load_checkpoint(got.destination).get_variable_to_shape_map())
        assert set(behind.checked) == keys - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
    else:  # every streamed dataset but the scalar, which Keras' walk writes
        assert len(behind.checked) == len(got.tensors) - 1
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
    real = _behind.Behind._catch_up
    flipped = []

    def flip_then_catch_up(self):
        if self._queue and self.flush is not None:
            self.flush()
        for key, begin, end, _ in self._queue:
            if end - begin >= 8 and not flipped:
                at = (begin + end) // 2
                with open(self.path, "r+b") as f:
                    f.seek(at)
                    b = f.read(1)
                    f.seek(at)
                    f.write(bytes([b[0] ^ 1]))
                flipped.append(key)
        return real(self)

    monkeypatch.setattr(_behind.Behind, "_catch_up", flip_then_catch_up)
    dst = tmp_path / "out" / name
    with pytest.raises(CheckpointCorruptError, match="reads back different.*right after"):
        migrate(src, dst, format=fmt, model=factory)
    assert flipped and list(dst.parent.iterdir()) == []
