"""CLI start-up: ``inspect`` and ``plan`` with the native reader, against the same work
done through TensorFlow's reader, each in a fresh process.

The native bundle reader lets ``tf1compat-init inspect`` and ``plan`` (checkpoint
against checkpoint) run without importing TensorFlow. This measures what that saves:

- ``inspect (ours)``: ``python -m tf1compat_init inspect CKPT --json``;
- ``plan (ours)``: ``python -m tf1compat_init plan SRC --target DST --json``;
- ``inspect via TensorFlow``: a fresh process that imports TensorFlow and lists the
  same keys, shapes and dtypes with ``tf.train.load_checkpoint`` (what ``inspect``
  would cost if it used TensorFlow's reader);
- ``import tensorflow``: the import alone, the floor of anything that needs it.

Each command runs ``--repeats`` times (median reported, after one untimed run that
warms the page cache); the ``ours`` runs also check that TensorFlow was never
imported (``-X importtime`` lists every module). Writes JSON under
``benchmarks/results/``. Never asserts a time.

    python benchmarks/cli_startup.py            # 2,000-variable checkpoints
    python benchmarks/cli_startup.py --quick    # CI smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def write_checkpoints(directory: Path, n: int) -> tuple[str, str]:
    """A name-based checkpoint of ``n`` small variables, and one with every name renamed."""
    code = f"""
import sys
import numpy as np
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
for prefix, scope in ((sys.argv[1], "model"), (sys.argv[2], "renamed")):
    g = tf.Graph()
    with g.as_default():
        vs = [tf.compat.v1.get_variable(f"{{scope}}/layer_{{i:05d}}/kernel", [8, 8])
              for i in range({n})]
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver(vs).save(s, prefix, write_meta_graph=False)
"""
    src, dst = str(directory / "src" / "model.ckpt"), str(directory / "dst" / "model.ckpt")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run([sys.executable, "-c", code, src, dst], check=True, env=env)
    return src, dst


def _env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    src = str(ROOT / "src")
    env["PYTHONPATH"] = (
        src + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else src
    )
    return env


TF_INSPECT = """
import sys
import tensorflow as tf
r = tf.train.load_checkpoint(sys.argv[1])
shapes, dtypes = r.get_variable_to_shape_map(), r.get_variable_to_dtype_map()
print(len(shapes), sum(1 for k in shapes if dtypes[k].name))
"""


def commands(src: str, dst: str) -> dict[str, list[str]]:
    py = [sys.executable]
    return {
        "inspect (ours)": [*py, "-X", "importtime", "-m", "tf1compat_init", "inspect", src, "--json"],
        "plan (ours)": [
            *py, "-X", "importtime", "-m", "tf1compat_init", "plan", src,
            "--target", dst, "--map", "model/=renamed/", "--json",
        ],
        "inspect via TensorFlow": [*py, "-c", TF_INSPECT, src],
        "import tensorflow": [*py, "-c", "import tensorflow"],
    }  # fmt: skip


def run_once(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    """Runs ``cmd``: its wall time and the finished process; a failure is an error."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return took, proc


def imports_tensorflow(importtime_log: str) -> bool:
    """Whether a ``-X importtime`` log lists the top-level ``tensorflow`` package."""
    return any(
        line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == "tensorflow"
        for line in importtime_log.splitlines()
    )


def measure(cmd: list[str], repeats: int, warmup: bool = True) -> dict[str, Any]:
    if warmup:
        run_once(cmd)  # warm the page cache and the .pyc files
    times = []
    imported_tf = False
    for _ in range(repeats):
        took, proc = run_once(cmd)
        times.append(took)
        # -X importtime writes one line per imported module to stderr.
        imported_tf = imported_tf or imports_tensorflow(proc.stderr)
    return {
        "median_s": statistics.median(times),
        "times_s": times,
        "imported_tensorflow": imported_tf if "importtime" in cmd else None,
        "stdout_head": proc.stdout[:200],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variables", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--quick", action="store_true", help="20 variables, 1 repeat, no warm-up run (CI)"
    )
    p.add_argument("--out", default=str(RESULTS / "cli_startup.json"))
    args = p.parse_args(argv)
    if args.quick:
        args.variables, args.repeats = 20, 1
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = write_checkpoints(Path(tmp), args.variables)
        results = {
            name: measure(cmd, args.repeats, warmup=not args.quick)
            for name, cmd in commands(src, dst).items()
        }
    for name in ("inspect (ours)", "plan (ours)"):
        if results[name]["imported_tensorflow"]:
            print(f"error: {name} imported TensorFlow", file=sys.stderr)
            return 1
    tf_inspect = results["inspect via TensorFlow"]["median_s"]
    out = {
        "benchmark": "cli_startup",
        "variables": args.variables,
        "repeats": args.repeats,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_1m": os.getloadavg()[0],
        },
        "results": results,
        "speedup_inspect_vs_tensorflow": tf_inspect / results["inspect (ours)"]["median_s"],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out + ".tmp"
    Path(tmp_out).write_text(json.dumps(out, indent=2) + "\n")
    os.replace(tmp_out, args.out)
    for name, r in results.items():
        print(f"{name:24s} {r['median_s'] * 1e3:8.0f} ms")
    print(f"inspect: {out['speedup_inspect_vs_tensorflow']:.1f}x faster than through TensorFlow")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
