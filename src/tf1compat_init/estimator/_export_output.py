# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``export_outputs`` of an EstimatorSpec: what each serving signature returns.

``PredictOutput``, ``ClassificationOutput`` and ``RegressionOutput`` as
``tf.estimator.export`` had them (TF 2.15): the same checks, the same error texts, the
same SignatureDefs (built with ``tf.compat.v1.saved_model``'s public helpers).
"""

from __future__ import annotations

import abc
from typing import Any

import tensorflow as tf

__all__ = [
    "DEFAULT_SERVING_KEY",
    "ClassificationOutput",
    "ExportOutput",
    "PredictOutput",
    "RegressionOutput",
    "get_export_outputs",
]

DEFAULT_SERVING_KEY = "serving_default"

_SINGLE_INPUT_ONLY = (
    "{kind} signatures can only accept a single tensor input of type tf.string. Please "
    "check to make sure that you have structured the serving_input_receiver_fn so that it "
    "creates a single string placeholder. If your model function expects multiple inputs, "
    "then use `tf.io.parse_example()` to parse the string into multiple tensors.\n "
    "Received: {received}"
)


def _is_tensor(x: Any) -> bool:
    return isinstance(x, tf.Tensor)


class ExportOutput(abc.ABC):
    """One serving signature's outputs (``tf.estimator.export.ExportOutput``)."""

    _SEPARATOR_CHAR = "/"

    @abc.abstractmethod
    def as_signature_def(self, receiver_tensors: dict) -> Any:
        """The ``SignatureDef`` proto with these outputs and ``receiver_tensors`` as inputs."""

    def _check_output_key(self, key: Any, error_label: str) -> str:
        if isinstance(key, tuple):
            key = self._SEPARATOR_CHAR.join(key)
        if not isinstance(key, str):
            raise ValueError(f"{error_label} output key must be a string; got {key}.")
        return key

    def _wrap_and_check_outputs(
        self, outputs: Any, single_output_default_name: str, error_label: str | None = None
    ) -> dict:
        if not isinstance(outputs, dict):
            outputs = {single_output_default_name: outputs}
        error_name = error_label or single_output_default_name
        checked = {}
        for key, value in outputs.items():
            key = self._check_output_key(key, error_name)
            if not _is_tensor(value):
                raise ValueError(f"{error_name} output value must be a Tensor; got {value}.")
            checked[key] = value
        return checked


def _single_string_input(kind: str, receiver_tensors: dict) -> Any:
    if len(receiver_tensors) != 1:
        raise ValueError(_SINGLE_INPUT_ONLY.format(kind=kind, received=receiver_tensors))
    ((_, examples),) = receiver_tensors.items()
    if tf.as_dtype(examples.dtype) != tf.string:
        raise ValueError(_SINGLE_INPUT_ONLY.format(kind=kind, received=receiver_tensors))
    return examples


class ClassificationOutput(ExportOutput):
    """A classification head's output: string ``classes`` and / or float ``scores``.

    Its signature takes one string input (serialized ``tf.Example``s), as TF Serving's
    Classify API does.
    """

    def __init__(self, scores: Any = None, classes: Any = None) -> None:
        if scores is not None and not (_is_tensor(scores) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (
            _is_tensor(classes) and tf.as_dtype(classes.dtype) == tf.string
        ):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError(
                "Cannot create a ClassificationOutput with empty arguments. At least one "
                "of `scores` and `classes` must be defined."
            )
        self._scores = scores
        self._classes = classes

    @property
    def scores(self) -> Any:
        return self._scores

    @property
    def classes(self) -> Any:
        return self._classes

    def as_signature_def(self, receiver_tensors: dict) -> Any:
        examples = _single_string_input("Classification", receiver_tensors)
        return tf.compat.v1.saved_model.classification_signature_def(
            examples, self.classes, self.scores
        )


class RegressionOutput(ExportOutput):
    """A regression head's output: one float ``value`` tensor (one string input)."""

    def __init__(self, value: Any) -> None:
        if not (_is_tensor(value) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self._value = value

    @property
    def value(self) -> Any:
        return self._value

    def as_signature_def(self, receiver_tensors: dict) -> Any:
        examples = _single_string_input("Regression", receiver_tensors)
        return tf.compat.v1.saved_model.regression_signature_def(examples, self.value)


class PredictOutput(ExportOutput):
    """Named output tensors (a tensor alone is named ``output``); any receiver inputs."""

    _SINGLE_OUTPUT_DEFAULT_NAME = "output"

    def __init__(self, outputs: Any) -> None:
        self._outputs = self._wrap_and_check_outputs(
            outputs, self._SINGLE_OUTPUT_DEFAULT_NAME, error_label="Prediction"
        )

    @property
    def outputs(self) -> dict:
        return self._outputs

    def as_signature_def(self, receiver_tensors: dict) -> Any:
        return tf.compat.v1.saved_model.predict_signature_def(receiver_tensors, self.outputs)


def _is_export_output(value: Any) -> bool:
    # Ours, or TensorFlow's own classes (tf.estimator.export.* on TF 2.15 are those).
    if isinstance(value, ExportOutput):
        return True
    return any(
        c.__name__ == "ExportOutput" and c.__module__.startswith("tensorflow")
        for c in type(value).__mro__
    )


def get_export_outputs(export_outputs: Any, predictions: Any) -> dict:
    """Checks a PREDICT spec's ``export_outputs``, or makes the default one from predictions.

    ``None`` becomes ``{"serving_default": PredictOutput(predictions)}``; a single
    output is also served as ``serving_default``; several need that key among them.
    """
    if export_outputs is None:
        export_outputs = {DEFAULT_SERVING_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"`export_outputs` must be dict, received: {export_outputs}.")
    for value in export_outputs.values():
        if not _is_export_output(value):
            raise TypeError(
                "Values in `export_outputs` must be ExportOutput objects, "
                f"received: {export_outputs}."
            )
    if len(export_outputs) == 1:
        ((key, value),) = export_outputs.items()
        if key != DEFAULT_SERVING_KEY:
            export_outputs[DEFAULT_SERVING_KEY] = value
    if len(export_outputs) > 1 and DEFAULT_SERVING_KEY not in export_outputs:
        raise ValueError(
            "Multiple `export_outputs` were provided, but none of them are specified as "
            "the default. Use`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY` to "
            "specify a default."
        )
    return export_outputs
