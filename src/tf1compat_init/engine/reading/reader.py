# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Opening checkpoints: path resolution, file checks, listing and reading keys.

No TensorFlow: the index is parsed by :mod:`tf1compat_init.bundle.reader`. TensorFlow is
imported only to read an entry the native reader cannot decode, and for paths that are
URLs (``gs://``, ``ram://``...), which :mod:`tf1compat_init.bundle.storage` reads through
``tf.io.gfile``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...bundle import storage as _storage
from ...errors import CheckpointCorruptError, CheckpointNotFoundError, UnsupportedCheckpointError
from ..basics.gc_pause import gc_paused

__all__ = ["CheckpointInfo", "VariableInfo", "open_checkpoint", "resolve_checkpoint_path"]

logger = logging.getLogger("tf1compat_init.reader")  # stable name (was the module path)

#: Keys that hold checkpoint bookkeeping rather than variables.
INTERNAL_KEYS = frozenset({"_CHECKPOINTABLE_OBJECT_GRAPH"})
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"

_DATA_SUFFIX = re.compile(r"\.data-\d{5}-of-\d{5}$")
_STEP = re.compile(r"-(\d+)$")


class VariableInfo(NamedTuple):
    """Shape and TF dtype name of one checkpoint key."""

    shape: tuple[int, ...]
    dtype: str


def _fspath(path: Any) -> str:
    if path is None:
        raise CheckpointNotFoundError(
            "no checkpoint path given (got None). On a first run tf.train.latest_checkpoint() "
            "returns None; check for it, or use a front end's allow_missing=True"
        )
    if isinstance(path, bytes):
        return os.fsdecode(path)
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(
            f"a checkpoint path must be a str or os.PathLike, got {type(path).__name__}"
        ) from None


def _read_state_file(directory: str) -> str | None:
    """The ``model_checkpoint_path`` of a ``checkpoint`` state file, or None without one."""
    state = _storage.join(directory, "checkpoint")
    if not _storage.isfile(state):
        return None
    text = _storage.read_text(state)
    m = re.search(r'^model_checkpoint_path:\s*"((?:[^"\\]|\\.)*)"', text, re.MULTILINE)
    if m is None:
        return None
    try:
        path = m.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError as e:
        raise CheckpointCorruptError(
            f"the state file {state} is malformed ({e}); fix or remove it, or pass a checkpoint "
            f"prefix"
        ) from None
    return path if _storage.isabs(path) else _storage.join(directory, path)


def _newest_index(directory: str) -> str | None:
    prefixes = [p[: -len(".index")] for p in _storage.glob(directory, "*.index")]
    if not prefixes:
        return None

    def order(prefix: str) -> tuple:
        m = _STEP.search(prefix)
        return (m is not None, int(m.group(1)) if m else 0, _storage.getmtime(prefix + ".index"))

    return max(prefixes, key=order)


def is_directory(path: str) -> bool:
    """A directory, not a checkpoint prefix.

    ``ram://`` calls any prefix of a file name a directory (``run/model.ckpt`` when
    ``run/model.ckpt.index`` exists), so at a URL a directory must also be listed in its
    parent.
    """
    if not _storage.is_url(path):
        return os.path.isdir(path)
    if not _storage.isdir(path):
        return False
    parent, name = _storage.split(path)
    if not name or parent.endswith("://"):  # a bucket
        return True
    return name in _storage.listdir(parent)


def resolve_checkpoint_path(path: Any) -> str:
    """The checkpoint prefix that ``path`` designates, checked to have an index.

    ``path`` may be a directory (its ``checkpoint`` state file, else the newest
    ``*.index`` by step number, else by modification time), a prefix, or a path
    ending in ``.index`` or ``.data-NNNNN-of-NNNNN``.

    Raises:
        CheckpointNotFoundError: naming exactly what is missing.

    Example:
        >>> resolve_checkpoint_path("/tmp/run")  # doctest: +SKIP
        '/tmp/run/model.ckpt-200'
    """
    path = _fspath(path)
    if is_directory(path):
        pointed = _read_state_file(path)
        if pointed is not None:
            if not _storage.exists(pointed + ".index"):
                raise CheckpointNotFoundError(
                    f"the state file {_storage.join(path, 'checkpoint')} points to {pointed}, "
                    f"but {pointed}.index does not exist (was the checkpoint deleted?). "
                    f"Fix or remove the state file, or pass a checkpoint prefix"
                )
            return pointed
        newest = _newest_index(path)
        if newest is None:
            raise CheckpointNotFoundError(
                f"no checkpoint in directory {path}: it has no 'checkpoint' state file and no "
                f"*.index file"
            )
        return newest
    if path.endswith(".index"):
        prefix = path[: -len(".index")]
    else:
        prefix = _DATA_SUFFIX.sub("", path)
    if _storage.exists(prefix + ".index"):
        return prefix
    parent = os.path.dirname(prefix) or "."
    if not _storage.isdir(parent):
        raise CheckpointNotFoundError(
            f"checkpoint {path} not found: directory {parent} does not exist"
        )
    if _storage.isfile(path):
        raise CheckpointNotFoundError(
            f"{path} is a file but not a TensorFlow checkpoint: there is no {prefix}.index"
            + (
                " (Keras .h5/.keras files are loaded with model.load_weights)"
                if path.endswith((".h5", ".keras"))
                else ""
            )
        )
    near = [p[: -len(".index")] for p in _storage.glob(parent, "*.index")]
    hint = (
        f"; checkpoints in {parent}: {', '.join(os.path.basename(p) for p in near[-3:])}"
        if near
        else ""
    )
    raise CheckpointNotFoundError(
        f"checkpoint {path} not found: {prefix}.index does not exist{hint}"
    )


def checkpoint_absent(path: Any) -> bool:
    """Nothing at all is there (first run), as opposed to a broken checkpoint."""
    if path is None:
        return True
    path = os.fsdecode(path) if isinstance(path, bytes) else os.fspath(path)
    if is_directory(path):
        return not _storage.exists(_storage.join(path, "checkpoint")) and not _storage.glob(
            path, "*.index"
        )
    return not _storage.exists(path) and not _storage.exists(path + ".index")


def pretrained_path(path: Any, allow_missing: bool, who: str) -> str | None:
    """The checkpoint prefix, or ``None`` (logged) when it is absent and that is allowed.

    Only an absent checkpoint is allowed to be missing: a state file pointing to a
    deleted checkpoint, or a directory of broken files, still raises.
    """
    try:
        return resolve_checkpoint_path(path)
    except CheckpointNotFoundError:
        if allow_missing and checkpoint_absent(path):
            logger.warning(
                "%s: no pretrained checkpoint at %s; variables keep their initial values "
                "(allow_missing=True)",
                who,
                path,
            )
            return None
        raise


@dataclass
class CheckpointInfo:
    """An opened checkpoint: its files, its keys, and a way to read them.

    Attributes:
        prefix: the checkpoint prefix (``.../model.ckpt-100``).
        format: ``"name-based"`` (TF1 ``Saver``) or ``"object-based"`` (``tf.train.Checkpoint``).
        variables: checkpoint key -> :class:`VariableInfo` (shape, dtype name);
            bookkeeping keys such as ``_CHECKPOINTABLE_OBJECT_GRAPH`` are left out.
        object_paths: for object-based checkpoints, key -> readable object path
            (``model/layer_with_weights-0/kernel``); empty for name-based ones.
            Parsed from the object graph on first use (a restore by checkpoint
            key never needs it); a corrupt graph raises ``CheckpointCorruptError``
            then.
        data_files: the ``.data-NNNNN-of-NNNNN`` shards, all present.
    """

    prefix: str
    format: str
    variables: dict[str, VariableInfo]
    data_files: list[str] = field(default_factory=list)
    _reader: Any = field(default=None, repr=False)
    _object_paths: dict[str, str] | None = field(default=None, repr=False)

    @property
    def object_paths(self) -> dict[str, str]:
        if self._object_paths is None:
            graph = self._reader.object_graph() if self.format == "object-based" else None
            self._object_paths = graph.paths() if graph is not None else {}
        return self._object_paths

    @property
    def index_file(self) -> str:
        return self.prefix + ".index"

    @property
    def bundle(self) -> Any:
        """The native :class:`~tf1compat_init.bundle.reader.BundleReader`."""
        return self._reader

    def read(self, keys: Iterable[str] | None = None, *, verify: bool = True) -> dict[str, Any]:
        """Reads values as numpy arrays, every checksum verified.

        Args:
            keys: the keys to read; ``None`` reads every variable.
            verify: check each tensor's CRC32C (on by default).

        Returns:
            key -> ``numpy.ndarray`` (strings as object arrays of ``bytes``).

        Raises:
            KeyError: a key is not in the checkpoint (the message names the nearest ones).
            CheckpointCorruptError: a checksum or size does not match.
        """
        keys = list(self.variables) if keys is None else list(keys)
        unknown = [k for k in keys if k not in self.variables and k not in INTERNAL_KEYS]
        if unknown:
            from ..grammar.mapping import nearest

            near = nearest(unknown[0], list(self.variables))
            raise KeyError(
                f"{unknown[0]!r} is not in checkpoint {self.prefix}"
                + (f"; did you mean {', '.join(map(repr, near))}?" if near else "")
            )
        native, fallback = [], []
        for k in keys:
            (fallback if _needs_tf(self.variables.get(k)) else native).append(k)
        out: dict[str, Any] = {}
        if native:
            try:
                out.update(self._reader.read_many(native, verify=verify))
            except UnsupportedCheckpointError as e:
                logger.info("native reader: %s; reading with TensorFlow instead", e)
                fallback += native
        if fallback:
            _check_tf_can_read(self.prefix, fallback, self.variables)
            out.update(_read_with_tf(self.prefix, fallback))
        return {k: out[k] for k in keys}


def _needs_tf(info: VariableInfo | None) -> bool:
    if info is None:
        return False
    from ...bundle.dtypes import numpy_dtype

    try:
        numpy_dtype(info.dtype)
    except UnsupportedCheckpointError:
        return True
    return False


def _check_tf_can_read(prefix: str, keys: list[str], variables: dict[str, VariableInfo]) -> None:
    """Refuses entries whose dtype the installed TensorFlow does not know.

    TensorFlow's checkpoint reader aborts the whole process on such an entry
    (``tensor.cc: Unexpected type``), so a damaged dtype must never reach it.
    """
    import tensorflow as tf

    for key in keys:
        info = variables.get(key)
        if info is None:
            continue
        try:
            known = tf.dtypes.as_dtype(info.dtype).name == info.dtype
        except TypeError:
            known = False
        if not known:
            raise CheckpointCorruptError(
                f"tensor {key!r} of checkpoint {prefix} has dtype {info.dtype}, which neither "
                f"this reader nor TensorFlow {tf.__version__} knows: the index is damaged, or "
                f"was written by a newer TensorFlow (then read it with that version)"
            )


def _read_with_tf(prefix: str, keys: list[str]) -> dict[str, Any]:
    logger.info(
        "reading %d entries of %s with TensorFlow (not supported natively)", len(keys), prefix
    )
    import tensorflow as tf

    key = keys[0] if keys else ""
    try:
        reader = tf.train.load_checkpoint(prefix)
        out = {}
        for key in keys:
            out[key] = reader.get_tensor(key)
        return out
    except (tf.errors.OpError, TypeError, ValueError) as e:
        # TensorFlow's own errors (and TypeError for a dtype it does not know) say little
        # and are not ours: name the tensor and the checkpoint.
        text = str(getattr(e, "message", e)).strip().splitlines()
        raise CheckpointCorruptError(
            f"TensorFlow cannot read tensor {key!r} of checkpoint {prefix} (an entry the "
            f"native reader leaves to it): {text[0] if text else type(e).__name__}. The "
            f"index is damaged, or was written by a newer TensorFlow"
        ) from e


def open_checkpoint(path: Any) -> CheckpointInfo:
    """Opens a checkpoint after checking that the index and every data shard exist.

    Args:
        path: a directory, a prefix, or a ``.index`` / ``.data-NNNNN-of-NNNNN`` path.

    Returns:
        The :class:`CheckpointInfo`.

    Raises:
        CheckpointNotFoundError: the checkpoint, its index, or a data shard is missing
            (named in the message); a state file pointing to a deleted checkpoint.
        CheckpointCorruptError: the index cannot be parsed, or a data shard is shorter
            than the tensors the index places in it.

    Example:
        >>> info = open_checkpoint("/tmp/pretrained")  # doctest: +SKIP
        >>> info.variables["dense/kernel"]  # doctest: +SKIP
        VariableInfo(shape=(784, 256), dtype='float32')
    """
    from ...bundle.reader import BundleReader

    prefix = resolve_checkpoint_path(path)
    return checkpoint_from_reader(BundleReader(prefix))


def checkpoint_from_reader(reader: Any) -> CheckpointInfo:
    """A :class:`CheckpointInfo` over an opened ``BundleReader``, its files checked."""
    prefix = reader.prefix
    missing = reader.missing_files()
    if missing:
        raise CheckpointNotFoundError(
            f"checkpoint {prefix} is incomplete: missing {', '.join(missing)} "
            f"(the index lists {reader.num_shards} data shard(s))"
        )
    short = reader.short_files()
    if short:
        raise CheckpointCorruptError(
            f"checkpoint {prefix} is truncated: {'; '.join(short)} (an interrupted copy or "
            f"download?); copy it again"
        )
    with gc_paused():  # an object per tensor, no cycles
        variables = {
            key: VariableInfo(tuple(e.shape), e.dtype)
            for key, e in reader.entries.items()
            if key not in INTERNAL_KEYS
        }
    return CheckpointInfo(
        prefix=prefix,
        format="object-based" if OBJECT_GRAPH_KEY in reader.entries else "name-based",
        variables=variables,
        data_files=[reader.data_path(i) for i in range(reader.num_shards)],
        _reader=reader,
    )
