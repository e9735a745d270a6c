"""Decoding checkpoint protos: the hand-written decoders against upb ``protobuf``.

Times, per message, :func:`tf1compat_init.bundle.entries.parse_entry` on a
``BundleEntryProto`` (the index holds one per tensor) and
:meth:`tf1compat_init.bundle.objects.ObjectGraph.parse` on a ``TrackableObjectGraph`` of
2,000 objects as TensorFlow writes them (a child, an attribute and
``has_checkpoint_values`` each), against upb ``protobuf`` (the ``protobuf`` package that
TensorFlow installs) on message classes built from hand-written descriptors, so
TensorFlow is not imported. The decoders are interleaved, each repetition times every
decoder once, and medians are reported (the machine may be shared). It also times a
fresh ``python -c`` with and without importing ``google.protobuf``, again interleaved:
what decoding with protobuf would add to CLI start-up.

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

from tf1compat_init.bundle.entries import parse_entry  # noqa: E402
from tf1compat_init.bundle.objects import ObjectGraph  # noqa: E402

_INT32, _INT64, _FIXED32, _BOOL, _STRING, _MESSAGE = 5, 3, 7, 8, 9, 11
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


def graph_class() -> type:
    """A protobuf class with TrackableObjectGraph's fields (those TensorFlow writes)."""
    fd = descriptor_pb2.FileDescriptorProto(name="graph.proto", package="g", syntax="proto3")
    ref = fd.message_type.add(name="Ref")
    ref.field.add(name="node_id", number=1, type=_INT32, label=_OPTIONAL)
    ref.field.add(name="local_name", number=2, type=_STRING, label=_OPTIONAL)
    tensor = fd.message_type.add(name="Tensor")
    for number, name in enumerate(["name", "full_name", "checkpoint_key"], 1):
        tensor.field.add(name=name, number=number, type=_STRING, label=_OPTIONAL)
    flag = fd.message_type.add(name="Flag")
    flag.field.add(name="value", number=1, type=_BOOL, label=_OPTIONAL)
    obj = fd.message_type.add(name="Object")
    for name, number, kind, label in [
        ("children", 1, "Ref", _REPEATED),
        ("attributes", 2, "Tensor", _REPEATED),
        ("has_checkpoint_values", 5, "Flag", _OPTIONAL),
    ]:
        obj.field.add(name=name, number=number, type=_MESSAGE, label=label, type_name=f".g.{kind}")
    graph = fd.message_type.add(name="Graph")
    graph.field.add(name="nodes", number=1, type=_MESSAGE, label=_REPEATED, type_name=".g.Object")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("g.Graph"))


def timed(decoders: dict, data: bytes, repeats: int, calls: int) -> dict[str, float]:
    """Median seconds per call of each decoder, interleaved."""
    times: dict[str, list[float]] = {name: [] for name in decoders}
    for _ in range(repeats):
        for name, fn in decoders.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn(data)
            times[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(ts) for name, ts in times.items()}


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

    def ours(b: bytes) -> tuple:
        return parse_entry(b)[:6]

    decoders = {"hand-written": ours, "upb protobuf": upb}
    for name, fn in decoders.items():
        assert fn(data) == upb(data), name
    for name, t in timed(decoders, data, args.repeats, args.calls).items():
        print(f"BundleEntryProto, {name:14s} {t * 1e6:7.2f} us/entry (median of {args.repeats})")

    graph = graph_class()()
    for i in range(2000):
        node = graph.nodes.add()
        node.children.add(node_id=i + 1, local_name=f"layer_with_weights-{i}")
        key = f"model/layer_with_weights-{i}/kernel/.ATTRIBUTES/VARIABLE_VALUE"
        node.attributes.add(
            name="VARIABLE_VALUE", full_name=f"dense_{i}/kernel", checkpoint_key=key
        )
        node.has_checkpoint_values.value = True
    graph_bytes = graph.SerializeToString()

    def upb_graph(b: bytes) -> list:
        x = type(graph).FromString(b)
        return [
            (
                tuple((c.node_id, c.local_name) for c in n.children),
                tuple((a.name, a.full_name, a.checkpoint_key) for a in n.attributes),
            )
            for n in x.nodes
        ]

    def ours_graph(b: bytes) -> list:
        return [(n.children, n.attributes) for n in ObjectGraph.parse(b).nodes]

    decoders = {"hand-written": ours_graph, "upb protobuf": upb_graph}
    assert ours_graph(graph_bytes) == upb_graph(graph_bytes)
    calls = max(1, args.calls // 2000)
    for name, t in timed(decoders, graph_bytes, args.repeats, calls).items():
        print(f"TrackableObject,  {name:14s} {t / 2000 * 1e6:7.2f} us/object (graph of 2,000)")

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
