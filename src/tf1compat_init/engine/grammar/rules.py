# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The grammar's data: what kind a rule is, a parsed rule, a resolved pair, a resolution.

Pure Python. :mod:`.mapping` parses maps into these; :mod:`.rule_kinds` resolves them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from ...errors import AssignmentMapError

ROOT = "/"

__all__ = ["ROOT", "Pair", "Resolution", "Rule", "RuleKind", "rule_text"]


class RuleKind(StrEnum):
    """What a rule's two sides are; each kind resolves (and renames) its own way.

    A string enum: ``rule.kind == "regex"`` holds as before.
    """

    #: ``None`` as the map: every target loads the key of its own name.
    IDENTITY = "identity"
    #: a string key and target: one key to one target, or a scope to a scope (TF decides
    #: by whether the target names a variable).
    NAME = "name"
    #: a string key and a variable object (named by the front end's ``name_of``).
    ONE_TO_ONE = "one_to_one"
    #: a compiled regex key (or ``"re:..."``) and a template target.
    REGEX = "regex"
    #: a callable instead of the map: ``key -> target or None``.
    CALLABLE = "callable"
    #: a rule with several keys (concat) or several targets (split), with transforms.
    ROUTED = "routed"

    def __repr__(self) -> str:
        return repr(self.value)  # a Rule reads as it did when kinds were strings


@dataclass(frozen=True)
class Rule:
    """One rule of an assignment map.

    Attributes:
        kind: a :class:`RuleKind` (``"identity"``, ``"name"``, ``"one_to_one"``,
            ``"regex"``, ``"callable"`` or ``"routed"``); a string is read as one.
        key: the checkpoint side (a name, a scope, a pattern or a callable).
        target: the target side (a name, a scope or a regex template), or ``None``.
        text: how the rule reads in a message, as the user wrote it.
        to: the targets and transforms of a rule with transforms (``tt.To``), else None.
        keys: the checkpoint keys of a concat rule (``("a", "b")``), else ``()``.
        leaves: a regex rule's leaf renames (``tt.Leaves``), else None.
    """

    kind: RuleKind
    key: Any
    target: str | None
    text: str
    to: Any = None
    keys: tuple[str, ...] = ()
    leaves: Any = None

    def __post_init__(self) -> None:
        if type(self.kind) is not RuleKind:
            object.__setattr__(self, "kind", RuleKind(self.kind))

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


class Resolution(list):
    """What :meth:`AssignmentMap.resolve` returns: the pairs (it is their list, sorted by
    target) and what the map left out on the way.

    Attributes:
        excluded: target -> checkpoint key, for pairs an exclude pattern dropped.
        overridden: pairs a later rule replaced (``on_conflict="last"``, or the same key
            twice); TF still checks them, so the planner does.
        dropped: checkpoint key -> why, for pairs the ``drop`` callable (a recipe's drop
            patterns) left out.
    """

    def __init__(
        self,
        pairs: Iterable[Pair] = (),
        excluded: dict[str, str] | None = None,
        overridden: list[Pair] | None = None,
        dropped: dict[str, str] | None = None,
    ) -> None:
        super().__init__(pairs)
        self.excluded: dict[str, str] = {} if excluded is None else excluded
        self.overridden: list[Pair] = [] if overridden is None else overridden
        self.dropped: dict[str, str] = {} if dropped is None else dropped


def rule_text(key: Any, value: Any) -> str:
    """How a rule reads in a message: ``{'old/': 'new/'}``."""
    k = key.pattern if isinstance(key, re.Pattern) else key
    return "{" + f"{k!r}: {value!r}" + "}"
