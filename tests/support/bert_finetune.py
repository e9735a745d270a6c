"""Fine-tuning the BERT way: Google's ``bert-tensorflow`` code under an Estimator.

Shared by tests/estimator/bert/test_bert_finetune.py (in process on TF 2.15) and run as a script (in a
TF 2.21 process with ``TF_USE_LEGACY_KERAS=1``, and to write the golden file)::

    python tests/support/bert_finetune.py LIB[,LIB...] WORKDIR OUT.json   # {lib: outcome}
    python tests/support/bert_finetune.py --golden     # TF 2.15 only: rewrites GOLDEN

The model is bert-tensorflow 1.0.4's own code, unmodified: ``modeling.BertModel``,
``modeling.get_assignment_map_from_checkpoint``, ``optimization.create_optimizer``
(``AdamWeightDecayOptimizer``, warmup then linear decay, gradient clipping) and the input
pipeline ``run_classifier.input_fn_builder`` (repeat, graph-seeded shuffle, batch of
``params["batch_size"]``, which ``TPUEstimator`` set and an ``Estimator`` user passes in
``params``; importing ``run_classifier`` defines its absl flags, harmlessly). The
``model_fn`` is ``run_classifier.model_fn_builder`` as a GPU/CPU user ports it: an
``EstimatorSpec`` instead of a ``TPUEstimatorSpec`` (``eval_metric_ops=metric_fn(...)``
instead of ``eval_metrics=(metric_fn, args)``) and ``output_layer.shape[-1]`` instead of
TF1's ``.shape[-1].value``; dropout as BERT's (0.1 everywhere, on). The two libraries differ
only in the two names a user changes:

- ``real``: ``tf.estimator`` and ``tf.compat.v1.train.init_from_checkpoint`` (TF 2.15);
- ``ours``: ``tf1compat_init.estimator`` and ``tf1compat_init.v1.init_from_checkpoint``;
- ``ours_tf_init``: ``tf1compat_init.estimator`` with TF's own
  ``tf.compat.v1.train.init_from_checkpoint`` (still in TF 2.21): a user who swaps only
  the Estimator.

bert-tensorflow needs one shim on TF 2.x (:func:`import_bert`): ``modeling`` does
``from tensorflow.contrib import layers``, gone since TF 2.0; tf-slim's ``layer_norm`` is
the same code (the same ``LayerNorm/beta`` and ``LayerNorm/gamma`` variables and math).
On TF >= 2.16 the pooler's ``tf.layers.dense`` needs tf_keras (``TF_USE_LEGACY_KERAS=1``
set before TensorFlow is imported); under Keras 3 it raises.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import tensorflow as tf

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "bert_finetune_tf215.json"

VOCAB, SEQ, HIDDEN, LAYERS, HEADS, INTERMEDIATE = 100, 16, 32, 2, 4, 64
NUM_LABELS, N_EXAMPLES, BATCH = 3, 16, 4
LEARNING_RATE, NUM_TRAIN_STEPS, NUM_WARMUP_STEPS = 2e-3, 6, 2
FIRST_CALL_STEPS = 3  # train(steps=3), then train(max_steps=6) resumes from model.ckpt-3
SEED = 20240611
THREADS = 1  # per op and between ops: the same reduction order on every machine


def import_bert() -> tuple:
    """Imports ``bert.modeling``, ``optimization`` and ``run_classifier`` on TF 2.x.

    The shim: while they import, ``tensorflow.contrib`` is a stand-in module whose
    ``layers`` is tf-slim's, the continuation of ``tf.contrib.layers``; its
    ``layer_norm`` is the same code (same ``LayerNorm/beta|gamma`` variables, same
    math). ``modeling`` keeps the reference it took; the stand-in is removed again so
    that nothing else in the process mistakes it for TF1. The README shows the same
    shim (left in place, as a user would).
    """
    import tf_slim

    added = "tensorflow.contrib" not in sys.modules
    if added:
        contrib = types.ModuleType("tensorflow.contrib")
        contrib.layers = tf_slim.layers
        sys.modules["tensorflow.contrib"] = contrib
    try:
        from bert import modeling, optimization, run_classifier
    finally:
        if added:
            del sys.modules["tensorflow.contrib"]
    return modeling, optimization, run_classifier


modeling, optimization, run_classifier = import_bert()
tf1 = tf.compat.v1


def bert_config() -> modeling.BertConfig:
    return modeling.BertConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        max_position_embeddings=SEQ,
        type_vocab_size=2,
    )


def libraries(name: str) -> tuple:
    """``(estimator module, init_from_checkpoint)`` for ``real``, ``ours``, ``ours_tf_init``."""
    if name == "real":
        return tf.estimator, tf1.train.init_from_checkpoint
    from tf1compat_init import estimator as est
    from tf1compat_init import v1 as tv1

    if name == "ours_tf_init":
        return est, tf1.train.init_from_checkpoint
    if name != "ours":
        raise ValueError(f"unknown library {name!r}: real, ours or ours_tf_init")
    return est, tv1.init_from_checkpoint


# -- data --------------------------------------------------------------------------------


def examples() -> dict:
    """Fixed classification examples; the label depends on the second token."""
    rng = np.random.RandomState(0)
    ids = rng.randint(1, VOCAB, size=(N_EXAMPLES, SEQ)).astype("int32")
    lengths = rng.randint(SEQ // 2, SEQ + 1, size=N_EXAMPLES)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype("int32")
    ids *= mask
    segments = ((np.arange(SEQ)[None, :] >= lengths[:, None] // 2) * mask).astype("int32")
    labels = (ids[:, 1] * NUM_LABELS // VOCAB).astype("int32")
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments, "label_ids": labels}


def input_fn_builder(is_training: bool):
    """``run_classifier.input_fn_builder`` itself: shuffles (graph-seeded) when training."""
    data = examples()
    features = [
        run_classifier.InputFeatures(
            input_ids=data["input_ids"][i].tolist(),
            input_mask=data["input_mask"][i].tolist(),
            segment_ids=data["segment_ids"][i].tolist(),
            label_id=int(data["label_ids"][i]),
        )
        for i in range(N_EXAMPLES)
    ]
    return run_classifier.input_fn_builder(features, SEQ, is_training, drop_remainder=True)


# -- the pretrained checkpoint -----------------------------------------------------------


def make_pretrained(directory: str) -> dict:
    """A BERT pretraining checkpoint: ``BertModel``'s variables plus the pretraining heads.

    The variables come from ``modeling.BertModel`` itself; their values from a numpy
    generator, so the bytes are the same under every TensorFlow. Like Google's
    checkpoints it also holds ``cls/...`` heads and ``global_step`` (not in the
    classifier: left alone by ``get_assignment_map_from_checkpoint``).

    Returns:
        ``{name: value}`` of everything saved.
    """
    rng = np.random.RandomState(1)
    values = {}
    with tf.Graph().as_default():
        ids = tf1.placeholder(tf.int32, [None, SEQ])
        modeling.BertModel(config=bert_config(), is_training=False, input_ids=ids)
        tf1.get_variable("cls/predictions/output_bias", [VOCAB])
        tf1.get_variable("cls/seq_relationship/output_weights", [2, HIDDEN])
        step = tf1.train.get_or_create_global_step()
        assigns = []
        for v in tf1.global_variables():
            name = v.op.name
            if v is step:
                value = np.int64(1000)
            elif name.endswith("LayerNorm/gamma"):
                value = 1.0 + 0.1 * rng.randn(*v.shape.as_list())
            else:
                value = 0.05 * rng.randn(*v.shape.as_list())
            values[name] = np.asarray(value, v.dtype.as_numpy_dtype)
            assigns.append(v.assign(values[name]))
        with tf1.Session() as s:
            s.run(assigns)
            # As Google's downloads: a bare prefix, no `checkpoint` state file.
            path = os.path.join(directory, "bert_model.ckpt")
            tf1.train.Saver().save(s, path, write_state=False)
    return values


# -- the model_fn, as run_classifier.model_fn_builder ------------------------------------


def create_model(config, is_training, input_ids, input_mask, segment_ids, labels, num_labels):
    """``run_classifier.create_model`` (TF2 shapes: ``shape[-1]`` is an int)."""
    model = modeling.BertModel(
        config=config,
        is_training=is_training,
        input_ids=input_ids,
        input_mask=input_mask,
        token_type_ids=segment_ids,
        use_one_hot_embeddings=False,
    )
    output_layer = model.get_pooled_output()
    hidden_size = output_layer.shape[-1]
    output_weights = tf1.get_variable(
        "output_weights",
        [num_labels, hidden_size],
        initializer=tf1.truncated_normal_initializer(stddev=0.02),
    )
    output_bias = tf1.get_variable("output_bias", [num_labels], initializer=tf1.zeros_initializer())
    with tf1.variable_scope("loss"):
        if is_training:
            output_layer = tf1.nn.dropout(output_layer, keep_prob=0.9)
        logits = tf.matmul(output_layer, output_weights, transpose_b=True)
        logits = tf.nn.bias_add(logits, output_bias)
        probabilities = tf.nn.softmax(logits, axis=-1)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        one_hot_labels = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
        per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
        loss = tf.reduce_mean(per_example_loss)
        return loss, per_example_loss, logits, probabilities


def model_fn_builder(lib: str, init_checkpoint: str, log: dict):
    """``run_classifier.model_fn_builder`` for ``lib``; ``log`` gets what the map held."""
    est, init_from_checkpoint = libraries(lib)

    def model_fn(features, labels, mode, params):
        del labels, params
        input_ids = features["input_ids"]
        input_mask = features["input_mask"]
        segment_ids = features["segment_ids"]
        label_ids = features["label_ids"]
        is_real_example = tf.ones(tf.shape(label_ids), dtype=tf.float32)
        is_training = mode == est.ModeKeys.TRAIN
        total_loss, per_example_loss, logits, probabilities = create_model(
            bert_config(), is_training, input_ids, input_mask, segment_ids, label_ids, NUM_LABELS
        )
        tvars = tf1.trainable_variables()
        if init_checkpoint:
            assignment_map, initialized = modeling.get_assignment_map_from_checkpoint(
                tvars, init_checkpoint
            )
            init_from_checkpoint(init_checkpoint, assignment_map)
            log.setdefault(mode, []).append(sorted(assignment_map))
        if mode == est.ModeKeys.TRAIN:
            train_op = optimization.create_optimizer(
                total_loss, LEARNING_RATE, NUM_TRAIN_STEPS, NUM_WARMUP_STEPS, False
            )
            return est.EstimatorSpec(mode=mode, loss=total_loss, train_op=train_op)
        if mode == est.ModeKeys.EVAL:

            def metric_fn(per_example_loss, label_ids, logits, is_real_example):
                predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
                accuracy = tf1.metrics.accuracy(
                    labels=label_ids, predictions=predictions, weights=is_real_example
                )
                loss = tf1.metrics.mean(values=per_example_loss, weights=is_real_example)
                return {"eval_accuracy": accuracy, "eval_loss": loss}

            metrics = metric_fn(per_example_loss, label_ids, logits, is_real_example)
            return est.EstimatorSpec(mode=mode, loss=total_loss, eval_metric_ops=metrics)
        return est.EstimatorSpec(mode=mode, predictions={"probabilities": probabilities})

    return model_fn


# -- one run -----------------------------------------------------------------------------


class LossRecorder(tf1.train.SessionRunHook):
    """Records ``[global_step_before_the_step, loss]`` for every training step."""

    def __init__(self) -> None:
        self.losses: list = []

    def begin(self) -> None:
        self._loss = tf1.get_collection(tf1.GraphKeys.LOSSES)[-1]
        self._step = tf1.train.get_global_step()

    def after_create_session(self, session, coord) -> None:
        self._next = int(session.run(self._step))

    def before_run(self, run_context):
        return tf1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values) -> None:
        self.losses.append([self._next, float(run_values.results)])
        self._next += 1


def run(lib: str, workdir: str) -> dict:
    """Pretrain checkpoint, fine-tune (two train calls), evaluate, predict; the outcome."""
    pretrained_dir = os.path.join(workdir, "pretrained")
    model_dir = os.path.join(workdir, f"finetune_{lib}")
    os.makedirs(pretrained_dir, exist_ok=True)
    pretrained = make_pretrained(pretrained_dir)
    init_checkpoint = os.path.join(pretrained_dir, "bert_model.ckpt")
    est, _ = libraries(lib)
    log: dict = {}
    session_config = tf1.ConfigProto(
        intra_op_parallelism_threads=THREADS, inter_op_parallelism_threads=THREADS
    )
    config = est.RunConfig(
        tf_random_seed=SEED,
        save_checkpoints_steps=FIRST_CALL_STEPS,
        session_config=session_config,
    )
    estimator = est.Estimator(
        model_fn_builder(lib, init_checkpoint, log), model_dir, config, params={"batch_size": BATCH}
    )
    recorders = [LossRecorder(), LossRecorder()]
    estimator.train(input_fn_builder(True), steps=FIRST_CALL_STEPS, hooks=[recorders[0]])
    estimator.train(input_fn_builder(True), max_steps=NUM_TRAIN_STEPS, hooks=[recorders[1]])
    metrics = estimator.evaluate(input_fn_builder(False))
    predictions = list(estimator.predict(input_fn_builder(False)))

    ckpt0 = os.path.join(model_dir, "model.ckpt-0")
    names0 = [n for n, _ in tf.train.list_variables(ckpt0)]
    warm = sorted(
        n
        for n in names0
        if n in pretrained
        and np.array_equal(tf.train.load_variable(ckpt0, n), pretrained[n])
        and n != "global_step"
    )
    return {
        "tf_version": tf.__version__,
        "has_tf_estimator": hasattr(tf, "estimator"),
        "legacy_keras": os.environ.get("TF_USE_LEGACY_KERAS") == "1",
        "losses": [r.losses for r in recorders],
        "metrics": {k: float(v) for k, v in metrics.items()},
        "probabilities": [p["probabilities"].tolist() for p in predictions],
        "assignment_maps": {k: v for k, v in log.items()},
        "warm_started_in_ckpt0": warm,
        "variables": sorted(estimator.get_variable_names()),
        "pretrained_keys": sorted(pretrained),
    }


def main(argv: list[str]) -> int:
    if argv == ["--golden"]:
        import tempfile

        if not hasattr(tf, "estimator"):
            raise SystemExit("the golden file is made by the real tf.estimator (TF 2.15)")
        with tempfile.TemporaryDirectory() as d:
            out = run("real", d)
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    libs, workdir, out_path = argv
    out = {lib: run(lib, os.path.join(workdir, lib)) for lib in libs.split(",")}
    Path(out_path).write_text(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    raise SystemExit(main(sys.argv[1:]))
