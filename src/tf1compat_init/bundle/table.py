# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The LevelDB-style table of a ``.index`` file (TensorFlow's ``core/lib/io/{table,
block,format}.cc``): footer, block handles, checksummed blocks, prefix-compressed keys."""

from __future__ import annotations

import struct

from ..errors import CheckpointNotFoundError, UnsupportedCheckpointError
from . import proto as _proto
from . import storage as _storage
from .crc import _U32, crc32c, unmask_crc
from .proto import ProtoDecodeError

_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER_SIZE = 48  # two varint64 block handles padded to 40 bytes, then the magic
_BLOCK_TRAILER_SIZE = 5  # compression type byte + masked CRC32C
_NO_COMPRESSION = 0
_SNAPPY_COMPRESSION = 1


class _BadIndex(Exception):
    """Internal: what is wrong with the index; turned into a named public error."""


def _decode_block_handle(buf: bytes, pos: int, limit: int) -> tuple[int, int, int]:
    try:
        offset, pos = _proto.decode_varint(buf, pos, limit)
        size, pos = _proto.decode_varint(buf, pos, limit)
    except ProtoDecodeError as e:
        raise _BadIndex(f"bad block handle: {e}") from None
    return offset, size, pos


def _read_block(data: bytes, offset: int, size: int, blocks_end: int, what: str) -> bytes:
    if offset + size + _BLOCK_TRAILER_SIZE > blocks_end:
        raise _BadIndex(
            f"{what} at offset {offset} with size {size} runs past the end of the table"
            f" ({blocks_end} bytes before the footer)"
        )
    block = data[offset : offset + size]
    ctype = data[offset + size]
    stored = int.from_bytes(data[offset + size + 1 : offset + size + 5], "little")
    actual = crc32c(data[offset : offset + size + 1])
    if unmask_crc(stored) != actual:
        raise _BadIndex(f"{what} at offset {offset}: block checksum mismatch")
    if ctype == _SNAPPY_COMPRESSION:
        # TensorFlow has never written compressed bundle indexes, but its
        # reader accepts them; leave those to TensorFlow.
        raise UnsupportedCheckpointError(f"{what} is snappy-compressed")
    if ctype != _NO_COMPRESSION:
        raise _BadIndex(f"{what} at offset {offset}: unknown block type {ctype}")
    return block


def _parse_block(block: bytes, what: str) -> list[tuple[bytes, bytes]]:
    """Decodes every (key, value) of one block, checking every bound."""
    n = len(block)
    if n < 4:
        raise _BadIndex(f"{what} is {n} bytes, too short for a restart count")
    num_restarts = int.from_bytes(block[n - 4 :], "little")
    if num_restarts == 0 or num_restarts > (n - 4) // 4:
        raise _BadIndex(f"{what} has an impossible restart count {num_restarts}")
    limit = n - 4 * (num_restarts + 1)
    restarts = struct.unpack_from(f"<{num_restarts}I", block, limit)

    entries: list[tuple[bytes, bytes]] = []
    starts: dict[int, int] = {}  # entry offset -> its shared-prefix length
    key = b""
    pos = 0
    try:
        while pos < limit:
            entry_start = pos
            shared, pos = _proto.decode_varint(block, pos, limit)
            non_shared, pos = _proto.decode_varint(block, pos, limit)
            value_len, pos = _proto.decode_varint(block, pos, limit)
            if max(shared, non_shared, value_len) > _U32:
                raise _BadIndex(f"{what}: entry at {entry_start} has a length over 32 bits")
            if shared > len(key):
                raise _BadIndex(
                    f"{what}: entry at {entry_start} shares {shared} bytes"
                    f" of a {len(key)}-byte previous key"
                )
            if non_shared + value_len > limit - pos:
                raise _BadIndex(f"{what}: entry at {entry_start} runs past the entries")
            key = key[:shared] + block[pos : pos + non_shared]
            pos += non_shared
            value = block[pos : pos + value_len]
            pos += value_len
            starts[entry_start] = shared
            entries.append((key, value))
    except ProtoDecodeError as e:
        raise _BadIndex(f"{what}: bad varint in an entry: {e}") from None
    for r in restarts:
        if starts.get(r) != 0:
            raise _BadIndex(f"{what}: restart point {r} is not the start of a full key")
    return entries


def _read_table(path: str) -> list[tuple[bytes, bytes]]:
    """Reads every (key, value) of a TensorFlow table file, in key order."""
    if _storage.is_url(path):
        data = _storage.read_bytes(path)  # its errors say why (absent, refused, no answer)
    else:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise CheckpointNotFoundError(f"checkpoint index {path} does not exist") from None
    if len(data) < _FOOTER_SIZE:
        raise _BadIndex(
            f"the file is {len(data)} bytes, shorter than the {_FOOTER_SIZE}-byte table footer"
        )
    footer_at = len(data) - _FOOTER_SIZE
    magic = int.from_bytes(data[-8:], "little")
    if magic != _TABLE_MAGIC:
        raise _BadIndex(f"bad table magic number 0x{magic:016x} (not an index file)")
    meta_offset, meta_size, pos = _decode_block_handle(data, footer_at, footer_at + 40)
    index_offset, index_size, _ = _decode_block_handle(data, pos, footer_at + 40)
    # TensorFlow never reads the (always empty) metaindex block; checking its
    # checksum anyway means a damaged byte anywhere but the footer's padding
    # is noticed.
    _read_block(data, meta_offset, meta_size, footer_at, "metaindex block")
    index_block = _read_block(data, index_offset, index_size, footer_at, "index block")

    entries: list[tuple[bytes, bytes]] = []
    for separator, handle in _parse_block(index_block, "index block"):
        offset, size, end = _decode_block_handle(handle, 0, len(handle))
        if end != len(handle):
            raise _BadIndex("index block: trailing bytes after a block handle")
        what = f"data block at offset {offset}"
        block_entries = _parse_block(_read_block(data, offset, size, footer_at, what), what)
        if block_entries and block_entries[-1][0] > separator:
            raise _BadIndex(f"{what}: its keys go past the index separator")
        entries.extend(block_entries)
    for (k1, _), (k2, _) in zip(entries, entries[1:], strict=False):
        if k1 >= k2:
            raise _BadIndex(f"keys out of order: {k1!r} then {k2!r}")
    return entries
