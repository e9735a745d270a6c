# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``tf.compat.v1`` front end: checked, cheap warm starts for TF1 training code.

- :func:`init_from_checkpoint`: a drop-in for ``tf.compat.v1.train.init_from_checkpoint``.
  In graph mode it overrides initializers, as TF does, so a run that resumes from its own
  checkpoint restores that one instead, and the first checkpoint a ``CheckpointSaverHook``
  writes already holds the warm-started values. In eager mode it assigns at once.
- :class:`CheckpointInitHook`: the same as a ``SessionRunHook`` (for
  ``MonitoredTrainingSession`` and ``tf.estimator``), all graph work in ``begin()``.
- :func:`scaffold_init_fn`: an ``init_fn`` for ``tf.compat.v1.train.Scaffold``.
- :func:`warm_start`: ``tf.compat.v1.train.warm_start``'s selection rules and vocabulary remapping (``VocabInfo``), checked.
- :func:`restore_saver` and :func:`init_unrestored`: for hand-written ``Session`` loops.
- :class:`CheckpointSaverHook` and :func:`can_save_graph_def`: ``graph.pbtxt`` on
  TensorFlow 2.20 with protobuf >= 7, where TensorFlow's own writer raises ``TypeError``
  (importing this module there logs the fix once).

Every entry point plans first with the engine (:func:`~tf1compat_init.plan_restore`):
a malformed or reversed map, a missing key, a shape or dtype mismatch is raised before
the graph or any variable changes. The assignment-map grammar is TF's,
``{checkpoint_key_or_scope: target_name_or_scope_or_variable}`` (see
:mod:`tf1compat_init.mapping`); ``None`` maps every variable to the key of the same name.

One difference from TF: string targets resolve against every global variable of the
graph (``tf.Variable`` and Keras variables included), not only against ``get_variable``
variables in the variable store. In eager mode there is no graph to search, so names
resolve against ``var_list=`` and the variable objects in the map.

Policy keywords (one keyword argument each, or ``policy=`` a
:class:`~tf1compat_init.RestorePolicy`; a keyword given as well replaces that field), as
in :func:`~tf1compat_init.plan_restore`: ``on_missing``, ``on_mismatch``, ``optional``,
``on_conflict``, plus ``exclude`` (regexes, see :class:`~tf1compat_init.AssignmentMap`),
``staging`` (eager mode, see
:mod:`tf1compat_init.apply`; graph mode's one ``RestoreV2`` op reads every value before
any assign) and, in graph mode, ``verify``:
``True`` reads every planned tensor at call time and checks its CRC32C, so a corrupt
checkpoint raises :class:`~tf1compat_init.CheckpointCorruptError` naming the tensor
before the graph changes. By default graph mode reads only the index (TensorFlow's
``RestoreV2`` checks the checksums when the initializers run, and then assigns
nothing if one fails); eager mode always verifies before the first assign.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import tensorflow as tf

from ..engine.planning.policy import UNSET, RestorePolicy
from ..engine.planning.preamble import prepare
from ..engine.planning.report import RestoreReport
from ..engine.reading.reader import pretrained_path
from . import _graph, graph_def
from ._plan import eager_init, graph_or_raise, make_map, plan_in_graph
from ._saver import PlannedSaver, init_unrestored, restore_saver
from ._warm_start import warm_start
from .graph_def import CheckpointSaverHook, can_save_graph_def

__all__ = [
    "CheckpointInitHook",
    "CheckpointSaverHook",
    "PlannedSaver",
    "can_save_graph_def",
    "init_from_checkpoint",
    "init_unrestored",
    "restore_saver",
    "scaffold_init_fn",
    "warm_start",
]

logger = logging.getLogger(__name__)

# User code that builds TensorFlow's MonitoredTrainingSession crashes in TensorFlow where
# graph.pbtxt cannot be written; say so once, with the fix, rather than patch TensorFlow.
graph_def.warn_once()


# -- init_from_checkpoint ----------------------------------------------------------------


