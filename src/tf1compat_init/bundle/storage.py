# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""A file system seen through ``tf.io.gfile``: checkpoints at URLs (``gs://``, ``s3://``, ``ram://``).

Local paths never come here for their reads: the bundle reader keeps its own
unbuffered files and memory maps for them. This module serves paths with a URL
scheme (``scheme://...``), through whatever file systems the installed TensorFlow
has (``gs://`` built in; ``s3://`` and ``hdfs://`` where ``tensorflow-io`` or an
older TensorFlow provides them; ``ram://``, TensorFlow's in-process memory file
system). TensorFlow is imported on the first URL, never for a local path, so the
engine stays importable without it.

Every call to the file system runs under a timeout (:func:`timeout`): a storage
that does not answer raises :class:`~tf1compat_init.CheckpointNotFoundError` naming
the URL instead of hanging. The call itself cannot be cancelled (TensorFlow's file
systems have no cancellation); it is left to finish in a daemon thread.

The helpers at the bottom (``exists``, ``isdir``, ``glob``, ``replace``, ...) take
local paths too and then do exactly what ``os`` does, so callers need no branch.
"""

from __future__ import annotations

import fnmatch
import io
import logging
import os
import posixpath
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import CheckpointNotFoundError, RemoteUnavailableError

__all__ = [
    "DEFAULT_TIMEOUT",
    "TIMEOUT_ENV",
    "RemoteFile",
    "RemoteUnavailableError",
    "is_url",
    "timeout",
]

logger = logging.getLogger(__name__)

#: The environment variable that sets the timeout of each remote call, in seconds
#: (``0``, ``none`` or ``off``: wait forever).
TIMEOUT_ENV = "TF1COMPAT_REMOTE_TIMEOUT"

#: Seconds one remote call (a listing, a stat, one read of at most 8 MiB) may take.
DEFAULT_TIMEOUT = 60.0

#: Bytes one remote read asks for at most (each read is one timed call).
READ_CHUNK = 8 << 20

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")

T = TypeVar("T")


def is_url(path: str) -> bool:
    """Whether ``path`` starts with a URL scheme (``gs://``, ``ram://``, ``file://``...)."""
    return "://" in path and _URL.match(path) is not None


def timeout() -> float | None:
    """The timeout of one remote call in seconds, from ``TF1COMPAT_REMOTE_TIMEOUT``.

    Returns:
        The seconds (default :data:`DEFAULT_TIMEOUT`), or ``None`` for no limit.

    Raises:
        ValueError: the variable holds something other than a number or ``none``.
    """
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    if raw.lower() in ("0", "none", "off"):
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(
            f"{TIMEOUT_ENV}={raw!r} is not a number of seconds; set it to a positive "
            f"number (e.g. 120), or to 0 / none for no limit"
        )
    return value


def _gfile(url: str) -> Any:
    try:
        import tensorflow as tf
    except ImportError:
        raise RemoteUnavailableError(
            f"{url} is a URL: reading it needs TensorFlow's file systems (tf.io.gfile), but "
            f"TensorFlow is not installed. Install it (pip install tensorflow-cpu), or copy "
            f"the checkpoint to a local path"
        ) from None
    return tf.io.gfile


def _tf_errors() -> Any:
    import tensorflow as tf

    return tf.errors


def _translate(e: BaseException, url: str, what: str, error: type[Exception]) -> BaseException:
    """Our error for a file-system failure, naming the URL; ``e`` itself if it is not one."""
    errors = _tf_errors()
    if not isinstance(e, errors.OpError):
        return e
    text = (str(getattr(e, "message", e)).strip().splitlines() or [type(e).__name__])[0]
    if isinstance(e, errors.UnimplementedError) and "scheme" in text:
        scheme = url.split("://", 1)[0]
        import tensorflow as tf

        return error(
            f"cannot {what} {url}: TensorFlow {tf.__version__} has no file system for "
            f"{scheme}:// ({text}). s3:// and hdfs:// need tensorflow-io (pip install "
            f"tensorflow-io; import tensorflow_io before reading)"
        )
    if isinstance(e, errors.NotFoundError):
        return error(f"cannot {what} {url}: it does not exist ({text})")
    return error(f"cannot {what} {url}: {type(e).__name__}: {text}")


def call(
    url: str,
    what: str,
    fn: Callable[..., T],
    *args: Any,
    error: type[Exception] = CheckpointNotFoundError,
) -> T:
    """Runs ``fn(*args)``, a call into ``tf.io.gfile`` about ``url``, under the timeout.

    Args:
        url: the URL the call is about (named by every error).
        what: what the call does, for errors (``"list"``, ``"read"``...).
        fn: the call.
        *args: its arguments.
        error: the error class for failures and timeouts (``OSError`` for writes).

    Raises:
        CheckpointNotFoundError: (or ``error``) the storage failed, or did not
            answer within :func:`timeout` seconds.
    """
    limit = timeout()
    if limit is None:
        try:
            return fn(*args)
        except Exception as e:
            raise _translate(e, url, what, error) from e
    box: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append((True, fn(*args)))
        except BaseException as e:  # handed to the caller below
            box.append((False, e))
        finally:
            done.set()

    # A daemon thread, not a pool: a call that never returns must not keep the
    # process from exiting, nor take a worker from later calls.
    threading.Thread(target=run, name="tf1compat-remote", daemon=True).start()
    if not done.wait(limit):
        raise error(
            f"cannot {what} {url}: no answer within {limit:g} s (is the storage reachable, "
            f"and the URL right?). Set {TIMEOUT_ENV} to the seconds to wait (0: no limit)"
        )
    ok, value = box[0]
    if ok:
        return value
    raise _translate(value, url, what, error) from value


# -- reading -------------------------------------------------------------------------


def stat(url: str) -> tuple[int, int]:
    """``(size, mtime in ns)`` of a remote file (the mtime is 0 where the store has none)."""
    gfile = _gfile(url)
    st = call(url, "stat", gfile.stat, url)
    return int(st.length), int(st.mtime_nsec)


class RemoteFile:
    """A remote file opened for ranged reads: ``seek``, ``read(n)``, ``readinto``.

    Each read asks the file system for at most :data:`READ_CHUNK` bytes, one timed
    call each; nothing is read ahead beyond TensorFlow's own small buffer. Not
    shared between threads (each reader opens its own).
    """

    def __init__(self, url: str, size: int | None = None) -> None:
        self.url = url
        gfile = _gfile(url)
        if size is None:
            self.size, self.mtime_ns = stat(url)
        else:  # known to the caller: one round trip less
            self.size, self.mtime_ns = size, 0
        self._file = call(url, "open", gfile.GFile, url, "rb")
        self._pos = 0
        #: Bytes returned by this file's reads (for tests of the memory bound).
        self.bytes_read = 0

    def __enter__(self) -> RemoteFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence != 0 or pos < 0:
            raise ValueError("RemoteFile only seeks to absolute positions")
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def _read_at(self, pos: int, n: int) -> bytes:
        f = self._file
        f.seek(pos)
        return f.read(n)

    def read(self, n: int = -1) -> bytes:
        """Reads up to ``n`` bytes (all the rest for ``n < 0``) in timed chunks."""
        if n < 0:
            n = max(0, self.size - self._pos)
        parts = []
        while n > 0:
            data = call(self.url, "read", self._read_at, self._pos, min(n, READ_CHUNK))
            if not data:
                break
            parts.append(data)
            self._pos += len(data)
            self.bytes_read += len(data)
            n -= len(data)
        return b"".join(parts) if len(parts) != 1 else parts[0]

    def readinto(self, buffer: Any) -> int:
        """Fills ``buffer`` (a writable buffer) as far as the file goes; returns the count."""
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view):
            data = self.read(min(len(view) - done, READ_CHUNK))
            if not data:
                break
            view[done : done + len(data)] = data
            done += len(data)
        return done

    def close(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            try:
                f.close()
            except Exception:  # a read-only handle: nothing to lose
                logger.debug("closing %s failed", self.url, exc_info=True)


def read_bytes(url: str) -> bytes:
    """The whole content of a (small) remote file: an index or a state file."""
    with RemoteFile(url) as f:
        return f.read()


# -- writing -------------------------------------------------------------------------

#: The most one ``write`` system call is given. On Linux 6.x (ext4, a virtual disk) writes
#: of 2 MiB and more into the page cache stalled in about half of the runs measured (a
#: 1.3 GB copy: 2.5-13 s instead of 0.9 s, every write slow), 1 MiB writes never did
#: (docs/performance.md); the extra system calls cost about a millisecond per GB.
WRITE_CHUNK = 1 << 20


#: Bytes written between two starts of the kernel's writeback (:class:`Writeback`). Each
#: start can block while the disk takes what it was given; at 64 MiB that was 25-40% of the
#: write loop's time on a small output (ResNet-50's 204 MB to ``tf1``: 0.17 s in all, 0.05 s
#: of it in three starts), at 16 MiB 0.13-0.15 s; alternated runs, 16 against 64 MiB:
#: GPT-2 0.24-0.25 against 0.25-0.26 s, BERT to ``keras`` 0.33 against 0.38-0.39 s, BERT + Adam
#: (1.3 GB) to ``tf1`` 0.50-0.52 against 0.49-0.51 s (docs/performance.md).
WRITEBACK_EVERY = 16 << 20

_sync_file_range: Any = None


def _libc_sync_file_range() -> Any:
    """Linux's ``sync_file_range`` through ctypes (Python has no binding); ``False`` elsewhere."""
    global _sync_file_range
    if _sync_file_range is None:
        _sync_file_range = False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            fn = libc.sync_file_range
            fn.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
            _sync_file_range = fn
        except (AttributeError, OSError, TypeError):  # not Linux (Windows: no CDLL(None))
            pass
    return _sync_file_range


def start_writeback(fd: int) -> None:
    """Asks the kernel to start writing ``fd``'s dirty pages to disk.

    Linux's ``sync_file_range(SYNC_FILE_RANGE_WRITE)`` over the whole file (it can block
    while the disk's queue is full); nothing elsewhere (the final ``fsync`` does it all).
    """
    fn = _libc_sync_file_range()
    if fn:
        fn(fd, 0, 0, 2)  # the whole file; 2: SYNC_FILE_RANGE_WRITE


def wait_written(fd: int, offset: int, nbytes: int) -> bool:
    """Waits until the bytes ``[offset, offset + nbytes)`` of ``fd``'s file are on the disk
    (writing those still dirty), so that their pages can be let go; ``False`` where it
    cannot tell (not Linux). Linux's ``sync_file_range`` with ``WAIT_BEFORE | WRITE |
    WAIT_AFTER``: the file's data only, not its metadata, and no disk cache flush (the
    ``fsync`` before installing does those)."""
    fn = _libc_sync_file_range()
    if not fn or nbytes <= 0:
        return False
    return fn(fd, offset, nbytes, 7) == 0


class Writeback:
    """Starts the kernel's writeback of one open file every ``WRITEBACK_EVERY`` bytes
    written, so that the disk works while the writer does and the final ``fsync`` has only
    the tail left (a 1.3 GB copy here: 0.41-0.54 s instead of 0.64-0.80 s).

    In the writer's thread: the 20-30 ms a request can block also paces the writer. From
    a helper thread, BERT's 1.3 GB to tf1 took 1.02-1.10 s against 0.95-1.17 s (4 runs
    each, alternated), so the simpler way stays.
    """

    def __init__(self, fd: int) -> None:
        self.fd, self._unsynced = fd, 0

    def wrote(self, n: int) -> None:
        self._unsynced += n
        if self._unsynced >= WRITEBACK_EVERY:
            self._unsynced = 0
            start_writeback(self.fd)


class LocalWriter(io.BufferedWriter):
    """A local file opened for writing whose large writes go down in ``WRITE_CHUNK`` pieces,
    the kernel's writeback started as it goes (:class:`Writeback`)."""

    def __init__(self, raw: Any) -> None:
        super().__init__(raw)
        try:
            self._writeback: Writeback | None = Writeback(raw.fileno())
        except (AttributeError, OSError):  # io.UnsupportedOperation: not a file
            self._writeback = None

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if len(view) <= WRITE_CHUNK:
            n = super().write(view)
        else:
            for begin in range(0, len(view), WRITE_CHUNK):
                super().write(view[begin : begin + WRITE_CHUNK])
            n = len(view)
        if self._writeback is not None:
            self._writeback.wrote(n)
        return n


def pwrite_all(fd: int, data: Any, offset: int, writeback: Writeback | None = None) -> int:
    """Writes all of ``data`` at ``offset`` of ``fd``, at most ``WRITE_CHUNK`` a call
    (telling ``writeback`` what was written); returns the offset after it."""
    view = memoryview(data).cast("B")
    while view:
        n = os.pwrite(fd, view[:WRITE_CHUNK], offset)
        offset, view = offset + n, view[n:]
        if writeback is not None:
            writeback.wrote(n)
    return offset


class RemoteWriter:
    """A remote file being written: ``write``, ``flush``, ``close``; each call timed.

    Object stores make the file visible only at ``close``; a failed write leaves
    nothing or a partial temporary file that the caller removes.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        gfile = _gfile(url)
        self._file = call(url, "create", gfile.GFile, url, "wb", error=OSError)

    def __enter__(self) -> RemoteWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        for start in range(0, len(view), READ_CHUNK):
            part = bytes(view[start : start + READ_CHUNK])
            call(self.url, "write", self._file.write, part, error=OSError)
        return len(view)

    def flush(self) -> None:
        call(self.url, "write", self._file.flush, error=OSError)

    def fileno(self) -> int:
        raise OSError(f"{self.url} is remote: it has no file descriptor")

    def close(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            call(self.url, "write", f.close, error=OSError)


def open_exclusive(path: str) -> Any:
    """Opens ``path`` for writing, refusing an existing file (``open(path, "xb")``).

    Remote stores have no exclusive create: the check and the create are two calls.
    """
    if not is_url(path):
        return LocalWriter(io.FileIO(path, "xb"))
    if exists(path):
        raise FileExistsError(f"{path} already exists")
    return RemoteWriter(path)


def sync(f: Any) -> None:
    """``fsync`` for a local file; nothing for a remote one (its ``close`` commits it)."""
    if isinstance(f, RemoteWriter):
        f.flush()
        return
    os.fsync(f.fileno())


def sync_path(path: str) -> None:
    """``fsync`` of a closed local file by its path (the kernel flushes the file, whichever
    descriptor asks); nothing for a URL (a remote object is committed when closed)."""
    if is_url(path):
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- path operations that take local paths and URLs alike ------------------------------


def exists(path: str) -> bool:
    if not is_url(path):
        return os.path.exists(path)
    gfile = _gfile(path)
    return bool(call(path, "check", gfile.exists, path))


def isdir(path: str) -> bool:
    if not is_url(path):
        return os.path.isdir(path)
    gfile = _gfile(path)
    return bool(call(path, "check", gfile.isdir, path))


def isfile(path: str) -> bool:
    if not is_url(path):
        return os.path.isfile(path)
    return exists(path) and not isdir(path)


def getsize(path: str) -> int:
    if not is_url(path):
        return os.path.getsize(path)
    return stat(path)[0]


def getmtime(path: str) -> float:
    if not is_url(path):
        return os.path.getmtime(path)
    return stat(path)[1] / 1e9


def isabs(path: str) -> bool:
    return is_url(path) or os.path.isabs(path)


def join(directory: str, name: str) -> str:
    if not is_url(directory):
        return os.path.join(directory, name)
    return posixpath.join(directory, name)


def split(path: str) -> tuple[str, str]:
    """``os.path.split`` of the absolute path; URLs split at their last ``/``."""
    if not is_url(path):
        return os.path.split(os.path.abspath(path))
    return posixpath.split(path.rstrip("/"))


def realpath(path: str) -> str:
    return path if is_url(path) else os.path.realpath(path)


def listdir(path: str) -> list[str]:
    if not is_url(path):
        return os.listdir(path)
    gfile = _gfile(path)
    return [n.rstrip("/") for n in call(path, "list", gfile.listdir, path)]


def glob(directory: str, pattern: str) -> list[str]:
    """The paths in ``directory`` whose name matches ``pattern`` (``fnmatch``; no escaping
    needed for ``directory``), sorted."""
    if not is_url(directory):
        import glob as _glob

        return sorted(_glob.glob(os.path.join(_glob.escape(directory), pattern)))
    if not isdir(directory):
        return []
    names = fnmatch.filter(listdir(directory), pattern)
    return sorted(join(directory, n) for n in names)


def read_text(path: str) -> str:
    if not is_url(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    return read_bytes(path).decode("utf-8", errors="replace")


def makedirs(path: str) -> None:
    if not is_url(path):
        os.makedirs(path, exist_ok=True)
        return
    gfile = _gfile(path)
    call(path, "create directory", gfile.makedirs, path, error=OSError)


def mkdtemp(prefix: str, directory: str) -> str:
    """A new, empty temporary directory in ``directory`` (``tempfile.mkdtemp``)."""
    if not is_url(directory):
        import tempfile

        return tempfile.mkdtemp(prefix=prefix, dir=directory)
    path = join(directory, prefix + uuid.uuid4().hex[:12])
    makedirs(path)
    return path


def replace(src: str, dst: str) -> None:
    """``os.replace``. On object stores a rename is a copy then a delete, not atomic."""
    if not is_url(src):
        os.replace(src, dst)
        return
    gfile = _gfile(src)
    call(dst, "rename to", gfile.rename, src, dst, True, error=OSError)


def remove(path: str) -> None:
    if not is_url(path):
        os.remove(path)
        return
    gfile = _gfile(path)
    try:
        call(path, "remove", gfile.remove, path, error=OSError)
    except OSError:
        if exists(path):
            raise
        raise FileNotFoundError(f"{path} does not exist") from None


def rmtree(path: str) -> None:
    """Removes a directory tree, ignoring errors (``shutil.rmtree(ignore_errors=True)``)."""
    if not is_url(path):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return
    try:
        gfile = _gfile(path)
        if exists(path):
            call(path, "remove", gfile.rmtree, path, error=OSError)
    except OSError:
        logger.warning("could not remove %s", path, exc_info=True)
