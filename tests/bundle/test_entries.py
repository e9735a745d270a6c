"""tf1compat_init.bundle.entries: the decoder of a tensor's index entry, on crafted bytes.

One decoder per message a checkpoint holds thousands of (``entries.parse_entry`` here, the
object graph's in test_objects.py); each walks the
layout TensorFlow writes in line and everything else through :mod:`.proto`. Here: what
they decode (every valid form, not only TensorFlow's), and the exact error for each way
bytes can be malformed. ``test_bundle_protobuf.py`` compares them with ``protobuf`` on
random messages; ``test_reader.py`` with what TensorFlow writes and reads.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.crafted_bundle import (
    NEG1,
    _f_fixed32,
    _f_len,
    _f_varint,
    _id,
    _overlong,
    _varint,
    entry_proto,
)

from tf1compat_init.bundle.entries import parse_entry
from tf1compat_init.bundle.objects import ObjectGraph
from tf1compat_init.bundle.proto import ProtoDecodeError, decode_tag

pytestmark = pytest.mark.pure

#: (bytes, what parse_entry returns).
ENTRIES = [
    (
        entry_proto(1, (4096, 4096), 0, 0, 1 << 26, 0xDEADBEEF),
        (1, (4096, 4096), 0, 0, 1 << 26, 0xDEADBEEF, ()),
    ),
    (entry_proto(1, (), 0, 12345678901, 4, 1), (1, (), 0, 12345678901, 4, 1, ())),
    (entry_proto(19, (0, 3), 1, 64, 0, 0), (19, (0, 3), 1, 64, 0, 0, ())),
    (
        entry_proto(9, (1,) * 8, 2, 1 << 40, 8, 0xFFFFFFFF),
        (9, (1,) * 8, 2, 1 << 40, 8, 0xFFFFFFFF, ()),
    ),
    (b"", (0, (), 0, 0, 0, 0, ())),  # every field at its default
    (
        entry_proto(1, (3,), 0, 0, 12, 9) + entry_proto(2, (5,), 0, 0, 0, 0),
        (2, (3, 5), 0, 0, 0, 0, ()),  # scalars: the last wins; shapes merge
    ),
    (_f_varint(5, 8) + _f_varint(1, 1) + _f_fixed32(6, 7), (1, (), 0, 0, 8, 7, ())),
    (_f_len(2, _f_len(2, b"")), (0, (0,), 0, 0, 0, 0, ())),  # a dim without size: 0
    (_f_len(2, _f_len(2, _f_varint(1, (1 << 63) - 1))), (0, ((1 << 63) - 1,), 0, 0, 0, 0, ())),
    # Not TensorFlow's usual layout, all valid:
    (
        entry_proto(1, (4, 4), slices=[((0, 2), (0, -1))]),
        (1, (4, 4), 0, 0, 0, 0, (((0, 2), (0, -1)),)),
    ),
    (_f_len(2, _f_len(2, _f_varint(1, 3) + _f_len(2, b"name"))), (0, (3,), 0, 0, 0, 0, ())),
    (_f_varint(1, 1) + _f_varint(15, 3), (1, (), 0, 0, 0, 0, ())),  # an unknown field
    (
        _f_len(9, b"x") + _varint(10 << 3 | 1) + bytes(8) + _f_fixed32(11, 5) + _f_varint(8, 1),
        (0, (), 0, 0, 0, 0, ()),  # unknown fields of every wire type
    ),
    (_f_len(2, _f_varint(9, 1) + _f_len(2, _f_len(5, b"?"))), (0, (0,), 0, 0, 0, 0, ())),
    (_f_varint(4, NEG1) + _f_varint(5, NEG1), (0, (), 0, -1, -1, 0, ())),  # negative int64s
    (_f_varint(1, NEG1) + _f_varint(3, 0xFFFFFFFE), (-1, (), -2, 0, 0, 0, ())),  # int32s
    (_f_varint(1, (1 << 40) + 7), (7, (), 0, 0, 0, 0, ())),  # an int32 keeps 32 bits
    (_f_len(2, _f_len(2, _f_varint(1, NEG1))), (0, (-1,), 0, 0, 0, 0, ())),  # a -1 dim
    (_overlong(1, 0, 5) + b"\x85\x80\x00", (5, (), 0, 0, 0, 0, ())),  # overlong tag, varint
    (_overlong(2, 2, 3) + b"\x83\x00" + _overlong(2, 2, 2) + b"\x00", (0, (0,), 0, 0, 0, 0, ())),
    (_f_len(2, _f_varint(3, 0)), (0, (), 0, 0, 0, 0, ())),  # unknown_rank written as false
]

#: (bytes, the ProtoDecodeError's text). Positions count from the start of the
#: innermost message.
BAD_ENTRIES = [
    (b"\x08", "truncated varint at byte 1"),
    (b"\x20\x80", "truncated varint at byte 1"),
    (b"\x20" + b"\xff" * 10 + b"\x01", "varint at byte 1 is longer than 10 bytes"),
    (b"\x20" + b"\xff" * 9 + b"\x7f", "varint at byte 1 overflows 64 bits"),
    (b"\x00", "field number 0 is invalid"),
    (b"\x02\x00", "field number 0 is invalid"),
    (_overlong(0, 0, 2) + b"\x01", "field number 0 is invalid"),
    (b"\x12\x05\x12", "field 2: length 5 runs past the end of a 3-byte message"),
    (b"\x12\x80", "truncated varint at byte 1"),
    (_f_len(2, b"\x12\x05"), "field 2: length 5 runs past the end of a 2-byte message"),
    (_f_len(2, _f_len(2, b"\x08\x80")), "truncated varint at byte 1"),
    (_f_len(2, _f_len(2, b"\x08")), "truncated varint at byte 1"),
    (_f_varint(1, 1) + _f_len(2, _f_len(2, b"\x12\x09")), "length 9 runs past the end of a 2-byte"),
    (b"\x35\x01\x02", "field 6: truncated fixed32"),
    (_varint(9 << 3 | 1) + bytes(3), "field 9: truncated fixed64"),
    (b"\x0b", "field 1: unsupported wire type 3"),
    (_varint(9 << 3 | 4), "field 9: unsupported wire type 4"),
    (_varint(9 << 3 | 7), "field 9: unsupported wire type 7"),
    (_f_len(1, b"x"), "field 1 has wire type 2, expected 0"),
    (_f_varint(2, 3), "field 2 has wire type 0, expected 2"),
    (_f_varint(6, 3), "field 6 has wire type 0, expected 5"),
    (_f_varint(7, 3), "field 7 has wire type 0, expected 2"),
    (_f_len(2, _f_len(2, _f_len(1, b""))), "field 1 has wire type 2, expected 0"),
    (_f_len(2, _f_varint(3, 1)), "the shape has unknown rank"),
    (_f_len(2, _f_varint(2, 1)), "field 2 has wire type 0, expected 2"),
    (_f_len(7, _f_len(1, _f_len(1, b""))), "field 1 has wire type 2, expected 0"),
    (_f_len(7, _f_varint(1, 0)), "field 1 has wire type 0, expected 2"),
    (b"\x88\x80\x80\x80\x10\x05", "tag at byte 0 is not a varint32"),  # over 32 bits
    (_overlong(1, 0, 6) + b"\x05", "tag at byte 0 is not a varint32"),  # over 5 bytes
    (b"\x12\x80\x80\x80\x80\x80\x00", "field 2: the length at byte 1 is not a varint32"),
]


@pytest.mark.parametrize(("data", "expected"), ENTRIES, ids=[_id(d) for d, _ in ENTRIES])
def test_entries(data, expected):
    assert parse_entry(data) == expected


@pytest.mark.parametrize(("data", "message"), BAD_ENTRIES, ids=[_id(d) for d, _ in BAD_ENTRIES])
def test_bad_entries(data, message):
    with pytest.raises(ProtoDecodeError, match=message):
        parse_entry(data)


def test_every_truncation_of_an_entry_is_an_error_or_a_prefix():
    """A cut at a field boundary is a valid, shorter entry; anywhere else an error."""
    data = entry_proto(1, (300, 2), 1, 1 << 33, 1200, 5, slices=[((0, 150), (0, -1))])
    boundaries = {0}
    pos = 0
    for part in [
        _f_varint(1, 1),
        _f_len(2, _f_len(2, _f_varint(1, 300)) + _f_len(2, _f_varint(1, 2))),
        _f_varint(3, 1),
        _f_varint(4, 1 << 33),
        _f_varint(5, 1200),
        _f_fixed32(6, 5),
    ]:
        pos += len(part)
        boundaries.add(pos)
    for n in range(len(data)):
        if n in boundaries:
            parse_entry(data[:n])
        else:
            with pytest.raises(ProtoDecodeError):
                parse_entry(data[:n])


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=60))
def test_random_bytes_raise_only_protodecodeerror(data):
    for decode in (parse_entry, ObjectGraph.parse):
        try:
            decode(data)
        except ProtoDecodeError:
            pass


def test_decode_tag():
    assert decode_tag(b"\x08", 0, 1) == (8, 1)
    assert decode_tag(b"\xf8\xff\xff\xff\x0f", 0, 5) == ((1 << 32) - 8, 5)  # field 2**29 - 1
    with pytest.raises(ProtoDecodeError, match="tag at byte 1 is not a varint32"):
        decode_tag(b"\x00\x80\x80\x80\x80\x10", 1, 6)
    with pytest.raises(ProtoDecodeError, match="tag at byte 0 is not a varint32"):
        decode_tag(b"\x88\x80\x80\x80\x80\x00", 0, 6)
