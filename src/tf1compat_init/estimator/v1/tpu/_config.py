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
# Modified from `tensorflow_estimator/python/estimator/tpu/tpu_config.py` and
# `tensorflow_estimator/python/estimator/tpu/util.py` (v2.15.0) for tf1compat_init.
# Changes: the same fields, defaults, checks and messages, rewritten on
# tf1compat_init's RunConfig; no TPU system metadata or TPU cluster handling beyond TF's class.
"""``tf.compat.v1.estimator.tpu``'s ``RunConfig``, ``TPUConfig`` and ``InputPipelineConfig``.

The fields, defaults, validations and their messages are those of tensorflow-estimator
2.15's ``tpu/tpu_config.py`` and ``tpu/util.py``. Without a TPU the values that matter are
``iterations_per_loop`` (how often the examples-per-second hook logs) and the
``RunConfig`` ones; the others are checked and kept, as TF keeps them.
"""

from __future__ import annotations

import collections
import json
import os
import re
from typing import Any

import numpy as np

from ..._config import RunConfig as _RunConfigBase
from ..._log import logger

__all__ = [
    "InputPipelineConfig",
    "IterationsPerLoop",
    "RunConfig",
    "TPUConfig",
    "check_positive_integer",
    "parse_iterations_per_loop",
]

_ITERATIONS_PER_LOOP = re.compile(r"^(?P<value>[1-9]\d*)((?P<suffix>[s|m|h])$|$)")
_SECONDS_PER = {"s": 1, "m": 60, "h": 3600}

IterationsPerLoop = collections.namedtuple("IterationsPerLoopCounter", ["value", "unit"])


