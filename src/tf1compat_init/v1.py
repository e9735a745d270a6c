"""The ``tf.compat.v1`` front end: checked, cheap warm starts for TF1 training code.

- :func:`init_from_checkpoint`: a drop-in for ``tf.compat.v1.train.init_from_checkpoint``.
  In graph mode it overrides initializers, as TF does, so a run that resumes from its own
  checkpoint restores that one instead, and the first checkpoint a ``CheckpointSaverHook``
  writes already holds the warm-started values. In eager mode it assigns at once.
- :class:`CheckpointInitHook`: the same as a ``SessionRunHook`` (for
  ``MonitoredTrainingSession`` and ``tf.estimator``), all graph work in ``begin()``.
- :func:`scaffold_init_fn`: an ``init_fn`` for ``tf.compat.v1.train.Scaffold``.
- :func:`warm_start`: ``tf.compat.v1.train.warm_start``'s selection rules, checked.
- :func:`restore_saver` and :func:`init_unrestored`: for hand-written ``Session`` loops.

Every entry point plans first with the engine (:func:`~tf1compat_init.plan_restore`):
a malformed or reversed map, a missing key, a shape or dtype mismatch is raised before
the graph or any variable changes. The assignment-map grammar is TF's,
``{checkpoint_key_or_scope: target_name_or_scope_or_variable}`` (see
:mod:`tf1compat_init.mapping`); ``None`` maps every variable to the key of the same name.

One difference from TF: string targets resolve against every global variable of the
graph (``tf.Variable`` and Keras variables included), not only against ``get_variable``
variables in the variable store. In eager mode there is no graph to search, so names
resolve against ``var_list=`` and the variable objects in the map.

Policy keywords (``**policy``), as in :func:`~tf1compat_init.plan_restore`:
``on_missing``, ``on_mismatch``, ``optional``, ``on_conflict``, plus ``exclude``
(regexes, see :class:`~tf1compat_init.AssignmentMap`) and, in graph mode, ``verify``:
``True`` reads every planned tensor at call time and checks its CRC32C, so a corrupt
checkpoint raises :class:`~tf1compat_init.CheckpointCorruptError` naming the tensor
before the graph changes. By default graph mode reads only the index (TensorFlow's
``RestoreV2`` checks the checksums when the initializers run, and then assigns
nothing if one fails); eager mode always verifies before the first assign.
"""

from __future__ import annotations

import glob
import logging
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

import tensorflow as tf

from . import _v1_graph as _graph
from .apply import apply_plan
from .errors import AssignmentMapError, CheckpointNotFoundError
from .mapping import AssignmentMap, nearest
from .plan import DEFAULT_OPTIONAL, RestorePlan, plan_restore
from .reader import CheckpointInfo, open_checkpoint, resolve_checkpoint_path
from .report import RestoreReport
from .variables import TargetVariable, collect_targets, target_specs

__all__ = [
    "CheckpointInitHook",
    "init_from_checkpoint",
    "init_unrestored",
    "restore_saver",
    "scaffold_init_fn",
    "warm_start",
]

logger = logging.getLogger(__name__)

_PLAN_KEYS = ("on_missing", "on_mismatch", "optional", "on_conflict")
_CHOICES = {
    "on_missing": ("error", "warn", "ignore"),
    "on_mismatch": ("error", "warn", "ignore"),
    "on_conflict": ("error", "last"),
}


# -- shared steps ------------------------------------------------------------------------


