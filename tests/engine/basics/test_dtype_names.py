"""One dtype-name table and one shape formatter for the planner, the transforms and reports.

Pure: no TensorFlow (a ``tf.DType`` is stood in for by an object with ``base_dtype``).
"""

from __future__ import annotations

import numpy as np
import pytest

from tf1compat_init import plan, report
from tf1compat_init import transforms as tt
from tf1compat_init.dtype_names import DTYPE_ALIASES, dtype_name
from tf1compat_init.errors import TransformError
from tf1compat_init.shapes import fmt_shape

pytestmark = pytest.mark.pure


class _FakeTfDtype:
    """What the planner and the transforms read of a ``tf.DType``: ``base_dtype.name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.base_dtype = self if not name.endswith("_ref") else _FakeTfDtype(name[:-4])


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("float", "float32"),
        ("double", "float64"),
        ("half", "float16"),
        ("object", "string"),
        ("bytes", "string"),
        ("str", "string"),
        ("bytes_", "string"),
        ("str_", "string"),
        ("bool_", "bool"),
        ("float32_ref", "float32"),
        ("int64", "int64"),
        (np.float16, "float16"),
        (np.str_, "string"),
        (np.bytes_, "string"),
        (np.dtype("O"), "string"),
        (np.dtype("int8"), "int8"),
        (_FakeTfDtype("float32_ref"), "float32"),
        (_FakeTfDtype("bfloat16"), "bfloat16"),
    ],
)
def test_planner_and_transforms_read_a_dtype_alike(given, name):
    assert dtype_name(given) == name
    assert tt._dtype_name(given) == name


def test_one_table_serves_both():
    assert plan.dtype_name is dtype_name
    assert dtype_name(None) is None
    # the aliases are the union of what the planner and the transforms knew apart
    assert {"bytes_", "str_", "bool_", "object", "float", "double", "half"} <= set(DTYPE_ALIASES)


def test_transforms_take_the_aliases_they_lacked():
    assert tt.cast("float32_ref").text == "cast(float32)"
    assert tt.cast(_FakeTfDtype("float16_ref")).dtype == "float16"
    with pytest.raises(TransformError, match=r"cast\(string\) is not supported"):
        tt.cast("str_")
    with pytest.raises(TransformError, match=r"cast\(string\) is not supported"):
        tt.cast("bytes_")
    assert tt.infer([tt.reshape(-1)], [((2, 3), "float32_ref")], [None]) == [((6,), "float32")]
    with pytest.raises(TransformError, match="unknown dtype 'float33'"):
        tt.cast("float33")


@pytest.mark.parametrize(
    ("shape", "text"),
    [((768, 12, 64), "[768, 12, 64]"), ((None, 3), "[?, 3]"), ((), "[]"), (None, "<unknown>")],
)
def test_one_shape_formatter(shape, text):
    assert fmt_shape(shape) == text
    assert report.fmt_shape is fmt_shape


def test_messages_use_the_shape_formatter():
    with pytest.raises(TransformError, match=r"cannot reshape \[4, 3\] \(12 values\) to \[5\]"):
        tt.infer([tt.reshape(5)], [((4, 3), "float32")], [None])
    mismatch = report.Mismatch("t", "k", (None, 2), (3, 4), None, "float32")
    assert "[?, 2]" in mismatch.reason and "[3, 4]" in mismatch.reason
