"""Differential: ``tf.compat.v1.estimator``'s canned estimators against ``estimator.v1``.

Six models (v1 ``DNNClassifier`` with an embedding column and two hidden layers,
``DNNRegressor`` with Adam, dropout, batch norm and a weight column, ``DNNEstimator`` on a 3-class head with a label vocabulary,
weighted 3-class ``LinearClassifier``, ``BaselineRegressor``, ``DNNLinearCombinedClassifier``) each
resume a small ``model_dir`` that the real TF 2.15 estimator wrote
(tests/golden/estimator_v1/<model>/, one step from seeded random values), train 3 steps
fed by the library's own ``inputs.numpy_input_fn``, evaluate and predict; the DNN
classifier also exports a SavedModel. See tests/support/estimator_v1_models.py.

- TF 2.15 leg: the real ``tf.compat.v1.estimator`` and ours run here from the same
  model_dirs: the same checkpoint names and shapes (slots such as
  ``dnn/hiddenlayer_0/kernel/t_0/Adagrad``, Adam's ``dnn/head/beta1_power``), the same loss
  at every step, metrics and predictions (``rtol=1e-6``; measured: identical bits), the same
  signatures. The real one must also reproduce the committed golden file
  (``python tests/support/estimator_v1_models.py --golden`` on TF 2.15).
- TF 2.21 leg: ours resumes the TF 2.15 model_dirs and must give the golden numbers
  (``rtol=1e-4``), names, shapes and signatures.
"""

import json
import shutil

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support import estimator_v1_models as models  # noqa: E402

RTOL_SAME_PROCESS = 1e-6
RTOL_GOLDEN_TF215 = 1e-6
RTOL_TF221 = 1e-4
HAS_REAL = hasattr(tf, "estimator") and hasattr(tf.compat.v1, "estimator")


def golden() -> dict:
    return json.loads(models.GOLDEN.read_text())


def _flat(losses: list) -> list:
    """The LOSSES collection at each step (unreduced ones included), as one list."""
    return [float(v) for _, step in losses for value in step for v in np.ravel(value)]


def assert_same_run(mine: dict, ref: dict, rtol: float) -> None:
    assert mine.keys() == ref.keys()
    assert mine["variables"] == ref["variables"]
    assert mine.get("signatures") == ref.get("signatures")
    assert [s for s, _ in mine["losses"]] == [s for s, _ in ref["losses"]]
    np.testing.assert_allclose(_flat(mine["losses"]), _flat(ref["losses"]), rtol=rtol, atol=0)
    assert mine["metrics"].keys() == ref["metrics"].keys()
    for name, value in ref["metrics"].items():
        np.testing.assert_allclose(mine["metrics"][name], value, rtol=rtol, atol=1e-7, err_msg=name)
    assert mine["predictions"].keys() == ref["predictions"].keys()
    for key, value in ref["predictions"].items():
        if isinstance(np.ravel(value)[0], str):
            assert mine["predictions"][key] == value, key
        else:
            np.testing.assert_allclose(
                mine["predictions"][key], value, rtol=rtol, atol=1e-7, err_msg=key
            )


def test_golden_file_is_v1_estimators_resumed():
    g = golden()
    assert g["tf_version"].startswith("2.15")
    runs = g["runs"]
    assert set(runs) == set(models.MODELS)
    for model, r in runs.items():
        # resumed from model.ckpt-1: steps 1..3, then evaluated at step 4
        assert [s for s, _ in r["losses"]] == [1, 2, 3], model
        assert r["metrics"]["global_step"] == 4
        assert len({json.dumps(v) for _, v in r["losses"]}) == 3, model  # it trains
        assert (models.GOLDEN_DIRS / model / "checkpoint").is_file()
    names = {m: {n for n, _ in r["variables"]} for m, r in runs.items()}
    # v1 optimizers: slots of partitioned variables named as TF 1.x named them
    assert "dnn/hiddenlayer_1/kernel/t_0/Adagrad" in names["dnn_classifier"]
    assert {"dnn/head/beta1_power", "dnn/hiddenlayer_0/batchnorm_0/moving_mean"} <= names[
        "dnn_regressor"
    ]
    assert "linear/linear_model/c/weights/part_0/Ftrl_1" in names["linear_classifier"]
    assert {"baseline/bias", "baseline/bias/Ftrl"} <= names["baseline_regressor"]
    assert {"dnn/logits/kernel/Adagrad", "linear/linear_model/x/weights/Ftrl"} <= names[
        "dnn_linear_classifier"
    ]
    assert set(runs["dnn_classifier"]["signatures"]) == {
        "classification",
        "predict",
        "regression",
        "serving_default",
    }
    assert runs["dnn_estimator"]["predictions"]["all_classes"][0] == ["lo", "mid", "hi"]


