"""When a ``model_fn`` raises: the labels advice only where ``labels is None`` can be why."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from tf1compat_init import estimator as est  # noqa: E402

ADVICE = "labels is None because input_fn returned features only"


def features_only_input_fn():
    return tf.data.Dataset.from_tensors({"x": [[1.0, 2.0]], "label": [[1.0]]}).repeat()


def train(model_fn, tmp_path):
    estimator = est.Estimator(model_fn, str(tmp_path))
    estimator.train(features_only_input_fn, steps=1)


def test_a_model_fn_that_uses_the_missing_labels_gets_the_advice(tmp_path):
    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [2, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
        step = tf.compat.v1.train.get_or_create_global_step()
        return est.EstimatorSpec(mode, loss=loss, train_op=step.assign_add(1))

    with pytest.raises(ValueError) as info:
        train(model_fn, tmp_path)
    assert ADVICE in str(info.value)
    assert '"label" looks like the labels' in str(info.value)


def test_labels_kept_in_features_by_design_get_tfs_error_alone(tmp_path):
    """TPUEstimator-style code reads its labels from features; its own error is not ours."""

    def model_fn(features, labels, mode):
        del labels  # the labels are features["label"], by design
        w = tf.compat.v1.get_variable("w", [3, 1])
        logits = tf.matmul(features["x"], w)  # [1, 2] x [3, 1]: a shape error
        loss = tf.reduce_mean(logits - features["label"])
        step = tf.compat.v1.train.get_or_create_global_step()
        return est.EstimatorSpec(mode, loss=loss, train_op=step.assign_add(1))

    with pytest.raises(ValueError) as info:
        train(model_fn, tmp_path)
    assert "Dimensions must be equal" in str(info.value) or "shape" in str(info.value).lower()
    assert ADVICE not in str(info.value)
    assert not getattr(info.value, "__notes__", None)
