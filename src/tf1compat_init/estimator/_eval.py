# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``Estimator.evaluate`` and ``Estimator.predict`` (tf.estimator 2.15 semantics, local only).

Evaluation restores the checkpoint (or initializes, when there is none), runs the
metric update ops until the input ends or ``steps`` batches were seen, reads the
metric values once, and writes them as summaries to ``eval_dir(name)``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import tensorflow as tf

from ._estimator_train import create_global_step, maybe_warm_start
from ._fn_calls import call_input_fn, call_model_fn, parse_input_fn_result
from ._log import logger
from ._spec import LOSS_METRIC_KEY, ModeKeys

__all__ = [
    "StopAfterNEvalsHook",
    "build_eval_graph",
    "evaluate",
    "predict",
    "run_eval",
    "steps_hooks",
]


_GLOBAL_STEP = "global_step"


class StopAfterNEvalsHook(tf.compat.v1.train.SessionRunHook):
    """Stops evaluation after ``num_evals`` batches, logging progress as tf.estimator does."""

    def __init__(self, num_evals: int | None) -> None:
        self._num_evals = num_evals
        self._evals_completed = None
        self._log_every = (
            1 if (num_evals is None or num_evals < 20) else math.floor(num_evals / 10.0)
        )

    def set_evals_completed_tensor(self, tensor: Any) -> None:
        self._evals_completed = tensor

    def before_run(self, run_context: Any) -> Any:
        return tf.compat.v1.train.SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context: Any, run_values: Any) -> None:
        done = run_values.results["evals_completed"]
        if self._num_evals is None:
            logger.info("Evaluation [%d]", done)
        elif done % self._log_every == 0 or done == self._num_evals:
            logger.info("Evaluation [%d/%d]", done, self._num_evals)
        if self._num_evals is not None and done >= self._num_evals:
            run_context.request_stop()


def steps_hooks(steps: int | None) -> list:
    """The hook that makes ``evaluate(steps=N)`` stop after N batches."""
    if steps is None:
        return []
    if steps <= 0:
        raise ValueError(f"Must specify steps > 0, given: {steps}")
    return [StopAfterNEvalsHook(num_evals=steps)]


def _eval_step() -> Any:
    graph = tf.compat.v1.get_default_graph()
    found = graph.get_collection(tf.compat.v1.GraphKeys.EVAL_STEP)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    return tf.compat.v1.get_variable(
        "eval_step",
        shape=[],
        dtype=tf.int64,
        initializer=tf.compat.v1.zeros_initializer(),
        trainable=False,
        collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES, tf.compat.v1.GraphKeys.EVAL_STEP],
    )


def _metric_ops(spec: Any, strategy: Any = None) -> tuple[Any, dict]:
    """Adds the ``loss`` mean metric; splits the metrics into one update op and values.

    With a strategy, ``spec`` holds every replica's values and the loss metric is made
    in each replica (its variables sum across them).
    """
    metric_ops = dict(spec.eval_metric_ops)
    if LOSS_METRIC_KEY in metric_ops:
        raise ValueError(
            f'Metric with name "{LOSS_METRIC_KEY}" is not allowed, because Estimator '
            "already defines a default metric with the same name."
        )
    if strategy is None:
        metric_ops[LOSS_METRIC_KEY] = tf.compat.v1.metrics.mean(spec.loss)
    else:
        metric_ops[LOSS_METRIC_KEY] = strategy.extended.call_for_each_replica(
            tf.compat.v1.metrics.mean, args=(spec.loss,)
        )
    updates, values = [], {}
    for name, (value, update) in sorted(metric_ops.items()):  # sorted: a stable graph
        values[name] = value
        updates.append(update if strategy is None else strategy.group(update))
    return (tf.group(*updates) if updates else None), values


def _call_model_fn_distributed(est: Any, input_fn: Any, strategy: Any) -> tuple:
    """``(scaffold, evaluation_hooks, input_hooks, update_op, values)``, one model per replica."""
    from . import _distribute

    iterator, input_hooks = _distribute.make_iterator(est, input_fn, ModeKeys.EVAL, strategy)
    features, labels = _distribute.parse_iterator_result(iterator.get_next())
    grouped = strategy.extended.call_for_each_replica(
        call_model_fn,
        args=(est._model_fn, features, labels, ModeKeys.EVAL, est.params, est.config),
    )
    update_op, values = _metric_ops(grouped, strategy)
    scaffold = _distribute.combine_scaffold(grouped.scaffold, strategy)
    eval_hooks = _distribute.first_replica_hooks(strategy, grouped.evaluation_hooks)
    return scaffold, eval_hooks, input_hooks, update_op, values


