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
# Modified from `tensorflow_estimator/python/estimator/canned/head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; no TPU paths.
"""The v1 heads of tensorflow-estimator 2.15 (``canned/head.py``): ``_Head`` and three kinds.

The ``tf.compat.v1.estimator`` canned estimators turn logits into an ``EstimatorSpec`` with
these: sigmoid cross entropy for two classes, softmax cross entropy for more, mean squared
error for regression. Everything is built from ``tf.compat.v1`` losses and metrics (no
Keras), so TF 2.15 and TF >= 2.16 build the same graph and get the same numbers. The
default loss reduction is ``SUM`` (the V2 heads average). Error texts are TF 2.15's.
"""

from __future__ import annotations

import abc
import collections
import inspect
from typing import Any

import tensorflow as tf
from tensorflow.python.feature_column import feature_column as _fc_v1
from tensorflow.python.ops import lookup_ops

from .. import _export_output as _out
from .._spec import EstimatorSpec, ModeKeys

__all__ = [
    "LossSpec",
    "_Head",
    "_binary_logistic_head_with_sigmoid_cross_entropy_loss",
    "_binary_logistic_or_multi_class_head",
    "_multi_class_head_with_softmax_cross_entropy_loss",
    "_regression_head",
]

_DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
_CLASSIFY_SERVING_KEY = "classification"
_REGRESS_SERVING_KEY = "regression"
_PREDICT_SERVING_KEY = "predict"

_SUM = tf.compat.v1.losses.Reduction.SUM
_NONE = tf.compat.v1.losses.Reduction.NONE

LossSpec = collections.namedtuple(
    "LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"]
)


class _Keys:
    """Metric and prediction keys (``metric_keys.MetricKeys``, ``PredictionKeys``)."""

    LOSS = "loss"
    LOSS_MEAN = "average_loss"
    LOSS_REGULARIZATION = "regularization_loss"
    ACCURACY = "accuracy"
    PRECISION = "precision"
    RECALL = "recall"
    ACCURACY_BASELINE = "accuracy_baseline"
    AUC = "auc"
    AUC_PR = "auc_precision_recall"
    LABEL_MEAN = "label/mean"
    PREDICTION_MEAN = "prediction/mean"
    ACCURACY_AT_THRESHOLD = "accuracy/positive_threshold_%g"
    PRECISION_AT_THRESHOLD = "precision/positive_threshold_%g"
    RECALL_AT_THRESHOLD = "recall/positive_threshold_%g"
    CLASSES = "classes"
    CLASS_IDS = "class_ids"
    ALL_CLASSES = "all_classes"
    ALL_CLASS_IDS = "all_class_ids"
    LOGISTIC = "logistic"
    LOGITS = "logits"
    PREDICTIONS = "predictions"
    PROBABILITIES = "probabilities"


def _summary_key(head_name: str | None, val: str) -> str:
    return f"{val}/{head_name}" if head_name else val


class _Head(abc.ABC):
    """A model's top: loss, predictions, metrics and export outputs from its logits.

    Subclasses define ``name``, ``logits_dimension``, ``create_loss`` and
    ``_create_tpu_estimator_spec`` (which, as in TF 2.15, returns the spec itself here:
    TPUs are not supported, so there is nothing to convert).
    """

    @property
    @abc.abstractmethod
    def name(self) -> str | None:
        raise NotImplementedError("Calling an abstract method.")

    @property
    @abc.abstractmethod
    def logits_dimension(self) -> int:
        raise NotImplementedError("Calling an abstract method.")

    @abc.abstractmethod
    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> LossSpec:
        raise NotImplementedError("Calling an abstract method.")

    def create_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        train_op_fn: Any = None,
        regularization_losses: Any = None,
    ) -> EstimatorSpec:
        """The ``EstimatorSpec`` of ``mode`` for ``logits`` (all arguments by name)."""
        try:
            return self._create_tpu_estimator_spec(
                features, mode, logits, labels, optimizer, train_op_fn, regularization_losses
            )
        except NotImplementedError:
            raise NotImplementedError(
                "Subclasses of _Head must implement `create_estimator_spec()` or "
                "_create_tpu_estimator_spec()."
            ) from None

    def _create_tpu_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        train_op_fn: Any = None,
        regularization_losses: Any = None,
    ) -> EstimatorSpec:
        raise NotImplementedError("TPUEstimatorSpec not available for this model head.")

    # Shared by the three heads: the loss part of TRAIN and EVAL.
    def _regularized(self, training_loss: Any, regularization_losses: Any) -> tuple:
        if regularization_losses:
            regularization_loss = tf.math.add_n(regularization_losses)
            return regularization_loss, tf.math.add_n([training_loss, regularization_loss])
        return None, training_loss

    def _train_spec(
        self,
        predictions: dict,
        training_loss: Any,
        unreduced_loss: Any,
        weights: Any,
        regularization_loss: Any,
        regularized_loss: Any,
        optimizer: Any,
        train_op_fn: Any,
    ) -> tuple:
        if optimizer is not None:
            if train_op_fn is not None:
                raise ValueError("train_op_fn and optimizer cannot both be set.")
            train_op = optimizer.minimize(
                regularized_loss, global_step=tf.compat.v1.train.get_global_step()
            )
        elif train_op_fn is not None:
            train_op = train_op_fn(regularized_loss)
        else:
            raise ValueError("train_op_fn and optimizer cannot both be None.")
        train_op = _append_update_ops(train_op)
        mean_loss = None
        if self._loss_reduction == _SUM:
            example_weight_sum = tf.math.reduce_sum(
                weights * tf.compat.v1.ones_like(unreduced_loss)
            )
            mean_loss = training_loss / example_weight_sum
        return train_op, mean_loss

    def _train_summaries(self, regularized_loss: Any, mean_loss: Any, reg_loss: Any) -> None:
        with tf.compat.v1.name_scope(""):
            tf.compat.v1.summary.scalar(_summary_key(self._name, _Keys.LOSS), regularized_loss)
            if mean_loss is not None:
                tf.compat.v1.summary.scalar(_summary_key(self._name, _Keys.LOSS_MEAN), mean_loss)
            if reg_loss is not None:
                tf.compat.v1.summary.scalar(
                    _summary_key(self._name, _Keys.LOSS_REGULARIZATION), reg_loss
                )


