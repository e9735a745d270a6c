"""Training speed of the canned DNN estimators: TF 2.15's ``tf.estimator`` against ours.

Run it once with each Python, on the same machine, and compare the steps/sec::

    .venvs/tf215/bin/python benchmarks/canned_speed.py --lib real --out results/canned_real.json
    .venvs/tf215/bin/python benchmarks/canned_speed.py --lib ours   # ours on TF 2.15
    .venvs/tf221/bin/python benchmarks/canned_speed.py --lib ours --out results/canned_ours.json

Each model trains on the same synthetic data (a numeric feature of 16 floats and a
categorical one of 1,000 values embedded in 16 dims; the combined model adds both as
wide columns) for ``--warmup`` steps, then ``--steps`` timed steps in the same
``train`` call (a hook times from the first timed step to the last, so graph building,
session start and checkpoint writes are left out). The median over ``--repeats`` runs
is reported. Steps/sec is what a user sees; it includes the input pipeline. On a busy
machine wall time says little; steps per CPU second of the process (all its threads)
does better.
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

N, VOCAB, DIM, BATCH = 8192, 1000, 16, 256


def library(name: str):
    if name == "real":
        return tf.estimator
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from tf1compat_init import estimator

    return estimator


def input_fn():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(N, DIM)).astype("float32")
    c = rng.randint(0, VOCAB, size=(N, 1)).astype("int64")
    y = ((x[:, 0] + (c[:, 0] % 7 == 0)) > 0.5).astype("int64").reshape(-1, 1)
    ds = tf.data.Dataset.from_tensor_slices(({"x": x, "c": c}, y))
    return ds.repeat().batch(BATCH).prefetch(2)


def columns():
    fc = tf.feature_column
    cat = fc.categorical_column_with_identity("c", VOCAB)
    x = fc.numeric_column("x", shape=(DIM,))
    return [x, fc.embedding_column(cat, DIM)], [cat, fc.bucketized_column(x, [-1.0, 0.0, 1.0])]


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


def make(lib, model: str, model_dir: str):
    deep, wide = columns()
    config = lib.RunConfig(tf_random_seed=1, save_summary_steps=10**9, log_step_count_steps=None)
    if model == "dnn":
        return lib.DNNClassifier([128, 64], deep, model_dir=model_dir, config=config)
    return lib.DNNLinearCombinedClassifier(
        model_dir=model_dir,
        linear_feature_columns=wide,
        dnn_feature_columns=deep,
        dnn_hidden_units=[128, 64],
        config=config,
    )


def measure(lib, model: str, warmup: int, steps: int) -> tuple[float, float]:
    """``(steps per wall second, steps per CPU second of this process)``."""
    timer = Timer(warmup)
    est = make(lib, model, tempfile.mkdtemp())
    est.train(input_fn, steps=warmup + steps, hooks=[timer])
    wall, cpu = (b - a for a, b in zip(timer.first, timer.last, strict=True))
    return steps / wall, steps / cpu


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", choices=["real", "ours"], required=True)
    parser.add_argument("--models", default="dnn,dnn_linear")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="a JSON file to write the result to")
    args = parser.parse_args(argv)
    lib = library(args.lib)
    result = {
        "lib": args.lib,
        "tf_version": tf.__version__,
        "batch": BATCH,
        "warmup": args.warmup,
        "steps": args.steps,
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg()[0],
        "models": {},
    }
    for model in args.models.split(","):
        runs = [measure(lib, model, args.warmup, args.steps) for _ in range(args.repeats)]
        result["models"][model] = {
            "steps_per_sec": statistics.median(r[0] for r in runs),
            "steps_per_cpu_sec": statistics.median(r[1] for r in runs),
            "runs": runs,
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
