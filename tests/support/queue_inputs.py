"""Reading queue-fed input functions (``estimator.v1.inputs``) as an Estimator does."""

from __future__ import annotations

import tensorflow as tf

HAS_REAL = hasattr(tf, "compat") and hasattr(tf.compat.v1, "estimator")


def read_batches(input_fn, limit=50, graph_seed=None):
    """Every batch ``input_fn`` yields (at most ``limit``), as numpy, in a fresh graph."""
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.compat.v1.set_random_seed(graph_seed)
        out = input_fn()
        batches = []
        with tf.compat.v1.train.MonitoredSession() as sess:
            while not sess.should_stop() and len(batches) < limit:
                batches.append(sess.run(out))
        return batches
