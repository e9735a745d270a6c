# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``tf.compat.v1.layers`` the v1 canned estimators build with (Keras 2's legacy layers).

TF 2.15's v1 DNN used ``tf.compat.v1.layers.Dense`` (and ``Dropout``,
``BatchNormalization``): variable-scope layers from Keras 2. On TensorFlow >= 2.16 those
names need Keras 2, which is ``tf_keras``; its v1 API holds the same classes. Using them,
rather than re-deriving them, keeps names, initializers and update ops identical.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from .._keras2 import keras2

__all__ = ["legacy_layers"]


@functools.cache
def legacy_layers() -> Any:
    """The module holding Keras 2's ``Dense``, ``Dropout``, ``BatchNormalization`` (v1 layers)."""
    keras = keras2()
    if keras.__name__.startswith("tf_keras"):
        return importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    import tensorflow as tf

    return tf.compat.v1.layers
