# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The kinds of ``tf.feature_column`` v2 columns the linear models tell apart.

TensorFlow exports the dense base class and the transformation cache under
``tf.__internal__.feature_column``; the categorical base class only in its own module.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.python.feature_column import feature_column_v2 as _fc_v2

__all__ = ["CategoricalColumn", "DenseColumn", "FeatureColumn", "FeatureTransformationCache"]

FeatureColumn = tf.__internal__.feature_column.FeatureColumn
DenseColumn = tf.__internal__.feature_column.DenseColumn
FeatureTransformationCache = tf.__internal__.feature_column.FeatureTransformationCache


#: Not exported by name; building two columns to find their common base would log
#: TensorFlow >= 2.16's deprecation warning for each at import.
CategoricalColumn = _fc_v2.CategoricalColumn
