# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""A recipe: a named, reusable assignment map, with what it drops and what it requires.

Pure: no numpy, no TensorFlow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import AssignmentMapError, CheckpointMismatchError

__all__ = ["Recipe"]


def _patterns(what: str, recipe: str, patterns: Any) -> tuple[re.Pattern, ...]:
    if isinstance(patterns, str | re.Pattern):
        patterns = [patterns]
    out = []
    for p in patterns or ():
        try:
            out.append(p if isinstance(p, re.Pattern) else re.compile(p))
        except re.error as e:
            raise AssignmentMapError(
                f"recipe {recipe!r}: {what} pattern {p!r} is not a valid regex: {e}"
            ) from None
    return tuple(out)


@dataclass(frozen=True)
class Recipe:
    """A named, reusable assignment map: rules, what to drop, what must be there.

    Args:
        name: the registry name (``bert-to-keras-hub``).
        rules: an assignment map (dict or list of pairs, regex keys, ``tt.to`` values).
        drop: regexes (``re.search``) of checkpoint keys left out on purpose (optimizer
            slots, ``global_step``); each is reported, never silent.
        requires: regexes that must each match a checkpoint key; a checkpoint without
            them is the wrong checkpoint (``CheckpointMismatchError`` at plan time).
        description: one line for listings.
        optional: regexes (``re.search``) of targets the recipe may leave untouched (Keras
            conv biases a TF1 model does not have). Any other target no rule covers is
            treated like a missing one (``on_missing``): a recipe loads the whole model or
            says what it did not load. A recipe's regex rule that resolves to nothing (a
            model built without its head) is no error; ``requires`` guards the checkpoint.
    """

    name: str
    rules: Any
    drop: Any = ()
    requires: Any = ()
    description: str = ""
    optional: Any = ()
    _drop: tuple[re.Pattern, ...] = field(init=False, repr=False, compare=False)
    _requires: tuple[re.Pattern, ...] = field(init=False, repr=False, compare=False)
    _optional: tuple[re.Pattern, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise AssignmentMapError(f"a recipe needs a non-empty name, got {self.name!r}")
        object.__setattr__(self, "_drop", _patterns("drop", self.name, self.drop))
        object.__setattr__(self, "_requires", _patterns("requires", self.name, self.requires))
        object.__setattr__(self, "_optional", _patterns("optional", self.name, self.optional))

    @property
    def drop_patterns(self) -> tuple[re.Pattern, ...]:
        return self._drop

    @property
    def required_patterns(self) -> tuple[re.Pattern, ...]:
        return self._requires

    def check(self, keys: Iterable[str]) -> None:
        """Raises unless every ``requires`` pattern matches one of ``keys``.

        Raises:
            CheckpointMismatchError: naming the recipe and the patterns no key matches.
        """
        keys = list(keys)
        missing = [p.pattern for p in self._requires if not any(p.search(k) for k in keys)]
        if missing:
            raise CheckpointMismatchError(
                f"recipe {self.name!r} does not fit this checkpoint: no key matches "
                f"{', '.join(repr(m) for m in missing)} (required). "
                + (f"It is for: {self.description}. " if self.description else "")
                + f"The checkpoint's keys include {sorted(keys)[:5]}. Nothing was changed."
            )

    def uncovered(self, targets: Iterable[str]) -> list[str]:
        """The ``targets`` (no rule covers them) that ``optional`` does not allow."""
        return [t for t in targets if not any(p.search(t) for p in self._optional)]

    def dropped_by(self, key: str) -> str | None:
        """The drop pattern ``key`` matches, or ``None``."""
        for p in self._drop:
            if p.search(key):
                return p.pattern
        return None
