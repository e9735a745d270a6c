"""The tutorial's 784-256-10 MLP program with tf1compat_init.estimator.

On TF >= 2.16 the tutorial's ``tf.compat.v1.layers.dense`` needs tf_keras, so that run
happens in its own process with ``TF_USE_LEGACY_KERAS=1``; the Keras-3-safe variant
(``tf.compat.v1.get_variable``, same variable names) runs in-process on both legs.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

from support import estimator_tutorial as tutorial  # noqa: E402

TF_MINOR = int(tf.__version__.split(".")[1])
HAS_TF_KERAS = TF_MINOR >= 16 and __import__("importlib.util").util.find_spec("tf_keras")
LAYERS = ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]


def check_tutorial_run(facts):
    assert set(facts["first_loaded"]) >= set(LAYERS)  # the warm-start hook's report
    assert facts["warm_started"] == dict.fromkeys(LAYERS, True)  # ckpt-0 holds them
    assert facts["global_step_pretrained"] == 15
    assert facts["checkpoints"] == [0, 10, 20, 30]  # StopAtStepHook(last_step=20, then 30)
    assert facts["resumed_not_rewarmed"]
    assert facts["metrics"]["global_step"] == 30
    assert 0 < facts["metrics"]["loss"] < 2.3  # below chance (ln 10) after warm start
    assert facts["prediction_keys"] == ["classes", "probabilities"]
    assert facts["probabilities_sum"] == pytest.approx(1.0, abs=1e-5)
    assert facts["n_predictions"] == 4
    assert facts["logged_probabilities"] == 3  # LoggingTensorHook every 10 iterations


@pytest.mark.tf221
@pytest.mark.tf_keras
@pytest.mark.skipif(not HAS_TF_KERAS, reason="needs TF >= 2.16 with tf_keras installed")
def test_tutorial_with_compat_v1_layers_under_tf_keras(tmp_path):
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
    script = Path(tutorial.__file__)
    proc = subprocess.run(
        [sys.executable, str(script), "layers", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert facts["legacy_keras"] and facts["tf_version"] == tf.__version__
    check_tutorial_run(facts)
    # a tf_keras metric object in eval_metric_ops gives the same value as the v1 pair
    assert facts["metrics"]["keras_accuracy"] == pytest.approx(facts["metrics"]["accuracy"])


@pytest.mark.tf215
@pytest.mark.filterwarnings("ignore:`tf.layers.dense` is deprecated")
@pytest.mark.skipif(TF_MINOR >= 16, reason="tf.compat.v1.layers in-process needs Keras 2")
def test_tutorial_with_compat_v1_layers_on_tf215(tmp_path):
    facts = tutorial.run("layers", str(tmp_path))
    check_tutorial_run(facts)
    assert facts["metrics"]["keras_accuracy"] == pytest.approx(facts["metrics"]["accuracy"])


def test_tutorial_keras3_safe_model_fn_in_process(tmp_path):
    check_tutorial_run(tutorial.run("variables", str(tmp_path)))
