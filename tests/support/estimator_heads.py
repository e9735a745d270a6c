"""Heads under an Estimator: one tiny linear model_fn, many head configurations.

Shared by tests/estimator/head/test_estimator_heads_differential.py (the real ``tf.estimator`` heads
against ours, in one TF 2.15 process) and tests/estimator/head/test_estimator_heads.py (ours on TF 2.21
against the golden file). As a script::

    python tests/support/estimator_heads.py --golden    # TF 2.15 only: rewrites GOLDEN

The model is ``logits = x @ kernel + bias`` from ``tf.compat.v1.get_variable`` with
constant initial values, so both libraries and both TensorFlow versions start from the
same numbers without depending on random-op seeds. Training uses a Keras 2 legacy
optimizer through ``optimizer=`` (its ``iterations`` is the global step, as the canned
estimators set it) or a ``train_op_fn``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

if not __package__:  # run as a script: `support` is a package of tests/
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import tensorflow as tf

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "estimator_heads_tf215.json"
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
MULTI_HOT = (np.stack([_SCORE > 0, _SCORE > 1, _SCORE < -0.5], 1)).astype("int64")
LABELS["multi_head"] = {"tags": MULTI_HOT, "score": LABELS["regression"]}

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
    "multi_head": ("_multi_head", {"weight_column": "w"}, "multi_head", "adagrad", True, True),
}


def keras():
    from tf1compat_init.estimator._keras2 import keras2

    return keras2()


def _multi_head(lib, weights=(1.0, 0.5), **kwargs):
    return lib.MultiHead(
        [
            lib.MultiLabelHead(3, thresholds=[0.4], name="tags", **kwargs),
            lib.RegressionHead(label_dimension=2, name="score", **kwargs),
        ],
        head_weights=list(weights) if weights else None,
    )


def make_head(lib, name):
    cls, kwargs, _, _, _, _ = CONFIGS[name]
    if cls == "_multi_head":
        return _multi_head(lib, **kwargs)
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


def key_text(key):
    """A prediction key as JSON can hold it: MultiHead's ``(head, key)`` as ``head/key``."""
    return "/".join(key) if isinstance(key, tuple) else key


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
    from support.estimator_models import scalar_events

    events = scalar_events(model_dir)
    out = {
        "summaries": {
            k: [list(e) for e in v] for k, v in sorted(events.items()) if k != "global_step/sec"
        },
        "losses": recorder.losses,
        "metrics": {k: float(v) for k, v in sorted(metrics.items())},
        "predictions": [
            {key_text(k): jsonable(v) for k, v in sorted(p.items())} for p in predictions[:3]
        ],
        "prediction_dtypes": {key_text(k): str(v.dtype) for k, v in sorted(predictions[0].items())},
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


# -- heads on their own, in a graph: loss, predictions, eval metrics, errors -----------

W2 = np.concatenate([W, 2.0 - W], axis=1)


def _sparse_ids():
    rows, cols = np.nonzero(MULTI_HOT)
    return tf.sparse.SparseTensor(np.stack([rows, cols], 1), cols, [N, 3])


def _sparse_names():
    rows, cols = np.nonzero(MULTI_HOT)
    return tf.sparse.SparseTensor(
        np.stack([rows, cols], 1), np.array(["x", "y", "z"])[cols], [N, 3]
    )


def _loss_with_features(labels, logits, features):
    return tf.math.abs(tf.cast(labels, tf.float32) - tf.sigmoid(logits)) * features["w"]


def _weight_pair():
    return tf.feature_column.numeric_column("w2", shape=(2,))


# name: (head class, kwargs, labels (array or a function making a tensor), logits dim)
GRAPH_CASES = {
    "binary_auto_thresholds": (
        "BinaryClassHead",
        {"thresholds": [0.2, 0.5], "loss_reduction": "auto"},
        LABELS["binary"][:, 0].astype("float32"),
        1,
    ),
    "binary_vocab_weighted": (
        "BinaryClassHead",
        {"weight_column": "w", "label_vocabulary": ("neg", "pos"), "name": "b"},
        LABELS["binary_vocab"],
        1,
    ),
    "binary_loss_fn": (
        "BinaryClassHead",
        {"loss_fn": _loss_with_features, "loss_reduction": "sum"},
        LABELS["binary"],
        1,
    ),
    "multi_rank1_sum": (
        "MultiClassHead",
        {"n_classes": 3, "weight_column": "w", "loss_reduction": "sum", "name": "m"},
        LABELS["multi"].astype("int32"),
        3,
    ),
    "multi_vocab": (
        "MultiClassHead",
        {"n_classes": 3, "label_vocabulary": ["a", "b", "c"]},
        LABELS["multi_vocab"],
        3,
    ),
    "regression_per_logit_weights": (
        "RegressionHead",
        {"label_dimension": 2, "weight_column": _weight_pair},
        LABELS["regression"],
        2,
    ),
    "regression_inverse_link": (
        "RegressionHead",
        {"inverse_link_fn": tf.math.exp, "loss_reduction": "sum"},
        LABELS["poisson"][:, 0],
        1,
    ),
    "poisson_partial": (
        "PoissonRegressionHead",
        {"compute_full_loss": False, "weight_column": "w"},
        LABELS["poisson"],
        1,
    ),
    "logistic": ("LogisticRegressionHead", {}, LABELS["logistic"], 1),
    "multilabel_dense": (
        "MultiLabelHead",
        {
            "n_classes": 3,
            "thresholds": [0.5],
            "classes_for_class_based_metrics": [0, 2],
            "weight_column": "w",
        },
        MULTI_HOT,
        3,
    ),
    "multilabel_sparse_ids": (
        "MultiLabelHead",
        {"n_classes": 3, "loss_reduction": "sum", "name": "ml"},
        _sparse_ids,
        3,
    ),
    "multilabel_sparse_vocab": (
        "MultiLabelHead",
        {
            "n_classes": 3,
            "label_vocabulary": ["x", "y", "z"],
            "classes_for_class_based_metrics": ["y", "z"],
        },
        _sparse_names,
        3,
    ),
    "multi_head_weighted": ("_multi_head", {"weight_column": "w"}, LABELS["multi_head"], 5),
    "multi_head_dict_logits": ("_multi_head", {"weights": None}, LABELS["multi_head"], "dict"),
    "sequential_binary": (
        "_sequential",
        {
            "static": ("BinaryClassHead", {"weight_column": "wseq", "name": "s"}),
            "sequence_length_mask": "mask",
            "feature_columns": ["wseq"],
        },
        LABELS["binary"].reshape(4, 3),
        ("seq", 1),
    ),
    "sequential_multi": (
        "_sequential",
        {"static": ("MultiClassHead", {"n_classes": 3}), "sequence_length_mask": "mask"},
        LABELS["multi"].reshape(4, 3),
        ("seq", 3),
    ),
}


def logits_for(dim):
    return X @ initial_kernel(dim) + np.float32(0.1)


MASK = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]], bool)


