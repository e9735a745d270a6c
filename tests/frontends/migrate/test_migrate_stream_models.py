"""migrate --format tf2 / keras streamed: what TF / Keras would write, never through the model.

The object graph (tf2) and the ``.weights.h5`` layout (keras) come from TensorFlow's and
Keras' own walks of the model; the values stream from the source. Each output is compared
with what TensorFlow's ``Checkpoint.write`` / Keras' ``save_weights`` write for the same
model holding the same values, and loaded back the way users load it.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support import keras_stream_check  # noqa: E402
from support.bundles import count_reads, write_checkpoint  # noqa: E402

from tf1compat_init import CheckpointCorruptError  # noqa: E402
from tf1compat_init.checkpoint import target_variables  # noqa: E402
from tf1compat_init.migrate import _keras_stream, _tf2_stream, migrate  # noqa: E402

# Keras 3 is tf.keras on the TF >= 2.16 leg only: the tf215 leg deselects these (no skips).
keras3_only = pytest.mark.tf221


class _Dense(tf.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.kernel = tf.Variable(tf.zeros([n_in, n_out]))
        self.bias = tf.Variable(tf.zeros([n_out]))


class _Module(tf.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = _Dense(4, 3)
        self.fc2 = _Dense(3, 2)
        self.step = tf.Variable(tf.zeros([], tf.int64))
        self.table = [tf.Variable(tf.zeros([5, 2], tf.float64))]


def _module():
    return _Module()


def _keras():
    return keras_stream_check.build(tf.keras)


def _keras_bf16():
    keras = tf.keras

    class Half(keras.layers.Layer):
        def build(self, _):
            self.w = self.add_weight(name="w", shape=(3, 5), dtype="bfloat16")
            self.scale = self.add_weight(name="scale", shape=(), dtype="bfloat16")

        def call(self, x):
            return x

    return keras.Sequential(
        [keras.Input((2,), name="x"), Half(name="half"), keras.layers.Dense(2, name="out")],
        name="half_net",
    )


def _source(tmp_path, factory):
    """A name-based checkpoint of random values for every variable of ``factory()``."""
    rng = np.random.default_rng(0)
    values = {}
    for name, t in target_variables(factory()).items():
        dtype = np.dtype(t.dtype) if t.dtype != "bfloat16" else None
        if dtype is None:
            import ml_dtypes

            dtype = ml_dtypes.bfloat16
        raw = rng.standard_normal(t.shape) * 10
        values[name] = np.asarray(raw).astype(dtype)
    return write_checkpoint(tmp_path / "src" / "ckpt", values), values


def _loaded(factory, values):
    """The model holding ``values``, assigned by hand: what TF / Keras save for reference."""
    model = factory()
    for name, t in target_variables(model).items():
        t.parts[0].variable.assign(values[name])
    return model


def _no_assign(monkeypatch):
    """Fails any load of the values into the model: the streamed path assigns nothing."""
    import tf1compat_init.apply as apply

    def refuse(*_, **__):
        raise AssertionError("values went through the model")

    monkeypatch.setattr(apply, "apply_plan", refuse)


def _graph(prefix):
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    proto = trackable_object_graph_pb2.TrackableObjectGraph()
    proto.ParseFromString(
        tf.train.load_checkpoint(str(prefix)).get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    )
    return proto


def _bundle(prefix):
    reader = tf.train.load_checkpoint(str(prefix))
    dtypes = reader.get_variable_to_dtype_map()
    return {
        k: (dtypes[k].name, reader.get_tensor(k))
        for k in reader.get_variable_to_shape_map()
        if k != "_CHECKPOINTABLE_OBJECT_GRAPH"
    }


@pytest.mark.parametrize(
    "factory",
    [
        _module,
        pytest.param(_keras, marks=keras3_only),
        pytest.param(_keras_bf16, marks=keras3_only),
    ],
)
def test_tf2_streamed_is_what_checkpoint_write_writes(factory, tmp_path, monkeypatch):
    src, values = _source(tmp_path, factory)
    _no_assign(monkeypatch)
    out = tmp_path / "out" / "ckpt"
    result = migrate(src, out, format="tf2", model=factory)
    assert set(result.tensors) == set(values)
    monkeypatch.undo()
    ref = tmp_path / "ref" / "ckpt"
    root = tf.train.Checkpoint(model=_loaded(factory, values))
    _ = root.save_counter
    root.write(str(ref))
    got, want = _bundle(out), _bundle(ref)
    assert set(got) == set(want)
    for key, (dtype, value) in want.items():
        assert got[key][0] == dtype, key
        assert got[key][1].shape == value.shape, key
        assert got[key][1].tobytes() == value.tobytes(), key
    assert _graph(out) == _graph(ref)
    fresh = factory()
    check = tf.train.Checkpoint(model=fresh)
    check.restore(str(out)).assert_consumed()
    for name, t in target_variables(fresh).items():
        assert t.parts[0].variable.numpy().tobytes() == values[name].tobytes(), name


@pytest.mark.parametrize("factory", [_keras, pytest.param(_keras_bf16, marks=keras3_only)])
def test_keras_streamed_is_what_save_weights_writes(factory, tmp_path, monkeypatch):
    src, values = _source(tmp_path, factory)
    _no_assign(monkeypatch)
    out = tmp_path / "out" / "m.weights.h5"
    migrate(src, out, format="keras", model=factory)
    monkeypatch.undo()
    ref = tmp_path / "ref.weights.h5"
    _loaded(factory, values).save_weights(str(ref))
    assert keras_stream_check.h5_tree(out) == keras_stream_check.h5_tree(ref)
    fresh = factory()
    fresh.load_weights(str(out))
    for name, t in target_variables(fresh).items():
        assert t.parts[0].variable.numpy().tobytes() == values[name].tobytes(), name


class _OwnScalar(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(tf.zeros([2, 3]))
        self.gain = tf.Variable(tf.constant(1.5, tf.bfloat16))  # not in the source


def test_tf2_keeps_a_bfloat16_scalar_the_source_lacks(tmp_path):
    """The model's own values go into the output as TensorFlow saves them; TF's
    ``__array__`` of a bfloat16 scalar gives no array, and that once failed the migrate."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    src = write_checkpoint(tmp_path / "src" / "ckpt", {"w": w})
    out = tmp_path / "out" / "ckpt"
    migrate(src, out, format="tf2", model=_OwnScalar, on_missing="warn")
    fresh = _OwnScalar()
    fresh.gain.assign(tf.constant(0.0, tf.bfloat16))
    tf.train.Checkpoint(model=fresh).restore(str(out)).assert_consumed()
    assert fresh.w.numpy().tobytes() == w.tobytes()
    assert float(fresh.gain.numpy()) == 1.5


