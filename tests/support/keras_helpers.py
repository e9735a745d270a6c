"""Shared by the Keras tests and their subprocesses: TF1 checkpoints and small models.

Importing this module imports TensorFlow (and, through ``tf.keras``, whichever Keras
the environment selects). Import it after ``pytest.importorskip("tensorflow")``.
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

keras = tf.keras

#: A TF1 two-layer MLP under ``model/``, every value distinct.
TF1_MLP = {
    "model/dense/kernel": np.arange(12, dtype=np.float32).reshape(4, 3) / 10,
    "model/dense/bias": np.array([1.0, 2.0, 3.0], np.float32),
    "model/dense_1/kernel": -np.arange(6, dtype=np.float32).reshape(3, 2) / 10,
    "model/dense_1/bias": np.array([7.0, 8.0], np.float32),
}


def write_tf1_checkpoint(
    prefix: str, values: dict[str, np.ndarray], global_step: int | None = 100
) -> str:
    """Writes ``values`` with TF1 graph code (``get_variable`` + ``Saver``); returns the path."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    with tf.Graph().as_default():
        for name, value in values.items():
            tf.compat.v1.get_variable(name, initializer=tf.constant(value))
        if global_step is not None:
            step = tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            if global_step is not None:
                sess.run(step.assign(global_step))
            return tf.compat.v1.train.Saver().save(sess, prefix, global_step=global_step)


def mlp(names: tuple[str, str] | None = ("fc1", "fc2"), built: bool = True) -> keras.Model:
    """Dense(3) -> Dense(2) on 4 inputs; ``names=None`` leaves Keras to number the layers."""
    n1, n2 = names if names is not None else (None, None)
    layers = [keras.layers.Dense(3, name=n1), keras.layers.Dense(2, name=n2)]
    return keras.Sequential(([keras.Input((4,))] if built else []) + layers)


def values_of(model: keras.Model) -> list[np.ndarray]:
    return [np.array(v.numpy()) for v in model.weights]


def flavour() -> str:
    """``"keras3"``, ``"tf_keras"`` or ``"keras2"``: what ``tf.keras`` is in this process."""
    from tf1compat_init.keras import keras_flavour

    return keras_flavour(keras.layers.Dense(1))


class Block(keras.layers.Layer):
    """A layer with a weight of its own and a sublayer."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.fc = keras.layers.Dense(3, name="fc")

    def build(self, input_shape):
        self.scale = self.add_weight(name="scale", shape=(3,), initializer="ones")
        super().build(input_shape)

    def call(self, x):
        return self.fc(x) * self.scale


class Net(keras.Model):
    """Subclassed: a custom block, then an LSTM (whose cell owns the weights)."""

    def __init__(self):
        super().__init__(name="net")
        self.block = Block(name="block")
        self.rnn = keras.layers.LSTM(2, name="rnn")

    def call(self, x):
        return self.rnn(self.block(x))


def reference_models() -> dict[str, keras.Model]:
    """Built models of every style, every layer named: the same names in every Keras."""
    net = Net()
    net(tf.zeros((1, 5, 4)))
    encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="fc")], name="enc")
    inp = keras.Input((4,))
    functional = keras.Model(inp, keras.layers.Dense(2, name="head")(encoder(inp)))
    cnn = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(2, 3, name="conv"),
            keras.layers.BatchNormalization(name="bn"),
        ]
    )
    tokens = keras.Input((5,), dtype="int32")
    emb = keras.layers.Embedding(10, 4, name="emb")(tokens)
    att = keras.layers.MultiHeadAttention(2, 2, name="mha")(emb, emb)
    attention = keras.Model(tokens, att)
    return {"mlp": mlp(), "functional": functional, "net": net, "cnn": cnn, "attention": attention}


def distinct_value(index: int, shape: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(shape))
    return (index + 1 + np.arange(size) / 1000).reshape(shape).astype(np.float32)


def fill_distinct(model: keras.Model) -> None:
    """Gives every weight a value that tells its model-relative name (same in every Keras)."""
    from tf1compat_init.keras import weight_names

    for i, (_, v) in enumerate(sorted(weight_names(model).items())):
        v.assign(distinct_value(i, tuple(int(d) for d in v.shape)))


def wrong_values(model: keras.Model) -> list[str]:
    """The weights that do not hold what :func:`fill_distinct` gave the same name."""
    from tf1compat_init.keras import weight_names

    return [
        name
        for i, (name, v) in enumerate(sorted(weight_names(model).items()))
        if not np.array_equal(v.numpy(), distinct_value(i, tuple(int(d) for d in v.shape)))
    ]
