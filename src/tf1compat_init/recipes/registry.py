# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The recipe registry: the names :class:`~.recipe.Recipe` objects are registered under,
the library's own included (:mod:`.builtin`, loaded on the first look-up). Pure: no numpy,
no TensorFlow.

Re-exported by :mod:`tf1compat_init.transforms` (``tt.Recipe``, ``tt.get_recipe``, ...),
where the public API names them.
"""

from __future__ import annotations

from typing import Any

from ..errors import AssignmentMapError
from .recipe import Recipe

__all__ = ["Recipe", "get_recipe", "list_recipes", "recipe_map", "register", "unregister"]


_REGISTRY: dict[str, Recipe] = {}
_builtin_loaded = False


def register(recipe: Recipe, *, replace: bool = False) -> Recipe:
    """Adds ``recipe`` to the registry under its name; returns it.

    Raises:
        ValueError: another recipe has that name (pass ``replace=True``).
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"register() takes a tt.Recipe, got {type(recipe).__name__}")
    old = _REGISTRY.get(recipe.name)
    if old is not None and old is not recipe and not replace:
        raise ValueError(f"a recipe named {recipe.name!r} is registered already; replace=True")
    _REGISTRY[recipe.name] = recipe
    return recipe


def unregister(name: str) -> None:
    """Removes a recipe from the registry (no error if absent)."""
    _REGISTRY.pop(name, None)


def _load_builtin() -> None:
    """Registers the library's own recipes, once, on the first look-up.

    Lazily, because the recipes are written on the transforms API, which re-exports this
    registry: importing the transforms loads no recipe. The library's own replace a
    user's recipe registered earlier under the same name.
    """
    global _builtin_loaded
    if _builtin_loaded:
        return
    _builtin_loaded = True
    from . import builtin

    for recipe in builtin.BUILTIN:
        register(recipe, replace=True)


def list_recipes() -> dict[str, Recipe]:
    """Every registered recipe (the library's own included), by name."""
    _load_builtin()
    return dict(sorted(_REGISTRY.items()))


def get_recipe(name: str | Recipe) -> Recipe:
    """The recipe registered as ``name`` (a ``Recipe`` is returned as it is).

    Raises:
        AssignmentMapError: no recipe of that name; the message lists the known ones.
    """
    if isinstance(name, Recipe):
        return name
    if name not in _REGISTRY:
        _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(_REGISTRY) or "none"
        raise AssignmentMapError(
            f"no recipe named {name!r}; registered recipes: {known}. Register one with "
            f"tt.register(tt.Recipe(...))"
        ) from None


def recipe_map(assignment_map: Any, recipe: Any) -> Any:
    """What a front end plans with when given ``assignment_map`` and/or ``recipe=``.

    Raises:
        AssignmentMapError: both were given, or the recipe name is unknown.
    """
    if recipe is None:
        return assignment_map
    if assignment_map is not None:
        raise AssignmentMapError(
            "pass either assignment_map or recipe=, not both (a recipe is a whole map; "
            "write a new tt.Recipe for more rules)"
        )
    return get_recipe(recipe)
