"""Tensor transforms in the assignment map, and recipes: data on the public API.

Pure: numpy only, no TensorFlow. ``from tf1compat_init import transforms as tt``.

A rule may carry a pipeline of transforms applied, left to right, on the way from the
checkpoint to the target::

    {"ckpt/q/kernel": tt.to("layer/q/kernel", tt.reshape(768, 12, 64)),
     "ckpt/qkv/kernel": tt.to(["q/kernel", "k/kernel", "v/kernel"], tt.split(axis=-1)),
     ("ckpt/q", "ckpt/k"): tt.to("qk", tt.concat(-1)),
     "pt/dense/weight": "dense/kernel | transpose(1, 0)"}           # the string form

The pipeline works on a list of tensors: the map key's tensors (several for a concat
key), ``concat`` joins them into one, ``split`` cuts one into several (one per target),
and every other transform applies to each tensor of the list. The output shape and
dtype of every transform is computed at plan time without reading data (:func:`infer`),
so a pipeline that does not fit its target fails before anything changes.

Copies: ``reshape`` and ``transpose`` return views and ``split`` views of its input;
``concat`` and ``cast`` write one new array; :func:`run` makes one C-contiguous copy at
the end only when the result is not contiguous already (a ``transpose``). So a pipeline
holds its input plus at most one copy of the tensor it touches; ``reshape`` alone holds
no copy at all.
"""

from __future__ import annotations

import abc
import ast
import importlib
import importlib.util
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .errors import AssignmentMapError, CheckpointMismatchError

if TYPE_CHECKING:  # numpy is imported where a transform is built or run, not with the module
    import numpy as np

__all__ = [
    "Cast",
    "Concat",
    "Fn",
    "Leaves",
    "Recipe",
    "RemapVocab",
    "Reshape",
    "Route",
    "Split",
    "To",
    "Transform",
    "TransformError",
    "Transpose",
    "cast",
    "concat",
    "fn",
    "get_recipe",
    "infer",
    "leaves",
    "list_recipes",
    "parse_key",
    "parse_target",
    "parse_transforms",
    "recipe_map",
    "register",
    "remap_vocab",
    "reshape",
    "run",
    "split",
    "to",
    "transpose",
    "unregister",
]

Spec = tuple[tuple[int, ...], str]  # (shape, TF dtype name)
Alloc = Callable[[tuple[int, ...], "np.dtype"], "np.ndarray"]


class TransformError(AssignmentMapError):
    """A transform cannot apply: bad arguments, syntax, or shapes that do not fit it."""


_DTYPE_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "bool_": "bool",
    "object": "string",  # how numpy holds a string tensor
    "bytes": "string",
    "str": "string",
}


def _dtype_name(dtype: Any) -> str:
    import numpy as np

    if isinstance(dtype, str):
        name = dtype
    elif isinstance(getattr(dtype, "name", None), str) and not isinstance(dtype, type):
        name = dtype.name  # np.dtype, tf.DType
    else:
        name = np.dtype(dtype).name
    name = _DTYPE_ALIASES.get(name, name)
    _np_dtype(name)  # raises for a name no checkpoint holds
    return name


