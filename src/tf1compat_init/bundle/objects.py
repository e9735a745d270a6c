"""The object graph of a ``tf.train.Checkpoint`` (``TrackableObjectGraph``), decoded."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from . import proto as _proto
from .proto import WIRE_LEN, WIRE_VARINT, expect_wire, to_str
from .proto_fast import trackable_object_fields

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


__all__ = [
    "OBJECT_GRAPH_KEY",
    "ObjectGraph",
    "ObjectGraphNode",
    "ObjectReference",
    "SerializedTensor",
    "SlotVariableReference",
]


class ObjectReference(NamedTuple):
    """A child edge of the object graph."""

    node_id: int
    local_name: str


class SerializedTensor(NamedTuple):
    """A saved attribute (usually ``VARIABLE_VALUE``) of an object."""

    name: str
    full_name: str
    checkpoint_key: str


class SlotVariableReference(NamedTuple):
    """An optimizer slot: ``slot_variable_node_id`` is ``slot_name`` of the original."""

    original_variable_node_id: int
    slot_name: str
    slot_variable_node_id: int


@dataclass(frozen=True)
class ObjectGraphNode:
    """One ``TrackableObject`` of the checkpoint's object graph."""

    children: tuple[ObjectReference, ...]
    attributes: tuple[SerializedTensor, ...]
    slot_variables: tuple[SlotVariableReference, ...]


@dataclass(frozen=True)
class ObjectGraph:
    """The ``TrackableObjectGraph`` saved by ``tf.train.Checkpoint``.

    Attributes:
        nodes: the objects; node 0 is the root.
    """

    nodes: tuple[ObjectGraphNode, ...]

    @classmethod
    def parse(cls, data: bytes) -> ObjectGraph:
        """Decodes a serialized ``TrackableObjectGraph``.

        Args:
            data: the proto bytes.

        Returns:
            The graph.

        Raises:
            ProtoDecodeError: the bytes are not a well-formed graph.
        """
        nodes = []
        for field, wire, value in _proto.iter_fields(data):
            if field == 1:
                expect_wire(field, wire, WIRE_LEN)
                nodes.append(_parse_trackable_object(value))
        return cls(nodes=tuple(nodes))

    def _node_paths(self) -> dict[int, str]:
        paths: dict[int, str] = {}
        if not self.nodes:
            return paths
        paths[0] = ""
        queue = deque([0])
        while queue:  # breadth first, so each object gets its shortest path
            node_id = queue.popleft()
            for child in self.nodes[node_id].children:
                if child.node_id in paths or not 0 <= child.node_id < len(self.nodes):
                    continue
                parent = paths[node_id]
                paths[child.node_id] = (
                    f"{parent}/{child.local_name}" if parent else child.local_name
                )
                queue.append(child.node_id)
        # Slot variables hang off their variable, not off the optimizer's
        # children; a slot of a slot needs a second pass, hence the loop.
        changed = True
        while changed:
            changed = False
            for node in self.nodes:
                for slot in node.slot_variables:
                    sid, oid = slot.slot_variable_node_id, slot.original_variable_node_id
                    if sid in paths or oid not in paths or not 0 <= sid < len(self.nodes):
                        continue
                    paths[sid] = f"{paths[oid]}/{slot.slot_name}" if paths[oid] else slot.slot_name
                    changed = True
        return paths

    def paths(self) -> dict[str, str]:
        """Maps each attribute's checkpoint key to a readable object path.

        The path joins the ``local_name``s from the root by breadth-first
        search (``"model/layer_with_weights-0/kernel"``); an object reachable
        only as an optimizer slot gets ``"<variable path>/<slot name>"``.

        Returns:
            ``{checkpoint_key: path}`` for every reachable attribute.
        """
        node_paths = self._node_paths()
        out: dict[str, str] = {}
        for node_id, node in enumerate(self.nodes):
            path = node_paths.get(node_id)
            if path is None:
                continue
            for attr in node.attributes:
                out.setdefault(attr.checkpoint_key, path)
        return out

    def full_names(self) -> dict[str, str]:
        """Maps each attribute's checkpoint key to its ``full_name``.

        For variables the full name is the graph name (``"dense/kernel"``),
        which is what name-based code expects.

        Returns:
            ``{checkpoint_key: full_name}``.
        """
        out: dict[str, str] = {}
        for node in self.nodes:
            for attr in node.attributes:
                out.setdefault(attr.checkpoint_key, attr.full_name)
        return out


def _parse_trackable_object(data: bytes) -> ObjectGraphNode:
    fast = trackable_object_fields(data)
    if fast is not None:
        children_, attributes_ = fast
        return ObjectGraphNode(
            tuple([ObjectReference(*c) for c in children_]),
            tuple([SerializedTensor(*a) for a in attributes_]),
            (),
        )
    return _parse_trackable_object_general(data)


def _parse_trackable_object_general(data: bytes) -> ObjectGraphNode:
    """Any valid ``TrackableObject``, every field checked (``proto_fast`` is the quick path)."""
    children, attributes, slots = [], [], []
    for field, wire, value in _proto.iter_fields(data):
        if field == 1:
            expect_wire(field, wire, WIRE_LEN)
            node_id, local_name = 0, b""
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    expect_wire(f, w, WIRE_VARINT)
                    node_id = _proto.to_int32(v)
                elif f == 2:
                    expect_wire(f, w, WIRE_LEN)
                    local_name = v
            children.append(ObjectReference(node_id, to_str(local_name)))
        elif field == 2:
            expect_wire(field, wire, WIRE_LEN)
            strings = [b"", b"", b""]
            for f, w, v in _proto.iter_fields(value):
                if f in (1, 2, 3):
                    expect_wire(f, w, WIRE_LEN)
                    strings[f - 1] = v
            attributes.append(SerializedTensor(*(to_str(s) for s in strings)))
        elif field == 3:
            expect_wire(field, wire, WIRE_LEN)
            original, slot_name, slot_id = 0, b"", 0
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    expect_wire(f, w, WIRE_VARINT)
                    original = _proto.to_int32(v)
                elif f == 2:
                    expect_wire(f, w, WIRE_LEN)
                    slot_name = v
                elif f == 3:
                    expect_wire(f, w, WIRE_VARINT)
                    slot_id = _proto.to_int32(v)
            slots.append(SlotVariableReference(original, to_str(slot_name), slot_id))
    return ObjectGraphNode(tuple(children), tuple(attributes), tuple(slots))
