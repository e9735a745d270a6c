"""optuna-integration 5.0.0's ``TensorFlowPruningHook``, unmodified, on TF 2.21 after install().

The hook subclasses ``tensorflow.estimator.SessionRunHook`` and imports
``tensorflow_estimator.python.estimator.early_stopping.read_eval_metrics`` at import time.
Without the alias, on TF 2.21, it silently gets ``object`` as its base and cannot be
created; after ``tf1compat_init.estimator.install()`` it is a real hook that reads the
Estimator's eval events and prunes the trial. Each case runs in a fresh process.
"""

from __future__ import annotations

import pytest
from support.processes import run_py

pytestmark = pytest.mark.tf221

SCRIPT = """
import json, sys
import tensorflow as tf
import tf1compat_init.estimator as E
if "install" in sys.argv:
    E.install()
import optuna
from optuna_integration import TensorFlowPruningHook
base = TensorFlowPruningHook.__mro__[1]
out = {"base": f"{base.__module__}.{base.__qualname__}"}
if "install" in sys.argv:
    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [2, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
        step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step)
        return E.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn():
        return tf.data.Dataset.from_tensors(({"x": [[1.0, 2.0]]}, [[1.0]])).repeat()

    def objective(trial):
        est = E.Estimator(model_fn, model_dir=sys.argv[2] + f"/{trial.number}")
        est.train(input_fn, steps=2)
        out["eval_loss"] = float(est.evaluate(input_fn, steps=1)["loss"])
        hook = TensorFlowPruningHook(trial, est, "loss", run_every_steps=1)
        est.train(input_fn, steps=3, hooks=[hook])
        return 1.0

    study = optuna.create_study(pruner=optuna.pruners.ThresholdPruner(upper=-1.0))
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    out.update(state=trial.state.name, reported=trial.intermediate_values)
print(json.dumps(out))
"""


def test_without_install_the_hook_silently_has_no_estimator_base():
    out = run_py(SCRIPT)
    assert out["base"] == "builtins.object"


def test_after_install_the_pruning_hook_reads_eval_metrics_and_prunes(tmp_path):
    code = f"import sys; sys.argv = ['x', 'install', {str(tmp_path)!r}]\n" + SCRIPT
    out = run_py(code)
    assert out["base"] == "tensorflow.python.training.session_run_hook.SessionRunHook"
    assert out["state"] == "PRUNED"
    # the value it reported is the eval loss the Estimator wrote at step 2
    assert out["reported"] == {"2": pytest.approx(out["eval_loss"])}
