import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Subprocesses started by tests (CLI runs, tf_keras runs, cluster workers) import this
# checkout's package, not whatever is installed.
SRC = str(Path(__file__).resolve().parents[1] / "src")
os.environ["PYTHONPATH"] = os.pathsep.join(
    [SRC] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SRC]
)

import sys  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import pytest  # noqa: E402

#: scripts/test.sh runs the tests marked ``pure`` first, with this set: TensorFlow and the
#: Kerases look uninstalled there (library code takes its no-TensorFlow path, and
#: ``importlib.util.find_spec`` says None), so a pure test that reaches for them fails at once.
PURE_LEG = os.environ.get("TF1COMPAT_PURE_LEG") == "1"
HEAVY = ("tensorflow", "tensorflow_estimator", "keras", "tf_keras", "keras_hub")
BLOCKED = "None in sys.modules"  # how Python words an import of a module set to None
if PURE_LEG:
    for _name in HEAVY:
        sys.modules[_name] = None

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


def pytest_collection_modifyitems(config, items):
    if PURE_LEG:
        return
    for item in items:
        # A test that needs a TensorFlow leg is not pure, whatever its module says.
        if item.get_closest_marker("pure") and any(
            item.get_closest_marker(m) for m in ("tf215", "tf221", "tf_keras", "gpu")
        ):
            raise pytest.UsageError(f"{item.nodeid} is marked pure and needs TensorFlow")


def _holds_pure_tests(path: Path) -> bool:
    if path.is_dir():
        return any(_holds_pure_tests(p) for p in path.rglob("test_*.py"))
    return "mark.pure" in path.read_text()


def pytest_ignore_collect(collection_path, config):
    # The pure leg does not even import a test module without a pure test: most of them
    # import TensorFlow first thing and would only add skips.
    if PURE_LEG and collection_path.name != "conftest.py":
        if collection_path.is_dir() or collection_path.name.startswith("test_"):
            if not _holds_pure_tests(collection_path):
                return True
    return None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    # A module that skips itself for want of TensorFlow may not hold pure tests: in the pure
    # leg they would vanish without a word.
    if PURE_LEG and report.skipped and BLOCKED in str(report.longrepr):
        path = Path(str(collector.path))
        if path.suffix == ".py" and "mark.pure" in path.read_text():
            report.outcome = "failed"
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    # In the pure leg a pure test that skips for want of TensorFlow is a wrongly marked test.
    if PURE_LEG and report.skipped and item.get_closest_marker("pure"):
        if BLOCKED in str(report.longrepr):
            report.outcome = "failed"
    return report
