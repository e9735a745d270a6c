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
# tf.compat.v1 without tensorflow_estimator; the shape/dtype checks live in _checks, no TPU paths.
"""``Head``: the interface of tf.estimator's heads, and what all single heads share.

A head turns a model's logits into predictions, a loss, eval metrics, a train op and
export outputs, and packs them into an ``EstimatorSpec`` with
``create_estimator_spec``. Name scopes, summaries and serving signatures are those of
tensorflow-estimator 2.15 (``head/base_head.py``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .._keras2 import keras2
from .._spec import EstimatorSpec, ModeKeys
from . import _checks, _train_checks
from ._keys import MetricKeys
from ._single import SingleHeadCore

__all__ = ["Head", "SingleHead", "replica_scaled_loss"]


class Head(abc.ABC):
    """Interface for the head (top) of a model: loss, predictions, metrics, train op.

    Subclasses implement the abstract members and either ``create_estimator_spec`` or
    ``_create_tpu_estimator_spec`` (returning a ``SpecParts``), as in tf.estimator.

    Example:
        >>> def model_fn(features, labels, mode):  # doctest: +SKIP
        ...     head = tf1compat_init.estimator.BinaryClassHead()
        ...     logits = my_network(features["x"], units=head.logits_dimension)
        ...     opt = tf_keras.optimizers.legacy.Adagrad(0.05)  # tf.keras on TF 2.15
        ...     opt.iterations = tf.compat.v1.train.get_or_create_global_step()
        ...     return head.create_estimator_spec(
        ...         features=features, mode=mode, logits=logits, labels=labels,
        ...         optimizer=opt,
        ...         trainable_variables=tf.compat.v1.trainable_variables())
    """

    @property
    @abc.abstractmethod
    def name(self) -> str | None:
        """The head's name, a suffix of its metric and summary keys (``None`` for none)."""

    @property
    @abc.abstractmethod
    def logits_dimension(self) -> int:
        """Size of the last dimension of the logits the head takes."""

    @property
    @abc.abstractmethod
    def loss_reduction(self) -> str:
        """One of ``tf.losses.Reduction``: how the training loss is reduced over a batch."""

    @abc.abstractmethod
    def loss(
        self,
        labels: Any,
        logits: Any,
        features: Any = None,
        mode: Any = None,
        regularization_losses: Any = None,
    ) -> Any:
        """The scalar training loss (regularization losses added)."""

    @abc.abstractmethod
    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """A dict of prediction tensors (all of them, or those named in ``keys``)."""

    @abc.abstractmethod
    def metrics(self, regularization_losses: Any = None) -> dict:
        """A dict of new (Keras 2) metric objects keyed by metric name."""

    @abc.abstractmethod
    def update_metrics(
        self,
        eval_metrics: dict,
        features: Any,
        logits: Any,
        labels: Any,
        mode: Any = None,
        regularization_losses: Any = None,
    ) -> dict:
        """Updates ``eval_metrics`` with a batch and returns them."""

    def _summary_key(self, key: str) -> str:
        return f"{key}/{self.name}" if self.name else key

    def create_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        trainable_variables: Any = None,
        train_op_fn: Callable | None = None,
        update_ops: Any = None,
        regularization_losses: Any = None,
    ) -> EstimatorSpec:
        """An ``EstimatorSpec`` for ``mode`` that a ``model_fn`` can return.

        Args:
            features: the features dict (the weight column is read from it).
            mode: a ``ModeKeys`` value.
            logits: ``[D0, ... DN, logits_dimension]`` logits.
            labels: the labels (not needed in PREDICT mode).
            optimizer: a Keras 2 optimizer: ``train_op = optimizer.get_updates(loss,
                trainable_variables)[0]``. Exactly one of it and ``train_op_fn`` in TRAIN.
            trainable_variables: the variables ``optimizer`` updates (a list or tuple).
            train_op_fn: ``loss -> train_op``, used when ``optimizer`` is None.
            update_ops: ops grouped with the train op (a list or tuple).
            regularization_losses: scalar losses added to the training loss.

        Returns:
            A ``tf1compat_init.estimator.EstimatorSpec``.
        """
        try:
            parts = self._create_tpu_estimator_spec(
                features=features,
                mode=mode,
                logits=logits,
                labels=labels,
                optimizer=optimizer,
                trainable_variables=trainable_variables,
                train_op_fn=train_op_fn,
                update_ops=update_ops,
                regularization_losses=regularization_losses,
            )
            return parts.as_estimator_spec()
        except NotImplementedError:
            raise NotImplementedError(
                "Subclasses of Head must implement `create_estimator_spec()` or "
                "_create_tpu_estimator_spec()."
            ) from None

    def _create_tpu_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        trainable_variables: Any = None,
        train_op_fn: Callable | None = None,
        update_ops: Any = None,
        regularization_losses: Any = None,
    ) -> SpecParts:
        raise NotImplementedError("TPUEstimatorSpec not available for this model head.")


