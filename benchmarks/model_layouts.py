"""Checkpoints with the layouts of real TF1 models: their names, shapes and dtypes, random values.

    python benchmarks/model_layouts.py OUT_DIR [--layouts bert,resnet50,gpt2,wide_deep]
        [--bert-layers N] [--writer bundle|saver]

writes ``OUT_DIR/<layout>/model.ckpt`` (a name-based, format V2 checkpoint, as a TF1
``tf.compat.v1.train.Saver`` writes one) for each layout:

- ``bert``: Google BERT-base as ``run_pretraining.py`` (google-research/bert) saves it during
  pre-training: ``bert/embeddings/...``, ``bert/encoder/layer_N/...``, ``bert/pooler/...``,
  the pre-training heads under ``cls/``, an ``adam_m`` and ``adam_v`` slot per trainable
  variable (bert's ``AdamWeightDecayOptimizer`` names them ``<variable>/adam_m``) and the
  int64 ``global_step``: 1.32 GB at full size;
- ``resnet50``: tf-slim's ``nets.resnet_v1.resnet_v1_50`` (1,000 classes) trained with
  ``tf.train.MomentumOptimizer``: ``resnet_v1_50/.../weights``, ``.../BatchNorm/{beta,gamma,
  moving_mean,moving_variance}``, a ``Momentum`` slot per trainable variable, ``global_step``;
- ``gpt2``: OpenAI's released GPT-2 124M ``model.ckpt``: ``model/wte``, ``model/wpe``,
  ``model/h<i>/attn/c_attn/w`` (the fused query/key/value ``[1, 768, 2304]``), ``c_proj``,
  ``mlp/c_fc``, ``mlp/c_proj``, ``ln_1``/``ln_2``/``ln_f`` (no optimizer state);
- ``wide_deep``: a ``tf.estimator.DNNLinearCombinedClassifier`` (TF 2.15's estimator) over
  13 numeric features and a 1,000,000-bucket categorical feature, embedded in 64 dimensions
  for the deep part (hidden units 1024, 512, 256) and a weight per bucket for the wide part,
  with its optimizers' state (``training/Adagrad/<var>/accumulator``,
  ``training/Ftrl/<var>/{accumulator,linear}``, their hyperparameters, ``global_step``): the
  names of the canned estimator's checkpoints (``tests/golden/dnn_linear_tf215_model``).

BERT and ResNet-50 names and shapes are checked against checkpoints written by the real
model code (``tests/project/test_model_layouts.py``); GPT-2's against its published parameter count.

Values are random (float32 normal * 0.02, slots of Adam's ``v`` and Adagrad's accumulators
positive), each tensor from its own seed derived from its name, so :func:`expected` rebuilds
any tensor without the file: restores are checked against it.

Writers: ``bundle`` (default) is ``tf1compat_init.bundle.BundleWriter``, which writes one
tensor at a time (memory: one tensor) and produces the files ``Saver`` produces for the same
tensors (the test compares them byte for byte); ``saver`` builds the variables in a TF1 graph
and calls ``tf.compat.v1.train.Saver().save`` (memory: the whole checkpoint, twice).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


class Tensor(NamedTuple):
    name: str
    shape: tuple[int, ...]
    dtype: str  # TensorFlow's name: "float32", "int64"


LAYOUTS = ("bert", "resnet50", "gpt2", "wide_deep")
PREFIX = "model.ckpt"

BERT_BASE = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
}
GPT2_124M = {"n_vocab": 50257, "n_ctx": 1024, "n_embd": 768, "n_layer": 12}


def _f32(name: str, *shape: int) -> Tensor:
    return Tensor(name, tuple(shape), "float32")


def _with_slots(trainable: list[Tensor], slots: tuple[str, ...]) -> list[Tensor]:
    return [
        *trainable,
        *(Tensor(f"{t.name}/{s}", t.shape, t.dtype) for t in trainable for s in slots),
    ]


def bert(cfg: dict | None = None, *, adam: bool = True, heads: bool = True) -> list[Tensor]:
    """BERT's pre-training checkpoint (``run_pretraining.py``): model, ``cls/`` heads, Adam."""
    c = {**BERT_BASE, **(cfg or {})}
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    t = [
        _f32("bert/embeddings/word_embeddings", v, h),
        _f32("bert/embeddings/token_type_embeddings", c["type_vocab_size"], h),
        _f32("bert/embeddings/position_embeddings", c["max_position_embeddings"], h),
        _f32("bert/embeddings/LayerNorm/beta", h),
        _f32("bert/embeddings/LayerNorm/gamma", h),
    ]
    for n in range(c["num_hidden_layers"]):
        p = f"bert/encoder/layer_{n}/"
        for part in ("query", "key", "value"):
            t += [_f32(f"{p}attention/self/{part}/kernel", h, h)]
            t += [_f32(f"{p}attention/self/{part}/bias", h)]
        t += [_f32(f"{p}attention/output/dense/kernel", h, h)]
        t += [_f32(f"{p}attention/output/dense/bias", h)]
        t += [_f32(f"{p}attention/output/LayerNorm/beta", h)]
        t += [_f32(f"{p}attention/output/LayerNorm/gamma", h)]
        t += [_f32(f"{p}intermediate/dense/kernel", h, i), _f32(f"{p}intermediate/dense/bias", i)]
        t += [_f32(f"{p}output/dense/kernel", i, h), _f32(f"{p}output/dense/bias", h)]
        t += [_f32(f"{p}output/LayerNorm/beta", h), _f32(f"{p}output/LayerNorm/gamma", h)]
    t += [_f32("bert/pooler/dense/kernel", h, h), _f32("bert/pooler/dense/bias", h)]
    if heads:
        t += [
            _f32("cls/predictions/transform/dense/kernel", h, h),
            _f32("cls/predictions/transform/dense/bias", h),
            _f32("cls/predictions/transform/LayerNorm/beta", h),
            _f32("cls/predictions/transform/LayerNorm/gamma", h),
            _f32("cls/predictions/output_bias", v),
            _f32("cls/seq_relationship/output_weights", 2, h),
            _f32("cls/seq_relationship/output_bias", 2),
        ]
    if adam:
        t = _with_slots(t, ("adam_m", "adam_v"))
    return [*t, Tensor("global_step", (), "int64")]