def test_tf2_big_model_is_verified_tensor_by_tensor(tmp_path, monkeypatch):
    """Above RELOAD_LIMIT, no Checkpoint.read (it would hold the model twice): each key's
    bytes are read back in chunks against their CRC32C; a byte changed in the data file is
    caught there."""
    src, _ = _source(tmp_path, _module)
    monkeypatch.setattr(_tf2_stream, "RELOAD_LIMIT", 0)
    from tf1compat_init.migrate import _model

    reloads = []
    monkeypatch.setattr(_model, "verify", lambda *a: reloads.append(a))
    out = tmp_path / "ok" / "ckpt"
    migrate(src, out, format="tf2", model=_module)
    assert reloads == []
    tf.train.Checkpoint(model=_module()).restore(str(out)).assert_consumed()

    real = _tf2_stream.write

    def write_then_flip(view, graph, keys, prefix, progress):
        done = real(view, graph, keys, prefix, progress)
        data = prefix + ".data-00000-of-00001"
        with open(data, "r+b") as f:
            f.seek(os.path.getsize(data) - 1)
            last = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([last[0] ^ 1]))
        return done

    monkeypatch.setattr(_tf2_stream, "write", write_then_flip)
    bad = tmp_path / "bad" / "ckpt"
    with pytest.raises(CheckpointCorruptError, match="read back|differs from source"):
        migrate(src, bad, format="tf2", model=_module)
    assert list(bad.parent.iterdir()) == []


@pytest.mark.parametrize("big", [False, True])
def test_keras_value_changed_in_the_file_is_caught(tmp_path, monkeypatch, big):
    """Each dataset is read back alone; a small model is also loaded with load_weights."""

    from tf1compat_init.migrate import _model

    src, _ = _source(tmp_path, _keras)
    reloads = []
    if big:
        monkeypatch.setattr(_tf2_stream, "RELOAD_LIMIT", 0)
        monkeypatch.setattr(_model, "verify", lambda *a: reloads.append(a))
    ok = tmp_path / "ok" / "m.weights.h5"
    migrate(src, ok, format="keras", model=_keras)
    _keras().load_weights(str(ok))
    assert reloads == []

    def change(f, datasets):
        ds = f[datasets[0][0]]  # the first streamed dataset
        ds[...] = ds[()] + 1

    _caught_after_fill(monkeypatch, src, tmp_path, _keras, change, "differs from source")


