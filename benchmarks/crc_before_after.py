"""Restore speed before and after issue 29 (the CRC32C backend), in one run.

``restore_speed.py`` is run alternately on the code of ``--before`` (a git revision: its
``src/`` and ``benchmarks/``, extracted to a temporary directory) and on this tree, with
the ``crc32c`` package chosen (the default where it is installed) and with
``google-crc32c`` forced (the fallback), ``--rounds`` times, on one shared checkpoint
directory. Each run times TensorFlow's restores and ours in one process, so the ratios
``ours / TensorFlow`` of the variants can be compared even when the machine's speed
drifts between runs; the medians over rounds are written with every run's numbers.

Usage:
    python benchmarks/crc_before_after.py --before 0d691a6 --rounds 2 --repeats 3
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
METHODS = "raw_read,saver_restore,saver_restore_graph,checkpoint_restore,ours"
RATIOS = (
    "ours_vs_saver_restore",
    "ours_vs_saver_restore_graph",
    "ours_vs_checkpoint_restore",
    "ours_vs_raw_read",
)

#: Runs restore_speed.py with one CRC32C backend forced, in the same process.
_FORCE = (
    "import runpy, sys; sys.path.insert(0, {src!r});"
    " from tf1compat_init.bundle import crc; crc._select({backend!r});"
    " sys.argv = [{script!r}] + sys.argv[1:]; runpy.run_path({script!r}, run_name='__main__')"
)


def _extract(rev: str, dest: Path) -> Path:
    blob = subprocess.run(
        ["git", "archive", "--format=tar", rev, "src", "benchmarks"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _run(tree: Path, backend: str | None, args: argparse.Namespace, out: Path) -> dict:
    script = str(tree / "benchmarks" / "restore_speed.py")
    common = [
        *("--sizes", args.sizes, "--repeats", str(args.repeats), "--methods", METHODS),
        *("--no-memory", "--cold", "0", "--first", "0", "--chart", "none", "--fresh"),
        *("--workdir", args.workdir, "--out", str(out)),
    ]
    if backend is None:
        cmd = [sys.executable, script, *common]
    else:
        code = _FORCE.format(src=str(tree / "src"), backend=backend, script=script)
        cmd = [sys.executable, "-c", code, *common]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def _row(res: dict, load: float, load_after: float) -> dict[str, Any]:
    row: dict[str, Any] = {
        "load_before": load,
        "load_after": load_after,
        "crc32c_backend": res["machine"].get("crc32c_backend", "ctypes"),
        "created": res["created"],
        "sizes": {},
    }
    for size, s in res["sizes"].items():
        m = s["methods"]
        row["sizes"][size] = {
            "gbps": {k: v.get("gbps") for k, v in m.items()},
            "ours_median_s": m["ours"].get("median_s"),
            "ratios": {k: s["ratios"].get(k) for k in RATIOS},
        }
    return row


def _summary(runs: dict[str, list[dict]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for name, rows in runs.items():
        if not rows:
            continue
        summary[name] = {"runs": len(rows)}
        for size in rows[0]["sizes"]:
            cell = summary[name][size] = {}
            for k in RATIOS:
                got = [r["sizes"][size]["ratios"][k] for r in rows]
                got = [g for g in got if g is not None]
                if got:
                    cell[k] = statistics.median(got)
            cell["ours_gbps"] = statistics.median(r["sizes"][size]["gbps"]["ours"] for r in rows)
    return summary


def _write(args: argparse.Namespace, argv: list[str] | None, runs: dict) -> dict:
    summary = _summary(runs)
    result = {
        "benchmark": "crc_before_after",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "cores": os.cpu_count(),
        "median_ratios": summary,
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="git revision of the code before")
    p.add_argument("--sizes", default="512M,small2000")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workdir", default="", help="checkpoints, kept and reused")
    p.add_argument("--out", default=str(ROOT / "benchmarks/results/crc_before_after.json"))
    p.add_argument(
        "--collect",
        default="",
        help="rebuild --out from the r<round>_<variant>.json files an interrupted run left in"
        " this temporary directory (variants in the order above), then exit",
    )
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="crc-before-after-"))
    args.workdir = args.workdir or str(tmp / "ckpts")
    before = _extract(args.before, tmp / "before")
    variants: dict[str, tuple[Path, str | None]] = {
        f"before ({args.before}: google-crc32c's C library through ctypes)": (before, None),
        "after (crc32c)": (ROOT, "crc32c"),
        "after, fallback (google-crc32c public API)": (ROOT, "google-crc32c"),
    }
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    if args.collect:
        for path in sorted(Path(args.collect).glob("r*_*.json")):
            i = int(path.stem.split("_")[1])
            res = json.loads(path.read_text())
            loads = [s["load_average"] for s in res["sizes"].values()]
            row = _row(res, loads[0]["before"][0], loads[-1]["after"][0])
            runs[list(variants)[i]].append(row)
        print(json.dumps(_write(args, argv, runs), indent=1))
        return 0
    for r in range(args.rounds):
        for i, (name, (tree, backend)) in enumerate(variants.items()):
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            res = _run(tree, backend, args, tmp / f"r{r}_{i}.json")
            row = _row(res, load, os.getloadavg()[0])
            runs[name].append(row)
            _write(args, argv, runs)  # after every run: an interrupted run keeps its numbers
            print(
                f"round {r} {name}: {time.perf_counter() - t0:.0f} s, load {load:.1f}",
                *(
                    f"{size} {k}={v:.2f}"
                    for size, sz in row["sizes"].items()
                    for k, v in sz["ratios"].items()
                    if v is not None and k != "ours_vs_raw_read"
                ),
                flush=True,
            )
    print(json.dumps(_write(args, argv, runs), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
