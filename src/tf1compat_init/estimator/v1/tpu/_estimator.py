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
# Modified from `tensorflow_estimator/python/estimator/tpu/tpu_estimator.py` and
# `tensorflow_estimator/python/estimator/tpu/tpu_context.py` (v2.15.0) for tf1compat_init.
# Changes: the use_tpu=False path only, on tf1compat_init's v1 Estimator:
# input_fn/model_fn wrapping, batch sizes, step logging, the error rendezvous's logging;
# use_tpu=True, TPU embeddings and the TPU serving graph are refused or skipped with advice.
"""``TPUEstimator`` on CPU/GPU: tensorflow-estimator 2.15's ``use_tpu=False`` path.

With ``use_tpu=False`` TF 2.15's TPUEstimator is an ``Estimator`` whose ``input_fn`` and
``model_fn`` are wrapped: ``input_fn`` must take ``params`` and finds the mode's batch
size in ``params["batch_size"]``; ``model_fn`` must take ``params`` and gets a copy with
``batch_size`` and ``use_tpu=False``; a returned :class:`TPUEstimatorSpec` becomes an
``EstimatorSpec`` through ``as_estimator_spec()``. Steps are counted by an
``ExamplesPerSecondHook`` instead of the ``StepCounterHook`` and loss logging of
``Estimator``. This module reproduces that path, observed on TF 2.15 and checked against
it (tests/estimator/v1/tpu/test_tpu_estimator.py); ``use_tpu=True`` is refused, as there is no TPU runtime.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import math
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from ..._fn_calls import fn_args, model_fn_kwargs, verify_model_fn_args
from ..._log import logger
from ..._spec import EstimatorSpec, ModeKeys
from .._estimator import Estimator
from ._config import InputPipelineConfig, RunConfig, parse_iterations_per_loop
from ._hooks import ExamplesPerSecondHook
from ._spec import TPUEstimatorSpec

__all__ = ["ExportSavedModelApiVersion", "TPUEstimator"]

_BATCH_SIZE_KEY = "batch_size"
_CTX_KEY = "context"
_USE_TPU_KEY = "use_tpu"
_RESERVED_PARAMS_KEYS = [_BATCH_SIZE_KEY, _CTX_KEY]

# What TF's rendezvous drops: MonitoredSession has already handled them.
_IGNORED_ERRORS = (tf.errors.AbortedError, tf.errors.UnavailableError)

_NO_TPU = (
    "TPUEstimator(use_tpu=True) needs a TPU system and TensorFlow 1.x's TPU runtime "
    "(tpu.rewrite, infeed/outfeed), which tf1compat_init does not provide: there is no TPU "
    "runtime here. Pass use_tpu=False to run the same model_fn and input_fn on CPU/GPU, as "
    "TPUEstimator 2.15 ran them there (params['batch_size'] from train/eval/"
    "predict_batch_size, params['use_tpu'] = False, TPUEstimatorSpec.as_estimator_spec())."
)
_NO_TPU_EMBEDDING = (
    "TPUEstimator(embedding_config_spec=...) is not provided by tf1compat_init: TPU "
    "embeddings need a TPU system. Use feature columns (tf.feature_column.embedding_column) "
    "in the model_fn instead."
)
_NO_TPU_GRAPH = (
    "TPUEstimator(export_to_tpu=True): the TPU serving graph (tags serve, tpu) is not "
    "written: tf1compat_init has no TPU runtime to build it. The CPU/GPU graph (tag serve) "
    "is written. Pass export_to_tpu=False to export it alone without this warning."
)


class ExportSavedModelApiVersion(enum.Enum):
    """``TPUEstimator(export_saved_model_api_version=...)`` (TF's values; no effect here)."""

    V1 = 1
    V2 = 2


def _add_item(params: Any, key: str, value: Any) -> None:
    if hasattr(params, "set_hparam"):  # tf.contrib HParams, as TF accepts them
        if key in params:
            params.set_hparam(key, value)
        else:
            params.add_hparam(key, value)
    else:
        params[key] = value


def _check_api_version(version: Any) -> None:
    if isinstance(version, ExportSavedModelApiVersion) or version in (1, 2):
        return
    if type(version).__name__ == "ExportSavedModelApiVersion" and version.value in (1, 2):
        return  # tensorflow_estimator's own enum
    raise ValueError(f"export_saved_model_api_version should be 1 or 2; got {version}.")


@contextlib.contextmanager
def _loop(source: str) -> Iterator[None]:
    """TF's error rendezvous for one loop: logs its end, re-raises, drops Aborted errors."""
    failed = False
    try:
        yield
    except _IGNORED_ERRORS:
        pass  # TF 2.15's train/evaluate then return None
    except Exception:
        failed = True
        raise
    finally:
        logger.info("%s marked as finished", source)
        if failed:
            logger.warning("Reraising captured error")


class _TPUMethods:
    # Members of Estimator, overridden in a base before it: the Estimator's constructor
    # refuses them on a subclass's own body (TF exempts its TPUEstimator by name).

    def train(
        self,
        input_fn: Any,
        hooks: Any = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: Any = None,
    ) -> Any:
        """Trains as ``Estimator.train``; ``input_fn`` gets ``params["batch_size"]``."""
        with _loop("training_loop"):
            return super().train(
                self._input_fn_for(input_fn, ModeKeys.TRAIN),
                hooks=hooks,
                steps=steps,
                max_steps=max_steps,
                saving_listeners=saving_listeners,
            )
        return None

    def evaluate(
        self,
        input_fn: Any,
        steps: int | None = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> Any:
        """Evaluates as ``Estimator.evaluate``; ``eval_batch_size`` goes to ``input_fn``."""
        with _loop("evaluation_loop"):
            return super().evaluate(
                self._input_fn_for(input_fn, ModeKeys.EVAL),
                steps=steps,
                hooks=hooks,
                checkpoint_path=checkpoint_path,
                name=name,
            )
        return None

    def predict(
        self,
        input_fn: Any,
        predict_keys: Any = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Yields as ``Estimator.predict``; ``predict_batch_size`` goes to ``input_fn``."""
        with _loop("prediction_loop"):
            yield from super().predict(
                self._input_fn_for(input_fn, ModeKeys.PREDICT),
                predict_keys=predict_keys,
                hooks=hooks,
                checkpoint_path=checkpoint_path,
                yield_single_examples=yield_single_examples,
            )
        logger.info("prediction_loop marked as finished")  # TF marks it twice

    def export_saved_model(
        self,
        export_dir_base: Any,
        serving_input_receiver_fn: Any,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        experimental_mode: str = ModeKeys.PREDICT,
    ) -> bytes:
        """Writes the CPU/GPU serving graph (tag ``serve``); the TPU graph is not written."""
        self._check_export([experimental_mode])
        return super().export_saved_model(
            export_dir_base,
            serving_input_receiver_fn,
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
            experimental_mode=experimental_mode,
        )

    def export_savedmodel(self, *args: Any, **kwargs: Any) -> bytes:
        """The deprecated ``export_saved_model`` of TF 1.x (the CPU/GPU graph)."""
        self._check_export([ModeKeys.PREDICT])
        return super().export_savedmodel(*args, **kwargs)

    def experimental_export_all_saved_models(
        self, export_dir_base: Any, input_receiver_fn_map: dict, *args: Any, **kwargs: Any
    ) -> bytes:
        """One SavedModel with a CPU/GPU MetaGraph per mode (as ``Estimator``'s)."""
        self._check_export([m for m in input_receiver_fn_map if input_receiver_fn_map[m]])
        return super().experimental_export_all_saved_models(
            export_dir_base, input_receiver_fn_map, *args, **kwargs
        )


class TPUEstimator(_TPUMethods, Estimator):
    """``tf.compat.v1.estimator.tpu.TPUEstimator`` with ``use_tpu=False``: CPU or GPU.

    Args:
        model_fn: ``model_fn(features, labels, mode, params[, config])``; it must take
            ``params``, and gets a copy with ``params["batch_size"]`` (the mode's batch
            size, when set) and ``params["use_tpu"] = False``. Returns a
            :class:`TPUEstimatorSpec` or an ``EstimatorSpec``.
        model_dir, config, params, warm_start_from: as ``Estimator``'s; ``config`` must be
            a :class:`RunConfig` of this package, and ``params`` may not hold
            ``batch_size`` or ``context``.
        use_tpu: must be False (True raises ``NotImplementedError``: no TPU runtime).
        train_batch_size, eval_batch_size, predict_batch_size: the global batch size of
            each mode, given to ``input_fn`` and ``model_fn`` as ``params["batch_size"]``
            (absent when None) and used for ``examples/sec``.
        batch_axis, eval_on_tpu, export_saved_model_api_version: TPU settings, ignored on
            CPU/GPU (``eval_on_tpu=True`` logs TF's warning).
        export_to_tpu, export_to_cpu: ``export_saved_model`` writes the CPU/GPU graph;
            the TPU graph is never written (a warning says so while ``export_to_tpu``).
        embedding_config_spec: TPU embeddings: not provided (must be None).

    Steps are logged every ``ceil(log_step_count_steps / iterations_per_loop)`` steps (or
    every ``iterations_per_loop`` seconds when it is ``"<N>s|m|h"``) as ``global_step/sec``
    and ``examples/sec`` summaries; ``Estimator``'s own step counter and loss logging are
    off (``config.log_step_count_steps`` is None), as in TF.
    """

    def __init__(
        self,
        model_fn: Any = None,
        model_dir: Any = None,
        config: RunConfig | None = None,
        params: dict | None = None,
        use_tpu: bool = True,
        train_batch_size: int | None = None,
        eval_batch_size: int | None = None,
        predict_batch_size: int | None = None,
        batch_axis: Any = None,
        eval_on_tpu: bool = True,
        export_to_tpu: bool = True,
        export_to_cpu: bool = True,
        warm_start_from: Any = None,
        embedding_config_spec: Any = None,
        export_saved_model_api_version: Any = ExportSavedModelApiVersion.V1,
    ) -> None:
        if config is None or not isinstance(config, RunConfig):
            raise ValueError("`config` must be provided with type `tpu_config.RunConfig`")
        if params is not None and any(k in params for k in _RESERVED_PARAMS_KEYS):
            raise ValueError(
                f"{_RESERVED_PARAMS_KEYS} are reserved keys but existed in params {params}."
            )
        if use_tpu:
            raise NotImplementedError(_NO_TPU)
        if embedding_config_spec is not None:
            raise NotImplementedError(_NO_TPU_EMBEDDING)
        del batch_axis  # how TPU shards split a batch: nothing to split on CPU/GPU
        verify_model_fn_args(model_fn, params)
        augmented = self._augment_model_fn(model_fn)
        self._log_every_n_steps = config.log_step_count_steps
        config = config.replace(log_step_count_steps=None)
        super().__init__(
            model_fn=augmented,
            model_dir=model_dir,
            config=config,
            params=params or {},
            warm_start_from=warm_start_from,
        )
        self._set_step_logging(
            parse_iterations_per_loop(self._config.tpu_config.iterations_per_loop)
        )
        self._batch_sizes = {
            ModeKeys.TRAIN: train_batch_size,
            ModeKeys.EVAL: eval_batch_size,
            ModeKeys.PREDICT: predict_batch_size,
        }
        self._log_tpu_context(eval_on_tpu)
        self._export_to_cpu = export_to_cpu
        self._export_to_tpu = export_to_tpu
        _check_api_version(export_saved_model_api_version)
        self._export_saved_model_api_version = export_saved_model_api_version
        self._is_input_fn_invoked: bool | None = None

    def _set_step_logging(self, iterations: Any) -> None:
        if iterations.unit == "seconds":
            self._log_every_n_secs = iterations.value
            self._log_every_n_steps = None
            return
        if self._log_every_n_steps is not None:
            # One Session.run is iterations_per_loop steps on a TPU: TF logs in loops.
            self._log_every_n_steps = int(
                math.ceil(float(self._log_every_n_steps) / iterations.value)
            )
        self._log_every_n_secs = None

    def _log_tpu_context(self, eval_on_tpu: bool) -> None:
        tpu_config = self._config.tpu_config
        if tpu_config.num_shards == 1 and tpu_config.num_cores_per_replica is None:
            logger.warning(
                "Setting TPUConfig.num_shards==1 is an unsupported behavior. Please fix as "
                "soon as possible (leaving num_shards as None.)"
            )
            eval_on_tpu = True  # TF's one-core context takes the default
        logger.info("_TPUContext: eval_on_tpu %s", eval_on_tpu)
        if eval_on_tpu:
            logger.warning("eval_on_tpu ignored because use_tpu is False.")

    # -- input_fn and model_fn, as TF calls them on CPU/GPU ----------------------------

    def _input_fn_for(self, input_fn: Any, mode: str) -> Any:
        """``input_fn`` with TPUEstimator's arguments; the Estimator passes it ``config``."""

        def tpu_input_fn(config: Any) -> Any:
            names = fn_args(input_fn)
            if "params" not in names:
                raise ValueError(
                    f"input_fn ({input_fn}) does not include params argument, required by "
                    'TPUEstimator to pass batch size as params["batch_size"]'
                )
            kwargs: dict[str, Any] = {"params": self.params}
            if "config" in names:
                kwargs["config"] = config
            if "mode" in names:
                kwargs["mode"] = mode
            if "input_context" in names:
                kwargs["input_context"] = None
            self._is_input_fn_invoked = True
            if (
                mode != ModeKeys.TRAIN
                and self._config.tpu_config.eval_training_input_configuration
                is InputPipelineConfig.SLICED
            ):
                raise ValueError(
                    "Invalid TPUConfig `eval_training_input_configuration` value. SLICED "
                    "mode only works on use_tpu = True."
                )
            batch_size = self._batch_sizes[mode]
            if batch_size is not None:
                _add_item(kwargs["params"], _BATCH_SIZE_KEY, batch_size)
            return input_fn(**kwargs)

        return tpu_input_fn

    def _augment_model_fn(self, model_fn: Any) -> Any:
        def _model_fn(features: Any, labels: Any, mode: str, config: Any, params: Any) -> Any:
            # input_fn runs before model_fn in train/evaluate/predict, never in an export.
            is_export_mode = not self._is_input_fn_invoked
            self._is_input_fn_invoked = None
            if is_export_mode:
                _add_item(params, _USE_TPU_KEY, False)
            examples_hook = self._examples_hook(mode, config)
            logger.info("Running %s on CPU/GPU", mode)
            spec = self._call_model_fn_on_cpu(
                model_fn, features, labels, mode, config, params, is_export_mode
            )
            if examples_hook is not None and isinstance(spec, EstimatorSpec):
                spec = spec._replace(training_hooks=spec.training_hooks + (examples_hook,))
            return spec

        return _model_fn

    def _examples_hook(self, mode: str, config: Any) -> Any:
        if self._log_every_n_steps is None and self._log_every_n_secs is None:
            return None
        return ExamplesPerSecondHook(
            self._batch_sizes.get(mode),
            output_dir=self.model_dir if not config or config.save_summary_steps else None,
            every_n_steps=self._log_every_n_steps,
            every_n_secs=self._log_every_n_secs,
        )

    def _call_model_fn_on_cpu(
        self,
        model_fn: Any,
        features: Any,
        labels: Any,
        mode: str,
        config: Any,
        params: Any,
        is_export_mode: bool,
    ) -> Any:
        names = fn_args(model_fn)
        config = copy.deepcopy(config)
        params = copy.deepcopy(params)
        kwargs = model_fn_kwargs(names, labels, mode=mode, config=config, params=params)
        if "params" not in names:
            raise ValueError(
                f"model_fn ({model_fn}) does not include params argument, required by "
                "TPUEstimator to pass batch size as params['batch_size']"
            )
        batch_size = None if is_export_mode else self._batch_sizes.get(mode)
        if batch_size is not None:
            _add_item(params, _BATCH_SIZE_KEY, batch_size)
        if not is_export_mode:
            _add_item(params, _USE_TPU_KEY, False)
        spec = model_fn(features=features, **kwargs)
        if isinstance(spec, TPUEstimatorSpec):
            return spec.as_estimator_spec()
        return spec

    def _check_export(self, modes: list) -> None:
        if not self._export_to_cpu and not self._export_to_tpu:
            raise ValueError("One of export_to_cpu and export_to_tpu must be true.")
        if not self._export_to_cpu:
            raise ValueError(
                "TPUEstimator(export_to_cpu=False) asks for the TPU serving graph alone, "
                "which tf1compat_init cannot write (no TPU runtime). Pass export_to_cpu=True "
                "to export the CPU/GPU graph (tag serve)."
            )
        if not self._export_to_tpu:
            return
        for mode in modes:
            if mode != ModeKeys.PREDICT:
                logger.warning(
                    "TPUEstimator only handles mode PREDICT for exporting when "
                    f"`export_to_tpu` is `True`; Mode {mode} will be ignored for TPU."
                )
        if ModeKeys.PREDICT in modes:
            logger.warning(_NO_TPU_GRAPH)