def _check_policy(policy: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Splits ``**policy`` into ``exclude`` and plan keywords, checking names and values."""
    unknown = sorted(set(policy) - {"exclude", "verify", *_PLAN_KEYS})
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {', '.join(unknown)}; the policy keywords are "
            f"exclude, verify, {', '.join(_PLAN_KEYS)}"
        )
    if not isinstance(policy.get("verify", False), bool):
        raise TypeError(
            f"Invalid value for argument verify. Received: verify={policy['verify']!r}. "
            f"Expected True or False."
        )
    for key, choices in _CHOICES.items():
        if key in policy and policy[key] not in choices:
            raise ValueError(
                f"Invalid value for argument {key}. Received: {key}={policy[key]!r}. "
                f"Expected one of {choices}."
            )
    plan_kwargs = {k: policy[k] for k in _PLAN_KEYS if k in policy}
    return policy.get("exclude", ()), plan_kwargs


def _make_map(assignment_map: Any, exclude: Any) -> AssignmentMap:
    return AssignmentMap(assignment_map, exclude=exclude, name_of=_graph.name_of)


def _checkpoint_absent(path: Any) -> bool:
    """Nothing at all is there (first run), as opposed to a broken checkpoint."""
    if path is None:
        return True
    path = os.fsdecode(path) if isinstance(path, bytes) else os.fspath(path)
    if os.path.isdir(path):
        return not os.path.exists(os.path.join(path, "checkpoint")) and not glob.glob(
            os.path.join(glob.escape(path), "*.index")
        )
    return not os.path.exists(path) and not os.path.exists(path + ".index")


def _pretrained_path(path: Any, allow_missing: bool, who: str) -> str | None:
    """The checkpoint prefix, or ``None`` (logged) when it is absent and that is allowed."""
    try:
        return resolve_checkpoint_path(path)
    except CheckpointNotFoundError:
        if allow_missing and _checkpoint_absent(path):
            logger.warning(
                "%s: no pretrained checkpoint at %s; variables keep their initial values "
                "(allow_missing=True)",
                who,
                path,
            )
            return None
        raise


def _graph_or_raise(api: str) -> Any:
    if tf.executing_eagerly() or tf.compat.v1.executing_eagerly_outside_functions():
        where = "eager mode" if tf.executing_eagerly() else "a tf.function"
        raise RuntimeError(
            f"{api} builds TF1 graph ops and cannot run in {where}; call it while building a "
            f"tf.Graph (inside `with graph.as_default():`), or use "
            f"tf1compat_init.v1.init_from_checkpoint(..., var_list=...) in eager mode"
        )
    graph = tf.compat.v1.get_default_graph()
    if graph.finalized:
        raise RuntimeError(
            f"{api} must be called while the graph can still change, before "
            f"MonitoredTrainingSession / Scaffold.finalize() finalizes it (for example in a "
            f"hook's begin(), or before creating the session)"
        )
    return graph


def _plan_in_graph(
    graph: Any, ckpt: Any, assignment_map: Any, var_list: Any, policy: dict[str, Any]
) -> tuple[RestorePlan, dict[str, TargetVariable]]:
    exclude, plan_kwargs = _check_policy(policy)
    checkpoint = open_checkpoint(ckpt)
    amap = _make_map(assignment_map, exclude)
    groups = _graph.map_objects(assignment_map)
    variables = _graph.graph_variables(graph, var_list, [v for g in groups for v in g])
    targets = collect_targets(variables) | _graph.object_targets(groups)
    plan = plan_restore(checkpoint, target_specs(targets), amap, **plan_kwargs)
    if policy.get("verify", False):
        _verify(plan)
    return plan, targets


def _verify(plan: RestorePlan) -> None:
    """Checks every planned tensor's size and CRC32C now (graph mode reads them later).

    Raises:
        CheckpointCorruptError: naming the tensor, before the graph changes.
    """
    from ._fastread import FastReader

    keys = list(dict.fromkeys(e.checkpoint_key for e in plan.entries))
    with FastReader(plan.checkpoint.bundle) as reader:
        fast = [k for k in keys if reader.dtype_of(k) is not None]
        reader.verify(fast)
    slow = set(keys) - set(fast)
    if slow:  # strings and other dtypes the fast reader leaves to the checked reader
        plan.checkpoint.read(sorted(slow))


def _eager_init(ckpt: Any, assignment_map: Any, var_list: Any, policy: dict[str, Any]) -> Any:
    exclude, plan_kwargs = _check_policy(policy)
    checkpoint = open_checkpoint(ckpt)
    amap = _make_map(assignment_map, exclude)
    variables = [p for v in (var_list or ()) for p in _graph.parts_of(v)]
    groups = _graph.map_objects(assignment_map)
    variables += [v for g in groups for v in g]
    if not variables:
        raise AssignmentMapError(
            "init_from_checkpoint in eager mode: there is no variable store to look names up "
            "in, and neither var_list= nor the assignment map gives a variable object, so "
            "nothing would be loaded (TensorFlow silently loads nothing here). Pass "
            "var_list=model.variables (names resolve against it), or map keys to variable "
            "objects: {'dense/kernel': layer.kernel}"
        )
    targets = collect_targets(variables) | _graph.object_targets(groups)
    try:
        plan = plan_restore(checkpoint, target_specs(targets), amap, **plan_kwargs)
    except AssignmentMapError as e:
        raise AssignmentMapError(
            f"{e}\n(in eager mode, names resolve only against var_list= and the variable "
            f"objects in the map: {', '.join(sorted(targets)[:5])}"
            f"{', ...' if len(targets) > 5 else ''})"
        ) from e
    return apply_plan(plan, targets)


# -- init_from_checkpoint ----------------------------------------------------------------


def init_from_checkpoint(
    ckpt_dir_or_file: Any,
    assignment_map: Any = None,
    *,
    var_list: Iterable[Any] | None = None,
    **policy: Any,
) -> RestoreReport:
    """Initializes variables from a checkpoint: ``tf.compat.v1.train.init_from_checkpoint``, checked.

    In graph mode, each planned variable's initializer is replaced by an assign from the
    checkpoint, as TF does; nothing runs until the initializer does, and re-running
    ``global_variables_initializer`` reloads. All tensors are read by one ``RestoreV2``
    op per task, so a failed read assigns nothing, and values never enter the GraphDef.
    In eager mode, values are assigned at once.

    Args:
        ckpt_dir_or_file: a directory (its latest checkpoint), a prefix, or an ``.index``
            or ``.data-*`` file.
        assignment_map: TF's grammar, ``{checkpoint_key_or_scope: target}`` where a target
            is a name, a scope, a variable, a list of partitions or a
            ``PartitionedVariable``; an :class:`~tf1compat_init.AssignmentMap`; or
            ``None``: every variable from the key of the same name.
        var_list: the variables names resolve against; by default the graph's global
            variables (graph mode). Required in eager mode unless the map holds objects.
        **policy: ``exclude``, ``on_missing``, ``on_mismatch``, ``optional``,
            ``on_conflict`` (see :func:`~tf1compat_init.plan_restore`), ``verify``
            (graph mode: check every planned tensor's CRC32C now; see the module doc).

    Returns:
        The :class:`~tf1compat_init.RestoreReport`; ``applied`` is ``True`` in eager mode
        and ``False`` in graph mode (the initializers load the values when they run).

    Raises:
        CheckpointNotFoundError: no checkpoint there (including ``None``, the value of
            ``tf.train.latest_checkpoint`` on a first run).
        AssignmentMapError: a malformed, reversed or empty rule.
        CheckpointMismatchError: missing keys, shape or dtype mismatches.

    Example:
        >>> with tf.Graph().as_default():  # doctest: +SKIP
        ...     build_model()
        ...     report = init_from_checkpoint("pretrained/", {"model/": "sub_model_2/"})
    """
    if tf.executing_eagerly():
        return _eager_init(ckpt_dir_or_file, assignment_map, var_list, policy)
    graph = _graph_or_raise("init_from_checkpoint")
    plan, targets = _plan_in_graph(graph, ckpt_dir_or_file, assignment_map, var_list, policy)
    n = _graph.override_initializers(plan, targets, graph)
    logger.info(
        "init_from_checkpoint: %d initializer(s) now restore from %s (%s)",
        n,
        plan.checkpoint.prefix,
        plan.report.summary(),
    )
    return plan.report


# -- the hook ----------------------------------------------------------------------------


class CheckpointInitHook(tf.compat.v1.train.SessionRunHook):
    """Warm-starts from a pretrained checkpoint once per run, never over resumed state.

    In ``begin()`` (the only time the graph may change) it calls
    :func:`init_from_checkpoint`, which overrides initializers. So:

    - on a first run, ``MonitoredTrainingSession`` runs the initializers: the variables
      get the pretrained values, and the ``ckpt-0`` that ``CheckpointSaverHook`` writes
      holds them;
    - on a resume, the session restores the run's own checkpoint and runs no initializer:
      the warm start is skipped, and resumed values are never overwritten;
    - non-chief workers never run initializers and see the chief's values.

    Args:
        ckpt_dir_or_file: the pretrained checkpoint (directory, prefix or file).
        assignment_map: as in :func:`init_from_checkpoint` (``None``: same names).
        allow_missing: when nothing is at ``ckpt_dir_or_file`` (``None`` included), log a
            warning and train from the initial values instead of raising.
        **policy: ``exclude``, ``on_missing``, ``on_mismatch``, ``optional``,
            ``on_conflict``, ``verify`` (as in :func:`init_from_checkpoint`).

    Attributes:
        report: the :class:`~tf1compat_init.RestoreReport` of the last ``begin()``, or
            ``None`` (before ``begin()``, or when the checkpoint was absent).

    Example:
        >>> hook = CheckpointInitHook("pretrained/", {"/": "encoder/"})  # doctest: +SKIP
        >>> with tf.compat.v1.train.MonitoredTrainingSession(  # doctest: +SKIP
        ...     checkpoint_dir=run_dir, hooks=[hook]) as sess: ...
    """

    def __init__(
        self,
        ckpt_dir_or_file: Any,
        assignment_map: Any = None,
        *,
        allow_missing: bool = False,
        **policy: Any,
    ) -> None:
        exclude, _ = _check_policy(policy)
        _make_map(assignment_map, exclude)  # a malformed map fails here, not at begin()
        self._ckpt = ckpt_dir_or_file
        self._map = assignment_map
        self._allow_missing = bool(allow_missing)
        self._policy = policy
        self.report: RestoreReport | None = None

    def begin(self) -> None:
        self.report = None
        path = _pretrained_path(self._ckpt, self._allow_missing, "CheckpointInitHook")
        if path is not None:
            self.report = init_from_checkpoint(path, self._map, **self._policy)


# -- Scaffold init_fn --------------------------------------------------------------------


class _InitFn:
    """``init_fn(scaffold, session)``: runs ops built earlier (the graph is final by then)."""

    def __init__(self, op: Any, report: RestoreReport) -> None:
        self.op = op
        self.report = report

    def __call__(self, scaffold: Any, session: Any) -> None:
        del scaffold  # the ops were built when scaffold_init_fn was called
        session.run(self.op)
        self.report.applied = True
        logger.info("scaffold init_fn: %s", self.report.summary())


def scaffold_init_fn(
    ckpt_dir_or_file: Any,
    assignment_map: Any = None,
    *,
    var_list: Iterable[Any] | None = None,
    allow_missing: bool = False,
    **policy: Any,
) -> Callable[[Any, Any], None] | None:
    """An ``init_fn(scaffold, session)`` for ``tf.compat.v1.train.Scaffold``.

    The plan is checked and the restore ops are built now, while the graph can change
    (a ``Saver`` created inside ``init_fn`` fails: the graph is finalized by then). The
    returned function only runs them. ``SessionManager`` calls it once, after
    ``init_op``, and only when the run's own checkpoint directory holds no checkpoint:
    on a resume the run's checkpoint is restored and the warm start is skipped.

    Args:
        ckpt_dir_or_file: the pretrained checkpoint.
        assignment_map: as in :func:`init_from_checkpoint`.
        var_list: the variables names resolve against (default: global variables).
        allow_missing: return ``None`` (with a warning) when nothing is at
            ``ckpt_dir_or_file``; ``Scaffold(init_fn=None)`` then trains from scratch.
        **policy: ``exclude``, ``on_missing``, ``on_mismatch``, ``optional``,
            ``on_conflict``, ``verify`` (as in :func:`init_from_checkpoint`).

    Returns:
        The ``init_fn`` (its ``.report`` is the plan's report), or ``None``.

    Example:
        >>> scaffold = tf.compat.v1.train.Scaffold(  # doctest: +SKIP
        ...     init_fn=scaffold_init_fn("pretrained/", {"/": "/"}))
    """
    exclude, _ = _check_policy(policy)
    _make_map(assignment_map, exclude)
    graph = _graph_or_raise("scaffold_init_fn")
    path = _pretrained_path(ckpt_dir_or_file, allow_missing, "scaffold_init_fn")
    if path is None:
        return None
    plan, targets = _plan_in_graph(graph, path, assignment_map, var_list, policy)
    built = _graph.assign_ops(plan, targets, graph, name="scaffold_init_fn")
    with graph.as_default(), graph.control_dependencies(None):
        op = tf.group(*[b[2] for b in built], name="scaffold_init_fn_restore")
    return _InitFn(op, plan.report)


# -- Saver from a plan -------------------------------------------------------------------


class PlannedSaver(tf.compat.v1.train.Saver):
    """A ``tf.compat.v1.train.Saver`` built from a checked plan (see :func:`restore_saver`).

    Attributes:
        report: the plan's :class:`~tf1compat_init.RestoreReport`.
        checkpoint_path: the checkpoint prefix the plan was made for.
        restored_variables: the variables (partitions one by one) it restores.
    """

    def __init__(self, var_list: dict[str, Any], report: RestoreReport, path: str) -> None:
        super().__init__(var_list=var_list)
        self.report = report
        self.checkpoint_path = path
        self.restored_variables = [
            p for v in var_list.values() for p in (v if isinstance(v, list) else [v])
        ]

    def restore(self, sess: Any, save_path: Any = None) -> None:
        """``Saver.restore``; ``save_path`` defaults to the planned checkpoint."""
        super().restore(sess, self.checkpoint_path if save_path is None else save_path)
        if save_path is None:
            self.report.applied = True


def restore_saver(
    ckpt_dir_or_file: Any,
    assignment_map: Any = None,
    *,
    var_list: Iterable[Any] | None = None,
    **policy: Any,
) -> PlannedSaver:
    """A ``tf.compat.v1.train.Saver`` that restores exactly what a checked plan loads.

    For hand-written ``Session`` loops that restore sub-models themselves. Its
    ``var_list`` is ``{checkpoint_key: variable or partitions}``, so ``restore(sess)``
    loads the planned keys into the planned variables (re-partitioning included).
    Initialize the other variables with :func:`init_unrestored`. Save with an ordinary
    ``Saver``: this one would write variables under the pretrained keys.

    Args:
        ckpt_dir_or_file: the pretrained checkpoint.
        assignment_map: as in :func:`init_from_checkpoint`.
        var_list: the variables names resolve against (default: global variables).
        **policy: ``exclude``, ``on_missing``, ``on_mismatch``, ``optional``,
            ``on_conflict``, ``verify`` (as in :func:`init_from_checkpoint`).

    Returns:
        A :class:`PlannedSaver` (a ``Saver``); ``saver.restore(sess)`` restores from the
        planned checkpoint.

    Raises:
        AssignmentMapError: the plan loads one checkpoint key into two variables, which a
            ``Saver`` cannot express (use :func:`scaffold_init_fn` or
            :func:`init_from_checkpoint`), besides the errors of :func:`init_from_checkpoint`.

    Example:
        >>> saver = restore_saver("pretrained/", {"model/": "sub_model_2/"})  # doctest: +SKIP
        >>> sess.run(init_unrestored(saver)); saver.restore(sess)  # doctest: +SKIP
    """
    graph = _graph_or_raise("restore_saver")
    plan, targets = _plan_in_graph(graph, ckpt_dir_or_file, assignment_map, var_list, policy)
    saver_vars: dict[str, Any] = {}
    loaded_by: dict[str, str] = {}
    for entry in plan.entries:
        key, target = entry.checkpoint_key, entry.target
        if key in loaded_by:
            raise AssignmentMapError(
                f"checkpoint key {key!r} loads into two variables, {loaded_by[key]!r} and "
                f"{target!r}; a Saver restores each key into one variable. Use "
                f"scaffold_init_fn or init_from_checkpoint for this map"
            )
        loaded_by[key] = target
        parts = [p.variable for p in targets[target].parts]
        # Partitions stay a list: the Saver then restores each one's slice of the tensor.
        sliced = any(getattr(p, "_save_slice_info", None) is not None for p in parts)
        saver_vars[key] = parts if sliced else parts[0]
    if not saver_vars:
        raise AssignmentMapError(
            f"the plan for {plan.checkpoint.prefix} loads nothing ({plan.report.summary()}), "
            f"so there is nothing for a Saver to restore"
        )
    with graph.as_default():
        return PlannedSaver(saver_vars, plan.report, plan.checkpoint.prefix)


def _saver_variables(saver: Any) -> list[Any]:
    restored = getattr(saver, "restored_variables", None)
    if restored is not None:
        return list(restored)
    var_list = getattr(saver, "_var_list", None)
    if var_list is None:  # Saver() with no var_list saves every saveable global variable
        return list(tf.compat.v1.global_variables())
    values = var_list.values() if isinstance(var_list, dict) else var_list
    out: list[Any] = []
    for v in values:
        try:
            out += _graph.parts_of(v)
        except TypeError:
            pass  # a SaveableObject or a Trackable: not a plain variable
    return out


def init_unrestored(*savers: Any, var_list: Iterable[Any] | None = None) -> Any:
    """An op initializing every variable that none of ``savers`` restores.

    Run it before ``saver.restore(sess)`` in a hand-written loop: together they give
    every variable a value without running an initializer over restored ones.

    Args:
        *savers: ``Saver`` objects (a :class:`PlannedSaver` or any other).
        var_list: the variables to consider (default: global variables).

    Returns:
        A ``tf.Operation`` (``variables_initializer`` of the others).

    Example:
        >>> sess.run(init_unrestored(saver_a, saver_b))  # doctest: +SKIP
    """
    _graph_or_raise("init_unrestored")
    restored = {id(v) for s in savers for v in _saver_variables(s)}
    candidates = tf.compat.v1.global_variables() if var_list is None else var_list
    others = [p for v in candidates for p in _graph.parts_of(v) if id(p) not in restored]
    return tf.compat.v1.variables_initializer(others, name="init_unrestored")


# -- warm_start --------------------------------------------------------------------------


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
    graph = _graph_or_raise("warm_start")
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
