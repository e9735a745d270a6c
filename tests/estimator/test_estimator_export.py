"""``Estimator.export_saved_model`` on its own (both legs): what tf.estimator 2.15 promises.

A SavedModel that TensorFlow's own ``tf.saved_model.load`` serves with the predictions
of ``predict()``; one signature per export output; the timestamped directory written
under ``temp-<timestamp>`` and renamed; ``as_text``, ``assets_extra``,
``checkpoint_path``; errors that leave nothing on disk. The comparison with the real
tf.estimator is in test_estimator_export_differential.py.
"""

import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support.estimator_export_models import (  # noqa: E402
    FakeClock,
    batched_predictions,
    examples,
    int_key_input_fn,
    int_key_receiver_fn,
    make_export_model_fn,
    parsing_receiver_fn,
    raw_receiver_fn,
    serve,
    signature_summary,
    table_model_fn,
    tree,
)
from support.estimator_models import X, dense, train_input_fn  # noqa: E402

import tf1compat_init.estimator as E  # noqa: E402
from tf1compat_init.estimator import _export as _estimator_export  # noqa: E402

CONFIG = dict(tf_random_seed=3, save_checkpoints_steps=3, log_step_count_steps=None)


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """Export names from a fake clock: no one-second waits between exports."""
    fake = FakeClock()
    monkeypatch.setattr(_estimator_export, "time", fake)
    return fake


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    ests = {}
    for outputs in ("default", "multi", "one"):
        est = E.Estimator(
            make_export_model_fn(E, outputs),
            str(root / outputs),
            E.RunConfig(**CONFIG),
            params={"lr": 0.05},
        )
        ests[outputs] = est.train(train_input_fn, steps=4)
    return ests


def test_export_serves_predict_results_with_tensorflow_loader(trained, tmp_path):
    est = trained["default"]
    base = tmp_path / "exports"
    out = est.export_saved_model(str(base), raw_receiver_fn(E))
    assert isinstance(out, bytes)
    assert os.listdir(base) == [os.path.basename(os.fsdecode(out))]
    assert os.path.basename(out).isdigit() and len(os.path.basename(out)) == 10
    assert tree(os.fsdecode(out)) == [
        "saved_model.pb",
        "variables/variables.data-00000-of-00001",
        "variables/variables.index",
    ]
    tags, sigs = signature_summary(os.fsdecode(out))
    assert tags == ["serve"] and list(sigs) == ["serving_default"]
    method, inputs, outputs = sigs["serving_default"]
    assert method == "tensorflow/serving/predict"
    assert inputs == {"x": (tf.float32.as_datatype_enum, (-1, 4), "Placeholder:0")}
    assert {k: v[:2] for k, v in outputs.items()} == {
        "y": (tf.float32.as_datatype_enum, (-1, 1)),
        "h0": (tf.float32.as_datatype_enum, (-1,)),
    }
    served = serve(out, x=X[:5])
    expected = batched_predictions(est)
    np.testing.assert_allclose(served["y"], expected["y"], rtol=1e-6)
    np.testing.assert_allclose(served["h0"], expected["h0"], rtol=1e-6)


def test_multi_head_signatures_for_parsing_and_raw_receivers(trained, tmp_path):
    est = trained["multi"]
    parsed = est.export_saved_model(str(tmp_path), parsing_receiver_fn(E))
    _, sigs = signature_summary(os.fsdecode(parsed))
    assert sorted(sigs) == ["classify", "regress", "serving_default"]
    assert sigs["classify"][0] == "tensorflow/serving/classify"
    assert set(sigs["classify"][2]) == {"classes", "scores"}
    assert sigs["regress"][0] == "tensorflow/serving/regress"
    assert list(sigs["serving_default"][1]) == ["examples"]
    batch = examples(X[:5])
    expected = batched_predictions(est)
    got = serve(parsed, examples=batch)
    np.testing.assert_allclose(got["y"], expected["y"], rtol=1e-6)
    regress = serve(parsed, "regress", inputs=batch)
    np.testing.assert_allclose(regress["outputs"], expected["y"][:, 0], rtol=1e-6)
    # Classify and Regress need one string input: a raw receiver serves predict only.
    raw = est.export_saved_model(str(tmp_path), raw_receiver_fn(E))
    assert sorted(signature_summary(os.fsdecode(raw))[1]) == ["serving_default"]


def test_single_output_is_also_the_default_signature(trained, tmp_path):
    out = trained["one"].export_saved_model(str(tmp_path), raw_receiver_fn(E))
    _, sigs = signature_summary(os.fsdecode(out))
    assert sorted(sigs) == ["only", "serving_default"]
    assert list(sigs["only"][2]) == ["output"]


