"""``tf1compat-init``: inspect, plan, diff and migrate TF1 and TF2 checkpoints.

A thin front door: it parses arguments, calls the library, and prints. ``inspect``,
``diff``, ``plan`` against a checkpoint, and ``migrate --format tf1|safetensors``
never import TensorFlow; model factories and the ``tf2`` / ``keras`` formats do, with
TensorFlow's start-up log kept off the terminal.

Exit codes: 0 success, 1 failure, 2 usage error; ``diff`` follows diff(1): 0 identical,
1 different, 2 trouble. Every failure is one line on stderr (a traceback with ``--debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

__all__ = ["build_parser", "main"]

PROG = "tf1compat-init"

logger = logging.getLogger(__name__)


class UsageError(Exception):
    """Bad command-line usage (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


# -- output helpers ---------------------------------------------------------------------------


def _shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _table(rows: list[tuple[str, ...]], out: TextIO, indent: str = "  ") -> None:
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)] + [r[-1]]
        out.write(indent + "  ".join(cells).rstrip() + "\n")


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    text = lines[0].rstrip(":")
    if len(lines) > 1:
        text += ": " + lines[1]
        if len(lines) > 2:
            text += f" (and {len(lines) - 2} more lines; --debug shows all)"
    return text


@contextlib.contextmanager
def _quiet_native_stderr(enabled: bool) -> Iterator[None]:
    """Sends fd 2 to /dev/null: TensorFlow's C++ start-up lines ignore Python's streams."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _import_tensorflow(args: argparse.Namespace) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with _quiet_native_stderr(not args.debug):
        import tensorflow  # noqa: F401

        with contextlib.suppress(ImportError):  # let a factory's `import keras` be quiet too
            import keras  # noqa: F401


def _factory(args: argparse.Namespace, spec: str) -> Any:
    """Loads ``module:function``; the returned callable builds the model quietly."""
    from ..migrate import load_factory

    _import_tensorflow(args)
    with _quiet_native_stderr(not args.debug):
        fn = load_factory(spec)

    def build() -> Any:
        with _quiet_native_stderr(not args.debug):
            return fn()

    build.__qualname__ = spec  # errors name the factory as the user wrote it
    return build


def _is_factory_spec(spec: str) -> bool:
    return not os.path.exists(spec) and re.fullmatch(r"[^:]+:[A-Za-z_][\w.]*", spec) is not None


def _amap(args: argparse.Namespace) -> list[tuple[str, str]] | None:
    from ..migrate import load_map_file

    pairs: list[tuple[str, str]] = []
    if getattr(args, "map_file", None):
        pairs += load_map_file(args.map_file)
    for text in getattr(args, "map", None) or []:
        old, sep, new = text.partition("=")
        if not sep:
            raise UsageError(
                f"{PROG}: --map takes OLD=NEW (e.g. --map model/=encoder/), got {text!r}"
            )
        pairs.append((old, new))
    return pairs or None


def _recipe_or_map(args: argparse.Namespace) -> Any:
    """The --recipe's Recipe, or the --map / --map-file rules (not both)."""
    amap = _amap(args)
    recipe = getattr(args, "recipe", None)
    if recipe is None:
        return amap
    if amap is not None:
        raise UsageError(
            f"{PROG}: --recipe is a whole map; do not combine it with --map/--map-file"
        )
    from ..transforms import get_recipe

    return get_recipe(recipe)


def _json(data: Any, out: TextIO) -> None:
    json.dump(data, out, indent=2, sort_keys=False)
    out.write("\n")


# -- inspect ----------------------------------------------------------------------------------


