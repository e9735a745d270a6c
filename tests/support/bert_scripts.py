"""BERT's own scripts end to end: a tiny BERT, its data, and what each script wrote.

Shared by tests/estimator/bert/test_bert_scripts.py and run as a script::

    python tests/support/bert_scripts.py WORKDIR OUT.json [RUNNER...]   # runs the three scripts
    python tests/support/bert_scripts.py --golden                       # TF 2.15: rewrites GOLDEN

``RUNNER`` is the command that runs ``tests/support/bert_launch.py`` (default: this Python; on
TF 2.21 the test passes ``tf1compat-init run``). The scripts are bert-tensorflow 1.0.4's
``run_classifier``, ``run_pretraining`` and ``run_squad``, unmodified, each with
``--use_tpu=False`` (their default), so on TF 2.15 they run the real
``tf.compat.v1.estimator.tpu.TPUEstimator`` and on TF 2.21 whatever ``tf.compat.v1.estimator``
is: nothing without ``tf1compat-init run`` (or ``install()``), ours with it. The pretraining
data comes from bert's own ``create_pretraining_data``. Everything is made from fixed seeds:
the pretrained checkpoint's values from a numpy generator, so both TensorFlow versions start
from the same bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LAUNCH = HERE / "bert_launch.py"
GOLDEN = HERE.parent / "golden" / "bert_scripts_tf215.json"

WORDS = [f"w{i}" for i in range(40)]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, ".", "?"]
CONFIG = {
    "vocab_size": len(VOCAB),
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}
SEQ = 32


def _sentence(rng: np.random.RandomState, lo: int = 4, hi: int = 9) -> list[str]:
    return [WORDS[i] for i in rng.randint(0, len(WORDS), rng.randint(lo, hi))]


def write_inputs(workdir: str) -> dict:
    """Vocabulary, config, a pretrained checkpoint and each script's data, in ``workdir``."""
    w = Path(workdir)
    (w / "glue").mkdir(parents=True, exist_ok=True)
    (w / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (w / "bert_config.json").write_text(json.dumps(CONFIG))
    rng = np.random.RandomState(7)
    # MRPC: "Quality  #1 ID  #2 ID  #1 String  #2 String"; label 1 when both share a first word.
    for split, n in (("train", 24), ("dev", 8), ("test", 8)):
        rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        for i in range(n):
            a, b = _sentence(rng), _sentence(rng)
            if i % 2:
                b[0] = a[0]
            label = int(a[0] == b[0])
            if split == "test":
                rows.append(f"{i}\t{i}\t{i + 100}\t{' '.join(a)}\t{' '.join(b)}")
            else:
                rows.append(f"{label}\t{i}\t{i + 100}\t{' '.join(a)}\t{' '.join(b)}")
        (w / "glue" / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    # Pretraining text: documents separated by blank lines, one sentence per line.
    docs = [[" ".join(_sentence(rng)) + " ." for _ in range(6)] for _ in range(6)]
    (w / "corpus.txt").write_text("\n\n".join("\n".join(d) for d in docs) + "\n")
    # SQuAD 1.1: the answer is the word after "w0" in the context.
    (w / "squad").mkdir(exist_ok=True)
    for split, n in (("train", 12), ("dev", 4)):
        paragraphs = []
        for i in range(n):
            words = _sentence(rng, 8, 14)
            k = rng.randint(1, len(words) - 1)
            words[k - 1] = "w0"
            context = " ".join(words)
            start = len(" ".join(words[:k])) + 1
            qas = [
                {
                    "id": f"{split}-{i}",
                    "question": f"w0 {words[0]} ?",
                    "answers": [{"text": words[k], "answer_start": start}],
                }
            ]
            paragraphs.append({"context": context, "qas": qas})
        data = {"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}
        (w / "squad" / f"{split}.json").write_text(json.dumps(data))
    return {"workdir": str(w)}


def write_pretrained(workdir: str) -> None:
    """``bert_model.ckpt``: BertModel's variables with values from a numpy generator."""
    import tensorflow as tf

    sys.path.insert(0, str(HERE.parent))
    from support import bert_launch

    bert_launch.contrib()
    from bert import modeling

    tf1 = tf.compat.v1
    rng = np.random.RandomState(1)
    with tf.Graph().as_default():
        ids = tf1.placeholder(tf.int32, [None, SEQ])
        config = modeling.BertConfig.from_dict(CONFIG)
        modeling.BertModel(config=config, is_training=False, input_ids=ids)
        step = tf1.train.get_or_create_global_step()
        assigns = []
        for v in sorted(tf1.global_variables(), key=lambda v: v.op.name):
            if v is step:
                value = np.int64(1000)
            elif v.op.name.endswith("LayerNorm/gamma"):
                value = 1.0 + 0.1 * rng.randn(*v.shape.as_list())
            else:
                value = 0.05 * rng.randn(*v.shape.as_list())
            assigns.append(v.assign(np.asarray(value, v.dtype.as_numpy_dtype)))
        with tf1.Session() as s:
            s.run(assigns)
            tf1.train.Saver().save(s, os.path.join(workdir, "bert_model.ckpt"), write_state=False)


def _flags(**kw) -> list[str]:
    return [f"--{k}={v}" for k, v in kw.items()]


def commands(workdir: str) -> dict:
    """``{script: [module, flags...]}`` for the three scripts (and the data step)."""
    w = workdir
    common = {
        "vocab_file": f"{w}/vocab.txt",
        "bert_config_file": f"{w}/bert_config.json",
        "init_checkpoint": f"{w}/bert_model.ckpt",
    }
    return {
        "create_pretraining_data": [
            "create_pretraining_data",
            *_flags(
                input_file=f"{w}/corpus.txt",
                output_file=f"{w}/pretrain.tfrecord",
                vocab_file=f"{w}/vocab.txt",
                max_seq_length=SEQ,
                max_predictions_per_seq=5,
                masked_lm_prob=0.15,
                random_seed=12345,
                dupe_factor=2,
            ),
        ],
        "run_classifier": [
            "run_classifier",
            *_flags(
                task_name="MRPC",
                do_train=True,
                do_eval=True,
                do_predict=True,
                data_dir=f"{w}/glue",
                max_seq_length=SEQ,
                train_batch_size=4,
                eval_batch_size=4,
                predict_batch_size=4,
                learning_rate=2e-3,
                num_train_epochs=1.0,
                save_checkpoints_steps=3,
                output_dir=f"{w}/out/classifier",
                **common,
            ),
        ],
        "run_pretraining": [
            "run_pretraining",
            *_flags(
                input_file=f"{w}/pretrain.tfrecord",
                do_train=True,
                do_eval=True,
                max_seq_length=SEQ,
                max_predictions_per_seq=5,
                train_batch_size=4,
                eval_batch_size=4,
                num_train_steps=4,
                num_warmup_steps=1,
                learning_rate=2e-3,
                max_eval_steps=2,
                save_checkpoints_steps=2,
                output_dir=f"{w}/out/pretraining",
                **common,
            ),
        ],
        "run_squad": [
            "run_squad",
            *_flags(
                do_train=True,
                do_predict=True,
                train_file=f"{w}/squad/train.json",
                predict_file=f"{w}/squad/dev.json",
                max_seq_length=SEQ,
                doc_stride=16,
                max_query_length=8,
                train_batch_size=4,
                predict_batch_size=4,
                learning_rate=2e-3,
                num_train_epochs=1.0,
                save_checkpoints_steps=3,
                output_dir=f"{w}/out/squad",
                **common,
            ),
        ],
    }


def _eval_results(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        key, value = line.split(" = ")
        out[key] = float(value)
    return out


def _summary_steps(directory: Path) -> dict:
    """``{tag: [steps]}`` of the scalar summaries in the training event files."""
    import tensorflow as tf

    steps: dict = {}
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                steps.setdefault(value.tag, []).append(int(event.step))
    return steps


def outcome(workdir: str) -> dict:
    """What the scripts wrote: eval results, predictions, checkpoint names per output dir."""
    import tensorflow as tf

    out = Path(workdir) / "out"
    result: dict = {"tf_version": tf.__version__}
    for name in ("classifier", "pretraining", "squad"):
        d = out / name
        ckpt = tf.train.latest_checkpoint(str(d))
        result[name] = {
            "checkpoint": os.path.basename(ckpt),
            "variables": sorted(n for n, _ in tf.train.list_variables(ckpt)),
            "files": sorted(p.name for p in d.iterdir() if not p.name.startswith("events")),
            "summaries": _summary_steps(d),
        }
    result["classifier"]["eval"] = _eval_results(out / "classifier" / "eval_results.txt")
    result["classifier"]["test_probabilities"] = [
        [float(x) for x in line.split("\t")]
        for line in (out / "classifier" / "test_results.tsv").read_text().splitlines()
    ]
    result["pretraining"]["eval"] = _eval_results(out / "pretraining" / "eval_results.txt")
    result["squad"]["predictions"] = json.loads((out / "squad" / "predictions.json").read_text())
    nbest = json.loads((out / "squad" / "nbest_predictions.json").read_text())
    result["squad"]["nbest_probabilities"] = {
        k: [e["probability"] for e in v] for k, v in nbest.items()
    }
    return result


def run_all(workdir: str, runner: list[str]) -> dict:
    """Writes the inputs, runs the data step and the three scripts through ``runner``."""
    write_inputs(workdir)
    write_pretrained(workdir)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    for module_and_flags in commands(workdir).values():
        proc = subprocess.run(
            [*runner, str(LAUNCH), *module_and_flags], env=env, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"{module_and_flags[0]} exited {proc.returncode}:\n{proc.stderr[-8000:]}"
            )
    return outcome(workdir)


def main(argv: list[str]) -> int:
    if argv == ["--golden"]:
        import tempfile

        import tensorflow as tf

        if not hasattr(tf, "estimator"):
            raise SystemExit("the golden file is made by the real TPUEstimator (TF 2.15)")
        with tempfile.TemporaryDirectory() as d:
            out = run_all(d, [sys.executable])
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    workdir, out_path, *runner = argv
    out = run_all(workdir, runner or [sys.executable])
    Path(out_path).write_text(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
