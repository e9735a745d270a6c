"""The benchmark's layout generator (benchmarks/model_layouts.py) writes what real TF1 models write.

Names, shapes and dtypes of BERT and ResNet-50 are compared with checkpoints written by the
real model code under TF 2.15 (``tests/golden/model_layouts_tf215.json``, listed from
``tests/support/tf1_recipe_models.py all DIR``); the wide-and-deep layout with the canned
estimator's checkpoint in ``tests/golden/dnn_linear_tf215_model``; GPT-2 124M with its
published parameter count. The files themselves are compared byte for byte with what
``tf.compat.v1.train.Saver`` writes for the same values.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import model_layouts as ml  # noqa: E402

pytestmark = pytest.mark.tf221
GOLDEN = json.loads((ROOT / "tests" / "golden" / "model_layouts_tf215.json").read_text())


def _listing(tensors: list[ml.Tensor]) -> dict[str, list]:
    return {t.name: [list(t.shape), t.dtype] for t in tensors}


def test_bert_matches_bert_tensorflow_checkpoint() -> None:
    ours = _listing(ml.layout("bert", tiny=True))
    heads = {k: v for k, v in ours.items() if k.startswith("cls/")}
    # the real model is modeling.BertModel alone; run_pretraining adds the cls/ heads + slots
    assert len(heads) == 21
    assert {k: v for k, v in ours.items() if k not in heads} == GOLDEN["bert_tiny"]


def test_bert_base_size() -> None:
    tensors = ml.layout("bert")
    assert 1.30e9 < ml.nbytes(tensors) < 1.34e9
    assert len(tensors) == 3 * 206 + 1  # 206 variables (12 layers of 16, heads), 2 slots each


def test_resnet50_matches_slim_checkpoint() -> None:
    assert _listing(ml.layout("resnet50")) == GOLDEN["resnet50"]


def test_gpt2_124m() -> None:
    tensors = ml.layout("gpt2")
    assert sum(int(np.prod(t.shape)) for t in tensors) == 124_439_808
    shapes = {t.name: t.shape for t in tensors}
    assert shapes["model/h11/attn/c_attn/w"] == (1, 768, 2304)
    assert shapes["model/wte"] == (50257, 768)


def test_wide_deep_matches_canned_estimator_checkpoint() -> None:
    tf = pytest.importorskip("tensorflow")
    real = tf.train.load_checkpoint(str(ROOT / "tests/golden/dnn_linear_tf215_model/model.ckpt-5"))
    real_shapes = {k: tuple(v) for k, v in real.get_variable_to_shape_map().items()}
    # the golden model: feature c embedded in 2 dims, numeric x (3) in the deep part,
    # bucketized x in the wide part; ours names them item and dense
    ours = ml.wide_deep(buckets=3, dim=2, dense=3, hidden=(4, 3))
    renamed = {
        t.name.replace("item_embedding", "c_embedding")
        .replace("/item/", "/c/")
        .replace("/dense/weights", "/x_bucketized/weights"): t.shape
        for t in ours
    }
    assert set(renamed) == set(real_shapes)
    differ = {k for k in real_shapes if real_shapes[k] != renamed[k]}
    assert all("x_bucketized" in k for k in differ)  # 12 buckets there, 3 numbers here
    assert ml.layout("wide_deep")[0].shape == (1_000_000, 64)


@pytest.mark.parametrize("name", ["bert", "gpt2", "wide_deep"])
def test_bundle_writer_writes_what_saver_writes(tmp_path: Path, name: str) -> None:
    tf = pytest.importorskip("tensorflow")
    tensors = ml.layout(name, tiny=True)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ours = ml.write(tensors, str(tmp_path / "a" / "model.ckpt"), "bundle")
    saver = ml.write(tensors, str(tmp_path / "b" / "model.ckpt"), "saver")
    for suffix in (".index", ".data-00000-of-00001"):
        assert Path(ours + suffix).read_bytes() == Path(saver + suffix).read_bytes()
    reader = tf.train.load_checkpoint(ours)
    for t in tensors:
        value = reader.get_tensor(t.name)
        assert value.dtype == np.dtype(t.dtype) and value.shape == t.shape
        assert value.tobytes() == ml.expected(t).tobytes()
