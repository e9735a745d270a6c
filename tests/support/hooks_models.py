"""Scenarios shared by the early-stopping / in-memory evaluation / add_metrics tests.

Each scenario takes ``lib`` (``tf.estimator`` on TF 2.15, or ``tf1compat_init.estimator``)
and returns what a user can observe: where training stopped, the checkpoints, the
evaluation summaries, the ``signal_early_stopping/STOP`` value. The evaluation metric
``score`` is scripted: a function of the global step (a constant table looked up in the
graph), so where the hooks must stop is known in advance and the same on every machine.
"""

from __future__ import annotations

import os
import sys
import time

if not __package__:  # run as a script: `support` is a package of tests/
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import tensorflow as tf

from support.estimator_models import (
    checkpoint_steps,
    eval_input_fn,
    make_model_fn,
    scalar_events,
    train_input_fn,
)

TIMES: dict = {}  # scenario -> seconds of the last collect() (to keep the tests short)

#: score at global step i (evaluations happen at even steps: every checkpoint)
SCORES = np.array(
    [0.0, 0.1, 0.2, 0.3, 0.5, 0.5, 0.6, 0.6, 0.58, 0.6, 0.4, 0.4, 0.7, 0.7, 0.2, 0.2] + [0.1] * 16,
    "float32",
)


def scored_model_fn(lib):
    """The 4-8-1 regression model with the scripted ``score`` metric in EVAL mode."""
    base = make_model_fn(lib, optimizer="sgd")

    def model_fn(features, labels, mode, params):
        spec = base(features, labels, mode, params)
        if mode != lib.ModeKeys.EVAL:
            return spec
        step = tf.compat.v1.train.get_global_step()
        score = tf.gather(tf.constant(SCORES), tf.minimum(step, len(SCORES) - 1))
        metrics = dict(spec.eval_metric_ops)
        metrics["score"] = tf.compat.v1.metrics.mean(score)
        return spec._replace(eval_metric_ops=metrics)

    return model_fn


def estimator(lib, model_dir, **config):
    base = dict(
        tf_random_seed=7,
        save_checkpoints_steps=2,
        save_summary_steps=100,
        log_step_count_steps=None,
        keep_checkpoint_max=50,
    )
    base.update(config)
    return lib.Estimator(
        scored_model_fn(lib), str(model_dir), lib.RunConfig(**base), params={"lr": 0.01}
    )


def stop_value(model_dir):
    try:
        return bool(tf.train.load_variable(model_dir, "signal_early_stopping/STOP"))
    except Exception:  # no such variable: no stop hook was in the graph
        return None


#: name -> (hook factory name, args, kwargs, max_steps); with SCORES, where each stops:
#: no_increase at 10 (best 0.6 at 6) in train_and_evaluate. The other predicates are
#: checked on scripted event files (PREDICATE_CASES), without training.
HOOKS = {
    "no_increase": ("stop_if_no_increase_hook", ("score", 4), {}, 14),
}

#: name -> (hook factory name, args, kwargs): read against scripted_eval_dir()
PREDICATE_CASES = {
    "higher": ("stop_if_higher_hook", ("score", 0.55), {}),
    "higher_min": ("stop_if_higher_hook", ("score", 0.55), {"min_steps": 7}),
    "higher_min_past": ("stop_if_higher_hook", ("score", 0.55), {"min_steps": 13}),
    "higher_equal": ("stop_if_higher_hook", ("score", 0.7), {}),
    "lower": ("stop_if_lower_hook", ("score", 0.3), {"min_steps": 1}),
    "lower_none": ("stop_if_lower_hook", ("score", 0.0), {}),
    "no_increase": ("stop_if_no_increase_hook", ("score", 4), {}),
    "no_increase_5": ("stop_if_no_increase_hook", ("score", 5), {}),
    "no_increase_min": ("stop_if_no_increase_hook", ("score", 2), {"min_steps": 11}),
    "no_decrease": ("stop_if_no_decrease_hook", ("score", 2), {"min_steps": 7}),
    "no_decrease_big": ("stop_if_no_decrease_hook", ("score", 8), {}),
    "no_decrease_loss": ("stop_if_no_decrease_hook", ("loss", 4), {}),
    "missing_metric": ("stop_if_higher_hook", ("nope", 0.5), {}),
    "missing_dir": ("stop_if_higher_hook", ("score", 0.5), {"eval_dir": "/nonexistent/eval"}),
}


