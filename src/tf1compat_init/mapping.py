"""The assignment-map grammar: TF1's ``init_from_checkpoint`` rules, resolved exactly.

Pure Python: no TensorFlow, no numpy. The grammar is TF's own
(``tf.compat.v1.train.init_from_checkpoint``), keys on the checkpoint side and
values on the target side:

- ``{"/": "/"}`` (or ``None``): every target loads the checkpoint key of the same name.
- ``{"checkpoint_scope/": "scope/"}``: every target under ``scope/`` loads the
  checkpoint key with ``scope/`` replaced by ``checkpoint_scope/``.
- ``{"/": "scope/"}``: every target under ``scope/`` loads the key without the scope.
- ``{"checkpoint_scope/": "/"}``: every target loads the key with ``checkpoint_scope/`` added.
- ``{"checkpoint_scope/name": "scope/other"}``: one target from one key.
- ``{"checkpoint_name": variable}`` or ``{"checkpoint_name": [partitions]}``: as above,
  with the target given as an object; a front end names it (``name_of``).

Pairs are applied sorted by checkpoint key, as TF does. Extensions, which TF lacks:

- a compiled regular expression as key, with a template value using back-references:
  ``{re.compile(r"bert/encoder/layer_(\\d+)/(.*)"): r"encoder/block_\\1/\\2"}``; it is
  matched in full against every checkpoint key;
- a callable instead of the whole map: ``key -> target name or None``;
- ``exclude=``: regular expressions (``re.search``); a pair is dropped when its
  checkpoint key or its target name matches one;
- tensor transforms (:mod:`tf1compat_init.transforms`): a value ``tt.to(target,
  *transforms)`` or ``"target | reshape(768, 12, 64)"``; a list of targets with
  ``split`` (``"q, k, v | split(-1)"``); a tuple key (or ``"a + b"``) with ``concat``;
- a :class:`~tf1compat_init.transforms.Recipe` instead of the map: its rules, its
  ``drop`` patterns (checkpoint keys left out, reported) and ``requires`` patterns.

Where TF crashes confusingly or silently does nothing (an empty target, a reversed
map, a scope that matches no variable), :class:`AssignmentMapError` says so and
shows the corrected map.
"""

from __future__ import annotations

import bisect
import dataclasses
import difflib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import transforms as tt
from .errors import AssignmentMapError
from .policy import check_policy_value

ROOT = "/"
#: A string key with this prefix is a regular expression (``"re:layer_(\\d+)/(.*)"``):
#: the form a JSON map file can hold. TF names never contain ``:``, so no key is mistaken.
REGEX_PREFIX = "re:"

__all__ = ["REGEX_PREFIX", "ROOT", "AssignmentMap", "Pair", "Rule"]


def _compile_rule_key(key: str, written: str) -> re.Pattern:
    pattern = key[len(REGEX_PREFIX) :]
    if not pattern:
        raise AssignmentMapError(f"rule {written}: the regex after {REGEX_PREFIX!r} is empty")
    try:
        return re.compile(pattern)
    except re.error as e:
        raise AssignmentMapError(
            f"rule {written}: regex {pattern!r} does not compile: {e}"
        ) from None


def _object_form(value: Any) -> Any:
    """A map value written as an object, ``{"target": ..., "leaves": {...}}``, as a
    ``tt.Leaves`` (with leaves) or its target (without); other values as they are."""
    if not isinstance(value, Mapping):
        return value
    unknown = sorted(set(value) - {"target", "leaves"})
    if unknown or "target" not in value:
        raise tt.TransformError(
            f'an object value is {{"target": TEMPLATE, "leaves": {{"g": "gamma"}}}}; got keys '
            f"{sorted(value)}"
        )
    target = value["target"]
    if "leaves" not in value:
        return target
    renames = value["leaves"]
    if not isinstance(renames, Mapping):
        raise tt.TransformError(f'"leaves" maps old leaf names to new ones; got {renames!r}')
    return tt.leaves(target, dict(renames))


