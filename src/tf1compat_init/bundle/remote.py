# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Verified, bounded-memory reads of a checkpoint at a URL, for the restore engine.

:class:`RemoteReader` answers what :class:`~tf1compat_init.bundle.fastread.FastReader`
answers (``dtype_of``, ``verify``, ``stream``, ``check_unchanged``) for a checkpoint
read through ``tf.io.gfile`` (:mod:`tf1compat_init.bundle.storage`), where nothing can be
memory-mapped. Each tensor's bytes are read with ranged reads straight into its
64-byte aligned buffer (neighbouring small tensors with one read), every CRC32C is
checked on the buffer, and at most ``window_bytes`` plus the largest request are
read ahead of the consumer (plus, per worker thread, the one read buffer of at most
``PIECE_BYTES`` that a group of small tensors passes through). Nothing downloads a
whole file.

:func:`reader_for` picks the reader for a bundle: the memory-mapped one for local
files (unchanged), this one for URLs.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..errors import CheckpointCorruptError, UnsupportedCheckpointError
from . import storage as _storage
from .crc import crc32c, crc32c_combine, unmask_crc
from .entries import BundleEntry
from .fastread import (
    ALLOCATED_GROUP_BYTES,
    DEFAULT_WINDOW_BYTES,
    PIECE_BYTES,
    Allocator,
    FastReader,
    Loaded,
    ReadRequest,
    _align_up,
    _allocated,
    aligned_empty,
    default_threads,
)
from .reader import BundleReader

__all__ = ["RemoteReader", "reader_for"]

logger = logging.getLogger(__name__)

#: Small tensors this close together in a file are read with one ranged read.
_MAX_GAP = 64 << 10


def reader_for(
    bundle: BundleReader, *, threads: int | None = None, window_bytes: int = DEFAULT_WINDOW_BYTES
) -> Any:
    """The reader the engine uses for ``bundle``: memory maps locally, ranged reads for URLs."""
    if getattr(bundle, "remote", False):
        return RemoteReader(bundle, threads=threads, window_bytes=window_bytes)
    return FastReader(bundle, threads=threads, window_bytes=window_bytes)


class _Part:
    """One request as read: its entry, dtype, buffer, and the bytes it holds in flight."""

    __slots__ = ("request", "entry", "dtype", "buffer", "owner", "cost")

    def __init__(self, request: ReadRequest, entry: BundleEntry, dtype: np.dtype) -> None:
        self.request = request
        self.entry = entry
        self.dtype = dtype
        self.buffer: np.ndarray | None = None
        self.owner: Any = None
        # A slice of a tensor is read whole first, then copied: both are held.
        self.cost = entry.size + (_slice_nbytes(request, entry, dtype) if request.slices else 0)


def _slice_nbytes(request: ReadRequest, entry: BundleEntry, dtype: np.dtype) -> int:
    assert request.slices is not None
    shape = [len(range(*s.indices(d))) for s, d in zip(request.slices, entry.shape, strict=True)]
    return math.prod(shape) * dtype.itemsize


