"""Helpers that need no TensorFlow (for the tests of TensorFlow-free paths)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np


def tree_digest(root: str | Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path -> digest)."""
    out = {}
    for d, _, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            out[os.path.relpath(p, root)] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def same_bits(a: Any, b: Any) -> bool:
    """Bit-for-bit equality; strings element by element."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.hasobject or b.dtype.hasobject:
        return [bytes(x) for x in a.reshape(-1)] == [bytes(x) for x in b.reshape(-1)]
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()