@dataclass(frozen=True)
class Rule:
    """One rule of an assignment map.

    Attributes:
        kind: ``"identity"``, ``"one_to_one"``, ``"scope"``, ``"regex"`` or ``"callable"``.
        key: the checkpoint side (a name, a scope, a pattern or a callable).
        target: the target side (a name, a scope or a regex template), or ``None``.
        text: how the rule reads in a message, as the user wrote it.
        to: the targets and transforms of a rule with transforms (``tt.To``), else None.
        keys: the checkpoint keys of a concat rule (``("a", "b")``), else ``()``.
        leaves: a regex rule's leaf renames (``tt.Leaves``), else None.
    """

    kind: str
    key: Any
    target: str | None
    text: str
    to: Any = None
    keys: tuple[str, ...] = ()
    leaves: Any = None

    def expand(self, match: re.Match, template: str) -> str:
        """A regex rule's target for one match: the template, then the leaf renames."""
        out = match.expand(template)
        return self.leaves.rename(out) if self.leaves is not None else out


class Pair(NamedTuple):
    """One resolved assignment: ``target`` loads ``checkpoint_key``, by ``rule``.

    A pair with transforms has a ``route`` (:class:`~tf1compat_init.transforms.Route`):
    its ``checkpoint_key`` is then the keys as the map writes them (``"a + b"``) and
    ``route.keys`` the keys read.
    """

    checkpoint_key: str
    target: str
    rule: Rule
    route: Any = None

    @property
    def keys(self) -> tuple[str, ...]:
        """Every checkpoint key this pair reads."""
        return self.route.keys if self.route is not None else (self.checkpoint_key,)

    def renamed(self, keys: Any, routes: Any = None) -> Pair:
        """The pair over a view's underlying keys (``keys``: view name -> raw key).

        ``routes`` (view name -> Route over raw keys) is a view whose names are
        themselves transformed (a migrate's renamed view); a plain pair takes its route.
        """
        if self.route is None:
            if routes and self.checkpoint_key in routes:
                route = routes[self.checkpoint_key]
                return self._replace(checkpoint_key=route.source, route=route)
            return self._replace(checkpoint_key=keys[self.checkpoint_key])
        if routes and any(k in routes for k in self.route.keys):
            raise AssignmentMapError(
                f"rule {self.rule.text}: its keys are themselves transformed by the view it "
                f"reads; transform them in one place"
            )
        route = self.route.rename(keys)
        return self._replace(checkpoint_key=route.source, route=route)


def _fmt(key: Any, value: Any) -> str:
    k = key.pattern if isinstance(key, re.Pattern) else key
    if not isinstance(value, str | Mapping | tt.To | tt.Leaves):
        value = _value_text(value)  # variables without their values
    return "{" + f"{k!r}: {value!r}" + "}"


def _as_patterns(exclude: str | re.Pattern | Iterable[str | re.Pattern]) -> tuple[re.Pattern, ...]:
    if isinstance(exclude, str | re.Pattern):
        exclude = [exclude]
    out = []
    for p in exclude:
        try:
            out.append(p if isinstance(p, re.Pattern) else re.compile(p))
        except re.error as e:
            raise AssignmentMapError(f"exclude pattern {p!r} is not a valid regex: {e}") from None
    return tuple(out)


class _Names:
    """A sorted view of names for fast scope (prefix) queries."""

    def __init__(self, names: Collection[str]) -> None:
        self.set = names if isinstance(names, set | frozenset | dict) else set(names)
        self.sorted = _SortedList(sorted(self.set))

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
        ordered = candidates if isinstance(candidates, _SortedList) else sorted(candidates)
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


class _SortedList(list):
    """A list known to be sorted (so :func:`nearest` need not sort it again)."""


def _scopes_of(names: Iterable[str], limit: int = 5) -> list[str]:
    """The distinct top-level scopes of ``names``, for messages."""
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name.split("/", 1)[0] + "/" if "/" in name else name, None)
        if len(seen) >= limit:
            break
    return list(seen)


