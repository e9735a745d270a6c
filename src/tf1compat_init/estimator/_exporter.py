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
# Modified from `tensorflow_estimator/python/estimator/exporter.py` (v2.15.0) for tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; exports through our Estimator.export_saved_model.
"""Exporters that ``train_and_evaluate`` calls after each evaluation (tf.estimator 2.15).

``LatestExporter`` exports every evaluated checkpoint and keeps the newest
``exports_to_keep``; ``BestExporter`` exports when ``compare_fn`` says the evaluation
beat the best one so far (seeded from the eval event files already in model_dir);
``FinalExporter`` exports once, after the evaluation at ``TrainSpec.max_steps``. All
write ``model_dir/export/<name>/<timestamp>`` through ``Estimator.export_saved_model``.
"""

from __future__ import annotations

import abc
import os
from typing import Any

import tensorflow as tf

from ._fn_calls import fn_args
from ._log import logger

__all__ = ["BestExporter", "Exporter", "FinalExporter", "LatestExporter"]


class Exporter(abc.ABC):
    """The interface of an exporter (``tf.estimator.Exporter``)."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The directory name under ``model_dir/export``."""

    @abc.abstractmethod
    def export(
        self,
        estimator: Any,
        export_path: str,
        checkpoint_path: str,
        eval_result: dict,
        is_the_final_export: bool,
    ) -> Any:
        """Exports ``checkpoint_path`` under ``export_path``; returns the export's path or None."""


class _SavedModelExporter(Exporter):
    def __init__(
        self, name: str, serving_input_receiver_fn: Any, assets_extra: Any, as_text: bool
    ) -> None:
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    @property
    def name(self) -> str:
        return self._name

    def export(
        self,
        estimator: Any,
        export_path: str,
        checkpoint_path: str,
        eval_result: dict,
        is_the_final_export: bool,
    ) -> Any:
        del eval_result, is_the_final_export
        return estimator.export_saved_model(
            export_path,
            self._serving_input_receiver_fn,
            assets_extra=self._assets_extra,
            as_text=self._as_text,
            checkpoint_path=checkpoint_path,
        )


def _keep_newest_exports(export_dir_base: str, exports_to_keep: int | None) -> None:
    """Deletes all but the ``exports_to_keep`` newest ``<10-digit timestamp>`` exports."""
    if exports_to_keep is None or not tf.io.gfile.isdir(export_dir_base):
        return
    versions = sorted(
        int(name.rstrip("/"))
        for name in tf.io.gfile.listdir(export_dir_base)
        if len(name.rstrip("/")) == 10 and name.rstrip("/").isdigit()
    )
    for version in versions[: max(len(versions) - exports_to_keep, 0)]:
        path = os.path.join(export_dir_base, str(version))
        try:
            tf.io.gfile.rmtree(path)
        except tf.errors.NotFoundError as e:
            logger.warning("Can not delete %s recursively: %s", path, e)


def _loss_smaller(best_eval_result: dict, current_eval_result: dict) -> bool:
    """The default ``compare_fn``: True when the current ``loss`` is smaller."""
    key = "loss"
    if not best_eval_result or key not in best_eval_result:
        raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
    if not current_eval_result or key not in current_eval_result:
        raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
    return best_eval_result[key] > current_eval_result[key]


def _verify_compare_fn_args(compare_fn: Any) -> None:
    args = set(fn_args(compare_fn))
    if "best_eval_result" not in args:
        raise ValueError(f"compare_fn ({compare_fn}) must include best_eval_result argument.")
    if "current_eval_result" not in args:
        raise ValueError(f"compare_fn ({compare_fn}) must include current_eval_result argument.")
    unexpected = list(args - {"best_eval_result", "current_eval_result"})
    if unexpected:
        raise ValueError(f"compare_fn ({compare_fn}) has following not expected args: {unexpected}")


