# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``call_logit_fn``: ``tf.estimator.experimental.call_logit_fn`` of tensorflow-estimator 2.15."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from .._fn_calls import fn_args

__all__ = ["call_logit_fn"]


def call_logit_fn(logit_fn: Any, features: Any, mode: str, params: Any, config: Any) -> Any:
    """Calls ``logit_fn(features, [mode], [params], [config])`` with the arguments it declares.

    As ``model_fn`` is called by an Estimator: ``mode``, ``params`` and ``config`` are
    passed as keywords only when ``logit_fn`` has a parameter of that name.

    Returns:
        What ``logit_fn`` returned: a ``Tensor`` or a ``{str: Tensor}`` dict.

    Raises:
        ValueError: ``logit_fn`` returned anything else (TF 2.15's message).

    Example:
        >>> def logit_fn(features, mode):  # doctest: +SKIP
        ...     return tf.compat.v1.layers.dense(features["x"], 3)
        >>> logits = call_logit_fn(logit_fn, features, ModeKeys.TRAIN, {}, None)  # doctest: +SKIP
    """
    names = fn_args(logit_fn)
    given = {"mode": mode, "params": params, "config": config}
    kwargs = {key: value for key, value in given.items() if key in names}
    results = logit_fn(features=features, **kwargs)
    is_tensor = isinstance(results, tf.Tensor)
    is_dict = isinstance(results, dict) and all(
        isinstance(k, str) and isinstance(v, tf.Tensor) for k, v in results.items()
    )
    if not (is_tensor or is_dict):
        raise ValueError(
            "logit_fn should return a Tensor or a dictionary mapping strings to Tensors.  "
            f"logit_fn returned: {results}"
        )
    return results
