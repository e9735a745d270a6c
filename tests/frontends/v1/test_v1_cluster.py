"""Between-graph replication on a local cluster: one ps and two workers on 127.0.0.1.

The test starts the three tasks as subprocesses (``tests/support/v1_cluster_task.py``) on free
ports and kills them all in a ``finally``, whatever happens. It checks that the chief
warm-starts exactly once (a restarted chief resumes its checkpoint), and that the
non-chief worker never runs the initializers and sees the chief's values.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from support import SUPPORT
from support.ports import free_ports
from support.ports import task_logs as _logs

tf = pytest.importorskip("tensorflow")

from support.v1_helpers import save_checkpoint  # noqa: E402

TIMEOUT_S = 150  # hard upper bound; a healthy run takes about 15-40 s on 2 cores
W = [1.0, 2.0, 3.0]
B = [10.0, 20.0]


def test_chief_warm_starts_once_and_worker_sees_its_values(tmp_path):
    pretrained = save_checkpoint(
        str(tmp_path / "pretrained" / "model.ckpt"),
        {"pretrained/w": np.array(W, np.float32), "pretrained/b": np.array(B, np.float32)},
    )
    ps, w0, w1 = free_ports(3)
    sync = tmp_path / "sync"
    sync.mkdir()
    config = {
        "ps": [f"127.0.0.1:{ps}"],
        "worker": [f"127.0.0.1:{w0}", f"127.0.0.1:{w1}"],
        "pretrained": pretrained,
        "run_dir": str(tmp_path / "run"),
        "sync_dir": str(sync),
    }
    config_path = tmp_path / "cluster.json"
    config_path.write_text(json.dumps(config))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    procs: dict[str, subprocess.Popen] = {}
    logs: dict[str, Path] = {}
    try:
        for role in ("ps", "chief", "worker"):
            logs[role] = tmp_path / f"{role}.log"
            with open(logs[role], "w") as out:
                procs[role] = subprocess.Popen(
                    [
                        sys.executable,
                        str(SUPPORT / "v1_cluster_task.py"),
                        str(config_path),
                        role,
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
        end = time.monotonic() + TIMEOUT_S
        pending = {"chief", "worker"}
        while pending:  # fail as soon as either task fails, or at the deadline
            for role in sorted(pending):
                code = procs[role].poll()
                if code is not None:
                    assert code == 0, f"{role} exited with {code}:\n{_logs(logs)}"
                    pending.discard(role)
            if pending and time.monotonic() > end:
                pytest.fail(f"{sorted(pending)} did not finish in {TIMEOUT_S}s:\n{_logs(logs)}")
            time.sleep(0.1)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    chief = json.loads((sync / "result_chief.json").read_text())
    worker = json.loads((sync / "result_worker.json").read_text())
    # The chief's first session ran the overridden initializers: the pretrained values.
    assert chief["chief_start"]["w"] == W and chief["chief_start"]["b"] == B
    assert chief["planned"] == ["model/b", "model/w"]
    # The worker planned the same warm start but never ran it: it sees the chief's +10.
    plus10 = [x + 10 for x in W]
    assert worker["planned"] == ["model/b", "model/w"]
    assert worker["worker_start"]["w"] == plus10 and worker["worker_start"]["b"] == B
    # The worker's session did not re-initialize anything on the ps either.
    assert chief["chief_after_worker"]["w"] == plus10
    assert chief["chief_after_worker"]["counter"] == 1.0
    # A restarted chief restores its own checkpoint (step 1): no second warm start.
    assert chief["chief_resumed"]["step"] == 1 and chief["chief_resumed"]["w"] == plus10