def _check_dense_labels_match_logits_and_reshape(
    labels: Any, logits: Any, expected_labels_dimension: int
) -> Any:
    if labels is None:
        raise ValueError(
            "You must provide a labels Tensor. Given: None. "
            "Suggested troubleshooting steps: Check that your data contain "
            "your label feature. Check that your input_fn properly parses and "
            "returns labels."
        )
    with tf.compat.v1.name_scope(None, "labels", (labels, logits)) as scope:
        labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
        if isinstance(labels, tf.sparse.SparseTensor):
            d = expected_labels_dimension
            raise ValueError(
                "SparseTensor labels are not supported. "
                f"labels must be a Tensor of shape [D0, D1, ..., DN, {d}], "
                f"e.g. [batch_size, {d}]. "
                "Suggested Fix (1): Check the label feature in your data. "
                f"Each example must contain {d} value(s). If not, your choice of label "
                "was probably incorrect. "
                "Suggested Fix (2): In your input_fn, use "
                "tf.sparse_tensor_to_dense() to turn labels into a Tensor."
            )
        if (
            labels.shape.ndims is not None
            and logits.shape.ndims is not None
            and labels.shape.ndims == logits.shape.ndims - 1
        ):
            labels = tf.compat.v1.expand_dims(labels, -1)
        labels_shape = tf.compat.v1.shape(labels)
        logits_shape = tf.compat.v1.shape(logits)
        err_msg = (
            f"labels shape must be [D0, D1, ... DN, {expected_labels_dimension}]. "
            "Suggested Fix: check your n_classes argument to the estimator "
            "and/or the shape of your label."
        )
        assert_rank = tf.compat.v1.debugging.assert_rank_at_least(labels, 2, message=err_msg)
        with tf.control_dependencies([assert_rank]):
            static_shape = labels.shape
            if static_shape.ndims is not None:
                dim1 = static_shape[-1]
                if dim1 is not None and dim1 != expected_labels_dimension:
                    raise ValueError(
                        "Mismatched label shape. "
                        f"Expected labels dimension={expected_labels_dimension}.  "
                        f"Received {dim1}. "
                        "Suggested Fix:"
                        "If your classifier expects one-hot encoding label,"
                        "check your n_classes argument to the estimator "
                        "and/or the shape of your label. "
                        "Otherwise, check the shape of your label."
                    )
            expected_labels_shape = tf.concat(
                [logits_shape[:-1], [expected_labels_dimension]], axis=0
            )
            assert_dimension = tf.compat.v1.debugging.assert_equal(
                expected_labels_shape,
                labels_shape,
                message=err_msg,
                data=[
                    "expected_labels_shape: ",
                    expected_labels_shape,
                    "labels_shape: ",
                    labels_shape,
                ],
            )
            with tf.control_dependencies([assert_dimension]):
                return tf.identity(labels, name=scope)


