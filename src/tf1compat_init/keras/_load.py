# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Keras front end, the loading half: :func:`load_checkpoint`, :func:`plan_checkpoint`.

What they do, and the names they use, is documented in :mod:`tf1compat_init.keras`. The
callbacks (:mod:`tf1compat_init.keras._callbacks`) build on these functions, so this module
imports nothing from the callbacks and nothing from the package's ``__init__``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..apply import apply_plan
from ..engine.grammar.mapping import AssignmentMap, nearest
from ..engine.planning.plan import RestorePlan, plan_restore
from ..engine.planning.policy import UNSET, RestorePolicy
from ..engine.planning.preamble import prepare
from ..engine.planning.report import RestoreReport
from ..engine.reading.reader import open_checkpoint
from ..engine.targets.keras_names import (
    checkpoint_view,
    derive_auto_map,
    model_targets,
    name_resolver,
    weight_names,
)
from ..engine.targets.variables import target_specs
from ..errors import AssignmentMapError, CheckpointMismatchError

logger = logging.getLogger(__name__)


def check_map(assignment_map: Any) -> None:
    """Rejects a map that cannot be one before any model or checkpoint is seen."""
    if isinstance(assignment_map, str) and assignment_map != "auto":
        raise AssignmentMapError(
            f"assignment_map must be None, 'auto', a dict, a list of pairs or a callable; got "
            f"the string {assignment_map!r}. Did you mean {{{assignment_map!r}: "
            f"{assignment_map!r}}}?"
        )


def plan_checkpoint(
    model: Any,
    ckpt_dir_or_file: Any,
    assignment_map: Any = None,
    *,
    recipe: Any = None,
    policy: RestorePolicy | None = None,
    exclude: Any = UNSET,
    on_missing: str = UNSET,
    on_mismatch: str = UNSET,
    optional: Any = UNSET,
    on_conflict: str = UNSET,
    staging: str = UNSET,
) -> tuple[RestorePlan, dict[str, Any]]:
    """Plans loading a checkpoint into a Keras model, changing nothing.

    Same arguments as :func:`load_checkpoint`.

    Returns:
        ``(plan, targets)``: the checked :class:`~tf1compat_init.RestorePlan` (its
        ``report`` says what would load) and the targets to hand to
        :func:`tf1compat_init.apply.apply_plan`.

    Example:
        >>> plan, _ = plan_checkpoint(model, "pretrained/", "auto")  # doctest: +SKIP
        >>> print(plan.report)  # doctest: +SKIP
    """
    given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
    given.update(optional=optional, on_conflict=on_conflict, staging=staging)
    assignment_map, policy = prepare("plan_checkpoint", assignment_map, recipe, policy, given)
    check_map(assignment_map)
    names = weight_names(model)
    targets = model_targets(names)
    checkpoint = checkpoint_view(open_checkpoint(ckpt_dir_or_file))
    auto = None
    rules = assignment_map
    if isinstance(assignment_map, str):  # "auto"
        auto = derive_auto_map(list(checkpoint.variables), list(targets))
        rules = auto.rules
    amap = AssignmentMap(rules, name_of=name_resolver(names))
    try:
        plan = plan_restore(checkpoint, target_specs(targets), amap, policy=policy)
    except CheckpointMismatchError as e:
        hint = _auto_hint(assignment_map, checkpoint.variables, targets)
        if hint is None:
            raise
        raise CheckpointMismatchError(f"{e}\n{hint}", e.report) from None
    if auto is not None:
        plan.report.applied_map = {"/": "/"} if auto.rules is None else auto.rules
        _check_auto_coverage(plan, auto.unpaired, checkpoint.variables, policy)
    return plan, targets


def _auto_hint(assignment_map: Any, ckpt_names: Any, targets: Any) -> str | None:
    """When identical names fail but "auto" would load everything, say so."""
    if assignment_map is not None:
        return None
    try:
        auto = derive_auto_map(list(ckpt_names), list(targets))
    except AssignmentMapError:
        return None
    if auto.unpaired or auto.rules is None:
        return None
    return (
        f"The names differ only by Keras numbering or a prefix: assignment_map='auto' would "
        f"load all {len(auto.pairs)} weights, with the map {auto.rules!r}."
    )


