"""RNNClassifier / RNNEstimator against tf.estimator 2.15 (tf.estimator.experimental).

Scenarios in tests/support/rnn_models.py: LSTM, default SimpleRNN cells, an int ``units`` with
``cell_type="gru"`` (one Keras GRU layer), stacked GRU cells with a context column and
3 classes, and ``return_sequences`` (the sequential head), each trained 3 + 2 steps (the
second call resumes), evaluated and asked for a prediction; plus the constructor and
model_fn errors. Compared: the loss at every step, the checkpoint's variable names, the
metrics, the prediction, the errors.

How the legs meet, as in test_bert_finetune.py: on TF 2.15 the real estimators and ours
run in this process and must agree exactly, and the real ones must reproduce the golden
file tests/golden/rnn_tf215.json (``python tests/support/rnn_models.py --golden``); on TF 2.21
ours (built with tf_keras) must match it. Floats against the golden file: rtol 1e-5 (a
few float32 ulps over 5 steps of RNN training on other CPU kernels).
"""

import json
import math

import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tf_keras" if not tf.__version__.startswith("2.15.") else "tensorflow")

from support import rnn_models as R  # noqa: E402

import tf1compat_init.estimator as ours  # noqa: E402

HAS_REAL = hasattr(tf, "estimator")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = {"ours": R.collect(ours, tmp_path_factory.mktemp("ours"))}
    if HAS_REAL:
        out["real"] = R.collect(tf.estimator, tmp_path_factory.mktemp("real"))
    return out


@pytest.fixture(scope="module")
def golden():
    with open(R.GOLDEN) as f:
        return json.load(f)


def assert_matches(actual, expected, where="result"):
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), where
        for key in expected:
            assert_matches(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_matches(a, e, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert math.isclose(actual, expected, rel_tol=1e-5, abs_tol=1e-6), (where, actual, expected)
    else:
        assert actual == expected, (where, actual, expected)


def test_ours_matches_the_golden_file(results, golden):
    assert_matches(results["ours"], golden)


@pytest.mark.parametrize("case", [*R.CASES, "errors"])
@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.estimator")
def test_ours_equals_real_tf_estimator(results, case):
    assert results["ours"][case] == results["real"][case]


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.estimator")
def test_real_tf_estimator_reproduces_the_golden_file(results, golden):
    assert_matches(results["real"], golden)


def test_tf_2_15_variable_names(results):
    lstm = results["ours"]["lstm"]["names"]
    assert "rnn_model/rnn/lstm_cell/kernel" in lstm
    assert "sequence_features/tok_embedding/embedding_weights" in lstm
    assert "training/Adagrad/rnn_model/logits/kernel/accumulator" in lstm
    assert "rnn_model/gru/gru_cell/recurrent_kernel" in results["ours"]["gru_int_units"]["names"]
    stacked = results["ours"]["stacked_gru_context_3_classes"]["names"]
    assert "rnn_model/rnn/stacked_rnn_cells/gru_cell_1/kernel" in stacked
    assert "sequence_mask" in results["ours"]["return_sequences"]["prediction"]


def test_training_lowers_the_loss_and_resumes(results):
    for case in R.CASES:
        first, second = results["ours"][case]["losses"]
        assert len(first) == 3 and len(second) == 2
        assert second[-1] < first[0], case
        assert results["ours"][case]["metrics"]["global_step"] == 5


def test_int_units_without_cell_type_gets_advice(tmp_path):
    columns, _ = R._columns()
    est = ours.experimental.RNNClassifier(columns, units=2, model_dir=str(tmp_path / "m"))
    with pytest.raises(TypeError, match=r"(?s)not iterable\ntf1compat_init: .*units=\[2\]"):
        est.train(R._pick("bin"), steps=1)


def _added_metrics(lib, model_dir):
    import random

    columns, _ = R._columns()
    est = lib.experimental.RNNClassifier(
        columns, units=[2], model_dir=model_dir, config=lib.RunConfig(tf_random_seed=3)
    )
    random.seed(5)
    est.train(R._pick("bin"), steps=1)

    def metric_fn(labels, predictions):
        return {"logistic_mean": tf.compat.v1.metrics.mean(predictions["logistic"])}

    added = lib.add_metrics(est, metric_fn).evaluate(R._pick("bin"), steps=1)
    return {k: float(v) for k, v in added.items()}


def test_add_metrics_on_a_canned_estimator(tmp_path):
    mine = _added_metrics(ours, str(tmp_path / "ours"))
    assert mine["logistic_mean"] == pytest.approx(mine["prediction/mean"], rel=1e-6)
    assert {"accuracy", "auc", "loss", "global_step"} <= set(mine)
    if HAS_REAL:  # TF 2.15: the same numbers as tf.estimator.add_metrics on its RNNClassifier
        assert mine == _added_metrics(tf.estimator, str(tmp_path / "real"))


def _export_savedmodel(lib, model_dir, export_base):
    """Trains one step and exports through the deprecated v1 alias ``export_savedmodel``."""
    columns, _ = R._columns()
    est = lib.experimental.RNNClassifier(
        columns, units=[2], model_dir=model_dir, config=lib.RunConfig(tf_random_seed=3)
    )
    est.train(R._pick("bin"), steps=1)
    spec = tf.feature_column.make_parse_example_spec(columns)
    receiver = lib.export.build_parsing_serving_input_receiver_fn(spec)
    path = est.export_savedmodel(export_base, receiver)
    return sorted(tf.saved_model.load(path).signatures)


def test_rnn_estimators_are_v1_estimators_with_export_savedmodel(tmp_path):
    """TF 2.15 derives RNNEstimator from the v1 ``Estimator`` (not ``EstimatorV2``), so TF 1.x
    code exporting one with ``export_savedmodel`` works there; it must here too."""
    assert issubclass(ours.experimental.RNNEstimator, ours.v1.Estimator)
    assert issubclass(ours.experimental.RNNClassifier, ours.v1.Estimator)
    signatures = _export_savedmodel(ours, str(tmp_path / "ours"), str(tmp_path / "ours_export"))
    assert "serving_default" in signatures and "predict" in signatures
    if HAS_REAL:
        assert issubclass(tf.estimator.experimental.RNNClassifier, tf.compat.v1.estimator.Estimator)
        real = _export_savedmodel(tf.estimator, str(tmp_path / "real"), str(tmp_path / "real_ex"))
        assert signatures == real
