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
# Modified from `tensorflow_estimator/python/estimator/canned/rnn.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; Keras 2 layers and optimizers come from tf_keras on
# TF >= 2.16 (`_keras2`).
"""``RNNClassifier`` / ``RNNEstimator`` (``tf.estimator.experimental``, tensorflow-estimator 2.15).

The model is TF 2.15's Keras 2 ``RNNModel`` (named ``rnn_model``): a ``SequenceFeatures``
layer over the sequence feature columns (context columns through ``DenseFeatures`` are
repeated along time), one Keras 2 RNN layer (``SimpleRNN`` / ``LSTM`` / ``GRU`` for one
``units`` int, else ``RNN`` over the cells), masked by the sequence lengths, and a
``Dense`` layer named ``logits``; built with :func:`~.._keras2.keras2` (``tf_keras`` on
TensorFlow >= 2.16), so variable names, initial values and losses are TF 2.15's. The
default optimizer is Keras 2's legacy ``Adagrad`` with learning rate 0.05 and
``clipnorm=5.0``. As in TF 2.15, both derive from the v1 ``Estimator``, so the deprecated
``export_savedmodel`` of TF 1.x code works on them.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from .._keras2 import keras2
from .._log import logger
from .._spec import ModeKeys
from ..head import _checks
from ..head._binary import BinaryClassHead
from ..head._multi_class import MultiClassHead
from ..head._sequential import SequentialHeadWrapper
from ..v1 import Estimator  # TF 2.15's RNN estimators derive from the v1 Estimator
from ._common import check_units
from ._optimizers import get_optimizer_instance_v2

__all__ = ["RNNClassifier", "RNNEstimator"]


_DEFAULT_LEARNING_RATE = 0.05
_DEFAULT_CLIP_NORM = 5.0
_SIMPLE_RNN, _LSTM, _GRU = "simple_rnn", "lstm", "gru"

#: the "not given" value of ``cell_type`` (TF 2.15 tells it apart from ``"simple_rnn"``)
USE_DEFAULT = object()


def _layer_classes() -> dict:
    layers = keras2().layers
    return {_LSTM: layers.LSTM, _GRU: layers.GRU, _SIMPLE_RNN: layers.SimpleRNN}


def _cell_classes() -> dict:
    layers = keras2().layers
    return {_LSTM: layers.LSTMCell, _GRU: layers.GRUCell, _SIMPLE_RNN: layers.SimpleRNNCell}


def _single_rnn_cell(units: int, cell_type: Any) -> Any:
    cell_type = _cell_classes().get(cell_type, cell_type)
    if not callable(cell_type):
        raise ValueError(
            "`cell_type` should be a class producing a RNN cell, or a string specifying the "
            f"cell type. Supported strings are: {[_SIMPLE_RNN, _LSTM, _GRU]}."
        )
    cell = cell_type(units=units)
    if hasattr(cell, "_enable_caching_device"):
        cell._enable_caching_device = True  # as TF 2.15: reads cached across time steps
    if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
        raise ValueError("RNN cell should have a `call` and `state_size` method.")
    return cell


def _verify_rnn_cell_input(rnn_cell_fn: Any, units: Any, cell_type: Any) -> None:
    if rnn_cell_fn and (units or cell_type is not USE_DEFAULT):
        raise ValueError("units and cell_type must not be specified when using rnn_cell_fn")


def _make_rnn_layer(rnn_cell_fn: Any, units: Any, cell_type: Any, return_sequences: bool) -> Any:
    _verify_rnn_cell_input(rnn_cell_fn, units, cell_type)
    layer_classes = _layer_classes()
    if isinstance(cell_type, str) and cell_type in layer_classes and isinstance(units, int):
        return layer_classes[cell_type](units=units, return_sequences=return_sequences)
    if not rnn_cell_fn:
        kind = _SIMPLE_RNN if cell_type is USE_DEFAULT else cell_type
        if isinstance(units, int):  # TF 2.15 fails iterating it; say what works
            raise TypeError(
                "'int' object is not iterable\ntf1compat_init: an int `units` needs "
                "`cell_type` named ('simple_rnn', 'lstm' or 'gru'); otherwise give a "
                f"list of units per layer, e.g. units=[{units}]."
            )

        def rnn_cell_fn() -> Any:
            cells = [_single_rnn_cell(n, kind) for n in units]
            return cells[0] if len(cells) == 1 else cells

    return keras2().layers.RNN(cell=rnn_cell_fn(), return_sequences=return_sequences)


def _rnn_model(
    rnn_layer: Any,
    units: int,
    sequence_feature_columns: Any,
    context_feature_columns: Any,
    return_sequences: bool,
) -> Any:
    """TF 2.15's ``RNNModel`` (a Keras 2 subclassed model named ``rnn_model``)."""
    keras = keras2()

    class RNNModel(keras.models.Model):
        def __init__(self) -> None:
            super().__init__(name="rnn_model")
            check_units(units)
            self._sequence_features_layer = keras.experimental.SequenceFeatures(
                sequence_feature_columns
            )
            self._dense_features_layer = None
            if context_feature_columns:
                self._dense_features_layer = _dense_features_v1()(context_feature_columns)
            self._rnn_layer = rnn_layer
            self._logits_layer = keras.layers.Dense(units=units, name="logits")

        def call(self, inputs: Any, training: Any = None) -> Any:
            if not isinstance(inputs, dict):
                raise ValueError(
                    f"inputs should be a dictionary of `Tensor`s. Given type: {type(inputs)}"
                )
            with tf.compat.v1.name_scope("sequence_input_layer"):
                sequence_input, sequence_length = self._sequence_features_layer(
                    inputs, training=training
                )
                tf.compat.v1.summary.histogram("sequence_length", sequence_length)
                if context_feature_columns:
                    context_input = self._dense_features_layer(inputs, training=training)
                    sequence_input = _concatenate_context_input(context_input, sequence_input)
            mask = tf.sequence_mask(sequence_length)
            outputs = self._rnn_layer(sequence_input, mask=mask, training=training)
            logits = self._logits_layer(outputs)
            if return_sequences:
                logits._keras_mask = mask
            return logits

    return RNNModel()


