"""tf1compat_init.engine.basics.shapes: one way a shape reads in every message."""

from __future__ import annotations

import pytest

from tf1compat_init.engine.basics.shapes import fmt_shape

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    "shape, text",
    [
        ((768, None, 64), "[768, ?, 64]"),
        ((), "[]"),
        (None, "<unknown>"),
        ([3], "[3]"),
        ((None,), "[?]"),
        ((0, 1), "[0, 1]"),
    ],
)
def test_dimensions_unknown_dimensions_and_unknown_rank(shape, text):
    assert fmt_shape(shape) == text


def test_any_sequence_of_ints_reads_the_same():
    assert fmt_shape([2, 3]) == fmt_shape((2, 3)) == fmt_shape(range(2, 4)) == "[2, 3]"
