"""The DNNLinearCombined estimators, run the same way by ``tf.estimator`` (TF 2.15) and by ours.

Shared by tests/estimator/canned/test_canned_dnn_linear.py and run as a script::

    python tests/support/canned_dnn_linear.py --golden   # TF 2.15 only: rewrites the golden files

The data, the run (two train calls, evaluate, predict, served tf.Examples) and the
records are tests/support/canned_dnn.py's; here are the combined scenarios, the golden
``dnn_linear_tf215.json`` and a trained ``model_dir`` (``dnn_linear_tf215_model/``)
with what TF 2.15 did when it resumed it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

if not __package__:  # run as a script: `support` is a package of tests/
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf

from support import canned_dnn as base

GOLDEN = base.GOLDEN_DIR / "dnn_linear_tf215.json"
GOLDEN_MODEL = base.GOLDEN_DIR / "dnn_linear_tf215_model"
SCENARIOS = ("classifier", "regressor", "multi", "linear_only", "estimator", "warm")
ESTIMATORS = (
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedRegressor",
    "DNNLinearCombinedEstimator",
)


def wide() -> list:
    fc = tf.feature_column
    return [
        fc.categorical_column_with_vocabulary_list("c", base.VOCAB),
        fc.bucketized_column(fc.numeric_column("x", shape=(3,)), [-0.5, 0.0, 0.5]),
    ]


def make(name: str, lib, legacy, model_dir: str, warm_dir: str | None = None):
    """``(estimator, label key, what to run)`` of scenario ``name``."""
    cfg = base.config(lib)
    if name == "classifier":
        est = lib.DNNLinearCombinedClassifier(
            model_dir=model_dir,
            linear_feature_columns=wide(),
            dnn_feature_columns=base.columns(),
            dnn_hidden_units=[4, 3],
            config=cfg,
        )
        return est, "binary", {"export": True}
    if name == "regressor":
        est = lib.DNNLinearCombinedRegressor(
            model_dir=model_dir,
            linear_feature_columns=wide(),
            linear_optimizer="SGD",
            dnn_feature_columns=base.columns(),
            dnn_optimizer=lambda: legacy.Adam(learning_rate=0.01),
            dnn_hidden_units=[4],
            dnn_dropout=0.25,
            label_dimension=2,
            weight_column="w",
            batch_norm=True,
            linear_sparse_combiner="mean",
            config=base.config(lib, save_checkpoints_steps=2),
        )
        return est, "regression", {"export": True}
    if name == "multi":
        est = lib.DNNLinearCombinedClassifier(
            model_dir=model_dir,
            linear_feature_columns=wide(),
            dnn_feature_columns=base.columns("indicator"),
            dnn_hidden_units=[5],
            dnn_activation_fn=tf.nn.elu,
            n_classes=3,
            label_vocabulary=base.CLASSES,
            weight_column=tf.feature_column.numeric_column("w"),
            loss_reduction=tf.losses.Reduction.SUM,
            config=cfg,
        )
        return est, "multi", {}
    if name == "linear_only":
        # No DNN: the linear optimizer counts in the global step (no `iter` saved).
        est = lib.DNNLinearCombinedClassifier(
            model_dir=model_dir, linear_feature_columns=wide(), config=cfg
        )
        return est, "binary", {}
    if name == "estimator":
        est = lib.DNNLinearCombinedEstimator(
            head=lib.RegressionHead(label_dimension=2),
            model_dir=model_dir,
            dnn_feature_columns=base.columns(),
            dnn_hidden_units=[3],
            config=cfg,
        )
        return est, "regression", {}
    if name == "warm":
        settings = lib.WarmStartSettings(warm_dir, vars_to_warm_start=[".*dnn.*", ".*linear.*"])
        est = lib.DNNLinearCombinedClassifier(
            model_dir=model_dir,
            linear_feature_columns=wide(),
            dnn_feature_columns=base.columns(),
            dnn_hidden_units=[4, 3],
            config=cfg,
            warm_start_from=settings,
        )
        return est, "binary", {}
    raise ValueError(name)


def errors(lib_name: str, workdir: str) -> dict:
    """The messages of the combined estimators' own checks."""
    lib, _ = base.library(lib_name)
    out = {}
    try:
        lib.DNNLinearCombinedClassifier(model_dir=os.path.join(workdir, "none"))
    except ValueError as err:
        out["no_columns"] = str(err)
    est = lib.DNNLinearCombinedRegressor(
        model_dir=os.path.join(workdir, "units"), dnn_feature_columns=base.columns()
    )
    try:
        est.train(base.input_fn("regression"), steps=1)
    except ValueError as err:
        out["no_hidden_units"] = str(err)
    out["wrote"] = [d for d in ("none", "units") if os.path.exists(os.path.join(workdir, d))]
    return out


def run_all(lib_name: str, workdir: str, names=SCENARIOS) -> dict:
    return base.run_all(lib_name, workdir, names, maker=make, warm_from="classifier")


def resume(lib_name: str, source: str, workdir: str) -> dict:
    return base.resume(lib_name, source, workdir, maker=make, scenario="classifier")


def write_golden() -> None:
    assert tf.__version__.startswith("2.15."), "the golden files come from TF 2.15"
    workdir = tempfile.mkdtemp()
    runs = run_all("real", workdir)
    base.save_model_dir(os.path.join(workdir, "real_classifier"), GOLDEN_MODEL)
    resumed = resume("real", str(GOLDEN_MODEL), workdir)
    record = {
        "tf_version": tf.__version__,
        "signatures": {n: base.signature(getattr(tf.estimator, n)) for n in ESTIMATORS},
        "errors": errors("real", workdir),
        "runs": runs,
        "resume": resumed,
    }
    GOLDEN.write_text(json.dumps(record, indent=1) + "\n")
    shutil.rmtree(workdir)


if __name__ == "__main__":
    if sys.argv[1:] == ["--golden"]:
        write_golden()
    else:
        sys.exit(__doc__)
