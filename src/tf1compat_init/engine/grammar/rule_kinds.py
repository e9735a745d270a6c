# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Each rule kind's two readings: against the targets (:meth:`AssignmentMap.resolve
<tf1compat_init.mapping.AssignmentMap.resolve>`) and of the checkpoint keys alone
(``rename``, as migrate renames). One table, :data:`KINDS`; a new kind adds one entry.

A handler's ``optional``: a rule that resolves to nothing is no error (a recipe's rules,
which may map parts a model was built without). Pure Python.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from ... import transforms as tt
from ...errors import AssignmentMapError
from .name_index import NameIndex, did_you_mean, scopes_of
from .rules import ROOT, Pair, Rule, RuleKind, rule_text

__all__ = ["KINDS", "Kind"]


# -- messages ------------------------------------------------------------------------------


def _suggest_root(key: str, ckpt: NameIndex, tgt: NameIndex) -> str:
    if tgt.has_scope(key) and not ckpt.has_scope(key):
        return rule_text(ROOT, key)  # the map was written backwards
    return rule_text(key, ROOT)


def _scope_hint(key: str, target: str, ckpt: NameIndex, tgt: NameIndex) -> str:
    if ckpt.has_scope(target) and tgt.has_scope(key):
        return (
            f"The map looks reversed: the grammar is {{checkpoint_scope: target_scope}}; "
            f"did you mean {rule_text(target, key)}?"
        )
    parts = []
    if not tgt.sorted:
        parts.append(
            "there are no variables to restore at all (is the model empty, or not built "
            "yet, so that its variables do not exist?)"
        )
    elif not tgt.has_scope(target):
        parts.append(f"variables to restore are under {scopes_of(tgt.sorted)}")
    if not ckpt.has_scope(key):
        parts.append(f"checkpoint keys are under {scopes_of(ckpt.sorted)}")
    text = "; ".join(parts)
    # Not str.capitalize(): it would lower-case the scope names quoted in the text.
    return text[:1].upper() + text[1:] + "."


def _regex_matches(
    rule: Rule, names: Iterable[str], templates: Sequence[str]
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """``(key, expanded templates)`` for each key the rule's regex matches, in order."""
    for key in names:
        m = rule.key.fullmatch(key)
        if m is None:
            continue
        try:
            expanded = tuple(rule.expand(m, t) for t in templates)
        except (re.error, IndexError) as e:
            raise AssignmentMapError(f"rule {rule.text}: bad template: {e}") from None
        yield key, expanded


def _join(scope: str, name: str) -> str:
    return name if scope == ROOT else scope + name


# -- the kinds: how each resolves against targets, and renames keys alone ---------------------


def _with_routes(rule: Rule, pairs: list[Pair]) -> list[Pair]:
    """The pairs of a one-key, one-target rule, through its transforms if it has any."""
    if rule.to is None:
        return pairs
    steps = rule.to.steps
    return [p._replace(route=tt.Route((p.checkpoint_key,), (p.target,), steps)) for p in pairs]


def _resolve_identity(rule: Rule, ckpt: NameIndex, tgt: NameIndex, optional: bool) -> list[Pair]:
    return [Pair(t, t, rule) for t in tgt.sorted]


def _resolve_one_to_one(rule: Rule, ckpt: NameIndex, tgt: NameIndex, optional: bool) -> list[Pair]:
    return [_one_to_one(rule, rule.key, rule.target, ckpt, tgt)]


def _resolve_name(rule: Rule, ckpt: NameIndex, tgt: NameIndex, optional: bool) -> list[Pair]:
    key, target = rule.key, rule.target
    assert target is not None
    # TF's order: a value that names a variable is a one-to-one rule, else a scope rule.
    if target in tgt:
        return _with_routes(rule, [_one_to_one(rule, key, target, ckpt, tgt)])
    return _with_routes(rule, _resolve_scope(rule, key, target, ckpt, tgt))


def _one_to_one(rule: Rule, key: str, target: str, ckpt: NameIndex, tgt: NameIndex) -> Pair:
    if target not in tgt:
        raise AssignmentMapError(
            f"rule {rule.text}: target {target!r} is not among the variables to restore"
            + did_you_mean(target, tgt.sorted)
        )
    if key not in ckpt:
        hint = ""
        if key.endswith("/") or key == ROOT:
            hint = (
                f"; {key!r} is a scope but {target!r} is one variable: name its key, e.g. "
                f"{rule_text(_join(key, target.rsplit('/', 1)[-1]), target)}"
            )
        raise AssignmentMapError(
            f"rule {rule.text}: checkpoint key {key!r} is not in the checkpoint"
            + (hint or did_you_mean(key, ckpt.sorted))
        )
    return Pair(key, target, rule)


def _resolve_scope(
    rule: Rule, key: str, target: str, ckpt: NameIndex, tgt: NameIndex
) -> list[Pair]:
    if target == "":
        raise AssignmentMapError(
            f"rule {rule.text}: the target is the empty string. TensorFlow would drop the "
            f"first character of every variable name ('dense/bias' -> 'ense/bias') and fail. "
            f"The grammar is {{checkpoint_scope: target_scope}} with '/' for the root; "
            f"did you mean {_suggest_root(key, ckpt, tgt)}?"
        )
    if not key.endswith("/"):
        raise AssignmentMapError(
            f"rule {rule.text}: {target!r} is not a variable to restore, so it must be a scope "
            f"('scope/') and the checkpoint key must be a scope too, e.g. "
            f"{rule_text(key + '/', target if target.endswith('/') else target + '/')}"
            + did_you_mean(target, tgt.sorted)
        )
    if not target.endswith("/"):
        raise AssignmentMapError(
            f"rule {rule.text}: {target!r} is neither a variable to restore nor a scope "
            f"(scopes end with '/'). Did you mean {rule_text(key, target + '/')}?"
        )
    if not tgt.has_scope(target):
        raise AssignmentMapError(
            f"rule {rule.text}: no variable to restore is under {target!r}, so TensorFlow "
            f"would silently load nothing. " + _scope_hint(key, target, ckpt, tgt)
        )
    if not ckpt.has_scope(key):
        raise AssignmentMapError(
            f"rule {rule.text}: the checkpoint has no key under {key!r}. "
            + _scope_hint(key, target, ckpt, tgt)
        )
    strip = 0 if target == ROOT else len(target)
    prefix = "" if key == ROOT else key
    return [Pair(prefix + name[strip:], name, rule) for name in tgt.under(target)]


def _resolve_regex(rule: Rule, ckpt: NameIndex, tgt: NameIndex, optional: bool) -> list[Pair]:
    if rule.to is not None and len(rule.to.targets) > 1:
        return _resolve_regex_split(rule, ckpt, tgt, optional)
    pattern: re.Pattern = rule.key
    out = [
        Pair(key, target, rule)
        for key, (target,) in _regex_matches(rule, ckpt.sorted, (rule.target or "",))
        if target in tgt
    ]
    if not out and not optional:
        matched = [k for k in ckpt.sorted if pattern.fullmatch(k)][:3]
        why = (
            f"it matches checkpoint keys such as {matched}, but none expands to a variable to "
            f"restore (for example {rule.expand(pattern.fullmatch(matched[0]), rule.target or '')!r})"
            if matched
            else "it matches no checkpoint key" + did_you_mean(pattern.pattern, ckpt.sorted)
        )
        raise AssignmentMapError(f"regex rule {rule.text} resolves to nothing: {why}")
    return _with_routes(rule, out)


def _resolve_regex_split(rule: Rule, ckpt: NameIndex, tgt: NameIndex, optional: bool) -> list[Pair]:
    out = []
    for key, targets in _regex_matches(rule, ckpt.sorted, rule.to.targets):
        if not any(t in tgt for t in targets):
            continue
        lost = [t for t in targets if t not in tgt]
        if lost:
            raise AssignmentMapError(
                f"rule {rule.text}: checkpoint key {key!r} splits into {list(targets)}, but "
                f"{lost[0]!r} is not among the variables to restore"
                + did_you_mean(lost[0], tgt.sorted)
            )
        route = tt.Route((key,), targets, rule.to.steps)
        out += [
            Pair(key, t, rule, tt.Route(route.keys, targets, route.steps, i))
            for i, t in enumerate(targets)
        ]
    if not out and not optional:
        raise AssignmentMapError(f"regex rule {rule.text} resolves to nothing")
    return out


def _resolve_callable(rule: Rule, ckpt: NameIndex, tgt: NameIndex, optional: bool) -> list[Pair]:
    fn = rule.key
    out = []
    for key in ckpt.sorted:
        target = fn(key)
        if target is None:
            continue
        if not isinstance(target, str):
            raise AssignmentMapError(
                f"{rule.text} returned {target!r} for checkpoint key {key!r}; it must return "
                f"a target name or None"
            )
        if target not in tgt:
            raise AssignmentMapError(
                f"{rule.text} maps checkpoint key {key!r} to {target!r}, which is not a "
                f"variable to restore" + did_you_mean(target, tgt.sorted)
            )
        out.append(Pair(key, target, rule))
    return out


def _resolve_routed(rule: Rule, ckpt: NameIndex, tgt: NameIndex, optional: bool) -> list[Pair]:
    to = rule.to
    for target in to.targets:
        if target not in tgt:
            raise AssignmentMapError(
                f"rule {rule.text}: target {target!r} is not among the variables to "
                f"restore" + did_you_mean(target, tgt.sorted)
            )
    for key in rule.keys:
        if key not in ckpt:
            raise AssignmentMapError(
                f"rule {rule.text}: checkpoint key {key!r} is not in the checkpoint"
                + did_you_mean(key, ckpt.sorted)
            )
    source = " + ".join(rule.keys)
    return [
        Pair(source, t, rule, tt.Route(rule.keys, to.targets, to.steps, i))
        for i, t in enumerate(to.targets)
    ]


Triple = tuple[Rule, tuple[str, ...], tuple[str, ...]]


def _rename_identity(rule: Rule, names: list[str], name_set: set[str]) -> list[Triple]:
    return [(rule, (n,), (n,)) for n in names]


def _rename_one_to_one(rule: Rule, names: list[str], name_set: set[str]) -> list[Triple]:
    raise AssignmentMapError(
        f"rule {rule.text}: a migration renames keys to names; variable objects have no "
        f"meaning here"
    )


def _rename_callable(rule: Rule, names: list[str], name_set: set[str]) -> list[Triple]:
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
        out.append((rule, (n,), (new,)))
    return out


def _rename_regex(rule: Rule, names: list[str], name_set: set[str]) -> list[Triple]:
    templates = rule.to.targets if rule.to is not None else (rule.target or "",)
    out = []
    for n, news in _regex_matches(rule, names, templates):
        if rule.to is None and not news[0]:
            raise AssignmentMapError(f"rule {rule.text} renames {n!r} to the empty string")
        out.append((rule, (n,), news))
    if not out:
        raise AssignmentMapError(
            f"regex rule {rule.text} matches no checkpoint key (it must match a whole key)"
            + did_you_mean(rule.key.pattern, names)
        )
    return out


def _rename_routed(rule: Rule, names: list[str], name_set: set[str]) -> list[Triple]:
    for key in rule.keys:
        if key not in name_set:
            raise AssignmentMapError(
                f"rule {rule.text} matches nothing: {key!r} is not a key of the checkpoint"
                + did_you_mean(key, names)
            )
    return [(rule, rule.keys, rule.to.targets)]


def _rename_name(rule: Rule, names: list[str], name_set: set[str]) -> list[Triple]:
    """A key or a scope renamed (its transforms, if any, keep the one name)."""
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
            return [(rule, (n,), (new_prefix + n,)) for n in names]
        under = [n for n in names if n.startswith(key)]
        if not under:
            hint = (
                f"the map looks reversed: the grammar is {{checkpoint_scope: new_scope}}; did "
                f"you mean {{{target!r}: {key!r}}}?"
                if target != ROOT and any(n.startswith(target) for n in names)
                else f"checkpoint keys are under {scopes_of(names)}"
            )
            raise AssignmentMapError(
                f"rule {rule.text} matches nothing: the checkpoint has no key under {key!r}; "
                + hint
            )
        return [(rule, (n,), (new_prefix + n[len(key) :],)) for n in under]
    if key not in name_set:
        raise AssignmentMapError(
            f"rule {rule.text} matches nothing: {key!r} is not a key of the checkpoint"
            + (
                f"; for the scope, write {{{key + '/'!r}: ...}}"
                if any(n.startswith(key + "/") for n in names)
                else did_you_mean(key, names)
            )
        )
    if target in ("", ROOT) or target.endswith("/"):
        leaf = key.rsplit("/", 1)[-1]
        raise AssignmentMapError(
            f"rule {rule.text}: {key!r} is one key, so the new name must be one name; did you "
            f"mean {{{key!r}: {(target.strip('/') + '/' if target.strip('/') else '') + leaf!r}}}?"
        )
    return [(rule, (key,), (target,))]


class Kind(NamedTuple):
    """One kind's two readings: against the targets (``resolve``), of the keys alone
    (``rename``)."""

    resolve: Callable[[Rule, NameIndex, NameIndex, bool], list[Pair]]
    rename: Callable[[Rule, list[str], set[str]], list[Triple]]


KINDS: dict[RuleKind, Kind] = {
    RuleKind.IDENTITY: Kind(_resolve_identity, _rename_identity),
    RuleKind.NAME: Kind(_resolve_name, _rename_name),
    RuleKind.ONE_TO_ONE: Kind(_resolve_one_to_one, _rename_one_to_one),
    RuleKind.REGEX: Kind(_resolve_regex, _rename_regex),
    RuleKind.CALLABLE: Kind(_resolve_callable, _rename_callable),
    RuleKind.ROUTED: Kind(_resolve_routed, _rename_routed),
}
