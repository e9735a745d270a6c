# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Tensor transforms in the assignment map, and recipes: data on the public API.

Pure: numpy only, no TensorFlow (but for :meth:`Transform.graph`, a TF1 graph
initializer's ops). ``from tf1compat_init import transforms as tt``.

A rule may carry a pipeline of transforms applied, left to right, on the way from the
checkpoint to the target::

    {"ckpt/q/kernel": tt.to("layer/q/kernel", tt.reshape(768, 12, 64)),
     "ckpt/qkv/kernel": tt.to(["q/kernel", "k/kernel", "v/kernel"], tt.split(axis=-1)),
     ("ckpt/q", "ckpt/k"): tt.to("qk", tt.concat(-1)),
     "pt/dense/weight": "dense/kernel | transpose(1, 0)"}           # the string form

The pipeline works on a list of tensors: the map key's tensors (several for a concat
key), ``concat`` joins them into one, ``split`` cuts one into several (one per target),
and every other transform applies to each tensor of the list. The output shape and
dtype of every transform is computed at plan time without reading data (:func:`infer`),
so a pipeline that does not fit its target fails before anything changes.

Copies: ``reshape`` and ``transpose`` return views and ``split`` views of its input;
``concat`` and ``cast`` write one new array; :func:`run` makes one C-contiguous copy at
the end only when the result is not contiguous already (a ``transpose``). So a pipeline
holds its input plus at most one copy of the tensor it touches; ``reshape`` alone holds
no copy at all.

The modules: :mod:`.base` (what a transform is), :mod:`.steps` (the transforms),
:mod:`.pipeline` (pipelines, ``tt.to``, routes), :mod:`.parse` (the string form); the
recipe registry lives in :mod:`tf1compat_init.recipes` and is re-exported here.
"""

from __future__ import annotations

from ..errors import TransformError
from ..recipes.registry import (
    Recipe,
    get_recipe,
    list_recipes,
    recipe_map,
    register,
    unregister,
)
from .base import Alloc as Alloc  # the pipeline's types, read by name
from .base import Spec as Spec
from .base import Transform
from .base import _dtype_name as _dtype_name  # the checked dtype name (tests read it)
from .parse import is_concat_key as is_concat_key  # the map grammar's string form
from .parse import is_pipeline as is_pipeline
from .parse import parse_key, parse_target, parse_transforms
from .pipeline import Leaves, Route, To, infer, leaves, run, to
from .steps import (
    Cast,
    Concat,
    Fn,
    RemapVocab,
    Reshape,
    Split,
    Transpose,
    cast,
    concat,
    fn,
    remap_vocab,
    reshape,
    split,
    transpose,
)

__all__ = [
    "Cast",
    "Concat",
    "Fn",
    "Leaves",
    "Recipe",
    "RemapVocab",
    "Reshape",
    "Route",
    "Split",
    "To",
    "Transform",
    "TransformError",
    "Transpose",
    "cast",
    "concat",
    "fn",
    "get_recipe",
    "infer",
    "leaves",
    "list_recipes",
    "parse_key",
    "parse_target",
    "parse_transforms",
    "recipe_map",
    "register",
    "remap_vocab",
    "reshape",
    "run",
    "split",
    "to",
    "transpose",
    "unregister",
]
