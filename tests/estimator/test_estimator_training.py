"""``train_and_evaluate`` with ``TrainSpec`` / ``EvalSpec`` and the exporters (both legs).

Local mode as tf.estimator 2.15 runs it: evaluations after checkpoint saves (not the
session-start save), throttled by ``throttle_secs``, one more at the end; exporters
called after each evaluation (Latest keeps the newest N, Best exports on improvement,
Final once at max_steps). Differential checks against the real tf.estimator are in
test_estimator_export_differential.py.
"""

import json
import os

import pytest

tf = pytest.importorskip("tensorflow")

from support.estimator_export_models import FakeClock, make_export_model_fn, raw_receiver_fn  # noqa: E402
from support.estimator_models import eval_input_fn, scalar_events, train_input_fn  # noqa: E402

import tf1compat_init.estimator as E  # noqa: E402
from tf1compat_init.estimator import _export as _estimator_export  # noqa: E402


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr(_estimator_export, "time", FakeClock())


def estimator(model_dir, **config):
    base = dict(tf_random_seed=5, save_checkpoints_steps=4, log_step_count_steps=None)
    base.update(config)
    return E.Estimator(
        make_export_model_fn(E), str(model_dir), E.RunConfig(**base), params={"lr": 0.05}
    )


class Recorder(E.Exporter):
    """An exporter that records how it is called."""

    def __init__(self, name="rec"):
        self._name, self.calls = name, []

    @property
    def name(self):
        return self._name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        self.calls.append(
            (
                os.path.relpath(export_path, estimator.model_dir),
                os.path.basename(checkpoint_path),
                eval_result["global_step"],
                is_the_final_export,
            )
        )
        return f"export-{eval_result['global_step']}"


def exports(est, name):
    base = os.path.join(est.model_dir, "export", name)
    return sorted(os.listdir(base)) if os.path.isdir(base) else []


def test_evaluates_after_each_save_and_calls_exporters(tmp_path):
    est = estimator(tmp_path)
    rec = Recorder()
    latest = E.LatestExporter("latest", raw_receiver_fn(E), exports_to_keep=2)
    final = E.FinalExporter("final", raw_receiver_fn(E))
    metrics, results = E.train_and_evaluate(
        est,
        E.TrainSpec(train_input_fn, max_steps=10),
        E.EvalSpec(eval_input_fn, steps=2, exporters=[rec, latest, final], throttle_secs=0),
    )
    # Saves at 0 (session start, not evaluated), 4, 8 and 10 (the end).
    assert [c[2] for c in rec.calls] == [4, 8, 10]
    assert rec.calls[0] == (os.path.join("export", "rec"), "model.ckpt-4", 4, False)
    assert rec.calls[-1][1:] == ("model.ckpt-10", 10, True)
    assert [s for s, _ in scalar_events(est.eval_dir())["loss"]] == [4, 8, 10]
    assert metrics == est.evaluate(eval_input_fn, steps=2)
    assert results[0] == "export-10" and results[2].endswith(exports(est, "final")[0].encode())
    assert len(exports(est, "latest")) == 2 and len(exports(est, "final")) == 1
    assert results[1].endswith(exports(est, "latest")[-1].encode())
    # Already at max_steps: training is skipped, nothing is evaluated.
    assert E.train_and_evaluate(
        est, E.TrainSpec(train_input_fn, max_steps=10), E.EvalSpec(eval_input_fn)
    ) == (None, None)


def test_throttle_secs_skips_saves_until_the_end(tmp_path):
    est = estimator(tmp_path)
    rec = Recorder()
    E.train_and_evaluate(
        est,
        E.TrainSpec(train_input_fn, max_steps=10),
        E.EvalSpec(eval_input_fn, steps=1, exporters=rec, throttle_secs=600, name="t"),
    )
    # The first evaluable save (4) triggers; 8 is within 600 s of it; the end (10) runs.
    assert [c[2] for c in rec.calls] == [4, 10]
    assert [s for s, _ in scalar_events(est.eval_dir("t"))["loss"]] == [4, 10]


