"""The parts of tf.estimator this runner leaves out, and what to use instead.

Each raises ``NotImplementedError`` with one sentence of advice. Names looked up on
the module raise an error that is also an ``AttributeError``, so ``hasattr`` and
``getattr(module, name, default)`` keep working.
"""

from __future__ import annotations

from typing import NoReturn

__all__ = ["LEFT_OUT", "LeftOutError", "missing_name"]


class LeftOutError(AttributeError, NotImplementedError):
    """A tf.estimator name this runner leaves out (``hasattr`` still answers False)."""


CANNED = (
    "canned estimators and heads are not part of tf1compat_init.estimator: write the model "
    "as a model_fn for Estimator (or as a Keras model)"
)
LEFT_OUT = {
    **dict.fromkeys(
        [
            "DNNClassifier",
            "DNNEstimator",
            "DNNLinearCombinedClassifier",
            "DNNLinearCombinedEstimator",
            "DNNLinearCombinedRegressor",
            "DNNRegressor",
            "add_metrics",
        ],
        CANNED,
    ),
}


def missing_name(module: str, name: str) -> NoReturn:
    """Raises for ``module.name``: advice for a left-out tf.estimator name, else AttributeError."""
    if name in LEFT_OUT:
        raise LeftOutError(
            f"tf.estimator.{name} is not provided by tf1compat_init.estimator: {LEFT_OUT[name]}."
        )
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
