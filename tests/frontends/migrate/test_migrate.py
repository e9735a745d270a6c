"""migrate: the native bundle writer, forward renames, round trips bit for bit, safety."""

from __future__ import annotations

import os
import re
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
from support.bundles import write_checkpoint

from tf1compat_init import AssignmentMapError, CheckpointCorruptError, open_checkpoint
from tf1compat_init import migrate as mig
from tf1compat_init.bundle.writer import BundleWriter, build_table
from tf1compat_init.migrate import MigrationLockedError, migrate, rename_checkpoint

# -- pure parts: no TensorFlow ------------------------------------------------------------


@pytest.fixture
def small(tmp_path):
    tensors = {
        "model/fc1/kernel": np.arange(12, dtype=np.float32).reshape(3, 4),
        "model/fc1/bias": np.array([1.0, -0.0, np.nan, 2.0], np.float32),
        "model/fc1/kernel/Adam": np.zeros((3, 4), np.float32),
        "other/w": np.array([7], np.int64),
        "global_step": np.array(3, np.int64),
        "beta1_power": np.array(0.9, np.float32),
    }
    return write_checkpoint(tmp_path / "src" / "model.ckpt-3", tensors), tensors


def test_writer_reads_back_natively(tmp_path):
    vals = {
        "f": np.array([[1.5, -0.0], [np.nan, np.inf]], np.float32),
        "d": np.arange(5, dtype=np.float64),
        "i": np.array([-(2**40), 2**40], np.int64),
        "b": np.array([True, False]),
        "s": np.array([b"x" * 200, b"", "\u00fc".encode()], dtype=object),
        "scalar": np.array(b"abc", dtype=object),
        "empty": np.zeros((0, 4), np.int32),
    }
    prefix = write_checkpoint(tmp_path / "w" / "ckpt", vals)
    info = open_checkpoint(prefix)
    got = info.read()
    assert set(got) == set(vals)
    for k, v in vals.items():
        assert got[k].shape == v.shape and got[k].dtype == v.dtype
        if v.dtype == object:
            assert list(got[k].reshape(-1)) == list(v.reshape(-1))
        else:
            assert got[k].tobytes() == v.tobytes()


def test_writer_refuses_duplicates_and_existing(tmp_path):
    prefix = tmp_path / "ckpt"
    with BundleWriter(prefix) as w:
        w.add("a", np.zeros(2, np.float32))
        with pytest.raises(ValueError, match="duplicate checkpoint key 'a'"):
            w.add("a", np.zeros(2, np.float32))
    with pytest.raises(FileExistsError):
        BundleWriter(prefix)


def test_writer_abort_leaves_nothing(tmp_path):
    prefix = tmp_path / "ckpt"
    with pytest.raises(RuntimeError), BundleWriter(prefix) as w:
        w.add("a", np.zeros(2, np.float32))
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_table_is_multi_block_and_sorted(tmp_path):
    items = [(b"", b"h")] + [(f"k{i:06d}".encode(), b"v" * 40) for i in range(20000)]
    table = build_table(items)
    magic = struct.unpack("<Q", table[-8:])[0]
    assert magic == 0xDB4775248B80FB57
    assert len(table) > 2 * 262144  # several data blocks, so the index block has entries
    with pytest.raises(ValueError, match="must increase"):
        build_table([(b"b", b""), (b"a", b"")])


@pytest.mark.parametrize(
    "rules, expected",
    [
        (None, None),  # identity
        ({"model/": "encoder/"}, {"model/fc1/kernel": "encoder/fc1/kernel"}),
        ({"model/": "/"}, {"model/fc1/kernel": "fc1/kernel"}),
        ({"/": "net/"}, {"other/w": "net/other/w", "global_step": "net/global_step"}),
        ({"model/fc1/bias": "b"}, {"model/fc1/bias": "b", "model/fc1/kernel": "model/fc1/kernel"}),
        ([("other/w", "w1"), ("other/w", "w2")], {"w1": None, "w2": None}),  # two copies
    ],
)
def test_forward_renames(small, rules, expected):
    prefix, tensors = small
    view = rename_checkpoint(prefix, rules)
    if expected is None:
        assert sorted(view.variables) == sorted(tensors)
        return
    for old, new in expected.items():
        if new is None:  # a copy: `old` is the new name, from other/w
            assert view.source_names[old] == "other/w"
        else:
            assert view.source_names[new] == old
            if old != new:
                assert old not in view.variables
    # Keys no rule matches keep their names.
    assert "beta1_power" in view.variables or "net/beta1_power" in view.variables