def _check_auto_coverage(
    plan: RestorePlan, unpaired: list[str], ckpt_names: Any, policy: RestorePolicy
) -> None:
    # A derived map leaves the targets it could not pair outside every rule; the engine
    # would call them "untouched". Under "auto" they are missing weights, and say so.
    optional = [re.compile(p) for p in policy.optional]
    untouched = set(plan.report.untouched)
    lost = [t for t in unpaired if t in untouched and not any(p.search(t) for p in optional)]
    if not lost or policy.on_missing == "ignore":
        return
    rows = []
    for t in lost[:10]:
        near = nearest(t, list(ckpt_names))
        rows.append(f"{t}" + (f" (nearest checkpoint names: {', '.join(near)})" if near else ""))
    more = f"\n  ... and {len(lost) - 10} more" if len(lost) > 10 else ""
    message = (
        f"assignment_map='auto' found no checkpoint value for {len(lost)} weight(s) of the "
        f"model; their names differ from {plan.report.checkpoint} by more than numbering or a "
        f"prefix:\n  " + "\n  ".join(rows) + more
    )
    if policy.on_missing == "error":
        raise CheckpointMismatchError(
            message + "\nNothing was changed. Pass an explicit assignment_map for them, or "
            "on_missing='warn' to let them keep their initial values.",
            plan.report,
        )
    logger.warning("%s", message)


def load_checkpoint(
    model: Any,
    ckpt_dir_or_file: Any,
    assignment_map: Any = None,
    *,
    recipe: Any = None,
    policy: RestorePolicy | None = None,
    exclude: Any = UNSET,
    on_missing: str = UNSET,
    on_mismatch: str = UNSET,
    optional: Any = UNSET,
    on_conflict: str = UNSET,
    staging: str = UNSET,
) -> RestoreReport:
    """Loads a TF1 name-based or TF2 object-based checkpoint into a Keras model.

    Everything is resolved and checked first (names, shapes, dtypes, every checksum); a
    problem raises before any weight changes.

    Args:
        model: a built Keras 3, tf_keras or Keras 2 model (or layer). Names are
            model-relative (see :mod:`tf1compat_init.keras`); pass a sub-model to load
            only it.
        ckpt_dir_or_file: a checkpoint directory (its latest checkpoint), prefix, or
            ``.index`` / ``.data-*`` path.
        assignment_map: ``None`` (identical names), ``"auto"`` (names that differ only by
            auto-numbering or a model prefix), TF1's grammar
            ``{checkpoint_name_or_scope: model_relative_name_or_scope_or_weight}`` (with
            tensor transforms, see :mod:`tf1compat_init.transforms`), an
            :class:`~tf1compat_init.AssignmentMap`, or a
            :class:`~tf1compat_init.transforms.Recipe`.
        recipe: a registered recipe's name or a ``Recipe``, instead of a map.
        policy: a :class:`~tf1compat_init.RestorePolicy`; a keyword below given as well
            replaces that field (an unset one keeps the policy's value).
        exclude: regexes; a pair whose checkpoint name or weight name matches is dropped.
        on_missing, on_mismatch: ``"error"`` (default), ``"warn"`` or ``"ignore"``.
        optional: regexes of weights that may be missing (default
            :data:`~tf1compat_init.DEFAULT_OPTIONAL`).
        on_conflict: ``"error"`` (default) or ``"last"``.
        staging: ``"stream"`` (default) or ``"all"`` (see :mod:`tf1compat_init.apply`).

    Returns:
        The :class:`~tf1compat_init.RestoreReport` (``report.applied_map`` holds the
        map ``"auto"`` derived).

    Raises:
        KerasModelError: the model is not built (the message shows how to build it), has
            no weights, or has two weights of one name.
        CheckpointNotFoundError: no checkpoint there.
        AssignmentMapError: the map is malformed, reversed or resolves to nothing.
        CheckpointMismatchError: values are missing or do not fit (with ``.report``).

    Example:
        >>> model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(10)])
        ...     # doctest: +SKIP
        >>> report = load_checkpoint(model, "tf1_run/", {"model/": "/"})  # doctest: +SKIP
        >>> report.loaded  # doctest: +SKIP
        {'dense/bias': 'model/dense/bias', 'dense/kernel': 'model/dense/kernel'}
    """
    given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
    given.update(optional=optional, on_conflict=on_conflict, staging=staging)
    assignment_map, policy = prepare("load_checkpoint", assignment_map, recipe, policy, given)
    plan, targets = plan_checkpoint(model, ckpt_dir_or_file, assignment_map, policy=policy)
    return apply_plan(plan, targets)
