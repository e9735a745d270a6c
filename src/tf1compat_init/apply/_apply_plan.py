# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The engine's entry point: :func:`apply_plan` (see :mod:`tf1compat_init.apply`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from ..bundle import fastread as _fastread
from ..engine.basics.gc_pause import gc_paused
from ..engine.planning.plan import RestorePlan
from ..engine.planning.report import RestoreReport
from ..engine.reading.view import NamedView
from ..engine.targets.variables import TargetVariable
from ..errors import PartialRestoreError
from ._assigner import Assigner
from ._check import check_eager, check_fits, target_of
from ._job import Job, part_slices
from ._stream import apply_fast, apply_in_memory

__all__ = ["apply_plan"]

logger = logging.getLogger(__name__)


def _source(plan: RestorePlan) -> tuple[Any, list[Any]]:
    """The checkpoint that holds the bytes, and the plan's pairs over its stored keys.

    Front ends plan against views of a checkpoint (object paths, saved names, a
    migration's new names: :class:`~tf1compat_init.view.NamedView`). This is the one
    place their names are mapped back to stored keys, so their plans take the fast path.
    """
    checkpoint, entries = plan.checkpoint, plan.entries
    while isinstance(checkpoint, NamedView):
        entries = checkpoint.lower(entries)
        checkpoint = checkpoint.base
    return checkpoint, entries


def _jobs(entries: list[Any], targets: Mapping[str, TargetVariable]) -> list[Job]:
    jobs = []
    for pair in entries:
        if pair.route is not None:
            continue  # transformed: see _routed
        target = target_of(targets, pair.target)
        for part in target.parts:
            jobs.append(Job(pair.checkpoint_key, pair.target, part, part_slices(target, part)))
    return jobs


def apply_plan(
    plan: RestorePlan,
    targets: Mapping[str, TargetVariable],
    *,
    staging: str | None = None,
    threads: int | None = None,
    window_bytes: int | None = None,
) -> RestoreReport:
    """Assigns every planned value to its target variable, all or nothing.

    Every value is verified (CRC32C, sizes) before the first variable changes; see
    :mod:`tf1compat_init.apply` for how ``staging`` trades memory for the guarantee.
    Variables keep their device: values are assigned where each variable lives.

    Args:
        plan: a checked plan from :func:`~tf1compat_init.plan_restore`.
        targets: target name -> :class:`~tf1compat_init.variables.TargetVariable`
            (from :func:`~tf1compat_init.variables.collect_targets`).
        staging: ``"stream"`` (bounded memory) or ``"all"`` (every value staged and
            verified in its final buffer before any assign); ``None`` (default): the
            plan's ``policy.staging``, itself ``"stream"`` unless the front end was
            given ``staging=``.
        threads: reader threads (default: the CPU count, 2 to 8).
        window_bytes: bytes read ahead of the assigns, beyond the largest tensor
            (default ``_fastread.DEFAULT_WINDOW_BYTES``, 64 MiB, read at call time).

    Returns:
        The plan's report, with ``applied=True``.

    Raises:
        CheckpointCorruptError: a value fails its checksum or size check; nothing
            was assigned.
        CheckpointNotFoundError: a data file is gone; nothing was assigned.
        TargetError: a variable no longer fits its planned value; nothing was assigned.
        PartialRestoreError: something failed after the first assign (out of memory,
            TensorFlow failing inside an assign, a data file written in place during
            the restore); it names the variables that changed.
        RuntimeError: called in graph mode (inside ``tf.function`` or a
            ``tf.compat.v1`` graph), or a target is a graph variable: this assigns
            eagerly; nothing was assigned.

    Example:
        >>> targets = collect_targets(model.variables)  # doctest: +SKIP
        >>> plan = plan_restore("/tmp/pretrained", target_specs(targets))  # doctest: +SKIP
        >>> apply_plan(plan, targets).applied  # doctest: +SKIP
        True
    """
    # The policy checks the value (its error names the values it accepts).
    staging = (plan.policy if staging is None else plan.policy.replace(staging=staging)).staging
    if window_bytes is None:
        window_bytes = _fastread.DEFAULT_WINDOW_BYTES
    start = time.perf_counter()
    checkpoint, entries = _source(plan)
    jobs = _jobs(entries, targets)
    groups: list[Any] = []
    if any(p.route is not None for p in entries):
        from . import _routed as routes  # the transforms load only for plans that use them

        groups = routes.routed_groups(entries, targets)
    if jobs or groups:
        import tensorflow as tf

        check_eager(tf)
        check_fits(jobs, checkpoint)
        read: dict[str, Any] = {}
        if groups:  # transformed values: checked and verified before the first assign too
            routes.check_groups(groups, checkpoint)
            read = routes.verify_groups(groups, checkpoint)
        assigner = Assigner()
        # A restore allocates a few objects per variable; with TensorFlow's large heap
        # loaded, a full collection they trigger can cost more than the restore. Nothing
        # here makes reference cycles, so collection waits until the restore is over.
        done: list[Job] = []  # assigned so far, to name them if a later step fails
        try:
            with gc_paused():
                bundle = getattr(checkpoint, "bundle", None)
                nbytes = 0
                if not jobs:
                    pass
                elif bundle is None:
                    nbytes = apply_in_memory(checkpoint, jobs, assigner, done)
                else:
                    nbytes = apply_fast(
                        checkpoint, bundle, jobs, assigner, staging, threads, window_bytes, done
                    )
                if groups:
                    nbytes += routes.assign_groups(groups, checkpoint, read, assigner, done)
        except Exception as e:
            if not done:
                raise  # nothing changed: the error is the whole story
            jobs += [job for g in groups for job, _ in g.jobs]
            raise _partial(jobs, done, e, staging) from e
        took = time.perf_counter() - start
        jobs += [job for g in groups for job, _ in g.jobs]
        logger.info(
            "assigned %d variables (%.1f MiB, %d adopted without a copy, peak read-ahead"
            " %.1f MiB) in %.3f s",
            len(jobs),
            nbytes / 2**20,
            assigner.adopted,
            assigner.peak_read_ahead / 2**20,
            took,
        )
    plan.report.applied = True
    logger.info("%s", plan.report.summary())
    return plan.report


def _partial(jobs: list[Job], done: list[Job], cause: Exception, staging: str) -> Exception:
    """The error for a failure after some assigns: which variables changed, and what to do."""
    changed = list(dict.fromkeys(j.target for j in done))
    landed = set(changed)
    unchanged = [t for t in dict.fromkeys(j.target for j in jobs) if t not in landed]
    total = len(changed) + len(unchanged)
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    hint = (
        "; staging='all' (a keyword of every front end, and of apply_plan) stages every value"
        " before the first assign, at the cost of the restore's size in memory"
        if staging == "stream"
        else ""
    )
    logger.error("restore failed after assigning %d of %d variables", len(changed), total)
    return PartialRestoreError(
        f"restore failed after {len(changed)} of {total} variables were assigned ({shown}):"
        f" {type(cause).__name__}: {cause}. The other {len(unchanged)} keep their old values"
        f" (see .changed and .unchanged). Every checksum, shape and dtype was checked before"
        f" the first assign: fix the cause (memory, the device, a process writing the"
        f" checkpoint) and run the restore again, which sets every variable{hint}",
        changed=changed,
        unchanged=unchanged,
    )
