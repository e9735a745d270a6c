# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf1compat_init.estimator.experimental``: all of ``tf.estimator.experimental`` (TF 2.15).

``build_raw_supervised_input_receiver_fn`` (the receivers of TRAIN / EVAL exports with
``Estimator.experimental_export_all_saved_models``), the early-stopping hooks
(``stop_if_higher_hook``, ``stop_if_lower_hook``, ``stop_if_no_increase_hook``,
``stop_if_no_decrease_hook``, ``make_early_stopping_hook``,
``make_stop_at_checkpoint_step_hook``), ``InMemoryEvaluatorHook``, ``RNNClassifier`` /
``RNNEstimator``, ``call_logit_fn`` and ``LinearSDCA`` (defined on first use: they import Keras 2).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._export_supervised import build_raw_supervised_input_receiver_fn

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
    from .canned._sdca import LinearSDCA

__all__ = [
    "InMemoryEvaluatorHook",
    "LinearSDCA",
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
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
