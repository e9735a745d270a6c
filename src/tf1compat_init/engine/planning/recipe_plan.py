# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""What a recipe adds to a plan: the keys it requires, the keys it drops, the weights it
must cover. The grammar (:mod:`.mapping`) resolves a recipe's rules like any map's; this
is the rest of :class:`~tf1compat_init.transforms.Recipe`'s contract, checked by the
planner (:mod:`.plan`) and migrate's renamed view.

Pure: no numpy, no TensorFlow.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from ...errors import CheckpointMismatchError

if TYPE_CHECKING:
    from ...recipes.recipe import Recipe
    from .report import RestoreReport

__all__ = ["check_coverage", "check_requires", "drop_reason", "drop_unused"]

# The planner's logger: these lines are part of a plan, and were logged there before.
logger = logging.getLogger("tf1compat_init.plan")

_MAX_SHOWN = 10  # names a message or log line lists before "..."


def drop_reason(recipe: Recipe | None, key: str) -> str | None:
    """Why ``recipe`` drops checkpoint key ``key`` (a report line), or ``None``."""
    if recipe is None:
        return None
    pattern = recipe.dropped_by(key)
    if pattern is None:
        return None
    return f"recipe {recipe.name} drops it ({pattern})"


def check_requires(recipe: Recipe | None, checkpoint_keys: Collection[str]) -> None:
    """Raises ``CheckpointMismatchError`` when the recipe's required keys are absent."""
    if recipe is not None:
        recipe.check(checkpoint_keys)


def drop_unused(recipe: Recipe, unused: Iterable[str], dropped: dict[str, str]) -> list[str]:
    """The ``unused`` keys the recipe does not drop; the dropped ones go into ``dropped``."""
    kept = []
    for key in unused:
        why = drop_reason(recipe, key)
        if why is None:
            kept.append(key)
        else:
            dropped[key] = why
    return kept


def check_coverage(
    recipe: Recipe, report: RestoreReport, on_missing: str, optional: list[re.Pattern]
) -> None:
    """A recipe is a whole-model map: targets it leaves untouched are missing weights.

    Those the recipe's ``optional`` patterns or the plan's ``optional`` policy (global_step,
    optimizer slots) allow stay ``untouched`` quietly; checkpoint keys it neither loads nor
    drops (``unused``) get a log line, never silence.

    Raises:
        CheckpointMismatchError: weights no rule covers, with ``on_missing="error"``.
    """
    if report.unused:
        logger.warning(
            "recipe %s: %d checkpoint key(s) nothing loads and no drop pattern names: %s%s",
            recipe.name,
            len(report.unused),
            ", ".join(report.unused[:_MAX_SHOWN]),
            " ..." if len(report.unused) > _MAX_SHOWN else "",
        )
    lost = [t for t in recipe.uncovered(report.untouched) if not any(p.search(t) for p in optional)]
    if not lost or on_missing == "ignore":
        return
    shown = ", ".join(lost[:_MAX_SHOWN]) + (" ..." if len(lost) > _MAX_SHOWN else "")
    message = (
        f"recipe {recipe.name!r} sets no value for {len(lost)} weight(s) of the model: {shown} "
        f"(no rule covers them; {report.summary()}). Is the model built with the checkpoint's "
        f"configuration (layers, head)?"
    )
    if on_missing == "error":
        raise CheckpointMismatchError(
            message + " Nothing was changed. on_missing='warn' or optional=[...] lets them "
            "keep their initial values.",
            report,
        )
    logger.warning("%s", message)
