"""tf1compat_init.estimator on its own: the tf.estimator semantics users rely on.

Runs on both legs (TF 2.21 and TF 2.15); the comparison with the real tf.estimator is
in test_estimator_differential.py.
"""

import logging
import os
from types import SimpleNamespace

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support.estimator_models import (  # noqa: E402
    EventHook,
    LossRecorder,
    X,
    Y,
    checkpoint_steps,
    dense,
    eval_input_fn,
    make_model_fn,
    make_pretrained,
    predict_input_fn,
    scalar_events,
    train_input_fn,
)

import tf1compat_init.estimator as E  # noqa: E402

KERAS3 = int(tf.__version__.split(".")[1]) >= 16 and os.environ.get("TF_USE_LEGACY_KERAS") != "1"


class Listener(tf.compat.v1.train.CheckpointSaverListener):
    def __init__(self):
        self.events = []

    def before_save(self, session, global_step_value):
        self.events.append(("before", int(global_step_value)))

    def after_save(self, session, global_step_value):
        self.events.append(("after", int(global_step_value)))


def config(**kw):
    base = dict(
        tf_random_seed=1,
        save_checkpoints_steps=5,
        save_summary_steps=5,
        log_step_count_steps=5,
        keep_checkpoint_max=2,
    )
    base.update(kw)
    return E.RunConfig(**base)


