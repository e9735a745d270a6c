# Copyright 2016 The TensorFlow Authors. All Rights Reserved.
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
# Modified from `tensorflow_estimator/python/estimator/model_fn.py` (v2.15.0) for tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; no TPUEstimatorSpec.
"""``ModeKeys`` and ``EstimatorSpec``: what a ``model_fn`` returns, checked as tf.estimator does.

The checks and their messages follow ``tensorflow_estimator/python/estimator/model_fn.py``
word for word, so code that matches tf.estimator's errors keeps matching.
"""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

from ._export_output import get_export_outputs

__all__ = ["LOSS_METRIC_KEY", "EstimatorSpec", "ModeKeys", "is_metric_object"]

LOSS_METRIC_KEY = "loss"

_GRAPH_ERROR = (
    '{0} with "{1}" must be from the default graph. '
    "Possible causes of this error include: \n\n"
    "1) {0} was created outside the context of the default graph."
    "\n\n"
    "2) The object passed through to EstimatorSpec was not created "
    'in the most recent call to "model_fn".'
)


class ModeKeys:
    """The three modes a ``model_fn`` is called in (the values tf.estimator uses)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


def _tensor_type() -> Any:
    internal = getattr(getattr(tf, "__internal__", None), "types", None)
    return getattr(internal, "Tensor", tf.Tensor)


def _check_is_tensor(x: Any, name: str) -> Any:
    if not isinstance(x, _tensor_type()):
        raise TypeError(f"{name} must be Tensor, given: {x}")
    return x


def _in_default_graph(x: Any) -> bool:
    return tf.executing_eagerly() or x.graph is tf.compat.v1.get_default_graph()


def is_metric_object(value: Any) -> bool:
    """A Keras-style metric object (tf_keras, or tf.keras on TF 2.15) rather than a pair."""
    return not isinstance(value, tuple) and all(
        hasattr(value, a) for a in ("update_state", "result", "variables")
    )


def _validate_train_op(train_op: Any, mode: str) -> Any:
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if not isinstance(train_op, tf.Operation | _tensor_type()):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    if isinstance(train_op, tf.Variable):
        train_op = train_op.op
    if not _in_default_graph(train_op):
        raise ValueError(_GRAPH_ERROR.format("train_op", train_op.name))
    return train_op


def _validate_loss(loss: Any, mode: str) -> Any:
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _check_is_tensor(loss, "loss")
    shape = loss.get_shape()
    if shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    if not shape.is_compatible_with(tf.TensorShape([])):
        loss = tf.reshape(loss, [])
    if not _in_default_graph(loss):
        raise ValueError(_GRAPH_ERROR.format("loss", loss.name))
    return loss


def _validate_predictions(predictions: Any, mode: str) -> Any:
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        predictions = {k: _check_is_tensor(v, f"predictions[{k}]") for k, v in predictions.items()}
        for key, value in predictions.items():
            if not _in_default_graph(value):
                raise ValueError(_GRAPH_ERROR.format("prediction values", f"{key}: {value.name}"))
        return predictions
    predictions = _check_is_tensor(predictions, "predictions")
    if not _in_default_graph(predictions):
        raise ValueError(_GRAPH_ERROR.format("prediction values", predictions.name))
    return predictions


def checked_items(items: Any, cls: type, message: str, container: type = tuple) -> Any:
    """``items`` (``None``: none) as a ``container``, every one an instance of ``cls``.

    Raises:
        TypeError: ``message.format(item)`` for the first item that is not.
    """
    items = container(items or [])
    for item in items:
        if not isinstance(item, cls):
            raise TypeError(message.format(item))
    return items


def _validate_hooks(hooks: Any) -> tuple:
    hook_type = tf.compat.v1.train.SessionRunHook
    return checked_items(hooks, hook_type, "All hooks must be SessionRunHook instances, given: {}")


def _metric_updates(key: str, metric: Any) -> list:
    updates = getattr(metric, "updates", None)
    if updates is None:
        # Keras 3 metrics run eagerly and record no graph update ops.
        raise TypeError(
            f"eval_metric_ops[{key!r}] is a metric object without graph updates "
            f"({type(metric).__module__}.{type(metric).__name__}); Keras 3 metrics do not "
            "work in graph mode. Use a tf.compat.v1.metrics pair such as "
            "tf.compat.v1.metrics.accuracy(labels, predictions), or a tf_keras metric "
            "under TF_USE_LEGACY_KERAS=1."
        )
    return list(updates)


def _validate_eval_metric_ops(eval_metric_ops: Any) -> dict:
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if is_metric_object(value):
            if not _metric_updates(key, value):
                raise ValueError(f'Please call update_state(...) on the "{value.name}" metric')
        elif not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(
                "Values of eval_metric_ops must be (metric_value, update_op) "
                f"tuples, given: {value} for key: {key}"
            )
    for key, value in eval_metric_ops.items():
        if is_metric_object(value):
            to_check = _metric_updates(key, value) + [value.result()]
        else:
            to_check = tf.nest.flatten(value)
        for val in to_check:
            if not _in_default_graph(val):
                raise ValueError(_GRAPH_ERROR.format("eval_metric_ops", f"{key}: {val.name}"))
    # A metric object becomes a (result, update) pair; its variables must be local so
    # that evaluation initializes them instead of restoring them from the checkpoint.
    metric_variables: list = []
    for key, value in list(eval_metric_ops.items()):
        if is_metric_object(value):
            metric_variables.extend(value.variables)
            eval_metric_ops[key] = (value.result(), _metric_updates(key, value)[0])
    for collection in (
        tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
        tf.compat.v1.GraphKeys.METRIC_VARIABLES,
    ):
        present = tf.compat.v1.get_collection(collection)
        for v in metric_variables:
            if not any(v is p for p in present):
                tf.compat.v1.add_to_collection(collection, v)
                present.append(v)
    return eval_metric_ops


def _validate_scaffold(scaffold: Any) -> Any:
    scaffold = scaffold or tf.compat.v1.train.Scaffold()
    if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
    return scaffold


def _validate_export_outputs(export_outputs: Any, predictions: Any, mode: str) -> Any:
    # As tf.estimator: checked (and defaulted) in PREDICT mode only, passed through otherwise.
    if mode != ModeKeys.PREDICT:
        return export_outputs
    return get_export_outputs(export_outputs, predictions)


_FIELDS = (
    "mode",
    "predictions",
    "loss",
    "train_op",
    "eval_metric_ops",
    "export_outputs",
    "training_chief_hooks",
    "training_hooks",
    "scaffold",
    "evaluation_hooks",
    "prediction_hooks",
)


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """Ops and objects returned from a ``model_fn`` (``tf.estimator.EstimatorSpec``).

    Required by mode: ``TRAIN`` needs ``loss`` and ``train_op``, ``EVAL`` needs
    ``loss``, ``PREDICT`` needs ``predictions``. ``eval_metric_ops`` values are
    ``(value_op, update_op)`` pairs or graph-mode metric objects (tf_keras metrics).

    Example:
        >>> def model_fn(features, labels, mode):  # doctest: +SKIP
        ...     loss = tf.reduce_mean(tf.square(features["x"] - labels))
        ...     return EstimatorSpec(mode, loss=loss, train_op=...)
    """

    __slots__ = ()

    def __new__(
        cls,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metric_ops: Any = None,
        export_outputs: Any = None,
        training_chief_hooks: Any = None,
        training_hooks: Any = None,
        scaffold: Any = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
    ) -> EstimatorSpec:
        # Checked in tf.estimator's order, so the first error reported is the same.
        train_op = _validate_train_op(train_op, mode)
        loss = _validate_loss(loss, mode)
        predictions = _validate_predictions(predictions, mode)
        export_outputs = _validate_export_outputs(export_outputs, predictions, mode)
        training_hooks = _validate_hooks(training_hooks)
        evaluation_hooks = _validate_hooks(evaluation_hooks)
        prediction_hooks = _validate_hooks(prediction_hooks)
        training_chief_hooks = _validate_hooks(training_chief_hooks)
        eval_metric_ops = _validate_eval_metric_ops(eval_metric_ops)
        scaffold = _validate_scaffold(scaffold)
        return super().__new__(
            cls,
            mode,
            predictions,
            loss,
            train_op,
            eval_metric_ops,
            export_outputs,
            training_chief_hooks,
            training_hooks,
            scaffold,
            evaluation_hooks,
            prediction_hooks,
        )

    def _replace(self, **kwds: Any) -> EstimatorSpec:
        """A new spec with some fields replaced (validated again); the mode cannot change."""
        if "mode" in kwds and self.mode != kwds["mode"]:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        return EstimatorSpec(*[kwds.pop(f, v) for f, v in zip(self._fields, self, strict=True)])
