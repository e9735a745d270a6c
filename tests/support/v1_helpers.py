"""Helpers for the ``tf1compat_init.v1`` tests: TF1 checkpoints, rewrites, a recorder hook.

Importing this module imports TensorFlow; import it after ``pytest.importorskip``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

V1 = tf.compat.v1


def save_checkpoint(
    prefix: str, values: Mapping[str, Any], partitions: Mapping[str, int] | None = None
) -> str:
    """Saves ``values`` (name -> array) with a TF1 ``Saver``; some names partitioned."""
    partitions = partitions or {}
    graph = tf.Graph()
    with graph.as_default():
        for name, value in values.items():
            value = np.asarray(value)
            n = partitions.get(name)
            V1.get_variable(
                name,
                initializer=tf.constant(value),
                partitioner=V1.fixed_size_partitioner(n) if n else None,
            )
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return saver.save(sess, prefix)


def read_checkpoint(path: str) -> dict[str, np.ndarray]:
    """Every tensor of a checkpoint, read by TensorFlow."""
    reader = tf.train.load_checkpoint(path)
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()}


def rewrite_latest(directory: str, changes: Mapping[str, Any]) -> str:
    """Overwrites the latest checkpoint in ``directory`` with ``changes`` applied.

    Proves that a resumed run restores its own checkpoint: a value only this rewrite
    produced can only come from there.
    """
    prefix = tf.train.latest_checkpoint(directory)
    values = read_checkpoint(prefix)
    unknown = set(changes) - set(values)
    assert not unknown, f"keys not in {prefix}: {unknown}"
    values.update({k: np.asarray(v, dtype=values[k].dtype) for k, v in changes.items()})
    graph = tf.Graph()
    with graph.as_default():
        for name, value in values.items():
            V1.get_variable(name, initializer=tf.constant(value), trainable=False)
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            saver.save(sess, prefix)
    return prefix


class Recorder(V1.train.SessionRunHook):
    """Records ``fetches`` right after each session creation (after restore or init)."""

    def __init__(self, fetches: Any) -> None:
        self.fetches = fetches
        self.seen: list[Any] = []

    def after_create_session(self, session: Any, coord: Any) -> None:
        self.seen.append(session.run(self.fetches))


def ckpt_files(directory: str) -> list[str]:
    return sorted(f[: -len(".index")] for f in os.listdir(directory) if f.endswith(".index"))