class SpecParts:
    """What a head builds for one mode; eval metrics stay a ``(fn, kwargs)`` pair.

    The metrics are made by ``as_estimator_spec``, outside the head's name scope, which
    is where tensorflow-estimator 2.15 made them (its ``_TPUEstimatorSpec``).
    """

    def __init__(
        self,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metrics: tuple | None = None,
        export_outputs: dict | None = None,
    ) -> None:
        self.mode = mode
        self.predictions = predictions
        self.loss = loss
        self.train_op = train_op
        self.eval_metrics = eval_metrics
        self.export_outputs = export_outputs

    def as_estimator_spec(self) -> EstimatorSpec:
        eval_metric_ops = None
        if self.eval_metrics:
            fn, kwargs = self.eval_metrics
            eval_metric_ops = fn(**kwargs)
        return EstimatorSpec(
            mode=self.mode,
            predictions=self.predictions,
            loss=self.loss,
            train_op=self.train_op,
            eval_metric_ops=eval_metric_ops,
            export_outputs=self.export_outputs,
        )


def weighted_loss(unweighted_loss: Any, weights: Any, reduction: str) -> Any:
    """Keras 2's weighted and reduced loss, as tensorflow-estimator 2.15 computed it."""
    return keras2().__internal__.losses.compute_weighted_loss(
        unweighted_loss, sample_weight=weights, reduction=reduction
    )


def add_regularization(training_loss: Any, regularization_losses: Any) -> Any:
    if regularization_losses is None:
        return training_loss
    return training_loss + tf.math.add_n(regularization_losses)


def eval_metrics_tuple(fn: Callable, kwargs: dict) -> tuple:
    """``(fn taking only tensors, the tensor kwargs)``, the other kwargs bound in."""
    tensors = {k: v for k, v in kwargs.items() if tf.is_tensor(v)}
    others = {k: v for k, v in kwargs.items() if not tf.is_tensor(v)}

    def call(**given: Any) -> Any:
        return fn(**others, **given)

    return call, tensors


def replica_scaled_loss(loss: Any, loss_reduction: str) -> Any:
    """``loss`` over the replicas in sync when it is a ``SUM_OVER_BATCH_SIZE`` mean.

    The replicas' gradients are summed, so each replica's mean loss counts ``1/n``.
    """
    if loss_reduction == _checks.SUM_OVER_BATCH_SIZE:
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        if replicas > 1:
            loss *= 1.0 / replicas
    return loss


def create_estimator_spec_train_op(
    head_name: str | None,
    optimizer: Any = None,
    trainable_variables: Any = None,
    train_op_fn: Callable | None = None,
    update_ops: Any = None,
    regularized_training_loss: Any = None,
    loss_reduction: str = _checks.SUM_OVER_BATCH_SIZE,
) -> Any:
    """The train op, built under the top-level name scope ``training``.

    So a Keras 2 optimizer's slots are named ``training/<Optimizer>/<var>/<slot>``.

    Raises:
        ValueError: both or neither of ``optimizer`` and ``train_op_fn``, a non-Keras-2
            optimizer, or ``trainable_variables`` / ``update_ops`` not a list or tuple.
    """
    del head_name
    _train_checks.validate_update_ops(update_ops)
    with tf.compat.v1.name_scope(""), tf.compat.v1.name_scope("training"):
        if optimizer is not None:
            if train_op_fn is not None:
                raise ValueError("train_op_fn and optimizer cannot both be set.")
            _train_checks.validate_v2_optimizer(optimizer)
            _train_checks.validate_trainable_variables(trainable_variables)
            regularized_training_loss = replica_scaled_loss(
                regularized_training_loss, loss_reduction
            )
            train_op = optimizer.get_updates(regularized_training_loss, trainable_variables)[0]
        elif train_op_fn is not None:
            train_op = train_op_fn(regularized_training_loss)
        else:
            raise ValueError("train_op_fn and optimizer cannot both be None.")
        if update_ops is not None:
            train_op = tf.group(train_op, *update_ops)
        return train_op


