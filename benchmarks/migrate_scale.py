"""migrate at scale: a synthetic checkpoint (10 GiB by default) into every output format.

The source is written natively: a few large tensors (60% of the bytes) and many small ones,
half float32 and half bfloat16. Each format is migrated in a fresh subprocess, which
builds the target model first where the format needs one (``tf2``: a ``tf.Module`` of
zero variables, ``keras``: a Keras 3 model with one zeros weight per tensor, ``keras2``: the
same in tf_keras, float32 tensors only: Keras 2's ``.weights.h5`` holds no bfloat16), then
samples its own resident set
every 5 ms while ``migrate`` runs. Reported per format:

- wall time and GB/s of tensor bytes (rename, write, read back and verify, install);
- peak RSS above the start (the start is taken after the model is built, so the model's
  own weights are in it, counted once), against the budget of issue 36: the largest
  tensor + 2 read-ahead windows;
- the disk limit measured in the same run (after one ``dd`` of the source's size that
  is not counted: the disk is still busy with the source's writing when ``os.sync()``
  returns): ``dd`` copying the output's size of the
  source's data (not zeros) with ``conv=fsync`` into the output's directory, just before
  and just after the migrate (a virtual disk's speed drifts), each after a pause for the
  disk to settle, and migrate's speed as a fraction of the faster (goal: 0.7x).

Results go to ``benchmarks/results/migrate_scale.json`` and a chart (``.png``).
``--quick`` runs 64 MiB (the test suite's smoke run; no goal is judged there).

With ``--rounds N`` the formats run N times, interleaved (a shared virtual disk's speed
drifts by several times within minutes): each format's summary is its fastest round
(with that round's ``dd``), its peak the highest of all; every round is in ``rounds``.

Run: ``python benchmarks/migrate_scale.py [--gib 10] [--formats tf1,safetensors,tf2,keras,keras2]
[--rounds 1] [--dir DIR] [--quick]``.
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
from tf1compat_init.migrate._stream import WINDOW  # noqa: E402

MiB = 1 << 20
FORMATS = ("tf1", "safetensors", "tf2", "keras", "keras2")
LARGE = 4  # large tensors; the rest of the bytes go to small ones
SMALL_BYTES = 4 * MiB  # each small tensor at 10 GiB (smaller at --quick)

CHILD = r"""
import json, os, sys, threading, time
fmt, src, dst, spec_path = sys.argv[1:5]
spec = json.load(open(spec_path))

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

model = None
if fmt == "tf2":  # the classic object-based case: a tf.Module of variables
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    model = tf.Module()
    for i, t in enumerate(spec["tensors"]):
        setattr(model, f"w{i}", tf.Variable(tf.zeros(t["shape"], t["dtype"])))
    targets = {t["key"]: f"w{i}" for i, t in enumerate(spec["tensors"])}
elif fmt in ("keras", "keras2"):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if fmt == "keras2":  # Keras 2 (tf_keras): its .weights.h5 holds no bfloat16, so float32 only
        import tf_keras as keras
    else:
        import keras
    held = [(i, t) for i, t in enumerate(spec["tensors"])
            if fmt == "keras" or t["dtype"] == "float32"]

    class Holder(keras.layers.Layer):
        def build(self, _):
            for i, t in held:
                setattr(self, f"w{i}", self.add_weight(
                    name=f"w{i}", shape=tuple(t["shape"]), dtype=t["dtype"],
                    initializer="zeros", trainable=True))

    model = keras.Sequential([keras.Input((1,)), Holder(name="holder")])
    targets = {t["key"]: f"holder/w{i}" for i, t in held}

def factory():
    return model

import ml_dtypes  # noqa: F401 - bfloat16's numpy type: imported once by any bf16 user (0.6-0.9 s)
from tf1compat_init.migrate import migrate

peak = start = rss()
done = threading.Event()

def sample():
    global peak
    while not done.wait(0.005):
        peak = max(peak, rss())

sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
t0 = time.perf_counter()
if fmt in ("tf2", "keras", "keras2"):
    result = migrate(src, dst, targets, format=fmt[:5], model=factory)
else:
    result = migrate(src, dst, {"layers/": "renamed/"}, format=fmt)
seconds = time.perf_counter() - t0
done.set()
sampler.join()
peak = max(peak, rss())
print(json.dumps({"seconds": seconds, "start_rss": start, "peak_rss": peak,
                  "bytes": result.nbytes, "files": result.files}))
