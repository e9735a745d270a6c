# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""What a restore did, or would do: the :class:`RestoreReport`.

Pure Python: no TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..basics.shapes import fmt_shape  # apply and its routes import it from here too

__all__ = ["Mismatch", "RestoreReport"]

_SHOW = 20  # rows per section in str(); to_dict() has everything


class Mismatch(NamedTuple):
    """A target whose checkpoint value does not fit it."""

    target: str
    checkpoint_key: str
    target_shape: tuple | None
    checkpoint_shape: tuple
    target_dtype: str | None
    checkpoint_dtype: str
    #: for a rule with transforms: the pipeline and the source shape(s), and the rule.
    transform: str | None = None
    rule: str | None = None

    @property
    def reason(self) -> str:
        if self.transform is not None:
            got = f"{self.checkpoint_dtype}{fmt_shape(self.checkpoint_shape)}"
            want = (
                f"{self.target_dtype or ''}{fmt_shape(self.target_shape)}"
                if self.target_dtype is not None or self.target_shape is not None
                else "<unknown>"
            )
            return f"rule {self.rule}: {self.transform} gives {got}, the target is {want}"
        parts = []
        if self.target_shape is not None and not shapes_compatible(
            self.target_shape, self.checkpoint_shape
        ):
            parts.append(
                f"shape {fmt_shape(self.target_shape)} vs checkpoint "
                f"{fmt_shape(self.checkpoint_shape)}"
            )
        if self.target_dtype is not None and self.target_dtype != self.checkpoint_dtype:
            parts.append(f"dtype {self.target_dtype} vs checkpoint {self.checkpoint_dtype}")
        return ", ".join(parts)


def shapes_compatible(target: tuple | None, stored: tuple) -> bool:
    """TF's ``is_compatible_with``: unknown rank or unknown dims match anything."""
    if target is None or target == stored:  # the common case, without a loop
        return True
    if len(target) != len(stored):
        return False
    return all(t is None or t == s for t, s in zip(target, stored, strict=True))


