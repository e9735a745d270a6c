# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Model-relative weight names for Keras models, and the names a checkpoint offers.

One naming rule for Keras 3, tf_keras and Keras 2 (TF 2.15): a weight is named by the
layer names from the given model down to the layer that owns it, joined by ``/``, then
the weight's own short name (``dense/kernel``, ``encoder/dense_1/kernel``). The given
model's own name is not part of it, so a sub-model has the same names whether it is
loaded alone or as part of a bigger model, and the names do not depend on which Keras
made the model.

Also here: the checkpoint side of object-based checkpoints (the name each variable had
when it was saved) and ``assignment_map="auto"`` (names that differ only by Keras'
auto-numbering or by a model prefix). Imports no TensorFlow and no Keras: everything is
read off the objects it is given.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import AssignmentMapError, KerasModelError
from ..grammar.mapping import ROOT, AssignmentMap
from ..planning.plan import dtype_name
from ..reading.reader import CheckpointInfo
from ..reading.view import saved_names
from .variables import Part, TargetVariable

__all__ = [
    "KerasModelError",
    "derive_auto_map",
    "keras_flavour",
    "model_targets",
    "weight_names",
]

logger = logging.getLogger("tf1compat_init.keras._names")  # stable name (the old path)

_TF_SUFFIX = re.compile(r":\d+$")
_NUMBERED = re.compile(r"^(.*?)_(\d+)$")


# -- flavour ------------------------------------------------------------------------------


def keras_flavour(obj: Any) -> str:
    """Which Keras made ``obj`` (a layer or model): ``"keras3"``, ``"tf_keras"`` or ``"keras2"``.

    Read off the class hierarchy, so it never imports a Keras (importing Keras 3 and
    tf_keras in one process is what this library must never do).

    Raises:
        TypeError: ``obj`` is not a Keras layer or model.
    """
    for cls in type(obj).__mro__:
        module = cls.__module__ or ""
        if module == "keras.src.layers.layer":
            return "keras3"
        if module.endswith("engine.base_layer"):
            return "tf_keras" if module.startswith("tf_keras.") else "keras2"
    raise TypeError(
        f"expected a Keras model or layer (Keras 3, tf_keras or Keras 2), got "
        f"{type(obj).__module__}.{type(obj).__qualname__}"
    )


# -- model-relative names -----------------------------------------------------------------


def _short_name(variable: Any) -> str:
    # Keras 3 keeps the bare name in .name ("kernel"); TF variables carry their scopes
    # and an output index ("dense/kernel:0"), of which only the last part is the weight's.
    return _TF_SUFFIX.sub("", str(variable.name)).rsplit("/", 1)[-1]


def _sublayers(layer: Any) -> list[Any]:
    return list(layer._flatten_layers(include_self=False, recursive=False))


def _unbuilt_message(model: Any) -> str:
    name = getattr(model, "name", type(model).__name__)
    return (
        f"model {name!r} is not built, so it has no weights to load yet. Build it first: "
        f"call it on a batch (model(x)), or model.build(input_shape) with the batch dimension "
        f"as None, e.g. model.build((None, 784)), or start it with keras.Input(shape=...). "
        f"In fit(), CheckpointInit(..., input_shape=(None, 784)) builds it for you"
    )


