"""Differential: export_saved_model and train_and_evaluate, real tf.estimator (TF 2.15) vs ours.

Same model_fn, data, seeds and calls through both; compared: the SavedModel's tags,
signature keys, methods, input / output names, dtypes and shapes, its file layout and
directory names, what TensorFlow's loader serves from it, the evaluations and exports
of train_and_evaluate, and the error type and text for misuse (ours may add advice
after it; ours leaves nothing on disk).
"""

import os
import re

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytestmark = [
    pytest.mark.tf215,
    pytest.mark.skipif(not hasattr(tf, "estimator"), reason="needs the real tf.estimator"),
]

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
from support.estimator_models import X, eval_input_fn, scalar_events, train_input_fn  # noqa: E402

import tf1compat_init.estimator as ours  # noqa: E402
from tf1compat_init.estimator import _export as _estimator_export  # noqa: E402

LIBS = {"real": getattr(tf, "estimator", None), "ours": ours}


@pytest.fixture(autouse=True)
def clocks(monkeypatch):
    """The same fake clock for both export-directory namers: equal names, no waiting."""
    from tensorflow.python.saved_model.model_utils import export_utils

    monkeypatch.setattr(export_utils, "time", FakeClock())
    monkeypatch.setattr(_estimator_export, "time", FakeClock())


