"""One task of the local between-graph cluster started by ``tests/frontends/v1/test_v1_cluster.py``.

Usage: ``python tests/support/v1_cluster_task.py CONFIG.json ps|chief|worker``

- ``ps``: serves the variables until the test kills it.
- ``chief`` (worker 0): a ``MonitoredTrainingSession`` with ``CheckpointInitHook``
  warm-starts the variables on the ps, records them, adds 10 to ``w`` (a value only the
  chief's session produced), signals the worker, waits for it, records again, and closes
  (saving a checkpoint). A second session in a fresh graph must then resume from that
  checkpoint: the warm start runs once.
- ``worker`` (worker 1): waits for the chief's signal, opens a non-chief session with the
  same hook, records what it sees, bumps a counter and signals back.

Each task writes ``result_<role>.json`` and exits with ``os._exit`` (a gRPC server does
not shut down cleanly in-process). Every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

from tf1compat_init import v1 as tv1  # noqa: E402

V1 = tf.compat.v1
DEADLINE_S = 60


def wait_for(path: str) -> None:
    end = time.monotonic() + DEADLINE_S
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise TimeoutError(f"waited {DEADLINE_S}s for {path}")
        time.sleep(0.05)


def signal(path: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write("1")
    os.replace(path + ".tmp", path)


def build(cluster: tf.train.ClusterSpec, task: int) -> dict:
    setter = V1.train.replica_device_setter(
        worker_device=f"/job:worker/task:{task}", cluster=cluster
    )
    with V1.device(setter):
        global_step = V1.train.get_or_create_global_step()
        with V1.variable_scope("model"):
            w = V1.get_variable("w", [3], initializer=V1.zeros_initializer())
            b = V1.get_variable("b", [2], initializer=V1.zeros_initializer())
        counter = V1.get_variable(
            "counter", [], tf.float32, V1.zeros_initializer(), trainable=False
        )
        return {
            "w": w,
            "b": b,
            "counter": counter,
            "step": global_step,
            # A "training step": changes w and the step, so the final checkpoint is new.
            "add10": tf.group(V1.assign_add(w, [10.0, 10.0, 10.0]), V1.assign_add(global_step, 1)),
            "bump": V1.assign_add(counter, 1.0),
        }


def session(cfg: dict, server: tf.distribute.Server, task: int, graph_ops: dict, hook):
    return V1.train.MonitoredTrainingSession(
        master=server.target,
        is_chief=task == 0,
        checkpoint_dir=cfg["run_dir"] if task == 0 else None,
        hooks=[hook],
        config=V1.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{task}"]),
        save_checkpoint_secs=None,
        save_checkpoint_steps=1000,  # the CheckpointSaverHook still saves at the end
        save_summaries_steps=None,
        save_summaries_secs=None,
        log_step_count_steps=None,
        save_graph_def=tv1.can_save_graph_def(),  # False on TF 2.20 + protobuf 7 only
        max_wait_secs=DEADLINE_S,
    )


def fetch(sess, ops: dict) -> dict:
    values = sess.run({k: ops[k] for k in ("w", "b", "counter", "step")})
    return {k: v.tolist() for k, v in values.items()}


def main() -> None:
    config_path, role = sys.argv[1], sys.argv[2]
    with open(config_path) as f:
        cfg = json.load(f)
    cluster = tf.train.ClusterSpec({"ps": cfg["ps"], "worker": cfg["worker"]})
    job, task = ("ps", 0) if role == "ps" else ("worker", 0 if role == "chief" else 1)
    server = tf.distribute.Server(cluster, job_name=job, task_index=task, start=True)
    sync = cfg["sync_dir"]
    if role == "ps":
        signal(os.path.join(sync, "ps_up"))
        server.join()
        return
    result: dict = {}
    mapping = {"pretrained/": "model/"}
    if role == "chief":
        with tf.Graph().as_default():
            ops = build(cluster, task)
            hook = tv1.CheckpointInitHook(cfg["pretrained"], mapping)
            with session(cfg, server, task, ops, hook) as sess:
                result["chief_start"] = fetch(sess, ops)
                sess.run(ops["add10"])
                signal(os.path.join(sync, "chief_ready"))
                wait_for(os.path.join(sync, "worker_done"))
                result["chief_after_worker"] = fetch(sess, ops)
            result["planned"] = sorted(hook.report.loaded)
        with tf.Graph().as_default():  # a restart of the chief: must resume, not warm-start
            ops = build(cluster, task)
            hook = tv1.CheckpointInitHook(cfg["pretrained"], mapping)
            with session(cfg, server, task, ops, hook) as sess:
                result["chief_resumed"] = fetch(sess, ops)
    else:
        wait_for(os.path.join(sync, "chief_ready"))
        with tf.Graph().as_default():
            ops = build(cluster, task)
            hook = tv1.CheckpointInitHook(cfg["pretrained"], mapping)
            with session(cfg, server, task, ops, hook) as sess:
                result["worker_start"] = fetch(sess, ops)
                sess.run(ops["bump"])
            result["planned"] = sorted(hook.report.loaded)
        signal(os.path.join(sync, "worker_done"))
    with open(os.path.join(sync, f"result_{role}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # report, then leave without waiting on gRPC threads
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1 if not isinstance(e, SystemExit) else int(e.code or 0))
    sys.stdout.flush()
    os._exit(0)
