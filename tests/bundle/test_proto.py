"""tf1compat_init.bundle.proto: varints and fields of the protobuf wire format."""

from __future__ import annotations

import pytest
from support.crafted_bundle import _f_fixed32, _f_len, _f_varint, _varint

from tf1compat_init.bundle.proto import ProtoDecodeError, decode_varint, iter_fields


@pytest.mark.pure
def test_proto_decoder_rejects_malformed():
    assert decode_varint(b"\x96\x01", 0) == (150, 2)
    assert decode_varint(b"\xff" * 9 + b"\x01", 0) == (2**64 - 1, 10)
    with pytest.raises(ProtoDecodeError):
        decode_varint(b"\x80\x80", 0)  # truncated
    with pytest.raises(ProtoDecodeError):
        decode_varint(b"\xff" * 10 + b"\x01", 0)  # too long
    with pytest.raises(ProtoDecodeError):
        decode_varint(b"\xff" * 9 + b"\x7f", 0)  # over 64 bits
    with pytest.raises(ProtoDecodeError):
        list(iter_fields(_varint(2 << 3 | 2) + _varint(10) + b"abc"))  # length overrun
    with pytest.raises(ProtoDecodeError):
        list(iter_fields(_varint(1 << 3 | 3)))  # group wire type
    with pytest.raises(ProtoDecodeError):
        list(iter_fields(b"\x00"))  # field number 0
    assert list(iter_fields(_f_varint(1, 5) + _f_len(2, b"xy") + _f_fixed32(6, 7))) == [
        (1, 0, 5),
        (2, 2, b"xy"),
        (6, 5, 7),
    ]