def test_best_exporter_compares_and_keeps(tmp_path):
    est = estimator(tmp_path)
    seen = []

    def larger_step(best_eval_result, current_eval_result):
        seen.append((best_eval_result["global_step"], current_eval_result["global_step"]))
        return current_eval_result["global_step"] % 8 == 0

    best = E.BestExporter(
        "best", raw_receiver_fn(E), compare_fn=larger_step, event_file_pattern=None
    )
    E.train_and_evaluate(
        est,
        E.TrainSpec(train_input_fn, max_steps=12),
        E.EvalSpec(eval_input_fn, steps=1, exporters=best, throttle_secs=0),
    )
    # 4: first export, no comparison; 8 beats 4; 12 does not beat 8.
    assert seen == [(4, 8), (8, 12)]
    assert len(exports(est, "best")) == 2
    # A new BestExporter first reads the best result so far from the eval event files.
    compared = []

    def lower_loss(best_eval_result, current_eval_result):
        compared.append(sorted(current_eval_result))
        return best_eval_result["loss"] > current_eval_result["loss"]

    loss_best = E.BestExporter("lb", raw_receiver_fn(E), compare_fn=lower_loss, exports_to_keep=1)
    metrics = est.evaluate(eval_input_fn, steps=1)
    path = os.path.join(est.model_dir, "export", "lb")
    ckpt = est.latest_checkpoint()
    assert loss_best.export(est, path, ckpt, metrics, False) is not None  # the first always
    assert ["loss", "mae"] in compared  # event results: summaries without global_step
    assert loss_best.export(est, path, ckpt, metrics, False) is None  # no improvement
    better = dict(metrics, loss=metrics["loss"] / 2)
    assert loss_best.export(est, path, ckpt, better, False) is not None
    assert len(exports(est, "lb")) == 1  # exports_to_keep


def test_spec_and_exporter_errors():
    fn = train_input_fn
    cases = [
        (lambda: E.TrainSpec(1), TypeError, "`input_fn` must be callable, given: 1"),
        (lambda: E.TrainSpec(fn, max_steps=0), ValueError, "Must specify max_steps > 0, given: 0"),
        (lambda: E.TrainSpec(fn, hooks=[1]), TypeError, "All hooks must be `SessionRunHook`"),
        (lambda: E.EvalSpec(fn, steps=0), ValueError, "Must specify steps > 0, given: 0"),
        (lambda: E.EvalSpec(fn, name=1), TypeError, "`name` must be string, given: 1"),
        (lambda: E.EvalSpec(fn, throttle_secs=-1), ValueError, "throttle_secs >= 0, given: -1"),
        (lambda: E.EvalSpec(fn, start_delay_secs=-1), ValueError, "start_delay_secs >= 0"),
        (lambda: E.EvalSpec(fn, exporters=[1]), TypeError, "must be an Exporter, an iterable"),
        (lambda: E.EvalSpec(fn, exporters=[Recorder(), Recorder()]), ValueError, "unique names"),
        (lambda: E.EvalSpec(fn, exporters=Recorder("")), ValueError, "cannot have a name"),
        (lambda: E.LatestExporter("a", None, exports_to_keep=0), ValueError, "must be positive"),
        (lambda: E.BestExporter(compare_fn=None), ValueError, "`compare_fn` must not be None."),
        (lambda: E.BestExporter(compare_fn=lambda a, b: 1), ValueError, "best_eval_result arg"),
        (lambda: E.BestExporter(exports_to_keep=0), ValueError, "must be a positive number"),
    ]
    for make, error, text in cases:
        with pytest.raises(error, match=text.replace("(", r"\(").replace("[", r"\[")):
            make()


def test_train_and_evaluate_argument_errors_and_tf_config(tmp_path, monkeypatch):
    est = estimator(tmp_path)
    train, evals = E.TrainSpec(train_input_fn, max_steps=1), E.EvalSpec(eval_input_fn)
    with pytest.raises(TypeError, match="`eval_spec` must have type `tf.estimator.EvalSpec`"):
        E.train_and_evaluate(est, train, None)
    with pytest.raises(TypeError, match="`estimator` must have type"):
        E.train_and_evaluate(object(), train, evals)
    with pytest.raises(TypeError, match="`train_spec` must have type"):
        E.train_and_evaluate(est, None, evals)
    # As tf.estimator: the estimator's RunConfig (read when it was built) decides the role.
    cluster = {"chief": ["a:1"], "worker": ["b:2"], "aux": ["c:3"]}
    for task, error in (
        ({"type": "aux", "index": 0}, "Task type aux is not supported. Supported task types"),
        ({"type": "evaluator", "index": 1}, "there can only be one `evaluator` task"),
    ):
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))
        in_cluster = E.Estimator(est.model_fn, model_dir=est.model_dir)
        with pytest.raises(ValueError, match=error):
            E.train_and_evaluate(in_cluster, train, evals)
    assert tf.train.latest_checkpoint(est.model_dir) is None


@pytest.mark.parametrize(
    "result, error, text",
    [
        ({}, ValueError, "should never return empty metrics"),
        (123, TypeError, "should return dict. Given <class 'int'>"),
        ({"loss": 1.0}, ValueError, "should have `global_step` in result"),
    ],
)
def test_bad_evaluate_results_are_refused(tmp_path, monkeypatch, result, error, text):
    est = estimator(tmp_path)
    monkeypatch.setattr(est, "evaluate", lambda **kw: result)
    with pytest.raises(error, match=text):
        E.train_and_evaluate(
            est,
            E.TrainSpec(train_input_fn, max_steps=5),
            E.EvalSpec(eval_input_fn, throttle_secs=0),
        )
