# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"tf2"`` and ``"keras"`` outputs: a model's checkpoint with the source's values.

The model comes from the user's factory, called once, and the renamed keys are planned
against its variables by name. Then, where it can (:func:`_streamed`), the output is
written from the model's structure with the values streamed from the source, never
assigned (:mod:`._tf2_stream`, :mod:`._keras_stream`). Otherwise (logged) the source is
loaded into the model (``apply_plan``), each loaded variable's CRC32C recorded, and the
model saves itself; to verify, its loaded variables are zeroed and the output is loaded
back into it the way users load it (``tf.train.Checkpoint.restore`` with
``assert_consumed``, or ``load_weights``); each must come back with its recorded CRC32C.
Either way the model's weights are held once and the source is read once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..bundle import storage as _storage
from ..engine.basics.tensor_bytes import Progress
from ..engine.grammar.mapping import AssignmentMap
from ..engine.planning.policy import RestorePolicy
from ..engine.reading.reader import CheckpointInfo, open_checkpoint
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError, CheckpointMismatchError
from ._stream import value_crc
from ._tf2_stream import as_array, root_of

__all__ = ["Written", "build", "check", "prebuild", "verify", "write"]

logger = logging.getLogger("tf1compat_init.migrate")


@dataclass
class Written:
    """What :func:`write` saved: the model, its targets, the load report, CRC32C by target."""

    model: Any
    targets: dict[str, Any]
    report: Any
    crcs: dict[str, int]
    streamed: Any = None  # what a streaming writer wrote (None: saved through the model)


def build(factory: Callable[[], Any]) -> Any:
    """Calls the user's factory; its errors say that they are the factory's."""
    name = getattr(factory, "__qualname__", repr(factory))
    try:
        model = factory()
    except Exception as e:  # the user's code: say whose error it is, keep the cause
        raise ValueError(f"the model factory {name} raised {type(e).__name__}: {e}") from e
    if model is None:
        raise ValueError("the model factory returned None; it must return the model")
    return model


def prebuild(
    src: Any, assignment_map: Any, factory: Callable[[], Any] | None, exclude: Any
) -> tuple[Any, dict[str, Any] | None, Any]:
    """For a map with transforms and a model: ``(model, its shapes by name, opened src)``.

    ``reshape()`` takes the target's shape, so the model is built before the view; it is
    then the one the output is written from. Otherwise ``(None, None, src)``.
    """
    if factory is None:
        return None, None, src
    amap = AssignmentMap(assignment_map, exclude=exclude)
    if not any(r.to is not None for r in amap.rule_list):
        return None, None, src
    from ..checkpoint import target_variables

    info = src if isinstance(src, CheckpointInfo) else open_checkpoint(src)
    model = build(factory)
    targets = target_variables(model, readable=info.format != "object-based")
    return model, {n: t.shape for n, t in targets.items()}, info


def _value(target: Any) -> np.ndarray:
    """One target's whole value (its parts put together for a partitioned one)."""
    parts = target.parts
    if len(parts) == 1 and not target.partitioned:
        v = parts[0].variable
        if v.dtype.name == "string":
            return v.numpy()
        return as_array(v.read_value())
    full = np.empty(target.shape, dtype=parts[0].variable.numpy().dtype)
    for p in parts:
        full[tuple(slice(o, o + s) for o, s in zip(p.offset, p.shape, strict=True))] = (
            p.variable.numpy()
        )
    return full


def _crcs(targets: dict[str, Any], names: Sequence[str]) -> dict[str, int]:
    """The CRC32C of each named target's bytes, one value in memory at a time."""
    out = {}
    for name in names:
        value = _value(targets[name])
        out[name] = value_crc(value)
        del value
    return out


def write(
    view: NamedView,
    factory: Callable[[], Any],
    fmt: str,
    out_path: str,
    policy: RestorePolicy,
    progress: Progress | None,
    built: Any = None,
) -> Written:
    """Loads the view into the model (``built`` or a new one) and saves it as ``fmt``."""
    from ..checkpoint import plan_for_root

    model = build(factory) if built is None else built
    if fmt == "keras" and not hasattr(model, "save_weights"):
        raise ValueError(
            f"--format keras needs a Keras model, but the factory returned "
            f"{type(model).__name__}; use --format tf2"
        )
    if fmt == "keras" and _storage.is_url(out_path):
        from ..engine.targets.keras_names import keras_flavour

        if keras_flavour(model) != "keras3":
            raise ValueError(
                f"--format keras to a URL needs Keras 3: {keras_flavour(model)} writes .h5 "
                f"files only to local paths. Migrate to a local file and copy it, or use "
                f"--format tf2"
            )
    try:
        plan, targets = plan_for_root(model, view, None, policy=policy)
    except CheckpointMismatchError as e:
        notes = [
            f"{m.checkpoint_key} is {view.source_names[m.checkpoint_key]} | "
            f"{view.routes[m.checkpoint_key].text}"
            for m in (e.report.mismatched if e.report is not None else [])
            if m.checkpoint_key in view.routes
        ]
        if not notes:
            raise
        raise CheckpointMismatchError(
            f"{e}\nThe transforms made those values:\n  " + "\n  ".join(notes), e.report
        ) from None
    if fmt == "keras":
        _check_keras_dtypes(model, targets, plan.report.loaded)
    streamed = _streamed(view, model, fmt, out_path, plan, targets, progress)
    if streamed is not None:
        plan.report.applied = True
        return Written(model, targets, plan.report, streamed.by_target, streamed)
    if progress:
        total = sum(view.nbytes(view_name) for view_name in plan.report.loaded.values())
        progress(0, total, "")
    from ..apply import apply_plan  # only here: importing it costs 0.2 s

    report = apply_plan(plan, targets)
    crcs = _crcs(targets, list(report.loaded))
    if progress:
        progress(total, total, "")
    if fmt == "tf2":
        root_of(model).write(out_path)
    else:
        model.save_weights(out_path)
    return Written(model, targets, report, crcs)


