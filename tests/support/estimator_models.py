"""Small model_fns, data and probes shared by the estimator tests (ours and tf.estimator).

Every model here is built from ``tf.compat.v1.get_variable`` with graph-seeded
initializers, so the same graph seed gives the same initial values in any process and
under Keras 3 (``tf.compat.v1.layers`` needs tf_keras on TF >= 2.16 and, on TF 2.15,
seeds its initializers per process).
"""

from __future__ import annotations

import glob
import os

import numpy as np
import tensorflow as tf

N_FEATURES = 4
TRUE_W = np.array([[1.0], [-2.0], [3.0], [0.5]], "float32")


def data(n=48, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, N_FEATURES).astype("float32")
    return x, (x @ TRUE_W + 0.1).astype("float32")


X, Y = data()


def train_input_fn():
    ds = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return ds.shuffle(len(X), seed=3).repeat().batch(8)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(16)


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": X[:5]}).batch(2)


def dense(x, units, name, activation=None):
    """A dense layer from get_variable (Keras-3-safe); variables ``<name>/kernel|bias``."""
    with tf.compat.v1.variable_scope(name):
        w = tf.compat.v1.get_variable(
            "kernel", [x.shape[-1], units], initializer=tf.compat.v1.glorot_uniform_initializer()
        )
        b = tf.compat.v1.get_variable("bias", [units], initializer=tf.compat.v1.zeros_initializer())
    y = tf.matmul(x, w) + b
    return activation(y) if activation else y


def make_model_fn(lib, *, hooks_log=None, optimizer="adam"):
    """A 4-8-1 regression MLP for ``lib`` (tf.estimator or tf1compat_init.estimator).

    ``hooks_log``: a list; spec hooks append ``(kind, event)`` to it.
    """

    def model_fn(features, labels, mode, params):
        h = dense(features["x"], 8, "hidden", tf.nn.relu)
        pred = dense(h, 1, "out")
        if mode == lib.ModeKeys.PREDICT:
            return lib.EstimatorSpec(
                mode,
                predictions={"y": pred, "h0": h[:, 0]},
                prediction_hooks=[EventHook("predict", hooks_log)]
                if hooks_log is not None
                else None,
            )
        loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
        if optimizer == "adam":
            opt = tf.compat.v1.train.AdamOptimizer(params["lr"])
        else:
            opt = tf.compat.v1.train.GradientDescentOptimizer(params["lr"])
        # The step is incremented after the Estimator's cached global-step read, as
        # TensorFlow's own _increment_global_step orders it; minimize() alone leaves the two
        # unordered, and SummarySaverHook's stale read then tags a summary a step early now
        # and then. The read exists already (both Estimators create it first): no new op.
        with tf.control_dependencies(tf.compat.v1.get_collection("global_step_read_op_cache")):
            train_op = opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        spec_hooks = {}
        if hooks_log is not None:
            spec_hooks = dict(
                training_hooks=[EventHook("train", hooks_log)],
                training_chief_hooks=[EventHook("chief", hooks_log)],
                evaluation_hooks=[EventHook("eval", hooks_log)],
            )
        return lib.EstimatorSpec(
            mode,
            predictions={"y": pred},
            loss=loss,
            train_op=train_op,
            eval_metric_ops={
                "mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred),
                "pred_mean": tf.compat.v1.metrics.mean(pred),
            },
            **spec_hooks,
        )

    return model_fn


class EventHook(tf.compat.v1.train.SessionRunHook):
    """Appends ``(kind, event)`` for begin / after_create_session / end, and counts runs."""

    def __init__(self, kind, log):
        self.kind, self.log, self.runs = kind, log, 0

    def begin(self):
        self.log.append((self.kind, "begin"))

    def after_create_session(self, session, coord):
        self.log.append((self.kind, "session"))

    def after_run(self, run_context, run_values):
        self.runs += 1

    def end(self, session):
        self.log.append((self.kind, f"end:{self.runs}"))


class LossRecorder(tf.compat.v1.train.SessionRunHook):
    """Records ``(global_step_before_the_step, loss)`` for every training step."""

    def __init__(self):
        self.losses = []

    def begin(self):
        self._loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)[-1]
        self._step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_create_session(self, session, coord):
        self._next = int(session.run(self._step))

    def after_run(self, run_context, run_values):
        self.losses.append((self._next, float(run_values.results)))
        self._next += 1


def step_model_fn(lib):
    """A ``model_fn`` whose train op only counts the global step (loss 0)."""

    def model_fn(features, labels, mode):
        step = tf.compat.v1.train.get_global_step()
        return lib.EstimatorSpec(
            mode, loss=tf.constant(0.0), train_op=tf.compat.v1.assign_add(step, 1)
        )

    return model_fn


def checkpoint_steps(model_dir):
    """The global steps of the checkpoints the state file lists, oldest first."""
    state = tf.train.get_checkpoint_state(model_dir)
    if state is None:
        return []
    return [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths]


def scalar_events(log_dir):
    """``{tag: [(step, value), ...]}`` from every events file directly in ``log_dir``."""
    out = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    out.setdefault(value.tag, []).append((event.step, value.simple_value))
                elif value.HasField("tensor") and value.tensor.dtype == tf.float32.as_datatype_enum:
                    v = float(tf.make_ndarray(value.tensor))
                    out.setdefault(value.tag, []).append((event.step, v))
    return out


def make_pretrained(directory):
    """A TF1 checkpoint of the model's variables with known values (and global_step 100).

    Also holds ``old_hidden/kernel`` (different values) for rename tests. Returns
    ``(prefix, {name: value})``.
    """
    rng = np.random.RandomState(42)
    values = {
        "hidden/kernel": rng.randn(N_FEATURES, 8).astype("float32"),
        "hidden/bias": rng.randn(8).astype("float32"),
        "out/kernel": rng.randn(8, 1).astype("float32"),
        "out/bias": rng.randn(1).astype("float32"),
        "old_hidden/kernel": rng.randn(N_FEATURES, 8).astype("float32"),
    }
    with tf.Graph().as_default():
        for name, value in values.items():
            tf.compat.v1.get_variable(name, initializer=value)
        step = tf.compat.v1.train.create_global_step()
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            s.run(step.assign(100))
            saver = tf.compat.v1.train.Saver()
            prefix = saver.save(s, os.path.join(str(directory), "model.ckpt"), global_step=100)
    return prefix, values
