# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf.estimator`` for code you cannot edit: an opt-in alias on TensorFlow >= 2.16.

    import tf1compat_init.estimator as est
    est.install()            # or tf1compat_init.alias.install(), which imports no TensorFlow
    import tensorflow as tf
    tf.estimator.DNNClassifier(...)                  # tf1compat_init.estimator's
    tf.compat.v1.estimator.tpu.TPUEstimator(...)     # tf1compat_init.estimator.v1.tpu's
    from tensorflow_estimator.python.estimator.canned import head   # ours too

Importing tf1compat_init changes nothing; :func:`install` does, and :func:`uninstall`
puts everything back. After it, ``tf.estimator`` and ``tf.compat.v2.estimator`` are
:mod:`tf1compat_init.estimator`, ``tf.compat.v1.estimator`` is
:mod:`tf1compat_init.estimator.v1`, ``import tensorflow_estimator`` works, and so do the
private module paths third-party code imports (``tensorflow_estimator.python.estimator.*``
and ``tensorflow.python.estimator.*``), each name one of the library's real objects. A
name or module that tensorflow-estimator 2.15 had and the library does not offer raises an
error naming it. ``tf1compat-init run SCRIPT`` runs a script with the alias installed.
"""

from __future__ import annotations

from ._install import install, installed, uninstall
from ._modules import NotProvidedError

__all__ = ["NotProvidedError", "install", "installed", "uninstall"]
