"""tf1compat_init.engine.basics.tfcompat: decisions on version strings, for any TensorFlow.

What the front ends do with the answer (probing protobuf, writing graph.pbtxt themselves)
is tested on real TensorFlow in tests/frontends/v1/test_graph_def.py.
"""

from __future__ import annotations

import pytest

from tf1compat_init.engine.basics.tfcompat import GRAPH_TEXT_ADVICE, graph_text_writable, release

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    "version, expected",
    [
        ("2.20.0", (2, 20)),
        ("2.21.0rc1", (2, 21)),
        ("2.20.0-dev20250101", (2, 20)),
        ("v2.15.1", (2, 15)),
        (" 2.9.3", (2, 9)),
        ("3.0", (3, 0)),
        ("nightly", (0, 0)),
        ("2", (0, 0)),
        ("", (0, 0)),
    ],
)
def test_release_reads_major_and_minor(version, expected):
    assert release(version) == expected


@pytest.mark.parametrize(
    "tf_version, takes_float_format, writable",
    [
        ("2.20.0", False, False),  # the broken pair: TF 2.20 with protobuf 7
        ("2.15.1", False, False),
        ("2.20.0", True, True),
        ("2.21.0", False, True),  # 2.21 stopped passing float_format
        ("2.22.0rc0", False, True),
        ("garbage", True, True),
        ("garbage", False, False),
    ],
)
def test_graph_text_writable(tf_version, takes_float_format, writable):
    assert graph_text_writable(tf_version, takes_float_format) is writable


def test_the_advice_names_both_versions_and_the_ways_out():
    text = GRAPH_TEXT_ADVICE % ("2.20.0", "7.34.0")
    assert "TensorFlow 2.20.0" in text and "protobuf 7.34.0" in text
    assert "protobuf<7" in text and "can_save_graph_def()" in text
