# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The import hook behind :func:`install`, and what it changes in ``tensorflow``.

Three changes, each undone by :func:`uninstall`:

1. A finder first on ``sys.meta_path`` answers for the paths of :mod:`._modules`
   (``tensorflow.estimator``, ``tensorflow_estimator.*``, ``tensorflow.python.estimator.*``):
   it wins over a real tensorflow-estimator on ``sys.path`` (entries already imported are
   set aside, and put back by :func:`uninstall`).
2. ``tf.estimator``, ``tf.compat.v2.estimator`` and ``tf.compat.v1.estimator`` resolve
   through a module ``__getattr__`` on TensorFlow's API modules, so nothing of the
   estimator is imported before it is used.
3. If TensorFlow is not imported yet, the finder also wraps TensorFlow's own loader so
   that (2) happens right after ``import tensorflow``; ``install()`` never imports it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
import threading
import types
from typing import Any

from . import _modules

logger = logging.getLogger("tf1compat_init.alias")

_LOCK = threading.RLock()
#: The API modules whose ``estimator`` attribute is ours after install.
_API_MODULES = {
    "tensorflow": _modules.E,
    "tensorflow._api.v2.compat.v2": _modules.E,
    "tensorflow.compat.v2": _modules.E,
    "tensorflow._api.v2.compat.v1": _modules.V1,
    "tensorflow.compat.v1": _modules.V1,
}


class _State:
    def __init__(self) -> None:
        self.finder: _Finder | None = None
        self.set_aside: dict[str, types.ModuleType] = {}  # sys.modules entries replaced
        self.patched: dict[int, tuple[types.ModuleType, dict]] = {}  # id -> (module, saved)
        self.wrappers: dict[int, tuple[types.ModuleType, Any]] = {}  # id -> (wrapper, saved)


_STATE = _State()
_ABSENT = object()


def _is_private_name(fullname: str) -> bool:
    return (
        fullname == "tensorflow_estimator"
        or fullname.startswith("tensorflow_estimator.")
        or _modules.private_relative(fullname) is not None
        or _modules.whole_target(fullname) is not None
    )


