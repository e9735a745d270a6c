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
# Modified from `tensorflow_estimator/python/estimator/canned/linear.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; only the v1 path, no SDCA optimizer.
"""``LinearClassifier``, ``LinearRegressor``, ``LinearEstimator`` of ``tf.compat.v1.estimator``.

A weighted sum of the feature columns plus a bias, in variable scope
``linear/linear_model`` (``<column>/weights``, ``bias_weights``), trained by a
``tf.compat.v1.train`` optimizer (``Ftrl`` by default; learning rate 0.2 for a named
optimizer, ``min(0.2, 1/sqrt(len(feature_columns)))`` for ``optimizer=None``) through a v1 head with ``SUM`` reduction, as
in TF 2.15. The linear model is ``tf.compat.v1.feature_column.linear_model``, which takes
v1 and v2 feature columns alike and makes the same variables as TF 2.15's two paths.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ..canned._common import (
    column_learning_rate,
    fraction_of_zero,
    init_with_model_fn,
    ps_partitioners,
    validate_features,
)
from ..canned._optimizers import get_optimizer_instance
from . import _head as head_lib
from ._estimator import Estimator

__all__ = ["LinearClassifier", "LinearEstimator", "LinearRegressor"]

_SUM = tf.compat.v1.losses.Reduction.SUM
_LEARNING_RATE = 0.2


def _default_optimizer(feature_columns: Any) -> Any:
    learning_rate = column_learning_rate(_LEARNING_RATE, len(feature_columns))
    return tf.compat.v1.train.FtrlOptimizer(learning_rate=learning_rate)


def _expanded(variables: Any) -> list:
    # linear_model's cols_to_vars holds a list of parts per column.
    out = []
    for v in variables:
        out.extend(v if isinstance(v, list | tuple) else [v])
    return out


def linear_logits(features: dict, feature_columns: Any, units: int, sparse_combiner: str) -> Any:
    """The logits of the v1 linear model, in the current variable scope (``linear``)."""
    cols_to_vars: dict = {}
    logits = tf.compat.v1.feature_column.linear_model(
        features,
        feature_columns,
        units=units,
        sparse_combiner=sparse_combiner,
        cols_to_vars=cols_to_vars,
    )
    bias = _expanded([cols_to_vars.pop("bias")])
    variables = _expanded(cols_to_vars.values())
    if units > 1:
        tf.compat.v1.summary.histogram("bias", bias)
    else:
        tf.compat.v1.summary.scalar("bias", bias[0][0])
    tf.compat.v1.summary.scalar("fraction_of_zero_weights", fraction_of_zero(variables))
    return logits


def linear_model_fn(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    feature_columns: Any,
    optimizer: Any,
    partitioner: Any,
    config: Any,
    sparse_combiner: str = "sum",
) -> Any:
    """The v1 linear ``model_fn`` (TF 2.15's ``linear._linear_model_fn``, without SDCA)."""
    validate_features(features)
    _, partitioner = ps_partitioners(config, partitioner)
    with tf.compat.v1.variable_scope(
        "linear", values=tuple(features.values()), partitioner=partitioner
    ):
        logits = linear_logits(features, feature_columns, head.logits_dimension, sparse_combiner)
        optimizer = get_optimizer_instance(
            optimizer or _default_optimizer(feature_columns), learning_rate=_LEARNING_RATE
        )
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, optimizer=optimizer, logits=logits
        )


def _check_optimizer(optimizer: Any) -> None:
    if type(optimizer).__name__ == "LinearSDCA":
        raise NotImplementedError(
            "LinearSDCA is not supported by tf1compat_init's linear estimators.\n"
            "tf1compat_init: use an optimizer name ('Ftrl', 'SGD', ...) or a "
            "tf.compat.v1.train optimizer."
        )


def _linear_init(est, head, feature_columns, model_dir, optimizer, config, partitioner,
                 warm_start_from, sparse_combiner) -> None:  # fmt: skip
    _check_optimizer(optimizer)
    init_with_model_fn(
        est, Estimator, linear_model_fn, model_dir, config, warm_start_from, True,
        head=head, feature_columns=tuple(feature_columns or []), optimizer=optimizer,
        partitioner=partitioner, sparse_combiner=sparse_combiner,
    )  # fmt: skip


class LinearClassifier(Estimator):
    """``tf.compat.v1.estimator.LinearClassifier``: linear model, v1 optimizers, ``SUM`` loss."""

    def __init__(
        self,
        feature_columns: Any,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        partitioner: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = _SUM,
        sparse_combiner: str = "sum",
    ) -> None:
        head = head_lib._binary_logistic_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        _linear_init(self, head, feature_columns, model_dir, optimizer, config, partitioner,
                     warm_start_from, sparse_combiner)  # fmt: skip


class LinearRegressor(Estimator):
    """``tf.compat.v1.estimator.LinearRegressor``: linear regression, mean squared error summed."""

    def __init__(
        self,
        feature_columns: Any,
        model_dir: Any = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        partitioner: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = _SUM,
        sparse_combiner: str = "sum",
    ) -> None:
        head = head_lib._regression_head(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
        )
        _linear_init(self, head, feature_columns, model_dir, optimizer, config, partitioner,
                     warm_start_from, sparse_combiner)  # fmt: skip


class LinearEstimator(Estimator):
    """``tf.compat.v1.estimator.LinearEstimator``: the v1 linear model on a v1 ``_Head``."""

    def __init__(
        self,
        head: Any,
        feature_columns: Any,
        model_dir: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        partitioner: Any = None,
        sparse_combiner: str = "sum",
        warm_start_from: Any = None,
    ) -> None:
        _linear_init(self, head, feature_columns, model_dir, optimizer, config, partitioner,
                     warm_start_from, sparse_combiner)  # fmt: skip