def _cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    from .. import open_checkpoint
    from ..view import object_paths, value_nbytes

    info = open_checkpoint(args.path)
    entries = getattr(info.bundle, "entries", {})
    named = object_paths(info).keys if info.format == "object-based" else None
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
    total = sum(r["bytes"] for r in rows)
    if args.json:
        _json(
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
    out.write(f"checkpoint  {info.prefix}\n")
    out.write(f"format      {info.format}\n")
    out.write(f"shards      {len(info.data_files)}: {', '.join(info.data_files)}\n")
    from ..migrate._bytes import human

    exact = f" ({total} bytes)" if total >= 1024 else ""
    out.write(f"tensors     {len(rows)}, {human(total)}{exact}\n\n")
    head = ("object path" if named is not None else "key", "shape", "dtype", "bytes")
    table = [(*head, "key" if named is not None else "")]
    for r in rows:
        first = r["object_path"] if named is not None else r["key"]
        last = r["key"] if named is not None and r["key"] != first else ""
        table.append((first, _shape(r["shape"]), r["dtype"], str(r["bytes"]), last))
    _table(table, out, indent="")
    return 0


# -- plan -------------------------------------------------------------------------------------


def _cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    from ..checkpoint import as_named_checkpoint
    from ..migrate import rename_checkpoint
    from ..plan import plan_restore
    from ..reader import open_checkpoint

    amap = _recipe_or_map(args)
    source = open_checkpoint(args.src)
    ignore = {"on_missing": "ignore", "on_mismatch": "ignore"}
    if _is_factory_spec(args.target):
        from ..checkpoint import plan_for_root, target_variables

        build = _factory(args, args.target)
        with _quiet_native_stderr(not args.debug):
            model = build()
        readable = source.format != "object-based"
        shapes = {n: t.shape for n, t in target_variables(model, readable=readable).items()}
        view = rename_checkpoint(source, amap, exclude=args.exclude or (), target_shapes=shapes)
        with _quiet_native_stderr(not args.debug):
            plan, _ = plan_for_root(model, view, None, **ignore)
        target_desc = f"model {args.target}"
    else:
        target = as_named_checkpoint(args.target)
        specs = {n: (i.shape, i.dtype) for n, i in target.variables.items()}
        shapes = {n: s for n, (s, _) in specs.items()}
        view = rename_checkpoint(source, amap, exclude=args.exclude or (), target_shapes=shapes)
        plan = plan_restore(view, specs, None, **ignore)
        target_desc = f"checkpoint {target.prefix}"
    report = plan.report
    # Show the checkpoint side by the source's own names, so renames are visible.
    src_of = view.source_names
    mapping = [
        {"target": t, "source": src_of.get(n, n), "renamed_to": n} for t, n in report.loaded.items()
    ]
    for m in mapping:
        route = view.routes.get(m["renamed_to"])
        if route is not None:
            m["transforms"] = route.text
    if args.json:
        data = report.to_dict()
        data["target"] = target_desc
        data["mapping"] = mapping
        data["unused"] = [src_of.get(n, n) for n in report.unused]
        data["excluded_from_source"] = dict(view.excluded)
        _json(data, out)
    else:
        out.write(f"plan: {view.prefix} -> {target_desc}\n")
        out.write(f"{report.summary()}\n")
        rows = []
        for m in report.mismatched:
            rows.append(
                ("mismatched", m.target, f"<- {src_of.get(m.checkpoint_key, '?')}: {m.reason}")
            )
        opt = set(report.optional)
        for t, n in report.missing.items():
            note = " (optional)" if t in opt else ""
            near = report.suggestions.get(t)
            hint = f"; nearest: {', '.join(src_of.get(k, k) for k in near)}" if near else ""
            rows.append(("missing", t, f"<- {n} not in the source{note}{hint}"))
        for m in mapping:
            via = f" (renamed {m['renamed_to']})" if m["renamed_to"] != m["source"] else ""
            route = view.routes.get(m["renamed_to"])
            via += f" | {route.text}" if route is not None else ""
            rows.append(("loaded", m["target"], f"<- {m['source']}{via}"))
        rows += [("untouched", t, "no key; keeps its initial value") for t in report.untouched]
        rows += [("unused", src_of.get(n, n), "nothing loads it") for n in report.unused]
        rows += [("excluded", s, why) for s, why in view.excluded.items()]
        _table(rows, out)
    if not report.ok:
        problems = len(report.mismatched) + len(report.missing_required)
        raise _PlanFailed(
            f"the plan does not fit: {problems} target(s) missing or mismatched "
            f"({report.summary()})"
        )
    return 0


class _PlanFailed(Exception):
    pass


# -- diff -------------------------------------------------------------------------------------


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


def _cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
    from ..checkpoint import as_named_checkpoint
    from ..migrate import rename_checkpoint
    from ..migrate._bytes import equal

    a = rename_checkpoint(args.a, _recipe_or_map(args), exclude=args.exclude or ())
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
        _json(
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
        _table([(n, _shape(a.variables[n].shape), a.variables[n].dtype) for n in only_a], out)
    if only_b:
        out.write(f"only in B ({len(only_b)}):\n")
        _table([(n, _shape(b.variables[n].shape), b.variables[n].dtype) for n in only_b], out)
    if changed:
        out.write(f"shape or dtype changed ({len(changed)}):\n")
        _table(
            [
                (n, f"{_shape(x.shape)} {x.dtype}", "->", f"{_shape(y.shape)} {y.dtype}")
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
        _table(rows, out)
    same = len(shared) - len(changed) - len(differing)
    out.write(f"{same} shared key(s) identical" + ("; no differences\n" if identical else "\n"))
    return 0 if identical else 1


# -- migrate ----------------------------------------------------------------------------------


def _cmd_migrate(args: argparse.Namespace, out: TextIO) -> int:
    from ..migrate import migrate
    from ._progress import ProgressBar

    model = None
    if args.model:
        if args.format not in ("tf2", "keras"):
            raise UsageError(f"{PROG} migrate: --model is used only with --format tf2 or keras")
        model = _factory(args, args.model)
    bar = ProgressBar("migrate", enabled=not (args.quiet or args.json))
    try:
        amap = _recipe_or_map(args)
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
        _json(result.to_dict(), out)
    elif not args.quiet:
        out.write(result.summary() + "\n")
        for old, new in list(result.renamed.items())[:20]:
            out.write(f"  renamed   {old} -> {new}\n")
        if len(result.renamed) > 20:
            out.write(f"  ... and {len(result.renamed) - 20} more renamed (--json lists all)\n")
        for name, via in list(result.transforms.items())[:20]:
            out.write(f"  transform {result.tensors[name]} -> {name} | {via}\n")
        if len(result.transforms) > 20:
            out.write(
                f"  ... and {len(result.transforms) - 20} more transformed (--json lists all)\n"
            )
        for name, why in list(result.excluded.items())[:20]:
            out.write(f"  excluded  {name} ({why})\n")
        if result.report is not None and result.report.unused:
            out.write(
                f"  unused    {len(result.report.unused)} key(s) the model has no place for\n"
            )
    return 0


# -- the parser -------------------------------------------------------------------------------

_EXAMPLES = {
    "inspect": f"""example:
  {PROG} inspect pretrained/                 # a directory: its latest checkpoint
  {PROG} inspect run/model.ckpt-200 --json   # a prefix; JSON for scripts""",
    "plan": f"""example:
  {PROG} plan tf1_ckpt/ --target new_ckpt/ --map model/=sub_model_2/
  {PROG} plan tf1_ckpt/ --target mymodels:build_encoder --map-file renames.json""",
    "diff": f"""example:
  {PROG} diff before/ after/model.ckpt
  {PROG} diff tf1_ckpt/ migrated/model.ckpt --map model/=encoder/   # renames A's keys first""",
    "migrate": f"""example:
  {PROG} migrate tf1_ckpt/ out/model.ckpt --map model/=encoder/ --drop-optimizer
  {PROG} migrate tf1_ckpt/ out/model.safetensors --format safetensors
  {PROG} migrate tf1_ckpt/ out/ckpt --format tf2 --model mymodels:build_encoder
  {PROG} migrate tf1_ckpt/ out/model.weights.h5 --format keras --model mymodels:build_encoder

Each --map OLD=NEW renames the keys under OLD (a scope ending in '/', or one key) to NEW;
keys that no rule matches keep their names. A --map-file holds the same rules as JSON:
{{"model/": "encoder/", "global_step": "step"}} or [["model/", "encoder/"], ...].""",
}

_HELP = {
    "inspect": "list a checkpoint's format, shards and keys (shape, dtype, bytes)",
    "plan": "dry run: what a restore of SRC into TARGET would load, and what does not fit",
    "diff": "compare two checkpoints: keys, shapes, dtypes and the largest value differences",
    "migrate": "write a renamed, verified copy of SRC as tf1, tf2, keras or safetensors",
}


def build_parser() -> argparse.ArgumentParser:
    """The ``tf1compat-init`` argument parser."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    common.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    common.add_argument("--debug", action="store_true", help="tracebacks and TensorFlow's log")
    mapping = argparse.ArgumentParser(add_help=False)
    mapping.add_argument(
        "--map",
        action="append",
        metavar="OLD=NEW",
        help="rename keys under OLD to NEW (repeatable); OLD/NEW are scopes ending in '/' or keys",
    )
    mapping.add_argument(
        "--map-file",
        metavar="FILE",
        help='JSON file of OLD: NEW rules; NEW may carry transforms: "new | reshape(2, 3)"',
    )
    mapping.add_argument(
        "--recipe",
        metavar="NAME",
        help="a registered recipe (tf1compat_init.transforms) instead of --map/--map-file",
    )
    mapping.add_argument(
        "--exclude",
        action="append",
        metavar="REGEX",
        help="leave out keys whose name (old or new) matches (re.search; repeatable)",
    )

    parser = _Parser(
        prog=PROG,
        description="Inspect, plan, diff and migrate TF1 (name-based) and TF2 (object-based) "
        "TensorFlow checkpoints.",
        epilog="Exit codes: 0 success, 1 failure, 2 usage error (diff: 0 same, 1 different, "
        "2 trouble). Run '%(prog)s COMMAND --help' for examples.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add(name: str, parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            parents=parents,
            help=_HELP[name],
            description=_HELP[name][0].upper() + _HELP[name][1:] + ".",
            epilog=_EXAMPLES[name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    p = add("inspect", [common])
    p.add_argument("path", metavar="PATH", help="checkpoint directory, prefix, .index or .data-*")

    p = add("plan", [common, mapping])
    p.add_argument("src", metavar="SRC", help="the source checkpoint")
    p.add_argument(
        "--target",
        required=True,
        metavar="TARGET",
        help="a checkpoint, or a model factory module:function (or file.py:function)",
    )

    p = add("diff", [common, mapping])
    p.add_argument("a", metavar="A", help="the first checkpoint (--map renames its keys)")
    p.add_argument("b", metavar="B", help="the second checkpoint")

    p = add("migrate", [common, mapping])
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
    return parser


_COMMANDS = {"inspect": _cmd_inspect, "plan": _cmd_plan, "diff": _cmd_diff, "migrate": _cmd_migrate}


def _setup_logging(args: argparse.Namespace) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s: %(message)s"))
    root = logging.getLogger("tf1compat_init")
    root.handlers[:] = [handler]
    root.propagate = False
    root.setLevel(logging.DEBUG if args.debug else logging.ERROR if args.quiet else logging.WARNING)
    if not args.debug:
        warnings.filterwarnings("ignore")  # library warnings of TF/Keras are not ours to show


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI; returns the exit code.

    Example:
        >>> main(["inspect", "pretrained/", "--json"])  # doctest: +SKIP
        0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    command = None
    try:
        args = parser.parse_args(argv)
        command = args.command
        _setup_logging(args)
        return _COMMANDS[command](args, sys.stdout)
    except UsageError as e:
        sys.stderr.write(f"{e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except _PlanFailed as e:
        sys.stderr.write(f"{PROG} plan: error: {e}\n")
        return 1
    except Exception as e:
        debug = "--debug" in argv
        if debug:
            import traceback

            traceback.print_exc()
        name = f"{PROG} {command}" if command else PROG
        known = _is_expected(e)
        text = _one_line(e) if known else f"internal error: {type(e).__name__}: {_one_line(e)}"
        hint = "" if known or debug else " (run with --debug for the traceback)"
        sys.stderr.write(f"{name}: error: {text}{hint}\n")
        return 2 if command == "diff" else 1


def _is_expected(e: BaseException) -> bool:
    from ..errors import Tf1CompatError

    return isinstance(e, Tf1CompatError | OSError | ValueError | KeyError | ImportError)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
