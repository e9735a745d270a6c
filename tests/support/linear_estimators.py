"""Linear and baseline canned estimators, run by the real ``tf.estimator`` or by ours.

Shared by tests/estimator/canned/test_canned_linear.py (in process) and run as a script::

    python tests/support/linear_estimators.py LIB[,LIB...] WORKDIR OUT.json   # {lib: outcomes}
    python tests/support/linear_estimators.py --golden     # TF 2.15 only: rewrites GOLDEN, MODEL_DIRS
    python tests/support/linear_estimators.py --golden-model   # TF 2.15 only: MODEL_GOLDEN
    python tests/support/linear_estimators.py --golden-sdca    # TF 2.15 only: SDCA_GOLDEN

Each scenario builds one estimator the way a user would (the same arguments for both
libraries; only ``tf.estimator`` / ``tf1compat_init.estimator`` and Keras 2's module
differ), trains 3 steps, trains 2 more in a second ``train`` call (resuming from
``model.ckpt-3``), evaluates, predicts, and exports a SavedModel whose signatures are
then served with ``tf.Example`` protos. The outcome holds every training loss, the
evaluate dict, the predictions, the served answers and the final checkpoint's variables.

The scenarios cover binary / 3-class / string-label classifiers, 2-d regression,
``weight_column`` as a key and as a ``numeric_column``, ``sparse_combiner`` sum / mean /
sqrtn, numeric (2-d), bucketized, vocabulary, hashed, crossed and weighted categorical
columns, optimizers by name, ``None`` (TF 2.15's ``min(0.2, 1/sqrt(n))`` Ftrl), as an
instance and as a callable, and the Baseline estimators.

``--golden`` also keeps each ``GOLDEN_DIR_SCENARIOS`` model_dir at step 3 under
MODEL_DIRS, so the TF 2.21 leg resumes a model_dir TF 2.15 wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

HERE = Path(__file__).resolve().parents[1]  # tests/
GOLDEN = HERE / "golden" / "linear_estimators_tf215.json"
MODEL_DIRS = HERE / "golden" / "linear_tf215"
FIRST_STEPS = 3
SECOND_STEPS = 2
SEED = 7
#: The scenarios whose step-3 model_dir the golden run keeps.
GOLDEN_DIR_SCENARIOS = ("linear_binary", "linear_regressor", "baseline_multi")

_C = ["a", "b", "c", "z"]  # "z" is out of the vocabulary
ROWS = [
    # x (2 floats), b, c (1-2 strings), h (1-2 strings), ids, id weights, w, labels
    ([1.0, 2.0], -1.0, ["a", "b"], ["u"], [1, 3], [0.5, 2.0], 1.0, 1, "hi", [1.0, -1.0]),
    ([3.0, -4.0], 0.5, ["c"], ["v", "w"], [2], [1.5], 2.0, 0, "lo", [0.5, 2.0]),
    ([0.0, 1.0], 2.0, ["a"], ["u"], [0], [1.0], 0.5, 1, "mid", [-1.0, 0.0]),
    ([-2.0, 0.5], 0.9, ["z", "c"], ["x", "u"], [3, 1], [1.0, 1.0], 1.0, 0, "lo", [2.0, 1.0]),
    ([0.5, 0.5], -0.2, ["b"], ["w"], [1], [3.0], 1.5, 1, "hi", [0.0, 0.5]),
    ([2.0, 1.0], 1.5, ["b", "c"], ["v"], [0, 2], [0.5, 0.5], 1.0, 0, "mid", [1.5, -0.5]),
    ([-1.0, -1.0], 0.1, ["a", "z"], ["u", "v"], [2], [2.0], 3.0, 1, "hi", [-0.5, 1.0]),
    ([1.5, -0.5], 3.0, ["c"], ["x"], [3], [1.0], 0.5, 0, "lo", [1.0, 1.0]),
]
BATCH = 4


def libraries(lib: str) -> tuple:
    """``(estimator module, Keras 2 module)`` of a library: ``"real"`` or ``"ours"``."""
    if lib == "real":
        return tf.estimator, tf.keras
    from tf1compat_init import estimator
    from tf1compat_init.estimator._keras2 import keras2

    return estimator, keras2()


def _pad(lists: list, fill) -> list:
    width = max(len(v) for v in lists)
    return [list(v) + [fill] * (width - len(v)) for v in lists]


def dataset_arrays() -> tuple[dict, dict]:
    """Features and labels as dense arrays (strings padded with '', ids with -1)."""
    features = {
        "x": np.array([r[0] for r in ROWS], np.float32),
        "b": np.array([[r[1]] for r in ROWS], np.float32),
        "c": np.array(_pad([r[2] for r in ROWS], ""), object),
        "h": np.array(_pad([r[3] for r in ROWS], ""), object),
        "ids": np.array(_pad([r[4] for r in ROWS], -1), np.int64),
        "idw": np.array(_pad([r[5] for r in ROWS], 0.0), np.float32),
        "w": np.array([[r[6]] for r in ROWS], np.float32),
    }
    labels = {
        "binary": np.array([[r[7]] for r in ROWS], np.int64),
        "vocab": np.array([[r[8]] for r in ROWS], object),
        "regression": np.array([r[9] for r in ROWS], np.float32),
    }
    return features, labels


def input_fn(label: str | None, repeat: bool, keys: tuple | None = None):
    def fn():
        features, labels = dataset_arrays()
        if keys is not None:
            features = {k: features[k] for k in keys}
        if label is None:
            ds = tf.data.Dataset.from_tensor_slices(features)
        else:
            ds = tf.data.Dataset.from_tensor_slices((features, labels[label]))
        ds = ds.batch(BATCH)
        return ds.repeat() if repeat else ds

    return fn


def serialized_examples() -> list[bytes]:
    out = []
    for r in ROWS:
        f = tf.train.Feature
        feats = {
            "x": f(float_list=tf.train.FloatList(value=r[0])),
            "b": f(float_list=tf.train.FloatList(value=[r[1]])),
            "c": f(bytes_list=tf.train.BytesList(value=[s.encode() for s in r[2]])),
            "h": f(bytes_list=tf.train.BytesList(value=[s.encode() for s in r[3]])),
            "ids": f(int64_list=tf.train.Int64List(value=r[4])),
            "idw": f(float_list=tf.train.FloatList(value=r[5])),
        }
        ex = tf.train.Example(features=tf.train.Features(feature=feats))
        out.append(ex.SerializeToString())
    return out


def columns(names: str) -> list:
    """The feature columns named by letters: x b c h k (crossed) i (weighted) e (embedding) n."""
    fc = tf.feature_column
    c = fc.categorical_column_with_vocabulary_list("c", _C[:3])
    make = {
        "x": lambda: fc.numeric_column("x", shape=(2,)),
        "b": lambda: fc.bucketized_column(fc.numeric_column("b"), boundaries=[0.0, 1.0]),
        "c": lambda: c,
        "h": lambda: fc.categorical_column_with_hash_bucket("h", 5),
        "k": lambda: fc.crossed_column([c, "h"], 7),
        "i": lambda: fc.weighted_categorical_column(
            fc.categorical_column_with_identity("ids", 4), "idw"
        ),
        "e": lambda: fc.embedding_column(c, 2),
        "n": lambda: fc.indicator_column(fc.categorical_column_with_hash_bucket("h", 5)),
    }
    return [make[n]() for n in names]


def build(scenario: str, lib: str, model_dir: str):
    """``(estimator, label key)`` of a scenario."""
    est, keras = libraries(lib)
    config = est.RunConfig(
        tf_random_seed=SEED,
        session_config=tf1.ConfigProto(
            intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
        ),
    )
    kw = {"model_dir": model_dir, "config": config}
    if scenario == "linear_binary":
        return est.LinearClassifier(columns("xbck"), weight_column="w", **kw), "binary"
    if scenario == "linear_multi":
        return est.LinearClassifier(
            columns("xchi"),
            n_classes=3,
            label_vocabulary=["lo", "mid", "hi"],
            weight_column=tf.feature_column.numeric_column("w"),
            optimizer=None,
            sparse_combiner="mean",
            **kw,
        ), "vocab"
    if scenario == "linear_regressor":
        return est.LinearRegressor(
            columns("xbcki"),
            label_dimension=2,
            optimizer=lambda: keras.optimizers.legacy.Adagrad(learning_rate=0.1),
            sparse_combiner="sqrtn",
            **kw,
        ), "regression"
    if scenario == "linear_estimator":
        return est.LinearEstimator(
            est.RegressionHead(label_dimension=2, weight_column="w"),
            columns("xc"),
            # A callable: an instance would serve one train() call only, in TF 2.15 too
            # (its `iterations` cannot be set to the next graph's global step).
            optimizer=lambda: keras.optimizers.legacy.Ftrl(
                learning_rate=0.1, l1_regularization_strength=0.01
            ),
            **kw,
        ), "regression"
    if scenario == "baseline_multi":
        return est.BaselineClassifier(
            n_classes=3, label_vocabulary=["lo", "mid", "hi"], weight_column="w", **kw
        ), "vocab"
    if scenario == "baseline_binary":
        return est.BaselineClassifier(optimizer="Adam", **kw), "binary"
    if scenario == "baseline_regressor":
        return est.BaselineRegressor(label_dimension=2, optimizer="SGD", **kw), "regression"
    if scenario == "baseline_estimator":
        return est.BaselineEstimator(est.BinaryClassHead(), **kw), "binary"
    raise KeyError(scenario)


SCENARIOS = (
    "linear_binary",
    "linear_multi",
    "linear_regressor",
    "linear_estimator",
    "baseline_multi",
    "baseline_binary",
    "baseline_regressor",
    "baseline_estimator",
)
#: The feature keys a scenario's input_fn gives (all when absent). TF 2.15's V2 baselines
#: check that the features' batch sizes agree before making their bias's initial value,
#: so with two features (the weight column aside) from a Dataset's initializable
#: iterator their variables cannot be initialized (FailedPreconditionError: the iterator
#: is not initialized yet), in TF 2.15 as in ours: the baselines get one feature.
KEYS = {
    "baseline_multi": ("x", "w"),
    "baseline_binary": ("x",),
    "baseline_regressor": ("x",),
    "baseline_estimator": ("x",),
}
#: Scenarios whose SavedModel is exported and served (the others skip it for time).
EXPORTED = ("linear_binary", "linear_multi", "linear_regressor", "baseline_multi")


class LossRecorder(tf1.train.SessionRunHook):
    """Records ``[global step before the step, loss]`` for every training step."""

    def __init__(self) -> None:
        self.losses: list = []

    def begin(self) -> None:
        self._loss = tf1.get_collection("recorded_loss")[-1]
        self._step = tf1.train.get_global_step()

    def after_create_session(self, session, coord) -> None:
        self._next = int(session.run(self._step))

    def before_run(self, run_context):
        return tf1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values) -> None:
        self.losses.append([self._next, float(run_values.results)])
        self._next += 1


def train_recording(lib: str, canned, input_fn_, steps: int) -> list:
    """``canned.train(...)`` with the same model_fn, recording each step's loss."""
    est, _ = libraries(lib)

    def model_fn(features, labels, mode, config):
        spec = canned.model_fn(features, labels, mode, config)
        if mode == "train":
            tf1.add_to_collection("recorded_loss", spec.loss)
        return spec

    recorder = LossRecorder()
    runner = est.Estimator(model_fn, model_dir=canned.model_dir, config=canned.config)
    runner.train(input_fn_, steps=steps, hooks=[recorder])
    return recorder.losses


