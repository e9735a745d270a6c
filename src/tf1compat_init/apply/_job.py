# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The unit of an eager restore: one variable part, the key it reads, the slice it takes."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..engine.targets.variables import Part, TargetVariable

__all__ = ["Job", "part_slices", "tf_dtype"]


class Job(NamedTuple):
    """One variable to fill: ``part.variable`` gets ``value[slices]`` of ``key``."""

    key: str
    target: str
    part: Part
    slices: tuple[slice, ...] | None


def part_slices(target: TargetVariable, part: Part) -> tuple[slice, ...] | None:
    """The slice of the whole value that ``part`` takes; None for an unpartitioned target."""
    if not target.partitioned:
        return None
    return tuple(slice(o, o + s) for o, s in zip(part.offset, part.shape, strict=True))


#: dtype name -> TensorFlow dtype: ``tf.dtypes.as_dtype`` would otherwise be paid per key.
_TF_DTYPES: dict[str, Any] = {}


def tf_dtype(tf: Any, name: str) -> Any:
    """The TensorFlow dtype called ``name`` (cached)."""
    dtype = _TF_DTYPES.get(name)
    if dtype is None:
        dtype = _TF_DTYPES[name] = tf.dtypes.as_dtype(name)
    return dtype
