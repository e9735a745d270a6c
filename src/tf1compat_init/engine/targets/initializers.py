# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""TensorFlow initializers evaluated as a TF1 graph evaluates them (for backup values).

Imported only when a TensorFlow initializer is given to a vocabulary remap
(:func:`tf1compat_init.vocab.backup_values`), so the engine stays importable without
TensorFlow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def graph_values(init: Any, shapes: Sequence[Sequence[int]], dtype: Any) -> list[Any]:
    """``init(shape)`` for each shape, each call one op of a fresh graph, then run once.

    TF's warm-start calls the backup initializer once per block (missing entries, then OOV
    entries), each call a new op; a seeded initializer's ops then start the same random
    stream. Eager calls would continue one stream instead, so they run in a graph here.
    """
    import numpy as np
    import tensorflow as tf

    tf_dtype = tf.as_dtype(np.dtype(dtype))
    with tf.Graph().as_default():
        tensors = [
            tf.convert_to_tensor(init(list(s), dtype=tf_dtype)) if int(np.prod(s)) else None
            for s in shapes
        ]
        live = [t for t in tensors if t is not None]
        with tf.compat.v1.Session() as session:
            values = iter(session.run(live))
    return [
        np.zeros(tuple(s), np.dtype(dtype)) if t is None else next(values)
        for s, t in zip(shapes, tensors, strict=True)
    ]