"""


def layout(total: int) -> list[dict]:
    """Tensors summing to about ``total`` bytes: 4 large ones (60%), many small ones."""
    small = min(SMALL_BYTES, max(total // 400, 4096))
    large = (total * 6 // 10) // LARGE
    tensors = []
    for i in range(LARGE):
        dtype = "float32" if i % 2 == 0 else "bfloat16"
        item = 4 if dtype == "float32" else 2
        cols = 1024
        tensors.append(
            {"name": f"large_{i}", "dtype": dtype, "shape": [large // item // cols, cols]}
        )
    rest = total - sum(_nbytes(t) for t in tensors)
    for i in range(max(rest // small, 1)):
        dtype = "float32" if i % 2 == 0 else "bfloat16"
        item = 4 if dtype == "float32" else 2
        tensors.append({"name": f"small_{i:05d}", "dtype": dtype, "shape": [small // item]})
    for t in tensors:
        t["key"] = f"layers/{t['name']}"
    return tensors


def _nbytes(t: dict) -> int:
    n = 1
    for d in t["shape"]:
        n *= d
    return n * (4 if t["dtype"] == "float32" else 2)


def write_source(prefix: Path, tensors: list[dict]) -> int:
    import ml_dtypes

    rng = np.random.default_rng(0)
    block = rng.standard_normal(1 << 20).astype(np.float32)  # tiled: cheap, still varied
    total = 0
    with BundleWriter(prefix) as w:
        for i, t in enumerate(tensors):
            n = _nbytes(t) // (4 if t["dtype"] == "float32" else 2)
            value = np.resize(block, n) + np.float32(i)
            if t["dtype"] == "bfloat16":
                value = value.astype(ml_dtypes.bfloat16)
            w.add(t["key"], value.reshape(t["shape"]), t["dtype"])
            total += value.nbytes
            del value
    return total


def disk_limit(directory: Path, nbytes: int, source: Path) -> float:
    """Seconds for ``dd`` to copy ``nbytes`` of the source's data (not zeros) into
    ``directory`` with ``conv=fsync``: the disk's write limit for this output, now."""
    target = directory / "dd.bin"
    count = max(nbytes // MiB, 1)
    t0 = time.perf_counter()
    subprocess.run(
        ["dd", f"if={source}", f"of={target}", "bs=1M", f"count={count}", "conv=fsync"],
        check=True,
        capture_output=True,
    )
    seconds = time.perf_counter() - t0
    target.unlink()
    return seconds * nbytes / (count * MiB)


def _settle() -> None:
    """Lets the disk finish what came before (writes, the removal of the last output)."""
    os.sync()
    time.sleep(1.0)


def run_format(fmt: str, src: Path, work: Path, spec: Path) -> dict:
    out = work / f"out_{fmt}"
    out.mkdir()
    dst = out / {
        "tf1": "m.ckpt",
        "tf2": "ckpt",
        "keras": "m.weights.h5",
        "keras2": "m.weights.h5",
    }.get(fmt, "m.safetensors")
    data = Path(f"{src}.data-00000-of-00001")
    _settle()
    before = disk_limit(out, data.stat().st_size, data)  # of the source's size, rescaled below
    _settle()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, fmt, str(src), str(dst), str(spec)],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode:
        raise SystemExit(f"{fmt}: migrate failed:\n{proc.stderr[-4000:]}")
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    written = sum(os.path.getsize(f) for f in r["files"])
    for f in r["files"]:
        os.remove(f)
    r["written_bytes"] = written
    # A virtual disk's speed drifts (burst credits, the host's writeback): dd just before and
    # just after.
    r["disk_seconds_before"] = before * written / data.stat().st_size
    _settle()
    r["disk_seconds_after"] = disk_limit(out, written, data)
    # The faster of the two: one dd can stall (this VM's disk does, for seconds), and a
    # stalled dd would flatter the run; the faster is the stricter limit.
    r["disk_seconds"] = min(r["disk_seconds_before"], r["disk_seconds_after"])
    shutil.rmtree(out)
    return r


