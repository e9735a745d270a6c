# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"safetensors"`` output: one file for PyTorch / JAX users, then read back."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..bundle import storage as _storage
from ..engine.basics.tensor_bytes import Progress
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError
from ._behind import Behind
from ._stream import check_in_threads, prefetched, range_crc, write_value

__all__ = ["DTYPES", "check_writable", "verify", "write"]

#: A checkpoint dtype name -> its safetensors dtype; no other dtype can be written.
DTYPES = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint64": "U64",
    "uint32": "U32",
    "uint16": "U16",
    "uint8": "U8",
    "bool": "BOOL",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
}


def check_writable(view: NamedView) -> None:
    """Raises ``ValueError`` naming the first key whose dtype safetensors cannot hold."""
    bad = [(n, i.dtype) for n, i in view.variables.items() if i.dtype not in DTYPES]
    if bad:
        name, dtype = bad[0]
        raise ValueError(
            f"safetensors cannot hold dtype {dtype} (key {name!r}"
            + (f" and {len(bad) - 1} more" if len(bad) > 1 else "")
            + f"); leave such keys out with --exclude {('^' + re.escape(name) + '$')!r}"
        )


def _header(view: NamedView) -> tuple[bytes, dict[str, tuple[int, int]]]:
    offsets = {}
    header: dict[str, Any] = {
        "__metadata__": {"format": "np", "source": os.path.basename(view.prefix)}
    }
    pos = 0
    for name, info in view.variables.items():
        size = view.nbytes(name)
        offsets[name] = (pos, pos + size)
        header[name] = {
            "dtype": DTYPES[info.dtype],
            "shape": list(info.shape),
            "data_offsets": [pos, pos + size],
        }
        pos += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the data buffer starts 8-byte aligned
    return raw, offsets


def write(
    view: NamedView, path: str, progress: Progress | None, behind: Behind | None = None
) -> dict[str, int]:
    """Writes ``path`` one tensor at a time, not yet synced (the caller syncs it while
    :func:`verify` reads it back); returns each tensor's CRC32C as written.

    The next tensor is read while this one is written (:func:`~._stream.prefetched`).
    With ``behind``, each is read back as the writing goes on (:mod:`._behind`).
    """
    header, offsets = _header(view)
    base = 8 + len(header)
    total = sum(e - b for b, e in offsets.values())
    done = 0
    crcs = {}
    with _storage.open_exclusive(path) as f:
        if behind is not None:
            behind.flush = f.flush
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        for name, value in prefetched(view, view.variables):
            size = 0

            def put(piece: memoryview, start: int = base + offsets[name][0]) -> None:
                nonlocal size
                f.write(piece)
                size += len(piece)
                if behind is not None:
                    behind.piece(start, start + size)

            crc = write_value(value, put)
            if size != offsets[name][1] - offsets[name][0]:
                raise CheckpointCorruptError(f"{name!r}: read {size} bytes, expected more")
            crcs[name] = crc
            done += size
            del value  # before the next is read: two large tensors are never held at once
            if behind is not None:
                begin, end = offsets[name]
                behind.wrote(name, base + begin, base + end, crc)
            if progress:
                progress(done, total, name)
        f.flush()
        if behind is not None:
            behind.finish()
    return crcs


def verify(view: NamedView, path: str, crcs: dict[str, int], behind: Behind | None = None) -> None:
    """Reads ``path`` back once; raises ``CheckpointCorruptError`` unless it holds the view.

    Names, dtypes, shapes and offsets must be the view's, and each tensor's bytes must have
    the CRC32C recorded as it was written (``crcs``); the source is not read again. A
    local file is read by two threads (:func:`~._stream.check_in_threads`); a tensor that
    ``behind`` read back already must be at the header's offsets, with that CRC32C.
    """
    want, _ = _header(view)
    remote = _storage.is_url(path)
    with _storage.RemoteFile(path) if remote else open(path, "rb", buffering=0) as f:
        n = int.from_bytes(f.read(8), "little")
        raw = f.read(n)
        if raw != want:
            header = json.loads(raw)
            header.pop("__metadata__", None)
            if set(header) != set(view.variables):
                raise CheckpointCorruptError(f"the written file {path} lists other tensors")
            raise CheckpointCorruptError(
                f"the header of the written file {path} is not the one written"
            )
        header = json.loads(raw)
        base = 8 + n
        pread = not remote and hasattr(os, "preadv")  # not on Windows

        def check(name: str, buf: bytearray) -> None:
            begin, end = header[name]["data_offsets"]
            if behind is not None:
                behind.expect(name, base + begin, base + end, crcs[name])
                return
            crc, n = range_crc(f, base + begin, base + end, buf, pread)
            if n != end - begin or crc != crcs[name]:
                raise CheckpointCorruptError(f"{name!r} reads back different from the source")

        check_in_threads(view.variables, check, threads=2 if pread else 1)
