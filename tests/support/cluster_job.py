"""A localhost TF_CONFIG cluster whose tasks run ``tests/support/estimator_cluster_task.py``.

Each task is its own process on a free port of 127.0.0.1; :class:`Job` starts, waits for,
kills and restarts them, and kills whatever is left when it closes. The tasks order
themselves with marker files in the job's directory (see the task script).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.ports import free_ports
from support.ports import task_logs as _logs

HERE = Path(__file__).resolve().parent
TASK = HERE / "estimator_cluster_task.py"


class Job:
    """The tasks of one cluster job (ps, chief, worker, evaluator) sharing ``model_dir``."""

    def __init__(self, directory: Path, model_dir: Path, roles=("ps", "chief", "worker")):
        self.directory = directory
        self.model_dir = model_dir
        directory.mkdir(parents=True, exist_ok=True)
        trainers = [r for r in roles if r != "evaluator"]
        ports = free_ports(len(trainers))
        self.cluster = {
            role: [f"127.0.0.1:{port}"] for role, port in zip(trainers, ports, strict=True)
        }
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}
        self._runs = 0

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def marker(self, name: str) -> Path:
        return self.directory / name

    def out(self, role: str) -> Path:
        return self.directory / f"{role}.json"

    def start(self, role: str, lib: str, *options: str) -> None:
        """Starts task ``role`` (``ps``, ``chief``, ``worker``, ``evaluator``) under ``lib``."""
        self._runs += 1
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        env["TF_CONFIG"] = json.dumps({"cluster": self.cluster, "task": {"type": role, "index": 0}})
        log = self.directory / f"{role}.{self._runs}.log"
        self.logs[f"{role} ({self._runs})"] = log
        command = [sys.executable, str(TASK), lib, str(self.model_dir), str(self.out(role))]
        command += ["--marker-dir", str(self.directory)]
        with open(log, "w") as f:
            self.procs[role] = subprocess.Popen(
                command + list(options), stdout=f, stderr=subprocess.STDOUT, env=env
            )

    def wait_for(self, name: str, timeout: float) -> None:
        """Waits for marker ``name``; fails (with the logs) when a trainer dies or at the end."""
        end = time.monotonic() + timeout
        while not self.marker(name).exists():
            for role, proc in self.procs.items():
                if role != "ps" and proc.poll() not in (None, 0):
                    pytest.fail(f"{role} exited with {proc.poll()}:\n{self.show_logs()}")
            if time.monotonic() > end:
                pytest.fail(f"no {name} after {timeout} s:\n{self.show_logs()}")
            time.sleep(0.1)

    def wait(self, role: str, timeout: float) -> int:
        """The exit status of ``role`` (fails, with the logs, if it runs past ``timeout``)."""
        try:
            return self.procs[role].wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{role} did not finish in {timeout} s:\n{self.show_logs()}")

    def finish(self, roles, timeout: float) -> None:
        """Waits until ``roles`` all exit 0, within ``timeout`` in all."""
        end = time.monotonic() + timeout
        for role in roles:
            code = self.wait(role, max(1.0, end - time.monotonic()))
            assert code == 0, f"{role} exited with {code}:\n{self.show_logs()}"

    def kill(self, role: str) -> None:
        self.procs[role].kill()
        self.procs[role].wait(timeout=30)

    def seen(self, role: str) -> dict:
        return json.loads(self.out(role).read_text())

    def show_logs(self) -> str:
        return _logs(self.logs)

    def run_trainers(self, lib: str, *options: str, timeout: float = 180) -> dict:
        """ps + chief + worker to the end; the worker starts once the chief's session exists.

        Starting the worker after the chief initialized the parameter server spares it
        the 30 s that a worker session waits before it checks again for a ready model.
        """
        self.start("ps", lib)
        self.start("chief", lib, *options)
        self.wait_for("chief_session", timeout)
        self.start("worker", lib, *options)
        self.finish(("chief", "worker"), timeout)
        return {role: self.seen(role) for role in ("chief", "worker")}
