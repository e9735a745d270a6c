# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Streaming a migrate: reading ahead while writing, checksums as written, room on disk.

The source is read once. :func:`prefetched` reads the next tensors (their CRC32C checked
by the reader) in a background thread while the caller writes the current one, holding
at most ``window`` bytes read ahead (a larger tensor is read alone), so reading and
writing overlap on two cores and memory stays under the largest tensor plus the window. The writers
record each tensor's CRC32C as they write it; verifying reads the output back once and
compares checksums, never the source again.
"""

from __future__ import annotations

import errno
import logging
import shutil
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from ..bundle import storage as _storage
from ..errors import DiskFullError
from ..view import NamedView
from ._bytes import human

__all__ = ["WINDOW", "check_space", "disk_full_as_error", "prefetched"]

logger = logging.getLogger("tf1compat_init.migrate")

#: Bytes read ahead of the tensor being written.
WINDOW = 64 << 20


def prefetched(
    view: NamedView, names: Iterable[str], window: int = WINDOW
) -> Iterator[tuple[str, Any]]:
    """Yields ``(name, value)`` in order, reading up to ``window`` bytes ahead in a thread.

    A read error surfaces at the tensor it belongs to; closing the iterator early (an
    error while writing) waits for the read in flight and drops what was read ahead.
    """
    order = list(names)
    pending: deque[tuple[str, int, Future[Any]]] = deque()
    ahead = 0
    nxt = 0
    with ThreadPoolExecutor(1, thread_name_prefix="tf1compat-migrate-read") as pool:
        try:
            while nxt < len(order) or pending:
                # The value last yielded is released by now: with nothing pending, the next
                # tensor is read whatever its size; otherwise only while it fits the window.
                while nxt < len(order):
                    name = order[nxt]
                    size = view.nbytes(name)
                    if pending and ahead + size > window:
                        break
                    pending.append((name, size, pool.submit(view.read_one, name)))
                    ahead += size
                    nxt += 1
                name, size, future = pending.popleft()
                value = future.result()
                ahead -= size
                yield name, value
                del value
        finally:
            for _, _, future in pending:
                future.cancel()


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
