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
# tf.compat.v1 without tensorflow_estimator; what the single heads (binary, multi-class,
# multi-label, regression) repeat upstream written once: the loss, the spec, the loss_fn
# and weights plumbing, the vocabulary tables and the class predictions.
"""``SingleHead`` and ``ClassHead``: what the heads over one set of logits share.

``SingleHead`` builds the loss and the ``EstimatorSpec`` of every mode from the
subclass's labels processing, default loss and export outputs; ``ClassHead`` adds the
label vocabulary's lookup tables and the class predictions of the classifiers.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .._spec import ModeKeys
from . import _checks, _outputs
from ._base import (
    Head,
    SpecParts,
    add_regularization,
    create_estimator_spec_summary,
    create_estimator_spec_train_op,
    eval_metrics_tuple,
    weighted_loss,
)
from ._keys import PredictionKeys

__all__ = ["ClassHead", "SingleHead"]


class SingleHead(Head):
    """A head over one set of logits: the spec every such head builds the same way.

    Subclasses process the labels (``_processed_labels``), give the loss without a
    ``loss_fn`` (``_default_loss``) and the PREDICT mode's serving outputs
    (``_export_outputs``).
    """

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def loss_reduction(self) -> str:
        return self._loss_reduction

    @abc.abstractmethod
    def _processed_labels(self, logits: Any, labels: Any) -> Any:
        """The labels checked against ``logits`` and in the form the loss takes."""

    @abc.abstractmethod
    def _default_loss(self, labels: Any, logits: Any) -> Any:
        """The unreduced loss without a ``loss_fn``, for processed ``labels``."""

    #: the last dimension a ``loss_fn``'s loss must have.
    _expected_loss_dim = 1
    #: whether the weights may be given per logit (``[D0, ... DN, logits_dimension]``).
    _per_logit_weights = False

    def _unweighted_loss_and_weights(self, logits: Any, labels: Any, features: Any) -> tuple:
        """``(per-example loss, weights)`` for processed ``labels``."""
        if self._loss_fn:
            loss = _checks.call_loss_fn(
                loss_fn=self._loss_fn,
                labels=labels,
                logits=logits,
                features=features,
                expected_loss_dim=self._expected_loss_dim,
            )
        else:
            loss = self._default_loss(labels, logits)
        weights = _checks.get_weights_and_check_match_logits(
            features=features,
            weight_column=self._weight_column,
            logits=logits,
            allow_per_logit_weights=self._per_logit_weights,
        )
        return loss, weights

    @abc.abstractmethod
    def _export_outputs(self, predictions: dict) -> dict:
        """The serving outputs (keyed by signature name) for ``predictions``."""

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


class ClassHead(SingleHead):
    """A single head over classes, which ``_label_vocabulary`` may name."""

    _id_table = None
    _string_table = None

    def _class_id_table(self) -> Any:
        # A graph gets its own table each time; eagerly one table is reused.
        if self._id_table is None or not tf.executing_eagerly():
            self._id_table = _outputs.class_id_table(self._label_vocabulary)
        return self._id_table

    def _class_string_table(self) -> Any:
        if self._string_table is None or not tf.executing_eagerly():
            self._string_table = _outputs.class_string_table(self._label_vocabulary)
        return self._string_table

    def _add_class_predictions(
        self, predictions: dict, keys: Any, class_logits: Any, logits: Any, n_classes: int
    ) -> None:
        """Adds the ``keys`` among ``class_ids`` / ``classes`` (the argmax of
        ``class_logits``) and ``all_class_ids`` / ``all_classes`` to ``predictions``."""
        k = PredictionKeys
        if k.CLASS_IDS in keys or k.CLASSES in keys:
            class_ids = tf.compat.v1.math.argmax(class_logits, axis=-1, name=k.CLASS_IDS)
            class_ids = tf.compat.v1.expand_dims(class_ids, axis=-1)
            if k.CLASS_IDS in keys:
                predictions[k.CLASS_IDS] = class_ids
            if k.CLASSES in keys:
                if self._label_vocabulary is not None:
                    classes = self._class_string_table().lookup(class_ids)
                else:
                    classes = tf.strings.as_string(class_ids, name="str_classes")
                predictions[k.CLASSES] = classes
        if k.ALL_CLASS_IDS in keys:
            predictions[k.ALL_CLASS_IDS] = _outputs.all_class_ids(logits, n_classes=n_classes)
        if k.ALL_CLASSES in keys:
            predictions[k.ALL_CLASSES] = _outputs.all_classes(
                logits, n_classes=n_classes, label_vocabulary=self._label_vocabulary
            )
