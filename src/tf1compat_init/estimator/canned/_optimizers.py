# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Optimizer arguments of the canned estimators: a name, an instance or a callable.

As tensorflow-estimator 2.15: the V2 estimators (``DNNClassifier`` ...) take Keras 2
legacy optimizers (``tf_keras.optimizers.legacy`` on TensorFlow >= 2.16), whose slots
are named ``training/<Optimizer>/<variable>/<slot>``; the ``tf.compat.v1.estimator``
flavours take ``tf.compat.v1.train`` optimizers (slots ``<variable>/<Optimizer>``).
The error texts are TF 2.15's; where a Keras 3 optimizer is given, advice follows.
"""

from __future__ import annotations

import inspect
from typing import Any

import tensorflow as tf

from .._keras2 import keras2

__all__ = ["LEARNING_RATE", "get_optimizer_instance", "get_optimizer_instance_v2"]

#: The learning rate the canned estimators give an optimizer named by a string.
LEARNING_RATE = 0.05

_V1_NAMES = {
    "Adagrad": "AdagradOptimizer",
    "Adam": "AdamOptimizer",
    "Ftrl": "FtrlOptimizer",
    "RMSProp": "RMSPropOptimizer",
    "SGD": "GradientDescentOptimizer",
}
_V2_NAMES = {
    "Adagrad": "Adagrad",
    "Adam": "Adam",
    "Ftrl": "Ftrl",
    "RMSProp": "RMSprop",
    "SGD": "SGD",
}


def _unsupported(opt: str, names: dict) -> ValueError:
    return ValueError(
        f"Unsupported optimizer name: {opt}. Supported names are: {tuple(sorted(names))}"
    )


def get_optimizer_instance(opt: Any, learning_rate: float | None = None) -> Any:
    """A ``tf.compat.v1.train.Optimizer`` from a name, an instance or a callable (v1 estimators).

    Raises:
        ValueError: an unknown name, a name without ``learning_rate``, or not an optimizer.
    """
    if isinstance(opt, str):
        if opt not in _V1_NAMES:
            raise _unsupported(opt, _V1_NAMES)
        if not learning_rate:
            raise ValueError("learning_rate must be specified when opt is string.")
        return getattr(tf.compat.v1.train, _V1_NAMES[opt])(learning_rate=learning_rate)
    if callable(opt):
        opt = opt()
    if not isinstance(opt, tf.compat.v1.train.Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt


def _has_default_learning_rate(cls: type) -> bool:
    spec = inspect.getfullargspec(cls.__init__)
    defaults = dict(zip(spec.args[::-1], (spec.defaults or ())[::-1], strict=False))
    defaults.update(spec.kwonlydefaults or {})
    return "learning_rate" in defaults


def get_optimizer_instance_v2(opt: Any, learning_rate: float | None = None) -> Any:
    """A Keras 2 legacy optimizer from a name, an instance or a callable (V2 estimators).

    A name without ``learning_rate`` gets the optimizer's own default learning rate.

    Raises:
        ValueError: an unknown name, a non-legacy (or Keras 3) optimizer, or not an optimizer.
    """
    keras = keras2()
    legacy = keras.optimizers.legacy
    if isinstance(opt, str):
        if opt not in _V2_NAMES:
            raise _unsupported(opt, _V2_NAMES)
        cls = getattr(legacy, _V2_NAMES[opt])
        if learning_rate:
            return cls(learning_rate=learning_rate)
        return cls() if _has_default_learning_rate(cls) else cls(learning_rate=LEARNING_RATE)
    if callable(opt) and not isinstance(opt, legacy.Optimizer):
        opt = opt()
    if isinstance(opt, legacy.Optimizer):
        return opt
    if _is_new_keras_optimizer(opt, keras):
        name = type(opt).__name__
        module = "tf_keras" if keras.__name__.startswith("tf_keras") else "tf.keras"
        raise ValueError(
            "Please set your optimizer as an instance of "
            "`tf.keras.optimizers.legacy.Optimizer`, e.g., "
            f"`tf.keras.optimizers.legacy.{name}`.Received optimizer type: {type(opt)}."
            "\ntf1compat_init: the canned estimators train in graph mode, which only Keras 2's "
            f"legacy optimizers support: pass `{module}.optimizers.legacy.{name}(...)` "
            f"or the name {name!r}."
        )
    raise ValueError(
        f"The given object is not a tf.keras.optimizers.Optimizer instance. Given: {opt}"
    )


def _is_new_keras_optimizer(opt: Any, keras: Any) -> bool:
    """A Keras 2 non-legacy optimizer, or any Keras 3 optimizer (``tf.keras`` on TF >= 2.16)."""
    if isinstance(opt, keras.optimizers.Optimizer):
        return True
    module = type(opt).__module__ or ""
    return module.startswith("keras") and hasattr(opt, "apply_gradients")
