"""TF_CONFIG cases for RunConfig, and what a RunConfig class makes of each.

    python tests/support/tf_config_cases.py --golden   # TF 2.15 only: rewrites GOLDEN from tf.estimator

The golden file is what tf.estimator 2.15's ``RunConfig`` gives for every case; the tests check
that tf.estimator still reproduces it (TF 2.15 leg) and that ours does (both legs).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "run_config_tf_config_tf215.json"

_CPW = {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222", "p1:2222"]}
_MASTER = {"master": ["m0:2222"], "worker": ["w0:2222"], "ps": ["p0:2222"]}

#: name -> TF_CONFIG (a dict, or raw text for the cases that are not JSON)
CASES = {
    "unset": None,
    "empty": {},
    "local_worker": {"task": {"type": "worker", "index": 0}},
    "local_chief": {"task": {"type": "chief", "index": 0}},
    "local_index_1": {"task": {"type": "worker", "index": 1}},
    "local_session_master": {"session_master": "grpc://here:1", "eval_session_master": "e:1"},
    "chief": {"cluster": _CPW, "task": {"type": "chief", "index": 0}},
    "worker_0": {"cluster": _CPW, "task": {"type": "worker", "index": 0}},
    "worker_1": {"cluster": _CPW, "task": {"type": "worker", "index": "1"}},
    "ps_0": {"cluster": _CPW, "task": {"type": "ps", "index": 0}},
    "ps_1": {"cluster": _CPW, "task": {"type": "ps", "index": 1}},
    "evaluator": {"cluster": _CPW, "task": {"type": "evaluator", "index": 0}},
    "evaluator_3": {
        "cluster": _CPW,
        "task": {"type": "evaluator", "index": 3},
        "eval_session_master": "grpc://e:1",
    },
    "other_job": {
        "cluster": {**_CPW, "aux": ["a0:1", "a1:1"]},
        "task": {"type": "aux", "index": 1},
    },
    "no_chief": {"cluster": {"worker": ["w0:1"]}, "task": {"type": "worker", "index": 0}},
    "two_chiefs": {
        "cluster": {"chief": ["c0:1", "c1:1"]},
        "task": {"type": "chief", "index": 0},
    },
    "no_type": {"cluster": _CPW, "task": {"index": 0}},
    "no_index": {"cluster": _CPW, "task": {"type": "worker"}},
    "negative_index": {"cluster": _CPW, "task": {"type": "worker", "index": -1}},
    "unknown_type": {"cluster": _CPW, "task": {"type": "trainer", "index": 0}},
    "index_out_of_range": {"cluster": _CPW, "task": {"type": "worker", "index": 2}},
    "single_node": {"cluster": {"chief": ["c0:1"]}, "task": {"type": "chief", "index": 0}},
    "session_master_in_cluster": {
        "cluster": _CPW,
        "task": {"type": "worker", "index": 1},
        "session_master": "grpc://elsewhere:9",
    },
    "master": {"cluster": _MASTER, "task": {"type": "master", "index": 0}},
    "master_worker": {"cluster": _MASTER, "task": {"type": "worker", "index": 0}},
    "master_ps": {"cluster": _MASTER, "task": {"type": "ps", "index": 0}},
    "master_and_chief": {
        "cluster": {**_MASTER, "chief": ["c0:1"]},
        "task": {"type": "master", "index": 0},
    },
    "master_evaluator": {"cluster": _MASTER, "task": {"type": "evaluator", "index": 0}},
    "service": {"cluster": _CPW, "task": {"type": "chief", "index": 0}, "service": {"k": "v"}},
    "service_not_dict": {"cluster": _CPW, "task": {"type": "chief", "index": 0}, "service": 3},
    "model_dir": {"model_dir": "/tmp/from_tf_config"},
    "model_dir_empty": {"model_dir": ""},
    "not_json": "{cluster: chief}",
}


def observe(run_config_cls, case: str) -> dict:
    """What ``run_config_cls()`` gives under the case's TF_CONFIG: properties, or the error."""
    value = CASES[case]
    saved = os.environ.pop("TF_CONFIG", None)
    try:
        if value is not None:
            os.environ["TF_CONFIG"] = value if isinstance(value, str) else json.dumps(value)
        try:
            config = run_config_cls()
        except Exception as err:  # the error is the observation
            return {"error": type(err).__name__, "message": str(err)}
    finally:
        os.environ.pop("TF_CONFIG", None)
        if saved is not None:
            os.environ["TF_CONFIG"] = saved
    session = config.session_config
    return {
        "cluster_spec": config.cluster_spec.as_dict(),
        "task_type": config.task_type,
        "task_id": config.task_id,
        "master": config.master,
        "evaluation_master": config.evaluation_master,
        "is_chief": config.is_chief,
        "num_ps_replicas": config.num_ps_replicas,
        "num_worker_replicas": config.num_worker_replicas,
        "global_id_in_cluster": config.global_id_in_cluster,
        "service": config.service,
        "model_dir": config.model_dir,
        "device_filters": None if session is None else list(session.device_filters),
        "allow_soft_placement": None if session is None else session.allow_soft_placement,
    }


def main(argv: list[str]) -> None:
    import tensorflow as tf

    if argv != ["--golden"]:
        raise SystemExit(__doc__)
    if not hasattr(tf, "estimator"):
        raise SystemExit("the golden file is made by the real tf.estimator (TF 2.15)")
    runs = {case: observe(tf.estimator.RunConfig, case) for case in CASES}
    GOLDEN.write_text(json.dumps({"tf_version": tf.__version__, "cases": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
