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
    f"{NAME}._initializers",
    f"{NAME}._gc",
    f"{NAME}._tfcompat",
    f"{NAME}.apply",
    f"{NAME}.apply._apply_plan",
    f"{NAME}.apply._assigner",
    f"{NAME}.apply._batch",
    f"{NAME}.apply._check",
    f"{NAME}.apply._fastpath",
    f"{NAME}.apply._job",
    f"{NAME}.apply._routed",
    f"{NAME}.apply._stream",
    f"{NAME}.errors",
    f"{NAME}.mapping",
    f"{NAME}.plan",
    f"{NAME}.policy",
    f"{NAME}.preamble",
    f"{NAME}.reader",
    f"{NAME}.report",
    f"{NAME}.transforms",
    f"{NAME}.transforms.base",
    f"{NAME}.transforms.steps",
    f"{NAME}.transforms.pipeline",
    f"{NAME}.transforms.parse",
    f"{NAME}.dtype_names",
    f"{NAME}.shapes",
    f"{NAME}.vocab_graph",
    f"{NAME}.recipe_plan",
    f"{NAME}.rules",
    f"{NAME}.rule_kinds",
    f"{NAME}.name_index",
    f"{NAME}.variables",
    f"{NAME}.view",
    f"{NAME}.vocab",
    f"{NAME}.keras_names",
    f"{NAME}.tensor_bytes",
    # the recipe registry, and the library's recipes: data on the transforms API
    f"{NAME}.recipes",
    f"{NAME}.recipes.registry",
    f"{NAME}.recipes.recipe",
    f"{NAME}.recipes.builtin",
    f"{NAME}.recipes._common",
    f"{NAME}.recipes.bert",
    f"{NAME}.recipes.slim_resnet",
}
#: Front ends, each a module or a subpackage; everything else is the engine or ``bundle``.
#: ``alias`` is the opt-in ``tf.estimator`` alias (estimator.install) for code nobody may edit.
FRONT_ENDS = ("v1", "keras", "estimator", "alias", "checkpoint", "migrate", "cli", "__main__")

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
    f"{NAME}.dtype_names",
    f"{NAME}.shapes",
    f"{NAME}.recipe_plan",
    f"{NAME}.rules",
    f"{NAME}.rule_kinds",
    f"{NAME}.name_index",
    f"{NAME}.preamble",
    f"{NAME}._tfcompat",
    f"{NAME}.keras_names",
    f"{NAME}.tensor_bytes",
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