def _caught_after_fill(monkeypatch, src, tmp_path, factory, edit, match):
    """A keras migrate whose file is changed by ``edit(h5py file, [(dataset, target)])``
    after the streamed values are written must fail with ``match``, nothing installed."""
    import h5py

    real = _keras_stream._fill

    def fill_then_edit(reserved, progress):
        done = real(reserved, progress)
        with h5py.File(reserved.path, "r+") as f:
            edit(f, done.datasets)
        return done

    monkeypatch.setattr(_keras_stream, "_fill", fill_then_edit)
    out = tmp_path / "out" / "m.weights.h5"
    with pytest.raises(CheckpointCorruptError, match=match):
        migrate(src, out, format="keras", model=factory)
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize("factory", [_keras, pytest.param(_keras_bf16, marks=keras3_only)])
def test_keras_scalar_weight_is_written_in_the_walk_and_read_back(factory, tmp_path, monkeypatch):
    """HDF5 gives a scalar dataset no storage until it is written (the fill used to find 0
    bytes there and fail): the walk writes its value, the read-back checks it like any
    other dataset, and a changed scalar is caught before install."""
    from tf1compat_init.migrate import _model

    src, values = _source(tmp_path, factory)
    scalars = {n for n, v in values.items() if v.shape == ()}
    assert scalars
    monkeypatch.setattr(_tf2_stream, "RELOAD_LIMIT", 0)  # only the read-back checks
    monkeypatch.setattr(_model, "verify", lambda *a: None)
    out = tmp_path / "ok" / "m.weights.h5"
    assert scalars <= set(migrate(src, out, format="keras", model=factory).tensors)
    fresh = factory()
    fresh.load_weights(str(out))
    for name in scalars:
        got = target_variables(fresh)[name].parts[0].variable.numpy()
        assert got.tobytes() == values[name].tobytes(), name

    def change_a_scalar(f, datasets):
        ds = next(f[n] for n, t in datasets if t in scalars)
        flipped = bytearray(np.asarray(ds[()]).tobytes())  # bfloat16 reads as raw V2
        flipped[0] ^= 1
        ds[()] = np.frombuffer(bytes(flipped), ds.dtype).reshape(())

    _caught_after_fill(monkeypatch, src, tmp_path, factory, change_a_scalar, "differs from source")


@keras3_only
@pytest.mark.parametrize("change", ["chunked", "untagged"])
def test_keras_dataset_stored_otherwise_than_reserved_is_caught(tmp_path, monkeypatch, change):
    """The bytes are read back at the offsets reserved, so the file must still store each
    dataset there, as reserved: one contiguous block (here rewritten chunked, same values)
    with Keras' bfloat16 tag (here removed, same bytes). Either is caught before install."""

    from tf1compat_init.migrate import _model

    src, _ = _source(tmp_path, _keras_bf16)
    monkeypatch.setattr(_tf2_stream, "RELOAD_LIMIT", 0)  # only the read-back checks
    monkeypatch.setattr(_model, "verify", lambda *a: None)

    def store_otherwise(f, datasets):
        name = next(n for n, t in datasets if t.endswith("half/w"))
        ds = f[name]
        if change == "untagged":
            del ds.attrs["dtype"]
        else:
            data, attrs = ds[()], dict(ds.attrs)
            del f[name]
            f.create_dataset(name, data=data, chunks=True).attrs.update(attrs)

    match = "half/w.* not stored as it was reserved"
    _caught_after_fill(monkeypatch, src, tmp_path, _keras_bf16, store_otherwise, match)


@keras3_only
def test_keras_read_back_reads_each_dataset_once_at_its_offset(tmp_path, monkeypatch):
    """Each streamed dataset's bytes are read once, at the offset h5py gives for it, with
    one reused buffer per thread (at most two)."""
    import threading

    import h5py

    from tf1compat_init.migrate import _stream

    src, _ = _source(tmp_path, _keras)
    real = _keras_stream.range_crc
    seen, buffers = [], set()
    lock = threading.Lock()

    def recording(f, begin, end, buf, pread):
        with lock:
            seen.append((begin, end - begin))
            buffers.add((threading.get_ident(), id(buf)))
        return real(f, begin, end, buf, pread)

    monkeypatch.setattr(_keras_stream, "range_crc", recording)
    captured = {}
    real_verify = _keras_stream.verify

    def keep(streamed, path):
        captured["datasets"] = [n for n, _ in streamed.datasets]
        with h5py.File(path, "r") as f:
            captured["storage"] = sorted(
                (f[n].id.get_offset() or 0, f[n].id.get_storage_size())
                for n in captured["datasets"]
            )
        return real_verify(streamed, path)

    monkeypatch.setattr(_keras_stream, "verify", keep)
    migrate(src, tmp_path / "out" / "m.weights.h5", format="keras", model=_keras)
    assert captured["datasets"] and sorted(seen) == captured["storage"]
    assert len(buffers) == len({t for t, _ in buffers}) <= 2
    assert _stream.range_crc is real


