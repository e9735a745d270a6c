# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Where this process sits in a ``TF_CONFIG`` cluster, read as tf.estimator 2.15 reads it.

``RunConfig`` derives ``cluster_spec``, ``task_type``, ``task_id``, ``master``,
``evaluation_master``, ``is_chief``, ``num_ps_replicas``, ``num_worker_replicas``,
``global_id_in_cluster``, ``service`` and the default distributed ``session_config``
(device filters) from the environment variable, with TF 2.15's validation messages.
Reading the cluster is all this module does: running its tasks is the runner's business.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import tensorflow as tf

__all__ = [
    "CHIEF",
    "EVALUATOR",
    "MASTER",
    "PS",
    "WORKER",
    "Placement",
    "placement",
    "read_tf_config",
]

CHIEF, EVALUATOR, MASTER, PS, WORKER = "chief", "evaluator", "master", "ps", "worker"
_LOCAL_MASTER = ""


@dataclasses.dataclass(frozen=True)
class Placement:
    """The cluster properties of one task (``RunConfig``'s read-only cluster properties)."""

    cluster_spec: Any
    task_type: str
    task_id: int
    master: str
    evaluation_master: str
    is_chief: bool
    num_ps_replicas: int
    num_worker_replicas: int
    global_id_in_cluster: int | None
    service: dict | None


def read_tf_config() -> dict:
    """``TF_CONFIG`` as a dict (``{}`` when unset).

    Raises:
        ValueError: the variable is set but is not a JSON object, naming the variable.
    """
    text = os.environ.get("TF_CONFIG", "{}")
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{err}\ntf1compat_init: the environment variable TF_CONFIG is not JSON: {text!r}. "
            'Expected e.g. {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"]}, '
            '"task": {"type": "worker", "index": 0}}.'
        ) from err
    if not isinstance(value, dict):
        raise ValueError(
            f"tf1compat_init: the environment variable TF_CONFIG must hold a JSON object, "
            f"got {type(value).__name__}: {text!r}."
        )
    return value


def placement(tf_config: dict) -> Placement:
    """The task's place in the cluster ``tf_config`` describes (TF 2.15's rules and errors)."""
    service = tf_config.get("service")
    if service is not None and not isinstance(service, dict):
        raise TypeError(
            f'If "service" is set in TF_CONFIG, it must be a dict. Given {type(service)}'
        )
    spec = tf.train.ClusterSpec(tf_config.get("cluster", {}))
    task = tf_config.get("task", {})
    if spec and MASTER in spec.jobs:
        return _with_master(spec, task, tf_config, service)
    if spec:
        return _distributed(spec, task, tf_config, service)
    return _local(task, tf_config, service)


def _local(task: dict, tf_config: dict, service: Any) -> Placement:
    task_type = task.get("type", WORKER)
    task_id = int(task.get("index", 0))
    if task_type != WORKER:
        raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
    if task_id != 0:
        raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
    return Placement(
        cluster_spec=tf.train.ClusterSpec({}),
        task_type=task_type,
        task_id=task_id,
        master=tf_config.get("session_master", _LOCAL_MASTER),
        evaluation_master=tf_config.get("eval_session_master", _LOCAL_MASTER),
        is_chief=True,
        num_ps_replicas=0,
        num_worker_replicas=1,
        global_id_in_cluster=0,
        service=service,
    )


def _distributed(spec: Any, task: dict, tf_config: dict, service: Any) -> Placement:
    task_type, task_id = _task(spec, task, CHIEF)
    if task_type == EVALUATOR:  # not part of the training cluster
        return Placement(
            cluster_spec=tf.train.ClusterSpec({}),
            task_type=task_type,
            task_id=task_id,
            master=_LOCAL_MASTER,
            evaluation_master=tf_config.get("eval_session_master", _LOCAL_MASTER),
            is_chief=False,
            num_ps_replicas=0,
            num_worker_replicas=0,
            global_id_in_cluster=None,
            service=service,
        )
    return _trainer(spec, task_type, task_id, tf_config, CHIEF, service)


