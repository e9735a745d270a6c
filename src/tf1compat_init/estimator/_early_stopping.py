# Copyright 2018 The TensorFlow Authors. All Rights Reserved.
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
# Modified from `tensorflow_estimator/python/estimator/early_stopping.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; event files read with
# tf.compat.v1.train.summary_iterator.
"""Early stopping from evaluation summaries (``tf.estimator.experimental.stop_if_*_hook``).

The hooks of tensorflow-estimator 2.15, with its semantics:

- ``should_stop_fn`` runs in the training session's ``after_run``, on the first step and
  then every ``run_every_secs`` seconds (default 60) or every ``run_every_steps`` steps
  (a ``SecondOrStepTimer`` on the global step fetched with the training op).
- The ``stop_if_*`` predicates read every ``events.out.tfevents.*`` file in the
  evaluation directory (``estimator.eval_dir()`` unless ``eval_dir`` is given): for each
  global step, the ``simple_value`` scalars of its summaries. Steps below ``min_steps``
  are skipped; a step whose summaries lack ``metric_name`` raises ``KeyError``.
- When the predicate says stop, the chief sets the boolean global variable
  ``signal_early_stopping/STOP`` (saved in the checkpoints) and requests a stop; a
  non-chief hook reads that variable at each step and stops when it is set.

Inside :func:`~tf1compat_init.estimator.train_and_evaluate` the evaluations write the
summaries these hooks read, so training ends once evaluation says so (the final
checkpoint is saved and evaluated as at any end of training).
"""

from __future__ import annotations

import collections
import operator
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf

from ._log import logger

__all__ = [
    "make_early_stopping_hook",
    "make_stop_at_checkpoint_step_hook",
    "read_eval_metrics",
    "stop_if_higher_hook",
    "stop_if_lower_hook",
    "stop_if_no_decrease_hook",
    "stop_if_no_increase_hook",
]


_EVENT_FILE_GLOB_PATTERN = "events.out.tfevents.*"
_STOP_SCOPE = "signal_early_stopping"
_STOP_NAME = "STOP"


def _check_estimator(estimator: Any) -> None:
    from . import Estimator

    if isinstance(estimator, Estimator):
        return
    message = f"`estimator` must have type `tf.estimator.Estimator`. Got: {type(estimator)}"
    if type(estimator).__module__.startswith("tensorflow_estimator"):
        message += (
            "\ntf1compat_init: this is tf.estimator's Estimator; build the estimator with "
            "tf1compat_init.estimator (same arguments) to use these hooks."
        )
    raise TypeError(message)


def make_early_stopping_hook(
    estimator: Any,
    should_stop_fn: Callable[[], bool],
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> tf.compat.v1.train.SessionRunHook:
    """A hook that stops training when ``should_stop_fn()`` returns True.

    Args:
        estimator: a :class:`~tf1compat_init.estimator.Estimator`.
        should_stop_fn: a function of no arguments returning a bool; the chief calls it.
        run_every_secs: call it at most this often, in seconds (default 60).
        run_every_steps: or call it every this many global steps (then pass
            ``run_every_secs=None``).

    Returns:
        On the chief (always, in local training), a hook that calls ``should_stop_fn``
        and sets ``signal_early_stopping/STOP``; elsewhere one that stops when that
        variable is set.

    Raises:
        TypeError: ``estimator`` is not an Estimator, or ``should_stop_fn`` is not callable.
        ValueError: both ``run_every_secs`` and ``run_every_steps`` are set.

    Example:
        >>> hook = make_early_stopping_hook(est, lambda: False, None, 10)  # doctest: +SKIP
        >>> est.train(input_fn, hooks=[hook])  # doctest: +SKIP
    """
    _check_estimator(estimator)
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError("Only one of `run_every_secs` and `run_every_steps` must be set.")
    # RunConfig refuses multi-worker strategies, for which TF 2.15 had its multi-worker
    # variant (it also took that variant for any train_distribute: a generator's truth).
    if estimator.config.is_chief:
        return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)
    return _CheckForStoppingHook()


def _hook_docstring(kind: str) -> str:
    return f"""A hook that stops training {kind}.

    Args:
        estimator: a :class:`~tf1compat_init.estimator.Estimator`.
        metric_name: the evaluation metric to watch ("loss", "accuracy", ...).
        {{arg}}
        eval_dir: the directory of evaluation summaries (default ``estimator.eval_dir()``).
        min_steps: evaluations at global steps below this are ignored.
        run_every_secs: check at most this often, in seconds (default 60).
        run_every_steps: or check every this many global steps (with ``run_every_secs=None``).

    Returns:
        A ``SessionRunHook`` for ``train`` or ``TrainSpec(hooks=...)``.
    """