class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _modules.make_module(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _PatchingLoader(importlib.abc.Loader):
    """TensorFlow's own loader, then the ``estimator`` attributes patched in."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        with _LOCK:
            if _STATE.finder is not None:
                _patch_tensorflow()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname in _API_MODULES:  # `import tensorflow.compat.v1` after install()
            return self._tensorflow_spec(fullname, path, target)
        if not _is_private_name(fullname):
            return None
        if not _modules.is_known(fullname):
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: tf1compat_init stands in for "
                f"tensorflow-estimator but does not provide this module (what it provides: "
                f"{_modules.DOCS})",
                name=fullname,
            )
        package = _modules.whole_target(fullname) is None and (
            _modules.private_relative(fullname) in _modules.packages()
            or fullname in ("tensorflow_estimator", "tensorflow_estimator.python")
        )
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(), is_package=package or None)

    def _tensorflow_spec(self, fullname: str, path: Any, target: Any) -> Any:
        """TensorFlow's own spec, its loader wrapped to patch ``estimator`` in after."""
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


def _api_getattr(library_module: str, previous: Any) -> Any:
    def __getattr__(name: str) -> Any:
        if name == "estimator":
            return importlib.import_module(library_module)
        if previous is not None:
            return previous(name)
        raise AttributeError(name)

    __getattr__._tci_alias = True  # type: ignore[attr-defined]
    return __getattr__


def _unwrap(module: Any) -> Any:
    """TensorFlow's ``TFModuleWrapper`` holds the real module (``tf.compat.v1``)."""
    return getattr(module, "_tfmw_wrapped_module", module)


def _api_modules() -> list[tuple[Any, str]]:
    """``(module, library module)`` for every TensorFlow module that gets ``estimator``."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return []
    found = [(tf, _modules.E)]
    compat = vars(tf).get("compat")
    if compat is not None:
        for version, library_module in (("v1", _modules.V1), ("v2", _modules.E)):
            wrapper = vars(_unwrap(compat)).get(version)
            if wrapper is not None:
                found.append((wrapper, library_module))
    found += [(sys.modules[n], lib) for n, lib in _API_MODULES.items() if n in sys.modules]
    out = {}
    for module, library_module in found:
        for m in (module, _unwrap(module)):
            if isinstance(m, types.ModuleType):
                out[id(m)] = (m, library_module)
    return list(out.values())


def _patch_tensorflow() -> None:
    for module, library_module in _api_modules():
        if _unwrap(module) is module:  # a wrapper passes what it lacks to its module
            _patch_module(module, library_module)
        elif "estimator" in vars(module) and id(module) not in _STATE.wrappers:
            # TF 2.15's tf.compat.v1 (install(force=True)): the wrapper holds the real one
            _STATE.wrappers[id(module)] = (module, vars(module)["estimator"])
            module.estimator = importlib.import_module(library_module)


def _patch_module(module: Any, library_module: str) -> None:
    if id(module) in _STATE.patched or not isinstance(module, types.ModuleType):
        return
    d = vars(module)
    saved = {"estimator": d.get("estimator", _ABSENT), "__getattr__": d.get("__getattr__", _ABSENT)}
    if "estimator" in d:
        # TF 2.15's own tf.estimator (install(force=True)): ours takes its place now.
        module.estimator = importlib.import_module(library_module)
    else:
        previous = saved["__getattr__"]
        module.__getattr__ = _api_getattr(library_module, None if previous is _ABSENT else previous)
    _STATE.patched[id(module)] = (module, saved)


def _is_ours(value: Any) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__.startswith("tf1compat_init.")


def _unpatch_wrappers() -> None:
    """``TFModuleWrapper`` (``tf.compat.v1``) caches what it served, in three places."""
    for wrapper, saved in _STATE.wrappers.values():
        wrapper.estimator = saved
    _STATE.wrappers.clear()
    for module, _ in _api_modules():
        if _unwrap(module) is module or not _is_ours(vars(module).get("estimator")):
            continue
        try:
            delattr(module, "estimator")  # its __delattr__ clears every cache
        except AttributeError:
            vars(module).pop("estimator", None)


def _unpatch_modules() -> None:
    _unpatch_wrappers()
    for module, saved in _STATE.patched.values():
        d = vars(module)
        for key, value in saved.items():
            if value is _ABSENT:
                d.pop(key, None)
            else:
                d[key] = value
        if "__all__" in d and "estimator" in d["__all__"] and "estimator" not in d:
            d["__all__"].remove("estimator")
    _STATE.patched.clear()


def _tf_version() -> tuple[int, int] | None:
    """The installed TensorFlow's (major, minor), without importing it; None if none."""
    from importlib.metadata import PackageNotFoundError, version

    tf = sys.modules.get("tensorflow")
    text = getattr(tf, "__version__", None)
    for dist in (
        "tensorflow",
        "tensorflow-cpu",
        "tensorflow-gpu",
        "tensorflow-intel",
        "tensorflow-macos",
        "tf-nightly",
        "tf-nightly-cpu",
    ):
        if text is not None:
            break
        try:
            text = version(dist)
        except PackageNotFoundError:
            continue
    if text is None:
        return None
    major, minor = text.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def _real_tf_estimator() -> bool:
    """Whether this TensorFlow has its own ``tf.estimator`` (2.15 and older)."""
    version = _tf_version()
    return version is not None and version <= (2, 15)


def install(force: bool = False) -> bool:
    """Makes ``tf.estimator`` and tensorflow-estimator's import paths this library's.

    Args:
        force: also on TensorFlow <= 2.15, where the real ``tf.estimator`` exists.

    Returns:
        True if this call installed the alias; False if it was installed already or, on
        TensorFlow <= 2.15 without ``force``, not needed (logged).
    """
    with _LOCK:
        if _STATE.finder is not None:
            return False
        if not force and _real_tf_estimator():
            logger.info(
                "tf1compat_init.estimator.install(): not needed, this TensorFlow has its own "
                "tf.estimator (tensorflow-estimator); nothing changed (force=True installs)"
            )
            return False
        for name in list(sys.modules):
            if _is_private_name(name):
                _STATE.set_aside[name] = sys.modules.pop(name)
        _STATE.finder = _Finder()
        sys.meta_path.insert(0, _STATE.finder)
        _patch_tensorflow()
        logger.debug("tf1compat_init.estimator.install(): tf.estimator is tf1compat_init's")
        return True


def uninstall() -> bool:
    """Undoes :func:`install`: ``sys.meta_path``, ``sys.modules`` and ``tf`` as they were.

    Returns:
        True if the alias was installed and is now removed.
    """
    with _LOCK:
        if _STATE.finder is None:
            return False
        sys.meta_path[:] = [f for f in sys.meta_path if f is not _STATE.finder]
        _STATE.finder = None
        _unpatch_modules()
        for name in [n for n in sys.modules if _is_private_name(n)]:
            module = sys.modules.pop(name)
            parent_name, _, child = name.rpartition(".")
            parent = sys.modules.get(parent_name)
            if parent is not None and vars(parent).get(child) is module:
                delattr(parent, child)
        sys.modules.update(_STATE.set_aside)
        _STATE.set_aside.clear()
        return True


def installed() -> bool:
    """Whether :func:`install` is in effect."""
    return _STATE.finder is not None