def _dense_features_v1() -> Any:
    """The v1 ``DenseFeatures`` layer TF 2.15 used for context columns (Keras 2's)."""
    if tf.__version__.startswith("2.15."):  # keras2() is tf.keras there
        return tf.compat.v1.keras.layers.DenseFeatures
    from tf_keras.src.feature_column.dense_features import DenseFeatures

    return DenseFeatures


def _concatenate_context_input(context_input: Any, sequence_input: Any) -> Any:
    from tensorflow.python.feature_column import feature_column_lib

    return feature_column_lib.concatenate_context_input(context_input, sequence_input)


def _rnn_spec(
    features: Any,
    labels: Any,
    mode: str,
    head: Any,
    rnn_model: Any,
    optimizer: Any,
    return_sequences: bool,
) -> Any:
    if mode == ModeKeys.TRAIN:
        if isinstance(optimizer, str):
            optimizer = get_optimizer_instance_v2(optimizer, learning_rate=_DEFAULT_LEARNING_RATE)
            optimizer.clipnorm = _DEFAULT_CLIP_NORM
        else:
            optimizer = get_optimizer_instance_v2(optimizer)
        optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    else:
        optimizer = None
    logits = rnn_model(features, mode == ModeKeys.TRAIN)
    if return_sequences and head.input_sequence_mask_key not in features:
        features[head.input_sequence_mask_key] = logits._keras_mask
    return head.create_estimator_spec(
        features=features,
        mode=mode,
        labels=labels,
        optimizer=optimizer,
        logits=logits,
        update_ops=rnn_model.updates,
        trainable_variables=rnn_model.trainable_variables,
    )


