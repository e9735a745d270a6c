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
# tf.compat.v1 without tensorflow_estimator; Keras 2 optimizers come from tf_keras on
# TF >= 2.16 (`_keras2`); the linear model itself is our own (`_linear_model`).
"""``LinearClassifier``, ``LinearRegressor``, ``LinearEstimator`` (tf.estimator 2.15, V2).

The linear model is tensorflow-estimator 2.15's V2 one, rebuilt on ``tf.feature_column``
v2 columns and ``tf.compat.v1.get_variable``: one ``weights`` variable of shape
``[num_buckets or dense size, units]`` per column (columns sorted by name, each under its
sanitized name) and ``bias_weights`` of shape ``[units]``, all zeros at first, named
``linear/linear_model/<column>/weights`` and ``linear/linear_model/bias_weights``; a
column's own state (an embedding column's ``embedding_weights``) sits beside its weights.
The logits are the sum of each column's weighted sum plus the bias: a dense column's
tensor times its weights, a categorical column's weights looked up with
``safe_embedding_lookup_sparse`` under ``sparse_combiner``.

Training uses Keras 2's legacy optimizers (default ``Ftrl``), whose slots the heads
name ``training/Ftrl/<variable>/accumulator`` and ``.../linear``, with
``optimizer.iterations`` set to the global step, as TF 2.15.

:class:`LinearModel` and :func:`linear_model_fn_builder_v2` are the builder
``DNNLinearCombined*`` shares.
"""

from __future__ import annotations

import sys
from typing import Any

import tensorflow as tf

from .. import Estimator
from .._keras2 import keras2
from .._spec import ModeKeys
from ._common import (
    column_learning_rate,
    fraction_of_zero,
    init_with_model_fn,
    validate_features,
)
from ._head_utils import binary_or_multi_class_head, regression_head
from ._linear_model import LinearModel, is_feature_column_v2
from ._optimizers import get_optimizer_instance_v2

__all__ = [
    "LinearClassifier",
    "LinearEstimator",
    "LinearRegressor",
    "linear_model_fn_builder_v2",
]

# TF 2.15's default learning rate for the linear part (its own "historical artifact").
_LEARNING_RATE = 0.2

_V1_COLUMNS_ERROR = (
    "Received a feature column from TensorFlow v1, but this is a "
    "TensorFlow v2 Estimator. Please either use v2 feature columns "
    "(accessible via tf.feature_column.* in TF 2.x) with this "
    "Estimator, or switch to a v1 Estimator for use with v1 feature "
    "columns (accessible via tf.compat.v1.estimator.* and "
    "tf.compat.v1.feature_column.*, respectively."
)


def linear_model_fn_builder_v2(
    units: int, feature_columns: Any, sparse_combiner: str = "sum", features: Any = None
) -> tuple[tf.Tensor, list]:
    """The linear logits and their variables, as TF 2.15's V2 linear estimators build them.

    Variables go under ``linear/linear_model/``; summaries ``bias`` and
    ``fraction_of_zero_weights`` are written as TF 2.15 writes them.

    Args:
        units: the logits' size (the head's ``logits_dimension``).
        feature_columns: ``tf.feature_column`` v2 columns.
        sparse_combiner: ``'sum'``, ``'mean'`` or ``'sqrtn'``.
        features: the ``input_fn``'s feature dict.

    Returns:
        ``(logits, trainable_variables)``; the variables end with the bias.

    Raises:
        ValueError: v1 feature columns, or columns a linear model cannot take.
    """
    if not is_feature_column_v2(feature_columns):
        raise ValueError(_V1_COLUMNS_ERROR)
    model = LinearModel(
        feature_columns=feature_columns,
        units=units,
        sparse_combiner=sparse_combiner,
        name="linear/linear_model",
    )
    logits = model(features)
    weights = [v for v in model.variables if v is not model.bias]
    if units > 1:
        tf.compat.v1.summary.histogram("bias", model.bias)
    else:
        tf.compat.v1.summary.scalar("bias", model.bias[0])
    tf.compat.v1.summary.scalar("fraction_of_zero_weights", fraction_of_zero(weights))
    return logits, model.variables


def default_optimizer_v2(feature_columns: Any) -> Any:
    """TF 2.15's ``optimizer=None`` for a linear model: ``Ftrl(min(0.2, 1/sqrt(n)))``."""
    learning_rate = column_learning_rate(_LEARNING_RATE, len(feature_columns))
    return keras2().optimizers.legacy.Ftrl(learning_rate=learning_rate)


