"""CRC32C backends: speed, zero-copy inputs and GIL behaviour, same process, same buffers.

Candidates for ``bundle/crc.py``: the ``crc32c`` package (ICRAR, ``crc32c.crc32c``), the
public API of ``google-crc32c`` (``google_crc32c.extend``), and for reference the path the
project used before issue 29: ``crc32c_extend`` of the C library inside the
``google-crc32c`` wheel, called through ``ctypes`` with raw addresses (measured here only;
the library no longer does this).

Measured, each a median of ``--repeats`` rounds, candidates interleaved within a round:

- throughput on one 256 MiB buffer (an aligned numpy array), and per-call time on
  64 KiB and 4 KiB ranges of it;
- which zero-copy inputs each takes (a memoryview of an ``mmap``, a numpy array, a slice
  of one, a memoryview slice) and what a call on each costs; inputs a candidate refuses
  need a ``bytes`` copy first, which is timed too;
- the GIL: the engine's check pass with 1 and 2 threads over 2,000 ranges of 64 KiB, 4,096
  of 4 KiB and 32 pieces of 8 MiB, wall and process CPU time (``crc32c`` with
  ``gil_release_mode`` -1, its default: the GIL is released from 32 KiB, and 1: always;
  ``google_crc32c.extend`` on numpy views of the ranges: no copy, but it releases the GIL
  only for ``bytes`` of 1 MiB or more; the old ``ctypes`` call always released it).

On a loaded machine, ``--clock cpu`` times the speed and zero-copy sections with the
calling thread's CPU time, which other processes disturb far less than wall time.

Usage:
    python benchmarks/crc_backends.py --repeats 7 --out benchmarks/results/crc_backends.json
    python benchmarks/crc_backends.py --clock cpu --sections speed,zero_copy --out ...
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

MIB = 1 << 20


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ctypes_extend() -> Callable[[int, int, int], int] | None:
    """The pre-issue-29 path: ``crc32c_extend`` through the wheel's extension handle."""
    try:
        import google_crc32c
    except ImportError:
        return None
    if getattr(google_crc32c, "implementation", None) != "c":
        return None
    ext = sys.modules.get("google_crc32c._crc32c")
    try:
        fn = ctypes.CDLL(ext.__file__).crc32c_extend  # type: ignore[union-attr]
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_uint32
    fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
    return fn


#: What ``_median_rounds`` measures: wall time, or the CPU time of the calling thread
#: (``--clock cpu``), which other processes on a loaded machine disturb far less.
_CLOCK = time.perf_counter


def _timeit(fn: Callable[[], Any], number: int) -> float:
    start = _CLOCK()
    for _ in range(number):
        fn()
    return (_CLOCK() - start) / number


def _median_rounds(cases: dict[str, Callable[[], Any]], number: int, repeats: int) -> dict:
    """Median seconds per call of each case, cases interleaved within each round."""
    times: dict[str, list[float]] = {k: [] for k in cases}
    for fn in cases.values():  # warm up
        fn()
    for _ in range(repeats):
        for name, fn in cases.items():
            times[name].append(_timeit(fn, number))
    return {k: statistics.median(v) for k, v in times.items()}


