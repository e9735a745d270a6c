# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""A streaming writer of TensorFlow's name-based tensor bundle checkpoints, without TensorFlow.

The writer produces what ``tf.compat.v1.train.Saver`` (format V2) produces: one data
shard ``prefix.data-00000-of-00001`` holding each tensor's bytes back to back, and
``prefix.index``, an uncompressed LevelDB-style table whose first entry (empty key) is a
``BundleHeaderProto`` and whose other entries are ``BundleEntryProto``s in bytewise key
order (``core/util/tensor_bundle/tensor_bundle.cc``, ``core/lib/io/table_builder.cc``).

Tensors are appended one at a time, so memory stays at one tensor plus the index; the
index is built from small per-key records when :meth:`BundleWriter.finish` is called.
The layout choices (block size, restart intervals, separators, header fields) follow
TensorFlow's, so the ``.index`` of the same tensors written in the same order is the
same file TensorFlow writes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UnsupportedCheckpointError
from . import storage as _storage
from .crc import crc32c, mask_crc
from .dtypes import _DTYPE_NAMES, numpy_dtype

__all__ = ["BundleWriter", "dtype_enum"]

_DTYPE_ENUMS = {name: number for number, name in _DTYPE_NAMES.items()}
# Types whose values are not plain bytes (or are handles): never written.
_UNWRITABLE = frozenset({"resource", "variant"})

# TensorFlow's table options (core/lib/io/table_options.h) and bundle constants.
_BLOCK_SIZE = 262144
_RESTART_INTERVAL = 16
_TABLE_MAGIC = 0xDB4775248B80FB57
_BUNDLE_VERSION = 1
_U32 = 0xFFFFFFFF


def dtype_enum(tf_dtype_name: str) -> int:
    """TensorFlow's ``DataType`` number for a dtype name such as ``"float32"``.

    Raises:
        UnsupportedCheckpointError: the dtype cannot be stored by this writer.
    """
    number = _DTYPE_ENUMS.get(tf_dtype_name)
    if number is None or tf_dtype_name in _UNWRITABLE:
        raise UnsupportedCheckpointError(
            f"cannot write dtype {tf_dtype_name!r} to a checkpoint (no plain byte layout)"
        )
    return number


# -- protocol buffer encoding (the few messages of a bundle index) --------------------------


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 fields encode negatives as 10-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field_varint(number: int, value: int) -> bytes:
    # proto3: a zero scalar is not serialized
    return _varint(number << 3) + _varint(value) if value else b""


def _field_bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _shape_proto(shape: Iterable[int]) -> bytes:
    return b"".join(_field_bytes(2, _field_varint(1, int(d))) for d in shape)


def _entry_proto(dtype: int, shape: tuple[int, ...], offset: int, size: int, crc: int) -> bytes:
    # BundleEntryProto: dtype=1, shape=2, shard_id=3 (always 0 here), offset=4, size=5,
    # crc32c=6 (fixed32, masked).
    out = _field_varint(1, dtype) + _field_bytes(2, _shape_proto(shape))
    out += _field_varint(4, offset) + _field_varint(5, size)
    if crc:
        out += _varint(6 << 3 | 5) + struct.pack("<I", crc)
    return out


def _header_proto(num_shards: int) -> bytes:
    # BundleHeaderProto: num_shards=1, endianness=2 (LITTLE = 0, omitted), version=3
    # (VersionDef producer=1; min_consumer 0 omitted).
    return _field_varint(1, num_shards) + _field_bytes(3, _field_varint(1, _BUNDLE_VERSION))


# -- the LevelDB table of the .index file ----------------------------------------------------


class _BlockBuilder:
    """Prefix-compressed key/value entries with restart points (``block_builder.cc``)."""

    def __init__(self, restart_interval: int) -> None:
        self.interval = restart_interval
        self.reset()

    def reset(self) -> None:
        self.buf = bytearray()
        self.restarts = [0]
        self.counter = 0
        self.last_key = b""

    @property
    def empty(self) -> bool:
        return not self.buf

    def size_estimate(self) -> int:
        return len(self.buf) + 4 * len(self.restarts) + 4

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.counter < self.interval:
            limit = min(len(key), len(self.last_key))
            while shared < limit and key[shared] == self.last_key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buf))
            self.counter = 0
        self.buf += _varint(shared) + _varint(len(key) - shared) + _varint(len(value))
        self.buf += key[shared:] + value
        self.last_key = key
        self.counter += 1

    def finish(self) -> bytes:
        tail = b"".join(struct.pack("<I", r) for r in self.restarts)
        return bytes(self.buf) + tail + struct.pack("<I", len(self.restarts))


def _shortest_separator(start: bytes, limit: bytes) -> bytes:
    n = min(len(start), len(limit))
    i = 0
    while i < n and start[i] == limit[i]:
        i += 1
    if i < n and start[i] < 0xFF and start[i] + 1 < limit[i]:
        return start[:i] + bytes([start[i] + 1])
    return start


def _short_successor(key: bytes) -> bytes:
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


