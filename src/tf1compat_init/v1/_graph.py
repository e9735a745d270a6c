# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Graph-mode machinery of the ``tf.compat.v1`` front end: targets, one batched restore.

TF's ``init_from_checkpoint`` adds one ``RestoreV2`` op (plus its constants and a
saveable wrapper) per variable. Here the planned tensors of one host are read by one
``RestoreV2`` op, or, for a big restore, by one op per reader thread (balanced by
bytes, run in parallel by the session: 512 MiB in 16 tensors, 203 to 121 ms on two
cores), and each variable (or partition) gets exactly one assign op fed by them,
waiting for all of them. That keeps graph building cheap, makes a failing read (a bad
checksum, a missing shard) assign nothing, and keeps checkpoint values out of the
GraphDef: they are read when the ops run.

Imports TensorFlow; used only by :mod:`tf1compat_init.v1`.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2, node_def_pb2
from tensorflow.python.framework import ops as _tf_ops
from tensorflow.python.ops import resource_variable_ops

from .. import transforms as tt
from ..bundle.fastread import default_threads
from ..engine.grammar.mapping import AssignmentMap
from ..engine.planning.plan import RestorePlan
from ..engine.targets.variables import Part, TargetVariable, collect_targets, target_name
from . import _routes

__all__ = [
    "assign_ops",
    "graph_variables",
    "is_variable",
    "map_objects",
    "name_of",
    "override_initializers",
    "parts_of",
]


# -- targets -----------------------------------------------------------------------------


def is_variable(obj: Any) -> bool:
    """A TF variable (resource or ref, graph or eager), not a ``PartitionedVariable``."""
    return isinstance(obj, tf.Variable)


def is_partitioned(obj: Any) -> bool:
    return type(obj).__name__ == "PartitionedVariable"


def parts_of(obj: Any) -> list[Any]:
    """The variables behind a map value: a variable, a partition list, a PartitionedVariable.

    Raises:
        TypeError: ``obj`` is none of those (the message says what was received).
    """
    if is_partitioned(obj):
        return list(obj)
    if is_variable(obj):
        return [obj]
    if isinstance(obj, list | tuple) and obj and all(is_variable(v) for v in obj):
        if len(obj) == 1:
            return list(obj)
        infos = [getattr(v, "_save_slice_info", None) for v in obj]
        if any(i is None for i in infos):
            raise TypeError(
                "a list of variables must hold the partitions of one partitioned variable; "
                f"{[v.name for v, i in zip(obj, infos, strict=True) if i is None]} "
                "are not partitions"
            )
        names = sorted({i.full_name for i in infos})
        if len(names) > 1:
            raise TypeError(f"a partition list must come from one variable, got parts of {names}")
        return list(obj)
    raise TypeError(
        "the target must be a name or scope (str), a variable, a list of the partitions of "
        f"one variable, or a PartitionedVariable; got {type(obj).__name__}"
    )


def name_of(obj: Any) -> str:
    """The target name of a map value given as an object (``AssignmentMap(name_of=...)``)."""
    parts = parts_of(obj)
    return target_name(parts[0])


def map_objects(assignment_map: Any) -> list[list[Any]]:
    """The variables of each target given as an object in ``assignment_map``, one list each."""
    if isinstance(assignment_map, AssignmentMap | tt.Recipe):
        return map_objects(assignment_map.rules)
    if isinstance(assignment_map, Mapping):
        values: Iterable[Any] = assignment_map.values()
    elif isinstance(assignment_map, list | tuple):
        values = [p[1] for p in assignment_map if isinstance(p, list | tuple) and len(p) == 2]
    else:
        return []
    out: list[list[Any]] = []
    for value in values:
        if not isinstance(value, str):
            try:
                out.append(parts_of(value))
            except TypeError:
                pass  # AssignmentMap reports it with the rule's text
    return out


def object_targets(groups: Iterable[list[Any]]) -> dict[str, TargetVariable]:
    """Targets made of exactly the partitions a map names, to override collected ones.

    ``{"emb": [part_0, part_2]}`` is the target ``emb`` with those two parts only, which
    do not tile it: :class:`~tf1compat_init.errors.TargetError`, rather than restoring
    the unnamed ``part_1`` too (or only a slice of the tensor).

    A plain variable given alone is left out: its target is the one
    :func:`collect_targets` makes for it, and both callers collect every variable of
    the map (a map of 2,000 variable objects spent 14 ms making each target twice).
    """
    out: dict[str, TargetVariable] = {}
    for parts in groups:
        if len(parts) == 1 and getattr(parts[0], "_save_slice_info", None) is None:
            continue
        out.update(collect_targets(parts))
    return out


def graph_variables(graph: Any, var_list: Iterable[Any] | None, extra: Iterable[Any]) -> list[Any]:
    """``var_list`` (or the graph's global variables) plus ``extra``, all from ``graph``.

    Raises:
        ValueError: a variable belongs to another graph.
    """
    if var_list is None:
        variables = list(graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES))
    else:
        variables = []
        for v in var_list:
            variables += parts_of(v)
    variables += list(extra)
    for v in variables:
        if v.graph is not graph:
            raise ValueError(
                f"variable {v.name} belongs to another graph than the default graph; call this "
                f"inside `with graph.as_default():` of the graph that holds the variables"
            )
    return variables


