# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The library's recipes: assignment maps for the TF1 models people actually have.

Each recipe is data on the public transform API (:mod:`tf1compat_init.transforms`):
regex rules with back-reference templates and transforms, ``drop`` patterns for training
state (dropped with a report line, never silently) and ``requires`` patterns that tell the
right checkpoint from a wrong one. The library's own:

- ``bert-to-keras-hub``: Google BERT (bert-tensorflow's ``modeling.BertModel``, any size)
  into ``keras_hub.models.BertBackbone``;
- ``slim-resnet50-to-keras``: tf-slim's ``nets.resnet_v1.resnet_v1_50`` into
  ``keras.applications.ResNet50`` (every tensor; slim's ``pool1`` pads differently, see
  :mod:`tf1compat_init.recipes.slim_resnet`).

The registry (:mod:`.registry`: ``Recipe``, ``register``, ``get_recipe``, ``recipe_map``,
re-exported by :mod:`tf1compat_init.transforms` as ``tt.*``) loads them on the first
look-up; so does reading ``BERT_TO_KERAS_HUB`` or ``SLIM_RESNET50_TO_KERAS`` here. Pure:
no TensorFlow.
"""

from __future__ import annotations

from typing import Any

from ._common import TRAINING_STATE
from .registry import Recipe, get_recipe, list_recipes, recipe_map, register, unregister

__all__ = [
    "BERT_TO_KERAS_HUB",
    "SLIM_RESNET50_TO_KERAS",
    "TRAINING_STATE",
    "Recipe",
    "get_recipe",
    "list_recipes",
    "recipe_map",
    "register",
    "unregister",
]

_BUILTIN_NAMES = ("BERT_TO_KERAS_HUB", "SLIM_RESNET50_TO_KERAS")


def __getattr__(name: str) -> Any:
    # The recipes are built on the transforms API, which imports this registry: they load
    # on first use, not with the package.
    if name in _BUILTIN_NAMES:
        from . import builtin, registry

        registry._load_builtin()
        return getattr(builtin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
