"""Estimators under ``RunConfig(train_distribute=MirroredStrategy, eval_distribute=...)``.

Run as a script, always in a fresh process: the 2 logical CPU devices a 2-replica
``MirroredStrategy`` needs on a CPU-only machine must be configured before TensorFlow
initializes its devices, which a pytest process has long done::

    python tests/support/estimator_distribute.py LIB[,LIB...] WORKDIR OUT.json   # {lib: {model: run}}
    python tests/support/estimator_distribute.py --golden     # TF 2.15 only: rewrites GOLDEN

``LIB`` is ``real`` (``tf.estimator``, TF 2.15 only) or ``ours``
(``tf1compat_init.estimator``). Each model trains 3 steps, resumes for 2 more, is evaluated
on 2 batches and predicts 4 examples, all with a 2-replica ``MirroredStrategy`` over
``/cpu:0`` and ``/cpu:1``. The sessions get ``device_count={"CPU": 2}``: a ``Session``
ignores the logical devices (it would see one CPU, soft-place both replicas there, and with
the default cross-device ops hang in the first step, in TF 2.15 and 2.21 alike).
Recorded: the reported loss and global step of every step, the checkpoint files, the
variables' names and final values, the metrics, the predictions.

Models: a ``model_fn`` with ``tf.compat.v1`` variables (a random initializer, so op-level
seeds count) and ``GradientDescentOptimizer``, whose mean loss the strategy scales by
``1/replicas``; ``DNNClassifier`` and ``LinearRegressor`` (Keras 2 optimizers, the head's
own scaling), and the two combined (wide and deep) estimators, which divide the loss by
the replica count in their own train op (the regressor whatever its head's reduction, as
TF 2.15 did); the canned ones need ``TF_USE_LEGACY_KERAS=1`` on TF >= 2.16. The ``model_fn`` also
trains 2 steps and is evaluated on 1 batch under the other strategies TF 2.15's Estimator
ran on one machine (``OTHER_STRATEGIES``), and once warm-started from a plain run's
checkpoint (``warm_start_from``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import tensorflow as tf

_CPUS = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _CPUS[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)

import numpy as np  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "estimator_distribute_tf215.json"
SEED = 7
DEVICES = ["/cpu:0", "/cpu:1"]
MODELS = (
    "model_fn",
    "dnn_classifier",
    "linear_regressor",
    "wide_deep_classifier",
    "wide_deep_regressor",
)


def library(lib: str):
    if lib == "real":
        return tf.estimator
    from tf1compat_init import estimator

    return estimator


def strategy(kind: str = "mirrored"):
    if kind == "mirrored":
        return tf.distribute.MirroredStrategy(DEVICES)
    if kind == "mirrored_v1":
        return tf.compat.v1.distribute.MirroredStrategy(
            DEVICES, cross_device_ops=tf.distribute.ReductionToOneDevice()
        )
    if kind == "central_storage":
        return tf.compat.v1.distribute.experimental.CentralStorageStrategy(DEVICES)
    if kind == "parameter_server_v1":  # no cluster: variables and compute on this machine
        return tf.compat.v1.distribute.experimental.ParameterServerStrategy()
    assert kind == "one_device"
    return tf.distribute.OneDeviceStrategy(DEVICES[1])


#: Other strategies TF 2.15's Estimator ran on one machine: the model_fn, trained briefly.
OTHER_STRATEGIES = ("mirrored_v1", "central_storage", "parameter_server_v1", "one_device")


def data() -> tuple:
    rng = np.random.RandomState(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = (x @ np.array([[0.5], [-1.0], [0.25]], np.float32) + 0.3).astype(np.float32)
    return x, y


def input_fn(classes: bool = False):
    def fn():
        x, y = data()
        labels = (y > 0.3).astype(np.int64) if classes else y
        return tf.data.Dataset.from_tensor_slices(({"x": x}, labels)).repeat().batch(4)

    return fn


def predict_input_fn():
    x, _ = data()
    return tf.data.Dataset.from_tensor_slices({"x": x[:4]}).batch(2)


#: (mode, device) of every model_fn call: one per replica, each on its own device.
CALLS: list = []


def model_fn_for(est):
    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable(
            "dense/kernel", [3, 1], initializer=tf.compat.v1.glorot_uniform_initializer()
        )
        b = tf.compat.v1.get_variable("dense/bias", [1], initializer=tf.zeros_initializer())
        pred = tf.matmul(features["x"], w) + b
        CALLS.append([mode, pred.device.split("/")[-1]])
        if mode == est.ModeKeys.PREDICT:
            return est.EstimatorSpec(mode, predictions={"pred": pred})
        loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
        step = tf.compat.v1.train.get_global_step()
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step)
        metrics = {"mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred)}
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)

    return model_fn


class LossRecorder(tf.compat.v1.train.SessionRunHook):
    """The reported (cross-replica) loss and the global step after every step."""

    def __init__(self) -> None:
        self.losses: list = []

    def begin(self) -> None:
        self._loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)[-1]
        self._step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values) -> None:
        # Read after the step: fetched beside the train op, the step could be either value.
        step = run_context.session.run(self._step)
        self.losses.append([int(step), float(run_values.results)])


def make(lib: str, name: str, model_dir: str, kind: str = "mirrored"):
    est = library(lib)
    config = est.RunConfig(
        tf_random_seed=SEED,
        train_distribute=strategy(kind),
        eval_distribute=strategy(kind),
        save_checkpoints_steps=3,
        session_config=tf.compat.v1.ConfigProto(
            # The logical devices above are for the strategy (eager); a Session counts its own.
            device_count={"CPU": len(DEVICES)},
            allow_soft_placement=True,
            intra_op_parallelism_threads=1,
            inter_op_parallelism_threads=2,
        ),
    )
    column = tf.feature_column.numeric_column("x", shape=(3,))
    if name == "model_fn":
        return est.Estimator(model_fn_for(est), model_dir, config), input_fn()
    if name == "dnn_classifier":
        model = est.DNNClassifier(
            hidden_units=[4], feature_columns=[column], model_dir=model_dir, config=config
        )
        return model, input_fn(classes=True)
    if name == "wide_deep_classifier":  # scales its loss by the classifier's own reduction
        model = est.DNNLinearCombinedClassifier(
            model_dir=model_dir,
            linear_feature_columns=[column],
            dnn_feature_columns=[column],
            dnn_hidden_units=[4],
            config=config,
        )
        return model, input_fn(classes=True)
    if name == "wide_deep_regressor":  # scales by the default reduction, whatever its head's
        model = est.DNNLinearCombinedRegressor(
            model_dir=model_dir,
            linear_feature_columns=[column],
            dnn_feature_columns=[column],
            dnn_hidden_units=[4],
            loss_reduction="sum",  # tf.keras.losses.Reduction.SUM
            config=config,
        )
        return model, input_fn()
    model = est.LinearRegressor(feature_columns=[column], model_dir=model_dir, config=config)
    return model, input_fn()


def _floats(value) -> list:
    return np.asarray(value, dtype=np.float64).ravel().tolist()


def run_model(lib: str, name: str, model_dir: str) -> dict:
    del CALLS[:]
    estimator, train_input = make(lib, name, model_dir)
    recorders = [LossRecorder(), LossRecorder()]
    estimator.train(train_input, steps=3, hooks=[recorders[0]])
    estimator.train(train_input, max_steps=5, hooks=[recorders[1]])
    metrics = estimator.evaluate(train_input, steps=2)
    predictions = list(estimator.predict(predict_input_fn))
    names = sorted(estimator.get_variable_names())
    return {
        "losses": [r.losses for r in recorders],
        "files": sorted(f for f in os.listdir(model_dir) if not f.startswith("events.")),
        "variables": {n: _floats(estimator.get_variable_value(n)) for n in names},
        "metrics": {k: _floats(v) for k, v in sorted(metrics.items())},
        "predictions": [{k: _floats(v) for k, v in sorted(p.items())} for p in predictions],
        "model_fn_calls": list(CALLS),
    }


def run_strategy(lib: str, kind: str, model_dir: str) -> dict:
    del CALLS[:]
    estimator, train_input = make(lib, "model_fn", model_dir, kind)
    recorder = LossRecorder()
    estimator.train(train_input, steps=2, hooks=[recorder])
    metrics = estimator.evaluate(train_input, steps=1)
    return {
        "losses": recorder.losses,
        "metrics": {k: _floats(v) for k, v in sorted(metrics.items())},
        "model_fn_calls": list(CALLS),
    }


def run_warm_start(lib: str, workdir: str) -> dict:
    """A plain run's checkpoint warm-starts a replicated run (``warm_start_from``)."""
    est = library(lib)
    plain_dir = os.path.join(workdir, "plain")
    plain = est.Estimator(model_fn_for(est), plain_dir, est.RunConfig(tf_random_seed=SEED + 1))
    plain.train(input_fn(), steps=2)
    model_dir = os.path.join(workdir, "warm")
    config = make(lib, "model_fn", model_dir)[0].config
    warm = est.Estimator(model_fn_for(est), model_dir, config, warm_start_from=plain_dir)
    recorder = LossRecorder()
    warm.train(input_fn(), steps=2, hooks=[recorder])
    ckpt0 = os.path.join(model_dir, "model.ckpt-0")
    return {
        "losses": recorder.losses,
        "plain_kernel": _floats(tf.train.load_variable(plain_dir, "dense/kernel")),
        "ckpt0_kernel": _floats(tf.train.load_variable(ckpt0, "dense/kernel")),
    }


def run(lib: str, workdir: str) -> dict:
    out = {"tf_version": tf.__version__, "replicas": strategy().num_replicas_in_sync}
    for name in MODELS:
        out[name] = run_model(lib, name, os.path.join(workdir, lib, name))
    out["strategies"] = {
        kind: run_strategy(lib, kind, os.path.join(workdir, lib, kind)) for kind in OTHER_STRATEGIES
    }
    out["warm_start"] = run_warm_start(lib, os.path.join(workdir, lib, "warm_start"))
    return out


def main(argv: list[str]) -> int:
    if argv == ["--golden"]:
        import tempfile

        if not hasattr(tf, "estimator"):
            raise SystemExit("the golden file is made by the real tf.estimator (TF 2.15)")
        with tempfile.TemporaryDirectory() as d:
            out = run("real", d)
        GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    libs, workdir, out_path = argv
    out = {lib: run(lib, workdir) for lib in libs.split(",")}
    Path(out_path).write_text(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    raise SystemExit(main(sys.argv[1:]))
