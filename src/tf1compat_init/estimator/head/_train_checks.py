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
# tf.compat.v1 without tensorflow_estimator; the checks of the train op's arguments
# (base_head.py's validate_* helpers) apart from the other checks.
"""Checks of the train op's arguments (TF 2.15's ``base_head.validate_*``), with its texts.

Apart from :mod:`._checks` (the label, logits, weight and loss checks every head
shares with the v1 heads): only the V2 heads' ``create_estimator_spec`` with an
``optimizer`` runs these.
"""

from __future__ import annotations

from typing import Any

__all__ = ["validate_trainable_variables", "validate_update_ops", "validate_v2_optimizer"]

_VALIDATION_ERROR_MSG = "{} should be a list or a tuple. Given type: {}."
_KERAS3_OPTIMIZER_ADVICE = (
    "\ntf1compat_init: heads build the train op with a Keras 2 optimizer's get_updates() "
    "in graph mode; on TensorFlow >= 2.16 use a tf_keras legacy optimizer, e.g. "
    "tf_keras.optimizers.legacy.Adagrad(0.05), not a tf.keras (Keras 3) one."
)


def validate_update_ops(update_ops: Any = None) -> None:
    if update_ops is not None and not isinstance(update_ops, list | tuple):
        raise ValueError(_VALIDATION_ERROR_MSG.format("update_ops", type(update_ops)))


def validate_v2_optimizer(optimizer: Any) -> None:
    """Raises ``ValueError`` unless ``optimizer`` is a Keras 2 optimizer (legacy or not)."""
    from .._keras2 import keras2

    keras = keras2()
    if not isinstance(optimizer, keras.optimizers.Optimizer | keras.optimizers.legacy.Optimizer):
        message = (
            "The given optimizer is not a tf.keras.optimizers.Optimizer "
            f"instance. Received optimizer of type {type(optimizer)}"
        )
        if type(optimizer).__module__.startswith("keras"):
            message += _KERAS3_OPTIMIZER_ADVICE
        raise ValueError(message)


def validate_trainable_variables(trainable_variables: Any = None) -> None:
    if trainable_variables is None:
        raise ValueError(f"trainable_variables cannot be None. Given {trainable_variables}")
    if not isinstance(trainable_variables, list | tuple):
        raise ValueError(
            _VALIDATION_ERROR_MSG.format("trainable_variables", type(trainable_variables))
        )