def stop_if_higher_hook(
    estimator: Any,
    metric_name: str,
    threshold: float,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> tf.compat.v1.train.SessionRunHook:
    every = (eval_dir, min_steps, run_every_secs, run_every_steps)
    return _threshold_hook(threshold, True, estimator, metric_name, *every)


def stop_if_lower_hook(
    estimator: Any,
    metric_name: str,
    threshold: float,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> tf.compat.v1.train.SessionRunHook:
    every = (eval_dir, min_steps, run_every_secs, run_every_steps)
    return _threshold_hook(threshold, False, estimator, metric_name, *every)


def stop_if_no_increase_hook(
    estimator: Any,
    metric_name: str,
    max_steps_without_increase: int,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> tf.compat.v1.train.SessionRunHook:
    every = (eval_dir, min_steps, run_every_secs, run_every_steps)
    return _no_improvement_hook(max_steps_without_increase, True, estimator, metric_name, *every)


def stop_if_no_decrease_hook(
    estimator: Any,
    metric_name: str,
    max_steps_without_decrease: int,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
) -> tf.compat.v1.train.SessionRunHook:
    every = (eval_dir, min_steps, run_every_secs, run_every_steps)
    return _no_improvement_hook(max_steps_without_decrease, False, estimator, metric_name, *every)


stop_if_higher_hook.__doc__ = _hook_docstring(
    "once an evaluation at or after ``min_steps`` has the metric above ``threshold``"
).format(arg="threshold: the value to exceed.")
stop_if_lower_hook.__doc__ = _hook_docstring(
    "once an evaluation at or after ``min_steps`` has the metric below ``threshold``"
).format(arg="threshold: the value to go below.")
stop_if_no_increase_hook.__doc__ = _hook_docstring(
    "when the metric has not increased for ``max_steps_without_increase`` global steps "
    "(counted between evaluations: the best one and a later one)"
).format(arg="max_steps_without_increase: global steps allowed without a new maximum.")
stop_if_no_decrease_hook.__doc__ = _hook_docstring(
    "when the metric has not decreased for ``max_steps_without_decrease`` global steps "
    "(counted between evaluations: the best one and a later one)"
).format(arg="max_steps_without_decrease: global steps allowed without a new minimum.")


def _events(eval_dir: str) -> Iterator[Any]:
    if not tf.io.gfile.exists(eval_dir):
        return
    for path in tf.io.gfile.glob(os.path.join(eval_dir, _EVENT_FILE_GLOB_PATTERN)):
        try:
            yield from tf.compat.v1.train.summary_iterator(path)
        except tf.errors.DataLossError as e:
            # A file being written (or truncated): the rest of it is skipped, as TF does.
            logger.warning(
                "Skipping rest of the file due to encountering data corruption error; file "
                "path: %s; original error raised by `tf.train.summary_iterator`: %s",
                path,
                e,
            )


def read_eval_metrics(eval_dir: str) -> collections.OrderedDict:
    """``{global_step: {tag: value}}`` of the scalar summaries in ``eval_dir``, by step.

    Only ``simple_value`` summaries count (the ones ``Estimator.evaluate`` writes for
    scalar metrics); a step's values from several files or events are merged.
    """
    by_step: dict = collections.defaultdict(dict)
    for event in _events(eval_dir):
        if not event.HasField("summary"):
            continue
        scalars = {v.tag: v.simple_value for v in event.summary.value if v.HasField("simple_value")}
        if scalars:
            by_step[event.step].update(scalars)
    return collections.OrderedDict(sorted(by_step.items(), key=lambda item: item[0]))


def _metric(metrics: dict, metric_name: str, step: int, eval_dir: str) -> float:
    try:
        return metrics[metric_name]
    except KeyError as e:
        e.add_note(
            f"tf1compat_init: the evaluation at global step {step} in {eval_dir} has no "
            f"scalar {metric_name!r}; it has {sorted(metrics)}. Use one of those names "
            "(the keys of Estimator.evaluate's result)."
        )
        raise


def _eval_metric_hook(
    new_check: Callable[[], Callable[[int, float], bool]],
    estimator: Any,
    metric_name: str,
    eval_dir: str | None,
    min_steps: int,
    run_every_secs: float | None,
    run_every_steps: int | None,
) -> tf.compat.v1.train.SessionRunHook:
    # Each look walks the evaluations by step (those below min_steps skipped) with a fresh
    # new_check(); the first check(step, value) that holds stops training.
    if eval_dir is None:
        eval_dir = estimator.eval_dir()

    def should_stop() -> bool:
        check = new_check()
        for step, metrics in read_eval_metrics(eval_dir).items():
            if step >= min_steps and check(step, _metric(metrics, metric_name, step, eval_dir)):
                return True
        return False

    return make_early_stopping_hook(estimator, should_stop, run_every_secs, run_every_steps)


def _threshold_hook(
    threshold: float, higher_is_better: bool, estimator: Any, metric_name: str, *every: Any
) -> tf.compat.v1.train.SessionRunHook:
    crossed = operator.gt if higher_is_better else operator.lt
    relation = "greater than" if higher_is_better else "less than"

    def check(step: int, value: float) -> bool:
        if not crossed(value, threshold):
            return False
        logger.info(
            'At step %s, metric "%s" has value %s which is %s the configured '
            "threshold (%s) for early stopping.",
            step,
            metric_name,
            value,
            relation,
            threshold,
        )
        return True

    return _eval_metric_hook(lambda: check, estimator, metric_name, *every)


def _no_improvement_hook(
    max_steps_without_improvement: int,
    higher_is_better: bool,
    estimator: Any,
    metric_name: str,
    *every: Any,
) -> tf.compat.v1.train.SessionRunHook:
    better = operator.gt if higher_is_better else operator.lt
    direction = "increase" if higher_is_better else "decrease"

    def new_check() -> Callable[[int, float], bool]:
        best = best_step = None

        def check(step: int, value: float) -> bool:
            nonlocal best, best_step
            if best is None or better(value, best):
                best, best_step = value, step
            if step - best_step < max_steps_without_improvement:
                return False
            logger.info(
                'No %s in metric "%s" for %s steps, which is greater than or equal to '
                "max steps (%s) configured for early stopping.",
                direction,
                metric_name,
                step - best_step,
                max_steps_without_improvement,
            )
            return True

        return check

    return _eval_metric_hook(new_check, estimator, metric_name, *every)


def _get_or_create_stop_var() -> Any:
    # A global (so checkpointed) boolean the chief sets and other workers poll.
    with tf.compat.v1.variable_scope(_STOP_SCOPE, values=[], reuse=tf.compat.v1.AUTO_REUSE):
        return tf.compat.v1.get_variable(
            name=_STOP_NAME,
            shape=[],
            dtype=tf.bool,
            initializer=tf.compat.v1.constant_initializer(False),
            collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES],
            trainable=False,
        )


class _StopOnPredicateHook(tf.compat.v1.train.SessionRunHook):
    """The chief's hook: asks ``should_stop_fn`` on the timer's steps, then stops."""

    def __init__(
        self,
        should_stop_fn: Callable[[], bool],
        run_every_secs: float | None = 60,
        run_every_steps: int | None = None,
    ) -> None:
        if not callable(should_stop_fn):
            raise TypeError("`should_stop_fn` must be callable.")
        self._should_stop_fn = should_stop_fn
        self._timer = tf.compat.v1.train.SecondOrStepTimer(
            every_secs=run_every_secs, every_steps=run_every_steps
        )
        self._global_step_tensor = self._stop_var = self._stop_op = None

    def begin(self) -> None:
        self._global_step_tensor = tf.compat.v1.train.get_global_step()
        self._stop_var = _get_or_create_stop_var()
        self._stop_op = tf.compat.v1.assign(self._stop_var, True)

    def before_run(self, run_context: Any) -> Any:
        return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        step = run_values.results
        if not self._timer.should_trigger_for_step(step):
            return
        self._timer.update_last_triggered_step(step)
        if self._should_stop_fn():
            logger.info("Requesting early stopping at global step %d", step)
            run_context.session.run(self._stop_op)
            run_context.request_stop()


class _CheckForStoppingHook(tf.compat.v1.train.SessionRunHook):
    """A non-chief's hook: stops once the chief has set ``signal_early_stopping/STOP``."""

    def __init__(self) -> None:
        self._stop_var = None

    def begin(self) -> None:
        self._stop_var = _get_or_create_stop_var()

    def before_run(self, run_context: Any) -> Any:
        return tf.compat.v1.train.SessionRunArgs(self._stop_var)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if run_values.results:
            logger.info("Early stopping requested, suspending run.")
            run_context.request_stop()


class _StopAtCheckpointStepHook(tf.compat.v1.train.SessionRunHook):
    """A non-chief's stop at ``last_step``: once the chief's checkpoint has reached it."""

    def __init__(self, model_dir: Any, last_step: Any, wait_after_file_check_secs: float = 30):
        if last_step is None:
            raise ValueError("last_step must be specified.")
        if model_dir is None:
            raise ValueError("model_dir must be specified.")
        self._model_dir = model_dir
        self._last_step = last_step
        self._wait_after_file_check_secs = wait_after_file_check_secs

    def begin(self) -> None:
        from tensorflow.python.training import training_util

        self._global_step_tensor = training_util._get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StopAtCheckpointStepHook.")

    def before_run(self, run_context: Any) -> Any:
        return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if run_values.results + 1 < self._last_step:
            return
        from ._estimator import _global_step_in

        # The step must be on disk: reading the checkpoint is throttled for shared storage.
        if _global_step_in(self._model_dir) >= self._last_step:
            run_context.request_stop()
        else:
            time.sleep(self._wait_after_file_check_secs)


def make_stop_at_checkpoint_step_hook(
    estimator: Any, last_step: int, wait_after_file_check_secs: float = 30
) -> tf.compat.v1.train.SessionRunHook:
    """A hook that stops training at ``last_step``.

    The chief (always, in local training) gets ``tf.compat.v1.train.StopAtStepHook(
    last_step=last_step)``; another worker stops once the latest checkpoint in
    ``estimator.model_dir`` has reached ``last_step``, checking it at most every
    ``wait_after_file_check_secs`` seconds.

    Example:
        >>> hook = make_stop_at_checkpoint_step_hook(est, 1000)  # doctest: +SKIP
    """
    if estimator.config.is_chief:
        return tf.compat.v1.train.StopAtStepHook(last_step=last_step)
    return _StopAtCheckpointStepHook(estimator.model_dir, last_step, wait_after_file_check_secs)
