"""Our heads (``tf1compat_init.estimator.*Head``) on their own and in a custom model_fn.

On every leg: constructor signatures and defaults as tf.estimator 2.15 has them, the
metric and prediction key strings, a head in a user's model_fn under our Estimator with
a Keras 2 legacy optimizer (the README example), heads used eagerly, and the base
class contract. On the TF 2.21 leg: ours against the golden file that the real heads
wrote on TF 2.15 (tests/support/estimator_heads.py --golden; the TF 2.15 leg re-derives it in
tests/estimator/head/test_estimator_heads_differential.py): estimator runs (loss per step, summaries,
evaluate, predict, checkpoint names and values, signatures and served outputs), heads
alone in a graph, and error texts.

Tolerance against the golden file: ``rtol=1e-4`` with ``atol=1e-6`` for values near 0
(measured on TF 2.21: sigmoid and softmax outputs differ from TF 2.15 by 1 to 2 ulps;
losses, metrics and checkpoint values keep their bits).
"""

import inspect
import json

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support import estimator_heads as heads  # noqa: E402

import tf1compat_init.estimator as ours  # noqa: E402
from tf1compat_init.estimator._keras2 import keras2  # noqa: E402
from tf1compat_init.estimator.head._keys import MetricKeys, PredictionKeys  # noqa: E402

RTOL, ATOL = 1e-4, 1e-6
ESTIMATOR_CONFIGS = ["binary_full", "binary_vocab", "multi", "regression", "multi_head"]

SIGNATURES = {
    "BinaryClassHead": "(weight_column=None, thresholds=None, label_vocabulary=None, "
    "loss_reduction='sum_over_batch_size', loss_fn=None, name=None)",
    "MultiClassHead": "(n_classes, weight_column=None, label_vocabulary=None, "
    "loss_reduction='sum_over_batch_size', loss_fn=None, name=None)",
    "MultiLabelHead": "(n_classes, weight_column=None, thresholds=None, label_vocabulary=None, "
    "loss_reduction='sum_over_batch_size', loss_fn=None, classes_for_class_based_metrics=None, "
    "name=None)",
    "RegressionHead": "(label_dimension=1, weight_column=None, "
    "loss_reduction='sum_over_batch_size', loss_fn=None, inverse_link_fn=None, name=None)",
    "PoissonRegressionHead": "(label_dimension=1, weight_column=None, "
    "loss_reduction='sum_over_batch_size', compute_full_loss=True, name=None)",
    "LogisticRegressionHead": "(weight_column=None, loss_reduction='sum_over_batch_size', "
    "name=None)",
    "MultiHead": "(heads, head_weights=None)",
}
METHODS = {
    "loss": ["labels", "logits", "features", "mode", "regularization_losses"],
    "create_estimator_spec": [
        "features",
        "mode",
        "logits",
        "labels",
        "optimizer",
        "trainable_variables",
        "train_op_fn",
        "update_ops",
        "regularization_losses",
    ],
    "metrics": ["regularization_losses"],
    "update_metrics": ["eval_metrics", "features", "logits", "labels", "regularization_losses"],
}


def _params(fn):
    return [p for p in inspect.signature(fn).parameters if p != "self"]


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_constructor_and_methods_as_tf_estimator(name):
    cls = getattr(ours, name)
    assert issubclass(cls, ours.Head)
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in params]
    signature = str(inspect.Signature(bare))
    assert signature == SIGNATURES[name]
    for method, params in METHODS.items():
        assert _params(getattr(cls, method)) == params, (name, method)


def test_key_strings():
    assert (MetricKeys.LOSS_MEAN, MetricKeys.ACCURACY_BASELINE) == (
        "average_loss",
        "accuracy_baseline",
    )
    assert MetricKeys.AUC_PR == "auc_precision_recall"
    assert MetricKeys.ACCURACY_AT_THRESHOLD % 0.25 == "accuracy/positive_threshold_0.25"
    assert MetricKeys.PROBABILITY_MEAN_AT_CLASS % 2 == "probability_mean/class2"
    assert PredictionKeys.ALL_CLASS_IDS == "all_class_ids"
    assert PredictionKeys.LOGISTIC == "logistic"


def test_properties():
    head = ours.MultiHead(
        [ours.MultiClassHead(4, name="a"), ours.RegressionHead(label_dimension=2, name="b")]
    )
    assert (head.name, head.logits_dimension, head.loss_reduction) == (
        "a_b",
        6,
        "sum_over_batch_size",
    )
    assert ours.BinaryClassHead(loss_reduction="sum").loss_reduction == "sum"
    assert ours.MultiLabelHead(5).logits_dimension == 5
    assert ours.head.BinaryClassHead is ours.BinaryClassHead


# -- the README example: a head in a custom model_fn ------------------------------------


def my_model_fn(features, labels, mode):
    head = ours.BinaryClassHead(weight_column="w", thresholds=[0.3])
    with tf.compat.v1.variable_scope("linear"):
        kernel = tf.compat.v1.get_variable("kernel", [3, head.logits_dimension])
        bias = tf.compat.v1.get_variable("bias", [head.logits_dimension])
    logits = tf.matmul(features["x"], kernel) + bias
    optimizer = keras2().optimizers.legacy.Adagrad(learning_rate=0.1)
    # The canned estimators do the same: the optimizer counts the global step.
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return head.create_estimator_spec(
        features=features,
        mode=mode,
        logits=logits,
        labels=labels,
        optimizer=optimizer,
        trainable_variables=[kernel, bias],
        regularization_losses=[1e-3 * tf.nn.l2_loss(kernel)],
    )


