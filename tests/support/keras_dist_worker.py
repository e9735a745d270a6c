"""Run in subprocesses by test_keras_distribution.py; prints one JSON line.

``python tests/support/keras_dist_worker.py mirrored CKPT``
    Two logical CPUs, ``MirroredStrategy``: load into models made in and out of scope,
    and warm-start ``fit`` with ``CheckpointInit``; report what every replica holds.

``python tests/support/keras_dist_worker.py mwms CKPT RUN_DIR`` (with ``TF_CONFIG`` set)
    One worker of a ``MultiWorkerMirroredStrategy`` cluster: ``CheckpointInit`` warm
    starts on every worker, then a few steps of ``fit`` (tf_keras, Keras 2) or of a
    custom ``strategy.run`` loop (Keras 3, whose ``fit`` does not run under this
    strategy on CPU, keras-team/keras#20585), with a ``CheckpointSaver`` writing to
    RUN_DIR; report the weights at the start and end.

Which Keras runs is the environment's (``TF_USE_LEGACY_KERAS``).
"""

import json
import os
import sys

if not __package__:  # run as a script: `support` is a package of tests/
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from support.keras_helpers import TF1_MLP, flavour, keras, mlp, tf
from tf1compat_init.keras import CheckpointInit, CheckpointSaver, load_checkpoint

MAP = {"model/": "/"}
NAMES = ("dense", "dense_1")
EXPECTED = [TF1_MLP[f"model/{d}/{w}"] for d in NAMES for w in ("kernel", "bias")]
X = np.linspace(-1, 1, 64, dtype=np.float32).reshape(16, 4)
Y = np.linspace(0, 1, 32, dtype=np.float32).reshape(16, 2)


def forward(x):
    k1, b1, k2, b2 = EXPECTED
    return (x @ k1 + b1) @ k2 + b2


def components(v):
    """The per-replica values of a weight (a Keras 3 Variable wraps the tf one)."""
    inner = getattr(v, "value", v)
    return inner if not callable(inner) else v


class Probe(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.begin = [np.array(v.numpy()) for v in self.model.weights]


def replicas_hold_checkpoint(strategy, model):
    equal, count = True, 0
    for v, want in zip(model.weights, EXPECTED, strict=True):
        local = strategy.experimental_local_results(components(v))
        count = max(count, len(local))
        equal &= all(np.array_equal(np.asarray(t), want) for t in local)
    outputs = strategy.run(tf.function(lambda x: model(x)), args=(tf.constant(X[:2]),))
    got = [np.asarray(o) for o in strategy.experimental_local_results(outputs)]
    return {
        "copies": count,
        "values": bool(equal),
        "outputs": len(got) == 2 and all(np.allclose(g, forward(X[:2]), atol=1e-5) for g in got),
    }


def mirrored(ckpt):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        inside = mlp(names=NAMES)
    load_checkpoint(inside, ckpt, MAP)
    outside = mlp(names=NAMES)
    load_checkpoint(outside, ckpt, MAP)
    with strategy.scope():
        fitted = mlp(names=NAMES)
        fitted.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    probe = Probe()
    init = CheckpointInit(ckpt, MAP)
    fitted.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=[init, probe])
    return {
        "flavour": flavour(),
        "in_scope": replicas_hold_checkpoint(strategy, inside),
        "out_of_scope": replicas_hold_checkpoint(strategy, outside),
        "fit_begin": all(np.array_equal(b, w) for b, w in zip(probe.begin, EXPECTED, strict=True)),
        "fit_report": init.report.summary(),
    }


def mwms(ckpt, run_dir):
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = mlp(names=NAMES)
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    init, probe = CheckpointInit(ckpt, MAP), Probe()
    saver = CheckpointSaver(run_dir, save_steps=2)  # every worker saves; the chief's copy stays
    task = strategy.cluster_resolver.task_id
    data = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(4)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    data = data.with_options(options)
    if flavour() == "keras3":
        custom_loop(strategy, model, data, [init, saver, probe], steps=4)
    else:
        model.fit(data, epochs=1, steps_per_epoch=4, verbose=0, callbacks=[init, saver, probe])
    return {
        "flavour": flavour(),
        "task": task,
        "begin": all(np.array_equal(b, w) for b, w in zip(probe.begin, EXPECTED, strict=True)),
        "steps": int(model.optimizer.iterations.numpy()),
        "final": [np.array(v.numpy()).tolist() for v in model.weights],
        "report": init.report.summary(),
        "saved": saver.saved,
    }


def custom_loop(strategy, model, data, callbacks, steps):
    callbacks = keras.callbacks.CallbackList(callbacks, model=model)
    optimizer = model.optimizer

    @tf.function
    def train_step(iterator):
        def step(x, y):
            with tf.GradientTape() as tape:
                per_example = tf.reduce_mean(tf.square(model(x, training=True) - y), axis=-1)
                loss = tf.nn.compute_average_loss(per_example)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        return strategy.run(step, args=next(iterator))

    iterator = iter(strategy.experimental_distribute_dataset(data))
    callbacks.on_train_begin()
    for i in range(steps):
        callbacks.on_train_batch_begin(i)
        train_step(iterator)
        callbacks.on_train_batch_end(i, {})
    callbacks.on_train_end()


if __name__ == "__main__":
    mode, ckpt = sys.argv[1], sys.argv[2]
    print(json.dumps(mirrored(ckpt) if mode == "mirrored" else mwms(ckpt, sys.argv[3])))
