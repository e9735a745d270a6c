# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""A model_to_estimator run: train, evaluate, predict, export; the numbers a test compares.

``python tests/support/keras_lib_scenario.py OUT.json [--ours] [--install]`` writes the run's record;
the TF 2.15 leg writes the golden file with the real ``tf.keras.estimator.model_to_estimator``.
With ``--variants`` it writes ``{variant: record}`` for each of :data:`VARIANTS` but the
first, through ``tensorflow_estimator.python.estimator.keras_lib.model_to_estimator`` (the
real one on TF 2.15; ours through the alias after ``--install``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile


def keras2():
    import tensorflow as tf

    if tf.__version__.startswith("2.15."):
        return tf.keras
    import tf_keras

    return tf_keras


#: The arguments a run can vary beyond the checkpoint format: ``metric_names_map``,
#: ``export_outputs`` (a PredictOutput signature "out" beside serving_default),
#: ``keras_model_path`` (the model saved to HDF5 and passed by path), ``use_v2_estimator`` and
#: ``sample_weights`` (per-example weights in keras_lib's ``{"features", "sample_weights"}``).
VARIANTS = (
    "",
    "metric_names_map",
    "export_outputs",
    "keras_model_path",
    "use_v2_estimator",
    "sample_weights",
)


def _variant_kwargs(variant: str, model, model_to_estimator) -> dict:
    """model_to_estimator's arguments for one of :data:`VARIANTS` (the model's among them)."""
    if variant == "metric_names_map":
        return {"keras_model": model, "metric_names_map": {"mae": "mean_abs_err"}}
    if variant == "export_outputs":
        ours = model_to_estimator.__module__.startswith("tf1compat_init")
        if ours:
            from tf1compat_init.estimator.export import PredictOutput
        else:
            import tensorflow as tf

            PredictOutput = tf.estimator.export.PredictOutput  # noqa: N806
        return {"keras_model": model, "export_outputs": {"out": PredictOutput}}
    if variant == "keras_model_path":
        path = os.path.join(tempfile.mkdtemp(), "model.h5")
        model.save(path)
        return {"keras_model_path": path}
    if variant == "sample_weights":  # the weights come with the features (see run)
        return {"keras_model": model}
    if variant == "use_v2_estimator":
        return {"keras_model": model, "use_v2_estimator": True}
    if variant:
        raise ValueError(f"unknown variant {variant!r}; one of {VARIANTS}")
    return {"keras_model": model}


def run(model_to_estimator, checkpoint_format: str = "checkpoint", variant: str = "") -> dict:
    """Trains a two-layer model 3 steps from fixed weights; returns names, values, metrics."""
    import numpy as np
    import tensorflow as tf

    k = keras2()
    inp = k.Input(shape=(3,), name="x")
    hidden = k.layers.Dense(4, activation="relu", name="hidden")(inp)
    out = k.layers.Dense(1, name="out")(hidden)
    model = k.Model(inp, out)
    model.compile(optimizer=k.optimizers.legacy.SGD(0.05), loss="mse", metrics=["mae"])
    rng = np.random.RandomState(0)
    model.set_weights(
        [rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()]
    )
    model_dir = tempfile.mkdtemp()
    est = model_to_estimator(
        model_dir=model_dir,
        checkpoint_format=checkpoint_format,
        **_variant_kwargs(variant, model, model_to_estimator),
    )
    x = (np.arange(24, dtype="float32").reshape(8, 3) / 10.0) - 1.0
    y = x.sum(1, keepdims=True) * 0.5

    features = {"x": x}
    if variant == "sample_weights":
        # keras_lib's form: {"features": ..., "sample_weights": ...} in place of the features
        weights = np.linspace(0.25, 2.0, 8, dtype="float32")
        features = {"features": {"x": x}, "sample_weights": weights}

    def input_fn():
        return tf.data.Dataset.from_tensor_slices((features, y)).batch(8).repeat()

    warm = {
        n: tf.train.load_variable(os.path.join(model_dir, "keras", "keras_model.ckpt"), n).tolist()
        for n, _ in tf.train.list_variables(os.path.join(model_dir, "keras"))
        if "OBJECT_GRAPH" not in n
    }
    est.train(input_fn, steps=3)
    names = sorted(n for n, _ in tf.train.list_variables(model_dir))
    values = {
        n: np.asarray(est.get_variable_value(n)).tolist() for n in names if "OBJECT_GRAPH" not in n
    }
    metrics = {k_: float(v) for k_, v in est.evaluate(input_fn, steps=1).items()}
    preds = [
        {k_: np.asarray(v).tolist() for k_, v in p.items()}
        for p in est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": x}).batch(8))
    ]

    def serving_input_fn():
        x_ph = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        if type(est).__module__.startswith("tf1compat_init"):
            from tf1compat_init.estimator.export import ServingInputReceiver
        else:
            ServingInputReceiver = tf.estimator.export.ServingInputReceiver  # noqa: N806
        return ServingInputReceiver({"x": x_ph}, {"x": x_ph})

    export_dir = est.export_saved_model(os.path.join(model_dir, "export"), serving_input_fn)
    loaded = tf.saved_model.load(export_dir)
    signatures = {key: sorted(fn.structured_outputs) for key, fn in loaded.signatures.items()}
    record = {
        "signatures": signatures,
        "model_dir": sorted(p for p in os.listdir(model_dir) if not p.startswith("events")),
        "keras_dir": sorted(os.listdir(os.path.join(model_dir, "keras"))),
        "warm_start": warm,
        "names": names,
        "values": values,
        "metrics": metrics,
        "predictions": preds,
    }
    if variant:
        # The v1 Estimator has TF 1.x's export_savedmodel; the v2 one does not.
        record["v1_estimator"] = hasattr(est, "export_savedmodel")
    return record


def main(argv: list[str]) -> None:
    out = argv[0]
    if "--install" in argv:
        import tf1compat_init.estimator as est

        est.install()
        fn = keras2().estimator.model_to_estimator
    elif "--ours" in argv:
        from tf1compat_init.estimator._keras_lib import model_to_estimator as fn
    else:
        fn = keras2().estimator.model_to_estimator
    fmt = "saver" if "--saver" in argv else "checkpoint"
    if "--variants" in argv:
        from tensorflow_estimator.python.estimator import keras_lib

        record = {v: run(keras_lib.model_to_estimator, fmt, v) for v in VARIANTS[1:]}
    else:
        record = run(fn, fmt)
    with open(out, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
