# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Plans: resolve an assignment map against targets, check everything, report.

Pure Python apart from reading the checkpoint index (which needs no TensorFlow).
Nothing here changes a variable: a front end applies a plan only after
:func:`plan_restore` returned it, so a bad map or a bad checkpoint changes nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import AssignmentMapError, CheckpointMismatchError
from ..basics.dtype_names import dtype_name
from ..basics.gc_pause import gc_paused
from ..basics.shapes import fmt_shape
from ..grammar.mapping import AssignmentMap, Pair
from ..grammar.name_index import SortedNames, nearest
from . import recipe_plan
from .policy import (
    DEFAULT_OPTIONAL,
    POLICY_CHOICES,
    UNSET,
    RestorePolicy,
    check_policy_value,
    check_policy_values,
    resolve_policy,
)
from .report import Mismatch, RestoreReport, shapes_compatible

if TYPE_CHECKING:  # the planner reads any checkpoint view; importing it would load the reader
    from ..reading.view import CheckpointView

__all__ = [
    "DEFAULT_OPTIONAL",
    "POLICY_CHOICES",
    "RestorePlan",
    "check_policy_value",
    "check_policy_values",
    "dtype_name",
    "plan_restore",
]

logger = logging.getLogger("tf1compat_init.plan")  # stable name (was the module path)

_MAX_SUGGESTED = 10  # suggestions are computed for this many missing targets at most


def _shape_tuple(shape: Any) -> tuple | None:
    if shape is None:
        return None
    if hasattr(shape, "as_list"):  # tf.TensorShape
        if getattr(shape, "rank", 0) is None:
            return None
        shape = shape.as_list()
    return tuple(None if d is None else int(d) for d in shape)


_OUTPUT_INDEX = re.compile(r":\d+$")


def _normalize_targets(targets: Mapping[str, Any] | Iterable[str]) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    items = targets.items() if isinstance(targets, Mapping) else ((t, None) for t in targets)
    dtypes: dict[Any, str | None] = {}  # models repeat a handful of dtypes many times
    for name, spec in items:
        if not isinstance(name, str):
            raise TypeError(f"target names must be strings, got {name!r}")
        if ":" in name:
            name = _OUTPUT_INDEX.sub("", name)
        if spec is None:
            out[name] = (None, None)
            continue
        shape, dtype = spec
        try:
            dname = dtypes[dtype]
        except (KeyError, TypeError):
            dname = dtype_name(dtype)
            try:
                dtypes[dtype] = dname
            except TypeError:
                pass
        if type(shape) is tuple and all(type(d) is int for d in shape):
            out[name] = (shape, dname)
        else:
            out[name] = (_shape_tuple(shape), dname)
    return out


@dataclass
class RestorePlan:
    """A checked plan: what loads from where. Apply it with a front end.

    Attributes:
        checkpoint: what it reads: a :class:`~tf1compat_init.CheckpointInfo`, or a view
            of one under other names (:class:`~tf1compat_init.view.CheckpointView`).
        entries: the pairs that will load, ``(checkpoint_key, target, rule)``, by target.
        report: what the plan found (``report.applied`` is ``False`` until applied).
        assignment_map: the parsed map.
        policy: the :class:`~tf1compat_init.RestorePolicy` it was made under; applying
            the plan follows its ``staging``.
    """

    checkpoint: CheckpointView
    entries: list[Pair]
    report: RestoreReport
    assignment_map: AssignmentMap
    policy: RestorePolicy = field(default_factory=RestorePolicy)

    def __len__(self) -> int:
        return len(self.entries)


