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
# tf.compat.v1 without tensorflow_estimator; the checks of base_head.py gathered in one module.
"""Shape, dtype and argument checks shared by the heads, with tf.estimator 2.15's texts.

In graph mode a check that needs runtime shapes becomes an assert op under the same
name scope as in tensorflow-estimator 2.15, so a failing assert reads the same (op
names included) in both. Eagerly, checks raise ``ValueError`` at once, as TF 2.15 did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tensorflow as tf
from tensorflow.python.util import function_utils

__all__ = [
    "LABEL_NONE_ERR_MSG",
    "V2_TEXTS",
    "CheckTexts",
    "call_loss_fn",
    "check_dense_labels_match_logits_and_reshape",
    "check_label_range",
    "check_logits_final_dim",
    "check_prediction_keys",
    "get_weights_and_check_match_logits",
    "validate_loss_fn_args",
    "validate_loss_reduction",
    "validate_n_classes",
]

#: ``tf.losses.Reduction`` values (Keras 2's ``ReductionV2``), spelled out so that
#: defaults need no Keras import.
AUTO = "auto"
NONE = "none"
SUM = "sum"
SUM_OVER_BATCH_SIZE = "sum_over_batch_size"
REDUCTIONS = (AUTO, NONE, SUM, SUM_OVER_BATCH_SIZE)

LABEL_NONE_ERR_MSG = (
    "You must provide a labels Tensor. Given: None. "
    "Suggested troubleshooting steps: Check that your data contains your label "
    "feature. Check that your input_fn properly parses and returns labels."
)
_SPARSE_LABEL_ERR_MSG = (
    "SparseTensor labels are not supported. Labels must be a Tensor of shape "
    "[D0, D1, ..., DN, {0}], e.g. [batch_size, {0}].Suggested Fix (1): Check the"
    " label feature in your data. Each example must contain {0} value(s). If "
    "not, your choice of label was probably incorrect. Suggested Fix (2): In "
    "your input_fn, use tf.sparse_tensor_to_dense() to turn labels into a "
    "Tensor."
)
_MISMATCHED_LABEL_DIM_ERR_MSG = (
    "Mismatched label shape. Expected labels dimension={}.  Received {}. "
    "Suggested Fix: If your classifier expects one-hot encoding label, check "
    "your n_classes argument to the estimator and/or the shape of your label. "
    "Otherwise, check the shape of your label."
)
_LABEL_SHAPE_ERR_MSG = (
    "labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your "
    "n_classes argument to the head and/or the shape of your label."
)
_LOGITS_SHAPE_MSG = "logits shape must be [D0, D1, ... DN, logits_dimension]"


def _numeric_column_types() -> tuple:
    from tensorflow.python.feature_column import feature_column_lib
    from tensorflow.python.feature_column.feature_column import _NumericColumn

    return (feature_column_lib.NumericColumn, _NumericColumn)


@dataclass(frozen=True)
class CheckTexts:
    """What differs between the V2 heads' checks and the v1 heads' (``canned/head.py``).

    Both generations of tensorflow-estimator 2.15 build the same check ops for logits,
    weights, label ranges and ``loss_fn`` arguments, with their own wording, scope names
    and rules; the checks below take one of these (the V2 one by default).
    """

    #: the error for a wrong static logits dimension; ``{}`` (if present) is the expected one.
    logits_dim: str = _LOGITS_SHAPE_MSG
    #: the weight column types accepted, and the error for another one.
    weight_column_types: Callable[[], tuple] = _numeric_column_types
    weight_column_type_err: str = "Weight column must be either a string or NumericColumn."
    range_scope: str = "check_label_range"
    range_max: str = "Labels must be <= n_classes - 1"
    range_min: str = "Labels must be >= 0"
    loss_fn_args: frozenset = frozenset({"labels", "logits", "features", "loss_reduction"})
    #: eager tensors are checked in Python (the V2 heads), or by the graph's ops (v1).
    eager_checks: bool = True


V2_TEXTS = CheckTexts()


def _shape_tuple(t: Any) -> tuple:
    return tuple(t.shape.as_list()) if t.shape.rank is not None else None


def check_dense_labels_match_logits_and_reshape(
    labels: Any, logits: Any, expected_labels_dimension: int
) -> Any:
    """Labels shaped ``[D0, ... DN, expected_labels_dimension]`` like the logits.

    Labels of rank ``rank(logits) - 1`` get a last dimension of 1 first.

    Raises:
        ValueError: labels are None or sparse, or their static shape is wrong.
    """
    if labels is None:
        raise ValueError(LABEL_NONE_ERR_MSG)
    with tf.compat.v1.name_scope("labels", values=(labels, logits)) as scope:
        labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
        if isinstance(labels, tf.sparse.SparseTensor):
            raise ValueError(_SPARSE_LABEL_ERR_MSG.format(expected_labels_dimension))
        if tf.executing_eagerly():
            return _eager_labels(labels, logits, expected_labels_dimension)
        if (
            labels.shape.rank is not None
            and logits.shape.rank is not None
            and labels.shape.rank == logits.shape.rank - 1
        ):
            labels = tf.compat.v1.expand_dims(labels, -1)
        shape_msg = _LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension)
        assert_rank = tf.compat.v1.debugging.assert_rank_at_least(labels, 2, message=shape_msg)
        with tf.control_dependencies([assert_rank]):
            if labels.shape.rank is not None:
                final_dim = labels.shape[-1]
                if final_dim is not None and final_dim != expected_labels_dimension:
                    raise ValueError(
                        _MISMATCHED_LABEL_DIM_ERR_MSG.format(expected_labels_dimension, final_dim)
                    )
            expected_shape = tf.concat(
                [tf.compat.v1.shape(logits)[:-1], [expected_labels_dimension]], axis=0
            )
            labels_shape = tf.compat.v1.shape(labels)
            assert_dimension = tf.compat.v1.debugging.assert_equal(
                expected_shape,
                labels_shape,
                message=shape_msg,
                data=["expected_labels_shape: ", expected_shape, "labels_shape: ", labels_shape],
            )
            with tf.control_dependencies([assert_dimension]):
                return tf.identity(labels, name=scope)


def _eager_labels(labels: Any, logits: Any, dim: int) -> Any:
    labels_rank, logits_rank = labels.shape.rank, logits.shape.rank
    if labels_rank is not None and logits_rank is not None and labels_rank == logits_rank - 1:
        labels = tf.compat.v1.expand_dims(labels, -1)
        labels_rank += 1
    labels_shape = _shape_tuple(labels)
    if labels_rank < 2:
        raise ValueError(
            f"labels must have rank at least 2.  Received rank {labels_rank}, shape {labels_shape}"
        )
    if labels_shape[-1] != dim:
        raise ValueError(_MISMATCHED_LABEL_DIM_ERR_MSG.format(dim, labels_shape[-1]))
    expected = _shape_tuple(logits)[:-1] + (dim,)
    if expected != labels_shape:
        raise ValueError(
            f"{_LABEL_SHAPE_ERR_MSG.format(dim)}, expected_labels_shape: {expected}. "
            f"labels_shape: {labels_shape}."
        )
    return labels


def _weight_tensor(features: dict, weight_column: Any, texts: CheckTexts) -> Any:
    # The feature column machinery gives TF's own errors for a missing or sparse weight.
    from tensorflow.python.feature_column.feature_column import _LazyBuilder

    if isinstance(weight_column, str):
        weight_column = tf.feature_column.numeric_column(key=weight_column, shape=(1,))
    if not isinstance(weight_column, texts.weight_column_types()):
        raise TypeError(f"{texts.weight_column_type_err} Given type: {type(weight_column)}.")
    weights = weight_column._get_dense_tensor(_LazyBuilder(features))
    if not (weights.dtype.is_floating or weights.dtype.is_integer):
        raise ValueError(f"Weight column should be castable to float. Given dtype: {weights.dtype}")
    return tf.cast(weights, name="weights", dtype=tf.float32)


def get_weights_and_check_match_logits(
    features: dict,
    weight_column: Any,
    logits: Any,
    allow_per_logit_weights: bool = False,
    texts: CheckTexts = V2_TEXTS,
) -> Any:
    """Example weights from ``features[weight_column]``, shaped to broadcast with the loss.

    ``1.`` without a weight column; ``[D0, ... DN]`` weights get a last dimension of 1.

    Raises:
        TypeError: the weight column is neither a string nor a numeric column.
        ValueError: the feature is missing, or its static shape does not fit (eager).
    """
    if allow_per_logit_weights:
        err_msg = (
            "weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] or "
            "[D0, D1, ... DN, logits_dimension]"
        )
    else:
        err_msg = "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"
    with tf.compat.v1.name_scope("weights", values=(*features.values(), logits)) as scope:
        if weight_column is None:
            return 1.0
        weights = _weight_tensor(features, weight_column, texts)
        if texts.eager_checks and tf.executing_eagerly():
            return _eager_weights(weights, logits, err_msg, allow_per_logit_weights)
        weights_shape = tf.compat.v1.shape(weights, name="weights_shape")
        logits_shape = tf.compat.v1.shape(logits, name="logits_shape")
        data = ["logits_shape: ", logits_shape, "weights_shape: ", weights_shape]
        if (
            weights.shape.rank is not None
            and logits.shape.rank is not None
            and weights.shape.rank == logits.shape.rank - 1
        ):
            check = tf.compat.v1.debugging.assert_equal(
                logits_shape[:-1], weights_shape, message=err_msg, data=data
            )
            with tf.control_dependencies([check]):
                return tf.compat.v1.expand_dims(weights, -1, name=scope)
        one_per_row = tf.concat([logits_shape[:-1], [1]], axis=0)
        if allow_per_logit_weights:
            fits = tf.math.reduce_any(
                [
                    tf.reduce_all(tf.math.equal(logits_shape, weights_shape)),
                    tf.reduce_all(tf.math.equal(one_per_row, weights_shape)),
                ]
            )
            check = tf.debugging.Assert(
                condition=fits,
                data=[err_msg, "logits_shape: ", logits_shape, "weights_shape: ", weights_shape],
            )
        else:
            check = tf.compat.v1.debugging.assert_equal(
                one_per_row, weights_shape, message=err_msg, data=data
            )
        with tf.control_dependencies([check]):
            return tf.identity(weights, name=scope)


def _eager_weights(weights: Any, logits: Any, err_msg: str, per_logit: bool) -> Any:
    weights_shape, logits_shape = _shape_tuple(weights), _shape_tuple(logits)
    bad = f"{err_msg}, logits_shape: {logits_shape}. weights_shape: {weights_shape}."
    if len(weights_shape) == len(logits_shape) - 1:
        if logits_shape[:-1] != weights_shape:
            raise ValueError(bad)
        return tf.compat.v1.expand_dims(weights, -1)
    allowed = [logits_shape[:-1] + (1,)] + ([logits_shape] if per_logit else [])
    if weights_shape not in allowed:
        raise ValueError(bad)
    return weights


def check_logits_final_dim(
    logits: Any, expected_logits_dimension: Any, texts: CheckTexts = V2_TEXTS
) -> Any:
    """Float32 logits of shape ``[D0, ... DN, expected_logits_dimension]``.

    Raises:
        ValueError: the static last dimension (or, eagerly, the rank) is wrong.
    """
    with tf.compat.v1.name_scope("logits", values=(logits,)) as scope:
        logits = tf.cast(logits, tf.float32)
        dim_msg = texts.logits_dim.format(expected_logits_dimension)
        if texts.eager_checks and tf.executing_eagerly():
            shape = _shape_tuple(logits)
            if len(shape) < 2:
                raise ValueError(
                    f"logits must have rank at least 2.  Received rank {len(shape)}, shape {shape}"
                )
            if (
                isinstance(expected_logits_dimension, int)
                and shape[-1] != expected_logits_dimension
            ):
                raise ValueError(f"{_LOGITS_SHAPE_MSG}, got {shape}.")
            return logits
        logits_shape = tf.compat.v1.shape(logits)
        assert_rank = tf.compat.v1.debugging.assert_rank_at_least(
            logits, 2, data=[logits_shape], message=_LOGITS_SHAPE_MSG
        )
        with tf.control_dependencies([assert_rank]):
            static = logits.shape
            if static.rank is not None and static[-1] is not None:
                if (
                    isinstance(expected_logits_dimension, int)
                    and static[-1] != expected_logits_dimension
                ):
                    raise ValueError(f"{dim_msg}, got {static}.")
                return logits
            assert_dimension = tf.compat.v1.debugging.assert_equal(
                expected_logits_dimension,
                logits_shape[-1],
                data=[logits_shape],
                message=dim_msg,
            )
            with tf.control_dependencies([assert_dimension]):
                return tf.identity(logits, name=scope)


def check_label_range(
    labels: Any, n_classes: Any, message: str | None = None, texts: CheckTexts = V2_TEXTS
) -> Any:
    """Labels, after checking that they lie in ``[0, n_classes)``."""
    with tf.compat.v1.name_scope(texts.range_scope, values=(labels,)):
        if texts.eager_checks and tf.executing_eagerly():
            if not tf.reduce_all(tf.math.less_equal(labels, n_classes - 1)):
                raise ValueError(message or f"Labels must be <= {n_classes} - 1")
            if not tf.reduce_all(tf.math.greater_equal(labels, 0)):
                raise ValueError(message or "Labels must be >= 0")
            return labels
        at_most = tf.compat.v1.debugging.assert_less_equal(
            labels,
            tf.convert_to_tensor(n_classes - 1, dtype=labels.dtype),
            message=message or texts.range_max,
        )
        non_negative = tf.compat.v1.debugging.assert_non_negative(
            labels, message=message or texts.range_min
        )
        with tf.control_dependencies((at_most, non_negative)):
            return tf.identity(labels)


def validate_loss_fn_args(loss_fn: Any, texts: CheckTexts = V2_TEXTS) -> None:
    """A custom ``loss_fn`` takes ``labels`` and ``logits``, maybe ``features``.

    Raises:
        ValueError: a required argument is missing or an unknown one is present.
    """
    args = function_utils.fn_args(loss_fn)
    for required in ("labels", "logits"):
        if required not in args:
            raise ValueError(f"loss_fn must contain argument: {required}. Given arguments: {args}")
    unexpected = list(set(args) - texts.loss_fn_args)
    if unexpected:
        raise ValueError(f"loss_fn has unexpected args: {unexpected}")


def call_loss_fn(
    loss_fn: Any,
    labels: Any,
    logits: Any,
    features: dict,
    expected_loss_dim: int = 1,
    texts: CheckTexts = V2_TEXTS,
) -> Any:
    """The unreduced loss of a custom ``loss_fn``, checked to be ``[D0, ... DN, dim]``."""
    kwargs = {}
    if "features" in function_utils.fn_args(loss_fn):
        kwargs["features"] = features
    with tf.compat.v1.name_scope("call_loss_fn", values=[labels, logits, *features.values()]):
        loss = loss_fn(labels=labels, logits=logits, **kwargs)
        expected_msg = (
            f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. "
        )
        if texts.eager_checks and tf.executing_eagerly():
            logits_shape = _shape_tuple(logits)
            if _shape_tuple(loss) != logits_shape[:-1] + (expected_loss_dim,):
                raise ValueError(
                    expected_msg,
                    "logits_shape: ",
                    logits_shape,
                    "loss_shape: ",
                    _shape_tuple(loss),
                )
            return loss
        logits_shape = tf.compat.v1.shape(logits, name="logits_shape")
        expected = tf.concat(
            [logits_shape[:-1], [expected_loss_dim]], axis=0, name="expected_loss_shape"
        )
        loss_shape = tf.compat.v1.shape(loss, name="loss_shape")
        check = tf.debugging.Assert(
            tf.reduce_all(tf.math.equal(loss_shape, expected)),
            data=[expected_msg, "logits_shape: ", logits_shape, "loss_shape: ", loss_shape],
            name="check_loss_shape",
        )
        with tf.control_dependencies([check]):
            return tf.identity(loss)


def validate_loss_reduction(loss_reduction: Any) -> None:
    """Raises ``ValueError`` unless ``loss_reduction`` is a ``Reduction`` other than NONE."""
    if loss_reduction not in REDUCTIONS or loss_reduction == NONE:
        raise ValueError(
            f"Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` for valid "
            "options."
        )


def validate_n_classes(n_classes: Any) -> Any:
    """``n_classes`` unchanged, after checking it is more than 2 (an assert if a tensor)."""
    if isinstance(n_classes, int) and n_classes <= 2:
        raise ValueError(f"n_classes must be > 2: {n_classes}.")
    as_tensor = tf.convert_to_tensor(n_classes)
    check = tf.compat.v1.debugging.assert_greater(
        as_tensor, 2, message="n_classes must be greater than 2"
    )
    with tf.control_dependencies([check]):
        tf.no_op()
    return n_classes


def check_prediction_keys(pred_keys: Any, valid_keys: list) -> Any:
    """``pred_keys`` once checked against ``valid_keys``; all of those when none is given."""
    if not pred_keys:
        return valid_keys
    for key in pred_keys:
        if key not in valid_keys:
            raise ValueError(
                f"Prediction key must be in PredictionKeys, given: {key}."
                f"Valid prediction keys include {valid_keys}."
            )
    return pred_keys
