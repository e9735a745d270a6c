# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The one preamble every front end runs before it opens a checkpoint or looks at a model.

A front end (``tf1compat_init.v1``, :mod:`tf1compat_init.checkpoint`,
:mod:`tf1compat_init.keras`, :mod:`tf1compat_init.migrate`) takes an assignment map or a
``recipe=``, a ``policy=`` and the policy's fields as keywords. :func:`prepare` turns them
into what the engine plans with, and checks all of them first, so a bad value fails the
same way, in the same words, whichever front end it was passed to, and before anything
is read or changed.

Pure Python: imports no TensorFlow.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .policy import POLICY_KEYWORDS, RestorePolicy, resolve_policy

__all__ = ["prepare"]


def prepare(
    api: str,
    assignment_map: Any,
    recipe: Any,
    policy: RestorePolicy | None,
    keywords: Mapping[str, Any],
    *,
    allowed: Collection[str] = POLICY_KEYWORDS,
) -> tuple[Any, RestorePolicy]:
    """The map to plan with and the call's policy, both checked.

    The policy first (its values are the cheapest to get wrong), then the recipe: a
    ``recipe=`` replaces the map, and giving both is an error.

    Args:
        api: the front end's name, for the error messages.
        assignment_map: the map the caller passed (``None`` when it passed ``recipe=``).
        recipe: a registered recipe's name, a ``Recipe``, or ``None``.
        policy: a :class:`~tf1compat_init.RestorePolicy`, or ``None`` for the defaults.
        keywords: the policy keywords passed one by one; ``UNSET`` ones are skipped.
        allowed: the policy keywords this front end takes.

    Returns:
        ``(assignment_map, policy)``: the recipe's map when ``recipe`` was given.

    Raises:
        TypeError: an unknown keyword, or ``policy`` is not a ``RestorePolicy``.
        ValueError: a policy value it does not accept.
        AssignmentMapError: both a map and a recipe, or an unknown recipe name.

    Example:
        >>> amap, policy = prepare("load", {"a/": "b/"}, None, None, {"on_missing": "warn"})
        >>> amap, policy.on_missing
        ({'a/': 'b/'}, 'warn')
    """
    policy = resolve_policy(api, policy, keywords, allowed=allowed)
    from ...transforms import recipe_map  # the registry imports the recipes on first use

    return recipe_map(assignment_map, recipe), policy
