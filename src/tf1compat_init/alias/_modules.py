# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The module paths that :func:`tf1compat_init.alias.install` answers for, and their modules.

Two kinds:

- whole-module aliases (:data:`WHOLE`): ``tensorflow.estimator`` *is*
  :mod:`tf1compat_init.estimator` (and its submodules are ours: ``...estimator.export``);
- private modules of tensorflow-estimator 2.15 (``tensorflow_estimator.python.estimator.*``
  and the same under ``tensorflow.python.estimator.*``): an :class:`AliasModule` per path,
  whose names resolve on first use through
  :func:`tf1compat_init.estimator.compat_paths.resolve`. The names each held in 2.15 are in
  ``upstream_names.json`` (``scripts/estimator_private_names.py`` writes it on TF 2.15).

Nothing here imports TensorFlow or the estimator: that happens when a name is first used.
"""

from __future__ import annotations

import importlib
import json
import types
from functools import cache
from pathlib import Path
from typing import Any

E = "tf1compat_init.estimator"
V1 = "tf1compat_init.estimator.v1"

#: The two roots of tensorflow-estimator's private modules.
PRIVATE_ROOTS = ("tensorflow_estimator.python.estimator", "tensorflow.python.estimator")

#: ``{module path: library module}``: paths that are one of the library's modules.
WHOLE = {
    "tensorflow.estimator": E,
    "tensorflow.compat.v2.estimator": E,
    "tensorflow.compat.v1.estimator": V1,
    "tensorflow._api.v2.estimator": E,
    "tensorflow._api.v2.compat.v2.estimator": E,
    "tensorflow._api.v2.compat.v1.estimator": V1,
    **{f"{root}.api._v1.estimator": V1 for root in PRIVATE_ROOTS},
    **{f"{root}.api._v2.estimator": E for root in PRIVATE_ROOTS},
}

#: Where the docs list what is provided.
DOCS = "docs/cannot-edit.md"


@cache
def upstream_names() -> dict[str, frozenset[str]]:
    """``{private module (relative): names it held in tensorflow-estimator 2.15}``."""
    raw = json.loads((Path(__file__).parent / "upstream_names.json").read_text())
    return {rel: frozenset(names) for rel, names in raw.items()}


@cache
def packages() -> frozenset[str]:
    """Relative paths that are packages: every proper prefix of a private module path."""
    out = {"", "api", "api._v1", "api._v2"}
    for rel in upstream_names():
        parts = rel.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return frozenset(out)


def whole_target(fullname: str) -> str | None:
    """The library module that ``fullname`` is, or None if it is not a whole alias."""
    for alias, target in WHOLE.items():
        if fullname == alias:
            return target
        if fullname.startswith(f"{alias}."):
            return target + fullname[len(alias) :]
    return None


def private_relative(fullname: str) -> str | None:
    """``fullname`` relative to a private root (``""`` for the root), or None."""
    for root in PRIVATE_ROOTS:
        if fullname == root:
            return ""
        if fullname.startswith(f"{root}."):
            return fullname[len(root) + 1 :]
    return None


class NotProvidedError(AttributeError):
    """A name tensorflow-estimator 2.15 held that tf1compat_init does not provide."""


class AliasModule(types.ModuleType):
    """A stand-in for one of tensorflow-estimator 2.15's modules.

    Its names are the library's real objects, looked up on first use; a name 2.15 held
    that the library does not offer raises :class:`NotProvidedError` (an
    ``AttributeError``, so ``hasattr`` answers False) naming it. ``from ... import`` of
    such a name raises ``ImportError`` whose location says it is not provided.
    """

    def __init__(self, name: str, relative: str | None, package: bool) -> None:
        super().__init__(name)
        self.__dict__["_tci_relative"] = relative
        # Shown by ``from X import missing``: "cannot import name ... from X (<this>)".
        self.__file__ = f"<tf1compat_init stand-in: not provided here, see {DOCS}>"
        if package:
            self.__path__ = []

    def _tci_names(self) -> frozenset[str]:
        rel = self._tci_relative
        return upstream_names().get(rel, frozenset()) if rel is not None else frozenset()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        child = f"{self.__name__}.{name}"
        if name in self._tci_names():
            from tf1compat_init.estimator import compat_paths

            try:
                value = compat_paths.resolve(self._tci_relative, name, self._tci_names())
            except KeyError:
                raise NotProvidedError(
                    f"{child} is not provided by tf1compat_init: tensorflow-estimator 2.15 "
                    f"had it, the library does not offer it (what it offers: {DOCS})"
                ) from None
        elif child == "tensorflow_estimator.estimator":  # 2.15: the v1 API, as here
            value = importlib.import_module(V1)
        elif is_known(child):
            value = importlib.import_module(child)
        else:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | self._tci_names())


def is_known(fullname: str) -> bool:
    """Whether ``fullname`` is a module path the alias answers for."""
    if whole_target(fullname) is not None:
        return True
    if fullname == "tensorflow_estimator" or fullname == "tensorflow_estimator.python":
        return True
    rel = private_relative(fullname)
    return rel is not None and (rel in upstream_names() or rel in packages())


def make_module(fullname: str) -> types.ModuleType:
    """The module object ``fullname`` stands for (importing the library's module if whole)."""
    target = whole_target(fullname)
    if target is not None:
        return importlib.import_module(target)
    rel = private_relative(fullname)
    package = rel is None or rel in packages()
    return AliasModule(fullname, rel, package)
