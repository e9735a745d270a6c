"""One task of a localhost Estimator cluster (run with TF_CONFIG set), for test_estimator_cluster.

    python tests/_estimator_cluster_task.py LIB MODEL_DIR OUT_JSON [PRETRAINED]

LIB is ``ours`` (tf1compat_init.estimator) or ``real`` (tf.estimator, TF 2.15). The task runs
``train_and_evaluate`` on a small linear model whose weights and a 2-way partitioned
embedding live on the parameter servers; a hook records where every variable was placed and
the global steps this task ran and the weights its first step saw; a FinalExporter exports
the last evaluation. With PRETRAINED, the estimator warm-starts from that checkpoint.
OUT_JSON gets what the task saw.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

import numpy as np
import tensorflow as tf

MAX_STEPS = 20
WORKER_WAIT_S = 120

X = np.arange(24, dtype=np.float32).reshape(8, 3) / 10.0
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
IDS = np.arange(8, dtype=np.int64) % 6


def input_fn():
    ds = tf.data.Dataset.from_tensor_slices(({"x": X, "id": IDS}, Y))
    return ds.repeat().batch(4)


def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.compat.v1.zeros_initializer())
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
    emb = tf.compat.v1.get_variable(
        "emb",
        [6, 1],
        initializer=tf.compat.v1.constant_initializer(0.1),
        partitioner=tf.compat.v1.fixed_size_partitioner(2),
    )
    pred = tf.matmul(features["x"], w) + b + tf.nn.embedding_lookup(emb, features["id"])
    if mode == "infer":
        return _lib().EstimatorSpec(mode, predictions={"y": pred})
    loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
    step = tf.compat.v1.train.get_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss, step)
    metrics = {"mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred)}
    return _lib().EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)


class Record(tf.compat.v1.train.SessionRunHook):
    """Records what this trainer saw; also makes sure both trainers train.

    On a loaded host the chief can run all MAX_STEPS before the worker's session exists, and
    then the worker (rightly, as in tf.estimator) skips training because max_steps is already
    saved. So the worker drops a marker file after its first step and the chief, halfway,
    waits for it (bounded), which keeps the job's outcome independent of timing.
    """

    def __init__(self, seen, marker):
        self.seen = seen
        self.marker = marker

    def begin(self):
        self.seen["devices"] = {v.op.name: v.device for v in tf.compat.v1.global_variables()}
        self._fetch = {
            "step": tf.compat.v1.train.get_global_step(),
            "w": next(v for v in tf.compat.v1.global_variables() if v.op.name == "w").read_value(),
        }

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._fetch)

    def after_run(self, run_context, run_values):
        step = int(run_values.results["step"])
        self.seen.setdefault("steps", []).append(step)
        self.seen.setdefault("first_w", run_values.results["w"].ravel().tolist())
        task_type = self.seen["task"]["type"]
        if task_type == "worker" and not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write(str(step))
        elif task_type == "chief" and step >= MAX_STEPS // 2 and not self.seen.get("waited"):
            deadline = time.time() + WORKER_WAIT_S
            while not os.path.exists(self.marker) and time.time() < deadline:
                time.sleep(0.1)
            self.seen["waited"] = True


def _lib():
    if sys.argv[1] == "real":
        return tf.estimator
    import tf1compat_init.estimator as ours

    return ours


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
    ids = tf.compat.v1.placeholder(tf.int64, [None], name="id")
    return _lib().export.ServingInputReceiver({"x": x, "id": ids}, {"x": x, "id": ids})


def main() -> None:
    lib_name, model_dir, out = sys.argv[1:4]
    logging.basicConfig(level=logging.INFO)  # the task's log is shown when a test fails
    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    lib = _lib()
    seen: dict = {"task": json.loads(os.environ["TF_CONFIG"])["task"]}
    config = lib.RunConfig(
        save_checkpoints_steps=5,
        save_summary_steps=5,
        experimental_max_worker_delay_secs=1,
        session_creation_timeout_secs=120,
    )
    seen["config"] = {
        "task_type": config.task_type,
        "is_chief": config.is_chief,
        "master": config.master,
        "num_ps_replicas": config.num_ps_replicas,
    }
    warm = sys.argv[4] if len(sys.argv) > 4 else None
    est = lib.Estimator(model_fn, model_dir=model_dir, config=config, warm_start_from=warm)
    train = lib.TrainSpec(
        input_fn,
        max_steps=MAX_STEPS,
        hooks=[Record(seen, os.path.join(os.path.dirname(model_dir), "worker_stepped"))],
    )
    evaluate = lib.EvalSpec(
        lambda: tf.data.Dataset.from_tensor_slices(({"x": X, "id": IDS}, Y)).batch(4),
        steps=None,
        exporters=[lib.FinalExporter("final", serving_input_fn)],
        start_delay_secs=0,
        throttle_secs=1,
    )
    result = lib.train_and_evaluate(est, train, evaluate)
    seen["returned"] = None if result is None else repr(result)
    seen["done"] = True
    with open(out, "w") as f:
        json.dump(seen, f)


if __name__ == "__main__":
    main()
