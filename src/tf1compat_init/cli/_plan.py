# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf1compat-init plan``: a dry run of restoring SRC into a checkpoint or a model.

The table is the :class:`~tf1compat_init.RestoreReport`'s own rows
(:meth:`~tf1compat_init.RestoreReport.rows`), with each checkpoint key shown by its
source name, and the keys the renames left out of the source added at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, TextIO

from ._common import (
    PROG,
    factory,
    is_factory_spec,
    quiet_native_stderr,
    recipe_or_map,
    table,
    write_json,
)

HELP = "dry run: what a restore of SRC into TARGET would load, and what does not fit"
EXAMPLES = f"""example:
  {PROG} plan tf1_ckpt/ --target new_ckpt/ --map model/=sub_model_2/
  {PROG} plan tf1_ckpt/ --target mymodels:build_encoder --map-file renames.json"""
TAKES_MAP = True

#: Every problem is shown, none raised: the table is the point of a dry run.
_SHOW_ALL = {"on_missing": "ignore", "on_mismatch": "ignore"}


class PlanFailed(Exception):
    """The plan does not fit (exit 1, after the table)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", metavar="SRC", help="the source checkpoint")
    p.add_argument(
        "--target",
        required=True,
        metavar="TARGET",
        help="a checkpoint, or a model factory module:function (or file.py:function)",
    )


def run(args: argparse.Namespace, out: TextIO) -> int:
    from ..engine.reading.reader import open_checkpoint

    amap = recipe_or_map(args)
    source = open_checkpoint(args.src)
    if is_factory_spec(args.target):
        view, plan = _plan_for_model(args, source, amap)
        target_desc = f"model {args.target}"
    else:
        view, plan, prefix = _plan_for_checkpoint(args, source, amap)
        target_desc = f"checkpoint {prefix}"
    report = plan.report
    src_of = view.source_names
    if args.json:
        data = report.to_dict()
        data["target"] = target_desc
        data["mapping"] = _mapping(report, view)
        data["unused"] = [src_of.get(n, n) for n in report.unused]
        data["excluded_from_source"] = dict(view.excluded)
        write_json(data, out)
    else:
        out.write(f"plan: {view.prefix} -> {target_desc}\n")
        out.write(f"{report.summary()}\n")
        table(_table_rows(report, view), out)
    if not report.ok:
        problems = len(report.mismatched) + len(report.missing_required)
        raise PlanFailed(
            f"the plan does not fit: {problems} target(s) missing or mismatched "
            f"({report.summary()})"
        )
    return 0


def _plan_for_model(args: argparse.Namespace, source: Any, amap: Any) -> tuple[Any, Any]:
    from ..checkpoint import plan_for_root, target_variables
    from ..migrate import rename_checkpoint

    build = factory(args, args.target)
    with quiet_native_stderr(not args.debug):
        model = build()
    readable = source.format != "object-based"
    shapes = {n: t.shape for n, t in target_variables(model, readable=readable).items()}
    view = rename_checkpoint(source, amap, exclude=args.exclude or (), target_shapes=shapes)
    with quiet_native_stderr(not args.debug):
        plan, _ = plan_for_root(model, view, None, **_SHOW_ALL)
    return view, plan


def _plan_for_checkpoint(args: argparse.Namespace, source: Any, amap: Any) -> tuple[Any, Any, str]:
    from ..checkpoint import as_named_checkpoint
    from ..engine.planning.plan import plan_restore
    from ..migrate import rename_checkpoint

    target = as_named_checkpoint(args.target)
    specs = {n: (i.shape, i.dtype) for n, i in target.variables.items()}
    shapes = {n: s for n, (s, _) in specs.items()}
    view = rename_checkpoint(source, amap, exclude=args.exclude or (), target_shapes=shapes)
    return view, plan_restore(view, specs, None, **_SHOW_ALL), target.prefix


def _mapping(report: Any, view: Any) -> list[dict[str, str]]:
    """``--json``'s ``mapping``: each loaded target, its source name and renamed name."""
    rows = []
    for t, n in report.loaded.items():
        row = {"target": t, "source": view.source_names.get(n, n), "renamed_to": n}
        route = view.routes.get(n)
        if route is not None:
            row["transforms"] = route.text
        rows.append(row)
    return rows


def _table_rows(report: Any, view: Any) -> list[tuple[str, str, str]]:
    """The report's rows over the renamed source, then what the renames left out."""
    src_of = view.source_names
    # The renames' transforms are the view's; the report shows them beside each load.
    routes = {t: view.routes[n].text for t, n in report.loaded.items() if n in view.routes}
    shown = dataclasses.replace(report, transforms={**report.transforms, **routes})
    rows = shown.rows(lambda n: src_of.get(n, n))
    return rows + [("excluded", s, why) for s, why in view.excluded.items()]
