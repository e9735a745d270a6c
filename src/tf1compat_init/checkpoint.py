# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf.train.Checkpoint``-era loaders: :func:`restore` and :func:`restore_or_initialize`.

TF's docs say there is no object-based equivalent of ``init_from_checkpoint`` in TF2:
``tf.train.Checkpoint.restore`` of a TF1 checkpoint changes nothing and raises nothing.
:func:`restore` is that equivalent. It names every variable under ``root`` by its object
path, resolves the assignment map against the checkpoint (TF1 name-based or TF2
object-based), checks shapes and dtypes, and only then assigns.

Target names, by root:

- a ``tf.Module`` (or any trackable): the attribute path, ``encoder/dense/w``
  (list items by index, ``layers/0/w``), as ``tf.train.Checkpoint`` names objects;
- a ``tf.train.Checkpoint(model=m)``: the same, so ``model/encoder/dense/w``; a Keras
  layer or model inside it is named by the Keras front end's model-relative names under
  its path (``model/dense/kernel``), since that is how TF1 checkpoints name Keras layers;
- a Keras model itself: handed to :func:`tf1compat_init.keras.plan_checkpoint`, so a
  Keras model is named (``dense/kernel``) and matched the same way by both front ends.

For an object-based (TF2) source, a non-Keras root is named by trackable object paths
throughout (Keras models inside included), since that is what such a checkpoint records;
the checkpoint side is its readable object path (``model/dense/kernel``, as
``tf1compat-init inspect`` shows it), so ``tf.train.Checkpoint(model=m)`` restores a
checkpoint written by ``tf.train.Checkpoint(model=m2)`` with no map.

TensorFlow is imported when these functions are called, not when this module is imported.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from .engine.grammar.mapping import AssignmentMap
from .engine.planning.plan import plan_restore
from .engine.planning.policy import UNSET, RestorePolicy
from .engine.planning.preamble import prepare
from .engine.planning.report import RestoreReport
from .engine.reading.reader import CheckpointInfo, open_checkpoint
from .engine.reading.view import NamedView, object_paths
from .errors import TargetError

__all__ = [
    "InitResult",
    "restore",
    "restore_or_initialize",
    "target_variables",
]

logger = logging.getLogger(__name__)


# -- the checkpoint side: object-based checkpoints by object path ---------------------------


def as_named_checkpoint(checkpoint: Any) -> Any:
    """Opens ``checkpoint`` (a path or an opened one) as the engine should see it.

    Name-based checkpoints are returned as they are; object-based ones as a
    :class:`~tf1compat_init.view.NamedView` by readable object path
    (``model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE`` as ``model/dense/kernel``; a key
    with no object path, or two keys sharing one, keeps its raw key).
    """
    if isinstance(checkpoint, NamedView) or (
        hasattr(checkpoint, "variables") and not isinstance(checkpoint, CheckpointInfo)
    ):
        return checkpoint
    info = checkpoint if isinstance(checkpoint, CheckpointInfo) else open_checkpoint(checkpoint)
    return object_paths(info) if info.format == "object-based" else info


# -- the target side: variables named by object path ----------------------------------------


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _is_keras(obj: Any) -> bool:
    """A Keras 3, tf_keras or Keras 2 layer or model (read off the class; imports no Keras)."""
    from .engine.targets.keras_names import keras_flavour

    try:
        keras_flavour(obj)
    except TypeError:
        return False
    return True


def _tf_variable(obj: Any) -> Any:
    """The ``tf.Variable`` to assign for a trackable leaf, or None if it is not a variable."""
    tf = _tf()
    if isinstance(obj, tf.Variable):
        return obj
    # A Keras 3 variable wraps a tf.Variable; the engine assigns the tf.Variable.
    inner = getattr(obj, "_value", None)
    if inner is not None and isinstance(inner, tf.Variable) and hasattr(obj, "assign"):
        return inner
    return None


def _assignable(obj: Any) -> Any:
    inner = _tf_variable(obj)  # never `or`: a variable's truth value is its value's
    return obj if inner is None else inner


def _keras_named_variables(layer: Any) -> list[tuple[str, Any]]:
    """``(model-relative name, tf.Variable)`` of a Keras model or layer, named exactly as
    the Keras front end names them (:func:`tf1compat_init.keras.weight_names`)."""
    from .engine.targets.keras_names import weight_names

    return [(name, _assignable(v)) for name, v in weight_names(layer).items()]


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def named_variables(root: Any, *, readable: bool = True) -> list[tuple[str, Any]]:
    """Every variable reachable from ``root``, as ``(object path, tf.Variable)``.

    Breadth first over ``tf.train.TrackableView.children``, as ``tf.train.Checkpoint``
    does, so each variable gets its shortest path.

    Args:
        root: a trackable (``tf.Module``, Keras model, ``tf.train.Checkpoint``).
        readable: name variables inside Keras models by the Keras front end's
            model-relative names instead of their trackable paths.
    """
    tf = _tf()
    if readable and _is_keras(root):
        return _keras_named_variables(root)
    paths: dict[int, str] = {id(root): ""}
    keep = [root]  # ids are only unique while the objects live
    queue = deque([root])
    out: list[tuple[str, Any]] = []
    seen_vars: set[int] = set()
    while queue:
        obj = queue.popleft()
        for name, child in tf.train.TrackableView.children(obj).items():
            if id(child) in paths:
                continue
            path = _join(paths[id(obj)], name)
            paths[id(child)] = path
            keep.append(child)
            variable = _tf_variable(child)
            if variable is not None:
                if id(variable) not in seen_vars:
                    seen_vars.add(id(variable))
                    out.append((path, variable))
                continue
            if readable and _is_keras(child):
                for sub, variable in _keras_named_variables(child):
                    if id(variable) not in seen_vars:
                        seen_vars.add(id(variable))
                        out.append((_join(path, sub), variable))
                continue
            queue.append(child)
    return out