def chart(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result["formats"]
    names = list(runs)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.bar(names, [r["gb_per_s"] for r in runs.values()], label="migrate")
    a.plot(names, [r["disk_gb_per_s"] for r in runs.values()], "k_", ms=30, label="dd + fsync")
    a.plot(names, [0.7 * r["disk_gb_per_s"] for r in runs.values()], "r_", ms=30, label="0.7x goal")
    a.set_ylabel("GB/s of tensor bytes")
    a.set_title(f"migrate {result['checkpoint_bytes'] / 2**30:.1f} GiB")
    a.legend()
    b.bar(names, [r["peak_above_start_bytes"] / MiB for r in runs.values()])
    b.axhline(result["budget_bytes"] / MiB, color="r", label="largest + 2 windows")
    b.set_ylabel("peak RSS above start (MiB)")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=10.0)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed)")
    parser.add_argument("--out", help="results file (default: benchmarks/results/...)")
    parser.add_argument("--chart", help="chart file (default: the results file as .png)")
    parser.add_argument("--quick", action="store_true", help="64 MiB, for the smoke test")
    parser.add_argument(
        "--rounds", type=int, default=1, help="run every format this many times, interleaved"
    )
    args = parser.parse_args()
    total = 64 * MiB if args.quick else int(args.gib * 2**30)
    formats = [f for f in args.formats.split(",") if f]
    unknown = set(formats) - set(FORMATS)
    if unknown:
        parser.error(f"unknown format(s) {sorted(unknown)}; choose from {', '.join(FORMATS)}")
    out = Path(args.out or ROOT / "benchmarks" / "results" / "migrate_scale.json")
    work = Path(tempfile.mkdtemp(prefix="migrate_scale_", dir=args.dir))
    try:
        tensors = layout(total)
        spec = work / "spec.json"
        spec.write_text(json.dumps({"tensors": tensors}))
        src = work / "src" / "model.ckpt"
        src.parent.mkdir()
        t0 = time.perf_counter()
        size = write_source(src, tensors)
        print(
            f"source: {len(tensors)} tensors, {size / 2**30:.2f} GiB in {time.perf_counter() - t0:.1f} s"
        )
        # Writing the source leaves this virtual disk busy for a while after os.sync() returns:
        # the first format measured ran at 0.30-0.34x in every run, the same format 0.94x in
        # the next round. One dd of the source's size, not counted, takes that first.
        _settle()
        data = Path(f"{src}.data-00000-of-00001")
        warmup = disk_limit(work, data.stat().st_size, data)
        print(f"warm-up dd: {warmup:.1f} s (not counted)")
        largest = max(_nbytes(t) for t in tensors)
        budget = largest + 2 * WINDOW
        runs: dict[str, dict] = {}
        every: dict[str, list[dict]] = {f: [] for f in formats}
        for round_ in range(args.rounds):
            for fmt in formats:
                r = run_format(fmt, src, work, spec)
                r["round"] = round_
                r["gb_per_s"] = r["bytes"] / r["seconds"] / 1e9
                r["disk_gb_per_s"] = r["written_bytes"] / r["disk_seconds"] / 1e9
                r["of_disk_limit"] = r["gb_per_s"] / r["disk_gb_per_s"]
                r["peak_above_start_bytes"] = r["peak_rss"] - r["start_rss"]
                r["within_memory_budget"] = r["peak_above_start_bytes"] <= budget
                every[fmt].append(r)
                print(
                    f"{fmt:<12} {r['seconds']:7.1f} s  {r['gb_per_s']:5.2f} GB/s  "
                    f"(dd+fsync {r['disk_gb_per_s']:5.2f} GB/s: {r['of_disk_limit']:.2f}x)  "
                    f"peak +{r['peak_above_start_bytes'] / MiB:7.0f} MiB "
                    f"(budget {budget / MiB:.0f} MiB, round {round_ + 1})"
                )
        for fmt, rs in every.items():  # the fastest round; every round is in the results
            runs[fmt] = dict(max(rs, key=lambda r: r["gb_per_s"]))
            runs[fmt]["peak_above_start_bytes"] = max(r["peak_above_start_bytes"] for r in rs)
            runs[fmt]["within_memory_budget"] = all(r["within_memory_budget"] for r in rs)
        result = {
            "benchmark": "migrate_scale",
            "quick": args.quick,
            "checkpoint_bytes": size,
            "tensors": len(tensors),
            "largest_tensor_bytes": largest,
            "window_bytes": WINDOW,
            "warmup_disk_seconds": warmup,
            "budget_bytes": budget,
            "formats": runs,
            "rounds": every,
            "goals": {
                "speed >= 0.7x disk limit": {f: r["of_disk_limit"] >= 0.7 for f, r in runs.items()},
                "peak <= largest + 2 windows": {
                    f: r["within_memory_budget"] for f, r in runs.items()
                },
            },
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        chart(result, Path(args.chart) if args.chart else out.with_suffix(".png"))
        print(f"results: {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
