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
the memory available when the migrate starts), the bytes are read back a batch at a time
(64 MiB, a large tensor in several) right behind the writer (:class:`Behind`): their pages
are still cached, and each tensor's CRC32C is complete when its last byte is read back.
Its place in the file and its CRC32C are recorded. 128 MiB after a batch is read back,
once the disk has it (``sync_file_range``, which by then seldom waits: the kernel's
writeback was started as it was written), its pages are let go
(``posix_fadvise(DONTNEED)``), so that the output does not push the rest of the source out
of the cache (10 GiB into ``tf2`` with the model built: 8.8 s before, 4.3 s with the
source kept, docs/performance.md). The check at the end then reads the output's own
index, header or datasets as before, and each tensor's place and CRC32C there must be the
ones read back (:meth:`Behind.expect`), so an index that disagrees with the bytes is
caught as before. What is no longer caught is a change made to a tensor's bytes after it
was read back (by another program, or by a writer that writes past its own range): the
writers write each range once, in order.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..bundle import storage as _storage
from ..engine.basics.tensor_bytes import human
from ..errors import CheckpointCorruptError
from ._stream import CHUNK, Chunks, range_crc

__all__ = [
    "BATCH",
    "LAG",
    "Behind",
    "add_to_bundle",
    "cgroup_room",
    "for_output",
    "memory_available",
]

logger = logging.getLogger("tf1compat_init.migrate")

#: Bytes written before they are read back, in one batch: small tensors are read back
#: together, a large one in several batches.
BATCH = 64 << 20
#: Bytes read back after a batch before its pages are let go: by then the kernel's
#: writeback, started every ``storage.WRITEBACK_EVERY`` bytes, has had several turns to
#: write them. What is still dirty is waited for (``DONTNEED`` keeps a dirty page: a
#: 1.5 GiB tensor, read back right after its last byte, was mostly still in the cache
#: 128 MiB later, and the source was pushed out instead).
LAG = 128 << 20


def memory_available() -> int | None:
    """Bytes available for new work without swapping: the kernel's ``MemAvailable`` (free
    memory and the page cache it can let go), or less where the process's memory cgroup
    (a container's limit) leaves less (:func:`cgroup_room`); ``None`` where neither says
    (not Linux)."""
    kernel = None
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    kernel = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        kernel = None
    room = cgroup_room()
    if kernel is None or room is None:
        return room if kernel is None else kernel
    return min(kernel, room)


#: A cgroup limit at or above this is no limit (cgroup v1 writes "none" as about 2**63).
_NO_LIMIT = 1 << 60


def cgroup_room(root: str = "/sys/fs/cgroup", proc: str = "/proc/self/cgroup") -> int | None:
    """Bytes the process's memory cgroup lets it use beyond the anonymous memory in it now
    (its limit less its ``anon`` in cgroup v2, ``total_rss`` in v1: the page cache in it is
    charged to it, but can be let go); ``None`` without a limit or a cgroup to read.

    In a container the page cache is held to the container's limit, not to the machine's
    ``MemAvailable``: a 10 GiB migrate in a 16 GiB pod on a 256 GiB host would otherwise
    take the cache for roomy and read the output back from the disk."""
    try:
        with open(proc) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and not controllers:  # cgroup v2
            base, limit_file, used_key = root, "memory.max", "anon"
        elif "memory" in controllers.split(","):  # cgroup v1
            base, limit_file, used_key = (
                os.path.join(root, "memory"),
                "memory.limit_in_bytes",
                "total_rss",
            )
        else:
            continue
        # The cgroup's own directory, or the mount's root (a container sees its own
        # cgroup there while /proc/self/cgroup names the host's path).
        for folder in (os.path.join(base, path.lstrip("/")), base):
            room = _room_in(folder, limit_file, used_key)
            if room is not None:
                return room
    return None


def _room_in(folder: str, limit_file: str, used_key: str) -> int | None:
    try:
        with open(os.path.join(folder, limit_file)) as f:
            text = f.read().strip()
        if text == "max" or int(text) >= _NO_LIMIT:
            return None
        limit = int(text)
        used = 0
        with open(os.path.join(folder, "memory.stat")) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == used_key:
                    used = int(value)
                    break
    except (OSError, ValueError):
        return None
    return max(limit - used, 0)


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


def add_to_bundle(
    writer: Any, key: str, value: Any, dtype: str | None, behind: Behind | None
) -> int:
    """Appends ``value`` under ``key`` to the ``BundleWriter`` ``writer``: a
    :class:`~._stream.Chunks` as stored (the CRC32C its reader checked recorded), anything
    else whole as ``dtype``. With ``behind``, a fixed-width value is read back as the writing
    goes on (a string's stored bytes have no CRC32C of their own: the check at the end reads
    it). Returns the CRC32C the writer recorded."""
    begin = writer.bytes_written
    if isinstance(value, Chunks):
        pieces = value if behind is None else behind.pieces(value, begin)
        crc = writer.add_raw(key, value.dtype, value.shape, pieces, crc=lambda: value.crc)
    else:
        crc = writer.add(key, value, dtype)
    if behind is not None and dtype != "string":
        behind.wrote(key, begin, writer.bytes_written, crc)
    return crc


