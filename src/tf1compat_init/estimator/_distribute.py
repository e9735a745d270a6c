# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``RunConfig(train_distribute=..., eval_distribute=...)``: in-graph replication on one machine.

tf.estimator 2.15 ran the ``model_fn`` once per replica of a ``tf.distribute`` strategy
(``extended.call_for_each_replica``) inside one graph, fed by
``strategy.make_input_fn_iterator``, reduced the loss for reporting, and merged the
replicas' scaffolds into one. TF 2.21 still has every piece of that in graph mode, so the
local (one machine, several devices) case runs here. What needed tf.estimator's
distribute coordinator (a ``TF_CONFIG`` cluster with a strategy, multi-worker strategies)
is gone from TF 2.21 and is refused before anything is built.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from ._fn_calls import call_input_fn
from ._log import logger

__all__ = [
    "IteratorInitializerHook",
    "check_session_devices",
    "check_strategies",
    "combine_scaffold",
    "first_replica_hooks",
    "loss_reduce_op",
    "make_iterator",
    "missing_cpu_devices",
    "parse_iterator_result",
    "scaled_loss",
    "steps_per_run_variable",
]


_PS_V2_ERROR = (
    "Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` for "
    "parameter server strategy with estimator."
)

# Strategies whose Estimator support went through the distribute coordinator (one
# process per worker, collective ops across them); TF 2.21 no longer ships it.
_MULTI_WORKER = (
    "MultiWorkerMirroredStrategy",
    "_CollectiveAllReduceStrategyExperimental",
    "CollectiveAllReduceStrategy",
    "CollectiveAllReduceStrategyV1",
)


def _unsupported(name: str, strategy: Any, why: str, instead: str) -> NotImplementedError:
    return NotImplementedError(
        f"tf1compat_init: RunConfig({name}={type(strategy).__name__}) is not supported: "
        f"{why} {instead}"
    )


def _cluster_jobs() -> list:
    try:
        tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    except ValueError:  # RunConfig reports a malformed TF_CONFIG itself
        return []
    return list((tf_config.get("cluster") or {}).keys())


def _check_one(name: str, strategy: Any) -> None:
    cls = type(strategy)
    if cls is tf.distribute.experimental.ParameterServerStrategy:
        raise ValueError(
            f"{_PS_V2_ERROR}\ntf1compat_init: tf.distribute.experimental.ParameterServerStrategy "
            "is TF 2's coordinator-based training (Keras or a custom loop), which Estimator "
            "never ran."
        )
    if not isinstance(strategy, tf.distribute.Strategy | tf.compat.v1.distribute.Strategy):
        raise TypeError(
            f"tf1compat_init: RunConfig({name}=...) takes a tf.distribute strategy, "
            f"got {strategy!r}."
        )
    cls_name = cls.__name__
    if cls_name in _MULTI_WORKER:
        raise _unsupported(
            name,
            strategy,
            "tf.estimator ran multi-worker strategies through its distribute coordinator, "
            "which TensorFlow 2.21 no longer has.",
            "Use tf.distribute.MirroredStrategy for the devices of one machine, or train "
            "across machines between-graph with a TF_CONFIG cluster with parameter servers "
            "and no strategy (see docs/estimator.md, 'Running on a cluster').",
        )
    if cls_name.startswith("TPUStrategy"):
        raise _unsupported(
            name,
            strategy,
            "TPUEstimator's steps-per-run loop is not part of tf1compat_init.",
            "Use a Keras model with TPUStrategy instead.",
        )
    jobs = _cluster_jobs()
    # The legacy ``master`` shape skipped the coordinator in TF 2.15, but replicating on a
    # master's devices over gRPC is untested here: refused as well.
    if name == "train_distribute" and jobs:
        raise _unsupported(
            name,
            strategy,
            f"with a TF_CONFIG cluster ({sorted(jobs)}) tf.estimator handed a strategy to its "
            "distribute coordinator, which TensorFlow 2.21 no longer has.",
            "Drop train_distribute to train the cluster between-graph (parameter servers, "
            "replica_device_setter; see docs/estimator.md, 'Running on a cluster'), or unset "
            "TF_CONFIG to replicate on this machine's devices.",
        )


