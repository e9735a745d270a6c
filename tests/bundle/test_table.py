"""tf1compat_init.bundle.table: TensorFlow's table file (the ``.index``), read and checked.

The tables here are crafted (tests/support/crafted_bundle.py); how a damaged index reads
through the reader, and that TensorFlow's own indexes read right, is test_reader.py's.
"""

from __future__ import annotations

import struct

import pytest
from support.crafted_bundle import table_bytes

from tf1compat_init.bundle import table
from tf1compat_init.bundle.writer import build_table
from tf1compat_init.errors import CheckpointNotFoundError

pytestmark = pytest.mark.pure

ITEMS = [(f"k{i:03d}".encode(), f"value {i}".encode()) for i in range(10)]


def _write(tmp_path, data: bytes) -> str:
    path = tmp_path / "x.index"
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("per_block", [1, 3, 100])
def test_every_entry_in_key_order_across_blocks(tmp_path, per_block):
    assert table._read_table(_write(tmp_path, table_bytes(ITEMS, per_block))) == ITEMS


def test_a_table_of_the_header_alone(tmp_path):
    # A bundle's index always holds at least its header, under the empty key.
    assert table._read_table(_write(tmp_path, build_table([(b"", b"hdr")]))) == [(b"", b"hdr")]


def test_a_missing_file_is_checkpoint_not_found(tmp_path):
    with pytest.raises(CheckpointNotFoundError, match="does not exist"):
        table._read_table(str(tmp_path / "absent.index"))


def test_short_file_and_bad_magic(tmp_path):
    with pytest.raises(table._BadIndex, match="shorter than the 48-byte table footer"):
        table._read_table(_write(tmp_path, b"\x00" * 47))
    data = table_bytes(ITEMS)
    bad = data[:-8] + struct.pack("<Q", 0x1234)
    with pytest.raises(table._BadIndex, match="bad table magic number 0x0000000000001234"):
        table._read_table(_write(tmp_path, bad))


def test_keys_out_of_order_are_refused(tmp_path):
    items = [(b"b", b"1"), (b"a", b"2")]
    with pytest.raises(table._BadIndex, match="out of order|past the index separator"):
        table._read_table(_write(tmp_path, table_bytes(items, per_block=1)))


def test_a_flipped_byte_in_a_block_fails_its_checksum(tmp_path):
    data = bytearray(table_bytes(ITEMS, per_block=3))
    data[5] ^= 0x01  # inside the first data block
    with pytest.raises(table._BadIndex, match="data block at offset 0"):
        table._read_table(_write(tmp_path, bytes(data)))
