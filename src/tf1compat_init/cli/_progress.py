# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Progress for the CLI: a bar on a terminal, an occasional plain line otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["ProgressBar"]


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


class ProgressBar:
    """A ``progress(done, total, name)`` callable that draws on ``stream``.

    On a terminal it redraws one line at most ten times a second; elsewhere (a log file,
    a pipe) it writes a plain line at most every ``interval`` seconds, so short jobs stay
    silent and long ones leave a heartbeat. Disabled, it does nothing.

    Args:
        label: what is progressing (``"migrate"``).
        stream: where to draw; ``sys.stderr`` by default, so stdout stays parseable.
        enabled: ``False`` for ``--quiet`` and ``--json``.
        interval: seconds between plain lines when ``stream`` is not a terminal.
        clock: the monotonic clock the rate (GB/s since the bar was made) is taken from.
    """

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        *,
        enabled: bool = True,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.clock = clock
        self.start = clock()
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if not self.tty else 0.1
        # A terminal shows the bar at once; a log gets its first line after `interval`.
        self._last = float("-inf") if self.tty else self.start
        self._drawn = False

    def __call__(self, done: int, total: int, name: str = "") -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self._last < self.interval and done < total:
            return
        if not self.tty and done >= total and not self._drawn:
            return  # finished before the first heartbeat: the summary says it all
        self._last = now
        frac = done / total if total else 1.0
        elapsed = now - self.start
        rate = f"{done / elapsed / 1e9:.2f} GB/s" if elapsed > 0 else "- GB/s"
        if self.tty:
            width = 30
            bar = "#" * int(frac * width) + "." * (width - int(frac * width))
            text = f"{self.label} [{bar}] {frac:4.0%} {_size(done)}/{_size(total)} {rate} {name}"
            self.stream.write("\r" + text[:120].ljust(120))
        else:
            self.stream.write(
                f"{self.label}: {frac:.0%} ({_size(done)} of {_size(total)}, {rate})\n"
            )
        self._drawn = True
        self.stream.flush()

    def close(self) -> None:
        """Ends the bar's line on a terminal."""
        if self.enabled and self.tty and self._drawn:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()