def scripted_eval_dir(directory):
    """Event files as evaluations write them: even steps 2..14 (two files, one partial)."""
    directory = str(directory)
    steps = list(range(2, 15, 2))
    with tf.Graph().as_default():
        for part, chunk in enumerate((steps[:4], steps[4:])):
            writer = tf.compat.v1.summary.FileWriter(directory, filename_suffix=f".{part}")
            for step in chunk:
                summary = tf.compat.v1.Summary()
                summary.value.add(tag="score", simple_value=float(SCORES[step]))
                summary.value.add(tag="loss", simple_value=10.0 - step + (step == 8) * 3)
                writer.add_summary(summary, step)
                # a non-scalar value and a scalar-less event at the same step are ignored
                text = tf.compat.v1.Summary()
                text.value.add(tag="checkpoint_path", tensor=tf.make_tensor_proto(b"x"))
                writer.add_summary(text, step)
            writer.close()
    return directory


def predicate_results(lib, root):
    """name -> what each hook's should_stop_fn answers on scripted_eval_dir (or raises)."""
    eval_dir = scripted_eval_dir(os.path.join(str(root), "scripted"))
    est = estimator(lib, os.path.join(str(root), "predicates"))
    out = {}
    for name, (factory, args, kwargs) in PREDICATE_CASES.items():
        kwargs = {"eval_dir": eval_dir, **kwargs}
        hook = getattr(lib.experimental, factory)(est, *args, **kwargs)
        out[name] = error_of(hook._should_stop_fn) or hook._should_stop_fn()
    return out


def early_stopping_run(lib, root, case):
    """train_and_evaluate with one stop hook checking every step; what it left behind."""
    model_dir = os.path.join(str(root), case)
    est = estimator(lib, model_dir)
    factory, args, kwargs, max_steps = HOOKS[case]
    hook = getattr(lib.experimental, factory)(
        est, *args, run_every_secs=None, run_every_steps=1, **kwargs
    )
    train_spec = lib.TrainSpec(train_input_fn, max_steps=max_steps, hooks=[hook])
    eval_spec = lib.EvalSpec(eval_input_fn, steps=1, throttle_secs=0)
    metrics, exports = lib.train_and_evaluate(est, train_spec, eval_spec)
    return dict(
        metrics={k: float(v) for k, v in metrics.items()},
        exports=exports,
        ckpts=checkpoint_steps(model_dir),
        names=sorted(n for n, _ in tf.train.list_variables(model_dir)),
        stop=stop_value(model_dir),
        eval_events=scalar_events(est.eval_dir()),
        files=sorted(f for f in os.listdir(model_dir) if not f.startswith("events.")),
    )


def predicate_run(lib, root, every_steps=3, stop_on_call=3):
    """make_early_stopping_hook in a plain train call: when the predicate is asked, STOP."""
    model_dir = os.path.join(str(root), f"predicate_{every_steps}_{stop_on_call}")
    est = estimator(lib, model_dir, save_checkpoints_steps=100)
    calls = []

    def should_stop():
        calls.append(len(calls) + 1)
        return len(calls) >= stop_on_call

    hook = lib.experimental.make_early_stopping_hook(est, should_stop, None, every_steps)
    est.train(train_input_fn, steps=20, hooks=[hook])
    return dict(calls=len(calls), ckpts=checkpoint_steps(model_dir), stop=stop_value(model_dir))


def stop_at_checkpoint_step_run(lib, root):
    """make_stop_at_checkpoint_step_hook on the chief: a StopAtStepHook(last_step)."""
    model_dir = os.path.join(str(root), "stop_at")
    est = estimator(lib, model_dir, save_checkpoints_steps=100)
    hook = lib.experimental.make_stop_at_checkpoint_step_hook(est, 5)
    est.train(train_input_fn, hooks=[hook])
    again = lib.experimental.make_stop_at_checkpoint_step_hook(est, 5)
    est.train(train_input_fn, hooks=[again])  # past last_step: one more step (StopAtStepHook)
    return dict(type=type(hook).__name__, ckpts=checkpoint_steps(model_dir))


class CountingHook(tf.compat.v1.train.SessionRunHook):
    """Counts sessions and runs (given to InMemoryEvaluatorHook as an evaluation hook)."""

    def __init__(self):
        self.sessions = self.runs = 0

    def after_create_session(self, session, coord):
        self.sessions += 1

    def after_run(self, run_context, run_values):
        self.runs += 1


