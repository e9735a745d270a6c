# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
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

import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from ._cluster import CHIEF, EVALUATOR, MASTER, PS, WORKER
from ._log import logger

__all__ = [
    "ClusterReadyHook",
    "LOST_PS_EXIT_CODE",
    "check_task",
    "ensure_server",
    "replica_device_setter",
    "serve_as_ps",
    "train_as_trainer",
    "wait_for_parameter_servers",
    "watching_parameter_servers",
]


_MAX_DELAY_SECS = 60
_DELAY_SECS_PER_WORKER = 5
_TASKS = (CHIEF, EVALUATOR, MASTER, PS, WORKER)
_TRAINERS = (CHIEF, WORKER, MASTER)

#: The exit status of a task that lost a parameter server for good (EX_UNAVAILABLE).
LOST_PS_EXIT_CODE = 69

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


def _ps_addresses(config: Any) -> list:
    addresses = config.cluster_spec.as_dict().get(PS, []) if config.cluster_spec else []
    if isinstance(addresses, dict):  # a sparse job: {index: address}
        return list(addresses.values())
    return list(addresses)


def _accepts(address: str, timeout: float) -> OSError | None:
    """None when ``address`` accepts a TCP connection, else the error."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return None
    except OSError as err:
        return err


def _lost_message(address: str, err: OSError, timeout_secs: float) -> str:
    return (
        f"tf1compat_init: the parameter server {address} (task ps of the TF_CONFIG cluster) "
        f"stopped accepting connections ({err}) and did not come back within "
        f"session_creation_timeout_secs={timeout_secs} s, so this task stops. TensorFlow "
        "itself would wait for it without end: the session it closes to recover waits for the "
        "lost task. Restart the parameter server and this task (the chief resumes from the "
        "latest checkpoint in model_dir), or raise "
        "RunConfig(session_creation_timeout_secs=...) to wait longer."
    )


class _ParameterServerWatch(threading.Thread):
    """Ends this process once a parameter server stays unreachable for the timeout.

    Exiting is the only bound there is: the blocked call is TensorFlow's, in C++, and a
    gRPC session's ``operation_timeout_in_ms`` does not end it either (an in-process master
    waits for the cancelled call to finish).
    """

    def __init__(self, config: Any, poll_secs: float) -> None:
        super().__init__(name="tf1compat_init-ps-watch", daemon=True)
        self._addresses = _ps_addresses(config)
        self._timeout_secs = config.session_creation_timeout_secs
        self._poll_secs = poll_secs
        self.stopped = threading.Event()

    def run(self) -> None:
        lost_since: dict = {}
        while not self.stopped.wait(self._poll_secs):
            for address in self._addresses:
                err = _accepts(address, timeout=self._poll_secs)
                if err is None:
                    lost_since.pop(address, None)
                    continue
                since = lost_since.setdefault(address, time.monotonic())
                if time.monotonic() - since >= self._timeout_secs and not self.stopped.is_set():
                    logger.critical(_lost_message(address, err, self._timeout_secs))
                    logging.shutdown()
                    os._exit(LOST_PS_EXIT_CODE)


@contextlib.contextmanager
def watching_parameter_servers(config: Any, poll_secs: float = 1.0) -> Iterator[None]:
    """While training in a cluster: a parameter server lost for good ends the process.

    When a parameter server goes away mid-job, ``MonitoredSession`` closes its session to
    create a new one, and that close waits until the parameter server is back (tf.estimator
    2.15 hangs there, logging only at INFO). A parameter server back within
    ``RunConfig.session_creation_timeout_secs`` is left to TensorFlow's own recovery; one
    that is not makes this task log a critical error naming its address and exit with status
    :data:`LOST_PS_EXIT_CODE`, so that the job fails instead of hanging.
    """
    if not _ps_addresses(config):
        yield
        return
    watch = _ParameterServerWatch(config, min(poll_secs, config.session_creation_timeout_secs))
    watch.start()
    try:
        yield
    finally:
        watch.stopped.set()


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


class ClusterReadyHook(tf.compat.v1.train.SessionRunHook):
    """Starts this task's server and waits for the parameter servers, as the session is made.

    ``MonitoredTrainingSession`` calls ``begin`` after the graph is built and before it
    connects to the master, which is when both are needed; given as its first hook, before
    any other hook writes to ``model_dir``. A patched ``MonitoredTrainingSession`` (as in
    tf.estimator's own tests) never waits.
    """

    def __init__(self, config: Any) -> None:
        self._config = config

    def begin(self) -> None:
        ensure_server(self._config)
        wait_for_parameter_servers(self._config)


def wait_for_parameter_servers(config: Any, poll_secs: float = 1.0) -> None:
    """Waits until every parameter server accepts connections, at most the session timeout.

    TensorFlow itself waits silently for an unreachable task ("CreateSession still
    waiting"); this says which address did not answer, after
    ``RunConfig(session_creation_timeout_secs=...)``.

    Raises:
        ConnectionError: a parameter server did not accept a connection in time.
    """
    deadline = time.monotonic() + config.session_creation_timeout_secs
    for address in _ps_addresses(config):
        while (err := _accepts(address, timeout=poll_secs)) is not None:
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