# -- the batched restore -----------------------------------------------------------------


def _slice_spec(full_shape: tuple[int, ...], part: Part) -> str:
    """TF's shape-and-slice spec for ``part`` (``""`` when it is the whole tensor)."""
    if getattr(part.variable, "_save_slice_info", None) is None:
        return ""  # not a partition (its part shape may even be unknown)
    if tuple(part.shape) == tuple(full_shape) and not any(part.offset):
        return ""
    dims = " ".join(str(d) for d in full_shape)
    ranges = ":".join(f"{o},{s}" for o, s in zip(part.offset, part.shape, strict=True))
    return f"{dims} {ranges}"


def _host_device(device: str, cache: dict[str, str]) -> str:
    """The CPU of the task that holds a variable: where TF runs its restore op too."""
    host = cache.get(device)
    if host is None:
        spec = tf.DeviceSpec.from_string(device or "")
        host = spec.replace(device_type="CPU", device_index=0).to_string()
        cache[device] = host
    return host


@contextlib.contextmanager
def _clean_scope(graph: Any, name: str) -> Iterator[str]:
    """Outside any user device, colocation and control-dependency scope."""
    with (
        graph.as_default(),
        graph.device(None),
        graph.colocate_with(None, ignore_existing=True),
        graph.control_dependencies(None),
        graph.name_scope(name) as scope,
    ):
        yield scope


_NO_SHAPE_CHECK = {"validate_shape": attr_value_pb2.AttrValue(b=False)}


class _OpMaker:
    """Makes the per-variable assign ops as cheaply as TensorFlow allows.

    Graph building is dominated by these ops (one per variable). The direct path
    creates the C operation and wraps it, as TensorFlow does for imported graphs,
    at about half the cost of ``Graph._create_op_internal``, and records no Python
    traceback (errors still name the op). Where TensorFlow's internals differ, or
    inside a control-flow context, it falls back to ``_create_op_internal``, and
    then to the public ops.
    """

    def __init__(self, graph: Any, control_inputs: list[Any]) -> None:
        self.graph = graph
        self.control_inputs = control_inputs
        self._c_op = getattr(_tf_ops, "_create_c_op", None)
        self._wrap = getattr(graph, "_create_op_from_tf_operation", None)
        self._internal = getattr(graph, "_create_op_internal", None)
        self.direct = (
            self._c_op is not None
            and self._wrap is not None
            and "extract_traceback" in inspect.signature(self._c_op).parameters
            and graph._get_control_flow_context() is None
        )

    def assign(self, variable: Any, value: Any, device: str, known: bool) -> Any:
        """One assign of ``value`` to ``variable``, placed on ``device``."""
        if resource_variable_ops.is_resource_variable(variable):
            op_type, inputs, attrs = "AssignVariableOp", [variable.handle, value], None
        else:
            # A ref variable's ``_ref()`` is the ref-typed output of its VariableV2 op.
            # Assign checks shapes by default; an unknown shape cannot be checked.
            op_type, inputs = "Assign", [variable._ref(), value]
            attrs = None if known else _NO_SHAPE_CHECK
        if self.direct:
            node = node_def_pb2.NodeDef(name=self.graph.unique_name(op_type), op=op_type)
            for key, attr in (attrs or {}).items():
                node.attr[key].CopyFrom(attr)
            c_op = self._c_op(
                self.graph, node, inputs, self.control_inputs, extract_traceback=False
            )
            op = self._wrap(c_op, compute_device=False)
        elif self._internal is not None:
            outputs = [] if op_type == "AssignVariableOp" else [value.dtype._as_ref]
            op = self._internal(op_type, inputs, outputs, attrs=attrs, compute_device=False)
        else:  # the public ops, slowest
            with self.graph.device(device):
                if op_type == "AssignVariableOp":
                    return tf.raw_ops.AssignVariableOp(resource=variable.handle, value=value)
                return tf.compat.v1.assign(variable, value, validate_shape=known).op
        if device:  # the variable's own device, whatever device scope the caller is in
            op._set_device(device)
        return op


#: Bytes of checkpoint values one ``RestoreV2`` op reads, at least: a host's reads are
#: split over up to ``default_threads()`` ops, which the session runs in parallel. One
#: op reads and checksums on one core (TensorFlow's generic CRC32C, about 2 GB/s).
RESTORE_OP_BYTES = 16 << 20