class _SavedModelPolicy(Exporter):
    """A public exporter: writes through a :class:`_SavedModelExporter` when
    :meth:`_should_export` says so, then keeps the newest ``_exports_to_keep``."""

    _exports_to_keep: int | None = None

    def __init__(
        self, name: str, serving_input_receiver_fn: Any, assets_extra: Any, as_text: bool
    ) -> None:
        self._exporter = _SavedModelExporter(name, serving_input_receiver_fn, assets_extra, as_text)

    @property
    def name(self) -> str:
        return self._exporter.name

    @abc.abstractmethod
    def _should_export(self, estimator: Any, eval_result: dict, is_the_final_export: bool) -> bool:
        """Whether this evaluation is exported (it may log and note it)."""

    def _exported(self) -> None:
        """Called after an export and its clean-up."""

    def export(
        self,
        estimator: Any,
        export_path: str,
        checkpoint_path: str,
        eval_result: dict,
        is_the_final_export: bool,
    ) -> Any:
        if not self._should_export(estimator, eval_result, is_the_final_export):
            return None
        result = self._exporter.export(
            estimator, export_path, checkpoint_path, eval_result, is_the_final_export
        )
        _keep_newest_exports(export_path, self._exports_to_keep)
        self._exported()
        return result


class BestExporter(_SavedModelPolicy):
    """Exports when an evaluation beats the best so far (``compare_fn``; default: lower loss).

    Args:
        name: the directory under ``model_dir/export``.
        serving_input_receiver_fn: as for ``Estimator.export_saved_model``.
        event_file_pattern: eval event files (relative to model_dir) the best result
            is first read from; ``None``: start with no best result.
        compare_fn: ``fn(best_eval_result, current_eval_result) -> bool``.
        assets_extra: as for ``export_saved_model``.
        as_text: as for ``export_saved_model``.
        exports_to_keep: how many exports to keep (``None``: all).
    """

    def __init__(
        self,
        name: str = "best_exporter",
        serving_input_receiver_fn: Any = None,
        event_file_pattern: str | None = "eval/*.tfevents.*",
        compare_fn: Any = _loss_smaller,
        assets_extra: Any = None,
        as_text: bool = False,
        exports_to_keep: int | None = 5,
    ) -> None:
        self._compare_fn = compare_fn
        if self._compare_fn is None:
            raise ValueError("`compare_fn` must not be None.")
        _verify_compare_fn_args(self._compare_fn)
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        self._event_file_pattern = event_file_pattern
        self._model_dir = None
        self._best_eval_result: dict | None = None
        self._has_exported = False
        self._exports_to_keep = exports_to_keep
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError(
                f"`exports_to_keep`, if provided, must be a positive number. Got {exports_to_keep}"
            )

    def _should_export(self, estimator: Any, eval_result: dict, is_the_final_export: bool) -> bool:
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            logger.info("Loading best metric from event files.")
            self._model_dir = estimator.model_dir
            pattern = os.path.join(self._model_dir, self._event_file_pattern)
            self._best_eval_result = self._best_in_event_files(pattern)
        if (
            self._best_eval_result is None
            or not self._has_exported
            or self._compare_fn(
                best_eval_result=self._best_eval_result, current_eval_result=eval_result
            )
        ):
            logger.info("Performing best model export.")
            self._best_eval_result = eval_result
            return True
        return False

    def _exported(self) -> None:
        self._has_exported = True

    def _best_in_event_files(self, pattern: str) -> dict | None:
        best = None
        for path in tf.io.gfile.glob(pattern):
            for event in tf.compat.v1.train.summary_iterator(path):
                if not event.HasField("summary"):
                    continue
                result = {
                    v.tag: v.simple_value for v in event.summary.value if v.HasField("simple_value")
                }
                if result and (best is None or self._compare_fn(best, result)):
                    best = result
        return best


class FinalExporter(_SavedModelPolicy):
    """Exports once: after the evaluation that reached ``TrainSpec.max_steps``."""

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: Any,
        assets_extra: Any = None,
        as_text: bool = False,
    ) -> None:
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)

    def _should_export(self, estimator: Any, eval_result: dict, is_the_final_export: bool) -> bool:
        if is_the_final_export:
            logger.info("Performing the final export in the end of training.")
        return is_the_final_export


class LatestExporter(_SavedModelPolicy):
    """Exports after every evaluation; keeps the newest ``exports_to_keep`` (``None``: all)."""

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: Any,
        assets_extra: Any = None,
        as_text: bool = False,
        exports_to_keep: int | None = 5,
    ) -> None:
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        self._exports_to_keep = exports_to_keep
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be positive number")

    def _should_export(self, estimator: Any, eval_result: dict, is_the_final_export: bool) -> bool:
        return True
