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
# Modified from `tensorflow_estimator/python/estimator/canned/baseline.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; only the v1 (tf.compat.v1.train optimizer) path.
"""``BaselineClassifier``, ``BaselineRegressor``, ``BaselineEstimator`` of ``tf.compat.v1.estimator``.

One trainable bias per logit (``baseline/bias``) broadcast over the batch, trained by a
``tf.compat.v1.train`` optimizer (``Ftrl``, learning rate 0.3, by default) through a v1
head, as in TF 2.15. Features are only used for their batch size.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.python.feature_column import feature_column as _fc_v1

from ..canned._common import batch_size_and_checks, init_with_model_fn, weight_column_key
from ..canned._optimizers import get_optimizer_instance
from . import _head as head_lib
from ._estimator import Estimator

__all__ = ["BaselineClassifier", "BaselineEstimator", "BaselineRegressor"]

_LEARNING_RATE = 0.3
_SUM = tf.compat.v1.losses.Reduction.SUM


def baseline_model_fn(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    optimizer: Any,
    weight_column: Any = None,
    config: Any = None,
) -> Any:
    """The v1 baseline ``model_fn`` (TF 2.15's ``baseline._baseline_model_fn``)."""
    del config
    num_outputs = head.logits_dimension
    weight_key = weight_column_key(weight_column, _fc_v1._NumericColumn, "_NumericColumn")
    checks, batch_size = batch_size_and_checks(features, weight_key)
    with tf.control_dependencies(checks):
        with tf.compat.v1.variable_scope("baseline"):
            bias = tf.compat.v1.get_variable(
                "bias", shape=[num_outputs], initializer=tf.compat.v1.initializers.zeros
            )
            logits = tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))

    def train_op_fn(loss: Any) -> Any:
        opt = get_optimizer_instance(optimizer, learning_rate=_LEARNING_RATE)
        return opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())

    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels, train_op_fn=train_op_fn
    )


def _baseline_init(est, head, model_dir, optimizer, config, weight_column=None) -> None:
    init_with_model_fn(
        est, Estimator, baseline_model_fn, model_dir, config, None, True,
        head=head, optimizer=optimizer, weight_column=weight_column,
    )  # fmt: skip


class BaselineClassifier(Estimator):
    """``tf.compat.v1.estimator.BaselineClassifier``: predicts the label distribution seen."""

    def __init__(
        self,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        loss_reduction: str = _SUM,
    ) -> None:
        head = head_lib._binary_logistic_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        _baseline_init(self, head, model_dir, optimizer, config, weight_column)


class BaselineRegressor(Estimator):
    """``tf.compat.v1.estimator.BaselineRegressor``: predicts the mean label seen."""

    def __init__(
        self,
        model_dir: Any = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        loss_reduction: str = _SUM,
    ) -> None:
        head = head_lib._regression_head(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
        )
        # TF 2.15 does not pass weight_column on here: weights may differ in batch size.
        _baseline_init(self, head, model_dir, optimizer, config)


class BaselineEstimator(Estimator):
    """``tf.compat.v1.estimator.BaselineEstimator``: the baseline on a v1 ``_Head`` you give."""

    def __init__(
        self, head: Any, model_dir: Any = None, optimizer: Any = "Ftrl", config: Any = None
    ) -> None:
        _baseline_init(self, head, model_dir, optimizer, config)
