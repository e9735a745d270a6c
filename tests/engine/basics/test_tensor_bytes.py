"""tf1compat_init.engine.basics.tensor_bytes: tensors compared bit for bit, sizes for people."""

from __future__ import annotations

import numpy as np
import pytest

from tf1compat_init.engine.basics.tensor_bytes import equal, human, raw_bytes

pytestmark = pytest.mark.pure


def test_raw_bytes_is_a_flat_uint8_view_of_any_layout():
    a = np.arange(6, dtype="<i4").reshape(2, 3)
    raw = raw_bytes(a.T)  # not contiguous: copied once, then viewed
    assert raw.dtype == np.uint8 and raw.shape == (24,)
    assert raw.tobytes() == np.ascontiguousarray(a.T).tobytes()
    assert raw_bytes(np.float32(1.5)).tobytes() == np.float32(1.5).tobytes()


def test_equal_is_bitwise_not_numeric():
    assert equal(np.float32([1.0, 2.0]), np.float32([1.0, 2.0]))
    # -0.0 == 0.0 numerically, not bit for bit; a NaN equals itself bit for bit.
    assert not equal(np.float32([0.0]), np.float32([-0.0]))
    nan = np.array([np.nan], np.float32)
    assert equal(nan, nan.copy())
    assert not equal(np.float32([1.0]), np.float32([1.0 + 2**-20]))


def test_equal_needs_the_same_shape_and_width():
    assert not equal(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    assert not equal(np.zeros(2, np.float32), np.zeros(2, np.float64))
    # same width, other dtype: the bits decide
    assert equal(np.zeros(2, np.float32), np.zeros(2, np.int32))


def test_equal_compares_strings_by_their_bytes():
    a = np.array([b"ab", b"c"], dtype=object)
    assert equal(a, np.array([b"ab", b"c"], dtype=object))
    assert not equal(a, np.array([b"ab", b"d"], dtype=object))


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (5 * 2**20, "5.0 MiB"),
        (3 * 2**30, "3.0 GiB"),
        (2048 * 2**30, "2048.0 GiB"),
    ],
)
def test_human_sizes(n, text):
    assert human(n) == text
