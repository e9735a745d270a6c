# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``RunConfig`` and ``WarmStartSettings`` as tf.estimator defines them.

Defaults, ``replace`` and the validation messages follow
``tensorflow_estimator/python/estimator/run_config.py``. ``TF_CONFIG`` is read as TF 2.15
reads it (see ``_cluster``): the cluster properties, the task's place and the default
device filters. ``train_distribute`` / ``eval_distribute`` take a strategy that replicates
on this machine's devices (see ``_distribute`` for what is refused and why).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import os
from typing import Any

import tensorflow as tf

from . import _cluster, _distribute
from ._log import logger

__all__ = ["RunConfig", "WarmStartSettings", "default_session_config", "resolve_warm_start"]


_USE_DEFAULT = object()

_REPLACEABLE = [
    "model_dir",
    "tf_random_seed",
    "save_summary_steps",
    "save_checkpoints_steps",
    "save_checkpoints_secs",
    "session_config",
    "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours",
    "log_step_count_steps",
    "train_distribute",
    "device_fn",
    "protocol",
    "eval_distribute",
    "experimental_distribute",
    "experimental_max_worker_delay_secs",
    "session_creation_timeout_secs",
    "checkpoint_save_graph_def",
]

_SAVE_CKPT_ERR = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."


def default_session_config() -> Any:
    """The ``ConfigProto`` tf.estimator uses when ``RunConfig.session_config`` is None."""
    from tensorflow.core.protobuf import rewriter_config_pb2

    rewrite = rewriter_config_pb2.RewriterConfig(
        meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE
    )
    return tf.compat.v1.ConfigProto(
        allow_soft_placement=True,
        graph_options=tf.compat.v1.GraphOptions(rewrite_options=rewrite),
    )


def _path_to_str(path: Any) -> Any:
    return os.fspath(path) if hasattr(path, "__fspath__") else path


def _model_dir(tf_config: dict, model_dir: Any) -> Any:
    if model_dir == "":
        raise ValueError("model_dir should be non-empty.")
    from_env = tf_config.get("model_dir")
    if from_env == "":
        raise ValueError("model_dir in TF_CONFIG should be non-empty.")
    if from_env:
        if model_dir and from_env != model_dir:
            raise ValueError(
                "`model_dir` provided in RunConfig construct, if set, "
                "must have the same value as the model_dir in TF_CONFIG. "
                f'model_dir: {model_dir}\nTF_CONFIG["model_dir"]: {from_env}.\n'
            )
        logger.info("Using model_dir in TF_CONFIG: %s", from_env)
    return model_dir or from_env


def _check(config: RunConfig, name: str, ok: Any, message: str) -> None:
    value = getattr(config, name)
    if value is not None and not ok(value):
        raise ValueError(message)


def _validate(config: RunConfig) -> None:
    _check(config, "model_dir", lambda d: d, "model_dir should be non-empty")
    _check(config, "save_summary_steps", lambda s: s >= 0, "save_summary_steps should be >= 0")
    _check(
        config,
        "save_checkpoints_steps",
        lambda s: s >= 0,
        "save_checkpoints_steps should be >= 0",
    )
    _check(
        config, "save_checkpoints_secs", lambda s: s >= 0, "save_checkpoints_secs should be >= 0"
    )
    _check(
        config,
        "session_config",
        lambda c: isinstance(c, tf.compat.v1.ConfigProto),
        "session_config must be instance of ConfigProto",
    )
    _check(config, "keep_checkpoint_max", lambda k: k >= 0, "keep_checkpoint_max should be >= 0")
    _check(
        config,
        "keep_checkpoint_every_n_hours",
        lambda h: h > 0,
        "keep_checkpoint_every_n_hours should be > 0",
    )
    _check(config, "log_step_count_steps", lambda n: n > 0, "log_step_count_steps should be > 0")
    _check(
        config,
        "tf_random_seed",
        lambda s: isinstance(s, int),
        "tf_random_seed must be integer.",
    )
    _check(
        config,
        "experimental_max_worker_delay_secs",
        lambda d: isinstance(d, int),
        "experimental_max_worker_delay_secs must be an integer if set.",
    )
    _check(
        config,
        "session_creation_timeout_secs",
        lambda t: t > 0,
        "session_creation_timeout_secs should be > 0",
    )
    _check(
        config,
        "device_fn",
        lambda fn: callable(fn) and _arg_names(fn) == {"op"},
        'device_fn must be callable with exactly one argument "op".',
    )
    _check(
        config,
        "protocol",
        lambda p: p in (None, "grpc", "grpc+verbs"),
        "protocol should be grpc or grpc+verbs",
    )
    _distribute.check_strategies(config)


