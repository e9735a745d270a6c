# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Tensors as bytes: compared bit for bit, counted for people, reported as progress."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Progress", "equal", "human", "raw_bytes"]

#: Called as ``progress(bytes_done, bytes_total, name)`` while an output is written.
Progress = Callable[[int, int, str], None]


def raw_bytes(value: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(value).reshape(-1).view(np.uint8)


def equal(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.hasobject or b.dtype.hasobject:
        return [bytes(x) for x in a.reshape(-1)] == [bytes(x) for x in b.reshape(-1)]
    if a.dtype.itemsize != b.dtype.itemsize:
        return False
    return memoryview(raw_bytes(a)) == memoryview(raw_bytes(b))  # memcmp, no temporaries


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover
