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
# Modified from `tensorflow_estimator/python/estimator/head/multi_head.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator.
"""``MultiHead``: several named heads over one logits tensor (multi-objective learning)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .._export_output import PredictOutput
from .._keras2 import keras2
from .._spec import EstimatorSpec, ModeKeys
from . import _base, _metrics, _outputs
from ._keys import MetricKeys

__all__ = ["MultiHead"]


def _no_op_train_fn(loss: Any) -> Any:
    del loss
    return tf.no_op()


def _default_export_output(export_outputs: dict, head_name: str) -> Any:
    if len(export_outputs) == 1:
        return next(iter(export_outputs.values()))
    try:
        return export_outputs[_outputs.DEFAULT_SERVING_KEY]
    except KeyError:
        raise ValueError(
            f"{head_name} did not specify default export_outputs. Given: {export_outputs} "
            "Suggested fix: Use one of the heads in tf.estimator, or include key "
            f"{_outputs.DEFAULT_SERVING_KEY} in export_outputs."
        ) from None


class MultiHead(_base.Head):
    """Heads combined: their losses summed (optionally weighted), everything else merged.

    ``tf.estimator.MultiHead``. Every head needs a ``name``. Logits are one tensor
    (split along its last dimension in the heads' order) or a dict keyed by head name;
    labels are a dict keyed by head name. Predictions are keyed ``(head_name, key)``;
    eval metrics are every head's (with its name suffix), ``loss/<head_name>`` and
    ``regularization_loss``. Export outputs: ``serving_default`` is the first head's
    default; every head's outputs under ``<head_name>`` (its default) or
    ``<head_name>/<key>``, and ``predict`` with all heads' predictions as
    ``<head_name>/<key>``.

    Args:
        heads: the heads (each with a name).
        head_weights: one float per head multiplying its loss.

    Example:
        >>> head = MultiHead([MultiLabelHead(3, name="tags"),  # doctest: +SKIP
        ...                   RegressionHead(name="score")], head_weights=[1.0, 0.5])
    """

    def __init__(self, heads: Any, head_weights: Any = None) -> None:
        if not heads:
            raise ValueError(f"Must specify heads. Given: {heads}")
        if head_weights and len(head_weights) != len(heads):
            raise ValueError(
                "heads and head_weights must have the same size. "
                f"Given len(heads): {len(heads)}. Given len(head_weights): {len(head_weights)}."
            )
        self._logits_dimension = 0
        for head in heads:
            if head.name is None:
                raise ValueError(f"All given heads must have name specified. Given: {head}")
            self._logits_dimension += head.logits_dimension
        self._heads = tuple(heads)
        self._head_weights = tuple(head_weights) if head_weights else ()
        self._loss_regularization_key = self._summary_key(MetricKeys.LOSS_REGULARIZATION)
        self._loss_keys = tuple(f"{MetricKeys.LOSS}/{head.name}" for head in self._heads)

    @property
    def name(self) -> str:
        return "_".join(h.name for h in self._heads)

    @property
    def logits_dimension(self) -> int:
        return self._logits_dimension

    @property
    def loss_reduction(self) -> str:
        """The heads' common loss reduction.

        Raises:
            ValueError: the heads reduce their losses differently.
        """
        reductions = [head.loss_reduction for head in self._heads]
        if len(set(reductions)) > 1:
            raise ValueError(
                f"The loss_reduction must be the same for different heads. Given: {reductions}"
            )
        return reductions[0]

    def _split_logits(self, logits: Any) -> dict:
        with tf.compat.v1.name_scope("split_logits", values=[logits]):
            logits = tf.convert_to_tensor(logits)
            dims = [head.logits_dimension for head in self._heads]
            shape = logits.shape.as_list()
            last = shape[-1]
            if last is not None and last != sum(dims):
                raise ValueError(
                    f"Could not split logits of shape {shape!r} among the heads with "
                    f"individual logits dimensions: {dims!r}. The last dimension of the "
                    f"logits tensor should equal {last} but is {sum(dims)}."
                )
            if tf.executing_eagerly():
                batch_shape = tuple(logits.shape.as_list()[:-1])
            else:
                batch_shape = tf.compat.v1.shape(logits)[:-1]
            zeros = tf.compat.v1.zeros_like(batch_shape)
            minus_ones = -1 * tf.compat.v1.ones_like(batch_shape)
            out, begin = {}, 0
            for head in self._heads:
                out[head.name] = tf.slice(
                    logits,
                    begin=tf.concat([zeros, [begin]], axis=0),
                    size=tf.concat([minus_ones, [head.logits_dimension]], axis=0),
                )
                begin += head.logits_dimension
            return out

    def _check_logits_and_labels(self, logits: Any, labels: Any = None) -> dict:
        names = [head.name for head in self._heads]
        if isinstance(logits, dict):
            missing = list(set(names) - set(logits))
            if missing:
                raise ValueError(f"logits has missing values for head(s): {missing}")
            logits_dict = logits
        else:
            logits_dict = self._split_logits(logits)
        if labels is not None:
            if not isinstance(labels, dict):
                raise ValueError(f"labels must be a dict. Given: {labels}")
            missing = list(set(names) - set(labels))
            if missing:
                raise ValueError(f"labels has missing values for head(s): {missing}")
        return logits_dict

    def loss(
        self,
        labels: Any,
        logits: Any,
        features: Any = None,
        mode: Any = None,
        regularization_losses: Any = None,
    ) -> Any:
        """The (weighted) sum of the heads' losses plus the regularization losses."""
        logits_dict = self._check_logits_and_labels(logits, labels)
        losses = tuple(
            head.loss(
                logits=logits_dict[head.name],
                labels=labels[head.name],
                features=features,
                mode=mode,
            )
            for head in self._heads
        )
        with tf.compat.v1.name_scope("merge_losses", values=losses + self._head_weights):
            if self._head_weights:
                losses = [
                    tf.math.multiply(v, w) for v, w in zip(losses, self._head_weights, strict=True)
                ]
            merged = tf.math.add_n(losses)
            return _base.add_regularization(merged, regularization_losses)

    def predictions(self, logits: Any, keys: Any = None) -> dict:
        """Every head's predictions, keyed ``(head_name, prediction_key)``."""
        logits_dict = self._check_logits_and_labels(logits)
        predictions = {}
        with tf.compat.v1.name_scope("merge_pred"):
            for head in self._heads:
                for k, v in head.predictions(logits=logits_dict[head.name]).items():
                    predictions[(head.name, k)] = v
        return predictions

    def metrics(self, regularization_losses: Any = None) -> dict:
        """``loss/<head_name>`` means (+ ``regularization_loss``); heads add theirs on update."""
        m = keras2().metrics
        metrics = {}
        if regularization_losses is not None:
            metrics[self._loss_regularization_key] = m.Mean(name=MetricKeys.LOSS_REGULARIZATION)
        with tf.compat.v1.name_scope("merge_eval"):
            for key in self._loss_keys:
                metrics[key] = m.Mean(name=key)
        return metrics

    def update_metrics(
        self,
        eval_metrics: dict,
        features: Any,
        logits: Any,
        labels: Any,
        regularization_losses: Any = None,
    ) -> dict:
        """Updates the loss metrics and adds every head's updated metrics."""
        logits_dict = self._check_logits_and_labels(logits, labels)
        _metrics.update_regularization_metric(
            eval_metrics, self._loss_regularization_key, regularization_losses
        )
        for i, head in enumerate(self._heads):
            head_logits, head_labels = logits_dict[head.name], labels[head.name]
            loss = head.loss(logits=head_logits, labels=head_labels, features=features)
            eval_metrics[self._loss_keys[i]].update_state(values=loss)
            updated = head.update_metrics(head.metrics(), features, head_logits, head_labels)
            eval_metrics.update(updated or {})
        return eval_metrics

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
        """An ``EstimatorSpec`` for all heads; see :meth:`Head.create_estimator_spec`."""
        with tf.compat.v1.name_scope(self.name, "multi_head"):
            logits_dict = self._check_logits_and_labels(logits, labels)
            # Each head's own spec gives its export outputs (and, as in TF 2.15, its
            # summaries); its train op is a no-op.
            specs = [
                head.create_estimator_spec(
                    features=features,
                    mode=mode,
                    logits=logits_dict[head.name],
                    labels=labels[head.name] if labels else None,
                    train_op_fn=_no_op_train_fn,
                )
                for head in self._heads
            ]
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT,
                    predictions=predictions,
                    export_outputs=self._merge_predict_export_outputs(specs),
                )
            loss = self.loss(labels, logits, features, mode, regularization_losses)
            if mode == ModeKeys.EVAL:
                metrics = self.update_metrics(
                    self.metrics(regularization_losses=regularization_losses),
                    features,
                    logits,
                    labels,
                    regularization_losses=regularization_losses,
                )
                return EstimatorSpec(
                    mode=ModeKeys.EVAL, predictions=predictions, loss=loss, eval_metric_ops=metrics
                )
            if mode == ModeKeys.TRAIN:
                train_op = _base.create_estimator_spec_train_op(
                    head_name=self.name,
                    optimizer=optimizer,
                    train_op_fn=train_op_fn,
                    update_ops=update_ops,
                    trainable_variables=trainable_variables,
                    regularized_training_loss=loss,
                    loss_reduction=self.loss_reduction,
                )
                _base.create_estimator_spec_summary(loss, regularization_losses)
                eval_metric_ops = {}
                for spec in specs:
                    eval_metric_ops.update(spec.eval_metric_ops or {})
                return EstimatorSpec(
                    mode=ModeKeys.TRAIN,
                    loss=loss,
                    train_op=train_op,
                    predictions=predictions,
                    eval_metric_ops=eval_metric_ops,
                )
            raise ValueError(f"mode={mode} unrecognized")

    def _merge_predict_export_outputs(self, specs: list) -> dict:
        outputs = {
            _outputs.DEFAULT_SERVING_KEY: _default_export_output(
                specs[0].export_outputs, self._heads[0].name
            )
        }
        merged_predictions = {}
        for head, spec in zip(self._heads, specs, strict=True):
            for key, value in spec.export_outputs.items():
                name = head.name if key == _outputs.DEFAULT_SERVING_KEY else f"{head.name}/{key}"
                outputs[name] = value
                if key == _outputs.PREDICT_SERVING_KEY and isinstance(value, PredictOutput):
                    for k, v in value.outputs.items():
                        merged_predictions[f"{head.name}/{k}"] = v
        outputs[_outputs.PREDICT_SERVING_KEY] = PredictOutput(merged_predictions)
        return outputs
