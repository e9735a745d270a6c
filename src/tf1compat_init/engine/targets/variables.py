# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Target variables as the engine sees them: a name, a full shape, a dtype, and parts.

A TF1 partitioned variable (``fixed_size_partitioner``) is one target whose parts are
the ``part_N`` variables; every other variable is a target with one part. Works on
graph-mode and eager variables alike. Needs TensorFlow objects but never imports
Keras.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...errors import TargetError
from ..basics.shapes import fmt_shape

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

    @functools.cached_property
    def partitioned(self) -> bool:
        # Cached: apply_plan asks once per part of every restore, and a target is immutable.
        return len(self.parts) > 1 or any(any(o for o in p.offset) for p in self.parts)


def _op_name(v: Any) -> str:
    """The name without its output suffix (``w:0`` -> ``w``)."""
    name = v.name
    head, colon, tail = name.rpartition(":")
    return head if colon and tail.isdecimal() else name


def variable_shape(v: Any) -> tuple[int | None, ...] | None:
    """A variable's shape as a tuple (``None`` for unknown dimensions or rank)."""
    shape = v.shape
    as_list = getattr(shape, "as_list", None)  # tf.TensorShape; Keras 3 gives a tuple
    if as_list is not None:
        return None if shape.rank is None else tuple(as_list())
    return tuple(None if d is None else int(d) for d in shape)


#: tf.DType -> the name of its base dtype (a lookup per variable otherwise).
_DTYPE_NAMES: dict[Any, str] = {}


def _dtype(v: Any) -> str:
    dtype = v.dtype
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.base_dtype.name
    return name


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
        TargetError: two distinct variables would get the same target name, or the
            partitions of one target do not tile its full shape (a ``ValueError``).
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
            raise TargetError(
                f"{len(variables)} different variables share the name {name!r}; give them "
                f"distinct names (variable scopes or layer names) so each can be restored"
            )
        v = variables[0]
        shape = variable_shape(v)
        return TargetVariable(name, shape, _dtype(v), (Part(v, (), shape or ()),))
    if any(i is None for i in infos):
        raise TargetError(
            f"variable {name!r} mixes partitioned and plain variables under one name; give "
            f"the plain variable another name"
        )
    fulls = {tuple(int(d) for d in i.full_shape) for i in infos}
    if len(fulls) > 1:
        raise TargetError(
            f"the partitions of {name!r} disagree on its full shape: "
            f"{', '.join(fmt_shape(s) for s in sorted(fulls))}; they come from different variables "
            f"that share a name"
        )
    full = fulls.pop()
    parts = tuple(
        sorted(
            (
                Part(v, tuple(int(o) for o in i.var_offset), tuple(int(s) for s in i.var_shape))
                for v, i in zip(variables, infos, strict=True)
            ),
            key=lambda p: p.offset,
        )
    )
    dtypes = {_dtype(v) for v in variables}
    if len(dtypes) > 1:
        raise TargetError(
            f"the partitions of {name!r} have different dtypes ({', '.join(sorted(dtypes))})"
        )
    _check_tiling(name, full, parts)
    return TargetVariable(name, full, dtypes.pop(), parts)


def _box(part: Part) -> str:
    return (
        "[" + ", ".join(f"{o}:{o + s}" for o, s in zip(part.offset, part.shape, strict=True)) + "]"
    )


def _volume(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _check_tiling(name: str, full: tuple[int, ...], parts: tuple[Part, ...]) -> None:
    """Raises unless ``parts`` cover ``full`` exactly once: no gap, no overlap, nothing outside.

    A partial list of partitions (a ``var_list`` that names only some ``part_N``) or
    partitions of two different variables under one name would otherwise restore
    silently into part of a tensor.
    """
    advice = (
        "pass every partition of the variable (the PartitionedVariable, or all of its "
        "part_N variables), and nothing else under that name"
    )
    for p in parts:
        if len(p.offset) != len(full) or len(p.shape) != len(full):
            raise TargetError(
                f"partition {_box(p)} of {name!r} does not have the rank of its full shape "
                f"{fmt_shape(full)}"
            )
        if any(o < 0 or o + s > d for o, s, d in zip(p.offset, p.shape, full, strict=True)):
            raise TargetError(
                f"partition {_box(p)} of {name!r} lies outside its full shape {fmt_shape(full)}; "
                + advice
            )
    # Sweep along the axis the parts are split on (the one with the most distinct
    # offsets), so the usual one-axis partitioning is checked in O(n log n).
    axis = max(range(len(full)), key=lambda a: len({p.offset[a] for p in parts}), default=0)
    boxes = sorted(
        (p for p in parts if _volume(p.shape)), key=lambda p: p.offset[axis] if full else 0
    )
    for i, a in enumerate(boxes):
        end = a.offset[axis] + a.shape[axis] if full else 0
        for b in boxes[i + 1 :]:
            if full and b.offset[axis] >= end:
                break
            if all(
                max(ao, bo) < min(ao + as_, bo + bs)
                for ao, as_, bo, bs in zip(a.offset, a.shape, b.offset, b.shape, strict=True)
            ):
                raise TargetError(
                    f"partitions {_box(a)} and {_box(b)} of {name!r} overlap; " + advice
                )
    covered = sum(_volume(p.shape) for p in parts)
    if covered != _volume(full):
        raise TargetError(
            f"the {len(parts)} partition(s) of {name!r} do not tile its full shape "
            f"{fmt_shape(full)}: they cover {covered} of its {_volume(full)} elements "
            f"({', '.join(_box(p) for p in parts)}); " + advice
        )


def target_specs(targets: dict[str, TargetVariable]) -> dict[str, tuple]:
    """``name -> (shape, dtype)``, the form :func:`~tf1compat_init.plan_restore` takes."""
    return {name: (t.shape, t.dtype) for name, t in targets.items()}
