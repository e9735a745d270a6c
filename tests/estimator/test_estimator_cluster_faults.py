"""Tasks of a localhost TF_CONFIG cluster lost mid-job (1 ps + chief + worker, ours).

A parameter server killed while the trainers are between two steps: TensorFlow's
``MonitoredSession`` closes its session to recover, and that close waits for the lost task
without end (tf.estimator 2.15 hangs there; its only trace is an INFO log). Ours ends each
trainer after ``RunConfig.session_creation_timeout_secs`` with a critical log naming the
address and exit status ``LOST_PS_EXIT_CODE``. A worker killed mid-job and started again
joins the running job (it does not initialize anything) and the job ends at max_steps.
"""

from __future__ import annotations

import pytest
from support.cluster_job import Job

tf = pytest.importorskip("tensorflow")

from tf1compat_init.estimator import _cluster_run  # noqa: E402

TIMEOUT_S = 180  # hard bound per phase; a healthy phase takes about 10-30 s on 2 cores


def test_a_lost_parameter_server_ends_the_trainers_naming_its_address(tmp_path):
    with Job(tmp_path, tmp_path / "model") as job:
        # Both trainers stop after step 6 until the ps is gone, then take one more step.
        options = ("--max-steps", "40", "--timeout", "3", "--pause-at", "6:ps_killed")
        job.start("ps", "ours")
        job.start("chief", "ours", *options)
        job.wait_for("chief_session", TIMEOUT_S)
        job.start("worker", "ours", *options)
        job.wait_for("worker_stepped", TIMEOUT_S)
        for role in ("chief", "worker"):  # a trainer writes what it saw when it pauses
            job.wait_for(f"{role}.json", TIMEOUT_S)
        job.kill("ps")
        job.marker("ps_killed").write_text("")
        address = job.cluster["ps"][0]
        for role in ("chief", "worker"):
            code = job.wait(role, TIMEOUT_S)
            log = job.logs[f"{role} ({3 if role == 'worker' else 2})"].read_text()
            assert code == _cluster_run.LOST_PS_EXIT_CODE, job.show_logs()
            assert (
                f"the parameter server {address} (task ps of the TF_CONFIG cluster) stopped "
                "accepting connections" in log
            ), job.show_logs()
            assert "session_creation_timeout_secs=3" in log
        assert 6 <= job.seen("chief")["steps"][-1] < 40


def test_a_killed_worker_started_again_rejoins_and_the_job_ends_at_max_steps(tmp_path):
    with Job(tmp_path, tmp_path / "model") as job:
        job.start("ps", "ours")
        # The chief trains, and halfway waits for the second worker's first step.
        job.start("chief", "ours", "--chief-waits-for", "worker_again")
        job.wait_for("chief_session", TIMEOUT_S)
        job.start("worker", "ours", "--worker-hangs")  # hangs after its first step
        job.wait_for("worker_stepped", TIMEOUT_S)
        first = job.seen("worker")
        job.kill("worker")
        job.start("worker", "ours", "--worker-marker", "worker_again")
        job.finish(("chief", "worker"), TIMEOUT_S)
        chief, again = job.seen("chief"), job.seen("worker")
    assert first["steps"] and again["steps"]
    # The second worker joined the running job: its session saw the chief's progress and
    # trained values, not a fresh initialization.
    assert again["sessions"][0]["step"] > first["steps"][0]
    assert again["sessions"][0]["w"] != [0.0, 0.0, 0.0]
    assert chief["waited"] and "error" not in chief and "error" not in again
    reader = tf.train.load_checkpoint(str(tmp_path / "model"))
    assert int(reader.get_tensor("global_step")) >= 20
