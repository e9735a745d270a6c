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
# Changes: type hints, reformatting and new docstrings; the heads re-exported from a module
# each, and the binary-or-multi-class choice kept here.
"""The v1 heads of ``tf.compat.v1.estimator``'s canned estimators (``canned/head.py``).

One module per head, as in :mod:`tf1compat_init.estimator.head`: ``_binary`` (sigmoid
cross entropy), ``_multi_class`` (softmax cross entropy), ``_regression`` (mean squared
error), over ``_base`` (``_Head`` and the spec flow they share) and ``_checks`` /
``_metrics``. Everything is built from ``tf.compat.v1`` losses and metrics (no Keras), so
TF 2.15 and TF >= 2.16 build the same graph and get the same numbers; the default loss
reduction is ``SUM`` (the V2 heads average). Error texts are TF 2.15's.
"""

from __future__ import annotations

from typing import Any

from ._base import LossSpec, _Head
from ._binary import _binary_logistic_head_with_sigmoid_cross_entropy_loss
from ._multi_class import _multi_class_head_with_softmax_cross_entropy_loss
from ._regression import _regression_head

__all__ = [
    "LossSpec",
    "_Head",
    "_binary_logistic_head_with_sigmoid_cross_entropy_loss",
    "_binary_logistic_or_multi_class_head",
    "_multi_class_head_with_softmax_cross_entropy_loss",
    "_regression_head",
]


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
