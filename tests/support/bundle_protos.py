"""TensorFlow's checkpoint messages as ``protobuf`` classes, without TensorFlow.

The messages of a tensor bundle index and of an object graph, written out from
``tensor_bundle.proto``, ``tensor_shape.proto``, ``tensor_slice.proto``,
``versions.proto`` and ``trackable_object_graph.proto`` (field numbers, types and
labels; ``test_bundle_protobuf.py`` checks them against TensorFlow's own descriptors),
so the hand-written decoders can be compared with ``protobuf``'s parser.

``schema(lenient=True)`` is the same schema with every ``string`` as ``bytes`` and the
two ``TrackableObject`` fields the decoder skips unread (``registered_saver``,
``has_checkpoint_values``) as ``bytes``: what the decoder checks, so that on corrupt
bytes the two must agree on what is malformed.
"""

from __future__ import annotations

import functools
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
INT32, INT64, UINT32, FIXED32, BOOL, STRING, BYTES, MESSAGE, ENUM = (
    _F.TYPE_INT32,
    _F.TYPE_INT64,
    _F.TYPE_UINT32,
    _F.TYPE_FIXED32,
    _F.TYPE_BOOL,
    _F.TYPE_STRING,
    _F.TYPE_BYTES,
    _F.TYPE_MESSAGE,
    _F.TYPE_ENUM,
)
OPTIONAL, REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

#: message -> fields as (name, number, type, label, message or enum type name).
MESSAGES: dict[str, list[tuple]] = {
    "TensorShapeProto": [
        ("dim", 2, MESSAGE, REPEATED, "TensorShapeProto.Dim"),
        ("unknown_rank", 3, BOOL, OPTIONAL, None),
    ],
    "TensorShapeProto.Dim": [
        ("size", 1, INT64, OPTIONAL, None),
        ("name", 2, STRING, OPTIONAL, None),
    ],
    "TensorSliceProto": [("extent", 1, MESSAGE, REPEATED, "TensorSliceProto.Extent")],
    "TensorSliceProto.Extent": [
        ("start", 1, INT64, OPTIONAL, None),
        ("length", 2, INT64, OPTIONAL, None),  # in a oneof (has_length, has_length_hack in TF 2.21)
    ],
    "BundleEntryProto": [
        ("dtype", 1, ENUM, OPTIONAL, "DataType"),
        ("shape", 2, MESSAGE, OPTIONAL, "TensorShapeProto"),
        ("shard_id", 3, INT32, OPTIONAL, None),
        ("offset", 4, INT64, OPTIONAL, None),
        ("size", 5, INT64, OPTIONAL, None),
        ("crc32c", 6, FIXED32, OPTIONAL, None),
        ("slices", 7, MESSAGE, REPEATED, "TensorSliceProto"),
    ],
    "VersionDef": [
        ("producer", 1, INT32, OPTIONAL, None),
        ("min_consumer", 2, INT32, OPTIONAL, None),
        ("bad_consumers", 3, INT32, REPEATED, None),
    ],
    "BundleHeaderProto": [
        ("num_shards", 1, INT32, OPTIONAL, None),
        ("endianness", 2, ENUM, OPTIONAL, "BundleHeaderProto.Endianness"),
        ("version", 3, MESSAGE, OPTIONAL, "VersionDef"),
    ],
    "TrackableObjectGraph": [
        ("nodes", 1, MESSAGE, REPEATED, "TrackableObjectGraph.TrackableObject"),
    ],
    "TrackableObjectGraph.TrackableObject": [
        ("children", 1, MESSAGE, REPEATED, "TrackableObjectGraph.TrackableObject.ObjectReference"),
        (
            "attributes",
            2,
            MESSAGE,
            REPEATED,
            "TrackableObjectGraph.TrackableObject.SerializedTensor",
        ),
        (
            "slot_variables",
            3,
            MESSAGE,
            REPEATED,
            "TrackableObjectGraph.TrackableObject.SlotVariableReference",
        ),
        ("registered_saver", 4, MESSAGE, OPTIONAL, "RegisteredSaver"),
        ("has_checkpoint_values", 5, MESSAGE, OPTIONAL, "BoolValue"),
    ],
    "TrackableObjectGraph.TrackableObject.ObjectReference": [
        ("node_id", 1, INT32, OPTIONAL, None),
        ("local_name", 2, STRING, OPTIONAL, None),
    ],
    "TrackableObjectGraph.TrackableObject.SerializedTensor": [
        ("name", 1, STRING, OPTIONAL, None),
        ("full_name", 2, STRING, OPTIONAL, None),
        ("checkpoint_key", 3, STRING, OPTIONAL, None),
    ],
    "TrackableObjectGraph.TrackableObject.SlotVariableReference": [
        ("original_variable_node_id", 1, INT32, OPTIONAL, None),
        ("slot_name", 2, STRING, OPTIONAL, None),
        ("slot_variable_node_id", 3, INT32, OPTIONAL, None),
    ],
    "RegisteredSaver": [
        ("name", 1, STRING, OPTIONAL, None),
        ("object_name", 2, STRING, OPTIONAL, None),
    ],
    "BoolValue": [("value", 1, BOOL, OPTIONAL, None)],  # google.protobuf.BoolValue
}
ENUMS = {"DataType": ["DT_INVALID", "DT_FLOAT"], "BundleHeaderProto.Endianness": ["LITTLE", "BIG"]}
_UNREAD = {
    ("TrackableObjectGraph.TrackableObject", "registered_saver"),
    ("TrackableObjectGraph.TrackableObject", "has_checkpoint_values"),
}


