# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The index's records: ``BundleHeaderProto`` and ``BundleEntryProto``, decoded.

One decoder per message: :func:`parse_entry` walks an entry (one per tensor) in line;
the header (one per index) and the slices of a partitioned tensor go through
:func:`.proto.iter_fields`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from . import proto as _proto
from .proto import (
    WIRE_FIXED32,
    WIRE_LEN,
    WIRE_VARINT,
    ProtoDecodeError,
    decode_tag,
    decode_varint,
    expect_wire,
    read_len,
    read_value,
    to_int32,
    to_int64,
)

__all__ = ["BundleEntry", "RawEntry", "parse_entry"]


class BundleEntry(NamedTuple):
    """One tensor's metadata from the ``.index`` file (a named tuple: a checkpoint
    has one per tensor, and a tuple is the cheapest immutable record to build).

    Attributes:
        key: the checkpoint key.
        dtype: the TensorFlow dtype name (``"float32"``, ``"string"``, ...).
        shape: the full tensor's shape.
        shard_id: which data file holds the bytes (meaningless when sliced).
        offset: where the bytes start in that file.
        size: how many bytes.
        crc32c: the masked CRC32C as stored.
        slices: ``()`` for a whole tensor; for a partitioned tensor, one tuple
            per stored slice of ``(start, length)`` per dimension, with
            ``length == -1`` meaning the full dimension.
    """

    key: str
    dtype: str
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    crc32c: int
    slices: tuple


_BUNDLE_VERSION = 1  # kTensorBundleVersion: the consumer version we implement


@dataclass(frozen=True)
class _Header:
    num_shards: int
    big_endian: bool
    producer: int
    min_consumer: int
    bad_consumers: tuple[int, ...]


def _parse_header(data: bytes) -> _Header:
    num_shards, endianness = 0, 0
    producer, min_consumer, bad = 0, 0, []
    for field, wire, value in _proto.iter_fields(data):
        if field == 1:
            expect_wire(field, wire, WIRE_VARINT)
            num_shards = _proto.to_int32(value)
        elif field == 2:
            expect_wire(field, wire, WIRE_VARINT)
            endianness = _proto.to_int32(value)
        elif field == 3:
            expect_wire(field, wire, WIRE_LEN)
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    expect_wire(f, w, WIRE_VARINT)
                    producer = _proto.to_int32(v)
                elif f == 2:
                    expect_wire(f, w, WIRE_VARINT)
                    min_consumer = _proto.to_int32(v)
                elif f == 3 and w == WIRE_VARINT:
                    bad.append(_proto.to_int32(v))
                elif f == 3:  # packed repeated int32
                    expect_wire(f, w, WIRE_LEN)
                    p = 0
                    while p < len(v):
                        item, p = _proto.decode_varint(v, p)
                        bad.append(_proto.to_int32(item))
    return _Header(num_shards, endianness == 1, producer, min_consumer, tuple(bad))


def _parse_slice(data: bytes) -> tuple[tuple[int, int], ...]:
    extents = []
    for field, wire, value in _proto.iter_fields(data):
        if field == 1:
            expect_wire(field, wire, WIRE_LEN)
            start, length = 0, -1  # no length means the full extent
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    expect_wire(f, w, WIRE_VARINT)
                    start = _proto.to_int64(v)
                elif f == 2:
                    expect_wire(f, w, WIRE_VARINT)
                    length = _proto.to_int64(v)
            extents.append((start, length))
    return tuple(extents)


#: What :func:`parse_entry` returns: ``(dtype, shape, shard_id, offset, size, crc32c,
#: slices)``, with the dtype as TensorFlow's enum value; a plain tuple, since a
#: checkpoint has one per tensor.
RawEntry = tuple[int, tuple[int, ...], int, int, int, int, tuple[tuple[tuple[int, int], ...], ...]]

# The wire type each field of BundleEntryProto has.
_ENTRY_WIRES = (None, WIRE_VARINT, WIRE_LEN, WIRE_VARINT, WIRE_VARINT, WIRE_VARINT, WIRE_FIXED32)


