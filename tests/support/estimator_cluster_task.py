"""One task of a localhost Estimator cluster (run with TF_CONFIG set), for test_estimator_cluster.

    python tests/support/estimator_cluster_task.py LIB MODEL_DIR OUT_JSON [PRETRAINED] [OPTIONS]

LIB is ``ours`` (tf1compat_init.estimator) or ``real`` (tf.estimator, TF 2.15). The task runs
``train_and_evaluate`` on a small linear model whose weights and a 2-way partitioned
embedding live on the parameter servers; a hook records where every variable was placed and
the global steps this task ran and the weights its first step saw; a FinalExporter exports
the last evaluation. With PRETRAINED, the estimator warm-starts from that checkpoint.
OUT_JSON gets what the task saw (also when training fails: then the error's type and text).

Marker files order the tasks where a test needs an order. OPTIONS:

- ``--marker-dir DIR``: where the marker files are (default MODEL_DIR's parent).
- ``--max-steps N`` (default 20) and ``--timeout S`` (``session_creation_timeout_secs``).
- ``--worker-marker NAME``: the file a worker writes after its first step (default
  ``worker_stepped``); ``--chief-waits-for NAME``: the file the chief waits for, bounded,
  once it is halfway to max_steps (default the same name).
- ``--worker-hangs``: after writing its marker, the worker sleeps until it is killed.
- ``--pause-at STEP:NAME``: each trainer, at its first step at or past STEP, waits for file
  NAME (bounded) before the next step.
- ``--early-stop``: a ``make_early_stopping_hook`` (checked every step) whose
  ``should_stop_fn`` is true once the worker's marker exists.

SIGUSR1 dumps the task's Python stacks to its log; TASK_TF_LOG=INFO shows TF's INFO logs.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import time

import numpy as np
import tensorflow as tf

WORKER_WAIT_S = 120
ARGS = argparse.Namespace()

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

    On a loaded host the chief can run all max_steps before the worker's session exists, and
    then the worker (rightly, as in tf.estimator) skips training because max_steps is already
    saved. So the worker drops a marker file after its first step and the chief, halfway,
    waits for it (bounded), which keeps the job's outcome independent of timing. A worker
    also waits until the chief has recorded what its new session holds, so that this record
    is what the session restored (or initialized), before any step of either trainer.
    """

    def __init__(self, seen, marker_dir):
        self.seen = seen
        self.marker_dir = marker_dir
        self.task_type = seen["task"]["type"]
        self.paused = False

    def _marker(self, name):
        return os.path.join(self.marker_dir, name)

    def _wait_for(self, name):
        deadline = time.time() + WORKER_WAIT_S
        while not os.path.exists(self._marker(name)) and time.time() < deadline:
            time.sleep(0.1)

    def begin(self):
        self.seen["devices"] = {v.op.name: v.device for v in tf.compat.v1.global_variables()}
        by_name = {v.op.name: v for v in tf.compat.v1.global_variables()}
        self._fetch = {
            "step": tf.compat.v1.train.get_global_step(),
            "w": by_name["w"].read_value(),
            "b": by_name["b"].read_value(),
        }

    def after_create_session(self, session, coord):
        values = session.run(self._fetch)
        self.seen.setdefault("sessions", []).append(
            {
                "step": int(values["step"]),
                "w": values["w"].ravel().tolist(),
                "b": values["b"].ravel().tolist(),
            }
        )
        if self.task_type == "chief":
            with open(self._marker("chief_session"), "w") as f:
                f.write(str(values["step"]))
        else:
            self._wait_for("chief_session")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._fetch)

    def after_run(self, run_context, run_values):
        step = int(run_values.results["step"])
        self.seen.setdefault("steps", []).append(step)
        self.seen.setdefault("first_w", run_values.results["w"].ravel().tolist())
        if self.task_type == "worker" and not os.path.exists(self._marker(ARGS.worker_marker)):
            if ARGS.worker_hangs:  # what it saw first: a test reads it once the marker is there
                _write(self.seen)
            with open(self._marker(ARGS.worker_marker), "w") as f:
                f.write(str(step))
            if ARGS.worker_hangs:
                while True:
                    time.sleep(1)
        elif (
            self.task_type == "chief"
            and step >= ARGS.max_steps // 2
            and not self.seen.get("waited")
        ):
            self._wait_for(ARGS.chief_waits_for)
            self.seen["waited"] = True
        if ARGS.pause_at and step >= ARGS.pause_at[0] and not self.paused:
            self.paused = True
            _write(self.seen)
            self._wait_for(ARGS.pause_at[1])


