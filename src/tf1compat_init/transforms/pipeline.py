# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Pipelines: transforms applied left to right, planned without data (:func:`infer`),
run on arrays (:func:`run`); a rule's target side (:func:`to`, :class:`Leaves`) and a
resolved assignment through them (:class:`Route`).

Pure: numpy is imported where a pipeline runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import TransformError
from .base import Alloc, Spec, Transform, _dtype_name
from .steps import Concat, Split

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Leaves", "Route", "To", "infer", "leaves", "run", "to"]


def _pipeline_text(steps: Sequence[Transform]) -> str:
    return " | ".join(s.text for s in steps)


def infer(
    steps: Sequence[Transform], ins: Sequence[Spec], targets: Sequence[tuple | None]
) -> list[Spec]:
    """The output ``(shape, dtype)`` of each target, computed without data.

    Args:
        steps: the transforms, applied left to right.
        ins: ``(shape, dtype)`` of each source tensor (several for a concat).
        targets: each target's shape, or ``None`` where unknown (``reshape()`` then
            needs an explicit shape).

    Raises:
        TransformError: a step does not fit its input, or the pipeline does not end
            with one tensor per target.

    Example:
        >>> infer([reshape(2, -1)], [((4, 3), "float32")], [None])
        [((2, 6), 'float32')]
    """
    state = [(tuple(int(d) for d in s), _dtype_name(d)) for s, d in ins]
    tshapes = [None if t is None else tuple(t) for t in targets]
    for step in steps:
        state = step.specs(state, tshapes)
    _check_count(steps, len(ins), len(state), len(tshapes))
    return state


def _check_count(steps: Sequence[Transform], n_in: int, n_out: int, n_targets: int) -> None:
    if n_out == n_targets:
        return
    if n_in > 1 and not any(isinstance(s, Concat) for s in steps):
        raise TransformError(f"{n_in} checkpoint keys need concat(axis) to make one target")
    if n_targets > 1 and not any(isinstance(s, Split) for s in steps):
        raise TransformError(f"{n_targets} targets need split(axis) to cut the tensor")
    raise TransformError(f"the pipeline makes {n_out} tensor(s) for {n_targets} target(s)")


