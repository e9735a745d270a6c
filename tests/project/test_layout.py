"""The tests mirror the source tree (docs/development.md, "Where a test goes").

A module of the engine or of the bundle format has its own test module at the mirrored path;
every test folder is a package, so file names may repeat across folders; helpers live in
``tests/support/`` only, and no test module imports another.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tf1compat_init"
TESTS = ROOT / "tests"


def _modules(package: Path) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("package", ["engine", "bundle"])
def test_every_module_has_its_test_module(package):
    missing = []
    for module in _modules(SRC / package):
        rel = module.relative_to(SRC)
        expected = TESTS / rel.parent / f"test_{rel.stem}.py"
        if not expected.exists():
            missing.append(f"{rel} -> {expected.relative_to(ROOT)}")
    assert not missing, "modules without a test module:\n" + "\n".join(missing)


def test_every_test_folder_is_a_package():
    folders = {p.parent for p in TESTS.rglob("*.py") if "golden" not in p.parts}
    folders.discard(TESTS)
    lacking = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists())
    assert not lacking, f"test folders without __init__.py: {lacking}"


def test_helpers_live_in_support_only():
    stray = sorted(
        str(p.relative_to(ROOT))
        for p in TESTS.rglob("*.py")
        if not p.name.startswith("test_")
        and p.name not in ("__init__.py", "conftest.py")
        and p.parent != TESTS / "support"
    )
    assert not stray, f"helpers outside tests/support/: {stray}"


def test_no_test_module_imports_another():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n.rpartition(".")[2].startswith("test_") for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, (
        f"imports of test modules (move the helper to tests/support/): {offenders}"
    )
