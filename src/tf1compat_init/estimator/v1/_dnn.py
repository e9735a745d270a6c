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
# Modified from `tensorflow_estimator/python/estimator/canned/dnn.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; only the v1 (tf.compat.v1 layers and optimizers)
# path.
"""``DNNClassifier``, ``DNNRegressor``, ``DNNEstimator`` of ``tf.compat.v1.estimator`` (TF 2.15).

A feed-forward network in variable scope ``dnn``: ``input_from_feature_columns/input_layer``
(``tf.compat.v1.feature_column.input_layer``), ``hiddenlayer_<i>`` and ``logits`` (Keras 2
v1 ``Dense``, Glorot-uniform kernels), trained by a ``tf.compat.v1.train`` optimizer
(``Adagrad``, learning rate 0.05, by default) through a v1 head with ``SUM`` loss reduction.
Variables are created under ``min_max_variable_partitioner``, and the head runs inside the
``dnn`` scope, as in TF 2.15: so checkpoints carry the same names, slots included
(``dnn/hiddenlayer_0/kernel/t_0/Adagrad``), and a TF 1.x / 2.15 ``model_dir`` resumes here.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from .._spec import ModeKeys
from ..canned._common import (
    check_units,
    dnn_forward,
    init_with_model_fn,
    ps_partitioners,
    validate_features,
)
from ..canned._optimizers import LEARNING_RATE, get_optimizer_instance
from . import _head as head_lib
from ._estimator import Estimator
from ._layers import legacy_layers

__all__ = ["DNNClassifier", "DNNEstimator", "DNNRegressor"]

_SUM = tf.compat.v1.losses.Reduction.SUM


def dnn_logits(
    features: dict,
    mode: str,
    units: int,
    hidden_units: Any,
    feature_columns: Any,
    activation_fn: Any,
    dropout: float | None,
    input_layer_partitioner: Any,
    batch_norm: bool,
) -> Any:
    """The logits of the v1 DNN, built in the current variable scope (``dnn``).

    Raises:
        ValueError: ``units`` is not an int.
    """
    check_units(units)
    layers = legacy_layers()
    is_training = mode == ModeKeys.TRAIN
    hidden, scope_names, dropouts, norms = [], [], [], []
    # The layers are made first, each in its own variable scope, then called: the
    # order TF 2.15's Keras model made them in.
    for layer_id, num_units in enumerate(hidden_units):
        with tf.compat.v1.variable_scope(f"hiddenlayer_{layer_id}") as scope:
            hidden.append(
                layers.Dense(
                    units=num_units,
                    activation=activation_fn,
                    kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
                    name=scope,
                    _scope=scope,
                )
            )
            scope_names.append(scope.name)
            if dropout is not None:
                dropouts.append(layers.Dropout(rate=dropout))
            if batch_norm:
                norms.append(
                    layers.BatchNormalization(
                        momentum=0.999,  # 0.99 diverges on some problems (TF's choice)
                        trainable=True,
                        name=f"batchnorm_{layer_id}",
                        _scope=f"batchnorm_{layer_id}",
                    )
                )
    with tf.compat.v1.variable_scope("logits") as scope:
        logits_layer = layers.Dense(
            units=units,
            activation=None,
            kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
            name=scope,
            _scope=scope,
        )
        logits_scope_name = scope.name
    with tf.compat.v1.variable_scope(
        "input_from_feature_columns", partitioner=input_layer_partitioner
    ):
        net = tf.compat.v1.feature_column.input_layer(features, feature_columns)
    return dnn_forward(
        net, hidden, dropouts, norms, scope_names, logits_layer, logits_scope_name, is_training
    )


def dnn_model_fn(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    hidden_units: Any,
    feature_columns: Any,
    optimizer: Any = "Adagrad",
    activation_fn: Any = tf.nn.relu,
    dropout: float | None = None,
    input_layer_partitioner: Any = None,
    config: Any = None,
    batch_norm: bool = False,
) -> Any:
    """The v1 DNN ``model_fn`` (TF 2.15's ``dnn._dnn_model_fn``, without TPU)."""
    optimizer = get_optimizer_instance(optimizer, learning_rate=LEARNING_RATE)
    validate_features(features)
    num_ps_replicas, input_layer_partitioner = ps_partitioners(config, input_layer_partitioner)
    partitioner = tf.compat.v1.min_max_variable_partitioner(max_partitions=num_ps_replicas)
    with tf.compat.v1.variable_scope(
        "dnn", values=tuple(features.values()), partitioner=partitioner
    ):
        logits = dnn_logits(
            features,
            mode,
            units=head.logits_dimension,
            hidden_units=hidden_units,
            feature_columns=feature_columns,
            activation_fn=activation_fn,
            dropout=dropout,
            input_layer_partitioner=input_layer_partitioner,
            batch_norm=batch_norm,
        )
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, optimizer=optimizer, logits=logits
        )


