"""Decoding one ``BundleEntryProto``: the hand-written decoders against upb ``protobuf``.

Times, per entry, :func:`tf1compat_init.bundle.proto_fast.entry_fields` (the inline
decoder), the general field-walking decoder, and upb ``protobuf`` (the ``protobuf``
package that TensorFlow installs) on a message class built from a hand-written
descriptor, so TensorFlow is not imported. The three are interleaved, each repetition
times every decoder once, and medians are reported (the machine may be shared). It
also times a fresh ``python -c`` with and without importing ``google.protobuf``,
again interleaved: what decoding with protobuf would add to CLI start-up.

    python benchmarks/entry_decode.py [--repeats 15] [--calls 20000]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

from tf1compat_init.bundle import entries as bundle_entries  # noqa: E402
from tf1compat_init.bundle import proto_fast  # noqa: E402

_INT32, _INT64, _FIXED32, _BOOL, _MESSAGE = 5, 3, 7, 8, 11
_OPTIONAL, _REPEATED = 1, 3


def entry_class() -> type:
    """A protobuf class with BundleEntryProto's fields 1-6 (no slices)."""
    fd = descriptor_pb2.FileDescriptorProto(name="entry.proto", package="b", syntax="proto3")
    dim = fd.message_type.add(name="Dim")
    dim.field.add(name="size", number=1, type=_INT64, label=_OPTIONAL)
    shape = fd.message_type.add(name="Shape")
    shape.field.add(name="dim", number=2, type=_MESSAGE, label=_REPEATED, type_name=".b.Dim")
    shape.field.add(name="unknown_rank", number=3, type=_BOOL, label=_OPTIONAL)
    entry = fd.message_type.add(name="Entry")
    for name, number, kind in [("dtype", 1, _INT32), ("shard_id", 3, _INT32)]:
        entry.field.add(name=name, number=number, type=kind, label=_OPTIONAL)
    for name, number in [("offset", 4), ("size", 5)]:
        entry.field.add(name=name, number=number, type=_INT64, label=_OPTIONAL)
    entry.field.add(name="shape", number=2, type=_MESSAGE, label=_OPTIONAL, type_name=".b.Shape")
    entry.field.add(name="crc32c", number=6, type=_FIXED32, label=_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("b.Entry"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--imports", type=int, default=11, help="fresh processes per import case")
    args = p.parse_args()

    entry = entry_class()
    msg = entry(dtype=1, shard_id=0, offset=123456789, size=4096, crc32c=0xDEADBEEF)
    for d in (32, 128):
        msg.shape.dim.add(size=d)
    data = msg.SerializeToString()

    def upb(b: bytes) -> tuple:
        x = entry.FromString(b)
        return (x.dtype, tuple(d.size for d in x.shape.dim), x.shard_id, x.offset, x.size, x.crc32c)

    def general(b: bytes) -> tuple:
        e = bundle_entries._parse_entry_general(b)
        return (e.dtype, e.shape, e.shard_id, e.offset, e.size, e.crc32c)

    decoders = {
        "hand-written fast": proto_fast.entry_fields,
        "hand-written general": general,
        "upb protobuf": upb,
    }
    for name, fn in decoders.items():
        assert fn(data) == upb(data), name
    times: dict[str, list[float]] = {name: [] for name in decoders}
    for _ in range(args.repeats):
        for name, fn in decoders.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                fn(data)
            times[name].append((time.perf_counter() - start) / args.calls * 1e6)
    for name, ts in times.items():
        print(f"{name:22s} {statistics.median(ts):6.2f} us/entry (median of {args.repeats})")

    cases = {
        "python -c pass": "pass",
        "+ import google.protobuf": "from google.protobuf import descriptor_pool, message_factory, descriptor_pb2",
    }
    wall: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.imports):
        for name, code in cases.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            wall[name].append((time.perf_counter() - start) * 1e3)
    for name, ts in wall.items():
        print(f"{name:26s} {statistics.median(ts):6.1f} ms (median of {args.imports})")


if __name__ == "__main__":
    main()