def _np_dtype(name: str) -> np.dtype:
    from .bundle.dtypes import numpy_dtype

    try:
        return numpy_dtype(name)
    except Exception as e:  # noqa: BLE001 - an unknown name, whatever the reader says
        raise TransformError(f"unknown dtype {name!r}: {e}") from None


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise TransformError(f"{what}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def _fmt(shape: Sequence[int | None] | None) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


# -- the transforms ---------------------------------------------------------------------------


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
                    f"reshape(): the target's shape {_fmt(target)} has more than one unknown "
                    f"dimension; write the shape"
                )
            want = tuple(-1 if d is None else d for d in target)
        size = math.prod(shape)
        known = math.prod(d for d in want if d != -1)
        if -1 in want:
            if known == 0 or size % known:
                raise TransformError(
                    f"{self.text} cannot reshape {_fmt(shape)} ({size} values) to "
                    f"{_fmt(want)}: {size} is not a multiple of {known}"
                )
            want = tuple(size // known if d == -1 else d for d in want)
        elif known != size:
            raise TransformError(
                f"{self.text} cannot reshape {_fmt(shape)} ({size} values) to {_fmt(want)} "
                f"({known} values)"
            )
        return want, dtype

    def one(self, array: np.ndarray, out: Spec, alloc: Alloc) -> np.ndarray:
        return array.reshape(out[0])


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
                    f"{_fmt(shape)} is {dim}"
                )
        else:
            n = self.n if self.n is not None else (len(targets) if targets else 1)
            if dim % n:
                raise TransformError(
                    f"{self.text} does not divide axis {self.axis} of {_fmt(shape)}: {dim} is "
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
                    f"{self.text}: tensor {i + 1} has shape {_fmt(shape)}, tensor 1 "
                    f"{_fmt(shape0)}; all dimensions but axis {self.axis} must agree"
                )
        total = sum(s[axis] for s, _ in ins)
        return [(shape0[:axis] + (total,) + shape0[axis + 1 :], dtype0)]

    def apply(self, arrays: list[np.ndarray], outs: list[Spec], alloc: Alloc) -> list[np.ndarray]:
        import numpy as np

        shape, _ = outs[0]
        result = alloc(tuple(shape), arrays[0].dtype)
        np.concatenate(arrays, axis=self.axis % len(shape), out=result)
        return [result]


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
                f"zero-stride array of shape {_fmt(shape)} to find its output shape; give "
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
                f"{self.text} returned {_dtype_name(result.dtype)}{_fmt(result.shape)} but "
                f"was planned as {out[1]}{_fmt(out[0])}"
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
        from .vocab import VocabError, VocabRemap

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
        from .vocab import VocabError

        if dtype == "string":
            raise TransformError(f"{self.text} cannot remap a string tensor")
        try:
            return self.remap.out_shape(shape), dtype
        except VocabError as e:
            raise TransformError(f"{self.text}: {e}") from None

    def one(self, array: np.ndarray, out: Spec, alloc: Alloc) -> np.ndarray:
        from .vocab import VocabError

        try:
            return self.remap.apply(array, alloc)
        except VocabError as e:  # a file changed since the plan
            raise TransformError(f"{self.text}: {e}") from None


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


# -- pipelines ---------------------------------------------------------------------------------


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


# -- the rule side: tt.to(...) and routes -------------------------------------------------------


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


# -- the string form ---------------------------------------------------------------------------

_PARSERS: dict[str, Callable[..., Transform]] = {
    "reshape": reshape,
    "transpose": transpose,
    "split": split,
    "concat": concat,
    "cast": cast,
    "remap_vocab": remap_vocab,
}


def _literal(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Name):  # cast(float16)
        return node.id
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e, text) for e in node.elts]
    try:
        value = ast.literal_eval(node)
    except ValueError:
        raise TransformError(f"{text!r}: arguments must be numbers, lists or dtype names") from None
    return value


def _parse_call(text: str) -> Transform:
    text = text.strip()
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        node = None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise TransformError(
            f"{text!r} is not a transform; write name(arguments), e.g. reshape(768, 12, 64), "
            f"transpose(1, 0), split(-1), concat(-1), cast(float16)"
        )
    name = node.func.id
    if name == "fn":
        raise TransformError(f"{text!r}: fn(...) has no string form; use tt.fn in a Python map")
    maker = _PARSERS.get(name)
    if maker is None:
        raise TransformError(
            f"unknown transform {name!r} in {text!r}; the transforms are "
            f"{', '.join(_PARSERS)} (and tt.fn in Python)"
        )
    args = [_literal(a, text) for a in node.args]
    kwargs = {k.arg: _literal(k.value, text) for k in node.keywords if k.arg is not None}
    try:
        return maker(*args, **kwargs)
    except TypeError as e:
        raise TransformError(f"{text!r}: {e}") from None


