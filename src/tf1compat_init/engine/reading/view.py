# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""A checkpoint seen under other names: one protocol, one implementation, three constructors.

Front ends plan against the names a user thinks in, not always the stored keys: object
paths of an object-based checkpoint (:func:`object_paths`), the TF1-style names Keras
saved its variables under (:func:`saved_names`), or the new names of a migration
(:func:`renamed`). Each is a :class:`NamedView` over the opened checkpoint: nothing is
copied, and only :func:`tf1compat_init.apply.apply_plan` maps a plan's view names back to
stored keys (:meth:`NamedView.lower`).

:class:`CheckpointView` is what the planner needs from any checkpoint; an opened
:class:`~tf1compat_init.CheckpointInfo` is one too (the view of its own keys).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...errors import Tf1CompatError
from .reader import INTERNAL_KEYS, CheckpointInfo, VariableInfo

__all__ = ["CheckpointView", "NamedView", "object_paths", "renamed", "saved_names"]

logger = logging.getLogger("tf1compat_init.view")  # stable name (was the module path)

_TF_SUFFIX = re.compile(r":\d+$")


@runtime_checkable
class CheckpointView(Protocol):
    """What planning needs from a checkpoint: its names with shape and dtype, and values."""

    @property
    def prefix(self) -> str: ...

    @property
    def format(self) -> str: ...

    @property
    def variables(self) -> Mapping[str, VariableInfo]: ...

    def read(self, names: Iterable[str] | None = None, *, verify: bool = True) -> dict[str, Any]:
        """Values by name (all when ``names`` is None)."""
        ...


@dataclass
class NamedView:
    """An opened checkpoint seen under other names; nothing is copied.

    Attributes:
        base: the opened checkpoint that holds the bytes.
        variables: view name -> :class:`~tf1compat_init.VariableInfo`.
        keys: view name -> the stored key of ``base``.
        source_names: view name -> the name the source was known by before renaming
            (for a migration; the view name itself otherwise).
        excluded: source name -> why it was left out (a migration's excludes).
        routes: view name -> its :class:`~tf1compat_init.transforms.Route` over stored
            keys, for names whose value is computed when read.
    """

    base: CheckpointInfo
    variables: dict[str, VariableInfo]
    keys: dict[str, str]
    source_names: dict[str, str] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)
    routes: dict[str, Any] = field(default_factory=dict)
    #: what a missing name is called in errors
    kind: str = "a name of the view"

    @property
    def prefix(self) -> str:
        return self.base.prefix

    @property
    def format(self) -> str:
        return self.base.format

    @property
    def data_files(self) -> list[str]:
        return self.base.data_files

    @property
    def info(self) -> CheckpointInfo:
        """The opened checkpoint (``base``)."""
        return self.base

    @property
    def sources(self) -> dict[str, str]:
        """View name -> stored key (``keys``)."""
        return self.keys

    @property
    def raw_keys(self) -> dict[str, str]:
        """View name -> stored key (``keys``)."""
        return self.keys

    @property
    def renamed(self) -> dict[str, str]:
        """Source name -> view name, for the names that changed."""
        names = self.source_names
        return {names[n]: n for n in self.variables if names.get(n, n) != n}

    def lower(self, entries: list[Any]) -> list[Any]:
        """A plan's pairs over the stored keys of ``base`` (what ``apply_plan`` reads)."""
        return [p.renamed(self.keys, self.routes) for p in entries]

    def nbytes(self, name: str) -> int:
        """The size of one tensor's value (the stored size for strings)."""
        info = self.variables[name]
        if name in self.routes:
            return value_nbytes(info)
        entry = getattr(self.base.bundle, "entries", {}).get(self.keys[name])
        if info.dtype == "string" and entry is not None:
            return int(entry.size)
        return value_nbytes(info)

    def read(self, names: Any = None, *, verify: bool = True) -> dict[str, Any]:
        """Reads values by view name (all when ``names`` is None), checksums verified."""
        names = list(self.variables) if names is None else list(names)
        unknown = [n for n in names if n not in self.keys]
        if unknown:
            raise KeyError(f"{unknown[0]!r} is not {self.kind}")
        routed = [n for n in names if n in self.routes]
        keys = [self.keys[n] for n in names if n not in self.routes]
        values = self.base.read(keys, verify=verify) if keys else {}
        out = {n: values[self.keys[n]] for n in names if n not in self.routes}
        for name in routed:  # one route at a time: its sources and outputs, then freed
            route = self.routes[name]
            arrays = self.base.read(list(dict.fromkeys(route.keys)), verify=verify)
            shapes = [
                self.variables[t].shape if t in self.variables else None for t in route.targets
            ]
            outs = route.run([np.asarray(arrays[k]) for k in route.keys], shapes)
            out[name] = outs[route.index]
            del arrays, outs
        return {n: out[n] for n in names}

    def read_one(self, name: str) -> Any:
        return self.read([name])[name]


