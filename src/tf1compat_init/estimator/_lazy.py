# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The lazy attributes of the estimator packages (``estimator``, ``canned``, ``head``).

Their canned estimators and heads import Keras 2 (``tf_keras``); a ``model_fn``-only user
never pays for that import: each name is imported from its submodule on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, lazy: dict[str, str], namespace: dict) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for ``package``.

    It imports ``name`` from the submodule ``lazy[name]`` (relative to ``package``) and
    keeps it in ``namespace`` (the package's ``globals()``), so it is looked up once.
    """

    def __getattr__(name: str) -> Any:
        if name in lazy:
            value = getattr(importlib.import_module(f"{package}.{lazy[name]}"), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