def _run_eval(
    checkpoint_path: Any, scaffold: Any, update_op: Any, values: dict, hooks: list, config: Any
) -> dict:
    eval_step = _eval_step()
    hooks = list(hooks)
    if update_op is not None:
        increment = tf.compat.v1.assign_add(eval_step, 1, use_locking=True)
        eval_ops = [update_op, increment]
        with tf.control_dependencies(eval_ops):
            completed = tf.identity(eval_step.read_value())
        for h in hooks:
            if isinstance(h, StopAfterNEvalsHook):
                h.set_evals_completed_tensor(completed)
    logger.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime()))
    start = time.time()
    final = tf.compat.v1.train.FinalOpsHook(values)
    hooks.append(final)
    creator = tf.compat.v1.train.ChiefSessionCreator(
        scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path, config=config
    )
    with tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=hooks) as session:
        if update_op is not None:
            while not session.should_stop():
                session.run(eval_ops)
    logger.info("Inference Time : %.5fs", time.time() - start)
    logger.info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime()))
    return final.final_ops_values


def _summary_value(summary: Any, key: str, value: Any) -> None:
    if isinstance(value, np.float32 | float):
        summary.value.add(tag=key, simple_value=float(value))
    elif isinstance(value, np.int64 | np.int32 | int):
        summary.value.add(tag=key, simple_value=int(value))
    elif isinstance(value, bytes):
        try:
            parsed = tf.compat.v1.Summary.FromString(value)
        except Exception:  # a bytes metric that is not a serialized Summary
            logger.warning("Skipping summary for %s, cannot parse string to Summary.", key)
            return
        for i, v in enumerate(parsed.value):
            v.tag = f"{key}/{i}"
        summary.value.extend(parsed.value)
    elif isinstance(value, np.ndarray):
        entry = summary.value.add()
        entry.tag = key
        entry.node_name = key
        entry.tensor.CopyFrom(tf.make_tensor_proto(value))
    else:
        logger.warning(
            "Skipping summary for %s, must be a float, np.float32, np.int64, np.int32 or int "
            "or np.ndarray or a serialized string of Summary.",
            key,
        )


def _write_summaries(output_dir: str, results: dict, step: int, checkpoint_path: Any) -> None:
    shown = ", ".join(f"{k} = {v}" for k, v in sorted(results.items()) if not isinstance(v, bytes))
    logger.info("Saving dict for global step %d: %s", step, shown)
    writer = tf.compat.v1.summary.FileWriterCache.get(output_dir)
    summary = tf.compat.v1.Summary()
    for key, value in results.items():
        if value is not None and key != _GLOBAL_STEP:
            _summary_value(summary, key, value)
    writer.add_summary(summary, step)
    if checkpoint_path:
        logger.info(
            "Saving 'checkpoint_path' summary for global step %d: %s", step, checkpoint_path
        )
        path_summary = tf.compat.v1.Summary()
        path_summary.value.add(
            tag="checkpoint_path",
            tensor=tf.make_tensor_proto(checkpoint_path, dtype=tf.string),
        )
        writer.add_summary(path_summary, step)
    writer.flush()


def _latest_or_none(est: Any, checkpoint_path: Any, what: str) -> Any:
    if checkpoint_path:
        return checkpoint_path
    latest = tf.train.latest_checkpoint(est._model_dir)
    if not latest:
        logger.info(
            "Could not find trained model in model_dir: %s, running initialization to %s.",
            est._model_dir,
            what,
        )
    return latest


def build_eval_graph(
    est: Any, input_fn: Any, hooks: list, checkpoint_path: Any, strategy: Any = None
) -> tuple:
    """Builds the evaluation graph in the current graph (``Estimator._evaluate_build_graph``).

    ``strategy``: the ``eval_distribute`` strategy, whose scope the caller entered.

    Returns:
        ``(scaffold, update_op, values, all_hooks)``: ``values`` holds the metric value
        tensors with ``loss`` and ``global_step``; ``all_hooks`` the input, given and
        ``evaluation_hooks``.
    """
    g = tf.compat.v1.get_default_graph()
    tf.compat.v1.random.set_random_seed(est._config.tf_random_seed)
    create_global_step(g)
    if strategy is not None:
        scaffold, eval_hooks, input_hooks, update_op, values = _call_model_fn_distributed(
            est, input_fn, strategy
        )
    else:
        result = call_input_fn(input_fn, ModeKeys.EVAL, est.params, est.config)
        features, labels, input_hooks = parse_input_fn_result(result)
        spec = call_model_fn(est._model_fn, features, labels, ModeKeys.EVAL, est.params, est.config)
        update_op, values = _metric_ops(spec)
        scaffold, eval_hooks = spec.scaffold, spec.evaluation_hooks
    global_step = tf.compat.v1.train.get_global_step(g)
    if not checkpoint_path and est._warm_start_settings:
        maybe_warm_start(est._warm_start_settings)
    if _GLOBAL_STEP in values:
        raise ValueError(
            "Metric with name `global_step` is not allowed, because Estimator "
            "already defines a default metric with the same name."
        )
    values[_GLOBAL_STEP] = global_step
    all_hooks = list(input_hooks) + list(hooks) + list(eval_hooks or [])
    if scaffold and scaffold.local_init_op:
        # The eval step is a new local variable: fold its init into the user's op.
        _eval_step()
        scaffold = tf.compat.v1.train.Scaffold(
            local_init_op=tf.group(
                scaffold.local_init_op, tf.compat.v1.train.Scaffold.default_local_init_op()
            ),
            copy_from_scaffold=scaffold,
        )
    return scaffold, update_op, values, all_hooks


