# Copyright 2016 The TensorFlow Authors. All Rights Reserved.
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
# Modified from `tensorflow_estimator/python/estimator/estimator.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; warm starts go through tf1compat_init.v1.warm_start,
# no TPU or tf.distribute internals; train, evaluate, predict and export in their own modules.
"""``Estimator``: trains, evaluates, predicts and exports with a ``model_fn``.

The class of ``tf.estimator.Estimator`` (TF 2.15): its constructor checks, properties and
the entry points, which hand the work to ``_estimator_train`` (``train``), ``_eval``
(``evaluate`` / ``predict``) and ``_export`` (SavedModels).
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from . import _cluster_run, _estimator_train
from . import _eval as _estimator_eval
from . import _export as _estimator_export
from ._cluster import EVALUATOR, PS
from ._config import RunConfig, default_session_config
from ._config import resolve_warm_start as _resolve_warm_start
from ._fn_calls import call_model_fn as _call_model_fn
from ._fn_calls import verify_model_fn_args as _verify_model_fn_args
from ._log import logger
from ._spec import EstimatorSpec, ModeKeys, checked_items

__all__ = ["Estimator"]


# Members a subclass may override, as in tf.estimator.
_ALLOWED_OVERRIDES = frozenset({"model_fn", "latest_checkpoint"})


def _check_hooks(hooks: Any) -> list:
    hook_type = tf.compat.v1.train.SessionRunHook
    return checked_items(hooks, hook_type, "Hooks must be a SessionRunHook, given: {}", list)


def _check_listeners(listeners: Any) -> list:
    message = "saving_listeners must be a list of CheckpointSaverListener, given: {}"
    return checked_items(listeners, tf.compat.v1.train.CheckpointSaverListener, message, list)


def _config_with_model_dir(config: Any, model_dir: Any) -> RunConfig:
    if config is None:
        config = RunConfig()
        logger.info("Using default config.")
    if not isinstance(config, RunConfig):
        hint = ""
        if type(config).__name__ == "RunConfig":
            hint = (
                "\ntf1compat_init: this is tf.estimator.RunConfig; use "
                "tf1compat_init.estimator.RunConfig with the same arguments."
            )
        raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.{hint}")
    if config.session_config is None:
        config = RunConfig._replace(copy.deepcopy(config), session_config=default_session_config())
    if model_dir is not None:
        model_dir = os.fspath(model_dir)
        if config.model_dir is not None and config.model_dir != model_dir:
            raise ValueError(
                "`model_dir` are set both in constructor and `RunConfig`, but with "
                f"different values. In constructor: '{model_dir}', in `RunConfig`: "
                f"'{config.model_dir}' "
            )
    if model_dir:
        config = RunConfig._replace(copy.deepcopy(config), model_dir=model_dir)
    elif config.model_dir is None:
        model_dir = tempfile.mkdtemp()
        logger.warning("Using temporary folder as model directory: %s", model_dir)
        config = RunConfig._replace(copy.deepcopy(config), model_dir=model_dir)
    return config


class _RemovedMethod:
    """A method tf.estimator's V2 Estimator hides: reading it raises AttributeError."""

    def __init__(self, message: str) -> None:
        self._message = message

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        raise AttributeError(self._message)


def _global_step_in(model_dir: str) -> int:
    try:
        reader = tf.compat.v1.train.NewCheckpointReader(tf.train.latest_checkpoint(model_dir))
        return int(reader.get_tensor(tf.compat.v1.GraphKeys.GLOBAL_STEP))
    except Exception:  # no checkpoint, or one without a global step: start from 0
        return 0


