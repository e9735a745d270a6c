# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Applying a plan's transformed pairs (:mod:`tf1compat_init.transforms`) eagerly.

:func:`~tf1compat_init.apply.apply_plan` hands the pairs that carry a transform route
here. The guarantees are the plain path's: before the first assign every
variable is checked against the transformed shape and dtype, and every source tensor's
CRC32C is verified (where it lies in the files, for bundles; read into memory for
checkpoints without a native reader). Then each route is computed once (one read of its
source tensors, then the transforms, which hold at most one copy), its outputs are
assigned to every target it fills, and the memory is released before the next one: the
peak is the largest route's sources plus its outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..bundle.fastread import aligned_empty
from ..bundle.remote import reader_for
from ..engine.planning.plan import dtype_name
from ..engine.targets.variables import TargetVariable
from ..errors import TargetError
from ..transforms import Route, TransformError
from ._check import check_target, target_of
from ._job import Job, part_slices, tf_dtype

if TYPE_CHECKING:
    from ._assigner import Assigner

__all__ = ["RoutedGroup", "assign_groups", "check_groups", "routed_groups", "verify_groups"]


class RoutedGroup(NamedTuple):
    """One computation: ``route`` (over the checkpoint's own keys) and what it fills.

    ``jobs`` holds ``(job, output index)`` for each part of each target.
    """

    route: Route
    shapes: list[tuple | None]
    jobs: list[tuple[Job, int]]


def routed_groups(entries: list[Any], targets: Mapping[str, TargetVariable]) -> list[RoutedGroup]:
    """The plan's transformed pairs, one group per computation."""
    groups: dict[Route, RoutedGroup] = {}
    for pair in entries:
        if pair.route is None:
            continue
        route = pair.route
        target = target_of(targets, pair.target)
        group = groups.get(route.group)
        if group is None:
            shapes = (
                list(route.shapes)
                if route.shapes is not None
                else [targets[t].shape if t in targets else None for t in route.targets]
            )
            group = groups[route.group] = RoutedGroup(route.group, shapes, [])
        for part in target.parts:
            job = Job(route.source, pair.target, part, part_slices(target, part))
            group.jobs.append((job, route.index))
    return list(groups.values())


def check_groups(groups: list[RoutedGroup], checkpoint: Any) -> None:
    """Every variable against its transformed value, before the first assign."""
    for group in groups:
        ins = [
            (checkpoint.variables[k].shape, checkpoint.variables[k].dtype) for k in group.route.keys
        ]
        try:
            outs = group.route.infer(ins, group.shapes)
        except TransformError as e:
            raise TargetError(
                f"{group.route.source} | {group.route.pipeline_text} no longer fits its targets: {e};"
                f" nothing was assigned. Make a new plan for these variables"
            ) from None
        for job, index in group.jobs:
            shape, dtype = outs[index]
            if job.slices is not None:
                shape = tuple(s.stop - s.start for s in job.slices)
            check_target(job, dtype, shape, f"{job.key} | {group.route.text}")


def verify_groups(groups: list[RoutedGroup], checkpoint: Any) -> dict[str, Any]:
    """Checks every source tensor's checksum now; returns values already read.

    Bundles are verified where the bytes lie (nothing is kept); a checkpoint without a
    native reader is read into memory here, as the plain path does.
    """
    keys = list(dict.fromkeys(k for g in groups for k in g.route.keys))
    bundle = getattr(checkpoint, "bundle", None)
    if bundle is None:
        return dict(checkpoint.read(keys))
    with reader_for(bundle) as reader:
        fast = [k for k in keys if reader.dtype_of(k) is not None]
        reader.verify(fast)
    slow = [k for k in keys if k not in set(fast)]
    return dict(checkpoint.read(slow)) if slow else {}


def _alloc(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.hasobject:
        return np.empty(shape, dtype=dtype)
    return aligned_empty(shape, dtype)


def assign_groups(
    groups: list[RoutedGroup],
    checkpoint: Any,
    read: dict[str, Any],
    assigner: Assigner,
    done: list[Job],
) -> int:
    """Computes each group and assigns its outputs; returns the bytes assigned."""
    tf = assigner.tf
    nbytes = 0
    for group in groups:
        keys = group.route.keys
        fresh = [k for k in dict.fromkeys(keys) if k not in read]
        values = dict(checkpoint.read(fresh)) if fresh else {}
        arrays = [np.asarray(values[k] if k in values else read[k]) for k in keys]
        del values
        outs = group.route.run(arrays, group.shapes, alloc=_alloc)
        del arrays
        for job, index in group.jobs:
            value = outs[index]
            if job.slices is not None:
                part = value[job.slices]
                value = _alloc(part.shape, part.dtype)
                np.copyto(value, part)
            nbytes += value.nbytes
            tensor = assigner.tensor(value, tf_dtype(tf, dtype_name(value.dtype)))
            del value
            assigner.assign_many([(job, tensor)], done)
            del tensor
        del outs
    return nbytes