def check_positive_integer(value: Any, name: str) -> None:
    """TF's check of a count: an ``int`` (or numpy integer) above zero."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be int, got {type(value)}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")


def parse_iterations_per_loop(iterations_per_loop: Any) -> IterationsPerLoop:
    """``(value, unit)``: a count (``unit="count"``) or ``"<N>s|m|h"`` (``unit="seconds"``)."""
    match = _ITERATIONS_PER_LOOP.match(str(iterations_per_loop))
    if match is None:
        # TF's text, its missing space ("anypositive") included.
        raise ValueError(
            "Invalid TPUConfig `iterations_per_loop` value. Value must be positive "
            "integer value or time-based value `<N><s|m|h>` where <N> is any"
            "positive integer and `s`, `m`, `h` are unit of time in seconds, "
            "minutes, hours respectively. Examples of valid values: `3600s`, `60m`,"
            " `1h`."
        )
    suffix = match.group("suffix")
    value = int(match.group("value"))
    if suffix is None:
        return IterationsPerLoop(value, "count")
    return IterationsPerLoop(value * _SECONDS_PER[suffix], "seconds")


class InputPipelineConfig:
    """How ``input_fn`` feeds the TPU (``TPUConfig.per_host_input_for_training``).

    Without a TPU every value means the same: ``input_fn`` is called once per graph with
    the global batch size.
    """

    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


_TPU_CONFIG_FIELDS = [
    "iterations_per_loop",
    "num_shards",
    "num_cores_per_replica",
    "per_host_input_for_training",
    "tpu_job_name",
    "initial_infeed_sleep_secs",
    "input_partition_dims",
    "eval_training_input_configuration",
    "experimental_host_call_every_n_steps",
    "experimental_allow_per_host_v2_parallel_get_next",
    "experimental_feed_hook",
]


def _check_partition_dims(dims: Any, per_host: Any, num_cores_per_replica: Any) -> None:
    if dims is None:
        return
    if len(dims) not in (1, 2):
        raise ValueError("input_partition_dims must be a list/tuple with one or two elements.")
    if per_host is not InputPipelineConfig.PER_HOST_V2:
        raise ValueError("input_partition_dims is only supported in PER_HOST_V2 mode.")
    if num_cores_per_replica is None:
        raise ValueError("input_partition_dims requires setting num_cores_per_replica.")


def _tpu_job_name_from_tf_config() -> Any:
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    name = tf_config.get("service", {}).get("tpu_worker_job_name")
    if name:
        logger.info("Load TPU job name from TF_CONFIG: %s", name)
    return name


class TPUConfig(collections.namedtuple("TPUConfig", _TPU_CONFIG_FIELDS)):
    """TPU settings of a :class:`RunConfig` (``tf.compat.v1.estimator.tpu.TPUConfig``).

    Validated as TF 2.15 validates them. ``per_host_input_for_training`` ``True`` /
    ``False`` become ``PER_HOST_V1`` / ``PER_SHARD_V1``. With ``use_tpu=False``,
    ``iterations_per_loop`` sets how often steps per second are logged (see
    :class:`TPUEstimator`); the others are kept and have no effect.
    """

    __slots__ = ()

    def __new__(
        cls,
        iterations_per_loop: Any = 2,
        num_shards: int | None = None,
        num_cores_per_replica: int | None = None,
        per_host_input_for_training: Any = True,
        tpu_job_name: str | None = None,
        initial_infeed_sleep_secs: int | None = None,
        input_partition_dims: Any = None,
        eval_training_input_configuration: int = InputPipelineConfig.PER_HOST_V1,
        experimental_host_call_every_n_steps: int = 1,
        experimental_allow_per_host_v2_parallel_get_next: bool = False,
        experimental_feed_hook: Any = None,
    ) -> TPUConfig:
        parse_iterations_per_loop(iterations_per_loop)
        if num_shards is not None:
            check_positive_integer(num_shards, "TPUConfig num_shards")
        _check_partition_dims(
            input_partition_dims, per_host_input_for_training, num_cores_per_replica
        )
        if num_cores_per_replica is not None and num_cores_per_replica not in (
            1,
            2,
            4,
            8,
            16,
            32,
            64,
            128,
        ):
            raise ValueError(
                "num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; "
                f"got {num_cores_per_replica}"
            )
        if eval_training_input_configuration not in (
            InputPipelineConfig.PER_HOST_V1,
            InputPipelineConfig.SLICED,
        ):
            raise ValueError(
                "eval_training_input_configuration must be PER_HOST_V1 or SLICED;"
                f" got {eval_training_input_configuration}"
            )
        if per_host_input_for_training is False:
            per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
        elif per_host_input_for_training is True:
            per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
        if initial_infeed_sleep_secs:
            check_positive_integer(initial_infeed_sleep_secs, "TPUConfig initial_infeed_sleep_secs")
        return super().__new__(
            cls,
            iterations_per_loop,
            num_shards,
            num_cores_per_replica,
            per_host_input_for_training,
            tpu_job_name or _tpu_job_name_from_tf_config(),
            initial_infeed_sleep_secs,
            input_partition_dims,
            eval_training_input_configuration,
            experimental_host_call_every_n_steps,
            experimental_allow_per_host_v2_parallel_get_next,
            experimental_feed_hook,
        )


class RunConfig(_RunConfigBase):
    """``RunConfig`` with a ``tpu_config`` (``tf.compat.v1.estimator.tpu.RunConfig``).

    Args:
        tpu_config: a :class:`TPUConfig` (default ``TPUConfig()``).
        evaluation_master: the session target of evaluation (default: ``master``).
        master: the session target of training (``""``: in process).
        cluster: a ``tf.distribute.cluster_resolver.ClusterResolver``: its ``master()``
            and ``cluster_spec()`` (merged into ``session_config.cluster_def``).
        **kwargs: the arguments of :class:`tf1compat_init.estimator.RunConfig`.

    As TF's, it sets no device filters for a ``TF_CONFIG`` cluster (TPU training is
    in-graph).
    """

    def __init__(
        self,
        tpu_config: TPUConfig | None = None,
        evaluation_master: str | None = None,
        master: str | None = None,
        cluster: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if kwargs.get("session_config") is None:
            # The base class filters devices for between-graph training; TF's TPU config
            # overrides that with nothing.
            self._session_config = None
        self._tpu_config = tpu_config or TPUConfig()
        self._cluster = cluster
        if master is not None:
            if cluster is not None:
                raise ValueError("Both master and cluster are set.")
            self._master = master
        elif cluster:
            self._master = cluster.master()
        if evaluation_master is not None:
            self._evaluation_master = evaluation_master
        elif not self._evaluation_master and self.task_type != "evaluator":
            self._evaluation_master = self._master
        if cluster:
            self._merge_cluster_def(cluster)

    def _merge_cluster_def(self, cluster: Any) -> None:
        import tensorflow as tf

        self._cluster_spec = cluster.cluster_spec()
        if self._session_config is None:
            self._session_config = tf.compat.v1.ConfigProto(
                allow_soft_placement=True, isolate_session_state=True
            )
        if self._session_config.HasField("cluster_def"):
            raise ValueError("You cannot provide a ClusterResolver and session_config.cluster_def.")
        if self._cluster_spec:
            self._session_config.cluster_def.CopyFrom(self._cluster_spec.as_cluster_def())

    tpu_config = property(lambda self: self._tpu_config)
    cluster = property(lambda self: self._cluster)

    def replace(self, **kwargs: Any) -> RunConfig:
        """A copy with the given properties replaced, ``tpu_config`` among them."""
        if "tpu_config" not in kwargs:
            return super().replace(**kwargs)
        tpu_config = kwargs.pop("tpu_config")
        new = super().replace(**kwargs)
        new._tpu_config = tpu_config
        return new