def _arg_names(fn: Any) -> set:
    from ._fn_calls import fn_args

    return set(fn_args(fn))


class RunConfig:
    """Settings of an ``Estimator`` run (``tf.estimator.RunConfig``, local process only).

    With neither ``save_checkpoints_steps`` nor ``save_checkpoints_secs`` given, a
    checkpoint is written every 600 seconds (and at the end of ``train``). Setting one
    clears the other; setting both raises ``ValueError``.

    Example:
        >>> config = RunConfig(tf_random_seed=1, save_checkpoints_steps=100)  # doctest: +SKIP
        >>> config.replace(keep_checkpoint_max=2).keep_checkpoint_max  # doctest: +SKIP
        2
    """

    def __init__(
        self,
        model_dir: Any = None,
        tf_random_seed: int | None = None,
        save_summary_steps: int = 100,
        save_checkpoints_steps: Any = _USE_DEFAULT,
        save_checkpoints_secs: Any = _USE_DEFAULT,
        session_config: Any = None,
        keep_checkpoint_max: int = 5,
        keep_checkpoint_every_n_hours: float = 10000,
        log_step_count_steps: int | None = 100,
        train_distribute: Any = None,
        device_fn: Any = None,
        protocol: str | None = None,
        eval_distribute: Any = None,
        experimental_distribute: Any = None,
        experimental_max_worker_delay_secs: int | None = None,
        session_creation_timeout_secs: int = 7200,
        checkpoint_save_graph_def: bool = True,
    ) -> None:
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(_SAVE_CKPT_ERR)

        tf_config = _cluster.read_tf_config()
        if tf_config:
            logger.info("TF_CONFIG environment variable: %s", tf_config)
        RunConfig._replace(
            self,
            model_dir=_model_dir(tf_config, _path_to_str(model_dir)),
            tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            save_checkpoints_secs=save_checkpoints_secs,
            session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps,
            train_distribute=train_distribute,
            device_fn=device_fn,
            protocol=protocol,
            eval_distribute=eval_distribute,
            experimental_distribute=experimental_distribute,
            experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
            session_creation_timeout_secs=session_creation_timeout_secs,
            checkpoint_save_graph_def=checkpoint_save_graph_def,
        )
        where = _cluster.placement(tf_config)
        for field in dataclasses.fields(where):
            setattr(self, "_" + field.name, getattr(where, field.name))
        if not self._session_config and self._cluster_spec:
            # A between-graph task talks only to the parameter servers (TF 2.15's filters).
            self._session_config = _cluster.distributed_session_config(
                self._task_type, self._task_id
            )

    def replace(self, **kwargs: Any) -> RunConfig:
        """A copy with the given properties replaced.

        Raises:
            ValueError: a property is unknown or not replaceable, or both checkpoint
                frequencies would be set.
        """
        return RunConfig._replace(copy.deepcopy(self), **kwargs)

    @staticmethod
    def _replace(config: RunConfig, **kwargs: Any) -> RunConfig:
        for key, value in kwargs.items():
            if key not in _REPLACEABLE:
                raise ValueError(
                    f"Replacing {key} is not supported. Allowed properties are {_REPLACEABLE}."
                )
            setattr(config, "_" + key, value)
        steps, secs = config._save_checkpoints_steps, config._save_checkpoints_secs
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs:
            if steps is not None and secs is not None:
                raise ValueError(_SAVE_CKPT_ERR)
        elif "save_checkpoints_steps" in kwargs and steps is not None:
            config._save_checkpoints_secs = None
        elif "save_checkpoints_secs" in kwargs and secs is not None:
            config._save_checkpoints_steps = None
        _validate(config)
        return config

    def __repr__(self) -> str:
        return f"RunConfig({vars(self)})"

    cluster_spec = property(lambda self: self._cluster_spec)
    device_fn = property(lambda self: self._device_fn)
    evaluation_master = property(lambda self: self._evaluation_master)
    is_chief = property(lambda self: self._is_chief)
    master = property(lambda self: self._master)
    num_ps_replicas = property(lambda self: self._num_ps_replicas)
    num_worker_replicas = property(lambda self: self._num_worker_replicas)
    task_id = property(lambda self: self._task_id)
    global_id_in_cluster = property(lambda self: self._global_id_in_cluster)
    experimental_max_worker_delay_secs = property(
        lambda self: self._experimental_max_worker_delay_secs
    )
    task_type = property(lambda self: self._task_type)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    checkpoint_save_graph_def = property(lambda self: self._checkpoint_save_graph_def)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    model_dir = property(lambda self: self._model_dir)
    service = property(lambda self: self._service)
    train_distribute = property(lambda self: self._train_distribute)
    eval_distribute = property(lambda self: self._eval_distribute)
    experimental_distribute = property(lambda self: self._experimental_distribute)
    protocol = property(lambda self: self._protocol)