def make_estimator(lib, model_dir, outputs="default", vocab=None, **config):
    base = dict(tf_random_seed=11, save_checkpoints_steps=4, log_step_count_steps=None)
    base.update(config)
    return lib.Estimator(
        make_export_model_fn(lib, outputs, vocab if outputs == "table" else None),
        model_dir,
        lib.RunConfig(**base),
        params={"lr": 0.05},
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("exp_diff")
    asset = root / "vocab.txt"
    asset.write_text("neg\npos\n")
    out = {}
    for name, lib in LIBS.items():
        with pytest.MonkeyPatch.context() as mp:
            from tensorflow.python.saved_model.model_utils import export_utils

            mp.setattr(export_utils, "time", FakeClock())
            mp.setattr(_estimator_export, "time", FakeClock())
            res = {}
            for outputs in ("default", "multi", "one", "table"):
                est = make_estimator(lib, str(root / name / outputs), outputs, str(asset))
                est.train(train_input_fn, steps=6)
                base = str(root / name / outputs / "export")
                res[outputs] = dict(
                    est=est,
                    base=base,
                    raw=est.export_saved_model(base, raw_receiver_fn(lib)),
                    parsed=est.export_saved_model(base, parsing_receiver_fn(lib)),
                    extra=est.export_saved_model(
                        base,
                        raw_receiver_fn(lib),
                        assets_extra={"d/v.txt": str(asset)},
                        as_text=True,
                        checkpoint_path=os.path.join(est.model_dir, "model.ckpt-4"),
                    ),
                )
            out[name] = res
    return out


@pytest.mark.parametrize("outputs", ["default", "multi", "one", "table"])
@pytest.mark.parametrize("kind", ["raw", "parsed", "extra"])
def test_same_savedmodel_signatures_layout_and_names(exported, outputs, kind):
    real, mine = exported["real"][outputs], exported["ours"][outputs]
    assert os.path.basename(real[kind]) == os.path.basename(mine[kind])
    assert sorted(os.listdir(real["base"])) == sorted(os.listdir(mine["base"]))
    assert tree(os.fsdecode(real[kind])) == tree(os.fsdecode(mine[kind]))
    assert signature_summary(os.fsdecode(real[kind])) == signature_summary(os.fsdecode(mine[kind]))


@pytest.mark.parametrize("outputs", ["default", "multi", "table"])
def test_same_served_predictions_as_predict(exported, outputs):
    served = {}
    for name in LIBS:
        res = exported[name][outputs]
        expected = batched_predictions(res["est"])
        raw = serve(res["raw"], x=X[:5])
        parsed = serve(res["parsed"], examples=examples(X[:5]))
        old = batched_predictions(res["est"], os.path.join(res["est"].model_dir, "model.ckpt-4"))
        extra = serve(res["extra"], x=X[:5])
        for got in (raw, parsed):
            np.testing.assert_allclose(got["y"], expected["y"], rtol=1e-6)
        np.testing.assert_allclose(extra["y"], old["y"], rtol=1e-6)
        served[name] = raw
    for key in served["real"]:
        np.testing.assert_allclose(served["ours"][key], served["real"][key], rtol=1e-6)


def _export_outputs_fn(lib, make):
    def model_fn(features, mode):
        w = tf.compat.v1.get_variable("w", [4, 1])
        pred = tf.matmul(features["x"], w)
        return lib.EstimatorSpec(mode, predictions={"y": pred}, export_outputs=make(lib, pred))

    return model_fn


def _saved_w(model_dir):
    with tf.Graph().as_default():
        tf.compat.v1.get_variable("w", [4, 1])
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(s, os.path.join(model_dir, "model.ckpt"))


def _export_with(make, receiver=raw_receiver_fn, **kw):
    def run(lib, d):
        _saved_w(d)
        est = lib.Estimator(_export_outputs_fn(lib, make), d)
        return est.export_saved_model(os.path.join(d, "exp"), receiver(lib), **kw)

    return run


def _trained_export(receiver, **kw):
    def run(lib, d):
        est = make_estimator(lib, d).train(train_input_fn, steps=1)
        return est.export_saved_model(os.path.join(d, "exp"), receiver(lib), **kw)

    return run


def _receiver(make):
    return lambda lib: lambda: make(lib)


def _t_and_e(train_kw=None, eval_kw=None, est=True):
    def run(lib, d):
        e = make_estimator(lib, d) if est else object()
        train = lib.TrainSpec(train_input_fn, **(train_kw or {"max_steps": 1}))
        evals = lib.EvalSpec(eval_input_fn, **(eval_kw or {}))
        return lib.train_and_evaluate(e, train, evals)

    return run


MISUSES = {
    "export_outputs list": _export_with(lambda lib, p: [lib.export.PredictOutput(p)]),
    "export_outputs values": _export_with(lambda lib, p: {"a": p}),
    "export_outputs no default": _export_with(
        lambda lib, p: {"a": lib.export.PredictOutput(p), "b": lib.export.PredictOutput(p)}
    ),
    "prediction key": _export_with(lambda lib, p: {"a": lib.export.PredictOutput({1: p})}),
    "regression dtype": _export_with(lambda lib, p: {"a": lib.export.RegressionOutput(p > 0)}),
    "classification empty": _export_with(lambda lib, p: {"a": lib.export.ClassificationOutput()}),
    "classification classes": _export_with(
        lambda lib, p: {"a": lib.export.ClassificationOutput(classes=p)}
    ),
    "receiver fn None": _trained_export(lambda lib: None),
    "receiver returns dict": _trained_export(_receiver(lambda lib: {"x": tf.zeros([1, 4])})),
    "receiver returns None": _trained_export(_receiver(lambda lib: None)),
    "receiver feature type": _trained_export(
        _receiver(lambda lib: lib.export.ServingInputReceiver({"x": 1}, tf.zeros([1])))
    ),
    "receiver feature key": _trained_export(
        _receiver(lambda lib: lib.export.ServingInputReceiver({(1,): tf.zeros([1])}, {}))
    ),
    "receiver tensors None": _trained_export(
        _receiver(lambda lib: lib.export.ServingInputReceiver(tf.zeros([1]), None))
    ),
    "receiver alternatives": _trained_export(
        _receiver(lambda lib: lib.export.ServingInputReceiver(tf.zeros([1]), tf.zeros([1]), [1]))
    ),
    "tensor receiver None": _trained_export(
        _receiver(lambda lib: lib.export.TensorServingInputReceiver(None, tf.zeros([1])))
    ),
    "missing asset": _trained_export(raw_receiver_fn, assets_extra={"a": "/no/such/file"}),
    "no checkpoint": lambda lib, d: make_estimator(lib, d).export_saved_model(
        os.path.join(d, "exp"), raw_receiver_fn(lib)
    ),
    "no valid modes": lambda lib, d: (
        make_estimator(lib, d)
        .train(train_input_fn, steps=1)
        .experimental_export_all_saved_models(os.path.join(d, "exp"), {})
    ),
    "variables missing": lambda lib, d: lib.Estimator(
        _export_outputs_fn(lib, lambda lib, p: None), d, warm_start_from=_pretrained(d)
    ).export_saved_model(os.path.join(d, "exp"), raw_receiver_fn(lib)),
    "eval steps zero": lambda lib, d: lib.EvalSpec(eval_input_fn, steps=0),
    "eval name": lambda lib, d: lib.EvalSpec(eval_input_fn, name=3),
    "eval throttle": lambda lib, d: lib.EvalSpec(eval_input_fn, throttle_secs=-1),
    "eval start delay": lambda lib, d: lib.EvalSpec(eval_input_fn, start_delay_secs=-1),
    "eval input_fn": lambda lib, d: lib.EvalSpec(None),
    "eval hooks": lambda lib, d: lib.EvalSpec(eval_input_fn, hooks=[1]),
    "eval exporters": lambda lib, d: lib.EvalSpec(eval_input_fn, exporters=[1]),
    "eval exporter names": lambda lib, d: lib.EvalSpec(
        eval_input_fn,
        exporters=[lib.FinalExporter("a", None), lib.LatestExporter("a", None)],
    ),
    "exporter empty name": lambda lib, d: lib.EvalSpec(
        eval_input_fn, exporters=lib.FinalExporter("", None)
    ),
    "train max_steps": lambda lib, d: lib.TrainSpec(train_input_fn, max_steps=0),
    "train listeners": lambda lib, d: lib.TrainSpec(train_input_fn, saving_listeners=[1]),
    "latest keep": lambda lib, d: lib.LatestExporter("a", None, exports_to_keep=0),
    "best keep": lambda lib, d: lib.BestExporter(exports_to_keep=-1),
    "best compare None": lambda lib, d: lib.BestExporter(compare_fn=None),
    "best compare args": lambda lib, d: lib.BestExporter(compare_fn=_bad_compare),
    "best compare extra": lambda lib, d: lib.BestExporter(compare_fn=_extra_compare),
    "t_and_e eval_spec": lambda lib, d: lib.train_and_evaluate(
        make_estimator(lib, d), lib.TrainSpec(train_input_fn), None
    ),
    "t_and_e train_spec": lambda lib, d: lib.train_and_evaluate(
        make_estimator(lib, d), None, lib.EvalSpec(eval_input_fn)
    ),
    "t_and_e estimator": _t_and_e(est=False),
    "supervised overlap": lambda lib, d: lib.experimental.build_raw_supervised_input_receiver_fn(
        {"label": tf.zeros([1])}, tf.zeros([1])
    ),
    "supervised labels None": _trained_export(
        lambda lib: lib.experimental.build_raw_supervised_input_receiver_fn(tf.zeros([1]), None),
        experimental_mode="train",
    ),
    "export_savedmodel": lambda lib, d: make_estimator(lib, d).export_savedmodel,
}


def _bad_compare(best_eval_result, current):
    return True


def _extra_compare(best_eval_result, current_eval_result, other):
    return True


def _pretrained(d):
    other = os.path.join(d, "pretrained")
    make_estimator(ours, other).train(train_input_fn, steps=1)
    return other


@pytest.mark.parametrize("case", sorted(MISUSES))
def test_same_error_type_and_text_then_our_advice_nothing_written(case, tmp_path):
    errors = {}
    for name, lib in LIBS.items():
        with pytest.raises(Exception) as info:
            MISUSES[case](lib, str(tmp_path / name))
        errors[name] = info.value
    real, mine = errors["real"], errors["ours"]
    assert isinstance(mine, type(real))

    def norm(e, name):  # paths and object addresses differ between the two runs
        text = str(e).replace(str(tmp_path / name), "<dir>")
        text = re.sub(r"<[\w.]+\.(\w+) object", r"<\1 object", text)
        text = text.split("Full Traceback:")[0]  # the stack frames differ
        return re.sub(r" at 0x[0-9a-f]+", "", text)

    text, mine_text = norm(real, "real"), norm(mine, "ours")
    assert mine_text == text or mine_text.startswith(text + "\n")
    exp = tmp_path / "ours" / "exp"
    assert not exp.exists()


def t_and_e_scenario(lib, root):
    est = make_estimator(lib, str(root / "model"))
    calls = []

    def compare(best_eval_result, current_eval_result):
        calls.append(round(float(current_eval_result["loss"]), 5))
        return best_eval_result["loss"] > current_eval_result["loss"]

    exporters = [
        lib.LatestExporter("latest", raw_receiver_fn(lib), exports_to_keep=2),
        lib.FinalExporter("final", parsing_receiver_fn(lib)),
        lib.BestExporter("best", raw_receiver_fn(lib), compare_fn=compare, exports_to_keep=2),
    ]
    metrics, results = lib.train_and_evaluate(
        est,
        lib.TrainSpec(train_input_fn, max_steps=13),
        lib.EvalSpec(eval_input_fn, steps=3, exporters=exporters, throttle_secs=0, name="v"),
    )
    again = lib.train_and_evaluate(
        est, lib.TrainSpec(train_input_fn, max_steps=13), lib.EvalSpec(eval_input_fn)
    )
    export_root = os.path.join(est.model_dir, "export")
    return dict(
        metrics=metrics,
        results=[r if r is None else os.path.relpath(os.fsdecode(r), export_root) for r in results],
        again=again,
        events=scalar_events(est.eval_dir("v")),
        exports={
            name: {
                v: tree(os.path.join(export_root, name, v))
                for v in os.listdir(os.path.join(export_root, name))
            }
            for name in sorted(os.listdir(export_root))
        },
        calls=calls,
        listed=sorted(f for f in os.listdir(est.model_dir) if not f.startswith("events.")),
    )


def test_same_train_and_evaluate_evaluations_and_exports(tmp_path):
    out = {name: t_and_e_scenario(lib, tmp_path / name) for name, lib in LIBS.items()}
    real, mine = out["real"], out["ours"]
    assert set(real["metrics"]) == set(mine["metrics"])
    for key, value in real["metrics"].items():
        np.testing.assert_allclose(mine["metrics"][key], value, rtol=1e-5)
    assert real["results"] == mine["results"] and real["again"] == mine["again"] == (None, None)
    assert real["events"].keys() == mine["events"].keys()
    for tag, series in real["events"].items():
        assert [s for s, _ in series] == [s for s, _ in mine["events"][tag]]
        np.testing.assert_allclose([v for _, v in mine["events"][tag]], [v for _, v in series])
    assert real["exports"] == mine["exports"]
    assert real["calls"] == mine["calls"] and real["listed"] == mine["listed"]


def test_taken_export_name_is_skipped_alike(tmp_path):
    names = {}
    for name, lib in LIBS.items():
        est = make_estimator(lib, str(tmp_path / name)).train(train_input_fn, steps=1)
        base = tmp_path / name / "exp"
        (base / str(FakeClock().now + 1)).mkdir(parents=True)
        names[name] = os.path.basename(est.export_saved_model(str(base), raw_receiver_fn(lib)))
        assert sorted(os.listdir(base)) == ["1700000001", names[name].decode()]
    assert names["real"] == names["ours"]


def test_tf_estimator_model_dir_resumes_and_exports_here(tmp_path):
    real = make_estimator(LIBS["real"], str(tmp_path)).train(train_input_fn, steps=5)
    expected = batched_predictions(real)
    mine = make_estimator(ours, str(tmp_path))
    np.testing.assert_allclose(batched_predictions(mine)["y"], expected["y"], rtol=1e-6)
    served = serve(mine.export_saved_model(str(tmp_path / "e"), raw_receiver_fn(ours)), x=X[:5])
    np.testing.assert_allclose(served["y"], expected["y"], rtol=1e-6)
    metrics, _ = ours.train_and_evaluate(
        mine, ours.TrainSpec(train_input_fn, max_steps=7), ours.EvalSpec(eval_input_fn, steps=1)
    )
    assert metrics["global_step"] == 7
    with pytest.raises(TypeError, match="tf1compat_init: this is tf.estimator's TrainSpec"):
        ours.train_and_evaluate(
            mine, LIBS["real"].TrainSpec(train_input_fn), ours.EvalSpec(eval_input_fn)
        )


def test_same_export_of_saveables_int_feature_keys_and_scalar_prediction(tmp_path):
    out = {}
    for name, lib in LIBS.items():
        est = lib.Estimator(table_model_fn(lib), str(tmp_path / name))
        est.train(int_key_input_fn, steps=1)
        export = est.export_saved_model(str(tmp_path / name / "e"), int_key_receiver_fn(lib))
        out[name] = (
            os.path.basename(export),
            tree(os.fsdecode(export)),
            signature_summary(os.fsdecode(export)),
            serve(export, x=np.array([1.0, 2.0], "float32")),
        )
    assert out["real"][:3] == out["ours"][:3]
    assert out["ours"][3]["output"] == out["real"][3]["output"] == 30.0


def all_meta_graphs(export_dir):
    """``{tags: (signatures with tensor names and dtypes, collection keys)}`` of a SavedModel."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())

    def infos(m):
        return sorted((k, v.name, v.dtype) for k, v in m.items())

    return {
        tuple(m.meta_info_def.tags): (
            {
                k: (s.method_name, infos(s.inputs), infos(s.outputs))
                for k, s in m.signature_def.items()
            },
            sorted(m.collection_def),
        )
        for m in proto.meta_graphs
    }


def test_same_train_eval_predict_export(tmp_path):
    out = {}
    for name, lib in LIBS.items():
        est = make_estimator(lib, str(tmp_path / name)).train(train_input_fn, steps=2)
        sup = lib.experimental.build_raw_supervised_input_receiver_fn(
            {"x": tf.zeros([1, 4])}, tf.zeros([1, 1])
        )
        fns = {lib.ModeKeys.TRAIN: sup, lib.ModeKeys.EVAL: sup}
        both = est.experimental_export_all_saved_models(str(tmp_path / name / "a"), fns)
        fns[lib.ModeKeys.PREDICT] = raw_receiver_fn(lib)
        three = est.experimental_export_all_saved_models(str(tmp_path / name / "b"), fns)
        train_only = est.export_saved_model(
            str(tmp_path / name / "c"), sup, experimental_mode=lib.ModeKeys.TRAIN
        )
        out[name] = [
            (tree(os.fsdecode(d)), all_meta_graphs(os.fsdecode(d)))
            for d in (both, three, train_only)
        ]
    assert out["real"] == out["ours"]
    assert [sorted(x[1]) for x in out["ours"]] == [
        [("eval",), ("train",)],
        [("eval",), ("serve",), ("train",)],
        [("train",)],
    ]
