"""What ``Estimator.train`` hands ``MonitoredTrainingSession`` on each task of a cluster.

As tensorflow-estimator 2.15's own estimator_test does (``test_master_distributed_hooks``
and the tests after it): ``MonitoredTrainingSession`` is patched where tf.estimator looked
it up (``tensorflow.python.training.training``), so nothing connects anywhere, and the
arguments are compared. With both ``master`` and ``worker`` jobs, no task writes
summaries or counts steps through the session; worker 0 gets a ``SummarySaverHook`` and a
``StepCounterHook`` instead. On TF 2.15 the real ``tf.estimator.Estimator`` is patched the
same way and must give the same answers.
"""

from __future__ import annotations

import json
from unittest import mock

import pytest
from support.estimator_models import step_model_fn

tf = pytest.importorskip("tensorflow")

from tensorflow.python.training import training  # noqa: E402

from tf1compat_init import estimator as ours  # noqa: E402

HAS_REAL = hasattr(tf, "estimator")

#: name -> (cluster, task type, task index, RunConfig keywords, expected
#: (save_summaries_steps, log_step_count_steps, worker-0 hooks present))
CASES = {
    "master_of_master_worker_ps": (
        {"ps": ["localhost:1234"], "worker": ["localhost:1235"], "master": ["localhost:1236"]},
        "master",
        0,
        {},
        (0, None, False),
    ),
    "worker_0_of_master_worker_ps": (
        {"ps": ["localhost:1234"], "worker": ["localhost:1235"], "master": ["localhost:1236"]},
        "worker",
        0,
        {},
        (0, None, True),
    ),
    "worker_1_of_master_workers_ps": (
        {
            "ps": ["localhost:1234"],
            "worker": ["localhost:1235", "localhost:1237"],
            "master": ["localhost:1236"],
        },
        "worker",
        1,
        {},
        (0, None, False),
    ),
    "single_master": (
        {"master": ["localhost:1234"]},
        "master",
        0,
        {"save_summary_steps": 100, "log_step_count_steps": 200},
        (100, 200, False),
    ),
    "master_with_ps": (
        {"master": ["localhost:1234"], "ps": ["localhost: 1235"]},
        "master",
        0,
        {"save_summary_steps": 100, "log_step_count_steps": 200},
        (100, 200, False),
    ),
}


def _input_fn():
    return {"x": tf.constant([[1.0]])}, tf.constant([[1.0]])


def _session_args(lib, case, tmp_path):
    cluster, task_type, index, keywords, _ = CASES[case]
    tf_config = {"cluster": cluster, "task": {"type": task_type, "index": index}}
    with mock.patch.dict("os.environ", {"TF_CONFIG": json.dumps(tf_config)}):
        config = lib.RunConfig(model_dir=str(tmp_path / lib.__name__), **keywords)
    est = lib.Estimator(model_fn=step_model_fn(lib), config=config)
    with mock.patch.object(training, "MonitoredTrainingSession") as session:
        est.train(_input_fn, steps=1)
    kwargs = session.call_args[1]
    kinds = {type(h).__name__ for h in kwargs["hooks"]}
    return (
        kwargs["save_summaries_steps"],
        kwargs["log_step_count_steps"],
        {"SummarySaverHook", "StepCounterHook"} <= kinds,
        kwargs["master"],
        kwargs["is_chief"],
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_session_arguments_on_each_task_are_tf_estimators(case, tmp_path):
    got = _session_args(ours, case, tmp_path)
    assert got[:3] == CASES[case][4]
    if HAS_REAL:
        assert got == _session_args(tf.estimator, case, tmp_path)