def _get_weights_and_check_match_logits(
    features: Any, weight_column: Any, logits: Any, allow_per_logit_weights: bool = False
) -> Any:
    if allow_per_logit_weights:
        err_msg = (
            "weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] or "
            "[D0, D1, ... DN, logits_dimension]"
        )
    else:
        err_msg = "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"
    with tf.compat.v1.name_scope(
        None, "weights", values=tuple(features.values()) + (logits,)
    ) as scope:
        if weight_column is None:
            return 1.0
        if isinstance(weight_column, str):
            weight_column = tf.feature_column.numeric_column(key=weight_column, shape=(1,))
        dense_types = (tf.__internal__.feature_column.DenseColumn, _fc_v1._DenseColumn)
        if not isinstance(weight_column, dense_types):
            raise TypeError(
                "Weight column must be either a string or _DenseColumn."
                f" Given type: {type(weight_column)}."
            )
        weights = weight_column._get_dense_tensor(_fc_v1._LazyBuilder(features))
        if not (weights.dtype.is_floating or weights.dtype.is_integer):
            raise ValueError(
                f"Weight column should be castable to float. Given dtype: {weights.dtype}"
            )
        weights = tf.cast(weights, name="weights", dtype=tf.float32)
        weights_shape = tf.compat.v1.shape(weights, name="weights_shape")
        logits_shape = tf.compat.v1.shape(logits, name="logits_shape")
        data = ["logits_shape: ", logits_shape, "weights_shape: ", weights_shape]
        if (
            weights.shape.ndims is not None
            and logits.shape.ndims is not None
            and weights.shape.ndims == logits.shape.ndims - 1
        ):
            assert_dimension = tf.compat.v1.debugging.assert_equal(
                logits_shape[:-1], weights_shape, message=err_msg, data=data
            )
            with tf.control_dependencies([assert_dimension]):
                return tf.compat.v1.expand_dims(weights, -1, name=scope)
        supported_weights_shape = tf.concat([logits_shape[:-1], [1]], axis=0)
        if allow_per_logit_weights:
            condition = tf.math.reduce_any(
                [
                    tf.reduce_all(tf.math.equal(logits_shape, weights_shape)),
                    tf.reduce_all(tf.math.equal(supported_weights_shape, weights_shape)),
                ]
            )
            assert_dimension = tf.debugging.Assert(condition=condition, data=[err_msg, *data])
        else:
            assert_dimension = tf.compat.v1.debugging.assert_equal(
                supported_weights_shape, weights_shape, message=err_msg, data=data
            )
        with tf.control_dependencies([assert_dimension]):
            return tf.identity(weights, name=scope)


def _check_logits_final_dim(logits: Any, expected_logits_dimension: int) -> Any:
    with tf.compat.v1.name_scope(None, "logits", (logits,)) as scope:
        logits = tf.cast(logits, dtype=tf.float32)
        logits_shape = tf.compat.v1.shape(logits)
        assert_rank = tf.compat.v1.debugging.assert_rank_at_least(
            logits,
            2,
            data=[logits_shape],
            message="logits shape must be [D0, D1, ... DN, logits_dimension]",
        )
        with tf.control_dependencies([assert_rank]):
            static_shape = logits.shape
            if static_shape.ndims is not None and static_shape[-1] is not None:
                if (
                    isinstance(expected_logits_dimension, int)
                    and static_shape[-1] != expected_logits_dimension
                ):
                    raise ValueError(
                        "logits shape must be [D0, D1, ... DN, "
                        f"logits_dimension={expected_logits_dimension}], got {static_shape}."
                    )
                return logits
            assert_dimension = tf.compat.v1.debugging.assert_equal(
                expected_logits_dimension,
                logits_shape[-1],
                data=[logits_shape],
                message=(
                    "logits shape must be [D0, D1, ... DN, "
                    f"logits_dimension={expected_logits_dimension}]"
                ),
            )
            with tf.control_dependencies([assert_dimension]):
                return tf.identity(logits, name=scope)


def _fn_args(fn: Any) -> tuple:
    return tuple(inspect.signature(fn).parameters)


def _validate_loss_fn_args(loss_fn: Any) -> None:
    args = _fn_args(loss_fn)
    for required_arg in ["labels", "logits"]:
        if required_arg not in args:
            raise ValueError(
                f"loss_fn must contain argument: {required_arg}. Given arguments: {args}"
            )
    invalid_args = list(set(args) - {"labels", "logits", "features"})
    if invalid_args:
        raise ValueError(f"loss_fn has unexpected args: {invalid_args}")


def _validate_n_classes(n_classes: Any) -> Any:
    if isinstance(n_classes, int) and n_classes <= 2:
        raise ValueError(f"n_classes must be > 2: {n_classes}.")
    n_classes_as_tensor = tf.convert_to_tensor(n_classes)
    assert_n_classes = tf.compat.v1.debugging.assert_greater(
        n_classes_as_tensor, 2, message="n_classes must be greater than 2"
    )
    with tf.control_dependencies([assert_n_classes]):
        tf.no_op()
    return n_classes


def _call_loss_fn(
    loss_fn: Any, labels: Any, logits: Any, features: Any, expected_loss_dim: int = 1
) -> Any:
    kwargs = {"features": features} if "features" in _fn_args(loss_fn) else {}
    with tf.compat.v1.name_scope(None, "call_loss_fn", values=[labels, logits, *features.values()]):
        unweighted_loss = loss_fn(labels=labels, logits=logits, **kwargs)
        logits_shape = tf.compat.v1.shape(logits, name="logits_shape")
        expected_loss_shape = tf.concat(
            [logits_shape[:-1], [expected_loss_dim]], axis=0, name="expected_loss_shape"
        )
        loss_shape = tf.compat.v1.shape(unweighted_loss, name="loss_shape")
        check_loss_shape_op = tf.debugging.Assert(
            tf.reduce_all(tf.math.equal(loss_shape, expected_loss_shape)),
            data=[
                f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. ",
                "logits_shape: ",
                logits_shape,
                "loss_shape: ",
                loss_shape,
            ],
            name="check_loss_shape",
        )
        with tf.control_dependencies([check_loss_shape_op]):
            return tf.identity(unweighted_loss)


def _broadcast(weights: Any, values: Any) -> Any:
    if weights is None:
        return None
    return tf.__internal__.ops.broadcast_weights(weights, values)


