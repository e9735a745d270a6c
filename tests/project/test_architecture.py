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

#: The layers, by package (docs/engine.md draws them):
#: - the engine: ``tf1compat_init.engine.*`` and the engine's public packages beside it
#:   (``apply``, ``bundle``, ``transforms``, ``recipes``) and ``errors``;
#: - the front ends, each a module or a subpackage; ``alias`` is the opt-in
#:   ``tf.estimator`` alias (estimator.install) for code nobody may edit;
#: - the facade: the package root, and the old paths of moved engine modules (each one a
#:   module that stands for its engine module, see :func:`old_paths`).
ENGINE_PACKAGES = ("engine", "apply", "bundle", "transforms", "recipes", "errors")
FRONT_ENDS = ("v1", "keras", "estimator", "alias", "checkpoint", "migrate", "cli", "__main__")

#: The engine's subpackages that import no TensorFlow or Keras: everything in them is pure.
PURE_SUBPACKAGES = ("engine.basics", "engine.grammar", "engine.planning", "engine.reading")
#: Pure beyond those (and beyond the old paths of pure modules, which :func:`pure_modules`
#: adds): the facade, and what the CLI and the pure front-end parts need.
PURE_OTHERS = [
    NAME,
    f"{NAME}.engine",
    f"{NAME}.transforms",
    f"{NAME}.bundle",
    f"{NAME}.bundle.storage",
    f"{NAME}.bundle.remote",
    f"{NAME}.migrate",
    f"{NAME}.cli",
    f"{NAME}.recipes",
]


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _top(mod: str) -> str:
    return mod[len(NAME) + 1 :].split(".")[0] if mod != NAME else ""


def _is_engine(mod: str) -> bool:
    return _top(mod) in ENGINE_PACKAGES


def old_paths() -> dict[str, str]:
    """Old path -> engine module, for each module that stands for a moved engine module.

    Such a module does one thing: ``from .engine.x import y as _module`` and
    ``sys.modules[__name__] = _module``, so that the old path is the same module object.
    """
    found = {}
    for mod, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if "sys.modules[__name__]" not in ast.unparse(tree):
            continue
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        imports = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
        assert len(imports) == 1 and len(imports[0].names) == 1, mod
        found[mod] = f"{_from_target(imports[0], package)}.{imports[0].names[0].name}"
    return found


def pure_modules() -> list[str]:
    """Importing any of these must not import TensorFlow or a Keras (the one place that says so)."""
    mods = _modules()
    inside = sorted(m for m in mods if any(m.startswith(f"{NAME}.{s}") for s in PURE_SUBPACKAGES))
    olds = sorted(old for old, new in old_paths().items() if new in inside)
    return PURE_OTHERS + inside + olds


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
    assert f"{NAME}.engine.targets.keras_names" in graph[f"{NAME}.checkpoint"]
    # keras/__init__ names the callbacks under TYPE_CHECKING and imports them lazily.
    assert f"{NAME}.keras._callbacks" in graph[f"{NAME}.keras"]
    assert f"{NAME}.bundle.reader" in graph[f"{NAME}.engine.reading.reader"]


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _is_front_end(mod: str) -> bool:
    return _top(mod) in FRONT_ENDS


def test_the_engine_imports_no_front_end():
    graph = import_graph()
    assert any(m.startswith(f"{NAME}.engine.") for m in graph)
    bad = {m: sorted(filter(_is_front_end, graph[m])) for m in sorted(graph) if _is_engine(m)}
    assert not any(bad.values()), {m: b for m, b in bad.items() if b}


def test_old_paths_stand_for_engine_modules():
    olds = old_paths()
    assert f"{NAME}.policy" in olds and f"{NAME}.keras._names" in olds
    assert all(_is_engine(new) for new in olds.values()), olds
    graph = import_graph()
    # nothing in the package goes through an old path: they are for users, docs and tests
    users = {m: sorted(set(graph[m]) & set(olds)) for m in graph if m not in olds}
    assert not any(users.values()), {m: u for m, u in users.items() if u}


