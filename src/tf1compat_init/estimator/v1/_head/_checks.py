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
# tf.compat.v1 without tensorflow_estimator; the checks whose ops the V2 heads build alike
# (logits, weights, label range, loss_fn) run through `head/_checks` with the v1 texts.
"""The v1 heads' checks: their texts for the shared checks, and what only v1 does.

The label check is v1's own: it builds its shape ops before the rank assert (the V2 one
after it), so the graphs differ. The ``loss_reduction`` check takes
``tf.compat.v1.losses.Reduction`` values.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ...head._checks import CheckTexts


def _dense_column_types() -> tuple:
    from tensorflow.python.feature_column import feature_column as fc_v1

    return (tf.__internal__.feature_column.DenseColumn, fc_v1._DenseColumn)


#: tensorflow-estimator 2.15's ``canned/head.py`` wording, scopes and rules.
V1_TEXTS = CheckTexts(
    logits_dim="logits shape must be [D0, D1, ... DN, logits_dimension={}]",
    weight_column_types=_dense_column_types,
    weight_column_type_err="Weight column must be either a string or _DenseColumn.",
    range_scope="assert_range",
    range_max="Labels must <= n_classes - 1",
    range_min="Labels must >= 0",
    loss_fn_args=frozenset({"labels", "logits", "features"}),
    eager_checks=False,
)

__all__ = ["V1_TEXTS", "check_dense_labels_match_logits_and_reshape", "check_loss_reduction"]


def check_loss_reduction(loss_reduction: Any) -> None:
    reduction = tf.compat.v1.losses.Reduction
    if loss_reduction not in reduction.all() or loss_reduction == reduction.NONE:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction}")


def check_dense_labels_match_logits_and_reshape(
    labels: Any, logits: Any, expected_labels_dimension: int
) -> Any:
    """Labels shaped ``[D0, ... DN, expected_labels_dimension]`` like the logits (v1 texts)."""
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
