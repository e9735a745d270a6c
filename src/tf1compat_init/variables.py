"""Target variables as the engine sees them: a name, a full shape, a dtype, and parts.

A TF1 partitioned variable (``fixed_size_partitioner``) is one target whose parts are
the ``part_N`` variables; every other variable is a target with one part. Works on
graph-mode and eager variables alike. Needs TensorFlow objects but never imports
Keras.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Part", "TargetVariable", "collect_targets", "target_name", "target_specs"]


@dataclass(frozen=True)
class Part:
    """One variable holding ``shape`` elements of a target, starting at ``offset``."""

    variable: Any
    offset: tuple[int, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True)
class TargetVariable:
    """A restorable target: one variable, or the parts of a partitioned variable."""

    name: str
    shape: tuple[int | None, ...] | None
    dtype: str
    parts: tuple[Part, ...]

    @property
    def partitioned(self) -> bool:
        return len(self.parts) > 1 or any(any(o for o in p.offset) for p in self.parts)


def _op_name(v: Any) -> str:
    return re.sub(r":\d+$", "", v.name)


def _shape(v: Any) -> tuple[int | None, ...] | None:
    shape = v.shape
    if getattr(shape, "rank", 0) is None:
        return None
    return tuple(None if d is None else int(d) for d in shape)


def _dtype(v: Any) -> str:
    return v.dtype.base_dtype.name


def target_name(v: Any) -> str:
    """The TF1 name a variable is restored under: the full name for a partition."""
    info = getattr(v, "_save_slice_info", None)
    return info.full_name if info is not None else _op_name(v)


def collect_targets(variables: Iterable[Any], *, name_of: Any = None) -> dict[str, TargetVariable]:
    """Groups variables into targets, partitions by their full name.

    Args:
        variables: TF variables (resource or ref), graph or eager; a
            ``PartitionedVariable`` is expanded into its parts.
        name_of: optional ``variable -> name`` (front ends with their own naming).

    Raises:
        ValueError: two distinct variables would get the same target name.
    """
    groups: dict[str, list[Any]] = {}
    for v in variables:
        parts = list(v) if _is_partitioned_container(v) else [v]
        for p in parts:
            name = name_of(p) if name_of is not None else target_name(p)
            bucket = groups.setdefault(name, [])
            if not any(p is q for q in bucket):
                bucket.append(p)
    out = {}
    for name, parts in groups.items():
        out[name] = _make_target(name, parts)
    return out


def _is_partitioned_container(v: Any) -> bool:
    return type(v).__name__ == "PartitionedVariable" or (
        isinstance(v, list | tuple) and v and all(hasattr(p, "_save_slice_info") for p in v)
    )


def _make_target(name: str, variables: list[Any]) -> TargetVariable:
    infos = [getattr(v, "_save_slice_info", None) for v in variables]
    if all(i is None for i in infos):
        if len(variables) > 1:
            raise ValueError(
                f"{len(variables)} different variables share the name {name!r}; give them "
                f"distinct names (variable scopes or layer names) so each can be restored"
            )
        v = variables[0]
        return TargetVariable(name, _shape(v), _dtype(v), (Part(v, (), _shape(v) or ()),))
    if any(i is None for i in infos):
        raise ValueError(f"variable {name!r} mixes partitioned and plain variables")
    full = tuple(int(d) for d in infos[0].full_shape)
    parts = tuple(
        sorted(
            (
                Part(v, tuple(int(o) for o in i.var_offset), tuple(int(s) for s in i.var_shape))
                for v, i in zip(variables, infos, strict=True)
            ),
            key=lambda p: p.offset,
        )
    )
    return TargetVariable(name, full, _dtype(variables[0]), parts)


def target_specs(targets: dict[str, TargetVariable]) -> dict[str, tuple]:
    """``name -> (shape, dtype)``, the form :func:`~tf1compat_init.plan_restore` takes."""
    return {name: (t.shape, t.dtype) for name, t in targets.items()}
