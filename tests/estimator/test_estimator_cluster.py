"""train_and_evaluate as tasks of a TF_CONFIG cluster on 127.0.0.1, each task its own process.

1 ps + chief + 1 worker + evaluator run ``tests/support/estimator_cluster_task.py``; the ps is
killed once the others end (a ps serves until killed, as in tf.estimator). Checked: the job
stops at max_steps, both trainers ran steps, every variable (including both partitions of
the embedding) was placed on the parameter server, only the chief wrote checkpoints and
they hold the trained values, the evaluator evaluated every checkpoint it saw once and
ran the final export. On TF 2.15 the same job with two parameter servers runs under the
real tf.estimator and under ours, and the observable outcome (variable names, the placement
of every variable across the two servers, files) is the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import SUPPORT
from support.ports import free_ports
from support.ports import task_logs as _logs

tf = pytest.importorskip("tensorflow")

TIMEOUT_S = 240  # hard bound; a healthy run takes about 20-60 s on 2 cores
MAX_STEPS = 20


def _pretrained(tmp_path: Path) -> str:
    """A checkpoint with w, b and (unpartitioned) emb at 0.5, not the model's zero init."""
    with tf.Graph().as_default():
        for name, shape in (("w", [3, 1]), ("b", [1]), ("emb", [6, 1])):
            tf.compat.v1.get_variable(
                name, shape, initializer=tf.compat.v1.constant_initializer(0.5)
            )
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return tf.compat.v1.train.Saver().save(
                session, str(tmp_path / "pretrained" / "model.ckpt")
            )


def _run_cluster(lib: str, tmp_path: Path, pretrained: str | None = None, n_ps: int = 1) -> dict:
    *ps, chief, worker = free_ports(n_ps + 2)
    cluster = {
        "ps": [f"127.0.0.1:{port}" for port in ps],
        "chief": [f"127.0.0.1:{chief}"],
        "worker": [f"127.0.0.1:{worker}"],
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    model_dir = tmp_path / "model"
    roles = {f"ps{i}" if i else "ps": ("ps", i) for i in range(n_ps)}
    roles.update({"chief": ("chief", 0), "worker": ("worker", 0), "evaluator": ("evaluator", 0)})
    procs, logs, outs = {}, {}, {}
    try:
        for role, (kind, index) in roles.items():
            env = dict(os.environ)
            env["TF_CONFIG"] = json.dumps(
                {"cluster": cluster, "task": {"type": kind, "index": index}}
            )
            env["TF_CPP_MIN_LOG_LEVEL"] = "2"
            logs[role] = tmp_path / f"{role}.log"
            outs[role] = tmp_path / f"{role}.json"
            procs[role] = subprocess.Popen(
                [
                    sys.executable,
                    str(SUPPORT / "estimator_cluster_task.py"),
                    lib,
                    str(model_dir),
                    str(outs[role]),
                ]
                + ([pretrained] if pretrained else []),
                stdout=logs[role].open("w"),
                stderr=subprocess.STDOUT,
                env=env,
            )
        deadline = time.time() + TIMEOUT_S
        for role in ("chief", "worker", "evaluator"):
            left = max(1.0, deadline - time.time())
            try:
                code = procs[role].wait(timeout=left)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{role} did not finish in {TIMEOUT_S} s\n{_logs(logs)}")
            assert code == 0, f"{role} exited {code}\n{_logs(logs)}"
        for role in (r for r in roles if roles[r][0] == "ps"):
            assert procs[role].poll() is None, f"{role} must serve until killed\n" + _logs(logs)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    seen = {role: json.loads(outs[role].read_text()) for role in ("chief", "worker", "evaluator")}
    seen["model_dir"] = model_dir
    return seen


def _outcome(seen: dict) -> dict:
    model_dir = seen["model_dir"]
    reader = tf.train.load_checkpoint(str(model_dir))
    names = sorted(reader.get_variable_to_shape_map())
    eval_dir = model_dir / "eval"
    return {
        "names": names,
        "final_step": int(reader.get_tensor("global_step")),
        "chief_devices": seen["chief"]["devices"],
        "worker_devices": seen["worker"]["devices"],
        "checkpoints": sorted(p.name for p in model_dir.glob("model.ckpt-*.index")),
        "has_eval_events": bool(list(eval_dir.glob("events.out.tfevents.*"))),
        "final_exports": len(list((model_dir / "export" / "final").glob("[0-9]*"))),
        "returned": [seen[r]["returned"] for r in ("chief", "worker", "evaluator")],
    }


def _check(outcome: dict, seen: dict, n_ps: int = 1) -> None:
    assert outcome["final_step"] >= MAX_STEPS
    assert seen["chief"]["steps"] and seen["worker"]["steps"], "both trainers must train"
    assert seen["chief"]["config"]["is_chief"] and not seen["worker"]["config"]["is_chief"]
    assert seen["chief"]["config"]["num_ps_replicas"] == n_ps
    for devices in (outcome["chief_devices"], outcome["worker_devices"]):
        tasks = {name: device.partition("/job:ps/task:")[2][:1] for name, device in devices.items()}
        assert all(device.startswith("/job:ps/task:") for device in devices.values()), devices
        # replica_device_setter's round robin: with two ps, each holds some variables, and
        # the two partitions of the embedding land on different ones.
        assert {int(t) for t in tasks.values()} == set(range(n_ps)), devices
        if n_ps > 1:
            assert tasks["emb/part_0"] != tasks["emb/part_1"], devices
    assert {"emb/part_0", "emb/part_1", "w", "b", "global_step"} <= set(outcome["chief_devices"])
    assert outcome["has_eval_events"] and outcome["final_exports"] == 1
    assert outcome["returned"] == [None, None, None]
    assert outcome["names"] == ["b", "emb", "global_step", "w"]


def test_a_cluster_job_trains_on_the_parameter_server_and_the_evaluator_follows(tmp_path):
    seen = _run_cluster("ours", tmp_path, _pretrained(tmp_path))
    outcome = _outcome(seen)
    _check(outcome, seen)
    # The chief warm-started the parameter server before any step: the step-0 run saw the
    # pretrained weights exactly, and no trainer ever saw the zero init.
    first = {role: (seen[role]["steps"][0], seen[role]["first_w"]) for role in ("chief", "worker")}
    # Whichever trainer ran global step 0 (both may: their first steps can overlap, since
    # training is asynchronous) saw the pretrained weights exactly.
    at_zero = [w for step, w in first.values() if step == 0]
    assert at_zero and all(w == [0.5, 0.5, 0.5] for w in at_zero), first
    assert all(any(v != 0.0 for v in w) for _, w in first.values()), first


@pytest.mark.tf215
@pytest.mark.skipif(not hasattr(tf, "estimator"), reason="needs the real tf.estimator")
def test_the_same_cluster_job_under_tf_estimator_looks_the_same(tmp_path):
    # Two parameter servers: the placement of every variable (the partitioned embedding's
    # parts on different servers) must be TF 2.15's, not just "somewhere on the ps".
    real_seen = _run_cluster("real", tmp_path / "real", n_ps=2)
    ours_seen = _run_cluster("ours", tmp_path / "ours", n_ps=2)
    real, ours = _outcome(real_seen), _outcome(ours_seen)
    _check(real, real_seen, n_ps=2)
    _check(ours, ours_seen, n_ps=2)
    for key in (
        "names",
        "chief_devices",
        "worker_devices",
        "has_eval_events",
        "final_exports",
        "returned",
    ):
        assert ours[key] == real[key], key