def _linear_model_fn_v2(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    feature_columns: tuple,
    optimizer: Any,
    config: Any,
    sparse_combiner: str = "sum",
) -> Any:
    del config
    validate_features(features)
    if _is_sdca(optimizer):
        assert sparse_combiner == "sum"  # the constructors check it; LinearEstimator as TF 2.15
        return _sdca_model_fn(features, labels, mode, head, feature_columns, optimizer)
    logits, trainable_variables = linear_model_fn_builder_v2(
        units=head.logits_dimension,
        feature_columns=feature_columns,
        sparse_combiner=sparse_combiner,
        features=features,
    )
    if mode == ModeKeys.TRAIN:
        optimizer = get_optimizer_instance_v2(
            optimizer or default_optimizer_v2(feature_columns), learning_rate=_LEARNING_RATE
        )
        # The global step counts the optimizer's steps, as the hooks read it.
        optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return head.create_estimator_spec(
        features=features,
        mode=mode,
        labels=labels,
        optimizer=optimizer,
        trainable_variables=trainable_variables,
        logits=logits,
    )


def _sdca_model_fn(
    features: dict, labels: Any, mode: str, head: Any, feature_columns: Any, optimizer: Any
) -> Any:
    """The linear model_fn with ``optimizer=LinearSDCA(...)`` (TF 2.15's ``_sdca_model_fn``)."""
    from .. import head as heads
    from ._sdca import UpdateWeightsHook

    if isinstance(head, heads.BinaryClassHead):
        loss_type = "logistic_loss"
    elif isinstance(head, heads.RegressionHead):
        assert head.logits_dimension == 1
        loss_type = "squared_loss"
    else:
        raise ValueError(f"Unsupported head type: {head}")
    model = LinearModel(
        feature_columns=feature_columns,
        units=1,
        sparse_combiner="sum",
        name="linear/linear_model",
    )
    logits = model(features)
    tf.compat.v1.summary.scalar("bias", model.bias[0])
    tf.compat.v1.summary.scalar(
        "fraction_of_zero_weights",
        fraction_of_zero([v for v in model.variables if v is not model.bias]),
    )
    if mode != ModeKeys.TRAIN:
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, logits=logits
        )
    sdca, train_op = optimizer.get_train_step(
        model.state_manager,
        head._weight_column,  # noqa: SLF001 - the head's own argument, as TF 2.15 reads it
        loss_type,
        feature_columns,
        features,
        labels,
        model.bias,
        tf.compat.v1.train.get_global_step(),
    )
    spec = head.create_estimator_spec(
        features=features,
        mode=mode,
        labels=labels,
        train_op_fn=lambda unused_loss: train_op,
        logits=logits,
    )
    return spec._replace(
        training_chief_hooks=tuple(spec.training_chief_hooks) + (UpdateWeightsHook(sdca, train_op),)
    )


def _is_sdca(optimizer: Any) -> bool:
    # LinearSDCA's module is imported only where one was made.
    sdca = sys.modules.get(f"{__package__}._sdca")
    return sdca is not None and isinstance(optimizer, sdca.LinearSDCA)


def _check_sdca(feature_columns: Any, optimizer: Any, sparse_combiner: str) -> bool:
    if not _is_sdca(optimizer):
        return False
    if sparse_combiner != "sum":
        raise ValueError('sparse_combiner must be "sum" when optimizer is a LinearSDCA object.')
    if not is_feature_column_v2(feature_columns):
        raise ValueError("V2 feature columns required when optimizer is a LinearSDCA object.")
    return True


# tf.losses.Reduction (Keras 2's) as TF 2.15's constructors default to it.
_SUM_OVER_BATCH_SIZE = keras2().losses.Reduction.SUM_OVER_BATCH_SIZE


def _linear_init(est, head, feature_columns, model_dir, optimizer, config, warm_start_from,
                 sparse_combiner) -> None:  # fmt: skip
    """Every linear estimator's ``Estimator.__init__`` (only the head differs)."""
    init_with_model_fn(
        est, Estimator, _linear_model_fn_v2, model_dir, config, warm_start_from, True,
        head=head, feature_columns=tuple(feature_columns or []), optimizer=optimizer,
        sparse_combiner=sparse_combiner,
    )  # fmt: skip