def target_variables(root: Any, *, readable: bool = True) -> dict[str, Any]:
    """``root``'s variables as engine targets, by object path.

    Args:
        root: a ``tf.Module``, a Keras model or a ``tf.train.Checkpoint``.
        readable: Keras models by model-relative names (for name-based sources);
            ``False`` uses trackable paths throughout (for object-based sources).

    Returns:
        name -> :class:`~tf1compat_init.variables.TargetVariable`.

    Raises:
        TargetError: two variables get the same name, or ``root`` has no variables.

    Example:
        >>> sorted(target_variables(tf.train.Checkpoint(model=m)))  # doctest: +SKIP
        ['model/encoder/w']
    """
    from .engine.targets.variables import collect_targets

    pairs = named_variables(root, readable=readable)
    if not pairs:
        raise TargetError(
            f"{type(root).__name__} has no variables to restore; build the model first "
            f"(call it on a batch, or give it an Input) so that its variables exist"
        )
    names = {id(v): name for name, v in pairs}
    dup = _first_duplicate(name for name, _ in pairs)
    if dup is not None:
        raise TargetError(
            f"two variables of {type(root).__name__} are both named {dup!r}; give the layers "
            f"or modules distinct names so each can be restored"
        )
    return collect_targets([v for _, v in pairs], name_of=lambda v: names[id(v)])


def _first_duplicate(names: Any) -> str | None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            return n
        seen.add(n)
    return None


# -- restore -----------------------------------------------------------------------------


def plan_for_root(
    root: Any,
    checkpoint: Any,
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
) -> tuple[Any, dict[str, Any]]:
    """The checked plan for restoring ``root`` from ``checkpoint``, and its targets.

    Nothing is assigned. See :func:`restore` for the arguments.
    """
    # Before the checkpoint is opened or a variable is looked at, in the policy's words.
    given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
    given.update(optional=optional, on_conflict=on_conflict, staging=staging)
    assignment_map, policy = prepare("plan_for_root", assignment_map, recipe, policy, given)
    source = as_named_checkpoint(checkpoint)
    readable = getattr(source, "format", "name-based") != "object-based"
    targets = target_variables(root, readable=readable)
    ids = {id(p.variable): name for name, t in targets.items() for p in t.parts}

    def name_of(value: Any) -> str:
        parts = list(value) if isinstance(value, list | tuple) else [value]
        found = {ids.get(id(_assignable(p))) for p in parts}
        if None in found or len(found) != 1:
            raise ValueError(f"{type(value).__name__} is not a variable of the root object")
        return found.pop()

    amap = AssignmentMap(assignment_map, name_of=name_of)
    from .engine.targets.variables import target_specs

    plan = plan_restore(source, target_specs(targets), amap, policy=policy)
    return plan, targets