def check_strategies(config: Any) -> None:
    """Refuses, at ``RunConfig`` construction, the strategies TF 2.21 cannot run for Estimator.

    Raises:
        ValueError: ``tf.distribute.experimental.ParameterServerStrategy`` (TF 2.15's text).
        TypeError: a value that is not a strategy.
        NotImplementedError: multi-worker and TPU strategies, a strategy with a
            ``TF_CONFIG`` cluster, and ``experimental_distribute``.
    """
    for name in ("train_distribute", "eval_distribute"):
        strategy = getattr(config, name)
        if strategy is not None:
            _check_one(name, strategy)
    if config.experimental_distribute is not None:
        raise NotImplementedError(
            "tf1compat_init: RunConfig(experimental_distribute=...) is not supported: it "
            "took tf.contrib.distribute.DistributeConfig, which no TensorFlow 2 has. Pass the "
            "strategies as RunConfig(train_distribute=..., eval_distribute=...)."
        )


def _session_cpus(session_config: Any) -> int:
    if session_config is not None and "CPU" in session_config.device_count:
        return session_config.device_count["CPU"]
    return 1


def missing_cpu_devices(devices: Any, session_config: Any) -> list[str]:
    """The strategy's CPU devices that a ``Session`` with ``session_config`` does not have.

    A ``Session`` counts its CPUs from ``ConfigProto.device_count`` (1 by default); logical
    devices made with ``tf.config.set_logical_device_configuration`` exist only for eager.
    """
    count = _session_cpus(session_config)
    missing = []
    for device in devices:
        spec = tf.DeviceSpec.from_string(device)
        if (spec.device_type or "").upper() == "CPU" and (spec.device_index or 0) >= count:
            missing.append(device)
    return missing


def check_session_devices(strategy: Any, session_config: Any) -> None:
    """Warns when replicas would be soft-placed onto fewer CPUs (TF may then hang in a step)."""
    devices = strategy.extended.worker_devices
    missing = missing_cpu_devices(devices, session_config)
    if missing:
        logger.warning(
            "tf1compat_init: the strategy replicates on %s, which the session does not have "
            "(RunConfig.session_config.device_count['CPU'] is %d); those replicas run on "
            "the session's CPUs instead, and with the default cross-device ops the first "
            "step can hang, as in tf.estimator. Set session_config=tf.compat.v1.ConfigProto("
            "device_count={'CPU': %d}, allow_soft_placement=True).",
            missing,
            _session_cpus(session_config),
            len(devices),
        )


def scaled_loss(strategy: Any) -> Any:
    """The context in which ``tf.compat.v1`` optimizers divide a mean loss by the replicas.

    tf.estimator kept TF 1's convention: a loss reduced by mean is scaled by
    ``1 / num_replicas_in_sync`` before the gradients are summed across replicas.
    """
    enabled = getattr(strategy, "_scale_loss_for_estimator_enabled", None)
    return enabled() if enabled is not None else contextlib.nullcontext()


def loss_reduce_op() -> Any:
    """How the replicas' losses add up to the reported loss (mean when the optimizer scaled)."""
    if getattr(tf.compat.v1.get_default_graph(), "_is_loss_scaled_by_optimizer", False):
        return tf.compat.v1.distribute.get_loss_reduction()
    return tf.distribute.ReduceOp.SUM


class IteratorInitializerHook(tf.compat.v1.train.SessionRunHook):
    """Initializes a distributed input iterator in every new session."""

    def __init__(self, iterator: Any) -> None:
        self._iterator = iterator

    def begin(self) -> None:
        self._initializer = self._iterator.initialize()

    def after_create_session(self, session: Any, coord: Any) -> None:
        del coord
        session.run(self._initializer)


