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
# Modified from `tensorflow_estimator/python/estimator/export/export.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator.
"""What a ``serving_input_receiver_fn`` returns, and the two stock builders of such functions.

``ServingInputReceiver``, ``TensorServingInputReceiver``,
``build_parsing_serving_input_receiver_fn`` and ``build_raw_serving_input_receiver_fn``
as ``tf.estimator.export`` had them in TF 2.15 (same checks and error texts).
"""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf

__all__ = [
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn",
    "build_raw_serving_input_receiver_fn",
    "wrap_and_check_input_tensors",
]

SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_RECEIVER_DEFAULT_NAME = "input"
_DEFAULT_NAMES = {
    "feature": SINGLE_FEATURE_DEFAULT_NAME,
    "label": "label",
    "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
    "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME,
}


def _check_tensor(tensor: Any, name: Any, error_label: str = "feature") -> None:
    if isinstance(tensor, tf.Tensor | tf.sparse.SparseTensor | tf.RaggedTensor):
        return
    shown = f" {name}" if name else ""
    error = ValueError(f"{error_label}{shown} must be a Tensor, SparseTensor, or RaggedTensor.")
    if not hasattr(tensor, "tensor"):
        raise error
    try:  # a wrapper that converts to a tensor (e.g. a ResourceVariable) is accepted
        tf.convert_to_tensor(tensor)
    except TypeError:
        raise error from None


def _check_tensor_key(name: Any, error_label: str, allow_ints: bool) -> None:
    if isinstance(name, str):
        return
    if not allow_ints:
        raise ValueError(f"{error_label} keys must be strings: {name}.")
    if not isinstance(name, int):
        raise ValueError(f"{error_label} keys must be strings or ints: {name}.")


def wrap_and_check_input_tensors(
    tensors: Any, field_name: str, allow_int_keys: bool = False
) -> dict:
    """``tensors`` as a dict of name to tensor (a lone tensor gets the field's default name)."""
    if tensors is None:
        raise ValueError(f"{field_name}s must be defined.")
    if not isinstance(tensors, dict):
        tensors = {_DEFAULT_NAMES[field_name]: tensors}
    for name, tensor in tensors.items():
        _check_tensor_key(name, field_name, allow_int_keys)
        _check_tensor(tensor, name, error_label=field_name)
    return tensors


_FIELDS = ["features", "receiver_tensors", "receiver_tensors_alternatives"]


class ServingInputReceiver(collections.namedtuple("ServingInputReceiver", _FIELDS)):
    """What a ``serving_input_receiver_fn`` returns: model features and the fed tensors.

    Attributes:
        features: a tensor or a dict of name to tensor passed to ``model_fn`` (a lone
            tensor becomes ``{"feature": tensor}``).
        receiver_tensors: the tensors a serving request feeds (a lone tensor is named
            ``input``); they become the signature's inputs.
        receiver_tensors_alternatives: ``{name: tensors}`` giving extra signatures
            ``"<name>:<output key>"`` fed at other points of the input graph.
    """

    __slots__ = ()

    def __new__(
        cls, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None
    ) -> ServingInputReceiver:
        features = wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
        receiver_tensors = wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor")
        if receiver_tensors_alternatives is not None:
            if not isinstance(receiver_tensors_alternatives, dict):
                raise ValueError(
                    "receiver_tensors_alternatives must be a dict: "
                    f"{receiver_tensors_alternatives}."
                )
            for name, alternative in receiver_tensors_alternatives.items():
                receiver_tensors_alternatives[name] = wrap_and_check_input_tensors(
                    alternative, "receiver_tensors_alternative"
                )
        return super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple("TensorServingInputReceiver", _FIELDS)):
    """A receiver whose ``features`` is one tensor, passed to ``model_fn`` as it is."""

    __slots__ = ()

    def __new__(
        cls, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None
    ) -> TensorServingInputReceiver:
        if features is None:
            raise ValueError("features must be defined.")
        _check_tensor(features, None)
        receiver = ServingInputReceiver(features, receiver_tensors, receiver_tensors_alternatives)
        return super().__new__(
            cls,
            receiver.features[SINGLE_FEATURE_DEFAULT_NAME],
            receiver.receiver_tensors,
            receiver.receiver_tensors_alternatives,
        )


def build_parsing_serving_input_receiver_fn(
    feature_spec: dict, default_batch_size: int | None = None
) -> Any:
    """A receiver fn fed serialized ``tf.Example``s (input ``examples``), parsed by ``feature_spec``."""

    def serving_input_receiver_fn() -> ServingInputReceiver:
        serialized = tf.compat.v1.placeholder(
            dtype=tf.string, shape=[default_batch_size], name="input_example_tensor"
        )
        features = tf.compat.v1.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return serving_input_receiver_fn


def placeholder_like(t: Any, default_batch_size: int | None) -> Any:
    shape = tf.TensorShape([default_batch_size]).concatenate(t.get_shape()[1:])
    try:
        name = t.op.name
    except AttributeError:  # an eager tensor has no op
        name = None
    return tf.compat.v1.placeholder(dtype=t.dtype, shape=shape, name=name)


def build_raw_serving_input_receiver_fn(
    features: dict, default_batch_size: int | None = None
) -> Any:
    """A receiver fn fed the features themselves: one placeholder per entry of ``features``.

    Each placeholder has the entry's dtype and shape, with the batch dimension set to
    ``default_batch_size`` (``None``: any batch size).
    """

    def serving_input_receiver_fn() -> ServingInputReceiver:
        receivers = {k: placeholder_like(t, default_batch_size) for k, t in features.items()}
        return ServingInputReceiver(receivers, receivers)

    return serving_input_receiver_fn
