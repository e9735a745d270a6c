# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""What every transform is: shapes from shapes (no data read), arrays from arrays.

Pure: numpy is imported where a transform is built or run, TensorFlow only by
:meth:`Transform.graph` (a TF1 graph initializer's ops).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..engine.basics.dtype_names import dtype_name
from ..errors import TransformError

if TYPE_CHECKING:  # numpy is imported where a transform is built or run, not with the module
    import numpy as np

__all__ = ["Alloc", "Spec", "Transform", "TransformError"]

Spec = tuple[tuple[int, ...], str]  # (shape, TF dtype name)
Alloc = Callable[[tuple[int, ...], "np.dtype"], "np.ndarray"]


def _dtype_name(dtype: Any) -> str:
    """A checkpoint dtype name (see :func:`~tf1compat_init.dtype_names.dtype_name`), checked.

    Raises:
        TransformError: no checkpoint holds that dtype.
    """
    if dtype is None:  # numpy reads None as its default dtype
        dtype = "float64"
    name = dtype_name(dtype)
    _np_dtype(name)
    return name


def _np_dtype(name: str) -> np.dtype:
    from ..bundle.dtypes import numpy_dtype

    try:
        return numpy_dtype(name)
    except Exception as e:  # noqa: BLE001 - an unknown name, whatever the reader says
        raise TransformError(f"unknown dtype {name!r}: {e}") from None


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise TransformError(f"{what}: axis {axis} is out of range for rank {rank}")
    return axis % rank


class Transform(abc.ABC):
    """One step of a pipeline. Subclasses say how shapes change and how arrays do.

    ``specs`` maps the list of input ``(shape, dtype)`` to the output list, given the
    shapes of the targets (``None`` where unknown); ``apply`` does the same to arrays.
    """

    name = "transform"

    @property
    @abc.abstractmethod
    def text(self) -> str:
        """The canonical text form (``reshape(768, 12, 64)``)."""

    @abc.abstractmethod
    def specs(self, ins: list[Spec], targets: list[tuple | None] | None) -> list[Spec]:
        """The output ``(shape, dtype)`` list for the input list (no data read)."""

    @abc.abstractmethod
    def apply(self, arrays: list[np.ndarray], outs: list[Spec], alloc: Alloc) -> list[np.ndarray]:
        """The output arrays; ``outs`` is what :meth:`specs` returned for them."""

    @property
    def graph_form(self) -> bool:
        """Whether :meth:`graph` builds this transform's TensorFlow ops (``fn``'s cannot)."""
        return type(self).graph is not Transform.graph

    def graph(self, values: list[Any], ins: list[Spec], outs: list[Spec]) -> list[Any]:
        """The transform as TensorFlow ops on ``values`` (graph tensors), shapes as planned.

        What a TF1 graph initializer runs between the ``RestoreV2`` read and the assign,
        so the values are read when it runs (TF1's semantics). ``ins`` and ``outs``:
        what :meth:`specs` took and returned. Imports TensorFlow.

        Raises:
            TransformError: the transform has no graph form (:attr:`graph_form`).
        """
        raise TransformError(f"{self.text} has no graph form")

    def __repr__(self) -> str:
        return f"tt.{self.text}"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.text == self.text

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.text))


class _EachTransform(Transform):
    """A transform applied to each tensor of the list on its own."""

    def specs(self, ins: list[Spec], targets: list[tuple | None] | None) -> list[Spec]:
        if targets is None or len(targets) != len(ins):
            targets = [None] * len(ins)
        return [self.one_spec(s, d, t) for (s, d), t in zip(ins, targets, strict=True)]

    def apply(self, arrays: list[np.ndarray], outs: list[Spec], alloc: Alloc) -> list[np.ndarray]:
        return [self.one(a, o, alloc) for a, o in zip(arrays, outs, strict=True)]

    @abc.abstractmethod
    def one_spec(self, shape: tuple, dtype: str, target: tuple | None) -> Spec:
        """One tensor's output ``(shape, dtype)``; ``target``: its target's shape or None."""

    @abc.abstractmethod
    def one(self, array: np.ndarray, out: Spec, alloc: Alloc) -> np.ndarray:
        """One tensor's output array."""

    @property
    def graph_form(self) -> bool:
        return type(self).one_graph is not _EachTransform.one_graph

    def graph(self, values: list[Any], ins: list[Spec], outs: list[Spec]) -> list[Any]:
        return [self.one_graph(v, i, o) for v, i, o in zip(values, ins, outs, strict=True)]

    def one_graph(self, value: Any, spec: Spec, out: Spec) -> Any:
        """One tensor's TensorFlow op (see :meth:`Transform.graph`)."""
        raise TransformError(f"{self.text} has no graph form")
