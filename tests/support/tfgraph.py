"""Test helper: small TF1 graphs, name-based checkpoints, and what TF really loads.

Everything runs in graph mode inside its own ``tf.Graph()``, with variables made by
``tf.compat.v1.get_variable`` under nested variable scopes, as TF1 code makes them.

- :func:`write_checkpoint` saves a ``Saver`` checkpoint in which every tensor holds a
  distinct, recognisable value (:func:`code_value`), so a loaded value tells which
  checkpoint key it came from.
- :func:`compare` builds a target graph with sentinel initial values, runs TF's
  ``init_from_checkpoint`` and our ``plan_restore`` on the same variables, and returns
  both outcomes as ``{target: checkpoint_key}`` (or the exception each side raised).

Importing this module imports TensorFlow; import it after ``pytest.importorskip``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from tf1compat_init import AssignmentMap, plan_restore  # noqa: E402
from tf1compat_init.variables import collect_targets, target_name, target_specs  # noqa: E402

v1 = tf.compat.v1

__all__ = [
    "Outcome",
    "Var",
    "build_variables",
    "code_value",
    "compare",
    "name_of",
    "store_reachable",
    "write_checkpoint",
]


@dataclass(frozen=True)
class Var:
    """One ``get_variable`` call: ``name`` is ``scope/.../leaf``.

    Attributes:
        name: the full variable name; every ``/`` opens a ``variable_scope``.
        shape: the full shape.
        dtype: a TF dtype name.
        partitions: more than 1 makes it a partitioned variable
            (``fixed_size_partitioner(partitions)`` along axis 0).
        use_resource: resource variable (TF2's default) or a ref variable.
        in_store: made by ``get_variable`` (in the variable store, where TF's string
            maps look names up); ``False`` makes it with ``tf.compat.v1.Variable``,
            which TF finds only when the map passes the object.
    """

    name: str
    shape: tuple[int, ...] = (2,)
    dtype: str = "float32"
    partitions: int = 1
    use_resource: bool = True
    in_store: bool = True


def code_value(index: int, shape: Iterable[int], dtype: str = "float32") -> np.ndarray:
    """The recognisable value of checkpoint tensor number ``index``.

    ``(index + 1) * 1000 + arange(size)`` (plus 0.5 for floats): distinct across
    tensors as long as each has fewer than 1000 elements, exactly representable in
    float32, and never equal to the sentinels (negative) or optimizer initial values
    (0, 0.9, 0.999).
    """
    shape = tuple(int(d) for d in shape)
    size = int(np.prod(shape, dtype=np.int64))
    if size >= 1000:
        raise ValueError(f"keep test tensors under 1000 elements, got shape {shape}")
    value = (index + 1) * 1000 + np.arange(size, dtype=np.float64)
    np_dtype = np.dtype(tf.as_dtype(dtype).as_numpy_dtype)
    if np_dtype.kind == "f":
        value = value + 0.5
    return value.astype(np_dtype).reshape(shape)


def _sentinel(index: int) -> float:
    return -float(index + 1) * 1000 - 0.25


def build_variables(
    specs: Iterable[Var], *, initializer: Callable[[int, Var], Any] | None = None
) -> dict[str, Any]:
    """Creates ``specs`` in the default graph with ``get_variable`` under nested scopes.

    Args:
        specs: the variables to make.
        initializer: ``(index, spec) -> initializer``; by default a distinct negative
            constant per variable (a sentinel that no checkpoint value equals).

    Returns:
        name -> the variable, or the ``PartitionedVariable`` for partitioned ones.
    """
    out = {}
    for i, spec in enumerate(specs):
        *scopes, leaf = spec.name.split("/")
        init = (
            initializer(i, spec)
            if initializer is not None
            else v1.constant_initializer(_sentinel(i) if spec.dtype != "int64" else -(i + 1))
        )
        with contextlib.ExitStack() as stack:
            for scope in scopes:
                stack.enter_context(v1.variable_scope(scope))
            if not spec.in_store:
                value = init(spec.shape, dtype=tf.as_dtype(spec.dtype))
                out[spec.name] = v1.Variable(value, name=leaf, use_resource=spec.use_resource)
                continue
            out[spec.name] = v1.get_variable(
                leaf,
                shape=spec.shape,
                dtype=tf.as_dtype(spec.dtype),
                initializer=init,
                partitioner=(
                    v1.fixed_size_partitioner(spec.partitions) if spec.partitions > 1 else None
                ),
                use_resource=spec.use_resource,
            )
    return out


def _slices(part: Any) -> tuple[slice, ...]:
    return tuple(slice(o, o + s) for o, s in zip(part.offset, part.shape, strict=True))


def _minimize(variables: Mapping[str, Any], optimizer: str) -> None:
    """Adds ``global_step`` and one ``minimize`` step, which creates the slot variables."""
    global_step = v1.train.get_or_create_global_step()
    loss = tf.add_n(
        [
            tf.reduce_sum(tf.square(tf.convert_to_tensor(v)))
            for v in variables.values()
            if tf.as_dtype(v.dtype).is_floating
        ]
    )
    opt = {
        "momentum": lambda: v1.train.MomentumOptimizer(0.1, momentum=0.9),
        "adam": lambda: v1.train.AdamOptimizer(0.1),
    }[optimizer]()
    opt.minimize(loss, global_step=global_step)


def write_checkpoint(
    prefix: str,
    specs: Iterable[Var],
    *,
    optimizer: str | None = None,
    extra: Mapping[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Saves a TF1 ``Saver`` checkpoint of ``specs`` with recognisable values.

    Args:
        prefix: the checkpoint prefix to write.
        specs: the variables (partitioned ones are saved as slices of one full tensor,
            as ``Saver`` does).
        optimizer: ``"momentum"`` or ``"adam"`` to also save ``global_step`` and the
            optimizer's slot variables (created by one ``minimize``).
        extra: more keys to store with exactly these values (e.g. a different dtype).

    Returns:
        checkpoint key -> value, as TF's own reader reads it back; each is
        :func:`code_value` of the key's index in sorted key order.
    """
    specs = list(specs)
    with tf.Graph().as_default():
        variables = build_variables(specs, initializer=lambda i, s: v1.zeros_initializer())
        if optimizer:
            _minimize(variables, optimizer)
        extra_vars = []
        for key, value in (extra or {}).items():
            *scopes, leaf = key.split("/")
            with contextlib.ExitStack() as stack:
                for scope in scopes:
                    stack.enter_context(v1.variable_scope(scope))
                extra_vars.append(
                    v1.get_variable(leaf, initializer=tf.constant(value), use_resource=True)
                )
        targets = collect_targets(v1.global_variables())
        keys = sorted(set(targets) - set(extra or {}))
        values = {k: code_value(i, targets[k].shape, targets[k].dtype) for i, k in enumerate(keys)}
        assigns = []
        for key in keys:
            for part in targets[key].parts:
                value = values[key][_slices(part)] if targets[key].partitioned else values[key]
                assigns.append(part.variable.assign(value))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(assigns)
            path = v1.train.Saver().save(sess, prefix, write_meta_graph=False, write_state=False)
    reader = tf.train.load_checkpoint(path)
    stored = {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()}
    # The helper must be right for the comparisons to mean anything.
    assert set(stored) == set(values) | set(extra or {}), sorted(stored)
    for k, v in values.items():
        np.testing.assert_array_equal(stored[k], v, err_msg=k)
    return stored


def name_of(value: Any) -> str:
    """A map value (variable, ``PartitionedVariable`` or list of parts) -> its target name."""
    if isinstance(value, list | tuple):
        names = {target_name(v) for v in value}
        if len(names) != 1:
            raise ValueError(f"the parts name {len(names)} different variables: {sorted(names)}")
        return names.pop()
    return target_name(value)


@dataclass
class Outcome:
    """What each side did with one assignment map on one target graph.

    Attributes:
        tf_loaded: target -> checkpoint key TF loaded it from (targets that kept their
            initial value are left out); ``None`` when TF raised.
        tf_error: the exception TF raised, if any.
        tf_stage: ``"call"`` (``init_from_checkpoint``) or ``"init"`` (the initializer).
        ours_loaded: target -> checkpoint key from our plan; ``None`` when ours raised.
        ours_error: the exception ours raised, if any.
        ours_last_loaded, ours_last_error: the same with ``on_conflict="last"``
            (TF's order), when ``compare`` ran with ``on_conflict="error"``.
        values: target -> the value TF left in it (full tensor; parts concatenated).
        initial: target -> its value after a plain ``global_variables_initializer``.
        misshaped: targets TF filled with a value of another shape than the variable's
            (a silent scope-form shape mismatch in a resource variable).
        unrecognised: targets whose value is neither their initial value nor a
            checkpoint tensor (should never happen).
    """

    tf_loaded: dict[str, str] | None = None
    tf_error: BaseException | None = None
    tf_stage: str | None = None
    ours_loaded: dict[str, str] | None = None
    ours_error: BaseException | None = None
    ours_last_loaded: dict[str, str] | None = None
    ours_last_error: BaseException | None = None
    values: dict[str, np.ndarray] = field(default_factory=dict)
    initial: dict[str, np.ndarray] = field(default_factory=dict)
    misshaped: list[str] = field(default_factory=list)
    unrecognised: list[str] = field(default_factory=list)

    @property
    def tf_failed(self) -> bool:
        """TF raised, or silently loaded a value of the wrong shape."""
        return self.tf_error is not None or bool(self.misshaped)

    def explain(self) -> str:
        return (
            f"TF: {self.tf_loaded if self.tf_error is None else repr(self.tf_error)[:300]}"
            f" (stage {self.tf_stage}, misshaped {self.misshaped})\nours: "
            f"{self.ours_loaded if self.ours_error is None else repr(self.ours_error)[:600]}"
            f"\nours (on_conflict='last'): "
            f"{self.ours_last_loaded if self.ours_last_error is None else repr(self.ours_last_error)[:300]}"
        )


def store_reachable() -> set[str]:
    """Target names that TF's string maps can reach in the default graph.

    TF looks names up in the variable store, which holds only ``get_variable``
    variables (so not ``beta1_power``/``beta2_power`` nor ``tf.compat.v1.Variable``),
    and its scope rule cuts each store name at ``/part_``, so the slots of a
    partitioned variable (``w/part_0/Momentum/``) collapse into ``w`` itself.
    """
    from tensorflow.python.ops import variable_scope as vs

    out = set()
    for name in vs._get_default_variable_store()._vars:  # TF's own lookup table
        name = name[: name.index("/part_")] if "/part_" in name else name
        out.add(name.rstrip("/"))
    return out


def _read_targets(
    sess: Any, targets: Mapping[str, Any], misshaped: list[str] | None = None
) -> dict[str, np.ndarray]:
    """Each target's value; a partitioned one is its parts put back in place.

    A target whose value does not have the variable's shape (TF loaded a wrong-shaped
    tensor into a resource variable) is added to ``misshaped``; its value is then the
    flat concatenation of its parts.
    """
    got = sess.run({name: [part.variable for part in t.parts] for name, t in targets.items()})
    out = {}
    for name, t in targets.items():
        values = [np.asarray(v) for v in got[name]]
        if any(v.shape != part.shape for v, part in zip(values, t.parts, strict=True)):
            if misshaped is not None:
                misshaped.append(name)
            out[name] = np.concatenate([v.ravel() for v in values])
        elif not t.partitioned:
            out[name] = values[0]
        else:
            full = np.zeros(t.shape, dtype=values[0].dtype)
            for part, value in zip(t.parts, values, strict=True):
                full[_slices(part)] = value
            out[name] = full
    return out


def _identify(
    value: np.ndarray, initial: np.ndarray, checkpoint: Mapping[str, np.ndarray]
) -> str | None | bool:
    """The checkpoint key ``value`` came from, ``None`` if initial, ``False`` if neither."""
    if value.shape == initial.shape and np.array_equal(value, initial):
        return None
    for key, stored in checkpoint.items():
        # Compare flattened: a silently loaded mismatched shape keeps the stored values.
        if stored.size == value.size and np.array_equal(stored.ravel(), value.ravel()):
            return key
    return False


def _plan(
    prefix: str,
    targets: Mapping[str, Any],
    amap: Any,
    on_conflict: str,
    policy: Mapping[str, Any] | None,
) -> tuple[dict[str, str] | None, BaseException | None]:
    try:
        plan = plan_restore(
            prefix,
            target_specs(targets),
            AssignmentMap(amap, name_of=name_of),
            on_conflict=on_conflict,
            **({"optional": ()} | dict(policy or {})),
        )
    except Exception as e:  # noqa: BLE001 - the tests assert on the type
        return None, e
    return {p.target: p.checkpoint_key for p in plan.entries}, None


def compare(
    prefix: str,
    checkpoint: Mapping[str, np.ndarray],
    specs: Iterable[Var],
    assignment_map: Any,
    *,
    optimizer: str | None = None,
    on_conflict: str = "error",
    policy: Mapping[str, Any] | None = None,
    store_only: bool = False,
) -> Outcome:
    """Runs TF's ``init_from_checkpoint`` and our ``plan_restore`` on one new graph.

    Args:
        prefix: the checkpoint written by :func:`write_checkpoint`.
        checkpoint: its values (what :func:`write_checkpoint` returned).
        specs: the target graph's variables (sentinel initial values).
        assignment_map: the map, or a callable ``variables -> map`` for maps whose
            values are variable objects (``variables``: name -> variable or
            ``PartitionedVariable``).
        optimizer: build slots and ``global_step`` in the target graph too.
        on_conflict: passed to ``plan_restore``.
        policy: more keyword arguments for ``plan_restore`` (default ``optional=()``,
            TF's strictness).
        store_only: give ours only the targets TF's string maps can reach
            (:func:`store_reachable`) instead of every global variable.

    Returns:
        The :class:`Outcome` of both sides.
    """
    out = Outcome()
    with tf.Graph().as_default():
        variables = build_variables(specs)
        if optimizer:
            _minimize(variables, optimizer)
        amap = assignment_map(variables) if callable(assignment_map) else assignment_map
        targets = collect_targets(v1.global_variables())
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            out.initial = _read_targets(sess, targets)
        ours_targets = targets
        if store_only:
            reachable = store_reachable()
            ours_targets = {n: t for n, t in targets.items() if n in reachable}

        # Ours first: planning must not depend on anything TF's call did to the graph.
        out.ours_loaded, out.ours_error = _plan(prefix, ours_targets, amap, on_conflict, policy)
        if on_conflict == "error":
            out.ours_last_loaded, out.ours_last_error = _plan(
                prefix, ours_targets, amap, "last", policy
            )

        try:
            out.tf_stage = "call"
            v1.train.init_from_checkpoint(prefix, amap)
            out.tf_stage = "init"
            with v1.Session() as sess:
                sess.run(v1.global_variables_initializer())
                out.values = _read_targets(sess, targets, out.misshaped)
            out.tf_stage = None
        except Exception as e:  # noqa: BLE001
            out.tf_error = e
            return out
    loaded = {}
    for name, value in out.values.items():
        key = _identify(value, out.initial[name], checkpoint)
        if key is False:
            out.unrecognised.append(name)
        elif key is not None:
            loaded[name] = key
    out.tf_loaded = loaded
    return out
