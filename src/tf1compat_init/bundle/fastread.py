# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Fast, TensorFlow-free reads of bundle data for :func:`~tf1compat_init.apply.apply_plan`.

Two passes over memory-mapped data shards, both parallel in threads (numpy's copies
release the GIL, and so do CRC32C calls on 32 KiB or more with the ``crc32c`` package):

1. :meth:`FastReader.verify` checksums every planned tensor where it lies in the
   page cache, split into pieces so that one huge tensor still uses every core
   (piece CRCs are joined with :func:`crc32c_combine`). Nothing is allocated.
2. :meth:`FastReader.stream` copies each requested tensor (or slice of one) into
   a fresh 64-byte aligned buffer, which TensorFlow can adopt without a copy, and
   yields the buffers in file order while keeping the bytes in flight under a
   fixed budget. Small tensors share grouped allocations, and neighbours in the
   file are copied with one copy. Buffers may come from the caller (``allocate``:
   the engine hands out TensorFlow-owned memory, which reuses what the old values
   freed, where fresh memory costs a page fault per 4 KiB).

With ``crc=True``, :meth:`FastReader.stream` checksums each buffer after copying
it instead, so a caller that stages everything before assigning gets values that
were verified where they will live. A big tensor's pieces are copied in chunks, each
checksummed while it is still in the core's cache. These copies read bytes no pass
has mapped yet, so they use ``preadv`` (POSIX), which spares the mapping's page
faults; a plain stream follows the verify pass and copies from the mapping it filled.

Once a copy has read its bytes from a mapped file, the worker thread that made it drops
those pages from the process's page tables (``madvise(MADV_DONTNEED)``; the page cache
keeps them). Unmapping is then nearly free (the measurements behind this and the
constants below are in ``benchmarks/README.md``).