def in_memory_run(lib, root, name="mem", steps=2, every_n_iter=3, train_steps=(4, 2)):
    """Two train calls with an InMemoryEvaluatorHook; the summaries it wrote."""
    model_dir = os.path.join(str(root), f"inmem_{name}")
    est = estimator(lib, model_dir, save_checkpoints_steps=100)
    counter = CountingHook()
    hook = lib.experimental.InMemoryEvaluatorHook(
        est, eval_input_fn, steps=steps, hooks=[counter], name=name, every_n_iter=every_n_iter
    )
    for n in train_steps:
        est.train(train_input_fn, steps=n, hooks=[hook])
    return dict(
        events=scalar_events(est.eval_dir(name)),
        eval_files=len(os.listdir(est.eval_dir(name))),
        ckpts=checkpoint_steps(model_dir),
        counter=(counter.sessions, counter.runs),
        evaluate=est.evaluate(eval_input_fn, steps=steps),
    )


def metric_fn_all(features, labels, predictions, config):
    del config
    return {
        "mse_added": tf.compat.v1.metrics.mean_squared_error(labels, predictions["y"]),
        "x0_mean": tf.compat.v1.metrics.mean(features["x"][:, 0]),
        "mae": tf.compat.v1.metrics.mean(tf.abs(predictions["y"])),  # replaces the model's
    }


def add_metrics_run(lib, root):
    """add_metrics on a trained Estimator: its evaluate, its training, its summaries."""
    model_dir = os.path.join(str(root), "added")
    est = estimator(lib, model_dir)
    est.train(train_input_fn, steps=3)
    added = lib.add_metrics(est, metric_fn_all)
    only_labels = lib.add_metrics(est, lambda labels: {"lab": tf.compat.v1.metrics.mean(labels)})
    out = dict(
        before=est.evaluate(eval_input_fn),
        after=added.evaluate(eval_input_fn, name="added"),
        labels=only_labels.evaluate(eval_input_fn, steps=1, name="lab"),
        same_dir=added.model_dir == est.model_dir,
        params=added.params,
    )
    added.train(train_input_fn, steps=2)
    out.update(
        ckpts=checkpoint_steps(model_dir),
        preds=[p["y"].tolist() for p in added.predict(eval_input_fn)][:5],
        events=scalar_events(added.eval_dir("added")),
    )
    return out


def error_of(fn):
    """``(type name, message)`` of what ``fn()`` raises (addresses masked), or None."""
    import re

    try:
        fn()
    except Exception as e:  # every error is compared by type and text
        return type(e).__name__, re.sub(r"0x[0-9a-f]+", "0x?", str(e).split("\ntf1compat_init:")[0])
    return None


def _scaffold_model_fn(lib, **scaffold_kw):
    base = scored_model_fn(lib)

    def model_fn(features, labels, mode, params):
        spec = base(features, labels, mode, params)
        kw = dict(scaffold_kw)
        if kw.get("saver") is True:
            kw["saver"] = tf.compat.v1.train.Saver()
        return spec._replace(scaffold=tf.compat.v1.train.Scaffold(**kw))

    return model_fn


