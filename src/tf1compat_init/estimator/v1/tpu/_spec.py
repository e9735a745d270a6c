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
# Modified from `tensorflow_estimator/python/estimator/tpu/tpu_estimator.py` and
# `tensorflow_estimator/python/estimator/model_fn.py` (v2.15.0) for tf1compat_init.
# Changes: TPUEstimatorSpec and its CPU conversion only (no outfeed); each spec
# keeps its own host calls (TF's kept them in a class attribute); validation through
# tf1compat_init's EstimatorSpec checks.
"""``TPUEstimatorSpec``: what a TPUEstimator ``model_fn`` returns, and its CPU/GPU form.

The fields, checks and messages are tensorflow-estimator 2.15's (``tpu_estimator.py``
and ``model_fn._TPUEstimatorSpec``). ``as_estimator_spec`` builds the
:class:`~tf1compat_init.estimator.EstimatorSpec` that ``use_tpu=False`` runs: the
``eval_metrics`` function called on its tensors gives ``eval_metric_ops``, the
``host_call`` function's ops run every step through a hook, and ``scaffold_fn`` is
called once for the scaffold.
"""

from __future__ import annotations

import collections
import inspect
from typing import Any

from ..._fn_calls import fn_args
from ..._log import logger
from ..._spec import (
    EstimatorSpec,
    _validate_export_outputs,
    _validate_hooks,
    _validate_loss,
    _validate_predictions,
    _validate_train_op,
)
from ._hooks import HostCallHook

__all__ = ["TPUEstimatorSpec", "call_host_calls", "validate_host_calls"]

_FIELDS = [
    "mode",
    "predictions",
    "loss",
    "train_op",
    "eval_metrics",
    "export_outputs",
    "scaffold_fn",
    "host_call",
    "training_hooks",
    "evaluation_hooks",
    "prediction_hooks",
]


def _takes_varargs(fn: Any) -> bool:
    try:
        return inspect.getfullargspec(inspect.unwrap(fn)).varargs is not None
    except TypeError:  # a builtin without a signature: TF counts its arguments as none
        return False


def validate_host_calls(host_calls: dict) -> None:
    """Checks ``{"eval_metrics": (fn, tensors), "host_call": (fn, tensors)}`` as TF does."""
    for name, host_call in host_calls.items():
        if not isinstance(host_call, tuple | list):
            raise ValueError(f"{name} should be tuple or list")
        if len(host_call) != 2:
            raise ValueError(f"{name} should have two elements.")
        fn, tensors = host_call
        if not callable(fn):
            raise TypeError(f"{name}[0] should be callable.")
        if not isinstance(tensors, tuple | list | dict):
            raise ValueError(f"{name}[1] should be tuple or list, or dict.")
        if isinstance(tensors, tuple | list) and not _takes_varargs(fn):
            n_args = len(fn_args(fn))
            if len(tensors) != n_args:
                raise RuntimeError(
                    f"In TPUEstimatorSpec.{name}, length of tensors {len(tensors)} does not "
                    f"match method args of the function, which takes {n_args}."
                )


def call_host_calls(host_calls: dict) -> dict:
    """``{name: fn(*tensors) or fn(**tensors)}``: the host calls run on the CPU."""
    validate_host_calls(host_calls)
    results = {}
    for name, (fn, tensors) in host_calls.items():
        if isinstance(tensors, tuple | list):
            results[name] = fn(*tensors)
            continue
        try:
            results[name] = fn(**tensors)
        except TypeError as e:
            logger.warning(
                "Exception while calling %s: %s. It is likely the tensors (%s[1]) do not "
                "match the function's arguments",
                name,
                e,
                name,
            )
            raise
    return results


class TPUEstimatorSpec(collections.namedtuple("TPUEstimatorSpec", _FIELDS)):
    """Ops and objects a ``model_fn`` returns to a ``TPUEstimator``.

    As ``EstimatorSpec`` for ``mode``, ``predictions``, ``loss``, ``train_op`` and
    ``export_outputs``, with TPU forms of the rest:

    - ``eval_metrics``: ``(metric_fn, tensors)``; ``tensors`` a list (positional
      arguments) or dict (keyword arguments); ``metric_fn`` returns
      ``{name: (value, update_op)}``.
    - ``scaffold_fn``: a function returning the ``Scaffold`` (called once per graph; the
      place for ``tf.compat.v1.train.init_from_checkpoint``).
    - ``host_call``: ``(fn, tensors)``; ``fn``'s ops run on every training or evaluation
      step (for ``tf.summary`` writes; its writers are initialized when the session
      starts and flushed when it ends).
    - ``training_hooks``, ``evaluation_hooks``, ``prediction_hooks``: ``SessionRunHook`` s.
    """

    __slots__ = ()

    def __new__(
        cls,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metrics: Any = None,
        export_outputs: Any = None,
        scaffold_fn: Any = None,
        host_call: Any = None,
        training_hooks: Any = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
    ) -> TPUEstimatorSpec:
        # TF's order: the host calls, the hooks, then EstimatorSpec's checks.
        validate_host_calls(_host_calls(eval_metrics, host_call))
        training_hooks = _validate_hooks(training_hooks)
        evaluation_hooks = _validate_hooks(evaluation_hooks)
        prediction_hooks = _validate_hooks(prediction_hooks)
        train_op = _validate_train_op(train_op, mode)
        loss = _validate_loss(loss, mode)
        predictions = _validate_predictions(predictions, mode)
        export_outputs = _validate_export_outputs(export_outputs, predictions, mode)
        return super().__new__(
            cls,
            mode,
            predictions,
            loss,
            train_op,
            eval_metrics,
            export_outputs,
            scaffold_fn,
            host_call,
            training_hooks,
            evaluation_hooks,
            prediction_hooks,
        )

    def as_estimator_spec(self) -> EstimatorSpec:
        """The equivalent ``EstimatorSpec`` that ``use_tpu=False`` trains and evaluates with."""
        results = call_host_calls(_host_calls(self.eval_metrics, self.host_call))
        eval_metric_ops = results.get("eval_metrics") if self.eval_metrics is not None else None
        hooks: tuple = ()
        if self.host_call is not None:
            hooks = (HostCallHook(results["host_call"]),)
        scaffold = self.scaffold_fn() if self.scaffold_fn else None
        return EstimatorSpec(
            mode=self.mode,
            predictions=self.predictions,
            loss=self.loss,
            train_op=self.train_op,
            eval_metric_ops=eval_metric_ops,
            export_outputs=self.export_outputs,
            scaffold=scaffold,
            training_hooks=self.training_hooks + hooks,
            evaluation_hooks=self.evaluation_hooks + hooks,
            prediction_hooks=self.prediction_hooks + hooks,
        )


def _host_calls(eval_metrics: Any, host_call: Any) -> dict:
    calls = {}
    if eval_metrics is not None:
        calls["eval_metrics"] = eval_metrics
    if host_call is not None:
        calls["host_call"] = host_call
    return calls
