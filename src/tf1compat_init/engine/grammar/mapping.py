# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
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
- a :class:`~tf1compat_init.transforms.Recipe` instead of the map: its rules (its
  ``drop``, ``requires`` and ``optional`` patterns are the plan's concern, see
  :mod:`tf1compat_init.recipe_plan`).

Where TF crashes confusingly or silently does nothing (an empty target, a reversed
map, a scope that matches no variable), :class:`AssignmentMapError` says so and
shows the corrected map.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ... import transforms as tt
from ...errors import AssignmentMapError
from ...recipes.recipe import Recipe
from ..planning.policy import check_policy_value
from ..planning.recipe_plan import check_requires, drop_reason
from .name_index import NameIndex
from .name_index import nearest as nearest  # front ends and the reader import it from here
from .rule_kinds import KINDS
from .rules import ROOT, Pair, Resolution, Rule, RuleKind, rule_text

#: A string key with this prefix is a regular expression (``"re:layer_(\\d+)/(.*)"``):
#: the form a JSON map file can hold. TF names never contain ``:``, so no key is mistaken.
REGEX_PREFIX = "re:"

__all__ = [
    "REGEX_PREFIX",
    "ROOT",
    "AssignmentMap",
    "Pair",
    "Resolution",
    "Rule",
    "RuleKind",
]


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
    #: The :class:`~tf1compat_init.transforms.Recipe` the rules came from, or ``None``: its
    #: drop patterns are :meth:`resolve`'s default ``drop``, and its regex rules may resolve
    #: to nothing (a model built without the part they map).
    recipe: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.rules, AssignmentMap):
            other = self.rules
            self.rules, self.name_of = other.rules, self.name_of or other.name_of
            self.exclude = tuple(other._exclude) + _as_patterns(self.exclude)
            self.recipe = other.recipe
        if isinstance(self.rules, Recipe):
            self.recipe, self.rules = self.rules, self.rules.rules
        self._exclude = _as_patterns(self.exclude)
        self._rules = self._parse(self.rules)

    def dropped_by(self, key: str) -> str | None:
        """Why the recipe drops checkpoint key ``key`` (a report line), or ``None``.

        See :func:`tf1compat_init.recipe_plan.drop_reason`.
        """
        return drop_reason(self.recipe, key)

    def check_requires(self, checkpoint_keys: Collection[str]) -> None:
        """Raises ``CheckpointMismatchError`` when the recipe's required keys are absent.

        See :func:`tf1compat_init.recipe_plan.check_requires`.
        """
        check_requires(self.recipe, checkpoint_keys)

    # -- parsing -------------------------------------------------------------------------

    def _parse(self, rules: Any) -> list[Rule]:
        if rules is None:
            return [Rule(RuleKind.IDENTITY, ROOT, ROOT, "None (identity)")]
        if callable(rules) and not isinstance(rules, Mapping):
            name = getattr(rules, "__name__", type(rules).__name__)
            return [Rule(RuleKind.CALLABLE, rules, None, f"callable {name}")]
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
        plain = sorted((r for r in parsed if r.kind != RuleKind.REGEX), key=lambda r: r.key)
        return plain + [r for r in parsed if r.kind == RuleKind.REGEX]

    def _parse_pair(self, key: Any, value: Any) -> Rule:
        written = rule_text(_key_text(key), _value_text(value))
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
            return Rule(RuleKind.REGEX, key, value, rule_text(key, value))
        if not isinstance(key, str):
            raise AssignmentMapError(
                f"assignment_map keys name the checkpoint side and must be strings (or compiled "
                f"regexes); got {key!r} of type {type(key).__name__}. The grammar is "
                f"{{checkpoint_key_or_scope: target_name_or_scope_or_variable}}."
            )
        if not isinstance(value, str):
            if self.name_of is None:
                raise AssignmentMapError(
                    f"rule {rule_text(key, _value_text(value))}: the target must be a name or a scope here "
                    f"(got {type(value).__name__}); variable objects are accepted by the "
                    f"TensorFlow front ends"
                )
            try:
                name = self.name_of(value)
            except Exception as e:  # the front end says why the object is not a target
                raise AssignmentMapError(f"rule {rule_text(key, '<object>')}: {e}") from None
            return Rule(RuleKind.ONE_TO_ONE, key, name, rule_text(key, name))
        if key == "" or key.startswith("/") and key != ROOT:
            raise AssignmentMapError(
                f"rule {rule_text(key, value)}: checkpoint key {key!r} is not valid; use '/' for the "
                f"root, 'scope/' for a scope, or a full checkpoint key"
            )
        return Rule(RuleKind.NAME, key, value, rule_text(key, value))

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
        text = rule_text(_key_text(key if not keys else tuple(keys)), value.text)
        if isinstance(key, re.Pattern):
            return Rule(RuleKind.REGEX, key, value.targets[0], text, to=value)
        if not keys and len(value.targets) == 1:
            return Rule(RuleKind.NAME, key, value.targets[0], text, to=value)
        if not keys:
            keys = (key,)
        return Rule(RuleKind.ROUTED, keys[0], value.targets[0], text, to=value, keys=keys)

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
        drop: Callable[[str], str | None] | None = None,
        excluded: dict[str, str] | None = None,
        overridden: list[Pair] | None = None,
        dropped: dict[str, str] | None = None,
    ) -> Resolution:
        """Resolves the rules into pairs, exactly as TF would, or raises.

        Args:
            checkpoint_keys: every key in the checkpoint.
            targets: every target name (TF1 style: ``scope/name``, no ``:0``).
            on_conflict: ``"error"`` when two rules write one target with different
                keys; ``"last"`` keeps TF's behaviour (the last in sorted order wins).
            drop: checkpoint key -> why it is left out, or ``None`` to keep it; a pair
                reading such a key is left out before conflicts are looked for. Default:
                the recipe's drop patterns (:meth:`dropped_by`), if the map is a recipe.
            excluded, overridden, dropped: filled as the result's attributes of those
                names, for callers that pass their own (the result holds them anyway).

        Returns:
            A :class:`Resolution`: the pairs, sorted by target (a pair's checkpoint key
            may be absent from the checkpoint, with scope rules; the plan reports those
            as missing), and ``excluded``, ``overridden``, ``dropped``.

        Raises:
            AssignmentMapError: a rule is malformed, reversed, names a key or scope that
                does not exist, or matches nothing.
            ValueError: ``on_conflict`` is neither ``"error"`` nor ``"last"``.
        """
        check_policy_value("on_conflict", on_conflict)
        if drop is None and self.recipe is not None:
            drop = self.dropped_by
        out = Resolution(excluded=excluded, overridden=overridden, dropped=dropped)
        optional = self.recipe is not None  # a recipe's rules may cover optional parts
        ckpt = NameIndex(checkpoint_keys)
        tgt = NameIndex(targets)
        chosen: dict[str, Pair] = {}
        for rule in self._rules:
            for pair in KINDS[rule.kind].resolve(rule, ckpt, tgt, optional):
                if self._exclude and (
                    self.excluded(pair.target) or self.excluded(pair.checkpoint_key)
                ):
                    out.excluded[pair.target] = pair.checkpoint_key
                    continue
                if drop is not None:
                    why = next(filter(None, map(drop, pair.keys)), None)
                    if why is not None:
                        out.dropped.update(dict.fromkeys(pair.keys, why))
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
                if prev is not None and prev != pair:
                    out.overridden.append(prev)
                chosen[pair.target] = pair
        out += [chosen[t] for t in sorted(chosen)]
        return out

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
            out += KINDS[rule.kind].rename(rule, names, name_set)
        return out


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
