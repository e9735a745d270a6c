"""A 784-256-10 MLP ``model_fn`` trained with the stock hooks and a warm-start hook.

Hooks: ``LoggingTensorHook``, ``CheckpointSaverHook``, ``StopAtStepHook`` and
``CheckpointInitHook`` (pretrained weights for the hidden layer). Shown three ways:

1. ``estimator.train(input_fn, hooks=[...])``: the first run warm-starts, and the first
   checkpoint (``model.ckpt-0``) already holds the pretrained weights;
2. a second ``train()`` on the same ``model_dir`` resumes: the warm start is skipped;
3. the hook returned by the ``model_fn`` itself, in ``EstimatorSpec(training_hooks=...)``.

Where TensorFlow has ``tf.estimator`` (2.15) the real Estimator runs; from TF 2.16 on,
``tf1compat_init.estimator``'s Estimator-compatible runner does (same API). The model
uses ``tf.compat.v1.get_variable`` and ``matmul`` rather than ``tf.compat.v1.layers``,
which needs tf_keras under Keras 3.

Run: ``python examples/estimator_hooks.py`` (writes only to a temporary directory).
"""

from __future__ import annotations

import logging
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf1compat_init import v1 as tv1  # noqa: E402

V1 = tf.compat.v1


def show_only_hook_logs():
    """TF's logger: the LoggingTensorHook lines, and errors; not the deprecation notices."""

    def keep(record):
        hook_line = record.pathname.endswith("basic_session_run_hooks.py")
        return record.levelno >= logging.ERROR or (hook_line and "loss" in record.getMessage())

    logger = tf.get_logger()
    logger.setLevel(logging.INFO)
    logger.addFilter(keep)


def estimator_api():
    """tf.estimator where it exists; otherwise the Estimator-compatible runner."""
    try:
        est = tf.estimator  # TF <= 2.15 (with tensorflow-estimator)
        est.Estimator  # noqa: B018 - a broken install fails here, not later
        return est, "tf.estimator (TensorFlow " + tf.__version__ + ")"
    except (AttributeError, ImportError):
        from tf1compat_init import estimator as est  # TF >= 2.16: tf.estimator is gone

        return est, "tf1compat_init.estimator (TensorFlow " + tf.__version__ + ")"


EST, WHICH = estimator_api()


def dense(x, units, scope, activation=None):
    with V1.variable_scope(scope):
        kernel = V1.get_variable("kernel", [x.shape[-1], units])
        bias = V1.get_variable("bias", [units], initializer=V1.zeros_initializer())
    y = tf.matmul(x, kernel) + bias
    return activation(y) if activation else y


def mlp(images):
    with V1.variable_scope("mlp"):
        hidden = dense(images, 256, "hidden", tf.nn.relu)
        return dense(hidden, 10, "logits")


def model_fn(features, labels, mode, params):
    logits = mlp(features)
    loss = V1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    global_step = V1.train.get_or_create_global_step()
    train_op = V1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    training_hooks = []
    if params.get("pretrained"):  # warm-start hook returned by the model_fn itself
        training_hooks.append(
            tv1.CheckpointInitHook(params["pretrained"], {"mlp/hidden/": "mlp/hidden/"})
        )
    return EST.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=training_hooks)


def input_fn():
    rng = np.random.default_rng(0)
    images = rng.random((256, 784), dtype=np.float32)
    labels = rng.integers(0, 10, 256).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(32)


def pretrain(prefix):
    """Stands in for a pretraining run: the hidden layer, with recognisable values."""
    with tf.Graph().as_default():
        V1.set_random_seed(7)
        mlp(V1.placeholder(tf.float32, [None, 784]))
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return V1.train.Saver().save(sess, prefix)


def hooks(model_dir, last_step, warm_start_from=None):
    out = [
        V1.train.LoggingTensorHook(
            {"loss": "sparse_softmax_cross_entropy_loss/value:0"}, every_n_iter=10
        ),
        # Into model_dir: a CheckpointSaverHook of ours replaces the Estimator's own.
        V1.train.CheckpointSaverHook(model_dir, save_steps=10),
        V1.train.StopAtStepHook(last_step=last_step),
    ]
    if warm_start_from:
        out.append(tv1.CheckpointInitHook(warm_start_from, {"mlp/hidden/": "mlp/hidden/"}))
    return out


def hidden_kernel(path):
    return tf.train.load_checkpoint(path).get_tensor("mlp/hidden/kernel")


def main():
    show_only_hook_logs()
    print("Estimator:", WHICH)
    with tempfile.TemporaryDirectory() as tmp:
        pretrained = pretrain(os.path.join(tmp, "pretrained", "model.ckpt"))
        want = hidden_kernel(pretrained)
        model_dir = os.path.join(tmp, "run")
        estimator = EST.Estimator(model_fn, model_dir=model_dir, params={})

        print("\n1. train(hooks=[..., CheckpointInitHook]) on an empty model_dir")
        estimator.train(input_fn, hooks=hooks(model_dir, 20, warm_start_from=pretrained))
        ckpt_0 = hidden_kernel(os.path.join(model_dir, "model.ckpt-0"))
        assert np.array_equal(ckpt_0, want)
        print("   model.ckpt-0 holds the pretrained hidden layer: yes")
        after_1 = estimator.get_variable_value("mlp/hidden/kernel")
        print(f"   global_step = {estimator.get_variable_value('global_step')}")

        print("\n2. train() again on the same model_dir: resume, no warm start")
        estimator.train(input_fn, hooks=hooks(model_dir, 40, warm_start_from=pretrained))
        first = hidden_kernel(os.path.join(model_dir, "model.ckpt-20"))
        assert np.array_equal(first, after_1) and not np.array_equal(first, want)
        print(
            f"   global_step = {estimator.get_variable_value('global_step')}; it continued "
            f"from step 20's weights, not the pretrained ones"
        )

        print("\n3. the hook in EstimatorSpec(training_hooks=...), a fresh model_dir")
        model_dir_3 = os.path.join(tmp, "run3")
        estimator_3 = EST.Estimator(
            model_fn, model_dir=model_dir_3, params={"pretrained": pretrained}
        )
        estimator_3.train(input_fn, hooks=hooks(model_dir_3, 10))
        assert np.array_equal(hidden_kernel(os.path.join(model_dir_3, "model.ckpt-0")), want)
        print("   model.ckpt-0 holds the pretrained hidden layer: yes")
    print("\nOK")


if __name__ == "__main__":
    main()
