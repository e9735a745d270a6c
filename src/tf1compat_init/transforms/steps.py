# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The transforms: ``reshape``, ``transpose``, ``cast``, ``split``, ``concat``, ``fn``,
``remap_vocab``, and the functions that build them (``tt.reshape(768, 12, 64)``).

Pure: numpy is imported where a transform is built or run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..engine.basics.shapes import fmt_shape
from ..errors import TransformError
from .base import Alloc, Spec, Transform, _axis, _dtype_name, _EachTransform, _np_dtype

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Cast",
    "Concat",
    "Fn",
    "RemapVocab",
    "Reshape",
    "Split",
    "Transpose",
    "cast",
    "concat",
    "fn",
    "remap_vocab",
    "reshape",
    "split",
    "transpose",
]


class Reshape(_EachTransform):
    """``reshape(*shape)``: ``-1`` once; no arguments: the target's shape. Never copies."""

    name = "reshape"

    def __init__(self, *shape: int) -> None:
        import numpy as np

        if len(shape) == 1 and isinstance(shape[0], list | tuple):
            shape = tuple(shape[0])
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < -1:
                raise TransformError(f"reshape{tuple(shape)}: dimensions are ints >= -1")
        if sum(1 for d in shape if d == -1) > 1:
            raise TransformError(f"reshape{tuple(shape)}: -1 may appear once")
        self.shape: tuple[int, ...] | None = tuple(int(d) for d in shape) if shape else None

    @property
    def text(self) -> str:
        return f"reshape({', '.join(map(str, self.shape or ()))})"

    def one_spec(self, shape: tuple, dtype: str, target: tuple | None) -> Spec:
        want = self.shape
        if want is None:
            if target is None:
                raise TransformError(
                    "reshape() takes the target's shape, which is not known here (a tf1 or "
                    "safetensors migrate has no model, and before a split or concat the "
                    "target is not one tensor): write the shape, e.g. reshape(768, 12, 64)"
                )
            if sum(1 for d in target if d is None) > 1:
                raise TransformError(
                    f"reshape(): the target's shape {fmt_shape(target)} has more than one unknown "
                    f"dimension; write the shape"
                )
            want = tuple(-1 if d is None else d for d in target)
        size = math.prod(shape)
        known = math.prod(d for d in want if d != -1)
        if -1 in want:
            if known == 0 or size % known:
                raise TransformError(
                    f"{self.text} cannot reshape {fmt_shape(shape)} ({size} values) to "
                    f"{fmt_shape(want)}: {size} is not a multiple of {known}"
                )
            want = tuple(size // known if d == -1 else d for d in want)
        elif known != size:
            raise TransformError(
                f"{self.text} cannot reshape {fmt_shape(shape)} ({size} values) to {fmt_shape(want)} "
                f"({known} values)"
            )
        return want, dtype

    def one(self, array: np.ndarray, out: Spec, alloc: Alloc) -> np.ndarray:
        return array.reshape(out[0])

    def one_graph(self, value: Any, spec: Spec, out: Spec) -> Any:
        import tensorflow as tf

        return tf.reshape(value, out[0])


class Transpose(_EachTransform):
    """``transpose(*perm)``: a permutation of the axes (a view; no arguments reverses)."""

    name = "transpose"

    def __init__(self, *perm: int) -> None:
        import numpy as np

        if len(perm) == 1 and isinstance(perm[0], list | tuple):
            perm = tuple(perm[0])
        if any(isinstance(p, bool) or not isinstance(p, int | np.integer) for p in perm):
            raise TransformError(f"transpose{tuple(perm)}: axes are ints")
        self.perm: tuple[int, ...] = tuple(int(p) for p in perm)

    @property
    def text(self) -> str:
        return f"transpose({', '.join(map(str, self.perm))})"

    def _perm(self, rank: int) -> tuple[int, ...]:
        if not self.perm:
            return tuple(reversed(range(rank)))
        if len(self.perm) != rank or sorted(p % rank if rank else p for p in self.perm) != list(
            range(rank)
        ):
            raise TransformError(f"{self.text} is not a permutation of the {rank} axes")
        return tuple(p % rank for p in self.perm)

    def one_spec(self, shape: tuple, dtype: str, target: tuple | None) -> Spec:
        return tuple(shape[p] for p in self._perm(len(shape))), dtype

    def one(self, array: np.ndarray, out: Spec, alloc: Alloc) -> np.ndarray:
        return array.transpose(self._perm(array.ndim))

    def one_graph(self, value: Any, spec: Spec, out: Spec) -> Any:
        import tensorflow as tf

        return tf.transpose(value, self._perm(len(spec[0])))


class Cast(_EachTransform):
    """``cast(dtype)``: a TF dtype name (``float16``) or numpy dtype; one copy."""

    name = "cast"

    def __init__(self, dtype: Any) -> None:
        self.dtype = _dtype_name(dtype)
        if self.dtype == "string":
            raise TransformError("cast(string) is not supported")

    @property
    def text(self) -> str:
        return f"cast({self.dtype})"

    def one_spec(self, shape: tuple, dtype: str, target: tuple | None) -> Spec:
        if dtype == "string":
            raise TransformError(f"{self.text} cannot cast a string tensor")
        return tuple(shape), self.dtype

    def one(self, array: np.ndarray, out: Spec, alloc: Alloc) -> np.ndarray:
        import numpy as np

        dtype = _np_dtype(self.dtype)
        if array.dtype == dtype:
            return array
        result = alloc(tuple(array.shape), dtype)
        np.copyto(result, array, casting="unsafe")
        return result

    def one_graph(self, value: Any, spec: Spec, out: Spec) -> Any:
        import tensorflow as tf

        from ..engine.basics.dtype_names import tf_dtype

        return tf.cast(value, tf_dtype(self.dtype))


class Split(Transform):
    """``split(axis, n=None, sizes=None)``: one tensor into several (views, no copy).

    Equal parts (``n``, by default the number of targets) or ``sizes`` along ``axis``.
    """

    name = "split"

    def __init__(
        self, axis: int = -1, n: int | None = None, sizes: Sequence[int] | None = None
    ) -> None:
        import numpy as np

        if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
            raise TransformError(f"split: axis must be an int, got {axis!r}")
        if n is not None and sizes is not None:
            raise TransformError("split: give n or sizes, not both")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise TransformError(f"split: n must be a positive int, got {n!r}")
        if sizes is not None:
            sizes = tuple(sizes)
            if not sizes or any(
                isinstance(s, bool) or not isinstance(s, int | np.integer) or s < 0 for s in sizes
            ):
                raise TransformError(f"split: sizes must be non-negative ints, got {sizes!r}")
        self.axis = int(axis)
        self.n = n
        self.sizes: tuple[int, ...] | None = None if sizes is None else tuple(map(int, sizes))

    @property
    def text(self) -> str:
        extra = ""
        if self.n is not None:
            extra = f", n={self.n}"
        elif self.sizes is not None:
            extra = f", sizes=[{', '.join(map(str, self.sizes))}]"
        return f"split({self.axis}{extra})"

    def specs(self, ins: list[Spec], targets: list[tuple | None] | None) -> list[Spec]:
        if len(ins) != 1:
            raise TransformError(f"{self.text} takes one tensor, got {len(ins)} (concat first)")
        shape, dtype = ins[0]
        axis = _axis(self.axis, len(shape), self.text)
        dim = shape[axis]
        if self.sizes is not None:
            sizes = self.sizes
            if sum(sizes) != dim:
                raise TransformError(
                    f"{self.text}: sizes add up to {sum(sizes)}, but axis {self.axis} of "
                    f"{fmt_shape(shape)} is {dim}"
                )
        else:
            n = self.n if self.n is not None else (len(targets) if targets else 1)
            if dim % n:
                raise TransformError(
                    f"{self.text} does not divide axis {self.axis} of {fmt_shape(shape)}: {dim} is "
                    f"not a multiple of {n}"
                )
            sizes = (dim // n,) * n
        return [(shape[:axis] + (s,) + shape[axis + 1 :], dtype) for s in sizes]

    def apply(self, arrays: list[np.ndarray], outs: list[Spec], alloc: Alloc) -> list[np.ndarray]:
        import numpy as np

        (array,) = arrays
        axis = self.axis % array.ndim
        bounds = np.cumsum([s[0][axis] for s in outs])[:-1]
        return list(np.split(array, bounds, axis=axis))

    def graph(self, values: list[Any], ins: list[Spec], outs: list[Spec]) -> list[Any]:
        import tensorflow as tf

        axis = self.axis % len(ins[0][0])
        return tf.split(values[0], [s[axis] for s, _ in outs], axis=axis)


class Concat(Transform):
    """``concat(axis)``: the map key's tensors joined into one; one copy."""

    name = "concat"

    def __init__(self, axis: int = -1) -> None:
        import numpy as np

        if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
            raise TransformError(f"concat: axis must be an int, got {axis!r}")
        self.axis = int(axis)

    @property
    def text(self) -> str:
        return f"concat({self.axis})"

    def specs(self, ins: list[Spec], targets: list[tuple | None] | None) -> list[Spec]:
        shape0, dtype0 = ins[0]
        axis = _axis(self.axis, len(shape0), self.text)
        for i, (shape, dtype) in enumerate(ins[1:], 1):
            if dtype != dtype0:
                raise TransformError(
                    f"{self.text}: tensor {i + 1} is {dtype}, tensor 1 is {dtype0} (cast them "
                    f"first)"
                )
            if len(shape) != len(shape0) or any(
                a != b for j, (a, b) in enumerate(zip(shape, shape0, strict=True)) if j != axis
            ):
                raise TransformError(
                    f"{self.text}: tensor {i + 1} has shape {fmt_shape(shape)}, tensor 1 "
                    f"{fmt_shape(shape0)}; all dimensions but axis {self.axis} must agree"
                )
        total = sum(s[axis] for s, _ in ins)
        return [(shape0[:axis] + (total,) + shape0[axis + 1 :], dtype0)]

    def apply(self, arrays: list[np.ndarray], outs: list[Spec], alloc: Alloc) -> list[np.ndarray]:
        import numpy as np

        shape, _ = outs[0]
        result = alloc(tuple(shape), arrays[0].dtype)
        np.concatenate(arrays, axis=self.axis % len(shape), out=result)
        return [result]

    def graph(self, values: list[Any], ins: list[Spec], outs: list[Spec]) -> list[Any]:
        import tensorflow as tf

        return [tf.concat(values, axis=self.axis % len(ins[0][0]))]


class Fn(_EachTransform):
    """``fn(callable, name=..., shape=None, dtype=None)``: ``np.ndarray -> np.ndarray``.

    The output shape and dtype are found at plan time by calling the function on a
    read-only zero-stride array of the input's shape (no memory), unless ``shape`` and
    ``dtype`` are given. No string form: Python maps only.
    """

    name = "fn"

    def __init__(
        self,
        function: Callable[[np.ndarray], Any],
        name: str | None = None,
        shape: Sequence[int] | None = None,
        dtype: Any = None,
    ) -> None:
        if not callable(function):
            raise TransformError(f"fn: {function!r} is not callable")
        self.function = function
        self.label = name or getattr(function, "__name__", type(function).__name__)
        self.shape = None if shape is None else tuple(int(d) for d in shape)
        self.dtype = None if dtype is None else _dtype_name(dtype)

    @property
    def text(self) -> str:
        return f"fn({self.label})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fn) and other.function is self.function and other.text == self.text

    def __hash__(self) -> int:
        return hash(("fn", id(self.function)))

    def one_spec(self, shape: tuple, dtype: str, target: tuple | None) -> Spec:
        import numpy as np

        if self.shape is not None and self.dtype is not None:
            return self.shape, self.dtype
        np_dtype = _np_dtype(dtype)
        probe = np.broadcast_to(np.zeros((), dtype=np_dtype), shape)
        try:
            out = np.asarray(self.function(probe))
        except Exception as e:  # the user's function: say whose error it is
            raise TransformError(
                f"{self.text} raised {type(e).__name__}: {e} when called on a read-only "
                f"zero-stride array of shape {fmt_shape(shape)} to find its output shape; give "
                f"tt.fn(..., shape=..., dtype=...)"
            ) from e
        return (
            self.shape if self.shape is not None else tuple(out.shape),
            self.dtype if self.dtype is not None else _dtype_name(out.dtype),
        )

    def one(self, array: np.ndarray, out: Spec, alloc: Alloc) -> np.ndarray:
        import numpy as np

        result = np.asarray(self.function(array))
        if tuple(result.shape) != tuple(out[0]) or _dtype_name(result.dtype) != out[1]:
            raise TransformError(
                f"{self.text} returned {_dtype_name(result.dtype)}{fmt_shape(result.shape)} but "
                f"was planned as {out[1]}{fmt_shape(out[0])}"
            )
        return result


class RemapVocab(_EachTransform):
    """``remap_vocab(old_vocab, new_vocab, ...)``: rows (or columns) reordered by token.

    ``tf.compat.v1.train.VocabInfo``'s remapping (see :mod:`tf1compat_init.vocab`): entry
    ``i`` takes the old entry of the new vocabulary's token ``i``; new tokens and
    ``num_oov_buckets`` appended entries take the backup initializer's values. The
    vocabulary files are read and checked at plan time; one copy (the output).
    """

    name = "remap_vocab"

    def __init__(
        self,
        old_vocab: Any,
        new_vocab: Any,
        axis: int = 0,
        num_oov_buckets: int = 0,
        new_vocab_size: int | None = None,
        old_vocab_size: int = -1,
        backup_initializer: Any = None,
    ) -> None:
        from ..engine.reading.vocab import VocabError, VocabRemap

        try:
            self.remap = VocabRemap(
                old_vocab,
                new_vocab,
                axis=axis,
                num_oov_buckets=num_oov_buckets,
                new_vocab_size=new_vocab_size,
                old_vocab_size=old_vocab_size,
                backup_initializer=backup_initializer,
            )
        except VocabError as e:
            raise TransformError(f"remap_vocab: {e}") from None

    @property
    def text(self) -> str:
        return self.remap.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemapVocab) and other.remap == self.remap

    def __hash__(self) -> int:
        return hash(("remap_vocab", self.text, id(self.remap.backup_initializer)))

    def one_spec(self, shape: tuple, dtype: str, target: tuple | None) -> Spec:
        from ..engine.reading.vocab import VocabError

        if dtype == "string":
            raise TransformError(f"{self.text} cannot remap a string tensor")
        try:
            return self.remap.out_shape(shape), dtype
        except VocabError as e:
            raise TransformError(f"{self.text}: {e}") from None

    def one(self, array: np.ndarray, out: Spec, alloc: Alloc) -> np.ndarray:
        from ..engine.reading.vocab import VocabError

        try:
            return self.remap.apply(array, alloc)
        except VocabError as e:  # a file changed since the plan
            raise TransformError(f"{self.text}: {e}") from None

    def one_graph(self, value: Any, spec: Spec, out: Spec) -> Any:
        # TF's GenerateVocabRemapping reads the vocabulary files when the graph runs
        from ..engine.targets.vocab_graph import remap_ops

        return remap_ops(self.remap, value, spec[0])


def remap_vocab(
    old_vocab: Any,
    new_vocab: Any,
    axis: int = 0,
    num_oov_buckets: int = 0,
    new_vocab_size: int | None = None,
    old_vocab_size: int = -1,
    backup_initializer: Any = None,
) -> RemapVocab:
    """``tf.compat.v1.train.VocabInfo`` as a transform: rows (``axis=0``) or columns
    (``axis=1``) reordered from ``old_vocab``'s token order to ``new_vocab``'s.

    Args:
        old_vocab: the checkpoint's vocabulary file (one token per line).
        new_vocab: the new model's vocabulary file.
        axis: 0 for embeddings and linear weights, 1 for class vocabularies.
        num_oov_buckets: entries appended after the new vocabulary (backup values).
        new_vocab_size: how many lines of ``new_vocab`` count (default: all).
        old_vocab_size: how many lines of ``old_vocab`` count (``-1``: all).
        backup_initializer: values for new tokens and OOV entries: ``None`` (zeros), a
            number, a TF initializer (TF's values for a seeded one), or ``shape -> array``.

    Example:
        >>> remap_vocab("old_vocab.txt", "new_vocab.txt", num_oov_buckets=1).text
        "remap_vocab('old_vocab.txt', 'new_vocab.txt', num_oov_buckets=1)"
    """
    return RemapVocab(
        old_vocab,
        new_vocab,
        axis=axis,
        num_oov_buckets=num_oov_buckets,
        new_vocab_size=new_vocab_size,
        old_vocab_size=old_vocab_size,
        backup_initializer=backup_initializer,
    )


def reshape(*shape: int) -> Reshape:
    """``reshape(768, 12, 64)``; ``-1`` once; ``reshape()``: the target's shape."""
    return Reshape(*shape)


def transpose(*perm: int) -> Transpose:
    """``transpose(1, 0)``: permute the axes."""
    return Transpose(*perm)


def split(axis: int = -1, n: int | None = None, sizes: Sequence[int] | None = None) -> Split:
    """``split(-1)``: one key into as many equal parts as targets (or ``n``, or ``sizes``)."""
    return Split(axis, n=n, sizes=sizes)


def concat(axis: int = -1) -> Concat:
    """``concat(-1)``: the keys of a tuple key joined along ``axis``."""
    return Concat(axis)


def cast(dtype: Any) -> Cast:
    """``cast("float16")``: convert the dtype."""
    return Cast(dtype)


def fn(
    function: Callable[[np.ndarray], Any],
    name: str | None = None,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
) -> Fn:
    """The escape hatch: any ``np.ndarray -> np.ndarray`` function (Python maps only)."""
    return Fn(function, name=name, shape=shape, dtype=dtype)
