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
# Modified from `tensorflow_estimator/python/estimator/head/sequential_head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator.
"""``SequentialHeadWrapper``: a head over sequences, for the RNN estimators (not public).

tensorflow-estimator 2.15's ``head/sequential_head.py``: logits and labels of shape
``[batch, time, ...]`` are flattened to the steps where the sequence mask (a feature)
is true, then handed to an ordinary (static) head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import tensorflow as tf

from .._spec import EstimatorSpec, ModeKeys
from . import _base
from ._multi_head import MultiHead

__all__ = ["SequentialHeadWrapper"]


class SequentialHeadWrapper(_base.Head):
    """A static head applied to every unmasked step of a sequence.

    Args:
        static_head: the head for one step (not a ``MultiHead``).
        sequence_length_mask: the feature holding the ``[batch, time]`` mask.
        feature_columns: names of ``[batch, time, ...]`` features the static head
            reads (e.g. its weight column), flattened the same way.
    """

    def __init__(
        self,
        static_head: Any,
        sequence_length_mask: str = "sequence_length_mask",
        feature_columns: Any = None,
    ) -> None:
        if not isinstance(sequence_length_mask, str):
            raise TypeError(
                "`sequence_mask` column must be a string. "
                f"Given type: {type(sequence_length_mask)}."
            )
        self._sequence_length_mask = sequence_length_mask
        feature_columns = feature_columns or []
        if not isinstance(feature_columns, Iterable):
            raise TypeError(
                "`feature_columns` must be either a string or an iterable of strings got "
                f"{type(feature_columns)} instead."
            )
        if isinstance(feature_columns, str):
            feature_columns = [feature_columns]
        for column in feature_columns:
            if not isinstance(column, str):
                raise TypeError(f"Column must a string. Given type: {type(column)}.")
        self._feature_columns = feature_columns
        if isinstance(static_head, MultiHead):
            raise ValueError("`MultiHead` is not supported with `SequentialHeadWrapper`.")
        self._static_head = static_head

    @property
    def input_sequence_mask_key(self) -> str:
        return self._sequence_length_mask

    @property
    def static_head(self) -> Any:
        return self._static_head

    @property
    def logits_dimension(self) -> int:
        return self._static_head.logits_dimension

    @property
    def loss_reduction(self) -> str:
        return self._static_head.loss_reduction

    @property
    def name(self) -> str | None:
        if self._static_head.name:
            return f"{self._static_head.name}_sequential"
        return None

    def _flatten(self, labels: Any, logits: Any, features: dict) -> tuple:
        key = self.input_sequence_mask_key
        if key not in features:
            raise ValueError(
                f"The provided sequence_length_mask key `{key}` should be included in the "
                "features dictionary, but was not found. Found keys: "
                f"{list(features.keys())}."
            )
        mask = features[key]
        if mask.get_shape().ndims != 2:
            raise ValueError(
                f"Mask is expected to have two dimensions, got {mask.get_shape().ndims} instead."
            )
        with tf.compat.v1.name_scope("flatten"):
            length = tf.math.reduce_sum(tf.cast(mask, tf.int32))
            flat_logits = _flatten_tensor(logits, mask, length)
            flat_labels = _flatten_tensor(labels, mask, length)
            flat_features = {}
            for column in self._feature_columns:
                if column not in features:
                    raise ValueError(f"`{column}` column expected in features dictionary.")
                flat_features[column] = _flatten_tensor(features[column], mask, length)
            return flat_labels, flat_logits, flat_features

    # tf.estimator's own argument order here: logits before labels.
    def loss(
        self,
        logits: Any,
        labels: Any,
        features: Any = None,
        mode: Any = None,
        regularization_losses: Any = None,
    ) -> Any:
        """The static head's loss over the unmasked steps."""
        flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
        return self._static_head.loss(
            logits=flat_logits,
            labels=flat_labels,
            features=flat_features,
            mode=mode,
            regularization_losses=regularization_losses,
        )

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        return self._static_head.predictions(logits, keys=keys)

    def metrics(self, regularization_losses: Any = None) -> dict:
        return self._static_head.metrics(regularization_losses)

    def update_metrics(
        self,
        eval_metrics: dict,
        features: Any,
        logits: Any,
        labels: Any,
        regularization_losses: Any = None,
    ) -> dict:
        flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
        return self._static_head.update_metrics(
            eval_metrics=eval_metrics,
            features=flat_features,
            logits=flat_logits,
            labels=flat_labels,
            regularization_losses=regularization_losses,
        )

    def create_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        trainable_variables: Any = None,
        train_op_fn: Callable | None = None,
        update_ops: Any = None,
        regularization_losses: Any = None,
    ) -> EstimatorSpec:
        """The static head's spec on the flattened steps; PREDICT keeps the sequences
        and adds the mask to the predictions."""
        if mode == ModeKeys.PREDICT:
            spec = self._static_head.create_estimator_spec(
                features=features, mode=mode, logits=logits
            )
            spec.predictions[self.input_sequence_mask_key] = features[self.input_sequence_mask_key]
            return spec._replace(predictions=spec.predictions)
        flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
        return self._static_head.create_estimator_spec(
            features=flat_features,
            mode=mode,
            logits=flat_logits,
            trainable_variables=trainable_variables,
            labels=flat_labels,
            optimizer=optimizer,
            train_op_fn=train_op_fn,
            regularization_losses=regularization_losses,
            update_ops=update_ops,
        )

    def _create_tpu_estimator_spec(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _flatten_tensor(tensor: Any, sequence_mask: Any, expected_length: Any) -> Any:
    """``[batch, time, ...]`` -> ``[steps, ...]`` (``[steps, 1]`` from rank 2), checked."""
    shape = tensor.get_shape()
    if shape.ndims < 2:
        raise ValueError(
            f"Input tensor expected to have at least 2 dimensions, got {shape.ndims} instead."
        )
    if isinstance(tensor, tf.sparse.SparseTensor):
        flat = tf.sparse.reorder(tensor).values
        if shape.ndims > 2:
            flat = tf.reshape(tensor.values, tf.concat([[-1], shape[2:]], axis=0))
    elif isinstance(tensor, tf.Tensor):
        flat = tf.boolean_mask(tensor, sequence_mask)
    else:
        raise ValueError(
            f"`tensor` expected to be a `Tensor` or  `SparseTensor` got `{tensor}` instead."
        )
    if shape.ndims == 2:
        flat = tf.compat.v1.expand_dims(flat, -1)
        expected_shape = tf.concat([[expected_length], [1]], axis=0)
    else:
        expected_shape = tf.concat([[expected_length], shape[2:]], axis=0)
    message = "Tensor shape is incompatible with provided mask."
    if tf.executing_eagerly():
        if tuple(flat.shape.as_list()) != tuple(expected_shape.numpy()):
            raise ValueError(message)
        return flat
    check = tf.compat.v1.debugging.assert_equal(
        tf.compat.v1.shape(flat), expected_shape, message=message
    )
    with tf.control_dependencies([check]):
        return tf.identity(flat)
