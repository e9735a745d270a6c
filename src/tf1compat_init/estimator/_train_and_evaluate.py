# Copyright 2017 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================
# Modified from `tensorflow_estimator/python/estimator/training.py` (v2.15.0) for tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; cluster tasks run through _cluster_run and _cluster.
"""``train_and_evaluate`` with ``TrainSpec`` / ``EvalSpec``, as tf.estimator 2.15 runs it.

Locally: one ``Estimator.train`` call up to ``TrainSpec.max_steps``; a saving listener
evaluates after each checkpoint save (not the first one, made when the session starts)
once ``throttle_secs`` have passed since the last evaluation, and once more at the end if
the final checkpoint was not evaluated; each evaluation calls the ``EvalSpec`` exporters.
As a task of a ``TF_CONFIG`` cluster: ``ps`` serves, ``chief`` / ``worker`` train
between-graph (``_cluster_run``), ``evaluator`` evaluates each new checkpoint once until
``max_steps``, the legacy ``master`` trains and evaluates as the local mode does.
"""

from __future__ import annotations

import collections
import os
import time
from typing import Any

import tensorflow as tf

from . import _cluster_run
from ._cluster import EVALUATOR, MASTER, PS
from ._exporter import Exporter
from ._log import logger
from ._spec import checked_items

__all__ = ["EvalSpec", "TrainSpec", "train_and_evaluate"]


EVALUATED = "evaluated"
_MISSING_CHECKPOINT = "missing checkpoint"
_NO_NEW_CHECKPOINT = "no new checkpoint"


def _validate_input_fn(input_fn: Any) -> None:
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")


def _validate_hooks(hooks: Any) -> tuple:
    message = "All hooks must be `SessionRunHook` instances, given: {}"
    return checked_items(hooks, tf.compat.v1.train.SessionRunHook, message)


def _validate_saving_listeners(listeners: Any) -> tuple:
    message = "All saving_listeners must be `CheckpointSaverListener` instances, given: {}"
    return checked_items(listeners, tf.compat.v1.train.CheckpointSaverListener, message)


def _exporters_type_error(exporters: Any, bad: Any) -> TypeError:
    message = (
        f"`exporters` must be an Exporter, an iterable of Exporter, or `None`, found {exporters}."
    )
    if type(bad).__name__ in ("LatestExporter", "BestExporter", "FinalExporter", "Exporter"):
        message += (
            "\ntf1compat_init: this is tf.estimator's exporter; use the class of the same "
            "name from tf1compat_init.estimator (same arguments)."
        )
    return TypeError(message)


def _validate_exporters(exporters: Any) -> tuple:
    if not exporters:
        return ()
    if isinstance(exporters, Exporter):
        exporters = [exporters]
    try:
        exporters = list(exporters)
    except TypeError:
        raise _exporters_type_error(exporters, exporters) from None
    names: list = []
    for exporter in exporters:
        if not isinstance(exporter, Exporter):
            raise _exporters_type_error(exporters, exporter)
        if not exporter.name:
            raise ValueError(
                "An Exporter cannot have a name that is `None` or empty. All exporter "
                f"names: {[e.name for e in exporters]}"
            )
        if not isinstance(exporter.name, str):
            raise ValueError(f"An Exporter must have a string name. Given: {type(exporter.name)}")
        if exporter.name in names:
            raise ValueError(
                "`exporters` must have unique names. Such a name cannot be `None`. All "
                f"exporter names: {[e.name for e in exporters]}"
            )
        names.append(exporter.name)
    return tuple(exporters)


class TrainSpec(
    collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])
):
    """The training half of ``train_and_evaluate`` (``tf.estimator.TrainSpec``).

    Args:
        input_fn: the training ``input_fn``.
        max_steps: the global step to train to (``None``: until the input ends).
        hooks: ``SessionRunHook``s for training.
        saving_listeners: ``CheckpointSaverListener``s, called before the evaluation one.
    """

    __slots__ = ()

    def __new__(
        cls,
        input_fn: Any,
        max_steps: int | None = None,
        hooks: Any = None,
        saving_listeners: Any = None,
    ) -> TrainSpec:
        _validate_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        hooks = _validate_hooks(hooks)
        saving_listeners = _validate_saving_listeners(saving_listeners)
        return super().__new__(cls, input_fn, max_steps, hooks, saving_listeners)


