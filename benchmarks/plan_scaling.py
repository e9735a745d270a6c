"""Planning time of the pure engine for 1k, 10k and 100k variables.

Times :func:`tf1compat_init.plan_restore` (map parsing, resolution against every key,
shape and dtype checks, the report) on a synthetic checkpoint listing, for the map
forms that scale differently: identity, a scope rename, a regex with back-references,
and an identity map with 1% of the targets missing (policy ``"warn"``, suggestions
included). When the TF-free bundle writer is available, it also writes a real index of
the largest size and times :func:`tf1compat_init.open_checkpoint` on it (index parsing).
No TensorFlow is imported.

Every plan is checked: the number of loaded, missing and unused entries must be exactly
what the case constructs. Growth from 10k to 100k is compared with ``n log n``
(``10 * log(1e5) / log(1e4) = 12.5``); planning 100k variables should take about a
second or less.

Usage:
    python benchmarks/plan_scaling.py                   # 1k, 10k, 100k; 3 repeats
    python benchmarks/plan_scaling.py --quick           # 100, 1k; 1 repeat (CI smoke test)
    python benchmarks/plan_scaling.py --sizes 1000,10000,100000 --repeats 5 --out PATH
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import tf1compat_init as tci  # noqa: E402
from tf1compat_init.reader import VariableInfo  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SLACK = 1.5  # timing noise allowed on top of the n log n bound


@dataclass
class Listing:
    """A checkpoint listing for the planner: what ``plan_restore`` reads from a checkpoint."""

    variables: dict[str, VariableInfo]
    prefix: str = "/synthetic/model.ckpt-1"
    format: str = "name-based"
    object_paths: dict[str, str] = field(default_factory=dict)


def names(n: int, scope: str) -> list[str]:
    # TF1-like names: 50 layers per block, kernel and bias per layer.
    out = []
    for i in range(n):
        block, layer = divmod(i // 2, 50)
        out.append(f"{scope}block_{block}/layer_{layer}/{'kernel' if i % 2 == 0 else 'bias'}")
    return out


def shape_of(name: str) -> tuple[int, ...]:
    return (16, 32) if name.endswith("kernel") else (32,)


@dataclass
class Case:
    name: str
    listing: Listing
    targets: dict[str, tuple]
    amap: Any
    policy: dict[str, Any]
    expect: tuple[int, int, int]  # loaded, missing, unused


def make_cases(n: int) -> list[Case]:
    plain = names(n, "")
    ckpt = Listing({k: VariableInfo(shape_of(k), "float32") for k in plain})
    same = {k: (shape_of(k), "float32") for k in plain}
    moved = {f"new/{k}": (shape_of(k), "float32") for k in plain}
    old = Listing({f"old/{k}": VariableInfo(shape_of(k), "float32") for k in plain})
    renamed = {re.sub(r"^block_(\d+)/", r"stage_\1/", k): (shape_of(k), "float32") for k in plain}
    drop = max(1, n // 100)
    partial = Listing(dict(list(ckpt.variables.items())[drop:]))
    return [
        Case("identity", ckpt, same, None, {}, (n, 0, 0)),
        Case("scope_rename", old, moved, {"old/": "new/"}, {}, (n, 0, 0)),
        Case(
            "regex",
            ckpt,
            renamed,
            {re.compile(r"block_(\d+)/(.*)"): r"stage_\1/\2"},
            {},
            (n, 0, 0),
        ),
        Case(
            "identity_1pct_missing",
            partial,
            same,
            None,
            {"on_missing": "ignore"},
            (n - drop, drop, 0),
        ),
    ]


def check(case: Case, plan: Any) -> None:
    r = plan.report
    got = (len(r.loaded), len(r.missing), len(r.unused))
    if got != case.expect:
        raise AssertionError(f"{case.name}: loaded/missing/unused {got}, expected {case.expect}")


def timed(fn: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    times, out = [], None
    for _ in range(repeats):
        out = None
        gc.collect()  # start each run from the same heap; collection stays on while timed
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def index_parse(n: int, repeats: int, log: Callable[[str], None]) -> dict[str, Any] | None:
    try:
        import numpy as np

        from tf1compat_init.bundle.writer import BundleWriter
    except ImportError as e:
        log(f"  open_checkpoint: skipped ({e})")
        return {"status": "skipped", "reason": str(e)}
    with tempfile.TemporaryDirectory(prefix="tci-plan-") as tmp:
        prefix = os.path.join(tmp, "model.ckpt")
        value = np.zeros(1, np.float32)
        with BundleWriter(prefix) as w:
            for k in sorted(names(n, "")):
                w.add(k, value, "float32")
        times, info = timed(lambda: tci.open_checkpoint(prefix), repeats)
        ok = len(info.variables) == n
    med = statistics.median(times)
    log(f"  open_checkpoint ({n} entries): {med * 1e3:8.1f} ms")
    return {"status": "ok", "entries": n, "times_s": times, "median_s": med, "verified": ok}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="100 and 1000 variables, 1 repeat")
    p.add_argument("--out", default="", help="JSON path")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.repeats = "100,1000", 1
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    out = (
        Path(args.out)
        if args.out
        else RESULTS / ("plan_scaling_quick.json" if args.quick else "plan_scaling.json")
    )

    def log(line: str) -> None:
        print(line, flush=True)

    result: dict[str, Any] = {
        "schema": 1,
        "benchmark": "plan_scaling",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": args.quick,
        "repeats": args.repeats,
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        },
        "tensorflow_imported": False,
        "sizes": sizes,
        "cases": {},
    }
    all_ok = True
    for n in sizes:
        log(f"{n} variables")
        for case in make_cases(n):
            times, plan = timed(
                lambda c=case: tci.plan_restore(c.listing, c.targets, c.amap, **c.policy),
                args.repeats,
            )
            try:
                check(case, plan)
                verified = True
            except AssertionError as e:
                log(f"  {e}")
                verified, all_ok = False, False
            med = statistics.median(times)
            entry = result["cases"].setdefault(case.name, {"by_size": {}})
            entry["by_size"][str(n)] = {
                "times_s": times,
                "median_s": med,
                "per_variable_us": med / n * 1e6,
                "verified": verified,
            }
            log(f"  {case.name:<24} {med * 1e3:8.1f} ms  {med / n * 1e6:6.2f} us/variable")
        result.setdefault("open_checkpoint", {})[str(n)] = index_parse(n, args.repeats, log)
    if len(sizes) >= 2:
        a, b = sizes[-2], sizes[-1]
        bound = (b * math.log(b)) / (a * math.log(a))
        for name, entry in result["cases"].items():
            ta, tb = entry["by_size"][str(a)]["median_s"], entry["by_size"][str(b)]["median_s"]
            growth = tb / ta
            entry["growth"] = {
                "from": a,
                "to": b,
                "ratio": growth,
                "exponent": math.log(growth) / math.log(b / a),
                "nlogn_ratio": bound,
                "within_nlogn": growth <= bound * SLACK,
            }
            log(
                f"{name}: x{growth:.1f} from {a} to {b} (n log n: x{bound:.1f})"
                f" {'ok' if growth <= bound * SLACK else 'WORSE THAN n log n'}"
            )
    result["tensorflow_imported"] = "tensorflow" in sys.modules
    result["machine"]["load_average_end"] = (
        list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    log(f"wrote {out}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