class LinearClassifierV2(Estimator):
    """A linear classifier (``tf.estimator.LinearClassifier``, TF 2.15's V2).

    Args:
        feature_columns: ``tf.feature_column`` v2 columns, dense or categorical.
        model_dir: where checkpoints go (``None``: a temporary directory).
        n_classes: number of classes (2: binary, with a logistic head).
        weight_column: a feature key or a ``numeric_column`` weighting each example.
        label_vocabulary: the labels as strings, when they are not class ids.
        optimizer: a name (``'Adagrad'``, ``'Adam'``, ``'Ftrl'``, ``'RMSProp'``,
            ``'SGD'``; learning rate 0.2), a Keras 2 legacy optimizer, a callable
            returning one, or ``None`` (``Ftrl(min(0.2, 1/sqrt(len(feature_columns))))``).
        config: a :class:`tf1compat_init.estimator.RunConfig`.
        warm_start_from: a checkpoint, a directory or a ``WarmStartSettings``.
        loss_reduction: a ``tf.losses.Reduction`` except ``NONE``.
        sparse_combiner: ``'sum'``, ``'mean'`` or ``'sqrtn'``.

    Raises:
        ValueError: as TF 2.15: ``n_classes`` < 2, a bad ``label_vocabulary`` or
            ``loss_reduction``; at ``train`` / ``evaluate`` / ``predict``, columns a linear
            model cannot take or a bad ``sparse_combiner``.

    Example:
        >>> est = LinearClassifier([tf.feature_column.numeric_column("x")])  # doctest: +SKIP
        >>> est.train(input_fn, steps=100)  # doctest: +SKIP
    """

    def __init__(
        self,
        feature_columns: Any,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = _SUM_OVER_BATCH_SIZE,
        sparse_combiner: str = "sum",
    ) -> None:
        if _check_sdca(feature_columns, optimizer, sparse_combiner) and n_classes > 2:
            raise ValueError("LinearSDCA cannot be used in a multi-class setting.")
        head = binary_or_multi_class_head(
            n_classes,
            weight_column=weight_column,
            label_vocabulary=label_vocabulary,
            loss_reduction=loss_reduction,
        )

        _linear_init(self, head, feature_columns, model_dir, optimizer, config, warm_start_from,
                     sparse_combiner)  # fmt: skip


class LinearRegressorV2(Estimator):
    """A linear regressor (``tf.estimator.LinearRegressor``, TF 2.15's V2).

    Args:
        feature_columns: ``tf.feature_column`` v2 columns, dense or categorical.
        model_dir: where checkpoints go.
        label_dimension: the number of regression targets per example.
        weight_column: a feature key or a ``numeric_column`` weighting each example.
        optimizer: as :class:`LinearClassifier`'s.
        config: a :class:`tf1compat_init.estimator.RunConfig`.
        warm_start_from: a checkpoint, a directory or a ``WarmStartSettings``.
        loss_reduction: a ``tf.losses.Reduction`` except ``NONE``.
        sparse_combiner: ``'sum'``, ``'mean'`` or ``'sqrtn'``.

    Example:
        >>> est = LinearRegressor([tf.feature_column.numeric_column("x")])  # doctest: +SKIP
    """

    def __init__(
        self,
        feature_columns: Any,
        model_dir: Any = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = _SUM_OVER_BATCH_SIZE,
        sparse_combiner: str = "sum",
    ) -> None:
        if _check_sdca(feature_columns, optimizer, sparse_combiner) and label_dimension > 1:
            raise ValueError("LinearSDCA can only be used with one-dimensional label.")
        head = regression_head(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
        )

        _linear_init(self, head, feature_columns, model_dir, optimizer, config, warm_start_from,
                     sparse_combiner)  # fmt: skip


class LinearEstimatorV2(Estimator):
    """A linear model with any head (``tf.estimator.LinearEstimator``, TF 2.15's V2).

    Args:
        head: a head, e.g. ``tf1compat_init.estimator.head.MultiLabelHead(3)``.
        feature_columns: ``tf.feature_column`` v2 columns, dense or categorical.
        model_dir: where checkpoints go.
        optimizer: as :class:`LinearClassifier`'s.
        config: a :class:`tf1compat_init.estimator.RunConfig`.
        sparse_combiner: ``'sum'``, ``'mean'`` or ``'sqrtn'``.
        warm_start_from: a checkpoint, a directory or a ``WarmStartSettings``.

    Example:
        >>> est = LinearEstimator(head, [tf.feature_column.numeric_column("x")])  # doctest: +SKIP
    """

    def __init__(
        self,
        head: Any,
        feature_columns: Any,
        model_dir: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        sparse_combiner: str = "sum",
        warm_start_from: Any = None,
    ) -> None:
        _linear_init(self, head, feature_columns, model_dir, optimizer, config, warm_start_from,
                     sparse_combiner)  # fmt: skip


# TF 2.15 named the V2 classes so (their name shows in reprs and argument errors).
LinearClassifier = LinearClassifierV2
LinearRegressor = LinearRegressorV2
LinearEstimator = LinearEstimatorV2