def parse_transforms(text: str) -> tuple[Transform, ...]:
    """``"reshape(1, 2) | cast(float16)"`` -> the transforms."""
    parts = text.split("|")
    if any(not part.strip() for part in parts):
        raise TransformError(f"{text!r}: an empty step between '|'")
    return tuple(_parse_call(part) for part in parts)


def is_pipeline(text: str) -> bool:
    """Whether a map value is in the pipeline syntax (holds ``|`` or ``,``)."""
    return "|" in text or "," in text


def is_concat_key(text: str) -> bool:
    """Whether a map key is a concat key ``"a + b"``."""
    return "+" in text


def parse_target(text: str) -> To:
    """``"q/kernel, k/kernel | split(-1)"`` -> ``To``.

    Example:
        >>> parse_target("x | transpose(1, 0) | cast(float16)").text
        'x | transpose(1, 0) | cast(float16)'
    """
    head, sep, rest = text.partition("|")
    targets = [t.strip() for t in head.split(",")]
    if not all(targets) or any(" " in t for t in targets):
        raise TransformError(
            f"{text!r}: the targets before '|' are names separated by commas, e.g. "
            f"'q/kernel, k/kernel | split(-1)'"
        )
    steps = parse_transforms(rest) if sep else ()
    return to(targets, *steps)


def parse_key(text: str) -> tuple[str, ...]:
    """``"ckpt/q + ckpt/k"`` -> ``("ckpt/q", "ckpt/k")``."""
    keys = tuple(k.strip() for k in text.split("+"))
    if not all(keys) or any(" " in k for k in keys):
        raise TransformError(
            f"{text!r}: a concat key is checkpoint keys joined by ' + ', e.g. 'a/q + a/k'"
        )
    return keys


# -- recipes -----------------------------------------------------------------------------------


def _patterns(what: str, recipe: str, patterns: Any) -> tuple[re.Pattern, ...]:
    if isinstance(patterns, str | re.Pattern):
        patterns = [patterns]
    out = []
    for p in patterns or ():
        try:
            out.append(p if isinstance(p, re.Pattern) else re.compile(p))
        except re.error as e:
            raise AssignmentMapError(
                f"recipe {recipe!r}: {what} pattern {p!r} is not a valid regex: {e}"
            ) from None
    return tuple(out)