class RNNEstimator(Estimator):
    """An RNN over sequence feature columns with a given head.

    Args:
        head: a head (a ``SequentialHeadWrapper`` when ``return_sequences``).
        sequence_feature_columns: sequence columns (``tf.feature_column.sequence_*``,
            or embedding / indicator columns of them).
        context_feature_columns: dense columns repeated at every time step.
        units: hidden units per RNN layer (an int: one Keras RNN layer).
        cell_type: ``"simple_rnn"`` (default), ``"lstm"``, ``"gru"`` or a cell class.
        rnn_cell_fn: a function returning a cell (or cells); excludes ``units`` and
            ``cell_type``.
        return_sequences: logits for every step (sequential head) instead of the last.
        model_dir: as for ``Estimator``.
        optimizer: a name, a Keras 2 legacy optimizer or a callable returning one.
        config: a ``RunConfig``.
    """

    def __init__(
        self,
        head: Any,
        sequence_feature_columns: Any,
        context_feature_columns: Any = None,
        units: Any = None,
        cell_type: Any = USE_DEFAULT,
        rnn_cell_fn: Any = None,
        return_sequences: bool = False,
        model_dir: Any = None,
        optimizer: Any = "Adagrad",
        config: Any = None,
    ) -> None:
        if return_sequences and not isinstance(head, SequentialHeadWrapper):
            raise ValueError(
                "Provided head must be a `_SequentialHead` object when `return_sequences` "
                "is set to True."
            )
        _verify_rnn_cell_input(rnn_cell_fn, units, cell_type)

        def _model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
            del config
            layer = _make_rnn_layer(rnn_cell_fn, units, cell_type, return_sequences)
            model = _rnn_model(
                layer,
                head.logits_dimension,
                sequence_feature_columns,
                context_feature_columns,
                return_sequences,
            )
            return _rnn_spec(features, labels, mode, head, model, optimizer, return_sequences)

        super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)


class RNNClassifier(RNNEstimator):
    """An RNN classifier (binary or multi-class) over sequence feature columns.

    Arguments as :class:`RNNEstimator` (the head is built from ``n_classes``,
    ``weight_column``, ``label_vocabulary``, ``loss_reduction``; with
    ``return_sequences`` it is wrapped to classify every step under ``sequence_mask``).
    """

    def __init__(
        self,
        sequence_feature_columns: Any,
        context_feature_columns: Any = None,
        units: Any = None,
        cell_type: Any = USE_DEFAULT,
        rnn_cell_fn: Any = None,
        return_sequences: bool = False,
        model_dir: Any = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        optimizer: Any = "Adagrad",
        loss_reduction: str = _checks.SUM_OVER_BATCH_SIZE,
        sequence_mask: str = "sequence_mask",
        config: Any = None,
    ) -> None:
        if n_classes == 2:
            head = BinaryClassHead(
                weight_column=weight_column,
                label_vocabulary=label_vocabulary,
                loss_reduction=loss_reduction,
            )
        else:
            head = MultiClassHead(
                n_classes=n_classes,
                weight_column=weight_column,
                label_vocabulary=label_vocabulary,
                loss_reduction=loss_reduction,
            )
        if return_sequences:
            logger.info(
                "Converting head to sequential head with `SequentialHeadWrapper` to allow "
                "sequential predictions."
            )
            head = SequentialHeadWrapper(
                head, sequence_length_mask=sequence_mask, feature_columns=weight_column
            )
        super().__init__(
            head=head,
            sequence_feature_columns=sequence_feature_columns,
            context_feature_columns=context_feature_columns,
            units=units,
            cell_type=cell_type,
            rnn_cell_fn=rnn_cell_fn,
            return_sequences=return_sequences,
            model_dir=model_dir,
            optimizer=optimizer,
            config=config,
        )
