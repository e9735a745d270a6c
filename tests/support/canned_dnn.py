"""The DNN canned estimators, run the same way by ``tf.estimator`` (TF 2.15) and by ours.

Shared by tests/estimator/canned/test_canned_dnn.py and run as a script::

    python tests/support/canned_dnn.py --golden   # TF 2.15 only: rewrites the golden files
    python tests/support/canned_dnn.py --resume LIB MODEL_DIR WORKDIR OUT.json

Each scenario builds one canned estimator with the library's own classes (``real``:
``tf.estimator``; ``ours``: ``tf1compat_init.estimator``), trains it (losses read back
from the ``loss`` summary of every step), evaluates, predicts, and for some exports a
SavedModel and serves tf.Examples through every signature. The golden files hold what
the real ``tf.estimator`` 2.15 gave: ``dnn_tf215.json`` and, for the checkpoint
compatibility checks, a trained ``model_dir`` (``dnn_tf215_model/``: checkpoint files
only) plus what TF 2.15 did when it resumed that directory.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
GOLDEN = GOLDEN_DIR / "dnn_tf215.json"
GOLDEN_MODEL = GOLDEN_DIR / "dnn_tf215_model"
SEED = 20240611
N, BATCH = 8, 4
VOCAB = ["a", "b", "z"]
CLASSES = ["lo", "mid", "hi"]
RESUME_STEPS = 2  # what each test adds to the golden model_dir
# Against the golden file: TF 2.15 itself reproduces it (measured: to the bit); TF 2.21
# measured the same to 1e-6 here, and 1e-4 leaves room for another CPU's kernels.
GOLDEN_RTOL = 1e-6 if tf.__version__.startswith("2.15.") else 1e-4


def assert_same(mine, ref, rtol, path="") -> None:
    """Equal structure, keys and strings; floats within ``rtol``."""
    if isinstance(ref, dict):
        assert sorted(mine) == sorted(ref), path
        for key in ref:
            assert_same(mine[key], ref[key], rtol, f"{path}/{key}")
    elif isinstance(ref, list):
        assert len(mine) == len(ref), path
        for i, (a, b) in enumerate(zip(mine, ref, strict=True)):
            assert_same(a, b, rtol, f"{path}[{i}]")
    elif isinstance(ref, float) or isinstance(mine, float):
        np.testing.assert_allclose(mine, ref, rtol=rtol, atol=1e-7, err_msg=path)
    else:
        assert mine == ref, path


def library(name: str):
    """``(estimator module, Keras 2 legacy optimizers)`` of ``real`` or ``ours``."""
    if name == "real":
        return tf.estimator, tf.keras.optimizers.legacy
    if name != "ours":
        raise ValueError(f"unknown library {name!r}: real or ours")
    from tf1compat_init import estimator
    from tf1compat_init.estimator._keras2 import keras2

    return estimator, keras2().optimizers.legacy


# -- data --------------------------------------------------------------------------------


def data() -> dict:
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, size=(N, 3)).astype("float32")
    c = np.array([[VOCAB[i % 3]] for i in range(N)])
    c[5, 0] = "oov"  # out of vocabulary: a zero embedding
    w = rng.uniform(0.5, 2, size=(N, 1)).astype("float32")
    score = x[:, 0] - x[:, 1] + (c[:, 0] == "a")
    return {
        "x": x,
        "c": c,
        "w": w,
        "binary": (score > 0.3).astype("int64").reshape(-1, 1),
        "multi": np.array([[CLASSES[int(i)]] for i in np.digitize(score, [-0.3, 0.6])]),
        "regression": np.stack([score, x[:, 2] * 2], 1).astype("float32"),
    }


def columns(kind: str = "emb") -> list:
    fc = tf.feature_column
    cat = fc.categorical_column_with_vocabulary_list("c", VOCAB)
    x = fc.numeric_column("x", shape=(3,))
    if kind == "indicator":
        return [x, fc.indicator_column(cat)]
    return [x, fc.embedding_column(cat, 2)]


def input_fn(label: str, repeat: bool = True):
    def fn():
        d = data()
        features = {"x": d["x"], "c": d["c"], "w": d["w"]}
        ds = tf.data.Dataset.from_tensor_slices((features, d[label])).batch(BATCH)
        return ds.repeat() if repeat else ds

    return fn


def predict_input_fn():
    d = data()
    features = {"x": d["x"][:BATCH], "c": d["c"][:BATCH], "w": d["w"][:BATCH]}
    return tf.data.Dataset.from_tensor_slices(features).batch(BATCH)


def examples() -> list[bytes]:
    """The first rows as serialized tf.Examples (``w`` left out: serving needs no weight)."""
    d = data()
    out = []
    for i in range(BATCH):
        feature = {
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=d["x"][i].tolist())),
            "c": tf.train.Feature(bytes_list=tf.train.BytesList(value=[d["c"][i, 0].encode()])),
        }
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)))
    return [e.SerializeToString() for e in out]


# -- scenarios ---------------------------------------------------------------------------


def config(lib, **kwargs):
    session = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
    )
    return lib.RunConfig(
        tf_random_seed=SEED, save_summary_steps=1, session_config=session, **kwargs
    )


def make(name: str, lib, legacy, model_dir: str, warm_dir: str | None = None):
    """``(estimator, label key, what to run)`` of scenario ``name``."""
    cfg = config(lib)
    if name == "binary":
        est = lib.DNNClassifier([4, 3], columns(), model_dir=model_dir, config=cfg)
        return est, "binary", {"export": True}
    if name == "multi":
        est = lib.DNNClassifier(
            hidden_units=[5],
            feature_columns=columns(),
            model_dir=model_dir,
            n_classes=3,
            weight_column="w",
            label_vocabulary=CLASSES,
            optimizer="Adam",
            activation_fn=tf.nn.tanh,
            dropout=0.25,
            batch_norm=True,
            config=config(lib, save_checkpoints_steps=2),
        )
        return est, "multi", {"export": True}
    if name == "regressor":
        est = lib.DNNRegressor(
            [4],
            columns("indicator"),
            model_dir=model_dir,
            label_dimension=2,
            weight_column=tf.feature_column.numeric_column("w"),
            optimizer=lambda: legacy.SGD(learning_rate=0.05),
            loss_reduction=tf.losses.Reduction.SUM,
            config=cfg,
        )
        return est, "regression", {"export": True}
    if name == "estimator":
        est = lib.DNNEstimator(
            head=lib.MultiClassHead(3, label_vocabulary=CLASSES),
            hidden_units=[3, 3],
            feature_columns=columns(),
            model_dir=model_dir,
            optimizer=legacy.RMSprop(learning_rate=0.01),
            config=cfg,
        )
        # An optimizer instance serves one train call: the next one fails in TF 2.15 too.
        return est, "multi", {"one_call": True}
    if name == "warm_path":
        est = lib.DNNClassifier(
            [4, 3],
            columns(),
            model_dir=model_dir,
            config=cfg,
            optimizer="SGD",
            warm_start_from=warm_dir,
        )
        return est, "binary", {}
    if name == "warm_settings":
        settings = lib.WarmStartSettings(warm_dir, vars_to_warm_start=".*hiddenlayer_0.*")
        est = lib.DNNClassifier(
            [4, 3], columns(), model_dir=model_dir, config=cfg, warm_start_from=settings
        )
        return est, "binary", {}
    raise ValueError(name)


SCENARIOS = ("binary", "multi", "regressor", "estimator", "warm_path", "warm_settings")


def plain(value):
    """JSON-able: arrays to lists, bytes to str, numpy scalars to Python."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def losses(model_dir: str) -> list:
    """``[(step, loss)]`` from the ``loss`` summaries of every train call, by step."""
    out = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "loss":
                    out[event.step] = value.simple_value
    return sorted(out.items())


