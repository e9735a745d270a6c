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
# tf.compat.v1 without tensorflow_estimator; the threshold metrics share one helper.
"""The v1 heads' ``tf.compat.v1.metrics`` helpers and their served class strings."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = [
    "accuracy_at_threshold",
    "accuracy_baseline",
    "all_classes",
    "at_threshold",
    "auc",
    "indicator_labels_mean",
    "predictions_mean",
]


def _broadcast(weights: Any, values: Any) -> Any:
    if weights is None:
        return None
    return tf.__internal__.ops.broadcast_weights(weights, values)


def all_classes(logits: Any, n_classes: int, label_vocabulary: Any = None) -> Any:
    """``[batch, n_classes]`` class strings, built as ``canned/head.py`` does."""
    batch_size = tf.compat.v1.shape(logits)[0]
    names = label_vocabulary if label_vocabulary else tf.strings.as_string(tf.range(n_classes))
    classes = tf.compat.v1.expand_dims(input=names, axis=0)
    return tf.tile(input=classes, multiples=[batch_size, 1])


def indicator_labels_mean(labels: Any, weights: Any = None, name: Any = None) -> tuple:
    with tf.compat.v1.name_scope(name, "labels_mean", (labels, weights)) as scope:
        labels = tf.cast(labels, name="labels", dtype=tf.float32)
        return tf.compat.v1.metrics.mean(labels, weights=_broadcast(weights, labels), name=scope)


def accuracy_baseline(labels_mean: tuple) -> tuple:
    with tf.compat.v1.name_scope(None, "accuracy_baseline", labels_mean):
        value, update_op = labels_mean
        return (
            tf.math.maximum(value, 1.0 - value, name="value"),
            tf.math.maximum(update_op, 1 - update_op, name="update_op"),
        )


def predictions_mean(predictions: Any, weights: Any = None, name: Any = None) -> tuple:
    with tf.compat.v1.name_scope(name, "predictions_mean", (predictions, weights)) as scope:
        predictions = tf.cast(predictions, name="predictions", dtype=tf.float32)
        return tf.compat.v1.metrics.mean(
            predictions, weights=_broadcast(weights, predictions), name=scope
        )


def auc(labels: Any, predictions: Any, weights: Any = None, curve: str = "ROC", name=None):
    with tf.compat.v1.name_scope(name, "auc", (predictions, labels, weights)) as scope:
        predictions = tf.cast(predictions, name="predictions", dtype=tf.float32)
        return tf.compat.v1.metrics.auc(
            labels=labels,
            predictions=predictions,
            weights=_broadcast(weights, predictions),
            curve=curve,
            name=scope,
        )


def accuracy_at_threshold(labels, predictions, weights, threshold, name=None) -> tuple:
    with tf.compat.v1.name_scope(
        name, f"accuracy_at_{threshold}", (predictions, labels, weights, threshold)
    ) as scope:
        threshold_predictions = tf.compat.v1.to_float(tf.math.greater_equal(predictions, threshold))
        return tf.compat.v1.metrics.accuracy(
            labels=labels, predictions=threshold_predictions, weights=weights, name=scope
        )


def at_threshold(metric, default_name, labels, predictions, weights, threshold, name) -> tuple:
    """``precision`` / ``recall`` at one threshold, squeezed to scalars."""
    with tf.compat.v1.name_scope(
        name, f"{default_name}_at_{threshold}", (predictions, labels, weights, threshold)
    ) as scope:
        value, update_op = metric(
            labels=labels,
            predictions=predictions,
            thresholds=(threshold,),
            weights=weights,
            name=scope,
        )
        return tf.compat.v1.squeeze(value), tf.compat.v1.squeeze(update_op)