def _with_master(spec: Any, task: dict, tf_config: dict, service: Any) -> Placement:
    # The legacy cluster shape: a `master` job instead of `chief`.
    if CHIEF in spec.jobs:
        raise ValueError("If `master` node exists in `cluster`, job `chief` is not supported.")
    task_type, task_id = _task(spec, task, MASTER)
    if task_type == EVALUATOR:
        raise ValueError(
            "If `master` node exists in `cluster`, task_type `evaluator` is not supported."
        )
    return _trainer(spec, task_type, task_id, tf_config, MASTER, service)


def _trainer(
    spec: Any, task_type: str, task_id: int, tf_config: dict, chief: str, service: Any
) -> Placement:
    """A task of the training cluster (``chief`` names its chief job: chief or master)."""
    return Placement(
        cluster_spec=spec,
        task_type=task_type,
        task_id=task_id,
        master=_session_master(spec, task_type, task_id, tf_config),
        evaluation_master=_LOCAL_MASTER,
        is_chief=task_type == chief,
        num_ps_replicas=len(spec.as_dict().get(PS, [])),
        num_worker_replicas=_count_workers(spec, chief),
        global_id_in_cluster=_global_id(spec, task_type, task_id, chief),
        service=service,
    )


def _task(spec: Any, task: dict, chief: str) -> tuple[str, int]:
    if chief not in spec.jobs:
        raise ValueError(f'If "cluster" is set in TF_CONFIG, it must have one "{chief}" node.')
    if len(spec.job_tasks(chief)) > 1:
        raise ValueError(f'The "cluster" in TF_CONFIG must have only one "{chief}" node.')
    task_type, task_id = task.get("type"), task.get("index")
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
    if task_id is None:
        raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
    task_id = int(task_id)
    if task_id < 0:
        raise ValueError("Task index must be non-negative number.")
    if task_type == EVALUATOR:  # any index: evaluators are outside the training cluster
        return task_type, task_id
    note = "Note that these values may be coming from the TF_CONFIG environment variable."
    if task_type not in spec.jobs:
        raise ValueError(
            f"{task_type} is not a valid task_type in the cluster_spec:\n{spec}\n\n{note}"
        )
    if not 0 <= task_id < len(spec.job_tasks(task_type)):
        raise ValueError(
            f"{task_id} is not a valid task_id for task_type {task_type} in the "
            f"cluster_spec:\n{spec}\n\n{note}"
        )
    return task_type, task_id


def _session_master(spec: Any, task_type: str, task_id: int, tf_config: dict) -> str:
    if "session_master" in tf_config:
        return tf_config["session_master"]
    jobs = spec.jobs
    # A one-task cluster runs in process: a direct session is faster than gRPC to itself.
    if len(jobs) == 1 and len(spec.job_tasks(jobs[0])) == 1:
        return _LOCAL_MASTER
    return "grpc://" + spec.job_tasks(task_type)[task_id]


def _count_workers(spec: Any, chief: str) -> int:
    jobs = spec.as_dict()
    return len(jobs.get(WORKER, [])) + len(jobs.get(chief, []))


def _global_id(spec: Any, task_type: str, task_id: int, chief: str) -> int:
    # The chief is 0; then the other jobs but ps in alphabetical order, then ps.
    order = [chief] + [t for t in sorted(spec.jobs) if t not in (chief, PS)]
    if PS in spec.jobs:
        order.append(PS)
    first = 0
    for job in order:
        if job == task_type:
            return first + task_id
        first += len(spec.job_tasks(job))
    raise RuntimeError(
        f"Internal Error: `task_type` ({task_type}) is not in cluster_spec ({spec})."
    )


def distributed_session_config(task_type: str, task_id: int) -> Any:
    """TF 2.15's default ``session_config`` for a between-graph task (None: no filters)."""
    filters = {
        MASTER: ["/job:ps", "/job:master"],
        CHIEF: ["/job:ps", "/job:chief"],
        WORKER: ["/job:ps", f"/job:worker/task:{task_id}"],
        PS: ["/job:ps", "/job:worker", "/job:chief", "/job:master"],
    }.get(task_type)
    if filters is None:
        return None
    from tensorflow.core.protobuf import rewriter_config_pb2

    rewrite = rewriter_config_pb2.RewriterConfig(
        meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE
    )
    return tf.compat.v1.ConfigProto(
        allow_soft_placement=True,
        graph_options=tf.compat.v1.GraphOptions(rewrite_options=rewrite),
        device_filters=filters,
    )
