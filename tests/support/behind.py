"""Test helpers for migrate's read-back behind the writer (``migrate/_behind.py``); no TensorFlow.

- :func:`little_memory` fakes a machine whose memory cannot hold any source and output,
  so a small checkpoint takes the path a 10 GiB one takes on a 24 GiB machine.
- :func:`flip_before_read_back` changes one byte of the output just before the read-back
  reads it: a byte that differs on its way to the disk.
"""

from __future__ import annotations

from typing import Any

from tf1compat_init.migrate import _behind, _stream


def little_memory(monkeypatch: Any, batch: int = 4 << 10, lag: int = 8 << 10) -> list:
    """Every local output read back behind, in ``batch``-sized batches, pages let go
    ``lag`` bytes later; returns the list of the ``Behind`` objects made, as they are made."""
    monkeypatch.setattr(_behind, "memory_available", lambda: 0)
    monkeypatch.setattr(_behind, "BATCH", batch)
    monkeypatch.setattr(_behind, "LAG", lag)
    made: list = []
    real = _behind.Behind.__init__

    def init(self: Any, *a: Any, **k: Any) -> None:
        real(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(_behind.Behind, "__init__", init)
    return made


def flip_before_read_back(monkeypatch: Any, smallest: int) -> list[int]:
    """Flips one bit in the middle of the first range the read-back reads that has at
    least ``smallest`` bytes, just before reading it; returns the offsets flipped."""
    real = _stream.range_crc
    flipped: list[int] = []

    def flip_then_read(f: Any, begin: int, end: int, buf: bytearray, pread: bool, crc: int = 0):
        if end - begin >= smallest and not flipped:
            at = (begin + end) // 2
            with open(f.name, "r+b") as g:
                g.seek(at)
                b = g.read(1)
                g.seek(at)
                g.write(bytes([b[0] ^ 0x10]))
            flipped.append(at)
        return real(f, begin, end, buf, pread, crc)

    monkeypatch.setattr(_behind, "range_crc", flip_then_read)
    return flipped
