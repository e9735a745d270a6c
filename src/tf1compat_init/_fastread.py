"""Fast, TensorFlow-free reads of bundle data for :func:`~tf1compat_init.apply.apply_plan`.

Two passes over memory-mapped data shards, both parallel in threads (the CRC32C
code and numpy's copies release the GIL):

1. :meth:`FastReader.verify` checksums every planned tensor where it lies in the
   page cache, split into pieces so that one huge tensor still uses every core
   (piece CRCs are joined with :func:`crc32c_combine`). Nothing is allocated.
2. :meth:`FastReader.stream` copies each requested tensor (or slice of one) into
   a fresh 64-byte aligned buffer, which TensorFlow can adopt without a copy, and
   yields the buffers in file order while keeping the bytes in flight under a
   fixed budget.

With ``crc=True``, :meth:`FastReader.stream` checksums each buffer after copying
it instead, so a caller that stages everything before assigning gets values that
were verified where they will live.

Data files are memory-mapped read-only and stay open until :meth:`FastReader.close`,
so a checkpoint that is replaced or deleted during a restore is read consistently.
As with any memory-mapped reader (``numpy.memmap``, safetensors), a data file that
another process truncates in place during a read makes the process fail with
``SIGBUS``; TensorFlow itself never rewrites a checkpoint in place.
"""

from __future__ import annotations

import logging
import mmap
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._bundle import BundleEntry, BundleReader, crc32c, unmask_crc
from .errors import CheckpointCorruptError, CheckpointNotFoundError, UnsupportedCheckpointError

__all__ = [
    "ALIGNMENT",
    "FastReader",
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

#: Default bytes in flight during streaming, on top of the largest single request.
DEFAULT_WINDOW_BYTES = 64 << 20


def default_threads() -> int:
    """Worker threads for reads: the CPU count, at least 2, at most 8."""
    return max(2, min(8, os.cpu_count() or 1))


def aligned_empty(shape: Sequence[int], dtype: Any, align: int = ALIGNMENT) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ``align``-byte boundary.

    Args:
        shape: the array's shape.
        dtype: any numpy dtype (ml_dtypes types included).
        align: the alignment in bytes, a power of two.

    Returns:
        The array; it keeps its (slightly larger) backing allocation alive.
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + nbytes].view(dtype).reshape(tuple(shape))


# ---------------------------------------------------------------------------
# Joining CRC32Cs of consecutive pieces.
# ---------------------------------------------------------------------------

_POLY_REFLECTED = 0x82F63B78


def _gf2_times(matrix: list[int], vector: int) -> int:
    out = 0
    i = 0
    while vector:
        if vector & 1:
            out ^= matrix[i]
        vector >>= 1
        i += 1
    return out


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, row) for row in matrix]


def _zero_byte_operators() -> list[list[int]]:
    # ops[k] advances a CRC register over 2**k zero bytes; built once.
    one_bit = [_POLY_REFLECTED] + [1 << (n - 1) for n in range(1, 32)]
    op = _gf2_square(_gf2_square(_gf2_square(one_bit)))  # 8 zero bits
    ops = [op]
    for _ in range(63):
        op = _gf2_square(op)
        ops.append(op)
    return ops


_ZERO_OPS: list[list[int]] | None = None


