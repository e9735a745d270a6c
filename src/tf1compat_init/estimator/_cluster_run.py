"""Running one task of a ``TF_CONFIG`` cluster, as tf.estimator 2.15's training executor did.

Between-graph replication on TensorFlow's own gRPC runtime (``tf.distribute.Server``):
``ps`` tasks start a server and join it; ``chief`` and ``worker`` tasks start theirs and
train with variables placed on the parameter servers by ``replica_device_setter``
(workers wait ``(task_id + 1) * 5`` seconds, at most 60, before starting, and their
sessions wait for the chief to initialize); only the chief saves checkpoints and
summaries; the ``evaluator`` follows the checkpoints in ``model_dir``, evaluates each
new one once, runs the exporters and stops once it has evaluated ``max_steps``.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import tensorflow as tf

from ._cluster import CHIEF, EVALUATOR, MASTER, PS, WORKER

__all__ = [
    "check_task",
    "ensure_server",
    "replica_device_setter",
    "serve_as_ps",
    "train_as_trainer",
    "wait_for_parameter_servers",
]

logger = logging.getLogger(__name__)

_MAX_DELAY_SECS = 60
_DELAY_SECS_PER_WORKER = 5
_TASKS = (CHIEF, EVALUATOR, MASTER, PS, WORKER)
_TRAINERS = (CHIEF, WORKER, MASTER)

#: This process's in-process servers: (cluster, job, index) -> tf.distribute.Server.
_SERVERS: dict = {}


def replica_device_setter(config: Any) -> Any:
    """The default ``device_fn`` of a task with parameter servers (None without any)."""
    if config.num_ps_replicas <= 0:
        return None
    worker = f"/job:{config.task_type}/task:{config.task_id}" if config.task_type else "/job:worker"
    return tf.compat.v1.train.replica_device_setter(
        ps_tasks=config.num_ps_replicas,
        worker_device=worker,
        merge_devices=True,
        cluster=config.cluster_spec,
    )


def ensure_server(config: Any) -> Any:
    """Starts this task's gRPC server once per process; None for a one-node cluster.

    Raises:
        RuntimeError: tf.estimator's texts when the config names no task or no master.
    """
    if not config.cluster_spec or not config.task_type or config.task_id is None:
        raise RuntimeError(
            "Could not start server; be sure to specify cluster_spec, task_type, and task in "
            "RunConfig or set the TF_CONFIG environment variable."
        )
    if not config.master:
        jobs = config.cluster_spec.jobs
        if (
            len(jobs) == 1
            and len(config.cluster_spec.job_tasks(jobs[0])) == 1
            and config.task_type in _TRAINERS
        ):
            logger.info("Skip starting Tensorflow server as there is only one node in the cluster.")
            return None
        raise RuntimeError(
            "Could not start server; be sure to specify master in RunConfig or set the "
            "TF_CONFIG environment variable."
        )
    key = (
        json.dumps(config.cluster_spec.as_dict(), sort_keys=True),
        config.task_type,
        config.task_id,
    )
    if key in _SERVERS:
        return _SERVERS[key]
    logger.info("Start Tensorflow server.")
    session_config = tf.compat.v1.ConfigProto(log_device_placement=False)
    if config.session_config is not None:
        session_config.gpu_options.CopyFrom(config.session_config.gpu_options)
    server = tf.distribute.Server(
        config.cluster_spec,
        job_name=config.task_type,
        task_index=config.task_id,
        config=session_config,
        start=False,
        protocol=config.protocol,
    )
    server.start()
    _SERVERS[key] = server
    return server


def wait_for_parameter_servers(config: Any, poll_secs: float = 1.0) -> None:
    """Waits until every parameter server accepts connections, at most the session timeout.

    TensorFlow itself waits silently for an unreachable task ("CreateSession still
    waiting"); this says which address did not answer, after
    ``RunConfig(session_creation_timeout_secs=...)``.

    Raises:
        ConnectionError: a parameter server did not accept a connection in time.
    """
    addresses = list(config.cluster_spec.as_dict().get(PS, []))
    if isinstance(addresses, dict):  # a sparse job: {index: address}
        addresses = list(addresses.values())
    deadline = time.monotonic() + config.session_creation_timeout_secs
    for address in addresses:
        host, _, port = address.rpartition(":")
        while True:
            try:
                with socket.create_connection((host.strip("[]"), int(port)), timeout=poll_secs):
                    break
            except OSError as err:
                if time.monotonic() >= deadline:
                    raise ConnectionError(
                        f"tf1compat_init: the parameter server {address} (task ps of the "
                        f"TF_CONFIG cluster) did not accept a connection within "
                        f"session_creation_timeout_secs={config.session_creation_timeout_secs} "
                        f"s ({err}). Start it, check the address, or raise "
                        "RunConfig(session_creation_timeout_secs=...)."
                    ) from err
                time.sleep(poll_secs)


def check_task(config: Any) -> str:
    """This task's type, checked as tf.estimator's executor checks it before running it.

    Raises:
        ValueError: a config without a task type, task type ``local`` or an unknown one.
    """
    if not config.task_type:
        raise ValueError(
            "`estimator.config` must have task_type set. This usually means TF_CONFIG "
            "environment is not set correctly."
        )
    if config.task_type == "local":
        raise ValueError(
            "`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and `task` "
            "properties in TF_CONFIG absent triggers train and evaluate `Estimator` locally "
            "(non-distributed)."
        )
    if config.task_type not in _TASKS:
        raise ValueError(
            f"Task type {config.task_type} is not supported. Supported task types are "
            f"{list(_TASKS)}"
        )
    return config.task_type


def serve_as_ps(config: Any) -> None:
    """A parameter server: starts this task's server and serves until the process ends."""
    ensure_server(config).join()


def train_as_trainer(estimator: Any, train_spec: Any, config: Any) -> None:
    """A chief or worker: server first, then the worker's delay, then ``train``."""
    # The server starts before the delay, so that the other tasks can reach this one.
    ensure_server(config)
    delay = 0
    if config.task_type == WORKER:
        most = _MAX_DELAY_SECS
        if config.experimental_max_worker_delay_secs is not None:
            most = int(config.experimental_max_worker_delay_secs)
        delay = min(most, (config.task_id + 1) * _DELAY_SECS_PER_WORKER)
    if delay > 0:
        logger.info("Waiting %d secs before starting training.", delay)
        time.sleep(delay)
    estimator.train(
        input_fn=train_spec.input_fn,
        max_steps=train_spec.max_steps,
        hooks=list(train_spec.hooks),
        saving_listeners=train_spec.saving_listeners if config.task_type == CHIEF else None,
    )
