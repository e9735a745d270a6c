# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Streaming a migrate: reading ahead while writing, checksums as written, room on disk.

The source is read once. :func:`prefetched` reads ahead (the CRC32C checked by the
reader) in a background thread while the caller writes, holding at most ``window`` bytes
read ahead: tensors stored as plain bytes stream in chunks, so reading and writing overlap
on two cores and memory stays at about the window whatever the tensors' sizes; others
(strings, computed ones) are read whole, one larger than the window alone. The writers
record each tensor's CRC32C as they write it; verifying reads the output back once and
compares checksums, never the source again.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..bundle import storage as _storage
from ..bundle.crc import backend_name, crc32c, unmask_crc
from ..bundle.dtypes import numpy_dtype
from ..engine.basics.tensor_bytes import human, raw_bytes
from ..errors import DiskFullError

__all__ = [
    "CHUNK",
    "WINDOW",
    "Chunks",
    "check_in_threads",
    "check_space",
    "disk_full_as_error",
    "range_crc",
    "output_files",
    "prefetched",
    "synced_while",
    "value_crc",
    "write_value",
]

logger = logging.getLogger("tf1compat_init.migrate")

#: Bytes read ahead of the tensor being written.
WINDOW = 64 << 20
#: Bytes of one piece of a streamed tensor.
CHUNK = 8 << 20

#: Every migrate checksums what it writes, so the CRC32C library is chosen (imported and
#: checked: 0.02 s) when this package is imported, not inside the first call. With the
#: bundle reader and writer, which the format modules import at their top for the same
#: reason, that was 0.03-0.05 s of a first migrate (docs/performance.md).
CRC_BACKEND = backend_name()


def value_crc(value: np.ndarray) -> int:
    """The CRC32C of a whole value as the writers record it: a fixed-width tensor's bytes
    in C order (what a chunked write sums), a string tensor's items each ended by a NUL."""
    if value.dtype.hasobject:
        return crc32c(b"".join(bytes(x) + b"\0" for x in value.reshape(-1)))
    return crc32c(raw_bytes(value))


class Chunks:
    """One tensor's stored bytes, chunk by chunk, as the reading thread delivers them.

    Iterate it once, to the end, before asking :func:`prefetched` for the next tensor.
    The source's CRC32C is checked after the last chunk (an error there is raised by the
    iteration, so whatever was written from the chunks must be discarded). The reading
    thread sums it over the very buffers it hands out, so once the iteration has ended
    ``crc`` (the source's, as stored) is also the CRC32C of the bytes written from them:
    the writers record it instead of summing the same bytes again.
    """

    def __init__(self, name: str, info: Any, crc: int, pull: Callable[[], tuple[str, Any]]) -> None:
        self.name, self.dtype, self.shape = name, info.dtype, tuple(info.shape)
        self.crc = crc
        self._pull = pull

    def __iter__(self) -> Iterator[memoryview]:
        while True:
            kind, data = self._pull()
            if kind == "end":
                return
            yield data


def _raw_source(view: Any, name: str) -> tuple[Any, str] | None:
    """``(bundle reader, stored key)`` when ``name``'s bytes can stream as they are stored."""
    if name in getattr(view, "routes", {}):
        return None
    try:
        bundle = view.base.bundle
        key = view.keys[name]
        entry = bundle.entries[key]
        dtype = numpy_dtype(view.variables[name].dtype)
    except Exception:  # no native bundle, a TF-only dtype, a fake view: read it whole
        return None
    if entry.slices or dtype.kind == "O" or getattr(bundle, "_big_endian", False):
        return None
    return bundle, key


