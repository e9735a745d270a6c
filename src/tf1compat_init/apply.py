"""Applying a checked plan to TensorFlow variables (eager), all or nothing.

Every value is read and its checksum verified before the first variable changes,
so a corrupt or unreadable checkpoint leaves every variable as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .plan import RestorePlan
from .report import RestoreReport
from .variables import TargetVariable

__all__ = ["apply_plan"]

logger = logging.getLogger(__name__)


def _part_slice(offset: tuple[int, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(o, o + s) for o, s in zip(offset, shape, strict=True))


def apply_plan(plan: RestorePlan, targets: Mapping[str, TargetVariable]) -> RestoreReport:
    """Assigns every planned value to its target variable.

    Args:
        plan: a checked plan from :func:`~tf1compat_init.plan_restore`.
        targets: target name -> :class:`~tf1compat_init.variables.TargetVariable`.

    Returns:
        The plan's report, with ``applied=True``.

    Raises:
        CheckpointCorruptError: a value fails its checksum; nothing was assigned.
    """
    keys = list(dict.fromkeys(p.checkpoint_key for p in plan.entries))
    values = plan.checkpoint.read(keys)  # everything verified before the first assign
    for pair in plan.entries:
        target = targets[pair.target]
        value: Any = values[pair.checkpoint_key]
        if target.partitioned:
            for part in target.parts:
                part.variable.assign(value[_part_slice(part.offset, part.shape)])
        else:
            target.parts[0].variable.assign(value)
    plan.report.applied = True
    logger.info("%s", plan.report.summary())
    return plan.report
