# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Exporting the TRAIN and EVAL graphs: supervised receivers and outputs (tf.estimator 2.15).

``experimental_export_all_saved_models`` saves one MetaGraph per mode; the TRAIN and EVAL
ones take features and labels (a ``SupervisedInputReceiver``) and have one signature,
``train`` / ``eval``, whose outputs are the loss, the predictions and the metrics
(``metrics/<name>/value`` and ``metrics/<name>/update_op``).
"""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

from ._export_output import ExportOutput
from ._receiver import (
    SINGLE_RECEIVER_DEFAULT_NAME,
    placeholder_like,
    wrap_and_check_input_tensors,
)

__all__ = [
    "EvalOutput",
    "SupervisedInputReceiver",
    "TrainOutput",
    "build_raw_supervised_input_receiver_fn",
]

SINGLE_LABEL_DEFAULT_NAME = "label"


class SupervisedInputReceiver(
    collections.namedtuple("SupervisedInputReceiver", ["features", "labels", "receiver_tensors"])
):
    """Features and labels for the TRAIN / EVAL graph, and the tensors a caller feeds."""

    __slots__ = ()

    def __new__(cls, features: Any, labels: Any, receiver_tensors: Any) -> SupervisedInputReceiver:
        wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
        wrap_and_check_input_tensors(labels, "label", allow_int_keys=True)
        receiver_tensors = wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor")
        return super().__new__(cls, features, labels, receiver_tensors)


def build_raw_supervised_input_receiver_fn(
    features: Any, labels: Any, default_batch_size: int | None = None
) -> Any:
    """A receiver fn fed features and labels as they are (placeholders shaped like them)."""
    feature_keys = features.keys() if isinstance(features, dict) else [SINGLE_RECEIVER_DEFAULT_NAME]
    label_keys = labels.keys() if isinstance(labels, dict) else [SINGLE_LABEL_DEFAULT_NAME]
    overlap = set(feature_keys) & set(label_keys)
    if overlap:
        raise ValueError(
            f"Features and labels must have distinct keys. Found overlapping keys: {overlap}"
        )

    def placeholders(value: Any, single_name: str) -> tuple[Any, dict]:
        if isinstance(value, dict):
            made = {k: placeholder_like(t, default_batch_size) for k, t in value.items()}
            return made, made
        made = placeholder_like(value, default_batch_size)
        return made, {single_name: made}

    def supervised_input_receiver_fn() -> SupervisedInputReceiver:
        feats, feature_receivers = placeholders(features, SINGLE_RECEIVER_DEFAULT_NAME)
        labs, label_receivers = placeholders(labels, SINGLE_LABEL_DEFAULT_NAME)
        return SupervisedInputReceiver(feats, labs, {**feature_receivers, **label_receivers})

    return supervised_input_receiver_fn


class _SupervisedOutput(ExportOutput):
    """Loss, predictions and metrics of a TRAIN or EVAL graph as one signature."""

    LOSS_NAME = "loss"
    PREDICTIONS_NAME = "predictions"
    METRICS_NAME = "metrics"
    _METHOD = ""

    def __init__(self, loss: Any = None, predictions: Any = None, metrics: Any = None) -> None:
        self._loss = self._prefixed(loss, self.LOSS_NAME)
        self._predictions = self._prefixed(predictions, self.PREDICTIONS_NAME)
        self._metrics = None if metrics is None else self._wrap_and_check_metrics(metrics)

    def _prefix_key(self, key: str, prefix: str) -> str:
        return key if key.find(prefix) == 0 else prefix + self._SEPARATOR_CHAR + key

    def _prefixed(self, outputs: Any, prefix: str) -> dict | None:
        if outputs is None:
            return None
        checked = self._wrap_and_check_outputs(outputs, prefix)
        return {self._prefix_key(k, prefix): v for k, v in checked.items()}

    def _wrap_and_check_metrics(self, metrics: Any) -> dict:
        if not isinstance(metrics, dict):
            metrics = {self.METRICS_NAME: metrics}
        outputs = {}
        for key, metric in metrics.items():
            if isinstance(metric, tuple):
                value, update = metric
            else:  # a graph-mode metric object
                value, update = metric.result(), metric.updates[0]
            key = self._prefix_key(self._check_output_key(key, self.METRICS_NAME), "metrics")
            if not isinstance(value, tf.Tensor):
                raise ValueError(f"{key} output value must be a Tensor; got {value}.")
            if not isinstance(update, tf.Tensor | tf.Operation):
                raise ValueError(f"{key} update_op must be a Tensor or Operation; got {update}.")
            if not isinstance(update, tf.Tensor):
                with tf.control_dependencies([update]):
                    update = tf.constant([], name="metric_op_wrapper")
            outputs[key + "/value"] = value
            outputs[key + "/update_op"] = update
        return outputs

    @property
    def loss(self) -> dict | None:
        return self._loss

    @property
    def predictions(self) -> dict | None:
        return self._predictions

    @property
    def metrics(self) -> dict | None:
        return self._metrics

    def as_signature_def(self, receiver_tensors: dict) -> Any:
        if not receiver_tensors:
            raise ValueError(f"{self._METHOD} `inputs` cannot be None or empty.")
        info = tf.compat.v1.saved_model.build_tensor_info
        outputs: dict = {}
        for group in (self.loss, self.predictions, self.metrics):
            outputs.update({k: info(v) for k, v in (group or {}).items()})
        return tf.compat.v1.saved_model.build_signature_def(
            {k: info(v) for k, v in receiver_tensors.items()}, outputs, self._METHOD
        )


class TrainOutput(_SupervisedOutput):
    """The TRAIN graph's signature outputs (method ``tensorflow/supervised/training``)."""

    _METHOD = "tensorflow/supervised/training"


class EvalOutput(_SupervisedOutput):
    """The EVAL graph's signature outputs (method ``tensorflow/supervised/eval``)."""

    _METHOD = "tensorflow/supervised/eval"