Data files are memory-mapped read-only and stay open until :meth:`FastReader.close`,
so a checkpoint that is replaced or deleted during a restore is read consistently.
A data file that another process truncates in place during a read makes ``preadv``
copies raise :class:`~tf1compat_init.errors.CheckpointCorruptError`; reads of the
mapping (the verify pass, plain streams), as with any memory-mapped reader
(``numpy.memmap``, safetensors), make the process fail with ``SIGBUS``. TensorFlow
itself never rewrites a checkpoint in place.
"""

from __future__ import annotations

import ctypes
import logging
import math
import mmap
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..errors import CheckpointCorruptError, UnsupportedCheckpointError
from .crc import crc32c_combine, crc32c_extender, unmask_crc
from .entries import BundleEntry
from .reader import BundleReader

__all__ = [
    "ALIGNMENT",
    "Allocator",
    "FastReader",
    "Loaded",
    "ReadRequest",
    "aligned_empty",
    "crc32c_combine",
    "default_threads",
]

logger = logging.getLogger(__name__)

#: TensorFlow's CPU kernels assume buffers aligned to ``EIGEN_MAX_ALIGN_BYTES``
#: (at most 64). A DLPack import of a less aligned buffer is *not* copied: the
#: first kernel that checks alignment aborts the process. Every buffer handed to
#: TensorFlow is therefore aligned to 64 bytes.
ALIGNMENT = 64

#: Big tensors are split into pieces of this size, so both passes spread one
#: tensor over all threads and a piece stays cheap to schedule.
PIECE_BYTES = 8 << 20

#: The most bytes one allocation of grouped small tensors holds. numpy asks the kernel
#: for transparent huge pages for arrays of 4 MiB or more; where the kernel compacts
#: memory to find them (``defrag=madvise``, the usual default) and the page cache has
#: fragmented it (as reading checkpoints does), that stalls the first restores of a
#: process.
GROUP_BYTES = (4 << 20) - 2 * ALIGNMENT

#: Groups of small tensors this big or bigger take their buffer from the caller's
#: ``allocate`` (TensorFlow's allocator, which reuses freed memory), smaller ones from
#: numpy. A group of a few KiB between big tensors, placed by TensorFlow's allocator in
#: the memory a replaced big value freed, kept the next big value from reusing it, so a
#: restore peaked higher. A group under 1 MiB costs at most 256 page faults in fresh
#: memory.
ALLOCATED_GROUP_BYTES = 1 << 20

#: Default bytes in flight during streaming, on top of the largest single request.
DEFAULT_WINDOW_BYTES = 64 << 20


#: Buffers at least this big start on a huge-page boundary: the kernel then backs
#: them with 2 MiB pages (numpy asks for transparent huge pages), and the page
#: faults of fresh memory, a large part of the cost of a restore, drop by 512x.
HUGE_BYTES = 4 << 20
_HUGE_PAGE = 2 << 20

_BYTES = np.dtype(np.uint8)


def default_threads() -> int:
    """Worker threads for reads: the CPU count, at least 2, at most 8."""
    return max(2, min(8, os.cpu_count() or 1))


def aligned_empty(shape: Sequence[int], dtype: Any, align: int = ALIGNMENT) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ``align``-byte boundary.

    Arrays of :data:`HUGE_BYTES` or more are aligned to 2 MiB instead.

    Args:
        shape: the array's shape.
        dtype: any numpy dtype (ml_dtypes types included).
        align: the least alignment in bytes, a power of two.

    Returns:
        The array; it keeps its (slightly larger) backing allocation alive.
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes >= HUGE_BYTES:
        align = max(align, _HUGE_PAGE)
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + nbytes].view(dtype).reshape(tuple(shape))


# ---------------------------------------------------------------------------
# Requests and work units.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadRequest:
    """One buffer to fill: a whole tensor, or a slice of it (a partition).

    Attributes:
        key: the checkpoint key.
        slices: ``None`` for the whole tensor, else one ``slice`` per dimension.
        token: anything; handed back with the buffer.
    """

    key: str
    slices: tuple[slice, ...] | None = None
    token: Any = None


class Loaded(NamedTuple):
    """One filled buffer from :meth:`FastReader.stream`.

    Attributes:
        request: the request it answers.
        buffer: the array holding the value (final shape and dtype).
        owner: what the ``allocate`` callback returned with ``buffer``, or ``None``
            when the buffer is the reader's own (64-byte aligned numpy memory).
    """

    request: ReadRequest
    buffer: np.ndarray
    owner: Any = None


#: ``allocate(shape, dtype) -> (array, owner) or None``: a fresh, private, writable,
#: C-contiguous, 64-byte aligned array (and whatever owns its memory), or None to let
#: the reader allocate. Used for big tensors' buffers (yielded with their owner) and
#: for the byte buffers that hold groups of small tensors, whose owner is dropped: the
#: array must keep its memory alive by itself, as a view of a tensor's memory does.
Allocator = Callable[[tuple[int, ...], np.dtype], "tuple[np.ndarray, Any] | None"]


class _Source:
    """Where one request's bytes are, as the stream lays them out."""

    __slots__ = ("request", "entry", "dtype", "shape", "nbytes", "src", "shard", "start")

    def __init__(
        self,
        request: ReadRequest,
        entry: BundleEntry,
        dtype: np.dtype,
        shape: tuple[int, ...],
        nbytes: int,
        src: np.ndarray | None,
        start: int,
    ) -> None:
        self.request = request
        self.entry = entry
        self.dtype = dtype
        self.shape = shape
        self.nbytes = nbytes
        self.src = src  # only for a strided partition: the source view, final dtype/shape
        self.shard = entry.shard_id
        self.start = start  # byte offset of a contiguous source in its shard, else -1


#: A byte range to checksum: a flat memoryview of it (sliced from a view of the mapped
#: file or of the destination buffer, so nothing is copied; it keeps the bytes alive).
_Range = memoryview


def _crc_ranges(ranges: list[_Range]) -> list[int]:
    """The CRC32C of each range, in order.

    Thousands of small tensors make thousands of calls, so the backend is called
    directly: with the ``crc32c`` package a call on a memoryview costs a fraction of a
    microsecond more than the checksum, and ranges from 32 KiB release the GIL.
    """
    extend = crc32c_extender()
    return [extend(r) for r in ranges]


