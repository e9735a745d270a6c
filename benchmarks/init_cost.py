"""Graph-building cost per variable: tf1compat_init.v1 vs tf.compat.v1.train.init_from_checkpoint.

Both run on identical fresh graphs (``get_variable`` under nested scopes, resource and
ref variables), with the same checkpoint and the map ``{"/": "/"}``. Timed: the call
alone (ours includes opening the checkpoint index and planning; TF's includes listing
the checkpoint). Both results are then checked by running the initializers and
comparing every value with the checkpoint. Writes JSON with a machine description.

Usage:
    python benchmarks/init_cost.py [--variables 2000] [--repeats 3] [--out PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf1compat_init import v1 as tci_v1  # noqa: E402

V1 = tf.compat.v1
OUT = Path(__file__).resolve().parent / "results" / "init_cost.json"


def build_graph(n: int, use_resource: bool) -> tuple[tf.Graph, list]:
    graph = tf.Graph()
    with graph.as_default():
        variables = []
        for i in range(n):
            with V1.variable_scope(f"block_{i // 50}"), V1.variable_scope(f"layer_{i % 50}"):
                shape = [16] if i % 2 else [4, 8]
                variables.append(
                    V1.get_variable(
                        "w", shape, initializer=V1.zeros_initializer(), use_resource=use_resource
                    )
                )
    return graph, variables


def write_checkpoint(n: int, directory: str) -> tuple[str, dict]:
    rng = np.random.default_rng(0)
    graph, variables = build_graph(n, use_resource=True)
    values = {
        v.op.name: rng.standard_normal(v.shape.as_list()).astype(np.float32) for v in variables
    }
    with graph.as_default(), V1.Session() as sess:
        feeds = {v.op.name: V1.placeholder(tf.float32, v.shape) for v in variables}
        sess.run(
            [v.assign(feeds[v.op.name]) for v in variables],
            {feeds[k]: x for k, x in values.items()},
        )
        path = V1.train.Saver().save(sess, os.path.join(directory, "model.ckpt"))
    return path, values


def time_call(kind: str, n: int, use_resource: bool, path: str, values: dict) -> dict:
    gc.collect()  # garbage of earlier graphs must not be collected on this run's clock
    graph, variables = build_graph(n, use_resource)
    gc.collect()
    ops_before = len(graph.get_operations())
    with graph.as_default():
        start = time.perf_counter()
        if kind == "tensorflow":
            V1.train.init_from_checkpoint(path, {"/": "/"})
        else:
            tci_v1.init_from_checkpoint(path, {"/": "/"})
        seconds = time.perf_counter() - start
        ops_added = len(graph.get_operations()) - ops_before
        graph_bytes = graph.as_graph_def().ByteSize()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            got = sess.run({v.op.name: v for v in variables})
    wrong = [k for k, x in values.items() if not np.array_equal(got[k], x)]
    if wrong:
        raise AssertionError(f"{kind}: {len(wrong)} variables hold wrong values, e.g. {wrong[0]}")
    return {"seconds": seconds, "ops_added": ops_added, "graph_def_bytes": graph_bytes}


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "numpy": np.__version__,
        "load_average_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "note": "shared machine: other processes may run at the same time; timings are noisy",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variables", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    n = args.variables
    results: dict = {"variables": n, "repeats": args.repeats, "machine": machine(), "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        path, values = write_checkpoint(n, tmp)
        for use_resource in (True, False):
            case = "resource" if use_resource else "ref"
            row: dict = {}
            runs_of: dict[str, list] = {"tensorflow": [], "tf1compat_init": []}
            for _ in range(args.repeats):  # interleaved, so load changes hit both alike
                for kind, runs in runs_of.items():
                    runs.append(time_call(kind, n, use_resource, path, values))
            for kind, runs in runs_of.items():
                secs = [r["seconds"] for r in runs]
                row[kind] = {
                    "seconds_min": min(secs),
                    "seconds_median": statistics.median(secs),
                    "us_per_variable_median": statistics.median(secs) / n * 1e6,
                    "ops_added": runs[0]["ops_added"],
                    "graph_def_bytes": runs[0]["graph_def_bytes"],
                }
            row["ratio_median"] = (
                row["tensorflow"]["seconds_median"] / row["tf1compat_init"]["seconds_median"]
            )
            row["ratio_min"] = (
                row["tensorflow"]["seconds_min"] / row["tf1compat_init"]["seconds_min"]
            )
            results["cases"][case] = row
            print(
                f"{case:>8} variables: TF {row['tensorflow']['us_per_variable_median']:7.1f} us/var, "
                f"ours {row['tf1compat_init']['us_per_variable_median']:6.1f} us/var, "
                f"{row['ratio_median']:.1f}x cheaper (best runs: {row['ratio_min']:.1f}x); ops added "
                f"{row['tensorflow']['ops_added']} vs {row['tf1compat_init']['ops_added']}"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
