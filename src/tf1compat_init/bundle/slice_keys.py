# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""OrderedCode keys of tensor slices (``core/lib/strings/ordered_code.cc`` and
``core/util/saved_tensor_slice_util.cc``): where a partitioned tensor's slices are stored."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["encode_tensor_name_slice"]


def _oc_num_increasing(value: int) -> bytes:
    # A length byte, then the value big-endian without leading zero bytes.
    body = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([len(body)]) + body


_OC_ESCAPES = {b"\x00": b"\x00\xff", b"\xff": b"\xff\x00"}
_OC_SPECIAL = re.compile(rb"[\x00\xff]")


def _oc_string(value: bytes) -> bytes:
    # 0x00 and 0xff are escaped in one pass (chained replaces would re-escape
    # the escapes); 0x00 0x01 terminates.
    return _OC_SPECIAL.sub(lambda m: _OC_ESCAPES[m.group()], value) + b"\x00\x01"


# Header bits of the first two bytes, by encoded length (1..10).
_OC_HEADER = {
    1: (0x80, 0),
    2: (0xC0, 0),
    3: (0xE0, 0),
    4: (0xF0, 0),
    5: (0xF8, 0),
    6: (0xFC, 0),
    7: (0xFE, 0),
    8: (0xFF, 0),
    9: (0xFF, 0x80),
    10: (0xFF, 0xC0),
}


def _oc_signed_num_increasing(value: int) -> bytes:
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"{value} does not fit in int64")
    magnitude = ~value if value < 0 else value
    if magnitude < 64:
        return bytes([(0x80 ^ value) & 0xFF])
    length = magnitude.bit_length() // 7 + 1  # bytes needed for sign, size and payload bits
    raw = bytearray((value & ((1 << 80) - 1)).to_bytes(10, "big")[10 - length :])
    first, second = _OC_HEADER[length]
    raw[0] ^= first
    raw[1] ^= second
    return bytes(raw)


def encode_tensor_name_slice(name: bytes, extents: Iterable[tuple[int, int]]) -> bytes:
    """The index key under which TensorFlow stores one slice of a tensor.

    Args:
        name: the full tensor's key, as bytes.
        extents: ``(start, length)`` per dimension, ``length == -1`` for a
            full extent (its start as stored in the ``TensorSliceProto``).

    Returns:
        The OrderedCode key (``checkpoint::EncodeTensorNameSlice``).
    """
    extents = list(extents)
    parts = [_oc_num_increasing(0), _oc_string(name), _oc_num_increasing(len(extents))]
    for start, length in extents:
        parts.append(_oc_signed_num_increasing(start))
        parts.append(_oc_signed_num_increasing(length))
    return b"".join(parts)
