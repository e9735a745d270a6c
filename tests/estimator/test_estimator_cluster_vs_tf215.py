"""Ours and TF 2.15's tf.estimator on the same localhost cluster (1 ps + chief + worker).

A model_dir that one of them trained resumes under the other: the global step goes on
from the checkpoint and the chief's new session holds the checkpoint's values before
any step of either trainer (the worker starts after the chief's session). Early stopping
with ``make_early_stopping_hook`` on a live cluster: the chief decides, sets
``signal_early_stopping/STOP`` on the parameter server, and the worker stops too; ours
behaves as the real one (the same outcome is checked for both, ours on both legs).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.cluster_job import Job

tf = pytest.importorskip("tensorflow")

TIMEOUT_S = 180  # hard bound per job; a healthy job takes about 10-30 s on 2 cores
REAL = pytest.param(
    "real",
    marks=[
        pytest.mark.tf215,
        pytest.mark.skipif(not hasattr(tf, "estimator"), reason="needs the real tf.estimator"),
    ],
)


@pytest.mark.tf215
@pytest.mark.skipif(not hasattr(tf, "estimator"), reason="needs the real tf.estimator")
@pytest.mark.parametrize(("first", "then"), [("real", "ours"), ("ours", "real")])
def test_a_cluster_model_dir_resumes_under_the_other_estimator(tmp_path, first, then):
    model_dir = tmp_path / "model"
    with Job(tmp_path / "first", model_dir) as job:
        job.run_trainers(first, "--max-steps", "10", timeout=TIMEOUT_S)
    reader = tf.train.load_checkpoint(str(model_dir))
    step = int(reader.get_tensor("global_step"))
    w, b = reader.get_tensor("w").ravel(), reader.get_tensor("b").ravel()
    assert step >= 10
    with Job(tmp_path / "then", model_dir) as job:
        seen = job.run_trainers(then, "--max-steps", str(step + 10), timeout=TIMEOUT_S)
    start = seen["chief"]["sessions"][0]
    assert start["step"] == step
    np.testing.assert_allclose(start["w"], w, rtol=1e-6)
    np.testing.assert_allclose(start["b"], b, rtol=1e-6)
    assert seen["chief"]["steps"] and seen["worker"]["steps"]
    assert min(seen["chief"]["steps"] + seen["worker"]["steps"]) >= step
    final = tf.train.load_checkpoint(str(model_dir))
    assert int(final.get_tensor("global_step")) >= step + 10
    assert not np.allclose(final.get_tensor("w").ravel(), w)  # it trained on from there


@pytest.mark.parametrize("lib", ["ours", REAL])
def test_early_stopping_on_a_cluster_the_chief_decides_and_the_worker_stops(tmp_path, lib):
    max_steps = 100_000  # never reached: the chief stops once the worker has stepped
    with Job(tmp_path, tmp_path / "model") as job:
        seen = job.run_trainers(lib, "--early-stop", "--max-steps", str(max_steps))
    chief, worker = seen["chief"], seen["worker"]
    assert chief["returned"] is None and worker["returned"] is None
    assert chief["steps"] and worker["steps"]
    assert max(chief["steps"] + worker["steps"]) < max_steps // 2
    for trainer in (chief, worker):
        assert trainer["devices"]["signal_early_stopping/STOP"] == "/job:ps/task:0"
    reader = tf.train.load_checkpoint(str(tmp_path / "model"))
    assert bool(reader.get_tensor("signal_early_stopping/STOP"))
    assert sorted(reader.get_variable_to_shape_map()) == [
        "b",
        "emb",
        "global_step",
        "signal_early_stopping/STOP",
        "w",
    ]
