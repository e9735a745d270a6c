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
# Modified from `tensorflow_estimator/python/estimator/tpu/tpu_estimator.py` (v2.15.0) for tf1compat_init.
# Changes: ExamplesPerSecondHook and the use_tpu=False host-call hook only,
# logging through tf1compat_init's estimator logger.
"""The hooks TPUEstimator adds with ``use_tpu=False``: step rate and host calls.

``ExamplesPerSecondHook`` stands in for the ``StepCounterHook`` of ``Estimator``: it
writes ``global_step/sec`` and ``examples/sec`` summaries (tensorflow-estimator 2.15's
tags, one event each) and logs both. ``HostCallHook`` runs a ``host_call``'s ops on
every step, initializing the ``tf.summary`` writers they use when the session starts and
flushing them when it ends.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.python.ops import summary_ops_v2

from ..._log import logger

__all__ = ["ExamplesPerSecondHook", "HostCallHook"]


class ExamplesPerSecondHook(tf.compat.v1.train.StepCounterHook):
    """Logs and records ``global_step/sec`` and ``examples/sec`` (``batch_size`` per step).

    Args:
        batch_size: examples per step (the global batch size of the mode).
        every_n_steps: how often, in steps; or
        every_n_secs: how often, in seconds.
        output_dir: where the summaries go (``None``: logged only, unless
            ``summary_writer`` is given).
        summary_writer: a ``tf.compat.v1.summary.FileWriter`` to write with.
    """

    def __init__(
        self,
        batch_size: Any,
        every_n_steps: int | None = 100,
        every_n_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
    ) -> None:
        self._batch_size = batch_size
        super().__init__(
            every_n_steps=every_n_steps,
            every_n_secs=every_n_secs,
            output_dir=output_dir,
            summary_writer=summary_writer,
        )

    def _log_and_record(self, elapsed_steps: int, elapsed_time: float, global_step: int) -> None:
        steps_per_sec = elapsed_steps / elapsed_time
        # As TF: a batch size of None fails here, at the first record.
        examples_per_sec = self._batch_size * steps_per_sec
        if self._summary_writer is not None:
            for tag, value in (
                ("global_step/sec", steps_per_sec),
                ("examples/sec", examples_per_sec),
            ):
                summary = tf.compat.v1.Summary(
                    value=[tf.compat.v1.Summary.Value(tag=tag, simple_value=value)]
                )
                self._summary_writer.add_summary(summary, global_step)
        logger.info("global_step/sec: %g", steps_per_sec)
        logger.info("examples/sec: %g", examples_per_sec)


class HostCallHook(tf.compat.v1.train.SessionRunHook):
    """Runs ``tensors`` (a host call's result) on every step; flushes its summary writers."""

    def __init__(self, tensors: Any) -> None:
        self._tensors = tensors

    def begin(self) -> None:
        # The writers the graph created (tf.summary.create_file_writer in graph mode).
        self._init_ops = summary_ops_v2.summary_writer_initializer_op()
        self._flush_ops = [
            summary_ops_v2.legacy_raw_flush(writer=op.inputs[0]) for op in self._init_ops
        ]

    def after_create_session(self, session: Any, coord: Any) -> None:
        del coord
        session.run(self._init_ops)

    def before_run(self, run_context: Any) -> Any:
        return tf.compat.v1.train.SessionRunArgs(self._tensors)

    def end(self, session: Any) -> None:
        session.run(self._flush_ops)