def variables(model_dir: str) -> dict:
    return {name: shape for name, shape in tf.train.list_variables(model_dir)}


def values(model_dir: str) -> dict:
    reader = tf.train.load_checkpoint(model_dir)
    return {name: reader.get_tensor(name) for name in variables(model_dir)}


def serve_all(export_dir: str) -> dict:
    """``{signature: {output: value}}`` for the serialized :func:`examples`."""
    out = {}
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as sess:
        meta = tf.compat.v1.saved_model.load(sess, ["serve"], export_dir)
        for key, sig in sorted(meta.signature_def.items()):
            (input_info,) = sig.inputs.values()
            fetches = {k: v.name for k, v in sig.outputs.items()}
            out[key] = sess.run(fetches, {input_info.name: examples()})
            out[key]["method"] = sig.method_name
    return out


def run_scenario(
    name: str, lib_name: str, workdir: str, warm_dir: str | None = None, maker=None
) -> dict:
    """Trains (two calls: the second resumes), evaluates, predicts and serves one scenario.

    ``maker``: the scenarios' ``make`` (default: this module's).
    """
    lib, legacy = library(lib_name)
    model_dir = os.path.join(workdir, f"{lib_name}_{name}")
    est, label, todo = (maker or make)(name, lib, legacy, model_dir, warm_dir)
    if todo.get("one_call"):
        est.train(input_fn(label), steps=5)
    else:
        est.train(input_fn(label), steps=3)
        est.train(input_fn(label), max_steps=5)
    result = {
        "losses": losses(model_dir),
        "checkpoint_steps": sorted(
            int(p.rsplit("-", 1)[1])
            for p in tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths
        ),
        "variables": variables(model_dir),
        "values": values(model_dir),
        "evaluate": est.evaluate(input_fn(label, repeat=False)),
        "predict": list(est.predict(predict_input_fn)),
    }
    if todo.get("export"):
        spec = tf.feature_column.make_parse_example_spec(columns("indicator"))
        receiver = lib.export.build_parsing_serving_input_receiver_fn(spec)
        export_dir = est.export_saved_model(
            os.path.join(workdir, f"export_{lib_name}_{name}"), receiver
        )
        result["serve"] = serve_all(os.fsdecode(export_dir))
    return plain(result)


