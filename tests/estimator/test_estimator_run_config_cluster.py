"""RunConfig reads TF_CONFIG as tf.estimator 2.15 does: every case of ``support.tf_config_cases``.

The golden file holds tf.estimator 2.15's own RunConfig on each case (properties, or the
error and its text); the TF 2.15 leg checks tf.estimator still gives it, and both legs check
that ours gives the same. A parameter server that never answers is named after the timeout.
"""

from __future__ import annotations

import json

import pytest
from support.estimator_models import step_model_fn
from support.tf_config_cases import CASES, GOLDEN, observe

tf = pytest.importorskip("tensorflow")

from tf1compat_init import estimator as ours  # noqa: E402

GOLDEN_CASES = json.loads(GOLDEN.read_text())["cases"]


def test_golden_file_covers_every_case():
    assert set(GOLDEN_CASES) == set(CASES)


def _same(got: dict, want: dict) -> None:
    if want.get("error") == "JSONDecodeError":
        # ours keeps json's message first, then says what TF_CONFIG should look like
        assert got["error"] == "ValueError", got
        assert got["message"].startswith(want["message"]), got
        assert "TF_CONFIG" in got["message"] and "tf1compat_init:" in got["message"]
        return
    assert got == want


@pytest.mark.parametrize("case", sorted(CASES))
def test_ours_reads_tf_config_as_tf_estimator(case):
    _same(observe(ours.RunConfig, case), GOLDEN_CASES[case])


@pytest.mark.tf215
@pytest.mark.skipif(not hasattr(tf, "estimator"), reason="needs the real tf.estimator")
@pytest.mark.parametrize("case", sorted(CASES))
def test_tf_estimator_still_gives_the_golden_file(case):
    assert observe(tf.estimator.RunConfig, case) == GOLDEN_CASES[case]


def test_a_user_session_config_is_kept_in_a_cluster(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(CASES["worker_1"]))
    mine = tf.compat.v1.ConfigProto(log_device_placement=True)
    config = ours.RunConfig(session_config=mine)
    assert config.session_config is mine
    assert config.replace(keep_checkpoint_max=1).task_id == 1


def test_an_evaluator_config_evaluates_locally(monkeypatch):
    # tf.estimator takes the evaluator out of the training cluster: a local session.
    monkeypatch.setenv("TF_CONFIG", json.dumps(CASES["evaluator"]))
    config = ours.RunConfig()
    assert not config.cluster_spec and config.master == "" and not config.is_chief


def test_an_unreachable_parameter_server_is_named_after_the_timeout(monkeypatch, tmp_path):
    from support.ports import free_ports

    chief, dead_ps = free_ports(2)  # nothing listens on dead_ps
    cluster = {"chief": [f"127.0.0.1:{chief}"], "ps": [f"127.0.0.1:{dead_ps}"]}
    monkeypatch.setenv(
        "TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}})
    )
    config = ours.RunConfig(session_creation_timeout_secs=2)
    est = ours.Estimator(step_model_fn(ours), model_dir=str(tmp_path / "m"), config=config)
    with pytest.raises(
        ConnectionError,
        match=rf"parameter server 127.0.0.1:{dead_ps} .* within session_creation_timeout_secs=2",
    ):
        est.train(lambda: ({"x": [[1.0]]}, [[1.0]]), steps=1)
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())