def test_forward_regex_and_callable(small):
    prefix, _ = small
    view = rename_checkpoint(prefix, {re.compile(r"model/(fc\d)/(.*)"): r"enc/\1_\2"})
    assert view.source_names["enc/fc1_kernel"] == "model/fc1/kernel"
    view = rename_checkpoint(prefix, lambda k: k.upper() if k.startswith("other") else None)
    assert view.source_names["OTHER/W"] == "other/w"
    assert "global_step" in view.variables


@pytest.mark.parametrize(
    "rules, message",
    [
        ({"modle/": "enc/"}, r"matches nothing: the checkpoint has no key under 'modle/'"),
        ({"enc/": "model/"}, r"looks reversed.*did you mean \{'model/': 'enc/'\}"),
        ({"model/": ""}, r"the new name is the empty string"),
        ({"model/": "enc"}, r"did you mean \{'model/': 'enc/'\}"),
        ({"model/fc1/kernl": "k"}, r"did you mean 'model/fc1/kernel'"),
        ({"model/fc1": "x"}, r"for the scope, write \{'model/fc1/': \.\.\.\}"),
        (
            {"model/fc1/bias": "x/"},
            r"must be one name; did you mean \{'model/fc1/bias': 'x/bias'\}",
        ),
        ({"model/fc1/bias": "other/w"}, r"two keys would both be named 'other/w'"),
        ({re.compile("nope/.*"): "x"}, r"regex rule .* matches no checkpoint key"),
    ],
)
def test_forward_rename_errors(small, rules, message):
    with pytest.raises(AssignmentMapError, match=message):
        rename_checkpoint(small[0], rules)


def test_exclude_and_drop_optimizer(small):
    prefix, _ = small
    view = rename_checkpoint(prefix, None, exclude=[r"^other/"], drop_optimizer=True)
    # global_step is the optimizer's step counter: one list with the optional policy.
    assert set(view.variables) == {"model/fc1/kernel", "model/fc1/bias"}
    assert "optimizer" in view.excluded["global_step"]
    assert view.excluded["other/w"] == "exclude pattern"
    assert "optimizer" in view.excluded["model/fc1/kernel/Adam"]
    assert "optimizer" in view.excluded["beta1_power"]
    with pytest.raises(AssignmentMapError, match="nothing is left to migrate"):
        rename_checkpoint(prefix, None, exclude=[".*"])


def test_map_file(tmp_path):
    f = tmp_path / "m.json"
    f.write_text('{"model/": "enc/", "global_step": "step"}')
    assert mig.load_map_file(f) == [("model/", "enc/"), ("global_step", "step")]
    f.write_text('[["a/", "b/"], ["a/", "c/"]]')
    assert mig.load_map_file(f) == [("a/", "b/"), ("a/", "c/")]
    f.write_text('{"a/": 3}')
    with pytest.raises(AssignmentMapError, match="must map a string to a string"):
        mig.load_map_file(f)
    f.write_text("{oops")
    with pytest.raises(AssignmentMapError, match="not valid JSON.*line 1"):
        mig.load_map_file(f)