class Estimator:
    """Trains, evaluates and predicts with a ``model_fn`` (``tf.estimator.Estimator``).

    Args:
        model_fn: ``model_fn(features, labels, mode, params, config)``; every argument but
            ``features`` is optional, passed only when the function declares it.
            Returns an :class:`EstimatorSpec`.
        model_dir: where checkpoints and summaries go; resumed from when it holds a
            checkpoint. ``None``: ``config.model_dir``, else a new temporary directory.
        config: a :class:`RunConfig`.
        params: a dict passed to ``model_fn`` (which must then take ``params``).
        warm_start_from: a checkpoint path or directory, a SavedModel directory, or a
            :class:`WarmStartSettings`; used only while ``model_dir`` has no checkpoint.

    Example:
        >>> est = Estimator(model_fn, model_dir="/tmp/m")  # doctest: +SKIP
        >>> est.train(input_fn, steps=100).evaluate(eval_input_fn)  # doctest: +SKIP
        {'loss': 0.12, 'global_step': 100}
    """

    def __init__(
        self,
        model_fn: Any,
        model_dir: Any = None,
        config: RunConfig | None = None,
        params: dict | None = None,
        warm_start_from: Any = None,
    ) -> None:
        self._assert_members_are_not_overridden()
        self._config = _config_with_model_dir(config, model_dir)
        self._model_dir = self._config.model_dir
        self._session_config = self._config.session_config
        # In a cluster with parameter servers, variables go to them (tf.estimator's default).
        self._device_fn = self._config.device_fn or _cluster_run.replica_device_setter(self._config)
        logger.info("Using config: %s", vars(self._config))
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        _verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_settings = _resolve_warm_start(warm_start_from)

    def _assert_members_are_not_overridden(self) -> None:
        cls = type(self)
        if cls is Estimator:
            return
        own = {m for m in dir(Estimator) if not m.startswith("__")}
        overridden = [
            m
            for m in (own & set(cls.__dict__) - _ALLOWED_OVERRIDES)
            if getattr(Estimator, m) != getattr(cls, m)
        ]
        if overridden:
            raise ValueError(
                "Subclasses of Estimator cannot override members of Estimator. "
                f"{cls} does override {overridden}"
            )

    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return copy.deepcopy(self._config)

    @property
    def params(self) -> dict:
        return copy.deepcopy(self._params)

    @property
    def model_fn(self) -> Any:
        """The ``model_fn`` bound to ``params``: ``fn(features, labels, mode, config)``."""

        def public_model_fn(features: Any, labels: Any, mode: str, config: Any) -> EstimatorSpec:
            return _call_model_fn(self._model_fn, features, labels, mode, self.params, config)

        return public_model_fn

    def _check_checkpoint_available(self) -> None:
        if not tf.train.latest_checkpoint(self._model_dir):
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}.")

    def get_variable_value(self, name: str) -> Any:
        """The value of variable ``name`` in the latest checkpoint (a numpy array)."""
        self._check_checkpoint_available()
        return tf.train.load_variable(self._model_dir, name)

    def get_variable_names(self) -> list[str]:
        """The names of all variables in the latest checkpoint."""
        self._check_checkpoint_available()
        return [name for name, _ in tf.train.list_variables(self._model_dir)]

    def latest_checkpoint(self) -> str | None:
        """The path of the latest checkpoint in ``model_dir``, or ``None``."""
        return tf.train.latest_checkpoint(self._model_dir)

    def eval_dir(self, name: str | None = None) -> str:
        """The directory of evaluation summaries: ``model_dir/eval`` or ``eval_<name>``."""
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    def train(
        self,
        input_fn: Any,
        hooks: Any = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: Any = None,
    ) -> Estimator:
        """Trains from ``input_fn`` batches; resumes from the latest checkpoint in model_dir.

        ``steps`` counts from where this call starts; ``max_steps`` is an absolute global
        step (a call already past it does nothing). With neither, trains until the input
        ends. Returns ``self``.
        """
        if self._config.task_type in (EVALUATOR, PS):
            raise ValueError(
                "Train has been called wrong configuration. Please use "
                "tf.estimator.train_and_evaluate which calls proper API according to given "
                f"configuration. Current configuration: {self._config}."
            )
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None and max_steps <= _global_step_in(self._model_dir):
            logger.info("Skipping training since max_steps has already saved.")
            return self
        hooks = _check_hooks(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(tf.compat.v1.train.StopAtStepHook(steps, max_steps))
        listeners = _check_listeners(saving_listeners)
        with _cluster_run.watching_parameter_servers(self._config):
            loss = _estimator_train.train_model(self, input_fn, hooks, listeners)
        logger.info("Loss for final step: %s.", loss)
        return self

    def evaluate(
        self,
        input_fn: Any,
        steps: int | None = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict:
        """Evaluates the latest (or given) checkpoint on ``input_fn`` batches.

        Returns:
            The ``eval_metric_ops`` values, plus ``loss`` (mean over batches) and
            ``global_step``; also written as summaries to :meth:`eval_dir`.
        """
        hooks = _check_hooks(hooks)
        return _estimator_eval.evaluate(self, input_fn, steps, hooks, checkpoint_path, name)

    def predict(
        self,
        input_fn: Any,
        predict_keys: Any = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Yields predictions for the ``input_fn`` features (one example at a time by default)."""
        hooks = _check_hooks(hooks)
        yield from _estimator_eval.predict(
            self, input_fn, predict_keys, hooks, checkpoint_path, yield_single_examples
        )

    def export_saved_model(
        self,
        export_dir_base: Any,
        serving_input_receiver_fn: Any,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        experimental_mode: str = ModeKeys.PREDICT,
    ) -> bytes:
        """Exports the serving graph as a SavedModel in ``export_dir_base/<timestamp>``.

        ``serving_input_receiver_fn()`` returns an ``export.ServingInputReceiver``; its
        features go to ``model_fn(mode=PREDICT)``, and each ``export_outputs`` entry of the
        spec becomes a signature (``serving_default`` among them). The latest (or given)
        checkpoint is restored into the graph. ``assets_extra``: ``{relative destination:
        source path}`` copied into ``assets.extra``. ``experimental_mode``: export the
        TRAIN or EVAL graph instead (see :meth:`experimental_export_all_saved_models`).
        Returns the directory (bytes).
        """
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        return _estimator_export.export_all_saved_models(
            self,
            export_dir_base,
            {experimental_mode: serving_input_receiver_fn},
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
            strip_default_attrs=True,
        )

    export_savedmodel = _RemovedMethod(
        "`Estimator.export_savedmodel` has been deprecated. Please use `export_saved_model` "
        "instead.\ntf1compat_init: export_saved_model(export_dir_base, "
        "serving_input_receiver_fn, assets_extra, as_text, checkpoint_path) writes the same "
        "SavedModel (default attributes stripped)."
    )

    def experimental_export_all_saved_models(
        self,
        export_dir_base: Any,
        input_receiver_fn_map: dict,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
    ) -> bytes:
        """One SavedModel with a MetaGraph per mode of ``{mode: input_receiver_fn}``.

        TRAIN (tag ``train``) and EVAL (``eval``) take ``SupervisedInputReceiver``s
        (``experimental.build_raw_supervised_input_receiver_fn``) and get one signature
        (``train`` / ``eval``) of loss, predictions and metrics; PREDICT (``serve``) is
        as in :meth:`export_saved_model`. Variables are saved once, from the first mode
        in the order TRAIN, EVAL, PREDICT. Returns the directory (bytes).
        """
        return _estimator_export.export_all_saved_models(
            self,
            export_dir_base,
            input_receiver_fn_map,
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
            strip_default_attrs=True,
        )
