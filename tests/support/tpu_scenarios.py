"""TPUEstimator(use_tpu=False) scenarios, run on the real one (TF 2.15) and on ours.

Shared by tests/estimator/v1/tpu/test_tpu_estimator.py (both in process on TF 2.15; ours alone on TF 2.21,
against the golden file) and run as a script to write that file on TF 2.15::

    python tests/support/tpu_scenarios.py --golden     # rewrites GOLDEN from the real TPUEstimator

``run(lib, workdir)`` returns everything a user observes, as JSON-able data: checkpoint
variables (dtype, shape and bytes in hex), summary events (tag, step and, except for the
timing ones, value), what ``input_fn`` and ``model_fn`` got in ``params``, how often
``scaffold_fn`` and the ``host_call`` ran, evaluation results (list and dict
``eval_metrics``), predictions, the exported SavedModel's tags and signatures, and the
error messages of misuse. The model is a tiny linear one built with
``tf.compat.v1.get_variable`` (no Keras), so both TF versions build the same graph.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import types
from pathlib import Path

import numpy as np
import tensorflow as tf

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "tpu_estimator_tf215.json"
SEED = 11
TRAIN_BATCH, EVAL_BATCH, PREDICT_BATCH = 4, 2, 3
#: Timing summaries: their values are rates, only their steps are compared.
TIMING_TAGS = ("global_step/sec", "examples/sec")


def libs(name: str) -> types.SimpleNamespace:
    """``real``: tf.compat.v1.estimator (TF 2.15); ``ours``: tf1compat_init.estimator.v1."""
    if name == "real":
        est, v2 = tf.compat.v1.estimator, tf.estimator
    else:
        import tf1compat_init.estimator as v2
        from tf1compat_init.estimator import v1 as est
    return types.SimpleNamespace(
        name=name,
        tpu=est.tpu,
        EstimatorSpec=est.EstimatorSpec,
        export=est.export,
        train_and_evaluate=v2.train_and_evaluate,
        TrainSpec=v2.TrainSpec,
        EvalSpec=v2.EvalSpec,
    )


def data() -> tuple:
    x = (np.arange(48, dtype=np.float32).reshape(16, 3) % 7) / 7.0
    y = (x @ np.array([[0.5], [-1.0], [2.0]], np.float32) + 0.25).astype(np.float32)
    return x, y


class Recorder:
    """What the functions saw: params per call, scaffold_fn and host_call counts."""

    def __init__(self):
        self.calls: list = []

    def note(self, what: str, params: dict) -> None:
        self.calls.append([what, {k: repr(v) for k, v in sorted(params.items())}])


class CountingHook(tf.compat.v1.train.SessionRunHook):
    """A spec's own hook: records how many steps it saw when its session ended."""

    def __init__(self, rec: Recorder, name: str) -> None:
        self.rec, self.name, self.steps = rec, name, 0

    def after_run(self, run_context, run_values) -> None:
        self.steps += 1

    def end(self, session) -> None:
        self.rec.calls.append([f"hook:{self.name}", {"steps": str(self.steps)}])


def make_input_fn(rec: Recorder, repeat: bool = True):
    def input_fn(params):
        rec.note("input_fn", params)
        x, y = data()
        ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
        if repeat:
            ds = ds.repeat()
        return ds.batch(params.get("batch_size", 5), drop_remainder=True)

    return input_fn


def predict_input_fn(rec: Recorder):
    def input_fn(params):
        rec.note("predict_input_fn", params)
        x, _ = data()
        return tf.data.Dataset.from_tensor_slices({"x": x[:7]}).batch(params["batch_size"])

    return input_fn