def _joined_crc(pieces: list[tuple[int, int, int]], results: list[list[int]]) -> int:
    """A tensor's CRC32C from its pieces' ``(task, index, length)`` in ``results``."""
    if len(pieces) == 1:  # most tensors: one piece, its CRC is the tensor's
        t, i, _ = pieces[0]
        return results[t][i]
    crc = 0
    for t, i, length in pieces:
        crc = crc32c_combine(crc, results[t][i], length)
    return crc


class _InFile(NamedTuple):
    """Bytes of an open data file from ``offset``: a copy reads them with ``preadv``."""

    fd: int
    offset: int
    path: str


#: Whether copies from the data files use ``os.preadv`` (POSIX); else they copy from
#: the file mapping and drop the mapped pages after (``_release_pages``).
_PREAD = hasattr(os, "preadv")


def _read_into(src: _InFile, dst: np.ndarray) -> None:
    """Fills the flat byte array ``dst`` from ``src`` (``preadv`` releases the GIL).

    Raises:
        CheckpointCorruptError: the file ended first (it was truncated in place while
            it was read; a mapped read would have killed the process with SIGBUS).
    """
    view = memoryview(dst).cast("B")
    done, n = 0, len(view)
    while done < n:
        got = os.preadv(src.fd, [view[done:]], src.offset + done)
        if got <= 0:
            raise CheckpointCorruptError(
                f"data file {src.path} ended at byte {src.offset + done} while it was being"
                f" read ({n - done} more bytes expected): it was truncated during the"
                f" restore. Restore again once nothing writes to the checkpoint"
            )
        done += got


def _copy(src: np.ndarray | _InFile, dst: np.ndarray) -> None:
    if isinstance(src, _InFile):
        _read_into(src, dst)
    else:
        np.copyto(dst, src, casting="no")


def _part(src: np.ndarray | _InFile, start: int, end: int) -> np.ndarray | _InFile:
    if isinstance(src, _InFile):
        return src._replace(offset=src.offset + start)
    return src[start:end]


@dataclass
class _Task:
    """Work for one thread: copies, then checksums of some of the copied bytes.

    ``release`` holds the ``(address, length)`` of the mapped file bytes the copies
    read: their pages are dropped after the copies (a later read of the same bytes,
    for a second target of one key, faults them back in from the page cache).
    """

    copies: list[tuple[np.ndarray | _InFile, np.ndarray]] = field(default_factory=list)
    crcs: list[_Range] = field(default_factory=list)
    release: list[tuple[int, int]] = field(default_factory=list)


#: A big tensor's piece is copied in chunks of this size, each checksummed right
#: after it is copied, while it is still in the core's cache: the checksum then does
#: not read the piece from memory a second time. Groups of small tensors are not
#: chunked: their Python work per tensor made that slower.
INTERLEAVE_BYTES = 512 << 10


def _run_task(task: _Task) -> list[int]:
    crc = None
    if len(task.copies) == 1 and len(task.crcs) == 1:
        crc = _copy_and_checksum(*task.copies[0], task.crcs[0])
    if crc is not None:
        results = [crc]
    else:
        for src, dst in task.copies:
            _copy(src, dst)
        results = _crc_ranges(task.crcs)
    if task.release:
        _release_pages(task.release)
    return results


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _copy_and_checksum(src: np.ndarray | _InFile, dst: np.ndarray, checked: _Range) -> int | None:
    """Copies a byte run chunk by chunk, checksumming each chunk as it lands.

    Returns:
        The run's CRC32C, or None (nothing copied) unless ``checked`` views exactly
        ``dst``'s bytes and both are flat byte runs.
    """
    n = checked.nbytes
    chunk = INTERLEAVE_BYTES
    if (
        chunk <= 0
        or dst.dtype != np.uint8
        or dst.ndim != 1
        or (not isinstance(src, _InFile) and src.shape != dst.shape)
        or not dst.flags.c_contiguous
        or dst.nbytes != n
        or _address(np.frombuffer(checked, dtype=np.uint8)) != _address(dst)
    ):
        return None
    extend = crc32c_extender()
    crc = 0
    for start in range(0, n, chunk):
        end = min(n, start + chunk)
        _copy(_part(src, start, end), dst[start:end])
        crc = extend(checked[start:end], crc)
    return crc


