"""Model_fns, receivers and probes for the export / train_and_evaluate tests (both libraries).

``lib`` is ``tf.estimator`` or ``tf1compat_init.estimator``; the models are the
get_variable MLP of ``support.estimator_models`` with ``export_outputs`` added in PREDICT.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from support.estimator_models import N_FEATURES, X, dense

FEATURE_SPEC = {"x": tf.io.FixedLenFeature([N_FEATURES], tf.float32)}


def make_export_model_fn(lib, outputs="default", vocab=None):
    """The 4-8-1 MLP; PREDICT specs carry ``export_outputs`` by ``outputs``.

    ``default``: none (tf.estimator makes ``serving_default`` from predictions);
    ``multi``: predict + regress + classify heads; ``one``: a single non-default key.
    ``vocab``: a file of lines ``neg`` / ``pos``; predictions then add ``id``, looked up
    in a table initialized from it (an asset of the SavedModel).
    """

    def model_fn(features, labels, mode, params):
        h = dense(features["x"], 8, "hidden", tf.nn.relu)
        pred = dense(h, 1, "out")
        if mode == lib.ModeKeys.PREDICT:
            export_outputs = None
            if outputs == "multi":
                prob = tf.sigmoid(pred)
                batch = tf.shape(pred)[0]
                export_outputs = {
                    "serving_default": lib.export.PredictOutput({"y": pred, "h": h}),
                    "regress": lib.export.RegressionOutput(pred[:, 0]),
                    "classify": lib.export.ClassificationOutput(
                        scores=tf.concat([1 - prob, prob], 1),
                        classes=tf.tile(tf.constant([["neg", "pos"]]), [batch, 1]),
                    ),
                }
            elif outputs == "one":
                export_outputs = {"only": lib.export.PredictOutput(pred)}
            predictions = {"y": pred, "h0": h[:, 0]}
            if vocab:
                init = tf.compat.v1.lookup.TextFileInitializer(
                    vocab, tf.string, -2, tf.int64, -1
                )  # whole line -> line number
                table = tf.compat.v1.lookup.StaticHashTable(init, -1)
                predictions["id"] = table.lookup(tf.where(pred[:, 0] > 0, "pos", "neg"))
            return lib.EstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)
        loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
        opt = tf.compat.v1.train.GradientDescentOptimizer(params["lr"])
        train_op = opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return lib.EstimatorSpec(
            mode,
            loss=loss,
            train_op=train_op,
            eval_metric_ops={"mae": tf.compat.v1.metrics.mean_absolute_error(labels, pred)},
        )

    return model_fn


def raw_receiver_fn(lib):
    return lib.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, N_FEATURES])})


def parsing_receiver_fn(lib):
    return lib.export.build_parsing_serving_input_receiver_fn(FEATURE_SPEC)


def examples(x):
    """Serialized tf.Examples holding the rows of ``x`` as feature ``x``."""
    out = []
    for row in x:
        feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=list(row)))}
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)))
    return np.array([e.SerializeToString() for e in out])


class FakeClock:
    """A ``time`` module stand-in for export directory names: one second per call."""

    def __init__(self, start=1_700_000_000):
        self.now = start

    def time(self):
        self.now += 1
        return float(self.now)

    def sleep(self, secs):
        self.now += secs


def signature_summary(export_dir):
    """``{key: (method, {input: (dtype, dims)}, {output: (dtype, dims)})}`` of a SavedModel."""
    from tensorflow.core.protobuf import saved_model_pb2

    path = os.path.join(export_dir, "saved_model.pb")
    proto = saved_model_pb2.SavedModel()
    if os.path.exists(path):
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
    else:
        from google.protobuf import text_format

        with open(path + "txt") as f:
            text_format.Parse(f.read(), proto)
    (meta,) = proto.meta_graphs

    def infos(m):
        return {
            k: (v.dtype, tuple(d.size for d in v.tensor_shape.dim), v.name) for k, v in m.items()
        }

    sigs = {
        k: (s.method_name, infos(s.inputs), infos(s.outputs)) for k, s in meta.signature_def.items()
    }
    return sorted(meta.meta_info_def.tags), sigs


def tree(directory):
    """Sorted relative paths of every file below ``directory``."""
    out = []
    for root, _, files in os.walk(directory):
        out += [os.path.relpath(os.path.join(root, f), directory) for f in files]
    return sorted(out)


def serve(export_dir, key="serving_default", tags=None, **inputs):
    """Runs a signature of the SavedModel with TensorFlow's own loader; numpy outputs."""
    loaded = tf.saved_model.load(os.fsdecode(export_dir), tags=tags)
    fn = loaded.signatures[key]
    return {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in inputs.items()}).items()}


def batched_predictions(est, checkpoint_path=None):
    def input_fn():
        return tf.data.Dataset.from_tensor_slices({"x": X[:5]}).batch(5)

    (batch,) = est.predict(input_fn, yield_single_examples=False, checkpoint_path=checkpoint_path)
    return batch


def table_model_fn(lib):
    """A MutableHashTable (a saveable, not a variable), int feature keys, a scalar prediction."""

    def model_fn(features, labels, mode):
        table = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, 0.0, name="t")
        bump = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
        with tf.control_dependencies([bump]):
            train_op = table.insert(tf.constant(["k1"]), tf.constant([30.0]))
        value = table.lookup(tf.constant("k1")) + tf.reduce_sum(features[42]) * 0.0
        return lib.EstimatorSpec(mode, predictions=value, loss=tf.constant(1.0), train_op=train_op)

    return model_fn


def int_key_input_fn():
    return {42: tf.constant([1.0, 2.0])}, None


def int_key_receiver_fn(lib):
    def fn():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x42")
        return lib.export.ServingInputReceiver({42: x}, {"x": x})

    return fn
