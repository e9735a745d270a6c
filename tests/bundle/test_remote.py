"""Checkpoints at URLs, read and written through tf.io.gfile (``ram://`` here, in process).

``ram://`` is TensorFlow's in-memory file system (one per process), so every front end
runs in this process, the CLI included. Each test works under a bucket of its own.
"""

from __future__ import annotations

import json
import os
import threading
import uuid

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import tf1compat_init as tci  # noqa: E402
from tf1compat_init.bundle import remote as _remote_read  # noqa: E402
from tf1compat_init.bundle import storage as _storage  # noqa: E402
from tf1compat_init.bundle.fastread import ReadRequest  # noqa: E402
from tf1compat_init.cli import main  # noqa: E402
from tf1compat_init.errors import (  # noqa: E402
    CheckpointCorruptError,
    CheckpointNotFoundError,
)

gfile = tf.io.gfile

VALUES = {
    "model/dense/kernel": np.arange(12, dtype=np.float32).reshape(4, 3) / 10,
    "model/dense/bias": np.array([1.0, 2.0, 3.0], np.float32),
    "model/dense_1/kernel": -np.arange(6, dtype=np.float32).reshape(3, 2) / 10,
    "model/dense_1/bias": np.array([7.0, 8.0], np.float32),
}


def bucket() -> str:
    return f"ram://t{uuid.uuid4().hex[:10]}"


def save_tf1(prefix: str, values: dict, step: int | None = 100) -> str:
    """Writes ``values`` with TF1 graph code (get_variable + Saver) to ``prefix`` (a URL)."""
    gfile.makedirs(prefix.rsplit("/", 1)[0])
    with tf.Graph().as_default():
        for name, value in values.items():
            tf.compat.v1.get_variable(name, initializer=tf.constant(value))
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return tf.compat.v1.train.Saver().save(sess, prefix, global_step=step)


@pytest.fixture
def run_dir():
    directory = bucket() + "/pretrained"
    prefix = save_tf1(directory + "/model.ckpt", VALUES)
    return directory, prefix


# -- the engine ------------------------------------------------------------------------


def test_open_plan_read_on_ram(run_dir):
    directory, prefix = run_dir
    info = tci.open_checkpoint(directory)  # the state file names the checkpoint
    assert info.prefix == prefix == directory + "/model.ckpt-100"
    assert info.bundle.remote
    assert set(info.variables) == set(VALUES)
    assert info.data_files == [prefix + ".data-00000-of-00001"]
    got = info.read()
    for key, value in VALUES.items():
        np.testing.assert_array_equal(got[key], value)
    targets = {"enc/dense/kernel": ((4, 3), "float32"), "enc/dense/bias": ((3,), "float32")}
    plan = tci.plan_restore(info, targets, {"model/dense/": "enc/dense/"})
    assert set(plan.report.loaded) == set(targets)
    # every spelling of the checkpoint resolves, as locally
    for path in (prefix, prefix + ".index", prefix + ".data-00000-of-00001"):
        assert tci.open_checkpoint(path).prefix == prefix


