"""Training steps/sec: ``TPUEstimator(use_tpu=False)`` against ``Estimator``, same model_fn.

Issue 35's number: TPUEstimator on CPU/GPU trains within 5% of Estimator. Run it with
each Python; ``--lib`` picks whose classes (TF 2.15's real ones, or ours)::

    .venvs/tf221/bin/python benchmarks/tpu_estimator_speed.py --lib ours \
        --out benchmarks/results/tpu_estimator_speed_tf221_ours.json
    .venvs/tf215/bin/python benchmarks/tpu_estimator_speed.py --lib real \
        --out benchmarks/results/tpu_estimator_speed_tf215_real.json
    .venvs/tf215/bin/python benchmarks/tpu_estimator_speed.py --lib ours   # ours on TF 2.15

One ``model_fn`` (an MLP, 64 -> 512 -> 512 -> 1, built with ``tf.compat.v1.get_variable``,
Adam, batch 256) returns a ``TPUEstimatorSpec``. ``TPUEstimator`` takes it as it is;
``Estimator`` gets ``spec.as_estimator_spec()`` and ``params={"batch_size": 256}``. Both
keep their default step logging (``log_step_count_steps=100``, ``save_summary_steps=100``,
``iterations_per_loop=2``: TPUEstimator's examples-per-second hook logs every 50 steps,
Estimator's step counter and loss logging every 100). A hook times from the end of step
``--warmup`` to the end of the last step of one ``train`` call, so graph building, session
start and the final checkpoint are left out. The two estimators alternate, ``--repeats``
runs each; the medians are reported, as steps per wall second and per CPU second of the
process (all its threads: steadier on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

N, DIM, HIDDEN, BATCH = 4096, 64, 512, 256


def library(name: str):
    """``(Estimator, tpu namespace)`` of tf.compat.v1.estimator (real) or ours."""
    if name == "real":
        return tf.compat.v1.estimator.Estimator, tf.compat.v1.estimator.tpu
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from tf1compat_init.estimator import v1

    return v1.Estimator, v1.tpu


def input_fn(params):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(N, DIM)).astype("float32")
    y = (x[:, :1] * 2.0 - x[:, 1:2]).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    return ds.repeat().batch(params["batch_size"], drop_remainder=True).prefetch(2)


def make_model_fn(tpu):
    def model_fn(features, labels, mode, params):
        h = features["x"]
        for i, (n_in, n_out) in enumerate([(DIM, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, 1)]):
            w = tf.compat.v1.get_variable(f"dense_{i}/kernel", [n_in, n_out])
            b = tf.compat.v1.get_variable(
                f"dense_{i}/bias", [n_out], initializer=tf.compat.v1.zeros_initializer()
            )
            h = tf.matmul(h, w) + b
            if i < 2:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.square(h - labels))
        train_op = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(
            loss, tf.compat.v1.train.get_global_step()
        )
        return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    return model_fn


class Timer(tf.compat.v1.train.SessionRunHook):
    """Wall and CPU time from the end of step ``warmup`` to the end of the last step."""

    def __init__(self, warmup: int) -> None:
        self.warmup, self.calls = warmup, 0
        self.first = self.last = (0.0, 0.0)

    def after_run(self, run_context, run_values) -> None:
        self.calls += 1
        now = (time.perf_counter(), time.process_time())
        if self.calls == self.warmup:
            self.first = now
        self.last = now


def make(kind: str, estimator_cls, tpu, model_dir: str):
    model_fn = make_model_fn(tpu)
    if kind == "tpu_estimator":
        config = tpu.RunConfig(model_dir=model_dir, tf_random_seed=1)
        return tpu.TPUEstimator(model_fn, config=config, use_tpu=False, train_batch_size=BATCH)

    def estimator_model_fn(features, labels, mode, params):
        return model_fn(features, labels, mode, params).as_estimator_spec()

    return estimator_cls(estimator_model_fn, model_dir=model_dir, params={"batch_size": BATCH})


def measure(kind: str, estimator_cls, tpu, warmup: int, steps: int) -> tuple[float, float]:
    """``(steps per wall second, steps per CPU second of this process)``."""
    timer = Timer(warmup)
    est = make(kind, estimator_cls, tpu, tempfile.mkdtemp())
    est.train(input_fn, steps=warmup + steps, hooks=[timer])
    wall, cpu = (b - a for a, b in zip(timer.first, timer.last, strict=True))
    return steps / wall, steps / cpu


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", choices=["real", "ours"], required=True)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="10 + 40 steps, 1 repeat")
    parser.add_argument("--out", default=None, help="a JSON file to write the result to")
    args = parser.parse_args(argv)
    if args.quick:
        args.warmup, args.steps, args.repeats = 10, 40, 1
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    estimator_cls, tpu = library(args.lib)
    result = {
        "lib": args.lib,
        "tf_version": tf.__version__,
        "batch": BATCH,
        "warmup": args.warmup,
        "steps": args.steps,
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg()[0],
    }
    runs: dict = {"estimator": [], "tpu_estimator": []}
    for _ in range(args.repeats):
        for kind in runs:  # alternating, so drifts in machine load hit both alike
            runs[kind].append(measure(kind, estimator_cls, tpu, args.warmup, args.steps))
    for kind, rs in runs.items():
        result[kind] = {
            "steps_per_sec": statistics.median(r[0] for r in rs),
            "steps_per_cpu_sec": statistics.median(r[1] for r in rs),
            "runs": rs,
        }
    for key in ("steps_per_sec", "steps_per_cpu_sec"):
        result[f"tpu_vs_estimator_{key}"] = result["tpu_estimator"][key] / result["estimator"][key]
    result["load_average_after"] = os.getloadavg()[0]
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
