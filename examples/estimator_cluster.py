"""A TF_CONFIG cluster on this machine: 1 parameter server, a chief, a worker and an evaluator.

The same program runs as every task, as on a real cluster (Kubernetes TFJob, Slurm, Cloud
ML Engine): only the ``TF_CONFIG`` environment variable differs. Started without
``TF_CONFIG``, this script plays the cluster manager: it picks four free ports on
127.0.0.1, starts itself once per task, waits for the chief, the worker and the
evaluator, then stops the parameter server (which, as in tf.estimator, serves until it is
stopped). The model's variables live on the parameter server; the chief writes the
checkpoints; the evaluator evaluates each new one and exports the final model.

Run: ``python examples/estimator_cluster.py`` (writes only to a temporary directory;
about a minute on 2 cores).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf1compat_init import estimator as tf_estimator  # was: tf_estimator = tf.estimator  # noqa: E402

X = np.random.RandomState(0).rand(64, 3).astype(np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3


def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.compat.v1.zeros_initializer())
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    if mode == tf_estimator.ModeKeys.PREDICT:
        return tf_estimator.EstimatorSpec(mode, predictions={"y": pred})
    loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, tf.compat.v1.train.get_global_step()
    )
    return tf_estimator.EstimatorSpec(
        mode,
        loss=loss,
        train_op=train_op,
        eval_metric_ops={"mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred)},
    )


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
    return tf_estimator.export.ServingInputReceiver({"x": x}, {"x": x})


def run_task(model_dir: str) -> None:
    """One task: what every process of a real cluster runs."""
    config = tf_estimator.RunConfig(save_checkpoints_steps=50, experimental_max_worker_delay_secs=2)
    est = tf_estimator.Estimator(model_fn, model_dir=model_dir, config=config)
    train_spec = tf_estimator.TrainSpec(
        lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(8),
        max_steps=200,
    )
    eval_spec = tf_estimator.EvalSpec(
        lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(16),
        steps=None,
        exporters=[tf_estimator.FinalExporter("final", serving_input_fn)],
        start_delay_secs=0,
        throttle_secs=1,
    )
    tf_estimator.train_and_evaluate(est, train_spec, eval_spec)
    if config.task_type == "evaluator":
        result = est.evaluate(eval_spec.input_fn)
        print(f"evaluator: final mae {result['mae']:.4f} at step {result['global_step']}")


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def main() -> None:
    if "TF_CONFIG" in os.environ:
        run_task(sys.argv[1])
        return
    model_dir = os.path.join(tempfile.mkdtemp(), "model")
    ps, chief, worker = (f"127.0.0.1:{p}" for p in free_ports(3))
    cluster = {"ps": [ps], "chief": [chief], "worker": [worker]}
    tasks = [("ps", 0), ("chief", 0), ("worker", 0), ("evaluator", 0)]
    procs = {}
    for kind, index in tasks:
        tf_config = {"cluster": cluster, "task": {"type": kind, "index": index}}
        print(f"starting {kind}:{index} with TF_CONFIG={json.dumps(tf_config)}")
        env = dict(os.environ, TF_CONFIG=json.dumps(tf_config))
        procs[kind] = subprocess.Popen([sys.executable, __file__, model_dir], env=env)
    try:
        for kind in ("chief", "worker", "evaluator"):
            if procs[kind].wait(timeout=600) != 0:
                raise SystemExit(f"{kind} failed")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    step = tf.train.load_checkpoint(model_dir).get_tensor("global_step")
    exports = os.listdir(os.path.join(model_dir, "export", "final"))
    print(f"cluster done: the chief's last checkpoint is at step {step}; final export {exports}")


if __name__ == "__main__":
    main()