def test_every_module_is_engine_front_end_facade_or_old_path():
    """A new module has to say where it sits: in the engine's packages or a front end's."""
    olds = old_paths()
    stray = [
        m
        for m in _modules()
        if m != NAME and m not in olds and not _is_engine(m) and not _is_front_end(m)
    ]
    assert not stray, stray


def test_pure_subpackages_hold_the_old_pure_set():
    # every module the hand-kept PURE list named before the engine package is still pure
    before = {"mapping", "plan", "policy", "reader", "report", "view", "vocab", "dtype_names"}
    before |= {"shapes", "recipe_plan", "rules", "rule_kinds", "name_index", "preamble"}
    before |= {"_tfcompat"}
    olds = old_paths()
    pure = set(pure_modules())
    assert {olds[f"{NAME}.{m}"] for m in before} <= pure
    assert {f"{NAME}.{m}" for m in before} <= pure


def test_pure_modules_import_no_tensorflow():
    # One fresh process imports them in turn and says which one brought a heavy module in:
    # as strict as a process per module (the first offender shows), at a fraction of the cost.
    pure = pure_modules()
    code = (
        "import importlib, json, sys\n"
        "heavy = ('tensorflow', 'keras', 'tf_keras')\n"
        "brought = {}\n"
        f"for module in {pure!r}:\n"
        "    importlib.import_module(module)\n"
        "    brought[module] = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print(json.dumps(brought))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    brought = json.loads(out.stdout.strip().splitlines()[-1])
    assert list(brought) == pure
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
    """What a private name may be shared within: a subpackage (in the engine, one of its
    subpackages), or one top-level module."""
    parts = mod.split(".")
    if len(parts) > 2 and parts[1] == "engine":
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else ""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


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
    when ``other`` lies in another unit (see :func:`_unit`). Private *modules* are not
    names here: :func:`private_module_imports` checks those.
    """
    mods = _modules()
    found: set[tuple[str, str]] = set()
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: dict[str, str] = {}  # local name -> package module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(mod, path, node)
                if not (source == NAME or source.startswith(NAME + ".")):
                    continue
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    if sub in mods:
                        bound[alias.asname or alias.name] = sub
                    elif _private(alias.name) and _unit(source) != _unit(mod):
                        found.add((mod, f"{source}.{alias.name}"))
            elif isinstance(node, ast.Import):
                for alias in node.names:
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
    (pkg / "core.py").write_text(
        "from .sub._inner import _x, ok\nfrom .sub import _helper as h\nh._y()\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    assert private_imports() == {
        (f"{NAME}.core", f"{NAME}.sub._inner._x"),
        (f"{NAME}.core", f"{NAME}.sub._helper._y"),
    }


def test_no_private_name_is_imported_from_another_subpackage():
    found = private_imports()
    new = sorted(found - PRIVATE_IMPORTS_TO_REMOVE)
    assert not new, "private names imported across subpackages (make them public): " + str(new)
    stale = sorted(PRIVATE_IMPORTS_TO_REMOVE - found)
    assert not stale, f"fixed: drop these from PRIVATE_IMPORTS_TO_REMOVE: {stale}"


def private_module_imports() -> set[tuple[str, str]]:
    """``(importing module, private module)`` for each private module imported across units.

    A private module (``_name``) is its unit's own; what another unit needs from it is made
    public in its package or moved to the engine. Old paths (:func:`old_paths`) are not
    counted: they import nothing private and nothing in the package imports them.
    """
    graph = import_graph()
    olds = old_paths()
    found = set()
    for mod, targets in graph.items():
        if mod in olds:
            continue
        for target in targets:
            leaf = target.rpartition(".")[2]
            if _private(leaf) and _unit(target) != _unit(mod):
                found.add((mod, target))
    return found


def test_no_private_module_is_imported_from_another_subpackage():
    found = sorted(private_module_imports())
    assert not found, "private modules imported across subpackages (make them public): " + str(
        found
    )


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
    from tf1compat_init.keras._names import KerasModelError

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