# -- TF 2.15 leg: the real tf.compat.v1.estimator, here -----------------------------------


@pytest.fixture(scope="module")
def tf215_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("v1")
    return root, {
        (lib, model): models.run(lib, model, models.GOLDEN_DIRS / model, root)
        for model in models.MODELS
        for lib in ("real", "ours")
    }


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.compat.v1.estimator")
@pytest.mark.parametrize("model", models.MODELS)
def test_ours_equals_tf_compat_v1_estimator_on_tf215(tf215_runs, model):
    runs = tf215_runs[1]
    assert_same_run(runs["ours", model], runs["real", model], RTOL_SAME_PROCESS)


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.compat.v1.estimator")
@pytest.mark.parametrize("model", ["dnn_classifier", "linear_classifier"])
def test_tf_compat_v1_estimator_resumes_our_model_dirs(tf215_runs, model, tmp_path):
    # The model_dirs both wrote above (from the same start) hold the same values: the real
    # estimator trains on from ours exactly as from its own.
    root = tf215_runs[0]
    losses = {}
    for lib in ("real", "ours"):
        shutil.copytree(root / f"{lib}_{model}", tmp_path / lib)
        losses[lib] = models.train_losses("real", model, tmp_path / lib, steps=2)
    assert [s for s, _ in losses["ours"]] == [4, 5]
    assert losses["ours"] == losses["real"]


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.compat.v1.estimator")
@pytest.mark.parametrize("model", models.MODELS)
def test_tf_compat_v1_estimator_reproduces_the_golden_file(tf215_runs, model):
    assert_same_run(tf215_runs[1]["real", model], golden()["runs"][model], RTOL_GOLDEN_TF215)


# -- TF 2.21 leg: ours resumes the model_dirs TF 2.15 wrote ---------------------------------


@pytest.mark.tf221
@pytest.mark.tf_keras
@pytest.mark.parametrize("model", models.MODELS)
def test_ours_on_tf221_resumes_tf215_model_dirs(tmp_path, model):
    mine = models.run("ours", model, models.GOLDEN_DIRS / model, tmp_path)
    assert_same_run(mine, golden()["runs"][model], RTOL_TF221)


def _export_savedmodel_signatures(lib: str, root) -> dict:
    """``export_savedmodel`` (TF 1.x's name) of the DNN classifier resumed from the golden dir."""
    model_dir = root / f"{lib}_export_v1"
    shutil.copytree(models.GOLDEN_DIRS / "dnn_classifier", model_dir)
    cols = models.columns()
    est = models.library(lib).DNNClassifier(
        [4, 3], [cols["x"], cols["emb"]], model_dir=str(model_dir), config=models.run_config(lib)
    )
    spec = tf.compat.v1.feature_column.make_parse_example_spec([cols["x"], cols["emb"]])
    receiver = models.library(lib).export.build_parsing_serving_input_receiver_fn(spec)
    with pytest.raises(ValueError, match="An input_receiver_fn must be defined."):
        est.export_savedmodel(str(root / f"{lib}_exports"), None)
    return models._signatures(est.export_savedmodel(str(root / f"{lib}_exports"), receiver))


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.compat.v1.estimator")
def test_export_savedmodel_is_tf215s(tmp_path):
    ours = _export_savedmodel_signatures("ours", tmp_path)
    assert ours == _export_savedmodel_signatures("real", tmp_path)
    assert ours == golden()["runs"]["dnn_classifier"]["signatures"]


@pytest.mark.tf221
@pytest.mark.tf_keras
def test_export_savedmodel_on_tf221(tmp_path):
    ours = _export_savedmodel_signatures("ours", tmp_path)
    assert ours == golden()["runs"]["dnn_classifier"]["signatures"]


# -- both legs: the namespace and errors ----------------------------------------------------


