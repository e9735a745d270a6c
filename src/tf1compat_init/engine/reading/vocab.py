# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Vocabulary remapping: ``tf.compat.v1.train.VocabInfo``'s semantics on numpy arrays.

Pure: numpy only (vocabulary files at URLs, ``gs://`` and the like, are read through
``tf.io.gfile`` as checkpoints are). TF1 warm-starts an embedding (rows, ``axis=0``) or an output layer
(columns, ``axis=1``) across a vocabulary change: entry ``i`` of the new tensor takes the
old entry of the token on line ``i`` of the new vocabulary file, found in the old one;
tokens the old vocabulary lacks, and ``num_oov_buckets`` entries appended after the
vocabulary, take values from a backup initializer (zeros by default).

Exactly as TensorFlow (``GenerateVocabRemapping`` and ``LoadAndRemapMatrix``):

- a vocabulary file holds one token per line, the whole line (a trailing ``\\r`` is not
  part of it); only the first ``new_vocab_size`` new tokens and the first
  ``old_vocab_size`` old ones count (``-1``: all);
- the backup initializer is called as TF calls it, in this order: once with shape
  ``[n, 1]`` for the ``n`` values of missing entries (filled row-major: whole rows for
  ``axis=0``; for ``axis=1`` the missing columns of row 0, then of row 1, ...), then with
  ``[num_oov_buckets, columns]`` (``axis=0``) or ``[rows, num_oov_buckets]`` (``axis=1``)
  for the OOV entries; so a seeded TF initializer gives TF's values.

Checked before any value is read (:meth:`VocabRemap.check`): a vocabulary file that is
missing or empty, fewer new lines than ``new_vocab_size``, fewer old lines than
``old_vocab_size``, an old token listed twice, or more old tokens than the checkpoint
tensor has entries along ``axis`` (TF fails only if a new token maps past the end).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...bundle import storage
from ..basics.shapes import fmt_shape

if TYPE_CHECKING:
    import numpy as np

__all__ = ["VocabError", "VocabRemap", "read_vocab"]


class VocabError(ValueError):
    """A vocabulary file or size that does not fit (the caller names the rule)."""


_CACHE: dict[tuple[str, int, int], list[bytes]] = {}


def read_vocab(path: str | os.PathLike) -> list[bytes]:
    """The tokens of a vocabulary file, one per line, as TF reads them.

    Raises:
        VocabError: the file does not exist or cannot be read.
    """
    tokens = _read(os.fspath(path))[1]
    return tokens if isinstance(tokens, list) else tokens.tolist()


def _stat_key(path: str) -> tuple[str, int, int]:
    if storage.is_url(path):  # gs://, s3://, ram://: through tf.io.gfile, timed
        try:
            size, mtime_ns = storage.stat(path)
        except Exception as e:
            raise VocabError(f"vocabulary file {path} cannot be read: {e}") from None
        return (path, mtime_ns, size)
    try:
        st = os.stat(path)
    except OSError as e:
        raise VocabError(f"vocabulary file {path} cannot be read: {e.strerror}") from None
    return (path, st.st_mtime_ns, st.st_size)


def _read_file(path: str) -> bytes:
    if storage.is_url(path):
        try:
            return storage.read_bytes(path)
        except Exception as e:
            raise VocabError(f"vocabulary file {path} cannot be read: {e}") from None
    with open(path, "rb") as f:
        return f.read()


def _read(path: str) -> tuple[tuple[str, int, int], Any]:
    """A file's tokens: a numpy bytes array (a list for a file with NUL bytes, which
    numpy's bytes dtype would strip), cached by path, size and modification time."""
    import numpy as np

    key = _stat_key(path)
    cached = _CACHE.get(key)
    if cached is not None:
        return key, cached
    data = _read_file(path)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # a final newline ends the last line; it starts none
    if b"\r" in data:
        lines = [t[:-1] if t.endswith(b"\r") else t for t in lines]
    has_nul = b"\0" in data
    del data
    # An array holds 1M tokens in a tenth of the list's memory.
    tokens: Any = lines if has_nul else np.array(lines, dtype=bytes)
    del lines
    if len(_CACHE) >= 4:  # a remap needs two files; plan and apply read them twice
        _NUL.discard(next(iter(_CACHE)))
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = tokens
    if has_nul:
        _NUL.add(key)
    return key, tokens


