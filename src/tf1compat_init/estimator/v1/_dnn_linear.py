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
# tf.compat.v1 without tensorflow_estimator; only the v1 path.
"""``DNNLinearCombined{Classifier,Regressor,Estimator}`` of ``tf.compat.v1.estimator`` (TF 2.15).

Wide & deep: the logits of the v1 linear model (scope ``linear``) and of the v1 DNN
(scope ``dnn``) are added, and each part is trained by its own ``tf.compat.v1.train``
optimizer (``Ftrl`` with learning rate ``min(0.005, 1/sqrt(n_linear_columns))``,
``Adagrad`` with 0.001, by default) on the same loss, then ``global_step`` is incremented
once. The head runs outside both scopes, so slots are named ``<variable>/<Optimizer>``.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ..canned._common import (
    NO_COLUMNS,
    add_layer_summary,
    check_no_sync_replicas_optimizer,
    column_learning_rate,
    init_with_model_fn,
    ps_partitioners,
    require_hidden_units,
    sum_logits,
    validate_feature_columns,
    validate_features,
)
from ..canned._optimizers import get_optimizer_instance
from . import _head as head_lib
from ._dnn import dnn_logits
from ._estimator import Estimator
from ._linear import linear_logits

__all__ = [
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor",
]

_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005
_SUM = tf.compat.v1.losses.Reduction.SUM


def dnn_linear_combined_model_fn(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    linear_feature_columns: Any = None,
    linear_optimizer: Any = "Ftrl",
    dnn_feature_columns: Any = None,
    dnn_optimizer: Any = "Adagrad",
    dnn_hidden_units: Any = None,
    dnn_activation_fn: Any = tf.nn.relu,
    dnn_dropout: float | None = None,
    input_layer_partitioner: Any = None,
    config: Any = None,
    batch_norm: bool = False,
    linear_sparse_combiner: str = "sum",
) -> Any:
    """The v1 wide & deep ``model_fn`` (TF 2.15's ``_dnn_linear_combined_model_fn``)."""
    validate_features(features)
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError(NO_COLUMNS)
    num_ps_replicas, input_layer_partitioner = ps_partitioners(config, input_layer_partitioner)
    deep = wide = None
    if dnn_feature_columns:
        dnn_optimizer = get_optimizer_instance(dnn_optimizer, learning_rate=_DNN_LEARNING_RATE)
        check_no_sync_replicas_optimizer(dnn_optimizer)
        require_hidden_units(dnn_hidden_units)
        with tf.compat.v1.variable_scope(
            "dnn",
            values=tuple(features.values()),
            partitioner=tf.compat.v1.min_max_variable_partitioner(max_partitions=num_ps_replicas),
        ) as scope:
            dnn_scope = scope.name
            deep = dnn_logits(
                features,
                mode,
                units=head.logits_dimension,
                hidden_units=dnn_hidden_units,
                feature_columns=dnn_feature_columns,
                activation_fn=dnn_activation_fn,
                dropout=dnn_dropout,
                input_layer_partitioner=input_layer_partitioner,
                batch_norm=batch_norm,
            )
    if linear_feature_columns:
        rate = column_learning_rate(_LINEAR_LEARNING_RATE, len(linear_feature_columns))
        linear_optimizer = get_optimizer_instance(linear_optimizer, learning_rate=rate)
        check_no_sync_replicas_optimizer(linear_optimizer)
        with tf.compat.v1.variable_scope(
            "linear", values=tuple(features.values()), partitioner=input_layer_partitioner
        ) as scope:
            linear_scope = scope.name
            wide = linear_logits(
                features, linear_feature_columns, head.logits_dimension, linear_sparse_combiner
            )
            add_layer_summary(wide, scope.name)
    logits = sum_logits(deep, wide)

    def _train_op_fn(loss: Any) -> Any:
        train_ops = []
        global_step = tf.compat.v1.train.get_global_step()
        trainable = tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES
        if deep is not None:
            var_list = tf.compat.v1.get_collection(trainable, scope=dnn_scope)
            train_ops.append(dnn_optimizer.minimize(loss, var_list=var_list))
        if wide is not None:
            var_list = tf.compat.v1.get_collection(trainable, scope=linear_scope)
            train_ops.append(linear_optimizer.minimize(loss, var_list=var_list))
        train_op = tf.group(*train_ops)
        with tf.control_dependencies([train_op]):
            return tf.compat.v1.assign_add(global_step, 1).op

    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, train_op_fn=_train_op_fn, logits=logits
    )


def _combined_init(est, head, model_dir, config, warm_start_from, **kwargs) -> None:
    init_with_model_fn(
        est, Estimator, dnn_linear_combined_model_fn, model_dir, config, warm_start_from, True,
        head=head, **kwargs,
    )  # fmt: skip


class DNNLinearCombinedClassifier(Estimator):
    """``tf.compat.v1.estimator.DNNLinearCombinedClassifier``: wide & deep classifier."""

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
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = _SUM,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ) -> None:
        self._feature_columns = validate_feature_columns(
            linear_feature_columns, dnn_feature_columns
        )
        head = head_lib._binary_logistic_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        _combined_init(
            self, head, model_dir, config, warm_start_from,
            linear_feature_columns=linear_feature_columns, linear_optimizer=linear_optimizer,
            dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
            dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn,
            dnn_dropout=dnn_dropout, input_layer_partitioner=input_layer_partitioner,
            batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner,
        )  # fmt: skip


class DNNLinearCombinedRegressor(Estimator):
    """``tf.compat.v1.estimator.DNNLinearCombinedRegressor``: wide & deep regressor."""

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
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = _SUM,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ) -> None:
        self._feature_columns = validate_feature_columns(
            linear_feature_columns, dnn_feature_columns
        )
        head = head_lib._regression_head(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
        )
        _combined_init(
            self, head, model_dir, config, warm_start_from,
            linear_feature_columns=linear_feature_columns, linear_optimizer=linear_optimizer,
            dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
            dnn_hidden_units=dnn_hidden_units, dnn_activation_fn=dnn_activation_fn,
            dnn_dropout=dnn_dropout, input_layer_partitioner=input_layer_partitioner,
            batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner,
        )  # fmt: skip


class DNNLinearCombinedEstimator(Estimator):
    """``tf.compat.v1.estimator.DNNLinearCombinedEstimator``: wide & deep on a v1 ``_Head``."""

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
        input_layer_partitioner: Any = None,
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
            dnn_dropout=dnn_dropout, input_layer_partitioner=input_layer_partitioner,
            batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner,
        )  # fmt: skip
