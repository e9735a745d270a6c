"""tf1compat_init.engine.targets.initializers: backup values as a TF1 graph computes them.

TF's warm-start calls a vocabulary's backup initializer once per block, each call a new op
of one graph; a seeded random initializer then starts the same stream in every block. The
remap's end-to-end agreement with ``warm_start`` is tests/engine/reading/test_vocab.py's.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tf1compat_init.engine.targets.initializers import graph_values  # noqa: E402


def test_a_constant_initializer_fills_every_block():
    out = graph_values(tf.compat.v1.constant_initializer(0.5), [(2, 3), (1, 3)], "float32")
    assert [v.shape for v in out] == [(2, 3), (1, 3)]
    assert all(v.dtype == np.float32 for v in out)
    assert all((v == 0.5).all() for v in out)


def test_empty_blocks_are_zeros_of_their_shape_and_make_no_op():
    calls = []

    def init(shape, dtype=None):
        calls.append(list(shape))
        return tf.ones(shape, dtype=dtype)

    out = graph_values(init, [(0, 4), (2, 4), (0,)], "float64")
    assert calls == [[2, 4]]
    assert out[0].shape == (0, 4) and out[2].shape == (0,)
    assert out[1].dtype == np.float64 and (out[1] == 1).all()


def test_a_seeded_initializer_starts_the_same_stream_in_each_block():
    init = tf.compat.v1.random_normal_initializer(seed=7)
    first, second = graph_values(init, [(3, 2), (3, 2)], "float32")
    np.testing.assert_array_equal(first, second)
    assert np.std(first) > 0  # random, not a constant
    # and a fresh call gives the same values again: no stream carried between calls
    (again,) = graph_values(init, [(3, 2)], "float32")
    np.testing.assert_array_equal(first, again)
