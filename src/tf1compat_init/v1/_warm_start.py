# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``warm_start``: ``tf.compat.v1.train.warm_start``'s selection rules, checked first.

Public through :mod:`tf1compat_init.v1`; imports TensorFlow.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

import tensorflow as tf

from ..engine.grammar.mapping import nearest
from ..engine.planning.plan import DEFAULT_OPTIONAL, plan_restore
from ..engine.planning.report import RestoreReport
from ..engine.reading.reader import CheckpointInfo, open_checkpoint
from ..engine.targets.variables import collect_targets, target_specs
from ..errors import AssignmentMapError
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
        elif all(_graph.is_variable(v) or _graph.is_partitioned(v) for v in vars_to_warm_start):
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
    var_name_to_vocab_info: dict[str, Any] | None = None,
    var_name_to_prev_var_name: dict[str, str] | None = None,
) -> RestoreReport:
    """``tf.compat.v1.train.warm_start``, with everything checked before anything changes.

    Selection follows TF: a string is a regex matched with ``re.match`` (anchored at the
    start) against the names of *trainable* variables; a list of strings matches *global*
    variables; a list of variables is used as is; ``None`` warm-starts only the variables
    of ``var_name_to_vocab_info``. ``var_name_to_prev_var_name`` maps a variable name to
    its key in the checkpoint.

    ``var_name_to_vocab_info`` (``{variable_name: tf.compat.v1.train.VocabInfo}``) remaps
    rows (``axis=0``) or columns (``axis=1``) of those variables from the checkpoint's
    vocabulary to the new one, with OOV buckets and a backup initializer, exactly as TF
    (its kernels run when the initializer does; see :mod:`tf1compat_init.vocab`).

    Unlike TF, a regex that matches no variable, a rename or vocab info that names no
    selected variable, a vocabulary file that is missing, empty or shorter than its size,
    or sizes that do not fit the variable are errors, raised before any initializer
    changes (TF raises some only after replacing the initializers, some when they run,
    and ignores the first).

    Args:
        ckpt_to_initialize_from: the checkpoint (directory, prefix or file).
        vars_to_warm_start: see above.
        var_name_to_vocab_info: ``{variable_name: VocabInfo}``.
        var_name_to_prev_var_name: ``{variable_name: checkpoint_key}``.

    Returns:
        The :class:`~tf1compat_init.RestoreReport` (``applied`` is ``False``: the
        initializers load the values when they run); remapped variables are ``loaded``
        with the remapping in ``transforms``.

    Raises:
        AssignmentMapError: a regex, rename or vocab info matches nothing, or a vocab
            info does not fit its variable or files.
        CheckpointMismatchError: a key is missing or does not fit.

    Example:
        >>> warm_start("pretrained/", ".*dense", None, {"dense/kernel": "old/kernel"})
        ...     # doctest: +SKIP
    """
    graph = graph_or_raise("warm_start")
    checkpoint = open_checkpoint(ckpt_to_initialize_from)
    selected = _select_for_warm_start(graph, vars_to_warm_start)
    vocab_infos = dict(var_name_to_vocab_info or {})
    if vars_to_warm_start is None and vocab_infos:  # TF: the vocab variables among trainables
        selected = [
            p
            for v in graph.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)
            for p in _graph.parts_of(v)
        ]
    targets = collect_targets(selected)
    renames = dict(var_name_to_prev_var_name or {})
    for what, named in (
        ("var_name_to_prev_var_name", renames),
        ("var_name_to_vocab_info", vocab_infos),
    ):
        unused = sorted(n for n in named if n not in targets)
        if unused:
            hints = [f"{n!r}: did you mean {nearest(n, list(targets))}?" for n in unused[:5]]
            raise AssignmentMapError(
                f"You provided the following variables in {what} that were not used: "
                f"{unused}. Perhaps you misspelled them? "
                + "; ".join(hints)
                + f" (vars_to_warm_start={vars_to_warm_start!r} selects "
                + f"{sorted(targets)[:10]}{' ...' if len(targets) > 10 else ''})."
                + " Nothing was changed."
            )
    if not renames:
        renames = _object_renames(checkpoint, targets)
    from . import _vocab

    vocab_plans = _vocab.plan_vocab(checkpoint, targets, vocab_infos, renames)
    if vars_to_warm_start is None:
        targets = {}  # only the vocabulary variables
    targets = {n: t for n, t in targets.items() if n not in vocab_infos}
    optional = [re.compile(p) for p in DEFAULT_OPTIONAL]
    pairs, skipped = [], []
    for name in targets:
        key = renames.get(name, name)
        if key not in checkpoint.variables and any(p.search(name) for p in optional):
            skipped.append((name, key))  # training state a pretrained checkpoint may lack
        else:
            pairs.append((key, name))
    if pairs:
        plan = plan_restore(checkpoint, target_specs(targets), pairs, optional=())
        report = plan.report
    else:
        plan = None
        report = RestoreReport(checkpoint=checkpoint.prefix)
    for name, key in skipped:
        if name in report.untouched:
            report.untouched.remove(name)
        report.missing[name] = key
        report.optional.append(name)
    for vp in vocab_plans:
        report.loaded[vp.name] = vp.key
        report.transforms[vp.name] = vp.text
    if not pairs and not vocab_plans:
        report.unused = sorted(checkpoint.variables)
        logger.info("warm_start: nothing selected (vars_to_warm_start=%r)", vars_to_warm_start)
        return report
    used = set(report.loaded.values())
    report.unused = sorted(k for k in checkpoint.variables if k not in used)
    applied = [(k, n) for k, n in pairs] + [(vp.key, vp.name) for vp in vocab_plans]
    keys = [k for k, _ in applied]
    report.applied_map = dict(applied) if len(set(keys)) == len(keys) else list(applied)
    # Everything is checked: only now does the graph change.
    if plan is not None:
        _graph.override_initializers(plan, targets, graph)
    _vocab.build_vocab_initializers(vocab_plans, checkpoint)
    logger.info("warm_start from %s: %s", checkpoint.prefix, report.summary())
    return report