def test_head_in_a_custom_model_fn_trains_evaluates_predicts(tmp_path):
    def input_fn():
        features = {"x": heads.X, "w": heads.W}
        ds = tf.data.Dataset.from_tensor_slices((features, heads.LABELS["binary"]))
        return ds.repeat().batch(4)

    est = ours.Estimator(my_model_fn, str(tmp_path), ours.RunConfig(tf_random_seed=1))
    est.train(input_fn, steps=12)
    metrics = est.evaluate(input_fn, steps=3)
    assert metrics["global_step"] == 12
    assert metrics["accuracy"] >= metrics["accuracy_baseline"]
    assert metrics["loss"] < np.log(2) + metrics["regularization_loss"]
    assert {"auc", "precision/positive_threshold_0.3", "label/mean"} <= set(metrics)
    names = set(est.get_variable_names())
    assert {"training/Adagrad/linear/kernel/accumulator", "training/Adagrad/decay"} <= names
    (pred,) = est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": heads.X[:1]}).batch(1))
    assert set(pred) == {
        "logits",
        "logistic",
        "probabilities",
        "class_ids",
        "classes",
        "all_class_ids",
        "all_classes",
    }
    assert pred["classes"].dtype == object and pred["class_ids"].dtype == np.int64
    np.testing.assert_allclose(pred["probabilities"][1], pred["logistic"][0], rtol=1e-6)


def test_heads_work_eagerly():
    logits = tf.constant(heads.logits_for(3))
    head = ours.MultiClassHead(3, weight_column="w")
    features = {"w": tf.constant(heads.W)}
    eager = float(head.loss(tf.constant(heads.LABELS["multi"]), logits, features))
    with tf.Graph().as_default():
        graph_loss = head.loss(
            tf.constant(heads.LABELS["multi"]),
            tf.constant(heads.logits_for(3)),
            {"w": tf.constant(heads.W)},
        )
        with tf.compat.v1.Session() as sess:
            assert eager == pytest.approx(float(sess.run(graph_loss)), rel=1e-6)
    preds = head.predictions(logits)
    assert preds["class_ids"].shape == (heads.N, 1)
    with pytest.raises(ValueError, match=r"^Labels must be <= 3 - 1$"):
        head.loss(tf.constant(heads.LABELS["multi"] + 1), logits, features)


def test_a_head_subclass_must_build_a_spec():
    class Bare(ours.Head):
        name = logits_dimension = loss_reduction = None

        def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
            return None

        def predictions(self, logits, keys=None):
            return {}

        def metrics(self, regularization_losses=None):
            return {}

        def update_metrics(self, eval_metrics, features, logits, labels, **kw):
            return {}

    with pytest.raises(NotImplementedError, match="Subclasses of Head must implement"):
        Bare().create_estimator_spec({}, "infer", tf.zeros([1, 1]))


# -- TF 2.21 leg: ours against what the real heads did on TF 2.15 ------------------------


def golden():
    return json.loads(heads.GOLDEN.read_text())


def test_golden_file_is_from_tf_estimator_215():
    ref = golden()
    assert ref["tf_version"].startswith("2.15")
    assert set(ref["runs"]) == set(heads.CONFIGS)
    assert set(ref["graph"]) == set(heads.GRAPH_CASES)
    assert set(ref["errors"]) == set(heads.ERROR_CASES)
    assert all(kind != "no error" for kind, _ in ref["errors"].values())


@pytest.mark.tf221
@pytest.mark.parametrize("name", ESTIMATOR_CONFIGS)
def test_estimator_run_matches_tf_estimator_215(name, tmp_path):
    heads.assert_tree_close(
        heads.run(ours, name, str(tmp_path)), golden()["runs"][name], RTOL, ATOL
    )


@pytest.mark.tf221
@pytest.mark.parametrize("name", list(heads.GRAPH_CASES))
def test_head_alone_matches_tf_estimator_215(name):
    heads.assert_tree_close(heads.graph_case(ours, name), golden()["graph"][name], RTOL, ATOL)


@pytest.mark.tf221
@pytest.mark.parametrize("name", list(heads.ERROR_CASES))
def test_error_matches_tf_estimator_215(name):
    assert heads.error_case(ours, name) == golden()["errors"][name]


@pytest.mark.tf221
def test_keras3_optimizer_is_refused_with_advice():
    with tf.Graph().as_default():
        head = ours.RegressionHead()
        with pytest.raises(ValueError) as err:
            head.create_estimator_spec(
                {},
                "train",
                tf.zeros([2, 1]),
                tf.zeros([2, 1]),
                optimizer=tf.keras.optimizers.SGD(),
                trainable_variables=[],
            )
    first, advice = str(err.value).split("\n")
    assert first.startswith(
        "The given optimizer is not a tf.keras.optimizers.Optimizer instance. Received "
        "optimizer of type <class 'keras"
    )
    assert advice.startswith("tf1compat_init: ") and "tf_keras.optimizers.legacy" in advice