def make_model_fn(lib, rec: Recorder, model_dir: str, metrics_as_dict: bool = False):
    tpu = lib.tpu

    def metric_fn(labels, predictions):
        return {
            "mse": tf.compat.v1.metrics.mean_squared_error(labels, predictions),
            "mae": tf.compat.v1.metrics.mean_absolute_error(labels, predictions),
        }

    def host_call_fn(global_step, loss):
        rec.calls.append(["host_call_fn", {}])
        step = global_step[0]
        writer = tf.compat.v2.summary.create_file_writer(os.path.join(model_dir, "host"))
        with writer.as_default(), tf.compat.v2.summary.record_if(True):
            # The raw op: tf.summary.scalar needs TensorBoard, which TF 2.21 may lack.
            tf.compat.v2.summary.write("host_loss", loss[0], step=step)
            return tf.compat.v1.summary.all_v2_summary_ops()

    def model_fn(features, labels, mode, params):
        rec.note(f"model_fn:{mode}", params)
        w = tf.compat.v1.get_variable("dense/kernel", [3, 1])
        b = tf.compat.v1.get_variable(
            "dense/bias", [1], initializer=tf.compat.v1.zeros_initializer()
        )
        pred = tf.matmul(features["x"], w) + b
        if mode == "infer":
            return tpu.TPUEstimatorSpec(
                mode,
                predictions={"y": pred, "w0": pred * 0 + w[0, 0]},
                prediction_hooks=[CountingHook(rec, "predict")],
            )
        loss = tf.reduce_mean(tf.square(pred - labels))
        # The step before this step's increment (a plain read would race with train_op).
        step = tf.identity(tf.compat.v1.train.get_global_step())
        opt = tf.compat.v1.train.MomentumOptimizer(0.05, 0.9)
        with tf.control_dependencies([step]):
            train_op = opt.minimize(loss, tf.compat.v1.train.get_global_step())

        def scaffold_fn():
            rec.calls.append(["scaffold_fn", {}])
            return tf.compat.v1.train.Scaffold()

        if mode == "eval":
            tensors = {"labels": labels, "predictions": pred} if metrics_as_dict else [labels, pred]
            return tpu.TPUEstimatorSpec(
                mode,
                loss=loss,
                eval_metrics=(metric_fn, tensors),
                scaffold_fn=scaffold_fn,
                evaluation_hooks=[CountingHook(rec, "eval")],
            )
        host_call = (host_call_fn, [tf.reshape(step, [1]), tf.reshape(loss, [1])])
        return tpu.TPUEstimatorSpec(
            mode,
            loss=loss,
            train_op=train_op,
            scaffold_fn=scaffold_fn,
            host_call=host_call,
            training_hooks=[CountingHook(rec, "train")],
        )

    return model_fn


def checkpoint(model_dir: str) -> dict:
    path = tf.train.latest_checkpoint(model_dir)
    reader = tf.compat.v1.train.NewCheckpointReader(path)
    out = {"path": os.path.basename(path)}
    for name in sorted(reader.get_variable_to_shape_map()):
        a = np.asarray(reader.get_tensor(name))
        out[name] = [str(a.dtype), list(a.shape), a.tobytes().hex()]
    return out


def events(directory: str) -> list:
    """``[tag, step, value]`` of every summary in the directory's event files (by time)."""
    out = []
    for f in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for e in tf.compat.v1.train.summary_iterator(f):
            for v in e.summary.value:
                if v.HasField("simple_value"):
                    value = float(v.simple_value)
                elif v.HasField("tensor") and v.tensor.dtype != tf.string.as_datatype_enum:
                    value = float(tf.make_ndarray(v.tensor))
                else:
                    value = None
                out.append([v.tag, int(e.step), None if v.tag in TIMING_TAGS else value])
    return out


def _floats(d: dict) -> dict:
    return {k: np.asarray(v).tolist() for k, v in sorted(d.items())}


def _error(fn) -> str:
    try:
        result = fn()
    except Exception as e:  # the type and text are what is compared
        text = re.sub(r" at 0x[0-9a-f]+", " at 0x", str(e))
        return f"{type(e).__name__}: {text}"
    return f"no error: {result if isinstance(result, str) else type(result).__name__}"


