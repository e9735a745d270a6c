"""Builds real TF1 checkpoints for the recipe tests; run under TensorFlow 2.15 (graph mode).

    python tests/support/tf1_recipe_models.py bert|resnet|all OUT_DIR

Each writes ``OUT_DIR/model.ckpt-1`` with the model code of the package people trained with
(bert-tensorflow's ``modeling.BertModel``, tf-slim's ``nets.resnet_v1.resnet_v1_50``), every
variable moved off its initial value (layer-norm gammas, biases and batch-norm statistics would
otherwise be ones and zeros, and a swapped mapping would pass), one optimizer step's state
(BERT: ``adam_m``/``adam_v`` from bert's own ``AdamWeightDecayOptimizer``; ResNet:
``Momentum`` slots) and ``global_step``; and ``OUT_DIR/io.npz`` with fixed inputs and the TF1
graph's outputs for them, computed from the saved values.

The shims (the packages' code runs unmodified): bert-tensorflow 1.0.4 imports ``tensorflow.compat.v1`` (so ``tensorflow`` needs no
alias) but also ``from tensorflow.contrib import layers``, which TF 2.x lacks. A stand-in
``tensorflow.contrib`` module is registered whose ``layers.layer_norm`` is tf-slim's
``layer_norm``, the code contrib's was moved to: same variables (``LayerNorm/beta``,
``LayerNorm/gamma``), same epsilon (1e-12). tf-slim's ``batch_norm`` on TF 2.15 needs
``tf_keras`` (see :func:`install_batch_norm_shim`).
"""

from __future__ import annotations

import json
import os
import sys
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

BERT_CONFIG = {
    "vocab_size": 100,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}
BERT_SEQ = 16
RESNET_IMAGE = 64
RESNET_CLASSES = 1000


def install_contrib_shim() -> None:
    """Registers ``tensorflow.contrib.layers.layer_norm`` (tf-slim's) for bert-tensorflow."""
    import tf_slim

    layers = types.ModuleType("tensorflow.contrib.layers")
    layers.layer_norm = tf_slim.layers.layer_norm
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = layers
    sys.modules["tensorflow.contrib"] = contrib
    sys.modules["tensorflow.contrib.layers"] = layers