@dataclass
class AssignmentMap:
    """TF1's assignment-map grammar, plus regex rules, a callable and exclude patterns.

    Args:
        rules: ``None`` (identity), a dict or a list of ``(checkpoint_key_or_scope,
            target)`` pairs, a callable ``key -> target or None``, or another
            ``AssignmentMap`` (copied).
        exclude: regex patterns; a pair whose checkpoint key or target matches is dropped.
        name_of: turns a non-string target (a variable object, a list of partitions)
            into its target name; front ends pass it. ``None`` rejects such targets.

    Example:
        >>> amap = AssignmentMap({"old/": "new/"})
        >>> [tuple(p[:2]) for p in amap.resolve(["old/w", "old/b"], ["new/w", "new/b"])]
        [('old/b', 'new/b'), ('old/w', 'new/w')]
    """

    rules: Any = None
    exclude: Any = ()
    name_of: Callable[[Any], str] | None = None
    _rules: list[Rule] = field(init=False, repr=False)
    _exclude: tuple[re.Pattern, ...] = field(init=False, repr=False)
    recipe: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.rules, AssignmentMap):
            other = self.rules
            self.rules, self.name_of = other.rules, self.name_of or other.name_of
            self.exclude = tuple(other._exclude) + _as_patterns(self.exclude)
            self.recipe = other.recipe
        if isinstance(self.rules, tt.Recipe):
            self.recipe, self.rules = self.rules, self.rules.rules
        self._exclude = _as_patterns(self.exclude)
        self._rules = self._parse(self.rules)

    def dropped_by(self, key: str) -> str | None:
        """Why the recipe drops checkpoint key ``key`` (a report line), or ``None``."""
        if self.recipe is None:
            return None
        pattern = self.recipe.dropped_by(key)
        if pattern is None:
            return None
        return f"recipe {self.recipe.name} drops it ({pattern})"

    def check_requires(self, checkpoint_keys: Collection[str]) -> None:
        """Raises ``CheckpointMismatchError`` when the recipe's required keys are absent."""
        if self.recipe is not None:
            self.recipe.check(checkpoint_keys)

    # -- parsing -------------------------------------------------------------------------

    def _parse(self, rules: Any) -> list[Rule]:
        if rules is None:
            return [Rule("identity", ROOT, ROOT, "None (identity)")]
        if callable(rules) and not isinstance(rules, Mapping):
            name = getattr(rules, "__name__", type(rules).__name__)
            return [Rule("callable", rules, None, f"callable {name}")]
        if isinstance(rules, Mapping):
            pairs = list(rules.items())
        elif isinstance(rules, str | bytes):
            raise AssignmentMapError(
                f"assignment_map must be a dict, a list of pairs or a callable; got the string "
                f"{rules!r}. Did you mean {{{rules!r}: {rules!r}}}?"
            )
        else:
            try:
                pairs = [tuple(p) for p in rules]
            except TypeError:
                raise AssignmentMapError(
                    f"assignment_map must be a dict, a list of (checkpoint_key, target) pairs or a "
                    f"callable; got {type(rules).__name__}"
                ) from None
            for p in pairs:
                if len(p) != 2:
                    raise AssignmentMapError(
                        f"assignment_map pairs must be (checkpoint_key, target); got {p!r}"
                    )
        parsed = [self._parse_pair(k, v) for k, v in pairs]
        # TF processes pairs sorted by checkpoint key; regex rules keep their order after them.
        plain = sorted((r for r in parsed if r.kind != "regex"), key=lambda r: r.key)
        return plain + [r for r in parsed if r.kind == "regex"]

    def _parse_pair(self, key: Any, value: Any) -> Rule:
        written = _fmt(_key_text(key), _value_text(value))
        if isinstance(key, str) and key.startswith(REGEX_PREFIX):
            key = _compile_rule_key(key, written)
        leaf_renames = None
        try:
            value = _object_form(value)
            if isinstance(value, tt.Leaves):
                if not isinstance(key, re.Pattern):
                    raise tt.TransformError(
                        f"leaf renames need a regex key (re.compile(...), or "
                        f"'{REGEX_PREFIX}...' in a map file); {key!r} is not one"
                    )
                leaf_renames, value = value, value.target
            routed = self._parse_routed(key, value)
        except tt.TransformError as e:
            raise AssignmentMapError(f"rule {written}: {e}") from None
        if routed is not None:
            if leaf_renames is None:
                return routed
            return dataclasses.replace(routed, leaves=leaf_renames, text=written)
        if leaf_renames is not None:
            rule = self._parse_pair(key, value)
            return dataclasses.replace(rule, leaves=leaf_renames, text=written)
        if isinstance(key, re.Pattern):
            if not isinstance(value, str):
                raise AssignmentMapError(
                    f"regex rule {key.pattern!r} needs a template string as target, got "
                    f"{type(value).__name__}"
                )
            return Rule("regex", key, value, _fmt(key, value))
        if not isinstance(key, str):
            raise AssignmentMapError(
                f"assignment_map keys name the checkpoint side and must be strings (or compiled "
                f"regexes); got {key!r} of type {type(key).__name__}. The grammar is "
                f"{{checkpoint_key_or_scope: target_name_or_scope_or_variable}}."
            )
        if not isinstance(value, str):
            if self.name_of is None:
                raise AssignmentMapError(
                    f"rule {_fmt(key, value)}: the target must be a name or a scope here "
                    f"(got {type(value).__name__}); variable objects are accepted by the "
                    f"TensorFlow front ends"
                )
            try:
                name = self.name_of(value)
            except Exception as e:  # the front end says why the object is not a target
                raise AssignmentMapError(f"rule {_fmt(key, '<object>')}: {e}") from None
            return Rule("one_to_one", key, name, _fmt(key, name))
        if key == "" or key.startswith("/") and key != ROOT:
            raise AssignmentMapError(
                f"rule {_fmt(key, value)}: checkpoint key {key!r} is not valid; use '/' for the "
                f"root, 'scope/' for a scope, or a full checkpoint key"
            )
        return Rule("name", key, value, _fmt(key, value))

    def _parse_routed(self, key: Any, value: Any) -> Rule | None:
        """A rule with transforms, several keys or several targets; else ``None``."""
        if isinstance(value, str) and tt.is_pipeline(value):
            value = tt.parse_target(value)
        keys: tuple[str, ...] = ()
        if isinstance(key, tuple):
            if not key or not all(isinstance(k, str) and k for k in key):
                raise tt.TransformError("a tuple key holds checkpoint key names (for concat)")
            keys = key
        elif isinstance(key, str) and tt.is_concat_key(key):
            keys = tt.parse_key(key)
        if not keys and not isinstance(value, tt.To):
            return None
        if not isinstance(value, tt.To):
            if not isinstance(value, str):
                raise tt.TransformError("a concat key needs a target name with concat(axis)")
            value = tt.to(value)
        text = _fmt(_key_text(key if not keys else tuple(keys)), value.text)
        if isinstance(key, re.Pattern):
            return Rule("regex", key, value.targets[0], text, to=value)
        if not keys and len(value.targets) == 1:
            return Rule("name", key, value.targets[0], text, to=value)
        if not keys:
            keys = (key,)
        return Rule("routed", keys[0], value.targets[0], text, to=value, keys=keys)

    # -- resolution ----------------------------------------------------------------------

    @property
    def rule_list(self) -> list[Rule]:
        """The parsed rules, in the order they apply (TF's: sorted by checkpoint key)."""
        return list(self._rules)

    def excluded(self, name: str) -> bool:
        """Whether ``name`` (a checkpoint key or a target) matches an exclude pattern."""
        return any(p.search(name) for p in self._exclude)

    def resolve(
        self,
        checkpoint_keys: Collection[str],
        targets: Collection[str],
        *,
        on_conflict: str = "error",
        excluded: dict[str, str] | None = None,
        overridden: list[Pair] | None = None,
        dropped: dict[str, str] | None = None,
    ) -> list[Pair]:
        """Resolves the rules into pairs, exactly as TF would, or raises.

        Args:
            checkpoint_keys: every key in the checkpoint.
            targets: every target name (TF1 style: ``scope/name``, no ``:0``).
            on_conflict: ``"error"`` when two rules write one target with different
                keys; ``"last"`` keeps TF's behaviour (the last in sorted order wins).
            dropped: filled with checkpoint key -> why, for pairs a recipe's ``drop``
                pattern leaves out.

        Returns:
            The pairs, sorted by target. A pair's checkpoint key may be absent from the
            checkpoint (scope rules); the plan reports those as missing.

        Raises:
            AssignmentMapError: a rule is malformed, reversed, names a key or scope that
                does not exist, or matches nothing.
            ValueError: ``on_conflict`` is neither ``"error"`` nor ``"last"``.
        """
        check_policy_value("on_conflict", on_conflict)
        ckpt = _Names(checkpoint_keys)
        tgt = _Names(targets)
        chosen: dict[str, Pair] = {}
        for rule in self._rules:
            for pair in self._resolve_rule(rule, ckpt, tgt):
                if self._exclude and (
                    self.excluded(pair.target) or self.excluded(pair.checkpoint_key)
                ):
                    if excluded is not None:
                        excluded[pair.target] = pair.checkpoint_key
                    continue
                if self.recipe is not None:
                    why = next(filter(None, map(self.dropped_by, pair.keys)), None)
                    if why is not None:
                        if dropped is not None:
                            dropped.update(dict.fromkeys(pair.keys, why))
                        continue
                prev = chosen.get(pair.target)
                if (
                    prev is not None
                    and prev.checkpoint_key != pair.checkpoint_key
                    and on_conflict == "error"
                ):
                    raise AssignmentMapError(
                        f"target {pair.target!r} is written by two rules: {prev.rule.text} loads "
                        f"{prev.checkpoint_key!r} and {pair.rule.text} loads "
                        f"{pair.checkpoint_key!r}. TensorFlow applies both and keeps the last in "
                        f"sorted key order ({pair.checkpoint_key!r}); make the scopes disjoint, "
                        f"add exclude=[{('^' + re.escape(pair.target) + '$')!r}], or pass "
                        f"on_conflict='last' for TF's behaviour"
                    )
                if prev is not None and overridden is not None and prev != pair:
                    overridden.append(prev)
                chosen[pair.target] = pair
        return [chosen[t] for t in sorted(chosen)]

    def rename(
        self, checkpoint_keys: Sequence[str]
    ) -> list[tuple[Rule, tuple[str, ...], tuple[str, ...]]]:
        """The checkpoint-side reading of the rules: each key's new name, as migrate renames.

        Where :meth:`resolve` pairs checkpoint keys with targets that exist, this makes the
        new names from the keys alone, with the same rule semantics (scopes, one-to-one
        keys, regex templates, callables, rules with transforms). Exclude patterns and a
        recipe's drops are left to the caller, which reports them.

        Args:
            checkpoint_keys: every (readable) name of the checkpoint, sorted.

        Returns:
            ``(rule, source names, new names)`` for each application of each rule, in rule
            order; a rule without transforms renames one source to one new name.

        Raises:
            AssignmentMapError: a rule is malformed for renaming (a variable object as a
                target, a scope renamed to a name), or matches nothing.
        """
        names = list(checkpoint_keys)
        name_set = set(names)
        out: list[tuple[Rule, tuple[str, ...], tuple[str, ...]]] = []
        for rule in self._rules:
            if rule.to is not None:
                out += _rename_routed(rule, names, name_set)
            else:
                out += [(rule, (src,), (new,)) for src, new in _rename_rule(rule, names, name_set)]
        return out

    def _resolve_rule(self, rule: Rule, ckpt: _Names, tgt: _Names) -> list[Pair]:
        if rule.to is None:
            return self._resolve_plain(rule, ckpt, tgt)
        to = rule.to
        if rule.kind == "routed":
            for target in to.targets:
                if target not in tgt:
                    raise AssignmentMapError(
                        f"rule {rule.text}: target {target!r} is not among the variables to "
                        f"restore" + _did_you_mean(target, tgt.sorted)
                    )
            for key in rule.keys:
                if key not in ckpt:
                    raise AssignmentMapError(
                        f"rule {rule.text}: checkpoint key {key!r} is not in the checkpoint"
                        + _did_you_mean(key, ckpt.sorted)
                    )
            source = " + ".join(rule.keys)
            return [
                Pair(source, t, rule, tt.Route(rule.keys, to.targets, to.steps, i))
                for i, t in enumerate(to.targets)
            ]
        if rule.kind == "regex" and len(to.targets) > 1:
            return self._resolve_regex_split(rule, ckpt, tgt)
        return [
            p._replace(route=tt.Route((p.checkpoint_key,), (p.target,), to.steps))
            for p in self._resolve_plain(rule, ckpt, tgt)
        ]

    def _resolve_regex_split(self, rule: Rule, ckpt: _Names, tgt: _Names) -> list[Pair]:
        out = []
        for key, targets in _regex_matches(rule, ckpt, rule.to.targets):
            if not any(t in tgt for t in targets):
                continue
            lost = [t for t in targets if t not in tgt]
            if lost:
                raise AssignmentMapError(
                    f"rule {rule.text}: checkpoint key {key!r} splits into {list(targets)}, but "
                    f"{lost[0]!r} is not among the variables to restore"
                    + _did_you_mean(lost[0], tgt.sorted)
                )
            route = tt.Route((key,), targets, rule.to.steps)
            out += [
                Pair(key, t, rule, tt.Route(route.keys, targets, route.steps, i))
                for i, t in enumerate(targets)
            ]
        if not out and self.recipe is None:  # a recipe's rules may cover optional parts
            raise AssignmentMapError(f"regex rule {rule.text} resolves to nothing")
        return out

    def _resolve_plain(self, rule: Rule, ckpt: _Names, tgt: _Names) -> list[Pair]:
        if rule.kind == "identity":
            return [Pair(t, t, rule) for t in tgt.sorted]
        if rule.kind == "callable":
            return self._resolve_callable(rule, ckpt, tgt)
        if rule.kind == "regex":
            return self._resolve_regex(rule, ckpt, tgt)
        if rule.kind == "one_to_one":
            return [self._one_to_one(rule, rule.key, rule.target, ckpt, tgt)]
        key, target = rule.key, rule.target
        assert target is not None
        # TF's order: a value that names a variable is a one-to-one rule, else a scope rule.
        if target in tgt:
            return [self._one_to_one(rule, key, target, ckpt, tgt)]
        return self._resolve_scope(rule, key, target, ckpt, tgt)

    def _one_to_one(self, rule: Rule, key: str, target: str, ckpt: _Names, tgt: _Names) -> Pair:
        if target not in tgt:
            raise AssignmentMapError(
                f"rule {rule.text}: target {target!r} is not among the variables to restore"
                + _did_you_mean(target, tgt.sorted)
            )
        if key not in ckpt:
            hint = ""
            if key.endswith("/") or key == ROOT:
                hint = (
                    f"; {key!r} is a scope but {target!r} is one variable: name its key, e.g. "
                    f"{_fmt(_join(key, target.rsplit('/', 1)[-1]), target)}"
                )
            raise AssignmentMapError(
                f"rule {rule.text}: checkpoint key {key!r} is not in the checkpoint"
                + (hint or _did_you_mean(key, ckpt.sorted))
            )
        return Pair(key, target, rule)

    def _resolve_scope(
        self, rule: Rule, key: str, target: str, ckpt: _Names, tgt: _Names
    ) -> list[Pair]:
        if target == "":
            raise AssignmentMapError(
                f"rule {rule.text}: the target is the empty string. TensorFlow would drop the "
                f"first character of every variable name ('dense/bias' -> 'ense/bias') and fail. "
                f"The grammar is {{checkpoint_scope: target_scope}} with '/' for the root; "
                f"did you mean {self._suggest_root(key, ckpt, tgt)}?"
            )
        if not key.endswith("/"):
            raise AssignmentMapError(
                f"rule {rule.text}: {target!r} is not a variable to restore, so it must be a scope "
                f"('scope/') and the checkpoint key must be a scope too, e.g. "
                f"{_fmt(key + '/', target if target.endswith('/') else target + '/')}"
                + _did_you_mean(target, tgt.sorted)
            )
        if not target.endswith("/"):
            raise AssignmentMapError(
                f"rule {rule.text}: {target!r} is neither a variable to restore nor a scope "
                f"(scopes end with '/'). Did you mean {_fmt(key, target + '/')}?"
            )
        if not tgt.has_scope(target):
            raise AssignmentMapError(
                f"rule {rule.text}: no variable to restore is under {target!r}, so TensorFlow "
                f"would silently load nothing. " + self._scope_hint(key, target, ckpt, tgt)
            )
        if not ckpt.has_scope(key):
            raise AssignmentMapError(
                f"rule {rule.text}: the checkpoint has no key under {key!r}. "
                + self._scope_hint(key, target, ckpt, tgt)
            )
        strip = 0 if target == ROOT else len(target)
        prefix = "" if key == ROOT else key
        return [Pair(prefix + name[strip:], name, rule) for name in tgt.under(target)]

    def _resolve_regex(self, rule: Rule, ckpt: _Names, tgt: _Names) -> list[Pair]:
        pattern: re.Pattern = rule.key
        out = [
            Pair(key, target, rule)
            for key, (target,) in _regex_matches(rule, ckpt, (rule.target or "",))
            if target in tgt
        ]
        if not out and self.recipe is None:  # a recipe's rules may cover optional parts
            matched = [k for k in ckpt.sorted if pattern.fullmatch(k)][:3]
            why = (
                f"it matches checkpoint keys such as {matched}, but none expands to a variable to "
                f"restore (for example {rule.expand(pattern.fullmatch(matched[0]), rule.target or '')!r})"
                if matched
                else "it matches no checkpoint key" + _did_you_mean(pattern.pattern, ckpt.sorted)
            )
            raise AssignmentMapError(f"regex rule {rule.text} resolves to nothing: {why}")
        return out

    def _resolve_callable(self, rule: Rule, ckpt: _Names, tgt: _Names) -> list[Pair]:
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
                    f"variable to restore" + _did_you_mean(target, tgt.sorted)
                )
            out.append(Pair(key, target, rule))
        return out

    # -- messages ------------------------------------------------------------------------

    @staticmethod
    def _suggest_root(key: str, ckpt: _Names, tgt: _Names) -> str:
        if tgt.has_scope(key) and not ckpt.has_scope(key):
            return _fmt(ROOT, key)  # the map was written backwards
        return _fmt(key, ROOT)

    @staticmethod
    def _scope_hint(key: str, target: str, ckpt: _Names, tgt: _Names) -> str:
        if ckpt.has_scope(target) and tgt.has_scope(key):
            return (
                f"The map looks reversed: the grammar is {{checkpoint_scope: target_scope}}; "
                f"did you mean {_fmt(target, key)}?"
            )
        parts = []
        if not tgt.sorted:
            parts.append(
                "there are no variables to restore at all (is the model empty, or not built "
                "yet, so that its variables do not exist?)"
            )
        elif not tgt.has_scope(target):
            parts.append(f"variables to restore are under {_scopes_of(tgt.sorted)}")
        if not ckpt.has_scope(key):
            parts.append(f"checkpoint keys are under {_scopes_of(ckpt.sorted)}")
        text = "; ".join(parts)
        # Not str.capitalize(): it would lower-case the scope names quoted in the text.
        return text[:1].upper() + text[1:] + "."


