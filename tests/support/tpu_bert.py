"""BERT's own ``run_classifier.model_fn_builder`` under ``TPUEstimator(use_tpu=False)``.

Run as a script, one library per process (BERT 1.0.4 needs ``disable_v2_tensorshape``
for its ``shape[-1].value``, a process-wide switch; on TF >= 2.16 ``TF_USE_LEGACY_KERAS=1``
for its ``tf.layers.dense``)::

    python tests/support/tpu_bert.py LIB OUT.json   # LIB: real (TF 2.15) or ours
    python tests/support/tpu_bert.py --golden       # TF 2.15: rewrites GOLDEN from the real one

``run_classifier`` looks the estimator up as ``tf.compat.v1.estimator.tpu`` when its
``model_fn`` runs; for ``ours`` that name is pointed at ``tf1compat_init.estimator.v1``
in this process (what ``tf1compat_init.estimator.install()`` does for a whole program).
The run is BERT's CPU/GPU fine-tuning: ``RunConfig(cluster=None, master=None,
tpu_config=TPUConfig(iterations_per_loop, num_shards, PER_HOST_V2))``, a warm start by
``init_from_checkpoint`` inside the ``model_fn`` (``use_tpu=False``), AdamWeightDecay,
``eval_metrics=(metric_fn, [tensors])``, ``params["batch_size"]`` in
``run_classifier.input_fn_builder``; then ``train(max_steps)``, ``evaluate(steps)``,
``predict``. The pretrained checkpoint and examples are tests/support/bert_finetune.py's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

if importlib.util.find_spec("tf_keras") is not None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "tpu_bert_tf215.json"
BATCH, ITERATIONS_PER_LOOP, MAX_STEPS, EVAL_STEPS = 4, 3, 6, 2


def run(lib: str, workdir: str) -> dict:
    tf.compat.v1.disable_v2_tensorshape()  # BERT 1.0.4's shim (TF1 Dimension.value)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from support import bert_finetune as bert

    if lib == "ours":
        from tf1compat_init.estimator import v1

        tf.compat.v1.estimator = v1
    elif lib != "real":
        raise ValueError(f"unknown library {lib!r}: real or ours")
    tpu = tf.compat.v1.estimator.tpu
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    bert.make_pretrained(workdir)
    model_fn = bert.run_classifier.model_fn_builder(
        bert_config=bert.bert_config(),
        num_labels=bert.NUM_LABELS,
        init_checkpoint=os.path.join(workdir, "bert_model.ckpt"),
        learning_rate=bert.LEARNING_RATE,
        num_train_steps=MAX_STEPS,
        num_warmup_steps=bert.NUM_WARMUP_STEPS,
        use_tpu=False,
        use_one_hot_embeddings=False,
    )
    model_dir = os.path.join(workdir, "output")
    run_config = tpu.RunConfig(
        cluster=None,
        master=None,
        model_dir=model_dir,
        save_checkpoints_steps=3,
        tf_random_seed=bert.SEED,
        session_config=tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
        ),
        tpu_config=tpu.TPUConfig(
            iterations_per_loop=ITERATIONS_PER_LOOP,
            num_shards=8,
            per_host_input_for_training=tpu.InputPipelineConfig.PER_HOST_V2,
        ),
    )
    est = tpu.TPUEstimator(
        use_tpu=False,
        model_fn=model_fn,
        config=run_config,
        train_batch_size=BATCH,
        eval_batch_size=BATCH,
        predict_batch_size=BATCH,
    )
    est.train(input_fn=bert.input_fn_builder(True), max_steps=MAX_STEPS)
    result = est.evaluate(input_fn=bert.input_fn_builder(False), steps=EVAL_STEPS)
    predictions = est.predict(input_fn=bert.input_fn_builder(False))
    reader = tf.compat.v1.train.NewCheckpointReader(tf.train.latest_checkpoint(model_dir))
    variables = {}
    for name in sorted(reader.get_variable_to_shape_map()):
        a = np.asarray(reader.get_tensor(name))
        f = a.astype(np.float64).reshape(-1)
        variables[name] = {
            "sha256": hashlib.sha256(a.tobytes()).hexdigest(),
            "sum": float(f.sum()),
            "sum_sq": float((f * f).sum()),
            "head": f[:4].tolist(),
        }
    return {
        "tf_version": tf.__version__,
        "eval": {k: float(v) for k, v in sorted(result.items())},
        "probabilities": [p["probabilities"].tolist() for p in predictions],
        "checkpoint": os.path.basename(tf.train.latest_checkpoint(model_dir)),
        "variables": variables,
    }


def main(argv: list) -> int:
    if argv == ["--golden"]:
        with tempfile.TemporaryDirectory() as d:
            result = run("real", d)
        GOLDEN.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    lib, out = argv
    with tempfile.TemporaryDirectory() as d:
        Path(out).write_text(json.dumps(run(lib, d), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
