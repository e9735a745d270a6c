"""v1 canned estimators (``tf.compat.v1.estimator``), the real ones against ours.

Shared by tests/estimator/v1/test_estimator_v1.py (in process on both legs) and run as a script to
write the golden files (TF 2.15 only)::

    python tests/support/estimator_v1_models.py --golden

``--golden`` makes, with the real ``tf.compat.v1.estimator`` of TF 2.15, one small
``model_dir`` per model in ``GOLDEN_DIRS`` (trained one step from seeded random values;
only ``checkpoint``, ``.index`` and ``.data``), then runs :func:`run` (the real library)
from each and writes the results to ``GOLDEN``. A run resumes a copy of such a model_dir
(so the TF 2.21 leg resumes model_dirs written by TF 2.15): ``train`` for 3 steps fed by
the library's own ``inputs.numpy_input_fn``, ``evaluate``, ``predict``, and for the DNN
classifier ``export_saved_model``; it records the loss at each step, the metrics, the
predictions, the checkpoint's variable names and shapes (optimizer slots included) and
the exported signatures.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

HERE = Path(__file__).resolve().parents[1]  # tests/
GOLDEN = HERE / "golden" / "estimator_v1_tf215.json"
GOLDEN_DIRS = HERE / "golden" / "estimator_v1"
SEED = 20251202
N, BATCH, STEPS = 12, 4, 3


def data() -> tuple:
    rng = np.random.RandomState(SEED)
    x = rng.uniform(-1, 1, size=(N, 3)).astype(np.float32)
    c = rng.choice(["a", "b", "d"], size=(N, 1))
    y = (x.sum(axis=1) + (c[:, 0] == "a") > 0.3).astype(np.int64).reshape(-1, 1)
    y3 = (np.digitize(x[:, 0], [-0.3, 0.3])).astype(np.int64).reshape(-1, 1)
    reg = (x @ np.array([0.5, -1.0, 2.0], np.float32) + 0.1).reshape(-1, 1).astype(np.float32)
    w = np.linspace(0.5, 2.0, N).astype(np.float32).reshape(-1, 1)
    return {"x": x, "c": c, "w": w}, {
        "binary": y,
        "three": y3,
        "names": np.array(["lo", "mid", "hi"])[y3],
        "reg": reg,
    }


def columns() -> dict:
    fc = tf.compat.v1.feature_column
    x = fc.numeric_column("x", shape=(3,))
    cat = fc.categorical_column_with_vocabulary_list("c", ["a", "b", "d"])
    return {"x": x, "cat": cat, "emb": fc.embedding_column(cat, 2)}


def library(lib: str):
    """``tf.compat.v1.estimator`` (``real``) or ``tf1compat_init.estimator.v1`` (``ours``)."""
    if lib == "real":
        return tf.compat.v1.estimator
    from tf1compat_init.estimator import v1

    return v1


def head_module(lib: str):
    if lib == "real":
        from tensorflow_estimator.python.estimator.canned import head

        return head
    from tf1compat_init.estimator.v1 import _head

    return _head


#: model name -> (label key, builder(lib, model_dir, config))
def _models() -> dict:
    col = columns()

    def dnn_classifier(lib, d, config):
        return library(lib).DNNClassifier(
            [4, 3], [col["x"], col["emb"]], model_dir=d, config=config
        )

    def dnn_regressor(lib, d, config):
        # dropout draws from op-level seeds: equal only if both build the same random ops
        return library(lib).DNNRegressor(
            [3],
            [col["x"], col["emb"]],
            model_dir=d,
            config=config,
            optimizer="Adam",
            dropout=0.2,
            batch_norm=True,
            weight_column="w",
        )

    def dnn_estimator(lib, d, config):
        head = head_module(lib)._multi_class_head_with_softmax_cross_entropy_loss(
            3, label_vocabulary=["lo", "mid", "hi"]
        )
        return library(lib).DNNEstimator(
            head, [3], [col["x"], col["emb"]], model_dir=d, config=config
        )

    def linear_classifier(lib, d, config):
        return library(lib).LinearClassifier(
            [col["x"], col["cat"]], n_classes=3, model_dir=d, config=config
        )

    def baseline_regressor(lib, d, config):
        return library(lib).BaselineRegressor(model_dir=d, config=config)

    def dnn_linear_classifier(lib, d, config):
        return library(lib).DNNLinearCombinedClassifier(
            linear_feature_columns=[col["x"], col["cat"]],
            dnn_feature_columns=[col["emb"]],
            dnn_hidden_units=[3],
            model_dir=d,
            config=config,
        )

    return {
        "dnn_classifier": ("binary", dnn_classifier),
        "dnn_regressor": ("reg", dnn_regressor),
        "dnn_estimator": ("names", dnn_estimator),
        "linear_classifier": ("three", linear_classifier),
        "baseline_regressor": ("reg", baseline_regressor),
        "dnn_linear_classifier": ("binary", dnn_linear_classifier),
    }


MODELS = tuple(_models())


def run_config(lib: str):
    session_config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
    )
    if lib == "real":
        cls = tf.estimator.RunConfig
    else:
        from tf1compat_init.estimator import RunConfig as cls
    return cls(tf_random_seed=SEED, session_config=session_config, save_summary_steps=1000)


class _Losses(tf.compat.v1.train.SessionRunHook):
    def __init__(self) -> None:
        self.losses: list = []

    def begin(self) -> None:
        self._loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)

    def after_create_session(self, session, coord) -> None:
        # The global step fetched beside train_op may be read before or after its
        # increment; read it once here and count.
        self._step = int(session.run(tf.compat.v1.train.get_global_step()))

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values) -> None:
        self.losses.append([self._step, [np.asarray(v).tolist() for v in run_values.results]])
        self._step += 1


def _signatures(export_dir: bytes) -> dict:
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((Path(export_dir.decode()) / "saved_model.pb").read_bytes())
    (meta,) = proto.meta_graphs
    return {
        key: {
            "method": sig.method_name,
            "inputs": sorted(sig.inputs),
            "outputs": {k: v.dtype for k, v in sorted(sig.outputs.items())},
        }
        for key, sig in sorted(meta.signature_def.items())
    }


def _plain(value):
    value = np.asarray(value)
    if value.dtype.kind in "OSU":
        return [v.decode() if isinstance(v, bytes) else str(v) for v in value.ravel().tolist()]
    return value.tolist()


def run(lib: str, model: str, init_dir: str | Path, workdir: str | Path) -> dict:
    """Resumes a copy of ``init_dir`` with ``lib``'s ``model``: train, evaluate, predict."""
    inputs = library(lib).inputs
    label_key, build = _models()[model]
    features, labels = data()
    model_dir = Path(workdir) / f"{lib}_{model}"
    shutil.copytree(init_dir, model_dir)
    est = build(lib, str(model_dir), run_config(lib))
    hook = _Losses()
    train_fn = inputs.numpy_input_fn(
        features, labels[label_key], batch_size=BATCH, num_epochs=None, shuffle=False
    )
    est.train(train_fn, steps=STEPS, hooks=[hook])
    eval_fn = inputs.numpy_input_fn(
        features, labels[label_key], batch_size=BATCH, num_epochs=1, shuffle=False
    )
    metrics = est.evaluate(eval_fn)
    predict_fn = inputs.numpy_input_fn(features, batch_size=5, num_epochs=1, shuffle=False)
    predictions = list(est.predict(predict_fn))
    result = {
        "losses": hook.losses,
        "metrics": {k: float(v) for k, v in sorted(metrics.items())},
        "predictions": {k: [_plain(p[k]) for p in predictions] for k in sorted(predictions[0])},
        "variables": [
            [name, list(shape)] for name, shape in tf.train.list_variables(str(model_dir))
        ],
    }
    if model == "dnn_classifier":
        spec = tf.compat.v1.feature_column.make_parse_example_spec(
            [columns()["x"], columns()["emb"]]
        )
        receiver = library(lib).export.build_parsing_serving_input_receiver_fn(spec)
        result["signatures"] = _signatures(
            est.export_saved_model(str(Path(workdir) / f"{lib}_export"), receiver)
        )
    return result


