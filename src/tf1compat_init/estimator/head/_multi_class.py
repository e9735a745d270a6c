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
# Modified from `tensorflow_estimator/python/estimator/head/multi_class_head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; Keras 2 metrics from tf_keras on TF >= 2.16.
"""``MultiClassHead``: softmax cross entropy over ``n_classes`` logits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .._keras2 import keras2
from . import _checks, _metrics, _outputs
from ._keys import MetricKeys, PredictionKeys

__all__ = ["MultiClassHead"]


class MultiClassHead(_outputs.ClassHead):
    """A head for multi-class classification (``tf.estimator.MultiClassHead``).

    Labels are integer class ids in ``[0, n_classes)`` of shape ``[D0, ... DN]`` or
    ``[D0, ... DN, 1]``, or strings from ``label_vocabulary``. The loss is sparse
    softmax cross entropy; eval metrics are ``accuracy`` and ``average_loss``.

    Args:
        n_classes: number of classes, more than 2.
        weight_column: a feature name or numeric column of per-example weights.
        label_vocabulary: list or tuple of ``n_classes`` label strings.
        loss_reduction: a ``tf.losses.Reduction`` other than ``NONE``.
        loss_fn: ``fn(labels, logits[, features])`` returning ``[D0, ... DN, 1]``.
        name: suffix of the metric and summary keys, and the head's name scope.

    Example:
        >>> head = MultiClassHead(3, label_vocabulary=["a", "b", "c"])  # doctest: +SKIP
    """

    def __init__(
        self,
        n_classes: Any,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        loss_reduction: str = _checks.SUM_OVER_BATCH_SIZE,
        loss_fn: Callable | None = None,
        name: str | None = None,
    ) -> None:
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        if label_vocabulary is not None and not isinstance(label_vocabulary, list | tuple):
            raise ValueError(
                "label_vocabulary should be a list or a tuple. Given type: "
                f"{type(label_vocabulary)}"
            )
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(
                '"label_vocabulary" does not have "n_classes" items. '
                f"len(label_vocabulary)={len(label_vocabulary)}, n_classes={n_classes}, "
                f"label_vocabulary={label_vocabulary}"
            )
        _checks.validate_loss_reduction(loss_reduction)
        if loss_fn:
            _checks.validate_loss_fn_args(loss_fn)
        self._n_classes = _checks.validate_n_classes(n_classes)
        super().__init__(weight_column, loss_reduction, loss_fn, name)
        self._label_vocabulary = label_vocabulary
        self._loss_mean_key = self._summary_key(MetricKeys.LOSS_MEAN)
        self._accuracy_key = self._summary_key(MetricKeys.ACCURACY)
        self._loss_regularization_key = self._summary_key(MetricKeys.LOSS_REGULARIZATION)

    @property
    def logits_dimension(self) -> Any:
        return self._n_classes

    def _processed_labels(self, logits: Any, labels: Any) -> Any:
        labels = _checks.check_dense_labels_match_logits_and_reshape(
            labels=labels, logits=logits, expected_labels_dimension=1
        )
        label_ids = _outputs.class_label_ids(labels, self._label_vocabulary, self._class_id_table)
        return _checks.check_label_range(label_ids, self._n_classes)

    def _default_loss(self, labels: Any, logits: Any) -> Any:
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
            labels=labels, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE
        )
        return tf.compat.v1.expand_dims(loss, axis=-1)

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """``logits``, ``probabilities``, ``class_ids``, ``classes``, ``all_class_ids``,
        ``all_classes`` (or those in ``keys``)."""
        k = PredictionKeys
        valid_keys = [
            k.LOGITS,
            k.PROBABILITIES,
            k.CLASS_IDS,
            k.CLASSES,
            k.ALL_CLASS_IDS,
            k.ALL_CLASSES,
        ]
        with self._predictions_scope(logits, keys, valid_keys) as (keys, logits, predictions):
            if k.PROBABILITIES in keys:
                predictions[k.PROBABILITIES] = tf.compat.v1.nn.softmax(logits, name=k.PROBABILITIES)
            # A vocabulary has n_classes (> 2) names: never empty.
            self._add_class_predictions(predictions, keys, logits, logits, self._n_classes)
            return predictions

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New Keras 2 metrics: ``average_loss``, ``accuracy`` (+ ``regularization_loss``)."""
        m = keras2().metrics
        with tf.compat.v1.name_scope("metrics", values=(regularization_losses,)):
            metrics = {self._loss_mean_key: m.Mean(name=MetricKeys.LOSS_MEAN)}
            if regularization_losses is not None:
                metrics[self._loss_regularization_key] = m.Mean(name=MetricKeys.LOSS_REGULARIZATION)
            metrics[self._accuracy_key] = m.Accuracy(name=MetricKeys.ACCURACY)
        return metrics

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
        _, label_ids, weights = self._update_loss_mean(eval_metrics, features, logits, labels)
        eval_metrics[self._accuracy_key].update_state(
            y_true=label_ids, y_pred=class_ids, sample_weight=weights
        )
        _metrics.update_regularization_metric(
            eval_metrics, self._loss_regularization_key, regularization_losses
        )
        return eval_metrics

    def _export_outputs(self, predictions: dict) -> dict:
        return _outputs.classification_export_outputs(
            predictions, self._n_classes, self._label_vocabulary
        )
