"""model_to_estimator (``keras_lib``) for Keras 2 models, against tf.estimator 2.15.

TF 2.15 leg: the real ``tf.keras.estimator.model_to_estimator`` and ours in one process, the
same run (checkpoint names and values after 3 steps, warm-start checkpoint, model_dir
layout, eval metrics, predictions), for both checkpoint formats; and the real run reproduces
``tests/golden/keras_lib_tf215.json``. TF 2.21 leg: ``tf_keras.estimator.model_to_estimator``
after ``install()``, in a ``TF_USE_LEGACY_KERAS=1`` process, reproduces that golden file.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from support import keras_lib_scenario as scenario  # noqa: E402

GOLDEN = ROOT / "tests" / "golden" / "keras_lib_tf215.json"
VARIANTS_GOLDEN = ROOT / "tests" / "golden" / "keras_lib_variants_tf215.json"
RTOL = 1e-5
FLOAT_KEYS = ("warm_start", "values", "metrics")


def assert_same_run(mine: dict, ref: dict) -> None:
    assert set(mine) == set(ref)
    for key in ("model_dir", "keras_dir", "names", "signatures", "v1_estimator"):
        if key not in ref:
            continue
        assert mine[key] == ref[key], key
    for key in FLOAT_KEYS:
        assert mine[key].keys() == ref[key].keys(), key
        for name in ref[key]:
            np.testing.assert_allclose(mine[key][name], ref[key][name], rtol=RTOL, err_msg=name)
    assert len(mine["predictions"]) == len(ref["predictions"]) == 8
    for p, q in zip(mine["predictions"], ref["predictions"], strict=True):
        assert p.keys() == q.keys() == {"out"}
        np.testing.assert_allclose(p["out"], q["out"], rtol=RTOL)


@pytest.mark.tf215
@pytest.mark.parametrize("fmt", ["checkpoint", "saver"])
def test_same_run_as_tf215(fmt):
    from tf1compat_init.estimator._keras_lib import model_to_estimator

    ref = scenario.run(tf.keras.estimator.model_to_estimator, fmt)
    mine = scenario.run(model_to_estimator, fmt)
    assert_same_run(mine, ref)
    if fmt == "checkpoint":
        assert "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in ref["names"]
        assert ref["signatures"] == {"serving_default": ["out"]}
        assert_same_run(ref, json.loads(GOLDEN.read_text()))
    else:
        assert "hidden/kernel" in ref["names"] and "global_step" in ref["names"]


@pytest.mark.tf215
@pytest.mark.parametrize("variant", scenario.VARIANTS[1:])
def test_arguments_give_the_same_run_as_tf215(variant):
    """metric_names_map, export_outputs, keras_model_path, use_v2_estimator, sample weights.

    The reference is tensorflow-estimator's own ``keras_lib.model_to_estimator``, the function
    both Kerases' public ones call (v1 with ``use_v2_estimator=False``, v2 with True).
    """
    from tensorflow_estimator.python.estimator import keras_lib

    from tf1compat_init.estimator._keras_lib import model_to_estimator

    ref = scenario.run(keras_lib.model_to_estimator, "checkpoint", variant)
    mine = scenario.run(model_to_estimator, "checkpoint", variant)
    assert_same_run(mine, ref)
    assert mine["v1_estimator"] == ref["v1_estimator"] == (variant != "use_v2_estimator")
    if variant == "metric_names_map":
        assert "mean_abs_err" in ref["metrics"] and "mae" not in ref["metrics"]
    if variant == "export_outputs":
        assert set(ref["signatures"]) == {"serving_default", "out"}
    if variant == "sample_weights":  # the weights change the training and the eval loss
        plain = json.loads(GOLDEN.read_text())
        assert abs(ref["metrics"]["loss"] - plain["metrics"]["loss"]) > 1e-3
    assert_same_run(ref, json.loads(VARIANTS_GOLDEN.read_text())[variant])


def _scenario_after_install(tmp_path, *flags: str) -> dict:
    """The scenario's record, run with tf_keras after ``install()`` in a fresh process."""
    out = tmp_path / "run.json"
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    script = ROOT / "tests" / "support" / "keras_lib_scenario.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(out), "--install", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.tf_keras
@pytest.mark.tf221
@pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None, reason="needs tf_keras")
def test_tf_keras_model_to_estimator_after_install_matches_tf215(tmp_path):
    mine = _scenario_after_install(tmp_path)
    assert_same_run(mine, json.loads(GOLDEN.read_text()))