def forward(est, x):
    """The model's predictions in numpy, from the latest checkpoint's values."""
    v = est.get_variable_value
    h = np.maximum(x @ v("hidden/kernel") + v("hidden/bias"), 0)
    return h @ v("out/kernel") + v("out/bias"), h


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One estimator through train, resume, skip, evaluate, predict, train again."""
    model_dir = str(tmp_path_factory.mktemp("est") / "model")
    log, listener = [], Listener()
    est = E.Estimator(make_model_fn(E, hooks_log=log), model_dir, config(), params={"lr": 0.05})
    recs = [LossRecorder() for _ in range(4)]
    est.train(train_input_fn, steps=7, hooks=[recs[0]], saving_listeners=[listener])
    est.train(train_input_fn, steps=4, hooks=[recs[1]])
    est.train(train_input_fn, max_steps=11, hooks=[recs[2]])  # already there: skipped
    ckpts = checkpoint_steps(model_dir)
    files = sorted(os.listdir(model_dir))
    metrics = est.evaluate(eval_input_fn)
    metrics_one = est.evaluate(eval_input_fn, steps=1, name="one")
    metrics_at_7 = est.evaluate(
        eval_input_fn, checkpoint_path=os.path.join(model_dir, "model.ckpt-7")
    )
    expected_pred, expected_h = forward(est, X[:5])
    preds = list(est.predict(predict_input_fn))
    batches = list(est.predict(predict_input_fn, yield_single_examples=False))
    only_y = list(est.predict(predict_input_fn, predict_keys=["y"]))
    hooks_log = list(log)
    est.train(train_input_fn, max_steps=13, hooks=[recs[3]])
    return SimpleNamespace(**locals())


def test_mode_keys_and_public_names():
    assert (E.ModeKeys.TRAIN, E.ModeKeys.EVAL, E.ModeKeys.PREDICT) == ("train", "eval", "infer")
    assert {"Estimator", "EstimatorSpec", "ModeKeys", "RunConfig", "WarmStartSettings"} <= set(
        E.__all__
    )
    assert not hasattr(tf, "estimator") or tf.estimator.Estimator is not E.Estimator


def test_run_config_defaults_replace_and_errors():
    c = E.RunConfig()
    assert (c.save_checkpoints_secs, c.save_checkpoints_steps) == (600, None)
    assert (c.keep_checkpoint_max, c.log_step_count_steps, c.save_summary_steps) == (5, 100, 100)
    assert (c.is_chief, c.task_type, c.num_worker_replicas, c.master) == (True, "worker", 1, "")
    r = c.replace(save_checkpoints_steps=10, tf_random_seed=3)
    assert (r.save_checkpoints_steps, r.save_checkpoints_secs, r.tf_random_seed) == (10, None, 3)
    assert c.tf_random_seed is None  # replace copies
    both = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."
    with pytest.raises(ValueError, match=both):
        E.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    with pytest.raises(ValueError, match="Replacing master is not supported. Allowed properties"):
        c.replace(master="grpc://x")
    with pytest.raises(ValueError, match="^tf_random_seed must be integer.$"):
        E.RunConfig(tf_random_seed=1.5)
    with pytest.raises(ValueError, match="^model_dir should be non-empty.$"):
        E.RunConfig(model_dir="")
    with pytest.raises(TypeError, match=r"train_distribute=...\) takes a tf.distribute"):
        E.RunConfig(train_distribute=object())


def test_estimator_spec_checks_like_tf_estimator():
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError, match="^Missing train_op.$"):
            E.EstimatorSpec(E.ModeKeys.TRAIN, loss=loss)
        with pytest.raises(ValueError, match="^Missing loss.$"):
            E.EstimatorSpec(E.ModeKeys.EVAL)
        with pytest.raises(ValueError, match="^Missing predictions.$"):
            E.EstimatorSpec(E.ModeKeys.PREDICT)
        with pytest.raises(ValueError, match="^Loss must be scalar, given: "):
            E.EstimatorSpec(E.ModeKeys.EVAL, loss=tf.zeros([2]))
        with pytest.raises(TypeError, match="^All hooks must be SessionRunHook instances, given"):
            E.EstimatorSpec(E.ModeKeys.EVAL, loss=loss, evaluation_hooks=[object()])
        with pytest.raises(TypeError, match="^Values of eval_metric_ops must be"):
            E.EstimatorSpec(E.ModeKeys.EVAL, loss=loss, eval_metric_ops={"m": loss})
        spec = E.EstimatorSpec(E.ModeKeys.EVAL, loss=tf.zeros([1]))
        assert spec.loss.shape == () and spec.predictions == {} and spec.training_hooks == ()
        assert isinstance(spec.scaffold, tf.compat.v1.train.Scaffold)
        with pytest.raises(ValueError, match="^mode of EstimatorSpec cannot be changed.$"):
            spec._replace(mode=E.ModeKeys.TRAIN)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='loss with "Const:0" must be from the default graph'):
            E.EstimatorSpec(E.ModeKeys.EVAL, loss=loss)


def test_constructor_errors_and_properties(tmp_path, caplog):
    def fn(features, labels, mode):
        raise AssertionError("not called")

    with pytest.raises(ValueError, match="^model_fn must be provided to Estimator.$"):
        E.Estimator(None, str(tmp_path))
    with pytest.raises(ValueError, match="does not include params argument, but params"):
        E.Estimator(fn, str(tmp_path), params={"a": 1})
    with pytest.raises(ValueError, match=r"has following not expected args: \['extra'\]"):
        E.Estimator(lambda features, extra: None, str(tmp_path))
    with pytest.raises(ValueError, match="^config must be an instance of `RunConfig`"):
        E.Estimator(fn, str(tmp_path), config={"model_dir": "x"})
    with pytest.raises(ValueError, match="`model_dir` are set both in constructor and `RunConfig`"):
        E.Estimator(fn, str(tmp_path), config=E.RunConfig(model_dir=str(tmp_path / "other")))
    with pytest.raises(ValueError, match="^warm_start_from must be a string or a WarmStartSetting"):
        E.Estimator(fn, str(tmp_path), warm_start_from=3)
    with pytest.raises(ValueError, match="^`ckpt_to_initialize_from` MUST be set in WarmStart"):
        E.WarmStartSettings(None)
    # Vocabulary infos are checked when the graph exists (train), not here.
    vocab = E.WarmStartSettings(str(tmp_path), var_name_to_vocab_info={"v": object()})
    assert E.Estimator(fn, str(tmp_path), warm_start_from=vocab)

    class Overriding(E.Estimator):
        def train(self, *a, **k):
            return self

    with pytest.raises(ValueError, match="Subclasses of Estimator cannot override members"):
        Overriding(fn, str(tmp_path))

    caplog.set_level(logging.INFO, logger="tensorflow")
    est = E.Estimator(fn, config=E.RunConfig(tf_random_seed=2))
    assert os.path.isdir(est.model_dir)
    assert f"Using temporary folder as model directory: {est.model_dir}" in caplog.text
    assert est.config.tf_random_seed == 2 and est.config is not est.config
    assert est.params == {} and est.latest_checkpoint() is None
    assert est.config.session_config.allow_soft_placement
    assert est.eval_dir() == os.path.join(est.model_dir, "eval")
    assert est.eval_dir("x") == os.path.join(est.model_dir, "eval_x")
    with pytest.raises(ValueError, match="^Could not find trained model in model_dir: "):
        est.get_variable_names()


def test_train_argument_errors(tmp_path):
    est = E.Estimator(make_model_fn(E), str(tmp_path), config(), params={"lr": 0.1})
    with pytest.raises(ValueError, match="^Can not provide both steps and max_steps.$"):
        est.train(train_input_fn, steps=1, max_steps=1)
    with pytest.raises(ValueError, match="^Must specify steps > 0, given: 0$"):
        est.train(train_input_fn, steps=0)
    with pytest.raises(ValueError, match="^Must specify max_steps > 0, given: -1$"):
        est.train(train_input_fn, max_steps=-1)
    with pytest.raises(TypeError, match="^Hooks must be a SessionRunHook, given: 3$"):
        est.train(train_input_fn, steps=1, hooks=[3])
    with pytest.raises(TypeError, match="^saving_listeners must be a list of CheckpointSaverList"):
        est.train(train_input_fn, steps=1, saving_listeners=[3])
    with pytest.raises(ValueError, match="^Must specify steps > 0, given: -2$"):
        est.evaluate(eval_input_fn, steps=-2)
    with pytest.raises(TypeError, match="^Hooks must be a SessionRunHook"):
        next(est.predict(predict_input_fn, hooks=["x"]))
    no_saver = E.Estimator(
        make_model_fn(E),
        str(tmp_path / "n"),
        E.RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None),
        params={"lr": 0.1},
    )
    with pytest.raises(ValueError, match="^There should be a CheckpointSaverHook to use saving_l"):
        no_saver.train(train_input_fn, steps=1, saving_listeners=[Listener()])


def test_steps_are_relative_max_steps_absolute_and_resume(run):
    assert [s for s, _ in run.recs[0].losses] == list(range(0, 7))
    assert [s for s, _ in run.recs[1].losses] == list(range(7, 11))  # resumed at 7
    assert run.recs[2].losses == []  # max_steps=11 reached: skipped
    assert [s for s, _ in run.recs[3].losses] == [11, 12]
    assert run.est.get_variable_value("global_step") == 13


def test_checkpoints_named_and_kept_like_tf_estimator(run):
    assert run.ckpts == [7, 11]  # keep_checkpoint_max=2 of 0, 5, 7 | 7 (resumed), 11
    assert {"model.ckpt-11.index", "model.ckpt-11.meta", "checkpoint", "graph.pbtxt"} <= set(
        run.files
    )
    assert "model.ckpt-5.index" not in run.files
    assert run.est.latest_checkpoint() == os.path.join(run.model_dir, "model.ckpt-13")
    names = run.est.get_variable_names()
    assert {"global_step", "hidden/kernel", "out/bias", "out/bias/Adam", "beta1_power"} <= set(
        names
    )
    assert run.listener.events[:2] == [("before", 0), ("after", 0)]
    assert run.listener.events[-1] == ("after", 7)


def test_summaries_for_tensorboard(run):
    events = scalar_events(run.model_dir)
    recorded = dict(run.recs[0].losses + run.recs[1].losses + run.recs[3].losses)
    # A summary is tagged with the global step after its training step; every 5 steps
    # and at the first step of each train() call.
    assert [s for s, _ in events["loss"]] == [1, 6, 8, 12]
    for step, value in events["loss"]:
        assert value == pytest.approx(recorded[step - 1], rel=1e-5)
    assert "global_step/sec" in events
    evals = scalar_events(run.est.eval_dir())
    assert evals["mae"] == [
        (11, pytest.approx(float(run.metrics["mae"]), rel=1e-6)),
        (7, pytest.approx(float(run.metrics_at_7["mae"]), rel=1e-6)),
    ]
    assert [s for s, _ in scalar_events(run.est.eval_dir("one"))["loss"]] == [11]


def test_evaluate_metrics(run):
    assert set(run.metrics) == {"loss", "mae", "pred_mean", "global_step"}
    assert run.metrics["global_step"] == 11
    # The weights at step 11 are gone from the checkpoint list's end; recompute them from
    # the metrics instead: 3 equal batches, so the mean of batch losses is the full MSE.
    assert run.metrics["loss"] > 0 and run.metrics["mae"] > 0
    assert run.metrics_one["global_step"] == 11
    assert run.metrics_one["loss"] != pytest.approx(run.metrics["loss"])
    assert run.metrics_at_7["global_step"] == 7
    assert run.metrics_at_7["loss"] != pytest.approx(run.metrics["loss"])


def test_predict_single_batched_and_keys(run):
    assert len(run.preds) == 5 and set(run.preds[0]) == {"y", "h0"}
    got = np.stack([p["y"] for p in run.preds])
    np.testing.assert_allclose(got, run.expected_pred, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([p["h0"] for p in run.preds], run.expected_h[:, 0], atol=1e-6)
    assert [b["y"].shape for b in run.batches] == [(2, 1), (2, 1), (1, 1)]
    assert [set(p) for p in run.only_y] == [{"y"}] * 5


def test_predict_key_errors(run):
    with pytest.raises(ValueError, match="^Expected to run at least one output from"):
        next(run.est.predict(predict_input_fn, predict_keys=["nope"]))


def test_spec_hooks_run_where_tf_estimator_runs_them(run):
    log = run.hooks_log
    train_begins = [e for e in log if e == ("train", "begin")]
    assert len(train_begins) == 2  # two train calls ran, the skipped one built nothing
    assert log.count(("chief", "begin")) == 2
    assert ("train", "end:7") in log and ("train", "end:4") in log
    assert log.count(("eval", "begin")) == 3 and ("eval", "end:1") in log
    assert log.count(("predict", "begin")) == 3


def test_evaluate_before_training_initializes(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="tensorflow")
    est = E.Estimator(make_model_fn(E), str(tmp_path), config(), params={"lr": 0.1})
    metrics = est.evaluate(eval_input_fn, steps=1)
    assert metrics["global_step"] == 0
    assert "Could not find trained model in model_dir" in caplog.text


def test_messages_go_through_tensorflows_logging(tmp_path, monkeypatch):
    """As tf.estimator 2.15: the Estimator logs with ``tf.compat.v1.logging`` (the
    ``tensorflow`` logger), looked up at each call, so TF's own tests that patch it (here
    estimator_test's ``test_warn_if_no_queue_runner``) and ``set_verbosity`` still work."""
    est = E.Estimator(make_model_fn(E), str(tmp_path), config(), params={"lr": 0.1})
    est.train(train_input_fn, steps=1)
    warnings, infos = [], []
    monkeypatch.setattr(tf.compat.v1.logging, "warning", lambda m, *a, **k: warnings.append(m % a))
    monkeypatch.setattr(tf.compat.v1.logging, "info", lambda m, *a, **k: infos.append(m % a))

    def no_dataset():
        return {"x": tf.constant([[1.0, 2.0, 3.0, 4.0]])}

    next(est.predict(no_dataset))
    assert any(
        "Input graph does not use tf.data.Dataset or contain a QueueRunner" in w for w in warnings
    ), warnings
    assert "Calling model_fn." in infos and "Done calling model_fn." in infos, infos


