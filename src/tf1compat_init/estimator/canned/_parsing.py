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
# Modified from `tensorflow_estimator/python/estimator/canned/parsing_utils.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator.
"""``tf.estimator.classifier_parse_example_spec`` / ``regressor_parse_example_spec``.

TF 2.15's V2 functions: the feature columns' ``tf.io.parse_example`` spec, plus the
label (a ``FixedLenFeature``) and the weight column, with TF 2.15's errors word for word.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["classifier_parse_example_spec", "regressor_parse_example_spec"]


def classifier_parse_example_spec_v2(
    feature_columns: Any,
    label_key: str,
    label_dtype: tf.dtypes.DType = tf.dtypes.int64,
    label_default: Any = None,
    weight_column: Any = None,
) -> dict:
    """The parsing spec of a classifier's ``tf.Example``: features, label and weight.

    Args:
        feature_columns: the model's feature columns (``tf.feature_column`` v2).
        label_key: the label's key in the ``tf.Example``.
        label_dtype: the label's type (``tf.string`` with a ``label_vocabulary``).
        label_default: the label's value where an example has none (else an error).
        weight_column: a key or a ``tf.feature_column.numeric_column``.

    Returns:
        ``{key: FixedLenFeature | VarLenFeature | ...}`` for ``tf.io.parse_example``.

    Raises:
        ValueError: the label or the weight column is also a feature, or the weight column
            is not a numeric column.

    Example:
        >>> spec = classifier_parse_example_spec(  # doctest: +SKIP
        ...     [tf.feature_column.numeric_column("x")], label_key="y")
    """
    parsing_spec = tf.feature_column.make_parse_example_spec(feature_columns)
    label_spec = tf.io.FixedLenFeature((1,), label_dtype, label_default)
    return _with_label_and_weight(parsing_spec, label_key, label_spec, weight_column)


def regressor_parse_example_spec_v2(
    feature_columns: Any,
    label_key: str,
    label_dtype: tf.dtypes.DType = tf.dtypes.float32,
    label_default: Any = None,
    label_dimension: int = 1,
    weight_column: Any = None,
) -> dict:
    """The parsing spec of a regressor's ``tf.Example``: features, label and weight.

    As :func:`classifier_parse_example_spec`, with a float label of ``label_dimension``
    values.

    Example:
        >>> spec = regressor_parse_example_spec(  # doctest: +SKIP
        ...     [tf.feature_column.numeric_column("x")], label_key="y", label_dimension=2)
    """
    parsing_spec = tf.feature_column.make_parse_example_spec(feature_columns)
    label_spec = tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default)
    return _with_label_and_weight(parsing_spec, label_key, label_spec, weight_column)


def _with_label_and_weight(
    parsing_spec: dict, label_key: str, label_spec: Any, weight_column: Any
) -> dict:
    if label_key in parsing_spec:
        raise ValueError(
            "label should not be used as feature. "
            f"label_key: {label_key}, features: {parsing_spec.keys()}"
        )
    parsing_spec[label_key] = label_spec
    if weight_column is None:
        return parsing_spec
    if isinstance(weight_column, str):
        weight_column = tf.feature_column.numeric_column(weight_column)
    if not isinstance(weight_column, _numeric_column_type()):
        raise ValueError(
            "weight_column should be an instance of tf.feature_column.numeric_column. "
            f"Given type: {type(weight_column)} value: {weight_column}"
        )
    if weight_column.key in parsing_spec:
        raise ValueError(
            "weight_column should not be used as feature. "
            f"weight_column: {weight_column.key}, features: {parsing_spec.keys()}"
        )
    parsing_spec.update(weight_column.parse_example_spec)
    return parsing_spec


def _numeric_column_type() -> type:
    # The class behind tf.feature_column.numeric_column (not exported by name).
    return type(tf.feature_column.numeric_column("x"))


# TF 2.15 named the V2 functions so.
classifier_parse_example_spec = classifier_parse_example_spec_v2
regressor_parse_example_spec = regressor_parse_example_spec_v2