def rewrite(path: str, data: bytes | str) -> None:
    """Replaces a ``ram://`` file (TF's ram file system appends when a file is reopened)."""
    if gfile.exists(path):
        gfile.remove(path)
    with gfile.GFile(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def flip_byte(prefix: str, key: str) -> None:
    """Flips one byte of ``key``'s bytes in its data file (a ``ram://`` file, rewritten)."""
    entry = tci.open_checkpoint(prefix).bundle.entries[key]
    path = f"{prefix}.data-00000-of-00001"
    with gfile.GFile(path, "rb") as f:
        data = bytearray(f.read())
    data[entry.offset + 1] ^= 0x40
    rewrite(path, bytes(data))


def test_flipped_byte_is_a_corrupt_error_naming_the_tensor_and_the_url(run_dir):
    from tf1compat_init import v1 as tv1

    _, prefix = run_dir
    flip_byte(prefix, "model/dense/kernel")
    info = tci.open_checkpoint(prefix)
    with pytest.raises(CheckpointCorruptError, match="model/dense/kernel") as e:
        info.read(["model/dense/kernel"])
    assert prefix + ".data-00000-of-00001" in str(e.value)
    np.testing.assert_array_equal(info.read(["model/dense/bias"])["model/dense/bias"], [1, 2, 3])
    # the restore engine (eager) checks before it assigns: nothing changes
    kernel = tf.Variable(np.zeros((4, 3), np.float32), name="k")
    bias = tf.Variable(np.zeros(3, np.float32), name="b")
    amap = {"model/dense/kernel": kernel, "model/dense/bias": bias}
    with pytest.raises(CheckpointCorruptError, match=r"model/dense/kernel.*ram://") as e:
        tv1.init_from_checkpoint(prefix, amap)
    assert not kernel.numpy().any() and not bias.numpy().any()
    # graph mode with verify=True checks now, before the graph changes
    with tf.Graph().as_default() as g:
        tf.compat.v1.get_variable("model/dense/kernel", shape=(4, 3))
        ops_before = len(g.get_operations())
        with pytest.raises(CheckpointCorruptError, match=r"'model/dense/kernel' in data file ram"):
            tv1.init_from_checkpoint(prefix, {"model/dense/": "model/dense/"}, verify=True)
        assert len(g.get_operations()) == ops_before


def test_latest_checkpoint_state_file_and_newest_index():
    directory = bucket() + "/run"
    save_tf1(directory + "/model.ckpt", VALUES, step=1)
    second = save_tf1(directory + "/model.ckpt", {k: v + 1 for k, v in VALUES.items()}, step=2)
    assert tf.train.latest_checkpoint(directory) == second
    assert tci.open_checkpoint(directory).prefix == second
    # without the state file: the newest *.index by step
    gfile.remove(directory + "/checkpoint")
    assert tci.open_checkpoint(directory).prefix == second
    # a state file pointing to a deleted checkpoint names both
    rewrite(directory + "/checkpoint", 'model_checkpoint_path: "model.ckpt-7"\n')
    with pytest.raises(CheckpointNotFoundError, match=r"ram://.*/run/checkpoint points to"):
        tci.open_checkpoint(directory)
    # an absolute URL in the state file is taken as is
    rewrite(directory + "/checkpoint", f'model_checkpoint_path: "{second}"\n')
    assert tci.open_checkpoint(directory).prefix == second


@pytest.mark.parametrize(
    "path, message",
    [
        (
            "{b}/nothing/here",
            r"checkpoint {b}/nothing/here not found: directory {b}/nothing "
            r"does not exist",
        ),
        ("{b}/run", r"no checkpoint in directory {b}/run"),
        ("{b}/run/model.ckpt-9", r"{b}/run/model.ckpt-9.index does not exist; checkpoints in"),
    ],
)
def test_missing_remote_paths_name_the_url(path, message):
    b = bucket()
    save_tf1(f"{b}/run/other.ckpt", VALUES, step=None)
    if "no checkpoint in" in message:
        gfile.remove(f"{b}/run/checkpoint")
        for name in gfile.listdir(f"{b}/run"):
            if name.endswith(".index"):
                gfile.remove(f"{b}/run/{name}")
    with pytest.raises(CheckpointNotFoundError, match=message.format(b=b)):
        tci.open_checkpoint(path.format(b=b))


def test_missing_data_shard_names_the_url(run_dir):
    _, prefix = run_dir
    gfile.remove(prefix + ".data-00000-of-00001")
    with pytest.raises(CheckpointNotFoundError, match=f"missing {prefix}.data-00000-of-00001"):
        tci.open_checkpoint(prefix)


class _Blocking:
    """A file system whose every call blocks until released: an unreachable store."""

    def __init__(self):
        self.release = threading.Event()
        self.calls = []

    def __getattr__(self, name):
        def blocked(*args, **kwargs):
            self.calls.append(name)
            self.release.wait()
            raise tf.errors.UnavailableError(None, None, "released")

        return blocked


def test_unreachable_store_times_out_naming_the_url(monkeypatch):
    stub = _Blocking()
    monkeypatch.setattr(_storage, "_gfile", lambda url: stub)
    monkeypatch.setenv(_storage.TIMEOUT_ENV, "0.2")
    try:
        with pytest.raises(CheckpointNotFoundError) as e:
            tci.open_checkpoint("gs://some-bucket/run")
        text = str(e.value)
        assert "gs://some-bucket/run" in text
        assert "no answer within 0.2 s" in text and _storage.TIMEOUT_ENV in text
        assert stub.calls == ["isdir"]
        # the front ends' first-run check does not hang either
        with pytest.raises(CheckpointNotFoundError, match="gs://some-bucket/run"):
            tci.reader.pretrained_path("gs://some-bucket/run", True, "test")
    finally:
        stub.release.set()


def test_timeout_setting(monkeypatch):
    monkeypatch.delenv(_storage.TIMEOUT_ENV, raising=False)
    assert _storage.timeout() == _storage.DEFAULT_TIMEOUT
    monkeypatch.setenv(_storage.TIMEOUT_ENV, "2.5")
    assert _storage.timeout() == 2.5
    for off in ("0", "none", "OFF"):
        monkeypatch.setenv(_storage.TIMEOUT_ENV, off)
        assert _storage.timeout() is None
    monkeypatch.setenv(_storage.TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match="TF1COMPAT_REMOTE_TIMEOUT='soon' is not a number"):
        _storage.timeout()


def test_store_errors_name_the_url_and_the_scheme():
    with pytest.raises(CheckpointNotFoundError, match=r"nosuch://b/run.*no file system for nosuch"):
        tci.open_checkpoint("nosuch://b/run")


def test_url_without_tensorflow_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tensorflow", None)  # import tensorflow now fails
    with pytest.raises(ImportError, match=r"gs://b/run is a URL: .*TensorFlow is not installed"):
        tci.open_checkpoint("gs://b/run")


def test_local_paths_never_touch_the_storage_layer(tmp_path, monkeypatch):
    def refuse(url):
        raise AssertionError(f"gfile used for {url}")

    monkeypatch.setattr(_storage, "_gfile", refuse)
    prefix = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "ck"))
    info = tci.open_checkpoint(str(tmp_path))
    assert not info.bundle.remote
    assert info.read()
    assert prefix == info.prefix