def _wall_and_cpu(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Median wall and process CPU seconds of ``fn`` (all its threads)."""
    fn()
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def _accepts(fn: Callable[[Any], int], data: Any) -> bool:
    try:
        fn(data)
    except (TypeError, BufferError, ValueError):
        return False
    return True


class _Skip(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default="", help="JSON path")
    p.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="speed and zero-copy sections: wall time, or the thread's CPU time",
    )
    p.add_argument("--sections", default="speed,zero_copy,gil")
    p.add_argument("--quick", action="store_true", help="1/32 of the sizes, 1 repeat (CI smoke)")
    args = p.parse_args(argv)
    k = 32 if args.quick else 1  # every size and call count is divided by this
    if args.quick:
        args.repeats = 1
    global _CLOCK
    _CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    sections = set(args.sections.split(","))
    import crc32c as icrar
    import google_crc32c

    from tf1compat_init.bundle import crc as ours

    at = _ctypes_extend()
    big = np.random.default_rng(0).integers(0, 256, 256 * MIB // k, dtype=np.uint8)
    big_bytes = big.tobytes()
    want = icrar.crc32c(big)
    assert google_crc32c.extend(0, big_bytes) == want
    if at is not None:
        assert at(0, big.ctypes.data, big.nbytes) == want
    result: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "crc32c": icrar.__version__,
        "crc32c_hardware_based": bool(icrar.hardware_based),
        "google_crc32c": getattr(google_crc32c, "__version__", "installed"),
        "google_crc32c_implementation": google_crc32c.implementation,
        "chosen_backend": ours.backend_name(),
        "clock": args.clock,
        "load_avg_before": os.getloadavg(),
    }

    # -- throughput and per-call cost -------------------------------------------------
    mv = memoryview(big)
    speed: dict[str, Any] = {}
    for label, n, number in (
        []
        if "speed" not in sections
        else [
            (f"{256 // k}MiB", big.nbytes, 1),
            ("64KiB", 64 << 10, 2000 // k),
            ("4KiB", 4096, 5000 // k),
        ]
    ):
        cases: dict[str, Callable[[], Any]] = {
            "crc32c(memoryview slice)": lambda n=n: icrar.crc32c(mv[:n]),
            "google_crc32c.extend(bytes)": lambda n=n: google_crc32c.extend(
                0, big_bytes if n == big.nbytes else big_bytes[:n]
            ),
            "google_crc32c.extend(np.frombuffer(memoryview slice))": lambda n=n: (
                google_crc32c.extend(0, np.frombuffer(mv[:n], np.uint8))
            ),
            "google_crc32c.extend(bytes(copy))": lambda n=n: google_crc32c.extend(0, bytes(mv[:n])),
        }
        if at is not None:
            addr = big.ctypes.data
            cases["ctypes crc32c_extend (before)"] = lambda n=n, addr=addr: at(0, addr, n)
        if n == 4096:
            cases["pure Python"] = lambda: ours._crc_python(mv[:4096])
        t = _median_rounds(cases, number, args.repeats)
        speed[label] = {k: {"us": v * 1e6, "gb_per_s": n / v / 1e9} for k, v in t.items()}
    result["speed"] = speed

    # -- zero-copy inputs ----------------------------------------------------------------
    fd, path = tempfile.mkstemp(prefix="crc_bench_")
    try:
        if "zero_copy" not in sections:
            raise _Skip
        os.write(fd, big_bytes[: 64 * MIB // k])
        mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        mapped = memoryview(mm)
        arr = big[: 16 * MIB // k].view(np.float32)
        inputs = {
            "memoryview of an mmap (64 KiB slice)": mapped[4096 : 4096 + (64 << 10)],
            "numpy float32 array (64 KiB)": arr[: 16 << 10],
            "numpy slice at an odd offset (64 KiB)": big[3 : 3 + (64 << 10)],
            "memoryview slice (64 KiB)": mv[5 : 5 + (64 << 10)],
            f"mmap object itself ({64 // k} MiB)": mm,
        }
        backends: dict[str, Callable[[Any], int]] = {
            "crc32c": lambda d: icrar.crc32c(d),
            "google_crc32c.extend": lambda d: google_crc32c.extend(0, d),
            "google_crc32c.extend(np.frombuffer)": lambda d: google_crc32c.extend(
                0, np.frombuffer(d, np.uint8)
            ),
        }
        zero_copy: dict[str, Any] = {}
        for bname, fn in backends.items():
            zero_copy[bname] = {}
            for iname, data in inputs.items():
                ok = _accepts(fn, data)
                if ok:
                    assert fn(data) == icrar.crc32c(bytes(data))
                    number = 20 if "mmap object" in iname else 2000 // k
                    t = _median_rounds(
                        {"t": lambda fn=fn, data=data: fn(data)}, number, args.repeats
                    )
                else:
                    number = 20 if "mmap object" in iname else 2000 // k
                    t = _median_rounds(
                        {"t": lambda fn=fn, data=data: fn(bytes(data))}, number, args.repeats
                    )
                zero_copy[bname][iname] = {"zero_copy": ok, "us": t["t"] * 1e6}
        result["zero_copy"] = zero_copy
        del mapped, inputs
        mm.close()
    except _Skip:
        result["zero_copy"] = {}
    finally:
        os.close(fd)
        os.unlink(path)

    # -- GIL: the engine's check pass in threads ------------------------------------------
    def ranges(n: int, count: int) -> list[memoryview]:
        return [mv[i * n : (i + 1) * n] for i in range(count)]

    def split(items: list, k: int) -> list[list]:
        step = -(-len(items) // k)
        return [items[i : i + step] for i in range(0, len(items), step)]

    gil: dict[str, Any] = {}
    pools = {k: ThreadPoolExecutor(k) for k in (1, 2)}
    try:
        for label, n, count in (
            []
            if "gil" not in sections
            else [
                (f"{2000 // k} x 64KiB", 64 << 10, 2000 // k),
                (f"{4096 // k} x 4KiB", 4096, 4096 // k),
                (f"{32 // k or 1} x {8 // k or 1}MiB", max(8 // k, 1) * MIB, 32 // k or 1),
            ]
        ):
            views = ranges(n, count)
            addrs = [(big.ctypes.data + i * n, n) for i in range(count)]
            kinds: dict[str, Callable[[list], Any]] = {
                "crc32c (gil_release_mode=-1)": lambda vs: [icrar.crc32c(v) for v in vs],
                "crc32c (gil_release_mode=1)": lambda vs: [icrar.crc32c(v, 0, 1) for v in vs],
                "google_crc32c.extend(np.frombuffer)": lambda vs: [
                    google_crc32c.extend(0, np.frombuffer(v, np.uint8)) for v in vs
                ],
            }
            cases: dict[str, Callable[[], Any]] = {}
            for kname, kfn in kinds.items():
                for threads, pool in pools.items():
                    parts = split(views, threads)
                    cases[f"{kname}, {threads} thread(s)"] = (
                        lambda kfn=kfn, pool=pool, parts=parts: list(pool.map(kfn, parts))
                    )
            if at is not None:
                for threads, pool in pools.items():
                    parts = split(addrs, threads)
                    cases[f"ctypes (before), {threads} thread(s)"] = lambda pool=pool, parts=parts: (
                        list(pool.map(lambda ps: [at(0, a, k) for a, k in ps], parts))
                    )
            gil[label] = {}
            for k, fn in cases.items():
                wall, cpu = _wall_and_cpu(fn, args.repeats)
                gil[label][k] = {
                    "ms": wall * 1e3,
                    "cpu_ms": cpu * 1e3,
                    "gb_per_s": n * count / wall / 1e9,
                }
    finally:
        for pool in pools.values():
            pool.shutdown()
    result["gil"] = gil
    result["load_avg_after"] = os.getloadavg()

    for section in ("speed", "gil"):
        for label, rows in result[section].items():
            print(f"\n{section} {label}")
            for k, v in rows.items():
                cost = f"{v['us']:10.2f} us" if "us" in v else f"{v['ms']:9.2f} ms"
                if "cpu_ms" in v:
                    cost += f" (CPU {v['cpu_ms']:7.2f} ms)"
                print(f"  {k:45s} {cost} {v['gb_per_s']:7.2f} GB/s")
    print("\nzero-copy inputs (us per call; a refused input is timed with a bytes copy)")
    for bname, rows in result["zero_copy"].items():
        for iname, v in rows.items():
            print(
                f"  {bname:22s} {iname:40s} {'yes' if v['zero_copy'] else 'NO ':4s} {v['us']:9.2f}"
            )
    print(f"\nload average before {result['load_avg_before']}, after {result['load_avg_after']}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