class EvalSpec(
    collections.namedtuple(
        "EvalSpec",
        ["input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs", "throttle_secs"],
    )
):
    """The evaluation half of ``train_and_evaluate`` (``tf.estimator.EvalSpec``).

    Args:
        input_fn: the evaluation ``input_fn``.
        steps: batches per evaluation (``None``: until the input ends).
        name: the evaluation's name (summaries go to ``model_dir/eval_<name>``).
        hooks: ``SessionRunHook``s for evaluation.
        exporters: an ``Exporter`` or a list of them, called after each evaluation.
        start_delay_secs: checked, unused locally (as in tf.estimator).
        throttle_secs: evaluate a new checkpoint only this long after the last evaluation.
    """

    __slots__ = ()

    def __new__(
        cls,
        input_fn: Any,
        steps: int | None = 100,
        name: str | None = None,
        hooks: Any = None,
        exporters: Any = None,
        start_delay_secs: float = 120,
        throttle_secs: float = 600,
    ) -> EvalSpec:
        _validate_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        hooks = _validate_hooks(hooks)
        exporters = _validate_exporters(exporters)
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(
            cls, input_fn, steps, name, hooks, exporters, start_delay_secs, throttle_secs
        )


def _check_eval_result(metrics: Any, checkpoint_path: Any) -> None:
    """What tf.estimator's ``_EvalResult`` checks of an evaluation's result."""
    if not metrics:
        raise ValueError("Internal error: `Estimator.evaluate` should never return empty metrics.")
    if not isinstance(metrics, dict):
        raise TypeError(f"`Estimator.evaluate` should return dict. Given {type(metrics)}.")
    if tf.compat.v1.GraphKeys.GLOBAL_STEP not in metrics:
        raise ValueError(
            "Internal error: `Estimator.evaluate` result should have `global_step` in result. "
            f"Given {metrics}"
        )
    if not checkpoint_path:
        raise ValueError("Internal error: `checkpoint_path` should never be empty.")


class Evaluator:
    """Evaluates the latest checkpoint (once per checkpoint) and runs the exporters."""

    def __init__(self, estimator: Any, eval_spec: EvalSpec, max_training_steps: Any) -> None:
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._max_training_steps = max_training_steps
        self._previous_ckpt_path = None
        self._last_warning_time = 0.0

    def _log_err_msg(self, message: str) -> None:
        now = time.time()
        if now - self._last_warning_time > 600:
            logger.warning(message)
            self._last_warning_time = now

    def evaluate_and_export(self) -> tuple[str, Any, list]:
        latest = self._estimator.latest_checkpoint()
        if not latest:
            self._log_err_msg(
                "Estimator is not trained yet. Will start an evaluation when a checkpoint is ready."
            )
            return _MISSING_CHECKPOINT, None, []
        if latest == self._previous_ckpt_path:
            self._log_err_msg(
                "No new checkpoint ready for evaluation. Skip the current evaluation pass "
                "as evaluation results are expected to be same for the same checkpoint."
            )
            return _NO_NEW_CHECKPOINT, None, []
        metrics = self._estimator.evaluate(
            input_fn=self._eval_spec.input_fn,
            steps=self._eval_spec.steps,
            name=self._eval_spec.name,
            checkpoint_path=latest,
            hooks=self._eval_spec.hooks,
        )
        _check_eval_result(metrics, latest)
        is_final = bool(self._max_training_steps) and (
            metrics[tf.compat.v1.GraphKeys.GLOBAL_STEP] >= self._max_training_steps
        )
        base = os.path.join(os.fsdecode(self._estimator.model_dir), "export")
        exports = [
            exporter.export(
                estimator=self._estimator,
                export_path=os.path.join(base, exporter.name),
                checkpoint_path=latest,
                eval_result=metrics,
                is_the_final_export=is_final,
            )
            for exporter in self._eval_spec.exporters
        ]
        self._last_warning_time = 0.0
        self._previous_ckpt_path = latest
        return EVALUATED, metrics, exports


class _EvaluateAfterSave(tf.compat.v1.train.CheckpointSaverListener):
    """Evaluates after each checkpoint save, at most once per ``throttle_secs``."""

    def __init__(self, evaluator: Evaluator, throttle_secs: float) -> None:
        self._evaluator = evaluator
        self._throttle_secs = throttle_secs
        self.eval_result: Any = None
        self.export_results: Any = None

    def begin(self) -> None:
        self._timer = tf.compat.v1.train.SecondOrStepTimer(every_secs=self._throttle_secs)
        self._is_first_run = True

    def after_save(self, session: Any, global_step_value: int) -> None:
        del session
        if self._is_first_run:  # the checkpoint written when the session started
            self._is_first_run = False
            return
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            logger.info(
                "Skip the current checkpoint eval due to throttle secs (%s secs).",
                self._throttle_secs,
            )

    def end(self, session: Any, global_step_value: int) -> None:
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value: int) -> None:
        self._timer.update_last_triggered_step(global_step_value)
        status, self.eval_result, self.export_results = self._evaluator.evaluate_and_export()
        if status != EVALUATED:
            raise RuntimeError(
                f"There was no new checkpoint after the training. Eval status: {status}"
            )


