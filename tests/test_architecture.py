"""The package's shape: no import cycles, the engine below the front ends, no TensorFlow.

The import graph is read from the source with ``ast``, so these tests need no TensorFlow and
see every import, including the lazy ones inside functions: a cycle that only closes at call
time is still a cycle. Counted: ``import tf1compat_init.x`` and ``from .x import y`` at any
depth (module level, function bodies, ``try`` blocks). Not counted: imports under
``if TYPE_CHECKING:`` (they never run), and the implicit import of a package's
``__init__`` when one of its submodules is imported. ``from .pkg import name`` counts as an
edge to the submodule ``pkg.name`` when that is a module, else to ``pkg`` itself.
"""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import pytest

import tf1compat_init

pytestmark = pytest.mark.pure

PACKAGE = pathlib.Path(tf1compat_init.__file__).parent
NAME = "tf1compat_init"

#: The engine: what every front end builds on. It must not import a front end.
ENGINE = {
    NAME,
    f"{NAME}._apply_routes",
    f"{NAME}._initializers",
    f"{NAME}._assign_batch",
    f"{NAME}._gc",
    f"{NAME}._jobs",
    f"{NAME}._tfcompat",
    f"{NAME}.apply",
    f"{NAME}.errors",
    f"{NAME}.mapping",
    f"{NAME}.plan",
    f"{NAME}.policy",
    f"{NAME}.reader",
    f"{NAME}.report",
    f"{NAME}.transforms",
    f"{NAME}.variables",
    f"{NAME}.view",
    f"{NAME}.vocab",
    # the library's recipes: data on the transforms API, imported by its registry
    f"{NAME}.recipes",
    f"{NAME}.recipes._common",
    f"{NAME}.recipes.bert",
    f"{NAME}.recipes.slim_resnet",
}
#: Front ends, each a module or a subpackage; everything else is the engine or ``bundle``.
FRONT_ENDS = ("v1", "keras", "estimator", "checkpoint", "migrate", "cli", "__main__")

#: Importing any of these must not import TensorFlow or a Keras (the one place that says so).
PURE = [
    NAME,
    f"{NAME}.mapping",
    f"{NAME}.plan",
    f"{NAME}.policy",
    f"{NAME}.reader",
    f"{NAME}.report",
    f"{NAME}.transforms",
    f"{NAME}.view",
    f"{NAME}.vocab",
    f"{NAME}.bundle",
    f"{NAME}.bundle.storage",
    f"{NAME}.bundle.remote",
    f"{NAME}.migrate",
    f"{NAME}.cli",
    f"{NAME}.recipes",
    f"{NAME}._tfcompat",
]


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skip.update(id(n) for n in ast.walk(stmt))
    return skip


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (see the module docstring for what counts)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                graph[mod].update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not (target == NAME or target.startswith(NAME + ".")):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    graph[mod].add(sub if sub in mods else target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or ``None``."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_lazy_imports_and_skips_type_checking_ones():
    graph = import_graph()
    # checkpoint imports the Keras names inside a function only.
    assert f"{NAME}.keras._names" in graph[f"{NAME}.checkpoint"]
    # keras/__init__ names the callbacks under TYPE_CHECKING and imports them lazily.
    assert f"{NAME}.keras._callbacks" in graph[f"{NAME}.keras"]
    assert f"{NAME}.bundle.reader" in graph[f"{NAME}.reader"]


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _is_front_end(mod: str) -> bool:
    rest = mod[len(NAME) + 1 :].split(".")[0]
    return rest in FRONT_ENDS


def test_the_engine_imports_no_front_end():
    graph = import_graph()
    assert ENGINE <= set(graph)
    engine_like = {m for m in graph if m in ENGINE or m.startswith(f"{NAME}.bundle")}
    bad = {m: sorted(filter(_is_front_end, graph[m])) for m in sorted(engine_like)}
    assert not any(bad.values()), {m: b for m, b in bad.items() if b}


def test_every_module_is_engine_bundle_or_front_end():
    """A new module has to say where it sits (add it to ENGINE or put it in a subpackage)."""
    stray = [
        m
        for m in _modules()
        if m not in ENGINE and not m.startswith(f"{NAME}.bundle") and not _is_front_end(m)
    ]
    assert not stray, stray


def test_pure_modules_import_no_tensorflow():
    # One fresh process imports them in turn and says which one brought a heavy module in:
    # as strict as a process per module (the first offender shows), at a fraction of the cost.
    code = (
        "import importlib, json, sys\n"
        "heavy = ('tensorflow', 'keras', 'tf_keras')\n"
        "brought = {}\n"
        f"for module in {PURE!r}:\n"
        "    importlib.import_module(module)\n"
        "    brought[module] = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print(json.dumps(brought))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    brought = json.loads(out.stdout.strip().splitlines()[-1])
    assert list(brought) == PURE
    assert not any(brought.values()), {m: b for m, b in brought.items() if b}


def test_the_package_root_imports_no_numpy():
    # `import tf1compat_init` stays cheap: numpy comes with the first transform, read or apply.
    code = (
        "import sys, tf1compat_init\n"
        "before = 'numpy' in sys.modules\n"
        "tf1compat_init.AssignmentMap({'old/': 'new/'})\n"
        "plain = 'numpy' in sys.modules\n"
        "tf1compat_init.AssignmentMap({'a': 'b | reshape()'})\n"
        "print(before, plain, 'numpy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["False", "False", "True"]