def plan_restore(
    checkpoint: Any,
    targets: Mapping[str, Any] | Iterable[str],
    assignment_map: Any = None,
    *,
    on_missing: str = UNSET,
    on_mismatch: str = UNSET,
    optional: Iterable[str] | None = UNSET,
    on_conflict: str = UNSET,
    policy: RestorePolicy | None = None,
) -> RestorePlan:
    """Resolves ``assignment_map`` against ``targets`` and checks it all.

    Args:
        checkpoint: a :class:`~tf1compat_init.CheckpointInfo`, or a path (directory,
            prefix, ``.index`` or ``.data-*`` file) to open.
        targets: target name (TF1 style, ``scope/name``) -> ``(shape, dtype)``; a shape
            or dtype of ``None`` is not checked. A plain list of names checks nothing.
        assignment_map: TF1's grammar (see :mod:`tf1compat_init.mapping`), an
            :class:`~tf1compat_init.AssignmentMap`, or ``None`` for identical names.
        on_missing: ``"error"`` (default), ``"warn"`` or ``"ignore"`` for targets a rule
            covers but the checkpoint lacks (those matching ``optional`` are never an
            error).
        on_mismatch: the same, for shape or dtype mismatches; with ``"warn"`` or
            ``"ignore"`` a mismatched target keeps its value.
        optional: regexes (``re.search``) of targets that may be missing; ``()`` is
            TF's strictness (default :data:`~tf1compat_init.DEFAULT_OPTIONAL`).
        on_conflict: ``"error"`` (default) or ``"last"`` (TF: last rule in key order
            wins).
        policy: a :class:`~tf1compat_init.RestorePolicy` instead of the keywords (a
            keyword given as well replaces that field); its ``exclude`` patterns are
            added to the map's, and the plan keeps it for
            :func:`~tf1compat_init.apply_plan`.

    Returns:
        The :class:`RestorePlan`.

    Raises:
        CheckpointNotFoundError: the checkpoint or one of its files is not there.
        AssignmentMapError: a rule is malformed, reversed, or resolves to nothing.
        CheckpointMismatchError: values do not fit (with ``.report``).
        ValueError: a policy keyword has a value it does not accept (checked first).

    Example:
        >>> plan = plan_restore("/tmp/pretrained", {"dense/kernel": ((4, 2), "float32")})
        ...     # doctest: +SKIP
    """
    # Before the checkpoint is opened: a bad value fails first, in the policy's words.
    policy = resolve_policy(
        "plan_restore",
        policy,
        {
            "on_missing": on_missing,
            "on_mismatch": on_mismatch,
            "optional": optional,
            "on_conflict": on_conflict,
        },
    )
    with gc_paused():  # planning allocates many small objects and frees none
        return _plan(checkpoint, targets, assignment_map, policy)


def _plan(
    checkpoint: Any,
    targets: Mapping[str, Any] | Iterable[str],
    assignment_map: Any,
    policy: RestorePolicy,
) -> RestorePlan:
    on_missing, on_mismatch = policy.on_missing, policy.on_mismatch
    optional, on_conflict = policy.optional, policy.on_conflict
    if not hasattr(checkpoint, "variables"):
        from ..reading.reader import open_checkpoint

        checkpoint = open_checkpoint(checkpoint)
    amap = (
        assignment_map
        if isinstance(assignment_map, AssignmentMap)
        else AssignmentMap(assignment_map)
    )
    if policy.exclude:
        amap = AssignmentMap(amap, exclude=policy.exclude)
    specs = _normalize_targets(targets)
    variables = checkpoint.variables
    recipe = amap.recipe
    recipe_plan.check_requires(recipe, variables)
    try:
        pairs = amap.resolve(variables, specs, on_conflict=on_conflict)
        _check_overridden(pairs.overridden, variables, specs)
    except AssignmentMapError as e:
        hint = format_hint(checkpoint, [r.key for r in amap.rule_list if isinstance(r.key, str)])
        if not hint:
            raise
        raise AssignmentMapError(f"{e}\n{hint}") from e

    try:
        optional_res = [p if isinstance(p, re.Pattern) else re.compile(p) for p in optional or ()]
    except re.error as e:
        raise AssignmentMapError(
            f"optional= holds an invalid regex: {e} (in {e.pattern!r})"
        ) from None
    sorted_keys: list[str] | None = None  # built once, only if a suggestion is needed
    report = RestoreReport(checkpoint=checkpoint.prefix, excluded=pairs.excluded)
    entries: list[Pair] = []
    used: set[str] = set()
    routed: dict[Any, list] = {}  # a route's group -> its outputs, computed once
    for pair in pairs:
        key, target = pair.checkpoint_key, pair.target
        if pair.route is not None:
            absent = next((k for k in pair.route.keys if k not in variables), None)
            if absent is not None:
                report.missing[target] = absent
                if any(p.search(target) for p in optional_res):
                    report.optional.append(target)
                continue
            used.update(pair.route.keys)
            planned = _plan_routed(pair, variables, specs, routed, report)
            if planned is not None:
                entries.append(planned)
            continue
        info = variables.get(key)
        if info is None:
            report.missing[target] = key
            if any(p.search(target) for p in optional_res):
                report.optional.append(target)
            elif len(report.suggestions) < _MAX_SUGGESTED:
                if sorted_keys is None:
                    sorted_keys = SortedNames(sorted(variables))
                near = nearest(key, sorted_keys)
                if near:
                    report.suggestions[target] = near
            continue
        used.add(key)
        shape, dtype = specs[target]
        fits = shape == info.shape or shapes_compatible(shape, info.shape)
        if not fits or (dtype is not None and dtype != info.dtype):
            report.mismatched.append(Mismatch(target, key, shape, info.shape, dtype, info.dtype))
            continue
        report.loaded[target] = key
        entries.append(pair)
    covered = {p.target for p in pairs} | set(pairs.excluded)
    report.untouched = [t for t in specs if t not in covered]
    report.unused = sorted(k for k in variables if k not in used)
    dropped = dict(pairs.dropped)
    if recipe is not None:
        report.unused = recipe_plan.drop_unused(recipe, report.unused, dropped)
    report.dropped = dict(sorted(dropped.items()))
    if recipe is not None:
        recipe_plan.check_coverage(recipe, report, on_missing, optional_res)
    note = format_hint(checkpoint, report.missing_required.values()) if report.missing else ""
    _enforce(report, on_missing=on_missing, on_mismatch=on_mismatch, note=note)
    return RestorePlan(checkpoint, entries, report, amap, policy)