_INDEX: dict[tuple, tuple[np.ndarray, int]] = {}
_NUL: set[tuple[str, int, int]] = set()  # files with NUL bytes in them


@dataclass(frozen=True)
class VocabRemap:
    """One vocabulary remapping, as ``tf.compat.v1.train.VocabInfo`` describes it.

    Attributes:
        old_vocab: the checkpoint's vocabulary file.
        new_vocab: the new model's vocabulary file.
        axis: 0 (rows: embeddings, linear weights) or 1 (columns: class vocabularies).
        num_oov_buckets: entries appended after the new vocabulary.
        new_vocab_size: how many new tokens count (``None``: every line).
        old_vocab_size: how many old tokens count (``-1``: every line).
        backup_initializer: ``None`` (zeros), a number, or a callable ``shape -> values``
            (a TF initializer is evaluated as TF's graph would, see
            :func:`backup_values`).
    """

    old_vocab: str
    new_vocab: str
    axis: int = 0
    num_oov_buckets: int = 0
    new_vocab_size: int | None = None
    old_vocab_size: int = -1
    backup_initializer: Any = None

    def __post_init__(self) -> None:
        for name in ("old_vocab", "new_vocab"):
            value = getattr(self, name)
            if isinstance(value, os.PathLike):
                object.__setattr__(self, name, os.fspath(value))
            elif not isinstance(value, str) or not value:
                raise VocabError(f"{name} must be a vocabulary file path, got {value!r}")
        if self.axis not in (0, 1) or isinstance(self.axis, bool):
            raise VocabError(
                "The only supported values for the axis argument are 0 and 1.  Provided "
                f"axis: {self.axis}"
            )
        if not _is_int(self.num_oov_buckets) or self.num_oov_buckets < 0:
            raise VocabError(f"num_oov_buckets must be >= 0, but received {self.num_oov_buckets!r}")
        if self.new_vocab_size is not None and (
            not _is_int(self.new_vocab_size) or self.new_vocab_size <= 0
        ):
            raise VocabError(f"new_vocab_size must be a positive int, got {self.new_vocab_size!r}")
        if not _is_int(self.old_vocab_size) or (
            self.old_vocab_size <= 0 and self.old_vocab_size != -1
        ):
            raise VocabError(
                f"old_vocab_size must be -1 (the whole file) or a positive int, got "
                f"{self.old_vocab_size!r}"
            )
        init = self.backup_initializer
        if init is not None and not callable(init) and not _is_number(init):
            raise VocabError(
                f"initializer must be callable, instead of being {init} of type {type(init)}."
            )

    @property
    def text(self) -> str:
        """The transform's text form: ``remap_vocab('old.txt', 'new.txt', axis=1)``."""
        args = [repr(self.old_vocab), repr(self.new_vocab)]
        defaults = {"axis": 0, "num_oov_buckets": 0, "new_vocab_size": None, "old_vocab_size": -1}
        args += [f"{k}={getattr(self, k)}" for k, d in defaults.items() if getattr(self, k) != d]
        init = self.backup_initializer
        if init is not None:
            label = init if not callable(init) else getattr(init, "__name__", type(init).__name__)
            args.append(f"backup_initializer={label}")
        return f"remap_vocab({', '.join(args)})"

    # -- sizes, checked without reading the tensor --------------------------------------------

    def new_tokens(self) -> list[bytes]:
        """The new vocabulary's tokens that count (the first ``new_vocab_size``)."""
        tokens = self._new()[1]
        return tokens if isinstance(tokens, list) else tokens.tolist()

    def _new(self) -> tuple[tuple, Any]:
        key, tokens = _read(self.new_vocab)
        if not len(tokens):
            raise VocabError(f"new vocabulary file {self.new_vocab} is empty")
        n = len(tokens) if self.new_vocab_size is None else self.new_vocab_size
        if n > len(tokens):
            raise VocabError(
                f"new_vocab_size is {n}, but the new vocabulary file {self.new_vocab} has "
                f"{len(tokens)} line(s)"
            )
        return key, tokens[:n] if n < len(tokens) else tokens

    def _old(self) -> tuple[tuple, Any]:
        key, tokens = _read(self.old_vocab)
        if not len(tokens):
            raise VocabError(f"old vocabulary file {self.old_vocab} is empty")
        # TF truncates the old vocabulary of rows only: with axis=1 it remaps columns
        # against the whole file, whatever old_vocab_size says.
        size = -1 if self.axis == 1 else self.old_vocab_size
        if size != -1 and size > len(tokens):
            raise VocabError(
                f"Invalid vocab_size in {self.old_vocab}: expected {size} but got {len(tokens)}"
            )
        return key, tokens if size == -1 else tokens[:size]

    def remapping(self) -> np.ndarray:
        """For each new token, its index among the old tokens that count, or -1 (int64).

        Vectorized (sorted old tokens, binary search), computed once per pair of files
        and sizes: a plan and its apply share it.

        Raises:
            VocabError: a file is missing or empty, too short, or the old one lists a
                token twice (TF: ``HashTable has different value for same key``).
        """
        import numpy as np

        new_key, new = self._new()
        old_key, old = self._old()
        cache_key = (new_key, len(new), old_key, len(old))
        hit = _INDEX.get(cache_key)
        if hit is not None:
            return hit[0]
        old_arr = np.asarray(old, dtype=bytes)
        order = np.argsort(old_arr, kind="stable")
        ordered = old_arr[order]
        same = np.flatnonzero(ordered[1:] == ordered[:-1])
        if len(same):
            i = int(same[0])
            first, second = sorted((int(order[i]), int(order[i + 1])))
            token = bytes(old[first]).decode(errors="replace")
            raise VocabError(
                f"old vocabulary file {self.old_vocab} lists {token!r} twice (lines "
                f"{first + 1} and {second + 1}); TensorFlow fails with: HashTable has "
                f"different value for same key"
            )
        new_arr = np.asarray(new, dtype=bytes)
        pos = np.searchsorted(ordered, new_arr)
        np.minimum(pos, len(ordered) - 1, out=pos)
        found = ordered[pos] == new_arr
        if new_key in _NUL or old_key in _NUL:
            # numpy's bytes dtype drops trailing NULs: compare such files' tokens exactly.
            found &= np.fromiter(
                (old[int(order[p])] == t for p, t in zip(pos, new, strict=True)), bool, len(new)
            )
        idx = np.where(found, order[pos], -1).astype(np.int64)
        _INDEX.clear()
        _INDEX[cache_key] = (idx, len(old))
        return idx

    def old_size(self) -> int:
        """How many old tokens count."""
        return len(self._old()[1])

    def out_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The remapped shape of a checkpoint tensor of ``shape``; checks the files.

        Raises:
            VocabError: a file or size that does not fit ``shape``.
        """
        return self._checked(shape)[0]

    def _checked(self, shape: Sequence[int]) -> tuple[tuple[int, ...], np.ndarray]:
        shape = tuple(int(d) for d in shape)
        if self.axis == 1 and len(shape) != 2:
            raise VocabError(
                f"axis=1 remaps the columns of a 2-D tensor; the checkpoint tensor is {fmt_shape(shape)}"
            )
        if len(shape) not in (1, 2):
            raise VocabError(
                f"a vocabulary remaps a 1-D or 2-D tensor; the checkpoint tensor is {fmt_shape(shape)}"
            )
        idx = self.remapping()
        n_old = self.old_size()
        if n_old > shape[self.axis]:
            raise VocabError(
                f"the old vocabulary ({self.old_vocab}, {n_old} tokens) is longer than the "
                f"checkpoint tensor's axis {self.axis} ({shape[self.axis]} entries of "
                f"{fmt_shape(shape)}): is it the vocabulary of this tensor? (old_vocab_size= "
                f"counts only the first tokens)"
            )
        out = list(shape)
        out[self.axis] = len(idx) + self.num_oov_buckets
        return tuple(out), idx

    # -- values ---------------------------------------------------------------------------------

    def apply(
        self, array: np.ndarray, alloc: Callable[[tuple, Any], np.ndarray] | None = None
    ) -> np.ndarray:
        """The remapped tensor: one new array (``alloc``'s), the input only read.

        Memory: the output, the remapping (8 bytes per new token) and the backup values
        of the missing and OOV entries; never a second copy of the table.
        """
        import numpy as np

        shape, idx = self._checked(array.shape)
        out = alloc(shape, array.dtype) if alloc is not None else np.empty(shape, array.dtype)
        n_new = len(idx)
        present = idx >= 0
        safe = np.where(present, idx, 0)
        missing = np.flatnonzero(~present)
        if self.axis == 0:
            _gather_rows(array, safe, out[:n_new])
            row = shape[1:]  # () for a 1-D tensor
            size = int(np.prod(row, dtype=np.int64))
            shapes = [[len(missing) * size, 1]] + (
                [[self.num_oov_buckets, *row]] if self.num_oov_buckets else []
            )
            values = backup_values(self.backup_initializer, shapes, array.dtype)
            if len(missing):
                out[missing] = _shaped(values[0], (len(missing), *row))
            if self.num_oov_buckets:
                out[n_new:] = _shaped(values[1], (self.num_oov_buckets, *row))
        else:
            rows = shape[0]
            _gather_columns(array, safe, out[:, :n_new])
            shapes = [[rows * len(missing), 1]] + (
                [[rows, self.num_oov_buckets]] if self.num_oov_buckets else []
            )
            values = backup_values(self.backup_initializer, shapes, array.dtype)
            if len(missing):
                out[:, missing] = _shaped(values[0], (rows, len(missing)))
            if self.num_oov_buckets:
                out[:, n_new:] = _shaped(values[1], (rows, self.num_oov_buckets))
        return out


def backup_values(init: Any, shapes: Sequence[Sequence[int]], dtype: Any) -> list[Any]:
    """The values ``init`` gives for each of ``shapes``, in order, as TF's graph would.

    ``None`` gives zeros, a number that number. A TensorFlow initializer
    (``tf.compat.v1.random_uniform_initializer(seed=3)``...) is called once per shape in
    one fresh ``tf.Graph``, each call its own op, as TF's warm-start builds them: a seeded
    initializer then gives TF's values, and the same ones for every shape's first values.
    Any other callable is called with the shape and its result taken as an array.
    """
    import numpy as np

    dtype = np.dtype(dtype)
    if init is None or _is_number(init):  # one value, broadcast where it is assigned
        fill = np.asarray(0 if init is None else init, dtype=dtype)
        return [fill for _ in shapes]
    module = type(init).__module__.split(".")[0]
    if module in ("tensorflow", "keras", "tf_keras") and any(int(np.prod(s)) for s in shapes):
        from ..targets.initializers import graph_values

        return [np.asarray(v, dtype=dtype) for v in graph_values(init, shapes, dtype)]
    out = []
    for s in shapes:
        if int(np.prod(s)) == 0:
            out.append(np.zeros(tuple(s), dtype))
            continue
        value = init(list(s))
        value = value.numpy() if hasattr(value, "numpy") else value
        value = np.asarray(value, dtype=dtype)
        if value.size != int(np.prod(s)):
            raise VocabError(f"backup_initializer returned {value.size} values for shape {list(s)}")
        out.append(value)
    return out


def _shaped(values: Any, shape: tuple) -> Any:
    return values if values.ndim == 0 else values.reshape(shape)


_CHUNK_BYTES = 16 << 20  # the temporary of one gather step


def _gather_rows(array: np.ndarray, index: np.ndarray, out: np.ndarray) -> None:
    # Fancy indexing in chunks: numpy copies whole rows (memcpy) this way, where
    # np.take(out=...) goes element by element; the temporary stays one chunk.
    row = max(1, array[:1].nbytes)
    step = max(1, _CHUNK_BYTES // row)
    for i in range(0, len(index), step):
        out[i : i + step] = array[index[i : i + step]]


def _gather_columns(array: np.ndarray, index: np.ndarray, out: np.ndarray) -> None:
    row = max(1, index.size * array.itemsize)
    step = max(1, _CHUNK_BYTES // row)
    for i in range(0, array.shape[0], step):
        out[i : i + step] = array[i : i + step][:, index]


def _is_int(x: Any) -> bool:
    import numbers

    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    import numbers

    return isinstance(x, numbers.Real) and not isinstance(x, bool)
