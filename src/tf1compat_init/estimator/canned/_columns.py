"""The kinds of ``tf.feature_column`` v2 columns the linear models tell apart.

TensorFlow exports the dense base class and the transformation cache under
``tf.__internal__.feature_column``; the categorical base class it does not export by name.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["CategoricalColumn", "DenseColumn", "FeatureColumn", "FeatureTransformationCache"]

FeatureColumn = tf.__internal__.feature_column.FeatureColumn
DenseColumn = tf.__internal__.feature_column.DenseColumn
FeatureTransformationCache = tf.__internal__.feature_column.FeatureTransformationCache


def _categorical_column_type() -> type:
    # The nearest common base of two categorical columns (every public one derives from it).
    a = type(tf.feature_column.categorical_column_with_identity("a", 2))
    b = type(tf.feature_column.categorical_column_with_hash_bucket("b", 2))
    return next(k for k in a.__mro__ if k in b.__mro__ and "Categorical" in k.__name__)


CategoricalColumn = _categorical_column_type()
