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
# Modified from `tensorflow_estimator/python/estimator/head/multi_label_head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; Keras 2 metrics from tf_keras on TF >= 2.16.
"""``MultiLabelHead``: independent sigmoid cross entropy for each of ``n_classes`` labels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .._keras2 import keras2
from . import _checks, _metrics, _outputs
from ._keys import MetricKeys, PredictionKeys

__all__ = ["MultiLabelHead"]


class MultiLabelHead(_outputs.ClassHead):
    """A head for multi-label classification (``tf.estimator.MultiLabelHead``).

    Labels are a multi-hot ``[D0, ... DN, n_classes]`` indicator tensor, or a
    ``SparseTensor`` of class ids (strings with ``label_vocabulary``). The loss is
    sigmoid cross entropy averaged over classes. Eval metrics: ``average_loss``,
    ``auc``, ``auc_precision_recall``, per threshold accuracy / precision / recall, and
    per class in ``classes_for_class_based_metrics`` ``probability_mean``, ``auc`` and
    ``auc_precision_recall``.

    Args:
        n_classes: number of labels, more than 1.
        weight_column: a feature name or numeric column of per-example weights.
        thresholds: floats in (0, 1) for the threshold metrics.
        label_vocabulary: list or tuple of ``n_classes`` strings (for sparse labels).
        loss_reduction: a ``tf.losses.Reduction`` other than ``NONE``.
        loss_fn: ``fn(labels, logits[, features])`` returning ``[D0, ... DN, 1]``.
        classes_for_class_based_metrics: class ids or vocabulary strings.
        name: suffix of the metric and summary keys, and the head's name scope.

    Example:
        >>> head = MultiLabelHead(3, thresholds=[0.5])  # doctest: +SKIP
    """

    def __init__(
        self,
        n_classes: int,
        weight_column: Any = None,
        thresholds: Any = None,
        label_vocabulary: Any = None,
        loss_reduction: str = _checks.SUM_OVER_BATCH_SIZE,
        loss_fn: Callable | None = None,
        classes_for_class_based_metrics: Any = None,
        name: str | None = None,
    ) -> None:
        if n_classes is None or n_classes < 2:
            raise ValueError(
                f"n_classes must be > 1 for multi-label classification. Given: {n_classes}"
            )
        thresholds = tuple(thresholds) if thresholds else ()
        for threshold in thresholds:
            if threshold <= 0.0 or threshold >= 1.0:
                raise ValueError(f"thresholds must be in (0, 1) range. Given: {threshold}")
        if label_vocabulary is not None:
            if not isinstance(label_vocabulary, list | tuple):
                raise ValueError(
                    "label_vocabulary must be a list or tuple. Given type: "
                    f"{type(label_vocabulary)}"
                )
            if len(label_vocabulary) != n_classes:
                raise ValueError(
                    f"Length of label_vocabulary must be n_classes ({n_classes}). "
                    f"Given: {len(label_vocabulary)}"
                )
        if loss_fn:
            _checks.validate_loss_fn_args(loss_fn)
        _checks.validate_loss_reduction(loss_reduction)
        class_ids = _class_ids_for_metrics(
            classes_for_class_based_metrics, label_vocabulary, n_classes
        )
        self._n_classes = n_classes
        super().__init__(weight_column, loss_reduction, loss_fn, name)
        self._thresholds = thresholds
        self._label_vocabulary = label_vocabulary
        self._classes_for_class_based_metrics = class_ids
        key = self._summary_key
        self._loss_mean_key = key(MetricKeys.LOSS_MEAN)
        self._auc_key = key(MetricKeys.AUC)
        self._auc_pr_key = key(MetricKeys.AUC_PR)
        self._loss_regularization_key = key(MetricKeys.LOSS_REGULARIZATION)
        self._threshold_keys = _metrics.threshold_metric_keys(thresholds, key)
        if label_vocabulary is None:
            tags = [(MetricKeys.PROBABILITY_MEAN_AT_CLASS, MetricKeys.AUC_AT_CLASS,
                     MetricKeys.AUC_PR_AT_CLASS, i) for i in class_ids]  # fmt: skip
        else:
            tags = [(MetricKeys.PROBABILITY_MEAN_AT_NAME, MetricKeys.AUC_AT_NAME,
                     MetricKeys.AUC_PR_AT_NAME, label_vocabulary[i]) for i in class_ids]  # fmt: skip
        self._prob_keys = tuple(key(p % c) for p, _, _, c in tags)
        self._auc_keys = tuple(key(a % c) for _, a, _, c in tags)
        self._auc_pr_keys = tuple(key(r % c) for _, _, r, c in tags)

    @property
    def logits_dimension(self) -> int:
        return self._n_classes

    def _processed_labels(self, logits: Any, labels: Any) -> Any:
        if labels is None:
            raise ValueError(_checks.LABEL_NONE_ERR_MSG)
        if isinstance(labels, tf.sparse.SparseTensor):
            indicator = self._sparse_to_indicator(labels)
            processed = tf.cast(indicator, dtype=tf.int64)
        else:
            processed = _checks.check_label_range(
                labels,
                2,
                message=r"labels must be an integer indicator Tensor with values in [0, 1]",
            )
        return _checks.check_dense_labels_match_logits_and_reshape(
            labels=processed, logits=logits, expected_labels_dimension=self.logits_dimension
        )

    def _sparse_to_indicator(self, labels: Any) -> Any:
        values = labels.values
        if labels.dtype == tf.string:
            ids = tf.sparse.SparseTensor(
                indices=labels.indices,
                values=self._class_id_table().lookup(values),
                dense_shape=labels.dense_shape,
            )
            return tf.sparse.to_indicator(ids, self._n_classes)
        if not values.dtype.is_integer:
            raise ValueError(f"Labels dtype should be integer. Instead got {values.dtype}.")
        message = rf"labels must be an integer SparseTensor with values in [0, {self._n_classes})"
        checked = _checks.check_label_range(labels.values, self._n_classes, message=message)
        if tf.executing_eagerly():
            return tf.sparse.to_indicator(labels, self._n_classes)
        with tf.control_dependencies([checked]):
            return tf.sparse.to_indicator(labels, self._n_classes)

    def _default_loss(self, labels: Any, logits: Any) -> Any:
        loss = tf.compat.v1.losses.sigmoid_cross_entropy(
            multi_class_labels=labels,
            logits=logits,
            reduction=tf.compat.v1.losses.Reduction.NONE,
        )
        # One loss per example: the mean over its labels.
        return tf.math.reduce_mean(loss, axis=-1, keepdims=True)

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """``logits``, ``probabilities`` (sigmoid), ``classes`` (all class names)."""
        k = PredictionKeys
        valid_keys = [k.LOGITS, k.PROBABILITIES, k.CLASSES]
        with self._predictions_scope(logits, keys, valid_keys) as (keys, logits, predictions):
            if k.PROBABILITIES in keys:
                predictions[k.PROBABILITIES] = tf.math.sigmoid(logits, name=k.PROBABILITIES)
            if k.CLASSES in keys:
                predictions[k.CLASSES] = _outputs.all_classes(
                    logits, self._n_classes, self._label_vocabulary
                )
            return predictions

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New Keras 2 metric objects for every eval metric of this head."""
        m = keras2().metrics
        keys = MetricKeys
        with tf.compat.v1.name_scope(None, "metrics", (regularization_losses,)):
            metrics = {
                self._loss_mean_key: m.Mean(name=keys.LOSS_MEAN),
                self._auc_key: m.AUC(name=keys.AUC),
                self._auc_pr_key: m.AUC(curve="PR", name=keys.AUC_PR),
            }
            if regularization_losses is not None:
                metrics[self._loss_regularization_key] = m.Mean(name=keys.LOSS_REGULARIZATION)
            metrics.update(_metrics.threshold_metrics(m, self._thresholds, self._threshold_keys))
            for i in range(len(self._classes_for_class_based_metrics)):
                metrics[self._prob_keys[i]] = m.Mean(name=self._prob_keys[i])
                metrics[self._auc_keys[i]] = m.AUC(name=self._auc_keys[i])
                metrics[self._auc_pr_keys[i]] = m.AUC(curve="PR", name=self._auc_pr_keys[i])
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
        logits = _checks.check_logits_final_dim(logits, self.logits_dimension)
        processed = self._processed_labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, processed, features)
        key = PredictionKeys.PROBABILITIES
        probabilities = self.predictions(logits, [key])[key]
        eval_metrics[self._loss_mean_key].update_state(values=unweighted, sample_weight=weights)
        for k in (self._auc_key, self._auc_pr_key):
            eval_metrics[k].update_state(
                y_true=processed, y_pred=probabilities, sample_weight=weights
            )
        _metrics.update_regularization_metric(
            eval_metrics, self._loss_regularization_key, regularization_losses
        )
        _metrics.update_threshold_metrics(
            eval_metrics, self._threshold_keys, processed, probabilities, weights
        )
        for i, class_id in enumerate(self._classes_for_class_based_metrics):
            # The class's column, for any number of batch dimensions.
            batch_rank = tf.rank(probabilities) - 1
            begin = tf.concat([tf.zeros([batch_rank], dtype=tf.int32), [class_id]], axis=0)
            size = tf.concat([-1 * tf.ones([batch_rank], dtype=tf.int32), [1]], axis=0)
            class_probabilities = tf.slice(probabilities, begin=begin, size=size)
            class_labels = tf.slice(processed, begin=begin, size=size)
            _metrics.update_metric_with_broadcast_weights(
                eval_metrics[self._prob_keys[i]], class_probabilities, weights
            )
            for k in (self._auc_keys[i], self._auc_pr_keys[i]):
                eval_metrics[k].update_state(
                    y_true=class_labels, y_pred=class_probabilities, sample_weight=weights
                )
        return eval_metrics

    def _export_outputs(self, predictions: dict) -> dict:
        return _outputs.classification_export_outputs(
            predictions, self._n_classes, self._label_vocabulary
        )


def _class_ids_for_metrics(classes: Any, label_vocabulary: Any, n_classes: int) -> tuple:
    """``classes_for_class_based_metrics`` as class ids (strings looked up in the vocabulary)."""
    if not classes:
        return ()
    classes = tuple(classes)
    if isinstance(classes[0], str):
        if not label_vocabulary:
            raise ValueError(
                "label_vocabulary must be provided when classes_for_class_based_metrics "
                "are strings."
            )
        return tuple(label_vocabulary.index(c) for c in classes)
    for class_id in classes:
        if class_id < 0 or class_id >= n_classes:
            raise ValueError(
                f"All classes_for_class_based_metrics must be in range [0, {n_classes - 1}]. "
                f"Given: {class_id}"
            )
    return classes
