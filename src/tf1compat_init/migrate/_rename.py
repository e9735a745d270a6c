# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Renaming forward: a source checkpoint seen under its new names.

:func:`rename_checkpoint` reads the rules with :meth:`~tf1compat_init.mapping.AssignmentMap.rename`,
drops optimizer state, exclude and recipe ``drop`` matches, refuses name clashes, and
returns the :class:`~tf1compat_init.view.NamedView` that every output format is
written from. Rules with transforms become routes (:mod:`._routes`).
"""

from __future__ import annotations

import re
from typing import Any

from ..engine.grammar.mapping import AssignmentMap, Rule
from ..engine.planning.policy import OPTIMIZER_STATE
from ..engine.reading.reader import INTERNAL_KEYS, CheckpointInfo, VariableInfo, open_checkpoint
from ..engine.reading.view import NamedView, object_paths
from ..engine.reading.view import renamed as renamed_view
from ..errors import AssignmentMapError
from . import _routes

__all__ = ["OPTIMIZER_PATTERNS", "RenamedCheckpoint", "rename_checkpoint"]

#: Name-based optimizer state dropped by ``drop_optimizer`` (``re.search``). Object-based
#: checkpoints are judged by their object graph instead (see :func:`rename_checkpoint`).
#: The policy's :data:`~tf1compat_init.policy.OPTIMIZER_STATE`, plus Keras's object-path
#: slot marker.
OPTIMIZER_PATTERNS: tuple[str, ...] = (*OPTIMIZER_STATE, r"/\.OPTIMIZER_SLOT/")


#: A source checkpoint seen under its new names (a :class:`~tf1compat_init.view.NamedView`;
#: ``sources`` and ``keys``: new name -> the source's raw key; ``source_names``: new name ->
#: the source's name; ``excluded``, ``routes``, ``renamed``, ``nbytes``, ``read``).
RenamedCheckpoint = renamed_view


def _source_names(info: CheckpointInfo) -> dict[str, str]:
    if info.format == "object-based":
        return dict(object_paths(info).keys)
    return {k: k for k in info.variables if k not in INTERNAL_KEYS}


def _optimizer_only_keys(info: CheckpointInfo) -> set[str]:
    """Keys of objects reachable only through an ``optimizer`` child or as slots."""
    graph = info.bundle.object_graph() if info.bundle is not None else None
    if graph is None or not graph.nodes:
        return set()
    reachable = {0}
    queue = [0]
    while queue:  # everything reachable without entering an optimizer
        node = graph.nodes[queue.pop()]
        for child in node.children:
            if child.local_name == "optimizer" or child.node_id in reachable:
                continue
            if 0 <= child.node_id < len(graph.nodes):
                reachable.add(child.node_id)
                queue.append(child.node_id)
    out = set()
    for node_id, node in enumerate(graph.nodes):
        if node_id not in reachable:
            out.update(a.checkpoint_key for a in node.attributes)
    return out


def rename_checkpoint(
    checkpoint: Any,
    assignment_map: Any = None,
    *,
    exclude: Any = (),
    drop_optimizer: bool = False,
    target_shapes: dict[str, Any] | None = None,
) -> NamedView:
    """Opens ``checkpoint`` and renames its keys forward, checking the rules.

    Args:
        checkpoint: a path (directory, prefix, ``.index`` / ``.data-*``) or an opened
            :class:`~tf1compat_init.CheckpointInfo`.
        assignment_map: ``{checkpoint_key_or_scope: new_name_or_scope}`` (a dict, a list
            of pairs, regex keys with templates, a callable ``key -> name or None``, or an
            :class:`~tf1compat_init.AssignmentMap`); ``None`` keeps every name. Every rule
            that matches a key renames it (two rules give two copies); keys that no rule
            matches keep their names.
        exclude: regexes (``re.search``); a key is left out when its source name or its
            new name matches one.
        drop_optimizer: leave out optimizer state: slots and beta powers of name-based
            checkpoints (:data:`OPTIMIZER_PATTERNS`), and of object-based ones every
            object reachable only through an ``optimizer`` attribute.
        target_shapes: new name -> shape, where known (a model's); ``reshape()``
            without a shape takes it from here, and needs it.

    Rules with tensor transforms (:mod:`tf1compat_init.transforms`) make new names
    whose value is computed from their source keys when read; the keys they read are
    not copied under their own names. A ``Recipe`` as the map also drops the keys its
    ``drop`` patterns match (listed in ``excluded``) and checks its ``requires``.

    Returns:
        The :class:`RenamedCheckpoint`.

    Raises:
        CheckpointNotFoundError: no checkpoint there.
        AssignmentMapError: a rule is malformed or matches nothing, or two keys would get
            the same new name.

    Example:
        >>> view = rename_checkpoint("tf1/", {"sub_model_1/": "encoder/"})  # doctest: +SKIP
        >>> view.renamed  # doctest: +SKIP
        {'sub_model_1/dense/kernel': 'encoder/dense/kernel'}
    """
    info = checkpoint if isinstance(checkpoint, CheckpointInfo) else open_checkpoint(checkpoint)
    amap = AssignmentMap(assignment_map, exclude=exclude)
    name_to_key = _source_names(info)
    names = sorted(name_to_key)
    amap.check_requires(names)
    explicit = assignment_map is not None  # None means identity: nothing to check
    targets: dict[str, list[str]] = {n: [] for n in names}
    rule_of: dict[tuple[str, str], str] = {}
    routed: list[tuple[Rule, tuple[str, ...], tuple[str, ...]]] = []
    if explicit:
        for rule, srcs, news in amap.rename(names):
            if rule.to is not None:
                routed.append((rule, srcs, news))
                continue
            src, new = srcs[0], news[0]
            if new not in targets[src]:
                targets[src].append(new)
                rule_of[(src, new)] = rule.text

    dropped: set[str] = set()
    if drop_optimizer:
        opt_res = [re.compile(p) for p in OPTIMIZER_PATTERNS]
        graph_keys = _optimizer_only_keys(info) if info.format == "object-based" else set()
        for n in names:
            key = name_to_key[n]
            if key in graph_keys or any(p.search(n) or p.search(key) for p in opt_res):
                dropped.add(n)

    variables: dict[str, VariableInfo] = {}
    sources: dict[str, str] = {}
    source_names: dict[str, str] = {}
    excluded: dict[str, str] = {}
    recipe_dropped = {n: why for n in names if (why := amap.dropped_by(n)) is not None}
    consumed = {k for _, keys, _ in routed for k in keys}
    for src in names:
        if src in dropped:
            excluded[src] = "optimizer state"
            continue
        if src in recipe_dropped:
            excluded[src] = recipe_dropped[src]
            continue
        for new in targets[src] or ([] if src in consumed else [src]):
            if amap.excluded(src) or amap.excluded(new):
                excluded[src] = "exclude pattern"
                continue
            prev = source_names.get(new)
            if prev is not None and prev != src:
                why = [rule_of.get((s, new), "no rule (kept its name)") for s in (prev, src)]
                raise AssignmentMapError(
                    f"two keys would both be named {new!r}: {prev!r} ({why[0]}) and {src!r} "
                    f"({why[1]}). Rename one of them, or leave one out with an exclude pattern "
                    f"such as {('^' + re.escape(src) + '$')!r}"
                )
            source_names[new] = src
            sources[new] = name_to_key[src]
    routes = _routes.route_names(
        routed, name_to_key, info, source_names, sources, excluded, target_shapes or {}, amap
    )
    for new in sorted(sources):
        variables[new] = routes[new][1] if new in routes else info.variables[sources[new]]
    if not variables:
        raise AssignmentMapError(
            f"nothing is left to migrate from {info.prefix}: all {len(names)} keys were excluded"
        )
    return renamed_view(
        base=info,
        variables=variables,
        sources={n: sources[n] for n in variables},
        source_names={n: source_names[n] for n in variables},
        excluded=excluded,
        routes={n: r for n, (r, _) in routes.items()},
    )
