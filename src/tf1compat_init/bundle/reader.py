# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""A native, TensorFlow-free reader of TensorFlow's tensor bundle checkpoints.

A checkpoint ``prefix`` is one ``prefix.index`` file plus data shards
``prefix.data-NNNNN-of-MMMMM``.  The index is a LevelDB-style table (see
TensorFlow's ``core/lib/io/{table,block,format}.cc``) whose first entry, under
the empty key, is a ``BundleHeaderProto`` and whose other values are
``BundleEntryProto``s saying where each tensor's bytes are and what their
CRC32C is (``core/util/tensor_bundle/tensor_bundle.cc``).

The reader is strict by design: every length and offset read from a file is
checked against the size of the file it points into before anything is
allocated, every block and tensor checksum is verified (unless the caller opts
out for tensors), and anything it cannot decode exactly raises
:class:`~tf1compat_init.errors.UnsupportedCheckpointError` so that callers can
fall back to TensorFlow instead of getting a wrong value.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, NoReturn

import numpy as np

from ..engine.basics.gc_pause import gc_paused
from ..errors import CheckpointCorruptError, CheckpointNotFoundError, UnsupportedCheckpointError
from . import proto as _proto
from . import storage as _storage
from .crc import _U32, crc32c, unmask_crc
from .dtypes import _DTYPE_NAMES, _dtype_name, numpy_dtype
from .entries import _BUNDLE_VERSION, BundleEntry, _parse_header, parse_entry
from .objects import OBJECT_GRAPH_KEY, ObjectGraph
from .proto import ProtoDecodeError, to_str
from .slice_keys import encode_tensor_name_slice
from .table import _BadIndex, _read_table

__all__ = ["BundleReader"]

_LOG = logging.getLogger(__name__)


def _numel(shape: tuple[int, ...]) -> int:
    """The number of elements; -1 if a dim is negative (an invalid shape)."""
    n = 1
    for d in shape:
        if d < 0:
            return -1
        n *= d
    return n


def _slice_label(key: str, extents: tuple[tuple[int, int], ...]) -> str:
    # How errors name one stored slice of a partitioned tensor.
    spec = ":".join("-" if n < 0 else f"{s},{n}" for s, n in extents)
    return f"{key!r} (slice {spec})"


def _slice_bounds(extents: tuple[tuple[int, int], ...], shape: tuple[int, ...]) -> list[range]:
    return [
        range(0, dim) if length < 0 else range(start, start + length)
        for (start, length), dim in zip(extents, shape, strict=True)
    ]


# ---------------------------------------------------------------------------
# The reader.
# ---------------------------------------------------------------------------

_READ_CHUNK = 8 << 20  # checksum each chunk while it is still in cache


class BundleReader:
    """Reads a TensorFlow tensor bundle checkpoint without TensorFlow.

    The whole index is parsed and validated on construction; data files are
    opened per read, so one reader can be shared between threads.

    Attributes:
        prefix: the checkpoint prefix (``.../model.ckpt-100``).
        num_shards: the number of data files, from the index header.
        entries: metadata of every user-visible key, including
            ``_CHECKPOINTABLE_OBJECT_GRAPH`` when present; not the header and
            not the internal keys of tensor slices.
    """

    def __init__(self, prefix: str, *, index_path: str | None = None) -> None:
        """Parses ``prefix + ".index"``.

        Args:
            prefix: the checkpoint prefix, without ``.index``.
            index_path: read the index from this file instead (a writer's temporary
                output, kept under a name no loader takes for a checkpoint).

        Raises:
            CheckpointNotFoundError: the index file does not exist.
            CheckpointCorruptError: the index is truncated or malformed.
            UnsupportedCheckpointError: the index uses a feature this reader
                does not implement (a compressed block, a newer format).
        """
        self.prefix = os.fspath(prefix)
        #: Whether the checkpoint is at a URL, read through ``tf.io.gfile``.
        self.remote = _storage.is_url(self.prefix)
        self._object_graph: ObjectGraph | None = None
        self._index_path = index_path if index_path is not None else self.prefix + ".index"
        try:
            with gc_paused():  # thousands of entries, no cycles
                table = _read_table(self._index_path)
                self._init_from_table(table)
        except _BadIndex as e:
            raise CheckpointCorruptError(
                f"corrupt checkpoint index {self._index_path}: {e}"
            ) from None
        except ProtoDecodeError as e:
            raise CheckpointCorruptError(
                f"corrupt checkpoint index {self._index_path}: bad protobuf: {e}"
            ) from None
        except UnsupportedCheckpointError as e:
            raise UnsupportedCheckpointError(f"checkpoint index {self._index_path}: {e}") from None
        _LOG.debug(
            "read %s: %d entries, %d shards", self._index_path, len(self.entries), self.num_shards
        )

    def _init_from_table(self, table: list[tuple[bytes, bytes]]) -> None:
        if not table or table[0][0] != b"":
            raise _BadIndex("no header entry (empty key)")
        header = _parse_header(table[0][1])
        if header.num_shards < 1:
            raise _BadIndex(f"the header says num_shards={header.num_shards}")
        if header.min_consumer > _BUNDLE_VERSION or _BUNDLE_VERSION in header.bad_consumers:
            raise UnsupportedCheckpointError(
                f"bundle format version producer={header.producer}"
                f" min_consumer={header.min_consumer} is newer than this reader"
            )
        self.num_shards = header.num_shards
        self._big_endian = header.big_endian

        entries: dict[str, BundleEntry] = {}
        self._slice_entries: dict[bytes, BundleEntry] = {}
        names = _DTYPE_NAMES
        num_shards = self.num_shards
        for raw_key, value in table[1:]:
            try:
                dtype, shape, shard_id, offset, size, crc, slices = parse_entry(value)
            except ProtoDecodeError as e:
                raise _BadIndex(f"entry {raw_key!r}: bad protobuf: {e}") from None
            name = names.get(dtype)
            if (
                name is not None
                and not slices
                and 0 <= shard_id < num_shards
                and (offset | size) >= 0  # neither is negative
                and 0 <= _numel(shape) < 1 << 63  # no dim is negative, not too many elements
                and raw_key[:1] != b"\x00"
            ):
                # The common case, checked in line; anything else is validated below.
                key = raw_key.decode("utf-8", "surrogateescape")
                entries[key] = BundleEntry(key, name, shape, shard_id, offset, size, crc, ())
                continue
            is_slice = raw_key.startswith(b"\x00")
            key = to_str(raw_key)
            entry = BundleEntry(
                key=key,
                dtype=_dtype_name(dtype),
                shape=shape,
                shard_id=shard_id,
                offset=offset,
                size=size,
                crc32c=crc,
                slices=slices,
            )
            self._validate_entry(entry, key if not is_slice else repr(raw_key))
            if is_slice:
                self._slice_entries[raw_key] = entry
            else:
                entries[key] = entry
        self.entries = entries

    def _validate_entry(self, entry: BundleEntry, shown: str) -> None:
        if entry.dtype.endswith("_ref") or entry.dtype == "unknown_dtype_0":
            # Reference types and DT_INVALID are never stored; handing such an entry to
            # TensorFlow's reader (the fallback for dtypes read natively) aborts the process.
            raise _BadIndex(f"entry {shown}: dtype {entry.dtype} cannot be stored in a checkpoint")
        if any(d < 0 for d in entry.shape):
            raise _BadIndex(f"entry {shown}: invalid shape {entry.shape}")
        if _numel(entry.shape) >= 1 << 63:
            raise _BadIndex(f"entry {shown}: shape {entry.shape} has too many elements")
        if entry.slices:
            for extents in entry.slices:
                if len(extents) != len(entry.shape):
                    raise _BadIndex(
                        f"entry {shown}: slice {extents} does not match rank {len(entry.shape)}"
                    )
                for (start, length), dim in zip(extents, entry.shape, strict=True):
                    if start < 0 or (length >= 0 and start + length > dim):
                        raise _BadIndex(
                            f"entry {shown}: slice {extents} is outside shape {entry.shape}"
                        )
            return
        if not 0 <= entry.shard_id < self.num_shards:
            raise _BadIndex(
                f"entry {shown}: shard {entry.shard_id} is not below num_shards={self.num_shards}"
            )
        if entry.offset < 0 or entry.size < 0:
            raise _BadIndex(f"entry {shown}: negative offset {entry.offset} or size {entry.size}")

    # -- files ---------------------------------------------------------------

    @property
    def index_path(self) -> str:
        """The ``.index`` file's path."""
        return self._index_path

    def data_path(self, shard_id: int) -> str:
        """The path of one data shard.

        Args:
            shard_id: the shard number, ``0 <= shard_id < num_shards``.

        Returns:
            ``f"{prefix}.data-{shard_id:05d}-of-{num_shards:05d}"``.
        """
        return f"{self.prefix}.data-{shard_id:05d}-of-{self.num_shards:05d}"

    def missing_files(self) -> list[str]:
        """The checkpoint files that a full read needs but that do not exist.

        Returns:
            The index path if it is gone, and the path of every data shard
            that holds at least one stored tensor and does not exist.
        """
        missing = []
        if not _storage.exists(self._index_path):
            missing.append(self._index_path)
        shards = {e.shard_id for e in self.entries.values() if not e.slices}
        shards.update(e.shard_id for e in self._slice_entries.values())
        for shard in sorted(shards):
            path = self.data_path(shard)
            if not _storage.exists(path):
                missing.append(path)
        return missing

    def short_files(self) -> list[str]:
        """The existing data shards that end before a tensor the index places in them.

        A cheap check (one ``stat`` per shard) that finds a truncated copy or an
        unfinished download when the checkpoint is opened rather than when the first
        affected tensor is read.

        Returns:
            One description per short shard: its path, its size, and the tensor that
            ends furthest beyond it. Missing shards are :meth:`missing_files`'s.
        """
        labels = {
            encode_tensor_name_slice(key.encode("utf-8", "surrogateescape"), ext): _slice_label(
                key, ext
            )
            for key, e in self.entries.items()
            for ext in e.slices
        }
        stored = [(repr(k), e) for k, e in self.entries.items() if not e.slices]
        stored += [(labels.get(raw, repr(raw)), e) for raw, e in self._slice_entries.items()]
        ends: dict[int, tuple[int, str]] = {}
        for label, e in stored:
            end = e.offset + e.size
            if e.size and end > ends.get(e.shard_id, (0, ""))[0]:
                ends[e.shard_id] = (end, label)
        short = []
        for shard, (end, label) in sorted(ends.items()):
            path = self.data_path(shard)
            try:
                actual = _storage.getsize(path)
            except OSError:
                continue
            if actual < end:
                short.append(f"{path} has {actual} bytes but tensor {label} ends at byte {end}")
        return short

    # -- reading -------------------------------------------------------------

    def _entry(self, key: str) -> BundleEntry:
        try:
            return self.entries[key]
        except KeyError:
            raise KeyError(f"key {key!r} is not in checkpoint {self.prefix}") from None

    def _check_decodable(self, entry: BundleEntry) -> np.dtype:
        if self._big_endian:
            raise UnsupportedCheckpointError(
                f"checkpoint {self.prefix} was written on a big-endian machine"
            )
        return numpy_dtype(entry.dtype)

    def open_shard(self, shard_id: int, label: str) -> tuple[Any, int]:
        """Opens data shard ``shard_id`` unbuffered; returns the file and its size.

        Raises:
            CheckpointNotFoundError: the shard does not exist (``label`` names the tensor).
        """
        path = self.data_path(shard_id)
        if self.remote:
            try:
                f = _storage.RemoteFile(path)
            except CheckpointNotFoundError as e:
                raise CheckpointNotFoundError(f"{e} (needed for {label})") from None
            return f, f.size
        try:
            f = open(path, "rb", buffering=0)  # noqa: SIM115 (the caller closes it)
        except FileNotFoundError:
            raise CheckpointNotFoundError(
                f"data file {path} of checkpoint {self.prefix} does not exist (needed for {label})"
            ) from None
        try:
            return f, os.fstat(f.fileno()).st_size
        except BaseException:
            f.close()
            raise

    def check_in_shard(self, entry: BundleEntry, size: int, label: str) -> None:
        """Raises ``CheckpointCorruptError`` when ``entry``'s bytes end past ``size``."""
        if entry.offset + entry.size > size:
            raise CheckpointCorruptError(
                f"data file {self.data_path(entry.shard_id)} is too short for tensor {label}:"
                f" it needs {entry.offset + entry.size} bytes (offset {entry.offset} + size"
                f" {entry.size}) but has {size}"
            )

    def _open(self, entry: BundleEntry, label: str) -> tuple[Any, str]:
        """Opens the entry's data file and checks that its bytes are all there."""
        f, size = self.open_shard(entry.shard_id, label)
        try:
            self.check_in_shard(entry, size, label)
        except BaseException:
            f.close()
            raise
        return f, self.data_path(entry.shard_id)

    def _checksum_error(self, label: str, path: str, stored: int, actual: int) -> NoReturn:
        raise CheckpointCorruptError(
            f"checksum mismatch for tensor {label} in data file {path}: stored crc32c"
            f" 0x{unmask_crc(stored):08x}, computed 0x{actual:08x}"
        )

    def _check_size(self, entry: BundleEntry, label: str, dtype: np.dtype) -> None:
        """Checks the stored size against the shape, so allocations stay bounded."""
        numel = _numel(entry.shape)
        if dtype.kind == "O":
            # At least one varint byte per string plus the 4-byte checksum of
            # the lengths (TensorFlow may write nothing for an empty tensor).
            if entry.size >= numel + 4 or (entry.size == 0 and numel == 0):
                return
            raise CheckpointCorruptError(
                f"entry of string tensor {label} in checkpoint index {self._index_path} has size"
                f" {entry.size}, too small for {numel} strings"
            )
        expected = numel * dtype.itemsize
        if entry.size != expected:
            raise CheckpointCorruptError(
                f"entry of tensor {label} in checkpoint index {self._index_path} has size"
                f" {entry.size}, but shape {entry.shape} of {entry.dtype} needs {expected} bytes"
            )

    def _read_numeric(
        self, entry: BundleEntry, label: str, dtype: np.dtype, verify: bool
    ) -> np.ndarray:
        """Reads a fixed-width tensor into a new array."""
        self._check_size(entry, label, dtype)
        f, path = self._open(entry, label)
        with f:
            # Safe: size == numel * itemsize, and _open checked that the
            # file really holds that many bytes.
            out = np.empty(entry.shape, dtype=dtype)
            buf = out.reshape(-1).view(np.uint8)
            mv = memoryview(buf)
            f.seek(entry.offset)
            crc = 0
            pos = 0
            n = entry.size
            while pos < n:
                want = min(_READ_CHUNK, n - pos)
                got = f.readinto(mv[pos : pos + want])
                if not got:
                    raise CheckpointCorruptError(
                        f"data file {path} ended while reading tensor {label}: expected"
                        f" {entry.offset + n} bytes, got {entry.offset + pos}"
                    )
                if verify:
                    crc = crc32c(buf[pos : pos + got], crc)
                pos += got
        if verify and crc != unmask_crc(entry.crc32c):
            self._checksum_error(label, path, entry.crc32c, crc)
        return out

    def _read_strings(self, entry: BundleEntry, label: str, verify: bool) -> list[bytes]:
        numel = _numel(entry.shape)
        self._check_size(entry, label, np.dtype(object))
        f, path = self._open(entry, label)
        if entry.size == 0:
            f.close()
            if verify and unmask_crc(entry.crc32c) != 0:
                self._checksum_error(label, path, entry.crc32c, 0)
            return []
        with f:
            f.seek(entry.offset)
            region = f.read(entry.size)
        if len(region) != entry.size:
            raise CheckpointCorruptError(
                f"data file {path} ended while reading tensor {label}: expected"
                f" {entry.offset + entry.size} bytes, got {entry.offset + len(region)}"
            )

        def corrupt(what: str) -> CheckpointCorruptError:
            return CheckpointCorruptError(f"string tensor {label} in data file {path}: {what}")

        head = np.frombuffer(region, dtype=np.uint8, count=numel)
        if numel == 0 or int(head.max()) < 0x80:
            lengths = head.astype(np.uint64)  # fast path: every length is one varint byte
            pos = numel
        else:
            decoded = []
            pos = 0
            limit = entry.size - 4
            try:
                for _ in range(numel):
                    n, pos = _proto.decode_varint(region, pos, limit)
                    decoded.append(n)
            except ProtoDecodeError as e:
                raise corrupt(f"bad string length: {e}") from None
            lengths = np.array(decoded, dtype=np.uint64)
        if pos + 4 > entry.size:
            raise corrupt("the string lengths run past the entry")
        # Summed as Python ints: a uint64 sum of corrupt lengths could wrap
        # around to the right total.
        total = sum(lengths.tolist())
        if total != entry.size - pos - 4:
            raise corrupt(
                f"string lengths add up to {total} bytes but the entry holds {entry.size - pos - 4}"
            )
        if verify:
            # TensorFlow checksums each length as a little-endian uint32 (uint64
            # only for strings of 4 GiB or more), not the varint bytes.
            if numel and int(lengths.max()) > _U32:
                packed = b"".join(struct.pack("<I" if n <= _U32 else "<Q", int(n)) for n in lengths)
            else:
                packed = lengths.astype("<u4").tobytes()
            crc = crc32c(packed)
            stored_len_crc = int.from_bytes(region[pos : pos + 4], "little")
            if unmask_crc(stored_len_crc) != crc:
                raise corrupt("the checksum of the string lengths does not match")
            crc = crc32c(region[pos:], crc)  # the length checksum itself, then the bytes
            if crc != unmask_crc(entry.crc32c):
                self._checksum_error(label, path, entry.crc32c, crc)
        out = []
        p = pos + 4
        for n in lengths.tolist():
            out.append(region[p : p + n])
            p += n
        return out

    def _stored_entry(
        self, full: BundleEntry, key: str, extents: tuple[tuple[int, int], ...]
    ) -> BundleEntry:
        raw_key = encode_tensor_name_slice(key.encode("utf-8", "surrogateescape"), extents)
        part = self._slice_entries.get(raw_key)
        if part is None:
            raise CheckpointCorruptError(
                f"checkpoint index {self._index_path} lists slice {extents} of tensor {key!r}"
                " but has no entry for it"
            )
        want_shape = tuple(len(r) for r in _slice_bounds(extents, full.shape))
        if part.dtype != full.dtype or part.shape != want_shape or part.slices:
            raise CheckpointCorruptError(
                f"checkpoint index {self._index_path}: slice {extents} of tensor {key!r} is"
                f" stored as {part.dtype}{list(part.shape)}, expected {full.dtype}{list(want_shape)}"
            )
        return part

    def _check_slices_cover(self, entry: BundleEntry, key: str) -> list[list[range]]:
        boxes = [_slice_bounds(ext, entry.shape) for ext in entry.slices]
        volume = sum(_numel(tuple(len(r) for r in box)) for box in boxes)
        for i, a in enumerate(boxes):
            if _numel(tuple(len(r) for r in a)) == 0:
                continue
            for b in boxes[i + 1 :]:
                if all(
                    max(ra.start, rb.start) < min(ra.stop, rb.stop)
                    for ra, rb in zip(a, b, strict=True)
                ):
                    raise CheckpointCorruptError(
                        f"checkpoint index {self._index_path}: slices of tensor {key!r} overlap"
                    )
        if volume != _numel(entry.shape):
            raise CheckpointCorruptError(
                f"checkpoint index {self._index_path}: the slices of tensor {key!r} cover"
                f" {volume} of its {_numel(entry.shape)} elements"
            )
        return boxes

    def _read_sliced(self, entry: BundleEntry, key: str, verify: bool) -> np.ndarray:
        dtype = self._check_decodable(entry)
        boxes = self._check_slices_cover(entry, key)
        parts = [self._stored_entry(entry, key, ext) for ext in entry.slices]
        # Check every part against its file before allocating the full tensor,
        # whose size is then bounded by bytes that really exist.
        for ext, part in zip(entry.slices, parts, strict=True):
            label = _slice_label(key, ext)
            self._check_size(part, label, dtype)
            f, _ = self._open(part, label)
            f.close()
        out = np.empty(entry.shape, dtype=dtype)
        for ext, part, box in zip(entry.slices, parts, boxes, strict=True):
            value = self._read_entry(part, key, verify, _slice_label(key, ext))
            out[tuple(slice(r.start, r.stop) for r in box)] = value
        return out

    def _read_entry(
        self,
        entry: BundleEntry,
        key: str,
        verify: bool,
        label: str | None = None,
    ) -> np.ndarray:
        if entry.slices:
            return self._read_sliced(entry, key, verify)
        label = label or repr(key)
        dtype = self._check_decodable(entry)
        if dtype.kind == "O":
            values = self._read_strings(entry, label, verify)
            out = np.empty(entry.shape, dtype=object)
            flat = out.reshape(-1)
            for i, v in enumerate(values):
                flat[i] = v
            return out
        return self._read_numeric(entry, label, dtype, verify)

    def read(self, key: str, *, verify: bool = True) -> np.ndarray:
        """Reads one tensor.

        Args:
            key: a key of :attr:`entries`.
            verify: check the stored CRC32C (sizes are always checked).

        Returns:
            A new array with the tensor's shape; strings come back as an
            ``object`` array of ``bytes``, and partitioned tensors assembled
            from their slices.

        Raises:
            KeyError: the key is not in the checkpoint.
            CheckpointNotFoundError: the data file is missing.
            CheckpointCorruptError: short data file, bad sizes or checksum.
            UnsupportedCheckpointError: a dtype this reader cannot decode.
        """
        return self._read_entry(self._entry(key), key, verify)

    def raw_chunks(
        self, key: str, chunk: int = _READ_CHUNK, into: bytearray | None = None
    ) -> Iterator[memoryview]:
        """Yields one fixed-width tensor's stored bytes in chunks of at most ``chunk``.

        Memory stays at one chunk whatever the tensor's size: each chunk is a new buffer,
        the caller's to keep, or with ``into`` a view of that buffer, reused for every
        chunk (each must be used before the next is asked for; a new buffer costs its
        pages' first touch, which for a read-back is about half the time). The CRC32C is
        checked after the last chunk: a mismatch raises there, so a consumer that wrote the
        chunks must discard what it wrote.

        Raises:
            KeyError: the key is not in the checkpoint.
            ValueError: the entry is a string or partitioned tensor (no plain bytes).
            CheckpointNotFoundError, CheckpointCorruptError: as :meth:`read`.
        """
        entry = self._entry(key)
        label = repr(key)
        dtype = self._check_decodable(entry)
        if entry.slices or dtype.kind == "O":
            raise ValueError(f"tensor {label} has no plain byte layout to stream")
        self._check_size(entry, label, dtype)
        f, path = self._open(entry, label)
        with f:
            f.seek(entry.offset)
            crc = 0
            left = entry.size
            while left:
                if into is None:
                    mv = memoryview(bytearray(min(chunk, left)))
                else:
                    mv = memoryview(into)[: min(len(into), left)]
                got = 0
                while got < len(mv):
                    n = f.readinto(mv[got:])
                    if not n:
                        raise CheckpointCorruptError(
                            f"data file {path} ended while reading tensor {label}: expected"
                            f" {entry.offset + entry.size} bytes"
                        )
                    got += n
                crc = crc32c(mv, crc)
                left -= len(mv)
                yield mv
        if crc != unmask_crc(entry.crc32c):
            self._checksum_error(label, path, entry.crc32c, crc)

    def read_many(
        self, keys: Iterable[str], *, verify: bool = True, threads: int | None = None
    ) -> dict[str, np.ndarray]:
        """Reads several tensors in parallel threads.

        File reads and checksums release the GIL, so threads overlap them.

        Args:
            keys: keys of :attr:`entries` (duplicates are read once).
            verify: check the stored CRC32Cs.
            threads: worker threads; default ``min(len(keys), os.cpu_count())``.

        Returns:
            ``{key: array}`` in the order of ``keys``.

        Raises:
            The first error any read raises, as for :meth:`read`.
        """
        keys = list(dict.fromkeys(keys))
        for key in keys:
            self._entry(key)
        if threads is None:
            threads = min(len(keys), os.cpu_count() or 1)
        if threads <= 1 or len(keys) <= 1:
            return {key: self.read(key, verify=verify) for key in keys}

        def nbytes(key: str) -> int:
            e = self.entries[key]
            return e.size if not e.slices else _numel(e.shape)

        # Largest first, so that one big tensor does not start last.
        order = sorted(keys, key=nbytes, reverse=True)
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bundle-read") as pool:
            futures = {key: pool.submit(self.read, key, verify=verify) for key in order}
            done, pending = wait(futures.values(), return_when=FIRST_EXCEPTION)
            for fut in pending:
                fut.cancel()
            for key in order:  # re-raise the first failure in a stable order
                fut = futures[key]
                if fut in done and fut.exception() is not None:
                    raise fut.exception()
        return {key: futures[key].result() for key in keys}

    def object_graph(self) -> ObjectGraph | None:
        """The parsed object graph of an object-based (``tf.train.Checkpoint``) checkpoint.

        Returns:
            The graph, or ``None`` for a name-based (``Saver``) checkpoint.

        Raises:
            CheckpointCorruptError: the graph cannot be parsed.
        """
        if OBJECT_GRAPH_KEY not in self.entries:
            return None
        if self._object_graph is not None:
            return self._object_graph
        entry = self.entries[OBJECT_GRAPH_KEY]
        if entry.dtype != "string" or entry.shape != ():
            raise CheckpointCorruptError(
                f"{OBJECT_GRAPH_KEY} in {self._index_path} is {entry.dtype}{list(entry.shape)},"
                " not a scalar string"
            )
        data = self.read(OBJECT_GRAPH_KEY)[()]
        try:
            with gc_paused():  # an object per node, no cycles
                graph = ObjectGraph.parse(data)
        except ProtoDecodeError as e:
            raise CheckpointCorruptError(
                f"{OBJECT_GRAPH_KEY} of checkpoint {self.prefix} is not a valid object graph: {e}"
            ) from None
        self._object_graph = graph
        return graph

    def __repr__(self) -> str:
        return (
            f"BundleReader({self.prefix!r}, {len(self.entries)} entries, {self.num_shards} shards)"
        )
