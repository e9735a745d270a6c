"""``RunConfig(train_distribute=..., eval_distribute=...)``: tf.estimator 2.15's in-graph replication.

The runs (tests/support/estimator_distribute.py) need 2 logical CPU devices, configured before
TensorFlow initializes, so each runs in a fresh process:

- TF 2.15 leg: the real ``tf.estimator`` and ours in one process must agree bit for bit
  (losses of every step, checkpoint files, variable values, metrics, predictions), and the
  real one must reproduce the committed golden file tests/golden/estimator_distribute_tf215.json
  (written by ``python tests/support/estimator_distribute.py --golden`` on TF 2.15).
- TF 2.21 leg: ours (Keras 2 for the canned estimators, ``TF_USE_LEGACY_KERAS=1``) must
  match the golden file.

Tolerance: measured equal to the bit on TF 2.21 (two replicas of a few small matmuls, one
thread per op); ``rtol=1e-6`` leaves room for another CPU's kernels. What would be wrong
moves the numbers far more: the same model_fn on one replica (``one_device`` in the
record) reports 0.216 at step 1 where two report 0.187.

The refusals run in this process: they need no devices and write nothing.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tf1compat_init import estimator as E  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "support" / "estimator_distribute.py"
GOLDEN = ROOT / "tests" / "golden" / "estimator_distribute_tf215.json"
RTOL = 1e-6
MODELS = (
    "model_fn",
    "dnn_classifier",
    "linear_regressor",
    "wide_deep_classifier",
    "wide_deep_regressor",
)


def golden() -> dict:
    return json.loads(GOLDEN.read_text())


def assert_same_numbers(mine, ref, path: str = "") -> None:
    """Equal structure and strings; floats within RTOL."""
    if isinstance(ref, dict):
        assert sorted(mine) == sorted(ref), path
        for key in ref:
            assert_same_numbers(mine[key], ref[key], f"{path}/{key}")
    elif isinstance(ref, list):
        assert len(mine) == len(ref), path
        for i, (a, b) in enumerate(zip(mine, ref, strict=True)):
            assert_same_numbers(a, b, f"{path}[{i}]")
    elif isinstance(ref, float):
        np.testing.assert_allclose(mine, ref, rtol=RTOL, atol=0, err_msg=path)
    else:
        assert mine == ref, path


def assert_is_replicated_training(run: dict) -> None:
    """What makes the record a 2-replica Estimator run, so that agreeing means something."""
    assert run["replicas"] == 2
    for name in MODELS:
        model = run[name]
        assert [[s for s, _ in c] for c in model["losses"]] == [[1, 2, 3], [4, 5]], name
        assert model["metrics"]["global_step"] == [5.0], name
        ckpts = {f.split(".")[1] for f in model["files"] if f.startswith("model.ckpt-")}
        assert ckpts == {"ckpt-0", "ckpt-3", "ckpt-5"}, name
        assert "global_step" in model["variables"], name
        assert len(model["predictions"]) == 4, name
    calls = run["model_fn"]["model_fn_calls"]
    # train twice and evaluate once, each time one model_fn call per device; predict once,
    # not replicated (as tf.estimator).
    per_device = [["train", "device:CPU:0"], ["train", "device:CPU:1"]]
    eval_calls = [["eval", "device:CPU:0"], ["eval", "device:CPU:1"]]
    assert calls == per_device * 2 + eval_calls + [["infer", ""]]
    assert sorted(run["model_fn"]["variables"]) == ["dense/bias", "dense/kernel", "global_step"]
    dnn = run["dnn_classifier"]["variables"]
    assert (
        "dnn/hiddenlayer_0/kernel" in dnn and "training/Adagrad/dnn/logits/bias/accumulator" in dnn
    )
    assert "linear/linear_model/x/weights" in run["linear_regressor"]["variables"]
    for name in ("wide_deep_classifier", "wide_deep_regressor"):
        wide_deep = run[name]["variables"]
        assert (
            "dnn/hiddenlayer_0/kernel" in wide_deep and "linear/linear_model/x/weights" in wide_deep
        )
    strategies = run["strategies"]
    assert sorted(strategies) == [
        "central_storage",
        "mirrored_v1",
        "one_device",
        "parameter_server_v1",
    ]
    for kind, record in strategies.items():
        assert [s for s, _ in record["losses"]] == [1, 2], kind
        assert record["metrics"]["global_step"] == [2.0], kind
    assert [d for _, d in strategies["one_device"]["model_fn_calls"]] == ["device:CPU:1"] * 2
    # Mirrored V1 and central storage replicate as MirroredStrategy does: the same numbers.
    assert strategies["mirrored_v1"]["losses"] == run["model_fn"]["losses"][0][:2]
    assert strategies["central_storage"]["losses"] == strategies["mirrored_v1"]["losses"]
    # warm_start_from: model.ckpt-0 of the replicated run holds the plain run's values.
    warm = run["warm_start"]
    assert warm["ckpt0_kernel"] == warm["plain_kernel"]
    assert [s for s, _ in warm["losses"]] == [1, 2]


def _run_script(libs: str, tmp_path: Path, env: dict | None = None) -> dict:
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), libs, str(tmp_path), str(out)],
        cwd=ROOT,
        env=dict(os.environ, **(env or {})),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return json.loads(out.read_text())


def test_golden_file_is_a_replicated_run_by_tf_estimator():
    run = golden()
    assert run["tf_version"].startswith("2.15")
    assert_is_replicated_training(run)


@pytest.mark.tf215
@pytest.mark.skipif(not hasattr(tf, "estimator"), reason="needs the real tf.estimator")
def test_ours_equals_tf_estimator_and_the_golden_file_on_tf215(tmp_path):
    runs = _run_script("real,ours", tmp_path)
    real, ours = runs["real"], runs["ours"]
    assert_is_replicated_training(real)
    assert ours == real
    assert real["tf_version"] == golden()["tf_version"]
    assert_same_numbers(real, golden())


@pytest.mark.tf221
@pytest.mark.tf_keras
def test_ours_on_tf221_gives_tf_estimator_numbers(tmp_path):
    ours = _run_script("ours", tmp_path, {"TF_USE_LEGACY_KERAS": "1"})["ours"]
    assert int(ours["tf_version"].split(".")[1]) >= 16
    assert_is_replicated_training(ours)
    assert_same_numbers({**ours, "tf_version": None}, {**golden(), "tf_version": None})


# -- refused: what TF 2.21 cannot run, before anything is written ----------------------


def _bare(cls):
    """An instance of a real strategy class, unconstructed: the check looks at the class only,
    and constructing these needs a cluster (parameter servers) or collective ops set up at
    program start (multi-worker)."""
    return cls.__new__(cls)


PS_V2_ERROR = (
    "Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` for "
    "parameter server strategy with estimator."
)


@pytest.mark.parametrize("name", ["train_distribute", "eval_distribute"])
def test_tf2_parameter_server_strategy_gets_tf_estimators_error(tmp_path, name):
    model_dir = tmp_path / "m"
    strategy = _bare(tf.distribute.experimental.ParameterServerStrategy)
    with pytest.raises(ValueError) as info:
        E.RunConfig(model_dir=str(model_dir), **{name: strategy})
    first, advice = str(info.value).split("\n")
    assert first == PS_V2_ERROR
    assert advice.startswith("tf1compat_init: ")
    assert not model_dir.exists()
    if hasattr(tf, "estimator"):  # TF 2.15: the same first line from the real RunConfig
        with pytest.raises(ValueError, match="^" + re.escape(PS_V2_ERROR) + "$"):
            tf.estimator.RunConfig(**{name: strategy})


@pytest.mark.parametrize(
    "cls",
    [
        tf.distribute.MultiWorkerMirroredStrategy,
        tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy,
    ],
)
def test_multi_worker_strategies_are_refused_naming_the_way_out(tmp_path, cls):
    model_dir = tmp_path / "m"
    with pytest.raises(NotImplementedError) as info:
        E.RunConfig(model_dir=str(model_dir), train_distribute=_bare(cls))
    message = str(info.value)
    assert message.startswith(f"tf1compat_init: RunConfig(train_distribute={cls.__name__})")
    assert "distribute coordinator" in message and "MirroredStrategy" in message
    assert "Running on a cluster" in message
    assert not model_dir.exists()


@pytest.mark.parametrize(
    "cluster,task",
    [
        ({"chief": ["localhost:2222"], "worker": ["localhost:2223"]}, "chief"),
        ({"master": ["localhost:2222"], "worker": ["localhost:2223"]}, "master"),
        ({"chief": ["localhost:2222"], "ps": ["localhost:2224"]}, "chief"),
    ],
)
def test_a_strategy_with_a_tf_config_cluster_is_refused(tmp_path, monkeypatch, cluster, task):
    tf_config = {"cluster": cluster, "task": {"type": task, "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    model_dir = tmp_path / "m"
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    jobs = re.escape(str(sorted(cluster)))
    with pytest.raises(NotImplementedError, match=rf"TF_CONFIG cluster \({jobs}\)"):
        E.RunConfig(model_dir=str(model_dir), train_distribute=strategy)
    assert not model_dir.exists()
    # Evaluation on one machine stays possible in a cluster (tf.estimator's evaluator).
    assert E.RunConfig(eval_distribute=strategy).eval_distribute is strategy


def test_values_that_are_not_strategies_and_experimental_distribute_are_refused():
    with pytest.raises(TypeError, match=r"RunConfig\(train_distribute=...\) takes a tf.distribute"):
        E.RunConfig(train_distribute=object())
    with pytest.raises(NotImplementedError, match="experimental_distribute"):
        E.RunConfig(experimental_distribute=object())
    config = E.RunConfig()
    with pytest.raises(TypeError, match="eval_distribute"):
        config.replace(eval_distribute="mirrored")


def test_a_local_strategy_is_accepted_and_kept():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    config = E.RunConfig(train_distribute=strategy, eval_distribute=strategy)
    assert config.train_distribute is strategy and config.eval_distribute is strategy
    assert config.replace(tf_random_seed=1).train_distribute is not None


def test_cpu_devices_a_session_lacks_are_named():
    from tf1compat_init.estimator._distribute import missing_cpu_devices

    devices = ["/job:localhost/replica:0/task:0/device:CPU:0", "/device:CPU:1", "/gpu:0"]
    default = tf.compat.v1.ConfigProto()
    assert missing_cpu_devices(devices, default) == ["/device:CPU:1"]
    assert missing_cpu_devices(devices, None) == ["/device:CPU:1"]
    two = tf.compat.v1.ConfigProto(device_count={"CPU": 2})
    assert missing_cpu_devices(devices, two) == []