def crc32c_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC32C of ``A + B`` from ``crc32c(A)``, ``crc32c(B)`` and ``len(B)``.

    The method of zlib's ``crc32_combine``, for the Castagnoli polynomial: the
    CRC register of ``A`` is advanced over ``len(B)`` zero bytes by repeated
    squaring of the one-zero-bit operator in GF(2), then XORed with ``crc32c(B)``.

    Args:
        crc1: the CRC32C of the first piece.
        crc2: the CRC32C of the second piece.
        len2: the second piece's length in bytes.

    Returns:
        The CRC32C of the concatenation.
    """
    global _ZERO_OPS
    if len2 <= 0:
        return crc1
    if _ZERO_OPS is None:
        _ZERO_OPS = _zero_byte_operators()
    k = 0
    while len2:
        if len2 & 1:
            crc1 = _gf2_times(_ZERO_OPS[k], crc1)
        len2 >>= 1
        k += 1
    return crc1 ^ crc2


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


@dataclass
class _Copy:
    """One copy job: ``src`` (a view of mapped file bytes) into ``dst``."""

    src: np.ndarray
    dst: np.ndarray
    crc: bool = False


@dataclass
class _Unit:
    """Requests whose buffers are filled and yielded together."""

    items: list[tuple[ReadRequest, np.ndarray]] = field(default_factory=list)
    tasks: list[list[_Copy]] = field(default_factory=list)
    nbytes: int = 0
    # For crc=True: per item, its expected CRC and the pieces' (index, length).
    checks: list[tuple[str, int, list[tuple[int, int, int]]]] = field(default_factory=list)
    futures: list[Future] = field(default_factory=list)


def _crc_pieces(jobs: list[tuple[np.ndarray, int]]) -> list[int]:
    return [crc32c(view) for view, _ in jobs]


def _run_copies(jobs: list[_Copy]) -> list[int | None]:
    out: list[int | None] = []
    for job in jobs:
        np.copyto(job.dst, job.src, casting="no")
        out.append(crc32c(job.dst) if job.crc else None)
    return out


def _pieces(nbytes: int, piece: int) -> list[tuple[int, int]]:
    if nbytes == 0:
        return [(0, 0)]
    return [(s, min(piece, nbytes - s)) for s in range(0, nbytes, piece)]


class FastReader:
    """Verifies and streams the plain numeric tensors of a bundle checkpoint.

    Use as a context manager; ``close()`` unmaps the data files.

    Args:
        reader: the checkpoint's :class:`~tf1compat_init._bundle.BundleReader`.
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
        self._sizes: dict[int, int] = {}
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

    def close(self) -> None:
        """Stops the threads and unmaps the data files (once no view is left)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._bases.clear()
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
        try:
            dtype = self.reader._check_decodable(entry)
        except UnsupportedCheckpointError:
            return None
        return None if dtype.hasobject else dtype

    # -- files -------------------------------------------------------------------

    def _shard(self, entry: BundleEntry, key: str) -> np.ndarray:
        """The mapped bytes of ``entry``'s shard, after checking the entry fits in it."""
        sid = entry.shard_id
        if sid not in self._sizes:
            path = self.reader.data_path(sid)
            try:
                f = open(path, "rb", buffering=0)  # noqa: SIM115 (closed in close())
            except FileNotFoundError:
                raise CheckpointNotFoundError(
                    f"data file {path} of checkpoint {self.reader.prefix} does not exist"
                    f" (needed for {key!r})"
                ) from None
            self._files[sid] = f
            size = os.fstat(f.fileno()).st_size
            self._sizes[sid] = size
            if size:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                self._maps[sid] = mm
                self._bases[sid] = np.frombuffer(mm, dtype=np.uint8)
            else:
                self._bases[sid] = np.empty(0, dtype=np.uint8)
        size = self._sizes[sid]
        if entry.offset + entry.size > size:
            raise CheckpointCorruptError(
                f"data file {self.reader.data_path(sid)} is too short for tensor {key!r}: it"
                f" needs {entry.offset + entry.size} bytes (offset {entry.offset} + size"
                f" {entry.size}) but has {size}"
            )
        return self._bases[sid]

    def _bytes(self, key: str) -> tuple[BundleEntry, np.ndarray, np.dtype]:
        entry = self.reader.entries[key]
        dtype = self.dtype_of(key)
        if dtype is None:
            raise UnsupportedCheckpointError(f"{key!r} is not a plain numeric tensor")
        self.reader._check_size(entry, key, dtype)
        base = self._shard(entry, key)
        return entry, base[entry.offset : entry.offset + entry.size], dtype

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
        keys = sorted(
            dict.fromkeys(keys),
            key=lambda k: (self.reader.entries[k].shard_id, self.reader.entries[k].offset),
        )
        views = {k: self._bytes(k) for k in keys}
        # Split big tensors into pieces and batch small ones, so tasks are a few MiB.
        tasks: list[list[tuple[np.ndarray, int]]] = []
        where: dict[str, list[tuple[int, int, int]]] = {}  # key -> (task, index, length)
        batch: list[tuple[np.ndarray, int]] = []
        batch_bytes = 0
        for key in keys:
            _, data, _ = views[key]
            spots = []
            for start, length in _pieces(data.size, PIECE_BYTES):
                if batch_bytes + length > PIECE_BYTES and batch:
                    tasks.append(batch)
                    batch, batch_bytes = [], 0
                spots.append((len(tasks), len(batch), length))
                batch.append((data[start : start + length], length))
                batch_bytes += length
            where[key] = spots
        if batch:
            tasks.append(batch)
        results = list(self.pool.map(_crc_pieces, tasks)) if len(tasks) > 1 else None
        if results is None:
            results = [_crc_pieces(t) for t in tasks]
        for key in keys:
            entry = views[key][0]
            crc = 0
            for t, i, length in where[key]:
                crc = crc32c_combine(crc, results[t][i], length)
            if crc != unmask_crc(entry.crc32c):
                raise self._mismatch(key, entry, crc)
        logger.debug("verified %d tensors with %d tasks", len(keys), len(tasks))

    # -- pass 2: stream into aligned buffers --------------------------------------

    def _units(self, requests: list[ReadRequest], crc: bool) -> Iterator[_Unit]:
        unit = _Unit()
        small: list[_Copy] = []
        small_bytes = 0
        # Small tensors are grouped into units of at most this many bytes; within
        # the window, so that the bound "largest request + window" holds.
        group = max(1, min(PIECE_BYTES, self.window_bytes))

        def flush_small() -> None:
            nonlocal small, small_bytes
            if small:
                unit.tasks.append(small)
                small, small_bytes = [], 0

        for req in requests:
            entry, data, dtype = self._bytes(req.key)
            if req.slices is None:
                src = data.view(dtype).reshape(entry.shape) if data.size else None
                shape = entry.shape
            else:
                full = data.view(dtype).reshape(entry.shape) if data.size else None
                src = None if full is None else full[req.slices]
                shape = tuple(
                    len(range(*s.indices(d))) for s, d in zip(req.slices, entry.shape, strict=True)
                )
            dst = aligned_empty(shape, dtype)
            nbytes = dst.nbytes
            if unit.items and unit.nbytes + nbytes > group:
                flush_small()
                yield unit
                unit = _Unit()
            unit.items.append((req, dst))
            unit.nbytes += nbytes
            if src is None or nbytes == 0:
                if crc:
                    unit.checks.append((req.key, unmask_crc(entry.crc32c), []))
                continue
            if src.flags.c_contiguous:
                # Copy raw bytes: numpy's fastest path, whatever the source alignment.
                flat_src = src.reshape(-1).view(np.uint8)
                flat_dst = dst.reshape(-1).view(np.uint8)
                pieces = _pieces(nbytes, PIECE_BYTES)
                if len(pieces) == 1:
                    job = _Copy(flat_src, flat_dst, crc)
                    if small_bytes + nbytes > group:
                        flush_small()
                    spots = [(len(unit.tasks), len(small), nbytes)]
                    small.append(job)
                    small_bytes += nbytes
                else:
                    flush_small()
                    spots = []
                    for s, n in pieces:
                        spots.append((len(unit.tasks), 0, n))
                        unit.tasks.append([_Copy(flat_src[s : s + n], flat_dst[s : s + n], crc)])
            else:
                # A partition across an inner dimension: one strided copy.
                flush_small()
                spots = [(len(unit.tasks), 0, nbytes)]
                unit.tasks.append([_Copy(src, dst, crc)])
            if crc:
                if req.slices is not None:
                    raise ValueError("crc=True needs whole-tensor requests")
                unit.checks.append((req.key, unmask_crc(entry.crc32c), spots))
        flush_small()
        if unit.items:
            yield unit

    def stream(
        self, requests: Iterable[ReadRequest], *, crc: bool = False
    ) -> Iterator[tuple[ReadRequest, np.ndarray]]:
        """Fills one aligned buffer per request; yields ``(request, buffer)`` in file order.

        At most ``window_bytes`` plus the largest request are in flight (read but
        not yet consumed): a buffer is yielded, and the caller is expected to hand
        it over (to TensorFlow) before asking for the next.

        Args:
            requests: what to read.
            crc: also checksum each buffer after copying (whole-tensor requests only).

        Raises:
            CheckpointCorruptError: with ``crc=True``, a checksum is wrong.
        """

        def order(r: ReadRequest) -> tuple[int, int, int]:
            e = self.reader.entries[r.key]
            first = (r.slices[0].start or 0) if r.slices else 0
            return (e.shard_id, e.offset, first)

        requests = sorted(requests, key=order)
        if not requests:
            return
        largest = max(self._request_nbytes(r) for r in requests)
        limit = self.window_bytes + largest
        pending: deque[_Unit] = deque()
        inflight = 0
        for unit in self._units(requests, crc):
            while pending and inflight + unit.nbytes > limit:
                done = pending.popleft()
                inflight -= done.nbytes
                yield from self._finish(done)
            unit.futures = [self.pool.submit(_run_copies, jobs) for jobs in unit.tasks]
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

    def _finish(self, unit: _Unit) -> Iterator[tuple[ReadRequest, np.ndarray]]:
        results = [f.result() for f in unit.futures]
        for key, expected, spots in unit.checks:
            crc = 0
            for t, i, length in spots:
                crc = crc32c_combine(crc, results[t][i], length)
            if crc != expected:
                raise self._mismatch(key, self.reader.entries[key], crc)
        # Drop our references as we go, so a buffer lives only as long as its consumer
        # (TensorFlow, once adopted) keeps it.
        items = deque(unit.items)
        unit.items, unit.tasks = [], []
        while items:
            yield items.popleft()