def error_cases(lib, root):
    """name -> (error, sorted files in the model_dir afterwards) for each bad input."""
    root = str(root)
    exp = lib.experimental

    def est(name, model_fn=None):
        e = estimator(lib, os.path.join(root, name))
        if model_fn is not None:
            e = lib.Estimator(model_fn, e.model_dir, e.config, params={"lr": 0.01})
        return e

    def train_with(name, hook_fn, model_fn=None, steps=3):
        e = est(name, model_fn)
        e.train(train_input_fn, steps=steps, hooks=[hook_fn(e)])

    def train_and_eval_with(name, hook_fn):
        e = est(name)
        lib.train_and_evaluate(
            e,
            lib.TrainSpec(train_input_fn, max_steps=6, hooks=[hook_fn(e)]),
            lib.EvalSpec(eval_input_fn, steps=1, throttle_secs=0),
        )

    def three_tuple():
        return {"x": tf.zeros([2, 4])}, tf.zeros([2, 1]), tf.zeros([2])

    cases = {
        "both_timers": lambda: exp.make_early_stopping_hook(est("a"), lambda: 1, 10, 5),
        "no_timer": lambda: exp.stop_if_lower_hook(est("b"), "loss", 1, run_every_secs=None),
        "not_callable": lambda: exp.make_early_stopping_hook(est("c"), "stop"),
        "not_estimator": lambda: exp.stop_if_higher_hook("est", "loss", 1, eval_dir=root),
        "not_estimator_no_dir": lambda: exp.stop_if_higher_hook("est", "loss", 1),
        "metric_missing": lambda: train_and_eval_with(
            "d",
            lambda e: exp.stop_if_higher_hook(e, "nope", 1, run_every_secs=None, run_every_steps=1),
        ),
        "mem_every_0": lambda: exp.InMemoryEvaluatorHook(est("e"), eval_input_fn, every_n_iter=0),
        "mem_every_none": lambda: exp.InMemoryEvaluatorHook(
            est("f"), eval_input_fn, every_n_iter=None
        ),
        "mem_steps_0": lambda: exp.InMemoryEvaluatorHook(est("g"), eval_input_fn, steps=0),
        "mem_bad_hook": lambda: exp.InMemoryEvaluatorHook(est("h"), eval_input_fn, hooks=[1]),
        "mem_three_tuple": lambda: train_with(
            "i", lambda e: exp.InMemoryEvaluatorHook(e, three_tuple)
        ),
        "mem_saver": lambda: train_with(
            "j",
            lambda e: exp.InMemoryEvaluatorHook(e, eval_input_fn),
            _scaffold_model_fn(lib, saver=True),
        ),
        "mem_init_fn": lambda: train_with(
            "k",
            lambda e: exp.InMemoryEvaluatorHook(e, eval_input_fn),
            _scaffold_model_fn(lib, init_fn=lambda scaffold, session: None),
        ),
        "add_bad_arg": lambda: lib.add_metrics(est("l"), lambda labels, mode: {}),
        "add_not_dict": lambda: lib.add_metrics(
            est("m"), lambda labels: [tf.compat.v1.metrics.mean(labels)]
        ).evaluate(eval_input_fn, steps=1),
        "add_loss_name": lambda: lib.add_metrics(
            est("n"), lambda labels: {"loss": tf.compat.v1.metrics.mean(labels)}
        ).evaluate(eval_input_fn, steps=1),
    }
    out = {}
    for name, fn in cases.items():
        err = error_of(fn)
        files = {d: sorted(os.listdir(os.path.join(root, d))) for d in sorted(os.listdir(root))}
        out[name] = (
            err,
            {d: [f for f in fs if not f.startswith("events.")] for d, fs in files.items()},
        )
    return out


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode()
    return value


def collect(lib, root):
    """Every scenario's observable results for ``lib``, as JSON-compatible data."""
    root = str(root)
    os.makedirs(os.path.join(root, "errors"))
    runs = {
        f"early_stopping/{case}": lambda c=case: early_stopping_run(lib, root, c) for case in HOOKS
    }
    runs.update(
        {
            "predicates": lambda: predicate_results(lib, root),
            "predicate/every_3_stop_3": lambda: predicate_run(lib, root),
            "predicate/every_1_stop_1": lambda: predicate_run(lib, root, 1, 1),
            "stop_at_checkpoint_step": lambda: stop_at_checkpoint_step_run(lib, root),
            "in_memory/mem": lambda: in_memory_run(lib, root),
            "in_memory/default_name": lambda: in_memory_run(
                lib, root, name=None, steps=None, every_n_iter=1, train_steps=(2,)
            ),
            "add_metrics": lambda: add_metrics_run(lib, root),
            "errors": lambda: error_cases(lib, os.path.join(root, "errors")),
        }
    )
    assert sorted(runs) == sorted(SCENARIOS)
    out = {}
    for name, run in runs.items():
        start = time.perf_counter()
        out[name] = run()
        TIMES[name] = time.perf_counter() - start
    return _jsonable(out)


SCENARIOS = [
    *(f"early_stopping/{case}" for case in HOOKS),
    "predicates",
    "predicate/every_3_stop_3",
    "predicate/every_1_stop_1",
    "stop_at_checkpoint_step",
    "in_memory/mem",
    "in_memory/default_name",
    "add_metrics",
    "errors",
]

GOLDEN = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "hooks_tf215.json"
)


def main(argv):
    """``--golden``: write GOLDEN from the real tf.estimator (TF 2.15 only)."""
    import json
    import tempfile

    if argv != ["--golden"]:
        raise SystemExit("usage: python tests/support/hooks_models.py --golden")
    if not hasattr(tf, "estimator"):
        raise SystemExit("--golden needs TensorFlow 2.15 with tensorflow-estimator")
    with tempfile.TemporaryDirectory() as root:
        result = collect(tf.estimator, root)
    with open(GOLDEN, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