@functools.cache
def schema(lenient: bool = False) -> dict[str, Any]:
    """Message classes by name (``"BundleEntryProto"``, ``"TrackableObjectGraph"``...)."""
    fd = descriptor_pb2.FileDescriptorProto(
        name=f"tf1compat_test_{lenient}.proto", package="tensorflow", syntax="proto3"
    )
    protos: dict[str, Any] = {}
    for name in MESSAGES:  # parents come before their nested messages
        outer, _, inner = name.rpartition(".")
        protos[name] = (protos[outer].nested_type if outer else fd.message_type).add(name=inner)
    for name, values in ENUMS.items():
        outer, _, inner = name.rpartition(".")
        enum = (protos[outer].enum_type if outer else fd.enum_type).add(name=inner)
        for number, value in enumerate(values):
            enum.value.add(name=value, number=number)
    for name, fields in MESSAGES.items():
        for field_name, number, kind, label, type_name in fields:
            if lenient and (kind == STRING or (name, field_name) in _UNREAD):
                kind, type_name = BYTES, None
            field = protos[name].field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = f".tensorflow.{type_name}"
    extent = protos["TensorSliceProto.Extent"]
    extent.oneof_decl.add(name="has_length")
    extent.field[1].oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{name}"))
        for name in MESSAGES
    }


# -- The values the hand-written decoders return, read from a protobuf message. ---------


def entry_values(m: Any) -> tuple | str:
    """What ``entries.parse_entry`` returns for ``m`` (a BundleEntryProto), or "unknown rank"."""
    if m.shape.unknown_rank:
        return "unknown rank"
    slices = tuple(
        tuple((e.start, e.length if e.HasField("length") else -1) for e in s.extent)
        for s in m.slices
    )
    dims = tuple(d.size for d in m.shape.dim)
    return (m.dtype, dims, m.shard_id, m.offset, m.size, m.crc32c, slices)


def header_values(m: Any) -> tuple:
    """``entries._parse_header``'s fields for ``m`` (a BundleHeaderProto)."""
    v = m.version
    return (m.num_shards, m.endianness == 1, v.producer, v.min_consumer, tuple(v.bad_consumers))


def node_values(m: Any) -> tuple:
    """(children, attributes, slot_variables) of ``m`` (a TrackableObject), as tuples."""
    return (
        tuple((c.node_id, c.local_name) for c in m.children),
        tuple((a.name, a.full_name, a.checkpoint_key) for a in m.attributes),
        tuple(
            (s.original_variable_node_id, s.slot_name, s.slot_variable_node_id)
            for s in m.slot_variables
        ),
    )