def train_losses(lib: str, model: str, model_dir: str | Path, steps: int) -> list:
    """Trains ``lib``'s ``model`` in ``model_dir`` (resuming it); the loss at each step."""
    label_key, build = _models()[model]
    features, labels = data()
    est = build(lib, str(model_dir), run_config(lib))
    hook = _Losses()
    fn = library(lib).inputs.numpy_input_fn(
        features, labels[label_key], batch_size=BATCH, num_epochs=None, shuffle=False
    )
    est.train(fn, steps=steps, hooks=[hook])
    return hook.losses


def make_initial_model_dir(model: str, directory: Path) -> None:
    """One step of the real v1 estimator from seeded random values; keeps only the checkpoint."""
    label_key, build = _models()[model]
    features, labels = data()
    with tempfile.TemporaryDirectory() as tmp:
        est = build("real", tmp, run_config("real"))
        est.train(
            tf.compat.v1.estimator.inputs.numpy_input_fn(
                features, labels[label_key], batch_size=BATCH, num_epochs=None, shuffle=False
            ),
            steps=1,
        )
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        for f in Path(tmp).glob("model.ckpt-1.*"):
            if f.suffix != ".meta":
                shutil.copy(f, directory / f.name)
        # A relative path: the directory works wherever it is copied.
        (directory / "checkpoint").write_text(
            'model_checkpoint_path: "model.ckpt-1"\nall_model_checkpoint_paths: "model.ckpt-1"\n'
        )


def main(argv: list[str]) -> int:
    if argv != ["--golden"]:
        raise SystemExit(__doc__)
    if not hasattr(tf, "estimator"):
        raise SystemExit("the golden files are made by the real tf.estimator (TF 2.15)")
    out: dict = {"tf_version": tf.__version__, "runs": {}}
    with tempfile.TemporaryDirectory() as workdir:
        for model in MODELS:
            make_initial_model_dir(model, GOLDEN_DIRS / model)
            out["runs"][model] = run("real", model, GOLDEN_DIRS / model, workdir)
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