def test_labels_missing_names_the_fix(tmp_path):
    def tutorial_input_fn():  # the tutorial's mistake: labels inside the features dict
        return tf.data.Dataset.from_tensor_slices({"x": X, "y": Y}).batch(8)

    est = E.Estimator(make_model_fn(E), str(tmp_path), config(), params={"lr": 0.1})
    with pytest.raises(ValueError) as info:
        est.train(tutorial_input_fn, steps=1)
    message = str(info.value)
    assert message.startswith("Argument `labels` must not be None.\n")
    assert "keys ['x', 'y']" in message
    assert 'dataset.map(lambda d: ({"x": d["x"]}, d["y"]))' in message
    assert est.latest_checkpoint() is None


def test_model_fn_without_labels_argument(tmp_path):
    def model_fn(features, mode):
        raise AssertionError("not reached")

    est = E.Estimator(model_fn, str(tmp_path))
    with pytest.raises(ValueError, match="^model_fn does not take labels, but input_fn returns"):
        est.train(train_input_fn, steps=1)


def test_model_fn_must_return_spec(tmp_path):
    est = E.Estimator(lambda features, labels: {"loss": 1}, str(tmp_path))
    with pytest.raises(ValueError, match="^model_fn should return an EstimatorSpec.$"):
        est.train(train_input_fn, steps=1)


