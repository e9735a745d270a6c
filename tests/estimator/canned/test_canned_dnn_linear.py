"""Differential: the DNNLinearCombined estimators, TF 2.15's against ours.

Scenarios (tests/support/canned_dnn_linear.py): a wide-and-deep binary classifier with the
default optimizers (Ftrl for the linear part, which then saves ``training/Ftrl/iter``,
and Adagrad for the DNN, counting in ``global_step``); a regressor with SGD, an Adam
factory, dropout, batch norm, a weight, ``mean`` sparse combiner and
``save_checkpoints_steps``; 3 string classes with a ``numeric_column`` weight and SUM
reduction; a linear-only classifier (Ftrl counts in ``global_step``, no ``iter``); a
DNN-only ``DNNLinearCombinedEstimator`` with a ``RegressionHead``; a warm start of both
parts and their slots from ``WarmStartSettings``. Records as tests/estimator/canned/test_canned_dnn.py:
every step's loss, checkpoint names, shapes and values, evaluate, predict, served answers.

- TF 2.15 leg: the real classifier reproduces the golden file, ours equals it in this
  process, and each resumes the other's ``model_dir``.
- TF 2.21 leg: ours matches tests/golden/dnn_linear_tf215.json at rtol 1e-4 (measured:
  1e-6 holds on the machine that wrote it), and TF 2.15's ``model_dir``
  (tests/golden/dnn_linear_tf215_model) resumes with every variable and trains on as
  TF 2.15 did.
"""

import json
import os

import pytest

tf = pytest.importorskip("tensorflow")

from support import canned_dnn_linear as combined  # noqa: E402

base = combined.base
GOLDEN_RTOL = base.GOLDEN_RTOL
assert_same = base.assert_same
FAST = ("classifier", "regressor", "warm")  # the others: -m slow


def golden() -> dict:
    return json.loads(combined.GOLDEN.read_text())


def run(name, lib_name, workdir):
    warm = os.path.join(workdir, f"{lib_name}_classifier") if name == "warm" else None
    return base.run_scenario(name, lib_name, workdir, warm, combined.make)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("dnn_linear"))


@pytest.fixture(scope="module")
def ours_classifier(workdir):
    return run("classifier", "ours", workdir)


def test_signatures_are_tf215s():
    from tf1compat_init import estimator

    ref = golden()["signatures"]
    assert {n: base.signature(getattr(estimator, n)) for n in combined.ESTIMATORS} == ref


def test_errors_are_tf215s(tmp_path):
    assert combined.errors("ours", str(tmp_path)) == golden()["errors"]


def test_classifier_matches_golden(ours_classifier):
    assert_same(ours_classifier, golden()["runs"]["classifier"], GOLDEN_RTOL)
    assert "training/Ftrl/iter" in ours_classifier["variables"]


@pytest.mark.tf221  # on TF 2.15 the real one is the reference: see the tests below
@pytest.mark.parametrize("name", [n for n in FAST if n != "classifier"])
def test_scenario_matches_golden(name, workdir, ours_classifier):
    assert_same(run(name, "ours", workdir), golden()["runs"][name], GOLDEN_RTOL)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in combined.SCENARIOS if n not in FAST])
def test_more_scenarios_match_golden(name, workdir):
    assert_same(run(name, "ours", workdir), golden()["runs"][name], GOLDEN_RTOL)


def test_tf215_model_dir_resumes_and_trains_on(tmp_path):
    mine = combined.resume("ours", str(combined.GOLDEN_MODEL), str(tmp_path))
    assert mine["variables"] == mine["variables_before"]
    assert_same(mine, golden()["resume"], GOLDEN_RTOL)


# -- TF 2.15: the real tf.estimator and ours in one process ------------------------------


@pytest.fixture(scope="module")
def real_classifier(workdir):
    return run("classifier", "real", workdir)


@pytest.mark.tf215
def test_golden_is_what_tf215_gives(real_classifier):
    assert_same(real_classifier, golden()["runs"]["classifier"], 1e-6)


@pytest.mark.tf215
def test_ours_equals_real(real_classifier, ours_classifier):
    assert_same(ours_classifier, real_classifier, 1e-6)


@pytest.mark.tf215
@pytest.mark.parametrize("writer,reader", [("ours", "real"), ("real", "ours")])
def test_each_resumes_the_others_model_dir(
    writer, reader, workdir, real_classifier, ours_classifier
):
    source = os.path.join(workdir, f"{writer}_classifier")
    crossed = combined.resume(reader, source, os.path.join(workdir, f"{writer}_to_{reader}"))
    same = combined.resume(writer, source, os.path.join(workdir, f"{writer}_to_{writer}"))
    assert crossed["variables"] == crossed["variables_before"]
    assert_same(crossed, same, 1e-6)
