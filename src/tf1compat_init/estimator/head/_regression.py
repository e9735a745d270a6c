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
# Modified from `tensorflow_estimator/python/estimator/head/regression_head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; Keras 2 metrics from tf_keras on TF >= 2.16.
"""``RegressionHead`` (mean squared error) and its Poisson and logistic variants."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .._keras2 import keras2
from . import _base, _checks, _metrics, _outputs
from ._keys import MetricKeys, PredictionKeys

__all__ = ["LogisticRegressionHead", "PoissonRegressionHead", "RegressionHead"]


class RegressionHead(_base.SingleHead):
    """A head for regression (``tf.estimator.RegressionHead``).

    Labels are floats of shape ``[D0, ... DN, label_dimension]`` (or without the last
    dimension when it is 1). The loss is the squared error, or ``loss_fn``; with
    ``inverse_link_fn`` the predictions are ``inverse_link_fn(logits)`` and the logits
    are predicted too. Eval metrics: ``average_loss``, ``label/mean``,
    ``prediction/mean``.

    Args:
        label_dimension: number of values per example.
        weight_column: a feature name or numeric column; weights may also be given per
            logit (``[D0, ... DN, label_dimension]``).
        loss_reduction: a ``tf.losses.Reduction`` other than ``NONE``.
        loss_fn: ``fn(labels, logits[, features])`` returning the unreduced loss.
        inverse_link_fn: maps logits to predicted values.
        name: suffix of the metric and summary keys, and the head's name scope.

    Example:
        >>> head = RegressionHead(label_dimension=2)  # doctest: +SKIP
    """

    def __init__(
        self,
        label_dimension: int = 1,
        weight_column: Any = None,
        loss_reduction: str = _checks.SUM_OVER_BATCH_SIZE,
        loss_fn: Callable | None = None,
        inverse_link_fn: Callable | None = None,
        name: str | None = None,
    ) -> None:
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        _checks.validate_loss_reduction(loss_reduction)
        if loss_fn:
            _checks.validate_loss_fn_args(loss_fn)
        self._logits_dimension = label_dimension
        super().__init__(weight_column, loss_reduction, loss_fn, name)
        self._inverse_link_fn = inverse_link_fn
        self._loss_mean_key = self._summary_key(MetricKeys.LOSS_MEAN)
        self._prediction_mean_key = self._summary_key(MetricKeys.PREDICTION_MEAN)
        self._label_mean_key = self._summary_key(MetricKeys.LABEL_MEAN)
        self._loss_regularization_key = self._summary_key(MetricKeys.LOSS_REGULARIZATION)

    @property
    def logits_dimension(self) -> int:
        return self._logits_dimension

    def _processed_labels(self, logits: Any, labels: Any) -> Any:
        labels = _checks.check_dense_labels_match_logits_and_reshape(
            labels=labels, logits=logits, expected_labels_dimension=self._logits_dimension
        )
        return tf.cast(labels, dtype=tf.float32)

    _per_logit_weights = True

    @property
    def _expected_loss_dim(self) -> int:
        return self._logits_dimension

    def _default_loss(self, labels: Any, logits: Any) -> Any:
        return tf.compat.v1.losses.mean_squared_error(
            labels=labels, predictions=logits, reduction=tf.compat.v1.losses.Reduction.NONE
        )

    def predictions(self, logits: Any) -> dict:
        """``{"predictions": ...}``, plus ``logits`` when there is an inverse link."""
        logits = _checks.check_logits_final_dim(logits, self._logits_dimension)
        k = PredictionKeys
        with tf.compat.v1.name_scope("predictions", values=(logits,)):
            if self._inverse_link_fn:
                return {k.PREDICTIONS: self._inverse_link_fn(logits), k.LOGITS: logits}
            return {k.PREDICTIONS: logits}

    def metrics(self, regularization_losses: Any = None) -> dict:
        """New Keras 2 metrics: ``average_loss``, ``prediction/mean``, ``label/mean``."""
        m = keras2().metrics
        keys = MetricKeys
        with tf.compat.v1.name_scope("metrics", values=(regularization_losses,)):
            metrics = {
                self._loss_mean_key: m.Mean(name=keys.LOSS_MEAN),
                self._prediction_mean_key: m.Mean(name=keys.PREDICTION_MEAN),
                self._label_mean_key: m.Mean(name=keys.LABEL_MEAN),
            }
            if regularization_losses is not None:
                metrics[self._loss_regularization_key] = m.Mean(name=keys.LOSS_REGULARIZATION)
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
        predicted = self.predictions(logits)[PredictionKeys.PREDICTIONS]
        _, _, weights = self._update_loss_mean(eval_metrics, features, logits, labels)
        # The raw labels, as tensorflow-estimator 2.15 passes them.
        eval_metrics[self._label_mean_key].update_state(values=labels, sample_weight=weights)
        _metrics.update_metric_with_broadcast_weights(
            eval_metrics[self._prediction_mean_key], predicted, weights
        )
        _metrics.update_regularization_metric(
            eval_metrics, self._loss_regularization_key, regularization_losses
        )
        return eval_metrics

    def _export_outputs(self, predictions: dict) -> dict:
        return _outputs.regression_export_outputs(predictions)


class PoissonRegressionHead(RegressionHead):
    """Regression with Poisson loss on log-rate logits; predictions are ``exp(logits)``.

    ``compute_full_loss`` adds the Stirling term of ``tf.nn.log_poisson_loss``.
    """

    def __init__(
        self,
        label_dimension: int = 1,
        weight_column: Any = None,
        loss_reduction: str = _checks.SUM_OVER_BATCH_SIZE,
        compute_full_loss: bool = True,
        name: str | None = None,
    ) -> None:
        self._compute_full_loss = compute_full_loss
        super().__init__(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
            loss_fn=self._poisson_loss,
            inverse_link_fn=tf.math.exp,
            name=name,
        )

    def _poisson_loss(self, labels: Any, logits: Any) -> Any:
        return tf.nn.log_poisson_loss(
            targets=labels, log_input=logits, compute_full_loss=self._compute_full_loss
        )


class LogisticRegressionHead(RegressionHead):
    """Regression of values in [0, 1] with sigmoid cross entropy; predictions are
    ``sigmoid(logits)``. Labels outside [0, 1] fail with ``Labels must be in range
    [0, 1]``."""

    def __init__(
        self,
        weight_column: Any = None,
        loss_reduction: str = _checks.SUM_OVER_BATCH_SIZE,
        name: str | None = None,
    ) -> None:
        super().__init__(
            label_dimension=1,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
            loss_fn=self._logistic_loss,
            inverse_link_fn=tf.math.sigmoid,
            name=name,
        )

    def _logistic_loss(self, labels: Any, logits: Any) -> Any:
        labels = _checks.check_label_range(
            labels, n_classes=2, message="Labels must be in range [0, 1]"
        )
        return tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
