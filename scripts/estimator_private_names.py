"""Writes the names tensorflow-estimator 2.15.0's private modules hold (run on TF 2.15).

    .venvs/tf215/bin/python scripts/estimator_private_names.py

The output, ``src/tf1compat_init/alias/upstream_names.json``, is what
``tf1compat_init.alias`` answers for: a name listed there is either one of the library's
objects or an error that says tf1compat_init does not provide it. tests/frontends/alias/test_alias.py
checks on the TF 2.15 leg that the file still matches the installed wheel.
"""

from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/tf1compat_init/alias/upstream_names.json"
PREFIX = "tensorflow_estimator.python.estimator."


def public_modules() -> list[str]:
    sys.path.insert(0, str(OUT.parents[2]))
    from tf1compat_init.estimator.compat_paths import MODULES  # the private paths offered

    return list(MODULES)


def names(module: types.ModuleType) -> list[str]:
    """Every non-dunder name whose value is not a module (those are submodules or imports)."""
    return sorted(
        n
        for n, v in vars(module).items()
        if not n.startswith("__") and not isinstance(v, types.ModuleType)
    )


def main() -> int:
    out = {}
    for rel in public_modules():
        out[rel] = names(importlib.import_module(PREFIX + rel))
    OUT.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")
    print(f"wrote {OUT}: {len(out)} modules, {sum(map(len, out.values()))} names")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