def test_tf1_native_round_trip_and_safety(small, tmp_path):
    prefix, tensors = small
    before = {p.name: p.read_bytes() for p in Path(prefix).parent.iterdir()}
    dst = tmp_path / "out" / "renamed.ckpt"
    result = migrate(prefix, dst, {"model/": "enc/"}, drop_optimizer=True)
    assert result.renamed == {
        "model/fc1/bias": "enc/fc1/bias",
        "model/fc1/kernel": "enc/fc1/kernel",
    }
    got = open_checkpoint(dst).read()
    assert set(got) == {"enc/fc1/kernel", "enc/fc1/bias", "other/w"}
    assert got["enc/fc1/bias"].tobytes() == tensors["model/fc1/bias"].tobytes()  # NaN, -0.0
    # Only the output is left next to it: no temporary directory, no lock file.
    assert sorted(p.name for p in dst.parent.iterdir()) == [
        "renamed.ckpt.data-00000-of-00001",
        "renamed.ckpt.index",
    ]
    with pytest.raises(FileExistsError, match="already exists; pass --force"):
        migrate(prefix, dst)
    migrate(prefix, dst, force=True)  # now with every key, replacing the old output
    assert "model/fc1/kernel/Adam" in open_checkpoint(dst).variables
    with pytest.raises(ValueError, match="is the source checkpoint"):
        migrate(prefix, prefix, force=True)
    after = {p.name: p.read_bytes() for p in Path(prefix).parent.iterdir()}
    assert after == before


@pytest.mark.parametrize(
    "dst, fmt, message",
    [
        ("{d}", "tf1", "is a directory; give a checkpoint prefix such as"),
        ("{d}/m.ckpt.index", "tf1", "give the prefix .*m.ckpt$"),
        ("{d}/m.h5", "keras", "must end with .weights.h5"),
    ],
)
def test_bad_destinations(small, tmp_path, dst, fmt, message):
    with pytest.raises((ValueError, OSError), match=message):
        model = (lambda: None) if fmt == "keras" else None
        migrate(small[0], dst.format(d=tmp_path), format=fmt, model=model)


def test_model_required_for_model_formats(small, tmp_path):
    with pytest.raises(ValueError, match="give the model with --model"):
        migrate(small[0], tmp_path / "x", format="tf2")
    with pytest.raises(ValueError, match="only used with --format tf2 or keras"):
        migrate(small[0], tmp_path / "x", model=lambda: None)
    with pytest.raises(ValueError, match="format must be one of"):
        migrate(small[0], tmp_path / "x", format="onnx")


def test_failed_verification_installs_nothing(small, tmp_path, monkeypatch):
    from tf1compat_init.migrate import _tf1

    def corrupt(view, prefix, behind=None):
        raise CheckpointCorruptError("'x' reads back different from the source")

    monkeypatch.setattr(_tf1, "verify", corrupt)
    dst = tmp_path / "out" / "m.ckpt"
    with pytest.raises(CheckpointCorruptError):
        migrate(small[0], dst)
    assert list(dst.parent.iterdir()) == []


def test_concurrent_migrate_to_one_destination(small, tmp_path):
    """While one migrate holds the destination, a second fails cleanly; the first wins."""
    dst = tmp_path / "out" / "m.ckpt"
    inside, release = threading.Event(), threading.Event()
    outcome: dict = {}

    def slow_progress(done, total, name):
        inside.set()
        release.wait(30)

    def first():
        try:
            outcome["first"] = migrate(small[0], dst, progress=slow_progress)
        except Exception as e:  # pragma: no cover - reported below
            outcome["first"] = e

    t = threading.Thread(target=first)
    t.start()
    assert inside.wait(30)
    with pytest.raises(MigrationLockedError, match="another migrate is writing"):
        migrate(small[0], dst)
    release.set()
    t.join(30)
    assert isinstance(outcome["first"], mig.MigrateResult)
    assert open_checkpoint(dst).variables.keys() == open_checkpoint(small[0]).variables.keys()


def test_stale_lock_of_dead_process_is_taken_over(small, tmp_path):
    import socket
    import subprocess
    import sys

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dst = tmp_path / "m.ckpt"
    lock = tmp_path / ".m.ckpt.tf1compat-lock"
    lock.write_text(f"{socket.gethostname()} {dead.stdout.strip()}\n")
    migrate(small[0], dst)
    assert not lock.exists()
    lock.write_text(f"{socket.gethostname()} {os.getpid()}\n")  # alive: honoured
    with pytest.raises(MigrationLockedError):
        migrate(small[0], dst, force=True)


