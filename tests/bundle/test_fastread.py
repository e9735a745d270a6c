"""tf1compat_init.bundle.fastread: aligned buffers and the reader's thread count.

The parallel reads themselves (``FastReader``: bit-exact values, checksums, partitions, the
memory bound) are tested through the engine in tests/apply/test_apply.py and on remote
files in test_remote.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from tf1compat_init.bundle import fastread

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    "shape, dtype", [((3, 5), "float32"), ((7,), "int8"), ((), "float64"), ((1, 4), "int64")]
)
def test_aligned_empty_is_contiguous_aligned_and_shaped(shape, dtype):
    a = fastread.aligned_empty(shape, dtype)
    assert a.shape == shape and a.dtype == np.dtype(dtype)
    assert a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % fastread.ALIGNMENT == 0


def test_an_empty_shape_is_an_empty_array():
    a = fastread.aligned_empty((0, 4), "int64")
    assert a.shape == (0, 4) and a.dtype == np.int64 and a.size == 0


def test_a_larger_alignment_is_honoured():
    for _ in range(8):  # fresh allocations land anywhere: every one must be aligned
        assert fastread.aligned_empty((33,), "uint8", align=4096).ctypes.data % 4096 == 0


def test_huge_buffers_start_on_a_huge_page():
    n = fastread.HUGE_BYTES // 4
    a = fastread.aligned_empty((n,), "float32")
    assert a.nbytes == fastread.HUGE_BYTES
    assert a.ctypes.data % (2 << 20) == 0
    a[:] = 1.0  # the whole buffer is usable
    assert float(a[-1]) == 1.0


def test_default_threads_between_2_and_8(monkeypatch):
    for cpus, threads in [(None, 2), (1, 2), (4, 4), (64, 8)]:
        monkeypatch.setattr(fastread.os, "cpu_count", lambda cpus=cpus: cpus)
        assert fastread.default_threads() == threads