def test_input_fn_pair_of_tensors_and_declared_args(tmp_path):
    seen = {}

    def input_fn(mode, params, config):
        seen.update(mode=mode, params=params, seed=config.tf_random_seed)
        return tf.constant(X[:8]), tf.constant(Y[:8])  # plain tensors: a fixed batch

    def model_fn(features, labels, config):  # no mode, no params: neither is passed
        pred = dense(features, 1, "lin")
        loss = tf.reduce_mean(tf.square(pred - labels))
        step = tf.compat.v1.train.get_global_step()
        op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        return E.EstimatorSpec(E.ModeKeys.TRAIN, loss=loss, train_op=op)

    est = E.Estimator(model_fn, str(tmp_path), config(), params=None)
    est.train(input_fn, steps=3)
    assert seen == {"mode": "train", "params": {}, "seed": 1}
    assert est.get_variable_value("global_step") == 3
    with tf.Graph().as_default():
        tf.compat.v1.train.create_global_step()
        spec = est.model_fn(tf.constant(X[:2]), tf.constant(Y[:2]), E.ModeKeys.TRAIN, est.config)
        assert isinstance(spec, E.EstimatorSpec)


def test_nan_loss_stops_training(tmp_path):
    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        loss = w / w
        step = tf.compat.v1.train.get_global_step()
        return E.EstimatorSpec(mode, loss=loss, train_op=tf.compat.v1.assign_add(step, 1))

    est = E.Estimator(model_fn, str(tmp_path), config())
    with pytest.raises(tf.compat.v1.train.NanLossDuringTrainingError):
        est.train(train_input_fn, steps=2)


