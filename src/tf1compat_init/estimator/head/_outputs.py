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
# Modified from `tensorflow_estimator/python/estimator/head/base_head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; the helpers that build predictions and serving
# outputs, in their own module, shared with the v1 heads.
"""What the heads' predictions and serving signatures are built from.

``ClassHead``: the single heads over classes (binary, multi-class, multi-label), with
their vocabulary tables and class predictions.

The class-id and class-string tensors of the classifiers' predictions, the vocabulary
lookup tables, and the export outputs of classifiers and regressors (default, classify or
regress, predict signatures), as tensorflow-estimator 2.15's ``head/base_head.py`` builds
them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf

from .._export_output import ClassificationOutput, PredictOutput, RegressionOutput
from . import _checks
from ._base import SingleHead
from ._keys import PredictionKeys

__all__ = [
    "CLASSIFY_SERVING_KEY",
    "ClassHead",
    "DEFAULT_SERVING_KEY",
    "PREDICT_SERVING_KEY",
    "REGRESS_SERVING_KEY",
    "all_class_ids",
    "all_classes",
    "class_id_table",
    "class_label_ids",
    "class_string_table",
    "classification_export_outputs",
    "regression_export_outputs",
]

DEFAULT_SERVING_KEY = "serving_default"
CLASSIFY_SERVING_KEY = "classification"
REGRESS_SERVING_KEY = "regression"
PREDICT_SERVING_KEY = "predict"


def all_class_ids(logits: Any, n_classes: Any) -> Any:
    """``[batch, n_classes]``: every row is ``0 .. n_classes - 1``."""
    batch_size = tf.compat.v1.shape(logits)[0]
    ids = tf.expand_dims(tf.range(n_classes), axis=0)
    return tf.tile(input=ids, multiples=[batch_size, 1])


def all_classes(logits: Any, n_classes: Any, label_vocabulary: Any = None) -> Any:
    """``[batch, n_classes]`` strings: the vocabulary, or the class ids as strings."""
    batch_size = tf.compat.v1.shape(logits)[0]
    if label_vocabulary:
        names = tf.convert_to_tensor([label_vocabulary])
    else:
        names = tf.strings.as_string(tf.expand_dims(tf.range(n_classes), axis=0))
    return tf.tile(input=names, multiples=[batch_size, 1])


def classification_export_outputs(
    predictions: dict,
    n_classes: Any,
    label_vocabulary: Any = None,
    regression: Any = None,
    all_classes_fn: Callable = all_classes,
) -> dict:
    """A classifier's serving outputs: default, classification, [regression,] predict.

    ``regression``, the tensor a regression signature serves, is given by the binary
    head only; it sits before ``predict`` as in tensorflow-estimator 2.15.
    ``all_classes_fn`` builds the served class strings (the v1 heads build them their way).
    """
    scores = predictions[PredictionKeys.PROBABILITIES]
    classifier = ClassificationOutput(
        scores=scores, classes=all_classes_fn(scores, n_classes, label_vocabulary)
    )
    outputs = {DEFAULT_SERVING_KEY: classifier, CLASSIFY_SERVING_KEY: classifier}
    if regression is not None:
        outputs[REGRESS_SERVING_KEY] = RegressionOutput(value=regression)
    outputs[PREDICT_SERVING_KEY] = PredictOutput(predictions)
    return outputs


def regression_export_outputs(predictions: dict) -> dict:
    """A regressor's serving outputs: default and regression (the predictions), predict."""
    regression = RegressionOutput(value=predictions[PredictionKeys.PREDICTIONS])
    return {
        DEFAULT_SERVING_KEY: regression,
        REGRESS_SERVING_KEY: regression,
        PREDICT_SERVING_KEY: PredictOutput(predictions),
    }


def class_label_ids(labels: Any, label_vocabulary: Any, id_table: Callable[[], Any]) -> Any:
    """A multi-class head's label ids: integer labels as they are, string labels looked
    up in ``id_table()`` when there is a vocabulary (TF 2.15's dtype errors otherwise)."""
    if label_vocabulary is None:
        if not labels.dtype.is_integer:
            raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
        return labels
    if labels.dtype != tf.string:
        raise ValueError(
            f"Labels dtype should be string if there is a vocabulary. Instead got {labels.dtype}"
        )
    return id_table().lookup(labels)


def class_id_table(label_vocabulary: Any) -> Any:
    """A string -> id table over the vocabulary; unknown strings map to -1."""
    from tensorflow.python.ops import lookup_ops

    return lookup_ops.index_table_from_tensor(
        vocabulary_list=tuple(label_vocabulary), name="class_id_lookup"
    )


def class_string_table(label_vocabulary: Any) -> Any:
    """An id -> string table over the vocabulary."""
    from tensorflow.python.ops import lookup_ops

    return lookup_ops.index_to_string_table_from_tensor(
        vocabulary_list=label_vocabulary, name="class_string_lookup"
    )


class ClassHead(SingleHead):
    """A single head over classes, which ``_label_vocabulary`` may name."""

    _id_table = None
    _string_table = None

    def _class_id_table(self) -> Any:
        # A graph gets its own table each time; eagerly one table is reused.
        if self._id_table is None or not tf.executing_eagerly():
            self._id_table = class_id_table(self._label_vocabulary)
        return self._id_table

    def _class_string_table(self) -> Any:
        if self._string_table is None or not tf.executing_eagerly():
            self._string_table = class_string_table(self._label_vocabulary)
        return self._string_table

    @contextlib.contextmanager
    def _predictions_scope(self, logits: Any, keys: Any, valid_keys: list) -> Iterator[tuple]:
        """``(keys, logits, predictions)`` in the ``predictions`` name scope, as the class
        heads' ``predictions`` begin: ``keys`` checked against ``valid_keys`` (``None``:
        all), ``logits`` against the logits dimension, ``predictions`` holding the logits
        when they are asked for."""
        keys = _checks.check_prediction_keys(keys, valid_keys)
        logits = _checks.check_logits_final_dim(logits, self.logits_dimension)
        predictions = {}
        with tf.compat.v1.name_scope("predictions", values=(logits,)):
            if PredictionKeys.LOGITS in keys:
                predictions[PredictionKeys.LOGITS] = logits
            yield keys, logits, predictions

    def _add_class_predictions(
        self, predictions: dict, keys: Any, class_logits: Any, logits: Any, n_classes: int
    ) -> None:
        """Adds the ``keys`` among ``class_ids`` / ``classes`` (the argmax of
        ``class_logits``) and ``all_class_ids`` / ``all_classes`` to ``predictions``."""
        k = PredictionKeys
        if k.CLASS_IDS in keys or k.CLASSES in keys:
            class_ids = tf.compat.v1.math.argmax(class_logits, axis=-1, name=k.CLASS_IDS)
            class_ids = tf.compat.v1.expand_dims(class_ids, axis=-1)
            if k.CLASS_IDS in keys:
                predictions[k.CLASS_IDS] = class_ids
            if k.CLASSES in keys:
                if self._label_vocabulary is not None:
                    classes = self._class_string_table().lookup(class_ids)
                else:
                    classes = tf.strings.as_string(class_ids, name="str_classes")
                predictions[k.CLASSES] = classes
        if k.ALL_CLASS_IDS in keys:
            predictions[k.ALL_CLASS_IDS] = all_class_ids(logits, n_classes=n_classes)
        if k.ALL_CLASSES in keys:
            predictions[k.ALL_CLASSES] = all_classes(
                logits, n_classes=n_classes, label_vocabulary=self._label_vocabulary
            )
