"""The parts of tf.estimator this runner leaves out, and what to use instead.

Each raises ``NotImplementedError`` with one sentence of advice. Names looked up on
the module raise an error that is also an ``AttributeError``, so ``hasattr`` and
``getattr(module, name, default)`` keep working.
"""

from __future__ import annotations

from typing import NoReturn

__all__ = ["LEFT_OUT", "NO_EXPORT", "NO_TRAIN_AND_EVALUATE", "LeftOutError", "missing_name"]

NO_EXPORT = (
    "{name} is not supported by tf1compat_init.estimator: SavedModel export of a model_fn "
    "graph needs tf.estimator's export machinery. Train here, then rebuild the model in "
    "Keras or as a tf.Module, warm-start it from the checkpoint (tf1compat_init.v1 / "
    "tf1compat_init.keras) and use tf.saved_model.save; or export with tf.estimator on "
    "TensorFlow 2.15 from this model_dir."
)

NO_TRAIN_AND_EVALUATE = (
    "train_and_evaluate is not supported by tf1compat_init.estimator (it exists to run "
    "distributed TF_CONFIG jobs). Locally, alternate the two calls yourself: "
    "`while step < max_steps: est.train(train_input_fn, steps=n); "
    "est.evaluate(eval_input_fn)`."
)


class LeftOutError(AttributeError, NotImplementedError):
    """A tf.estimator name this runner leaves out (``hasattr`` still answers False)."""


CANNED = (
    "canned estimators and heads are not part of tf1compat_init.estimator: write the model "
    "as a model_fn for Estimator (or as a Keras model)"
)
LEFT_OUT = {
    **dict.fromkeys(
        [
            "BaselineClassifier",
            "BaselineEstimator",
            "BaselineRegressor",
            "DNNClassifier",
            "DNNEstimator",
            "DNNLinearCombinedClassifier",
            "DNNLinearCombinedEstimator",
            "DNNLinearCombinedRegressor",
            "DNNRegressor",
            "LinearClassifier",
            "LinearEstimator",
            "LinearRegressor",
            "Head",
            "BinaryClassHead",
            "LogisticRegressionHead",
            "MultiClassHead",
            "MultiHead",
            "MultiLabelHead",
            "PoissonRegressionHead",
            "RegressionHead",
            "add_metrics",
            "classifier_parse_example_spec",
            "regressor_parse_example_spec",
        ],
        CANNED,
    ),
    **dict.fromkeys(
        ["Exporter", "BestExporter", "FinalExporter", "LatestExporter", "export"],
        "SavedModel export is left out: rebuild the model in Keras or as a tf.Module, "
        "warm-start it from the checkpoint and use tf.saved_model.save",
    ),
    **dict.fromkeys(
        ["TrainSpec", "EvalSpec"],
        "train_and_evaluate is left out: alternate est.train(...) and est.evaluate(...)",
    ),
    "experimental": "tf.estimator.experimental is left out",
}


def missing_name(module: str, name: str) -> NoReturn:
    """Raises for ``module.name``: advice for a left-out tf.estimator name, else AttributeError."""
    if name in LEFT_OUT:
        raise LeftOutError(
            f"tf.estimator.{name} is not provided by tf1compat_init.estimator: {LEFT_OUT[name]}."
        )
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
