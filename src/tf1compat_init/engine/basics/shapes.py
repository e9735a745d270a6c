# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""How a shape reads in a message: ``[768, ?, 64]``, ``<unknown>`` for an unknown rank.

One formatter for the report, the planner, the transforms and the target checks, so that a
shape reads the same in every message. Pure: no numpy, no TensorFlow.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["fmt_shape"]


def fmt_shape(shape: Sequence[int | None] | None) -> str:
    """``[768, ?, 64]``: ``?`` for an unknown dimension, ``<unknown>`` for an unknown rank.

    Example:
        >>> fmt_shape((768, None, 64)), fmt_shape(()), fmt_shape(None)
        ('[768, ?, 64]', '[]', '<unknown>')
    """
    if shape is None:
        return "<unknown>"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
