# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Shared steps of the ``tf.compat.v1`` front end: graph checks and planning.

Used by :mod:`tf1compat_init.v1` and its private helpers; imports TensorFlow.
"""

from __future__ import annotations

import logging
from typing import Any

import tensorflow as tf

from ..apply import apply_plan
from ..engine.grammar.mapping import AssignmentMap
from ..engine.planning.plan import RestorePlan, plan_restore
from ..engine.planning.policy import RestorePolicy
from ..engine.reading.reader import open_checkpoint
from ..engine.targets.variables import TargetVariable, collect_targets, target_specs
from ..errors import AssignmentMapError
from . import _graph, _routes

logger = logging.getLogger("tf1compat_init.v1")

# -- shared steps ------------------------------------------------------------------------


def make_map(assignment_map: Any, exclude: Any = ()) -> AssignmentMap:
    # Planning adds the policy's exclude patterns; a front end passes them only to check
    # the map early.
    return AssignmentMap(assignment_map, exclude=exclude, name_of=_graph.name_of)


def graph_or_raise(api: str) -> Any:
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


def plan_in_graph(
    graph: Any, ckpt: Any, assignment_map: Any, var_list: Any, policy: RestorePolicy
) -> tuple[RestorePlan, dict[str, TargetVariable]]:
    checkpoint = open_checkpoint(ckpt)
    amap = make_map(assignment_map)
    groups = _graph.map_objects(assignment_map)
    variables = _graph.graph_variables(graph, var_list, [v for g in groups for v in g])
    targets = collect_targets(variables) | _graph.object_targets(groups)
    plan = plan_restore(checkpoint, target_specs(targets), amap, policy=policy)
    _routes.check_graph_routes(plan)
    if policy.verify:
        verify_plan(plan)
    return plan, targets


def verify_plan(plan: RestorePlan) -> None:
    """Checks every planned tensor's size and CRC32C now (graph mode reads them later).

    Raises:
        CheckpointCorruptError: naming the tensor, before the graph changes.
    """
    from ..bundle.remote import reader_for

    keys = list(dict.fromkeys(k for e in plan.entries for k in e.keys))
    with reader_for(plan.checkpoint.bundle) as reader:
        fast = [k for k in keys if reader.dtype_of(k) is not None]
        reader.verify(fast)
    slow = set(keys) - set(fast)
    if slow:  # strings and other dtypes the fast reader leaves to the checked reader
        plan.checkpoint.read(sorted(slow))


def eager_init(ckpt: Any, assignment_map: Any, var_list: Any, policy: RestorePolicy) -> Any:
    checkpoint = open_checkpoint(ckpt)
    amap = make_map(assignment_map)
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
        plan = plan_restore(checkpoint, target_specs(targets), amap, policy=policy)
    except AssignmentMapError as e:
        raise AssignmentMapError(
            f"{e}\n(in eager mode, names resolve only against var_list= and the variable "
            f"objects in the map: {', '.join(sorted(targets)[:5])}"
            f"{', ...' if len(targets) > 5 else ''})"
        ) from e
    return apply_plan(plan, targets)