def parse_entry(data: bytes) -> RawEntry:
    """Decodes one ``BundleEntryProto`` (with its ``TensorShapeProto``).

    The one decoder of this message. The layout TensorFlow writes (one-byte tags,
    fields in order, small varints) is walked in line, since an index has one entry
    per tensor; anything else (multi-byte tags, long or negative varints, unknown
    fields, fields repeated or out of order, slices) is decoded in the same walk
    through the primitives of :mod:`.proto`, and anything malformed raises there.
    Scalar fields that occur twice keep the last value and shapes that occur twice
    merge, as in ``protobuf``.

    Args:
        data: exactly the bytes of the message.

    Returns:
        ``(dtype, shape, shard_id, offset, size, crc32c, slices)``: the dtype as
        TensorFlow's enum value, ``shard_id`` as an int32, ``offset``, ``size`` and
        the dims as int64 (negative values are left to the caller to reject), and
        per slice one ``(start, length)`` per dimension (``length == -1``: all of it).

    Raises:
        ProtoDecodeError: the bytes are not a well-formed entry, or its shape has
            unknown rank (a checkpoint stores only fully defined shapes).
    """
    n = len(data)
    pos = 0
    dtype = shard_id = offset = size = crc = 0
    dims: list[int] = []
    slices: list[tuple[tuple[int, int], ...]] | None = None
    while pos < n:
        tag = data[pos]
        pos += 1
        if tag >= 0x80:
            tag, pos = decode_tag(data, pos - 1, n)
        if tag == 0x08:  # 1: dtype, an enum (int32)
            if pos < n and (v := data[pos]) < 0x80:
                pos += 1
            else:
                v, pos = decode_varint(data, pos, n)
                v = to_int32(v)
            dtype = v
        elif tag == 0x12:  # 2: shape, a TensorShapeProto
            if pos < n and (length := data[pos]) < 0x80 and length < n - pos:
                pos += 1
                end = pos + length
            else:
                pos, end = read_len(data, pos, n, 2)
            base = pos  # the shape starts here: positions in its errors count from it
            while pos < end:
                tag = data[pos]
                pos += 1
                if tag >= 0x80:
                    tag, pos = decode_tag(data, pos - 1, end, base)
                if tag == 0x12:  # TensorShapeProto 2: dim, a Dim
                    if pos < end and (length := data[pos]) < 0x80 and length < end - pos:
                        pos += 1
                        dim_end = pos + length
                    else:
                        pos, dim_end = read_len(data, pos, end, 2, base)
                    dim_base = pos
                    dim = 0
                    while pos < dim_end:
                        tag = data[pos]
                        pos += 1
                        if tag == 0x08:  # Dim 1: size, an int64
                            if pos < dim_end and (v := data[pos]) < 0x80:
                                pos += 1
                            else:
                                v, pos = decode_varint(data, pos, dim_end, dim_base)
                                if v >= 1 << 63:
                                    v -= 1 << 64
                            dim = v
                        else:  # Dim 2: name (skipped), an unknown field, a longer tag
                            if tag >= 0x80:
                                tag, pos = decode_tag(data, pos - 1, dim_end, dim_base)
                            v, pos = read_value(data, pos, dim_end, tag, dim_base)
                            if tag >> 3 == 1:
                                expect_wire(1, tag & 7, WIRE_VARINT)
                                dim = to_int64(v)  # type: ignore[arg-type]
                    dims.append(dim)
                elif tag == 0x18:  # TensorShapeProto 3: unknown_rank, a bool
                    v, pos = decode_varint(data, pos, end, base)
                    if v:
                        raise ProtoDecodeError("the shape has unknown rank")
                else:
                    _, pos = read_value(data, pos, end, tag, base)
                    if tag >> 3 == 2:
                        expect_wire(2, tag & 7, WIRE_LEN)
                    elif tag >> 3 == 3:
                        expect_wire(3, tag & 7, WIRE_VARINT)
        elif tag == 0x20:  # 4: offset, an int64
            if pos < n and (v := data[pos]) < 0x80:
                pos += 1
            else:
                v, pos = decode_varint(data, pos, n)
                if v >= 1 << 63:
                    v -= 1 << 64
            offset = v
        elif tag == 0x28:  # 5: size, an int64
            if pos < n and (v := data[pos]) < 0x80:
                pos += 1
            else:
                v, pos = decode_varint(data, pos, n)
                if v >= 1 << 63:
                    v -= 1 << 64
            size = v
        elif tag == 0x35:  # 6: crc32c, a fixed32
            if n - pos < 4:
                raise ProtoDecodeError("field 6: truncated fixed32")
            crc = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        elif tag == 0x18:  # 3: shard_id, an int32
            if pos < n and (v := data[pos]) < 0x80:
                pos += 1
            else:
                v, pos = decode_varint(data, pos, n)
                v = to_int32(v)
            shard_id = v
        else:  # 7: slices; a known field with another wire type; an unknown field
            value, pos = read_value(data, pos, n, tag)
            field = tag >> 3
            if field == 7:
                expect_wire(7, tag & 7, WIRE_LEN)
                if slices is None:
                    slices = []
                slices.append(_parse_slice(value))  # type: ignore[arg-type]
            elif field < 7:  # its own tag was handled above: this is the wrong wire type
                expect_wire(field, tag & 7, _ENTRY_WIRES[field])  # type: ignore[arg-type]
    return dtype, tuple(dims), shard_id, offset, size, crc, tuple(slices) if slices else ()