RESNET50_BLOCKS = (("block1", 3, 64), ("block2", 4, 128), ("block3", 6, 256), ("block4", 3, 512))


def resnet50(classes: int = 1000, *, momentum: bool = True) -> list[Tensor]:
    """tf-slim ``resnet_v1_50`` with ``MomentumOptimizer`` slots."""
    trainable: list[Tensor] = []
    stats: list[Tensor] = []

    def conv(scope: str, kh: int, kw: int, cin: int, cout: int) -> None:
        trainable.append(_f32(f"{scope}/weights", kh, kw, cin, cout))
        trainable.append(_f32(f"{scope}/BatchNorm/beta", cout))
        trainable.append(_f32(f"{scope}/BatchNorm/gamma", cout))
        stats.append(_f32(f"{scope}/BatchNorm/moving_mean", cout))
        stats.append(_f32(f"{scope}/BatchNorm/moving_variance", cout))

    conv("resnet_v1_50/conv1", 7, 7, 3, 64)
    depth_in = 64
    for block, units, neck in RESNET50_BLOCKS:
        depth = neck * 4
        for u in range(1, units + 1):
            p = f"resnet_v1_50/{block}/unit_{u}/bottleneck_v1"
            if depth_in != depth:
                conv(f"{p}/shortcut", 1, 1, depth_in, depth)
            conv(f"{p}/conv1", 1, 1, depth_in, neck)
            conv(f"{p}/conv2", 3, 3, neck, neck)
            conv(f"{p}/conv3", 1, 1, neck, depth)
            depth_in = depth
    trainable.append(_f32("resnet_v1_50/logits/weights", 1, 1, depth_in, classes))
    trainable.append(_f32("resnet_v1_50/logits/biases", classes))
    t = _with_slots(trainable, ("Momentum",)) if momentum else trainable
    return [*t, *stats, Tensor("global_step", (), "int64")]


def gpt2(cfg: dict | None = None) -> list[Tensor]:
    """OpenAI's GPT-2 TF checkpoint (``model.ckpt`` of ``models/124M``)."""
    c = {**GPT2_124M, **(cfg or {})}
    e = c["n_embd"]
    t = [_f32("model/wte", c["n_vocab"], e), _f32("model/wpe", c["n_ctx"], e)]
    for n in range(c["n_layer"]):
        p = f"model/h{n}/"
        t += [_f32(p + "ln_1/g", e), _f32(p + "ln_1/b", e)]
        t += [_f32(p + "attn/c_attn/w", 1, e, 3 * e), _f32(p + "attn/c_attn/b", 3 * e)]
        t += [_f32(p + "attn/c_proj/w", 1, e, e), _f32(p + "attn/c_proj/b", e)]
        t += [_f32(p + "ln_2/g", e), _f32(p + "ln_2/b", e)]
        t += [_f32(p + "mlp/c_fc/w", 1, e, 4 * e), _f32(p + "mlp/c_fc/b", 4 * e)]
        t += [_f32(p + "mlp/c_proj/w", 1, 4 * e, e), _f32(p + "mlp/c_proj/b", e)]
    return [*t, _f32("model/ln_f/g", e), _f32("model/ln_f/b", e)]


