"""Inline decoders for the two messages a checkpoint holds thousands of.

An index has one ``BundleEntryProto`` per tensor, and an object-based checkpoint's
graph one ``TrackableObject`` per variable. The general decoders (in ``entries`` and ``objects``)
walk fields through a generator and a function call per varint: about 15 µs per
tensor, which for a model of thousands of small tensors costs more than reading
their bytes. These decoders handle the layout TensorFlow writes, with the varints
decoded in line, and return ``None`` for anything else (a field they do not know,
a long or negative varint, truncation); the caller then uses the general decoder,
which gives the same result for valid input and a precise error for bad input.
So they are an optimisation only: whatever they accept, the general decoder
decodes to the same values (``tests/test_bundle.py`` checks both on every input).
"""

from __future__ import annotations

from typing import Any

from .proto import to_str

__all__ = ["entry_fields", "trackable_object_fields"]

# Tags (field number << 3 | wire type) of BundleEntryProto.
_DTYPE, _SHAPE, _SHARD, _OFFSET, _SIZE, _CRC = 0x08, 0x12, 0x18, 0x20, 0x28, 0x35
_VARINT_TAGS = {_DTYPE: 0, _SHARD: 1, _OFFSET: 2, _SIZE: 3}
# TensorShapeProto: dim = 2 (LEN); Dim: size = 1 (varint).
_DIM, _DIM_SIZE = 0x12, 0x08

_I31 = 1 << 31
_I63 = 1 << 63


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A varint of 2 to 9 bytes starting at ``pos``; (-1, pos) if longer or cut off."""
    value = 0
    shift = 0
    n = len(data)
    while pos < n and shift < 63:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    return -1, pos


def entry_fields(data: bytes) -> tuple[int, tuple[int, ...], int, int, int, int] | None:
    """``(dtype, shape, shard_id, offset, size, crc32c)`` of a whole-tensor entry, or None.

    None means "not the common layout": slices, a dim name, an unknown rank or
    field, a negative or over-long varint, or bytes that end early.
    """
    n = len(data)
    pos = 0
    ints = [0, 0, 0, 0]  # dtype, shard_id, offset, size
    crc = 0
    dims: list[int] = []
    try:
        while pos < n:
            tag = data[pos]
            pos += 1
            slot = _VARINT_TAGS.get(tag)
            if slot is not None:
                v = data[pos]
                pos += 1
                if v >= 0x80:
                    v, pos = _varint(data, pos - 1)
                    if v < 0:
                        return None
                ints[slot] = v
            elif tag == _CRC:
                if pos + 4 > n:
                    return None
                crc = int.from_bytes(data[pos : pos + 4], "little")
                pos += 4
            elif tag == _SHAPE:
                length = data[pos]
                pos += 1
                if length >= 0x80:
                    length, pos = _varint(data, pos - 1)
                    if length < 0:
                        return None
                end = pos + length
                if end > n:
                    return None
                while pos < end:
                    if data[pos] != _DIM:
                        return None  # unknown_rank, or something else
                    dim_len = data[pos + 1]
                    pos += 2
                    if dim_len >= 0x80:
                        return None
                    dim_end = pos + dim_len
                    if dim_end > end:
                        return None
                    size = 0
                    while pos < dim_end:
                        if data[pos] != _DIM_SIZE:
                            return None  # a dim name
                        v = data[pos + 1]
                        pos += 2
                        if v >= 0x80:
                            v, pos = _varint(data, pos - 1)
                            if v < 0:
                                return None
                        size = v
                    if pos != dim_end:
                        return None
                    dims.append(size)
            else:
                return None
    except IndexError:
        return None
    dtype, shard_id, offset, size = ints
    if dtype >= _I31 or shard_id >= _I31 or offset >= _I63 or size >= _I63:
        return None  # negative values: the general decoder reinterprets them
    return dtype, tuple(dims), shard_id, offset, size, crc


# TrackableObject: children = 1, attributes = 2 (both LEN); ObjectReference:
# node_id = 1 (varint), local_name = 2; SerializedTensor: name = 1, full_name = 2,
# checkpoint_key = 3 (all LEN).
_CHILD, _ATTRIBUTE = 0x0A, 0x12
_SLOTS_FIELD = 3


def trackable_object_fields(
    data: bytes,
) -> tuple[list[tuple[int, str]], list[tuple[str, str, str]]] | None:
    """``(children, attributes)`` of a ``TrackableObject`` without slot variables, or None.

    ``children`` are ``(node_id, local_name)``; ``attributes`` are ``(name, full_name,
    checkpoint_key)``. Other fields the general decoder skips (a registered saver,
    ``has_checkpoint_values``) are skipped here too; slot variables and anything
    unusual give None.
    """
    n = len(data)
    pos = 0
    children: list[tuple[int, str]] = []
    attributes: list[tuple[str, str, str]] = []
    try:
        while pos < n:
            tag = data[pos]
            length = data[pos + 1]
            pos += 2
            if tag >= 0x80 or tag < 0x08:
                return None  # field 0 (invalid), or above 15 (not one TensorFlow writes)
            if length >= 0x80:
                length, pos = _varint(data, pos - 1)
                if length < 0:
                    return None
            end = pos + length
            if end > n or tag & 7 != 2:
                return None
            if tag == _CHILD:
                node_id, name = 0, b""
                while pos < end:
                    t = data[pos]
                    v = data[pos + 1]
                    pos += 2
                    if v >= 0x80:
                        v, pos = _varint(data, pos - 1)
                        if v < 0:
                            return None
                    if t == 0x08:
                        if v >= _I31:
                            return None
                        node_id = v
                    elif t == 0x12:
                        if pos + v > end:
                            return None
                        name = data[pos : pos + v]
                        pos += v
                    else:
                        return None
                if pos != end:
                    return None
                children.append((node_id, to_str(name)))
            elif tag == _ATTRIBUTE:
                strings: list[Any] = [b"", b"", b""]
                while pos < end:
                    t = data[pos]
                    v = data[pos + 1]
                    pos += 2
                    if v >= 0x80:
                        v, pos = _varint(data, pos - 1)
                        if v < 0:
                            return None
                    if t not in (0x0A, 0x12, 0x1A) or pos + v > end:
                        return None
                    strings[(t >> 3) - 1] = data[pos : pos + v]
                    pos += v
                if pos != end:
                    return None
                attributes.append((to_str(strings[0]), to_str(strings[1]), to_str(strings[2])))
            elif tag >> 3 == _SLOTS_FIELD:
                return None
            else:
                pos = end  # a field the general decoder skips as well
    except IndexError:
        return None
    return children, attributes
