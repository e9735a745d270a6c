# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``Estimator.train``: one graph per call, a ``MonitoredTrainingSession``, the default hooks.

Follows ``Estimator._train_model_default`` / ``_train_with_estimator_spec`` of
tensorflow_estimator 2.15: the same ops are created in the same order (so op-level
random seeds, and thus initial values, match tf.estimator under the same graph seed),
the same default saver, hooks and summaries, and the same resume rules.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

# tf.estimator called MonitoredTrainingSession through this module, and its tests (and
# users') patch it there; the attribute is looked up at each call.
from tensorflow.python.training import training as _tf_training

from ..v1 import graph_def
from . import _cluster_run
from ._cluster import MASTER, WORKER
from ._fn_calls import call_input_fn, call_model_fn, parse_input_fn_result
from ._log import logger
from ._spec import EstimatorSpec, ModeKeys

__all__ = ["create_global_step", "maybe_warm_start", "train_model"]


# The collection of TF's cached global-step read (training_util.GLOBAL_STEP_READ_KEY).
_GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def create_global_step(graph: Any) -> Any:
    """Creates ``global_step`` in a fresh graph, as every Estimator graph starts."""
    step = tf.compat.v1.train.create_global_step(graph)
    if step is not tf.compat.v1.train.get_global_step(graph) or not step.dtype.is_integer:
        raise AssertionError(f"global_step {step} is not the graph's integer global step")
    return step


def _create_global_step_read(graph: Any) -> None:
    # tf.estimator creates the cached global-step read here (hooks reuse it); creating
    # it at the same point keeps op ids, and so op-level seeds, identical.
    try:
        from tensorflow.python.training import training_util
    except ImportError:  # pragma: no cover - the helper moved; hooks create it later
        return
    reader = getattr(training_util, "_get_or_create_global_step_read", None)
    if reader is not None:
        reader(graph)


def maybe_warm_start(settings: Any) -> None:
    """Warm-starts the current graph's variables through :func:`tf1compat_init.v1.warm_start`.

    Under a distribution strategy, through TF's ``tf.compat.v1.train.warm_start``.
    """
    from .. import v1

    logger.info("Warm-starting with WarmStartSettings: %s", settings)
    if tf.distribute.has_strategy():
        # Our warm start assigns to variable handles, which a mirrored variable does not
        # expose outside a replica; TF's own warm start (tf.estimator's call) handles it.
        tf.compat.v1.train.warm_start(*settings)
        return
    v1.warm_start(
        settings.ckpt_to_initialize_from,
        vars_to_warm_start=settings.vars_to_warm_start,
        var_name_to_vocab_info=settings.var_name_to_vocab_info or None,
        var_name_to_prev_var_name=settings.var_name_to_prev_var_name or None,
    )


def _same_dir(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    return os.path.normcase(os.path.abspath(os.fsdecode(a))) == os.path.normcase(
        os.path.abspath(os.fsdecode(b))
    )


def _warn_foreign_saver(hooks: list, model_dir: str) -> None:
    for hook in hooks:
        ckpt_dir = getattr(hook, "_checkpoint_dir", None)
        if not _same_dir(ckpt_dir, model_dir):
            logger.warning(
                "A CheckpointSaverHook writing to %s replaces the Estimator's own "
                "checkpointing, so model_dir %s gets no checkpoint: the next train(), "
                "evaluate() or predict() will not find this run's variables and training "
                "restarts from step 0 (tf.estimator behaves the same). To resume, give the "
                "hook checkpoint_dir=model_dir, or drop it and set "
                "RunConfig(save_checkpoints_steps=...) instead.",
                ckpt_dir,
                model_dir,
            )


def _default_saver(spec: Any, config: Any) -> None:
    if spec.scaffold.saver or tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS):
        return
    tf.compat.v1.add_to_collection(
        tf.compat.v1.GraphKeys.SAVERS,
        tf.compat.v1.train.Saver(
            sharded=True,
            max_to_keep=config.keep_checkpoint_max,
            keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
            defer_build=True,
            save_relative_paths=True,
        ),
    )


