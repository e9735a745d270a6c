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
"""The v1 multi-class head: softmax cross entropy over ``n_classes`` > 2 logits (summed)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ...head import _checks, _outputs
from ...head._keys import MetricKeys, PredictionKeys
from . import _checks as _v1_checks
from ._base import NONE, SUM, LossSpec, _Head, _SingleHead, summary_key
from ._metrics import all_classes

__all__ = ["_multi_class_head_with_softmax_cross_entropy_loss"]


def _multi_class_head_with_softmax_cross_entropy_loss(
    n_classes: int,
    weight_column: Any = None,
    label_vocabulary: Any = None,
    loss_reduction: str = SUM,
    loss_fn: Any = None,
    name: str | None = None,
) -> _Head:
    """A ``_Head`` for ``n_classes`` > 2 classes with softmax cross entropy (summed)."""
    if label_vocabulary is not None and not isinstance(label_vocabulary, list | tuple):
        raise ValueError(
            f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}"
        )
    _v1_checks.check_loss_reduction(loss_reduction)
    if loss_fn:
        _checks.validate_loss_fn_args(loss_fn, texts=_v1_checks.V1_TEXTS)
    return _MultiClassHeadWithSoftmaxCrossEntropyLoss(
        n_classes=n_classes,
        weight_column=weight_column,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        name=name,
    )


class _MultiClassHeadWithSoftmaxCrossEntropyLoss(_SingleHead):
    def __init__(
        self,
        n_classes: int,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        loss_reduction: str = SUM,
        loss_fn: Any = None,
        name: str | None = None,
    ) -> None:
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        self._n_classes = _checks.validate_n_classes(n_classes)
        self._label_vocabulary = label_vocabulary
        super().__init__(weight_column, loss_reduction, loss_fn, name)

    @property
    def logits_dimension(self) -> int:
        return self._n_classes

    def _predictions(self, logits: Any) -> tuple[Any, dict]:
        k = PredictionKeys
        logits = _checks.check_logits_final_dim(
            logits, self.logits_dimension, texts=_v1_checks.V1_TEXTS
        )
        with tf.compat.v1.name_scope(None, "predictions", (logits,)):
            all_class_ids = _outputs.all_class_ids(logits, self._n_classes)
            classes_all = all_classes(logits, self._n_classes, self._label_vocabulary)
            class_ids = tf.compat.v1.math.argmax(logits, axis=-1, name=k.CLASS_IDS)
            class_ids = tf.compat.v1.expand_dims(class_ids, axis=-1)
            if self._label_vocabulary:
                classes = _outputs.class_string_table(self._label_vocabulary).lookup(class_ids)
            else:
                classes = tf.strings.as_string(class_ids, name="str_classes")
            probabilities = tf.compat.v1.nn.softmax(logits, name=k.PROBABILITIES)
            return logits, {
                k.LOGITS: logits,
                k.PROBABILITIES: probabilities,
                k.CLASS_IDS: class_ids,
                k.CLASSES: classes,
                k.ALL_CLASS_IDS: all_class_ids,
                k.ALL_CLASSES: classes_all,
            }

    def _export_outputs(self, predictions: dict) -> dict:
        return _outputs.classification_export_outputs(
            predictions, self._n_classes, self._label_vocabulary, all_classes_fn=all_classes
        )

    def _processed_labels(self, labels: Any) -> Any:
        vocabulary = self._label_vocabulary
        label_ids = _outputs.class_label_ids(
            labels, vocabulary, lambda: _outputs.class_id_table(vocabulary)
        )
        return _checks.check_label_range(label_ids, self._n_classes, texts=_v1_checks.V1_TEXTS)

    def _default_loss(self, labels: Any, logits: Any) -> Any:
        unweighted_loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
            labels=labels, logits=logits, reduction=NONE
        )
        return tf.compat.v1.expand_dims(unweighted_loss, axis=-1)

    def _eval_metric_ops(
        self, labels: Any, predictions: dict, loss: LossSpec, regularization_loss: Any
    ) -> dict:
        k = MetricKeys
        label_ids, class_ids = loss.processed_labels, predictions[PredictionKeys.CLASS_IDS]
        weights, unreduced_loss = loss.weights, loss.unreduced_loss
        with tf.compat.v1.name_scope(
            None, "metrics", (label_ids, class_ids, weights, unreduced_loss, regularization_loss)
        ):
            metric_ops = {
                summary_key(self._name, k.LOSS_MEAN): tf.compat.v1.metrics.mean(
                    values=unreduced_loss, weights=weights, name=k.LOSS_MEAN
                ),
                summary_key(self._name, k.ACCURACY): tf.compat.v1.metrics.accuracy(
                    labels=label_ids, predictions=class_ids, weights=weights, name=k.ACCURACY
                ),
            }
            if regularization_loss is not None:
                metric_ops[summary_key(self._name, k.LOSS_REGULARIZATION)] = (
                    tf.compat.v1.metrics.mean(
                        values=regularization_loss, name=k.LOSS_REGULARIZATION
                    )
                )
        return metric_ops