# -- bounded reads ------------------------------------------------------------------------


class _Counting:
    """tf.io.gfile with every read counted; records the most bytes read but not consumed."""

    def __init__(self):
        self.read = 0
        self.consumed = 0
        self.peak_held = 0
        counter = self

        class GFile(gfile.GFile):
            def read(self, n=-1):
                data = super().read(n)
                counter.read += len(data)
                counter.peak_held = max(counter.peak_held, counter.read - counter.consumed)
                return data

        self.GFile = GFile

    def __getattr__(self, name):
        return getattr(gfile, name)


def test_stream_holds_at_most_window_plus_largest_tensor(monkeypatch):
    rng = np.random.default_rng(0)
    sizes = [3000, 5000, 70_000, 2000, 40_000, 120_000, 1000, 9000, 60_000, 4000]
    values = {f"t{i:02d}": rng.standard_normal(n).astype(np.float32) for i, n in enumerate(sizes)}
    values["skipped"] = rng.standard_normal(100_000).astype(np.float32)  # never requested
    prefix = save_tf1(bucket() + "/big/model.ckpt", values, step=None)
    bundle = tci.open_checkpoint(prefix).bundle
    counting = _Counting()
    monkeypatch.setattr(_storage, "_gfile", lambda url: counting)
    # small pieces and chunks, so that big tensors are split and read in parallel
    monkeypatch.setattr(_remote_read, "PIECE_BYTES", 64 << 10)
    monkeypatch.setattr(_storage, "READ_CHUNK", 16 << 10)
    window = 100_000
    keys = [k for k in values if k != "skipped"]
    largest = max(values[k].nbytes for k in keys)
    with _remote_read.RemoteReader(bundle, threads=3, window_bytes=window) as reader:
        got = {}
        for loaded in reader.stream([ReadRequest(k) for k in keys]):
            got[loaded.request.key] = loaded.buffer.copy()
            counting.consumed += loaded.buffer.nbytes
        assert reader.peak_inflight_bytes <= window + largest
    for k in keys:
        np.testing.assert_array_equal(got[k], values[k])
    assert counting.peak_held <= window + largest
    assert counting.peak_held >= window // 2  # it did read ahead
    # only the requested tensors were read: no whole-file download
    assert counting.read == sum(values[k].nbytes for k in keys)


