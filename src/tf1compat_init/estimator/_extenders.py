# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``add_metrics``: an Estimator whose evaluation has more metrics (``tf.estimator.add_metrics``)."""

from __future__ import annotations

from typing import Any

from ._fn_calls import fn_args
from ._spec import ModeKeys

__all__ = ["add_metrics"]

_VALID_METRIC_FN_ARGS = frozenset({"features", "labels", "predictions", "config"})


def _verify_metric_fn_args(metric_fn: Any) -> None:
    unexpected = list(set(fn_args(metric_fn)) - _VALID_METRIC_FN_ARGS)
    if unexpected:
        raise ValueError(f"metric_fn ({metric_fn}) has following not expected args: {unexpected}")


def _call_metric_fn(
    metric_fn: Any, features: Any, labels: Any, predictions: Any, config: Any
) -> Any:
    given = {"features": features, "labels": labels, "predictions": predictions, "config": config}
    names = fn_args(metric_fn)
    return metric_fn(**{k: v for k, v in given.items() if k in names})


def reject_tf_estimator(estimator: Any, what: str) -> None:
    """Raises ``TypeError`` with advice when ``estimator`` is tf.estimator's, not ours."""
    from . import Estimator

    if type(estimator).__module__.startswith("tensorflow_estimator") and not isinstance(
        estimator, Estimator
    ):
        raise TypeError(
            f"{what} needs an Estimator of tf1compat_init.estimator. Got: {type(estimator)}"
            "\ntf1compat_init: this is tf.estimator's Estimator; build it with "
            f"tf1compat_init.estimator (same arguments), or use tf.estimator's {what}."
        )


def add_metrics(estimator: Any, metric_fn: Any) -> Any:
    """A new Estimator: ``estimator``'s model, evaluated with ``metric_fn``'s metrics too.

    Args:
        estimator: an :class:`~tf1compat_init.estimator.Estimator` (canned ones too).
        metric_fn: a function taking any of ``predictions``, ``features``, ``labels``,
            ``config`` (by name) and returning ``{name: metric}``, each a
            ``(value, update_op)`` pair or a graph-mode metric object (tf_keras on
            TensorFlow >= 2.16). On a name clash its metric replaces the model's.

    Returns:
        An ``Estimator`` with the same ``model_dir``, ``config`` and warm start; training
        and prediction are unchanged.

    Raises:
        ValueError: ``metric_fn`` takes other arguments.

    Example:
        >>> def metric_fn(labels, predictions):  # doctest: +SKIP
        ...     return {"mae": tf.compat.v1.metrics.mean_absolute_error(labels, predictions["y"])}
        >>> est = add_metrics(est, metric_fn)  # doctest: +SKIP
    """
    from . import Estimator

    _verify_metric_fn_args(metric_fn)
    reject_tf_estimator(estimator, "add_metrics")

    def new_model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
        spec = estimator.model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        added = _call_metric_fn(metric_fn, features, labels, spec.predictions, config)
        metrics = spec.eval_metric_ops or {}
        metrics.update(added)
        return spec._replace(eval_metric_ops=metrics)

    return Estimator(
        model_fn=new_model_fn,
        model_dir=estimator.model_dir,
        config=estimator.config,
        warm_start_from=estimator._warm_start_settings,
    )
