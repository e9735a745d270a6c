# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Graph mode with tensor transforms: TensorFlow ops between ``RestoreV2`` and the assign.

Each transform builds its own ops (:meth:`~tf1compat_init.transforms.Transform.graph`:
``Reshape``, ``Transpose``, ``Split``, ``ConcatV2``, ``Cast``, TF's vocabulary
remapping) on the batched read's outputs, with the shapes the plan computed, so the
values are still read when the initializer runs (TF1's semantics) and never enter the
GraphDef. ``fn`` cannot be expressed (see
:func:`check_graph_routes`). Used by :mod:`tf1compat_init._v1_graph`; imports TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import tensorflow as tf

from ..engine.basics.dtype_names import tf_dtype
from ..engine.planning.plan import RestorePlan
from ..engine.targets.variables import Part, TargetVariable
from ..errors import AssignmentMapError


def add_reads(
    plan: RestorePlan,
    routed: list[Any],
    targets: Mapping[str, TargetVariable],
    reads: dict[str, dict[tuple[str, str, Any], int]],
    host_cache: dict[str, str],
    host_device: Callable[[str, dict[str, str]], str],
) -> dict[Any, str]:
    """Adds each route's whole-tensor reads to ``reads``; returns route group -> host."""
    ckpt_vars = plan.checkpoint.variables
    hosts: dict[Any, str] = {}
    for entry in routed:
        group = entry.route.group
        if group in hosts:
            continue
        device = targets[entry.target].parts[0].variable.device
        host = hosts[group] = host_device(device, host_cache)
        slots = reads.setdefault(host, {})
        for key in group.keys:
            dtype = tf_dtype(ckpt_vars[key].dtype)
            slots.setdefault((key, "", dtype), len(slots))
    return hosts


def check_graph_routes(plan: RestorePlan) -> None:
    """Rejects transforms a TF1 graph initializer cannot run, before the graph changes.

    ``reshape``, ``transpose``, ``split``, ``concat``, ``cast`` and ``remap_vocab`` (TF's
    ``GenerateVocabRemapping`` kernel reading the vocabulary files) become TensorFlow ops
    between the ``RestoreV2`` read and the assign, so the values are still read when the
    initializer runs (TF1's semantics). ``fn`` runs Python on numpy arrays, which a
    graph (possibly run on another task, or serialized) cannot.
    """
    for entry in plan.entries:
        if entry.route is None:
            continue
        for step in entry.route.steps:
            if not step.graph_form:
                raise AssignmentMapError(
                    f"rule {entry.rule.text}: {step.text} runs Python on numpy arrays, which a "
                    f"TF1 graph initializer cannot do (it runs later, possibly on another "
                    f"task); nothing was changed. Use the built-in transforms, load in eager "
                    f"mode (tf1compat_init.keras / .checkpoint / v1 eager), or migrate the "
                    f"checkpoint first (tf1compat_init.migrate) and load the result"
                )


def _graph_pipeline(route: Any, values: list[Any], ins: list[Any], shapes: list[Any]) -> list:
    """The route's transforms as TensorFlow ops, shapes as planned (fully static)."""
    state, specs = list(values), list(ins)
    for step in route.steps:
        specs_out = step.specs(specs, shapes)
        state = step.graph(state, specs, specs_out)
        specs = specs_out
    return state


def assigns(
    plan: RestorePlan,
    routed: list[Any],
    targets: Mapping[str, TargetVariable],
    route_hosts: dict[Any, str],
    reads: dict[str, dict[tuple[str, str, Any], int]],
    outputs: dict[str, list[Any]],
    maker: Any,
) -> list[tuple[Part, Any, Any]]:
    ckpt_vars = plan.checkpoint.variables
    computed: dict[Any, list[Any]] = {}
    out = []
    for entry in routed:
        group = entry.route.group
        host = route_hosts[group]
        if group not in computed:
            slots = reads[host]
            ins = [(ckpt_vars[k].shape, ckpt_vars[k].dtype) for k in group.keys]
            values = []
            for key in group.keys:
                dtype = tf_dtype(ckpt_vars[key].dtype)
                value = outputs[host][slots[(key, "", dtype)]]
                value.set_shape(ckpt_vars[key].shape)
                values.append(value)
            shapes = list(group.shapes or [targets[t].shape for t in group.targets])
            with maker.graph.device(host):
                computed[group] = _graph_pipeline(group, values, ins, shapes)
        value = computed[group][entry.route.index]
        target = targets[entry.target]
        for part in target.parts:
            device = part.variable.device
            piece = value
            if getattr(part.variable, "_save_slice_info", None) is not None:
                with maker.graph.device(host):
                    piece = tf.slice(value, list(part.offset), list(part.shape))
            known = target.shape is not None and None not in target.shape
            out.append((part, piece, maker.assign(part.variable, piece, device, known)))
    return out
