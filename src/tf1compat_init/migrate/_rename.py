"""Forward renames: the ``(source name, new name)`` pairs one assignment-map rule makes.

Shared by :func:`tf1compat_init.migrate.rename_checkpoint` and the transform routes
(:mod:`tf1compat_init.migrate._routes`), so that neither imports the other back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import AssignmentMapError
from ..mapping import ROOT, Rule, nearest


def _hint_near(name: str, names: Sequence[str]) -> str:
    close = nearest(name, names)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _scopes(names: Sequence[str], limit: int = 5) -> list[str]:
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n.split("/", 1)[0] + "/" if "/" in n else n, None)
        if len(seen) >= limit:
            break
    return list(seen)


def _forward(rule: Rule, names: list[str], name_set: set[str]) -> list[tuple[str, str]]:
    """The ``(source name, new name)`` pairs one rule produces; raises if it matches nothing."""
    if rule.kind == "identity":
        return [(n, n) for n in names]
    if rule.kind == "one_to_one":
        raise AssignmentMapError(
            f"rule {rule.text}: a migration renames keys to names; variable objects have no "
            f"meaning here"
        )
    if rule.kind == "callable":
        out = []
        for n in names:
            new = rule.key(n)
            if new is None:
                continue
            if not isinstance(new, str) or not new:
                raise AssignmentMapError(
                    f"{rule.text} returned {new!r} for key {n!r}; it must return a non-empty "
                    f"name or None"
                )
            out.append((n, new))
        return out
    if rule.kind == "regex":
        out = []
        for n in names:
            m = rule.key.fullmatch(n)
            if m is None:
                continue
            try:
                new = m.expand(rule.target or "")
            except (re.error, IndexError) as e:
                raise AssignmentMapError(f"rule {rule.text}: bad template: {e}") from None
            if not new:
                raise AssignmentMapError(f"rule {rule.text} renames {n!r} to the empty string")
            out.append((n, new))
        if not out:
            raise AssignmentMapError(
                f"regex rule {rule.text} matches no checkpoint key (it must match a whole key)"
                + _hint_near(rule.key.pattern, names)
            )
        return out
    key, target = rule.key, rule.target or ""
    if key == ROOT or key.endswith("/"):
        if target == "":
            raise AssignmentMapError(
                f"rule {rule.text}: the new name is the empty string; use '/' for the root, "
                f"e.g. {{{key!r}: '/'}}"
            )
        if target != ROOT and not target.endswith("/"):
            raise AssignmentMapError(
                f"rule {rule.text}: {key!r} is a scope, so the new name must be a scope too "
                f"(ending with '/'); did you mean {{{key!r}: {target + '/'!r}}}?"
            )
        new_prefix = "" if target == ROOT else target
        if key == ROOT:
            return [(n, new_prefix + n) for n in names]
        under = [n for n in names if n.startswith(key)]
        if not under:
            hint = (
                f"the map looks reversed: the grammar is {{checkpoint_scope: new_scope}}; did "
                f"you mean {{{target!r}: {key!r}}}?"
                if target != ROOT and any(n.startswith(target) for n in names)
                else f"checkpoint keys are under {_scopes(names)}"
            )
            raise AssignmentMapError(
                f"rule {rule.text} matches nothing: the checkpoint has no key under {key!r}; "
                + hint
            )
        return [(n, new_prefix + n[len(key) :]) for n in under]
    if key not in name_set:
        raise AssignmentMapError(
            f"rule {rule.text} matches nothing: {key!r} is not a key of the checkpoint"
            + (
                f"; for the scope, write {{{key + '/'!r}: ...}}"
                if any(n.startswith(key + "/") for n in names)
                else _hint_near(key, names)
            )
        )
    if target in ("", ROOT) or target.endswith("/"):
        leaf = key.rsplit("/", 1)[-1]
        raise AssignmentMapError(
            f"rule {rule.text}: {key!r} is one key, so the new name must be one name; did you "
            f"mean {{{key!r}: {(target.strip('/') + '/' if target.strip('/') else '') + leaf!r}}}?"
        )
    return [(key, target)]
