# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf1compat-init diff``: keys, shapes, dtypes and the largest value differences.

Exit codes follow diff(1): 0 identical, 1 different, 2 trouble.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, TextIO

from ..engine.basics.shapes import fmt_shape
from ._common import PROG, recipe_or_map, table, write_json

HELP = "compare two checkpoints: keys, shapes, dtypes and the largest value differences"
EXAMPLES = f"""example:
  {PROG} diff before/ after/model.ckpt
  {PROG} diff tf1_ckpt/ migrated/model.ckpt --map model/=encoder/   # renames A's keys first"""
TAKES_MAP = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A", help="the first checkpoint (--map renames its keys)")
    p.add_argument("b", metavar="B", help="the second checkpoint")


def _max_abs_diff(a: Any, b: Any) -> float | None:
    import numpy as np

    if a.dtype.hasobject or b.dtype.hasobject:
        return None
    if a.size == 0:
        return 0.0
    kind = np.complex128 if a.dtype.kind == "c" else np.float64
    x, y = a.astype(kind), b.astype(kind)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(x - y)
    xn, yn = np.isnan(x), np.isnan(y)
    d = np.where(xn & yn, 0.0, np.where(xn | yn, np.inf, d))
    return float(np.max(d))


def run(args: argparse.Namespace, out: TextIO) -> int:
    from ..checkpoint import as_named_checkpoint
    from ..engine.basics.tensor_bytes import equal
    from ..migrate import rename_checkpoint

    a = rename_checkpoint(args.a, recipe_or_map(args), exclude=args.exclude or ())
    b = as_named_checkpoint(args.b)
    if args.exclude:
        b_names = [n for n in b.variables if not any(re.search(p, n) for p in args.exclude)]
    else:
        b_names = list(b.variables)
    only_a = sorted(set(a.variables) - set(b_names))
    only_b = sorted(set(b_names) - set(a.variables))
    shared = sorted(set(a.variables) & set(b_names))
    changed, diffs, bitwise = [], {}, []
    for name in shared:
        ia, ib = a.variables[name], b.variables[name]
        if tuple(ia.shape) != tuple(ib.shape) or ia.dtype != ib.dtype:
            changed.append((name, ia, ib))
            continue
        va, vb = a.read_one(name), b.read([name])[name]
        if equal(va, vb):
            diffs[name] = 0.0
            continue
        d = _max_abs_diff(va, vb)
        diffs[name] = d
        if d == 0.0:
            bitwise.append(name)  # equal as numbers (-0.0 vs 0.0, NaN payloads), not as bits
    differing = [n for n, d in diffs.items() if d != 0.0 or n in bitwise]
    identical = not (only_a or only_b or changed or differing)
    if args.json:
        write_json(
            {
                "a": a.prefix,
                "b": b.prefix,
                "identical": identical,
                "only_in_a": only_a,
                "only_in_b": only_b,
                "changed": [
                    {
                        "name": n,
                        "a": {"shape": list(x.shape), "dtype": x.dtype},
                        "b": {"shape": list(y.shape), "dtype": y.dtype},
                    }
                    for n, x, y in changed
                ],
                "max_abs_diff": diffs,
                "bitwise_only": bitwise,
            },
            out,
        )
        return 0 if identical else 1
    if args.quiet:
        return 0 if identical else 1
    out.write(f"--- {a.prefix}\n+++ {b.prefix}\n")
    if only_a:
        out.write(f"only in A ({len(only_a)}):\n")
        table([(n, fmt_shape(a.variables[n].shape), a.variables[n].dtype) for n in only_a], out)
    if only_b:
        out.write(f"only in B ({len(only_b)}):\n")
        table([(n, fmt_shape(b.variables[n].shape), b.variables[n].dtype) for n in only_b], out)
    if changed:
        out.write(f"shape or dtype changed ({len(changed)}):\n")
        table(
            [
                (n, f"{fmt_shape(x.shape)} {x.dtype}", "->", f"{fmt_shape(y.shape)} {y.dtype}")
                for n, x, y in changed
            ],
            out,
        )
    if differing:
        out.write(f"values differ ({len(differing)} of {len(shared) - len(changed)} shared):\n")
        rows = []
        for n in differing:
            d = diffs[n]
            text = "strings differ" if d is None else f"max |a-b| = {d:.6g}"
            rows.append((n, text + (" (bitwise only)" if n in bitwise else "")))
        table(rows, out)
    same = len(shared) - len(changed) - len(differing)
    out.write(f"{same} shared key(s) identical" + ("; no differences\n" if identical else "\n"))
    return 0 if identical else 1