def value_nbytes(info: VariableInfo) -> int:
    """The bytes of a tensor of this shape and dtype in memory.

    A string tensor counts one object pointer per element (numpy's ``object`` itemsize), not
    its text (the index entry's size has that); a dtype with no byte layout counts 0.
    """
    from ...bundle.reader import numpy_dtype

    n = 1
    for d in info.shape:
        n *= d
    try:
        return n * numpy_dtype(info.dtype).itemsize
    except Tf1CompatError:
        return 0


def _over(info: CheckpointInfo, keys: dict[str, str], kind: str) -> NamedView:
    variables = {name: info.variables[key] for name, key in keys.items()}
    return NamedView(info, variables, keys, {n: n for n in keys}, kind=kind)


def object_paths(info: CheckpointInfo) -> NamedView:
    """An object-based checkpoint by readable object path instead of raw key.

    ``model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE`` is listed as ``model/dense/kernel``;
    a key with no object path (or two keys sharing one) keeps its raw key.
    """
    by_path: dict[str, list[str]] = {}
    for key in info.variables:
        if key in INTERNAL_KEYS:
            continue
        by_path.setdefault(info.object_paths.get(key, key), []).append(key)
    keys: dict[str, str] = {}
    for path, found in by_path.items():
        if len(found) == 1:
            keys[path] = found[0]
        else:  # several attributes of one object: their raw keys tell them apart
            keys.update({k: k for k in found})
    return _over(info, keys, f"an object path of checkpoint {info.prefix}")


def saved_names(info: CheckpointInfo) -> NamedView:
    """An object-based checkpoint by the names its variables were saved under.

    ``tf.train.Checkpoint`` keys (``model/layer_with_weights-0/kernel/.ATTRIBUTES/
    VARIABLE_VALUE``) depend on the model's Python attributes and on the Keras version;
    the ``full_name`` the object graph records for each variable is the TF1-style name
    (``dense/kernel``, or ``sequential/dense/kernel`` from Keras 3). Where it is empty or
    shared by several keys (Keras 3 subclassed models can save two ``mlp/kernel``), the
    readable object path (``model/d/_kernel``) stands in.
    """
    graph = info.bundle.object_graph() if info.bundle is not None else None
    full = graph.full_names() if graph is not None else {}
    saved = {k: _TF_SUFFIX.sub("", full.get(k, "")) for k in info.variables}
    counts = Counter(n for n in saved.values() if n)
    keys: dict[str, str] = {}
    for key in info.variables:
        name = saved[key] if saved[key] and counts[saved[key]] == 1 else ""
        if not name or name in keys:
            name = info.object_paths.get(key, key)
        if name in keys:
            name = key
        keys[name] = key
    shared = sorted(n for n, c in counts.items() if c > 1)
    if shared:
        logger.info(
            "%s: %d saved names are shared by several variables (%s); those variables are "
            "named by their object paths instead",
            info.prefix,
            len(shared),
            ", ".join(shared[:3]),
        )
    return _over(info, keys, f"a saved name of checkpoint {info.prefix}")


def renamed(
    base: CheckpointInfo,
    variables: dict[str, VariableInfo],
    sources: dict[str, str],
    source_names: dict[str, str],
    excluded: dict[str, str] | None = None,
    routes: dict[str, Any] | None = None,
) -> NamedView:
    """A migration's view: new name -> stored key, its source name, and computed values.

    Keyword-compatible with the ``RenamedCheckpoint`` dataclass it replaces.
    """
    return NamedView(
        base,
        variables,
        sources,
        source_names,
        dict(excluded or {}),
        dict(routes or {}),
        kind="a name of the renamed checkpoint",
    )
