# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Pausing Python's cyclic garbage collector around allocation-heavy steps.

Opening an index, planning and applying a restore each allocate a few objects per
tensor and make no reference cycles. With TensorFlow's large heap loaded, one full
collection that those allocations happen to trigger can cost many times the step itself
(figures: ``benchmarks/README.md``), so these steps run with the collector paused; it
resumes, if it was on, when they end.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disables the cyclic collector for the ``with`` block, then restores it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