def test_stream_checks_every_checksum(run_dir):
    _, prefix = run_dir
    flip_byte(prefix, "model/dense_1/bias")
    bundle = tci.open_checkpoint(prefix).bundle
    with _remote_read.RemoteReader(bundle) as reader:
        with pytest.raises(CheckpointCorruptError, match=r"'model/dense_1/bias' in data file ram"):
            reader.verify(list(VALUES))


def test_apply_streams_beyond_the_window_and_checks(monkeypatch):
    """A restore bigger than its window: verified first, then streamed (read twice)."""
    from tf1compat_init.apply import apply_plan
    from tf1compat_init.checkpoint import plan_for_root

    rng = np.random.default_rng(1)
    values = {f"w{i}": rng.standard_normal(20_000).astype(np.float32) for i in range(6)}
    prefix = save_tf1(bucket() + "/r/model.ckpt", values, step=None)
    module = tf.Module()
    module.vs = {k: tf.Variable(np.zeros(20_000, np.float32), name=k) for k in values}
    info = tci.open_checkpoint(prefix)
    plan, targets = plan_for_root(module, info, {k: f"vs/{k}" for k in values})
    apply_plan(plan, targets, window_bytes=100_000)
    for k, v in values.items():
        np.testing.assert_array_equal(module.vs[k].numpy(), v)


# -- front ends ---------------------------------------------------------------------------


def test_v1_graph_mode_matches_tensorflow_on_ram(run_dir):
    from tf1compat_init import v1 as tv1

    directory, _ = run_dir
    amap = {"model/": "enc/"}

    def build():
        with tf.compat.v1.variable_scope("enc"):
            for name, value in VALUES.items():
                tf.compat.v1.get_variable(
                    name[len("model/") :], shape=value.shape, initializer=tf.zeros_initializer()
                )

    def values_after(init):
        with tf.Graph().as_default():
            build()
            init(directory, amap)
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                return {v.op.name: sess.run(v) for v in tf.compat.v1.global_variables()}

    ours = values_after(tv1.init_from_checkpoint)
    theirs = values_after(tf.compat.v1.train.init_from_checkpoint)
    assert set(ours) == set(theirs) == {"enc/" + k[len("model/") :] for k in VALUES}
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name])
        np.testing.assert_array_equal(ours[name], VALUES["model/" + name[len("enc/") :]])


def test_v1_eager_and_checkpoint_restore(run_dir):
    from tf1compat_init import v1 as tv1
    from tf1compat_init.checkpoint import restore, restore_or_initialize

    directory, _ = run_dir
    kernel = tf.Variable(np.zeros((4, 3), np.float32))
    report = tv1.init_from_checkpoint(directory, {"model/dense/kernel": kernel})
    np.testing.assert_array_equal(kernel.numpy(), VALUES["model/dense/kernel"])
    assert report.applied

    module = tf.Module()
    module.dense = tf.Module()
    module.dense.kernel = tf.Variable(np.zeros((4, 3), np.float32))
    module.dense.bias = tf.Variable(np.zeros(3, np.float32))
    root = tf.train.Checkpoint(model=module)
    restore(root, directory, {"model/dense/": "model/dense/"}, on_missing="ignore")
    np.testing.assert_array_equal(module.dense.bias.numpy(), VALUES["model/dense/bias"])

    # restore_or_initialize: a ram:// run directory, warm start once, then resume
    run = bucket() + "/run"
    module.dense.bias.assign(np.zeros(3, np.float32))
    manager = tf.train.CheckpointManager(root, run, max_to_keep=2)
    result = restore_or_initialize(
        manager,
        warm_start_from=directory,
        assignment_map={"model/dense/": "model/dense/"},
        on_missing="ignore",
    )
    assert result.outcome == "warm_started"
    module.dense.bias.assign([5.0, 5.0, 5.0])
    manager.save()
    module.dense.bias.assign(np.zeros(3, np.float32))
    result = restore_or_initialize(
        manager,
        warm_start_from=directory,
        assignment_map={"model/dense/": "model/dense/"},
        on_missing="ignore",
    )
    assert result.outcome == "resumed"
    np.testing.assert_array_equal(module.dense.bias.numpy(), [5.0, 5.0, 5.0])