@pytest.mark.parametrize("fmt", ["tf2", "keras"])
def test_what_cannot_stream_goes_through_the_model_and_says_so(tmp_path, monkeypatch, caplog, fmt):
    src, values = _source(tmp_path, _keras)

    def unstreamable(*_):
        raise _tf2_stream.Unstreamable("a test says so")

    monkeypatch.setattr(_tf2_stream if fmt == "tf2" else _keras_stream, "write", unstreamable)
    out = tmp_path / "out" / ("ckpt" if fmt == "tf2" else "m.weights.h5")
    with caplog.at_level(logging.INFO, logger="tf1compat_init.migrate"):
        migrate(src, out, format=fmt, model=_keras)
    assert any(
        "a test says so, so the values go through the model" in r.message for r in caplog.records
    )
    fresh = _keras()
    if fmt == "tf2":
        root = tf.train.Checkpoint(model=fresh)
        root.read(str(out)).expect_partial()
    else:
        fresh.load_weights(str(out))
    for name, t in target_variables(fresh).items():
        assert t.parts[0].variable.numpy().tobytes() == values[name].tobytes(), name


@pytest.mark.parametrize("fmt", ["tf2", "keras"])
def test_the_source_is_read_once(tmp_path, monkeypatch, fmt):
    src, values = _source(tmp_path, _keras)
    reads = count_reads(monkeypatch, src)
    out = tmp_path / "out" / ("ckpt" if fmt == "tf2" else "m.weights.h5")
    migrate(src, out, format=fmt, model=_keras)
    assert reads == {k: 1 for k in values}


@pytest.mark.parametrize("fmt", ["tf2", "keras"])
def test_a_disk_that_fills_up_while_streaming(tmp_path, monkeypatch, fmt):
    import errno

    from tf1compat_init.bundle import storage
    from tf1compat_init.errors import DiskFullError

    src, _ = _source(tmp_path, _keras)

    def full(*_):
        raise OSError(errno.ENOSPC, "No space left on device")

    if fmt == "keras":
        monkeypatch.setattr(os, "pwrite", full)
    else:
        real_open = storage.open_exclusive

        class Full:
            def __init__(self, f):
                self.f = f

            def write(self, data):
                full()

            def __getattr__(self, attr):
                return getattr(self.f, attr)

        def filling_open(path):
            f = real_open(path)
            return Full(f) if path.endswith(".data-00000-of-00001") else f

        monkeypatch.setattr(storage, "open_exclusive", filling_open)
    out = tmp_path / "out" / ("ckpt" if fmt == "tf2" else "m.weights.h5")
    out.parent.mkdir()
    with pytest.raises(DiskFullError, match="filled up"):
        migrate(src, out, format=fmt, model=_keras)
    assert list(out.parent.iterdir()) == []


class _Tagged(tf.Module):
    def __init__(self):
        super().__init__()
        self.fc = _Dense(2, 2)
        self.tag = tf.Variable(b"model state")  # a string: not in the source, kept
        self.names = tf.Variable([b"a", b"bc"])  # a string tensor from the source


