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
# tf.compat.v1 without tensorflow_estimator; no TPU paths; the PREDICT / EVAL / TRAIN flow
# the three heads repeated upstream is written once here.
"""``_Head``, the v1 heads' base: ``create_estimator_spec`` for every mode, in one place.

A v1 head (``tf.compat.v1.estimator``'s canned estimators) supplies its predictions, its
export outputs, its unreduced loss and its ``tf.compat.v1.metrics``; the base builds the
``EstimatorSpec``, with the train op, the ``SUM``-reduced loss's mean and the loss summaries
of tensorflow-estimator 2.15's ``canned/head.py``.
"""

from __future__ import annotations

import abc
import collections
from typing import Any

import tensorflow as tf

from ..._spec import EstimatorSpec, ModeKeys
from ...head._keys import MetricKeys
from ...head._single import SingleHeadCore
from . import _checks as _v1_checks

__all__ = ["NONE", "SUM", "LossSpec", "_Head", "summary_key"]

SUM = tf.compat.v1.losses.Reduction.SUM
NONE = tf.compat.v1.losses.Reduction.NONE

LossSpec = collections.namedtuple(
    "LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"]
)


def summary_key(head_name: str | None, val: str) -> str:
    return f"{val}/{head_name}" if head_name else val


def _append_update_ops(train_op: Any) -> Any:
    update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    if update_ops:
        return tf.group(train_op, *update_ops)
    return train_op


class _Head(abc.ABC):
    """A model's top: loss, predictions, metrics and export outputs from its logits.

    Subclasses define ``name``, ``logits_dimension``, ``create_loss`` and
    ``_create_tpu_estimator_spec`` (which, as in TF 2.15, returns the spec itself here:
    TPUs are not supported, so there is nothing to convert). The three canned heads
    derive from :class:`_SingleHead`, which defines the last two.
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


class _SingleHead(SingleHeadCore, _Head):
    """What the three canned v1 heads share; each adds its predictions, loss and metrics.

    The arguments kept, and the per-example loss and weights, are the V2 heads'
    (:class:`SingleHeadCore`), with the v1 texts of the checks' errors.
    """

    #: the labels' last dimension (the regression head: its label dimension).
    _labels_dimension = 1
    _check_texts = _v1_checks.V1_TEXTS

    @property
    def _expected_loss_dim(self) -> int:
        # A loss_fn's loss has the labels' last dimension, as TF 2.15's v1 heads check.
        return self._labels_dimension

    # -- what each head supplies -------------------------------------------------------------

    @abc.abstractmethod
    def _predictions(self, logits: Any) -> tuple[Any, dict]:
        """The checked logits and the predictions dict, built in the head's name scope."""

    @abc.abstractmethod
    def _export_outputs(self, predictions: dict) -> dict:
        """The serving signatures of PREDICT."""

    @abc.abstractmethod
    def _processed_labels(self, labels: Any) -> Any:
        """Checked dense labels as the loss takes them (ids, floats)."""

    @abc.abstractmethod
    def _default_loss(self, labels: Any, logits: Any) -> Any:
        """The built-in loss when no ``loss_fn`` is given."""

    @abc.abstractmethod
    def _eval_metric_ops(
        self, labels: Any, predictions: dict, loss: LossSpec, regularization_loss: Any
    ) -> dict:
        """The eval metrics; ``labels`` as given to the head."""

    # -- the shared flow ---------------------------------------------------------------------

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> LossSpec:
        del mode
        logits = tf.convert_to_tensor(logits)
        labels = _v1_checks.check_dense_labels_match_logits_and_reshape(
            labels=labels, logits=logits, expected_labels_dimension=self._labels_dimension
        )
        labels = self._processed_labels(labels)
        unweighted_loss, weights = self._unweighted_loss_and_weights(logits, labels, features)
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
            logits, predictions = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT,
                    predictions=predictions,
                    export_outputs=self._export_outputs(predictions),
                )
            loss = self.create_loss(features=features, mode=mode, logits=logits, labels=labels)
            reg_loss, regularized = self._regularized(loss.training_loss, regularization_losses)
            if mode == ModeKeys.EVAL:
                return EstimatorSpec(
                    mode=ModeKeys.EVAL,
                    predictions=predictions,
                    loss=regularized,
                    eval_metric_ops=self._eval_metric_ops(labels, predictions, loss, reg_loss),
                )
            train_op, mean_loss = self._train_op(loss, regularized, optimizer, train_op_fn)
        self._train_summaries(regularized, mean_loss, reg_loss)
        return EstimatorSpec(
            mode=ModeKeys.TRAIN, predictions=predictions, loss=regularized, train_op=train_op
        )

    def _regularized(self, training_loss: Any, regularization_losses: Any) -> tuple:
        if regularization_losses:
            regularization_loss = tf.math.add_n(regularization_losses)
            return regularization_loss, tf.math.add_n([training_loss, regularization_loss])
        return None, training_loss

    def _train_op(
        self, loss: LossSpec, regularized_loss: Any, optimizer: Any, train_op_fn: Any
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
        if self._loss_reduction == SUM:
            example_weight_sum = tf.math.reduce_sum(
                loss.weights * tf.compat.v1.ones_like(loss.unreduced_loss)
            )
            mean_loss = loss.training_loss / example_weight_sum
        return train_op, mean_loss

    def _train_summaries(self, regularized_loss: Any, mean_loss: Any, reg_loss: Any) -> None:
        with tf.compat.v1.name_scope(""):
            tf.compat.v1.summary.scalar(summary_key(self._name, MetricKeys.LOSS), regularized_loss)
            if mean_loss is not None:
                tf.compat.v1.summary.scalar(
                    summary_key(self._name, MetricKeys.LOSS_MEAN), mean_loss
                )
            if reg_loss is not None:
                tf.compat.v1.summary.scalar(
                    summary_key(self._name, MetricKeys.LOSS_REGULARIZATION), reg_loss
                )