def init_from_checkpoint(
    ckpt_dir_or_file: Any,
    assignment_map: Any = None,
    *,
    var_list: Iterable[Any] | None = None,
    recipe: Any = None,
    policy: RestorePolicy | None = None,
    exclude: Any = UNSET,
    on_missing: str = UNSET,
    on_mismatch: str = UNSET,
    optional: Any = UNSET,
    on_conflict: str = UNSET,
    staging: str = UNSET,
    verify: bool = UNSET,
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
        recipe: a registered recipe's name or a ``Recipe``, instead of a map.
        policy: a :class:`~tf1compat_init.RestorePolicy`; a policy keyword below given
            as well replaces that field (an unset one keeps the policy's value).
        exclude, on_missing, on_mismatch, optional, on_conflict: the policies of
            :func:`~tf1compat_init.plan_restore` (defaults ``()``, ``"error"``,
            ``"error"``, :data:`~tf1compat_init.DEFAULT_OPTIONAL`, ``"error"``).
        staging: eager mode: ``"stream"`` (default) or ``"all"`` (see
            :mod:`tf1compat_init.apply`).
        verify: graph mode: check every planned tensor's CRC32C now (see the module
            doc; default ``False``).

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
    given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
    given.update(optional=optional, on_conflict=on_conflict, staging=staging, verify=verify)
    assignment_map, policy = prepare("init_from_checkpoint", assignment_map, recipe, policy, given)
    if tf.executing_eagerly():
        return eager_init(ckpt_dir_or_file, assignment_map, var_list, policy)
    graph = graph_or_raise("init_from_checkpoint")
    plan, targets = plan_in_graph(graph, ckpt_dir_or_file, assignment_map, var_list, policy)
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

    The session's ``init_op`` must be built after ``begin()``, as ``Scaffold`` does by
    default: an ``init_op`` grouped earlier holds the old initializers (as with TF's own
    ``init_from_checkpoint``).

    Args:
        ckpt_dir_or_file: the pretrained checkpoint (directory, prefix or file).
        assignment_map: as in :func:`init_from_checkpoint` (``None``: same names).
        allow_missing: when nothing is at ``ckpt_dir_or_file`` (``None`` included), log a
            warning and train from the initial values instead of raising.
        recipe: as in :func:`init_from_checkpoint`.
        policy: a :class:`~tf1compat_init.RestorePolicy`; keywords below replace its fields.
        exclude, on_missing, on_mismatch, optional, on_conflict, staging, verify: as in
            :func:`init_from_checkpoint`.

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
        recipe: Any = None,
        policy: RestorePolicy | None = None,
        exclude: Any = UNSET,
        on_missing: str = UNSET,
        on_mismatch: str = UNSET,
        optional: Any = UNSET,
        on_conflict: str = UNSET,
        staging: str = UNSET,
        verify: bool = UNSET,
    ) -> None:
        given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
        given.update(optional=optional, on_conflict=on_conflict, staging=staging, verify=verify)
        assignment_map, policy = prepare(
            "CheckpointInitHook", assignment_map, recipe, policy, given
        )
        make_map(assignment_map, policy.exclude)  # a malformed map fails here, not at begin()
        self._ckpt = ckpt_dir_or_file
        self._map = assignment_map
        self._allow_missing = bool(allow_missing)
        self._policy = policy
        self.report: RestoreReport | None = None

    def begin(self) -> None:
        self.report = None
        path = pretrained_path(self._ckpt, self._allow_missing, "CheckpointInitHook")
        if path is not None:
            self.report = init_from_checkpoint(path, self._map, policy=self._policy)


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
    recipe: Any = None,
    policy: RestorePolicy | None = None,
    exclude: Any = UNSET,
    on_missing: str = UNSET,
    on_mismatch: str = UNSET,
    optional: Any = UNSET,
    on_conflict: str = UNSET,
    staging: str = UNSET,
    verify: bool = UNSET,
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
        recipe: as in :func:`init_from_checkpoint`.
        policy: a :class:`~tf1compat_init.RestorePolicy`; keywords below replace its fields.
        exclude, on_missing, on_mismatch, optional, on_conflict, staging, verify: as in
            :func:`init_from_checkpoint`.

    Returns:
        The ``init_fn`` (its ``.report`` is the plan's report), or ``None``.

    Example:
        >>> scaffold = tf.compat.v1.train.Scaffold(  # doctest: +SKIP
        ...     init_fn=scaffold_init_fn("pretrained/", {"/": "/"}))
    """
    given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
    given.update(optional=optional, on_conflict=on_conflict, staging=staging, verify=verify)
    assignment_map, policy = prepare("scaffold_init_fn", assignment_map, recipe, policy, given)
    make_map(assignment_map, policy.exclude)
    graph = graph_or_raise("scaffold_init_fn")
    path = pretrained_path(ckpt_dir_or_file, allow_missing, "scaffold_init_fn")
    if path is None:
        return None
    plan, targets = plan_in_graph(graph, path, assignment_map, var_list, policy)
    built = _graph.assign_ops(plan, targets, graph, name="scaffold_init_fn")
    with graph.as_default(), graph.control_dependencies(None):
        op = tf.group(*[b[2] for b in built], name="scaffold_init_fn_restore")
    return _InitFn(op, plan.report)