def run_eval(
    est: Any,
    checkpoint_path: Any,
    scaffold: Any,
    update_op: Any,
    values: dict,
    all_hooks: list,
    output_dir: str,
) -> dict:
    """Runs a graph from :func:`build_eval_graph` once and writes its summaries to ``output_dir``.

    Call it inside that graph; it may be called again on the same graph.
    """
    results = _run_eval(
        checkpoint_path, scaffold, update_op, values, all_hooks, est._session_config
    )
    # v1 FileWriter needs graph mode, so the summaries are written inside the graph.
    _write_summaries(output_dir, results, results[_GLOBAL_STEP], checkpoint_path)
    return results


def evaluate(
    est: Any, input_fn: Any, steps: Any, hooks: list, checkpoint_path: Any, name: Any
) -> dict:
    """Runs one evaluation; returns the metric values with ``loss`` and ``global_step``."""
    hooks = hooks + steps_hooks(steps)
    checkpoint_path = _latest_or_none(est, checkpoint_path, "evaluate")
    strategy = est._config.eval_distribute
    with tf.Graph().as_default():
        if strategy is None:
            built = build_eval_graph(est, input_fn, hooks, checkpoint_path)
            return run_eval(est, checkpoint_path, *built, est.eval_dir(name))
        from . import _distribute

        _distribute.check_session_devices(strategy, est._session_config)
        # Outside the scope: a host variable, not a mirrored one (as tf.estimator).
        _distribute.steps_per_run_variable()
        with strategy.scope():
            built = build_eval_graph(est, input_fn, hooks, checkpoint_path, strategy)
            return run_eval(est, checkpoint_path, *built, est.eval_dir(name))


def _batch_length(values: dict) -> int | None:
    length = None
    for key, value in values.items():
        length = length or value.shape[0]
        if value.shape[0] != length:
            raise ValueError(
                f"Batch length of predictions should be same. {key} has different batch "
                "length than others."
            )
    return length


def _select_keys(predictions: Any, predict_keys: Any) -> Any:
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    existing = predictions.keys()
    selected = {k: v for k, v in predictions.items() if k in predict_keys}
    if not selected:
        raise ValueError(
            f"Expected to run at least one output from {existing}, provided {predict_keys}."
        )
    return selected


def _uses_dataset(features: Any) -> bool:
    tensors = [t for t in tf.nest.flatten(features) if isinstance(t, tf.Tensor)]
    if any(t.op.type == "IteratorGetNext" for t in tensors):
        return True
    return bool(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS))


def predict(
    est: Any,
    input_fn: Any,
    predict_keys: Any,
    hooks: list,
    checkpoint_path: Any,
    yield_single_examples: bool,
) -> Any:
    """Yields predictions (a generator, like tf.estimator: nothing runs until iterated)."""
    checkpoint_path = _latest_or_none(est, checkpoint_path, "predict")
    with tf.Graph().as_default() as g:
        tf.compat.v1.random.set_random_seed(est._config.tf_random_seed)
        create_global_step(g)
        result = call_input_fn(input_fn, ModeKeys.PREDICT, est.params, est.config)
        features, _, input_hooks = parse_input_fn_result(result)
        if not _uses_dataset(features):
            logger.warning(
                "Input graph does not use tf.data.Dataset or contain a QueueRunner. That means "
                "predict yields forever. This is probably a mistake."
            )
        spec = call_model_fn(
            est._model_fn, features, None, ModeKeys.PREDICT, est.params, est.config
        )
        if not checkpoint_path and est._warm_start_settings:
            maybe_warm_start(est._warm_start_settings)
        predictions = _select_keys(spec.predictions, predict_keys)
        all_hooks = list(input_hooks) + list(hooks) + list(spec.prediction_hooks or [])
        creator = tf.compat.v1.train.ChiefSessionCreator(
            checkpoint_filename_with_path=checkpoint_path,
            master=est._config.master,
            scaffold=spec.scaffold,
            config=est._session_config,
        )
        with tf.compat.v1.train.MonitoredSession(session_creator=creator, hooks=all_hooks) as s:
            while not s.should_stop():
                batch = s.run(predictions)
                if not yield_single_examples:
                    yield batch
                elif not isinstance(predictions, dict):
                    yield from batch
                else:
                    for i in range(_batch_length(batch)):
                        yield {k: v[i] for k, v in batch.items()}
