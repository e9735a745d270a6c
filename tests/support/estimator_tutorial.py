"""The tutorial's Estimator program, run with tf1compat_init.estimator.

A 784-256-10 MLP ``model_fn`` trained with ``LoggingTensorHook``,
``CheckpointSaverHook``, ``StopAtStepHook`` and a warm-start hook
(``tf1compat_init.v1.CheckpointInitHook``) from a pretrained checkpoint, then resumed,
evaluated and used for prediction. Two ways to write the model:

- ``layers``: the tutorial's ``tf.compat.v1.layers.dense``. On TF >= 2.16 it needs
  tf_keras: run this file with ``TF_USE_LEGACY_KERAS=1`` set before TF is imported.
- ``variables``: the same layers from ``tf.compat.v1.get_variable``, with the same
  variable names (``dense/kernel``, ``dense_1/bias``, ...); works under Keras 3.

Run as ``python tests/support/estimator_tutorial.py {layers|variables} WORK_DIR``; prints a JSON
summary as its last line. ``run(model_name, work_dir)`` does the same in-process.
"""

from __future__ import annotations

import json
import logging
import os
import sys

import numpy as np
import tensorflow as tf

from tf1compat_init import v1
from tf1compat_init.estimator import Estimator, EstimatorSpec, ModeKeys, RunConfig

N_IN, N_HIDDEN, N_OUT = 784, 256, 10


def _dataset(seed: int = 0, n: int = 96):
    rng = np.random.RandomState(seed)
    x = rng.rand(n, N_IN).astype("float32")
    # learnable labels: the argmax of a fixed random projection
    y = np.argmax(x @ np.random.RandomState(1).randn(N_IN, N_OUT), axis=1).astype("int32")
    return x, y


X, Y = _dataset()


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).shuffle(96, seed=2).repeat().batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32)


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": X[:4]}).batch(4)


def _legacy_dense(x, units, name, activation=None):
    return tf.compat.v1.layers.dense(x, units, activation=activation, name=name)


def _variables_dense(x, units, name, activation=None):
    """``tf.compat.v1.layers.dense`` rebuilt from get_variable: same names, Keras-3-safe."""
    with tf.compat.v1.variable_scope(name):
        kernel = tf.compat.v1.get_variable(
            "kernel", [x.shape[-1], units], initializer=tf.compat.v1.glorot_uniform_initializer()
        )
        bias = tf.compat.v1.get_variable(
            "bias", [units], initializer=tf.compat.v1.zeros_initializer()
        )
    y = tf.nn.bias_add(tf.matmul(x, kernel), bias)
    return activation(y) if activation else y


def _keras_metric_works_in_graphs() -> bool:
    # tf_keras (and Keras 2 on TF 2.15) record graph update ops; Keras 3 does not.
    with tf.Graph().as_default():
        m = tf.keras.metrics.Mean()
        m.update_state(tf.zeros([1]))
        return bool(getattr(m, "updates", None))


def make_model_fn(dense):
    keras_metric = _keras_metric_works_in_graphs()

    def model_fn(features, labels, mode, params):
        h = dense(features["x"], N_HIDDEN, "dense", tf.nn.relu)
        logits = dense(h, N_OUT, "dense_1")
        classes = tf.argmax(logits, axis=1)
        probabilities = tf.nn.softmax(logits, name="softmax_tensor")
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(
                mode, predictions={"classes": classes, "probabilities": probabilities}
            )
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels=labels, predictions=classes)}
        if keras_metric and mode == ModeKeys.EVAL:
            m = tf.keras.metrics.SparseCategoricalAccuracy()
            m.update_state(labels, probabilities)
            metrics["keras_accuracy"] = m
        return EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)

    return model_fn


MODELS = {"layers": _legacy_dense, "variables": _variables_dense}


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def run(model_name: str, work_dir: str) -> dict:
    """Pretrain, warm-start a second model with the four hooks, resume it; returns facts."""
    capture = _Capture()
    tf_logger = logging.getLogger("tensorflow")
    tf_logger.addHandler(capture)
    old_level = tf_logger.level
    tf_logger.setLevel(logging.INFO)
    try:
        return _run(make_model_fn(MODELS[model_name]), work_dir, capture)
    finally:
        tf_logger.removeHandler(capture)
        tf_logger.setLevel(old_level)


def _run(model_fn, work_dir: str, capture: _Capture) -> dict:
    config = RunConfig(tf_random_seed=5, log_step_count_steps=10)
    params = {"learning_rate": 0.01}
    pretrained_dir = os.path.join(work_dir, "pretrained")
    Estimator(model_fn, pretrained_dir, config, params).train(train_input_fn, steps=15)
    pretrained = tf.train.latest_checkpoint(pretrained_dir)

    model_dir = os.path.join(work_dir, "model")
    est = Estimator(model_fn, model_dir, config, params)

    def hooks(last_step):
        warm = v1.CheckpointInitHook(pretrained, {"dense/": "dense/", "dense_1/": "dense_1/"})
        return warm, [
            tf.compat.v1.train.LoggingTensorHook(
                {"probabilities": "softmax_tensor"}, every_n_iter=10
            ),
            tf.compat.v1.train.CheckpointSaverHook(model_dir, save_steps=10),
            tf.compat.v1.train.StopAtStepHook(last_step=last_step),
            warm,
        ]

    warm, first_hooks = hooks(20)
    est.train(train_input_fn, hooks=first_hooks)
    first_loaded = sorted(warm.report.loaded) if warm.report is not None else None
    ckpt0 = os.path.join(model_dir, "model.ckpt-0")
    warm_started = {
        n: bool(
            np.array_equal(tf.train.load_variable(ckpt0, n), tf.train.load_variable(pretrained, n))
        )
        for n in ("dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias")
    }
    ckpt20 = os.path.join(model_dir, "model.ckpt-20")
    resume_from = tf.train.load_variable(ckpt20, "dense/bias")
    _, second_hooks = hooks(30)
    est.train(train_input_fn, hooks=second_hooks)
    state = tf.train.get_checkpoint_state(model_dir)
    metrics = est.evaluate(eval_input_fn)
    predictions = list(est.predict(predict_input_fn))
    return {
        "first_loaded": first_loaded,
        "warm_started": warm_started,
        "global_step_pretrained": int(tf.train.load_variable(pretrained, "global_step")),
        "checkpoints": [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths],
        # The resumed run re-saves ckpt-20 right after restoring it: had the warm start
        # run again, it would now hold the pretrained values.
        "resumed_not_rewarmed": bool(
            np.array_equal(resume_from, tf.train.load_variable(ckpt20, "dense/bias"))
        ),
        "metrics": {k: float(v) for k, v in metrics.items()},
        "prediction_keys": sorted(predictions[0]),
        "probabilities_sum": float(np.sum(predictions[0]["probabilities"])),
        "n_predictions": len(predictions),
        "logged_probabilities": sum("probabilities = " in line for line in capture.lines),
        "legacy_keras": os.environ.get("TF_USE_LEGACY_KERAS") == "1",
        "tf_version": tf.__version__,
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2])))