def _from_target(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` in ``package`` imports from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


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
                target = _from_target(node, package)
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
    assert f"{NAME}.keras_names" in graph[f"{NAME}.checkpoint"]
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


def test_other_modules_use_only_the_public_names_of_apply():
    """``tf1compat_init.apply``'s modules are private: the rest of the package imports
    ``apply_plan`` (and whatever else it exports) from the package itself."""
    apply = f"{NAME}.apply"
    bad = []
    for mod, path in sorted(_modules().items()):
        if mod == apply or mod.startswith(apply + "."):
            continue
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                bad += [(mod, a.name) for a in node.names if a.name.startswith(apply + ".")]
            elif isinstance(node, ast.ImportFrom):
                target = _from_target(node, package)
                names = [a.name for a in node.names]
                if target == NAME:  # from . import apply: a module, which is fine
                    continue
                if target.startswith(apply + "."):
                    bad.append((mod, target))
                elif target == apply:
                    bad += [(mod, f"{target}.{n}") for n in names if n.startswith("_")]
    assert not bad, bad


# -- private names stay inside their subpackage --------------------------------------------


def _unit(mod: str) -> str:
    """What a private name may be shared within: a subpackage, or one top-level module."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_module_owner(module: str) -> str | None:
    """The package a private module belongs to: only modules inside it may import it.

    A private module inside a top-level package belongs to that package, subpackages and
    all (``tf1compat_init.estimator.head._keys`` to ``tf1compat_init.estimator``, which the
    v1 heads may share); one of the package root (``tf1compat_init._gc``) to the whole
    library. None for a public module.
    """
    parts = module.split(".")
    for i in range(1, len(parts)):
        if _private(parts[i]):
            return ".".join(parts[: min(i, 2)])
    return None


def _resolve(mod: str, path: pathlib.Path, node: ast.ImportFrom) -> str:
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def private_imports() -> set[tuple[str, str]]:
    """``(importing module, "source.name")`` for each private name taken across units.

    Counted: ``from other import _name`` and ``other._name`` where ``other`` is a package
    module imported under that name (``from .. import mapping``, ``import x.y as other``),
    when ``other`` lies in another unit (see :func:`_unit`); and any import of a private
    *module* from outside the package that holds it (``from ..keras._names import x`` in
    ``checkpoint.py``; see :func:`_private_module_owner`).
    """
    mods = _modules()
    found: set[tuple[str, str]] = set()

    def check_module(mod: str, target: str) -> None:
        owner = _private_module_owner(target)
        if owner and not (mod == owner or mod.startswith(owner + ".")):
            found.add((mod, target))

    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: dict[str, str] = {}  # local name -> package module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(mod, path, node)
                if not (source == NAME or source.startswith(NAME + ".")):
                    continue
                check_module(mod, source)
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    if sub in mods:
                        bound[alias.asname or alias.name] = sub
                        check_module(mod, sub)
                    elif _private(alias.name) and _unit(source) != _unit(mod):
                        found.add((mod, f"{source}.{alias.name}"))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(NAME + "."):
                        check_module(mod, alias.name)
                    if alias.asname and alias.name in mods:
                        bound[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _private(node.attr)
                and _unit(bound[node.value.id]) != _unit(mod)
            ):
                found.add((mod, f"{bound[node.value.id]}.{node.attr}"))
    return found


#: Private names still taken across units (none left: a new one must be made public instead).
PRIVATE_IMPORTS_TO_REMOVE: set[tuple[str, str]] = set()


def test_private_imports_sees_both_forms(tmp_path, monkeypatch):
    pkg = tmp_path / NAME
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "_inner.py").write_text("from . import _helper\n_x = 1\n")
    (pkg / "sub" / "_helper.py").write_text("from ._inner import _x\n")
    (pkg / "sub" / "deep").mkdir()
    (pkg / "sub" / "deep" / "__init__.py").write_text("from .._inner import ok\n")  # inside sub
    (pkg / "_root.py").write_text("")  # the root's private module: the whole library's
    (pkg / "other.py").write_text("from ._root import x\nimport tf1compat_init.sub._helper\n")
    (pkg / "core.py").write_text(
        "from .sub._inner import _x, ok\nfrom .sub import _helper as h\nh._y()\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    assert private_imports() == {
        (f"{NAME}.core", f"{NAME}.sub._inner._x"),
        (f"{NAME}.core", f"{NAME}.sub._helper._y"),
        (f"{NAME}.core", f"{NAME}.sub._inner"),  # private modules of another package
        (f"{NAME}.core", f"{NAME}.sub._helper"),
        (f"{NAME}.other", f"{NAME}.sub._helper"),
    }


def test_no_private_name_is_imported_from_another_subpackage():
    found = private_imports()
    new = sorted(found - PRIVATE_IMPORTS_TO_REMOVE)
    assert not new, "private names imported across subpackages (make them public): " + str(new)
    stale = sorted(PRIVATE_IMPORTS_TO_REMOVE - found)
    assert not stale, f"fixed: drop these from PRIVATE_IMPORTS_TO_REMOVE: {stale}"


# -- errors live in errors.py ----------------------------------------------------------------

#: Error classes defined outside errors.py (none left: a new one goes into errors.py).
ERRORS_ELSEWHERE_TO_REMOVE: set[str] = set()


def test_the_librarys_errors_are_defined_in_errors_py():
    """A subclass of one of errors.py's classes is defined there (and re-exported)."""
    mods = _modules()
    tree = ast.parse(mods[f"{NAME}.errors"].read_text(encoding="utf-8"))
    ours = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    elsewhere = set()
    for mod, path in mods.items():
        if mod == f"{NAME}.errors":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).rpartition(".")[2] for b in node.bases}
                if bases & ours:
                    elsewhere.add(f"{mod}.{node.name}")
    assert elsewhere == ERRORS_ELSEWHERE_TO_REMOVE


def test_moved_errors_stay_importable_where_they_were():
    import tf1compat_init.errors as errors
    import tf1compat_init.migrate as migrate
    from tf1compat_init.bundle import storage

    assert migrate.MigrationLockedError is errors.MigrationLockedError
    assert storage.RemoteUnavailableError is errors.RemoteUnavailableError
    keras_init = (PACKAGE / "keras" / "__init__.py").read_text(encoding="utf-8")
    assert "KerasModelError" in keras_init  # importing tf1compat_init.keras needs a Keras
    from tf1compat_init.keras_names import KerasModelError

    assert KerasModelError is errors.KerasModelError


def test_front_ends_share_one_preamble():
    """Front ends resolve map and policy through preamble.prepare, never by hand."""
    by_hand = {}
    for mod, path in _modules().items():
        if not _is_front_end(mod):
            continue
        calls = {
            ast.unparse(node.func).rpartition(".")[2]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call)
        }
        if calls & {"resolve_policy", "recipe_map"}:
            by_hand[mod] = sorted(calls & {"resolve_policy", "recipe_map"})
    assert not by_hand, by_hand