def test_user_checkpoint_saver_elsewhere_replaces_default_and_warns(tmp_path, caplog):
    elsewhere = str(tmp_path / "elsewhere")
    est = E.Estimator(make_model_fn(E), str(tmp_path / "m"), config(), params={"lr": 0.1})
    saver = tf.compat.v1.train.CheckpointSaverHook(elsewhere, save_steps=2)
    est.train(train_input_fn, steps=3, hooks=[saver])
    assert est.latest_checkpoint() is None  # tf.estimator's trap, kept
    assert checkpoint_steps(elsewhere)[-1] == 3
    assert "replaces the Estimator's own checkpointing" in caplog.text
    assert elsewhere in caplog.text
    rec = LossRecorder()
    est.train(train_input_fn, steps=1, hooks=[rec])
    assert rec.losses[0][0] == 0  # nothing to resume from: starts again at step 0


def test_hooks_reexported_and_unknown_names():
    assert E.LoggingTensorHook is tf.compat.v1.train.LoggingTensorHook
    assert E.SessionRunHook is tf.compat.v1.train.SessionRunHook
    assert E.VocabInfo is tf.compat.v1.train.VocabInfo
    assert not hasattr(E, "no_such_name") and not hasattr(E.experimental, "no_such_name")
    assert E.DNNClassifier.__module__ == "tf1compat_init.estimator.canned._dnn"  # issue 23
    assert hasattr(E, "LinearRegressor")