def _plain(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.dtype == object else value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


def serve(export_dir: str) -> dict:
    """Every signature of the SavedModel, called with the serialized examples."""
    loaded = tf.saved_model.load(export_dir)
    examples = tf.constant(serialized_examples())
    out = {}
    for key in sorted(loaded.signatures):
        fn = loaded.signatures[key]
        (name,) = fn.structured_input_signature[1]
        result = fn(**{name: examples})
        out[key] = {k: _plain(v.numpy()) for k, v in sorted(result.items())}
    return out


def run(lib: str, scenario: str, workdir: str, resume_dir: str | None = None) -> dict:
    """A scenario's outcome; its step-3 model_dir is kept at ``<model_dir>_step3``.

    With ``resume_dir`` (a step-3 model_dir): only the second ``train`` call, and the
    final variables.
    """
    model_dir = os.path.join(workdir, f"{scenario}_{lib}")
    if resume_dir is not None:
        shutil.copytree(resume_dir, model_dir)
    estimator, label = build(scenario, lib, model_dir)
    keys = KEYS.get(scenario)
    losses = []
    if resume_dir is None:
        losses.append(train_recording(lib, estimator, input_fn(label, True, keys), FIRST_STEPS))
        shutil.copytree(model_dir, model_dir + "_step3")
    losses.append(train_recording(lib, estimator, input_fn(label, True, keys), SECOND_STEPS))
    out = {"tf_version": tf.__version__, "losses": losses, "variables": variables(model_dir)}
    if resume_dir is not None:
        return out
    metrics = estimator.evaluate(input_fn(label, False, keys))
    out["metrics"] = {k: float(v) for k, v in sorted(metrics.items())}
    out["predictions"] = [
        {k: _plain(v) for k, v in sorted(p.items())}
        for p in estimator.predict(input_fn(None, False, keys))
    ]
    if scenario in EXPORTED:
        est, _ = libraries(lib)
        spec = tf.feature_column.make_parse_example_spec(columns("xbchi"))
        receiver = est.export.build_parsing_serving_input_receiver_fn(spec)
        export_dir = estimator.export_saved_model(
            os.path.join(workdir, f"export_{scenario}_{lib}"), receiver
        )
        out["served"] = serve(export_dir.decode() if isinstance(export_dir, bytes) else export_dir)
    return out


def variables(model_dir: str) -> dict:
    """The latest checkpoint's ``{name: value}``."""
    ckpt = tf.train.latest_checkpoint(model_dir)
    return {
        name: tf.train.load_variable(ckpt, name).tolist()
        for name, _ in tf.train.list_variables(ckpt)
    }


SDCA_GOLDEN = HERE / "golden" / "linear_sdca_tf215.json"
#: Steps of the two SDCA train calls: enough to converge on the 8 examples.
SDCA_STEPS = (3, 57)
SDCA_KINDS = ("classifier", "regressor")


def sdca_build(kind: str, lib: str, model_dir: str):
    """``(estimator, label key)``: a linear model trained by ``LinearSDCA``."""
    est, _ = libraries(lib)
    config = est.RunConfig(
        session_config=tf1.ConfigProto(
            intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
        )
    )
    if kind == "classifier":
        sdca = est.experimental.LinearSDCA(
            "id", symmetric_l1_regularization=0.1, symmetric_l2_regularization=2.0
        )
        return est.LinearClassifier(
            columns("xbck"), model_dir, weight_column="w", optimizer=sdca, config=config
        ), "binary"
    sdca = est.experimental.LinearSDCA("id", symmetric_l2_regularization=5.0)
    return est.LinearRegressor(columns("xci"), model_dir, optimizer=sdca, config=config), "target"


def sdca_input_fn(label: str | None, repeat: bool):
    def fn():
        features, labels = dataset_arrays()
        features["id"] = np.array([str(i) for i in range(len(ROWS))], object)
        labels["target"] = labels["regression"][:, :1]
        ds = tf.data.Dataset.from_tensor_slices(
            features if label is None else (features, labels[label])
        ).batch(BATCH)
        return ds.repeat() if repeat else ds

    return fn


def sdca_run(lib: str, kind: str, workdir: str, resume_dir: str | None = None) -> dict:
    """SDCA to convergence in two ``train`` calls; the last losses, metrics and variables.

    TensorFlow's SDCA kernel is not deterministic (TF 2.15's own runs differ by a few
    percent after one step), so the outcome is where it converges. With ``resume_dir``:
    one more step from that model_dir, and its loss.
    """
    model_dir = os.path.join(workdir, f"sdca_{kind}_{lib}")
    if resume_dir is not None:
        shutil.copytree(resume_dir, model_dir)
    estimator, label = sdca_build(kind, lib, model_dir)
    if resume_dir is not None:
        return {"loss": train_recording(lib, estimator, sdca_input_fn(label, True), 1)[-1][1]}
    losses = [
        train_recording(lib, estimator, sdca_input_fn(label, True), steps) for steps in SDCA_STEPS
    ]
    metrics = estimator.evaluate(sdca_input_fn(label, False))
    return {
        "last_losses": [call[-1] for call in losses],
        "metrics": {k: float(v) for k, v in sorted(metrics.items())},
        "variables": variables(model_dir),
        "model_dir": model_dir,
    }


def sdca_golden_view(out: dict) -> dict:
    """What the golden file keeps: no table contents (their order is the kernel's), no path."""
    keep = {k: v for k, v in out.items() if k != "model_dir"}
    keep["variables"] = {
        k: (v if not k.startswith("ShardedMutableHashTable") else None)
        for k, v in out["variables"].items()
    }
    return keep


MODEL_GOLDEN = HERE / "golden" / "linear_model_tf215.json"


def model_logits(lib: str) -> dict:
    """The linear model alone: variables and logits for each combiner, plain and partitioned.

    Every variable gets values from one seeded generator in name order, so the logits
    test the model's math (dense matmul, combiners over multivalent and weighted ids,
    float64 inputs taken as float32, the bias) with nonzero weights.
    """
    if lib == "real":
        from tensorflow_estimator.python.estimator.canned.linear import LinearModel
    else:
        from tf1compat_init.estimator.canned._linear import LinearModel
    features, _ = dataset_arrays()
    features["x"] = features["x"].astype(np.float64)
    out = {}
    for combiner in ("sum", "mean", "sqrtn"):
        for parts in (None, 2):
            graph = tf.Graph()
            with graph.as_default():
                partitioner = parts and tf1.fixed_size_partitioner(parts)
                with tf1.variable_scope("", partitioner=partitioner):
                    model = LinearModel(
                        columns("xbchkien"),
                        units=3,
                        sparse_combiner=combiner,
                        name="linear/linear_model",
                    )
                    logits = model({k: tf.constant(v) for k, v in features.items()})
                rng = np.random.RandomState(0)
                names = sorted(tf1.global_variables(), key=lambda v: v.name)
                assigns = [v.assign(rng.uniform(-1, 1, v.shape).astype(np.float32)) for v in names]
                with tf1.Session() as sess:
                    sess.run([tf1.global_variables_initializer(), tf1.tables_initializer()])
                    sess.run(assigns)
                    value = sess.run(logits)
            out[f"{combiner}_{parts}"] = {
                "variables": [[v.name, v.shape.as_list()] for v in names],
                "logits": value.tolist(),
            }
    return out


def keep_model_dir(lib: str, scenario: str, workdir: str, dest: Path) -> None:
    """Trains the first call only and keeps ``model.ckpt-3`` (index, data, checkpoint file)."""
    model_dir = os.path.join(workdir, f"keep_{scenario}_{lib}")
    estimator, label = build(scenario, lib, model_dir)
    estimator.train(input_fn(label, True, KEYS.get(scenario)), steps=FIRST_STEPS)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    prefix = f"model.ckpt-{FIRST_STEPS}"
    for name in os.listdir(model_dir):
        if name.startswith(prefix + ".index") or name.startswith(prefix + ".data"):
            shutil.copy(os.path.join(model_dir, name), dest / name)
    (dest / "checkpoint").write_text(
        f'model_checkpoint_path: "{prefix}"\nall_model_checkpoint_paths: "{prefix}"\n'
    )


def main(argv: list[str]) -> int:
    if argv == ["--golden-sdca"]:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            out = {k: sdca_golden_view(sdca_run("real", k, d)) for k in SDCA_KINDS}
        SDCA_GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {SDCA_GOLDEN}")
        return 0
    if argv == ["--golden-model"]:
        MODEL_GOLDEN.write_text(json.dumps(model_logits("real"), indent=1, sort_keys=True) + "\n")
        print(f"wrote {MODEL_GOLDEN}")
        return 0
    if argv == ["--golden"]:
        import tempfile

        if not hasattr(tf, "estimator"):
            raise SystemExit("the golden file is made by the real tf.estimator (TF 2.15)")
        with tempfile.TemporaryDirectory() as d:
            out = {s: run("real", s, d) for s in SCENARIOS}
            for s in GOLDEN_DIR_SCENARIOS:
                keep_model_dir("real", s, d, MODEL_DIRS / s)
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN} and {MODEL_DIRS}")
        return 0
    libs, workdir, out_path = argv
    out = {
        lib: {s: run(lib, s, os.path.join(workdir, lib)) for s in SCENARIOS}
        for lib in libs.split(",")
    }
    Path(out_path).write_text(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    raise SystemExit(main(sys.argv[1:]))
