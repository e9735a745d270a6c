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
# tf.compat.v1 without tensorflow_estimator; the spec flow, checks and export outputs are
# shared with the other heads (`_base`, `head/`).
"""The v1 regression head: mean squared error, summed over the batch and the labels."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ...head import _checks, _outputs
from ...head._keys import MetricKeys, PredictionKeys
from . import _checks as _v1_checks
from ._base import NONE, SUM, LossSpec, _Head, _SingleHead, summary_key
from ._metrics import predictions_mean

__all__ = ["_regression_head"]


def _regression_head(
    weight_column: Any = None,
    label_dimension: int = 1,
    loss_reduction: str = SUM,
    loss_fn: Any = None,
    inverse_link_fn: Any = None,
    name: str | None = None,
) -> _Head:
    """A ``_Head`` for regression with mean squared error (summed over batch and labels)."""
    _v1_checks.check_loss_reduction(loss_reduction)
    if loss_fn:
        _checks.validate_loss_fn_args(loss_fn, texts=_v1_checks.V1_TEXTS)
    return _RegressionHeadWithMeanSquaredErrorLoss(
        weight_column=weight_column,
        label_dimension=label_dimension,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        inverse_link_fn=inverse_link_fn,
        name=name,
    )


class _RegressionHeadWithMeanSquaredErrorLoss(_SingleHead):
    _per_logit_weights = True

    def __init__(
        self,
        label_dimension: int,
        weight_column: Any = None,
        loss_reduction: str = SUM,
        loss_fn: Any = None,
        inverse_link_fn: Any = None,
        name: str | None = None,
    ) -> None:
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        self._logits_dimension = label_dimension
        self._inverse_link_fn = inverse_link_fn
        super().__init__(weight_column, loss_reduction, loss_fn, name)

    @property
    def logits_dimension(self) -> int:
        return self._logits_dimension

    @property
    def _labels_dimension(self) -> int:
        return self._logits_dimension

    def _predictions(self, logits: Any) -> tuple[Any, dict]:
        k = PredictionKeys
        logits = _checks.check_logits_final_dim(
            logits, self._logits_dimension, texts=_v1_checks.V1_TEXTS
        )
        if self._inverse_link_fn:
            return logits, {k.PREDICTIONS: self._inverse_link_fn(logits), k.LOGITS: logits}
        return logits, {k.PREDICTIONS: logits}

    def _export_outputs(self, predictions: dict) -> dict:
        return _outputs.regression_export_outputs(predictions)

    def _processed_labels(self, labels: Any) -> Any:
        return tf.cast(labels, dtype=tf.float32)

    def _default_loss(self, labels: Any, logits: Any) -> Any:
        return tf.compat.v1.losses.mean_squared_error(
            labels=labels, predictions=logits, reduction=NONE
        )

    def _eval_metric_ops(
        self, labels: Any, predictions: dict, loss: LossSpec, regularization_loss: Any
    ) -> dict:
        # As in TF 2.15, label/mean averages the labels as given, before the float cast.
        k, weights = MetricKeys, loss.weights
        ops = {
            summary_key(self._name, k.LOSS_MEAN): tf.compat.v1.metrics.mean(
                values=loss.unreduced_loss, weights=weights
            ),
            summary_key(self._name, k.PREDICTION_MEAN): predictions_mean(
                predictions=predictions[PredictionKeys.PREDICTIONS],
                weights=weights,
                name=k.PREDICTION_MEAN,
            ),
            summary_key(self._name, k.LABEL_MEAN): tf.compat.v1.metrics.mean(
                values=labels, weights=weights
            ),
        }
        if regularization_loss is not None:
            ops[summary_key(self._name, k.LOSS_REGULARIZATION)] = tf.compat.v1.metrics.mean(
                values=regularization_loss, name=k.LOSS_REGULARIZATION
            )
        return ops
