"""Loading under distribution strategies, each run in processes of its own.

Logical CPU devices must be configured before TensorFlow initialises, and a
``MultiWorkerMirroredStrategy`` cluster needs one process per worker, so every check
runs tests/support/keras_dist_worker.py in subprocesses (with hard timeouts, killed in
``finally``). The default parameter uses this leg's ``tf.keras`` (Keras 3 on tf221,
Keras 2 on tf215); the ``tf_keras`` one sets ``TF_USE_LEGACY_KERAS=1``.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from support.ports import free_ports

pytest.importorskip("tensorflow")

from support.keras_helpers import TF1_MLP, write_tf1_checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
WORKER = str(ROOT / "tests" / "support" / "keras_dist_worker.py")
TIMEOUT = 150  # per run; a healthy run takes 10 to 25 s on two busy cores

FLAVOURS = [
    pytest.param(False, id="tf.keras"),
    pytest.param(
        True,
        id="tf_keras",
        marks=[
            pytest.mark.tf_keras,
            pytest.mark.tf221,
            pytest.mark.skipif(
                importlib.util.find_spec("tf_keras") is None, reason="tf_keras is not installed"
            ),
        ],
    ),
]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return write_tf1_checkpoint(str(tmp_path_factory.mktemp("tf1") / "model.ckpt"), TF1_MLP)


def worker_env(legacy, **extra):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **extra)
    env.pop("TF_USE_LEGACY_KERAS", None)
    if legacy:
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def result_of(out_path, err_path, returncode):
    out = Path(out_path).read_text()
    assert returncode == 0, f"worker failed ({returncode}):\n{Path(err_path).read_text()[-4000:]}"
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("legacy", FLAVOURS)
def test_mirrored_strategy_every_replica_holds_the_checkpoint(ckpt, legacy, tmp_path):
    out, err = tmp_path / "out", tmp_path / "err"
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.run(
            [sys.executable, WORKER, "mirrored", ckpt],
            cwd=ROOT,
            env=worker_env(legacy),
            stdout=o,
            stderr=e,
            timeout=TIMEOUT,
        )
    r = result_of(out, err, proc.returncode)
    assert r["flavour"] == ("tf_keras" if legacy else r["flavour"])
    # Made in scope: two mirrored copies, both loaded, and both compute with them.
    assert r["in_scope"] == {"copies": 2, "values": True, "outputs": True}
    # Made out of scope: one copy, which both replicas read.
    assert r["out_of_scope"] == {"copies": 1, "values": True, "outputs": True}
    # CheckpointInit in fit under the strategy.
    assert r["fit_begin"] is True
    assert r["fit_report"].startswith("4 loaded, 0 missing")


@pytest.mark.parametrize("legacy", FLAVOURS)
def test_multi_worker_every_worker_loads_and_the_workers_stay_identical(ckpt, legacy, tmp_path):
    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
    procs, files = [], []
    try:
        for index in range(2):
            tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
            out, err = tmp_path / f"out{index}", tmp_path / f"err{index}"
            files.append((out, err))
            with open(out, "w") as o, open(err, "w") as e:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, WORKER, "mwms", ckpt, str(tmp_path / "run")],
                        cwd=ROOT,
                        env=worker_env(legacy, TF_CONFIG=tf_config),
                        stdout=o,
                        stderr=e,
                    )
                )
        deadline = time.monotonic() + TIMEOUT
        for p in procs:
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                tails = "\n---\n".join(Path(e).read_text()[-2000:] for _, e in files)
                pytest.fail(f"the workers did not finish within {TIMEOUT} s:\n{tails}")
        results = [result_of(o, e, p.returncode) for (o, e), p in zip(files, procs, strict=True)]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    assert sorted(r["task"] for r in results) == [0, 1]
    if legacy:
        assert {r["flavour"] for r in results} == {"tf_keras"}
    for r in results:
        assert r["begin"] is True, f"worker {r['task']} did not start from the checkpoint"
        assert r["report"].startswith("4 loaded, 0 missing")
        assert r["steps"] == 4
    # Identical after training, and trained: not the checkpoint any more.
    first, second = ([np.array(w) for w in r["final"]] for r in results)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(first[0], TF1_MLP["model/dense/kernel"])
    # Both workers saved; only the chief's checkpoints are kept, in the shared directory.
    assert [r["saved"] for r in results] == [[2, 4], [2, 4]]
    assert sorted(os.listdir(tmp_path / "run")) == [
        "checkpoint",
        "ckpt-2.data-00000-of-00001",
        "ckpt-2.index",
        "ckpt-4.data-00000-of-00001",
        "ckpt-4.index",
    ]
