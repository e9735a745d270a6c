"""Warm-starting a Keras 3 model from TF1 sub-model checkpoints, and resuming without it.

The story: two sub-models were trained separately with TF1 graph code.
``sub_model_1`` saved its layers at the root (``fc1/kernel``), ``sub_model_2`` under
``model/`` (``model/fc1/kernel``), both with Adam slots and a ``global_step``. The new
Keras 3 model holds both as sub-models named ``sub_model_1`` and ``sub_model_2``.

1. Write the two TF1 checkpoints (``tf.compat.v1`` graph code, ``Saver``).
2. First run: ``CheckpointInit`` warm-starts each sub-model with its TF1 map, then
   ``fit`` trains 10 steps under ``StopAtStep``, ``CheckpointSaver`` and
   ``LoggingTensor``. The callbacks log the restore reports (loaded, untouched: the
   other sub-model, unused: the Adam slots) and the training.
3. Second run, as after a preemption (a fresh model, the same callbacks): the run
   resumes from ``CheckpointSaver``'s checkpoint and both warm starts are skipped.

Run: python examples/keras_warm_start.py
"""

import logging
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf1compat_init.keras import (  # noqa: E402
    CheckpointInit,
    CheckpointSaver,
    LoggingTensor,
    StopAtStep,
    weight_names,
)

keras = tf.keras
SIZES = {"sub_model_1": (4, 8, 8), "sub_model_2": (8, 6, 2)}


def tf1_pretrain(prefix: str, scope: str, sizes: tuple[int, ...], seed: int) -> str:
    """TF1 graph code: an MLP of ``fc1``, ``fc2``... trained with Adam, saved by a Saver."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(seed)
        x = tf.random.normal([16, sizes[0]], seed=seed)
        y = tf.random.normal([16, sizes[-1]], seed=seed + 1)
        h = x
        with tf.compat.v1.variable_scope(scope or tf.compat.v1.get_variable_scope()):
            for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:], strict=False)):
                with tf.compat.v1.variable_scope(f"fc{i + 1}"):
                    kernel = tf.compat.v1.get_variable("kernel", [n_in, n_out])
                    bias = tf.compat.v1.get_variable(
                        "bias", [n_out], initializer=tf.zeros_initializer()
                    )
                h = tf.matmul(h, kernel) + bias
                if i < len(sizes) - 2:
                    h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.square(h - y))
        step = tf.compat.v1.train.get_or_create_global_step()
        train = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(20):
                sess.run(train)
            return saver.save(sess, prefix, global_step=step)


def build_model() -> keras.Model:
    """Keras 3: two sub-models, with the TF1 layer names inside each."""
    subs = []
    for name, sizes in SIZES.items():
        layers = [
            keras.layers.Dense(
                n, activation="relu" if i < len(sizes) - 2 else None, name=f"fc{i + 1}"
            )
            for i, n in enumerate(sizes[1:])
        ]
        subs.append(keras.Sequential([keras.Input((sizes[0],)), *layers], name=name))
    inputs = keras.Input((SIZES["sub_model_1"][0],))
    model = keras.Model(inputs, subs[1](subs[0](inputs)), name="combined")
    model.compile(optimizer=keras.optimizers.Adam(0.001), loss="mse")
    return model


class Snapshot(keras.callbacks.Callback):
    """Keeps the weights as training starts (after the warm starts), by model-relative name."""

    def on_train_begin(self, logs=None):
        self.weights = {n: np.array(v.numpy()) for n, v in weight_names(self.model).items()}


def callbacks(sub1: str, sub2: str, run_dir: str, last_step: int) -> list:
    return [
        # TF1 maps, written against the model-relative names (sub_model_1/fc1/kernel).
        CheckpointInit(sub1, {"/": "sub_model_1/"}),
        CheckpointInit(sub2, {"model/": "sub_model_2/"}),
        CheckpointSaver(run_dir, save_steps=5),
        StopAtStep(last_step=last_step),
        LoggingTensor("loss", every_n_iter=5),
        Snapshot(),
    ]


def train(model: keras.Model, cbs: list) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = rng.normal(size=(64, 2)).astype("float32")
    model.fit(x, y, batch_size=4, epochs=100, verbose=0, callbacks=cbs)


def main() -> int:
    # The callbacks log at INFO: the warm-start reports, saves, LoggingTensor's values.
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="   [log] %(message)s")
    logging.getLogger("tf1compat_init.keras._callbacks").setLevel(logging.INFO)
    with tempfile.TemporaryDirectory() as tmp:
        print("== TF1: pretraining two sub-models (tf.compat.v1 graph code)")
        sub1 = tf1_pretrain(os.path.join(tmp, "sub1", "model.ckpt"), "", SIZES["sub_model_1"], 1)
        sub2 = tf1_pretrain(
            os.path.join(tmp, "sub2", "model.ckpt"), "model", SIZES["sub_model_2"], 2
        )
        reader = tf.train.load_checkpoint(sub2)
        print(f"   {sub1}\n   {sub2}: {sorted(reader.get_variable_to_shape_map())[:4]} ...")

        print("\n== Run 1: warm start from both TF1 checkpoints, then 10 steps")
        model = build_model()
        print(f"   model-relative names: {list(weight_names(model))[:3]} ...")
        cbs = callbacks(sub1, sub2, os.path.join(tmp, "run"), last_step=10)
        train(model, cbs)
        start = cbs[-1].weights
        ok = np.array_equal(start["sub_model_2/fc1/kernel"], reader.get_tensor("model/fc1/kernel"))
        ok &= np.array_equal(
            start["sub_model_1/fc2/bias"], tf.train.load_checkpoint(sub1).get_tensor("fc2/bias")
        )
        print(f"   training started from the TF1 values: {ok}")
        steps = int(model.optimizer.iterations.numpy())
        print(f"   trained to step {steps}; checkpoints at steps {cbs[2].saved}")

        print("\n== Run 2: a fresh process would do this; it resumes, the warm start is skipped")
        model = build_model()
        cbs = callbacks(sub1, sub2, os.path.join(tmp, "run"), last_step=20)
        train(model, cbs)
        for init in cbs[:2]:
            print(
                f"   CheckpointInit({os.path.basename(os.path.dirname(init.ckpt_dir_or_file))}):"
                f" skipped: {init.skipped}"
            )
        print(
            f"   resumed from {os.path.basename(cbs[2].restored)}, trained to step "
            f"{int(model.optimizer.iterations.numpy())}; saved {cbs[2].saved}"
        )
        resumed = all(init.report is None and init.skipped for init in cbs[:2])
        return 0 if ok and steps == 10 and resumed and cbs[2].saved[-1] == 20 else 1


if __name__ == "__main__":
    sys.exit(main())