def _indicator_labels_mean(labels: Any, weights: Any = None, name: Any = None) -> tuple:
    with tf.compat.v1.name_scope(name, "labels_mean", (labels, weights)) as scope:
        labels = tf.cast(labels, name="labels", dtype=tf.float32)
        return tf.compat.v1.metrics.mean(labels, weights=_broadcast(weights, labels), name=scope)


def _all_class_ids(logits: Any, n_classes: int) -> Any:
    batch_size = tf.compat.v1.shape(logits)[0]
    ids = tf.compat.v1.expand_dims(input=tf.range(n_classes), axis=0)
    return tf.tile(input=ids, multiples=[batch_size, 1])


def _class_strings(n_classes: int, label_vocabulary: Any) -> Any:
    if label_vocabulary:
        return label_vocabulary
    return tf.strings.as_string(tf.range(n_classes))


def _all_classes(logits: Any, n_classes: int, label_vocabulary: Any = None) -> Any:
    batch_size = tf.compat.v1.shape(logits)[0]
    classes = tf.compat.v1.expand_dims(input=_class_strings(n_classes, label_vocabulary), axis=0)
    return tf.tile(input=classes, multiples=[batch_size, 1])


def _classification_output(scores: Any, n_classes: int, label_vocabulary: Any = None) -> Any:
    batch_size = tf.compat.v1.shape(scores)[0]
    classes = tf.compat.v1.expand_dims(input=_class_strings(n_classes, label_vocabulary), axis=0)
    export_output_classes = tf.tile(input=classes, multiples=[batch_size, 1])
    return _out.ClassificationOutput(scores=scores, classes=export_output_classes)


def _accuracy_baseline(labels_mean: tuple) -> tuple:
    with tf.compat.v1.name_scope(None, "accuracy_baseline", labels_mean):
        value, update_op = labels_mean
        return (
            tf.math.maximum(value, 1.0 - value, name="value"),
            tf.math.maximum(update_op, 1 - update_op, name="update_op"),
        )


def _predictions_mean(predictions: Any, weights: Any = None, name: Any = None) -> tuple:
    with tf.compat.v1.name_scope(name, "predictions_mean", (predictions, weights)) as scope:
        predictions = tf.cast(predictions, name="predictions", dtype=tf.float32)
        return tf.compat.v1.metrics.mean(
            predictions, weights=_broadcast(weights, predictions), name=scope
        )


def _auc(labels: Any, predictions: Any, weights: Any = None, curve: str = "ROC", name=None):
    with tf.compat.v1.name_scope(name, "auc", (predictions, labels, weights)) as scope:
        predictions = tf.cast(predictions, name="predictions", dtype=tf.float32)
        return tf.compat.v1.metrics.auc(
            labels=labels,
            predictions=predictions,
            weights=_broadcast(weights, predictions),
            curve=curve,
            name=scope,
        )


def _accuracy_at_threshold(labels, predictions, weights, threshold, name=None) -> tuple:
    with tf.compat.v1.name_scope(
        name, f"accuracy_at_{threshold}", (predictions, labels, weights, threshold)
    ) as scope:
        threshold_predictions = tf.compat.v1.to_float(tf.math.greater_equal(predictions, threshold))
        return tf.compat.v1.metrics.accuracy(
            labels=labels, predictions=threshold_predictions, weights=weights, name=scope
        )


def _at_threshold(metric, default_name, labels, predictions, weights, threshold, name) -> tuple:
    with tf.compat.v1.name_scope(
        name, f"{default_name}_at_{threshold}", (predictions, labels, weights, threshold)
    ) as scope:
        value, update_op = metric(
            labels=labels,
            predictions=predictions,
            thresholds=(threshold,),
            weights=weights,
            name=scope,
        )
        return tf.compat.v1.squeeze(value), tf.compat.v1.squeeze(update_op)


def _append_update_ops(train_op: Any) -> Any:
    update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    if update_ops:
        return tf.group(train_op, *update_ops)
    return train_op


def _assert_range(labels: Any, n_classes: int, message: str | None = None) -> Any:
    with tf.compat.v1.name_scope(None, "assert_range", (labels,)):
        assert_less = tf.compat.v1.debugging.assert_less_equal(
            labels,
            tf.convert_to_tensor(n_classes - 1, dtype=labels.dtype),
            message=message or "Labels must <= n_classes - 1",
        )
        assert_greater = tf.compat.v1.debugging.assert_non_negative(
            labels, message=message or "Labels must >= 0"
        )
        with tf.control_dependencies((assert_less, assert_greater)):
            return tf.identity(labels)


def _check_loss_reduction(loss_reduction: Any) -> None:
    if loss_reduction not in tf.compat.v1.losses.Reduction.all() or loss_reduction == _NONE:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction}")


def _string_table_lookup(vocabulary: Any, ids: Any) -> Any:
    table = lookup_ops.index_to_string_table_from_tensor(
        vocabulary_list=vocabulary, name="class_string_lookup"
    )
    return table.lookup(ids)