def _foreign_advice(value: Any, name: str) -> str:
    if not type(value).__name__.startswith(name):
        return ""
    return (
        f"\ntf1compat_init: this is tf.estimator's {name}; build it with "
        f"tf1compat_init.estimator.{name} (same arguments)."
    )


def train_and_evaluate(estimator: Any, train_spec: TrainSpec, eval_spec: EvalSpec) -> tuple:
    """Trains to ``train_spec.max_steps``, evaluating and exporting after checkpoint saves.

    tf.estimator 2.15's local mode: evaluations follow the checkpoint cadence of
    ``RunConfig`` (``save_checkpoints_steps`` / ``_secs``), at most one per
    ``eval_spec.throttle_secs``, plus one at the end; each runs the ``eval_spec``
    exporters. In a ``TF_CONFIG`` cluster each task does its part: ``ps`` serves,
    ``chief`` / ``worker`` train, ``evaluator`` evaluates each new checkpoint.

    Returns:
        ``(metrics, export_results)`` of the last evaluation (``(None, None)`` when
        ``max_steps`` was already reached).
    """
    from ._estimator import Estimator

    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(
            f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {type(eval_spec)}"
            + _foreign_advice(eval_spec, "EvalSpec")
        )
    if not isinstance(estimator, Estimator):
        raise TypeError(
            f"`estimator` must have type `tf.estimator.Estimator`. Got: {type(estimator)}"
            + _foreign_advice(estimator, "Estimator")
        )
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(
            f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: {type(train_spec)}"
            + _foreign_advice(train_spec, "TrainSpec")
        )
    config = estimator.config
    if config.task_type == EVALUATOR and config.task_id > 0:
        raise ValueError(
            "For distributed training, there can only be one `evaluator` task (with task "
            f"id 0).  Given task id {config.task_id}"
        )
    if not config.cluster_spec and config.task_type != EVALUATOR:
        logger.info("Running training and evaluation locally (non-distributed).")
        return _train_and_evaluate(estimator, train_spec, eval_spec)
    role = _cluster_run.check_task(config)
    logger.info("Running task %s:%d of the cluster.", role, config.task_id)
    if role == PS:
        _cluster_run.serve_as_ps(config)
    elif role == EVALUATOR:
        _evaluate_continuously(estimator, train_spec, eval_spec)
    elif role == MASTER:  # the legacy cluster shape: the master trains and evaluates
        _cluster_run.ensure_server(config)
        _train_and_evaluate(estimator, train_spec, eval_spec)
    else:
        _cluster_run.train_as_trainer(estimator, train_spec, config)
    return None  # tf.estimator returns nothing from a cluster task


def _train_and_evaluate(estimator: Any, train_spec: TrainSpec, eval_spec: EvalSpec) -> tuple:
    config = estimator.config
    logger.info(
        "Start train and evaluate loop. The evaluate will happen after every checkpoint. "
        "Checkpoint frequency is determined based on RunConfig arguments: "
        "save_checkpoints_steps %s or save_checkpoints_secs %s.",
        config.save_checkpoints_steps,
        config.save_checkpoints_secs,
    )
    evaluator = Evaluator(estimator, eval_spec, train_spec.max_steps)
    listener = _EvaluateAfterSave(evaluator, eval_spec.throttle_secs)
    estimator.train(
        input_fn=train_spec.input_fn,
        max_steps=train_spec.max_steps,
        hooks=list(train_spec.hooks),
        saving_listeners=train_spec.saving_listeners + (listener,),
    )
    return listener.eval_result, listener.export_results


def _evaluate_continuously(estimator: Any, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    """The evaluator task: each new checkpoint once, until one at ``max_steps`` is evaluated."""
    if eval_spec.start_delay_secs:
        logger.info("Waiting %f secs before starting eval.", eval_spec.start_delay_secs)
        time.sleep(eval_spec.start_delay_secs)
    evaluator = Evaluator(estimator, eval_spec, train_spec.max_steps)
    while True:
        start = time.time()
        status, metrics, _ = evaluator.evaluate_and_export()
        if status == EVALUATED:
            step = metrics.get(tf.compat.v1.GraphKeys.GLOBAL_STEP)
            if step and train_spec.max_steps and step >= train_spec.max_steps:
                logger.info(
                    "Exiting evaluation, global_step=%s >= train max_steps=%s",
                    step,
                    train_spec.max_steps,
                )
                return
        wait = eval_spec.throttle_secs - (time.time() - start)
        if wait > 0:
            logger.info("Waiting %f secs before starting next eval run.", wait)
            time.sleep(wait)
        elif eval_spec.throttle_secs == 0 and status != EVALUATED:
            logger.warning(
                "EvalSpec.throttle_secs is set as 0. This might overload the job before "
                "finding (next) new checkpoint. Please consider to increase it."
            )