def _page_dropper() -> Callable[[int, int], Any] | None:
    """``madvise(address, length, MADV_DONTNEED)`` through ctypes (so the GIL is
    released), or None where that is not Linux's call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):  # pragma: no cover - a libc without madvise
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    dontneed = getattr(mmap, "MADV_DONTNEED", 4)
    return lambda address, length: fn(address, length, dontneed)


_drop_pages = _page_dropper()


def _release_pages(ranges: list[tuple[int, int]]) -> None:
    """Drops the whole pages inside each mapped ``(address, length)`` range.

    Only read-only shared file mappings are passed here: dropping their pages loses
    nothing (a later read faults them in again from the page cache). Pages that a
    range only partly covers are kept, as a neighbour may still need them. Failure is
    harmless (the pages go at unmapping), so the result is not checked.
    """
    if _drop_pages is None:
        return
    page = mmap.PAGESIZE
    for address, length in ranges:
        start = -(-address // page) * page
        end = (address + length) // page * page
        if end > start:
            _drop_pages(start, end - start)


#: The checksum pass's task (its own name, so tests can inject a fault in it).
_crc_views = _crc_ranges


@dataclass(slots=True)
class _Item:
    request: ReadRequest
    buffer: np.ndarray
    expected: int = 0
    owner: Any = None
    pieces: list[tuple[int, int, int]] = field(default_factory=list)  # (task, crc, length)


@dataclass
class _Unit:
    """Requests whose buffers are filled (by ``tasks``) and yielded together."""

    items: list[_Item] = field(default_factory=list)
    tasks: list[_Task] = field(default_factory=list)
    nbytes: int = 0
    futures: list[Future] = field(default_factory=list)


def _allocated(
    shape: tuple[int, ...], dtype: np.dtype, allocate: Allocator | None
) -> tuple[np.ndarray, Any]:
    """A buffer from ``allocate`` if it gives a usable one, else one of our own."""
    if allocate is not None:
        got = allocate(shape, dtype)
        if got is not None:
            array, owner = got
            if (
                isinstance(array, np.ndarray)
                and array.shape == tuple(shape)
                and array.dtype == dtype
                and array.flags.c_contiguous
                and array.flags.writeable
                and (array.size == 0 or array.ctypes.data % ALIGNMENT == 0)
            ):
                return array, owner
            logger.debug("allocator gave an unusable buffer for %s %s", dtype, shape)
    return aligned_empty(shape, dtype), None


def _stamp(f: Any) -> tuple[int, int]:
    """What changes when a file is written in place: (size, mtime in ns).

    Not ctime: deleting or renaming over a file changes it, and a checkpoint replaced
    that way during a restore is harmless (the open file keeps the old bytes).
    """
    st = os.fstat(f.fileno())
    return st.st_size, st.st_mtime_ns


def _pieces(nbytes: int, piece: int) -> list[tuple[int, int]]:
    if nbytes == 0:
        return [(0, 0)]
    return [(s, min(piece, nbytes - s)) for s in range(0, nbytes, piece)]


def _align_up(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


#: Small tensors separated in the file by at most this many bytes are copied with
#: one copy, gap included, when that keeps every tensor aligned in the buffer.
_MAX_MERGED_GAP = 4096


class FastReader:
    """Verifies and streams the plain numeric tensors of a bundle checkpoint.

    Use as a context manager; ``close()`` unmaps the data files.

    Args:
        reader: the checkpoint's :class:`~tf1compat_init.bundle.reader.BundleReader`.
        threads: worker threads (default :func:`default_threads`).
        window_bytes: bytes in flight while streaming, beyond the largest request.
    """

    def __init__(
        self,
        reader: BundleReader,
        *,
        threads: int | None = None,
        window_bytes: int = DEFAULT_WINDOW_BYTES,
    ) -> None:
        self.reader = reader
        self.threads = threads or default_threads()
        self.window_bytes = window_bytes
        self._files: dict[int, Any] = {}
        self._maps: dict[int, mmap.mmap] = {}
        self._bases: dict[int, np.ndarray] = {}
        self._addresses: dict[int, int] = {}  # where each mapped shard starts in memory
        self._views: dict[int, memoryview] = {}  # each shard's bytes, for checksums
        self._sizes: dict[int, int] = {}
        self._stamps: dict[int, tuple[int, int]] = {}
        self._dtypes: dict[str, np.dtype | None] = {}
        self._pool: ThreadPoolExecutor | None = None
        #: The most bytes :meth:`stream` had read ahead of its consumer (for tests
        #: and benchmarks of the memory bound).
        self.peak_inflight_bytes = 0

    def __enter__(self) -> FastReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="tf1compat-read")
        return self._pool

    def _map(self, func: Callable[[Any], Any], tasks: Sequence[Any]) -> list[Any]:
        if len(tasks) <= 1 or self.threads <= 1:
            return [func(t) for t in tasks]
        return list(self.pool.map(func, tasks))

    def close(self) -> None:
        """Stops the threads and unmaps the data files (once no view is left)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._views.clear()
        self._bases.clear()
        self._addresses.clear()
        for mm in self._maps.values():
            try:
                mm.close()
            except BufferError:  # a view still exists; the map goes with the last one
                pass
        self._maps.clear()
        for f in self._files.values():
            f.close()
        self._files.clear()

    # -- which entries this reader handles --------------------------------------

    def dtype_of(self, key: str) -> np.dtype | None:
        """The numpy dtype the fast path reads ``key`` as, or None if it cannot.

        Strings, tensors stored in slices, big-endian checkpoints and dtypes the
        native reader does not decode are left to the caller (the reader's own
        ``read``, or TensorFlow).
        """
        entry = self.reader.entries[key]
        if entry.slices:
            return None
        if entry.dtype not in self._dtypes:
            try:
                dtype = self.reader._check_decodable(entry)
            except UnsupportedCheckpointError:
                dtype = None
            self._dtypes[entry.dtype] = None if dtype is None or dtype.hasobject else dtype
        return self._dtypes[entry.dtype]

    # -- files -------------------------------------------------------------------

    def _shard(self, entry: BundleEntry, key: str) -> np.ndarray:
        """The mapped bytes of ``entry``'s shard, after checking the entry fits in it."""
        sid = entry.shard_id
        if sid not in self._sizes:
            f, size = self.reader.open_shard(sid, repr(key))
            self._files[sid] = f  # closed in close()
            self._sizes[sid] = size
            self._stamps[sid] = _stamp(f)
            if size:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                self._maps[sid] = mm
                self._bases[sid] = np.frombuffer(mm, dtype=np.uint8)
            else:
                self._bases[sid] = np.empty(0, dtype=np.uint8)
            self._addresses[sid] = self._bases[sid].ctypes.data
            self._views[sid] = memoryview(self._bases[sid])
        self.reader.check_in_shard(entry, self._sizes[sid], repr(key))
        return self._bases[sid]

    def check_unchanged(self) -> None:
        """Raises if a data file was modified in place since this reader opened it.

        The two passes read the same mapped bytes; a writer changing them in between
        would make the assigned values differ from the verified ones. TensorFlow never
        does this, but a copy tool or a user might: this turns it into an error.

        Raises:
            CheckpointCorruptError: a data file's size or modification time changed.
        """
        for sid, f in self._files.items():
            if _stamp(f) != self._stamps[sid]:
                raise CheckpointCorruptError(
                    f"data file {self.reader.data_path(sid)} was modified while it was being"
                    f" read (its size or modification time changed); the values read from it"
                    f" cannot be trusted. Restore again once nothing writes to the checkpoint"
                )

    def _checked(self, key: str) -> tuple[BundleEntry, np.dtype]:
        """``key``'s entry and dtype, once its size and its place in the file are checked."""
        entry = self.reader.entries[key]
        dtype = self.dtype_of(key)
        if dtype is None:
            raise UnsupportedCheckpointError(f"{key!r} is not a plain numeric tensor")
        self.reader._check_size(entry, key, dtype)
        self._shard(entry, key)
        return entry, dtype

    def _mismatch(self, key: str, entry: BundleEntry, computed: int) -> CheckpointCorruptError:
        return CheckpointCorruptError(
            f"checksum mismatch for tensor {key!r} in data file"
            f" {self.reader.data_path(entry.shard_id)}: stored crc32c"
            f" 0x{unmask_crc(entry.crc32c):08x}, computed 0x{computed:08x}. The checkpoint is"
            f" corrupt; nothing was assigned"
        )

    # -- pass 1: verify -----------------------------------------------------------

    def verify(self, keys: Iterable[str]) -> None:
        """Checks the size and CRC32C of every key, in parallel; allocates nothing.

        Raises:
            CheckpointCorruptError: a size or checksum is wrong (the first in file order).
            CheckpointNotFoundError: a data file is missing.
        """
        entries = self.reader.entries
        keys = sorted(dict.fromkeys(keys), key=lambda k: (entries[k].shard_id, entries[k].offset))
        # Big tensors are split into pieces and small ones batched, so that every
        # task is a few MiB: all threads stay busy and scheduling stays cheap.
        tasks: list[list[_Range]] = []
        where: list[list[tuple[int, int, int]]] = []  # per key: (task, index, length)
        batch: list[_Range] = []
        batch_bytes = 0
        piece = PIECE_BYTES
        views = self._views
        for key in keys:
            entry, _ = self._checked(key)
            sid, offset = entry.shard_id, entry.offset
            spots = []
            for start, length in _pieces(entry.size, piece):
                if batch and batch_bytes + length > piece:
                    tasks.append(batch)
                    batch, batch_bytes = [], 0
                spots.append((len(tasks), len(batch), length))
                batch.append(views[sid][offset + start : offset + start + length])
                batch_bytes += length
            where.append(spots)
        if batch:
            tasks.append(batch)
        results = self._map(_crc_views, tasks)
        for key, spots in zip(keys, where, strict=True):
            crc = _joined_crc(spots, results)
            entry = entries[key]
            if crc != unmask_crc(entry.crc32c):
                raise self._mismatch(key, entry, crc)
        logger.debug("verified %d tensors with %d tasks", len(keys), len(tasks))

    # -- pass 2: stream into aligned buffers --------------------------------------

    def _source(self, req: ReadRequest) -> _Source:
        entry, dtype = self._checked(req.key)
        if req.slices is None:
            shape = entry.shape
            return _Source(req, entry, dtype, shape, entry.size, None, entry.offset)
        shape = tuple(
            len(range(*s.indices(d))) for s, d in zip(req.slices, entry.shape, strict=True)
        )
        nbytes = math.prod(shape) * dtype.itemsize
        if not nbytes:
            return _Source(req, entry, dtype, shape, 0, None, entry.offset)
        data = self._bases[entry.shard_id][entry.offset : entry.offset + entry.size]
        full = data.view(dtype).reshape(entry.shape)
        src = full[req.slices]
        if src.flags.c_contiguous:  # e.g. a partition along the first dimension
            start = entry.offset + (src.ctypes.data - full.ctypes.data)
            return _Source(req, entry, dtype, shape, nbytes, None, start)
        return _Source(req, entry, dtype, shape, nbytes, src, -1)

    def _big_unit(self, s: _Source, crc: bool, allocate: Allocator | None) -> _Unit:
        buffer, owner = _allocated(s.shape, s.dtype, allocate)
        item = _Item(s.request, buffer, unmask_crc(s.entry.crc32c), owner=owner)
        unit = _Unit([item], [], s.nbytes)
        if s.nbytes == 0:
            return unit
        dst = buffer.reshape(-1).view(np.uint8)
        if s.start < 0:  # a partition across an inner dimension: one strided copy
            unit.tasks.append(_Task([(s.src, buffer)], [memoryview(dst)] if crc else []))
            item.pieces.append((0, 0, s.nbytes))
            return unit
        for start, n in _pieces(s.nbytes, PIECE_BYTES):
            piece = dst[start : start + n]
            crcs = [memoryview(piece)] if crc else []
            copies, release = self._copy_of(s.shard, s.start + start, piece, crc)
            unit.tasks.append(_Task(copies, crcs, release))
            item.pieces.append((len(unit.tasks) - 1, 0, n))
        return unit

    def _copy_of(
        self, shard: int, offset: int, dst: np.ndarray, unmapped: bool
    ) -> tuple[list[tuple[np.ndarray | _InFile, np.ndarray]], list[tuple[int, int]]]:
        """The copy of ``dst.nbytes`` bytes of ``shard`` from ``offset`` into ``dst``,
        and the mapped pages to drop after it: ``([(src, dst)], release)``.

        ``unmapped``: no pass has mapped these bytes yet (a checksumming stream, which
        reads each value once). They are then read with ``preadv``, sparing the page
        faults of the mapping. After the verify pass has mapped them, copying from the
        mapping beats the kernel's copy.
        """
        if unmapped and _PREAD:
            f = self._files[shard]
            return [(_InFile(f.fileno(), offset, self.reader.data_path(shard)), dst)], []
        src = self._bases[shard][offset : offset + dst.nbytes]
        return [(src, dst)], [(self._addresses[shard] + offset, dst.nbytes)]

    def _group_unit(self, sources: list[_Source], crc: bool, allocate: Allocator | None) -> _Unit:
        """Small requests in one aligned allocation, copied by one task.

        Each request gets an aligned place in the buffer. Where the file holds two
        requests close together and the same distance keeps the second aligned, the
        buffer mirrors the file, so runs of neighbours are copied in one go.
        """
        offsets: list[int] = []
        runs: list[list[int]] = []  # [dst_start, dst_end, shard, src_start]
        end = 0
        prev: _Source | None = None
        for s in sources:
            off = _align_up(end)
            contiguous = s.start >= 0 and s.nbytes > 0
            merged = False
            if prev is not None and contiguous and s.shard == prev.shard:
                gap = s.start - (prev.start + prev.nbytes)
                candidate = end + gap
                if 0 <= gap <= _MAX_MERGED_GAP and candidate % ALIGNMENT == 0:
                    off, merged = candidate, True
            if contiguous:
                if merged:
                    runs[-1][1] = off + s.nbytes
                else:
                    runs.append([off, off + s.nbytes, s.shard, s.start])
            offsets.append(off)
            end = off + s.nbytes
            prev = s if contiguous else None
        # The views below keep the allocation alive (an allocator's array must own or
        # reference its memory, as TensorFlow's views do); its owner is not needed.
        chosen = allocate if end >= ALLOCATED_GROUP_BYTES else None
        base, _ = _allocated((max(end, 1),), _BYTES, chosen)
        view = memoryview(base)
        task = _Task()
        for dst_start, dst_end, shard, src_start in runs:
            copies, release = self._copy_of(shard, src_start, base[dst_start:dst_end], crc)
            task.copies += copies
            task.release += release
        unit = _Unit([], [task], end)
        items = unit.items
        for s, off in zip(sources, offsets, strict=True):
            buffer = np.ndarray(s.shape, s.dtype, buffer=base, offset=off)
            if s.src is not None:  # strided
                task.copies.append((s.src, buffer))
            if crc:
                item = _Item(s.request, buffer, unmask_crc(s.entry.crc32c))
                item.pieces.append((0, len(task.crcs), s.nbytes))
                task.crcs.append(view[off : off + s.nbytes])
            else:
                item = _Item(s.request, buffer)
            items.append(item)
        return unit

    def _units(
        self, requests: list[ReadRequest], crc: bool, allocate: Allocator | None
    ) -> Iterator[_Unit]:
        # Small requests are grouped into units of at most this many bytes: within the
        # window, so that the bound "largest request + window" holds, and below
        # GROUP_BYTES, so that numpy does not ask for transparent huge pages for them.
        group_limit = max(1, min(PIECE_BYTES, self.window_bytes, GROUP_BYTES))
        group: list[_Source] = []
        group_bytes = 0
        for req in requests:
            s = self._source(req)
            if crc and req.slices is not None:
                raise ValueError("crc=True needs whole-tensor requests")
            if s.nbytes > group_limit:
                if group:
                    yield self._group_unit(group, crc, allocate)
                    group, group_bytes = [], 0
                yield self._big_unit(s, crc, allocate)
                continue
            padded = _align_up(s.nbytes)
            if group and group_bytes + padded > group_limit:
                yield self._group_unit(group, crc, allocate)
                group, group_bytes = [], 0
            group.append(s)
            group_bytes += padded
        if group:
            yield self._group_unit(group, crc, allocate)

    def stream(
        self,
        requests: Iterable[ReadRequest],
        *,
        crc: bool = False,
        allocate: Allocator | None = None,
    ) -> Iterator[Loaded]:
        """Fills one aligned buffer per request; yields :class:`Loaded` in file order.

        At most ``window_bytes`` plus the largest request are in flight (read but
        not yet consumed): a buffer is yielded, and the caller is expected to hand
        it over (to TensorFlow) before asking for the next. Buffers never overlap,
        even when two requests name the same key.

        Args:
            requests: what to read.
            crc: also checksum each buffer after copying (whole-tensor requests only).
            allocate: where buffers come from (see :data:`Allocator`; without
                it, numpy's); small requests share grouped allocations.

        Raises:
            CheckpointCorruptError: with ``crc=True``, a checksum is wrong.
        """
        entries = self.reader.entries

        def order(r: ReadRequest) -> tuple[int, int, int]:
            e = entries[r.key]
            first = (r.slices[0].start or 0) if r.slices else 0
            return (e.shard_id, e.offset, first)

        requests = sorted(requests, key=order)
        if not requests:
            return
        largest = max(self._request_nbytes(r) for r in requests)
        limit = self.window_bytes + largest
        pending: deque[_Unit] = deque()
        inflight = 0
        for unit in self._units(requests, crc, allocate):
            while pending and inflight + unit.nbytes > limit:
                done = pending.popleft()
                inflight -= done.nbytes
                yield from self._finish(done)
            unit.futures = [self.pool.submit(_run_task, task) for task in unit.tasks]
            pending.append(unit)
            inflight += unit.nbytes
            self.peak_inflight_bytes = max(self.peak_inflight_bytes, inflight)
        while pending:
            yield from self._finish(pending.popleft())

    def _request_nbytes(self, r: ReadRequest) -> int:
        entry = self.reader.entries[r.key]
        if r.slices is None:
            return entry.size
        dtype = self.dtype_of(r.key)
        itemsize = dtype.itemsize if dtype is not None else 1
        n = 1
        for s, d in zip(r.slices, entry.shape, strict=True):
            n *= len(range(*s.indices(d)))
        return n * itemsize

    def _finish(self, unit: _Unit) -> Iterator[Loaded]:
        results = [f.result() for f in unit.futures]
        for item in unit.items:
            if not item.pieces or not results[item.pieces[0][0]]:
                continue  # no checksums were asked for (or the tensor is empty)
            crc = _joined_crc(item.pieces, results)
            if crc != item.expected:
                key = item.request.key
                raise self._mismatch(key, self.reader.entries[key], crc)
        # Drop our references as we go, so a buffer lives only as long as its consumer
        # (TensorFlow, once adopted) keeps it.
        items = deque(unit.items)
        unit.items, unit.tasks, unit.futures = [], [], []
        while items:
            item = items.popleft()
            yield Loaded(item.request, item.buffer, item.owner)