def _streamed(
    view: NamedView,
    model: Any,
    fmt: str,
    out_path: str,
    plan: Any,
    targets: dict[str, Any],
    progress: Progress | None,
) -> Any:
    """Writes the output from the model's structure and the source's values, never
    assigning them; ``None`` (nothing written, logged why) where it cannot stream."""
    from . import _keras_stream, _tf2_stream

    loaded = plan.report.loaded
    try:
        if any(getattr(p, "route", None) is not None for p in plan.entries):
            raise _tf2_stream.Unstreamable("the plan computes values (transforms)")
        if fmt == "tf2":
            _, graph, keys = _tf2_stream.plan(model, view, targets, loaded)
            return _tf2_stream.write(view, graph, keys, out_path, progress)
        return _keras_stream.write(view, model, out_path, targets, loaded, progress)
    except _tf2_stream.Unstreamable as e:
        logger.info(
            "--format %s: %s, so the values go through the model (assigned, then saved by "
            "TensorFlow / Keras: about the model's size again in memory, slower)",
            fmt,
            e,
        )
        return None


def _check_keras_dtypes(model: Any, targets: dict[str, Any], loaded: dict[str, str]) -> None:
    """Refuses, before anything is written, what a Keras 2 ``.weights.h5`` cannot load back.

    Keras 2 (``tf.keras`` on TF <= 2.15, and ``tf_keras``) writes bfloat16 weights to
    ``.weights.h5`` but cannot load them (``ValueError: No cast function available``);
    Keras 3 stores them with a dtype attribute and loads them.
    """
    from ..engine.targets.keras_names import keras_flavour

    flavour = keras_flavour(model)
    if flavour == "keras3":
        return
    bad = [name for name in loaded if targets[name].dtype == "bfloat16"]
    if bad:
        raise ValueError(
            f"--format keras with {flavour} cannot hold bfloat16: its .weights.h5 writes such "
            f"weights but cannot load them back ({len(bad)} weight(s), first {bad[0]!r}); "
            f"use --format tf2, or a Keras 3 model"
        )


def check(written: Written, fmt: str, out_path: str) -> None:
    """Verifies the output: :func:`verify`, or for a streamed output its own check, each
    tensor read back alone, then :func:`verify` (loading the whole output into the model,
    which TensorFlow's restore and Keras' ``load_weights`` do with about the model's size
    or twice the largest tensor again) for a model of at most ``RELOAD_LIMIT`` bytes."""
    from . import _keras_stream, _tf2_stream
    from ._stream import output_files, synced_while

    files = output_files(out_path)  # synced while they are read back
    if written.streamed is None:  # saved by TensorFlow or Keras, which do not fsync
        synced_while(files, lambda: verify(written, fmt, out_path))
        return
    if fmt == "tf2":
        synced_while(files, lambda: _tf2_stream.verify(written.streamed, out_path))
    else:
        synced_while(files, lambda: _keras_stream.verify(written.streamed, out_path))
    if _tf2_stream.model_bytes(written.targets) <= _tf2_stream.RELOAD_LIMIT:
        verify(written, fmt, out_path)


def verify(written: Written, fmt: str, out_path: str) -> None:
    """Loads ``out_path`` back into the model; each loaded value must keep its CRC32C.

    The loaded variables are zeroed first, so a value the output lacks cannot pass for one
    it holds.
    """
    import tensorflow as tf

    model, targets = written.model, written.targets
    for name in written.report.loaded:
        for part in targets[name].parts:
            v = part.variable
            v.assign(tf.zeros(v.shape, v.dtype))
    if fmt == "tf2":
        open_checkpoint(out_path)  # every index block and tensor checksum
        root_of(model).restore(out_path).assert_consumed()
    else:
        from ._keras_stream import skipsets_cached

        with skipsets_cached():
            model.load_weights(out_path)
    got = _crcs(targets, list(written.report.loaded))
    for target, name in written.report.loaded.items():
        if got[target] != written.crcs[target]:
            raise CheckpointCorruptError(
                f"{target!r} of the model reloaded from the output differs from source {name!r}"
            )