def features_graph():
    return {
        "x": tf.constant(X),
        "w": tf.constant(W),
        "w2": tf.constant(W2),
        "mask": tf.constant(MASK),
        "wseq": tf.constant(W.reshape(4, 3)),
    }


def _sequential(lib, static, **kwargs):
    """TF's SequentialHeadWrapper (not public in tf.estimator) or ours."""
    if lib is getattr(tf, "estimator", None):
        from tensorflow_estimator.python.estimator.head.sequential_head import (
            SequentialHeadWrapper,
        )
    else:
        from tf1compat_init.estimator.head._sequential import SequentialHeadWrapper
    cls, head_kwargs = static
    return SequentialHeadWrapper(getattr(lib, cls)(**head_kwargs), **kwargs)


FACTORIES = {"_multi_head": _multi_head, "_sequential": _sequential}


def _kwargs(kwargs):
    return {k: (v() if k == "weight_column" and callable(v) else v) for k, v in kwargs.items()}


def metric_values(sess, eval_metric_ops):
    """Runs every update once, then reads every value (metric objects or pairs)."""
    pairs = {}
    for key, m in eval_metric_ops.items():
        if isinstance(m, tuple):
            pairs[key] = m
        else:
            pairs[key] = (m.result(), tf.group(*m.updates))
    variables = [
        v for m in eval_metric_ops.values() if not isinstance(m, tuple) for v in m.variables
    ]
    sess.run(tf.compat.v1.variables_initializer(variables))
    sess.run(tf.compat.v1.local_variables_initializer())
    sess.run([u for _, u in pairs.values()])
    return {k: float(sess.run(v)) for k, (v, _) in sorted(pairs.items())}


