# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf.compat.v1.estimator.inputs``: queue-fed ``input_fn``s from numpy arrays and DataFrames.

They run under :class:`tf1compat_init.estimator.Estimator`, whose
``MonitoredTrainingSession`` starts the queue runners.
"""

from __future__ import annotations

from ._numpy_io import numpy_input_fn
from ._pandas_io import pandas_input_fn

__all__ = ["numpy_input_fn", "pandas_input_fn"]