def _handle(offset: int, size: int) -> bytes:
    return _varint(offset) + _varint(size)


def build_table(items: Iterable[tuple[bytes, bytes]]) -> bytes:
    """Serializes sorted ``(key, value)`` pairs as an uncompressed table (``table_builder.cc``).

    Args:
        items: pairs in strictly increasing bytewise key order.

    Returns:
        The file's bytes.
    """
    out = bytearray()
    data = _BlockBuilder(_RESTART_INTERVAL)
    index = _BlockBuilder(1)
    pending: bytes | None = None  # the handle of a written block awaiting its index key
    last_key = b""
    count = 0

    def write_block(block: _BlockBuilder) -> bytes:
        contents = block.finish()
        handle = _handle(len(out), len(contents))
        out.extend(contents)
        crc = crc32c(b"\x00", crc32c(contents))  # covers the compression-type byte too
        out.extend(b"\x00" + struct.pack("<I", mask_crc(crc)))
        block.reset()
        return handle

    def flush() -> None:
        nonlocal pending
        if not data.empty:
            pending = write_block(data)

    for key, value in items:
        if count and key <= last_key:
            raise ValueError(f"table keys must increase: {key!r} after {last_key!r}")
        if count and len(key) + len(value) >= 2 * _BLOCK_SIZE:
            flush()
        if pending is not None:
            index.add(_shortest_separator(last_key, key), pending)
            pending = None
        last_key = key
        count += 1
        data.add(key, value)
        if data.size_estimate() >= _BLOCK_SIZE:
            flush()
    flush()
    meta_handle = write_block(_BlockBuilder(_RESTART_INTERVAL))
    if pending is not None:
        index.add(_short_successor(last_key), pending)
    index_handle = write_block(index)
    footer = (meta_handle + index_handle).ljust(40, b"\x00")
    footer += struct.pack("<II", _TABLE_MAGIC & _U32, _TABLE_MAGIC >> 32)
    out.extend(footer)
    return bytes(out)


# -- the writer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Written:
    dtype: int
    shape: tuple[int, ...]
    offset: int
    size: int
    crc: int  # masked


def _string_payload(values: np.ndarray) -> tuple[list[bytes], int]:
    # On disk: [varint64 len]... [masked crc of the lengths] [bytes]...; the tensor's crc
    # covers the lengths (as uint32 when they fit, else uint64), the length checksum and
    # the bytes (WriteStringTensor in tensor_bundle.cc).
    items = []
    for v in values.reshape(-1):
        if isinstance(v, str):
            v = v.encode("utf-8")
        elif not isinstance(v, bytes | bytearray | np.bytes_):
            raise TypeError(f"a string tensor holds bytes or str, got {type(v).__name__}")
        items.append(bytes(v))
    crc = 0
    lengths = bytearray()
    for item in items:
        n = len(item)
        lengths += _varint(n)
        crc = crc32c(struct.pack("<I", n) if n <= _U32 else struct.pack("<Q", n), crc)
    length_crc = struct.pack("<I", mask_crc(crc))
    crc = crc32c(length_crc, crc)
    chunks = [bytes(lengths), length_crc]
    for item in items:
        crc = crc32c(item, crc) if item else crc
        chunks.append(item)
    return chunks, crc


