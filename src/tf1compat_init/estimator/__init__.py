# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""An Estimator-compatible runner for TensorFlow >= 2.16, where ``tf.estimator`` is gone.

Code written for ``tf.estimator`` runs after changing the import::

    from tf1compat_init.estimator import Estimator, EstimatorSpec, ModeKeys, RunConfig

It runs the ``model_fn`` in graph mode with ``tf.compat.v1`` (a fresh ``tf.Graph`` per
``train`` / ``evaluate`` / ``predict`` call, ``MonitoredTrainingSession``, ``Saver``
checkpoints ``model.ckpt-<step>`` in ``model_dir``, loss and ``global_step/sec``
summaries), with the semantics of tensorflow_estimator 2.15 and its error messages
word for word (our advice follows them). Warm starts go through
:func:`tf1compat_init.v1.warm_start`. Nothing is patched into ``tf``; where the real
``tf.estimator`` exists this runner works beside it.

``export_saved_model`` (with ``estimator.export``'s receivers and output classes) and
``train_and_evaluate`` (``TrainSpec``, ``EvalSpec``, ``LatestExporter``,
``BestExporter``, ``FinalExporter``) work as in tf.estimator 2.15, locally and as the
tasks of a ``TF_CONFIG`` cluster.

The hook classes tf.estimator re-exported (``LoggingTensorHook``, ``StopAtStepHook``,
...) are here too, as the same ``tf.compat.v1.train`` objects. So are the canned
estimators (DNN, linear, wide-and-deep, baseline; ``experimental.RNN*`` and
``LinearSDCA``), the heads, ``add_metrics``, the ``*_parse_example_spec`` functions and the
early-stopping and in-memory evaluation hooks, built with Keras 2 (``tf_keras`` on
TensorFlow >= 2.16) and defined on first use; ``v1`` holds ``tf.compat.v1.estimator``'s
flavours. ``TF_CONFIG`` clusters run as tf.estimator ran them;
``RunConfig(train_distribute=..., eval_distribute=...)`` replicates in-graph on one
machine's devices (``MirroredStrategy`` and the other local strategies; multi-worker ones
raise ``NotImplementedError``). ``WarmStartSettings(var_name_to_vocab_info=...)`` remaps
vocabularies as TF does (see :func:`tf1compat_init.v1.warm_start`).

This module only re-exports. ``Estimator`` lives in ``_estimator`` (its ``train`` in
``_estimator_train``, ``evaluate`` / ``predict`` in ``_eval``, exports in ``_export``),
``train_and_evaluate`` in ``_train_and_evaluate``; the canned estimators and heads load on
first use from ``canned/`` and ``head/``.
"""

from __future__ import annotations

import tensorflow as tf

from ..alias import install, uninstall
from . import canned as _canned
from . import experimental, export, v1
from . import head as _head
from ._config import RunConfig, WarmStartSettings
from ._estimator import Estimator
from ._exporter import BestExporter, Exporter, FinalExporter, LatestExporter
from ._lazy import lazy_getattr
from ._spec import EstimatorSpec, ModeKeys
from ._train_and_evaluate import EvalSpec, TrainSpec, train_and_evaluate

__all__ = [
    "BaselineClassifier",
    "BaselineEstimator",
    "BaselineRegressor",
    "BestExporter",
    "BinaryClassHead",
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "DNNClassifier",
    "DNNEstimator",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor",
    "DNNRegressor",
    "Estimator",
    "EstimatorSpec",
    "EvalSpec",
    "Exporter",
    "FeedFnHook",
    "FinalExporter",
    "FinalOpsHook",
    "GlobalStepWaiterHook",
    "Head",
    "LatestExporter",
    "LinearClassifier",
    "LinearEstimator",
    "LinearRegressor",
    "LoggingTensorHook",
    "LogisticRegressionHead",
    "ModeKeys",
    "MultiClassHead",
    "MultiHead",
    "MultiLabelHead",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "PoissonRegressionHead",
    "ProfilerHook",
    "RegressionHead",
    "RunConfig",
    "SecondOrStepTimer",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "TrainSpec",
    "VocabInfo",
    "WarmStartSettings",
    "add_metrics",
    "classifier_parse_example_spec",
    "experimental",
    "export",
    "install",
    "regressor_parse_example_spec",
    "train_and_evaluate",
    "uninstall",
    "v1",
]

# tf.estimator re-exported these tf.compat.v1.train names; so do we (the same objects).
CheckpointSaverHook = tf.compat.v1.train.CheckpointSaverHook
CheckpointSaverListener = tf.compat.v1.train.CheckpointSaverListener
FeedFnHook = tf.compat.v1.train.FeedFnHook
FinalOpsHook = tf.compat.v1.train.FinalOpsHook
GlobalStepWaiterHook = tf.compat.v1.train.GlobalStepWaiterHook
LoggingTensorHook = tf.compat.v1.train.LoggingTensorHook
NanLossDuringTrainingError = tf.compat.v1.train.NanLossDuringTrainingError
NanTensorHook = tf.compat.v1.train.NanTensorHook
ProfilerHook = tf.compat.v1.train.ProfilerHook
SecondOrStepTimer = tf.compat.v1.train.SecondOrStepTimer
SessionRunArgs = tf.compat.v1.train.SessionRunArgs
SessionRunContext = tf.compat.v1.train.SessionRunContext
SessionRunHook = tf.compat.v1.train.SessionRunHook
SessionRunValues = tf.compat.v1.train.SessionRunValues
StepCounterHook = tf.compat.v1.train.StepCounterHook
StopAtStepHook = tf.compat.v1.train.StopAtStepHook
SummarySaverHook = tf.compat.v1.train.SummarySaverHook
VocabInfo = tf.compat.v1.train.VocabInfo


#: Names defined lazily (they import Keras 2): public name -> module, relative to this package.
_LAZY = {
    **{name: f"canned.{module}" for name, module in _canned.LAZY.items()},
    **{name: f"head.{module}" for name, module in _head.LAZY.items()},
    "add_metrics": "_extenders",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
