# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf1compat-init inspect``: a checkpoint's format, shards and keys."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from ..engine.basics.shapes import fmt_shape
from ._common import PROG, table, write_json

HELP = "list a checkpoint's format, shards and keys (shape, dtype, bytes)"
EXAMPLES = f"""example:
  {PROG} inspect pretrained/                 # a directory: its latest checkpoint
  {PROG} inspect run/model.ckpt-200 --json   # a prefix; JSON for scripts"""
TAKES_MAP = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH", help="checkpoint directory, prefix, .index or .data-*")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from ..engine.reading.reader import open_checkpoint
    from ..engine.reading.view import object_paths

    info = open_checkpoint(args.path)
    named = object_paths(info).keys if info.format == "object-based" else None
    rows = _rows(info, named)
    total = sum(r["bytes"] for r in rows)
    if args.json:
        write_json(
            {
                "checkpoint": info.prefix,
                "format": info.format,
                "index": info.index_file,
                "shards": list(info.data_files),
                "num_tensors": len(rows),
                "total_bytes": total,
                "tensors": rows,
            },
            out,
        )
        return 0
    from ..engine.basics.tensor_bytes import human

    out.write(f"checkpoint  {info.prefix}\n")
    out.write(f"format      {info.format}\n")
    out.write(f"shards      {len(info.data_files)}: {', '.join(info.data_files)}\n")
    exact = f" ({total} bytes)" if total >= 1024 else ""
    out.write(f"tensors     {len(rows)}, {human(total)}{exact}\n\n")
    head = ("object path" if named is not None else "key", "shape", "dtype", "bytes")
    lines = [(*head, "key" if named is not None else "")]
    for r in rows:
        first = r["object_path"] if named is not None else r["key"]
        last = r["key"] if named is not None and r["key"] != first else ""
        lines.append((first, fmt_shape(r["shape"]), r["dtype"], str(r["bytes"]), last))
    table(lines, out, indent="")
    return 0


def _rows(info: Any, named: dict[str, str] | None) -> list[dict[str, Any]]:
    """One dict per tensor (``key``, ``shape``, ``dtype``, ``bytes``, ``object_path``)."""
    from ..engine.reading.view import value_nbytes

    entries = getattr(info.bundle, "entries", {})
    rows = []
    for key in sorted(info.variables):
        v = info.variables[key]
        e = entries.get(key)
        size = int(e.size) if (v.dtype == "string" and e is not None) else value_nbytes(v)
        rows.append({"key": key, "shape": list(v.shape), "dtype": v.dtype, "bytes": size})
    if named is not None:
        path_of = {k: n for n, k in named.items()}
        for r in rows:
            r["object_path"] = path_of.get(r["key"], r["key"])
        rows.sort(key=lambda r: r["object_path"])
    return rows
