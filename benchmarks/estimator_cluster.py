"""Training speed on a localhost TF_CONFIG cluster: TF 2.15's ``tf.estimator`` against ours.

Run it with the TF 2.15 Python, where both exist, so that one run gives the ratios::

    .venvs/tf215/bin/python benchmarks/estimator_cluster.py --out benchmarks/results/estimator_cluster.json

Two measurements, each alternating real and ours ``--repeats`` times (medians reported):

- ``cluster``: a 2-trainer job (1 ps + chief + 1 worker, each its own process on
  127.0.0.1) trains a small DNN whose variables live on the parameter server. The job's
  rate is global steps per second from the first chief step after the worker's first step
  to the chief's last step (process start, graph building and session creation are left
  out; both trainers train in the window).
- ``local``: one process, ``Estimator.train`` of the same model against a bare
  ``tf.compat.v1.train.MonitoredTrainingSession`` loop over the same graph (same summary
  and step-log frequencies, a checkpoint directory), timed by a hook from step
  ``--warmup`` on. The per-step overhead is ``1/rate - 1/bare_rate``.

On a busy machine wall time says little; the load average before and after is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

N, DIM, BATCH = 4096, 32, 64


def library(name: str):
    if name == "real":
        return tf.estimator
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from tf1compat_init import estimator

    return estimator


def input_fn():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(N, DIM)).astype("float32")
    y = (x[:, :1] > 0).astype("float32")
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(BATCH).prefetch(2)


def model_fn(features, labels, mode):
    hidden = tf.compat.v1.layers.dense(features["x"], 64, tf.nn.relu, name="h1")
    logits = tf.compat.v1.layers.dense(hidden, 1, name="out")
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
    step = tf.compat.v1.train.get_global_step()
    train_op = tf.compat.v1.train.AdagradOptimizer(0.05).minimize(loss, step)
    return LIB.EstimatorSpec(mode, loss=loss, train_op=train_op)


LIB = None


class Window(tf.compat.v1.train.SessionRunHook):
    """The chief's timing: (time, global step) at the window's start and at its end."""

    def __init__(self, marker: str | None, warmup: int = 0) -> None:
        self.marker, self.warmup, self.calls = marker, warmup, 0
        self.first = self.last = None

    def begin(self) -> None:
        self._step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._step)

    def after_run(self, run_context, run_values) -> None:
        self.calls += 1
        now = (time.perf_counter(), int(run_values.results))
        if self.first is None and self.marker:
            # The chief waits for the worker, so that both train in the window.
            deadline = time.monotonic() + 300
            while not os.path.exists(self.marker) and time.monotonic() < deadline:
                time.sleep(0.01)
            self.first = (time.perf_counter(), now[1])
        elif self.first is None and self.calls >= self.warmup:
            self.first = now
        self.last = now

    def rate(self) -> float:
        return (self.last[1] - self.first[1]) / (self.last[0] - self.first[0])


class Marker(tf.compat.v1.train.SessionRunHook):
    """A worker's: writes the marker after its first step."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def after_run(self, run_context, run_values) -> None:
        if not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write("1")