def run_all(
    lib_name: str, workdir: str, names=SCENARIOS, maker=None, warm_from: str = "binary"
) -> dict:
    out = {}
    for name in names:
        warm = None
        if name.startswith("warm"):
            warm = os.path.join(workdir, f"{lib_name}_{warm_from}")
        out[name] = run_scenario(name, lib_name, workdir, warm, maker)
    return out


def resume(lib_name: str, source: str, workdir: str, maker=None, scenario: str = "binary") -> dict:
    """Copies a trained ``model_dir`` of ``scenario`` and trains it on RESUME_STEPS steps."""
    lib, legacy = library(lib_name)
    model_dir = os.path.join(workdir, f"resume_{lib_name}")
    shutil.copytree(source, model_dir)
    before = variables(model_dir)
    start = int(tf.train.load_variable(model_dir, "global_step"))
    est, label, _ = (maker or make)(scenario, lib, legacy, model_dir)
    est.train(input_fn(label), steps=RESUME_STEPS)
    return plain(
        {
            "start": start,
            "losses": losses(model_dir),
            "variables_before": before,
            "variables": variables(model_dir),
            "values": values(model_dir),
            "evaluate": est.evaluate(input_fn(label, repeat=False)),
        }
    )


ESTIMATORS = ("DNNClassifier", "DNNRegressor", "DNNEstimator")


def signature(cls) -> list:
    """``[(parameter, default)]`` of a constructor; functions by name, no addresses."""
    import inspect

    out = []
    for p in inspect.signature(cls.__init__).parameters.values():
        default = p.default
        if default is inspect.Parameter.empty:
            default = "<required>"
        elif callable(default):
            default = f"<function {default.__name__}>"
        out.append([p.name, default])
    return out


def errors(lib_name: str, workdir: str) -> dict:
    """The messages of what a user gets wrong: v1 feature columns, non-dict features."""
    lib, _ = library(lib_name)
    out = {}
    with tf.Graph().as_default():
        cat = tf.compat.v1.feature_column.categorical_column_with_identity("i", 3)
        v1_columns = tf.compat.v1.feature_column.shared_embedding_columns([cat], 2)
    est = lib.DNNClassifier([2], v1_columns, model_dir=os.path.join(workdir, "v1"))
    try:
        est.train(input_fn("binary"), steps=1)
    except ValueError as err:
        out["v1_columns"] = str(err).split("\ntf1compat_init:")[0]
    est = lib.DNNClassifier([2], columns(), model_dir=os.path.join(workdir, "nodict"))

    def tensor_features():
        return tf.constant([[1.0, 2.0, 3.0]]), tf.constant([[1]])

    try:
        est.train(tensor_features, steps=1)
    except ValueError as err:
        out["features_not_dict"] = str(err).split("\ntf1compat_init:")[0]
    v1_dir = os.path.join(workdir, "v1")  # bad input writes nothing, not even the directory
    out["v1_columns_wrote"] = sorted(os.listdir(v1_dir)) if os.path.isdir(v1_dir) else None
    return out


def save_model_dir(source: str, destination: Path) -> None:
    """The latest checkpoint of ``source`` alone (no graph, no events) in ``destination``."""
    if destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    prefix = tf.train.latest_checkpoint(source)
    for path in glob.glob(prefix + ".*"):
        if not path.endswith(".meta"):  # the graph is rebuilt on resume; keep the file small
            shutil.copy(path, destination)
    (destination / "checkpoint").write_text(
        f'model_checkpoint_path: "{os.path.basename(prefix)}"\n'
        f'all_model_checkpoint_paths: "{os.path.basename(prefix)}"\n'
    )


def write_golden() -> None:
    assert tf.__version__.startswith("2.15."), "the golden files come from TF 2.15"
    workdir = tempfile.mkdtemp()
    runs = run_all("real", workdir)
    save_model_dir(os.path.join(workdir, "real_binary"), GOLDEN_MODEL)
    resumed = resume("real", str(GOLDEN_MODEL), workdir)
    GOLDEN.write_text(
        json.dumps(
            {
                "tf_version": tf.__version__,
                "signatures": {n: signature(getattr(tf.estimator, n)) for n in ESTIMATORS},
                "errors": errors("real", workdir),
                "runs": runs,
                "resume": resumed,
            },
            indent=1,
        )
        + "\n"
    )
    shutil.rmtree(workdir)


if __name__ == "__main__":
    if sys.argv[1:] == ["--golden"]:
        write_golden()
    elif sys.argv[1:2] == ["--resume"] and len(sys.argv) == 6:
        # --resume LIB SOURCE WORKDIR OUT.json: the other TensorFlow resumes a model_dir
        _, _, lib_name, source, work, out_path = sys.argv
        Path(out_path).write_text(json.dumps(resume(lib_name, source, work)))
    else:
        sys.exit(__doc__)
