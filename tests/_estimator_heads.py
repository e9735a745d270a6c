"""Heads under an Estimator: one tiny linear model_fn, many head configurations.

Shared by tests/test_estimator_heads_differential.py (the real ``tf.estimator`` heads
against ours, in one TF 2.15 process) and tests/test_estimator_heads.py (ours on TF 2.21
against the golden file). As a script::

    python tests/_estimator_heads.py --golden    # TF 2.15 only: rewrites GOLDEN

The model is ``logits = x @ kernel + bias`` from ``tf.compat.v1.get_variable`` with
constant initial values, so both libraries and both TensorFlow versions start from the
same numbers without depending on random-op seeds. Training uses a Keras 2 legacy
optimizer through ``optimizer=`` (its ``iterations`` is the global step, as the canned
estimators set it) or a ``train_op_fn``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

GOLDEN = Path(__file__).resolve().parent / "golden" / "estimator_heads_tf215.json"
N, N_FEATURES, BATCH, STEPS = 12, 3, 4, 3

_rng = np.random.RandomState(11)
X = _rng.randn(N, N_FEATURES).astype("float32")
W = _rng.uniform(0.5, 2.0, size=(N, 1)).astype("float32")
_SCORE = X @ np.array([1.0, -2.0, 0.5], "float32")
LABELS = {
    "binary": (_SCORE > 0).astype("int64").reshape(N, 1),
    "binary_vocab": np.where(_SCORE > 0, "pos", "neg").reshape(N, 1),
    "multi": np.digitize(_SCORE, [-0.8, 0.8]).astype("int64"),
    "multi_vocab": np.array(["a", "b", "c"])[np.digitize(_SCORE, [-0.8, 0.8])].reshape(N, 1),
    "regression": np.stack([_SCORE, -_SCORE], 1).astype("float32"),
    "poisson": np.round(np.exp(0.3 * _SCORE)).astype("float32").reshape(N, 1),
    "logistic": (1.0 / (1.0 + np.exp(-_SCORE))).astype("float32").reshape(N, 1),
}

# name: (head class, kwargs, labels, training, regularized, export)
CONFIGS = {
    "binary": ("BinaryClassHead", {}, "binary", "adagrad", False, True),
    "binary_full": (
        "BinaryClassHead",
        {"weight_column": "w", "thresholds": [0.3, 0.7], "loss_reduction": "sum"},
        "binary",
        "adam",
        True,
        False,
    ),
    "binary_vocab": (
        "BinaryClassHead",
        {"label_vocabulary": ["neg", "pos"], "name": "bin"},
        "binary_vocab",
        "train_op_fn",
        False,
        True,
    ),
    "multi": (
        "MultiClassHead",
        {"n_classes": 3, "weight_column": "w"},
        "multi",
        "adagrad",
        True,
        True,
    ),
    "multi_vocab": (
        "MultiClassHead",
        {"n_classes": 3, "label_vocabulary": ["a", "b", "c"]},
        "multi_vocab",
        "sgd",
        False,
        False,
    ),
    "regression": (
        "RegressionHead",
        {"label_dimension": 2, "weight_column": "w"},
        "regression",
        "adagrad",
        True,
        True,
    ),
    "poisson": ("PoissonRegressionHead", {}, "poisson", "sgd", False, False),
    "logistic": (
        "LogisticRegressionHead",
        {"loss_reduction": "sum"},
        "logistic",
        "sgd",
        False,
        False,
    ),
}


def keras():
    from tf1compat_init.estimator._keras2 import keras2

    return keras2()


def make_head(lib, name):
    cls, kwargs, _, _, _, _ = CONFIGS[name]
    return getattr(lib, cls)(**kwargs)


def initial_kernel(dim):
    return (np.arange(N_FEATURES * dim, dtype="float32").reshape(N_FEATURES, dim) - 2.0) / 7.0


def make_model_fn(lib, name):
    _, _, _, training, regularized, _ = CONFIGS[name]

    def model_fn(features, labels, mode):
        head = make_head(lib, name)
        dim = head.logits_dimension
        with tf.compat.v1.variable_scope("linear"):
            kernel = tf.compat.v1.get_variable(
                "kernel", initializer=tf.constant(initial_kernel(dim))
            )
            bias = tf.compat.v1.get_variable("bias", initializer=tf.fill([dim], 0.1))
        logits = tf.matmul(features["x"], kernel) + bias
        kw = {}
        if training in ("adagrad", "adam"):
            opt = getattr(keras().optimizers.legacy, training.capitalize())(learning_rate=0.1)
            opt.iterations = tf.compat.v1.train.get_or_create_global_step()
            kw = {"optimizer": opt, "trainable_variables": [kernel, bias]}
        else:

            def train_op_fn(loss):
                opt = tf.compat.v1.train.GradientDescentOptimizer(0.05)
                return opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())

            kw = {"train_op_fn": train_op_fn}
        if regularized:
            kw["regularization_losses"] = [0.01 * tf.nn.l2_loss(kernel)]
        return head.create_estimator_spec(
            features=features, mode=mode, logits=logits, labels=labels, **kw
        )

    return model_fn


def input_fn(name, shuffle=False, labels=True):
    label_key = CONFIGS[name][2]

    def fn():
        features = {"x": X, "w": W}
        data = (features, LABELS[label_key]) if labels else features
        ds = tf.data.Dataset.from_tensor_slices(data)
        if shuffle:
            ds = ds.shuffle(N, seed=3).repeat()
        return ds.batch(BATCH)

    return fn


class LossRecorder(tf.compat.v1.train.SessionRunHook):
    def begin(self):
        self.losses = []
        self._loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)[-1]

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self.losses.append(float(run_values.results))


def examples():
    out = []
    for x, w in zip(X, W, strict=True):
        feature = {
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=list(x))),
            "w": tf.train.Feature(float_list=tf.train.FloatList(value=list(w))),
        }
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)))
    return np.array([e.SerializeToString() for e in out[:4]])


def signatures(export_dir):
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString(Path(export_dir, "saved_model.pb").read_bytes())
    (meta,) = proto.meta_graphs

    def infos(m):
        return {k: [v.dtype, [d.size for d in v.tensor_shape.dim]] for k, v in m.items()}

    return {
        k: [s.method_name, infos(s.inputs), infos(s.outputs)]
        for k, s in sorted(meta.signature_def.items())
    }


def jsonable(value):
    value = np.asarray(value)
    if value.dtype.kind in "SO":
        return [v.decode() if isinstance(v, bytes) else v for v in value.ravel().tolist()]
    return value.tolist()


def run(lib, name, workdir):
    """Train, evaluate, predict (and export and serve); the JSON-able outcome."""
    model_dir = os.path.join(workdir, name)
    config = lib.RunConfig(tf_random_seed=5, save_summary_steps=1)
    est = lib.Estimator(make_model_fn(lib, name), model_dir, config)
    recorder = LossRecorder()
    est.train(input_fn(name, shuffle=True), steps=STEPS, hooks=[recorder])
    metrics = est.evaluate(input_fn(name))
    predictions = list(est.predict(input_fn(name, labels=False)))
    ckpt = tf.train.latest_checkpoint(model_dir)
    out = {
        "losses": recorder.losses,
        "metrics": {k: float(v) for k, v in sorted(metrics.items())},
        "predictions": [{k: jsonable(v) for k, v in sorted(p.items())} for p in predictions[:3]],
        "prediction_dtypes": {k: str(v.dtype) for k, v in sorted(predictions[0].items())},
        "variables": {
            n: jsonable(tf.train.load_variable(ckpt, n)) for n in est.get_variable_names()
        },
    }
    if CONFIGS[name][5]:
        spec = {
            "x": tf.io.FixedLenFeature([N_FEATURES], tf.float32),
            "w": tf.io.FixedLenFeature([1], tf.float32),
        }
        receiver = lib.export.build_parsing_serving_input_receiver_fn(spec)
        export_dir = os.fsdecode(
            est.export_saved_model(os.path.join(workdir, name + "_export"), receiver)
        )
        out["signatures"] = signatures(export_dir)
        loaded = tf.saved_model.load(export_dir)
        served = {}
        for key, fn in sorted(loaded.signatures.items()):
            (arg,) = fn.structured_input_signature[1]
            result = fn(**{arg: tf.constant(examples())})
            served[key] = {k: jsonable(v.numpy()) for k, v in sorted(result.items())}
        out["served"] = served
    return out


def run_all(lib, workdir, names=None):
    return {name: run(lib, name, workdir) for name in names or CONFIGS}


def main(argv):
    if argv == ["--golden"]:
        import tempfile

        if not hasattr(tf, "estimator"):
            raise SystemExit("the golden file is made by the real tf.estimator (TF 2.15)")
        with tempfile.TemporaryDirectory() as d:
            out = {"tf_version": tf.__version__, "runs": run_all(tf.estimator, d)}
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    raise SystemExit(main(sys.argv[1:]))