def _saver_hooks(
    spec: Any, worker_hooks: list, config: Any, model_dir: str, listeners: list
) -> list:
    """The chief-only hooks: a default CheckpointSaverHook unless the user brought one."""
    chief_hooks: list = []
    all_hooks = worker_hooks + list(spec.training_chief_hooks)
    saver_hooks = [h for h in all_hooks if isinstance(h, tf.compat.v1.train.CheckpointSaverHook)]
    _warn_foreign_saver(saver_hooks, model_dir)
    graph_def.adopt_saver_hooks(saver_hooks)
    if (config.save_checkpoints_secs or config.save_checkpoints_steps) and not saver_hooks:
        chief_hooks = [
            graph_def.CheckpointSaverHook(
                model_dir,
                save_secs=config.save_checkpoints_secs,
                save_steps=config.save_checkpoints_steps,
                scaffold=spec.scaffold,
                save_graph_def=config.checkpoint_save_graph_def,
            )
        ]
        saver_hooks = chief_hooks
    if listeners:
        if not saver_hooks:
            raise ValueError(
                "There should be a CheckpointSaverHook to use saving_listeners. "
                "Please set one of the RunConfig.save_checkpoints_steps or "
                "RunConfig.save_checkpoints_secs."
            )
        # As tf.estimator: listeners go to the first saver hook found.
        existing = saver_hooks[0]._listeners
        for listener in listeners:
            if listener not in existing:
                existing.append(listener)
    return chief_hooks


def _summary_settings(config: Any, spec: Any, worker_hooks: list) -> tuple:
    """``(save_summaries_steps, log_step_count_steps)`` for ``MonitoredTrainingSession``.

    As tf.estimator 2.15: in a cluster with both a ``master`` (which also evaluates) and
    ``worker`` jobs, the session writes no summaries and counts no steps on any task;
    worker 0 gets a ``SummarySaverHook`` and a ``StepCounterHook`` instead.
    """
    jobs = config.cluster_spec.jobs if config.cluster_spec else []
    if not (WORKER in jobs and MASTER in jobs):
        return config.save_summary_steps, config.log_step_count_steps
    if config.task_type == WORKER and config.task_id == 0:
        if config.save_summary_steps and config.save_summary_steps > 0:
            worker_hooks.append(
                tf.compat.v1.train.SummarySaverHook(
                    save_steps=config.save_summary_steps,
                    output_dir=config.model_dir,
                    scaffold=spec.scaffold,
                )
            )
        if config.log_step_count_steps and config.log_step_count_steps > 0:
            worker_hooks.append(
                tf.compat.v1.train.StepCounterHook(
                    every_n_steps=config.log_step_count_steps, output_dir=config.model_dir
                )
            )
    return 0, None


def _train_with_spec(
    est: Any, spec: Any, worker_hooks: list, hooks: list, global_step: Any, listeners: list
) -> Any:
    config, model_dir = est._config, est._model_dir
    if est._warm_start_settings and not tf.train.latest_checkpoint(model_dir):
        maybe_warm_start(est._warm_start_settings)
    summaries = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
    if not any(s.op.name == "loss" for s in summaries):
        tf.compat.v1.summary.scalar("loss", spec.loss)
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.LOSSES, spec.loss)
    worker_hooks.extend(hooks)
    worker_hooks.append(tf.compat.v1.train.NanTensorHook(spec.loss))
    if config.log_step_count_steps is not None:
        worker_hooks.append(
            tf.compat.v1.train.LoggingTensorHook(
                {"loss": spec.loss, "step": global_step},
                every_n_iter=config.log_step_count_steps,
            )
        )
    worker_hooks.extend(spec.training_hooks)
    _default_saver(spec, config)
    chief_hooks = _saver_hooks(spec, worker_hooks, config, model_dir, listeners)
    save_summary_steps, log_step_count_steps = _summary_settings(config, spec, worker_hooks)
    # A task of a cluster starts its server and waits for the parameter servers in the
    # first hook the session begins (before any other hook writes to model_dir).
    ready = [_cluster_run.ClusterReadyHook(config)] if config.cluster_spec else []
    with _tf_training.MonitoredTrainingSession(
        master=config.master,
        is_chief=config.is_chief,
        checkpoint_dir=model_dir,
        scaffold=spec.scaffold,
        hooks=([] if config.is_chief else ready) + worker_hooks,
        chief_only_hooks=tuple(ready if config.is_chief else [])
        + tuple(chief_hooks)
        + tuple(spec.training_chief_hooks),
        save_checkpoint_secs=0,  # the CheckpointSaverHook above saves
        save_summaries_steps=save_summary_steps,
        config=est._session_config,
        max_wait_secs=config.session_creation_timeout_secs,
        log_step_count_steps=log_step_count_steps,
        save_graph_def=config.checkpoint_save_graph_def,
    ) as session:
        loss = None
        steps = 0
        while not session.should_stop():
            steps += 1
            _, loss = session.run([spec.train_op, spec.loss])
    if steps == 0:
        logger.warning(
            "Training with estimator made no steps. Perhaps input is empty or misspecified."
        )
    return loss


