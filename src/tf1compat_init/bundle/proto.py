# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The protocol buffer wire format: the primitives every message decoder here is built on.

Only what the checkpoint reader needs: varints, fixed32/fixed64 and length-delimited
fields. Depending on the ``protobuf`` package (or on TensorFlow's generated classes)
would tie the reader to a particular protobuf runtime; the handful of messages in a
tensor bundle index are simple enough to decode by hand (the measurements behind that
are in the package docstring).

Each message has one decoder (``entries``, ``objects``). The hot ones walk their bytes
in line and call :func:`decode_tag`, :func:`decode_varint` and :func:`read_value` for
whatever is not a one-byte tag or varint; the rest use :func:`iter_fields`. Both report
positions relative to the message being decoded, so an error reads the same whichever
way a message was walked.

Every malformation raises :class:`ProtoDecodeError` instead of an ``IndexError`` or a
silently short value, so callers can turn it into a domain error that names the file.
Bytes that ``protobuf``'s parser rejects are rejected here too (``tests/bundle/test_bundle_protobuf.py``
holds the decoders to it), tags and lengths that are not varint32s included, except in
what a decoder does not read: strings that are not UTF-8 are kept (see :func:`to_str`)
and fields no caller uses are skipped unparsed. A few things ``protobuf`` accepts are
errors here, never silently different values: a known field with another wire type
(``protobuf`` keeps it as an unknown field), groups, and varints over 64 bits.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = [
    "ProtoDecodeError",
    "WIRE_VARINT",
    "WIRE_FIXED64",
    "WIRE_LEN",
    "WIRE_FIXED32",
    "decode_tag",
    "decode_varint",
    "expect_wire",
    "iter_fields",
    "read_len",
    "read_value",
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
_MAX_SHIFT = 7 * _MAX_VARINT_BYTES
_U64 = (1 << 64) - 1
_U32 = (1 << 32) - 1


class ProtoDecodeError(ValueError):
    """The bytes are not a well-formed protocol buffer message."""


def decode_varint(
    buf: bytes | memoryview, pos: int, limit: int | None = None, base: int = 0
) -> tuple[int, int]:
    """Decodes one base-128 varint.

    Args:
        buf: the bytes to read from.
        pos: where the varint starts.
        limit: one past the last byte that may be read (``len(buf)`` if None).
        base: where the enclosing message starts in ``buf``; errors give positions
            relative to it.

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
        result = b & 0x7F
        shift = 7
        p = pos + 1  # a loop for the rest: TensorFlow writes offsets and sizes of 2-5 bytes
        while p < end:
            b = buf[p]
            p += 1
            if b < 0x80:
                if shift == 63 and b > 1:
                    raise ProtoDecodeError(f"varint at byte {pos - base} overflows 64 bits")
                return result | b << shift, p
            result |= (b & 0x7F) << shift
            shift += 7
            if shift == _MAX_SHIFT:
                raise ProtoDecodeError(
                    f"varint at byte {pos - base} is longer than {_MAX_VARINT_BYTES} bytes"
                )
    raise ProtoDecodeError(f"truncated varint at byte {pos - base}")


def decode_tag(buf: bytes, pos: int, end: int, base: int = 0) -> tuple[int, int]:
    """Decodes a field's tag (``field_number << 3 | wire_type``).

    Args:
        buf: the bytes to read from.
        pos: where the tag starts.
        end: one past the last byte of the enclosing message.
        base: where the enclosing message starts (for error positions).

    Returns:
        ``(tag, new_pos)``.

    Raises:
        ProtoDecodeError: a bad varint, or not a 32-bit varint of at most 5 bytes
            (as ``protobuf`` requires).
    """
    tag, new_pos = decode_varint(buf, pos, end, base)
    if tag > _U32 or new_pos - pos > 5:
        raise ProtoDecodeError(f"tag at byte {pos - base} is not a varint32")
    return tag, new_pos


def read_len(buf: bytes, pos: int, end: int, field: int, base: int = 0) -> tuple[int, int]:
    """Reads the length prefix of a length-delimited field.

    Args:
        buf: the bytes to read from.
        pos: where the length starts.
        end: one past the last byte of the enclosing message.
        field: the field number (for error messages).
        base: where the enclosing message starts (for error positions and its size).

    Returns:
        ``(start, stop)``: where the field's bytes are in ``buf``.

    Raises:
        ProtoDecodeError: a bad varint, one of more than 5 bytes (as ``protobuf``
            requires), or a length that runs past ``end``.
    """
    length, start = decode_varint(buf, pos, end, base)
    if start - pos > 5:
        raise ProtoDecodeError(f"field {field}: the length at byte {pos - base} is not a varint32")
    if length > end - start:
        raise ProtoDecodeError(
            f"field {field}: length {length} runs past the end of a {end - base}-byte message"
        )
    return start, start + length


def read_value(buf: bytes, pos: int, end: int, tag: int, base: int = 0) -> tuple[int | bytes, int]:
    """Reads the value of a field whose tag ends at ``pos``.

    Args:
        buf: the bytes to read from.
        pos: where the value starts.
        end: one past the last byte of the enclosing message.
        tag: the field's tag (``field_number << 3 | wire_type``).
        base: where the enclosing message starts (for error positions and its size).

    Returns:
        ``(value, new_pos)``: an ``int`` for varint and fixed fields (unsigned), ``bytes``
        for length-delimited ones.

    Raises:
        ProtoDecodeError: the field number is 0, the value runs past ``end``, or the
            wire type is a group or undefined.
    """
    field, wire = tag >> 3, tag & 7
    if not field:
        raise ProtoDecodeError("field number 0 is invalid")
    if wire == WIRE_VARINT:
        return decode_varint(buf, pos, end, base)
    if wire == WIRE_LEN:
        start, stop = read_len(buf, pos, end, field, base)
        return buf[start:stop], stop
    if wire == WIRE_FIXED32:
        if end - pos < 4:
            raise ProtoDecodeError(f"field {field}: truncated fixed32")
        return int.from_bytes(buf[pos : pos + 4], "little"), pos + 4
    if wire == WIRE_FIXED64:
        if end - pos < 8:
            raise ProtoDecodeError(f"field {field}: truncated fixed64")
        return int.from_bytes(buf[pos : pos + 8], "little"), pos + 8
    raise ProtoDecodeError(f"field {field}: unsupported wire type {wire}")


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
    """Walks the top-level fields of one serialized message (for messages read once).

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
        tag = data[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = decode_tag(data, pos, end)
        value, pos = read_value(data, pos, end, tag)
        yield tag >> 3, tag & 7, value


def expect_wire(field: int, wire: int, expected: int) -> None:
    """Raises :class:`ProtoDecodeError` unless field ``field`` has wire type ``expected``."""
    if wire != expected:
        raise ProtoDecodeError(f"field {field} has wire type {wire}, expected {expected}")
