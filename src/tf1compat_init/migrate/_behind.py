# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Reading the output back right behind the writer, for an output the page cache cannot keep.

A migrate reads its output back after the last write, while the file is synced: the
bytes come from the page cache, which is free. That holds while the source and the output
fit in the memory the machine has free. When they do not (a 10 GiB checkpoint written from
a built 10 GiB model on a 24 GiB machine), the cache lets go of both before they are used
again: the source, written or read long before, is read again from the disk while the
output is written, and the read-back then reads the whole output from the disk: three
passes over the disk instead of one (``vmstat``, docs/performance.md).

For such an output (:func:`for_output`: the source and the output together larger than
the memory available when the migrate starts), each tensor is read back as soon as about
a writeback's worth of bytes follows it (:class:`Behind`): its pages are still cached.
Its place in the file and its CRC32C are recorded, and once the disk has had the time to
take them (two writebacks later) its pages are let go (``posix_fadvise(DONTNEED)``), so
that the output does not push the rest of the source out of the cache. The check at the
end then reads the output's own index, header or datasets as before, and each tensor's
place and CRC32C there must be the ones read back (:meth:`Behind.expect`), so an index
that disagrees with the bytes is caught as before. What is no longer caught is a change
made to a tensor's bytes after it was read back (by another program, or by a writer that
writes past its own range): the writers write each range once, in order.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable

from ..bundle import storage as _storage
from ..engine.basics.tensor_bytes import human
from ..errors import CheckpointCorruptError
from ._stream import CHUNK, range_crc

__all__ = ["BATCH", "LAG", "Behind", "for_output", "memory_available"]

logger = logging.getLogger("tf1compat_init.migrate")

#: Bytes written after a tensor before it is read back: a writeback's worth
#: (``storage.WRITEBACK_EVERY``), so that small tensors are read back in batches.
BATCH = _storage.WRITEBACK_EVERY
#: Bytes read back after a tensor before its pages are let go: by then the kernel's
#: writeback, started every ``WRITEBACK_EVERY`` bytes, has had two turns to write them
#: (a page still dirty is kept by ``DONTNEED``: it is let go by the cache as usual).
LAG = 2 * _storage.WRITEBACK_EVERY


def memory_available() -> int | None:
    """Bytes the kernel says are available for new work without swapping (``MemAvailable``
    of ``/proc/meminfo``: free memory and the page cache it can let go); ``None`` where
    it does not say (not Linux)."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def for_output(path: str, nbytes: int) -> Behind | None:
    """A :class:`Behind` for the local output file ``path`` of ``nbytes`` tensor bytes when
    the source and the output (``2 * nbytes``) do not fit in the memory available now;
    ``None`` otherwise, for a URL, and where the system has no ``posix_fadvise``."""
    if _storage.is_url(path) or not hasattr(os, "posix_fadvise") or not hasattr(os, "preadv"):
        return None
    available = memory_available()
    if available is None or 2 * nbytes <= available:
        return None
    logger.info(
        "the source and the output (%s each) do not fit in the %s of memory available: "
        "each tensor is read back right after it is written, and let go from the page cache",
        human(nbytes),
        human(available),
    )
    return Behind(path)


class Behind:
    """Reads back the ranges of one output file as they are written (see the module).

    The writer calls :meth:`wrote` after each tensor, :meth:`finish` after the last; a
    range that reads back with another CRC32C raises ``CheckpointCorruptError`` there
    (the writer's own error handling then removes the output). ``flush`` hands the
    writer's buffered bytes to the kernel before a read-back (``None``: it buffers none).
    """

    def __init__(self, path: str, flush: Callable[[], object] | None = None) -> None:
        self.path, self.flush = path, flush
        self.checked: dict[str, tuple[int, int, int]] = {}  # key -> (begin, end, CRC32C)
        self._queue: list[tuple[str, int, int, int]] = []
        self._queued = 0
        self._read = 0  # bytes read back so far
        self._held: deque[tuple[int, int, int]] = deque()  # (begin, end, self._read after)

    def wrote(self, key: str, begin: int, end: int, crc: int) -> None:
        """Notes that ``key``'s bytes ``[begin, end)`` were written with CRC32C ``crc``;
        reads back what was noted once a batch of bytes is waiting."""
        self._queue.append((key, begin, end, crc))
        self._queued += end - begin
        if self._queued >= BATCH:
            self._catch_up()

    def finish(self) -> None:
        """Reads back what is still waiting (the writer's last bytes)."""
        self._catch_up()

    def _catch_up(self) -> None:
        if not self._queue:
            return
        if self.flush is not None:
            self.flush()
        queue, self._queue, self._queued = self._queue, [], 0
        buf = bytearray(CHUNK)
        with open(self.path, "rb", buffering=0) as f:
            for key, begin, end, crc in queue:
                got, n = range_crc(f, begin, end, buf, pread=True)
                if n != end - begin or got != crc:
                    raise CheckpointCorruptError(
                        f"{key!r} reads back different from what was written to {self.path} "
                        f"(bytes {begin}-{end}, read back right after writing)"
                    )
                self.checked[key] = (begin, end, crc)
                self._read += end - begin
                self._held.append((begin, end, self._read))
            while self._held and self._held[0][2] + LAG <= self._read:
                begin, end, _ = self._held.popleft()
                os.posix_fadvise(f.fileno(), begin, end - begin, os.POSIX_FADV_DONTNEED)

    def expect(self, key: str, begin: int, end: int, crc: int, label: str | None = None) -> None:
        """Raises ``CheckpointCorruptError`` unless ``key`` was read back at ``[begin, end)``
        with CRC32C ``crc``: what the output's own index, header or dataset says of it."""
        if self.checked.get(key) != (begin, end, crc):
            raise CheckpointCorruptError(
                f"{label or repr(key)} of the output {self.path} is not what was read back "
                f"right after writing it: the output says bytes {begin}-{end} with CRC32C "
                f"{crc:#010x}, the read-back {self._said(key)}"
            )

    def _said(self, key: str) -> str:
        if key not in self.checked:
            return "never read it"
        begin, end, crc = self.checked[key]
        return f"read bytes {begin}-{end} with CRC32C {crc:#010x}"
