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
# Modified from `tensorflow_estimator/python/estimator/estimator.py` and
# `tensorflow_estimator/python/estimator/util.py` (v2.15.0) for tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; the input_fn/model_fn calling helpers of Estimator
# gathered in one module.
"""Calling ``input_fn`` and ``model_fn`` with the arguments they declare, as tf.estimator does."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import tensorflow as tf

from ._log import logger
from ._spec import EstimatorSpec, ModeKeys

__all__ = [
    "DatasetInitializerHook",
    "call_input_fn",
    "call_model_fn",
    "fn_args",
    "model_fn_kwargs",
    "parse_input_fn_result",
    "verify_model_fn_args",
]


_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}
# Feature keys that usually hold the target: the tutorial's {"x": ..., "y": ...} input.
_LABEL_LIKE = ("y", "label", "labels", "target", "targets")


def fn_args(fn: Any) -> tuple[str, ...]:
    """The positional parameter names of a function, partial, method or callable object.

    Keyword-only parameters are not included, as in tf.estimator.
    """
    if isinstance(fn, functools.partial):
        names = fn_args(fn.func)
        return tuple(a for a in names[len(fn.args) :] if a not in (fn.keywords or {}))
    call = inspect.getattr_static(fn, "__call__", None)
    if not inspect.isroutine(fn) and inspect.isfunction(call):
        fn = fn.__call__  # a callable object: inspect its bound __call__
    names = list(inspect.getfullargspec(inspect.unwrap(fn)).args)
    if inspect.ismethod(fn) and fn.__self__ is not None and names:
        names.pop(0)  # self / cls of a bound method
    return tuple(names)


def verify_model_fn_args(model_fn: Any, params: Any) -> None:
    """Checks the ``model_fn`` signature the way ``Estimator.__init__`` does."""
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(
            f"model_fn ({model_fn}) does not include params argument, "
            f"but params ({params}) is passed to Estimator."
        )
    if params is None and "params" in args:
        logger.warning(
            "Estimator's model_fn (%s) includes params argument, but params are not "
            "passed to Estimator.",
            model_fn,
        )
    unexpected = list(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")


def call_input_fn(input_fn: Any, mode: str, params: dict, config: Any) -> Any:
    """Calls ``input_fn`` with the ``mode`` / ``params`` / ``config`` it asks for, on the CPU."""
    kwargs = _declared(fn_args(input_fn), mode=mode, params=params, config=config)
    with tf.compat.v1.device("/cpu:0"):
        return input_fn(**kwargs)


def _declared(names: tuple[str, ...], **values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if name in names}


def model_fn_kwargs(names: tuple[str, ...], labels: Any, **values: Any) -> dict[str, Any]:
    """The ``labels`` and ``values`` (mode, params, config) a model_fn declares in ``names``.

    Raises:
        ValueError: ``labels`` are given to a ``model_fn`` that takes none.
    """
    if "labels" not in names and labels is not None:
        raise ValueError("model_fn does not take labels, but input_fn returns labels.")
    return _declared(names, labels=labels, **values)


class DatasetInitializerHook(tf.compat.v1.train.SessionRunHook):
    """Initializes a dataset iterator in every new session (tf.estimator's input hook)."""

    def __init__(self, iterator: Any) -> None:
        self._iterator = iterator

    def begin(self) -> None:
        self._initializer = self._iterator.initializer

    def after_create_session(self, session: Any, coord: Any) -> None:
        del coord
        session.run(self._initializer)


def parse_input_fn_result(result: Any) -> tuple[Any, Any, list]:
    """``(features, labels, input_hooks)`` from a Dataset, a pair, or features alone."""
    hooks: list = []
    if isinstance(result, tf.data.Dataset):
        iterator = tf.compat.v1.data.make_initializable_iterator(result)
        hooks.append(DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, list | tuple):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1], hooks
    return result, None, hooks


_KERAS3_LAYERS_ADVICE = (
    "tf1compat_init: tf.compat.v1.layers needs tf_keras on TensorFlow >= 2.16: "
    "`pip install tf_keras` and set the environment variable TF_USE_LEGACY_KERAS=1 before "
    "TensorFlow is first imported; or write the layer with tf.compat.v1.get_variable "
    "(docs/estimator.md, 'Migrating from tf.estimator on TF 2.15 to TF 2.21', shows one)."
)


def _labels_advice(features: Any) -> str:
    head = "tf1compat_init: labels is None because input_fn returned features only"
    generic = (
        f"{head}; return the pair (features, labels) from input_fn, or make its Dataset "
        "yield (features, labels) pairs."
    )
    if not isinstance(features, dict):
        return generic
    keys = sorted(str(k) for k in features)
    guess = next((k for k in keys if k.lower() in _LABEL_LIKE), None)
    if guess is None:
        return f"{head} (a dict with keys {keys}); return the pair (features, labels) instead."
    kept = ", ".join(f'"{k}": d["{k}"]' for k in keys if k != guess)
    return (
        f'{head} (a dict with keys {keys}); "{guess}" looks like the labels: return them '
        f"apart, as the pair (features, labels), e.g. for a Dataset of such dicts "
        f'`dataset.map(lambda d: ({{{kept}}}, d["{guess}"]))`.'
    )


def _about_none(error: BaseException) -> bool:
    """Whether ``error`` can come from ``labels`` being None: its text speaks of None.

    A model_fn that keeps its labels in ``features`` by design (TPUEstimator-style code)
    and fails for another reason (a shape, a dtype) gets TF's error alone.
    """
    return "None" in str(error)


def _with_advice(error: BaseException, advice: str) -> BaseException:
    """The same error with the advice after TF's text (its type kept, message word for word)."""
    if type(error) in (ValueError, TypeError, AttributeError):
        return type(error)(f"{error}\n{advice}")
    error.add_note(advice)
    return error


def call_model_fn(
    model_fn: Any, features: Any, labels: Any, mode: str, params: dict, config: Any
) -> EstimatorSpec:
    """Calls ``model_fn`` with the arguments it declares and checks its result."""
    names = fn_args(model_fn)
    kwargs = model_fn_kwargs(names, labels, mode=mode, params=params, config=config)
    logger.info("Calling model_fn.")
    try:
        spec = model_fn(features=features, **kwargs)
    except (ValueError, TypeError, AttributeError) as e:
        if isinstance(e, AttributeError) and "not available with Keras 3" in str(e):
            advice = _KERAS3_LAYERS_ADVICE
        elif labels is None and mode != ModeKeys.PREDICT and "labels" in names and _about_none(e):
            advice = _labels_advice(features)
        else:
            raise
        new = _with_advice(e, advice)
        if new is e:
            raise
        raise new from e
    logger.info("Done calling model_fn.")
    if not isinstance(spec, EstimatorSpec):
        if type(spec).__name__ == "EstimatorSpec" and hasattr(spec, "_fields"):
            raise ValueError(
                "model_fn should return an EstimatorSpec.\ntf1compat_init: it returned "
                "tf.estimator.EstimatorSpec; build tf1compat_init.estimator.EstimatorSpec "
                "instead (import EstimatorSpec from the same module as Estimator)."
            )
        raise ValueError("model_fn should return an EstimatorSpec.")
    return spec
