# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Heads: loss, metrics, predictions and export outputs on top of a model's logits.

``tf.estimator``'s ``Head`` classes (tensorflow-estimator 2.15), usable from any
``model_fn`` through ``head.create_estimator_spec(features, mode, logits, labels,
optimizer=..., trainable_variables=...)``, and used by the canned estimators. They build
with Keras 2 metrics and optimizers (``tf_keras`` on TensorFlow >= 2.16), imported when
a head is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:  # defined lazily by __getattr__ below
    from ._base import Head
    from ._binary import BinaryClassHead
    from ._multi_class import MultiClassHead
    from ._multi_head import MultiHead
    from ._multi_label import MultiLabelHead
    from ._regression import LogisticRegressionHead, PoissonRegressionHead, RegressionHead

#: public name -> the private module that defines it
LAZY = {
    "BinaryClassHead": "_binary",
    "Head": "_base",
    "LogisticRegressionHead": "_regression",
    "MultiClassHead": "_multi_class",
    "MultiHead": "_multi_head",
    "MultiLabelHead": "_multi_label",
    "PoissonRegressionHead": "_regression",
    "RegressionHead": "_regression",
}

__all__ = [
    "BinaryClassHead",
    "Head",
    "LogisticRegressionHead",
    "MultiClassHead",
    "MultiHead",
    "MultiLabelHead",
    "PoissonRegressionHead",
    "RegressionHead",
]


__getattr__ = lazy_getattr(__name__, LAZY, globals())
