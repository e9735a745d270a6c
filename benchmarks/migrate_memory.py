"""Peak memory of ``migrate`` on a checkpoint much larger than its largest tensor.

Writes a name-based checkpoint of N tensors of M MiB each (64 x 16 MiB = 1 GiB by
default) natively, then runs each measurement in a fresh subprocess and reads its peak
resident set size (``resource.getrusage(RUSAGE_SELF).ru_maxrss``):

- ``baseline``: import the library and open the checkpoint (the fixed overhead);
- ``one_tensor``: the same plus reading the largest tensor (the floor of any copy);
- ``migrate_tf1`` / ``migrate_safetensors``: a full migrate with a rename, including
  the read-back verification.

Streaming means the migrate peaks stay near ``one_tensor`` plus one more tensor (the
verification compares the source and the output of one tensor at a time), far below
the checkpoint size. Results go to ``benchmarks/results/migrate_memory.json``.

With ``--transforms``, the same tf1 migrate with a tensor transform on every tensor
(``tf1compat_init.transforms``): ``reshape(-1)`` (a view, no copy), ``transpose(1, 0)``
(one copy per tensor) and ``split(-1)`` into two targets (each half copied); results
go to ``migrate_memory_transforms.json`` unless ``--out`` says otherwise.

Run: ``python benchmarks/migrate_memory.py [--tensors 64] [--mib 16] [--dir DIR]
[--transforms]``.
Wall times are printed too, but are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tf1compat_init.bundle.writer import BundleWriter  # noqa: E402

MiB = 1 << 20

CHILD = r"""
import json, os, resource, sys, time
from tf1compat_init import open_checkpoint
from tf1compat_init.migrate import migrate

def peak():  # ru_maxrss is in KiB on Linux, in bytes on macOS
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024

mode, src, dst = sys.argv[1:4]
info = open_checkpoint(src)
t0 = time.perf_counter()
if mode == "one_tensor":
    key = max(info.variables, key=lambda k: info.variables[k].shape[0])
    info.read([key])
elif mode == "migrate_tf1":
    migrate(src, dst, {"layers/": "renamed/"})
elif mode == "migrate_safetensors":
    migrate(src, dst, {"layers/": "renamed/"}, format="safetensors")
elif mode.startswith("migrate_tf1_"):
    import re
    from tf1compat_init import transforms as tt
    steps = {"migrate_tf1_reshape": ["renamed/\\1", tt.reshape(-1)],
             "migrate_tf1_transpose": ["renamed/\\1", tt.transpose(1, 0)],
             "migrate_tf1_split": [["renamed/\\1/a", "renamed/\\1/b"], tt.split(-1)]}[mode]
    migrate(src, dst, {re.compile(r"layers/(.*)"): tt.to(*steps)})
print(json.dumps({"peak_rss": peak(), "seconds": time.perf_counter() - t0,
                  "tensorflow_imported": "tensorflow" in sys.modules}))
"""


_TRANSFORM_MODES = ("migrate_tf1_reshape", "migrate_tf1_transpose", "migrate_tf1_split")


def write_source(prefix: Path, n: int, mib: int) -> int:
    elements = mib * MiB // 4
    total = 0
    with BundleWriter(prefix) as w:
        for i in range(n):
            value = np.arange(elements, dtype=np.float32)
            value += i * 0.5  # distinct values per tensor, cheap to make
            w.add(f"layers/layer_{i:03d}/kernel", value.reshape(-1, 1024))
            total += value.nbytes
            del value
    return total


def measure(mode: str, src: str, dst: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, src, dst],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tensors", type=int, default=64)
    parser.add_argument("--mib", type=int, default=16, help="MiB per tensor")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed)")
    parser.add_argument("--out", help="results file (default: benchmarks/results/...json)")
    parser.add_argument("--transforms", action="store_true", help="migrates with transforms")
    args = parser.parse_args()
    name = "migrate_memory_transforms.json" if args.transforms else "migrate_memory.json"
    args.out = args.out or str(ROOT / "benchmarks" / "results" / name)

    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="migrate_memory_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        src = work / "src" / "model.ckpt"
        src.parent.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        size = write_source(src, args.tensors, args.mib)
        print(
            f"wrote {args.tensors} x {args.mib} MiB = {size / MiB:.0f} MiB in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        largest = args.mib * MiB
        runs = {}
        modes = [
            ("baseline", ""),
            ("one_tensor", ""),
            ("migrate_tf1", str(work / "out" / "model.ckpt")),
        ]
        if args.transforms:
            modes += [(m, str(work / m / "model.ckpt")) for m in _TRANSFORM_MODES]
        else:
            modes.append(("migrate_safetensors", str(work / "out" / "model.safetensors")))
        for mode, dst in modes:
            r = measure(mode, str(src), dst)
            runs[mode] = r
            print(
                f"{mode:<20} peak RSS {r['peak_rss'] / MiB:8.1f} MiB   "
                f"{r['seconds']:6.2f} s   tensorflow imported: {r['tensorflow_imported']}"
            )
        base = runs["baseline"]["peak_rss"]
        result = {
            "what": "peak RSS (ru_maxrss) of one migrate, each in a fresh subprocess",
            "checkpoint_bytes": size,
            "tensors": args.tensors,
            "largest_tensor_bytes": largest,
            "runs": runs,
            "above_baseline_in_largest_tensors": {
                m: round((r["peak_rss"] - base) / largest, 2) for m, r in runs.items()
            },
            "above_baseline_as_fraction_of_checkpoint": {
                m: round((r["peak_rss"] - base) / size, 4) for m, r in runs.items()
            },
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "note": "wall times are noisy: the machine is shared",
        }
        for m, x in result["above_baseline_in_largest_tensors"].items():
            print(f"{m:<20} {x:5.2f} x the largest tensor above the baseline")
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
        print(f"results: {args.out}")
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