class WarmStartSettings(
    collections.namedtuple(
        "WarmStartSettings",
        [
            "ckpt_to_initialize_from",
            "vars_to_warm_start",
            "var_name_to_vocab_info",
            "var_name_to_prev_var_name",
        ],
    )
):
    """Which checkpoint and variables to warm-start from (``tf.estimator.WarmStartSettings``).

    ``vars_to_warm_start`` is an anchored regular expression over the TRAINABLE
    variables (default ``".*"``), a list of regular expressions over all global
    variables, or ``None`` (only the variables of ``var_name_to_vocab_info``).
    ``var_name_to_vocab_info`` maps variable names to :class:`VocabInfo` (TF's
    ``tf.compat.v1.train.VocabInfo``) to remap rows or columns across a vocabulary
    change; ``var_name_to_prev_var_name`` renames variables whose names changed. Both
    are checked against the graph, the checkpoint and the vocabulary files before any
    initializer changes (see :func:`tf1compat_init.v1.warm_start`). Warm-starting
    applies only while ``model_dir`` has no checkpoint.

    Example:
        >>> WarmStartSettings("/tmp/pretrained", vars_to_warm_start="dense.*")  # doctest: +SKIP
    """

    __slots__ = ()

    def __new__(
        cls,
        ckpt_to_initialize_from: Any,
        vars_to_warm_start: Any = ".*",
        var_name_to_vocab_info: Any = None,
        var_name_to_prev_var_name: Any = None,
    ) -> WarmStartSettings:
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        return super().__new__(
            cls,
            ckpt_to_initialize_from,
            vars_to_warm_start,
            var_name_to_vocab_info or {},
            var_name_to_prev_var_name or {},
        )


def resolve_warm_start(warm_start_from: Any) -> WarmStartSettings | None:
    """The settings ``Estimator(warm_start_from=...)`` means (a path, a SavedModel, settings)."""
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, str | bytes | os.PathLike):
        path = os.fsdecode(warm_start_from)
        saved_model_vars = os.path.join(path, "variables", "variables")
        if tf.io.gfile.exists(saved_model_vars + ".index"):
            logger.info("Warm-starting from a SavedModel")
            path = saved_model_vars
        settings = WarmStartSettings(ckpt_to_initialize_from=path)
    elif isinstance(warm_start_from, WarmStartSettings) or _is_tf_settings(warm_start_from):
        settings = WarmStartSettings(*warm_start_from)
    else:
        raise ValueError(
            "warm_start_from must be a string or a WarmStartSettings, "
            f"instead got {type(warm_start_from)}"
        )
    return settings


def _is_tf_settings(value: Any) -> bool:
    # tf.estimator.WarmStartSettings (TF 2.15) has the same fields; accept it as ours.
    return type(value).__name__ == "WarmStartSettings" and hasattr(value, "_fields")
