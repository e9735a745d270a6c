"""bert-tensorflow 1.0.4's own ``run_classifier``, ``run_pretraining`` and ``run_squad``,
unmodified, with ``--use_tpu=False``: the way BERT is fine-tuned on CPU/GPU.

On TF 2.15 they run the real ``tf.compat.v1.estimator.tpu.TPUEstimator``; that run is the
golden file (``python tests/support/bert_scripts.py --golden``), and the TF 2.15 leg checks that it
reproduces it. On TF 2.21 the same scripts run through ``tf1compat-init run`` (which calls
``tf1compat_init.estimator.install()``): the same checkpoints (names), summaries, eval
results and predictions as the real TPUEstimator gave. Without the launcher they fail on
TF 2.21 exactly as users report. The launcher's shims (tests/support/bert_launch.py) are the ones
bert 1.0.4 needs on TF 2.15 too; they are the test's, not the library's.

Floats against the golden file: ``rtol=1e-5`` (TF 2.15 and 2.21 kernels differ by a few
float32 ulps, and 10 Adam steps through a 2-layer BERT add them up; tests/estimator/bert/test_bert_finetune.py
measures the same model at 1e-6 after 6 steps).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support import bert_scripts  # noqa: E402

RTOL = 1e-5


def golden() -> dict:
    return json.loads(bert_scripts.GOLDEN.read_text())


def run_scripts(tmp_path: Path, runner: list[str], env: dict | None = None) -> dict:
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, bert_scripts.__file__, str(tmp_path / "w"), str(out), *runner],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
    return json.loads(out.read_text())


def assert_same_outcome(mine: dict, ref: dict) -> None:
    for script in ("classifier", "pretraining", "squad"):
        a, b = mine[script], ref[script]
        assert a["checkpoint"] == b["checkpoint"], script
        assert a["variables"] == b["variables"], script
        assert a["files"] == b["files"], script
        assert a["summaries"] == b["summaries"], script
    for script in ("classifier", "pretraining"):
        ea, eb = mine[script]["eval"], ref[script]["eval"]
        assert ea.keys() == eb.keys()
        for key in eb:
            np.testing.assert_allclose(ea[key], eb[key], rtol=RTOL, err_msg=f"{script} {key}")
    np.testing.assert_allclose(
        mine["classifier"]["test_probabilities"],
        ref["classifier"]["test_probabilities"],
        rtol=RTOL,
    )
    assert mine["squad"]["predictions"] == ref["squad"]["predictions"]
    na, nb = mine["squad"]["nbest_probabilities"], ref["squad"]["nbest_probabilities"]
    assert na.keys() == nb.keys()
    for key in nb:
        np.testing.assert_allclose(na[key], nb[key], rtol=RTOL, err_msg=key)


def test_golden_file_is_the_real_tpu_estimator_on_tf215():
    g = golden()
    assert g["tf_version"].startswith("2.15")
    assert g["classifier"]["checkpoint"] == "model.ckpt-6"  # 24 examples / batch 4, 1 epoch
    assert g["pretraining"]["checkpoint"] == "model.ckpt-4"
    assert g["classifier"]["eval"]["global_step"] == 6
    assert {"eval_accuracy", "eval_loss", "loss"} <= set(g["classifier"]["eval"])
    assert {"masked_lm_accuracy", "next_sentence_loss"} <= set(g["pretraining"]["eval"])
    assert len(g["classifier"]["test_probabilities"]) == 8
    assert sorted(g["squad"]["predictions"]) == [f"dev-{i}" for i in range(4)]
    # TPUEstimator(use_tpu=False) logs examples/sec and global_step/sec, as TF 2.15 does.
    assert "examples/sec" in g["classifier"]["summaries"]


@pytest.mark.tf215
def test_real_tpu_estimator_reproduces_the_golden_file(tmp_path):
    mine = run_scripts(tmp_path, [sys.executable])
    assert mine["tf_version"] == golden()["tf_version"]
    assert_same_outcome(mine, golden())


def _tf221_env() -> dict:
    # bert's modeling uses tf.layers.dense: Keras 2 (tf_keras) on TF >= 2.16.
    return dict(os.environ, TF_USE_LEGACY_KERAS="1")


@pytest.mark.tf221
def test_bert_scripts_through_run_give_the_real_tpu_estimators_results(tmp_path):
    launcher = str(Path(sys.executable).parent / "tf1compat-init")
    mine = run_scripts(tmp_path, [launcher, "run"], env=_tf221_env())
    assert not mine["tf_version"].startswith("2.15")
    assert_same_outcome(mine, golden())


@pytest.mark.tf221
def test_bert_scripts_without_the_launcher_fail_on_tf221(tmp_path):
    bert_scripts.write_inputs(str(tmp_path))
    module_and_flags = bert_scripts.commands(str(tmp_path))["run_classifier"]
    proc = subprocess.run(
        [sys.executable, str(bert_scripts.LAUNCH), *module_and_flags],
        capture_output=True,
        text=True,
        env=_tf221_env(),
    )
    assert proc.returncode == 1
    assert "has no attribute 'estimator'" in proc.stderr