def _plan_routed(
    pair: Pair, variables: Mapping, specs: dict, routed: dict, report: RestoreReport
) -> Pair | None:
    """Plans one transformed pair: the pair to load (its route knowing the target
    shapes), or ``None`` when it is mismatched.

    Raises:
        AssignmentMapError: the transforms do not apply to the keys' shapes or dtypes.
    """
    from ...transforms import TransformError

    route = pair.route
    ins = [(variables[k].shape, variables[k].dtype) for k in route.keys]
    group = route.group
    outs = routed.get(group)
    if outs is None:
        try:
            outs = routed[group] = route.infer(ins, [specs[t][0] for t in route.targets])
        except TransformError as e:
            sources = ", ".join(
                f"{k} {fmt_shape(s)} {d}" for k, (s, d) in zip(route.keys, ins, strict=True)
            )
            wants = ", ".join(f"{t} {fmt_shape(specs[t][0])}" for t in route.targets)
            raise AssignmentMapError(
                f"rule {pair.rule.text}: {e}. Checkpoint: {sources}; target: {wants}. "
                f"Nothing was changed."
            ) from None
    shape, dtype = outs[route.index]
    want_shape, want_dtype = specs[pair.target]
    shapes = tuple(specs[t][0] for t in route.targets)
    report.transforms[pair.target] = route.text
    if not shapes_compatible(want_shape, shape) or (want_dtype is not None and want_dtype != dtype):
        source = ", ".join(fmt_shape(s) for s, _ in ins)
        report.mismatched.append(
            Mismatch(
                pair.target,
                pair.checkpoint_key,
                want_shape,
                shape,
                want_dtype,
                dtype,
                transform=f"{route.text} of {source}",
                rule=pair.rule.text,
            )
        )
        return None
    report.loaded[pair.target] = pair.checkpoint_key
    return pair._replace(route=dataclasses.replace(route, shapes=shapes))


#: Keys only ``tf.train.Checkpoint`` (object-based) checkpoints have.
_OBJECT_STYLE = re.compile(
    r"/\.ATTRIBUTES/|/\.OPTIMIZER_SLOT/|(^|/)layer_with_weights-\d+/|^_CHECKPOINTABLE_OBJECT_GRAPH$"
)


