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
# Modified from `tensorflow_estimator/python/estimator/head/head_utils.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator.
"""The heads the canned classifiers and regressors make from their arguments (TF 2.15)."""

from __future__ import annotations

from typing import Any

from .._keras2 import keras2

__all__ = ["binary_or_multi_class_head", "regression_head"]


def binary_or_multi_class_head(
    n_classes: int,
    weight_column: Any = None,
    label_vocabulary: Any = None,
    loss_reduction: Any = None,
) -> Any:
    """``BinaryClassHead`` for 2 classes, else ``MultiClassHead`` (which checks ``n_classes``)."""
    from .. import head

    if loss_reduction is None:
        loss_reduction = keras2().losses.Reduction.SUM_OVER_BATCH_SIZE
    if n_classes == 2:
        return head.BinaryClassHead(
            weight_column=weight_column,
            label_vocabulary=label_vocabulary,
            loss_reduction=loss_reduction,
        )
    return head.MultiClassHead(
        n_classes,
        weight_column=weight_column,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
    )


def regression_head(
    label_dimension: int = 1, weight_column: Any = None, loss_reduction: Any = None
) -> Any:
    """``RegressionHead``, as the canned regressors make it."""
    from .. import head

    if loss_reduction is None:
        loss_reduction = keras2().losses.Reduction.SUM_OVER_BATCH_SIZE
    return head.RegressionHead(
        label_dimension=label_dimension,
        weight_column=weight_column,
        loss_reduction=loss_reduction,
    )
