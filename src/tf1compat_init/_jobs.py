"""The unit of an eager restore: one variable part, the key it reads, the slice it takes.

Shared by :mod:`tf1compat_init.apply` and its transform routes
(:mod:`tf1compat_init._apply_routes`), so that neither imports the other back.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .variables import Part, TargetVariable


class _Job(NamedTuple):
    """One variable to fill: ``part.variable`` gets ``value[slices]`` of ``key``."""

    key: str
    target: str
    part: Part
    slices: tuple[slice, ...] | None


def _part_slices(target: TargetVariable, part: Part) -> tuple[slice, ...] | None:
    if not target.partitioned:
        return None
    return tuple(slice(o, o + s) for o, s in zip(part.offset, part.shape, strict=True))


#: dtype name -> TensorFlow dtype. ``tf.dtypes.as_dtype`` costs a few microseconds a
#: call, paid per key of a restore without this.
_TF_DTYPES: dict[str, Any] = {}


def _tf_dtype(tf: Any, name: str) -> Any:
    dtype = _TF_DTYPES.get(name)
    if dtype is None:
        dtype = _TF_DTYPES[name] = tf.dtypes.as_dtype(name)
    return dtype
