"""Free loopback ports for the cluster tests, never the same one to two tests at once.

The suite runs in several processes (pytest-xdist workers, and both TensorFlow legs at the
same time). A port the kernel hands out for ``bind(("127.0.0.1", 0))`` is free when it is
returned, but the test's servers bind it only seconds later; another process asking in
between may, rarely, be handed the same one. So every port given out is written to a small
shared ledger (under a file lock) and not given out again for ten minutes.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
import time
from pathlib import Path

__all__ = ["free_ports", "task_logs"]

LEDGER = os.path.join(tempfile.gettempdir(), "tf1compat-test-ports")
HOLD_S = 600.0


def free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports that no other test process was given in the last 10 min."""
    with open(LEDGER + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        now = time.time()
        taken = _read(now)
        ports: list[int] = []
        socks = []
        try:
            while len(ports) < n:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.bind(("127.0.0.1", 0))
                socks.append(s)  # held open until all are chosen: no duplicate within a call
                port = s.getsockname()[1]
                if port not in taken:
                    ports.append(port)
        finally:
            for s in socks:
                s.close()
        taken.update(dict.fromkeys(ports, now))
        with open(LEDGER, "w") as f:
            f.write("".join(f"{p} {t}\n" for p, t in taken.items()))
    return ports


def _read(now: float) -> dict[int, float]:
    try:
        with open(LEDGER) as f:
            rows = [line.split() for line in f]
    except FileNotFoundError:
        return {}
    taken = {}
    for row in rows:
        try:
            port, when = int(row[0]), float(row[1])
        except (IndexError, ValueError):
            continue  # a torn line from a crashed writer: forget it
        if now - when < HOLD_S:
            taken[port] = when
    return taken


def task_logs(logs: dict[str, Path]) -> str:
    """The last 40 lines of each task's log, TensorFlow's startup chatter left out."""
    out = []
    for role, path in logs.items():
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        lines = [x for x in lines if not x.startswith(("I0000", "W0000", "E0000", "WARNING: All"))]
        out.append(f"--- {role}:\n" + "\n".join(lines[-40:]))
    return "\n".join(out)
