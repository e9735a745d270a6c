"""What ``tf1compat-init run`` adds to a script that imports TensorFlow (issue 35: <= 0.2 s).

Each round starts, in a fresh process and in alternating order:

- ``python SCRIPT``: the script alone (it imports TensorFlow and touches ``tf.compat.v1``);
- ``tf1compat-init run SCRIPT``: the same script through the launcher (the alias installed);
- ``tf1compat-init run SCRIPT`` with ``tf.estimator`` used: the first use imports the
  estimator package (what a tf.estimator script pays anyway, reported apart).

Medians over ``--repeats`` rounds after one untimed warm-up each; the load average is
recorded. Never asserted by a test (tests/project/test_benchmarks_smoke.py runs ``--quick``).

    python benchmarks/run_overhead.py              # 9 rounds
    python benchmarks/run_overhead.py --quick      # CI smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SCRIPT = "import tensorflow as tf\ntf.compat.v1.train.get_global_step\n"
WITH_ESTIMATOR = SCRIPT + "tf.estimator.Estimator\n"


def timed(command: list[str]) -> float:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, capture_output=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="1 round (CI smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS / "run_overhead.json")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    launcher = str(Path(sys.executable).parent / "tf1compat-init")
    with tempfile.TemporaryDirectory() as d:
        plain, with_est = Path(d) / "plain.py", Path(d) / "with_estimator.py"
        plain.write_text(SCRIPT)
        with_est.write_text(WITH_ESTIMATOR)
        commands = {
            "python SCRIPT": [sys.executable, str(plain)],
            "tf1compat-init run SCRIPT": [launcher, "run", str(plain)],
            "tf1compat-init run SCRIPT (uses tf.estimator)": [launcher, "run", str(with_est)],
        }
        load_before = os.getloadavg()
        for command in commands.values():
            timed(command)  # warm-up: page cache, bytecode
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeats):
            for name, command in commands.items():
                times[name].append(timed(command))
    medians = {name: statistics.median(t) for name, t in times.items()}
    overhead = medians["tf1compat-init run SCRIPT"] - medians["python SCRIPT"]
    result = {
        "medians_s": medians,
        "runs_s": times,
        "overhead_s": overhead,
        "goal_s": 0.2,
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }
    for name, value in medians.items():
        print(f"{name:48s} {value:6.2f} s")
    print(f"run adds {overhead:+.3f} s (goal <= 0.2 s); load {load_before[0]:.1f}")
    result["quick"] = args.quick
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
