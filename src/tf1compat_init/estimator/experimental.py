"""``tf1compat_init.estimator.experimental``: the part of ``tf.estimator.experimental`` here.

``build_raw_supervised_input_receiver_fn`` (the receivers of TRAIN / EVAL exports
with ``Estimator.experimental_export_all_saved_models``) and ``LinearSDCA`` (the SDCA
optimizer of ``LinearClassifier`` / ``LinearRegressor``); the other names raise an
error saying they are left out.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, NoReturn

from ._export_supervised import build_raw_supervised_input_receiver_fn
from ._leftout import LeftOutError

if TYPE_CHECKING:  # defined lazily by __getattr__ below (it imports Keras 2)
    from .canned._sdca import LinearSDCA

__all__ = ["LinearSDCA", "build_raw_supervised_input_receiver_fn"]

_LEFT_OUT = frozenset(
    {
        "InMemoryEvaluatorHook",
        "RNNClassifier",
        "RNNEstimator",
        "call_logit_fn",
        "make_early_stopping_hook",
        "make_stop_at_checkpoint_step_hook",
        "stop_if_higher_hook",
        "stop_if_lower_hook",
        "stop_if_no_decrease_hook",
        "stop_if_no_increase_hook",
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
        value = getattr(importlib.import_module(f"{package}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    return _missing(name)


def _missing(name: str) -> NoReturn:
    if name in _LEFT_OUT:
        raise LeftOutError(
            f"tf.estimator.experimental.{name} is not provided by tf1compat_init.estimator: "
            "early-stopping hooks, in-memory evaluation and the canned RNN "
            "estimators are left out (stop training from your own SessionRunHook reading "
            "est.eval_dir(), or write the model as a model_fn)."
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
