# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""What the user hands migrate and the CLI by name: JSON map files and model factories."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from ..engine.grammar.mapping import AssignmentMap
from ..errors import AssignmentMapError

__all__ = ["load_factory", "load_map_file"]


def load_map_file(path: str | os.PathLike) -> list[tuple[str, Any]]:
    """Reads a JSON map file: an object ``{"old/": "new/"}`` or a list of ``[old, new]`` pairs.

    Keys are the Python grammar's strings: names, scopes, ``"a + b"`` concat keys, and
    ``"re:PATTERN"`` for a regex rule (its value a template with back-references, e.g.
    ``{"re:model/h(\\d+)/mlp/(.*)": "block_\\1/mlp/\\2"}``). Values are strings
    (transforms included: ``"new | reshape(2, 3)"``) or, for a regex rule that also renames
    leaves, ``{"target": "block_\\1/\\2/\\3", "leaves": {"g": "gamma", "b": "beta"}}``.

    Raises:
        AssignmentMapError: unreadable file, invalid JSON, a value of another type, a regex
            that does not compile, a bad transform; naming the file and the rule.
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise AssignmentMapError(f"cannot read map file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise AssignmentMapError(
            f"map file {path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    if isinstance(data, dict):
        pairs = list(data.items())
    elif isinstance(data, list) and all(isinstance(p, list) and len(p) == 2 for p in data):
        pairs = [tuple(p) for p in data]
    else:
        raise AssignmentMapError(
            f'map file {path} must hold a JSON object {{"old/": "new/"}} or a list of '
            f'["old", "new"] pairs'
        )
    for k, v in pairs:
        if not isinstance(k, str) or not isinstance(v, str | dict):
            raise AssignmentMapError(
                f"map file {path}: rule {k!r}: {v!r} must map a string to a string (or, for a "
                f'"re:" rule, to {{"target": ..., "leaves": {{...}}}})'
            )
    try:  # regexes and the transform syntax, checked before anything is opened
        AssignmentMap(pairs)
    except AssignmentMapError as e:
        raise AssignmentMapError(f"map file {path}: {e}") from None
    return pairs


def load_factory(spec: str) -> Callable[[], Any]:
    """Imports ``module:function`` (or ``path/to/file.py:function``) and returns the function.

    The current directory is importable, as with ``python -m``.

    Raises:
        ValueError: ``spec`` is not of that form, or the attribute is not callable.
        ImportError: the module cannot be imported.
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"a model factory is given as module:function, got {spec!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        if not os.path.isfile(module_name):
            raise ImportError(f"model factory file {module_name} does not exist")
        mod_id = "_tf1compat_factory_" + re.sub(r"\W", "_", os.path.abspath(module_name))
        spec_obj = importlib.util.spec_from_file_location(mod_id, module_name)
        assert spec_obj is not None and spec_obj.loader is not None
        module = importlib.util.module_from_spec(spec_obj)
        sys.modules[mod_id] = module
        spec_obj.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    fn = module
    for part in attr.split("."):
        try:
            fn = getattr(fn, part)
        except AttributeError:
            raise ValueError(f"module {module_name} has no attribute {attr!r}") from None
    if not callable(fn):
        raise ValueError(f"{spec} is not callable")
    return fn
