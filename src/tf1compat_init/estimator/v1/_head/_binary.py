# Copyright 2017 The TensorFlow Authors. All Rights Reserved.
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
# Modified from `tensorflow_estimator/python/estimator/canned/head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; the spec flow, checks, tables and export outputs
# are shared with the other heads (`_base`, `head/`).
"""The v1 binary head: sigmoid cross entropy over one logit per example (summed)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ...head import _checks, _outputs
from ...head._keys import MetricKeys, PredictionKeys
from . import _checks as _v1_checks
from . import _metrics
from ._base import SUM, LossSpec, _Head, _SingleHead, summary_key

__all__ = ["_binary_logistic_head_with_sigmoid_cross_entropy_loss"]


def _binary_logistic_head_with_sigmoid_cross_entropy_loss(
    weight_column: Any = None,
    thresholds: Any = None,
    label_vocabulary: Any = None,
    loss_reduction: str = SUM,
    loss_fn: Any = None,
    name: str | None = None,
) -> _Head:
    """A ``_Head`` for two classes with sigmoid cross entropy (summed), logits ``[..., 1]``."""
    thresholds = tuple(thresholds) if thresholds else ()
    if label_vocabulary is not None and not isinstance(label_vocabulary, list | tuple):
        raise TypeError(
            f"label_vocabulary should be a list or tuple. Given type: {type(label_vocabulary)}"
        )
    for threshold in thresholds:
        if threshold <= 0.0 or threshold >= 1.0:
            raise ValueError(f"thresholds not in (0, 1): {(thresholds,)}.")
    _v1_checks.check_loss_reduction(loss_reduction)
    if loss_fn:
        _checks.validate_loss_fn_args(loss_fn, texts=_v1_checks.V1_TEXTS)
    return _BinaryLogisticHeadWithSigmoidCrossEntropyLoss(
        weight_column=weight_column,
        thresholds=thresholds,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        name=name,
    )


class _BinaryLogisticHeadWithSigmoidCrossEntropyLoss(_SingleHead):
    def __init__(
        self,
        weight_column: Any = None,
        thresholds: Any = None,
        label_vocabulary: Any = None,
        loss_reduction: str = SUM,
        loss_fn: Any = None,
        name: str | None = None,
    ) -> None:
        self._thresholds = tuple(thresholds) if thresholds else ()
        self._label_vocabulary = label_vocabulary
        super().__init__(weight_column, loss_reduction, loss_fn, name)

    @property
    def logits_dimension(self) -> int:
        return 1

    def _predictions(self, logits: Any) -> tuple[Any, dict]:
        k = PredictionKeys
        with tf.compat.v1.name_scope(None, "predictions", (logits,)):
            logits = _checks.check_logits_final_dim(
                logits, self.logits_dimension, texts=_v1_checks.V1_TEXTS
            )
            logistic = tf.math.sigmoid(logits, name=k.LOGISTIC)
            two_class_logits = tf.concat(
                (tf.compat.v1.zeros_like(logits), logits), axis=-1, name="two_class_logits"
            )
            probabilities = tf.compat.v1.nn.softmax(two_class_logits, name=k.PROBABILITIES)
            class_ids = tf.compat.v1.math.argmax(two_class_logits, axis=-1, name=k.CLASS_IDS)
            class_ids = tf.compat.v1.expand_dims(class_ids, axis=-1)
            all_class_ids = _outputs.all_class_ids(logits, n_classes=2)
            all_classes = _metrics.all_classes(logits, 2, self._label_vocabulary)
            if self._label_vocabulary:
                classes = _outputs.class_string_table(self._label_vocabulary).lookup(class_ids)
            else:
                classes = tf.strings.as_string(class_ids, name="str_classes")
            return logits, {
                k.LOGITS: logits,
                k.LOGISTIC: logistic,
                k.PROBABILITIES: probabilities,
                k.CLASS_IDS: class_ids,
                k.CLASSES: classes,
                k.ALL_CLASS_IDS: all_class_ids,
                k.ALL_CLASSES: all_classes,
            }

    def _export_outputs(self, predictions: dict) -> dict:
        return _outputs.classification_export_outputs(
            predictions,
            2,
            self._label_vocabulary,
            regression=predictions[PredictionKeys.LOGISTIC],
            all_classes_fn=_metrics.all_classes,
        )

    def _processed_labels(self, labels: Any) -> Any:
        if self._label_vocabulary is not None:
            labels = _outputs.class_id_table(self._label_vocabulary).lookup(labels)
        labels = tf.cast(labels, dtype=tf.float32)
        return _checks.check_label_range(labels, 2, texts=_v1_checks.V1_TEXTS)

    def _default_loss(self, labels: Any, logits: Any) -> Any:
        return tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

    def _eval_metric_ops(
        self, labels: Any, predictions: dict, loss: LossSpec, regularization_loss: Any
    ) -> dict:
        k, p, m = MetricKeys, PredictionKeys, tf.compat.v1.metrics
        labels, weights = loss.processed_labels, loss.weights
        logits, logistic, class_ids = (
            predictions[p.LOGITS],
            predictions[p.LOGISTIC],
            predictions[p.CLASS_IDS],
        )
        unreduced_loss = loss.unreduced_loss
        with tf.compat.v1.name_scope(
            None,
            "metrics",
            (labels, logits, logistic, class_ids, weights, unreduced_loss, regularization_loss),
        ):
            labels_mean = _metrics.indicator_labels_mean(
                labels=labels, weights=weights, name=k.LABEL_MEAN
            )
            ops = {
                k.LOSS_MEAN: m.mean(values=unreduced_loss, weights=weights, name=k.LOSS_MEAN),
                k.ACCURACY: m.accuracy(
                    labels=labels, predictions=class_ids, weights=weights, name=k.ACCURACY
                ),
                k.PRECISION: m.precision(
                    labels=labels, predictions=class_ids, weights=weights, name=k.PRECISION
                ),
                k.RECALL: m.recall(
                    labels=labels, predictions=class_ids, weights=weights, name=k.RECALL
                ),
                k.PREDICTION_MEAN: _metrics.predictions_mean(
                    predictions=logistic, weights=weights, name=k.PREDICTION_MEAN
                ),
                k.LABEL_MEAN: labels_mean,
                k.ACCURACY_BASELINE: _metrics.accuracy_baseline(labels_mean),
                k.AUC: _metrics.auc(
                    labels=labels, predictions=logistic, weights=weights, name=k.AUC
                ),
                k.AUC_PR: _metrics.auc(
                    labels=labels, predictions=logistic, weights=weights, curve="PR", name=k.AUC_PR
                ),
            }
            if regularization_loss is not None:
                ops[k.LOSS_REGULARIZATION] = m.mean(
                    values=regularization_loss, name=k.LOSS_REGULARIZATION
                )
            for threshold in self._thresholds:
                ops.update(self._threshold_ops(labels, logistic, weights, threshold))
            return {summary_key(self._name, key): value for key, value in ops.items()}

    @staticmethod
    def _threshold_ops(labels: Any, logistic: Any, weights: Any, threshold: float) -> dict:
        k, m = MetricKeys, tf.compat.v1.metrics
        accuracy = k.ACCURACY_AT_THRESHOLD % threshold
        precision = k.PRECISION_AT_THRESHOLD % threshold
        recall = k.RECALL_AT_THRESHOLD % threshold
        ops = {
            accuracy: _metrics.accuracy_at_threshold(
                labels, logistic, weights, threshold, name=accuracy
            )
        }
        ops[precision] = _metrics.at_threshold(
            m.precision_at_thresholds, "precision", labels, logistic, weights, threshold, precision
        )
        ops[recall] = _metrics.at_threshold(
            m.recall_at_thresholds, "recall", labels, logistic, weights, threshold, recall
        )
        return ops