def _labels(labels):
    if isinstance(labels, dict):
        return {k: _labels(v) for k, v in labels.items()}
    return labels() if callable(labels) else tf.constant(labels)


def _logits(dim):
    if dim == "dict":  # MultiHead's logits given per head
        return {"tags": tf.constant(logits_for(3)), "score": tf.constant(logits_for(2))}
    if isinstance(dim, tuple):  # sequences: [batch, time, dim]
        return tf.constant(logits_for(dim[1]).reshape(4, 3, dim[1]))
    return tf.constant(logits_for(dim))


def graph_case(lib, name):
    """Loss, predictions and eval metrics of one head on fixed logits and labels."""
    cls, kwargs, labels, dim = GRAPH_CASES[name]
    with tf.Graph().as_default():
        kwargs = _kwargs(kwargs)
        head = FACTORIES[cls](lib, **kwargs) if cls in FACTORIES else getattr(lib, cls)(**kwargs)
        features = features_graph()
        logits = _logits(dim)
        label_tensor = _labels(labels)
        reg = [tf.constant(0.25)]
        loss = head.loss(
            labels=label_tensor,
            logits=logits,
            features=features,
            mode="train",
            regularization_losses=reg,
        )
        predictions = head.predictions(logits)
        spec = head.create_estimator_spec(
            features, "eval", logits, label_tensor, regularization_losses=reg
        )
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.tables_initializer())
            loss_value, preds = sess.run((loss, predictions))
            return {
                "loss": float(loss_value),
                "spec_loss": float(sess.run(spec.loss)),
                "predictions": {key_text(k): jsonable(v) for k, v in sorted(preds.items())},
                "prediction_dtypes": {key_text(k): str(v.dtype) for k, v in sorted(preds.items())},
                "metrics": metric_values(sess, spec.eval_metric_ops),
                "logits_dimension": head.logits_dimension,
                "loss_reduction": head.loss_reduction,
                "name": head.name,
            }


def graph_run_all(lib):
    return {name: graph_case(lib, name) for name in GRAPH_CASES}


def _in_graph(fn):
    """``fn(lib)`` built in a new graph; tensors it returns are run in a session."""

    def run(lib):
        with tf.Graph().as_default():
            out = fn(lib)
            if out is not None:
                with tf.compat.v1.Session() as sess:
                    sess.run(tf.compat.v1.tables_initializer())
                    sess.run(out)

    return run


def _loss(cls, labels, dim=1, features=None, **kwargs):
    def fn(lib):
        head = getattr(lib, cls)(**kwargs)
        feats = features_graph() if features is None else features
        lab = labels() if callable(labels) else tf.constant(labels)
        return head.loss(lab, tf.constant(logits_for(dim)), feats)

    return _in_graph(fn)


def _train_op(kw):
    def fn(lib):
        head = lib.BinaryClassHead()
        logits = tf.constant(logits_for(1))
        head.create_estimator_spec(
            features_graph(), "train", logits, tf.constant(LABELS["binary"]), **kw(lib)
        )

    return _in_graph(fn)


def _keras2_sgd(lib):
    return keras().optimizers.legacy.SGD(0.1)


def _bad_labels():
    return LABELS["binary"] + 1


