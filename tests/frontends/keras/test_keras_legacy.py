"""tf_keras (TF_USE_LEGACY_KERAS=1): the Keras tests again, in processes of their own.

tf_keras must be chosen before TensorFlow is imported, and one process never holds both
Keras 3 and tf_keras, so every tf_keras check runs in a subprocess:

- the whole of tests/frontends/keras/test_keras.py, which is written against ``tf.keras``;
- the same models built under both: identical model-relative names, and object-based
  checkpoints written by one Keras loaded into the other with ``assignment_map="auto"``.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.tf_keras,
    pytest.mark.tf221,
    # find_spec, not import: this process must not import tf_keras.
    pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None, reason="needs tf_keras"),
]
pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 240


def run_legacy(*args, timeout=TIMEOUT):
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF1COMPAT_EXPECT_FLAVOUR="tf_keras")
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_keras_suite_passes_under_tf_keras():
    proc = run_legacy(
        "-m", "pytest", "tests/frontends/keras/test_keras.py", "-q", "-p", "no:cacheprovider"
    )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    summary = proc.stdout.strip().splitlines()[-1]
    assert re.match(r"^\d+ passed in ", summary), summary  # no failure, no skip


def test_names_and_checkpoints_agree_between_keras3_and_tf_keras(tmp_path):
    from support.keras_helpers import fill_distinct, flavour, reference_models, tf, wrong_values

    from tf1compat_init.keras import load_checkpoint, weight_names

    if flavour() != "keras3":
        pytest.skip("the parent process compares against Keras 3")
    mine = reference_models()
    for key, model in mine.items():
        fill_distinct(model)
        tf.train.Checkpoint(model=model).save(str(tmp_path / "k3" / key / "ckpt"))

    proc = run_legacy("tests/support/keras_cross.py", str(tmp_path / "k3"), str(tmp_path / "tfk"))
    assert proc.returncode == 0, proc.stderr[-6000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert theirs["flavour"] == "tf_keras"

    # One name per weight, whichever Keras built the model.
    assert theirs["names"] == {key: list(weight_names(m)) for key, m in mine.items()}

    # Keras 3 -> tf_keras: every style but the subclassed model, whose Keras 3 checkpoint
    # saves several variables under one name ("net/kernel"): it needs an explicit map.
    loaded = theirs["loaded"]
    assert {k for k, v in loaded.items() if v.get("wrong") == []} == set(mine) - {"net"}
    assert loaded["net"]["error"].startswith("CheckpointMismatchError")
    assert "nearest keys: model/block/fc/_kernel" in loaded["net"]["error"]

    # tf_keras -> Keras 3: all of them, nested models (saved without their own name) too.
    maps = {}
    for key, path in theirs["written"].items():
        model = reference_models()[key]
        maps[key] = load_checkpoint(model, path, "auto").applied_map
        assert wrong_values(model) == [], key
    assert maps["functional"] == {"fc/": "enc/fc/", "head/": "head/"}
