"""tf1compat_init.engine.targets.vocab_graph: the vocabulary remap as TensorFlow ops.

Checked against the numpy remap (:meth:`VocabRemap.apply`), which the rest of the suite
checks against TF's own warm start.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tf1compat_init.engine.reading.vocab import VocabRemap  # noqa: E402
from tf1compat_init.engine.targets.vocab_graph import backup_initializer, remap_ops  # noqa: E402


@pytest.fixture
def vocabs(tmp_path):
    old = tmp_path / "old.txt"
    new = tmp_path / "new.txt"
    old.write_text("a\nb\nc\nd\n")
    new.write_text("d\nx\nb\na\n")
    return str(old), str(new)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("oov", [0, 2])
@pytest.mark.parametrize("backup", [None, 0.5])
def test_remap_ops_give_the_numpy_remap(vocabs, axis, oov, backup):
    remap = VocabRemap(*vocabs, axis=axis, num_oov_buckets=oov, backup_initializer=backup)
    value = np.arange(12, dtype=np.float32).reshape((4, 3) if axis == 0 else (3, 4))
    got = remap_ops(remap, tf.constant(value), value.shape).numpy()
    np.testing.assert_array_equal(got, remap.apply(value))


def test_a_rank_one_tensor_is_remapped_as_rows(vocabs):
    remap = VocabRemap(*vocabs, backup_initializer=-1.0)
    value = np.array([10.0, 11.0, 12.0, 13.0], np.float32)
    got = remap_ops(remap, tf.constant(value), value.shape).numpy()
    np.testing.assert_array_equal(got, [13.0, -1.0, 11.0, 10.0])
    np.testing.assert_array_equal(got, remap.apply(value))


def test_backup_initializer_as_tf_warm_start_calls_it(vocabs):
    zeros = backup_initializer(VocabRemap(*vocabs))
    assert np.all(zeros([2, 1], dtype=tf.float32).numpy() == 0)
    number = backup_initializer(VocabRemap(*vocabs, backup_initializer=3.0))
    np.testing.assert_array_equal(number([2, 1]).numpy(), [[3.0], [3.0]])
    mine = lambda shape: tf.ones(shape)  # noqa: E731
    assert backup_initializer(VocabRemap(*vocabs, backup_initializer=mine)) is mine
