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
# Modified from `tensorflow_estimator/python/estimator/canned/dnn_linear_combined.py` (v2.15.0)
# for tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; Keras 2 layers and optimizers come from tf_keras on
# TF >= 2.16 (`_keras2`).
"""``DNNLinearCombined{Classifier,Regressor,Estimator}`` as tensorflow-estimator 2.15 has them.

Wide and deep: the logits are the sum of a linear model's (``linear/linear_model/...``,
see ``_linear``) and a DNN's (``dnn/...``, see ``_dnn``), each part trained by its own
Keras 2 legacy optimizer (Ftrl and Adagrad by default). The DNN optimizer counts its
steps in the global step; the linear one keeps its own ``iterations``, saved as
``training/<Optimizer>/iter`` as in TF 2.15.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tensorflow as tf

from .. import Estimator
from .._spec import ModeKeys
from ..head._base import replica_scaled_loss
from ._common import (
    NO_COLUMNS,
    add_layer_summary,
    check_no_sync_replicas_optimizer,
    column_learning_rate,
    init_with_model_fn,
    require_hidden_units,
    sum_logits,
    validate_feature_columns,
    validate_features,
)
from ._dnn import build_dnn_logits
from ._head_utils import binary_or_multi_class_head, regression_head
from ._linear import _SUM_OVER_BATCH_SIZE, linear_model_fn_builder_v2
from ._optimizers import get_optimizer_instance_v2

__all__ = [
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor",
]

# The learning rates a named optimizer gets in the combined model (TF 2.15's).
_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005


def dnn_linear_combined_model_fn(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    linear_feature_columns: Any = None,
    linear_optimizer: Any = "Ftrl",
    dnn_feature_columns: Any = None,
    dnn_optimizer: Any = "Adagrad",
    dnn_hidden_units: Iterable[int] | None = None,
    dnn_activation_fn: Any = tf.nn.relu,
    dnn_dropout: float | None = None,
    batch_norm: bool = False,
    linear_sparse_combiner: str = "sum",
    loss_reduction: Any = _SUM_OVER_BATCH_SIZE,
) -> Any:
    """The ``model_fn`` of the V2 combined estimators (TF 2.15's, same build order).

    ``loss_reduction`` only decides whether the training loss is divided by the number of
    replicas under a distribution strategy (``SUM_OVER_BATCH_SIZE``: yes). As in TF 2.15,
    only the classifier passes its own; the regressor and the head-based estimator leave the
    default, whatever their head's reduction.
    """
    validate_features(features)
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError(NO_COLUMNS)
    training = mode == ModeKeys.TRAIN

    dnn_logits = None
    if dnn_feature_columns:
        if training:
            dnn_optimizer = get_optimizer_instance_v2(
                dnn_optimizer, learning_rate=_DNN_LEARNING_RATE
            )
            check_no_sync_replicas_optimizer(dnn_optimizer)
        require_hidden_units(dnn_hidden_units)
        dnn_logits, dnn_variables, dnn_update_ops = build_dnn_logits(
            units=head.logits_dimension,
            hidden_units=dnn_hidden_units,
            feature_columns=dnn_feature_columns,
            activation_fn=dnn_activation_fn,
            dropout=dnn_dropout,
            batch_norm=batch_norm,
            features=features,
            mode=mode,
        )

    linear_logits = None
    if linear_feature_columns:
        if training:
            linear_optimizer = get_optimizer_instance_v2(
                linear_optimizer,
                learning_rate=column_learning_rate(
                    _LINEAR_LEARNING_RATE, len(linear_feature_columns)
                ),
            )
            check_no_sync_replicas_optimizer(linear_optimizer)
        linear_logits, linear_variables = linear_model_fn_builder_v2(
            units=head.logits_dimension,
            feature_columns=linear_feature_columns,
            sparse_combiner=linear_sparse_combiner,
            features=features,
        )
        add_layer_summary(linear_logits, "linear")

    logits = sum_logits(dnn_logits, linear_logits)

    def train_op_fn(loss: tf.Tensor) -> tf.Operation:
        loss = replica_scaled_loss(loss, loss_reduction)
        ops = []
        if dnn_logits is not None:
            ops += dnn_optimizer.get_updates(loss, dnn_variables)
            ops += list(dnn_update_ops or [])
        if linear_logits is not None:
            ops += linear_optimizer.get_updates(loss, linear_variables)
        return tf.group(*ops)

    if training:
        # Only one optimizer can count in the global step; the other keeps its own `iter`.
        counting = dnn_optimizer if dnn_logits is not None else linear_optimizer
        counting.iterations = tf.compat.v1.train.get_or_create_global_step()
    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, train_op_fn=train_op_fn, logits=logits
    )


def _combined_init(est, head, model_dir, config, warm_start_from, **kwargs) -> None:
    # The V2 estimators build nothing from the run's config (no partitioners).
    init_with_model_fn(
        est, Estimator, dnn_linear_combined_model_fn, model_dir, config, warm_start_from, False,
        head=head, **kwargs,
    )  # fmt: skip


class DNNLinearCombinedClassifier(Estimator):
    """Wide and deep classifier (``tf.estimator.DNNLinearCombinedClassifier``, TF 2.15).

    Args:
        model_dir: where checkpoints go; a TF 2.15 ``model_dir`` resumes here and back.
        linear_feature_columns: the linear (wide) part's ``tf.feature_column`` columns.
        linear_optimizer: its optimizer (name, Keras 2 legacy instance or callable); a
            name gets learning rate ``min(0.005, 1/sqrt(len(linear_feature_columns)))``.
        dnn_feature_columns: the DNN (deep) part's columns (dense ones).
        dnn_optimizer: its optimizer; a name gets learning rate 0.001.
        dnn_hidden_units: hidden layer widths; required with ``dnn_feature_columns``.
        dnn_activation_fn: the hidden layers' activation.
        dnn_dropout: the drop probability of a hidden unit while training, or ``None``.
        n_classes: number of label classes.
        weight_column: a feature name or ``numeric_column`` weighting each example.
        label_vocabulary: string labels, in class-id order.
        config: a :class:`~tf1compat_init.estimator.RunConfig`.
        warm_start_from: a checkpoint path or :class:`WarmStartSettings`.
        loss_reduction: a ``tf.losses.Reduction`` other than ``NONE``.
        batch_norm: batch normalization after each hidden layer.
        linear_sparse_combiner: ``'sum'``, ``'mean'`` or ``'sqrtn'``.

    Raises:
        ValueError: neither column list given (TF 2.15's message).

    Example:
        >>> from tf1compat_init.estimator import DNNLinearCombinedClassifier  # doctest: +SKIP
        >>> est = DNNLinearCombinedClassifier(  # doctest: +SKIP
        ...     model_dir=tf215_model_dir, linear_feature_columns=wide,
        ...     dnn_feature_columns=deep, dnn_hidden_units=[16, 8])
    """

    def __init__(
        self,
        model_dir: Any = None,
        linear_feature_columns: Any = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Any = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Any = None,
        dnn_activation_fn: Any = tf.nn.relu,
        dnn_dropout: float | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: Any = _SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ) -> None:
        self._feature_columns = validate_feature_columns(
            linear_feature_columns, dnn_feature_columns
        )
        head = binary_or_multi_class_head(
            n_classes,
            weight_column=weight_column,
            label_vocabulary=label_vocabulary,
            loss_reduction=loss_reduction,
        )
        _combined_init(
            self, head, model_dir, config, warm_start_from,
            linear_feature_columns=linear_feature_columns, linear_optimizer=linear_optimizer,
            dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
            dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn,
            dnn_dropout=dnn_dropout, batch_norm=batch_norm,
            linear_sparse_combiner=linear_sparse_combiner, loss_reduction=loss_reduction,
        )  # fmt: skip


class DNNLinearCombinedRegressor(Estimator):
    """Wide and deep regressor (``tf.estimator.DNNLinearCombinedRegressor``, TF 2.15).

    Arguments as :class:`DNNLinearCombinedClassifier`, with ``label_dimension`` instead
    of ``n_classes`` / ``label_vocabulary``.
    """

    def __init__(
        self,
        model_dir: Any = None,
        linear_feature_columns: Any = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Any = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Any = None,
        dnn_activation_fn: Any = tf.nn.relu,
        dnn_dropout: float | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: Any = _SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ) -> None:
        self._feature_columns = validate_feature_columns(
            linear_feature_columns, dnn_feature_columns
        )
        head = regression_head(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
        )
        _combined_init(
            self, head, model_dir, config, warm_start_from,
            linear_feature_columns=linear_feature_columns, linear_optimizer=linear_optimizer,
            dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
            dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn,
            dnn_dropout=dnn_dropout, batch_norm=batch_norm,
            linear_sparse_combiner=linear_sparse_combiner,
        )  # fmt: skip


class DNNLinearCombinedEstimator(Estimator):
    """Wide and deep with a head of your choice (``tf.estimator.DNNLinearCombinedEstimator``).

    Arguments as :class:`DNNLinearCombinedClassifier`, with ``head`` in place of the
    label arguments. As in TF 2.15 there is no ``warm_start_from``.
    """

    def __init__(
        self,
        head: Any,
        model_dir: Any = None,
        linear_feature_columns: Any = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Any = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Any = None,
        dnn_activation_fn: Any = tf.nn.relu,
        dnn_dropout: float | None = None,
        config: Any = None,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ) -> None:
        self._feature_columns = validate_feature_columns(
            linear_feature_columns, dnn_feature_columns
        )
        _combined_init(
            self, head, model_dir, config, None,
            linear_feature_columns=linear_feature_columns, linear_optimizer=linear_optimizer,
            dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
            dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn,
            dnn_dropout=dnn_dropout, batch_norm=batch_norm,
            linear_sparse_combiner=linear_sparse_combiner,
        )  # fmt: skip
