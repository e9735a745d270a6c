# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The string form of transforms: ``"q/kernel, k/kernel | split(-1)"``, ``"a + b"``.

What a JSON or YAML map file can hold; parsed with :mod:`ast` (literals only, nothing is
evaluated). Pure.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ..errors import TransformError
from .base import Transform
from .pipeline import To, to
from .steps import cast, concat, remap_vocab, reshape, split, transpose

__all__ = ["is_concat_key", "is_pipeline", "parse_key", "parse_target", "parse_transforms"]

_PARSERS: dict[str, Callable[..., Transform]] = {
    "reshape": reshape,
    "transpose": transpose,
    "split": split,
    "concat": concat,
    "cast": cast,
    "remap_vocab": remap_vocab,
}


def _literal(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Name):  # cast(float16)
        return node.id
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e, text) for e in node.elts]
    try:
        value = ast.literal_eval(node)
    except ValueError:
        raise TransformError(f"{text!r}: arguments must be numbers, lists or dtype names") from None
    return value


def _parse_call(text: str) -> Transform:
    text = text.strip()
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        node = None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise TransformError(
            f"{text!r} is not a transform; write name(arguments), e.g. reshape(768, 12, 64), "
            f"transpose(1, 0), split(-1), concat(-1), cast(float16)"
        )
    name = node.func.id
    if name == "fn":
        raise TransformError(f"{text!r}: fn(...) has no string form; use tt.fn in a Python map")
    maker = _PARSERS.get(name)
    if maker is None:
        raise TransformError(
            f"unknown transform {name!r} in {text!r}; the transforms are "
            f"{', '.join(_PARSERS)} (and tt.fn in Python)"
        )
    args = [_literal(a, text) for a in node.args]
    kwargs = {k.arg: _literal(k.value, text) for k in node.keywords if k.arg is not None}
    try:
        return maker(*args, **kwargs)
    except TypeError as e:
        raise TransformError(f"{text!r}: {e}") from None


def parse_transforms(text: str) -> tuple[Transform, ...]:
    """``"reshape(1, 2) | cast(float16)"`` -> the transforms."""
    parts = text.split("|")
    if any(not part.strip() for part in parts):
        raise TransformError(f"{text!r}: an empty step between '|'")
    return tuple(_parse_call(part) for part in parts)


def is_pipeline(text: str) -> bool:
    """Whether a map value is in the pipeline syntax (holds ``|`` or ``,``)."""
    return "|" in text or "," in text


def is_concat_key(text: str) -> bool:
    """Whether a map key is a concat key ``"a + b"``."""
    return "+" in text


def parse_target(text: str) -> To:
    """``"q/kernel, k/kernel | split(-1)"`` -> ``To``.

    Example:
        >>> parse_target("x | transpose(1, 0) | cast(float16)").text
        'x | transpose(1, 0) | cast(float16)'
    """
    head, sep, rest = text.partition("|")
    targets = [t.strip() for t in head.split(",")]
    if not all(targets) or any(" " in t for t in targets):
        raise TransformError(
            f"{text!r}: the targets before '|' are names separated by commas, e.g. "
            f"'q/kernel, k/kernel | split(-1)'"
        )
    steps = parse_transforms(rest) if sep else ()
    return to(targets, *steps)


def parse_key(text: str) -> tuple[str, ...]:
    """``"ckpt/q + ckpt/k"`` -> ``("ckpt/q", "ckpt/k")``."""
    keys = tuple(k.strip() for k in text.split("+"))
    if not all(keys) or any(" " in k for k in keys):
        raise TransformError(
            f"{text!r}: a concat key is checkpoint keys joined by ' + ', e.g. 'a/q + a/k'"
        )
    return keys
