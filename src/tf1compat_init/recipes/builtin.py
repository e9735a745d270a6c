# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The library's own recipes, in the order :func:`~.registry.list_recipes` loads them."""

from __future__ import annotations

from .bert import BERT_TO_KERAS_HUB
from .slim_resnet import SLIM_RESNET50_TO_KERAS

__all__ = ["BUILTIN"]

BUILTIN = (BERT_TO_KERAS_HUB, SLIM_RESNET50_TO_KERAS)
