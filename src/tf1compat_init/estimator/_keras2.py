# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The Keras 2 the canned estimators and heads build with, in graph mode.

tensorflow-estimator 2.15 built its canned estimators from Keras 2 layers, metrics and
legacy optimizers (``tf.keras`` was Keras 2 then). From TensorFlow 2.16 on ``tf.keras``
is Keras 3, which has no graph mode; Keras 2 lives on as the ``tf_keras`` package, which
works beside Keras 3 in one process without ``TF_USE_LEGACY_KERAS``. So: ``tf.keras``
where it is Keras 2 (TF 2.15), else ``tf_keras``. ``tf.keras`` itself is never changed.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["keras2"]

_ADVICE = (
    "tf1compat_init: the canned estimators and heads build with Keras 2, which TensorFlow "
    "{tf} ships as the separate package tf_keras: `pip install tf1compat_init[tf-keras]` "
    "(or `pip install tf_keras=={major_minor}.*`). TF_USE_LEGACY_KERAS is not needed."
)


@functools.cache
def keras2() -> Any:
    """Returns the Keras 2 module: ``tf.keras`` on TF 2.15, else ``tf_keras``.

    Raises:
        ImportError: on TF >= 2.16 without ``tf_keras`` installed, saying what to install.
    """
    import tensorflow as tf

    if tf.__version__.startswith("2.15."):  # the last TensorFlow whose tf.keras is Keras 2
        return tf.keras
    try:
        import tf_keras
    except ImportError as err:
        major_minor = ".".join(tf.__version__.split(".")[:2])
        raise ImportError(_ADVICE.format(tf=tf.__version__, major_minor=major_minor)) from err
    return tf_keras