def config(lib, model_dir: str, **kw):
    tpu = lib.tpu
    base = dict(
        model_dir=model_dir,
        tf_random_seed=SEED,
        save_checkpoints_steps=4,
        save_summary_steps=2,
        log_step_count_steps=3,
        session_config=tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
        ),
        tpu_config=tpu.TPUConfig(
            iterations_per_loop=2,
            num_shards=8,
            per_host_input_for_training=tpu.InputPipelineConfig.PER_HOST_V2,
        ),
    )
    base.update(kw)
    return tpu.RunConfig(cluster=None, master=None, **base)


def train_eval_predict(lib, workdir: str, metrics_as_dict: bool = False) -> dict:
    tpu = lib.tpu
    model_dir = os.path.join(workdir, "model")
    rec = Recorder()
    est = tpu.TPUEstimator(
        make_model_fn(lib, rec, model_dir, metrics_as_dict),
        config=config(lib, model_dir),
        use_tpu=False,
        train_batch_size=TRAIN_BATCH,
        eval_batch_size=EVAL_BATCH,
        predict_batch_size=PREDICT_BATCH,
    )
    out: dict = {
        "params": est.params,
        "log_step_count_steps": est.config.log_step_count_steps,
    }
    est.train(make_input_fn(rec), steps=3)
    est.train(make_input_fn(rec), max_steps=7)
    out["checkpoint"] = checkpoint(model_dir)
    out["events"] = events(model_dir)
    out["host_events"] = events(os.path.join(model_dir, "host"))
    out["eval"] = _floats(est.evaluate(make_input_fn(rec), steps=3))
    out["eval_events"] = events(os.path.join(model_dir, "eval"))
    out["predict"] = [_floats(p) for p in est.predict(predict_input_fn(rec))]
    batches = est.predict(predict_input_fn(rec), yield_single_examples=False)
    out["predict_batches"] = [_floats(p) for p in batches]
    out["calls"] = rec.calls
    return out


def serving_input_fn(lib):
    def fn():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        return lib.export.ServingInputReceiver({"x": x}, {"x": x})

    return fn


def export(lib, workdir: str) -> dict:
    """Trains 2 steps, exports; the SavedModel's tags, signatures and served outputs."""
    tpu = lib.tpu
    model_dir = os.path.join(workdir, "export_model")
    rec = Recorder()
    est = tpu.TPUEstimator(
        make_model_fn(lib, rec, model_dir),
        config=config(lib, model_dir),
        use_tpu=False,
        train_batch_size=TRAIN_BATCH,
        export_to_tpu=False,
    )
    est.train(make_input_fn(rec), steps=2)
    path = est.export_saved_model(os.path.join(workdir, "export"), serving_input_fn(lib))
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(path, b"saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    graphs = [[sorted(mg.meta_info_def.tags), sorted(mg.signature_def)] for mg in sm.meta_graphs]
    x, _ = data()
    with tf.Graph().as_default(), tf.compat.v1.Session() as s:
        mg = tf.compat.v1.saved_model.loader.load(s, ["serve"], path)
        sig = mg.signature_def["serving_default"]
        fetch = {k: v.name for k, v in sig.outputs.items()}
        served = s.run(fetch, {sig.inputs["x"].name: x[:2]})
    rec.calls = [c for c in rec.calls if c[0].startswith("model_fn:infer")]
    return {"graphs": graphs, "served": _floats(served), "export_calls": rec.calls}


def plain_spec(lib, workdir: str) -> dict:
    """A model_fn returning a plain EstimatorSpec passes through; no batch sizes given."""
    tpu = lib.tpu
    model_dir = os.path.join(workdir, "plain")
    rec = Recorder()

    def model_fn(features, labels, mode, params, config):
        rec.note(f"model_fn:{mode}", params)
        w = tf.compat.v1.get_variable("w", [3, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) - labels))
        op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.compat.v1.train.get_global_step()
        )
        return lib.EstimatorSpec(mode, loss=loss, train_op=op)

    est = tpu.TPUEstimator(
        model_fn,
        config=config(lib, model_dir, log_step_count_steps=None),
        params={"lr": 0.1},
        use_tpu=False,
        eval_on_tpu=False,
    )
    est.train(make_input_fn(rec), steps=2)
    return {
        "checkpoint": checkpoint(model_dir),
        "events": events(model_dir),
        "eval": _floats(est.evaluate(make_input_fn(rec), steps=1)),
        "calls": rec.calls,
    }


