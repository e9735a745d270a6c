# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"safetensors"`` output: one file for PyTorch / JAX users, then read back."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import numpy as np

from ..bundle import storage as _storage
from ..engine.basics.tensor_bytes import Progress, raw_bytes
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError

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


def write(view: NamedView, path: str, progress: Progress | None) -> int:
    """Writes ``path`` one tensor at a time; returns the bytes of tensor data."""
    header, offsets = _header(view)
    total = sum(e - b for b, e in offsets.values())
    done = 0
    with _storage.open_exclusive(path) as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        for name in view.variables:
            data = raw_bytes(view.read_one(name))
            if data.size != offsets[name][1] - offsets[name][0]:
                raise CheckpointCorruptError(f"{name!r}: read {data.size} bytes, expected more")
            f.write(memoryview(data))
            done += int(data.size)
            if progress:
                progress(done, total, name)
        f.flush()
        _storage.sync(f)
    return total


def verify(view: NamedView, path: str) -> None:
    """Reads ``path`` back; raises ``CheckpointCorruptError`` unless it equals the view."""
    with _storage.RemoteFile(path) if _storage.is_url(path) else open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        base = 8 + n
        header.pop("__metadata__", None)
        if set(header) != set(view.variables):
            raise CheckpointCorruptError(f"the written file {path} lists other tensors")
        for name in view.variables:
            begin, end = header[name]["data_offsets"]
            f.seek(base + begin)
            stored = np.frombuffer(f.read(end - begin), dtype=np.uint8)
            if memoryview(stored) != memoryview(raw_bytes(view.read_one(name))):
                raise CheckpointCorruptError(f"{name!r} reads back different from the source")
