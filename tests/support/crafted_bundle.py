"""A minimal tensor-bundle writer, for crafted indexes and entries.

It follows the same format as TensorFlow's BundleWriter + TableBuilder; the differential tests
of ``tests/bundle/`` are what prove the reader right on TensorFlow's own files. Used where a
test needs bytes TensorFlow never writes (bad entries, bogus shapes, unknown compression).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from tf1compat_init.bundle.crc import crc32c, mask_crc

DT = {"float32": 1, "float64": 2, "int32": 3, "string": 7, "int64": 9, "variant": 21}


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _f_varint(field: int, v: int) -> bytes:
    return _varint(field << 3) + _varint(v)


def _f_len(field: int, b: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(b)) + b


def _f_fixed32(field: int, v: int) -> bytes:
    return _varint(field << 3 | 5) + struct.pack("<I", v)


def entry_proto(dtype, shape, shard_id=0, offset=0, size=0, crc=0, slices=()) -> bytes:
    shape_b = b"".join(_f_len(2, _f_varint(1, d)) for d in shape)
    out = _f_varint(1, DT.get(dtype, dtype)) + _f_len(2, shape_b)
    out += _f_varint(3, shard_id) + _f_varint(4, offset) + _f_varint(5, size) + _f_fixed32(6, crc)
    for extents in slices:
        ext = b"".join(
            _f_len(1, _f_varint(1, s) + (_f_varint(2, n) if n >= 0 else b"")) for s, n in extents
        )
        out += _f_len(7, ext)
    return out


def header_proto(num_shards=1, big_endian=False, producer=1, min_consumer=0) -> bytes:
    version = _f_varint(1, producer) + _f_varint(2, min_consumer)
    return _f_varint(1, num_shards) + _f_varint(2, int(big_endian)) + _f_len(3, version)


def _block(items, restart_interval=4) -> bytes:
    out, restarts, prev = bytearray(), [], b""
    for i, (k, v) in enumerate(items):
        shared = 0
        if i % restart_interval:
            while shared < min(len(k), len(prev)) and k[shared] == prev[shared]:
                shared += 1
        else:
            restarts.append(len(out))
        out += _varint(shared) + _varint(len(k) - shared) + _varint(len(v))
        out += k[shared:] + v
        prev = k
    restarts = restarts or [0]
    return (
        bytes(out) + struct.pack(f"<{len(restarts)}I", *restarts) + struct.pack("<I", len(restarts))
    )


def _with_trailer(block: bytes, ctype: int = 0) -> bytes:
    return block + bytes([ctype]) + struct.pack("<I", mask_crc(crc32c(block + bytes([ctype]))))


def table_bytes(items, per_block=3, ctype=0) -> bytes:
    """A table of (key, value) byte pairs, in the order given."""
    out, index = bytearray(), []
    for i in range(0, max(len(items), 1), per_block):
        chunk = items[i : i + per_block]
        block = _block(chunk)
        index.append((chunk[-1][0] if chunk else b"", _varint(len(out)) + _varint(len(block))))
        out += _with_trailer(block, ctype)
    meta = _block([])
    meta_handle = _varint(len(out)) + _varint(len(meta))
    out += _with_trailer(meta)
    index_block = _block(index, restart_interval=1)
    index_handle = _varint(len(out)) + _varint(len(index_block))
    out += _with_trailer(index_block)
    footer = (meta_handle + index_handle).ljust(40, b"\x00") + struct.pack("<Q", 0xDB4775248B80FB57)
    return bytes(out) + footer


def write_bundle(prefix, tensors, *, header=None, extra=(), num_shards=1, ctype=0) -> None:
    """Writes numeric numpy tensors to shard 0, plus raw (key, entry-proto) extras."""
    data = bytearray()
    items = []
    for key, arr in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()
        dtype = {np.dtype("<f4"): "float32", np.dtype("<f8"): "float64", np.dtype("<i8"): "int64"}
        proto = entry_proto(
            dtype[arr.dtype], arr.shape, 0, len(data), len(raw), mask_crc(crc32c(raw))
        )
        items.append((key.encode(), proto))
        data += raw
    items.extend(extra)
    items.sort()
    items.insert(0, (b"", header if header is not None else header_proto(num_shards)))
    Path(f"{prefix}.index").write_bytes(table_bytes(items, ctype=ctype))
    Path(f"{prefix}.data-00000-of-{num_shards:05d}").write_bytes(bytes(data))


# -- For the decoders' tests: ids and overlong tags. --------------------------------------

NEG1 = (1 << 64) - 1  # -1 as a varint: 10 bytes


def _id(data: bytes) -> str:
    return data.hex()[:24] or "empty"


def _overlong(field: int, wire: int, size: int) -> bytes:
    """A tag in ``size`` bytes (valid up to 5)."""
    tag = _varint(field << 3 | wire)
    return tag[:-1] + bytes([tag[-1] | 0x80]) + b"\x80" * (size - len(tag) - 1) + b"\x00"