def format_hint(checkpoint: Any, wanted: Iterable[str]) -> str:
    """A sentence for keys looked for in a checkpoint of the other format, else ``""``.

    TF1 names looked up in a raw object-based checkpoint (whose keys are
    ``.../.ATTRIBUTES/VARIABLE_VALUE``), or object-style keys looked up in a name-based
    one, fail with "not in the checkpoint"; this says which format the checkpoint is and
    what loads it.
    """
    variables = checkpoint.variables
    absent = [k for k in wanted if isinstance(k, str) and k not in variables]
    if not absent:
        return ""
    prefix = getattr(checkpoint, "prefix", "")
    fmt = getattr(checkpoint, "format", None)
    if fmt == "object-based":
        raw = next((k for k in variables if "/.ATTRIBUTES/" in k), None)
        if raw is None or all("/.ATTRIBUTES/" in k for k in absent):
            return ""  # a view by readable object path (the Keras and checkpoint front ends)
        paths = getattr(checkpoint, "object_paths", None) or {}
        by_path = {p: k for k, p in paths.items()}
        raw = next((by_path[k] for k in absent if k in by_path), raw)  # the key they meant
        readable = paths.get(raw)
        return (
            f"Checkpoint {prefix} is object-based (written by tf.train.Checkpoint or Keras): its "
            f"keys are object paths such as {raw!r}"
            + (f" (readable path {readable!r})" if readable else "")
            + ", not TF1 variable names. Load it with tf1compat_init.checkpoint.restore() or "
            "tf1compat_init.keras.load_checkpoint(), which match readable object paths, or map "
            "to its raw keys (tf1compat-init inspect lists them)."
        )
    if fmt == "name-based":
        odd = next((k for k in absent if _OBJECT_STYLE.search(k)), None)
        if odd is None:
            return ""
        stem = re.sub(r"/\.ATTRIBUTES/.*$", "", odd)
        example = stem if stem in variables else (nearest(stem, list(variables), n=1) or [None])[0]
        example = example or min(variables, default=None)
        return (
            f"Checkpoint {prefix} is name-based (written by a TF1 Saver): its keys are variable "
            f"names such as {example!r}, not tf.train.Checkpoint object paths like {odd!r}. "
            f"Write the map against its variable names (tf1compat-init inspect lists them)."
        )
    return ""


def _check_overridden(overridden: list[Pair], variables: Mapping, specs: dict) -> None:
    """A rule that a later one overrides must still resolve, as TF checks every rule."""
    for pair in overridden:
        if pair.route is not None:
            absent = [k for k in pair.route.keys if k not in variables]
            if absent:
                raise AssignmentMapError(
                    f"rule {pair.rule.text} wants checkpoint key {absent[0]!r} for "
                    f"{pair.target!r}, which is not in the checkpoint (a later rule overrides "
                    f"this target, but TensorFlow checks every rule and raises)"
                )
            continue
        info = variables.get(pair.checkpoint_key)
        if info is None:
            raise AssignmentMapError(
                f"rule {pair.rule.text} wants checkpoint key {pair.checkpoint_key!r} for "
                f"{pair.target!r}, which is not in the checkpoint (a later rule overrides this "
                f"target, but TensorFlow checks every rule and raises)"
            )
        shape, dtype = specs[pair.target]
        if not shapes_compatible(shape, info.shape) or (dtype is not None and dtype != info.dtype):
            m = Mismatch(pair.target, pair.checkpoint_key, shape, info.shape, dtype, info.dtype)
            raise AssignmentMapError(
                f"rule {pair.rule.text} does not fit {pair.target!r}: {m.reason} (a later rule "
                f"overrides this target, but TensorFlow checks every rule and raises)"
            )


def _enforce(report: RestoreReport, *, on_missing: str, on_mismatch: str, note: str = "") -> None:
    problems: list[str] = []
    if report.mismatched and on_mismatch != "ignore":
        problems += [
            f"{m.target} <- {m.checkpoint_key}: {m.reason}"
            for m in report.mismatched[:_MAX_SUGGESTED]
        ]
        if len(report.mismatched) > _MAX_SUGGESTED:
            problems.append(f"... and {len(report.mismatched) - _MAX_SUGGESTED} more mismatches")
    required = report.missing_required
    if required and on_missing != "ignore":
        shown = list(required.items())[:_MAX_SUGGESTED]
        for target, key in shown:
            near = report.suggestions.get(target)
            hint = f"; nearest keys: {', '.join(near)}" if near else ""
            problems.append(f"{target} <- {key}: not in the checkpoint{hint}")
        if len(required) > len(shown):
            problems.append(f"... and {len(required) - len(shown)} more missing")
        if note:
            problems.append(note)
    if not problems:
        return
    fatal = (report.mismatched and on_mismatch == "error") or (required and on_missing == "error")
    head = f"checkpoint {report.checkpoint} does not fit the targets ({report.summary()}):"
    message = head + "\n  " + "\n  ".join(problems)
    if fatal:
        advice = []
        if report.mismatched and on_mismatch == "error":
            advice.append("on_mismatch='warn' skips mismatched targets")
        if required and on_missing == "error":
            advice.append(
                "on_missing='warn' or optional=[...] lets targets keep their initial values"
            )
        raise CheckpointMismatchError(
            message + "\nNothing was changed. " + "; ".join(advice) + ".", report
        )
    logger.warning("%s", message)