@dataclass(frozen=True)
class Recipe:
    """A named, reusable assignment map: rules, what to drop, what must be there.

    Args:
        name: the registry name (``bert-to-keras-hub``).
        rules: an assignment map (dict or list of pairs, regex keys, ``tt.to`` values).
        drop: regexes (``re.search``) of checkpoint keys left out on purpose (optimizer
            slots, ``global_step``); each is reported, never silent.
        requires: regexes that must each match a checkpoint key; a checkpoint without
            them is the wrong checkpoint (``CheckpointMismatchError`` at plan time).
        description: one line for listings.
        optional: regexes (``re.search``) of targets the recipe may leave untouched (Keras
            conv biases a TF1 model does not have). Any other target no rule covers is
            treated like a missing one (``on_missing``): a recipe loads the whole model or
            says what it did not load. A recipe's regex rule that resolves to nothing (a
            model built without its head) is no error; ``requires`` guards the checkpoint.
    """

    name: str
    rules: Any
    drop: Any = ()
    requires: Any = ()
    description: str = ""
    optional: Any = ()
    _drop: tuple[re.Pattern, ...] = field(init=False, repr=False, compare=False)
    _requires: tuple[re.Pattern, ...] = field(init=False, repr=False, compare=False)
    _optional: tuple[re.Pattern, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise AssignmentMapError(f"a recipe needs a non-empty name, got {self.name!r}")
        object.__setattr__(self, "_drop", _patterns("drop", self.name, self.drop))
        object.__setattr__(self, "_requires", _patterns("requires", self.name, self.requires))
        object.__setattr__(self, "_optional", _patterns("optional", self.name, self.optional))

    @property
    def drop_patterns(self) -> tuple[re.Pattern, ...]:
        return self._drop

    @property
    def required_patterns(self) -> tuple[re.Pattern, ...]:
        return self._requires

    def check(self, keys: Iterable[str]) -> None:
        """Raises unless every ``requires`` pattern matches one of ``keys``.

        Raises:
            CheckpointMismatchError: naming the recipe and the patterns no key matches.
        """
        keys = list(keys)
        missing = [p.pattern for p in self._requires if not any(p.search(k) for k in keys)]
        if missing:
            raise CheckpointMismatchError(
                f"recipe {self.name!r} does not fit this checkpoint: no key matches "
                f"{', '.join(repr(m) for m in missing)} (required). "
                + (f"It is for: {self.description}. " if self.description else "")
                + f"The checkpoint's keys include {sorted(keys)[:5]}. Nothing was changed."
            )

    def uncovered(self, targets: Iterable[str]) -> list[str]:
        """The ``targets`` (no rule covers them) that ``optional`` does not allow."""
        return [t for t in targets if not any(p.search(t) for p in self._optional)]

    def dropped_by(self, key: str) -> str | None:
        """The drop pattern ``key`` matches, or ``None``."""
        for p in self._drop:
            if p.search(key):
                return p.pattern
        return None


_REGISTRY: dict[str, Recipe] = {}
_BUILTIN_MODULE = "tf1compat_init.recipes"
_builtin_loaded = False


def register(recipe: Recipe, *, replace: bool = False) -> Recipe:
    """Adds ``recipe`` to the registry under its name; returns it.

    Raises:
        ValueError: another recipe has that name (pass ``replace=True``).
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"register() takes a tt.Recipe, got {type(recipe).__name__}")
    old = _REGISTRY.get(recipe.name)
    if old is not None and old is not recipe and not replace:
        raise ValueError(f"a recipe named {recipe.name!r} is registered already; replace=True")
    _REGISTRY[recipe.name] = recipe
    return recipe


def unregister(name: str) -> None:
    """Removes a recipe from the registry (no error if absent)."""
    _REGISTRY.pop(name, None)


def _load_builtin() -> None:
    """Imports the library's own recipes module, once, if it exists."""
    global _builtin_loaded
    if _builtin_loaded:
        return
    _builtin_loaded = True
    if importlib.util.find_spec(_BUILTIN_MODULE) is not None:
        importlib.import_module(_BUILTIN_MODULE)


def list_recipes() -> dict[str, Recipe]:
    """Every registered recipe (the library's own included), by name."""
    _load_builtin()
    return dict(sorted(_REGISTRY.items()))


def get_recipe(name: str | Recipe) -> Recipe:
    """The recipe registered as ``name`` (a ``Recipe`` is returned as it is).

    Raises:
        AssignmentMapError: no recipe of that name; the message lists the known ones.
    """
    if isinstance(name, Recipe):
        return name
    if name not in _REGISTRY:
        _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(_REGISTRY) or "none"
        raise AssignmentMapError(
            f"no recipe named {name!r}; registered recipes: {known}. Register one with "
            f"tt.register(tt.Recipe(...))"
        ) from None


def recipe_map(assignment_map: Any, recipe: Any) -> Any:
    """What a front end plans with when given ``assignment_map`` and/or ``recipe=``.

    Raises:
        AssignmentMapError: both were given, or the recipe name is unknown.
    """
    if recipe is None:
        return assignment_map
    if assignment_map is not None:
        raise AssignmentMapError(
            "pass either assignment_map or recipe=, not both (a recipe is a whole map; "
            "write a new tt.Recipe for more rules)"
        )
    return get_recipe(recipe)