def restore(
    root: Any,
    ckpt_dir_or_file: Any,
    assignment_map: Any = None,
    *,
    exclude: Any = UNSET,
    on_missing: str = UNSET,
    on_mismatch: str = UNSET,
    optional: Any = UNSET,
    on_conflict: str = UNSET,
    staging: str = UNSET,
    recipe: Any = None,
    policy: RestorePolicy | None = None,
) -> RestoreReport:
    """Restores ``root``'s variables from a TF1 or TF2 checkpoint, checked, all or nothing.

    Args:
        root: a ``tf.Module``, a Keras model (built) or a ``tf.train.Checkpoint``.
        ckpt_dir_or_file: a checkpoint directory, prefix, ``.index`` or ``.data-*`` path,
            or an opened :class:`~tf1compat_init.CheckpointInfo`.
        assignment_map: TF1's grammar ``{checkpoint_key_or_scope: target}`` over the
            target names described in this module's docstring; ``None`` matches equal
            names. Values may also be variables of ``root``, and carry tensor transforms
            (:mod:`tf1compat_init.transforms`); a ``Recipe`` is accepted as the map.
        exclude: regexes; a pair is dropped when its checkpoint key or target matches.
        on_missing, on_mismatch, optional, on_conflict: the policies of
            :func:`~tf1compat_init.plan_restore` (defaults ``"error"``, ``"error"``,
            :data:`~tf1compat_init.DEFAULT_OPTIONAL`, ``"error"``).
        staging: ``"stream"`` (default) or ``"all"`` (see :mod:`tf1compat_init.apply`).
        recipe: a registered recipe's name or a ``Recipe``, instead of ``assignment_map``.
        policy: the keywords above (not ``recipe``) as one
            :class:`~tf1compat_init.RestorePolicy`; a keyword given as well replaces that
            field.

    Returns:
        The :class:`~tf1compat_init.RestoreReport` (``applied=True``).

    Raises:
        CheckpointNotFoundError: no checkpoint at ``ckpt_dir_or_file``.
        AssignmentMapError: a rule is malformed, reversed, or matches nothing.
        CheckpointMismatchError: shapes, dtypes or missing keys (nothing was assigned).

    Example:
        >>> report = restore(tf.train.Checkpoint(model=model), "tf1_ckpt/",
        ...                  {"/": "model/"})  # doctest: +SKIP
        >>> report.summary()  # doctest: +SKIP
        '4 loaded, 0 missing, 0 mismatched, 0 untouched, 1 unused'
    """
    from .apply import apply_plan

    given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
    given.update(optional=optional, on_conflict=on_conflict, staging=staging)
    # Checked here too (plan_checkpoint and plan_for_root check again): the Keras
    # dispatch below must not be reached with a bad value.
    assignment_map, policy = prepare("restore", assignment_map, recipe, policy, given)
    if _is_keras(root):
        # A Keras model is the Keras front end's: its names, its view of object-based
        # checkpoints, its "auto" map. This is a thin adapter, so the two never disagree.
        from .keras import plan_checkpoint

        path = getattr(ckpt_dir_or_file, "prefix", ckpt_dir_or_file)
        plan, targets = plan_checkpoint(root, path, assignment_map, policy=policy)
    else:
        plan, targets = plan_for_root(root, ckpt_dir_or_file, assignment_map, policy=policy)
    return apply_plan(plan, targets)


# -- restore_or_initialize -----------------------------------------------------------------


@dataclass(frozen=True)
class InitResult:
    """What :func:`restore_or_initialize` did.

    Attributes:
        outcome: ``"resumed"`` (the run's own checkpoint was restored),
            ``"warm_started"`` (loaded from ``warm_start_from``) or ``"initialized"``
            (nothing to load; variables keep their initial values).
        checkpoint: the checkpoint loaded, or ``None``.
        report: the :class:`~tf1compat_init.RestoreReport` of a warm start, else ``None``.
        status: TensorFlow's load status of a resume (``assert_consumed()`` etc.), else
            ``None``.
    """

    outcome: str
    checkpoint: str | None = None
    report: RestoreReport | None = None
    status: Any = None

    def __str__(self) -> str:
        where = f" from {self.checkpoint}" if self.checkpoint else ""
        summary = f" ({self.report.summary()})" if self.report is not None else ""
        return f"{self.outcome}{where}{summary}"


def restore_or_initialize(
    manager: Any,
    warm_start_from: Any = None,
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
) -> InitResult:
    """Resumes a ``tf.train.CheckpointManager``'s run, or warm-starts it once.

    Resume beats warm start: if ``manager.directory`` holds a checkpoint, it is restored
    (``manager.restore_or_initialize()``) and ``warm_start_from`` is ignored, so a
    restarted job never reloads the pretrained weights over its own progress. Otherwise
    the variables of ``manager.checkpoint`` are loaded from ``warm_start_from`` with
    :func:`restore` (names as ``model/...``, per the checkpoint's attributes). Otherwise
    they keep their initial values (and the manager's ``init_fn``, if any, runs).

    Args:
        manager: a ``tf.train.CheckpointManager``.
        warm_start_from: a pretrained checkpoint (directory or prefix), or ``None``.
        assignment_map: the map for the warm start (see :func:`restore`).
        recipe: as in :func:`restore`.
        policy: a :class:`~tf1compat_init.RestorePolicy` for the warm start; keywords
            below replace its fields.
        exclude, on_missing, on_mismatch, optional, on_conflict, staging: as in
            :func:`restore`.

    Returns:
        An :class:`InitResult`.

    Raises:
        As :func:`restore`, for the warm start; nothing is assigned on error.

    Example:
        >>> manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=m), "run/", 3)
        ...     # doctest: +SKIP
        >>> restore_or_initialize(manager, "pretrained/", {"/": "model/"}).outcome
        ...     # doctest: +SKIP
        'warm_started'
    """
    # Checked before the resume branch, so a bad value fails on every run, not only on
    # the one that warm-starts.
    given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
    given.update(optional=optional, on_conflict=on_conflict, staging=staging)
    assignment_map, policy = prepare("restore_or_initialize", assignment_map, recipe, policy, given)
    latest = manager.latest_checkpoint
    if latest:
        status = manager.checkpoint.restore(latest)
        logger.info("resumed from %s; warm start skipped", latest)
        return InitResult("resumed", latest, None, status)
    if warm_start_from is not None:
        report = restore(manager.checkpoint, warm_start_from, assignment_map, policy=policy)
        logger.info("warm-started from %s: %s", report.checkpoint, report.summary())
        return InitResult("warm_started", report.checkpoint, report, None)
    manager.restore_or_initialize()  # runs the manager's init_fn, if it has one
    return InitResult("initialized")