def test_tf2_streamed_strings_and_values_the_source_lacks(tmp_path, monkeypatch):
    values = {
        "fc/kernel": np.arange(4, dtype=np.float32).reshape(2, 2),
        "fc/bias": np.ones(2, np.float32),
        "names": np.array([b"x", b"yz"], dtype=object),
    }
    src = write_checkpoint(tmp_path / "src" / "ckpt", values)
    out = tmp_path / "out" / "ckpt"
    _no_assign(monkeypatch)
    result = migrate(src, out, format="tf2", model=_Tagged, optional=["^tag$"])
    monkeypatch.undo()
    assert set(result.tensors) == set(values)
    ref = tmp_path / "ref" / "ckpt"
    model = _Tagged()
    model.fc.kernel.assign(values["fc/kernel"])
    model.fc.bias.assign(values["fc/bias"])
    model.names.assign(values["names"].astype(bytes))
    root = tf.train.Checkpoint(model=model)
    _ = root.save_counter
    root.write(str(ref))
    got, want = _bundle(out), _bundle(ref)
    assert set(got) == set(want)
    for key, (dtype, value) in want.items():
        assert got[key][0] == dtype, key
        assert np.array_equal(got[key][1], value), key
    assert _graph(out) == _graph(ref)
    fresh = _Tagged()
    tf.train.Checkpoint(model=fresh).restore(str(out)).assert_consumed()
    assert fresh.names.numpy().tolist() == [b"x", b"yz"] and fresh.tag.numpy() == b"model state"


@pytest.mark.tf_keras
def test_tf_keras_streamed_is_what_save_weights_writes(tmp_path):
    """tf_keras (Keras 2 on TF >= 2.16) in its own process: the same file as its
    save_weights, the values never assigned to the model, load_weights gives them back."""
    pytest.importorskip("tf_keras")
    import subprocess
    import sys

    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3")
    run = subprocess.run(
        [sys.executable, keras_stream_check.__file__, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), run.stderr[-3000:]


def _keras_own_store():
    keras = tf.keras

    class Own(keras.layers.Layer):
        """Stores a copy of its own, not ``variable.numpy()``: no place to stream into."""

        def build(self, _):
            self.w = self.add_weight(name="w", shape=(2, 3), initializer="zeros")

        def call(self, x):
            return x

        def save_own_variables(self, store):
            store["0"] = np.array(self.w)

        def load_own_variables(self, store):
            self.w.assign(store["0"][()])

    return keras.Sequential([keras.Input((2,), name="x"), Own(name="own")], name="own_net")


def test_keras_layer_storing_its_own_way_goes_through_the_model(tmp_path, caplog):
    src, values = _source(tmp_path, _keras_own_store)
    out = tmp_path / "out" / "m.weights.h5"
    with caplog.at_level(logging.INFO, logger="tf1compat_init.migrate"):
        migrate(src, out, format="keras", model=_keras_own_store)
    assert any("so the values go through the model" in r.message for r in caplog.records)
    assert sorted(p.name for p in out.parent.iterdir()) == ["m.weights.h5"]
    fresh = _keras_own_store()
    fresh.load_weights(str(out))
    for name, t in target_variables(fresh).items():
        assert t.parts[0].variable.numpy().tobytes() == values[name].tobytes(), name


@pytest.mark.parametrize(
    "fmt, streamed",
    [("tf1", True), ("safetensors", True), ("tf2", True), ("keras", True)]
    + [("tf2", False), ("keras", False)],
)
def test_every_file_is_synced_before_it_is_installed(tmp_path, monkeypatch, fmt, streamed):
    """The sync overlaps the read-back, but installing waits for both: each output file
    has been fsync'ed (and read back) when it is moved into place, also where TensorFlow
    or Keras wrote it (the values through the model)."""
    from tf1compat_init.migrate import _destination

    if not streamed:

        def unstreamable(*_):
            raise _tf2_stream.Unstreamable("a test says so")

        monkeypatch.setattr(_tf2_stream if fmt == "tf2" else _keras_stream, "write", unstreamable)

    src, _ = _source(tmp_path, _keras)
    synced, checked = set(), []
    real_fsync, real_install = os.fsync, _destination.install

    def fsync(fd):
        real_fsync(fd)
        synced.add(os.path.realpath(f"/proc/self/fd/{fd}"))

    def install(tmp_out, *args):
        tmp_dir = os.path.dirname(tmp_out)
        written = {os.path.realpath(os.path.join(tmp_dir, n)) for n in os.listdir(tmp_dir)}
        checked.append(written)
        assert written and written <= synced, sorted(written - synced)
        return real_install(tmp_out, *args)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(_destination, "install", install)
    out = (
        tmp_path
        / "out"
        / {"tf1": "m.ckpt", "safetensors": "m.safetensors", "tf2": "ckpt"}.get(fmt, "m.weights.h5")
    )
    migrate(src, out, format=fmt, model=_keras if fmt in ("tf2", "keras") else None)
    assert len(checked) == 1


@keras3_only
def test_keras3_walk_builds_each_skip_set_once_and_puts_keras_back(monkeypatch):
    """Keras 3 caches ``get_attr_skipset`` under one key and looks under another, so its
    walk builds a throwaway Layer per object; within ``skipsets_cached`` each type's set is
    built once, equal to Keras' own, and Keras' function is back afterwards."""
    from keras.src.layers.layer import Layer
    from keras.src.saving import saving_lib

    original = saving_lib.get_attr_skipset
    built = []
    monkeypatch.setattr(Layer, "__init__", _counting(Layer.__init__, built))
    with _keras_stream.skipsets_cached():
        assert saving_lib.get_attr_skipset is not original
        first = saving_lib.get_attr_skipset("Layer")
        assert saving_lib.get_attr_skipset("Layer") is first
        assert saving_lib.get_attr_skipset("Functional") is not first
    assert len(built) == 2  # one for "Layer", one for "Functional"
    assert saving_lib.get_attr_skipset is original
    assert first == original("Layer")
    # Nested or overlapping (two migrates in two threads): Keras' own is back after the last.
    outer = _keras_stream.skipsets_cached()
    inner = _keras_stream.skipsets_cached()
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)
    assert saving_lib.get_attr_skipset is not original
    inner.__exit__(None, None, None)
    assert saving_lib.get_attr_skipset is original


