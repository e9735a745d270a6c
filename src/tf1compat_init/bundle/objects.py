# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The object graph of a ``tf.train.Checkpoint`` (``TrackableObjectGraph``), decoded.

One decoder per message: :meth:`ObjectGraph.parse` walks the graph and
``_parse_trackable_object`` each object (one per variable and layer) in line, in the
layout TensorFlow writes, with the primitives of :mod:`.proto` for anything else; slot
variables, rare, go through :func:`.proto.iter_fields`."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from . import proto as _proto
from .proto import (
    WIRE_LEN,
    WIRE_VARINT,
    decode_tag,
    decode_varint,
    expect_wire,
    read_len,
    read_value,
    to_int32,
    to_str,
)

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
        data = bytes(data)
        n = len(data)
        pos = 0
        nodes = []
        while pos < n:  # in line, like the nodes: one field per object
            tag = data[pos]
            pos += 1
            if tag >= 0x80:
                tag, pos = decode_tag(data, pos - 1, n)
            if tag == 0x0A:  # 1: nodes, a TrackableObject
                if pos < n and (length := data[pos]) < 0x80 and length < n - pos:
                    pos += 1
                    end = pos + length
                else:
                    pos, end = read_len(data, pos, n, 1)
                nodes.append(_parse_trackable_object(data[pos:end]))
                pos = end
            else:  # an unknown field, or nodes with the wrong wire type
                _, pos = read_value(data, pos, n, tag)
                if tag >> 3 == 1:
                    expect_wire(1, tag & 7, WIRE_LEN)
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
    """Decodes one ``TrackableObject``: the one decoder of this message.

    Children and attributes (one per variable) are walked in line in the layout
    TensorFlow writes; anything else (multi-byte tags or lengths, unknown fields, a
    field with the wrong wire type, bad bytes) goes through the primitives of
    :mod:`.proto` in the same walk, which skip what is unknown and raise on what is
    malformed. Slot variables are rare and go through :func:`.proto.iter_fields`; a
    registered saver and ``has_checkpoint_values`` are skipped unread, like unknown
    fields (nothing here uses them).
    """
    n = len(data)
    pos = 0
    children: list[ObjectReference] = []
    attributes: list[SerializedTensor] = []
    slots: list[SlotVariableReference] = []
    while pos < n:
        tag = data[pos]
        pos += 1
        if tag >= 0x80:
            tag, pos = decode_tag(data, pos - 1, n)
        if tag & 7 != WIRE_LEN or tag < 8:  # every field here is length-delimited
            _, pos = read_value(data, pos, n, tag)  # field 0 raises here
            if tag >> 3 <= 3:  # a field this decoder reads, with the wrong wire type
                expect_wire(tag >> 3, tag & 7, WIRE_LEN)
            continue
        if pos < n and (length := data[pos]) < 0x80 and length < n - pos:
            pos += 1
            end = pos + length
        else:
            pos, end = read_len(data, pos, n, tag >> 3)
        base = pos  # the sub-message starts here: positions in its errors count from it
        if tag == 0x0A:  # 1: children, an ObjectReference
            node_id, name = 0, b""
            while pos < end:
                tag = data[pos]
                pos += 1
                if tag == 0x08:  # 1: node_id, an int32
                    if pos < end and (v := data[pos]) < 0x80:
                        pos += 1
                    else:
                        v, pos = decode_varint(data, pos, end, base)
                        v = to_int32(v)
                    node_id = v
                elif tag == 0x12:  # 2: local_name, a string
                    if pos < end and (length := data[pos]) < 0x80 and length < end - pos:
                        pos += 1
                        name = data[pos : pos + length]
                        pos += length
                    else:
                        start, pos = read_len(data, pos, end, 2, base)
                        name = data[start:pos]
                else:  # any other tag, or these fields with a tag longer than a byte
                    if tag >= 0x80:
                        tag, pos = decode_tag(data, pos - 1, end, base)
                    value, pos = read_value(data, pos, end, tag, base)
                    if tag >> 3 == 1:
                        expect_wire(1, tag & 7, WIRE_VARINT)
                        node_id = to_int32(value)  # type: ignore[arg-type]
                    elif tag >> 3 == 2:
                        expect_wire(2, tag & 7, WIRE_LEN)
                        name = value  # type: ignore[assignment]
            children.append(ObjectReference(node_id, to_str(name)))
        elif tag == 0x12:  # 2: attributes, a SerializedTensor
            strings = [b"", b"", b""]  # name, full_name, checkpoint_key
            while pos < end:
                tag = data[pos]
                pos += 1
                if tag == 0x0A or tag == 0x12 or tag == 0x1A:  # 1, 2, 3: strings
                    if pos < end and (length := data[pos]) < 0x80 and length < end - pos:
                        pos += 1
                        strings[(tag >> 3) - 1] = data[pos : pos + length]
                        pos += length
                    else:
                        start, pos = read_len(data, pos, end, tag >> 3, base)
                        strings[(tag >> 3) - 1] = data[start:pos]
                else:  # any other tag, or these fields with a tag longer than a byte
                    if tag >= 0x80:
                        tag, pos = decode_tag(data, pos - 1, end, base)
                    value, pos = read_value(data, pos, end, tag, base)
                    if 1 <= tag >> 3 <= 3:
                        expect_wire(tag >> 3, tag & 7, WIRE_LEN)
                        strings[(tag >> 3) - 1] = value  # type: ignore[call-overload]
            attributes.append(
                SerializedTensor(to_str(strings[0]), to_str(strings[1]), to_str(strings[2]))
            )
        elif tag == 0x1A:  # 3: slot_variables, a SlotVariableReference
            slots.append(_parse_slot_variable(data[base:end]))
            pos = end
        else:  # 4: registered_saver, 5: has_checkpoint_values (every node), unknown: skipped
            pos = end
    return ObjectGraphNode(tuple(children), tuple(attributes), tuple(slots))


def _parse_slot_variable(data: bytes) -> SlotVariableReference:
    original, slot_name, slot_id = 0, b"", 0
    for f, w, v in _proto.iter_fields(data):
        if f == 1:
            expect_wire(f, w, WIRE_VARINT)
            original = to_int32(v)  # type: ignore[arg-type]
        elif f == 2:
            expect_wire(f, w, WIRE_LEN)
            slot_name = v  # type: ignore[assignment]
        elif f == 3:
            expect_wire(f, w, WIRE_VARINT)
            slot_id = to_int32(v)  # type: ignore[arg-type]
    return SlotVariableReference(original, to_str(slot_name), slot_id)