def test_tensor_receiver_alternatives_as_text_assets_and_checkpoint_path(trained, tmp_path):
    est = trained["default"]
    asset = tmp_path / "vocab.txt"
    asset.write_text("a\nb\n")

    def receiver_fn():
        serialized = tf.compat.v1.placeholder(tf.string, [None], name="ex")
        parsed = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([4], tf.float32)})
        return E.export.ServingInputReceiver(
            parsed, serialized, receiver_tensors_alternatives={"raw": {"x": parsed["x"]}}
        )

    first = os.path.join(est.model_dir, "model.ckpt-3")
    out = est.export_saved_model(
        str(tmp_path / "e"),
        receiver_fn,
        assets_extra={"sub/vocab.txt": str(asset)},
        as_text=True,
        checkpoint_path=first,
    )
    files = tree(os.fsdecode(out))
    assert "saved_model.pbtxt" in files and "saved_model.pb" not in files
    assert "assets.extra/sub/vocab.txt" in files
    _, sigs = signature_summary(os.fsdecode(out))
    assert sorted(sigs) == ["raw:serving_default", "serving_default"]
    assert list(sigs["serving_default"][1]) == ["input"]
    got = serve(out, input=examples(X[:5]))
    np.testing.assert_allclose(got["y"], batched_predictions(est, first)["y"], rtol=1e-6)
    assert not np.allclose(got["y"], batched_predictions(est)["y"])

    def tensor_model_fn(features, mode):
        pred = dense(dense(features, 8, "hidden", tf.nn.relu), 1, "out")
        return E.EstimatorSpec(mode, predictions=pred)

    def tensor_receiver():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        return E.export.TensorServingInputReceiver(x, {"x": x})

    # No checkpoint of its own: exported from the warm-start checkpoint, as tf.estimator does.
    solo = E.Estimator(tensor_model_fn, str(tmp_path / "solo"), warm_start_from=first)
    out = solo.export_saved_model(str(tmp_path / "s"), tensor_receiver)
    got = serve(out, x=X[:5])
    np.testing.assert_allclose(got["output"], batched_predictions(est, first)["y"], rtol=1e-6)

    def other_model_fn(features, mode):
        w = tf.compat.v1.get_variable("w", [4, 1])
        return E.EstimatorSpec(mode, predictions=tf.matmul(features, w))

    other = E.Estimator(other_model_fn, str(tmp_path / "other"), warm_start_from=first)
    with pytest.raises(ValueError, match="Could not load all requested variables"):
        other.export_saved_model(str(tmp_path / "o"), tensor_receiver)
    assert not (tmp_path / "o").exists()  # the base directory it made is gone too


def test_existing_timestamp_is_skipped_and_ten_collisions_fail(
    trained, tmp_path, clock, monkeypatch
):
    est = trained["default"]
    taken = tmp_path / str(clock.now + 1)
    taken.mkdir()
    out = est.export_saved_model(str(tmp_path), raw_receiver_fn(E))
    assert int(os.path.basename(out)) == clock.now > int(taken.name)
    assert os.listdir(taken) == []

    class Stuck(FakeClock):
        def time(self):
            return float(self.now)

        def sleep(self, secs):
            pass

    monkeypatch.setattr(_estimator_export, "time", Stuck(int(taken.name)))
    with pytest.raises(RuntimeError, match="after 10 attempts"):
        est.export_saved_model(str(tmp_path), raw_receiver_fn(E))


def _spec_fn(export_outputs):
    def model_fn(features, mode):
        w = tf.compat.v1.get_variable("w", [4, 1])
        pred = tf.matmul(features["x"], w)
        return E.EstimatorSpec(mode, predictions={"y": pred}, export_outputs=export_outputs(pred))

    return model_fn


@pytest.mark.parametrize(
    "export_outputs, error, text",
    [
        (lambda p: [E.export.PredictOutput(p)], TypeError, "`export_outputs` must be dict"),
        (lambda p: {"a": p}, TypeError, "Values in `export_outputs` must be ExportOutput"),
        (
            lambda p: {"a": E.export.PredictOutput(p), "b": E.export.PredictOutput(p)},
            ValueError,
            "none of them are specified as the default",
        ),
        (lambda p: {"a": E.export.PredictOutput({1: p})}, ValueError, "key must be a string"),
        (lambda p: {"a": E.export.RegressionOutput(p > 0)}, ValueError, "must be a float32"),
    ],
)
def test_bad_export_outputs_fail_and_write_nothing(tmp_path, export_outputs, error, text):
    est = E.Estimator(_spec_fn(export_outputs), str(tmp_path / "m"))
    with tf.Graph().as_default():
        tf.compat.v1.get_variable("w", [4, 1])
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(s, str(tmp_path / "m" / "model.ckpt"))
    base = tmp_path / "exports"
    with pytest.raises(error, match=text):
        est.export_saved_model(str(base), raw_receiver_fn(E))
    assert not base.exists()


