import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Subprocesses started by tests (CLI runs, tf_keras runs, cluster workers) import this
# checkout's package, not whatever is installed.
SRC = str(Path(__file__).resolve().parents[1] / "src")
os.environ["PYTHONPATH"] = os.pathsep.join(
    [SRC] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SRC]
)

from dataclasses import dataclass, field  # noqa: E402

import pytest  # noqa: E402

from tf1compat_init.reader import VariableInfo  # noqa: E402


@dataclass
class FakeCheckpoint:
    """A checkpoint listing for the pure planner: key -> (shape, dtype)."""

    spec: dict
    prefix: str = "/ckpt/model.ckpt-1"
    variables: dict = field(init=False)

    def __post_init__(self):
        self.variables = {k: VariableInfo(tuple(s), d) for k, (s, d) in self.spec.items()}


@pytest.fixture
def fake_checkpoint():
    return FakeCheckpoint
