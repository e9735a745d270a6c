# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf1compat_init.estimator.export``: the names of ``tf.estimator.export`` (TF 2.15).

Receivers and receiver-fn builders for ``Estimator.export_saved_model``, and the
``export_outputs`` classes a PREDICT ``EstimatorSpec`` names its signatures with.
"""

from __future__ import annotations

from ._export_output import (
    ClassificationOutput,
    ExportOutput,
    PredictOutput,
    RegressionOutput,
)
from ._export_supervised import EvalOutput
from ._receiver import (
    ServingInputReceiver,
    TensorServingInputReceiver,
    build_parsing_serving_input_receiver_fn,
    build_raw_serving_input_receiver_fn,
)

__all__ = [
    "ClassificationOutput",
    "EvalOutput",
    "ExportOutput",
    "PredictOutput",
    "RegressionOutput",
    "ServingInputReceiver",
    "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn",
    "build_raw_serving_input_receiver_fn",
]