@pytest.mark.skipif(not KERAS3, reason="Keras 3 behaviour (TF >= 2.16 without tf_keras)")
@pytest.mark.tf221
def test_keras3_layers_and_metrics_get_advice(tmp_path):
    def layers_model_fn(features, labels, mode):
        tf.compat.v1.layers.dense(features["x"], 1)

    est = E.Estimator(layers_model_fn, str(tmp_path))
    with pytest.raises(AttributeError) as info:
        est.train(train_input_fn, steps=1)
    assert str(info.value).startswith("`dense` is not available with Keras 3.\n")
    assert "TF_USE_LEGACY_KERAS=1" in str(info.value)
    with tf.Graph().as_default():
        m = tf.keras.metrics.Mean()
        m.update_state(tf.zeros([2]))
        with pytest.raises(TypeError, match="Keras 3 metrics do not work in graph mode"):
            E.EstimatorSpec(E.ModeKeys.EVAL, loss=tf.constant(0.0), eval_metric_ops={"m": m})


def test_keras_metric_objects_in_eval_metric_ops(tmp_path):
    if KERAS3:  # graph-mode Keras metrics need Keras 2: run this test again under tf_keras
        import importlib.util
        import subprocess
        import sys

        assert importlib.util.find_spec("tf_keras"), "the TF 2.21 leg installs tf_keras"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"{__file__}::test_keras_metric_objects_in_eval_metric_ops",
            ],
            env={**os.environ, "TF_USE_LEGACY_KERAS": "1"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr
        return
    keras = tf.keras

    def model_fn(features, labels, mode):
        pred = dense(features["x"], 1, "lin")
        loss = tf.reduce_mean(tf.square(pred - labels))
        metric = keras.metrics.MeanAbsoluteError()
        metric.update_state(labels, pred)
        return E.EstimatorSpec(mode, loss=loss, eval_metric_ops={"mae": metric})

    est = E.Estimator(model_fn, str(tmp_path), config())
    metrics = est.evaluate(eval_input_fn)
    assert set(metrics) == {"loss", "mae", "global_step"} and metrics["mae"] > 0


def test_spec_hook_objects_are_reused_not_copied(tmp_path):
    log = []
    hook = EventHook("user", log)
    est = E.Estimator(make_model_fn(E), str(tmp_path), config(), params={"lr": 0.1})
    est.train(train_input_fn, steps=2, hooks=[hook])
    assert log == [("user", "begin"), ("user", "session"), ("user", "end:2")]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pretrained")
    prefix, values = make_pretrained(directory)
    return SimpleNamespace(dir=str(directory), prefix=prefix, values=values)


def test_warm_start_from_settings_only_without_checkpoint(tmp_path, pretrained):
    settings = E.WarmStartSettings(pretrained.dir, vars_to_warm_start="hidden.*")
    est = E.Estimator(
        make_model_fn(E), str(tmp_path), config(), params={"lr": 0.05}, warm_start_from=settings
    )
    est.train(train_input_fn, steps=2)
    ckpt0 = str(tmp_path / "model.ckpt-0")
    for name in ("hidden/kernel", "hidden/bias"):
        np.testing.assert_array_equal(tf.train.load_variable(ckpt0, name), pretrained.values[name])
    assert not np.allclose(
        tf.train.load_variable(ckpt0, "out/kernel"), pretrained.values["out/kernel"]
    )
    assert tf.train.load_variable(ckpt0, "global_step") == 0  # trainable variables only
    at_2 = est.get_variable_value("hidden/bias")
    rec = LossRecorder()
    est.train(train_input_fn, steps=1, hooks=[rec])  # resumes from model_dir: no warm start
    assert rec.losses[0][0] == 2
    np.testing.assert_array_equal(
        tf.train.load_variable(str(tmp_path / "model.ckpt-2"), "hidden/bias"), at_2
    )


def test_warm_start_from_saved_model_dir_and_rename(tmp_path, pretrained):
    # A SavedModel directory warm-starts from its variables/variables checkpoint.
    variables = tmp_path / "saved_model" / "variables"
    variables.mkdir(parents=True)
    for f in os.listdir(pretrained.dir):
        if f.startswith(os.path.basename(pretrained.prefix) + "."):
            suffix = f[len(os.path.basename(pretrained.prefix)) :]
            (variables / ("variables" + suffix)).write_bytes(
                open(os.path.join(pretrained.dir, f), "rb").read()
            )
    est = E.Estimator(
        make_model_fn(E),
        str(tmp_path / "m1"),
        config(),
        params={"lr": 0.05},
        warm_start_from=str(tmp_path / "saved_model"),
    )
    metrics = est.evaluate(eval_input_fn, steps=1)  # no checkpoint: warm-started values
    v = pretrained.values
    h = np.maximum(X[:16] @ v["hidden/kernel"] + v["hidden/bias"], 0)
    expected = np.mean((h @ v["out/kernel"] + v["out/bias"] - Y[:16]) ** 2)
    assert metrics["loss"] == pytest.approx(expected, rel=1e-5)
    assert metrics["global_step"] == 0
    renamed = E.WarmStartSettings(
        pretrained.dir,
        ["hidden/kernel[^/]"],
        var_name_to_prev_var_name={"hidden/kernel": "old_hidden/kernel"},
    )
    est = E.Estimator(
        make_model_fn(E),
        str(tmp_path / "m2"),
        config(),
        params={"lr": 0.05},
        warm_start_from=renamed,
    )
    first = next(est.predict(predict_input_fn))  # no checkpoint: predict warm-starts too
    old_kernel = pretrained.values["old_hidden/kernel"]
    assert first["h0"] == pytest.approx(max(float(X[0] @ old_kernel[:, 0]), 0.0), rel=1e-5)
    est.train(train_input_fn, steps=1)
    np.testing.assert_array_equal(
        tf.train.load_variable(str(tmp_path / "m2" / "model.ckpt-0"), "hidden/kernel"),
        pretrained.values["old_hidden/kernel"],
    )


def test_warm_start_that_matches_nothing_fails_before_training(tmp_path, pretrained):
    settings = E.WarmStartSettings(pretrained.dir, vars_to_warm_start="encoder.*")
    est = E.Estimator(
        make_model_fn(E), str(tmp_path), config(), params={"lr": 0.05}, warm_start_from=settings
    )
    with pytest.raises(ValueError, match="encoder"):
        est.train(train_input_fn, steps=1)
    assert est.latest_checkpoint() is None


@pytest.mark.parametrize("task_type", ["evaluator", "ps"])
def test_train_on_an_evaluator_or_ps_config_points_to_train_and_evaluate(tmp_path, task_type):
    """As tf.estimator 2.15 (estimator_test's test_config_should_not_be_evaluator_or_ps):
    refused before the input_fn or model_fn is called."""

    class FakeConfig(E.RunConfig):
        @property
        def task_type(self):
            return task_type

    def never(*args):
        raise AssertionError("called")

    est = E.Estimator(lambda features, labels, mode: never(), str(tmp_path), FakeConfig())
    with pytest.raises(ValueError, match="Please use tf.estimator.train_and_evaluate"):
        est.train(never, steps=1)
    if hasattr(tf, "estimator"):  # TF 2.15: the same refusal
        real = tf.estimator.Estimator(
            lambda features, labels, mode: None,
            str(tmp_path / "real"),
            type(
                "RealFake", (tf.estimator.RunConfig,), {"task_type": property(lambda s: task_type)}
            )(),
        )
        with pytest.raises(ValueError, match="Please use tf.estimator.train_and_evaluate"):
            real.train(never, steps=1)
