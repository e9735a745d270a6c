"""Helpers that need no TensorFlow (for the tests of TensorFlow-free paths)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from support.bundles import same_bits  # noqa: F401 (re-exported)


def tree_digest(root: str | Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path -> digest)."""
    out = {}
    for d, _, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            out[os.path.relpath(p, root)] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out