class Behind:
    """Reads back the ranges of one output file as they are written (see the module).

    The writer calls :meth:`wrote` after each tensor, :meth:`finish` after the last, and
    may call :meth:`piece` while it writes a large one (or pass its chunks through
    :meth:`pieces`), so that it is read back in batches too, never held whole in the
    cache. A range that reads back with another CRC32C raises ``CheckpointCorruptError``
    there (the writer's own error handling then removes the output). ``flush`` hands the
    writer's buffered bytes to the kernel before a read-back (``None``: it buffers none).
    """

    def __init__(self, path: str, flush: Callable[[], object] | None = None) -> None:
        self.path, self.flush = path, flush
        self.checked: dict[str, tuple[int, int, int]] = {}  # key -> (begin, end, CRC32C)
        self._queue: list[tuple[str, int, int, int]] = []  # written, not read back yet
        self._writing = (-1, -1)  # (begin, bytes written up to) of the tensor being written
        self._partial = (-1, -1, 0)  # (begin, read back up to, CRC32C so far) of that one
        self._unread = 0  # bytes written and not read back
        self._read = 0  # bytes read back so far
        self._held: deque[tuple[int, int, int]] = deque()  # (begin, end, self._read after)
        self._buf: bytearray | None = None  # one chunk, reused: fresh pages cost a first touch

    def _reported(self, begin: int) -> int:
        """Where the bytes of the tensor at ``begin`` were last reported written up to."""
        return self._writing[1] if self._writing[0] == begin else begin

    def piece(self, begin: int, upto: int) -> None:
        """Notes that the tensor being written from ``begin`` has its bytes up to ``upto``
        written; reads back what waits once a batch of bytes does."""
        self._unread += upto - self._reported(begin)
        self._writing = (begin, upto)
        if self._unread >= BATCH:
            self._catch_up()

    def pieces(self, chunks: Iterable[Any], begin: int) -> Iterator[Any]:
        """``chunks`` as they are, for a writer that writes each before asking for the next
        from ``begin`` on: :meth:`piece` is told how far it got each time."""
        upto = begin
        for chunk in chunks:
            if upto > begin:
                self.piece(begin, upto)
            yield chunk
            upto += memoryview(chunk).nbytes

    def wrote(self, key: str, begin: int, end: int, crc: int) -> None:
        """Notes that ``key``'s bytes ``[begin, end)`` were written with CRC32C ``crc``;
        reads back what waits once a batch of bytes does."""
        self._unread += end - self._reported(begin)
        self._writing = (-1, -1)
        self._queue.append((key, begin, end, crc))
        if self._unread >= BATCH:
            self._catch_up()

    def finish(self) -> None:
        """Reads back what is still waiting (the writer's last bytes)."""
        self._catch_up()

    def _catch_up(self) -> None:
        if self.flush is not None:
            self.flush()
        queue, self._queue, self._unread = self._queue, [], 0
        if self._buf is None:
            self._buf = bytearray(CHUNK)
        buf = self._buf
        with open(self.path, "rb", buffering=0) as f:
            for key, begin, end, crc in queue:
                got = self._read_back(f, begin, end, buf)
                if got != crc:
                    raise CheckpointCorruptError(
                        f"{key!r} reads back different from what was written to {self.path} "
                        f"(bytes {begin}-{end}, read back right after writing)"
                    )
                self.checked[key] = (begin, end, crc)
            begin, upto = self._writing
            if upto > begin:  # the one being written, as far as it got
                self._read_back(f, begin, upto, buf)
            while self._held and self._held[0][2] + LAG <= self._read:
                begin, end, _ = self._held.popleft()
                _storage.wait_written(f.fileno(), begin, end - begin)
                os.posix_fadvise(f.fileno(), begin, end - begin, os.POSIX_FADV_DONTNEED)

    def _read_back(self, f: Any, begin: int, end: int, buf: bytearray) -> int | None:
        """The CRC32C of the tensor at ``begin`` read back up to ``end``, going on from
        where it was read before (``None``: the file ended first)."""
        pbegin, done, crc = self._partial
        start = done if pbegin == begin else begin
        crc = crc if pbegin == begin else 0
        if end > start:
            crc, n = range_crc(f, start, end, buf, pread=True, crc=crc)
            if n != end - start:
                return None
            self._read += end - start
            self._held.append((start, end, self._read))
        self._partial = (begin, end, crc)
        return crc

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
