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
# Modified from `tensorflow_estimator/python/estimator/head/base_head.py` and
# `tensorflow_estimator/python/estimator/canned/head.py` (v2.15.0) for tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; what the V2 single heads and the v1 heads of
# canned/head.py both keep and compute, written once for the two.
"""``SingleHeadCore``: what every single head keeps and computes, V2 or v1.

The V2 heads (:class:`._base.SingleHead`) and the v1 heads of ``tf.compat.v1.estimator``
(``v1/_head``'s ``_SingleHead``) keep the same four arguments and get a batch's
per-example loss and weights the same way: the ``loss_fn`` given (checked to be
``[D0, ... DN, dim]``) or the head's own, and the weights of ``weight_column`` checked to
match the logits. Only the texts of the checks' errors differ (``_check_texts``).
"""

from __future__ import annotations

from typing import Any

from . import _checks

__all__ = ["SingleHeadCore"]


class SingleHeadCore:
    """The arguments, per-example loss and weights of a head over one set of logits.

    Subclasses give ``_default_loss(labels, logits)``, the unreduced loss without a
    ``loss_fn``.
    """

    #: the last dimension a ``loss_fn``'s loss must have.
    _expected_loss_dim = 1
    #: whether the weights may be given per logit (``[D0, ... DN, logits_dimension]``).
    _per_logit_weights = False
    #: the texts of the loss and weight checks' errors (the v1 heads have their own).
    _check_texts = _checks.V2_TEXTS

    def __init__(self, weight_column: Any, loss_reduction: str, loss_fn: Any, name: Any) -> None:
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name

    @property
    def name(self) -> str | None:
        return self._name

    def _unweighted_loss_and_weights(self, logits: Any, labels: Any, features: Any) -> tuple:
        """``(per-example loss, weights)`` for processed ``labels``."""
        if self._loss_fn:
            loss = _checks.call_loss_fn(
                loss_fn=self._loss_fn,
                labels=labels,
                logits=logits,
                features=features,
                expected_loss_dim=self._expected_loss_dim,
                texts=self._check_texts,
            )
        else:
            loss = self._default_loss(labels, logits)
        weights = _checks.get_weights_and_check_match_logits(
            features=features,
            weight_column=self._weight_column,
            logits=logits,
            allow_per_logit_weights=self._per_logit_weights,
            texts=self._check_texts,
        )
        return loss, weights