def _train_model_distributed(
    est: Any, strategy: Any, input_fn: Any, hooks: list, listeners: list
) -> Any:
    """In-graph replication: the ``model_fn`` once per replica, one train op for all."""
    from . import _distribute

    strategy.configure(est._session_config)
    _distribute.check_session_devices(strategy, est._session_config)
    worker_hooks: list = []
    with tf.Graph().as_default() as g, strategy.scope(), _distribute.scaled_loss(strategy):
        tf.compat.v1.random.set_random_seed(est._config.tf_random_seed)
        iterator, input_hooks = _distribute.make_iterator(est, input_fn, ModeKeys.TRAIN, strategy)
        worker_hooks.extend(input_hooks)
        global_step = create_global_step(g)
        # Added here, not by a replica's thread, so that hooks find it in the graph.
        tf.compat.v1.add_to_collection(
            _GLOBAL_STEP_READ_KEY, strategy.extended.read_var(global_step)
        )
        features, labels = _distribute.parse_iterator_result(iterator.get_next())
        grouped = strategy.extended.call_for_each_replica(
            call_model_fn,
            args=(est._model_fn, features, labels, ModeKeys.TRAIN, est.params, est.config),
        )
        loss = strategy.reduce(_distribute.loss_reduce_op(), grouped.loss, axis=None)
        spec = EstimatorSpec(
            mode=grouped.mode,
            loss=loss,
            train_op=strategy.group(grouped.train_op),
            training_hooks=_distribute.first_replica_hooks(strategy, grouped.training_hooks),
            training_chief_hooks=_distribute.first_replica_hooks(
                strategy, grouped.training_chief_hooks
            ),
            scaffold=_distribute.combine_scaffold(grouped.scaffold, strategy),
        )
        return _train_with_spec(est, spec, worker_hooks, hooks, global_step, listeners)


def train_model(est: Any, input_fn: Any, hooks: list, listeners: list) -> Any:
    """Builds the training graph in a fresh ``tf.Graph`` and runs it; returns the last loss."""
    strategy = est._config.train_distribute
    if strategy is not None:
        return _train_model_distributed(est, strategy, input_fn, hooks, listeners)
    worker_hooks: list = []
    with tf.Graph().as_default() as g, g.device(est._device_fn):
        tf.compat.v1.random.set_random_seed(est._config.tf_random_seed)
        create_global_step(g)
        _create_global_step_read(g)
        result = call_input_fn(input_fn, ModeKeys.TRAIN, est.params, est.config)
        features, labels, input_hooks = parse_input_fn_result(result)
        worker_hooks.extend(input_hooks)
        spec = call_model_fn(
            est._model_fn, features, labels, ModeKeys.TRAIN, est.params, est.config
        )
        global_step = tf.compat.v1.train.get_global_step(g)
        return _train_with_spec(est, spec, worker_hooks, hooks, global_step, listeners)