def _dnn_estimator_init(
    est: Any,
    head: Any,
    hidden_units: Any,
    feature_columns: Any,
    model_dir: Any,
    optimizer: Any,
    activation_fn: Any,
    dropout: Any,
    input_layer_partitioner: Any,
    config: Any,
    warm_start_from: Any,
    batch_norm: bool,
) -> None:
    init_with_model_fn(
        est, Estimator, dnn_model_fn, model_dir, config, warm_start_from, True,
        head=head, hidden_units=hidden_units, feature_columns=tuple(feature_columns or []),
        optimizer=optimizer, activation_fn=activation_fn, dropout=dropout,
        input_layer_partitioner=input_layer_partitioner, batch_norm=batch_norm,
    )  # fmt: skip


class DNNClassifier(Estimator):
    """``tf.compat.v1.estimator.DNNClassifier``: a DNN classifier with v1 optimizers.

    Same arguments and defaults as TF 2.15 (``n_classes=2``: sigmoid, else softmax
    cross entropy; ``loss_reduction=SUM``).

    Example:
        >>> est = DNNClassifier([16, 8], [tf.feature_column.numeric_column("x")])  # doctest: +SKIP
        >>> est.train(input_fn, steps=100)  # doctest: +SKIP
    """

    def __init__(
        self,
        hidden_units: Any,
        feature_columns: Any,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Any = tf.nn.relu,
        dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = _SUM,
        batch_norm: bool = False,
    ) -> None:
        head = head_lib._binary_logistic_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        _dnn_estimator_init(
            self, head, hidden_units, feature_columns, model_dir, optimizer, activation_fn,
            dropout, input_layer_partitioner, config, warm_start_from, batch_norm,
        )  # fmt: skip


class DNNRegressor(Estimator):
    """``tf.compat.v1.estimator.DNNRegressor``: a DNN regressor (mean squared error, summed)."""

    def __init__(
        self,
        hidden_units: Any,
        feature_columns: Any,
        model_dir: Any = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Any = tf.nn.relu,
        dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = _SUM,
        batch_norm: bool = False,
    ) -> None:
        head = head_lib._regression_head(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
        )
        _dnn_estimator_init(
            self, head, hidden_units, feature_columns, model_dir, optimizer, activation_fn,
            dropout, input_layer_partitioner, config, warm_start_from, batch_norm,
        )  # fmt: skip


class DNNEstimator(Estimator):
    """``tf.compat.v1.estimator.DNNEstimator``: the v1 DNN on a v1 ``_Head`` you give."""

    def __init__(
        self,
        head: Any,
        hidden_units: Any,
        feature_columns: Any,
        model_dir: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Any = tf.nn.relu,
        dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        batch_norm: bool = False,
    ) -> None:
        _dnn_estimator_init(
            self, head, hidden_units, feature_columns, model_dir, optimizer, activation_fn,
            dropout, input_layer_partitioner, config, warm_start_from, batch_norm,
        )  # fmt: skip
