"""Runs one of bert-tensorflow 1.0.4's own scripts, unmodified, as ``__main__``.

    python tests/support/bert_launch.py MODULE [FLAGS...]                       # TF 2.15: the real one
    tf1compat-init run tests/support/bert_launch.py MODULE [FLAGS...]           # TF 2.21: ours

``MODULE`` is ``run_classifier``, ``run_pretraining``, ``run_squad`` or
``create_pretraining_data``. The shims here are the ones bert 1.0.4 needs on every TF 2.x,
TF 2.15 included, so they live in the test's launcher and not in the library:

- ``modeling`` does ``from tensorflow.contrib import layers``: a stand-in
  ``tensorflow.contrib`` whose ``layers`` is tf-slim's (the same ``layer_norm`` code);
- ``run_classifier`` / ``run_squad`` read ``shape[-1].value``: TF1 tensor shapes
  (``tf.compat.v1.disable_v2_tensorshape``);
- determinism for the comparison (not a compatibility shim): BERT's scripts build their
  ``RunConfig`` without a seed, so the launcher gives ``tpu.RunConfig`` a default
  ``tf_random_seed`` and one thread per op; both runs get the same.
"""

from __future__ import annotations

import os
import runpy
import sys
import types

SEED = 20241203


def contrib() -> None:
    """``tensorflow.contrib.layers`` as tf-slim's layers, for ``bert.modeling``."""
    import tf_slim

    stand_in = types.ModuleType("tensorflow.contrib")
    stand_in.layers = tf_slim.layers
    sys.modules["tensorflow.contrib"] = stand_in


def _shim() -> None:
    import tensorflow as tf

    contrib()
    tf.compat.v1.disable_v2_tensorshape()

    tpu = tf.compat.v1.estimator.tpu
    base = tpu.RunConfig

    class SeededRunConfig(base):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("tf_random_seed", SEED)
            kwargs.setdefault(
                "session_config",
                tf.compat.v1.ConfigProto(
                    intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
                ),
            )
            super().__init__(*args, **kwargs)

    tpu.RunConfig = SeededRunConfig


def main() -> None:
    module = sys.argv[1]
    sys.argv = [f"bert/{module}.py", *sys.argv[2:]]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _shim()
    runpy.run_module(f"bert.{module}", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
