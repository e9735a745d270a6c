# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf.compat.v1.estimator.tpu`` (tensorflow-estimator 2.15) on CPU/GPU, for TF >= 2.16.

``TPUEstimator(use_tpu=False, ...)`` runs a TPUEstimator ``model_fn`` / ``input_fn`` as
TF 2.15 ran them without a TPU (BERT's ``run_classifier.py`` and friends do so on
CPU/GPU)::

    from tf1compat_init.estimator.v1 import tpu

    run_config = tpu.RunConfig(
        model_dir="out", tpu_config=tpu.TPUConfig(iterations_per_loop=100)
    )
    est = tpu.TPUEstimator(
        model_fn, config=run_config, use_tpu=False, train_batch_size=32
    )

``TPUEstimatorSpec``, ``RunConfig``, ``TPUConfig`` and ``InputPipelineConfig`` are TF's
(same fields, checks and messages). ``use_tpu=True`` raises ``NotImplementedError``: no
TPU runtime is provided. ``experimental.EmbeddingConfigSpec`` (TPU embeddings) is not
provided.
"""

from __future__ import annotations

from typing import Any

from ._config import InputPipelineConfig, RunConfig, TPUConfig
from ._estimator import TPUEstimator
from ._spec import TPUEstimatorSpec

__all__ = ["InputPipelineConfig", "RunConfig", "TPUConfig", "TPUEstimator", "TPUEstimatorSpec"]


def __getattr__(name: str) -> Any:
    if name == "experimental":
        raise AttributeError(
            "tf.compat.v1.estimator.tpu.experimental (EmbeddingConfigSpec, TPU embeddings) "
            "is not provided by tf1compat_init: it needs a TPU system. Embed with "
            "tf.feature_column.embedding_column in the model_fn instead."
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
