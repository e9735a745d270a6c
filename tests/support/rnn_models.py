"""RNNClassifier / RNNEstimator scenarios (ours and tf.estimator's), and their golden file.

Keras 2's unseeded initializers draw their seeds from Python's ``random`` when first
used (``tf_random_seed`` does not reach them, in TF 2.15 either), so each scenario seeds
``random`` right before the first ``train``: the same seed gives the same initial
values in both libraries.
"""

from __future__ import annotations

import json
import os
import random

import numpy as np
import tensorflow as tf

BATCH, TIME, VOCAB = 8, 4, 5
GOLDEN = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "rnn_tf215.json"
)


def input_fn():
    """Token sequences of lengths 1..4 (sparse), a context number, binary / 3-class labels."""
    rng = np.random.RandomState(0)
    tokens = rng.randint(0, VOCAB, size=(BATCH, TIME)).astype("int64")
    lengths = [4, 3, 2, 4, 1, 4, 3, 2]
    idx = [[i, j] for i in range(BATCH) for j in range(lengths[i])]
    vals = [tokens[i, j] for i, j in idx]
    ctx = rng.randn(BATCH, 1).astype("float32")
    labels = (tokens[:, 0] > 2).astype("int64").reshape(BATCH, 1)
    labels3 = (tokens[:, 1] % 3).astype("int64").reshape(BATCH, 1)
    # per-step labels for return_sequences: [batch, time]
    step_labels = (tokens > 2).astype("int64")

    def batch(_):
        features = {
            "tok": tf.SparseTensor(idx, vals, [BATCH, TIME]),
            "ctx": tf.constant(ctx),
            "labels3": tf.constant(labels3),
        }
        return features, {"bin": tf.constant(labels), "steps": tf.constant(step_labels)}

    return tf.data.Dataset.from_tensors(0).repeat().map(batch)


def _pick(key, extra=None):
    def fn():
        def select(features, labels):
            if extra:
                return features, features[extra]
            return features, labels[key]

        return input_fn().map(select)

    return fn


class LossRecorder(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.losses = []

    def begin(self):
        self._loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)[-1]

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self.losses.append(float(run_values.results))


def _columns():
    tok = tf.feature_column.sequence_categorical_column_with_identity("tok", VOCAB)
    return [tf.feature_column.embedding_column(tok, 3)], [tf.feature_column.numeric_column("ctx")]


#: name -> (constructor kwargs, input_fn)
CASES = {
    "lstm": (dict(units=[4], cell_type="lstm"), _pick("bin")),
    "simple_rnn_default": (dict(units=[3]), _pick("bin")),
    "gru_int_units": (dict(units=3, cell_type="gru"), _pick("bin")),
    "stacked_gru_context_3_classes": (
        dict(units=[3, 2], cell_type="gru", n_classes=3, context_feature_columns=True),
        _pick(None, extra="labels3"),
    ),
    "return_sequences": (dict(units=[3], return_sequences=True), _pick("steps")),
}


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode()
    return value


def run_case(lib, root, name):
    kwargs, fn = CASES[name]
    kwargs = dict(kwargs)
    sequence_columns, context_columns = _columns()
    if kwargs.pop("context_feature_columns", False):
        kwargs["context_feature_columns"] = context_columns
    est = lib.experimental.RNNClassifier(
        sequence_feature_columns=sequence_columns,
        model_dir=os.path.join(str(root), name),
        config=lib.RunConfig(tf_random_seed=3, save_summary_steps=100),
        **kwargs,
    )
    recorders = [LossRecorder(), LossRecorder()]
    random.seed(11)
    est.train(fn, steps=3, hooks=[recorders[0]])
    est.train(fn, steps=2, hooks=[recorders[1]])  # resumes from the checkpoint
    prediction = next(iter(est.predict(lambda: fn().map(lambda f, _: f))))
    return _jsonable(
        dict(
            losses=[r.losses for r in recorders],
            names=sorted(est.get_variable_names()),
            metrics=est.evaluate(fn, steps=1),
            prediction={k: v for k, v in prediction.items() if k != "all_classes"},
        )
    )


def error_of(fn):
    try:
        fn()
    except Exception as e:  # compared by type and text (ours adds advice after a newline)
        return [type(e).__name__, str(e).split("\ntf1compat_init:")[0]]
    return None


def error_cases(lib, root):
    sequence_columns, _ = _columns()
    model_dir = os.path.join(str(root), "errors")

    def classifier(**kwargs):
        return lib.experimental.RNNClassifier(
            sequence_feature_columns=sequence_columns, model_dir=model_dir, **kwargs
        )

    cases = {
        "static_head_with_sequences": lambda: lib.experimental.RNNEstimator(
            lib.BinaryClassHead(), sequence_columns, units=[2], return_sequences=True
        ),
        "cell_fn_and_units": lambda: classifier(units=[2], rnn_cell_fn=lambda: None),
        "cell_fn_and_cell_type": lambda: classifier(cell_type="lstm", rnn_cell_fn=lambda: None),
        "unknown_cell_type": lambda: classifier(units=[2], cell_type="bogus").train(
            _pick("bin"), steps=1
        ),
        "int_units_default_cell": lambda: classifier(units=2).train(_pick("bin"), steps=1),
    }
    out = {name: error_of(fn) for name, fn in cases.items()}
    out["files_left"] = sorted(os.listdir(model_dir)) if os.path.exists(model_dir) else None
    return out


def collect(lib, root):
    out = {name: run_case(lib, root, name) for name in CASES}
    out["errors"] = error_cases(lib, root)
    return out


def main(argv):
    """``--golden``: write GOLDEN from the real tf.estimator (TF 2.15 only)."""
    import tempfile

    if argv != ["--golden"]:
        raise SystemExit("usage: python tests/support/rnn_models.py --golden")
    if not hasattr(tf, "estimator"):
        raise SystemExit("--golden needs TensorFlow 2.15 with tensorflow-estimator")
    with tempfile.TemporaryDirectory() as root:
        result = collect(tf.estimator, root)
    with open(GOLDEN, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