@dataclass
class RestoreReport:
    """Loaded / missing / untouched / unused / mismatched, for one checkpoint.

    Attributes:
        checkpoint: the checkpoint prefix.
        loaded: target -> checkpoint key, for every target that gets (or got) a value.
        missing: target -> the checkpoint key looked for: a rule covers the target but the
            checkpoint has no value for it.
        optional: the missing targets that the ``optional`` policy allows to be absent.
        untouched: targets no rule covers; they keep their initial values, as in TF.
        unused: checkpoint keys that nothing loads.
        mismatched: targets whose checkpoint value has another shape or dtype.
        excluded: pairs dropped by ``exclude`` patterns, target -> checkpoint key.
        suggestions: missing target -> the nearest checkpoint keys.
        applied_map: the assignment map that was used, when a front end derived it.
        applied: whether values were assigned (``False`` for a dry-run plan).
        transforms: target -> the transforms its value goes through
            (``reshape(768, 12, 64)``), for rules with transforms.
        dropped: checkpoint key -> why a recipe's ``drop`` pattern left it out.
    """

    checkpoint: str = ""
    loaded: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    optional: list[str] = field(default_factory=list)
    untouched: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    mismatched: list[Mismatch] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)
    suggestions: dict[str, list[str]] = field(default_factory=dict)
    applied_map: Any = None
    applied: bool = False
    transforms: dict[str, str] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)

    @property
    def missing_required(self) -> dict[str, str]:
        """Missing targets that the ``optional`` policy does not cover."""
        opt = set(self.optional)
        return {t: k for t, k in self.missing.items() if t not in opt}

    @property
    def ok(self) -> bool:
        """True when nothing required is missing and nothing is mismatched."""
        return not self.mismatched and not self.missing_required

    def summary(self) -> str:
        """One line: the counts."""
        n_opt = len(self.optional)
        missing = f"{len(self.missing)} missing" + (f" ({n_opt} optional)" if n_opt else "")
        dropped = f", {len(self.dropped)} dropped" if self.dropped else ""
        return (
            f"{len(self.loaded)} loaded, {missing}, {len(self.mismatched)} mismatched, "
            f"{len(self.untouched)} untouched, {len(self.unused)} unused{dropped}"
        )

    def rows(self, key_name: Callable[[str], str] | None = None) -> list[tuple[str, str, str]]:
        """Every target and checkpoint key, as ``(section, name, what happens)`` rows.

        The one wording of a report, shared by ``str(report)`` and the CLI's ``plan``
        table. Sections in order: mismatched, missing, loaded, untouched, unused,
        excluded, dropped.

        Args:
            key_name: how to show a checkpoint key (``tf1compat-init plan`` shows a renamed
                key by its source name); by default as it is. A loaded row whose key is
                shown by another name adds ``(renamed KEY)``.

        Example:
            >>> RestoreReport("ckpt", loaded={"dense/kernel": "model/dense/kernel"}).rows()
            [('loaded', 'dense/kernel', '<- model/dense/kernel')]
        """
        show = key_name or str
        rows: list[tuple[str, str, str]] = [
            ("mismatched", m.target, f"<- {show(m.checkpoint_key)}: {m.reason}")
            for m in self.mismatched
        ]
        opt = set(self.optional)
        for t, k in self.missing.items():
            note = " (optional)" if t in opt else ""
            near = self.suggestions.get(t)
            hint = f"; did you mean {', '.join(map(show, near))}?" if near else ""
            rows.append(("missing", t, f"<- {show(k)} not in checkpoint{note}{hint}"))
        via = self.transforms
        for t, k in self.loaded.items():
            # A key shown by another name (a renamed source) says which key it loads under.
            renamed = f" (renamed {k})" if show(k) != k else ""
            rows.append(
                ("loaded", t, f"<- {show(k)}{renamed}" + (f" | {via[t]}" if t in via else ""))
            )
        rows += [
            ("untouched", t, "(no rule covers it; keeps its initial value)") for t in self.untouched
        ]
        rows += [("unused", show(k), "(checkpoint key nothing loads)") for k in self.unused]
        rows += [
            ("excluded", t, f"<- {show(k)} (exclude pattern)") for t, k in self.excluded.items()
        ]
        rows += [("dropped", show(k), f"({why})") for k, why in self.dropped.items()]
        return rows

    def __str__(self) -> str:
        verb = "Restored from" if self.applied else "Plan for"
        lines = [f"{verb} {self.checkpoint}: {self.summary()}"]
        rows = self.rows()
        width = min(60, max((len(r[1]) for r in rows), default=0))
        shown: dict[str, int] = {}
        for section, name, text in rows:
            shown[section] = shown.get(section, 0) + 1
            if shown[section] <= _SHOW:
                lines.append(f"  {section:<10}  {name:<{width}}  {text}")
        for section, n in shown.items():
            if n > _SHOW:
                lines.append(f"  {section:<10}  ... and {n - _SHOW} more (see to_dict())")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Everything, as JSON-ready builtins."""
        return {
            "checkpoint": self.checkpoint,
            "ok": self.ok,
            "applied": self.applied,
            "loaded": dict(self.loaded),
            "missing": dict(self.missing),
            "optional": list(self.optional),
            "untouched": list(self.untouched),
            "unused": list(self.unused),
            "mismatched": [
                {
                    "target": m.target,
                    "checkpoint_key": m.checkpoint_key,
                    "target_shape": None if m.target_shape is None else list(m.target_shape),
                    "checkpoint_shape": list(m.checkpoint_shape),
                    "target_dtype": m.target_dtype,
                    "checkpoint_dtype": m.checkpoint_dtype,
                    "transform": m.transform,
                    "reason": m.reason,
                }
                for m in self.mismatched
            ],
            "excluded": dict(self.excluded),
            "transforms": dict(self.transforms),
            "dropped": dict(self.dropped),
            "suggestions": {k: list(v) for k, v in self.suggestions.items()},
            "applied_map": _jsonable_map(self.applied_map),
        }


def _jsonable_map(amap: Any) -> Any:
    if amap is None or isinstance(amap, str | dict):
        return amap
    rules = getattr(amap, "rules", None)
    if isinstance(rules, dict):
        return {_text(k): _text(v) for k, v in rules.items()}
    return repr(amap)


def _text(x: Any) -> str:
    """A map key or value as text (a tuple key as ``a + b``, a ``To`` in its canonical form)."""
    if isinstance(x, tuple):
        return " + ".join(map(str, x))
    text = getattr(x, "text", None)
    if isinstance(text, str):
        return text
    return str(x)