def _split_reads(
    wanted: list[tuple[str, str, Any]], ckpt_vars: Mapping[str, Any]
) -> list[list[int]]:
    """``wanted``'s indices in groups of about equal bytes, one ``RestoreV2`` op each.

    Big restores get one op per reader thread (see :data:`RESTORE_OP_BYTES`); every
    assign waits for all of them (``assign_ops``), so a failed read still assigns
    nothing. A tensor is never split. A partition's read counts its slice's bytes.
    """
    sizes = [
        _elements(ckpt_vars[key].shape, spec) * (getattr(dtype, "size", 0) or 8)
        for key, spec, dtype in wanted
    ]
    ops = min(len(wanted), default_threads(), max(1, sum(sizes) // RESTORE_OP_BYTES))
    if ops <= 1:
        return [list(range(len(wanted)))]
    bins: list[list[int]] = [[] for _ in range(ops)]
    load = [0] * ops
    for i in sorted(range(len(wanted)), key=lambda i: -sizes[i]):  # largest first
        emptiest = load.index(min(load))
        bins[emptiest].append(i)
        load[emptiest] += sizes[i]
    return [sorted(b) for b in bins if b]


def _elements(full_shape: tuple[int, ...], spec: str) -> int:
    """How many elements a read of ``spec`` (from :func:`_slice_spec`) returns."""
    if not spec:
        return math.prod(full_shape)
    return math.prod(int(r.split(",")[1]) for r in spec.split(" ")[-1].split(":"))


def _strings(values: Iterable[str]) -> Any:
    return tf.constant(np.array([v.encode() for v in values], dtype=object))


def assign_ops(
    plan: RestorePlan, targets: Mapping[str, TargetVariable], graph: Any, *, name: str
) -> list[tuple[Part, Any, Any]]:
    """Builds the restore ops for ``plan`` and one assign per part: ``(part, value, assign)``.

    Every tensor a task needs is read by one ``RestoreV2`` op on that task's CPU (the
    usual case is one op in all). A tensor loaded into two targets is read once. With
    several restore ops (variables on several parameter servers), every assign waits
    for all of them, so a failed read on any task assigns nothing anywhere.
    """
    ckpt_vars = plan.checkpoint.variables
    host_cache: dict[str, str] = {}
    reads: dict[str, dict[tuple[str, str, Any], int]] = {}  # host -> read -> output index
    # device -> [(part, host, output index)]: assigns are made one device scope at a time.
    by_device: dict[str, list[tuple[Part, str, int, bool]]] = {}
    routed = [e for e in plan.entries if e.route is not None]
    for entry in plan.entries:
        if entry.route is not None:
            continue  # read whole, transformed in the graph: _routed_assigns
        full = tuple(ckpt_vars[entry.checkpoint_key].shape)
        target = targets[entry.target]
        # Fully known shape: the assign can check it, and the read gets it as static shape.
        known = target.shape is not None and None not in target.shape
        for part in target.parts:
            variable = part.variable
            device = variable.device  # a C call for graph variables: once per part
            read = (entry.checkpoint_key, _slice_spec(full, part), variable.dtype.base_dtype)
            host = _host_device(device, host_cache)
            slots = reads.setdefault(host, {})
            index = slots.setdefault(read, len(slots))
            by_device.setdefault(device, []).append((part, host, index, known))
    # Each route's source tensors are read whole, on the host of its first target.
    route_hosts = _routes.add_reads(plan, routed, targets, reads, host_cache, _host_device)
    if not by_device and not routed:
        return []
    out = []
    with _clean_scope(graph, name):
        outputs: dict[str, list[Any]] = {}  # host -> values, by output index
        restores = []
        for host, slots in reads.items():
            wanted = list(slots)  # in output-index order
            values: list[Any] = [None] * len(wanted)
            for chunk in _split_reads(wanted, ckpt_vars):
                keys, specs, dtypes = zip(*(wanted[i] for i in chunk), strict=True)
                with graph.device(host):
                    got = tf.raw_ops.RestoreV2(
                        prefix=plan.checkpoint.prefix,
                        # Arrays, not lists: the op wrapper would check every element.
                        tensor_names=_strings(keys),
                        shape_and_slices=_strings(specs),
                        dtypes=list(dtypes),
                    )
                restores.append(got[0].op)
                for i, value in zip(chunk, got, strict=True):
                    values[i] = value
            outputs[host] = values
        gate = restores if len(restores) > 1 else []
        with graph.control_dependencies(gate or None):
            maker = _OpMaker(graph, gate)
            for device, items in by_device.items():
                for part, host, index, known in items:
                    value = outputs[host][index]
                    if known:
                        value.set_shape(part.shape)
                    out.append((part, value, maker.assign(part.variable, value, device, known)))
            out += _routes.assigns(plan, routed, targets, route_hosts, reads, outputs, maker)
    return out


def override_initializers(
    plan: RestorePlan, targets: Mapping[str, TargetVariable], graph: Any
) -> int:
    """Makes each planned variable's initializer restore it from the checkpoint.

    The same mechanism as TF's ``init_from_checkpoint``: ``variable.initializer`` (and
    so ``global_variables_initializer``, ``Scaffold``'s ``init_op`` and a re-run of the
    initializer) now reads the checkpoint. Nothing runs here.

    Returns:
        The number of variables (partitions counted one by one) overridden.
    """
    built = assign_ops(plan, targets, graph, name="checkpoint_initializer")
    for part, value, op in built:
        variable = part.variable
        # What TF does too: initializer and initial value both come from the checkpoint
        # (``initialized_value()`` and slot/EMA initial values read ``_initial_value``).
        variable._initializer_op = op
        variable._initial_value = value
    return len(built)