def prefetched(
    view: Any, names: Iterable[str], window: int = WINDOW, chunk: int = CHUNK
) -> Iterator[tuple[str, Any]]:
    """Yields ``(name, value)`` in order while a thread reads up to ``window`` bytes ahead.

    ``value`` is a :class:`Chunks` for a tensor whose stored bytes can be copied as they
    are (a plain fixed-width entry of a native bundle, no transform): it streams in
    ``chunk``-sized pieces, so a tensor of any size overlaps its reading and writing in a
    window's memory. Anything else (strings, partitioned or computed tensors) is read
    whole, a numpy array; one larger than the window is read alone. Each value must be
    used up (a :class:`Chunks` iterated to its end) and dropped before the next is asked
    for. A read error surfaces at the tensor it belongs to; closing the iterator early
    (an error while writing) stops the reading thread.
    """
    order = list(names)
    items: deque[tuple[str, Any, int]] = deque()
    cond = threading.Condition()
    state = {"ahead": 0, "stop": False}

    def put(kind: str, data: Any, size: int) -> bool:
        with cond:
            while not state["stop"] and state["ahead"] and state["ahead"] + size > window:
                cond.wait()
            if state["stop"]:
                return False
            items.append((kind, data, size))
            state["ahead"] += size
            cond.notify_all()
            return True

    def produce() -> None:
        try:
            for name in order:
                raw = _raw_source(view, name)
                if raw is None:
                    size = view.nbytes(name)
                    with cond:  # wait for room before reading, not after
                        while (
                            not state["stop"] and state["ahead"] and state["ahead"] + size > window
                        ):
                            cond.wait()
                    if state["stop"] or not put("tensor", (name, view.read_one(name)), size):
                        return
                    continue
                bundle, key = raw
                if not put("start", (name, unmask_crc(bundle.entries[key].crc32c)), 0):
                    return
                for piece in bundle.raw_chunks(key, chunk):
                    if not put("chunk", piece, len(piece)):
                        return
                if not put("end", name, 0):
                    return
        except BaseException as e:  # delivered to the consumer, in order
            put("error", e, 0)

    done = 0  # bytes of the last item handed out, released when the next is asked for

    def pull() -> tuple[str, Any]:
        nonlocal done
        with cond:
            state["ahead"] -= done
            done = 0
            cond.notify_all()
            while not items:
                cond.wait()
            kind, data, size = items.popleft()
        done = size
        if kind == "error":
            raise data
        return kind, data

    thread = threading.Thread(target=produce, name="tf1compat-migrate-read", daemon=True)
    thread.start()
    try:
        for _ in order:
            kind, data = pull()
            if kind == "tensor":
                name, value = data
                del data
                yield name, value
                del value
            else:  # "start"
                name, crc = data
                yield name, Chunks(name, view.variables[name], crc, pull)
    finally:
        with cond:
            state["stop"] = True
            cond.notify_all()
        thread.join()


def write_value(value: Any, write: Callable[[memoryview], Any]) -> int:
    """Hands ``value``'s bytes to ``write`` piece by piece (a :class:`Chunks` as read, an
    array as one piece in C order); returns their CRC32C (a :class:`Chunks`' checked one)."""
    if isinstance(value, Chunks):
        for piece in value:
            write(memoryview(piece).cast("B"))
        return value.crc
    piece = memoryview(raw_bytes(value)).cast("B")
    write(piece)
    return crc32c(piece)


def check_in_threads(
    names: Iterable[str],
    check: Callable[[str, bytearray], None],
    threads: int = 2,
    chunk: int = CHUNK,
) -> None:
    """Runs ``check(name, buffer)`` for each name, on ``threads`` threads taking the next
    name in turn, each with one ``chunk``-sized buffer it reuses; raises the error of the
    first name (in order) whose check failed, after every thread has stopped.

    For reading an output back: the bytes come from the page cache, so two threads read
    and checksum about twice as fast as one on two cores, and a reused buffer saves the
    first touch of fresh pages (together: BERT's 1.3 GB in 0.13 s instead of 0.23 s).
    Memory: ``threads`` chunks.
    """
    order = list(names)
    state = {"next": 0}
    lock = threading.Lock()
    failed: list[tuple[int, BaseException]] = []

    def run() -> None:
        buf = bytearray(chunk)
        while True:
            with lock:
                i = state["next"]
                if i >= len(order) or failed:
                    return
                state["next"] = i + 1
            try:
                check(order[i], buf)
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                with lock:
                    failed.append((i, e))
                return

    workers = [
        threading.Thread(target=run, name=f"tf1compat-migrate-check-{k}", daemon=True)
        for k in range(max(1, min(threads, len(order))) - 1)
    ]
    for w in workers:
        w.start()
    try:
        run()  # the caller's thread is one of them
    finally:
        for w in workers:
            w.join()
    if failed:
        raise min(failed, key=lambda f: f[0])[1]