def _default_alloc(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    import numpy as np

    return np.empty(shape, dtype=dtype)


def run(
    steps: Sequence[Transform],
    arrays: Sequence[np.ndarray],
    targets: Sequence[tuple | None],
    *,
    alloc: Alloc | None = None,
    contiguous: bool = True,
) -> list[np.ndarray]:
    """Applies the pipeline to arrays; one array per target.

    Args:
        steps: the transforms.
        arrays: the source tensors.
        targets: each target's shape (as for :func:`infer`).
        alloc: ``alloc(shape, dtype)`` for new arrays (a front end passes aligned
            buffers); ``numpy.empty`` by default.
        contiguous: copy results that are not C-contiguous (after a ``transpose``) once,
            into ``alloc``'s memory.

    Example:
        >>> run([transpose(1, 0)], [np.arange(6).reshape(2, 3)], [None])[0].shape
        (3, 2)
    """
    import numpy as np

    alloc = alloc or _default_alloc
    specs = [(tuple(a.shape), _dtype_name(a.dtype)) for a in arrays]
    tshapes = [None if t is None else tuple(t) for t in targets]
    state = [np.asarray(a) for a in arrays]
    for step in steps:
        specs = step.specs(specs, tshapes)
        state = step.apply(state, specs, alloc)
    _check_count(steps, len(arrays), len(state), len(tshapes))
    if contiguous:
        out = []
        for a in state:
            if not a.flags.c_contiguous:
                c = alloc(tuple(a.shape), a.dtype)
                np.copyto(c, a)
                a = c
            out.append(a)
        state = out
    return state


@dataclass(frozen=True)
class To:
    """A rule's target side with transforms: ``tt.to(target_or_targets, *transforms)``.

    Attributes:
        targets: the target names (several for a ``split``), or regex templates.
        steps: the transforms, applied left to right.
    """

    targets: tuple[str, ...]
    steps: tuple[Transform, ...] = ()

    @property
    def text(self) -> str:
        """The canonical string form, ``"q/kernel, k/kernel | split(-1)"``."""
        head = ", ".join(self.targets)
        return head + (" | " + _pipeline_text(self.steps) if self.steps else "")

    def __str__(self) -> str:
        return self.text


def to(target: str | Sequence[str], *steps: Transform) -> To:
    """A target (or a list of targets, for ``split``) reached through ``steps``.

    Example:
        >>> to("layer/q/kernel", reshape(768, 12, 64)).text
        'layer/q/kernel | reshape(768, 12, 64)'
    """
    targets = (target,) if isinstance(target, str) else tuple(target)
    if not targets or not all(isinstance(t, str) and t.strip() for t in targets):
        raise TransformError(f"tt.to: targets must be non-empty names, got {target!r}")
    for s in steps:
        if not isinstance(s, Transform):
            raise TransformError(
                f"tt.to({target!r}, ...): {s!r} is not a transform (tt.reshape, tt.transpose, "
                f"tt.split, tt.concat, tt.cast, tt.fn)"
            )
    return To(tuple(t.strip() for t in targets), tuple(steps))


@dataclass(frozen=True)
class Route:
    """One resolved, transformed assignment: ``targets[index]`` from ``keys``.

    Attributes:
        keys: the checkpoint keys read (several for a concat).
        targets: every target the pipeline fills (several for a split).
        steps: the transforms.
        index: which of ``targets`` this route's pair fills.
        shapes: the targets' shapes as planned (``None`` before planning); what
            ``reshape()`` resolves against when the plan is applied.
    """

    keys: tuple[str, ...]
    targets: tuple[str, ...]
    steps: tuple[Transform, ...]
    index: int = 0
    shapes: tuple[tuple | None, ...] | None = None

    @property
    def text(self) -> str:
        """The pipeline as this route's target gets it: ``split(-1)[1] | reshape(32, 2, 16)``.

        A route that fills several targets names the part each one takes (``[0]``,
        ``[1]``, ... after the ``split``), so a q/k swap shows in the report even though
        the shapes agree.
        """
        if len(self.targets) < 2:
            return _pipeline_text(self.steps)
        return " | ".join(
            f"{s.text}[{self.index}]" if isinstance(s, Split) else s.text for s in self.steps
        )

    @property
    def pipeline_text(self) -> str:
        """The pipeline's text, the same for every target it fills."""
        return _pipeline_text(self.steps)

    @property
    def source(self) -> str:
        """The keys as a map key reads: ``"a + b + c"``."""
        return " + ".join(self.keys)

    @property
    def group(self) -> Route:
        """The route with ``index`` 0: equal for the pairs one computation fills."""
        return self if self.index == 0 else replace(self, index=0)

    def infer(self, ins: Sequence[Spec], targets: Sequence[tuple | None]) -> list[Spec]:
        return infer(self.steps, ins, targets)

    def run(
        self,
        arrays: Sequence[np.ndarray],
        targets: Sequence[tuple | None],
        *,
        alloc: Alloc | None = None,
    ) -> list[np.ndarray]:
        return run(self.steps, arrays, targets, alloc=alloc)

    def rename(self, keys: Mapping[str, str]) -> Route:
        """The same route over other key names (a view's raw keys)."""
        return replace(self, keys=tuple(keys[k] for k in self.keys))


@dataclass(frozen=True)
class Leaves:
    """A regex rule's target whose last name component is renamed: ``tt.leaves(...)``.

    Attributes:
        target: the template (back-references allowed), with or without transforms
            (``"h\\1/ln_\\2/\\3"``, ``"x | reshape()"``) or a :class:`To`.
        renames: old leaf -> new leaf; a leaf not listed keeps its name.
    """

    target: Any
    renames: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        target = self.target.text if isinstance(self.target, To) else str(self.target)
        pairs = ", ".join(f"{a}={b}" for a, b in self.renames)
        return f"{target} (leaves {pairs})"

    def rename(self, name: str) -> str:
        """``name`` with its last component renamed (``ln_1/g`` -> ``ln_1/gamma``)."""
        scope, sep, leaf = name.rpartition("/")
        new = dict(self.renames).get(leaf)
        return name if new is None else scope + sep + new


def leaves(target: Any, renames: Mapping[str, str] | None = None, **more: str) -> Leaves:
    """A regex rule's target that also renames leaves: ``g`` -> ``gamma``, ``b`` -> ``beta``.

    One rule then maps every layer norm of every layer, where plain templates need a rule
    per leaf. In a JSON map file: ``{"re:KEY": {"target": TEMPLATE, "leaves": {"g":
    "gamma"}}}``.

    Example:
        >>> import re
        >>> amap = {re.compile(r"model/h(\\d+)/(ln_\\d)/(g|b)"):
        ...         leaves(r"block_\\1/\\2/\\3", g="gamma", b="beta")}
        >>> leaves("x", {"g": "gamma"}).rename("block_0/ln_1/g")
        'block_0/ln_1/gamma'
    """
    pairs = {**(renames or {}), **more}
    if not pairs or not all(
        isinstance(a, str) and isinstance(b, str) and a and b and "/" not in a + b
        for a, b in pairs.items()
    ):
        raise TransformError(
            f"leaves: renames are non-empty leaf names without '/', e.g. {{'g': 'gamma'}}; got "
            f"{pairs!r}"
        )
    if not isinstance(target, str | To) or (isinstance(target, str) and not target.strip()):
        raise TransformError(f"leaves: the target is a template string, got {target!r}")
    return Leaves(target, tuple(pairs.items()))
