"""Restore policy: the keywords every front end accepts, checked in one place.

Pure Python, imports nothing else from the package, so the grammar
(:mod:`tf1compat_init.mapping`) and the planner (:mod:`tf1compat_init.plan`) can both use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["POLICY_CHOICES", "check_policy_value", "check_policy_values"]

#: The values each policy keyword accepts. Every front end checks its policy keywords
#: with :func:`check_policy_value`, so a bad value reads the same wherever it is passed.
POLICY_CHOICES: dict[str, tuple[str, ...]] = {
    "on_missing": ("error", "warn", "ignore"),
    "on_mismatch": ("error", "warn", "ignore"),
    "on_conflict": ("error", "last"),
}


def check_policy_value(name: str, value: Any) -> None:
    """Raises ``ValueError`` unless ``value`` is one that policy keyword ``name`` accepts.

    The message follows Keras's wording: the argument, the value received, the values
    allowed.

    Args:
        name: a key of :data:`POLICY_CHOICES` (``on_missing``, ``on_mismatch``,
            ``on_conflict``).
        value: what the caller passed.

    Raises:
        ValueError: ``value`` is not one of ``POLICY_CHOICES[name]``.

    Example:
        >>> check_policy_value("on_conflict", "first")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Invalid value for argument on_conflict. Received: on_conflict='first'. ...
    """
    choices = POLICY_CHOICES[name]
    # The str check first: ``in`` on an array or other odd object could raise or mislead.
    if not isinstance(value, str) or value not in choices:
        raise ValueError(
            f"Invalid value for argument {name}. Received: {name}={value!r}. "
            f"Expected one of {', '.join(map(repr, choices))}."
        )


def check_policy_values(policy: Mapping[str, Any]) -> None:
    """Checks the policy keywords present in ``policy`` (other keys are left alone).

    Front ends call this on their keyword arguments before opening a checkpoint or
    touching a variable.

    Raises:
        ValueError: as :func:`check_policy_value`, for the first bad value in
            ``on_missing``, ``on_mismatch``, ``on_conflict`` order.

    Example:
        >>> check_policy_values({"on_missing": "warn", "exclude": ["bias"]})
    """
    for name in POLICY_CHOICES:
        if name in policy:
            check_policy_value(name, policy[name])
