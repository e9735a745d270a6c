# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""A ``Saver`` from a checked plan, and initializing what it does not restore.

Public through :mod:`tf1compat_init.v1`; imports TensorFlow.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tensorflow as tf

from ..engine.planning.policy import UNSET, RestorePolicy
from ..engine.planning.preamble import prepare
from ..engine.planning.report import RestoreReport
from ..errors import AssignmentMapError
from . import _graph
from ._plan import graph_or_raise, plan_in_graph


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
    recipe: Any = None,
    policy: RestorePolicy | None = None,
    exclude: Any = UNSET,
    on_missing: str = UNSET,
    on_mismatch: str = UNSET,
    optional: Any = UNSET,
    on_conflict: str = UNSET,
    staging: str = UNSET,
    verify: bool = UNSET,
) -> PlannedSaver:
    """A ``tf.compat.v1.train.Saver`` that restores exactly what a checked plan loads.

    For hand-written ``Session`` loops that restore sub-models themselves. Its
    ``var_list`` is ``{checkpoint_key: variable or partitions}``, so ``restore(sess)``
    loads the planned keys into the planned variables (re-partitioning included).
    Initialize the other variables with :func:`init_unrestored`. Save with an ordinary
    ``Saver``: this one would write variables under the pretrained keys.

    Args:
        ckpt_dir_or_file: the pretrained checkpoint.
        assignment_map: as in :func:`~tf1compat_init.v1.init_from_checkpoint`.
        var_list: the variables names resolve against (default: global variables).
        recipe: as in :func:`~tf1compat_init.v1.init_from_checkpoint`.
        policy: a :class:`~tf1compat_init.RestorePolicy`; keywords below replace its fields.
        exclude, on_missing, on_mismatch, optional, on_conflict, staging, verify: as in
            :func:`~tf1compat_init.v1.init_from_checkpoint`.

    Returns:
        A :class:`PlannedSaver` (a ``Saver``); ``saver.restore(sess)`` restores from the
        planned checkpoint.

    Raises:
        AssignmentMapError: the plan loads one checkpoint key into two variables, which a
            ``Saver`` cannot express (use :func:`~tf1compat_init.v1.scaffold_init_fn` or
            :func:`~tf1compat_init.v1.init_from_checkpoint`), besides the errors of :func:`~tf1compat_init.v1.init_from_checkpoint`.

    Example:
        >>> saver = restore_saver("pretrained/", {"model/": "sub_model_2/"})  # doctest: +SKIP
        >>> sess.run(init_unrestored(saver)); saver.restore(sess)  # doctest: +SKIP
    """
    given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
    given.update(optional=optional, on_conflict=on_conflict, staging=staging, verify=verify)
    assignment_map, policy = prepare("restore_saver", assignment_map, recipe, policy, given)
    graph = graph_or_raise("restore_saver")
    plan, targets = plan_in_graph(graph, ckpt_dir_or_file, assignment_map, var_list, policy)
    saver_vars: dict[str, Any] = {}
    loaded_by: dict[str, str] = {}
    for entry in plan.entries:
        key, target = entry.checkpoint_key, entry.target
        if entry.route is not None:
            raise AssignmentMapError(
                f"rule {entry.rule.text} transforms the value ({entry.route.text}), which a "
                f"Saver cannot do: it restores each key as stored. Use scaffold_init_fn or "
                f"init_from_checkpoint for this map"
            )
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
    graph_or_raise("init_unrestored")
    restored = {id(v) for s in savers for v in _saver_variables(s)}
    candidates = tf.compat.v1.global_variables() if var_list is None else var_list
    others = [p for v in candidates for p in _graph.parts_of(v) if id(p) not in restored]
    return tf.compat.v1.variables_initializer(others, name="init_unrestored")
