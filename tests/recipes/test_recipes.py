"""The library's recipes, end to end against the real TF1 model code.

The TF1 side is generated at test time in a TensorFlow 2.15 process
(tests/support/tf1_recipe_models.py: bert-tensorflow's ``modeling.BertModel`` and tf-slim's
``resnet_v1_50``, graph mode, random values, one optimizer step's state), which saves the
checkpoint and the graph's outputs for fixed inputs. The Keras 3 side (this process, TF
>= 2.16) loads the checkpoint through the recipe and must reproduce those outputs within
``rtol=1e-5, atol=1e-5`` (float32).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.recipe_models import bert_backbone

from tf1compat_init import transforms as tt
from tf1compat_init.errors import CheckpointMismatchError
from tf1compat_init.plan import plan_restore

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tests" / "support" / "tf1_recipe_models.py"
TOL = {"rtol": 1e-5, "atol": 1e-5}


def tf215_python() -> str:
    """The TF 2.15 interpreter (the CI's second leg), overridable for other layouts."""
    path = os.environ.get("TF1COMPAT_TF215_PYTHON") or str(ROOT / ".venvs/tf215/bin/python")
    if not Path(path).exists():
        pytest.fail(f"no TF 2.15 interpreter at {path}; set TF1COMPAT_TF215_PYTHON")
    return path


def generate(kind: str, out: Path) -> Path:
    proc = subprocess.run(
        [tf215_python(), str(GENERATOR), kind, str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def tf1_dir(tmp_path_factory):
    # Both checkpoints from one TF 2.15 process: one TensorFlow import, not two.
    return generate("all", tmp_path_factory.mktemp("tf1"))


@pytest.fixture(scope="module")
def bert_dir(tf1_dir):
    return tf1_dir / "bert"


@pytest.fixture(scope="module")
def resnet_dir(tf1_dir):
    return tf1_dir / "resnet"


def keras_weights(model) -> dict[str, np.ndarray]:
    from tf1compat_init.keras import weight_names

    return {n: np.array(w.numpy()) for n, w in weight_names(model).items()}


# -- pure: the recipes as data --------------------------------------------------------------


def bert_listing(layers: int, hidden: int, heads: int, inter: int, vocab: int, pos: int) -> dict:
    """What bert-tensorflow's BertModel writes for a config, with pretraining heads and Adam."""
    spec = {
        "bert/embeddings/word_embeddings": (vocab, hidden),
        "bert/embeddings/position_embeddings": (pos, hidden),
        "bert/embeddings/token_type_embeddings": (2, hidden),
        "bert/embeddings/LayerNorm/gamma": (hidden,),
        "bert/embeddings/LayerNorm/beta": (hidden,),
        "bert/pooler/dense/kernel": (hidden, hidden),
        "bert/pooler/dense/bias": (hidden,),
        "cls/predictions/output_bias": (vocab,),
        "cls/seq_relationship/output_weights": (2, hidden),
    }
    for i in range(layers):
        p = f"bert/encoder/layer_{i}/"
        for n in ("query", "key", "value"):
            spec[f"{p}attention/self/{n}/kernel"] = (hidden, hidden)
            spec[f"{p}attention/self/{n}/bias"] = (hidden,)
        spec[p + "attention/output/dense/kernel"] = (hidden, hidden)
        spec[p + "attention/output/dense/bias"] = (hidden,)
        spec[p + "intermediate/dense/kernel"] = (hidden, inter)
        spec[p + "intermediate/dense/bias"] = (inter,)
        spec[p + "output/dense/kernel"] = (inter, hidden)
        spec[p + "output/dense/bias"] = (hidden,)
        for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
            spec[f"{p}{ln}/gamma"] = (hidden,)
            spec[f"{p}{ln}/beta"] = (hidden,)
    spec.update({k + "/adam_m": s for k, s in list(spec.items())})
    spec["global_step"] = ()
    return {k: (s, "int64" if k == "global_step" else "float32") for k, s in spec.items()}


def keras_hub_bert_targets(layers: int, hidden: int, heads: int, inter: int, vocab: int, pos):
    """keras_hub BertBackbone's weight names and shapes (as tests below read them off it)."""
    hd = hidden // heads
    t = {
        "token_embedding/embeddings": (vocab, hidden),
        "position_embedding/embeddings": (pos, hidden),
        "segment_embedding/embeddings": (2, hidden),
        "embeddings_layer_norm/gamma": (hidden,),
        "embeddings_layer_norm/beta": (hidden,),
        "pooled_dense/kernel": (hidden, hidden),
        "pooled_dense/bias": (hidden,),
    }
    for i in range(layers):
        p = f"transformer_layer_{i}/"
        for n in ("query", "key", "value"):
            t[f"{p}self_attention_layer/{n}/kernel"] = (hidden, heads, hd)
            t[f"{p}self_attention_layer/{n}/bias"] = (heads, hd)
        t[p + "self_attention_layer/attention_output/kernel"] = (heads, hd, hidden)
        t[p + "self_attention_layer/attention_output/bias"] = (hidden,)
        t[p + "feedforward_intermediate_dense/kernel"] = (hidden, inter)
        t[p + "feedforward_intermediate_dense/bias"] = (inter,)
        t[p + "feedforward_output_dense/kernel"] = (inter, hidden)
        t[p + "feedforward_output_dense/bias"] = (hidden,)
        for ln in ("self_attention_layer_norm", "feedforward_layer_norm"):
            t[f"{p}{ln}/gamma"] = (hidden,)
            t[f"{p}{ln}/beta"] = (hidden,)
    return {k: (s, "float32") for k, s in t.items()}


@pytest.mark.pure
def test_recipes_are_registered():
    # In a fresh process: the library's recipes register themselves on first use.
    # (That this imports no TensorFlow is tests/project/test_architecture.py's to say.)
    code = "from tf1compat_init import transforms as tt; print(sorted(tt.list_recipes()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['bert-to-keras-hub', 'slim-resnet50-to-keras']"
    for name in ("bert-to-keras-hub", "slim-resnet50-to-keras"):
        recipe = tt.get_recipe(name)
        assert recipe.name == name and recipe.description and recipe.requires and recipe.drop


@pytest.mark.pure
def test_bert_recipe_fits_bert_base_at_plan_time(fake_checkpoint):
    # BERT-Base's layout (12 layers, 768 wide, 12 heads): one recipe, any config; every
    # weight of the backbone loads, attention through reshape() to [768, 12, 64].
    dims = dict(layers=12, hidden=768, heads=12, inter=3072, vocab=30522, pos=512)
    listing = bert_listing(**dims)
    # run_classifier.py's head: not the backbone's, so reported unused (not dropped)
    listing.update({"output_weights": ((2, 768), "float32"), "output_bias": ((2,), "float32")})
    targets = keras_hub_bert_targets(**dims)
    plan = plan_restore(fake_checkpoint(listing), targets, tt.get_recipe("bert-to-keras-hub"))
    report = plan.report
    assert set(report.loaded) == set(targets)
    assert not (report.missing or report.untouched or report.mismatched)
    assert report.unused == ["output_bias", "output_weights"]
    q = "transformer_layer_11/self_attention_layer/query/kernel"
    assert report.loaded[q] == "bert/encoder/layer_11/attention/self/query/kernel"
    assert report.transforms[q] == "reshape()"
    assert report.dropped["global_step"].startswith("recipe bert-to-keras-hub drops it")
    assert "cls/predictions/output_bias" in report.dropped
    assert sum(k.endswith("/adam_m") for k in report.dropped) == len(bert_listing(**dims)) // 2
    assert "dropped" in str(report) and "reshape()" in str(report)


@pytest.mark.pure
def test_bert_recipe_names_both_shapes_when_the_model_config_differs(fake_checkpoint):
    dims = dict(layers=2, hidden=32, heads=4, inter=64, vocab=100, pos=16)
    ckpt = fake_checkpoint(bert_listing(**dims))
    targets = keras_hub_bert_targets(**{**dims, "pos": 8})  # max_sequence_length 8, not 16
    with pytest.raises(CheckpointMismatchError) as e:
        plan_restore(ckpt, targets, tt.get_recipe("bert-to-keras-hub"))
    text = str(e.value)
    assert "position_embedding/embeddings" in text
    assert "shape [8, 32] vs checkpoint [16, 32]" in text


@pytest.mark.pure
def test_bert_recipe_into_a_deeper_model_is_an_error_not_a_partial_load(fake_checkpoint):
    # A 3-layer backbone from a 2-layer checkpoint: every shape fits, but layer 2 would
    # keep its random values. A recipe loads the whole model or says what it did not.
    dims = dict(layers=2, hidden=32, heads=4, inter=64, vocab=100, pos=16)
    ckpt = fake_checkpoint(bert_listing(**dims))
    targets = keras_hub_bert_targets(**{**dims, "layers": 3})
    recipe = tt.get_recipe("bert-to-keras-hub")
    with pytest.raises(CheckpointMismatchError) as e:
        plan_restore(ckpt, targets, recipe)
    text = str(e.value)
    assert "recipe 'bert-to-keras-hub' sets no value for 16 weight(s)" in text
    assert "transformer_layer_2/self_attention_layer/query/kernel" in text
    report = plan_restore(ckpt, targets, recipe, on_missing="warn").report
    assert len(report.untouched) == 16 and len(report.loaded) == 39
    # the optional policy allows them too (by default it allows global_step and slots)
    extra = {"global_step": ((), "int64"), "pooled_dense/kernel/Adam": ((32, 32), "float32")}
    shallow = {**keras_hub_bert_targets(**dims), **extra}
    assert plan_restore(ckpt, shallow, recipe).report.untouched == list(extra)
    plan_restore(ckpt, targets, recipe, optional=[r"^transformer_layer_2/"])


@pytest.mark.pure
def test_bert_recipe_into_a_shallower_model_logs_the_leftovers(fake_checkpoint, caplog):
    dims = dict(layers=2, hidden=32, heads=4, inter=64, vocab=100, pos=16)
    ckpt = fake_checkpoint(bert_listing(**{**dims, "layers": 3}))
    with caplog.at_level("WARNING", logger="tf1compat_init"):
        recipe = tt.get_recipe("bert-to-keras-hub")
        report = plan_restore(ckpt, keras_hub_bert_targets(**dims), recipe).report
    assert len(report.unused) == 16 and all("/layer_2/" in k for k in report.unused)
    assert "recipe bert-to-keras-hub: 16 checkpoint key(s) nothing loads" in caplog.text


@pytest.mark.pure
def test_slim_recipe_loads_a_model_without_its_top(fake_checkpoint):
    # keras.applications.ResNet50(include_top=False): the logits are reported unused; a
    # checkpoint saved with num_classes=None (no logits) loads too.
    ckpt = {
        "resnet_v1_50/conv1/weights": ((7, 7, 3, 64), "float32"),
        "resnet_v1_50/conv1/BatchNorm/gamma": ((64,), "float32"),
        "resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/weights": ((1, 1, 512, 2048), "float32"),
        "resnet_v1_50/logits/weights": ((1, 1, 2048, 1000), "float32"),
        "resnet_v1_50/logits/biases": ((1000,), "float32"),
    }
    targets = {
        "conv1_conv/kernel": ((7, 7, 3, 64), "float32"),
        "conv1_conv/bias": ((64,), "float32"),
        "conv1_bn/gamma": ((64,), "float32"),
        "conv5_block3_3_conv/kernel": ((1, 1, 512, 2048), "float32"),
    }
    recipe = tt.get_recipe("slim-resnet50-to-keras")
    report = plan_restore(fake_checkpoint(ckpt), targets, recipe).report
    assert len(report.loaded) == 3 and report.untouched == ["conv1_conv/bias"]
    assert report.unused == ["resnet_v1_50/logits/biases", "resnet_v1_50/logits/weights"]
    headless = {k: v for k, v in ckpt.items() if "logits" not in k}
    report = plan_restore(fake_checkpoint(headless), targets, recipe).report
    assert len(report.loaded) == 3 and not report.unused


@pytest.mark.pure
def test_recipe_on_the_wrong_checkpoint_names_recipe_and_keys(fake_checkpoint):
    ckpt = fake_checkpoint({"resnet_v1_50/conv1/weights": ((7, 7, 3, 64), "float32")})
    with pytest.raises(CheckpointMismatchError) as e:
        plan_restore(ckpt, {"conv1_conv/kernel": None}, tt.get_recipe("bert-to-keras-hub"))
    text = str(e.value)
    assert "'bert-to-keras-hub'" in text
    assert "^bert/embeddings/word_embeddings$" in text
    assert "Nothing was changed" in text


# -- end to end: TF1 graph (TF 2.15 process) vs Keras 3 ----------------------------------------


@pytest.mark.tf221
def test_bert_to_keras_hub_reproduces_the_tf1_graph(bert_dir):
    from tf1compat_init import keras as tk

    config = json.loads((bert_dir / "bert_config.json").read_text())
    model = bert_backbone(config)
    # keras-hub's names and shapes are the ones the plan-time tests above are written against
    dims = dict(layers=2, hidden=32, heads=4, inter=64, vocab=100, pos=16)
    expected = {k: s for k, (s, _) in keras_hub_bert_targets(**dims).items()}
    assert {k: v.shape for k, v in keras_weights(model).items()} == expected
    report = tk.load_checkpoint(model, str(bert_dir), recipe="bert-to-keras-hub")

    assert set(report.loaded) == set(keras_weights(model))  # every weight, nothing else
    assert not (report.missing or report.untouched or report.unused or report.mismatched)
    # Training state is dropped, each key with its reason: bert's AdamWeightDecayOptimizer
    # slots for every weight, and global_step.
    assert set(report.dropped) == {
        *(f"{k}/adam_{s}" for k in report.loaded.values() for s in "mv"),
        "global_step",
    }
    assert all(
        why.startswith("recipe bert-to-keras-hub drops it") for why in report.dropped.values()
    )

    io = np.load(bert_dir / "io.npz")
    out = model(
        {
            "token_ids": io["input_ids"],
            "segment_ids": io["token_type_ids"],
            "padding_mask": io["input_mask"],
        }
    )
    np.testing.assert_allclose(np.asarray(out["sequence_output"]), io["sequence_output"], **TOL)
    np.testing.assert_allclose(np.asarray(out["pooled_output"]), io["pooled_output"], **TOL)


@pytest.mark.tf221
def test_recipe_on_the_wrong_checkpoint_changes_no_weight(bert_dir):
    from tf1compat_init import keras as tk

    model = bert_backbone(json.loads((bert_dir / "bert_config.json").read_text()))
    before = keras_weights(model)
    with pytest.raises(CheckpointMismatchError) as e:
        tk.load_checkpoint(model, str(bert_dir), tt.get_recipe("slim-resnet50-to-keras"))
    assert "'slim-resnet50-to-keras'" in str(e.value)
    assert "^resnet_v1_50/conv1/weights$" in str(e.value)
    after = keras_weights(model)
    assert all(np.array_equal(before[k], after[k]) for k in before)


def bert_factory_module(tmp_path, monkeypatch, bert_dir) -> str:
    """A ``module:function`` for ``--model``: builds the BertBackbone of bert_config.json."""
    (tmp_path / "bert_factory.py").write_text(
        "import json, os\n"
        "def build():\n"
        "    from support.recipe_models import bert_backbone\n"
        "    with open(os.environ['BERT_CONFIG']) as f:\n"
        "        return bert_backbone(json.load(f))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    monkeypatch.setenv("BERT_CONFIG", str(bert_dir / "bert_config.json"))
    return "bert_factory:build"


@pytest.mark.tf221
def test_cli_migrate_with_the_bert_recipe_writes_keras_weights(
    bert_dir, tmp_path, monkeypatch, capsys
):
    # One command: tf1compat-init migrate SRC DST --recipe ... --format keras --model m:f
    from tf1compat_init.cli import main

    factory = bert_factory_module(tmp_path, monkeypatch, bert_dir)
    dst = tmp_path / "out" / "bert.weights.h5"
    argv = ["migrate", str(bert_dir), str(dst), "--recipe", "bert-to-keras-hub"]
    assert main([*argv, "--format", "keras", "--model", factory, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["verified"] and len(result["tensors"]) == 39
    # Training state is left out with a line each: 39 adam_m, 39 adam_v, global_step.
    assert len(result["excluded"]) == 2 * 39 + 1
    assert (
        result["excluded"]["global_step"] == "recipe bert-to-keras-hub drops it ((^|/)global_step$)"
    )
    q = "transformer_layer_1/self_attention_layer/query/kernel"
    # Reshaped on the way: transformed (new -> source), not a plain rename.
    assert result["transformed"][q] == "bert/encoder/layer_1/attention/self/query/kernel"
    assert sum(result["counts"].values()) == len(result["tensors"])
    assert "reshape" in result["transforms"][q]

    model = bert_backbone(json.loads((bert_dir / "bert_config.json").read_text()))
    model.load_weights(str(dst))
    io = np.load(bert_dir / "io.npz")
    out = model(
        {
            "token_ids": io["input_ids"],
            "segment_ids": io["token_type_ids"],
            "padding_mask": io["input_mask"],
        }
    )
    np.testing.assert_allclose(np.asarray(out["sequence_output"]), io["sequence_output"], **TOL)
    np.testing.assert_allclose(np.asarray(out["pooled_output"]), io["pooled_output"], **TOL)


@pytest.mark.tf221
def test_cli_migrate_with_a_recipe_for_another_model_writes_nothing(
    bert_dir, resnet_dir, tmp_path, monkeypatch, capsys
):
    from tf1compat_init.cli import main

    factory = bert_factory_module(tmp_path, monkeypatch, bert_dir)
    dst = tmp_path / "out" / "bert.weights.h5"
    argv = ["migrate", str(resnet_dir), str(dst), "--recipe", "bert-to-keras-hub"]
    assert main([*argv, "--format", "keras", "--model", factory]) != 0
    err = capsys.readouterr().err
    assert "recipe 'bert-to-keras-hub' does not fit this checkpoint" in err
    assert "'^bert/embeddings/word_embeddings$'" in err
    assert not dst.exists() and not list(tmp_path.glob("out/*"))


def slim_pool1_resnet(input_shape):
    """examples/slim_resnet_keras.py: keras.applications.ResNet50 with slim's pool1."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from slim_resnet_keras import slim_resnet_v1_50
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return slim_resnet_v1_50(input_shape=input_shape, classes=1000)


def slim_tensors(resnet_dir: Path) -> dict:
    from tf1compat_init import open_checkpoint

    recipe = tt.get_recipe("slim-resnet50-to-keras")
    variables = open_checkpoint(str(resnet_dir)).variables
    return {k: v for k, v in variables.items() if recipe.dropped_by(k) is None}


@pytest.mark.tf221
def test_slim_resnet_weights_transfer_exactly_into_keras_applications(resnet_dir):
    # Every tensor of slim's resnet_v1_50 has one place in keras.applications.ResNet50,
    # with its shape (the plan checks them); the values arrive unchanged.
    import keras

    from tf1compat_init import keras as tk
    from tf1compat_init import open_checkpoint

    io = np.load(resnet_dir / "io.npz")
    model = keras.applications.ResNet50(
        weights=None, input_shape=io["images"].shape[1:], classes=1000, classifier_activation=None
    )
    report = tk.load_checkpoint(model, str(resnet_dir), tt.get_recipe("slim-resnet50-to-keras"))
    tensors = slim_tensors(resnet_dir)
    assert sorted(report.loaded.values()) == sorted(tensors)  # every model tensor, once
    assert not (report.missing or report.unused or report.mismatched)
    # slim's convolutions have no bias (batch norm follows); Keras' do: they are the only
    # weights the checkpoint does not set, and they keep their initial zeros (exact).
    weights = keras_weights(model)
    assert sorted(report.untouched) == sorted(
        k for k in weights if re.fullmatch(r".*_conv/bias", k)
    )
    assert all(not weights[k].any() for k in report.untouched)
    # Training state: a Momentum slot per trainable tensor, and global_step.
    assert set(report.dropped) == {
        *(k + "/Momentum" for k in tensors if "/moving_" not in k),
        "global_step",
    }
    keys = [report.loaded[t] for t in ("conv4_block6_2_conv/kernel", "conv2_block1_0_bn/beta")]
    values = open_checkpoint(str(resnet_dir)).read([*keys, "resnet_v1_50/logits/weights"])
    np.testing.assert_array_equal(weights["conv4_block6_2_conv/kernel"], values[keys[0]])
    np.testing.assert_array_equal(weights["conv2_block1_0_bn/beta"], values[keys[1]])
    logits_kernel = values["resnet_v1_50/logits/weights"]
    assert logits_kernel.shape == (1, 1, 2048, 1000)
    np.testing.assert_array_equal(weights["predictions/kernel"], logits_kernel[0, 0])

    # ... and the outputs differ: measured, not assumed (pool1's padding; see below).
    logits = np.asarray(model(io["images"]))
    diff = float(np.abs(logits - io["logits"]).max())
    assert not np.allclose(logits, io["logits"], **TOL)
    assert diff > 0.01 * float(np.abs(io["logits"]).max()), diff  # not rounding: >1% of range


@pytest.mark.tf221
def test_keras_applications_resnet50_with_slim_pool1_reproduces_the_tf1_graph(resnet_dir):
    # The one real difference is pool1's padding: with it swapped (same names, same
    # recipe), keras.applications' stride placement computes slim's numbers.
    from tf1compat_init import keras as tk

    io = np.load(resnet_dir / "io.npz")
    model = slim_pool1_resnet(io["images"].shape[1:])
    report = tk.load_checkpoint(model, str(resnet_dir), tt.get_recipe("slim-resnet50-to-keras"))
    assert sorted(report.loaded.values()) == sorted(slim_tensors(resnet_dir))
    assert not (report.missing or report.unused or report.mismatched)
    assert all(t.endswith("_conv/bias") for t in report.untouched)  # zeros, as above
    np.testing.assert_allclose(np.asarray(model(io["images"])), io["logits"], **TOL)
    import keras

    features = keras.Model(model.input, model.get_layer("avg_pool").output)
    np.testing.assert_allclose(np.asarray(features(io["images"])), io["pre_logits"], **TOL)


@pytest.mark.tf221
@pytest.mark.parametrize("fmt", ["keras", "tf2"])
def test_migrate_keeps_the_recipes_optional_weights_allowed(tmp_path, fmt):
    # slim's convolutions have no biases, Keras' do: the slim recipe's optional= lets them keep
    # their zeros in load_checkpoint, and must in migrate too (it loads the renamed keys by name)
    import keras

    from tf1compat_init import keras as tk
    from tf1compat_init.bundle.writer import BundleWriter
    from tf1compat_init.migrate import migrate

    kernel = np.arange(6, dtype=np.float32).reshape(2, 3)
    with BundleWriter(str(tmp_path / "model.ckpt")) as w:
        w.add("net/conv/weights", kernel)
        w.add("global_step", np.asarray(3, dtype=np.int64))
    recipe = tt.Recipe(
        name="test-optional-bias",
        rules={"net/conv/weights": "dense/kernel"},
        drop=(r"^global_step$",),
        optional=(r"dense/bias$",),
    )

    def build():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="dense")])
        model.layers[0].bias.assign(np.zeros(3, np.float32))
        return model

    model = build()
    assert tk.load_checkpoint(model, str(tmp_path / "model.ckpt"), recipe=recipe)
    dst = tmp_path / ("out.weights.h5" if fmt == "keras" else "out/ckpt")
    result = migrate(str(tmp_path / "model.ckpt"), dst, recipe=recipe, format=fmt, model=build)
    assert result.tensors == {"dense/kernel": "net/conv/weights"}
    if fmt == "keras":
        fresh = build()
        fresh.load_weights(str(dst))
        np.testing.assert_array_equal(fresh.layers[0].kernel.numpy(), kernel)
        np.testing.assert_array_equal(fresh.layers[0].bias.numpy(), np.zeros(3, np.float32))