class RemoteReader:
    """Reads the plain numeric tensors of a remote bundle; the engine's reader for URLs.

    Args:
        reader: the checkpoint's :class:`~tf1compat_init.bundle.reader.BundleReader`.
        threads: concurrent ranged reads (default :func:`default_threads`).
        window_bytes: bytes read ahead of the consumer, beyond the largest request.
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
        self._dtypes: dict[str, np.dtype | None] = {}
        self._stamps: dict[int, tuple[int, int]] = {}
        self._pool: ThreadPoolExecutor | None = None
        #: The most bytes :meth:`stream` held read ahead of its consumer.
        self.peak_inflight_bytes = 0
        #: Bytes asked from the file system so far.
        self.bytes_read = 0

    def __enter__(self) -> RemoteReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="tf1compat-remote")
        return self._pool

    def dtype_of(self, key: str) -> np.dtype | None:
        """As :meth:`FastReader.dtype_of`: None for what the caller reads another way."""
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

    def _stamp(self, shard: int, label: str) -> None:
        """Records the shard's size and mtime on first use, after checking it exists."""
        if shard not in self._stamps:
            path = self.reader.data_path(shard)
            try:
                self._stamps[shard] = _storage.stat(path)
            except FileNotFoundError as e:
                raise type(e)(
                    f"{e} (data file of checkpoint {self.reader.prefix}, needed for {label})"
                ) from None

    def check_unchanged(self) -> None:
        """Raises if a data file's size or modification time changed since it was first read."""
        for shard, stamp in self._stamps.items():
            path = self.reader.data_path(shard)
            if _storage.stat(path) != stamp:
                raise CheckpointCorruptError(
                    f"data file {path} was modified while it was being read (its size or "
                    f"modification time changed); the values read from it cannot be trusted. "
                    f"Restore again once nothing writes to the checkpoint"
                )

    def _part(self, request: ReadRequest) -> _Part:
        key = request.key
        entry = self.reader.entries[key]
        dtype = self.dtype_of(key)
        if dtype is None:
            raise UnsupportedCheckpointError(f"{key!r} is not a plain numeric tensor")
        self.reader._check_size(entry, repr(key), dtype)
        self._stamp(entry.shard_id, repr(key))
        self.reader.check_in_shard(entry, self._stamps[entry.shard_id][0], repr(key))
        return _Part(request, entry, dtype)

    def _read(self, shard: int, start: int, out: np.ndarray) -> None:
        """Fills the flat uint8 ``out`` from ``shard`` at ``start`` (in timed chunks)."""
        if not out.size:
            return
        path = self.reader.data_path(shard)
        with _storage.RemoteFile(path, self._stamps[shard][0]) as f:
            f.seek(start)
            got = f.readinto(out)
        self.bytes_read += got
        if got != out.size:
            raise CheckpointCorruptError(
                f"data file {path} ended at byte {start + got} while reading bytes {start} to "
                f"{start + out.size}"
            )

    def _mismatch(self, part: _Part, computed: int) -> CheckpointCorruptError:
        return CheckpointCorruptError(
            f"checksum mismatch for tensor {part.request.key!r} in data file"
            f" {self.reader.data_path(part.entry.shard_id)}: stored crc32c"
            f" 0x{unmask_crc(part.entry.crc32c):08x}, computed 0x{computed:08x}. The checkpoint"
            f" is corrupt; nothing was assigned"
        )

    # -- the work of one unit, in a worker thread ------------------------------------

    def _run_group(self, parts: list[_Part]) -> None:
        """Small whole tensors close together: one ranged read, then one copy each."""
        first, last = parts[0].entry, parts[-1].entry
        span = np.empty(last.offset + last.size - first.offset, dtype=np.uint8)
        self._read(first.shard_id, first.offset, span)
        for p in parts:
            start = p.entry.offset - first.offset
            data = span[start : start + p.entry.size]
            crc = crc32c(data)
            if crc != unmask_crc(p.entry.crc32c):
                raise self._mismatch(p, crc)
            assert p.buffer is not None
            p.buffer.reshape(-1).view(np.uint8)[:] = data

    def _run_piece(self, part: _Part, dst: np.ndarray, start: int) -> int:
        """One piece of a big tensor, read straight into its buffer; its CRC32C."""
        self._read(part.entry.shard_id, part.entry.offset + start, dst)
        return crc32c(dst)

    def _run_slice(self, part: _Part) -> None:
        """A slice of a tensor (a partition): the tensor is read and checked whole."""
        e = part.entry
        whole = aligned_empty(e.shape, part.dtype)
        flat = whole.reshape(-1).view(np.uint8)
        self._read(e.shard_id, e.offset, flat)
        crc = crc32c(flat)
        if crc != unmask_crc(e.crc32c):
            raise self._mismatch(part, crc)
        assert part.buffer is not None and part.request.slices is not None
        np.copyto(part.buffer, whole[part.request.slices])

    # -- scheduling ---------------------------------------------------------------

    def _units(self, parts: list[_Part]) -> Iterator[list[_Part]]:
        """Groups neighbouring small whole tensors; everything else goes alone."""
        limit = max(1, min(PIECE_BYTES, self.window_bytes))
        group: list[_Part] = []
        for p in parts:
            small = p.request.slices is None and p.entry.size <= limit
            if group and (
                not small
                or p.entry.shard_id != group[0].entry.shard_id
                or p.entry.offset < group[-1].entry.offset + group[-1].entry.size
                or p.entry.offset - (group[-1].entry.offset + group[-1].entry.size) > _MAX_GAP
                or p.entry.offset + p.entry.size - group[0].entry.offset > limit
            ):
                yield group
                group = []
            if small:
                group.append(p)
            else:
                yield [p]
        if group:
            yield group

    def _submit(self, unit: list[_Part], allocate: Allocator | None) -> list[Future]:
        # Buffers are allocated here, in the consumer's thread (TensorFlow's allocator
        # included), and filled by the workers. A group of small tensors shares one
        # allocation, each tensor an aligned view of it (as the local reader does): one
        # TensorFlow allocation per tensor would cost more than reading it.
        if len(unit) > 1:
            offsets = []
            end = 0
            for p in unit:
                offsets.append(_align_up(end))
                end = offsets[-1] + p.entry.size
            chosen = allocate if end >= ALLOCATED_GROUP_BYTES else None
            base, _ = _allocated((max(end, 1),), np.dtype(np.uint8), chosen)
            for p, off in zip(unit, offsets, strict=True):
                p.buffer = np.ndarray(p.entry.shape, p.dtype, buffer=base, offset=off)
        for p in unit if len(unit) == 1 else ():
            shape = p.entry.shape
            if p.request.slices is not None:
                shape = tuple(
                    len(range(*s.indices(d)))
                    for s, d in zip(p.request.slices, p.entry.shape, strict=True)
                )
            p.buffer, p.owner = _allocated(shape, p.dtype, allocate)
        pool = self.pool
        part = unit[0]
        if part.request.slices is not None:
            return [pool.submit(self._run_slice, part)]
        if len(unit) > 1 or part.entry.size <= PIECE_BYTES:
            return [pool.submit(self._run_group, unit)]
        # A big tensor: pieces read in parallel, their CRC32Cs joined in _finish.
        assert part.buffer is not None
        flat = part.buffer.reshape(-1).view(np.uint8)
        return [
            pool.submit(self._run_piece, part, flat[s : s + PIECE_BYTES], s)
            for s in range(0, part.entry.size, PIECE_BYTES)
        ]

    def _finish(self, unit: list[_Part], futures: list[Future]) -> Iterator[Loaded]:
        results = [f.result() for f in futures]
        if results and isinstance(results[0], int):  # the pieces of one big tensor
            part = unit[0]
            crc = 0
            for i, piece_crc in enumerate(results):
                n = min(PIECE_BYTES, part.entry.size - i * PIECE_BYTES)
                crc = crc32c_combine(crc, piece_crc, n)
            if crc != unmask_crc(part.entry.crc32c):
                raise self._mismatch(part, crc)
        for p in unit:
            buffer, owner = p.buffer, p.owner
            p.buffer = p.owner = None
            assert buffer is not None
            yield Loaded(p.request, buffer, owner)

    def stream(
        self,
        requests: Iterable[ReadRequest],
        *,
        crc: bool = True,
        allocate: Allocator | None = None,
    ) -> Iterator[Loaded]:
        """Reads each request into a fresh aligned buffer; yields them in file order.

        Every value is checksummed on its buffer whatever ``crc`` says (a remote file
        may change between two reads). At most ``window_bytes`` plus the largest
        request are read ahead of the consumer.

        Raises:
            CheckpointCorruptError: a checksum or size is wrong, naming the tensor and file.
            CheckpointNotFoundError: a data file is missing or the storage does not answer.
        """
        del crc  # always checked
        entries = self.reader.entries

        def order(r: ReadRequest) -> tuple[int, int, int]:
            e = entries[r.key]
            first = (r.slices[0].start or 0) if r.slices else 0
            return (e.shard_id, e.offset, first)

        parts = [self._part(r) for r in sorted(requests, key=order)]
        if not parts:
            return
        limit = self.window_bytes + max(p.cost for p in parts)
        pending: deque[tuple[list[_Part], list[Future], int]] = deque()
        inflight = 0
        try:
            for unit in self._units(parts):
                cost = sum(p.cost for p in unit)
                while pending and inflight + cost > limit:
                    done, futures, n = pending.popleft()
                    inflight -= n
                    yield from self._finish(done, futures)
                pending.append((unit, self._submit(unit, allocate), cost))
                inflight += cost
                self.peak_inflight_bytes = max(self.peak_inflight_bytes, inflight)
            while pending:
                done, futures, n = pending.popleft()
                inflight -= n
                yield from self._finish(done, futures)
        finally:
            for _, futures, _ in pending:
                for f in futures:
                    f.cancel()

    def verify(self, keys: Iterable[str]) -> None:
        """Reads and checksums every key, holding at most the stream's bound in memory."""
        for loaded in self.stream([ReadRequest(k) for k in dict.fromkeys(keys)]):
            del loaded
        logger.debug("verified %s remotely", self.reader.prefix)
