# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The destination's lock: one migrate writes a destination at a time.

A lock file ``.<name>.tf1compat-lock`` next to the destination, created exclusively and
holding ``host pid``; a lock whose process of this host is dead is taken over. On an
object store the lock is advisory (written, then read back).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

from ..bundle import storage as _storage
from ..errors import MigrationLockedError

__all__ = ["MigrationLockedError", "locked"]


@contextlib.contextmanager
def locked(dst: str) -> Iterator[bool]:
    """Holds ``.<name>.tf1compat-lock`` next to ``dst``, created exclusively.

    Yields whether the lock was taken over from a dead migrate, whose leftovers
    (:func:`~._destination.remove_leftovers`) may then be removed.
    """
    parent, base = _storage.split(dst)
    lock = _storage.join(parent, f".{base}.tf1compat-lock")
    me = f"{socket.gethostname()} {os.getpid()}\n"
    if _storage.is_url(lock):
        with _remote_lock(dst, lock, me) as took_over:
            yield took_over
        return
    took_over = False
    for attempt in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if attempt == 0 and _stale(lock):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(lock)
                took_over = True
                continue
            raise _held(dst, lock) from None
        try:
            with os.fdopen(fd, "w") as f:
                f.write(me)
        except BaseException:
            os.remove(lock)  # an empty lock would refuse every later migrate
            raise
        break
    try:
        yield took_over
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(lock)


@contextlib.contextmanager
def _remote_lock(dst: str, lock: str, me: str) -> Iterator[bool]:
    """The lock of :func:`locked` on a remote store: advisory, best effort.

    Object stores have no exclusive create, so the lock is written, then read back:
    a migrate that finds another's lock, or loses the write race it can see, stops.
    Two migrates starting within the same moment can still both proceed (each then
    installs a complete, verified output; the last rename wins).
    """
    took_over = False
    if _storage.exists(lock):
        if not _stale(lock):
            raise _held(dst, lock)
        with contextlib.suppress(FileNotFoundError):
            _storage.remove(lock)
        took_over = True
    token = f"{me.strip()} {os.urandom(8).hex()}\n"
    with _storage.RemoteWriter(lock) as f:
        f.write(token.encode("utf-8"))
    if _storage.read_text(lock) != token:
        raise MigrationLockedError(
            f"another migrate took the lock {lock} of {dst} at the same moment; wait for it"
        )
    try:
        yield took_over
    finally:
        with contextlib.suppress(OSError):
            if _storage.read_text(lock) == token:
                _storage.remove(lock)


def _held(dst: str, lock: str) -> MigrationLockedError:
    return MigrationLockedError(
        f"another migrate is writing {dst} (lock file {lock}); wait for it, or remove "
        f"the lock file if no migrate is running"
    )


def _stale(lock: str) -> bool:
    """True for a lock left by a dead process of this host."""
    try:
        host, pid = _storage.read_text(lock).split()[:2]
        if host != socket.gethostname():
            return False
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError):
        return False
    return False