def test_safetensors_native(small, tmp_path):
    import json

    prefix, tensors = small
    out = tmp_path / "m.safetensors"
    migrate(prefix, out, {"model/": "enc/"}, format="safetensors")
    raw = out.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0
    header = json.loads(raw[8 : 8 + n])
    meta = header.pop("__metadata__")
    assert meta["source"] == "model.ckpt-3"
    entry = header["enc/fc1/bias"]
    assert entry["dtype"] == "F32" and entry["shape"] == [4]
    b, e = entry["data_offsets"]
    assert raw[8 + n + b : 8 + n + e] == tensors["model/fc1/bias"].tobytes()


# -- with TensorFlow: byte-identical to TF, round trips through TF's own readers ----------

tf = pytest.importorskip("tensorflow")
h = pytest.importorskip("support.migrate_helpers")


def test_writer_index_is_byte_identical_to_tf_savev2(tmp_path):
    rng = np.random.default_rng(0)
    vals = {
        f"layer_{i:04d}/kernel": rng.standard_normal((3, 2)).astype(np.float32) for i in range(4000)
    }
    vals["global_step"] = np.array(7, np.int64)
    vals["vocab"] = np.array([b"hello", b"", b"x" * 300], dtype=object)
    vals["mask"] = np.array([True, False])
    vals["empty"] = np.zeros((0, 3), np.float32)
    names = sorted(vals)
    mine = write_checkpoint(tmp_path / "mine", {k: vals[k] for k in names})
    tf.raw_ops.SaveV2(
        prefix=str(tmp_path / "tf"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(vals[k]) for k in names],
    )
    for suffix in (".index", ".data-00000-of-00001"):
        assert Path(mine + suffix).read_bytes() == (tmp_path / ("tf" + suffix)).read_bytes()


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    prefix = h.write_rich(tmp_path_factory.mktemp("rich"))
    return prefix, h.tf_values(prefix)


@pytest.fixture(scope="module")
def sub_models(tmp_path_factory):
    return h.write_sub_models(tmp_path_factory.mktemp("sub"))


@pytest.fixture(scope="module")
def factories(tmp_path_factory):
    return h.factory_file(tmp_path_factory.mktemp("factories"))


def test_tf1_round_trip_multi_shard_partitioned_bit_exact(rich, tmp_path):
    prefix, expected = rich
    assert len(open_checkpoint(prefix).data_files) == 2  # a multi-shard source
    digests = h.file_digests(prefix)
    dst = tmp_path / "out" / "renamed.ckpt"
    result = migrate(prefix, dst, {"model/": "tower_0/"})
    got = h.tf_values(str(dst))  # TF's own reader
    renamed = {re.sub("^model/", "tower_0/", k): v for k, v in expected.items()}
    assert set(got) == set(renamed)
    for k, v in renamed.items():
        assert h.same_bits(got[k], v), k
    assert np.isnan(got["tower_0/dense/kernel"][0, 0])
    assert np.signbit(got["tower_0/dense/kernel"][1, 1])
    assert result.tensors["tower_0/emb"] == "model/emb"
    assert h.file_digests(prefix) == digests  # the source is never modified


def test_tf1_output_restores_into_repartitioned_variables(rich, tmp_path):
    """A migrated partitioned tensor is whole; TF1 code re-partitions it on restore."""
    prefix, expected = rich
    dst = tmp_path / "m.ckpt"
    migrate(prefix, dst, {"model/": "tower_0/"}, drop_optimizer=True)
    g = tf.Graph()
    with g.as_default():
        with tf.compat.v1.variable_scope("tower_0"):
            emb = tf.compat.v1.get_variable(
                "emb", shape=(10, 3), partitioner=tf.compat.v1.fixed_size_partitioner(2)
            )
            wide = tf.compat.v1.get_variable(
                "wide",
                shape=(4, 9),
                dtype=tf.float64,
                partitioner=tf.compat.v1.fixed_size_partitioner(4, axis=1),
            )
        saver = tf.compat.v1.train.Saver([emb, wide])
        with tf.compat.v1.Session(graph=g) as sess:
            saver.restore(sess, str(dst))
            got_emb, got_wide = sess.run([tf.convert_to_tensor(emb), tf.convert_to_tensor(wide)])
    assert h.same_bits(got_emb, expected["model/emb"])
    assert h.same_bits(got_wide, expected["model/wide"])