@pytest.mark.tf_keras
@pytest.mark.tf221
@pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None, reason="needs tf_keras")
def test_keras_lib_arguments_after_install_match_tf215(tmp_path):
    """The private keras_lib path, with each argument variant, gives TF 2.15's runs."""
    mine = _scenario_after_install(tmp_path, "--variants")
    golden = json.loads(VARIANTS_GOLDEN.read_text())
    assert set(mine) == set(golden) == set(scenario.VARIANTS[1:])
    for variant in golden:
        assert_same_run(mine[variant], golden[variant])


def _compiled_model():
    k = scenario.keras2()
    inp = k.Input(shape=(2,), name="x")
    model = k.Model(inp, k.layers.Dense(1, name="out")(inp))
    model.compile(optimizer=k.optimizers.legacy.SGD(0.1), loss="mse")
    return model


@pytest.mark.tf215
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "Either `keras_model` or `keras_model_path` needs to be provided."),
        (
            {"keras_model": "M", "keras_model_path": "p"},
            "Please specity either `keras_model` or `keras_model_path`, but not both.",
        ),
        (
            {"keras_model": "M", "checkpoint_format": "h5"},
            'Checkpoint format must be one of "checkpoint" or "saver". Got h5',
        ),
        ({"keras_model": "uncompiled"}, "The given keras model has not been compiled yet."),
    ],
)
def test_argument_errors_as_tf215(kwargs, message, tmp_path):
    from tf1compat_init.estimator._keras_lib import model_to_estimator

    k = scenario.keras2()
    if kwargs.get("keras_model") == "M":
        kwargs["keras_model"] = _compiled_model()
    elif kwargs.get("keras_model") == "uncompiled":
        inp = k.Input(shape=(2,))
        kwargs["keras_model"] = k.Model(inp, k.layers.Dense(1)(inp))
    texts = []
    for fn in (tf.keras.estimator.model_to_estimator, model_to_estimator):
        with pytest.raises(ValueError) as err:
            fn(model_dir=str(tmp_path / fn.__module__), **kwargs)
        texts.append(str(err.value))
    assert texts[0] == texts[1]
    assert message in texts[1]


@pytest.mark.tf221
def test_keras3_model_is_refused_with_advice(tmp_path):
    import keras

    from tf1compat_init.estimator._keras_lib import model_to_estimator

    if not keras.__version__.startswith("3."):
        pytest.fail(f"this leg's tf.keras should be Keras 3, is {keras.__version__}")
    inp = keras.Input(shape=(2,))
    model = keras.Model(inp, keras.layers.Dense(1)(inp))
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(TypeError, match="Keras 3 model") as err:
        model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    assert "tf_keras.estimator.model_to_estimator" in str(err.value)
    assert "TF_USE_LEGACY_KERAS=1" in str(err.value)
    assert not os.listdir(tmp_path)


@pytest.mark.tf215
def test_subclassed_model_as_tf215(tmp_path):
    """A subclassed model: object-based checkpoints refused with 2.15's text; with ``saver``,
    the same variable names. (2.15 rebuilds a subclassed model's layers in place and does not
    warm-start them from the Keras weights, so its values are random: only names compare.)"""
    from tensorflow_estimator.python.estimator import keras_lib

    from tf1compat_init.estimator._keras_lib import model_to_estimator

    k = scenario.keras2()

    class Net(k.Model):
        def __init__(self):
            super().__init__()
            self.hidden = k.layers.Dense(4, activation="relu", name="hidden")
            self.out = k.layers.Dense(1, name="out")

        def call(self, x):
            return self.out(self.hidden(x))

    x = np.linspace(-1, 1, 24, dtype="float32").reshape(8, 3)
    y = x.sum(1, keepdims=True)
    runs = []
    for fn in (keras_lib.model_to_estimator, model_to_estimator):
        model = Net()
        model.compile(optimizer=k.optimizers.legacy.SGD(0.05), loss="mse", metrics=["mae"])
        model.fit(x, y, epochs=1, verbose=0)
        model_dir = tmp_path / fn.__module__
        with pytest.raises(ValueError) as err:
            fn(keras_model=model, model_dir=str(model_dir / "object"))
        est = fn(keras_model=model, model_dir=str(model_dir / "saver"), checkpoint_format="saver")
        est.train(lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat(), steps=2)
        metrics = est.evaluate(lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(8))
        runs.append(
            (
                str(err.value),
                sorted(n for n, _ in tf.train.list_variables(est.model_dir)),
                sorted(metrics),
            )
        )
    assert runs[0] == runs[1]
    assert "Object-based checkpoints are currently not supported" in runs[0][0]
    assert runs[0][1] == [
        "global_step",
        *(f"net/{layer}/{w}" for layer in ("hidden", "out") for w in ("bias", "kernel")),
        *(f"training/SGD/{h}" for h in ("decay", "learning_rate", "momentum")),
    ]