def test_v1_namespace_is_tf_compat_v1_estimator():
    from tf1compat_init import estimator
    from tf1compat_init.estimator import v1

    assert v1.inputs.numpy_input_fn.__name__ == "numpy_input_fn"
    assert v1.RunConfig is estimator.RunConfig and v1.ModeKeys is estimator.ModeKeys
    assert v1.DNNClassifier.__module__ == "tf1compat_init.estimator.v1._dnn"
    assert issubclass(v1.LinearRegressor, v1.Estimator)
    assert issubclass(v1.Estimator, estimator.Estimator) and v1.Estimator is not estimator.Estimator
    assert not hasattr(estimator.Estimator(lambda features: None), "export_savedmodel")
    assert v1.tpu.TPUEstimator.__module__ == "tf1compat_init.estimator.v1.tpu._estimator"
    with pytest.raises(AttributeError):
        v1._no_such_name  # noqa: B018


def _build_errors(lib: str) -> dict:
    """The error (type, message) each bad argument gives, ``lib`` being real or ours."""
    est_v1 = models.library(lib)
    head = models.head_module(lib)
    cols = models.columns()
    features, labels = models.data()
    out = {}

    def catch(name, fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - recorded and compared
            out[name] = (type(e).__name__, str(e).split("\ntf1compat_init:")[0])
        else:
            out[name] = None

    def train(est, fn=None, y=labels["binary"]):
        fn = fn or est_v1.inputs.numpy_input_fn(features, y, batch_size=4, shuffle=False)
        est.train(fn, steps=1)

    catch("vocab_type", lambda: est_v1.DNNClassifier([2], [cols["x"]], label_vocabulary="ab"))
    catch(
        "vocab_type_3",
        lambda: est_v1.DNNClassifier([2], [cols["x"]], n_classes=3, label_vocabulary="ab"),
    )
    catch("reduction", lambda: est_v1.LinearRegressor([cols["x"]], loss_reduction="none"))
    catch("n_classes", lambda: head._multi_class_head_with_softmax_cross_entropy_loss(2))
    catch(
        "thresholds",
        lambda: head._binary_logistic_head_with_sigmoid_cross_entropy_loss(thresholds=[1.5]),
    )
    catch("loss_fn", lambda: head._regression_head(loss_fn=lambda labels, preds: labels))
    catch("dnn_linear_no_columns", lambda: est_v1.DNNLinearCombinedClassifier())
    catch("optimizer", lambda: train(est_v1.DNNClassifier([2], [cols["x"]], optimizer="Foo")))
    catch("features", lambda: train(est_v1.DNNClassifier([2], [cols["x"]]), lambda: (1.0, 1.0)))
    catch(
        "float_labels_3",
        lambda: train(
            est_v1.LinearClassifier([cols["x"]], n_classes=3), y=labels["reg"].astype(np.float32)
        ),
    )
    catch(
        "no_labels",
        lambda: train(
            est_v1.DNNRegressor([2], [cols["x"]]),
            est_v1.inputs.numpy_input_fn(features, batch_size=4, shuffle=False),
        ),
    )
    catch(
        "label_dim",
        lambda: train(est_v1.DNNRegressor([2], [cols["x"]], label_dimension=2), y=labels["reg"]),
    )
    return out


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.compat.v1.estimator")
def test_errors_are_tf215s_word_for_word():
    real, ours = _build_errors("real"), _build_errors("ours")
    assert all(v is not None for v in real.values()), real
    assert ours == real


def test_errors_raise_and_write_nothing(tmp_path):
    from tf1compat_init.estimator import v1

    errors = _build_errors("ours")
    assert errors["optimizer"] == (
        "ValueError",
        "Unsupported optimizer name: Foo. Supported names are: "
        "('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD')",
    )
    assert errors["vocab_type"][0] == "TypeError" and errors["vocab_type_3"][0] == "ValueError"
    assert errors["no_labels"][1].startswith("You must provide a labels Tensor. Given: None.")
    assert all(v is not None for v in errors.values()), errors
    # A bad optimizer is found in the first model_fn call: nothing is written.
    est = v1.DNNClassifier([2], [models.columns()["x"]], optimizer="Foo", model_dir=tmp_path)
    features, labels = models.data()
    with pytest.raises(ValueError, match="Unsupported optimizer name"):
        est.train(v1.inputs.numpy_input_fn(features, labels["binary"], shuffle=False), steps=1)
    assert list(tmp_path.iterdir()) == []
    shutil.rmtree(tmp_path)
