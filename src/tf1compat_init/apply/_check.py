# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The checks every assignment passes before the first one, so none can fail half way.

Plain and transformed pairs alike: each variable part must be eager and take the dtype
and shape its value will have (:func:`check_target`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.planning.plan import dtype_name
from ..engine.planning.report import fmt_shape, shapes_compatible
from ..engine.targets.variables import TargetVariable, variable_shape
from ..errors import TargetError
from ._job import Job

__all__ = ["check_eager", "check_fits", "check_target", "target_of"]

#: variable dtype -> its name: ``dtype_name`` would otherwise be paid per variable.
_NAMES: dict[Any, str | None] = {}


def check_eager(tf: Any) -> None:
    """Raises unless TensorFlow executes eagerly here: the engine assigns eagerly."""
    if not tf.executing_eagerly():
        raise RuntimeError(
            "apply_plan assigns eagerly, but it was called in graph mode (inside a"
            " tf.function or a tf.compat.v1 Graph). Call it outside, or use the"
            " tf1compat_init.v1 front end, which builds graph-mode initializers"
        )


def target_of(targets: Mapping[str, TargetVariable], name: str) -> TargetVariable:
    """The target the plan loads as ``name``; a :class:`TargetError` if none was passed."""
    try:
        return targets[name]
    except KeyError:
        raise TargetError(
            f"the plan loads target {name!r} but no variable of that name was passed"
            f" to apply_plan; pass the targets the plan was made for"
        ) from None


def check_target(job: Job, dtype: str, shape: tuple, source: str | None = None) -> None:
    """Checks that ``job``'s variable is eager and takes a ``dtype`` value of ``shape``.

    Args:
        job: the variable part.
        dtype: the dtype name of the value it gets.
        shape: the shape of the value (of its slice, for a partition).
        source: what gives the value, for the error (default: the checkpoint tensor
            ``job.key``).

    Raises:
        RuntimeError: the variable belongs to a ``tf.Graph``.
        TargetError: the variable's dtype or shape does not take the value.
    """
    variable = job.part.variable
    if getattr(variable, "_in_graph_mode", False):
        raise RuntimeError(
            f"variable {job.target} belongs to a tf.Graph, but apply_plan assigns"
            f" eagerly; nothing was assigned. Use the tf1compat_init.v1 front end for"
            f" graph-mode variables"
        )
    var_shape = variable_shape(variable)
    var_dtype = _NAMES.get(variable.dtype)
    if var_dtype is None:
        var_dtype = _NAMES[variable.dtype] = dtype_name(variable.dtype)
    if var_dtype != dtype or not shapes_compatible(var_shape, shape):
        source = f"checkpoint tensor {job.key}" if source is None else source
        raise TargetError(
            f"variable {job.target} is {var_dtype}{fmt_shape(var_shape)} but {source}"
            f" gives it {dtype}{fmt_shape(shape)}; nothing was assigned. Make a new plan"
            f" for these variables"
        )


def check_fits(jobs: list[Job], checkpoint: Any) -> None:
    """Checks every plain (untransformed) assignment against the checkpoint's tensors."""
    for job in jobs:
        info = checkpoint.variables[job.key]
        shape = info.shape
        if job.slices is not None:
            if len(job.slices) != len(shape) or any(
                s.stop > d for s, d in zip(job.slices, shape, strict=True)
            ):
                raise TargetError(
                    f"partition of {job.target} at offset {list(job.part.offset)} with shape"
                    f" {fmt_shape(job.part.shape)} does not fit checkpoint tensor {job.key}"
                    f" {fmt_shape(shape)}; nothing was assigned"
                )
            shape = tuple(s.stop - s.start for s in job.slices)
        check_target(job, info.dtype, shape)
