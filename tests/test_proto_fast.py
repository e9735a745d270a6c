"""The inline decoders of ``_proto_fast`` against the general ones in ``_bundle``.

They are an optimisation only: whatever they accept must decode to exactly what the
general decoder gives, and everything else must be left to it (None). Checked on the
messages TensorFlow writes, on crafted edge cases, and on random and mutated bytes.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bundle import _f_fixed32, _f_len, _f_varint, entry_proto

from tf1compat_init.bundle import entries as _entries
from tf1compat_init.bundle import objects as _objects
from tf1compat_init.bundle.objects import OBJECT_GRAPH_KEY
from tf1compat_init.bundle.proto import ProtoDecodeError
from tf1compat_init.bundle.proto_fast import entry_fields, trackable_object_fields
from tf1compat_init.bundle.reader import BundleReader
from tf1compat_init.bundle.table import _read_table


def _general_entry(data: bytes):
    try:
        raw = _entries._parse_entry_general(data)
    except ProtoDecodeError:
        return "error"
    return (raw.dtype, raw.shape, raw.shard_id, raw.offset, raw.size, raw.crc32c, raw.slices)


def _check_entry(data: bytes) -> bool:
    """The property; returns whether the fast decoder took the message."""
    fast = entry_fields(data)
    if fast is None:
        return False
    assert _general_entry(data) == (*fast, ()), data.hex()
    return True


def _general_object(data: bytes):
    try:
        node = _objects._parse_trackable_object_general(data)
    except ProtoDecodeError:
        return "error"
    return node


def _check_object(data: bytes) -> bool:
    fast = trackable_object_fields(data)
    if fast is None:
        return False
    node = _general_object(data)
    assert node != "error", data.hex()
    children, attributes = fast
    assert [tuple(c) for c in node.children] == children, data.hex()
    assert [tuple(a) for a in node.attributes] == attributes, data.hex()
    assert node.slot_variables == ()
    return True


ENTRIES = [
    entry_proto(1, (4096, 4096), 0, 0, 1 << 26, 0xDEADBEEF),
    entry_proto(1, (), 0, 12345678901, 4, 1),  # a scalar far into a big shard
    entry_proto(19, (0, 3), 1, 64, 0, 0),  # a zero dimension, shard 1
    entry_proto(9, (1,) * 8, 2, 1 << 40, 8, 0xFFFFFFFF),
    entry_proto(7, (2, 2), 0, 300, 77, 5),  # strings
    entry_proto(1, (3,), 0, 0, 12, 9) + entry_proto(2, (5,), 0, 0, 0, 0),  # fields repeated
    b"",  # every field at its default
    _f_varint(5, 8) + _f_varint(1, 1) + _f_fixed32(6, 7),  # out of order
    _f_len(2, _f_len(2, b"")),  # a dim without size: 0
    _f_len(2, _f_len(2, _f_varint(1, (1 << 63) - 1))),  # the largest int64 dim
]

#: Valid messages the fast decoder must leave to the general one.
DECLINED = [
    entry_proto(1, (4, 4), slices=[((0, 2), (0, -1))]),  # slices
    _f_len(2, _f_len(2, _f_varint(1, 3) + _f_len(2, b"name"))),  # a named dim
    _f_varint(1, 1) + _f_varint(15, 3),  # an unknown field
    _f_varint(4, (1 << 64) - 1),  # a negative offset (10-byte varint)
    _f_varint(1, (1 << 64) - 1),  # a negative dtype
    _f_len(2, _f_len(2, _f_varint(1, (1 << 64) - 1))),  # a -1 dim
]


@pytest.mark.parametrize("data", ENTRIES, ids=lambda d: d.hex()[:24] or "empty")
def test_fast_entry_decodes_what_tensorflow_writes(data):
    assert _check_entry(data)


@pytest.mark.parametrize("data", DECLINED, ids=lambda d: d.hex()[:24])
def test_fast_entry_leaves_the_rest_to_the_general_decoder(data):
    assert entry_fields(data) is None
    assert _general_entry(data) != "error"  # valid: the general decoder reads it


def test_unknown_rank_is_left_to_the_general_decoder_which_rejects_it():
    data = _f_len(2, _f_varint(3, 1))
    assert entry_fields(data) is None
    assert _general_entry(data) == "error"


def test_every_truncation_of_valid_entries():
    for data in ENTRIES + DECLINED:
        for n in range(len(data)):
            _check_entry(data[:n])


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=60))
def test_random_bytes_entry(data):
    _check_entry(data)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(ENTRIES + DECLINED),
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), min_size=1, max_size=3),
)
def test_mutated_entries(data, edits):
    b = bytearray(data)
    for pos, value in edits:
        if b:
            b[pos % len(b)] = value
    _check_entry(bytes(b))


def _child(node_id: int, name: bytes) -> bytes:
    return _f_len(1, _f_varint(1, node_id) + _f_len(2, name))


def _attribute(name: bytes, full_name: bytes, key: bytes) -> bytes:
    return _f_len(2, _f_len(1, name) + _f_len(2, full_name) + _f_len(3, key))


OBJECTS = [
    b"",
    _child(1, b"model") + _child(2, b"optimizer"),
    _attribute(b"VARIABLE_VALUE", b"dense/kernel", b"model/kernel/.ATTRIBUTES/VARIABLE_VALUE"),
    _child(300, b"x" * 200) + _attribute(b"a", b"", b"k" * 150),  # multi-byte lengths and ids
    _child(1, "ünïcode".encode()) + _f_len(4, b"saver") + _f_len(5, b"\x08\x01"),  # skipped fields
    _f_len(1, b"") + _f_len(2, b""),  # empty child and attribute
]

OBJECTS_DECLINED = [
    _f_len(3, _f_varint(1, 1) + _f_len(2, b"m") + _f_varint(3, 2)),  # a slot variable
    _f_len(2, _f_len(1, b"a") + _f_varint(4, 1)),  # SerializedTensor.optional_restore
    _f_varint(6, 1),  # a varint at the top level
]

#: Invalid messages: the general decoder raises, so the fast one must decline them.
OBJECTS_INVALID = [
    b"\x02\x00",  # field number 0
    _f_len(1, b"\x08"),  # a child whose node_id is cut off
    _child(1, b"m")[:-1],  # a child longer than the message
]


@pytest.mark.parametrize("data", OBJECTS_INVALID, ids=lambda d: d.hex()[:24])
def test_fast_object_declines_invalid_messages(data):
    assert trackable_object_fields(data) is None
    assert _general_object(data) == "error"


@pytest.mark.parametrize("data", OBJECTS, ids=lambda d: d.hex()[:24] or "empty")
def test_fast_object_decodes_what_tensorflow_writes(data):
    assert _check_object(data)


@pytest.mark.parametrize("data", OBJECTS_DECLINED, ids=lambda d: d.hex()[:24])
def test_fast_object_leaves_the_rest_to_the_general_decoder(data):
    assert trackable_object_fields(data) is None
    assert _general_object(data) != "error"


def test_every_truncation_of_valid_objects():
    for data in OBJECTS + OBJECTS_DECLINED:
        for n in range(len(data)):
            _check_object(data[:n])


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes_object(data):
    _check_object(data)


def test_mutated_objects_seeded():
    rng = random.Random(5)
    taken = 0
    for _ in range(3000):
        b = bytearray(rng.choice(OBJECTS[1:] + OBJECTS_DECLINED))
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        taken += _check_object(bytes(b))
    assert taken > 100  # the property was exercised on accepted inputs, not only on None


def test_real_checkpoints_take_the_fast_path(tmp_path):
    """Every entry and object TensorFlow writes is decoded in line (else no speed-up)."""
    tf = pytest.importorskip("tensorflow")
    v = tf.Variable(tf.ones([3, 4]))
    opt_slot = tf.Variable(tf.zeros([2]))
    prefix = tf.train.Checkpoint(model=tf.Module(), v=v, w=opt_slot).write(str(tmp_path / "c"))
    table = _read_table(prefix + ".index")
    for key, value in table[1:]:
        assert entry_fields(value) is not None, key
        assert _check_entry(value)
    graph = BundleReader(prefix).read(OBJECT_GRAPH_KEY)[()]
    from tf1compat_init.bundle.proto import iter_fields

    nodes = [value for field, _, value in iter_fields(graph) if field == 1]
    assert nodes and all(_check_object(node) for node in nodes)
