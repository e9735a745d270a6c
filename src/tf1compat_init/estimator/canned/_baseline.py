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
# tf.compat.v1 without tensorflow_estimator; Keras 2 layers and optimizers come from tf_keras on
# TF >= 2.16 (`_keras2`).
"""``BaselineClassifier``, ``BaselineRegressor``, ``BaselineEstimator`` (tf.estimator 2.15, V2).

A baseline ignores the features: its logits are one learned bias ``baseline/bias`` of
shape ``[logits_dimension]`` (zeros at first) repeated over the batch, so a classifier
learns the classes' prior and a regressor the labels' mean. The optimizer is a Keras 2
legacy one (default ``Ftrl``, learning rate 0.3 for a name), stepping the global step,
with slots ``training/Ftrl/baseline/bias/...``, as in TF 2.15.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from .. import Estimator
from .._keras2 import keras2
from .._spec import ModeKeys
from ..head._base import replica_scaled_loss
from ._common import batch_size_and_checks, init_with_model_fn, weight_column_key
from ._head_utils import binary_or_multi_class_head, regression_head
from ._optimizers import get_optimizer_instance_v2

__all__ = ["BaselineClassifier", "BaselineEstimator", "BaselineRegressor"]

# TF 2.15's learning rate for an optimizer given by name.
_LEARNING_RATE = 0.3

_SUM_OVER_BATCH_SIZE = keras2().losses.Reduction.SUM_OVER_BATCH_SIZE


def baseline_logits_v2(
    features: dict, num_outputs: int, weight_column: Any = None
) -> tuple[list, tf.Tensor]:
    """``([bias], logits)``: the bias variable ``baseline/bias`` and it tiled over the batch."""
    checks, batch_size = batch_size_and_checks(features, weight_column_key(weight_column))
    with tf.control_dependencies(checks):
        with tf.name_scope("baseline"):
            bias = tf.Variable(initial_value=tf.zeros([num_outputs]), name="bias")
            logits = tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))
    return [bias], logits


def _baseline_model_fn_v2(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    optimizer: Any,
    weight_column: Any = None,
    loss_reduction: Any = _SUM_OVER_BATCH_SIZE,
) -> Any:
    trainable_variables, logits = baseline_logits_v2(features, head.logits_dimension, weight_column)
    opt = None
    if mode == ModeKeys.TRAIN:
        opt = get_optimizer_instance_v2(optimizer, learning_rate=_LEARNING_RATE)
        opt.iterations = tf.compat.v1.train.get_or_create_global_step()

    def train_op_fn(loss: tf.Tensor) -> Any:
        loss = replica_scaled_loss(loss, loss_reduction)
        return opt.get_updates(loss, trainable_variables)[0]

    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels, train_op_fn=train_op_fn
    )


def _baseline_init(
    est, head, model_dir, optimizer, config, weight_column=None, loss_reduction=_SUM_OVER_BATCH_SIZE
) -> None:
    """Every V2 baseline estimator's ``Estimator.__init__`` (no warm start, as TF 2.15)."""
    init_with_model_fn(
        est,
        Estimator,
        _baseline_model_fn_v2,
        model_dir,
        config,
        None,
        False,
        head=head,
        optimizer=optimizer,
        weight_column=weight_column,
        loss_reduction=loss_reduction,
    )


class BaselineClassifierV2(Estimator):
    """Predicts the classes' prior, ignoring the features (``tf.estimator.BaselineClassifier``).

    Args:
        model_dir: where checkpoints go.
        n_classes: number of classes (2: binary).
        weight_column: a feature key or a ``numeric_column`` weighting each example.
        label_vocabulary: the labels as strings, when they are not class ids.
        optimizer: a name (learning rate 0.3), a Keras 2 legacy optimizer or a callable.
        config: a :class:`tf1compat_init.estimator.RunConfig`.
        loss_reduction: a ``tf.losses.Reduction`` except ``NONE``.

    Example:
        >>> est = BaselineClassifier(n_classes=3)  # doctest: +SKIP
        >>> est.train(input_fn, steps=100)  # doctest: +SKIP
    """

    def __init__(
        self,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        loss_reduction: Any = _SUM_OVER_BATCH_SIZE,
    ) -> None:
        head = binary_or_multi_class_head(
            n_classes,
            weight_column=weight_column,
            label_vocabulary=label_vocabulary,
            loss_reduction=loss_reduction,
        )
        _baseline_init(self, head, model_dir, optimizer, config, weight_column, loss_reduction)


class BaselineRegressorV2(Estimator):
    """Predicts the labels' mean, ignoring the features (``tf.estimator.BaselineRegressor``).

    Args:
        model_dir: where checkpoints go.
        label_dimension: the number of regression targets per example.
        weight_column: a feature key or a ``numeric_column`` weighting each example.
        optimizer: a name (learning rate 0.3), a Keras 2 legacy optimizer or a callable.
        config: a :class:`tf1compat_init.estimator.RunConfig`.
        loss_reduction: a ``tf.losses.Reduction`` except ``NONE``.

    Example:
        >>> est = BaselineRegressor(label_dimension=2)  # doctest: +SKIP
    """

    def __init__(
        self,
        model_dir: Any = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        loss_reduction: Any = _SUM_OVER_BATCH_SIZE,
    ) -> None:
        head = regression_head(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
        )
        # As TF 2.15: the weight feature counts in the batch-size checks here.
        _baseline_init(self, head, model_dir, optimizer, config)


class BaselineEstimatorV2(Estimator):
    """A baseline with any head (``tf.estimator.BaselineEstimator``).

    Args:
        head: a head, e.g. ``tf1compat_init.estimator.head.MultiLabelHead(3)``.
        model_dir: where checkpoints go.
        optimizer: a name (learning rate 0.3), a Keras 2 legacy optimizer or a callable.
        config: a :class:`tf1compat_init.estimator.RunConfig`.

    Example:
        >>> est = BaselineEstimator(head)  # doctest: +SKIP
    """

    def __init__(
        self, head: Any, model_dir: Any = None, optimizer: Any = "Ftrl", config: Any = None
    ) -> None:
        _baseline_init(self, head, model_dir, optimizer, config)


# TF 2.15 named the V2 classes so (their name shows in reprs and argument errors).
BaselineClassifier = BaselineClassifierV2
BaselineRegressor = BaselineRegressorV2
BaselineEstimator = BaselineEstimatorV2
