# Copyright 2018 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================
# Modified from `tensorflow_estimator/python/estimator/head/binary_class_head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; Keras 2 metrics from tf_keras on TF >= 2.16.
"""``BinaryClassHead``: sigmoid cross entropy over one logit per example."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .._keras2 import keras2
from . import _checks, _metrics, _outputs
from ._keys import MetricKeys, PredictionKeys

__all__ = ["BinaryClassHead"]


class BinaryClassHead(_outputs.ClassHead):
    """A head for binary classification (``tf.estimator.BinaryClassHead``).

    Labels are 0/1 (any numeric dtype), or strings from ``label_vocabulary`` (two
    entries: negative, positive). The loss is sigmoid cross entropy on a logit of shape
    ``[D0, ... DN, 1]``, weighted by ``weight_column`` and reduced by
    ``loss_reduction``. Eval metrics: ``accuracy``, ``accuracy_baseline``, ``auc``,
    ``auc_precision_recall``, ``average_loss``, ``label/mean``, ``prediction/mean``,
    ``precision``, ``recall``, and per threshold ``accuracy/positive_threshold_<t>``,
    ``precision/...``, ``recall/...``.

    Args:
        weight_column: a feature name or ``tf.feature_column.numeric_column``
            holding per-example weights.
        thresholds: floats in (0, 1) for the threshold metrics (0.5 is the default
            class decision and always used by ``accuracy``, ``precision``, ``recall``).
        label_vocabulary: list or tuple of the two label strings.
        loss_reduction: a ``tf.losses.Reduction`` other than ``NONE``.
        loss_fn: ``fn(labels, logits[, features])`` returning the unreduced loss of
            shape ``[D0, ... DN, 1]``.
        name: suffix of the metric and summary keys, and the head's name scope.

    Example:
        >>> head = BinaryClassHead(weight_column="w", thresholds=[0.3])  # doctest: +SKIP
        >>> spec = head.create_estimator_spec(features, mode, logits, labels,
        ...                                   train_op_fn=my_train_op_fn)
    """

    def __init__(
        self,
        weight_column: Any = None,
        thresholds: Any = None,
        label_vocabulary: Any = None,
        loss_reduction: str = _checks.SUM_OVER_BATCH_SIZE,
        loss_fn: Callable | None = None,
        name: str | None = None,
    ) -> None:
        if label_vocabulary is not None and not isinstance(label_vocabulary, list | tuple):
            raise ValueError(
                "label_vocabulary should be a list or a tuple. Given type: "
                f"{type(label_vocabulary)}"
            )
        thresholds = tuple(thresholds) if thresholds else ()
        for threshold in thresholds:
            if threshold <= 0.0 or threshold >= 1.0:
                raise ValueError(f"thresholds not in (0, 1): {(thresholds,)}.")
        _checks.validate_loss_reduction(loss_reduction)
        if loss_fn:
            _checks.validate_loss_fn_args(loss_fn)
        super().__init__(weight_column, loss_reduction, loss_fn, name)
        self._thresholds = thresholds
        self._label_vocabulary = label_vocabulary
        key = self._summary_key
        self._loss_mean_key = key(MetricKeys.LOSS_MEAN)
        self._accuracy_key = key(MetricKeys.ACCURACY)
        self._precision_key = key(MetricKeys.PRECISION)
        self._recall_key = key(MetricKeys.RECALL)
        self._prediction_mean_key = key(MetricKeys.PREDICTION_MEAN)
        self._label_mean_key = key(MetricKeys.LABEL_MEAN)
        self._accuracy_baseline_key = key(MetricKeys.ACCURACY_BASELINE)
        self._auc_key = key(MetricKeys.AUC)
        self._auc_pr_key = key(MetricKeys.AUC_PR)
        self._loss_regularization_key = key(MetricKeys.LOSS_REGULARIZATION)
        self._threshold_keys = _metrics.threshold_metric_keys(thresholds, key)

    @property
    def logits_dimension(self) -> int:
        return 1

    def _processed_labels(self, logits: Any, labels: Any) -> Any:
        labels = _checks.check_dense_labels_match_logits_and_reshape(
            labels=labels, logits=logits, expected_labels_dimension=1
        )
        if self._label_vocabulary is not None:
            labels = self._class_id_table().lookup(labels)
        labels = tf.cast(labels, dtype=tf.float32)
        return _checks.check_label_range(labels, n_classes=2)

    def _default_loss(self, labels: Any, logits: Any) -> Any:
        return tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """``logits``, ``logistic``, ``probabilities``, ``class_ids``, ``classes``,
        ``all_class_ids``, ``all_classes`` (or those in ``keys``)."""
        k = PredictionKeys
        valid_keys = [
            k.LOGITS,
            k.LOGISTIC,
            k.PROBABILITIES,
            k.CLASS_IDS,
            k.CLASSES,
            k.ALL_CLASS_IDS,
            k.ALL_CLASSES,
        ]
        with self._predictions_scope(logits, keys, valid_keys) as (keys, logits, predictions):
            if k.LOGISTIC in keys:
                predictions[k.LOGISTIC] = tf.math.sigmoid(logits, name=k.LOGISTIC)
            # The negative class has logit 0: softmax over the pair is the sigmoid.
            two_class_logits = tf.concat(
                (tf.compat.v1.zeros_like(logits), logits), axis=-1, name="two_class_logits"
            )
            if k.PROBABILITIES in keys:
                predictions[k.PROBABILITIES] = tf.compat.v1.nn.softmax(
                    two_class_logits, name=k.PROBABILITIES
                )
            self._add_class_predictions(predictions, keys, two_class_logits, logits, 2)
            return predictions

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New Keras 2 metric objects for every eval metric of this head."""
        m = keras2().metrics
        keys = MetricKeys
        with tf.compat.v1.name_scope("metrics", values=(regularization_losses,)):
            metrics = {
                self._loss_mean_key: m.Mean(name=keys.LOSS_MEAN),
                self._accuracy_key: m.Accuracy(name=keys.ACCURACY),
                self._precision_key: m.Precision(name=keys.PRECISION),
                self._recall_key: m.Recall(name=keys.RECALL),
                self._prediction_mean_key: m.Mean(name=keys.PREDICTION_MEAN),
                self._label_mean_key: m.Mean(name=keys.LABEL_MEAN),
                self._accuracy_baseline_key: m.Mean(name=keys.ACCURACY_BASELINE),
                self._auc_key: m.AUC(name=keys.AUC),
                self._auc_pr_key: m.AUC(curve="PR", name=keys.AUC_PR),
            }
            if regularization_losses is not None:
                metrics[self._loss_regularization_key] = m.Mean(name=keys.LOSS_REGULARIZATION)
            metrics.update(_metrics.threshold_metrics(m, self._thresholds, self._threshold_keys))
        return metrics

    def _update_accuracy_baseline(self, eval_metrics: dict) -> None:
        # The baseline is the label mean's, folded: max(positives, negatives) / count.
        label_mean = eval_metrics[self._label_mean_key]
        baseline = eval_metrics[self._accuracy_baseline_key]
        baseline.add_update(tf.no_op())
        baseline.total = tf.math.maximum(label_mean.total, label_mean.count - label_mean.total)
        baseline.count = label_mean.count

    @staticmethod
    def _update_auc(auc_metric: Any, labels: Any, predictions: Any, weights: Any = None) -> None:
        predictions = tf.cast(predictions, dtype=tf.float32)
        if weights is not None:
            weights = tf.compat.v2.__internal__.ops.broadcast_weights(weights, predictions)
        auc_metric.update_state(y_true=labels, y_pred=predictions, sample_weight=weights)

    def update_metrics(
        self,
        eval_metrics: dict,
        features: Any,
        logits: Any,
        labels: Any,
        regularization_losses: Any = None,
    ) -> dict:
        """Updates every metric of ``metrics()`` with one batch; returns them."""
        class_ids = self.predictions(logits)[PredictionKeys.CLASS_IDS]
        logits, labels, weights = self._update_loss_mean(eval_metrics, features, logits, labels)
        for key in (self._accuracy_key, self._precision_key, self._recall_key):
            eval_metrics[key].update_state(y_true=labels, y_pred=class_ids, sample_weight=weights)
        logistic = self.predictions(logits, [PredictionKeys.LOGISTIC])[PredictionKeys.LOGISTIC]
        _metrics.update_metric_with_broadcast_weights(
            eval_metrics[self._prediction_mean_key], logistic, weights
        )
        _metrics.update_metric_with_broadcast_weights(
            eval_metrics[self._label_mean_key], labels, weights
        )
        self._update_accuracy_baseline(eval_metrics)
        for key in (self._auc_key, self._auc_pr_key):
            self._update_auc(
                eval_metrics[key], labels=labels, predictions=logistic, weights=weights
            )
        _metrics.update_regularization_metric(
            eval_metrics, self._loss_regularization_key, regularization_losses
        )
        _metrics.update_threshold_metrics(
            eval_metrics, self._threshold_keys, labels, logistic, weights
        )
        return eval_metrics

    def _export_outputs(self, predictions: dict) -> dict:
        return _outputs.classification_export_outputs(
            predictions,
            2,
            self._label_vocabulary,
            regression=predictions[PredictionKeys.LOGISTIC],
        )
