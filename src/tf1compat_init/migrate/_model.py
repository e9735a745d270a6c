# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"tf2"`` and ``"keras"`` outputs: the renamed keys loaded into a model, then saved.

The model comes from the user's factory, called once to write and once more to verify:
the fresh model loads the output, and each loaded value must equal its source bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..bundle import storage as _storage
from ..engine.basics.tensor_bytes import Progress, equal
from ..engine.grammar.mapping import AssignmentMap
from ..engine.planning.policy import RestorePolicy
from ..engine.reading.reader import CheckpointInfo, open_checkpoint
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError, CheckpointMismatchError

__all__ = ["build", "prebuild", "verify", "write"]


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


def _values(targets: dict[str, Any], names: Sequence[str]) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        t = targets[name]
        if len(t.parts) == 1 and not t.partitioned:
            out[name] = t.parts[0].variable.numpy()
            continue
        full = np.empty(t.shape, dtype=t.parts[0].variable.numpy().dtype)
        for p in t.parts:
            full[tuple(slice(o, o + s) for o, s in zip(p.offset, p.shape, strict=True))] = (
                p.variable.numpy()
            )
        out[name] = full
    return out


def write(
    view: NamedView,
    factory: Callable[[], Any],
    fmt: str,
    out_path: str,
    policy: RestorePolicy,
    progress: Progress | None,
    built: Any = None,
) -> Any:
    """Loads the view into the model (``built`` or a new one) and saves it as ``fmt``."""
    from ..apply import apply_plan
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
    if progress:
        total = sum(view.nbytes(view_name) for view_name in plan.report.loaded.values())
        progress(0, total, "")
    report = apply_plan(plan, targets)
    if progress:
        progress(total, total, "")
    import tensorflow as tf

    if fmt == "tf2":
        root = model if isinstance(model, tf.train.Checkpoint) else tf.train.Checkpoint(model=model)
        # Created now, so that Checkpoint(model=...).restore(out).assert_consumed() holds: a
        # restore creates the counter and asks for its value.
        _ = root.save_counter
        root.write(out_path)
    else:
        model.save_weights(out_path)
    return report


def verify(
    view: NamedView,
    factory: Callable[[], Any],
    fmt: str,
    out_path: str,
    report: Any,
) -> None:
    """Loads ``out_path`` into a fresh model; each loaded value must equal its source."""
    import tensorflow as tf

    from ..checkpoint import target_variables

    fresh = build(factory)
    if fmt == "tf2":
        open_checkpoint(out_path)  # every index block and tensor checksum
        root = fresh if isinstance(fresh, tf.train.Checkpoint) else tf.train.Checkpoint(model=fresh)
        root.restore(out_path).assert_consumed()
    else:
        fresh.load_weights(out_path)
    targets = target_variables(fresh, readable=view.format != "object-based")
    got = _values(targets, list(report.loaded))
    for target, name in report.loaded.items():
        if not equal(got[target], view.read_one(name)):
            raise CheckpointCorruptError(
                f"{target!r} of the reloaded model differs from source {name!r}"
            )