def _regex_matches(
    rule: Rule, ckpt: _Names, templates: Sequence[str]
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """``(key, expanded templates)`` for each checkpoint key the rule's regex matches, in order."""
    for key in ckpt.sorted:
        m = rule.key.fullmatch(key)
        if m is None:
            continue
        try:
            expanded = tuple(rule.expand(m, t) for t in templates)
        except (re.error, IndexError) as e:
            raise AssignmentMapError(f"rule {rule.text}: bad template: {e}") from None
        yield key, expanded


def _key_text(key: Any) -> Any:
    if isinstance(key, tuple):
        return " + ".join(map(str, key))
    return key


class _ObjectText:
    """A variable as a rule's text shows it: an eager variable's own repr reads and
    formats its whole value (seconds for a model's worth of variables in a map)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __repr__(self) -> str:
        dtype = getattr(self.obj.dtype, "name", self.obj.dtype)
        shape = tuple(getattr(self.obj, "shape", ()))
        return f"<{type(self.obj).__name__} {self.obj.name!r} shape={shape} dtype={dtype}>"


def _value_text(value: Any) -> Any:
    if isinstance(value, tt.To | tt.Leaves):
        return value.text
    if isinstance(value, Mapping):
        return dict(value)
    if type(value) in (list, tuple):  # partitions
        return type(value)(_value_text(v) for v in value)
    if not isinstance(value, str) and hasattr(value, "dtype") and hasattr(value, "name"):
        return _ObjectText(value)
    return value


def _join(scope: str, name: str) -> str:
    return name if scope == ROOT else scope + name


def _did_you_mean(name: str, candidates: Sequence[str]) -> str:
    close = nearest(name, candidates)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


# -- renaming forward (AssignmentMap.rename): the checkpoint side alone ------------------------


def _rename_routed(
    rule: Rule, names: list[str], name_set: set[str]
) -> list[tuple[Rule, tuple[str, ...], tuple[str, ...]]]:
    """``(rule, source names, new names)`` for each application of a rule with transforms."""
    to = rule.to
    if rule.kind == "routed":
        for key in rule.keys:
            if key not in name_set:
                raise AssignmentMapError(
                    f"rule {rule.text} matches nothing: {key!r} is not a key of the checkpoint"
                    + _did_you_mean(key, names)
                )
        return [(rule, rule.keys, to.targets)]
    if rule.kind == "regex":
        out = []
        for n in names:
            m = rule.key.fullmatch(n)
            if m is None:
                continue
            try:
                news = tuple(rule.expand(m, t) for t in to.targets)
            except (re.error, IndexError) as e:
                raise AssignmentMapError(f"rule {rule.text}: bad template: {e}") from None
            out.append((rule, (n,), news))
        if not out:
            raise AssignmentMapError(
                f"regex rule {rule.text} matches no checkpoint key (it must match a whole key)"
                + _did_you_mean(rule.key.pattern, names)
            )
        return out
    plain = Rule(rule.kind, rule.key, rule.target, rule.text, leaves=rule.leaves)
    return [(rule, (src,), (new,)) for src, new in _rename_rule(plain, names, name_set)]


def _rename_rule(rule: Rule, names: list[str], name_set: set[str]) -> list[tuple[str, str]]:
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
                new = rule.expand(m, rule.target or "")
            except (re.error, IndexError) as e:
                raise AssignmentMapError(f"rule {rule.text}: bad template: {e}") from None
            if not new:
                raise AssignmentMapError(f"rule {rule.text} renames {n!r} to the empty string")
            out.append((n, new))
        if not out:
            raise AssignmentMapError(
                f"regex rule {rule.text} matches no checkpoint key (it must match a whole key)"
                + _did_you_mean(rule.key.pattern, names)
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
                else f"checkpoint keys are under {_scopes_of(names)}"
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
                else _did_you_mean(key, names)
            )
        )
    if target in ("", ROOT) or target.endswith("/"):
        leaf = key.rsplit("/", 1)[-1]
        raise AssignmentMapError(
            f"rule {rule.text}: {key!r} is one key, so the new name must be one name; did you "
            f"mean {{{key!r}: {(target.strip('/') + '/' if target.strip('/') else '') + leaf!r}}}?"
        )
    return [(key, target)]
