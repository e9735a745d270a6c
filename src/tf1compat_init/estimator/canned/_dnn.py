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
# tf.compat.v1 without tensorflow_estimator; Keras 2 layers and optimizers come from tf_keras on
# TF >= 2.16 (`_keras2`).
"""``DNNClassifier``, ``DNNRegressor`` and ``DNNEstimator`` as tensorflow-estimator 2.15 has them.

The V2 flavours (``tf.estimator.DNN*`` in TF 2.x): feature columns into Keras 2's
``DenseFeatures``, ``Dense`` hidden layers (optional dropout and batch normalization),
a ``logits`` layer, trained by a Keras 2 legacy optimizer whose ``iterations`` is the
global step. Every variable, slot and summary has TF 2.15's name, and random
initializers are drawn in the same order, so checkpoints move both ways and the same
seed gives the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tensorflow as tf
from tensorflow.python.feature_column.feature_column_v2 import is_feature_column_v2

from .. import Estimator
from .._keras2 import keras2
from .._spec import ModeKeys
from ._common import (
    check_units,
    dnn_forward,
    init_with_model_fn,
    validate_features,
)
from ._head_utils import binary_or_multi_class_head, regression_head
from ._optimizers import get_optimizer_instance_v2

__all__ = [
    "DNNClassifier",
    "DNNEstimator",
    "DNNRegressor",
    "build_dnn_logits",
]

_keras = keras2()

_V1_COLUMNS = (
    "Received a feature column from TensorFlow v1, but this is a TensorFlow v2 Estimator. "
    "Please either use v2 feature columns (accessible via tf.feature_column.* in TF 2.x) "
    "with this Estimator, or switch to a v1 Estimator for use with v1 feature columns "
    "(accessible via tf.compat.v1.estimator.* and tf.compat.v1.feature_column.*, "
    "respectively."
)


def _scope_name(name: str) -> str:
    return name[:-1] if name.endswith("/") else name


class _DNNModel(_keras.Model):
    """The network of TF 2.15's ``_DNNModelV2``: its layers, names and creation order.

    Layer names come from graph name scopes opened at construction, as TF 2.15 does, so
    that a clash with a user's op name is uniquified the same way (``logits_1``).
    """

    def __init__(
        self,
        units: int,
        hidden_units: Iterable[int],
        feature_columns: Any,
        activation_fn: Any,
        dropout: float | None,
        batch_norm: bool,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        with tf.compat.v1.name_scope("input_from_feature_columns") as scope:
            if not is_feature_column_v2(feature_columns):
                raise ValueError(_V1_COLUMNS)
            self._input_layer = _keras.layers.DenseFeatures(
                feature_columns=feature_columns, name=scope + "input_layer"
            )
        # Keras lists variables in the order layers were tracked: all hidden layers, then
        # all batch normalizations, as TF 2.15 (the optimizer's slots follow that order).
        self._tags: list[str] = []
        self._hidden_layers = []
        self._dropout_layers = []
        self._batch_norm_layers = []
        for i, width in enumerate(hidden_units):
            with tf.compat.v1.name_scope(f"hiddenlayer_{i}") as scope:
                tag = _scope_name(scope)
            self._tags.append(tag)
            self._hidden_layers.append(
                _keras.layers.Dense(
                    units=width,
                    activation=activation_fn,
                    kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
                    name=tag,
                )
            )
            if dropout is not None:
                self._dropout_layers.append(_keras.layers.Dropout(rate=dropout))
            if batch_norm:
                self._batch_norm_layers.append(
                    _keras.layers.BatchNormalization(
                        momentum=0.999, trainable=True, name=f"{tag}/batchnorm_{i}"
                    )
                )
        with tf.compat.v1.name_scope("logits") as scope:
            self._logits_tag = _scope_name(scope)
        self._logits_layer = _keras.layers.Dense(
            units=units,
            activation=None,
            kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
            name=self._logits_tag,
        )

    def call(self, features: dict, mode: str) -> tf.Tensor:
        training = mode == ModeKeys.TRAIN
        try:
            net = self._input_layer(features, training=training)
        except TypeError:  # an input layer that takes no training argument
            net = self._input_layer(features)
        return dnn_forward(
            net, self._hidden_layers, self._dropout_layers, self._batch_norm_layers, self._tags,
            self._logits_layer, self._logits_tag, training,
        )  # fmt: skip


def build_dnn_logits(
    units: int,
    hidden_units: Iterable[int],
    feature_columns: Any,
    activation_fn: Any,
    dropout: float | None,
    batch_norm: bool,
    features: dict,
    mode: str,
) -> tuple[tf.Tensor, list, list]:
    """Builds the ``dnn`` network on ``features``.

    Returns:
        ``(logits, trainable_variables, update_ops)``; the update ops are batch
        normalization's moving averages (empty without ``batch_norm``).

    Raises:
        ValueError: ``units`` is not an int, or a feature column is a v1 column.
    """
    check_units(units)
    model = _DNNModel(
        units, hidden_units, feature_columns, activation_fn, dropout, batch_norm, name="dnn"
    )
    logits = model(features, mode)
    return logits, model.trainable_variables, model.updates


def dnn_model_fn(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    hidden_units: Iterable[int],
    feature_columns: Any,
    optimizer: Any = "Adagrad",
    activation_fn: Any = tf.nn.relu,
    dropout: float | None = None,
    batch_norm: bool = False,
) -> Any:
    """The ``model_fn`` of the V2 DNN estimators (TF 2.15's ``dnn_model_fn_v2``)."""
    validate_features(features)
    logits, trainable_variables, update_ops = build_dnn_logits(
        units=head.logits_dimension,
        hidden_units=hidden_units,
        feature_columns=feature_columns,
        activation_fn=activation_fn,
        dropout=dropout,
        batch_norm=batch_norm,
        features=features,
        mode=mode,
    )
    if mode == ModeKeys.TRAIN:
        # A name gets the optimizer's own default learning rate (Adagrad: 0.001), as in
        # TF 2.15's V2 estimators; the v1 ones used 0.05.
        optimizer = get_optimizer_instance_v2(optimizer)
        # The optimizer counts its steps in global_step: no `iter` variable is saved.
        optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return head.create_estimator_spec(
        features=features,
        mode=mode,
        labels=labels,
        optimizer=optimizer,
        logits=logits,
        trainable_variables=trainable_variables,
        update_ops=update_ops,
    )


class _DNNBase(Estimator):
    """An Estimator whose ``model_fn`` is :func:`dnn_model_fn` with a given head."""

    def __init__(
        self,
        head: Any,
        hidden_units: Iterable[int],
        feature_columns: Any,
        model_dir: Any,
        optimizer: Any,
        activation_fn: Any,
        dropout: float | None,
        config: Any,
        warm_start_from: Any,
        batch_norm: bool,
    ) -> None:
        # The V2 estimators build nothing from the run's config (no partitioners).
        init_with_model_fn(
            self, Estimator, dnn_model_fn, model_dir, config, warm_start_from, False,
            head=head, hidden_units=hidden_units, feature_columns=tuple(feature_columns or []),
            optimizer=optimizer, activation_fn=activation_fn, dropout=dropout,
            batch_norm=batch_norm,
        )  # fmt: skip


class DNNClassifier(_DNNBase):
    """A classifier for TensorFlow DNN models (``tf.estimator.DNNClassifier``, TF 2.15).

    Args:
        hidden_units: widths of the hidden layers, e.g. ``[64, 32]``.
        feature_columns: ``tf.feature_column`` (v2) columns of the model's input.
        model_dir: where checkpoints go; a TF 2.15 ``model_dir`` resumes here and back.
        n_classes: number of label classes (2: a logistic head, else softmax).
        weight_column: a feature name or ``numeric_column`` weighting each example's loss.
        label_vocabulary: string labels, in class-id order.
        optimizer: a name (``'Adagrad'``, ``'Adam'``, ``'Ftrl'``, ``'RMSProp'``,
            ``'SGD'``; the optimizer's default learning rate), a Keras 2 legacy
            optimizer, or a callable returning one.
        activation_fn: the hidden layers' activation.
        dropout: the probability of dropping a hidden unit while training, or ``None``.
        config: a :class:`~tf1compat_init.estimator.RunConfig`.
        warm_start_from: a checkpoint path or :class:`WarmStartSettings`.
        loss_reduction: a ``tf.losses.Reduction`` other than ``NONE``.
        batch_norm: batch normalization after each hidden layer.

    Example:
        >>> from tf1compat_init.estimator import DNNClassifier  # doctest: +SKIP
        >>> est = DNNClassifier([16, 8], columns, model_dir=tf215_model_dir)  # doctest: +SKIP
        >>> est.train(input_fn, steps=100)  # doctest: +SKIP
    """

    def __init__(
        self,
        hidden_units: Iterable[int],
        feature_columns: Any,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Any = tf.nn.relu,
        dropout: float | None = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: Any = _keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
    ) -> None:
        head = binary_or_multi_class_head(
            n_classes,
            weight_column=weight_column,
            label_vocabulary=label_vocabulary,
            loss_reduction=loss_reduction,
        )
        super().__init__(
            head,
            hidden_units,
            feature_columns,
            model_dir,
            optimizer,
            activation_fn,
            dropout,
            config,
            warm_start_from,
            batch_norm,
        )


class DNNRegressor(_DNNBase):
    """A regressor for TensorFlow DNN models (``tf.estimator.DNNRegressor``, TF 2.15).

    Arguments as :class:`DNNClassifier`, with ``label_dimension`` (the number of
    regression targets per example) instead of ``n_classes`` / ``label_vocabulary``.
    """

    def __init__(
        self,
        hidden_units: Iterable[int],
        feature_columns: Any,
        model_dir: Any = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Any = tf.nn.relu,
        dropout: float | None = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: Any = _keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
    ) -> None:
        head = regression_head(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
        )
        super().__init__(
            head,
            hidden_units,
            feature_columns,
            model_dir,
            optimizer,
            activation_fn,
            dropout,
            config,
            warm_start_from,
            batch_norm,
        )


class DNNEstimator(_DNNBase):
    """A DNN with a head of your choice (``tf.estimator.DNNEstimator``, TF 2.15).

    Arguments as :class:`DNNClassifier`, with ``head`` (a head of
    :mod:`tf1compat_init.estimator.head`) in place of the label arguments.
    """

    def __init__(
        self,
        head: Any,
        hidden_units: Iterable[int],
        feature_columns: Any,
        model_dir: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Any = tf.nn.relu,
        dropout: float | None = None,
        config: Any = None,
        warm_start_from: Any = None,
        batch_norm: bool = False,
    ) -> None:
        super().__init__(
            head,
            hidden_units,
            feature_columns,
            model_dir,
            optimizer,
            activation_fn,
            dropout,
            config,
            warm_start_from,
            batch_norm,
        )