def create_estimator_spec_summary(
    regularized_training_loss: Any,
    regularization_losses: Any = None,
    summary_key_fn: Callable | None = None,
) -> None:
    """Scalar summaries ``loss`` and ``regularization_loss`` (suffixed by the head name)."""
    with tf.compat.v1.name_scope(""):
        key = summary_key_fn or (lambda k: k)
        tf.compat.v1.summary.scalar(key(MetricKeys.LOSS), regularized_training_loss)
        if regularization_losses is not None:
            tf.compat.v1.summary.scalar(
                key(MetricKeys.LOSS_REGULARIZATION), tf.math.add_n(regularization_losses)
            )


class SingleHead(SingleHeadCore, Head):
    """A head over one set of logits: the spec every such head builds the same way.

    Subclasses process the labels (``_processed_labels``), give the loss without a
    ``loss_fn`` (``_default_loss``) and the PREDICT mode's serving outputs
    (``_export_outputs``). The arguments kept, and the per-example loss and weights,
    are :class:`SingleHeadCore`'s (the v1 heads share them).
    """

    @property
    def loss_reduction(self) -> str:
        return self._loss_reduction

    @abc.abstractmethod
    def _processed_labels(self, logits: Any, labels: Any) -> Any:
        """The labels checked against ``logits`` and in the form the loss takes."""

    @abc.abstractmethod
    def _default_loss(self, labels: Any, logits: Any) -> Any:
        """The unreduced loss without a ``loss_fn``, for processed ``labels``."""

    @abc.abstractmethod
    def _export_outputs(self, predictions: dict) -> dict:
        """The serving outputs (keyed by signature name) for ``predictions``."""

    def _update_loss_mean(
        self, eval_metrics: dict, features: Any, logits: Any, labels: Any
    ) -> tuple:
        """Adds the batch's loss to the mean loss metric (``_loss_mean_key``).

        Returns:
            ``(checked logits, processed labels, weights)`` for the other metrics.
        """
        logits = _checks.check_logits_final_dim(logits, self.logits_dimension)
        processed = self._processed_labels(logits, labels)
        unweighted, weights = self._unweighted_loss_and_weights(logits, processed, features)
        eval_metrics[self._loss_mean_key].update_state(values=unweighted, sample_weight=weights)
        return logits, processed, weights

    def loss(
        self,
        labels: Any,
        logits: Any,
        features: Any = None,
        mode: Any = None,
        regularization_losses: Any = None,
    ) -> Any:
        """The head's weighted, reduced loss plus the regularization losses."""
        del mode
        with tf.compat.v1.name_scope(
            "losses", values=(logits, labels, regularization_losses, features)
        ):
            logits = _checks.check_logits_final_dim(logits, self.logits_dimension)
            labels = self._processed_labels(logits, labels)
            unweighted, weights = self._unweighted_loss_and_weights(logits, labels, features)
            training_loss = weighted_loss(unweighted, weights, self._loss_reduction)
            return add_regularization(training_loss, regularization_losses)

    def _create_tpu_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        trainable_variables: Any = None,
        train_op_fn: Callable | None = None,
        update_ops: Any = None,
        regularization_losses: Any = None,
    ) -> SpecParts:
        with tf.compat.v1.name_scope(self.name, "head"):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return SpecParts(
                    ModeKeys.PREDICT,
                    predictions=predictions,
                    export_outputs=self._export_outputs(predictions),
                )
            loss = self.loss(
                logits=logits,
                labels=labels,
                features=features,
                mode=mode,
                regularization_losses=regularization_losses,
            )
            if mode == ModeKeys.EVAL:
                kwargs = {
                    "eval_metrics": self.metrics(regularization_losses=regularization_losses),
                    "features": features,
                    "logits": logits,
                    "labels": labels,
                    "regularization_losses": regularization_losses,
                }
                return SpecParts(
                    ModeKeys.EVAL,
                    predictions=predictions,
                    loss=loss,
                    eval_metrics=eval_metrics_tuple(self.update_metrics, kwargs),
                )
            train_op = create_estimator_spec_train_op(
                head_name=self.name,
                optimizer=optimizer,
                train_op_fn=train_op_fn,
                update_ops=update_ops,
                trainable_variables=trainable_variables,
                regularized_training_loss=loss,
                loss_reduction=self.loss_reduction,
            )
        create_estimator_spec_summary(
            regularized_training_loss=loss,
            regularization_losses=regularization_losses,
            summary_key_fn=self._summary_key,
        )
        return SpecParts(ModeKeys.TRAIN, predictions=predictions, loss=loss, train_op=train_op)
