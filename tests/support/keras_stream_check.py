"""The streamed ``.weights.h5`` against Keras' own ``save_weights``, for any Keras.

:func:`h5_tree` is the file compared group for group, dataset for dataset (dtype, shape,
attributes, bytes). Run as a script (``python keras_stream_check.py WORKDIR``) it does the
whole check with tf_keras, which never shares a process with Keras 3: a source of random
values, ``migrate --format keras`` with the model never assigned (``apply_plan`` fails),
the file equal to ``save_weights`` of the model holding those values, and ``load_weights``
giving them back. It prints ``OK``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def h5_tree(path: Any) -> dict:
    import h5py

    out = {}

    def visit(name, obj):
        attrs = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in obj.attrs.items()}
        if isinstance(obj, h5py.Dataset):
            out[name] = ("dataset", str(obj.dtype), obj.shape, attrs, obj[()].tobytes())
        else:
            out[name] = ("group", attrs)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
        out["/"] = ("group", dict(f.attrs))
    return out


def build(keras: Any) -> Any:
    """A functional model with a nested Sequential, a BatchNormalization and a layer with a
    scalar weight (HDF5 gives a scalar dataset no storage until it is written)."""

    class Gain(keras.layers.Layer):
        def build(self, input_shape: Any) -> None:
            self.gain = self.add_weight(name="gain", shape=(), initializer="ones")

        def call(self, x: Any) -> Any:
            return x * self.gain

    inner = keras.Sequential(
        [keras.Input((6,), name="inner_in"), keras.layers.Dense(4, name="d")], name="inner"
    )
    inp = keras.Input((3,), name="x")
    x = keras.layers.Dense(6, name="fc1")(inp)
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = Gain(name="gain")(inner(x))
    out = keras.layers.Dense(2, name="head", use_bias=False)(x)
    return keras.Model(inp, out, name="net")


def main(workdir: str) -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tf_keras as keras

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tf1compat_init.apply as apply
    from support.bundles import write_checkpoint
    from tf1compat_init.checkpoint import target_variables
    from tf1compat_init.migrate import migrate

    work = Path(workdir)
    model = build(keras)
    assert type(model).__module__.startswith("tf_keras"), type(model).__module__
    rng = np.random.default_rng(0)
    values = {
        name: (rng.standard_normal(t.shape) * 10).astype(t.dtype)
        for name, t in target_variables(model).items()
    }
    src = write_checkpoint(work / "src" / "ckpt", values)

    def refuse(*_, **__):
        raise AssertionError("values went through the model")

    real, apply.apply_plan = apply.apply_plan, refuse
    out = work / "out" / "m.weights.h5"
    migrate(src, out, format="keras", model=lambda: build(keras))
    apply.apply_plan = real
    for name, t in target_variables(model).items():
        t.parts[0].variable.assign(values[name])
    model.save_weights(str(work / "ref.weights.h5"))
    assert h5_tree(out) == h5_tree(work / "ref.weights.h5"), "not what save_weights writes"
    fresh = build(keras)
    fresh.load_weights(str(out))
    for name, t in target_variables(fresh).items():
        assert t.parts[0].variable.numpy().tobytes() == values[name].tobytes(), name
    print("OK")


if __name__ == "__main__":
    main(sys.argv[1])