def install_batch_norm_shim() -> None:
    """Lets tf-slim's ``batch_norm`` run on TF 2.15 without the tf_keras package.

    TF 2.15's ``tensorflow.python.layers.normalization`` (which tf-slim's ``batch_norm``
    uses) lazily imports ``tf_keras.legacy_tf_layers.normalization``; with Keras 2.15 the
    same module ships as ``keras.src.legacy_tf_layers.normalization``. It is registered
    under the name TF looks for, unless a real tf_keras is installed.
    """
    try:
        import tf_keras  # noqa: F401

        return
    except ImportError:
        pass
    import importlib

    norm = importlib.import_module("keras.src.legacy_tf_layers.normalization")
    for name in ("tf_keras", "tf_keras.legacy_tf_layers"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["tf_keras.legacy_tf_layers"].normalization = norm
    sys.modules["tf_keras.legacy_tf_layers.normalization"] = norm


def _perturb(sess, tf, seed: int) -> None:
    """Moves every float variable off its initial value, deterministically.

    Kernels and embeddings are already random; they get a small offset. Biases, layer-norm
    and batch-norm parameters get values of their own, kept in ranges that leave a deep
    network's activations finite in inference mode.
    """
    rng = np.random.default_rng(seed)
    variables = [v for v in tf.global_variables() if v.dtype.base_dtype.is_floating]
    feeds, assigns = {}, []
    for v, value in zip(variables, sess.run(variables), strict=True):
        name = v.op.name
        if name.endswith(("adam_m", "adam_v", "Momentum")):  # adam_v must stay >= 0
            new = rng.uniform(0.0, 1e-3, value.shape)
        elif name.endswith("moving_variance"):
            new = rng.uniform(0.5, 1.5, value.shape)
        elif name.endswith("BatchNorm/gamma"):
            new = rng.uniform(0.6, 0.8, value.shape)
        elif value.ndim > 1 and "BatchNorm" not in name:
            new = value * rng.uniform(0.9, 1.1, value.shape)
        else:
            new = value + rng.normal(0.0, 0.05, value.shape)
        ph = tf.placeholder(v.dtype.base_dtype, value.shape)
        assigns.append(v.assign(ph))
        feeds[ph] = new.astype(value.dtype)
    sess.run(assigns, feeds)  # one run: a graph this size costs ~0.1 s per run


def build_bert(out_dir: str) -> None:
    install_contrib_shim()
    import tensorflow.compat.v1 as tf
    from bert import modeling, optimization

    rng = np.random.default_rng(0)
    ids = rng.integers(0, BERT_CONFIG["vocab_size"], (2, BERT_SEQ)).astype(np.int32)
    mask = np.ones((2, BERT_SEQ), np.int32)
    mask[1, 11:] = 0  # the second row is padded
    segments = np.zeros((2, BERT_SEQ), np.int32)
    segments[:, 7:] = 1
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        input_ids = tf.placeholder(tf.int32, [None, BERT_SEQ])
        input_mask = tf.placeholder(tf.int32, [None, BERT_SEQ])
        token_type_ids = tf.placeholder(tf.int32, [None, BERT_SEQ])
        model = modeling.BertModel(
            config=modeling.BertConfig.from_dict(BERT_CONFIG),
            is_training=False,
            input_ids=input_ids,
            input_mask=input_mask,
            token_type_ids=token_type_ids,
        )
        seq, pooled = model.get_sequence_output(), model.get_pooled_output()
        global_step = tf.train.get_or_create_global_step()
        loss = tf.reduce_mean(tf.square(pooled))
        tvars = tf.trainable_variables()
        grads = tf.gradients(loss, tvars)
        opt = optimization.AdamWeightDecayOptimizer(learning_rate=1e-3)
        step = tf.group(
            opt.apply_gradients(zip(grads, tvars, strict=True)), global_step.assign_add(1)
        )
        feed = {input_ids: ids, input_mask: mask, token_type_ids: segments}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _perturb(sess, tf, seed=2)
            sess.run(step, feed)
            seq_out, pooled_out = sess.run([seq, pooled], feed)
            tf.train.Saver().save(sess, os.path.join(out_dir, "model.ckpt"), global_step=1)
    np.savez(
        os.path.join(out_dir, "io.npz"),
        input_ids=ids,
        input_mask=mask,
        token_type_ids=segments,
        sequence_output=seq_out,
        pooled_output=pooled_out,
    )
    with open(os.path.join(out_dir, "bert_config.json"), "w") as f:
        json.dump(BERT_CONFIG, f)


def build_resnet(out_dir: str) -> None:
    install_batch_norm_shim()
    import tensorflow.compat.v1 as tf
    import tf_slim as slim
    from tf_slim.nets import resnet_v1

    # Two images unlike each other (a smooth colour gradient, and noise): iid noise images
    # alone pool to nearly the same features, which would make a weak test.
    rng = np.random.default_rng(0)
    ramp = np.linspace(-1.0, 1.0, RESNET_IMAGE)
    smooth = np.stack(
        [np.add.outer(ramp, ramp) / 2, np.sin(3 * np.add.outer(ramp, -ramp)), np.outer(ramp, ramp)],
        axis=-1,
    )
    noise = rng.uniform(-1.0, 1.0, (RESNET_IMAGE, RESNET_IMAGE, 3))
    images = np.stack([2 * smooth, noise]).astype(np.float32)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, RESNET_IMAGE, RESNET_IMAGE, 3])
        with slim.arg_scope(resnet_v1.resnet_arg_scope()):
            net, _ = resnet_v1.resnet_v1_50(x, num_classes=RESNET_CLASSES, is_training=False)
        logits = tf.squeeze(net, [1, 2])
        pre_logits = tf.squeeze(
            tf.get_default_graph().get_tensor_by_name("resnet_v1_50/pool5:0"), [1, 2]
        )
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.MomentumOptimizer(1e-3, 0.9)
        # Builds the Momentum slots; no step is run (their values are set by _perturb).
        opt.minimize(tf.reduce_mean(tf.square(logits)), global_step=global_step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _perturb(sess, tf, seed=2)
            logits_out, pre_out = sess.run([logits, pre_logits], {x: images})
            tf.train.Saver().save(sess, os.path.join(out_dir, "model.ckpt"), global_step=1)
    np.savez(os.path.join(out_dir, "io.npz"), images=images, logits=logits_out, pre_logits=pre_out)


if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    builders = {"bert": build_bert, "resnet": build_resnet}
    for name in builders if kind == "all" else [kind]:  # "all": OUT/bert, OUT/resnet
        where = os.path.join(out, name) if kind == "all" else out
        os.makedirs(where, exist_ok=True)
        builders[name](where)