# name: fn(lib) that raises
ERROR_CASES = {
    "multi_n_classes_2": lambda lib: lib.MultiClassHead(n_classes=2),
    "multi_n_classes_none": lambda lib: lib.MultiClassHead(n_classes=None),
    "multi_vocab_length": lambda lib: lib.MultiClassHead(3, label_vocabulary=["a", "b"]),
    "binary_vocab_type": lambda lib: lib.BinaryClassHead(label_vocabulary="ab"),
    "binary_thresholds": lambda lib: lib.BinaryClassHead(thresholds=[0.5, 1.0]),
    "binary_reduction_none": lambda lib: lib.BinaryClassHead(loss_reduction="none"),
    "binary_reduction_bad": lambda lib: lib.BinaryClassHead(loss_reduction="mean"),
    "loss_fn_missing_arg": lambda lib: lib.BinaryClassHead(loss_fn=lambda labels: labels),
    "loss_fn_extra_arg": lambda lib: lib.RegressionHead(loss_fn=lambda labels, logits, x: x),
    "regression_dimension": lambda lib: lib.RegressionHead(label_dimension=0),
    "multilabel_n_classes": lambda lib: lib.MultiLabelHead(n_classes=1),
    "multilabel_thresholds": lambda lib: lib.MultiLabelHead(3, thresholds=[0.0]),
    "multilabel_vocab_length": lambda lib: lib.MultiLabelHead(3, label_vocabulary=["a"]),
    "multilabel_class_strings": lambda lib: lib.MultiLabelHead(
        3, classes_for_class_based_metrics=["a"]
    ),
    "multilabel_class_range": lambda lib: lib.MultiLabelHead(
        3, classes_for_class_based_metrics=[3]
    ),
    "labels_none": _loss("BinaryClassHead", lambda: None),
    "labels_sparse": _loss(
        "RegressionHead", lambda: tf.sparse.SparseTensor([[0, 0]], [1.0], [N, 1])
    ),
    "labels_last_dim": _loss("RegressionHead", LABELS["regression"]),
    "labels_batch_runtime": _loss("RegressionHead", LABELS["poisson"][:5]),
    "labels_out_of_range_binary": _loss("BinaryClassHead", _bad_labels),
    "labels_out_of_range_multi": _loss("MultiClassHead", LABELS["multi"] + 1, 3, n_classes=3),
    "labels_negative_multi": _loss("MultiClassHead", LABELS["multi"] - 1, 3, n_classes=3),
    "labels_float_multi": _loss("MultiClassHead", LABELS["logistic"], 3, n_classes=3),
    "labels_int_with_vocab": _loss(
        "MultiClassHead", LABELS["multi"], 3, n_classes=3, label_vocabulary=["a", "b", "c"]
    ),
    "labels_not_in_vocab": _loss(
        "BinaryClassHead", LABELS["multi_vocab"], label_vocabulary=["neg", "pos"]
    ),
    "labels_not_in_vocab_multi": _loss(
        "MultiClassHead", LABELS["binary_vocab"], 3, n_classes=3, label_vocabulary=["a", "b", "c"]
    ),
    "labels_logistic_range": _loss("LogisticRegressionHead", LABELS["poisson"] + 1),
    "labels_multilabel_indicator": _loss("MultiLabelHead", MULTI_HOT * 2, 3, n_classes=3),
    "labels_multilabel_sparse_range": _loss(
        "MultiLabelHead",
        lambda: tf.sparse.SparseTensor([[0, 0]], np.array([5]), [N, 3]),
        3,
        n_classes=3,
    ),
    "weight_missing": _loss("BinaryClassHead", LABELS["binary"], weight_column="weights"),
    "weight_bad_type": _loss("BinaryClassHead", LABELS["binary"], weight_column=3),
    "weight_bad_shape": _loss("BinaryClassHead", LABELS["binary"], weight_column=_weight_pair()),
    "logits_dimension": _loss("MultiClassHead", LABELS["multi"], 4, n_classes=3),
    "loss_fn_shape": _loss(
        "BinaryClassHead", LABELS["binary"], loss_fn=lambda labels, logits: logits[:, 0]
    ),
    "train_both": _train_op(
        lambda lib: {"optimizer": _keras2_sgd(lib), "train_op_fn": lambda loss: tf.no_op()}
    ),
    "train_neither": _train_op(lambda lib: {}),
    "train_no_variables": _train_op(lambda lib: {"optimizer": _keras2_sgd(lib)}),
    "train_variables_type": _train_op(
        lambda lib: {"optimizer": _keras2_sgd(lib), "trainable_variables": {"a": 1}}
    ),
    "train_v1_optimizer": _train_op(
        lambda lib: {
            "optimizer": tf.compat.v1.train.GradientDescentOptimizer(0.1),
            "trainable_variables": [],
        }
    ),
    "train_update_ops_type": _train_op(
        lambda lib: {"train_op_fn": lambda loss: tf.no_op(), "update_ops": tf.no_op()}
    ),
    "multi_head_empty": lambda lib: lib.MultiHead([]),
    "multi_head_weights": lambda lib: lib.MultiHead([lib.RegressionHead(name="a")], [1.0, 2.0]),
    "multi_head_unnamed": lambda lib: lib.MultiHead([lib.RegressionHead()]),
    "multi_head_reductions": lambda lib: (
        lib.MultiHead(
            [lib.RegressionHead(name="a"), lib.RegressionHead(name="b", loss_reduction="sum")]
        ).loss_reduction
    ),
    "multi_head_split": _in_graph(
        lambda lib: _multi_head(lib).predictions(tf.constant(logits_for(4)))
    ),
    "multi_head_labels_type": _in_graph(
        lambda lib: _multi_head(lib).loss(tf.constant(MULTI_HOT), tf.constant(logits_for(5)))
    ),
    "multi_head_labels_missing": _in_graph(
        lambda lib: _multi_head(lib).loss(
            {"tags": tf.constant(MULTI_HOT)}, tf.constant(logits_for(5))
        )
    ),
    "multi_head_logits_missing": _in_graph(
        lambda lib: _multi_head(lib).predictions({"tags": tf.constant(logits_for(3))})
    ),
    "sequential_mask_missing": _in_graph(
        lambda lib: _sequential(lib, ("BinaryClassHead", {})).loss(
            logits=tf.zeros([4, 3, 1]), labels=tf.zeros([4, 3]), features={"x": tf.zeros([4])}
        )
    ),
    "sequential_multi_head": lambda lib: _sequential(
        lib, ("MultiHead", {"heads": [lib.RegressionHead(name="r")]})
    ),
    "sequential_labels_mask": _in_graph(
        lambda lib: _sequential(lib, ("BinaryClassHead", {}), sequence_length_mask="mask").loss(
            logits=tf.zeros([4, 3, 1]), labels=tf.zeros([4, 2]), features=features_graph()
        )
    ),
    "prediction_key": _in_graph(
        lambda lib: lib.MultiClassHead(3).predictions(tf.constant(logits_for(3)), ["logistic"])
    ),
}


