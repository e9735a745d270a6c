"""tf1compat_init.bundle.objects: the object graph's decoder, on crafted bytes.

TrackableObjectGraph and its TrackableObjects: what the decoder reads (every valid form, not
only TensorFlow's) and the exact error for each way the bytes can be malformed. The entry
decoder's tests, and random bytes through both decoders, are in test_entries.py.
"""

from __future__ import annotations

import pytest
from support.crafted_bundle import NEG1, _f_len, _f_varint, _id, _overlong, _varint

from tf1compat_init.bundle.objects import ObjectGraph
from tf1compat_init.bundle.proto import ProtoDecodeError

pytestmark = pytest.mark.pure


# -- The object graph: TrackableObjectGraph and its TrackableObjects. -------------------


def _child(node_id: int, name: bytes) -> bytes:
    return _f_len(1, _f_varint(1, node_id) + _f_len(2, name))


def _attribute(name: bytes, full_name: bytes, key: bytes) -> bytes:
    return _f_len(2, _f_len(1, name) + _f_len(2, full_name) + _f_len(3, key))


def _slot(original: int, name: bytes, slot: int) -> bytes:
    return _f_len(3, _f_varint(1, original) + _f_len(2, name) + _f_varint(3, slot))


def _node(data: bytes) -> tuple:
    (node,) = ObjectGraph.parse(_f_len(1, data)).nodes
    return node.children, node.attributes, node.slot_variables


KEY = "model/kernel/.ATTRIBUTES/VARIABLE_VALUE"

#: (TrackableObject bytes, (children, attributes, slot_variables)).
OBJECTS = [
    (b"", ((), (), ())),
    (_child(1, b"model") + _child(2, b"optimizer"), (((1, "model"), (2, "optimizer")), (), ())),
    (
        _attribute(b"VARIABLE_VALUE", b"dense/kernel", KEY.encode()) + _f_len(5, b"\x08\x01"),
        ((), (("VARIABLE_VALUE", "dense/kernel", KEY),), ()),  # has_checkpoint_values skipped
    ),
    (
        _child(300, b"x" * 200) + _attribute(b"a", b"", b"k" * 150),  # multi-byte ids, lengths
        (((300, "x" * 200),), (("a", "", "k" * 150),), ()),
    ),
    (
        _child(1, "ünïcode".encode()) + _f_len(4, b"\x0a\x05saver") + _f_varint(9, 1),
        (((1, "ünïcode"),), (), ()),  # a registered saver and an unknown field, skipped
    ),
    (_child(1, b"\xff\xfe"), (((1, "\udcff\udcfe"),), (), ())),  # not UTF-8: kept as is
    (_f_len(1, b"") + _f_len(2, b""), (((0, ""),), (("", "", ""),), ())),
    (_slot(1, b"m", 2) + _slot(3, b"v", 4), ((), (), ((1, "m", 2), (3, "v", 4)))),
    (_f_len(2, _f_len(1, b"a") + _f_varint(4, 1)), ((), (("a", "", ""),), ())),
    (_f_len(1, _f_varint(1, NEG1) + _f_varint(7, 1)), (((-1, ""),), (), ())),
    (
        _f_len(1, _overlong(1, 0, 3) + b"\x07" + _overlong(2, 2, 2) + b"\x01n"),
        (((7, "n"),), (), ()),  # overlong tags in a child
    ),
    (_f_len(2, _overlong(3, 2, 2) + b"\x01k" + _f_len(3, b"j")), ((), (("", "", "j"),), ())),
]

BAD_OBJECTS = [
    (b"\x02\x00", "field number 0 is invalid"),
    (_f_len(1, b"\x08"), "truncated varint at byte 1"),
    (_child(1, b"m")[:-1], "field 1: length 5 runs past the end of a 6-byte message"),
    (_f_len(1, b"\x12\x03ab"), "field 2: length 3 runs past the end of a 4-byte message"),
    (_f_len(2, b"\x1a\x03ab"), "field 3: length 3 runs past the end of a 4-byte message"),
    (_f_varint(1, 1), "field 1 has wire type 0, expected 2"),
    (_f_varint(3, 1), "field 3 has wire type 0, expected 2"),
    (_f_len(1, _f_len(1, b"")), "field 1 has wire type 2, expected 0"),
    (_f_len(1, _f_varint(2, 1)), "field 2 has wire type 0, expected 2"),
    (_f_len(2, _f_varint(3, 1)), "field 3 has wire type 0, expected 2"),
    (_f_len(3, _f_len(3, b"")), "field 3 has wire type 2, expected 0"),
    (_f_len(1, b"\x0b"), "field 1: unsupported wire type 3"),
    (_varint(9 << 3 | 5) + b"\x00", "field 9: truncated fixed32"),
]


@pytest.mark.parametrize(("data", "expected"), OBJECTS, ids=[_id(d) for d, _ in OBJECTS])
def test_objects(data, expected):
    assert _node(data) == expected


@pytest.mark.parametrize(("data", "message"), BAD_OBJECTS, ids=[_id(d) for d, _ in BAD_OBJECTS])
def test_bad_objects(data, message):
    with pytest.raises(ProtoDecodeError, match=message):
        _node(data)


def test_object_graph_fields():
    node = _child(1, b"a")
    graph = ObjectGraph.parse(_f_len(1, node) + _f_varint(2, 5) + _f_len(1, b""))
    assert [n.children for n in graph.nodes] == [((1, "a"),), ()]
    with pytest.raises(ProtoDecodeError, match="field 1 has wire type 0, expected 2"):
        ObjectGraph.parse(_f_varint(1, 1))
    with pytest.raises(ProtoDecodeError, match="field 1: length 9 runs past the end of a 11-byte"):
        ObjectGraph.parse(_f_len(1, node) + b"\x0a\x09")