def weight_names(model: Any) -> dict[str, Any]:
    """The model-relative name of every weight of ``model``, in Keras' order.

    The name is the layer names from ``model`` down to the layer that owns the weight,
    joined by ``/``, then the weight's own name: ``dense/kernel``,
    ``encoder/dense_1/kernel``, ``lstm/lstm_cell/recurrent_kernel``. A weight ``model``
    owns directly is named by its own name alone. A layer used in two places is named
    by the first place in Keras' layer order.

    Args:
        model: a built Keras 3, tf_keras or Keras 2 model or layer.

    Returns:
        name -> the weight (a Keras 3 ``Variable`` or a ``tf.Variable``).

    Raises:
        KerasModelError: the model is not built, has no weights, or two weights would
            get the same name (the message says which and how to rename them).

    Example:
        >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        ...     # doctest: +SKIP
        >>> list(weight_names(model))  # doctest: +SKIP
        ['dense/kernel', 'dense/bias']
    """
    keras_flavour(model)
    if not getattr(model, "built", True):
        raise KerasModelError(_unbuilt_message(model))
    found: dict[str, list[tuple[str, int, Any]]] = {}  # name -> (layer path, layer id, weight)
    claimed: set[int] = set()
    visited: set[int] = set()

    def walk(layer: Any, path: tuple[str, ...]) -> None:
        if id(layer) in visited:
            return
        visited.add(id(layer))
        for sub in _sublayers(layer):  # sublayers first: a weight belongs to the deepest owner
            walk(sub, (*path, str(sub.name)))
        for v in layer.weights:
            if id(v) in claimed:
                continue
            claimed.add(id(v))
            name = "/".join((*path, _short_name(v)))
            owner = "/".join(path) or "<the model itself>"
            found.setdefault(name, []).append((owner, id(layer), v))

    walk(model, ())
    if not found:
        name = getattr(model, "name", type(model).__name__)
        raise KerasModelError(
            f"model {name!r} has no weights, so there is nothing to load into it"
            + ("; some of its layers are not built yet" if _has_unbuilt(model) else "")
        )
    dups = {n: owners for n, owners in found.items() if len(owners) > 1}
    if dups:
        raise KerasModelError(_duplicates_message(dups))
    order = {id(v): i for i, v in enumerate(model.weights)}
    names = sorted(found, key=lambda n: order.get(id(found[n][0][2]), len(order)))
    return {n: found[n][0][2] for n in names}


def _has_unbuilt(model: Any) -> bool:
    return any(not getattr(layer, "built", True) for layer in _sublayers(model))


def _duplicates_message(dups: Mapping[str, list[tuple[str, int, Any]]]) -> str:
    lines = []
    for name, owners in list(dups.items())[:5]:
        path, leaf = owners[0][0], name.rsplit("/", 1)[-1]
        if len({layer_id for _, layer_id, _ in owners}) == 1:
            lines.append(f"{name!r}: {len(owners)} weights of layer {path!r} are named {leaf!r}")
        else:
            lines.append(f"{name!r}: {len(owners)} different layers are named {path!r}")
    return (
        "two or more weights get the same model-relative name, so a checkpoint could not "
        "tell them apart:\n  " + "\n  ".join(lines) + "\nGive sibling layers distinct names "
        "(keras.layers.Dense(..., name='fc1')) and the weights of one layer distinct names "
        "(self.add_weight(..., name='w_in'))."
    )


def model_targets(names: Mapping[str, Any]) -> dict[str, TargetVariable]:
    """The engine's targets for the weights :func:`weight_names` listed.

    Each target has one part, the Keras weight itself: ``assign`` on a Keras 3
    ``Variable`` or a ``tf.Variable`` (mirrored or not) reaches every replica.
    """
    out = {}
    for name, v in names.items():
        shape = tuple(int(d) for d in v.shape)
        out[name] = TargetVariable(name, shape, dtype_name(v.dtype) or "", (Part(v, (), shape),))
    return out


def name_resolver(names: Mapping[str, Any]) -> Any:
    """``name_of`` for assignment-map values that are weights of the model (objects)."""
    by_id: dict[int, str] = {}
    for name, v in names.items():
        by_id[id(v)] = name
        inner = getattr(v, "value", None)  # a Keras 3 Variable wraps a tf.Variable
        if inner is not None and not callable(inner):
            by_id.setdefault(id(inner), name)

    def name_of(obj: Any) -> str:
        try:
            return by_id[id(obj)]
        except KeyError:
            raise AssignmentMapError(
                f"{getattr(obj, 'name', obj)!r} is not a weight of the model being loaded; "
                f"name targets by their model-relative names (e.g. 'dense/kernel') or pass "
                f"the model's own weights"
            ) from None

    return name_of


# -- object-based checkpoints: the saved names ---------------------------------------------


def checkpoint_view(info: CheckpointInfo) -> Any:
    """What a Keras plan runs against: the saved names for object-based checkpoints."""
    return saved_names(info) if info.format == "object-based" else info