def error_text(err):
    """The message without the Python stack traces TensorFlow adds to op errors, and
    without our advice (the lines from ``tf1compat_init:`` on)."""
    text = str(err).split("\nOriginal stack trace")[0].split("\ntf1compat_init:")[0]
    text = re.sub(r"<([\w.]+\.)?(\w+) object at 0x[0-9a-f]+>", r"<\2 object>", text)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith('File "')]
    return "\n".join(lines)


def error_case(lib, name):
    """``[exception type name, message]`` of one ERROR_CASES entry."""
    try:
        ERROR_CASES[name](lib)
    except Exception as err:  # noqa: BLE001 - the type is part of the outcome
        return [type(err).__name__, error_text(err)]
    return ["no error", ""]


def errors_all(lib):
    return {name: error_case(lib, name) for name in ERROR_CASES}


def run_all(lib, workdir, names=None):
    return {name: run(lib, name, workdir) for name in names or CONFIGS}


def assert_tree_close(mine, ref, rtol, atol=0.0, path="run"):
    """Same structure, keys, strings and ints; floats within ``rtol`` (and ``atol``)."""
    if isinstance(ref, dict):
        assert isinstance(mine, dict) and sorted(mine) == sorted(ref), (
            path,
            sorted(mine),
            sorted(ref),
        )
        for key in ref:
            assert_tree_close(mine[key], ref[key], rtol, atol, f"{path}/{key}")
    elif isinstance(ref, list):
        assert isinstance(mine, list) and len(mine) == len(ref), path
        for i, (m, r) in enumerate(zip(mine, ref, strict=True)):
            assert_tree_close(m, r, rtol, atol, f"{path}[{i}]")
    elif isinstance(ref, float):
        assert isinstance(mine, float | int), path
        np.testing.assert_allclose(mine, ref, rtol=rtol, atol=atol, err_msg=path)
    else:
        assert mine == ref, (path, mine, ref)


def main(argv):
    if argv == ["--golden"]:
        import tempfile

        if not hasattr(tf, "estimator"):
            raise SystemExit("the golden file is made by the real tf.estimator (TF 2.15)")
        with tempfile.TemporaryDirectory() as d:
            out = {
                "tf_version": tf.__version__,
                "runs": run_all(tf.estimator, d),
                "graph": graph_run_all(tf.estimator),
                "errors": errors_all(tf.estimator),
            }
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    raise SystemExit(main(sys.argv[1:]))