def _write(seen):
    """Writes what the task saw, whole or not at all (a test may read it at any time)."""
    tmp = f"{ARGS.out}.tmp"
    with open(tmp, "w") as f:
        json.dump(seen, f)
    os.replace(tmp, ARGS.out)


def _lib():
    if ARGS.lib == "real":
        return tf.estimator
    import tf1compat_init.estimator as ours

    return ours


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
    ids = tf.compat.v1.placeholder(tf.int64, [None], name="id")
    return _lib().export.ServingInputReceiver({"x": x, "id": ids}, {"x": x, "id": ids})


def _parse(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("lib", choices=["ours", "real"])
    parser.add_argument("model_dir")
    parser.add_argument("out")
    parser.add_argument("pretrained", nargs="?")
    parser.add_argument("--marker-dir")
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--worker-marker", default="worker_stepped")
    parser.add_argument("--chief-waits-for", default=None)
    parser.add_argument("--worker-hangs", action="store_true")
    parser.add_argument("--pause-at", type=lambda v: (int(v.split(":")[0]), v.split(":")[1]))
    parser.add_argument("--early-stop", action="store_true")
    args = parser.parse_args(argv, namespace=ARGS)
    if args.chief_waits_for is None:
        args.chief_waits_for = args.worker_marker
    return args


def main() -> None:
    args = _parse(sys.argv[1:])
    faulthandler.register(signal.SIGUSR1)  # a test that finds a task stuck dumps its stack
    logging.basicConfig(level=logging.INFO)  # the task's log is shown when a test fails
    logging.getLogger("tensorflow").setLevel(os.environ.get("TASK_TF_LOG", "WARNING"))
    lib = _lib()
    seen: dict = {"task": json.loads(os.environ["TF_CONFIG"])["task"]}
    config = lib.RunConfig(
        save_checkpoints_steps=5,
        # Every checkpoint kept: on a loaded host the evaluator can pick one up after the
        # chief's Saver (keep 5) deleted it, and TF's evaluator then dies restoring it.
        keep_checkpoint_max=1000,
        save_summary_steps=5,
        experimental_max_worker_delay_secs=1,
        session_creation_timeout_secs=args.timeout,
    )
    seen["config"] = {
        "task_type": config.task_type,
        "is_chief": config.is_chief,
        "master": config.master,
        "num_ps_replicas": config.num_ps_replicas,
    }
    est = lib.Estimator(
        model_fn, model_dir=args.model_dir, config=config, warm_start_from=args.pretrained
    )
    marker_dir = args.marker_dir or os.path.dirname(os.path.abspath(args.model_dir))
    hooks = [Record(seen, marker_dir)]
    if args.early_stop:  # first, so that Record sees the variable it creates
        worker_marker = os.path.join(marker_dir, args.worker_marker)
        stop = lib.experimental.make_early_stopping_hook(
            est, lambda: os.path.exists(worker_marker), run_every_secs=None, run_every_steps=1
        )
        hooks.insert(0, stop)
    train = lib.TrainSpec(input_fn, max_steps=args.max_steps, hooks=hooks)
    evaluate = lib.EvalSpec(
        lambda: tf.data.Dataset.from_tensor_slices(({"x": X, "id": IDS}, Y)).batch(4),
        steps=None,
        exporters=[lib.FinalExporter("final", serving_input_fn)],
        start_delay_secs=0,
        throttle_secs=1,
    )
    try:
        result = lib.train_and_evaluate(est, train, evaluate)
    except Exception as err:
        seen["error"] = {"type": type(err).__name__, "message": str(err)}
        _write(seen)
        raise
    seen["returned"] = None if result is None else repr(result)
    seen["done"] = True
    _write(seen)


if __name__ == "__main__":
    main()