def task(lib_name: str, model_dir: str, marker: str, max_steps: int, out: str) -> None:
    """One task of the cluster job (TF_CONFIG names it)."""
    global LIB
    LIB = library(lib_name)
    config = LIB.RunConfig(
        save_checkpoints_steps=10**9,
        save_summary_steps=100,
        experimental_max_worker_delay_secs=0,
        session_creation_timeout_secs=300,
    )
    est = LIB.Estimator(model_fn, model_dir=model_dir, config=config)
    hook = Window(marker) if config.is_chief else Marker(marker)
    hooks = [hook] if config.task_type != "ps" else []
    train = LIB.TrainSpec(input_fn, max_steps=max_steps, hooks=hooks)
    evaluate = LIB.EvalSpec(input_fn, steps=1)
    LIB.train_and_evaluate(est, train, evaluate)
    if config.is_chief:
        with open(out, "w") as f:
            json.dump({"rate": hook.rate(), "window": [hook.first, hook.last]}, f)


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def cluster_rate(lib_name: str, max_steps: int, timeout: float = 600) -> float:
    """Global steps/sec of one ps + chief + worker job (the worker joins after the chief)."""
    directory = tempfile.mkdtemp()
    ps, chief, worker = _free_ports(3)
    cluster = {
        "ps": [f"127.0.0.1:{ps}"],
        "chief": [f"127.0.0.1:{chief}"],
        "worker": [f"127.0.0.1:{worker}"],
    }
    marker, out = os.path.join(directory, "worker_stepped"), os.path.join(directory, "out.json")
    procs = {}
    try:
        for role in ("ps", "chief", "worker"):
            env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
            env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": role, "index": 0}})
            command = [sys.executable, os.path.abspath(__file__), "--task", lib_name]
            command += [os.path.join(directory, "model"), marker, str(max_steps), out]
            log = open(os.path.join(directory, f"{role}.log"), "w")  # noqa: SIM115
            procs[role] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        for role in ("chief", "worker"):
            if procs[role].wait(timeout=timeout) != 0:
                raise RuntimeError(f"{role} failed; see {directory}/{role}.log")
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    with open(out) as f:
        return json.load(f)["rate"]


def local_rate(lib_name: str, steps: int, warmup: int) -> float:
    """Steps/sec of ``Estimator.train`` in one process (``bare``: a bare MTS loop)."""
    global LIB
    LIB = library("ours" if lib_name == "bare" else lib_name)
    hook = Window(None, warmup)
    model_dir = tempfile.mkdtemp()
    if lib_name != "bare":
        est = LIB.Estimator(model_fn, model_dir=model_dir)
        est.train(input_fn, hooks=[hook], max_steps=warmup + steps)
        return hook.rate()
    with tf.Graph().as_default():
        step = tf.compat.v1.train.create_global_step()
        features, labels = tf.compat.v1.data.make_one_shot_iterator(input_fn()).get_next()
        spec = model_fn(features, labels, "train")
        stop = tf.compat.v1.train.StopAtStepHook(last_step=warmup + steps)
        with tf.compat.v1.train.MonitoredTrainingSession(
            checkpoint_dir=model_dir,
            hooks=[hook, stop, tf.compat.v1.train.NanTensorHook(spec.loss)],
            save_summaries_steps=100,
            log_step_count_steps=100,
        ) as session:
            del step
            while not session.should_stop():
                session.run([spec.train_op, spec.loss])
    return hook.rate()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", nargs=5, metavar=("LIB", "MODEL_DIR", "MARKER", "MAX", "OUT"))
    parser.add_argument("--cluster-steps", type=int, default=3000)
    parser.add_argument("--local-steps", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="a JSON file to write the result to")
    args = parser.parse_args(argv)
    if args.task:
        lib_name, model_dir, marker, max_steps, out = args.task
        task(lib_name, model_dir, marker, int(max_steps), out)
        return {}
    result = {
        "tf_version": tf.__version__,
        "batch": BATCH,
        "cluster_steps": args.cluster_steps,
        "local_steps": args.local_steps,
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg()[0],
    }
    cluster = {"real": [], "ours": []}
    for _ in range(args.repeats):
        for name in cluster:
            cluster[name].append(cluster_rate(name, args.cluster_steps))
    local = {"bare": [], "real": [], "ours": []}
    for _ in range(args.repeats):
        for name in local:
            local[name].append(local_rate(name, args.local_steps, args.warmup))
    med = {k: statistics.median(v) for k, v in cluster.items()}
    lmed = {k: statistics.median(v) for k, v in local.items()}
    result["cluster"] = {
        "global_steps_per_sec": med,
        "runs": cluster,
        "ours_over_real": med["ours"] / med["real"],
    }
    result["local"] = {
        "steps_per_sec": lmed,
        "runs": local,
        "ours_over_bare": lmed["ours"] / lmed["bare"],
        "real_over_bare": lmed["real"] / lmed["bare"],
        "overhead_us_per_step": {
            name: 1e6 * (1 / lmed[name] - 1 / lmed["bare"]) for name in ("ours", "real")
        },
    }
    result["load_average_after"] = os.getloadavg()[0]
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