class BundleWriter:
    """Writes one single-shard name-based checkpoint, one tensor at a time.

    Args:
        prefix: the checkpoint prefix to write; ``prefix.index`` and
            ``prefix.data-00000-of-00001`` must not exist yet (they are created
            exclusively, so two writers never share files).
        index_path: write the index to this file instead of ``prefix.index`` (a
            temporary output that no loader may take for a checkpoint).
        sync: ``fsync`` the data and the index in :meth:`finish`. ``False`` leaves that
            to the caller (migrate syncs while it reads the output back).

    Example:
        >>> with BundleWriter("/tmp/out/model.ckpt") as w:  # doctest: +SKIP
        ...     w.add("dense/kernel", kernel, "float32")
    """

    def __init__(
        self, prefix: str | os.PathLike, *, index_path: str | None = None, sync: bool = True
    ) -> None:
        self.prefix = os.fspath(prefix)
        self._sync = sync
        self.data_path = f"{self.prefix}.data-00000-of-00001"
        self.index_path = index_path if index_path is not None else f"{self.prefix}.index"
        if _storage.exists(self.index_path):
            raise FileExistsError(f"{self.index_path} already exists")
        self._file: Any = _storage.open_exclusive(self.data_path)  # closed in finish/abort
        self._entries: dict[str, _Written] = {}
        self._size = 0
        self._done = False

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.abort()

    @property
    def bytes_written(self) -> int:
        """Bytes appended to the data shard so far."""
        return self._size

    def _check_new_key(self, key: str) -> None:
        if self._done:
            raise ValueError("the bundle is already finished")
        if not key:
            raise ValueError("a checkpoint key may not be empty (it is the header's key)")
        if key in self._entries:
            raise ValueError(f"duplicate checkpoint key {key!r}")

    def add(self, key: str, value: Any, dtype: str | None = None) -> int:
        """Appends one tensor; returns the CRC32C recorded for it (of its stored bytes,
        for a fixed-width tensor).

        Args:
            key: the checkpoint key (unique in this bundle).
            value: a numpy array (or anything ``numpy.asarray`` accepts); strings as
                an object array of ``bytes``/``str``.
            dtype: the TensorFlow dtype name to record; inferred from ``value`` when
                omitted. Given, it must match how the native reader returns that dtype
                (``bfloat16`` as an ``ml_dtypes`` array, quantized types as their
                storage integers).

        Raises:
            ValueError: a duplicate key, or a value whose dtype does not fit ``dtype``.
            UnsupportedCheckpointError: a dtype with no byte layout (resource, variant).
        """
        self._check_new_key(key)
        arr = np.asarray(value)
        name = dtype if dtype is not None else _infer_dtype(arr)
        number = dtype_enum(name)
        shape = tuple(int(d) for d in arr.shape)
        offset = self._size
        if name == "string":
            chunks, crc = _string_payload(arr)
            size = 0
            for chunk in chunks:
                self._file.write(chunk)
                size += len(chunk)
        else:
            expected = numpy_dtype(name)
            if arr.dtype != expected:
                if arr.dtype.kind == expected.kind and arr.dtype.itemsize == expected.itemsize:
                    arr = arr.astype(expected)  # byte order only
                else:
                    raise ValueError(
                        f"value for {key!r} is {arr.dtype}, which is not how dtype {name} is "
                        f"stored ({expected})"
                    )
            flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
            self._file.write(memoryview(flat))
            size = int(flat.size)
            crc = crc32c(flat)
        self._size += size
        self._entries[key] = _Written(number, shape, offset, size, mask_crc(crc))
        return crc

    def add_raw(
        self,
        key: str,
        dtype: str,
        shape: Iterable[int],
        chunks: Iterable[Any],
        crc: int | Callable[[], int] | None = None,
    ) -> int:
        """Appends one fixed-width tensor from its raw bytes, given in chunks; returns its CRC32C.

        The bytes are the tensor's in C order and little-endian, as a bundle stores them
        (what :meth:`BundleReader.raw_chunks <tf1compat_init.bundle.reader.BundleReader.raw_chunks>`
        yields), so a tensor of any size streams through a chunk's memory. ``crc``: their
        CRC32C where the caller has summed those very bytes already (a value, or a function
        asked once the chunks are used up), recorded instead of summing them again.

        Raises:
            ValueError: a duplicate key, a string dtype, or chunks whose total size does not
                fit ``shape`` and ``dtype``.
        """
        self._check_new_key(key)
        number = dtype_enum(dtype)
        if dtype == "string":
            raise ValueError(f"{key!r}: string tensors have no raw byte layout; use add()")
        shape = tuple(int(d) for d in shape)
        expected = numpy_dtype(dtype).itemsize
        for d in shape:
            expected *= d
        offset, size, summed = self._size, 0, 0
        for chunk in chunks:
            view = memoryview(chunk).cast("B")
            self._file.write(view)
            if crc is None:
                summed = crc32c(view, summed)
            size += len(view)
        if crc is not None:
            summed = crc() if callable(crc) else crc
        crc = summed
        if size != expected:
            raise ValueError(
                f"{key!r}: got {size} bytes, but shape {list(shape)} of {dtype} needs {expected}"
            )
        self._size += size
        self._entries[key] = _Written(number, shape, offset, size, mask_crc(crc))
        return crc

    def flush(self) -> None:
        """Hands the data shard's buffered bytes to the operating system (no ``fsync``)."""
        self._file.flush()

    def finish(self) -> None:
        """Flushes the data shard to disk and writes the index (after it, not before)."""
        if self._done:
            return
        self._file.flush()
        if self._sync:
            _storage.sync(self._file)
        self._file.close()
        items = [(b"", _header_proto(1))]
        for key in sorted(self._entries, key=lambda k: k.encode("utf-8")):
            e = self._entries[key]
            items.append(
                (key.encode("utf-8"), _entry_proto(e.dtype, e.shape, e.offset, e.size, e.crc))
            )
        table = build_table(items)
        with _storage.open_exclusive(self.index_path) as f:
            f.write(table)
            f.flush()
            if self._sync:
                _storage.sync(f)
        self._done = True

    def abort(self) -> None:
        """Closes and removes whatever was written."""
        if self._done:
            return
        self._done = True
        self._file.close()
        for path in (self.data_path, self.index_path):
            try:
                _storage.remove(path)
            except FileNotFoundError:
                pass


def _infer_dtype(arr: np.ndarray) -> str:
    if arr.dtype.kind in "OSU":
        return "string"
    name = arr.dtype.name
    if name == "bool":
        return "bool"
    if name in _DTYPE_ENUMS:
        return name
    raise UnsupportedCheckpointError(f"no TensorFlow dtype for numpy dtype {arr.dtype}")
