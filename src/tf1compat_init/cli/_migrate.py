# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf1compat-init migrate``: a renamed, verified copy as tf1, tf2, keras or safetensors."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from ._common import PROG, UsageError, factory, recipe_or_map, write_json

HELP = "write a renamed, verified copy of SRC as tf1, tf2, keras or safetensors"
EXAMPLES = f"""example:
  {PROG} migrate tf1_ckpt/ out/model.ckpt --map model/=encoder/ --drop-optimizer
  {PROG} migrate tf1_ckpt/ out/model.safetensors --format safetensors
  {PROG} migrate tf1_ckpt/ out/ckpt --format tf2 --model mymodels:build_encoder
  {PROG} migrate tf1_ckpt/ out/model.weights.h5 --format keras --model mymodels:build_encoder

Each --map OLD=NEW renames the keys under OLD (a scope ending in '/', or one key) to NEW;
keys that no rule matches keep their names. A --map-file holds the same rules as JSON:
{{"model/": "encoder/", "global_step": "step"}} or [["model/", "encoder/"], ...]."""
TAKES_MAP = True

#: Rows per kind of change in the text output; ``--json`` lists all.
_SHOW = 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", metavar="SRC", help="the source checkpoint (never modified)")
    p.add_argument(
        "dst",
        metavar="DST",
        help="output: a checkpoint prefix (tf1, tf2), a .weights.h5 path (keras), a file "
        "(safetensors)",
    )
    p.add_argument("--format", choices=("tf1", "tf2", "keras", "safetensors"), default="tf1")
    p.add_argument(
        "--model",
        metavar="MODULE:FUNCTION",
        help="function returning the built model (required for tf2 and keras)",
    )
    p.add_argument(
        "--drop-optimizer", action="store_true", help="leave out optimizer slots and state"
    )
    p.add_argument("--force", action="store_true", help="replace an existing output")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from ..migrate import migrate
    from ._progress import ProgressBar

    model = None
    if args.model:
        if args.format not in ("tf2", "keras"):
            raise UsageError(f"{PROG} migrate: --model is used only with --format tf2 or keras")
        model = factory(args, args.model)
    bar = ProgressBar("migrate", enabled=not (args.quiet or args.json))
    try:
        amap = recipe_or_map(args)
        result = migrate(
            args.src,
            args.dst,
            amap,
            exclude=args.exclude or (),
            format=args.format,
            model=model,
            drop_optimizer=args.drop_optimizer,
            force=args.force,
            progress=bar,
        )
    finally:
        bar.close()
    if args.json:
        write_json(result.to_dict(), out)
    elif not args.quiet:
        _summary(result, out)
    return 0


def _summary(result: Any, out: TextIO) -> None:
    out.write(result.summary() + "\n")
    for old, new in list(result.renamed.items())[:_SHOW]:
        out.write(f"  renamed   {old} -> {new}\n")
    if len(result.renamed) > _SHOW:
        out.write(f"  ... and {len(result.renamed) - _SHOW} more renamed (--json lists all)\n")
    for name, via in list(result.transforms.items())[:_SHOW]:
        out.write(f"  transform {result.tensors[name]} -> {name} | {via}\n")
    if len(result.transforms) > _SHOW:
        out.write(
            f"  ... and {len(result.transforms) - _SHOW} more transformed (--json lists all)\n"
        )
    for name, why in list(result.excluded.items())[:_SHOW]:
        out.write(f"  excluded  {name} ({why})\n")
    if result.report is not None and result.report.unused:
        out.write(f"  unused    {len(result.report.unused)} key(s) the model has no place for\n")