def _id_table_lookup(vocabulary: Any, labels: Any) -> Any:
    table = lookup_ops.index_table_from_tensor(
        vocabulary_list=tuple(vocabulary), name="class_id_lookup"
    )
    return table.lookup(labels)


def _multi_class_head_with_softmax_cross_entropy_loss(
    n_classes: int,
    weight_column: Any = None,
    label_vocabulary: Any = None,
    loss_reduction: str = _SUM,
    loss_fn: Any = None,
    name: str | None = None,
) -> _Head:
    """A ``_Head`` for ``n_classes`` > 2 classes with softmax cross entropy (summed)."""
    if label_vocabulary is not None and not isinstance(label_vocabulary, list | tuple):
        raise ValueError(
            f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}"
        )
    _check_loss_reduction(loss_reduction)
    if loss_fn:
        _validate_loss_fn_args(loss_fn)
    return _MultiClassHeadWithSoftmaxCrossEntropyLoss(
        n_classes=n_classes,
        weight_column=weight_column,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        name=name,
    )


class _MultiClassHeadWithSoftmaxCrossEntropyLoss(_Head):
    def __init__(
        self,
        n_classes: int,
        weight_column: Any = None,
        label_vocabulary: Any = None,
        loss_reduction: str = _SUM,
        loss_fn: Any = None,
        name: str | None = None,
    ) -> None:
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        self._n_classes = _validate_n_classes(n_classes)
        self._weight_column = weight_column
        self._label_vocabulary = label_vocabulary
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def logits_dimension(self) -> int:
        return self._n_classes

    def _eval_metric_ops(self, labels, class_ids, weights, unreduced_loss, regularization_loss):
        with tf.compat.v1.name_scope(
            None, "metrics", (labels, class_ids, weights, unreduced_loss, regularization_loss)
        ):
            metric_ops = {
                _summary_key(self._name, _Keys.LOSS_MEAN): tf.compat.v1.metrics.mean(
                    values=unreduced_loss, weights=weights, name=_Keys.LOSS_MEAN
                ),
                _summary_key(self._name, _Keys.ACCURACY): tf.compat.v1.metrics.accuracy(
                    labels=labels, predictions=class_ids, weights=weights, name=_Keys.ACCURACY
                ),
            }
            if regularization_loss is not None:
                metric_ops[_summary_key(self._name, _Keys.LOSS_REGULARIZATION)] = (
                    tf.compat.v1.metrics.mean(
                        values=regularization_loss, name=_Keys.LOSS_REGULARIZATION
                    )
                )
        return metric_ops

    def _label_ids(self, labels: Any) -> Any:
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
            label_ids = labels
        else:
            if labels.dtype != tf.string:
                raise ValueError(
                    "Labels dtype should be string if there is a "
                    f"vocabulary. Instead got {labels.dtype}"
                )
            label_ids = _id_table_lookup(self._label_vocabulary, labels)
        return _assert_range(label_ids, self._n_classes)

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> LossSpec:
        del mode
        logits = tf.convert_to_tensor(logits)
        labels = _check_dense_labels_match_logits_and_reshape(
            labels=labels, logits=logits, expected_labels_dimension=1
        )
        label_ids = self._label_ids(labels)
        if self._loss_fn:
            unweighted_loss = _call_loss_fn(
                self._loss_fn, label_ids, logits, features, expected_loss_dim=1
            )
        else:
            unweighted_loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
                labels=label_ids, logits=logits, reduction=_NONE
            )
            unweighted_loss = tf.compat.v1.expand_dims(unweighted_loss, axis=-1)
        weights = _get_weights_and_check_match_logits(
            features=features, weight_column=self._weight_column, logits=logits
        )
        training_loss = tf.compat.v1.losses.compute_weighted_loss(
            unweighted_loss, weights=weights, reduction=self._loss_reduction
        )
        return LossSpec(training_loss, unweighted_loss, weights, label_ids)

    def _create_tpu_estimator_spec(
        self,
        features,
        mode,
        logits,
        labels=None,
        optimizer=None,
        train_op_fn=None,
        regularization_losses=None,
    ) -> EstimatorSpec:
        with tf.compat.v1.name_scope(self._name, "head"):
            logits = _check_logits_final_dim(logits, self.logits_dimension)
            with tf.compat.v1.name_scope(None, "predictions", (logits,)):
                all_class_ids = _all_class_ids(logits, self._n_classes)
                all_classes = _all_classes(logits, self._n_classes, self._label_vocabulary)
                class_ids = tf.compat.v1.math.argmax(logits, axis=-1, name=_Keys.CLASS_IDS)
                class_ids = tf.compat.v1.expand_dims(class_ids, axis=-1)
                if self._label_vocabulary:
                    classes = _string_table_lookup(self._label_vocabulary, class_ids)
                else:
                    classes = tf.strings.as_string(class_ids, name="str_classes")
                probabilities = tf.compat.v1.nn.softmax(logits, name=_Keys.PROBABILITIES)
                predictions = {
                    _Keys.LOGITS: logits,
                    _Keys.PROBABILITIES: probabilities,
                    _Keys.CLASS_IDS: class_ids,
                    _Keys.CLASSES: classes,
                    _Keys.ALL_CLASS_IDS: all_class_ids,
                    _Keys.ALL_CLASSES: all_classes,
                }
            if mode == ModeKeys.PREDICT:
                output = _classification_output(
                    probabilities, self._n_classes, self._label_vocabulary
                )
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT,
                    predictions=predictions,
                    export_outputs={
                        _DEFAULT_SERVING_KEY: output,
                        _CLASSIFY_SERVING_KEY: output,
                        _PREDICT_SERVING_KEY: _out.PredictOutput(predictions),
                    },
                )
            training_loss, unreduced_loss, weights, label_ids = self.create_loss(
                features=features, mode=mode, logits=logits, labels=labels
            )
            reg_loss, regularized = self._regularized(training_loss, regularization_losses)
            if mode == ModeKeys.EVAL:
                return EstimatorSpec(
                    mode=ModeKeys.EVAL,
                    predictions=predictions,
                    loss=regularized,
                    eval_metric_ops=self._eval_metric_ops(
                        labels=label_ids,
                        class_ids=class_ids,
                        weights=weights,
                        unreduced_loss=unreduced_loss,
                        regularization_loss=reg_loss,
                    ),
                )
            train_op, mean_loss = self._train_spec(
                predictions,
                training_loss,
                unreduced_loss,
                weights,
                reg_loss,
                regularized,
                optimizer,
                train_op_fn,
            )
        self._train_summaries(regularized, mean_loss, reg_loss)
        return EstimatorSpec(
            mode=ModeKeys.TRAIN, predictions=predictions, loss=regularized, train_op=train_op
        )