def test_keras_load_checkpoint_and_checkpoint_init_with_a_ram_run_dir(run_dir):
    from tf1compat_init.keras import CheckpointInit, CheckpointSaver, load_checkpoint

    keras = tf.keras
    directory, _ = run_dir

    def model():
        m = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(3, name="dense"),
                keras.layers.Dense(2, name="dense_1"),
            ]
        )
        m.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
        return m

    m = model()
    report = load_checkpoint(m, directory, {"model/": "/"})
    assert len(report.loaded) == 4
    np.testing.assert_array_equal(m.layers[0].kernel.numpy(), VALUES["model/dense/kernel"])

    run = bucket() + "/run"
    x, y = np.ones((4, 4), np.float32), np.ones((4, 2), np.float32)
    m = model()
    init = CheckpointInit(directory, {"model/": "/"})
    m.fit(x, y, epochs=1, verbose=0, callbacks=[init, CheckpointSaver(run, save_steps=1)])
    assert init.report is not None and init.report.applied
    assert tf.train.latest_checkpoint(run) is not None
    # resume beats warm start: the run dir on ram:// holds a checkpoint
    m2 = model()
    init2 = CheckpointInit(directory, {"model/": "/"}, resume_dir=run)
    m2.fit(x, y, epochs=1, verbose=0, callbacks=[init2])
    assert init2.report is None


def test_estimator_model_dir_and_warm_start_on_ram():
    from support.estimator_models import make_model_fn, make_pretrained, train_input_fn

    import tf1compat_init.estimator as E

    pretrained_dir = bucket() + "/pretrained"
    gfile.makedirs(pretrained_dir)
    _, values = make_pretrained(pretrained_dir)
    model_dir = bucket() + "/model"
    config = E.RunConfig(tf_random_seed=1, save_checkpoints_steps=5, log_step_count_steps=5)
    settings = E.WarmStartSettings(pretrained_dir, vars_to_warm_start="hidden.*")
    est = E.Estimator(
        make_model_fn(E), model_dir, config, params={"lr": 0.05}, warm_start_from=settings
    )
    est.train(train_input_fn, steps=2)
    ckpt0 = model_dir + "/model.ckpt-0"
    np.testing.assert_array_equal(
        tci.open_checkpoint(ckpt0).read(["hidden/kernel"])["hidden/kernel"], values["hidden/kernel"]
    )
    assert est.latest_checkpoint() == model_dir + "/model.ckpt-2"
    at_2 = est.get_variable_value("hidden/kernel")
    # resume beats warm start: training again continues from model.ckpt-2
    est2 = E.Estimator(
        make_model_fn(E), model_dir, config, params={"lr": 0.0}, warm_start_from=settings
    )
    est2.train(train_input_fn, steps=1)
    np.testing.assert_array_equal(est2.get_variable_value("hidden/kernel"), at_2)
    assert est2.latest_checkpoint() == model_dir + "/model.ckpt-3"


# -- writing: migrate and the CLI -----------------------------------------------------------


