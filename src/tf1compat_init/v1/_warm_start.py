"""``warm_start``: ``tf.compat.v1.train.warm_start``'s selection rules, checked first.

Public through :mod:`tf1compat_init.v1`; imports TensorFlow.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

import tensorflow as tf

from ..errors import AssignmentMapError
from ..mapping import nearest
from ..plan import DEFAULT_OPTIONAL, plan_restore
from ..reader import CheckpointInfo, open_checkpoint
from ..report import RestoreReport
from ..variables import collect_targets, target_specs
from . import _graph
from ._plan import graph_or_raise

logger = logging.getLogger("tf1compat_init.v1")


def _select_for_warm_start(graph: Any, vars_to_warm_start: Any) -> list[Any]:
    """TF's selection: a str is ``re.match`` over trainable ``v.name``; a list of str over
    global variables; a list of variables is taken as is; ``None`` selects nothing."""
    if vars_to_warm_start is None:
        return []
    if isinstance(vars_to_warm_start, str):
        patterns, key = [vars_to_warm_start], tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES
    elif isinstance(vars_to_warm_start, list | tuple):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            patterns, key = list(vars_to_warm_start), tf.compat.v1.GraphKeys.GLOBAL_VARIABLES
        elif all(_graph.is_variable(v) or _graph._is_partitioned(v) for v in vars_to_warm_start):
            return [p for v in vars_to_warm_start for p in _graph.parts_of(v)]
        else:
            raise TypeError(
                "vars_to_warm_start must be a regex string, a list of regex strings, a list of "
                f"variables, or None; got a list of {sorted({type(v).__name__ for v in vars_to_warm_start})}"
            )
    else:
        raise TypeError(
            f"vars_to_warm_start must be a str, a list or None, got {type(vars_to_warm_start).__name__}"
        )
    pool = graph.get_collection(key)
    kind = "trainable" if key == tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES else "global"
    selected: list[Any] = []
    for pattern in patterns:
        try:
            regex = re.compile(pattern)
        except re.error as e:
            raise AssignmentMapError(
                f"vars_to_warm_start {pattern!r} is not a valid regex: {e}"
            ) from None
        matched = [v for v in pool if regex.match(v.name)]
        if not matched:
            names = [v.name for v in pool]
            near = nearest(pattern, names)
            raise AssignmentMapError(
                f"vars_to_warm_start {pattern!r} matches no {kind} variable (it is matched with "
                f"re.match against names such as {names[0] if names else '<none>'!r}, anchored "
                f"at the start; TensorFlow would silently warm-start nothing). "
                + (f"Did you mean {' or '.join(map(repr, near))}, or " if near else "Try ")
                + f"'.*{pattern}'?"
            )
        selected += [v for v in matched if not any(v is s for s in selected)]
    return selected


def _object_renames(checkpoint: CheckpointInfo, names: Iterable[str]) -> dict[str, str]:
    """For an object-based checkpoint, variable name -> its key (what TF does too)."""
    if checkpoint.format != "object-based" or checkpoint.bundle is None:
        return {}
    graph = checkpoint.bundle.object_graph()
    by_name = {full: key for key, full in graph.full_names().items() if full}
    return {n: by_name[n] for n in names if n in by_name}


def warm_start(
    ckpt_to_initialize_from: Any,
    vars_to_warm_start: Any = ".*",
    var_name_to_prev_var_name: dict[str, str] | None = None,
) -> RestoreReport:
    """``tf.compat.v1.train.warm_start``, with everything checked before anything changes.

    Selection follows TF: a string is a regex matched with ``re.match`` (anchored at the
    start) against the names of *trainable* variables; a list of strings matches *global*
    variables; a list of variables is used as is; ``None`` warm-starts nothing.
    ``var_name_to_prev_var_name`` maps a variable name to its key in the checkpoint.

    Unlike TF, a regex that matches no variable, or a rename that names no selected
    variable, is an error, and it is raised before any initializer changes (TF raises the
    second only after replacing the initializers, and ignores the first). Vocabulary
    remapping (``var_name_to_vocab_info``) is not supported.

    Args:
        ckpt_to_initialize_from: the checkpoint (directory, prefix or file).
        vars_to_warm_start: see above.
        var_name_to_prev_var_name: ``{variable_name: checkpoint_key}``.

    Returns:
        The :class:`~tf1compat_init.RestoreReport` (``applied`` is ``False``: the
        initializers load the values when they run).

    Raises:
        AssignmentMapError: a regex or rename matches nothing.
        CheckpointMismatchError: a key is missing or does not fit.

    Example:
        >>> warm_start("pretrained/", ".*dense", {"dense/kernel": "old/kernel"})  # doctest: +SKIP
    """
    graph = graph_or_raise("warm_start")
    checkpoint = open_checkpoint(ckpt_to_initialize_from)
    targets = collect_targets(_select_for_warm_start(graph, vars_to_warm_start))
    renames = dict(var_name_to_prev_var_name or {})
    unused = sorted(n for n in renames if n not in targets)
    if unused:
        hints = [f"{n!r}: did you mean {nearest(n, list(targets))}?" for n in unused[:5]]
        raise AssignmentMapError(
            f"var_name_to_prev_var_name names variables that vars_to_warm_start="
            f"{vars_to_warm_start!r} does not select: {unused}. Perhaps you misspelled them? "
            + "; ".join(hints)
            + f" Selected variables: {sorted(targets)[:10]}{' ...' if len(targets) > 10 else ''}."
            + " Nothing was changed."
        )
    if not renames:
        renames = _object_renames(checkpoint, targets)
    optional = [re.compile(p) for p in DEFAULT_OPTIONAL]
    pairs, skipped = [], []
    for name in targets:
        key = renames.get(name, name)
        if key not in checkpoint.variables and any(p.search(name) for p in optional):
            skipped.append((name, key))  # training state a pretrained checkpoint may lack
        else:
            pairs.append((key, name))
    if not pairs:
        report = RestoreReport(checkpoint=checkpoint.prefix, unused=sorted(checkpoint.variables))
        logger.info("warm_start: nothing selected (vars_to_warm_start=%r)", vars_to_warm_start)
        return report
    plan = plan_restore(checkpoint, target_specs(targets), pairs, optional=())
    for name, key in skipped:
        plan.report.untouched.remove(name)
        plan.report.missing[name] = key
        plan.report.optional.append(name)
    keys = [k for k, _ in pairs]
    plan.report.applied_map = dict(pairs) if len(set(keys)) == len(keys) else list(pairs)
    _graph.override_initializers(plan, targets, graph)
    logger.info("warm_start from %s: %s", checkpoint.prefix, plan.report.summary())
    return plan.report
