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
RTOL = 1e-5
FLOAT_KEYS = ("warm_start", "values", "metrics")


def assert_same_run(mine: dict, ref: dict) -> None:
    assert set(mine) == set(ref)
    for key in ("model_dir", "keras_dir", "names", "signatures"):
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


@pytest.mark.tf_keras
@pytest.mark.tf221
@pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None, reason="needs tf_keras")
def test_tf_keras_model_to_estimator_after_install_matches_tf215(tmp_path):
    out = tmp_path / "run.json"
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "support" / "keras_lib_scenario.py"),
            str(out),
            "--install",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_run(json.loads(out.read_text()), json.loads(GOLDEN.read_text()))


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