def test_cli_inspect_plan_migrate_to_and_from_ram(run_dir, tmp_path, capsys):
    directory, prefix = run_dir
    assert main(["inspect", directory, "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {t["key"] for t in listing["tensors"]} == set(VALUES)
    assert main(["inspect", directory]) == 0
    assert f"checkpoint  {prefix}" in capsys.readouterr().out

    assert main(["plan", directory, "--target", prefix, "--map", "model/=model/"]) == 0
    capsys.readouterr()

    remote_out = bucket() + "/out/model.ckpt"
    assert main(["migrate", directory, remote_out, "--map", "model/=encoder/"]) == 0
    assert "read back and verified" in capsys.readouterr().out
    assert sorted(gfile.listdir(remote_out.rsplit("/", 1)[0])) == [
        "model.ckpt.data-00000-of-00001",
        "model.ckpt.index",
    ]  # no temporary directory, no lock left
    back = tf.compat.v1.train.NewCheckpointReader(remote_out)  # TF reads our output
    np.testing.assert_array_equal(
        back.get_tensor("encoder/dense/kernel"), VALUES["model/dense/kernel"]
    )
    # an existing remote output is refused without --force, replaced with it
    assert main(["migrate", directory, remote_out]) != 0
    assert "already exists; pass --force" in capsys.readouterr().err
    assert main(["migrate", directory, remote_out, "--force"]) == 0
    capsys.readouterr()
    assert "model/dense/kernel" in tci.open_checkpoint(remote_out).variables

    # ram:// to a local checkpoint, and that local checkpoint to a ram:// safetensors file
    local = str(tmp_path / "local.ckpt")
    assert main(["migrate", prefix, local]) == 0
    remote_st = bucket() + "/st/m.safetensors"
    assert main(["migrate", local, remote_st, "--format", "safetensors"]) == 0
    capsys.readouterr()
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    with gfile.GFile(remote_st, "rb") as f:
        tensors = safetensors_numpy.load(f.read())
    assert set(tensors) == set(VALUES)
    for key, value in VALUES.items():
        np.testing.assert_array_equal(tensors[key], value)


def test_migrate_to_ram_leaves_nothing_on_failure_and_respects_the_lock(run_dir, monkeypatch):
    from tf1compat_init import migrate as M
    from tf1compat_init.migrate import _tf1

    directory, _ = run_dir
    out = bucket() + "/o/model.ckpt"

    def boom(*a, **k):
        raise CheckpointCorruptError("simulated read-back failure")

    monkeypatch.setattr(_tf1, "verify", boom)
    with pytest.raises(CheckpointCorruptError, match="simulated"):
        M.migrate(directory, out)
    assert gfile.listdir(out.rsplit("/", 1)[0]) == []  # temp dir and lock removed
    monkeypatch.undo()

    lock = out.rsplit("/", 1)[0] + "/.model.ckpt.tf1compat-lock"
    with gfile.GFile(lock, "w") as f:
        f.write("another-host 1\n")
    with pytest.raises(M.MigrationLockedError, match="another migrate is writing"):
        M.migrate(directory, out)
    gfile.remove(lock)
    result = M.migrate(directory, out)
    assert result.files == [out + ".index", out + ".data-00000-of-00001"]
    assert not gfile.exists(lock)


def test_rerun_after_a_killed_remote_migrate_cleans_up(run_dir):
    import socket
    import subprocess
    import sys

    from tf1compat_init import migrate as M

    directory, _ = run_dir
    parent = bucket() + "/o"
    out = parent + "/model.ckpt"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    rewrite(f"{parent}/.model.ckpt.tf1compat-lock", f"{socket.gethostname()} {dead.stdout}")
    rewrite(f"{parent}/.model.ckpt.tf1compat-tmp-0123/model.ckpt.data-00000-of-00001", b"x")
    rewrite(f"{out}.data-00000-of-00001", b"half an install")  # no index: not a checkpoint
    result = M.migrate(directory, out)
    assert sorted(gfile.listdir(parent)) == [
        "model.ckpt.data-00000-of-00001",
        "model.ckpt.index",
    ]
    assert set(tci.open_checkpoint(out).variables) == set(VALUES)
    assert result.replaced == []


def test_migrate_tf2_and_keras_formats_to_ram(tmp_path):
    from support.migrate_helpers import factory_file, write_sub_models

    from tf1compat_init.migrate import migrate

    _, source = write_sub_models(tmp_path)
    factories = factory_file(tmp_path)
    kw = {"drop_optimizer": True, "exclude": ["global_step"]}
    out = bucket() + "/tf2/ckpt"
    result = migrate(
        source, out, {"model/": "/"}, format="tf2", model=factories + ":build_module", **kw
    )
    assert result.files == [out + ".index", out + ".data-00000-of-00001"]
    assert sorted(gfile.listdir(out.rsplit("/", 1)[0])) == [
        "ckpt.data-00000-of-00001",
        "ckpt.index",
    ]

    weights = bucket() + "/k/m.weights.h5"
    keras3 = (
        int(tf.__version__.split(".")[1]) >= 16 and os.environ.get("TF_USE_LEGACY_KERAS") != "1"
    )
    if keras3:
        migrate(
            source, weights, {"model/": "/"}, format="keras", model=factories + ":build_keras", **kw
        )
        assert gfile.listdir(weights.rsplit("/", 1)[0]) == ["m.weights.h5"]
    else:  # Keras 2 / tf_keras write .h5 only locally: refused before anything is written
        with pytest.raises(ValueError, match="--format keras to a URL needs Keras 3"):
            migrate(
                source,
                weights,
                {"model/": "/"},
                format="keras",
                model=factories + ":build_keras",
                **kw,
            )
        assert gfile.listdir(weights.rsplit("/", 1)[0]) == []


def test_stream_slices_of_a_tensor_for_partitioned_targets():
    value = np.arange(60, dtype=np.float32).reshape(6, 10)
    prefix = save_tf1(bucket() + "/p/model.ckpt", {"w": value, "b": np.ones(3, np.float32)})
    bundle = tci.open_checkpoint(prefix).bundle
    requests = [
        ReadRequest("w", (slice(0, 2), slice(0, 10))),  # contiguous rows
        ReadRequest("w", (slice(2, 6), slice(0, 10))),
        ReadRequest("w", (slice(0, 6), slice(3, 7))),  # a strided column block
        ReadRequest("b"),
    ]
    with _remote_read.RemoteReader(bundle, window_bytes=64) as reader:
        got = []
        for loaded in reader.stream(requests):
            assert loaded.buffer.ctypes.data % 64 == 0  # TensorFlow adopts it as is
            got.append((loaded.request, loaded.buffer.copy()))
    assert len(got) == 4
    for request, buffer in got:
        want = value[request.slices] if request.key == "w" else np.ones(3, np.float32)
        np.testing.assert_array_equal(buffer, want)


def test_remote_read_benchmark_runs(tmp_path):
    """benchmarks/remote_read.py end to end, tiny: results well formed (no speed asserted)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "remote_read.py"
    spec = importlib.util.spec_from_file_location("bench_remote_read", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "r.json"
    args = ["--size", "1", "--tensor-kib", "256", "--repeats", "1", "--out", str(out)]
    assert module.main(args) == 0
    result = json.loads(out.read_text())
    assert result["bytes"] == 1 << 20 and result["tensors"] == 4
    assert result["local"]["median_s"] > 0 and result["ram"]["median_s"] > 0


def test_a_store_that_stops_answering_mid_restore_changes_nothing(run_dir, monkeypatch):
    from tf1compat_init import v1 as tv1

    _, prefix = run_dir
    info = tci.open_checkpoint(prefix)  # index and listing read while the store answers
    release = threading.Event()

    class Stalling(_Counting):
        def __init__(self):
            super().__init__()

            class GFile(gfile.GFile):
                def read(self, n=-1):
                    if ".data-" in self.name:
                        release.wait()  # the data file's reads never answer
                    return super().read(n)

            self.GFile = GFile

    monkeypatch.setattr(_storage, "_gfile", lambda url: Stalling())
    monkeypatch.setenv(_storage.TIMEOUT_ENV, "0.2")
    kernel = tf.Variable(np.zeros((4, 3), np.float32), name="k")
    try:
        with pytest.raises(CheckpointNotFoundError, match=r"cannot read ram://.*\.data-00000"):
            tv1.init_from_checkpoint(info.prefix, {"model/dense/kernel": kernel})
    finally:
        release.set()
    assert not kernel.numpy().any()


def test_transforms_from_ram_in_eager_restore_and_migrate(run_dir):
    from tf1compat_init import v1 as tv1
    from tf1compat_init.migrate import migrate

    directory, _ = run_dir
    kernel_t = tf.Variable(np.zeros((3, 4), np.float32), name="kt")
    tv1.init_from_checkpoint(
        directory, {"model/dense/kernel": "kt | transpose(1, 0)"}, var_list=[kernel_t]
    )
    np.testing.assert_array_equal(kernel_t.numpy(), VALUES["model/dense/kernel"].T)

    out = bucket() + "/t/model.ckpt"
    migrate(directory, out, {"model/dense/kernel": "enc/kernel | reshape(-1)"})
    got = tci.open_checkpoint(out).read(["enc/kernel"])["enc/kernel"]
    np.testing.assert_array_equal(got, VALUES["model/dense/kernel"].reshape(-1))
