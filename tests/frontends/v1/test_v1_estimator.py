"""CheckpointInitHook inside the real tf.estimator.Estimator (TF 2.15 leg), and inside
tf1compat_init.estimator's Estimator-compatible runner (both legs).

``train(hooks=...)``, ``EstimatorSpec(training_hooks=...)``, and a resume from
``model_dir`` that must restore the run's own checkpoint, not the pretrained one. The
``model_fn`` uses ``get_variable`` + ``matmul`` and a ``train_op`` that only counts
steps, so every value can be compared exactly.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support.v1_helpers import read_checkpoint, rewrite_latest, save_checkpoint  # noqa: E402

from tf1compat_init import CheckpointNotFoundError  # noqa: E402
from tf1compat_init import v1 as tv1  # noqa: E402

V1 = tf.compat.v1


def _real_estimator():
    try:
        return tf.estimator if tf.estimator.Estimator is not None else None
    except (AttributeError, ImportError):  # gone from TF 2.16 on
        return None


def _our_estimator():
    from tf1compat_init import estimator

    return estimator


@pytest.fixture(
    params=[
        pytest.param(
            _real_estimator,
            id="tf.estimator",
            marks=[
                pytest.mark.tf215,
                pytest.mark.skipif(
                    _real_estimator() is None, reason="tf.estimator exists only up to TF 2.15"
                ),
            ],
        ),
        pytest.param(_our_estimator, id="tf1compat_init.estimator"),
    ]
)
def est_api(request):
    return request.param()


KERNEL = np.arange(8, dtype=np.float32).reshape(4, 2) / 8
BIAS = np.array([0.5, -0.5], np.float32)
MAP = {"pretrained/": "net/"}


@pytest.fixture(scope="module")
def pre(tmp_path_factory):
    d = tmp_path_factory.mktemp("pretrained")
    return save_checkpoint(
        str(d / "model.ckpt"), {"pretrained/kernel": KERNEL, "pretrained/bias": BIAS}
    )


def make_model_fn(api):
    return lambda features, labels, mode, params: model_fn(api, features, labels, mode, params)


def model_fn(api, features, labels, mode, params):
    with V1.variable_scope("net"):
        kernel = V1.get_variable("kernel", [4, 2], initializer=V1.zeros_initializer())
        bias = V1.get_variable("bias", [2], initializer=V1.zeros_initializer())
    logits = tf.matmul(features, kernel) + bias
    loss = tf.reduce_mean(tf.square(logits - tf.cast(labels, tf.float32)))
    global_step = V1.train.get_or_create_global_step()
    train_op = V1.assign_add(global_step, 1)  # weights stay as initialized or restored
    hooks = [tv1.CheckpointInitHook(params["spec_hook"], MAP)] if params.get("spec_hook") else []
    return api.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks)


def input_fn():
    x = np.ones((8, 4), np.float32)
    y = np.zeros((8, 2), np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(4)


def _estimator(api, model_dir, **params):
    config = api.RunConfig(save_checkpoints_steps=2, log_step_count_steps=None)
    return api.Estimator(make_model_fn(api), model_dir=str(model_dir), config=config, params=params)


def _assert_pretrained(values):
    np.testing.assert_array_equal(values["net/kernel"], KERNEL)
    np.testing.assert_array_equal(values["net/bias"], BIAS)


def test_train_hooks_warm_start_then_resume(est_api, pre, tmp_path):
    est = _estimator(est_api, tmp_path)
    hook = tv1.CheckpointInitHook(pre, MAP)
    est.train(
        input_fn,
        hooks=[
            hook,
            V1.train.LoggingTensorHook({"step": "global_step:0"}, every_n_iter=1),
            V1.train.StopAtStepHook(last_step=3),
        ],
    )
    assert hook.report.loaded == {"net/bias": "pretrained/bias", "net/kernel": "pretrained/kernel"}
    _assert_pretrained(read_checkpoint(str(tmp_path / "model.ckpt-0")))
    _assert_pretrained(read_checkpoint(str(tmp_path / "model.ckpt-3")))

    rewrite_latest(str(tmp_path), {"net/bias": [9.0, 9.0]})  # only model_dir's ckpt has it
    est.train(input_fn, hooks=[tv1.CheckpointInitHook(pre, MAP)], steps=2)
    assert est.get_variable_value("global_step") == 5
    np.testing.assert_array_equal(est.get_variable_value("net/bias"), [9.0, 9.0])
    np.testing.assert_array_equal(est.get_variable_value("net/kernel"), KERNEL)


def test_estimator_spec_training_hooks(est_api, pre, tmp_path):
    est = _estimator(est_api, tmp_path, spec_hook=pre)
    est.train(input_fn, steps=2)
    _assert_pretrained(read_checkpoint(str(tmp_path / "model.ckpt-0")))
    rewrite_latest(str(tmp_path), {"net/kernel": np.ones((4, 2))})
    est.train(input_fn, steps=2)  # resume: the model_fn's hook must not overwrite it
    np.testing.assert_array_equal(est.get_variable_value("net/kernel"), np.ones((4, 2)))
    assert est.get_variable_value("global_step") == 4


def test_missing_pretrained_checkpoint(est_api, tmp_path, caplog):
    est = _estimator(est_api, tmp_path / "a")
    with pytest.raises(CheckpointNotFoundError, match="got None"):
        est.train(input_fn, hooks=[tv1.CheckpointInitHook(None, MAP)], steps=1)
    est = _estimator(est_api, tmp_path / "b")
    with caplog.at_level(logging.WARNING):
        est.train(input_fn, hooks=[tv1.CheckpointInitHook(None, MAP, allow_missing=True)], steps=1)
    assert "no pretrained checkpoint" in caplog.text
    np.testing.assert_array_equal(est.get_variable_value("net/bias"), [0.0, 0.0])