# -- assignment_map="auto" -------------------------------------------------------------------


@dataclass
class AutoMap:
    """What ``assignment_map="auto"`` found.

    Attributes:
        rules: the derived map, in the engine's grammar (``None`` for identity).
        pairs: target -> checkpoint name, for every target it could pair.
        unpaired: targets it found no checkpoint name for.
    """

    rules: Any
    pairs: dict[str, str]
    unpaired: list[str]


def _normalized(name: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """``("dense", "kernel"), (2,)`` for ``dense_2/kernel``: the numbering taken out."""
    *scopes, leaf = name.split("/")
    stems, numbers = [], []
    for s in scopes:
        m = _NUMBERED.match(s)
        stems.append(m.group(1) if m else s)
        numbers.append(int(m.group(2)) if m else -1)  # "dense" comes before "dense_1"
    return (*stems, leaf), tuple(numbers)


def _pair_by_numbering(ckpt: Iterable[str], targets: Iterable[str]) -> dict[str, str]:
    """Pairs names equal up to auto-numbering, in numbering order.

    Where the two sides have different counts of one stem, only equal names pair.
    """
    groups: dict[tuple, tuple[list, list]] = {}
    for side, names in ((0, ckpt), (1, targets)):
        for n in names:
            stem, numbers = _normalized(n)
            groups.setdefault(stem, ([], []))[side].append((numbers, n))
    out = {}
    for keys, tgts in groups.values():
        if keys and len(keys) == len(tgts):
            for (_, k), (_, t) in zip(sorted(keys), sorted(tgts), strict=True):
                out[t] = k
        else:  # counts differ: numbering order means nothing, only equal names pair
            names = {k for _, k in keys}
            out.update({t: t for _, t in tgts if t in names})
    return out


def _candidate_prefixes(names: Iterable[str], stems: set[tuple], depth: int = 3) -> set[str]:
    """Checkpoint scopes (up to ``depth`` levels, and the root) under which some name,
    once the scope is stripped, equals a target up to numbering."""
    out = set()
    for n in names:
        parts = n.split("/")
        for i in range(min(depth, len(parts) - 1) + 1):
            if _normalized("/".join(parts[i:]))[0] in stems:
                out.add("".join(s + "/" for s in parts[:i]))
    return out


def _common_prefixes(names: Collection[str]) -> list[str]:
    """Scopes every name is under (``""`` always): the model prefixes the target side may have."""
    out = [""]
    first = next(iter(names)).split("/")[:-1]
    for i in range(1, len(first) + 1):
        scope = "/".join(first[:i]) + "/"
        if all(n.startswith(scope) for n in names):
            out.append(scope)
    return out


def derive_auto_map(ckpt_names: Collection[str], targets: Collection[str]) -> AutoMap:
    """Derives a map for names that differ only by auto-numbering or a model prefix.

    Tries every checkpoint scope (up to three levels) as a model prefix to strip, and every
    scope all targets share as a prefix to add; within one choice, names equal up to
    their ``_N`` suffixes pair in numbering order (``dense``, ``dense_1``, ... with
    ``dense_4``, ``dense_5``, ...). The choice that pairs the most targets wins; a tie
    between two choices is an error, never a guess. A second pass pairs the targets left
    whose one or two leading scopes the checkpoint lacks (nested models saved by tf_keras).

    Returns:
        The :class:`AutoMap`; its ``rules`` are the compact form when there is one
        (``{"sequential/": "/"}``), else one rule per layer
        (``{"sequential_1/dense_2/": "dense/"}``), else one rule per weight.

    Raises:
        AssignmentMapError: two prefixes fit equally well.
    """
    names = set(ckpt_names)
    if all(t in names for t in targets):
        return AutoMap(None, {t: t for t in targets}, [])
    best: list[tuple[str, str, dict[str, str]]] = []
    for q in _common_prefixes(targets):
        rel_targets = {t[len(q) :]: t for t in targets}
        stems = {_normalized(t)[0] for t in rel_targets}
        for p in sorted(_candidate_prefixes(names, stems)):
            rel_ckpt = {n[len(p) :]: n for n in names if n.startswith(p)}
            rel_pairs = _pair_by_numbering(rel_ckpt, rel_targets)
            pairs = {rel_targets[t]: rel_ckpt[k] for t, k in rel_pairs.items()}
            if not best or len(pairs) > len(best[0][2]):
                best = [(p, q, pairs)]
            elif len(pairs) == len(best[0][2]) and all(pairs != b[2] for b in best):
                best.append((p, q, pairs))
    if not best or not best[0][2]:
        return AutoMap({}, {}, sorted(targets))
    if len(best) > 1:
        options = ", ".join(repr({p or ROOT: q or ROOT}) for p, q, _ in best[:4])
        raise AssignmentMapError(
            f"assignment_map='auto' is ambiguous: {len(best[0][2])} weight(s) fit equally well "
            f"under several prefixes ({options}). Pass the map you mean, e.g. one of those"
        )
    p, q, pairs = best[0]
    pairs.update(_pair_nested(p, q, pairs, names, targets))
    unpaired = sorted(t for t in targets if t not in pairs)
    return AutoMap(_compact_rules(p, q, pairs, names, targets), pairs, unpaired)


def _pair_nested(
    p: str, q: str, pairs: dict[str, str], ckpt: Collection[str], targets: Collection[str]
) -> dict[str, str]:
    """Second pass: targets whose leading scopes the checkpoint lacks (nested models).

    tf_keras and Keras 2 save a nested model's weights without the nested model's name
    (``fc/kernel`` for ``enc/fc/kernel``). Drops one, then two, leading scopes of each
    unpaired target (keeping a layer and a weight name) and pairs the unused checkpoint
    names equal up to numbering; a shortened name two targets share pairs nothing.
    """
    used = set(pairs.values())
    extra: dict[str, str] = {}
    for drop in (1, 2):
        rel_targets: dict[str, str] = {}
        shared: set[str] = set()
        for t in targets:
            parts = t[len(q) :].split("/")
            if t in pairs or t in extra or len(parts) - drop < 2:
                continue
            rel = "/".join(parts[drop:])
            (shared.add if rel in rel_targets else lambda _: None)(rel)
            rel_targets[rel] = t
        for rel in shared:
            del rel_targets[rel]
        rel_ckpt = {n[len(p) :]: n for n in ckpt if n.startswith(p) and n not in used}
        for rel_t, rel_k in _pair_by_numbering(rel_ckpt, rel_targets).items():
            extra[rel_targets[rel_t]] = rel_ckpt[rel_k]
            used.add(rel_ckpt[rel_k])
    return extra


def _compact_rules(
    p: str, q: str, pairs: dict[str, str], ckpt: Collection[str], targets: Collection[str]
) -> Any:
    if all(k == p + t[len(q) :] for t, k in pairs.items()):
        return None if not p and not q else {p or ROOT: q or ROOT}
    # One scope rule per owning layer when every weight of that layer moved together.
    by_dir: dict[str, set[str]] = {}
    for t, k in pairs.items():
        t_dir, _, t_leaf = t.rpartition("/")
        k_dir, _, k_leaf = k.rpartition("/")
        by_dir.setdefault(t_dir, set()).add(k_dir if k_leaf == t_leaf and t_dir else "\0")
    rules: dict[str, str] = {}
    for t, k in sorted(pairs.items()):
        t_dir = t.rpartition("/")[0]
        dirs = by_dir[t_dir]
        if len(dirs) == 1 and "\0" not in dirs:
            rules[next(iter(dirs)) + "/"] = t_dir + "/"
        else:
            rules[k] = t
    try:
        resolved = AssignmentMap(rules).resolve(ckpt, targets)
    except AssignmentMapError:
        resolved = None
    if (
        resolved is not None
        and all(pairs.get(r.target, r.checkpoint_key) == r.checkpoint_key for r in resolved)
        and {r.target for r in resolved} >= set(pairs)
    ):
        return rules
    return dict(sorted((k, t) for t, k in pairs.items()))
