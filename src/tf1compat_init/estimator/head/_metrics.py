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
# Modified from `tensorflow_estimator/python/estimator/head/base_head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; the eval metric helpers the heads share,
# apart from base_head's Head and spec helpers (_base).
"""The eval metric helpers the V2 heads share: weighted means, the regularization loss
metric and the per-threshold accuracy / precision / recall metrics (TF 2.15's keys)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from ._keys import MetricKeys

__all__ = [
    "threshold_metric_keys",
    "threshold_metrics",
    "update_metric_with_broadcast_weights",
    "update_regularization_metric",
    "update_threshold_metrics",
]


def update_metric_with_broadcast_weights(eval_metric: Any, values: Any, weights: Any) -> None:
    values = tf.cast(values, dtype=tf.float32)
    if weights is not None:
        weights = tf.compat.v2.__internal__.ops.broadcast_weights(weights, values)
    eval_metric.update_state(values=values, sample_weight=weights)


def update_regularization_metric(eval_metrics: dict, key: str, regularization_losses: Any) -> None:
    """Adds the batch's summed regularization losses to ``eval_metrics[key]``, if any."""
    if regularization_losses is not None:
        eval_metrics[key].update_state(values=tf.math.add_n(regularization_losses))


def threshold_metric_keys(thresholds: Any, key: Callable[[str], str]) -> tuple:
    """``(accuracy keys, precision keys, recall keys)``, one key per threshold."""
    return tuple(
        tuple(key(template % t) for t in thresholds)
        for template in (
            MetricKeys.ACCURACY_AT_THRESHOLD,
            MetricKeys.PRECISION_AT_THRESHOLD,
            MetricKeys.RECALL_AT_THRESHOLD,
        )
    )


def threshold_metrics(m: Any, thresholds: Any, threshold_keys: tuple) -> dict:
    """New ``BinaryAccuracy``, ``Precision`` and ``Recall`` metrics at each threshold."""
    accuracy_keys, precision_keys, recall_keys = threshold_keys
    metrics = {}
    for i, threshold in enumerate(thresholds):
        metrics[accuracy_keys[i]] = m.BinaryAccuracy(name=accuracy_keys[i], threshold=threshold)
        metrics[precision_keys[i]] = m.Precision(name=precision_keys[i], thresholds=threshold)
        metrics[recall_keys[i]] = m.Recall(name=recall_keys[i], thresholds=threshold)
    return metrics


def update_threshold_metrics(
    eval_metrics: dict, threshold_keys: tuple, labels: Any, predictions: Any, weights: Any
) -> None:
    """Updates the metrics of ``threshold_metrics``, threshold by threshold."""
    for i in range(len(threshold_keys[0])):
        for keys in threshold_keys:
            eval_metrics[keys[i]].update_state(
                y_true=labels, y_pred=predictions, sample_weight=weights
            )
