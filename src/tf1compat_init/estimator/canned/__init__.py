# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The canned estimators of ``tf.estimator`` (tensorflow-estimator 2.15) on TensorFlow >= 2.16.

Same constructors, defaults, variable names, optimizers and numbers as TF 2.15's, so a
``model_dir`` written by either resumes in the other. They build with feature columns
(``tf.feature_column``) and Keras 2 layers and legacy optimizers (``tf_keras`` on
TensorFlow >= 2.16), imported when an estimator is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:  # defined lazily by __getattr__ below
    from ._baseline import BaselineClassifier, BaselineEstimator, BaselineRegressor
    from ._dnn import DNNClassifier, DNNEstimator, DNNRegressor
    from ._dnn_linear import (
        DNNLinearCombinedClassifier,
        DNNLinearCombinedEstimator,
        DNNLinearCombinedRegressor,
    )
    from ._linear import LinearClassifier, LinearEstimator, LinearRegressor
    from ._parsing import classifier_parse_example_spec, regressor_parse_example_spec

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
    "LinearClassifier": "_linear",
    "LinearEstimator": "_linear",
    "LinearRegressor": "_linear",
    "classifier_parse_example_spec": "_parsing",
    "regressor_parse_example_spec": "_parsing",
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
    "LinearClassifier",
    "LinearEstimator",
    "LinearRegressor",
    "classifier_parse_example_spec",
    "regressor_parse_example_spec",
]


__getattr__ = lazy_getattr(__name__, LAZY, globals())