def _aborting(params):
    raise tf.errors.AbortedError(None, None, "aborted while building the input")


def train_and_evaluate(lib, workdir: str) -> dict:
    """``train_and_evaluate`` drives a TPUEstimator through its own train / evaluate."""
    model_dir = os.path.join(workdir, "train_and_evaluate")
    rec = Recorder()
    est = lib.tpu.TPUEstimator(
        make_model_fn(lib, rec, model_dir),
        config=config(lib, model_dir),
        use_tpu=False,
        train_batch_size=TRAIN_BATCH,
        eval_batch_size=EVAL_BATCH,
    )
    metrics, _ = lib.train_and_evaluate(
        est,
        lib.TrainSpec(make_input_fn(rec), max_steps=8),
        lib.EvalSpec(make_input_fn(rec), steps=2, throttle_secs=0),
    )
    return {
        "metrics": _floats(metrics),
        "checkpoint": checkpoint(model_dir),
        "eval_events": events(os.path.join(model_dir, "eval")),
    }


def errors(lib, workdir: str) -> dict:
    tpu = lib.tpu
    rec = Recorder()
    model_dir = os.path.join(workdir, "errors")
    cfg = config(lib, model_dir)
    model_fn = make_model_fn(lib, rec, model_dir)
    loss = lambda: tf.constant(1.0)  # noqa: E731
    cases = {
        "no_config": lambda: tpu.TPUEstimator(model_fn, use_tpu=False),
        "reserved_batch_size": lambda: tpu.TPUEstimator(
            model_fn, config=cfg, params={"batch_size": 2}, use_tpu=False
        ),
        "reserved_context": lambda: tpu.TPUEstimator(
            model_fn, config=cfg, params={"context": 1}, use_tpu=False
        ),
        "api_version": lambda: tpu.TPUEstimator(
            model_fn, config=cfg, use_tpu=False, export_saved_model_api_version=3
        ),
        "model_fn_without_params": lambda: tpu.TPUEstimator(
            lambda features, labels, mode: None, config=cfg, use_tpu=False
        ).train(make_input_fn(rec), steps=1),
        "input_fn_without_params": lambda: tpu.TPUEstimator(
            model_fn, config=cfg, use_tpu=False
        ).train(lambda: None, steps=1),
        "sliced_eval": lambda: tpu.TPUEstimator(
            model_fn,
            config=config(
                lib,
                model_dir,
                tpu_config=tpu.TPUConfig(
                    eval_training_input_configuration=tpu.InputPipelineConfig.SLICED
                ),
            ),
            use_tpu=False,
        ).evaluate(make_input_fn(rec), steps=1),
        # As TF: examples/sec of a None batch size fails at the hook's first record.
        "no_train_batch_size": lambda: tpu.TPUEstimator(
            model_fn, config=config(lib, model_dir + "_none"), use_tpu=False
        ).train(make_input_fn(rec), steps=4),
        # TF's error rendezvous drops an Aborted error: train() returns None.
        "aborted_in_input_fn": lambda: repr(
            tpu.TPUEstimator(model_fn, config=cfg, use_tpu=False).train(_aborting, steps=1)
        ),
        "iterations_per_loop": lambda: tpu.TPUConfig(iterations_per_loop="2x"),
        "num_shards": lambda: tpu.TPUConfig(num_shards=0),
        "num_shards_type": lambda: tpu.TPUConfig(num_shards=2.0),
        "num_cores_per_replica": lambda: tpu.TPUConfig(num_cores_per_replica=3),
        "eval_training_input_configuration": lambda: tpu.TPUConfig(
            eval_training_input_configuration=3
        ),
        "partition_dims_len": lambda: tpu.TPUConfig(input_partition_dims=[1, 2, 3]),
        "partition_dims_mode": lambda: tpu.TPUConfig(input_partition_dims=[1]),
        "partition_dims_cores": lambda: tpu.TPUConfig(
            input_partition_dims=[1], per_host_input_for_training=3
        ),
        "master_and_cluster": lambda: tpu.RunConfig(master="a", cluster=object()),
        "spec_eval_metrics_type": lambda: tpu.TPUEstimatorSpec("eval", loss=loss(), eval_metrics=3),
        "spec_eval_metrics_len": lambda: tpu.TPUEstimatorSpec(
            "eval", loss=loss(), eval_metrics=(1,)
        ),
        "spec_eval_metrics_fn": lambda: tpu.TPUEstimatorSpec(
            "eval", loss=loss(), eval_metrics=(1, [])
        ),
        "spec_eval_metrics_tensors": lambda: tpu.TPUEstimatorSpec(
            "eval", loss=loss(), eval_metrics=(len, 3)
        ),
        "spec_eval_metrics_arity": lambda: tpu.TPUEstimatorSpec(
            "eval", loss=loss(), eval_metrics=(lambda a, b: {}, [1])
        ),
        "spec_host_call_arity": lambda: tpu.TPUEstimatorSpec(
            "eval", loss=loss(), host_call=(lambda a: [], [1, 2])
        ),
        "spec_hooks": lambda: tpu.TPUEstimatorSpec("train", training_hooks=[1]),
        "spec_train_op": lambda: tpu.TPUEstimatorSpec("train", loss=loss()),
        "spec_loss": lambda: tpu.TPUEstimatorSpec("eval"),
        "spec_predictions": lambda: tpu.TPUEstimatorSpec("infer"),
        "spec_predictions_type": lambda: tpu.TPUEstimatorSpec("infer", predictions=3),
        "spec_dict_metrics_mismatch": lambda: tpu.TPUEstimatorSpec(
            "eval", loss=loss(), eval_metrics=(lambda a: {}, {"b": 1})
        ).as_estimator_spec(),
    }
    out = {}
    for name, fn in cases.items():
        with tf.Graph().as_default():
            out[name] = _error(fn)
    # Accepted with use_tpu=False (TF checks them only for a TPU).
    accepted = tpu.TPUEstimator(
        model_fn, config=cfg, use_tpu=False, train_batch_size=-1, eval_batch_size=2.5
    )
    out["accepted_batch_sizes"] = type(accepted).__name__
    out["tpu_config"] = repr(tpu.TPUConfig())
    out["tpu_config_legacy"] = [
        tpu.TPUConfig(per_host_input_for_training=False).per_host_input_for_training,
        tpu.TPUConfig(per_host_input_for_training=True).per_host_input_for_training,
    ]
    rc = tpu.RunConfig(master="grpc://x")
    out["masters"] = [rc.master, rc.evaluation_master, tpu.RunConfig().master, rc.cluster]
    out["replace"] = repr(rc.replace(tpu_config=tpu.TPUConfig(5)).tpu_config)
    out["spec_fields"] = list(tpu.TPUEstimatorSpec._fields)
    out["pipeline"] = [
        tpu.InputPipelineConfig.PER_SHARD_V1,
        tpu.InputPipelineConfig.PER_HOST_V1,
        tpu.InputPipelineConfig.PER_HOST_V2,
        tpu.InputPipelineConfig.BROADCAST,
        tpu.InputPipelineConfig.SLICED,
    ]
    return out


def run(lib_name: str, workdir: str) -> dict:
    lib = libs(lib_name)
    os.makedirs(workdir, exist_ok=True)
    return {
        "tf_version": tf.__version__,
        "list_metrics": train_eval_predict(lib, os.path.join(workdir, "list")),
        "dict_metrics": train_eval_predict(lib, os.path.join(workdir, "dict"), True)["eval"],
        "export": export(lib, workdir),
        "plain_spec": plain_spec(lib, workdir),
        "train_and_evaluate": train_and_evaluate(lib, workdir),
        "errors": errors(lib, workdir),
    }


def main(argv: list) -> int:
    if argv == ["--golden"]:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            result = run("real", d)
        GOLDEN.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    lib, workdir, out = argv
    Path(out).write_text(json.dumps(run(lib, workdir), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