def wide_deep(
    buckets: int = 1_000_000, dim: int = 64, dense: int = 13, hidden: tuple = (1024, 512, 256)
) -> list[Tensor]:
    """``tf.estimator.DNNLinearCombinedClassifier`` (binary) with its Adagrad and Ftrl state."""
    deep = [_f32("dnn/input_from_feature_columns/input_layer/item_embedding/embedding_weights",
                 buckets, dim)]  # fmt: skip
    width = dim + dense
    for n, units in enumerate(hidden):
        deep += [_f32(f"dnn/hiddenlayer_{n}/kernel", width, units)]
        deep += [_f32(f"dnn/hiddenlayer_{n}/bias", units)]
        width = units
    deep += [_f32("dnn/logits/kernel", width, 1), _f32("dnn/logits/bias", 1)]
    wide = [
        _f32("linear/linear_model/bias_weights", 1),
        _f32("linear/linear_model/dense/weights", dense, 1),
        _f32("linear/linear_model/item/weights", buckets, 1),
    ]
    scalars = [
        _f32("training/Adagrad/decay"),
        _f32("training/Adagrad/learning_rate"),
        *(_f32(f"training/Ftrl/{k}") for k in ("beta", "decay", "l1_regularization_strength")),
        *(_f32(f"training/Ftrl/{k}") for k in ("l2_regularization_strength", "learning_rate")),
        _f32("training/Ftrl/learning_rate_power"),
        Tensor("training/Ftrl/iter", (), "int64"),
    ]
    slots = [Tensor(f"training/Adagrad/{v.name}/accumulator", v.shape, v.dtype) for v in deep]
    for v in wide:
        slots += [Tensor(f"training/Ftrl/{v.name}/{s}", v.shape, v.dtype) for s in ("accumulator", "linear")]  # fmt: skip
    return [*deep, *wide, *scalars, *slots, Tensor("global_step", (), "int64")]


def layout(name: str, *, bert_layers: int | None = None, tiny: bool = False) -> list[Tensor]:
    """The tensors of one layout; ``tiny`` shrinks every dimension (tests)."""
    if name == "bert":
        cfg = dict(BERT_BASE)
        if tiny:
            cfg.update(vocab_size=100, hidden_size=32, num_hidden_layers=2, intermediate_size=64)
            cfg.update(max_position_embeddings=16, num_attention_heads=4)
        if bert_layers is not None:
            cfg["num_hidden_layers"] = bert_layers
        return bert(cfg)
    if name == "resnet50":
        return resnet50()  # names only in tests: its shapes are the real ones
    if name == "gpt2":
        return gpt2({"n_vocab": 50, "n_ctx": 16, "n_embd": 8, "n_layer": 2} if tiny else None)
    if name == "wide_deep":
        return wide_deep(100, 4, 3, (8, 4)) if tiny else wide_deep()
    raise ValueError(f"unknown layout {name!r}; one of {', '.join(LAYOUTS)}")


def nbytes(tensors: list[Tensor]) -> int:
    return sum(int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize for t in tensors)


def expected(t: Tensor) -> np.ndarray:
    """The value the generator writes for ``t`` (deterministic in its name)."""
    rng = np.random.default_rng(zlib.crc32(t.name.encode()))
    if t.dtype == "int64":
        return np.asarray(rng.integers(1, 1_000_000), dtype=np.int64).reshape(t.shape)
    value = rng.standard_normal(t.shape, dtype=np.float32)
    value *= np.float32(0.02)
    if t.name.endswith(("adam_v", "accumulator", "moving_variance")):
        np.abs(value, out=value)
    return value


def _values(tensors: list[Tensor]) -> Iterator[tuple[Tensor, np.ndarray]]:
    for t in sorted(tensors, key=lambda t: t.name):  # Saver writes in key order
        yield t, expected(t)


def write(tensors: list[Tensor], prefix: str, writer: str = "bundle") -> str:
    """Writes ``tensors`` to the checkpoint ``prefix`` (its directory must exist)."""
    if writer == "bundle":
        sys.path.insert(0, str(ROOT / "src"))
        from tf1compat_init.bundle.writer import BundleWriter

        with BundleWriter(prefix) as w:
            for t, value in _values(tensors):
                w.add(t.name, value, t.dtype)
        return prefix
    if writer != "saver":
        raise ValueError(f"writer must be 'bundle' or 'saver', not {writer!r}")
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        variables = {}
        for t, value in _values(tensors):
            variables[t.name] = tf.compat.v1.Variable(value, name=t.name, dtype=t.dtype)
        saver = tf.compat.v1.train.Saver(var_list=variables)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, prefix, write_meta_graph=False, write_state=False)
    return prefix


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--bert-layers", type=int, default=None, help="BERT depth (default 12)")
    ap.add_argument("--tiny", action="store_true", help="every dimension tiny (tests)")
    ap.add_argument("--writer", choices=("bundle", "saver"), default="bundle")
    args = ap.parse_args(argv)
    for name in args.layouts.split(","):
        tensors = layout(name, bert_layers=args.bert_layers, tiny=args.tiny)
        directory = Path(args.out_dir) / name
        directory.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        write(tensors, os.fspath(directory / PREFIX), args.writer)
        print(
            f"{name}: {len(tensors)} tensors, {nbytes(tensors) / 2**20:.1f} MiB in "
            f"{time.perf_counter() - start:.1f} s -> {directory / PREFIX}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
