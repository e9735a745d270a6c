"""Differential: fine-tuning Google's BERT code, tf.estimator on TF 2.15 against ours on TF 2.21.

The model is bert-tensorflow's own code, unmodified (``modeling.BertModel``,
``modeling.get_assignment_map_from_checkpoint``, ``optimization.create_optimizer`` with
``AdamWeightDecayOptimizer``, ``run_classifier.input_fn_builder``), in a ``model_fn``
written as ``run_classifier.model_fn_builder`` with ``init_from_checkpoint`` inside it; see
tests/support/bert_finetune.py (and its one shim, ``tensorflow.contrib.layers.layer_norm``).
A small BERT (2 layers, hidden 32, 4 heads, vocabulary 100, sequences of 16) is
fine-tuned from a pretraining checkpoint for 6 steps in two ``train`` calls (the second
resumes from ``model.ckpt-3``), then evaluated (``tf.metrics`` as BERT's ``metric_fn``)
and asked for predictions. Dropout is on, as in BERT (0.1).

How the two legs meet. CI runs TF 2.15 and TF 2.21 in separate venvs and processes, and
the real ``tf.estimator`` exists only on 2.15. So:

- TF 2.15 leg: the real ``tf.estimator`` + ``tf.compat.v1.train.init_from_checkpoint``
  and ours (``tf1compat_init.estimator`` + ``tf1compat_init.v1.init_from_checkpoint``)
  run in this process and must agree bit for bit; and the real one must reproduce the
  committed golden file tests/golden/bert_finetune_tf215.json (written by
  ``python tests/support/bert_finetune.py --golden`` on TF 2.15), so every CI run proves the
  golden file is what the real ``tf.estimator`` produces, not a stale record.
- TF 2.21 leg: ours runs in a subprocess under ``TF_USE_LEGACY_KERAS=1`` (BERT's pooler
  is a ``tf.layers.dense``, which Keras 3 refuses) and must match the golden file; in the
  same process our Estimator with TF 2.21's own ``tf.compat.v1.train.init_from_checkpoint``
  must give the same bits as with ours (the warm start, differential on TF 2.21 too).

A golden file rather than the 2.21 leg spawning ``.venvs/tf215/bin/python``: the 2.21
leg stays runnable where only TF 2.21 is installed (a user's checkout, a one-leg CI job),
it does not pay a second TensorFlow start, and the 2.15 leg's re-derivation keeps the
file honest.

Tolerance. Same process, same TensorFlow: exact equality (measured: identical bits).
Against the golden file: ``rtol=1e-6``, about 16 float32 ulps. Measured on the machine
that wrote it: TF 2.21 + ours gives the same loss bits at all 6 steps and the same
metrics; the probabilities differ by at most 1 ulp (1.1e-7 relative) because TF 2.21's
CPU ``Softmax`` kernel rounds differently (in isolation on 64x3 logits: 1 ulp, with
oneDNN on or off; ``LogSoftmax``, which the loss uses, is unchanged). Another CPU may run
other kernels: with oneDNN off (TF_ENABLE_ONEDNN_OPTS=0, other matmul kernels) the losses
keep their bits and the probabilities move by up to 3 ulps (2.9e-7 relative); with an
earlier data order of this test it moved one loss by 1 ulp (6.7e-8). 1e-6 leaves room
for that and still catches the smallest wrong behaviour measured: without
AdamWeightDecay's weight decay the losses move by 3.2e-6 and 6.9e-6 (steps 3 and 5);
with other dropout masks and shuffle order by up to 0.15; without the warm start by up
to 0.05.

Determinism. Dropout masks, the input's shuffle order and the classifier head's initial
values come from op-level seeds: ``RunConfig(tf_random_seed=...)`` plus a per-graph
counter of the unseeded random ops created so far (``random_seed.get_seed``, the same in
TF 2.15 and 2.21). So the runs agree when they create the same random ops in the same
order; ops that draw nothing (the restore ops of either ``init_from_checkpoint``, the
runner's own) do not shift them (checked: leaving out the runner's cached global-step
read changes no bit here).
Sessions use one thread per op (``intra_op_parallelism_threads=1``) so that reductions
sum in the same order on machines with other core counts.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "bert_finetune_tf215.json"
RTOL = 1e-6
# Where the process ran, not what it computed.
ENV_KEYS = {"tf_version", "has_tf_estimator", "legacy_keras"}
FLOAT_KEYS = {"losses", "metrics", "probabilities"}


def golden() -> dict:
    return json.loads(GOLDEN.read_text())


def assert_same_run(mine: dict, ref: dict, rtol: float) -> None:
    """Everything equal, floats (losses, metrics, probabilities) within ``rtol``."""
    assert set(mine) == set(ref)
    for key in set(ref) - ENV_KEYS - FLOAT_KEYS:
        assert mine[key] == ref[key], key
    assert [[s for s, _ in c] for c in mine["losses"]] == [[s for s, _ in c] for c in ref["losses"]]
    np.testing.assert_allclose(
        [v for c in mine["losses"] for _, v in c],
        [v for c in ref["losses"] for _, v in c],
        rtol=rtol,
        atol=0,
        err_msg="loss per step",
    )
    assert mine["metrics"].keys() == ref["metrics"].keys()
    for name, value in ref["metrics"].items():
        np.testing.assert_allclose(mine["metrics"][name], value, rtol=rtol, atol=0, err_msg=name)
    np.testing.assert_allclose(mine["probabilities"], ref["probabilities"], rtol=rtol, atol=0)


def assert_is_bert_fine_tuning(run: dict) -> None:
    """What makes the run a BERT fine-tuning, so that agreeing on it means something."""
    assert [[s for s, _ in c] for c in run["losses"]] == [[0, 1, 2], [3, 4, 5]]
    losses = [v for c in run["losses"] for _, v in c]
    assert len(set(losses)) == 6 and all(0.5 < v < 2.0 for v in losses)
    variables, pretrained = set(run["variables"]), set(run["pretrained_keys"])
    bert = sorted(
        v for v in variables if v.startswith("bert/") and not v.endswith(("adam_m", "adam_v"))
    )
    assert len(bert) == 39
    # The map holds every bert/ variable, not the pretraining heads nor global_step, and
    # the model_fn made it in each of its 4 calls (train twice, evaluate, predict).
    maps = run["assignment_maps"]
    assert {mode: len(m) for mode, m in maps.items()} == {"train": 2, "eval": 1, "infer": 1}
    assert all(m == bert for ms in maps.values() for m in ms)
    assert pretrained - set(bert) == {
        "cls/predictions/output_bias",
        "cls/seq_relationship/output_weights",
        "global_step",
    }
    # model.ckpt-0 holds the warm-started values; the new head is not from the checkpoint.
    assert run["warm_started_in_ckpt0"] == bert
    assert {"output_weights", "output_bias", "global_step"} <= variables
    # AdamWeightDecayOptimizer's slots are saved and resumed, not warm-started.
    trainable = bert + ["output_bias", "output_weights"]
    assert variables == set(trainable) | {f"{v}/adam_{s}" for v in trainable for s in "mv"} | {
        "global_step"
    }
    assert run["metrics"]["global_step"] == 6
    assert 0 <= run["metrics"]["eval_accuracy"] <= 1
    # BERT's metric_fn mean over examples = the Estimator's mean over equal batches
    assert run["metrics"]["eval_loss"] == pytest.approx(run["metrics"]["loss"], rel=1e-6)
    np.testing.assert_allclose(np.sum(run["probabilities"], axis=1), 1.0, rtol=1e-6)


def test_golden_file_is_a_bert_fine_tuning_by_tf_estimator():
    run = golden()
    assert run["tf_version"].startswith("2.15") and run["has_tf_estimator"]
    assert_is_bert_fine_tuning(run)


# -- TF 2.15 leg: the real tf.estimator, here ------------------------------------------


@pytest.fixture(scope="module")
def tf215_runs(tmp_path_factory):
    from support import bert_finetune

    root = tmp_path_factory.mktemp("bert")
    return {lib: bert_finetune.run(lib, str(root / lib)) for lib in ("real", "ours")}


@pytest.mark.tf215
@pytest.mark.skipif(not hasattr(tf, "estimator"), reason="needs the real tf.estimator")
def test_ours_equals_tf_estimator_bit_for_bit_on_tf215(tf215_runs):
    real, ours = tf215_runs["real"], tf215_runs["ours"]
    assert_is_bert_fine_tuning(real)
    assert ours == real


@pytest.mark.tf215
@pytest.mark.skipif(not hasattr(tf, "estimator"), reason="needs the real tf.estimator")
def test_tf_estimator_reproduces_the_golden_file(tf215_runs):
    real = tf215_runs["real"]
    assert real["tf_version"] == golden()["tf_version"]
    assert_same_run(real, golden(), RTOL)


# -- TF 2.21 leg: ours, in a tf_keras process ------------------------------------------


@pytest.mark.tf221
@pytest.mark.tf_keras
def test_ours_on_tf221_gives_tf_estimator_losses(tmp_path):
    out = tmp_path / "ours.json"
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1")
    script = str(ROOT / "tests" / "support" / "bert_finetune.py")
    proc = subprocess.run(
        [sys.executable, script, "ours,ours_tf_init", str(tmp_path), str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    runs = json.loads(out.read_text())
    ours = runs["ours"]
    assert ours["legacy_keras"] and not ours["has_tf_estimator"]
    assert int(ours["tf_version"].split(".")[1]) >= 16
    assert_is_bert_fine_tuning(ours)
    assert_same_run(ours, golden(), RTOL)
    # TF 2.21's own init_from_checkpoint under our Estimator, in the same process: the
    # same bits (the warm start itself, differential on TF 2.21).
    assert runs["ours_tf_init"] == ours
