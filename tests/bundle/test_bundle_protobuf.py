"""The hand-written decoders against ``protobuf``'s own parser.

Random valid messages, both as ``protobuf`` writes them and in every encoding the wire
format allows (fields in any order or repeated, unknown fields of every wire type at
every level, overlong varints, tags and lengths, negative int32s in 5 or 10 bytes),
must decode to exactly what ``protobuf`` decodes. Truncated, mutated and random bytes
must either raise :class:`ProtoDecodeError` or decode to what ``protobuf`` decodes:
never a value ``protobuf`` would not give. For those the schema is the lenient one
(strings as bytes, the two fields the object decoder skips as bytes; see
``support.bundle_protos``), since what the decoder does not check it does not claim to check.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("google.protobuf")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support.bundle_protos import (  # noqa: E402
    entry_values,
    header_values,
    node_values,
    schema,
)

from tf1compat_init.bundle.entries import _parse_header, parse_entry  # noqa: E402
from tf1compat_init.bundle.objects import ObjectGraph  # noqa: E402
from tf1compat_init.bundle.proto import ProtoDecodeError  # noqa: E402

U64 = (1 << 64) - 1
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
ANY_VARINT = st.one_of(st.integers(0, 300), INT64, st.integers(0, U64))  # int32s keep 32 bits
TEXT = st.text(max_size=6)
SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- An encoder of every valid encoding. ------------------------------------------------


def _varint(value: int, size: int = 0) -> bytes:
    """``value`` (two's complement if negative) in ``size`` bytes, at least the fewest."""
    value &= U64
    groups = []
    while True:
        groups.append(value & 0x7F)
        value >>= 7
        if not value and len(groups) >= size:
            break
    return bytes(g | 0x80 for g in groups[:-1]) + bytes(groups[-1:])


@st.composite
def varint(draw, value: int, max_bytes: int = 10) -> bytes:
    fewest = len(_varint(value))
    return _varint(value, draw(st.one_of(st.just(fewest), st.integers(fewest, max_bytes))))


@st.composite
def field(draw, number: int, wire: int, payload) -> bytes:
    tag = draw(varint(number << 3 | wire, 5))
    if wire == 0:
        return tag + draw(varint(payload))
    if wire == 1:
        return tag + payload.to_bytes(8, "little")
    if wire == 5:
        return tag + payload.to_bytes(4, "little")
    return tag + draw(varint(len(payload), 5)) + payload


def int_field(number: int, values=ANY_VARINT):
    return values.flatmap(lambda v: field(number, 0, v))


def int32_field(number: int):
    """An int32 as protobuf writes it (10 bytes if negative), in 5 bytes, or any varint."""
    return st.one_of(
        int_field(number, INT32),
        int_field(number, INT32.map(lambda v: v & 0xFFFFFFFF)),
        int_field(number),
    )


def str_field(number: int):
    return TEXT.flatmap(lambda s: field(number, 2, s.encode()))


def msg_field(number: int, content):
    return content.flatmap(lambda b: field(number, 2, b))


def unknown_field(known: set[int]):
    numbers = st.one_of(st.integers(1, 40), st.integers(1, (1 << 29) - 1))
    payloads = {
        0: ANY_VARINT,
        1: st.integers(0, U64),
        2: st.binary(max_size=6),
        5: st.integers(0, (1 << 32) - 1),
    }
    return st.tuples(
        numbers.filter(lambda n: n not in known), st.sampled_from(sorted(payloads))
    ).flatmap(lambda nw: payloads[nw[1]].flatmap(lambda p: field(nw[0], nw[1], p)))


def message(*fields, max_size: int = 6):
    return st.lists(st.one_of(*fields), max_size=max_size).map(b"".join)


DIM = message(int_field(1, INT64), int_field(1), str_field(2), unknown_field({1, 2}), max_size=3)
SHAPE = message(msg_field(2, DIM), int_field(3, st.just(0)), unknown_field({2, 3}), max_size=4)
EXTENT = message(int_field(1, INT64), int_field(2, INT64), unknown_field({1, 2}), max_size=3)
SLICE = message(msg_field(1, EXTENT), unknown_field({1}), max_size=3)
ENTRY = message(
    int32_field(1),
    msg_field(2, SHAPE),
    int32_field(3),
    int_field(4),
    int_field(5),
    st.integers(0, (1 << 32) - 1).flatmap(lambda v: field(6, 5, v)),
    msg_field(7, SLICE),
    unknown_field(set(range(1, 8))),
    max_size=8,
)
VERSION = message(
    int32_field(1),
    int32_field(2),
    int32_field(3),
    st.lists(ANY_VARINT, max_size=3)
    .flatmap(lambda vs: st.tuples(*[varint(v) for v in vs]))
    .flatmap(lambda bs: field(3, 2, b"".join(bs))),  # packed
    unknown_field({1, 2, 3}),
)
HEADER = message(int32_field(1), int32_field(2), msg_field(3, VERSION), unknown_field({1, 2, 3}))
CHILD = message(int32_field(1), str_field(2), unknown_field({1, 2}), max_size=3)
ATTRIBUTE = message(str_field(1), str_field(2), str_field(3), unknown_field({1, 2, 3}), max_size=4)
SLOT = message(int32_field(1), str_field(2), int32_field(3), unknown_field({1, 2, 3}), max_size=4)
SAVER = message(str_field(1), str_field(2), unknown_field({1, 2}), max_size=3)
BOOL_VALUE = message(int_field(1), unknown_field({1}), max_size=2)
NODE = message(
    msg_field(1, CHILD),
    msg_field(2, ATTRIBUTE),
    msg_field(3, SLOT),
    msg_field(4, SAVER),
    msg_field(5, BOOL_VALUE),
    unknown_field(set(range(1, 6))),
)
GRAPH = message(msg_field(1, NODE), unknown_field({1}), max_size=4)


# -- What the decoders give, and what protobuf gives. ----------------------------------


def ours_entry(data: bytes):
    return parse_entry(data)


def ours_header(data: bytes):
    h = _parse_header(data)
    return (h.num_shards, h.big_endian, h.producer, h.min_consumer, h.bad_consumers)


def ours_graph(data: bytes, *, as_bytes: bool = False):
    def b(s: str):
        return s.encode("utf-8", "surrogateescape") if as_bytes else s

    return [
        (
            tuple((c.node_id, b(c.local_name)) for c in n.children),
            tuple((b(a.name), b(a.full_name), b(a.checkpoint_key)) for a in n.attributes),
            tuple((s[0], b(s.slot_name), s[2]) for s in n.slot_variables),
        )
        for n in ObjectGraph.parse(data).nodes
    ]


def theirs(kind: str, data: bytes, lenient: bool = False):
    classes = schema(lenient)
    if kind == "entry":
        return entry_values(classes["BundleEntryProto"].FromString(data))
    if kind == "header":
        return header_values(classes["BundleHeaderProto"].FromString(data))
    graph = classes["TrackableObjectGraph"].FromString(data)
    return [node_values(n) for n in graph.nodes]


def ours(kind: str, data: bytes, as_bytes: bool = False):
    if kind == "entry":
        return ours_entry(data)
    if kind == "header":
        return ours_header(data)
    return ours_graph(data, as_bytes=as_bytes)


def assert_same(kind: str, data: bytes) -> None:
    """Valid bytes: both decode them, to the same values."""
    expected = theirs(kind, data)
    if expected == "unknown rank":  # valid protobuf, but no shape a checkpoint can hold
        with pytest.raises(ProtoDecodeError, match="unknown rank"):
            ours(kind, data)
        return
    assert ours(kind, data) == expected, data.hex()


def assert_error_or_same(kind: str, data: bytes) -> bool:
    """Any bytes: an error, or what protobuf decodes; returns whether ours took them."""
    try:
        got = ours(kind, data, as_bytes=True)
    except ProtoDecodeError:
        return False
    try:
        expected = theirs(kind, data, lenient=True)
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError differs between versions
        raise AssertionError(f"decoded {got} where protobuf raises {e!r}: {data.hex()}") from None
    assert got == expected, data.hex()
    return True


KINDS = {"entry": ENTRY, "header": HEADER, "graph": GRAPH}


# -- Valid messages. --------------------------------------------------------------------


@st.composite
def entry_message(draw):
    m = schema()["BundleEntryProto"](
        dtype=draw(INT32),
        shard_id=draw(INT32),
        offset=draw(INT64),
        size=draw(INT64),
        crc32c=draw(st.integers(0, (1 << 32) - 1)),
    )
    for size, name in draw(st.lists(st.tuples(INT64, TEXT), max_size=4)):
        m.shape.dim.add(size=size, name=name)
    m.shape.unknown_rank = draw(st.sampled_from([False] * 9 + [True]))
    for extents in draw(
        st.lists(st.lists(st.tuples(INT64, st.none() | INT64), max_size=3), max_size=3)
    ):
        s = m.slices.add()
        for start, length in extents:
            e = s.extent.add(start=start)
            if length is not None:
                e.length = length
    return m.SerializeToString()


@st.composite
def graph_message(draw):
    m = schema()["TrackableObjectGraph"]()
    for _ in range(draw(st.integers(0, 3))):
        node = m.nodes.add()
        for node_id, name in draw(st.lists(st.tuples(INT32, TEXT), max_size=3)):
            node.children.add(node_id=node_id, local_name=name)
        for a, b, c in draw(st.lists(st.tuples(TEXT, TEXT, TEXT), max_size=2)):
            node.attributes.add(name=a, full_name=b, checkpoint_key=c)
        for a, b, c in draw(st.lists(st.tuples(INT32, TEXT, INT32), max_size=2)):
            node.slot_variables.add(
                original_variable_node_id=a, slot_name=b, slot_variable_node_id=c
            )
        if draw(st.booleans()):
            node.has_checkpoint_values.value = draw(st.booleans())
        if draw(st.booleans()):
            node.registered_saver.name = draw(TEXT)
    return m.SerializeToString()


@st.composite
def header_message(draw):
    m = schema()["BundleHeaderProto"](num_shards=draw(INT32), endianness=draw(st.integers(0, 1)))
    m.version.producer = draw(INT32)
    m.version.min_consumer = draw(INT32)
    m.version.bad_consumers.extend(draw(st.lists(INT32, max_size=3)))
    return m.SerializeToString()


@pytest.mark.pure
@SETTINGS
@given(entry_message())
def test_entries_as_protobuf_writes_them(data):
    assert_same("entry", data)


@pytest.mark.pure
@SETTINGS
@given(graph_message())
def test_object_graphs_as_protobuf_writes_them(data):
    assert_same("graph", data)


@pytest.mark.pure
@SETTINGS
@given(header_message())
def test_headers_as_protobuf_writes_them(data):
    assert_same("header", data)


@pytest.mark.pure
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_encoding_of_valid_messages(kind):
    @SETTINGS
    @given(KINDS[kind])
    def check(data):
        assert_same(kind, data)

    check()


# -- Bad bytes: an error or protobuf's values, never other values. ----------------------


@pytest.mark.pure
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_truncated_and_mutated_messages(kind):
    taken = []

    @SETTINGS
    @given(KINDS[kind], st.randoms(use_true_random=False))
    def check(data, rng: random.Random):
        for n in range(len(data)):
            taken.append(assert_error_or_same(kind, data[:n]))
        for _ in range(4):
            b = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                if b:
                    b[rng.randrange(len(b))] = rng.choice([rng.randrange(256), 0x80, 0xFF, 0x00])
            taken.append(assert_error_or_same(kind, bytes(b)))

    check()
    assert any(taken) and not all(taken)  # both outcomes were exercised


@pytest.mark.pure
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_random_bytes(kind):
    @settings(max_examples=400, deadline=None)
    @given(st.binary(max_size=40))
    def check(data):
        assert_error_or_same(kind, data)

    check()


# -- The schema is TensorFlow's, and so is what TensorFlow writes. ------------------------


def _structure(descriptor, seen=()) -> tuple:
    """Field numbers, names, types, labels, oneofs and sub-structures (not names of types)."""
    if descriptor.full_name in seen:
        return ()
    out = []
    for f in descriptor.fields:
        repeated = f.label == f.LABEL_REPEATED if hasattr(f, "label") else f.is_repeated
        sub = _structure(f.message_type, (*seen, descriptor.full_name)) if f.message_type else ()
        oneof = f.containing_oneof is not None  # its name changed in TF 2.21
        out.append((f.number, f.name, f.type, repeated, oneof, sub))
    return tuple(sorted(out))


def test_the_schema_is_tensorflows():
    pytest.importorskip("tensorflow")
    from tensorflow.core.protobuf import tensor_bundle_pb2, trackable_object_graph_pb2

    ours_ = schema()
    for name, theirs_ in [
        ("BundleEntryProto", tensor_bundle_pb2.BundleEntryProto),
        ("BundleHeaderProto", tensor_bundle_pb2.BundleHeaderProto),
        ("TrackableObjectGraph", trackable_object_graph_pb2.TrackableObjectGraph),
    ]:
        assert _structure(ours_[name].DESCRIPTOR) == _structure(theirs_.DESCRIPTOR), name
