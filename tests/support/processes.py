"""Python code run in a fresh interpreter, with this checkout's package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def run_py(code: str, env: dict | None = None, path: list[str] | None = None) -> dict:
    """Runs ``code`` in a fresh interpreter; returns the JSON it printed last."""
    pythonpath = os.pathsep.join([*(path or []), SRC])
    environment = dict(os.environ, PYTHONPATH=pythonpath, TF_CPP_MIN_LOG_LEVEL="3", **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
