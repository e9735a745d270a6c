"""Test helper: TF1 checkpoints for the migrate, CLI and checkpoint-restore tests.

- :func:`write_sub_models` writes the two sub-model checkpoints of the v1 examples:
  one with its layers at the root (``fc1/kernel``), one under ``model/``, both trained
  one Adam step (so they hold ``global_step``, slots and beta powers).
- :func:`write_rich` writes a 2-shard ``Saver(sharded=True)`` checkpoint with
  partitioned variables (along axis 0 and 1) and many dtypes, including strings,
  bfloat16, NaN and -0.0.
- :func:`factory_file` writes a Python file of model factories for ``--model``.

Importing this module imports TensorFlow; import it after ``pytest.importorskip``.
"""

from __future__ import annotations

import hashlib
import os
import textwrap
from pathlib import Path

import numpy as np

from support.bundles import same_bits

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1

__all__ = [
    "file_digests",
    "factory_file",
    "same_bits",
    "tf_values",
    "write_rich",
    "write_sub_models",
]


def _dense(name: str, n_in: int, n_out: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    kernel = rng.standard_normal((n_in, n_out)).astype(np.float32)
    bias = rng.standard_normal((n_out,)).astype(np.float32)
    return [
        v1.get_variable(f"{name}/kernel", initializer=tf.constant(kernel)),
        v1.get_variable(f"{name}/bias", initializer=tf.constant(bias)),
    ]


def write_sub_models(directory: str | Path) -> tuple[str, str]:
    """The v1 examples' two sub-model checkpoints.

    Returns:
        ``(prefix_1, prefix_2)``: ``sub_model_1`` with ``fc1`` (4->3) and ``fc2`` (3->2)
        at the root, and ``sub_model_2`` with the same layers under ``model/``.
    """
    prefixes = []
    for i, scope in enumerate(("", "model")):
        g = tf.Graph()
        with g.as_default():
            with v1.variable_scope(scope) if scope else _no_scope():
                variables = _dense("fc1", 4, 3, 10 * i + 1) + _dense("fc2", 3, 2, 10 * i + 2)
            step = v1.train.get_or_create_global_step()
            loss = tf.add_n([tf.reduce_sum(v * v) for v in variables])
            train = v1.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
            saver = v1.train.Saver()
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                sess.run(train)
                path = os.path.join(str(directory), f"sub_model_{i + 1}", "model.ckpt")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                prefixes.append(saver.save(sess, path, global_step=step))
    return prefixes[0], prefixes[1]


class _no_scope:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


def write_rich(directory: str | Path) -> str:
    """A 2-shard name-based checkpoint with partitioned variables and many dtypes.

    Keys: ``model/dense/kernel`` (float32 with NaN and -0.0), ``model/dense/bias``,
    ``model/emb`` (float32 [10, 3], 3 partitions on axis 0), ``model/wide`` (float64
    [4, 9], 3 partitions on axis 1), ``model/counts`` (int64), ``model/ids`` (int32),
    ``model/mask`` (bool), ``model/half`` (float16), ``model/bf`` (bfloat16),
    ``model/empty`` (float32 [0, 3]), ``vocab`` (string), ``global_step``, and Adam
    slots and beta powers for the trainable float32 variables.
    """
    g = tf.Graph()

    def device_fn(op: object) -> str:
        name = getattr(op, "name", "")
        return "/cpu:1" if "part_1" in name or "counts" in name or "vocab" in name else "/cpu:0"

    kernel = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    kernel[0, 0] = np.nan
    kernel[1, 1] = -0.0
    with g.as_default(), g.device(device_fn):
        with v1.variable_scope("model"):
            k = v1.get_variable("dense/kernel", initializer=tf.constant(kernel))
            b = v1.get_variable("dense/bias", initializer=tf.constant(np.ones(4, np.float32)))
            emb = v1.get_variable("emb", shape=(10, 3), partitioner=v1.fixed_size_partitioner(3))
            v1.get_variable(
                "wide", shape=(4, 9), dtype=tf.float64, partitioner=v1.fixed_size_partitioner(3, 1)
            )
            v1.get_variable("counts", initializer=tf.constant([1, -2, 2**40], tf.int64))
            v1.get_variable("ids", initializer=tf.constant([[7, 8], [9, -1]], tf.int32))
            v1.get_variable("mask", initializer=tf.constant([True, False, True]), trainable=False)
            v1.get_variable("half", initializer=tf.constant([0.5, -1.25], tf.float16))
            v1.get_variable("bf", initializer=tf.constant([1.5, -2.25, 3.0], tf.bfloat16))
            v1.get_variable("empty", shape=(0, 3), initializer=v1.zeros_initializer())
        v1.get_variable(
            "vocab", initializer=tf.constant([b"a", b"", "\u00fc".encode()]), trainable=False
        )
        step = v1.train.get_or_create_global_step()
        loss = tf.reduce_sum(b * b) + tf.reduce_sum(tf.gather(emb, [1, 5])) + tf.reduce_sum(k[1:])
        train = v1.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
        saver = v1.train.Saver(sharded=True)
        config = v1.ConfigProto(device_count={"CPU": 2}, allow_soft_placement=True)
        with v1.Session(graph=g, config=config) as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train)
            os.makedirs(str(directory), exist_ok=True)
            return saver.save(sess, os.path.join(str(directory), "model.ckpt"), global_step=step)


def tf_values(prefix: str) -> dict[str, np.ndarray]:
    """Every tensor of a checkpoint as TensorFlow's own reader returns it."""
    reader = tf.train.load_checkpoint(prefix)
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()}


def file_digests(prefix: str) -> dict[str, str]:
    """sha256 of every file of a checkpoint (index and shards), to prove it is unchanged."""
    d = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    out = {}
    for name in sorted(os.listdir(d)):
        if name.startswith(base + ".") or name == "checkpoint":
            out[name] = hashlib.sha256(Path(d, name).read_bytes()).hexdigest()
    return out


FACTORIES = '''
import tensorflow as tf


class Dense(tf.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.kernel = tf.Variable(tf.zeros([n_in, n_out]))
        self.bias = tf.Variable(tf.zeros([n_out]))


class SubModel(tf.Module):
    """The v1 examples' sub-model as a tf.Module: fc1/kernel, fc1/bias, fc2/..."""

    def __init__(self):
        super().__init__()
        self.fc1 = Dense(4, 3)
        self.fc2 = Dense(3, 2)


def build_module():
    return SubModel()


def build_keras():
    # tf.keras: Keras 3 on TF >= 2.16, tf_keras under TF_USE_LEGACY_KERAS=1, Keras 2 on 2.15.
    layers = tf.keras.layers
    return tf.keras.Sequential(
        [tf.keras.Input((4,)), layers.Dense(3, name="fc1"), layers.Dense(2, name="fc2")],
        name="sub_model",
    )


def build_keras_wrong():
    layers = tf.keras.layers
    return tf.keras.Sequential([tf.keras.Input((4,)), layers.Dense(5, name="fc1")])


def build_none():
    return None


def build_boom():
    raise RuntimeError("no GPU here")
'''


def factory_file(directory: str | Path) -> str:
    """Writes ``models.py`` (the factories above) into ``directory``; returns its path."""
    path = Path(directory) / "models.py"
    path.write_text(textwrap.dedent(FACTORIES))
    return str(path)