def make_iterator(est: Any, input_fn: Any, mode: str, strategy: Any) -> tuple[Any, list]:
    """One ``input_fn`` call per worker, its batches dealt to the replicas in turn."""

    def dataset_fn(input_context: Any) -> Any:
        del input_context  # tf.estimator passed it only to an input_fn that asked for it
        return call_input_fn(input_fn, mode, est.params, est.config)

    iterator = strategy.make_input_fn_iterator(dataset_fn)
    return iterator, [IteratorInitializerHook(iterator)]


def parse_iterator_result(result: Any) -> tuple[Any, Any]:
    """``(features, labels)`` of one distributed batch (labels ``None`` if absent)."""
    if isinstance(result, list | tuple):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1]
    return result, None


def first_replica_hooks(strategy: Any, per_replica: Any) -> list:
    """The hooks of the first replica: each replica built its own, the first one runs."""
    return [strategy.experimental_local_results(hook)[0] for hook in per_replica]


def steps_per_run_variable() -> Any:
    """The host-side ``session_run_hook/steps_per_run`` local variable tf.estimator's eval made.

    It drives nothing here, but creating it keeps the evaluation graph's ops (and so the
    op-level random seeds) as tf.estimator's.
    """
    collection = "session_run_hook_steps_per_run"
    found = tf.compat.v1.get_collection(collection)
    if found:
        return found[0]
    with tf.compat.v1.variable_scope("session_run_hook", reuse=tf.compat.v1.AUTO_REUSE):
        return tf.compat.v1.get_variable(
            "steps_per_run",
            initializer=tf.compat.v1.ones_initializer(),
            shape=[],
            dtype=tf.int32,
            trainable=False,
            collections=[collection, tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
            use_resource=True,
        )


def _ready_for_local_init(scaffold: Any) -> Any:
    if scaffold.ready_for_local_init_op:
        return scaffold.ready_for_local_init_op
    return tf.compat.v1.train.Scaffold.get_or_default(
        "ready_for_local_init_op",
        tf.compat.v1.GraphKeys.READY_FOR_LOCAL_INIT_OP,
        lambda: tf.compat.v1.report_uninitialized_variables(tf.compat.v1.global_variables()),
    )


def _present(values: Iterator[Any]) -> list:
    return [v for v in values if v is not None]


def combine_scaffold(grouped: Any, strategy: Any) -> Any:
    """One ``Scaffold`` from the replicas' scaffolds (ops grouped, the first saver and init_fn)."""
    scaffolds = strategy.experimental_local_results(grouped)

    def grouped_or_none(values: list) -> Any:
        return strategy.group(values) if values else None

    def concat(value: Any) -> Any:
        parts = tf.nest.flatten(strategy.experimental_local_results(value))
        return parts[0] if len(parts) == 1 else tf.concat(parts, 0)

    # Built in tf.estimator's order, so the graphs match op for op.
    feed = grouped_or_none(_present(s.init_feed_dict for s in scaffolds))
    init_fns = _present(s._user_init_fn for s in scaffolds)
    init_op = grouped_or_none(_present(s.init_op for s in scaffolds))
    ready = strategy.extended.call_for_each_replica(lambda s: s.ready_op, args=(grouped,))
    ready = None if ready is None else concat(ready)
    ready_for_local = strategy.extended.call_for_each_replica(
        _ready_for_local_init, args=(grouped,)
    )
    ready_for_local = None if ready_for_local is None else concat(ready_for_local)
    local_init_op = grouped_or_none(_present(s.local_init_op for s in scaffolds))
    summary_op = grouped_or_none(_present(s.summary_op for s in scaffolds))
    savers = _present(s.saver for s in scaffolds)
    return tf.compat.v1.train.Scaffold(
        init_op=init_op,
        ready_op=ready,
        ready_for_local_init_op=ready_for_local,
        local_init_op=local_init_op,
        summary_op=summary_op,
        saver=savers[0] if savers else None,
        init_feed_dict=feed,
        init_fn=init_fns[0] if init_fns else None,
    )