def _binary_logistic_head_with_sigmoid_cross_entropy_loss(
    weight_column: Any = None,
    thresholds: Any = None,
    label_vocabulary: Any = None,
    loss_reduction: str = _SUM,
    loss_fn: Any = None,
    name: str | None = None,
) -> _Head:
    """A ``_Head`` for two classes with sigmoid cross entropy (summed), logits ``[..., 1]``."""
    thresholds = tuple(thresholds) if thresholds else ()
    if label_vocabulary is not None and not isinstance(label_vocabulary, list | tuple):
        raise TypeError(
            f"label_vocabulary should be a list or tuple. Given type: {type(label_vocabulary)}"
        )
    for threshold in thresholds:
        if threshold <= 0.0 or threshold >= 1.0:
            raise ValueError(f"thresholds not in (0, 1): {(thresholds,)}.")
    _check_loss_reduction(loss_reduction)
    if loss_fn:
        _validate_loss_fn_args(loss_fn)
    return _BinaryLogisticHeadWithSigmoidCrossEntropyLoss(
        weight_column=weight_column,
        thresholds=thresholds,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        name=name,
    )


class _BinaryLogisticHeadWithSigmoidCrossEntropyLoss(_Head):
    def __init__(
        self,
        weight_column: Any = None,
        thresholds: Any = None,
        label_vocabulary: Any = None,
        loss_reduction: str = _SUM,
        loss_fn: Any = None,
        name: str | None = None,
    ) -> None:
        self._weight_column = weight_column
        self._thresholds = tuple(thresholds) if thresholds else ()
        self._label_vocabulary = label_vocabulary
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def logits_dimension(self) -> int:
        return 1

    def _eval_metric_ops(
        self, labels, logits, logistic, class_ids, weights, unreduced_loss, regularization_loss
    ):
        k = _Keys
        with tf.compat.v1.name_scope(
            None,
            "metrics",
            (labels, logits, logistic, class_ids, weights, unreduced_loss, regularization_loss),
        ):
            labels_mean = _indicator_labels_mean(labels=labels, weights=weights, name=k.LABEL_MEAN)
            m = tf.compat.v1.metrics
            ops = {
                k.LOSS_MEAN: m.mean(values=unreduced_loss, weights=weights, name=k.LOSS_MEAN),
                k.ACCURACY: m.accuracy(
                    labels=labels, predictions=class_ids, weights=weights, name=k.ACCURACY
                ),
                k.PRECISION: m.precision(
                    labels=labels, predictions=class_ids, weights=weights, name=k.PRECISION
                ),
                k.RECALL: m.recall(
                    labels=labels, predictions=class_ids, weights=weights, name=k.RECALL
                ),
                k.PREDICTION_MEAN: _predictions_mean(
                    predictions=logistic, weights=weights, name=k.PREDICTION_MEAN
                ),
                k.LABEL_MEAN: labels_mean,
                k.ACCURACY_BASELINE: _accuracy_baseline(labels_mean),
                k.AUC: _auc(labels=labels, predictions=logistic, weights=weights, name=k.AUC),
                k.AUC_PR: _auc(
                    labels=labels, predictions=logistic, weights=weights, curve="PR", name=k.AUC_PR
                ),
            }
            if regularization_loss is not None:
                ops[k.LOSS_REGULARIZATION] = m.mean(
                    values=regularization_loss, name=k.LOSS_REGULARIZATION
                )
            for threshold in self._thresholds:
                key = k.ACCURACY_AT_THRESHOLD % threshold
                ops[key] = _accuracy_at_threshold(labels, logistic, weights, threshold, name=key)
                key = k.PRECISION_AT_THRESHOLD % threshold
                ops[key] = _at_threshold(
                    m.precision_at_thresholds,
                    "precision",
                    labels,
                    logistic,
                    weights,
                    threshold,
                    key,
                )
                key = k.RECALL_AT_THRESHOLD % threshold
                ops[key] = _at_threshold(
                    m.recall_at_thresholds, "recall", labels, logistic, weights, threshold, key
                )
            return {_summary_key(self._name, key): value for key, value in ops.items()}

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> LossSpec:
        del mode
        logits = tf.convert_to_tensor(logits)
        labels = _check_dense_labels_match_logits_and_reshape(
            labels=labels, logits=logits, expected_labels_dimension=1
        )
        if self._label_vocabulary is not None:
            labels = _id_table_lookup(self._label_vocabulary, labels)
        labels = tf.cast(labels, dtype=tf.float32)
        labels = _assert_range(labels, n_classes=2)
        if self._loss_fn:
            unweighted_loss = _call_loss_fn(
                self._loss_fn, labels, logits, features, expected_loss_dim=1
            )
        else:
            unweighted_loss = tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(
                labels=labels, logits=logits
            )
        weights = _get_weights_and_check_match_logits(
            features=features, weight_column=self._weight_column, logits=logits
        )
        training_loss = tf.compat.v1.losses.compute_weighted_loss(
            unweighted_loss, weights=weights, reduction=self._loss_reduction
        )
        return LossSpec(training_loss, unweighted_loss, weights, labels)

    def _create_tpu_estimator_spec(
        self,
        features,
        mode,
        logits,
        labels=None,
        optimizer=None,
        train_op_fn=None,
        regularization_losses=None,
    ) -> EstimatorSpec:
        with tf.compat.v1.name_scope(self._name, "head"):
            with tf.compat.v1.name_scope(None, "predictions", (logits,)):
                logits = _check_logits_final_dim(logits, self.logits_dimension)
                logistic = tf.math.sigmoid(logits, name=_Keys.LOGISTIC)
                two_class_logits = tf.concat(
                    (tf.compat.v1.zeros_like(logits), logits), axis=-1, name="two_class_logits"
                )
                probabilities = tf.compat.v1.nn.softmax(two_class_logits, name=_Keys.PROBABILITIES)
                class_ids = tf.compat.v1.math.argmax(
                    two_class_logits, axis=-1, name=_Keys.CLASS_IDS
                )
                class_ids = tf.compat.v1.expand_dims(class_ids, axis=-1)
                all_class_ids = _all_class_ids(logits, n_classes=2)
                all_classes = _all_classes(logits, 2, self._label_vocabulary)
                if self._label_vocabulary:
                    classes = _string_table_lookup(self._label_vocabulary, class_ids)
                else:
                    classes = tf.strings.as_string(class_ids, name="str_classes")
                predictions = {
                    _Keys.LOGITS: logits,
                    _Keys.LOGISTIC: logistic,
                    _Keys.PROBABILITIES: probabilities,
                    _Keys.CLASS_IDS: class_ids,
                    _Keys.CLASSES: classes,
                    _Keys.ALL_CLASS_IDS: all_class_ids,
                    _Keys.ALL_CLASSES: all_classes,
                }
            if mode == ModeKeys.PREDICT:
                output = _classification_output(probabilities, 2, self._label_vocabulary)
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT,
                    predictions=predictions,
                    export_outputs={
                        _DEFAULT_SERVING_KEY: output,
                        _CLASSIFY_SERVING_KEY: output,
                        _REGRESS_SERVING_KEY: _out.RegressionOutput(value=logistic),
                        _PREDICT_SERVING_KEY: _out.PredictOutput(predictions),
                    },
                )
            training_loss, unreduced_loss, weights, processed_labels = self.create_loss(
                features=features, mode=mode, logits=logits, labels=labels
            )
            reg_loss, regularized = self._regularized(training_loss, regularization_losses)
            if mode == ModeKeys.EVAL:
                return EstimatorSpec(
                    mode=ModeKeys.EVAL,
                    predictions=predictions,
                    loss=regularized,
                    eval_metric_ops=self._eval_metric_ops(
                        labels=processed_labels,
                        logits=logits,
                        logistic=logistic,
                        class_ids=class_ids,
                        weights=weights,
                        unreduced_loss=unreduced_loss,
                        regularization_loss=reg_loss,
                    ),
                )
            train_op, mean_loss = self._train_spec(
                predictions,
                training_loss,
                unreduced_loss,
                weights,
                reg_loss,
                regularized,
                optimizer,
                train_op_fn,
            )
        self._train_summaries(regularized, mean_loss, reg_loss)
        return EstimatorSpec(
            mode=ModeKeys.TRAIN, predictions=predictions, loss=regularized, train_op=train_op
        )


