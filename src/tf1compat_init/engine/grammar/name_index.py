# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Sorted names for the grammar: fast scope (prefix) queries and "did you mean" hints.

Pure Python.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Collection, Iterable, Sequence

from .rules import ROOT

__all__ = ["NameIndex", "SortedNames", "did_you_mean", "nearest", "scopes_of"]


class NameIndex:
    """A sorted view of names for fast scope (prefix) queries."""

    def __init__(self, names: Collection[str]) -> None:
        self.set = names if isinstance(names, set | frozenset | dict) else set(names)
        self.sorted = SortedNames(sorted(self.set))

    def under(self, scope: str) -> list[str]:
        """Names that start with ``scope`` (all names for the root)."""
        if scope == ROOT:
            return self.sorted
        lo = bisect.bisect_left(self.sorted, scope)
        hi = lo
        n = len(self.sorted)
        while hi < n and self.sorted[hi].startswith(scope):
            hi += 1
        return self.sorted[lo:hi]

    def has_scope(self, scope: str) -> bool:
        if scope == ROOT:
            return bool(self.sorted)
        i = bisect.bisect_left(self.sorted, scope)
        return i < len(self.sorted) and self.sorted[i].startswith(scope)

    def __contains__(self, name: object) -> bool:
        return name in self.set


_POOL = 200  # candidates compared in full; difflib is quadratic-ish per candidate


def nearest(name: str, candidates: Collection[str], n: int = 3) -> list[str]:
    """The few candidates closest to ``name`` (never the whole list).

    On large collections only a pool is compared: the names next to ``name`` in sorted
    order (a typo late in the name) and the names with the same last component (a typo
    or a different scope early in it), so an error message costs milliseconds, not
    seconds, at 100k keys.
    """
    if not candidates:
        return []
    if len(candidates) > _POOL:
        ordered = candidates if isinstance(candidates, SortedNames) else sorted(candidates)
        i = bisect.bisect_left(ordered, name)
        pool = dict.fromkeys(ordered[max(0, i - _POOL // 4) : i + _POOL // 4])
        leaf = "/" + name.rsplit("/", 1)[-1]
        for c in ordered:
            if len(pool) >= _POOL:
                break
            if c.endswith(leaf):
                pool.setdefault(c)
        candidates = list(pool)
    return difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.5)


class SortedNames(list):
    """A list known to be sorted (so :func:`nearest` need not sort it again)."""


def scopes_of(names: Iterable[str], limit: int = 5) -> list[str]:
    """The distinct top-level scopes of ``names``, for messages."""
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name.split("/", 1)[0] + "/" if "/" in name else name, None)
        if len(seen) >= limit:
            break
    return list(seen)


def did_you_mean(name: str, candidates: Sequence[str]) -> str:
    close = nearest(name, candidates)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