def test_receiver_and_checkpoint_errors_write_nothing(trained, tmp_path):
    est = trained["default"]
    base = tmp_path / "exports"
    with pytest.raises(ValueError, match="An input_receiver_fn must be defined"):
        est.export_saved_model(str(base), None)
    with pytest.raises(AttributeError, match="'dict' object has no attribute 'features'\n.*"):
        est.export_saved_model(str(base), lambda: {"x": tf.zeros([1, 4])})
    with pytest.raises(ValueError, match="feature x must be a Tensor"):
        est.export_saved_model(str(base), lambda: E.export.ServingInputReceiver({"x": 1}, {}))
    with pytest.raises(ValueError, match="receiver_tensors must be defined"):
        est.export_saved_model(
            str(base), lambda: E.export.ServingInputReceiver(tf.zeros([1]), None)
        )
    with pytest.raises(ValueError, match="No valid modes for exporting found"):
        est.experimental_export_all_saved_models(str(base), {})
    with pytest.raises(tf.errors.NotFoundError):
        est.export_saved_model(str(base), raw_receiver_fn(E), assets_extra={"a": "/no/such"})
    assert not base.exists()
    fresh = E.Estimator(make_export_model_fn(E), str(tmp_path / "fresh"), params={"lr": 1})
    with pytest.raises(ValueError, match="Couldn't find trained model at .*fresh"):
        fresh.export_saved_model(str(base), raw_receiver_fn(E))
    assert not base.exists()
    out = est.experimental_export_all_saved_models(
        str(base), {E.ModeKeys.PREDICT: raw_receiver_fn(E)}
    )
    assert os.listdir(base) == [os.path.basename(os.fsdecode(out))]


def test_asset_files_of_lookup_tables_are_exported_and_served(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("neg\npos\n")
    est = E.Estimator(
        make_export_model_fn(E, vocab=str(vocab)),
        str(tmp_path / "m"),
        E.RunConfig(**CONFIG),
        params={"lr": 0.05},
    ).train(train_input_fn, steps=2)
    out = est.export_saved_model(str(tmp_path / "e"), raw_receiver_fn(E))
    assert "assets/vocab.txt" in tree(os.fsdecode(out))
    expected = batched_predictions(est)
    vocab.unlink()  # the SavedModel serves from its own copy
    got = serve(out, x=X[:5])
    np.testing.assert_array_equal(got["id"], expected["id"])
    np.testing.assert_array_equal(got["id"], (got["y"][:, 0] > 0).astype("int64"))


def test_saveables_int_feature_keys_and_scalar_prediction(tmp_path):
    est = E.Estimator(table_model_fn(E), str(tmp_path / "m")).train(int_key_input_fn, steps=1)
    out = est.export_saved_model(str(tmp_path / "e"), int_key_receiver_fn(E))
    _, sigs = signature_summary(os.fsdecode(out))
    assert sigs["serving_default"][2]["output"][:2] == (tf.float32.as_datatype_enum, ())
    assert serve(out, x=np.array([1.0, 2.0], "float32"))["output"] == 30.0  # the table's value


def test_train_eval_and_predict_graphs_in_one_savedmodel(trained, tmp_path):
    est = trained["default"]
    sup = E.experimental.build_raw_supervised_input_receiver_fn(
        {"x": tf.zeros([1, 4])}, tf.zeros([1, 1])
    )
    fns = {E.ModeKeys.TRAIN: sup, E.ModeKeys.EVAL: sup, E.ModeKeys.PREDICT: raw_receiver_fn(E)}
    out = os.fsdecode(est.experimental_export_all_saved_models(str(tmp_path), fns))
    step = est.get_variable_value("global_step")
    served = serve(out, tags=["serve"], x=X[:4])["y"]
    with tf.Graph().as_default(), tf.compat.v1.Session() as s:
        meta = tf.compat.v1.saved_model.load(s, ["train"], out)
        sig = meta.signature_def["train"]
        assert sig.method_name == "tensorflow/supervised/training"
        assert sorted(sig.inputs) == ["label", "x"]
        assert set(sig.outputs) == {"loss", "metrics/mae/value", "metrics/mae/update_op"}
        (train_op,) = tf.compat.v1.get_collection("saved_model_train_op")
        feed = {sig.inputs["x"].name: X[:4], sig.inputs["label"].name: np.ones([4, 1])}
        s.run(train_op, feed)
        assert s.run(tf.compat.v1.train.get_global_step()) == step + 1
    with tf.Graph().as_default(), tf.compat.v1.Session() as s:
        meta = tf.compat.v1.saved_model.load(s, ["eval"], out)
        sig = meta.signature_def["eval"]
        get = s.graph.get_tensor_by_name
        feed = {get(sig.inputs["x"].name): X[:4], get(sig.inputs["label"].name): 0 * X[:4, :1]}
        s.run(get(sig.outputs["metrics/mae/update_op"].name), feed)
        mae = s.run(get(sig.outputs["metrics/mae/value"].name))
        np.testing.assert_allclose(mae, np.abs(served).mean(), rtol=1e-5)
    with pytest.raises(ValueError, match="Features and labels must have distinct keys"):
        E.experimental.build_raw_supervised_input_receiver_fn({"a": X}, {"a": X})
