"""``tf1compat_init.estimator.experimental``: the part of ``tf.estimator.experimental`` here.

Only ``build_raw_supervised_input_receiver_fn`` (the receivers of TRAIN / EVAL exports
with ``Estimator.experimental_export_all_saved_models``); the other names raise an
error saying they are left out.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ._export_supervised import build_raw_supervised_input_receiver_fn
from ._leftout import LeftOutError

__all__ = ["build_raw_supervised_input_receiver_fn"]

_LEFT_OUT = frozenset(
    {
        "InMemoryEvaluatorHook",
        "LinearSDCA",
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


def __getattr__(name: str) -> Any:
    return _missing(name)


def _missing(name: str) -> NoReturn:
    if name in _LEFT_OUT:
        raise LeftOutError(
            f"tf.estimator.experimental.{name} is not provided by tf1compat_init.estimator: "
            "early-stopping hooks, in-memory evaluation and the canned linear / RNN "
            "estimators are left out (stop training from your own SessionRunHook reading "
            "est.eval_dir(), or write the model as a model_fn)."
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