def range_crc(
    f: Any, begin: int, end: int, buf: bytearray, pread: bool, crc: int = 0
) -> tuple[int, int]:
    """``(CRC32C, bytes read)`` of the open file ``f``'s bytes ``[begin, end)`` (going on
    from ``crc``, that of the bytes before them), read into ``buf`` a chunk at a time
    (memory: one buffer). With ``pread`` (``os.preadv`` at an offset: threads may share
    ``f``), else through ``f``'s own position (one thread only). Fewer bytes than asked
    means the file ended early."""
    mv = memoryview(buf)
    pos = begin
    while pos < end:
        want = mv[: min(len(buf), end - pos)]
        if pread:
            got = mv[: os.preadv(f.fileno(), [want], pos)]
        else:
            f.seek(pos)
            got = memoryview(f.read(len(want)))
        if not got:
            break
        crc = crc32c(got, crc)
        pos += len(got)
    return crc, pos - begin


def output_files(out_path: str) -> list[str]:
    """The files of the output at ``out_path``: those of its own temporary directory (any
    format, whoever wrote them); none for a URL, whose objects are committed when closed."""
    if _storage.is_url(out_path):
        return []
    folder = os.path.dirname(out_path)
    paths = (os.path.join(folder, n) for n in sorted(os.listdir(folder)))
    return [p for p in paths if os.path.isfile(p)]


def synced_while(paths: Iterable[str], check: Callable[[], None]) -> None:
    """Runs ``check`` (reading the output back) while another thread ``fsync``s ``paths``;
    returns when both are done, raising the first error of either.

    The read-back comes from the page cache either way, so it need not wait for the disk:
    the two overlap, and the output is installed only after both.
    """
    failed: list[BaseException] = []

    def sync() -> None:
        try:
            for path in paths:
                _storage.sync_path(path)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            failed.append(e)

    syncer = threading.Thread(target=sync, name="tf1compat-migrate-sync", daemon=True)
    syncer.start()
    try:
        check()
    finally:
        syncer.join()
    if failed:
        raise failed[0]


def check_space(dst: str, needed: int) -> None:
    """Raises :class:`DiskFullError` if ``dst``'s local file system has under ``needed`` free.

    Remote stores tell no free space: for them a full store shows as a failed write.
    """
    if _storage.is_url(dst):
        return
    parent, _ = _storage.split(dst)
    try:
        free = shutil.disk_usage(parent or ".").free
    except OSError:  # no statvfs here: the writes will tell
        return
    if free < needed:
        raise DiskFullError(
            f"not enough free space for {dst}: the output needs {human(needed)} "
            f"({needed} bytes), the file system has {human(free)} free; nothing was written"
        )


@contextmanager
def disk_full_as_error(dst: str, needed: int) -> Iterator[None]:
    """Turns ``ENOSPC`` (and ``EDQUOT``) while writing into a :class:`DiskFullError`."""
    try:
        yield
    except DiskFullError:
        raise
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise DiskFullError(
            f"the file system of {dst} filled up while writing: the output needs "
            f"{human(needed)} ({needed} bytes); nothing was installed and the temporary "
            f"output was removed ({e.strerror or e})"
        ) from e
