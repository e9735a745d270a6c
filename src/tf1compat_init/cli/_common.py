# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""What every command shares: usage errors, tables, quiet TensorFlow, maps from arguments."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

PROG = "tf1compat-init"


class UsageError(Exception):
    """Bad command-line usage (exit 2)."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are :class:`UsageError` (one line, exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def table(rows: Sequence[tuple[str, ...]], out: TextIO, indent: str = "  ") -> None:
    """Left-aligned columns; the last one is not padded."""
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)] + [r[-1]]
        out.write(indent + "  ".join(cells).rstrip() + "\n")


def write_json(data: Any, out: TextIO) -> None:
    json.dump(data, out, indent=2, sort_keys=False)
    out.write("\n")


def one_line(exc: BaseException) -> str:
    """An error as one line: its first two lines, and how many more there were."""
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
def quiet_native_stderr(enabled: bool) -> Iterator[None]:
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


def import_tensorflow(args: argparse.Namespace) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with quiet_native_stderr(not args.debug):
        import tensorflow  # noqa: F401

        with contextlib.suppress(ImportError):  # let a factory's `import keras` be quiet too
            import keras  # noqa: F401


def factory(args: argparse.Namespace, spec: str) -> Any:
    """Loads ``module:function``; the returned callable builds the model quietly."""
    from ..migrate import load_factory

    import_tensorflow(args)
    with quiet_native_stderr(not args.debug):
        fn = load_factory(spec)

    def build() -> Any:
        with quiet_native_stderr(not args.debug):
            return fn()

    build.__qualname__ = spec  # errors name the factory as the user wrote it
    return build


def is_factory_spec(spec: str) -> bool:
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


def recipe_or_map(args: argparse.Namespace) -> Any:
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
