"""Vocabulary remapping of a large embedding: ours against TensorFlow's warm-start path.

Writes a name-based checkpoint with one ``[rows, dim]`` float32 embedding (1M x 64 =
256 MiB by default), an old vocabulary of ``rows`` tokens and a new one: the old tokens
shuffled, 10% replaced by new tokens, plus one OOV bucket. Each method runs in a fresh
subprocess; it reports the wall time of the remap (best of ``--repeats``, vocabulary
files and checkpoint in the page cache after the first) and the peak resident memory
above the process's resident memory just before the first remap, in tables (one table
= ``rows x dim x 4`` bytes):

- ``read_only``: our read of the table (the floor: the source values in memory);
- ``ours_transform``: our read plus ``tt.remap_vocab`` (numpy: the read, one output);
- ``ours_v1_graph``: ``v1.init_from_checkpoint`` with the transform in a TF1 graph
  (``RestoreV2``, TF's ``GenerateVocabRemapping``, gather, assign);
- ``tf_warm_start``: ``tf.compat.v1.train.warm_start`` with ``VocabInfo`` (TF's
  ``GenerateVocabRemapping`` + ``LoadAndRemapMatrix``), the initializer run;
- ``ours_warm_start``: ``tf1compat_init.v1.warm_start`` with the same ``VocabInfo``.

Every method's result is hashed; all must agree (zeros as backup values). Results go to
``benchmarks/results/remap_vocab.json``. Run: ``python benchmarks/remap_vocab.py [--rows
1000000] [--dim 64] [--repeats 3] [--methods a,b] [--quick]``. Times are noisy on a shared machine.
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
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tf1compat_init.bundle.writer import BundleWriter  # noqa: E402

METHODS = ["read_only", "ours_transform", "ours_v1_graph", "tf_warm_start", "ours_warm_start"]

CHILD = r"""
import hashlib, json, os, resource, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
method, d, rows, dim, oov, repeats = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
ckpt, old, new = f"{d}/model.ckpt", f"{d}/old.txt", f"{d}/new.txt"
n_new = rows

def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

def peak():
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024

from tf1compat_init import open_checkpoint
from tf1compat_init import transforms as tt
times, digest = [], None
if method in ("read_only", "ours_transform"):
    import numpy as np
    info = open_checkpoint(ckpt)
    t = tt.remap_vocab(old, new, num_oov_buckets=oov)
    base = rss()
    for _ in range(repeats):
        t0 = time.perf_counter()
        table = info.read(["emb"])["emb"]
        if method == "ours_transform":
            out = tt.run([t], [table], [None])[0]
        else:
            out = table
        times.append(time.perf_counter() - t0)
        digest = hashlib.sha256(np.ascontiguousarray(out)).hexdigest()
        del table, out
else:
    import tensorflow as tf
    from tf1compat_init import v1 as tv1
    V1 = tf.compat.v1
    info = V1.train.VocabInfo(new, n_new, oov, old)
    with tf.Graph().as_default():
        v = V1.get_variable("emb", [n_new + oov, dim], initializer=V1.zeros_initializer())
        base = rss()
        t0 = time.perf_counter()
        if method == "tf_warm_start":
            V1.train.warm_start(ckpt, ["emb"], var_name_to_vocab_info={"emb": info})
        elif method == "ours_warm_start":
            tv1.warm_start(ckpt, ["emb"], var_name_to_vocab_info={"emb": info})
        else:
            tv1.init_from_checkpoint(ckpt, {"emb": tt.to("emb", tt.remap_vocab(old, new, num_oov_buckets=oov))})
        build = time.perf_counter() - t0
        with V1.Session() as sess:
            for _ in range(repeats):
                t0 = time.perf_counter()
                sess.run(v.initializer)
                times.append(time.perf_counter() - t0 + (build if not times else 0.0))
            digest = hashlib.sha256(sess.run(v)).hexdigest()
print(json.dumps({"method": method, "seconds": times, "peak_above_base": peak() - base,
                  "digest": digest}))
"""


def make(directory: Path, rows: int, dim: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with BundleWriter(directory / "model.ckpt") as w:
        w.add("emb", rng.standard_normal((rows, dim), dtype=np.float32))
    old = [f"t{i}" for i in range(rows)]
    new = list(old)
    rng.shuffle(new)
    for i in rng.choice(rows, rows // 10, replace=False):
        new[i] = f"n{i}"
    (directory / "old.txt").write_text("\n".join(old) + "\n")
    (directory / "new.txt").write_text("\n".join(new) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--oov", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="20,000 rows, one repeat")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "remap_vocab.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.repeats = 20_000, 1
    directory = Path(args.dir or tempfile.mkdtemp(prefix="remap_vocab_"))
    directory.mkdir(parents=True, exist_ok=True)
    try:
        make(directory, args.rows, args.dim)
        table = args.rows * args.dim * 4
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), TF_CPP_MIN_LOG_LEVEL="3")
        results = {}
        for method in args.methods.split(","):
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, method, str(directory), str(args.rows),
                 str(args.dim), str(args.oov), str(args.repeats)],
                capture_output=True, text=True, env=env, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                results[method] = {"error": proc.stderr.strip().splitlines()[-1:]}
                print(f"{method:16s} failed: {results[method]['error']}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            r["best_seconds"] = min(r["seconds"])
            r["peak_above_base_tables"] = round(r["peak_above_base"] / table, 2)
            results[method] = r
            print(
                f"{method:16s} best {r['best_seconds']:7.3f} s  peak +{r['peak_above_base_tables']:.2f}"
                f" tables  {r['digest'][:12]}"
            )
        digests = {r["digest"] for m, r in results.items() if m != "read_only" and "digest" in r}
        same = len(digests) == 1
        print("all remaps identical:", same)
        out = {
            "rows": args.rows,
            "dim": args.dim,
            "oov": args.oov,
            "table_bytes": table,
            "repeats": args.repeats,
            "identical": same,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "python": sys.version.split()[0],
            "results": results,
        }
        if not args.quick or args.out != ap.get_default("out"):
            Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
        return 0 if same else 1
    finally:
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
