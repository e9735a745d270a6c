# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The destination: checked before anything is written, cleaned up, installed into last.

A ``tf1`` or ``tf2`` destination is a checkpoint prefix (an index and data shards), a
``keras`` or ``safetensors`` one a single file. The output is built in a temporary
directory next to it; :func:`install` moves it into place with the index last.
"""

from __future__ import annotations

import logging
import re

from ..bundle import storage as _storage
from ..engine.reading.reader import CheckpointInfo, is_directory
from ._tf1 import PENDING_INDEX

__all__ = ["check", "data_files", "install", "remove_leftovers"]

logger = logging.getLogger("tf1compat_init.migrate")


def check(
    dst: str, fmt: str, source: CheckpointInfo, force: bool, *, locked: bool = True
) -> list[str]:
    """Validates ``dst`` for ``fmt``; returns the existing files that ``force`` replaces.

    Before the lock is taken (``locked=False``), data shards without an index are not
    held against ``dst``: they may be an interrupted install that the lock holder removes.
    """
    if is_directory(dst):
        what = "a checkpoint prefix such as" if fmt in ("tf1", "tf2") else "a file path such as"
        example = {
            "tf1": "model.ckpt",
            "tf2": "ckpt-1",
            "keras": "model.weights.h5",
            "safetensors": "model.safetensors",
        }[fmt]
        raise IsADirectoryError(
            f"destination {dst} is a directory; give {what} {_storage.join(dst, example)}"
        )
    if fmt in ("tf1", "tf2"):
        file_suffix = re.search(r"(\.index|\.data-\d{5}-of-\d{5})$", dst)
        if file_suffix:
            raise ValueError(
                f"destination {dst} names a checkpoint file; give the prefix "
                f"{dst[: file_suffix.start()]}"
            )
        has_index = _storage.exists(dst + ".index")
        existing = ([dst + ".index"] if has_index else []) + sorted(
            p
            for p in data_files(dst)
            if _storage.exists(p) and (has_index or locked)  # a dangling name is not an output
        )
        same = _storage.realpath(dst) == _storage.realpath(source.prefix)
    else:
        if fmt == "keras" and not dst.endswith(".weights.h5"):
            raise ValueError(
                f"destination {dst} must end with .weights.h5 (Keras 3 saves weights only to "
                f"such a name)"
            )
        existing = [dst] if _storage.exists(dst) else []
        same = False
    src_files = {_storage.realpath(p) for p in [source.index_file, *source.data_files]}
    if same or any(_storage.realpath(p) in src_files for p in existing):
        raise ValueError(
            f"destination {dst} is the source checkpoint; migrate never modifies its source, "
            f"so choose another destination"
        )
    if existing and not force:
        raise FileExistsError(
            f"destination {existing[0]} already exists; pass --force (force=True) to replace it"
        )
    return existing


def data_files(prefix: str) -> list[str]:
    """The data shards ``<prefix>.data-NNNNN-of-NNNNN`` that exist, local or remote."""
    import glob

    pattern = ".data-[0-9][0-9][0-9][0-9][0-9]-of-[0-9]*"
    if _storage.is_url(prefix):
        parent, base = _storage.split(prefix)
        return _storage.glob(parent, glob.escape(base) + pattern)
    return glob.glob(glob.escape(prefix) + pattern)


def remove_leftovers(dst: str, fmt: str, dead_owner: bool) -> None:
    """Removes what an interrupted migrate to ``dst`` left; call only under the lock.

    Temporary directories of this destination are always dead once we hold its lock.
    Data shards without an index are an install cut between its two renames, but only
    when the lock was taken over from a dead migrate; otherwise they are not ours.
    """
    import glob

    parent, base = _storage.split(dst)
    for tmp in _storage.glob(parent, f".{glob.escape(base)}.tf1compat-tmp-*"):
        logger.info("removing %s, left by an interrupted migrate", tmp)
        _storage.rmtree(tmp)
    if dead_owner and fmt in ("tf1", "tf2") and not _storage.exists(dst + ".index"):
        for path in data_files(dst):
            logger.info("removing %s, left by an interrupted install", path)
            _storage.remove(path)


def install(tmp_out: str, dst: str, fmt: str, existing: list[str]) -> list[str]:
    """Moves the verified output into place; the index last, so no loader sees half of it."""
    if fmt in ("tf1", "tf2"):
        for old in sorted(existing, key=lambda p: not p.endswith(".index")):
            _storage.remove(old)  # the old index first: a torn old+new checkpoint is never visible
        files = []
        data = sorted(data_files(tmp_out))
        for path in data:
            target = dst + path[len(tmp_out) :]
            _storage.replace(path, target)
            files.append(target)
        pending = tmp_out + (PENDING_INDEX if fmt == "tf1" else ".index")
        _storage.replace(pending, dst + ".index")
        return [dst + ".index", *files]
    _storage.replace(tmp_out, dst)
    return [dst]
