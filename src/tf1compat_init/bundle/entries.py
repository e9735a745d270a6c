"""The index's records: ``BundleHeaderProto`` and ``BundleEntryProto``, decoded.

:func:`.proto_fast.entry_fields` decodes the layout TensorFlow writes; the field walker
here decodes everything else or names what is wrong (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from . import proto as _proto
from .proto import WIRE_FIXED32, WIRE_LEN, WIRE_VARINT, ProtoDecodeError, expect_wire

__all__ = ["BundleEntry"]


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


class _RawEntry(NamedTuple):
    dtype: int
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    crc32c: int
    slices: tuple[tuple[tuple[int, int], ...], ...]


def _parse_shape(data: bytes, dims: list[int]) -> None:
    for field, wire, value in _proto.iter_fields(data):
        if field == 2:
            expect_wire(field, wire, WIRE_LEN)
            size = 0
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    expect_wire(f, w, WIRE_VARINT)
                    size = _proto.to_int64(v)
            dims.append(size)
        elif field == 3:
            expect_wire(field, wire, WIRE_VARINT)
            if value:
                raise ProtoDecodeError("the shape has unknown rank")


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


def _parse_entry_general(data: bytes) -> _RawEntry:
    """Any valid ``BundleEntryProto``, every field checked (``proto_fast`` is the quick path)."""
    dtype, shard_id, offset, size, crc = 0, 0, 0, 0, 0
    dims: list[int] = []
    slices = []
    for field, wire, value in _proto.iter_fields(data):
        if field == 1:
            expect_wire(field, wire, WIRE_VARINT)
            dtype = _proto.to_int32(value)
        elif field == 2:
            expect_wire(field, wire, WIRE_LEN)
            _parse_shape(value, dims)  # repeated occurrences merge, as in protobuf
        elif field == 3:
            expect_wire(field, wire, WIRE_VARINT)
            shard_id = _proto.to_int32(value)
        elif field == 4:
            expect_wire(field, wire, WIRE_VARINT)
            offset = _proto.to_int64(value)
        elif field == 5:
            expect_wire(field, wire, WIRE_VARINT)
            size = _proto.to_int64(value)
        elif field == 6:
            expect_wire(field, wire, WIRE_FIXED32)
            crc = value
        elif field == 7:
            expect_wire(field, wire, WIRE_LEN)
            slices.append(_parse_slice(value))
    return _RawEntry(dtype, tuple(dims), shard_id, offset, size, crc, tuple(slices))
