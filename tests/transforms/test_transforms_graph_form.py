"""Each transform builds its own TF1 graph ops; the graph builder asks it, not a list.

The ops equal the numpy pipeline, transform by transform (``remap_vocab``'s are compared
with TensorFlow's warm-start in test_vocab.py, whole v1 maps in test_transforms_tf.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from tf1compat_init import transforms as tt
from tf1compat_init.errors import TransformError


@pytest.mark.parametrize(
    "step",
    [tt.reshape(2, 3), tt.transpose(1, 0), tt.cast("float16"), tt.split(-1), tt.concat(0)],
    ids=str,
)
def test_the_built_in_transforms_have_a_graph_form(step):
    assert step.graph_form


class _Negate(tt.Transform):
    """A user's transform: shapes and arrays, no graph form."""

    name = "negate"

    @property
    def text(self):
        return "negate()"

    def specs(self, ins, targets):
        return list(ins)

    def apply(self, arrays, outs, alloc):
        return [-a for a in arrays]


@pytest.mark.parametrize("step", [tt.fn(np.negative), _Negate()], ids=["fn", "user"])
def test_python_transforms_have_none_and_say_so(step):
    assert not step.graph_form
    with pytest.raises(TransformError, match=r"has no graph form"):
        step.graph([object()], [((2,), "float32")], [((2,), "float32")])


CASES = [
    ([tt.reshape(3, 2)], [(2, 3)], "float32", 1),
    ([tt.transpose(1, 0)], [(2, 3)], "float32", 1),
    ([tt.transpose()], [(2, 3, 4)], "int32", 1),
    ([tt.cast("float16")], [(2, 3)], "float32", 1),
    ([tt.split(-1)], [(2, 6)], "float32", 3),
    ([tt.split(0, sizes=[1, 3])], [(4, 2)], "int64", 2),
    ([tt.concat(0)], [(2, 3), (1, 3)], "float32", 1),
    ([tt.concat(-1), tt.split(-1), tt.cast("float64")], [(2, 2), (2, 4)], "float32", 2),
]


@pytest.mark.parametrize(("steps", "shapes", "dtype", "n_targets"), CASES)
def test_graph_ops_equal_the_numpy_pipeline(steps, shapes, dtype, n_targets):
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    arrays = [(rng.standard_normal(s) * 10).astype(dtype) for s in shapes]
    targets = [None] * n_targets
    want = tt.run(steps, arrays, targets)
    graph = tf.Graph()
    with graph.as_default():
        state = [tf.constant(a) for a in arrays]
        specs = [(a.shape, dtype) for a in arrays]
        for step in steps:
            outs = step.specs(specs, targets)
            state = step.graph(state, specs, outs)
            specs = outs
        with tf.compat.v1.Session(graph=graph) as sess:
            got = sess.run(list(state))
    assert len(got) == len(want) == n_targets
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
