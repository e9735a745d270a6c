# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Migrating through tensor transforms: the names rules with transforms make.

A rule with transforms reads one or more source keys and makes one or more new names;
their values are computed when :class:`~tf1compat_init.migrate.RenamedCheckpoint`
reads them, one route at a time. Used by :func:`tf1compat_init.migrate.rename_checkpoint`.
"""

from __future__ import annotations

from typing import Any

from ..engine.grammar.mapping import AssignmentMap, Rule
from ..engine.reading.reader import CheckpointInfo, VariableInfo
from ..errors import AssignmentMapError


def route_names(
    routed: list[tuple[Rule, tuple[str, ...], tuple[str, ...]]],
    name_to_key: dict[str, str],
    info: CheckpointInfo,
    source_names: dict[str, str],
    sources: dict[str, str],
    excluded: dict[str, str],
    target_shapes: dict[str, Any],
    amap: AssignmentMap,
) -> dict[str, tuple[Any, VariableInfo]]:
    """Adds the names rules with transforms make; returns name -> (route, its info)."""
    from ..transforms import Route, TransformError

    out: dict[str, tuple[Any, VariableInfo]] = {}
    for rule, keys, news in routed:
        gone = [k for k in keys if k in excluded]
        if gone or any(amap.excluded(n) for n in (*keys, *news)):
            excluded[" + ".join(keys)] = excluded[gone[0]] if gone else "exclude pattern"
            continue
        raw = tuple(name_to_key[k] for k in keys)
        ins = [(info.variables[k].shape, info.variables[k].dtype) for k in raw]
        shapes = [target_shapes.get(n) for n in news]
        try:
            specs = Route(raw, news, rule.to.steps).infer(ins, shapes)
        except TransformError as e:
            srcs = ", ".join(f"{k} {list(s)} {d}" for k, (s, d) in zip(keys, ins, strict=True))
            raise AssignmentMapError(f"rule {rule.text}: {e}. Checkpoint: {srcs}") from None
        for i, new in enumerate(news):
            prev = source_names.get(new)
            if prev is not None:
                raise AssignmentMapError(
                    f"two keys would both be named {new!r}: {prev!r} and {' + '.join(keys)!r} "
                    f"({rule.text}). Rename one of them, or leave one out with an exclude "
                    f"pattern"
                )
            source_names[new] = " + ".join(keys)
            sources[new] = raw[0]
            shape, dtype = specs[i]
            out[new] = (Route(raw, news, rule.to.steps, i), VariableInfo(tuple(shape), dtype))
    return out
