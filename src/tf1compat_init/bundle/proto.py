"""A tiny, strict decoder for the protocol buffer wire format.

Only what the checkpoint reader needs: varints, fixed32/fixed64 and
length-delimited fields, walked one message at a time.  Depending on the
``protobuf`` package (or on TensorFlow's generated classes) would tie the
reader to a particular protobuf runtime; the handful of messages in a tensor
bundle index are simple enough to decode by hand.

Every malformation raises :class:`ProtoDecodeError` instead of an
``IndexError`` or a silently short value, so callers can turn it into a
domain error that names the file.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = [
    "ProtoDecodeError",
    "WIRE_VARINT",
    "WIRE_FIXED64",
    "WIRE_LEN",
    "WIRE_FIXED32",
    "decode_varint",
    "expect_wire",
    "iter_fields",
    "to_int32",
    "to_int64",
    "to_str",
]

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_LEN = 2
WIRE_FIXED32 = 5
# Groups (3, 4) are deprecated and never used by the messages we read.

_MAX_VARINT_BYTES = 10
_U64 = (1 << 64) - 1


class ProtoDecodeError(ValueError):
    """The bytes are not a well-formed protocol buffer message."""


def decode_varint(buf: bytes | memoryview, pos: int, limit: int | None = None) -> tuple[int, int]:
    """Decodes one base-128 varint.

    Args:
        buf: the bytes to read from.
        pos: where the varint starts.
        limit: one past the last byte that may be read (``len(buf)`` if None).

    Returns:
        ``(value, new_pos)``; the value is unsigned, at most 64 bits.

    Raises:
        ProtoDecodeError: the varint runs past ``limit``, is longer than
            10 bytes, or does not fit in 64 bits.
    """
    end = len(buf) if limit is None else limit
    if pos < end:
        b = buf[pos]
        if b < 0x80:  # most varints in an index are one byte
            return b, pos + 1
    result = 0
    shift = 0
    for i in range(_MAX_VARINT_BYTES):
        p = pos + i
        if p >= end:
            raise ProtoDecodeError(f"truncated varint at byte {pos}")
        b = buf[p]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result > _U64:
                raise ProtoDecodeError(f"varint at byte {pos} overflows 64 bits")
            return result, p + 1
        shift += 7
    raise ProtoDecodeError(f"varint at byte {pos} is longer than {_MAX_VARINT_BYTES} bytes")


def to_int64(value: int) -> int:
    """Reinterprets an unsigned 64-bit varint value as a two's-complement int64."""
    return value - (1 << 64) if value >= 1 << 63 else value


def to_int32(value: int) -> int:
    """Reinterprets a varint value as an int32, as protobuf parsers do.

    Negative int32s are sign-extended to 10-byte varints on the wire, and
    parsers keep only the low 32 bits.
    """
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def to_str(value: bytes) -> str:
    """A ``string`` field as text. Bytes that are not UTF-8 (TensorFlow does not check
    its keys) are kept as surrogates, so every key round-trips to the same bytes."""
    return value.decode("utf-8", "surrogateescape")


def iter_fields(buf: bytes | memoryview) -> Iterator[tuple[int, int, int | bytes]]:
    """Walks the top-level fields of one serialized message.

    Args:
        buf: exactly the bytes of the message.

    Yields:
        ``(field_number, wire_type, value)``: an ``int`` for varint and
        fixed fields (unsigned), ``bytes`` for length-delimited ones.

    Raises:
        ProtoDecodeError: on a bad tag, an unsupported wire type, or a field
            that runs past the end of ``buf``.
    """
    data = buf if isinstance(buf, bytes) else bytes(buf)
    pos = 0
    end = len(data)
    while pos < end:
        tag, pos = decode_varint(data, pos, end)
        field, wire = tag >> 3, tag & 7
        if field == 0:
            raise ProtoDecodeError("field number 0 is invalid")
        if wire == WIRE_VARINT:
            value, pos = decode_varint(data, pos, end)
            yield field, wire, value
        elif wire == WIRE_LEN:
            length, pos = decode_varint(data, pos, end)
            if length > end - pos:
                raise ProtoDecodeError(
                    f"field {field}: length {length} runs past the end of a {end}-byte message"
                )
            yield field, wire, data[pos : pos + length]
            pos += length
        elif wire == WIRE_FIXED32:
            if end - pos < 4:
                raise ProtoDecodeError(f"field {field}: truncated fixed32")
            yield field, wire, int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        elif wire == WIRE_FIXED64:
            if end - pos < 8:
                raise ProtoDecodeError(f"field {field}: truncated fixed64")
            yield field, wire, int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        else:
            raise ProtoDecodeError(f"field {field}: unsupported wire type {wire}")


def expect_wire(field: int, wire: int, expected: int) -> None:
    """Raises :class:`ProtoDecodeError` unless field ``field`` has wire type ``expected``."""
    if wire != expected:
        raise ProtoDecodeError(f"field {field} has wire type {wire}, expected {expected}")