def test_safetensors_round_trip_with_the_library(rich, tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    prefix, expected = rich
    out = tmp_path / "m.safetensors"
    with pytest.raises(ValueError, match=r"safetensors cannot hold dtype string \(key 'vocab'"):
        migrate(prefix, out, format="safetensors")
    assert not out.exists() and list(tmp_path.iterdir()) == []
    migrate(prefix, out, format="safetensors", exclude=["^vocab$"], drop_optimizer=True)
    got = st.load_file(str(out))
    assert "vocab" not in got and "model/emb/Adam" not in got
    for k, v in got.items():
        assert h.same_bits(v, expected[k]), k
    assert got["model/bf"].dtype.name == "bfloat16"


def test_tf2_round_trip_module(sub_models, factories, tmp_path):
    models = _load(factories)
    dst = tmp_path / "tf2" / "ckpt"
    result = migrate(sub_models[1], dst, {"model/": "/"}, format="tf2", model=models.build_module)
    assert sorted(result.tensors) == ["fc1/bias", "fc1/kernel", "fc2/bias", "fc2/kernel"]
    fresh = models.build_module()
    tf.train.Checkpoint(model=fresh).restore(str(dst)).assert_consumed()
    source = h.tf_values(sub_models[1])
    assert h.same_bits(fresh.fc1.kernel.numpy(), source["model/fc1/kernel"])
    assert h.same_bits(fresh.fc2.bias.numpy(), source["model/fc2/bias"])


def test_keras_round_trip(sub_models, factories, tmp_path):
    """tf.keras: Keras 3 on TF >= 2.16, Keras 2 on TF 2.15 (tf_keras: see the next test)."""
    models = _load(factories)
    source = h.tf_values(sub_models[0])
    out = tmp_path / "keras" / "sub.weights.h5"
    migrate(sub_models[0], out, format="keras", model=models.build_keras)
    fresh = models.build_keras()
    fresh.load_weights(str(out))
    assert h.same_bits(fresh.get_layer("fc1").kernel.numpy(), source["fc1/kernel"])
    assert h.same_bits(fresh.get_layer("fc2").bias.numpy(), source["fc2/bias"])
    ckpt = tmp_path / "tf2k" / "ckpt"
    migrate(sub_models[0], ckpt, format="tf2", model=models.build_keras)
    fresh = models.build_keras()
    tf.train.Checkpoint(model=fresh).restore(str(ckpt)).assert_consumed()
    assert h.same_bits(fresh.get_layer("fc2").kernel.numpy(), source["fc2/kernel"])


@pytest.mark.parametrize("fmt", ["keras", "tf2"])
def test_an_output_value_changed_after_saving_installs_nothing(
    sub_models, factories, tmp_path, monkeypatch, fmt
):
    """The output is verified by reading it back: a value changed after writing is caught."""
    from tf1compat_init.migrate import _model

    models = _load(factories)
    real_write = _model.write

    def write_then_change(view, factory, f, out_path, *args):
        written = real_write(view, factory, f, out_path, *args)
        model = models.build_keras()  # the output, saved again by Keras / TF with one change
        if f == "keras":
            model.load_weights(out_path)
        else:
            root = tf.train.Checkpoint(model=model)
            _ = root.save_counter  # as migrate writes it
            root.read(out_path).assert_consumed()
        kernel = model.get_layer("fc1").kernel
        kernel.assign(kernel + 1.0)
        if f == "keras":
            model.save_weights(out_path + ".2.weights.h5")
            os.replace(out_path + ".2.weights.h5", out_path)
        else:
            root.write(out_path)
        return written

    monkeypatch.setattr(_model, "write", write_then_change)
    name = "m.weights.h5" if fmt == "keras" else "ckpt"
    out = tmp_path / fmt / name
    with pytest.raises(CheckpointCorruptError, match="fc1/kernel.*differs from source"):
        migrate(sub_models[0], out, format=fmt, model=models.build_keras)
    assert list(out.parent.iterdir()) == []


@pytest.mark.tf215
def test_keras2_refuses_bfloat16_before_writing(tmp_path):
    """Keras 2's .weights.h5 writes bfloat16 but cannot load it back: refused up front."""
    import ml_dtypes
    from tensorflow import keras  # Keras 2 on TF 2.15

    from tf1compat_init.checkpoint import target_variables

    class Half(keras.layers.Layer):
        def build(self, _):
            self.w = self.add_weight(name="w", shape=(3,), dtype="bfloat16")

    def factory():
        return keras.Sequential([keras.Input((2,)), Half(name="half")])

    (name,) = target_variables(factory())
    src = write_checkpoint(tmp_path / "src" / "ckpt", {name: np.ones(3, ml_dtypes.bfloat16)})
    out = tmp_path / "k" / "m.weights.h5"
    with pytest.raises(ValueError, match=r"keras2 cannot hold bfloat16.*'half/w'.*--format tf2"):
        migrate(src, out, format="keras", model=factory)
    assert not out.parent.exists() or list(out.parent.iterdir()) == []
    ckpt = tmp_path / "t" / "ckpt"
    migrate(src, ckpt, format="tf2", model=factory)  # the format that holds it
    assert open_checkpoint(str(ckpt)).read()


def test_model_that_does_not_fit_writes_nothing(sub_models, factories, tmp_path):
    from tf1compat_init import CheckpointMismatchError

    models = _load(factories)
    out = tmp_path / "k" / "x.weights.h5"
    with pytest.raises(CheckpointMismatchError, match=r"fc1/kernel.*shape \[4, 5\] vs checkpoint"):
        migrate(sub_models[0], out, format="keras", model=models.build_keras_wrong)
    assert list(out.parent.iterdir()) == []
    with pytest.raises(ValueError, match="factory returned None"):
        migrate(sub_models[0], out, format="keras", model=models.build_none)


@pytest.mark.tf_keras
def test_tf_keras_round_trip_in_subprocess(sub_models, factories, tmp_path):
    pytest.importorskip("tf_keras")
    import subprocess
    import sys

    script = f"""
import os, sys
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np, tensorflow as tf
sys.path.insert(0, {os.path.dirname(factories)!r})
import models
from tf1compat_init.migrate import migrate
assert type(models.build_keras()).__module__.startswith("tf_keras"), "not tf_keras"
src = {sub_models[0]!r}
reader = tf.train.load_checkpoint(src)
migrate(src, {str(tmp_path / "k.weights.h5")!r}, format="keras", model=models.build_keras)
m = models.build_keras(); m.load_weights({str(tmp_path / "k.weights.h5")!r})
assert m.get_layer("fc1").kernel.numpy().tobytes() == reader.get_tensor("fc1/kernel").tobytes()
migrate(src, {str(tmp_path / "t" / "ckpt")!r}, format="tf2", model=models.build_keras)
m = models.build_keras()
tf.train.Checkpoint(model=m).restore({str(tmp_path / "t" / "ckpt")!r}).assert_consumed()
assert m.get_layer("fc2").bias.numpy().tobytes() == reader.get_tensor("fc2/bias").tobytes()
print("OK")
"""
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3")
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), run.stderr[-3000:]


def test_object_based_source_to_tf1_drops_optimizer_by_graph(tmp_path):
    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([1.0, 2.0])
            self.b = tf.Variable([0.5])

    net = Net()
    opt = tf.compat.v1.train.AdamOptimizer(0.1)
    opt.minimize(lambda: tf.reduce_sum(net.w * net.w) + net.b[0], var_list=[net.w, net.b])
    src = tf.train.Checkpoint(model=net, optimizer=opt).write(str(tmp_path / "obj" / "ckpt"))
    dst = tmp_path / "out" / "m.ckpt"
    result = migrate(src, dst, {"model/": "net/"}, drop_optimizer=True)
    got = h.tf_values(str(dst))
    assert set(got) == {"net/w", "net/b"}
    assert h.same_bits(got["net/w"], net.w.numpy())
    assert any("optimizer" in why for why in result.excluded.values())
    everything = migrate(src, tmp_path / "all" / "m.ckpt")
    assert {"model/w", "model/w/m", "optimizer/beta1_power"} <= set(everything.tensors)


def _load(path: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_test_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