def _regression_head(
    weight_column: Any = None,
    label_dimension: int = 1,
    loss_reduction: str = _SUM,
    loss_fn: Any = None,
    inverse_link_fn: Any = None,
    name: str | None = None,
) -> _Head:
    """A ``_Head`` for regression with mean squared error (summed over batch and labels)."""
    _check_loss_reduction(loss_reduction)
    if loss_fn:
        _validate_loss_fn_args(loss_fn)
    return _RegressionHeadWithMeanSquaredErrorLoss(
        weight_column=weight_column,
        label_dimension=label_dimension,
        loss_reduction=loss_reduction,
        loss_fn=loss_fn,
        inverse_link_fn=inverse_link_fn,
        name=name,
    )


class _RegressionHeadWithMeanSquaredErrorLoss(_Head):
    def __init__(
        self,
        label_dimension: int,
        weight_column: Any = None,
        loss_reduction: str = _SUM,
        loss_fn: Any = None,
        inverse_link_fn: Any = None,
        name: str | None = None,
    ) -> None:
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        self._logits_dimension = label_dimension
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._inverse_link_fn = inverse_link_fn
        self._name = name

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def logits_dimension(self) -> int:
        return self._logits_dimension

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> LossSpec:
        del mode
        logits = tf.convert_to_tensor(logits)
        labels = _check_dense_labels_match_logits_and_reshape(
            labels=labels, logits=logits, expected_labels_dimension=self._logits_dimension
        )
        labels = tf.cast(labels, dtype=tf.float32)
        if self._loss_fn:
            unweighted_loss = _call_loss_fn(
                self._loss_fn, labels, logits, features, self._logits_dimension
            )
        else:
            unweighted_loss = tf.compat.v1.losses.mean_squared_error(
                labels=labels, predictions=logits, reduction=_NONE
            )
        weights = _get_weights_and_check_match_logits(
            features=features,
            weight_column=self._weight_column,
            logits=logits,
            allow_per_logit_weights=True,
        )
        training_loss = tf.compat.v1.losses.compute_weighted_loss(
            unweighted_loss, weights=weights, reduction=self._loss_reduction
        )
        return LossSpec(training_loss, unweighted_loss, weights, labels)

    def _eval_metric_ops(self, predicted_value, labels, weights, unreduced_loss, reg_loss):
        k = _Keys
        ops = {
            _summary_key(self._name, k.LOSS_MEAN): tf.compat.v1.metrics.mean(
                values=unreduced_loss, weights=weights
            ),
            _summary_key(self._name, k.PREDICTION_MEAN): _predictions_mean(
                predictions=predicted_value, weights=weights, name=k.PREDICTION_MEAN
            ),
            _summary_key(self._name, k.LABEL_MEAN): tf.compat.v1.metrics.mean(
                values=labels, weights=weights
            ),
        }
        if reg_loss is not None:
            ops[_summary_key(self._name, k.LOSS_REGULARIZATION)] = tf.compat.v1.metrics.mean(
                values=reg_loss, name=k.LOSS_REGULARIZATION
            )
        return ops

    def _create_tpu_estimator_spec(
        self,
        features,
        mode,
        logits,
        labels=None,
        optimizer=None,
        train_op_fn=None,
        regularization_losses=None,
    ) -> EstimatorSpec:
        with tf.compat.v1.name_scope(self._name, "head"):
            logits = _check_logits_final_dim(logits, self._logits_dimension)
            if self._inverse_link_fn:
                predicted_value = self._inverse_link_fn(logits)
                predictions = {_Keys.PREDICTIONS: predicted_value, _Keys.LOGITS: logits}
            else:
                predicted_value = logits
                predictions = {_Keys.PREDICTIONS: predicted_value}
            if mode == ModeKeys.PREDICT:
                output = _out.RegressionOutput(value=predicted_value)
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT,
                    predictions=predictions,
                    export_outputs={
                        _DEFAULT_SERVING_KEY: output,
                        _REGRESS_SERVING_KEY: output,
                        _PREDICT_SERVING_KEY: _out.PredictOutput(predictions),
                    },
                )
            training_loss, unreduced_loss, weights, _ = self.create_loss(
                features=features, mode=mode, logits=logits, labels=labels
            )
            reg_loss, regularized = self._regularized(training_loss, regularization_losses)
            if mode == ModeKeys.EVAL:
                return EstimatorSpec(
                    mode=ModeKeys.EVAL,
                    predictions=predictions,
                    loss=regularized,
                    eval_metric_ops=self._eval_metric_ops(
                        predicted_value, labels, weights, unreduced_loss, reg_loss
                    ),
                )
            train_op, mean_loss = self._train_spec(
                predictions,
                training_loss,
                unreduced_loss,
                weights,
                reg_loss,
                regularized,
                optimizer,
                train_op_fn,
            )
        self._train_summaries(regularized, mean_loss, reg_loss)
        return EstimatorSpec(
            mode=ModeKeys.TRAIN, predictions=predictions, loss=regularized, train_op=train_op
        )


def _binary_logistic_or_multi_class_head(
    n_classes: int, weight_column: Any, label_vocabulary: Any, loss_reduction: str
) -> _Head:
    """The binary head for ``n_classes == 2``, else the multi-class head."""
    if n_classes == 2:
        return _binary_logistic_head_with_sigmoid_cross_entropy_loss(
            weight_column=weight_column,
            label_vocabulary=label_vocabulary,
            loss_reduction=loss_reduction,
        )
    return _multi_class_head_with_softmax_cross_entropy_loss(
        n_classes,
        weight_column=weight_column,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
    )
