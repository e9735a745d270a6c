"""``tf1compat_init.estimator.experimental``: the part of ``tf.estimator.experimental`` here.

``build_raw_supervised_input_receiver_fn`` (the receivers of TRAIN / EVAL exports with
``Estimator.experimental_export_all_saved_models``), the early-stopping hooks
(``stop_if_higher_hook``, ``stop_if_lower_hook``, ``stop_if_no_increase_hook``,
``stop_if_no_decrease_hook``, ``make_early_stopping_hook``,
``make_stop_at_checkpoint_step_hook``), ``InMemoryEvaluatorHook``, ``RNNClassifier`` /
``RNNEstimator`` and ``call_logit_fn``, defined on first use; the other names raise an
error saying they are left out.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, NoReturn

from ._export_supervised import build_raw_supervised_input_receiver_fn
from ._leftout import LeftOutError

if TYPE_CHECKING:  # defined lazily by __getattr__ below
    from ._early_stopping import (
        make_early_stopping_hook,
        make_stop_at_checkpoint_step_hook,
        stop_if_higher_hook,
        stop_if_lower_hook,
        stop_if_no_decrease_hook,
        stop_if_no_increase_hook,
    )
    from ._in_memory_eval import InMemoryEvaluatorHook
    from .canned._logit_fn import call_logit_fn
    from .canned._rnn import RNNClassifier, RNNEstimator

__all__ = [
    "InMemoryEvaluatorHook",
    "RNNClassifier",
    "RNNEstimator",
    "build_raw_supervised_input_receiver_fn",
    "call_logit_fn",
    "make_early_stopping_hook",
    "make_stop_at_checkpoint_step_hook",
    "stop_if_higher_hook",
    "stop_if_lower_hook",
    "stop_if_no_decrease_hook",
    "stop_if_no_increase_hook",
]

_LEFT_OUT = frozenset(
    {
        "LinearSDCA",
    }
)


#: Names defined lazily (they import Keras 2): public name -> module, relative to the estimator.
_LAZY = {
    "InMemoryEvaluatorHook": "_in_memory_eval",
    "LinearSDCA": "canned._sdca",
    "RNNClassifier": "canned._rnn",
    "RNNEstimator": "canned._rnn",
    "call_logit_fn": "canned._logit_fn",
    "make_early_stopping_hook": "_early_stopping",
    "make_stop_at_checkpoint_step_hook": "_early_stopping",
    "stop_if_higher_hook": "_early_stopping",
    "stop_if_lower_hook": "_early_stopping",
    "stop_if_no_decrease_hook": "_early_stopping",
    "stop_if_no_increase_hook": "_early_stopping",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        package = __name__.rsplit(".", 1)[0]
        module = f"{package}.{_LAZY[name]}"
        try:
            value = getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as err:
            if err.name != module:  # a real import error inside the module
                raise
            return _missing(name)  # not built yet: still left out
        globals()[name] = value
        return value
    return _missing(name)


def _missing(name: str) -> NoReturn:
    if name in _LEFT_OUT:
        raise LeftOutError(
            f"tf.estimator.experimental.{name} is not provided by tf1compat_init.estimator: "
            "it is left out (write the model as a model_fn, or use the canned "
            "estimators of tf1compat_init.estimator)."
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