def _counting(init, calls):
    def counted(self, *args, **kwargs):
        calls.append(type(self))
        return init(self, *args, **kwargs)

    return counted


def test_tf2_read_back_reads_each_tensor_once_in_chunks_on_two_threads(tmp_path, monkeypatch):
    """The read-back reads each fixed-width key's bytes once, in chunks of a buffer each
    thread reuses (at most two threads, :func:`check_in_threads`); a string key and the object graph through TensorFlow's
    reader, never RestoreV2 (which holds a tensor whole)."""
    import threading

    from tf1compat_init.bundle.reader import BundleReader

    src, _ = _source(tmp_path, _module)
    real_chunks = BundleReader.raw_chunks
    lock = threading.Lock()
    reads, buffers = [], set()  # (thread, buffer)

    def chunks(self, key, chunk=1 << 20, into=None):
        if os.path.abspath(self.prefix) == os.path.abspath(src):  # reading the source
            return real_chunks(self, key, chunk, into)
        with lock:
            reads.append(key)
            buffers.add((threading.get_ident(), id(into) if into is not None else None))
        return real_chunks(self, key, chunk, into)

    def no_restore(*_, **__):
        raise AssertionError("RestoreV2 holds a tensor whole")

    monkeypatch.setattr(BundleReader, "raw_chunks", chunks)
    monkeypatch.setattr(_tf2_stream, "RELOAD_LIMIT", 0)
    monkeypatch.setattr(tf.raw_ops, "RestoreV2", no_restore)
    out = tmp_path / "out" / "ckpt"
    migrate(src, out, format="tf2", model=_module)
    keys = set(tf.train.load_checkpoint(str(out)).get_variable_to_shape_map())
    assert sorted(reads) == sorted(keys - {"_CHECKPOINTABLE_OBJECT_GRAPH"})
    threads = {t for t, _ in buffers}
    assert all(b is not None for _, b in buffers) and len(buffers) == len(threads) <= 2


def test_tf2_read_back_holds_the_index_to_what_was_written(tmp_path, monkeypatch):
    """An index whose checksum, dtype or shape for a key is not the one written is caught,
    even where the data bytes match that index; nothing is installed."""
    src, _ = _source(tmp_path, _module)
    real = _tf2_stream.write
    tamper = {}

    def write_then_forget(view, graph, keys, prefix, progress):
        done = real(view, graph, keys, prefix, progress)
        key = next(k for k, t in done.targets.items() if t == "fc1/kernel")
        tamper["how"](done, key)
        return done

    monkeypatch.setattr(_tf2_stream, "write", write_then_forget)
    cases = {
        "crc": (lambda d, k: d.crcs.__setitem__(k, d.crcs[k] ^ 1), "another checksum"),
        "shape": (
            lambda d, k: d.shapes.__setitem__(k, (3, 4)),
            r"float32 \[4, 3\], written as float32 \[3, 4\]",
        ),
        "dtype": (lambda d, k: d.dtypes.__setitem__(k, "float64"), "written as float64"),
    }
    for name, (how, message) in cases.items():
        tamper["how"] = how
        bad = tmp_path / name / "ckpt"
        with pytest.raises(CheckpointCorruptError, match=f"'fc1/kernel'.*{message}"):
            migrate(src, bad, format="tf2", model=_module)
        assert list(bad.parent.iterdir()) == [], name
