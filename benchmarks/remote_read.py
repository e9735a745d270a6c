"""Remote read throughput: a restore from ``ram://`` (TF's in-memory file system) against local.

``ram://`` has no network: what this measures is the cost of our remote path itself
(``tf.io.gfile`` ranged reads, one timed call per read, a copy out of TF's buffer,
CRC32C on every value), which is the floor under any real store's latency and
bandwidth. One object-based checkpoint of ``--size`` MiB (tensors of ``--tensor-kib``, 16 MiB by default) is
written both locally and to ``ram://``; each is then restored into eager variables with
``tf1compat_init.checkpoint.restore`` (the whole engine: open, plan, verify, stream,
assign), ``--repeats`` times, alternating; every value is checked after each run.
The median is reported.

Usage:
    python benchmarks/remote_read.py --size 256 --repeats 5
    python benchmarks/remote_read.py --size 128 --tensor-kib 64     # 2,048 small tensors
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=256, help="checkpoint size in MiB")
    p.add_argument("--tensor-kib", type=int, default=16 << 10, help="size of each tensor")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default="", help="JSON path")
    args = p.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    from tf1compat_init.checkpoint import restore

    n = max(1, (args.size << 10) // args.tensor_kib)
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(args.tensor_kib << 8).astype(np.float32) for _ in range(n)]
    module = tf.Module()
    module.vs = [tf.Variable(v) for v in values]
    root = tf.train.Checkpoint(model=module)
    local_dir = tempfile.mkdtemp(prefix="remote_read_")
    paths = {
        "local": root.write(os.path.join(local_dir, "ckpt")),
        "ram": root.write(f"ram://remote-read-{os.getpid()}-{time.monotonic_ns()}/ckpt"),
    }
    times: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(args.repeats + 1):  # the first round warms up
        for where, path in paths.items():
            for v in module.vs:
                v.assign(tf.zeros_like(v))
            start = time.perf_counter()
            restore(root, path)
            times[where].append(time.perf_counter() - start)
            for v, want in zip(module.vs, values, strict=True):
                if not np.array_equal(v.numpy(), want):
                    raise SystemExit(f"{where}: a restored value differs")
    nbytes = sum(v.nbytes for v in values)
    result = {
        "bytes": nbytes,
        "tensors": n,
        "repeats": args.repeats,
        "tensorflow": tf.__version__,
        "load_avg": os.getloadavg()[0],
    }
    for where, ts in times.items():
        median = statistics.median(ts[1:])
        result[where] = {"median_s": median, "gb_per_s": nbytes / median / 1e9}
        print(f"{where:6s} {median * 1e3:8.1f} ms  {nbytes / median / 1e9:5.2f} GB/s")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
