# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf.compat.v1.estimator`` (tensorflow-estimator 2.15) on TensorFlow >= 2.16.

Use it where code said ``tf.compat.v1.estimator``::

    from tf1compat_init.estimator import v1 as estimator_v1

    est = estimator_v1.DNNClassifier([64, 32], feature_columns, model_dir="old_model_dir")

The v1 canned estimators are what ``tf.estimator.DNNClassifier`` (and the others) were
in TF 1.x, so most old ``model_dir`` s hold their checkpoints. They differ from the V2
ones in ``tf1compat_init.estimator``: ``tf.compat.v1.train`` optimizers (slots such as
``dnn/hiddenlayer_0/kernel/t_0/Adagrad``), v1 layers and ``input_layer`` /
``linear_model``, a ``SUM`` loss reduction, and v1 heads (``_Head``; the
``*Estimator(head=...)`` classes take one). Names, shapes and numbers match TF 2.15, so a
``model_dir`` written by either resumes in the other. ``inputs.numpy_input_fn`` and
``inputs.pandas_input_fn`` are the queue-fed input functions of ``tf.compat.v1``, and
``Estimator`` keeps TF 1.x's ``export_savedmodel``.
``tpu`` is ``tf.compat.v1.estimator.tpu``: ``TPUEstimator`` with ``use_tpu=False`` (its
CPU/GPU path), ``TPUEstimatorSpec``, ``RunConfig``, ``TPUConfig``, ``InputPipelineConfig``.
Every other name is the one of :mod:`tf1compat_init.estimator` (``RunConfig``,
``ModeKeys``, hooks, ``export``...).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # defined lazily by __getattr__ below
    from . import inputs, tpu
    from ._baseline import BaselineClassifier, BaselineEstimator, BaselineRegressor
    from ._dnn import DNNClassifier, DNNEstimator, DNNRegressor
    from ._dnn_linear import (
        DNNLinearCombinedClassifier,
        DNNLinearCombinedEstimator,
        DNNLinearCombinedRegressor,
    )
    from ._estimator import Estimator
    from ._linear import LinearClassifier, LinearEstimator, LinearRegressor

#: public name -> the private module that defines it
LAZY = {
    "BaselineClassifier": "_baseline",
    "BaselineEstimator": "_baseline",
    "BaselineRegressor": "_baseline",
    "DNNClassifier": "_dnn",
    "DNNEstimator": "_dnn",
    "DNNLinearCombinedClassifier": "_dnn_linear",
    "DNNLinearCombinedEstimator": "_dnn_linear",
    "DNNLinearCombinedRegressor": "_dnn_linear",
    "DNNRegressor": "_dnn",
    "Estimator": "_estimator",
    "LinearClassifier": "_linear",
    "LinearEstimator": "_linear",
    "LinearRegressor": "_linear",
}

__all__ = [
    "BaselineClassifier",
    "BaselineEstimator",
    "BaselineRegressor",
    "DNNClassifier",
    "DNNEstimator",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor",
    "DNNRegressor",
    "Estimator",
    "LinearClassifier",
    "LinearEstimator",
    "LinearRegressor",
    "inputs",
    "tpu",
]

_PARENT = __name__.rpartition(".")[0]


def __getattr__(name: str) -> Any:
    # The canned estimators import Keras 2 (tf_keras); nothing is loaded before first use.
    if name in LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{LAZY[name]}"), name)
    elif name in ("inputs", "tpu"):
        value = importlib.import_module(f"{__name__}.{name}")
    elif name.startswith("_"):  # private names (and submodules being imported) stay ours
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:
        # Everything else of tf.compat.v1.estimator is tf.estimator's.
        value = getattr(importlib.import_module(_PARENT), name)
    globals()[name] = value
    return value
