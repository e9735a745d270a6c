# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"tf1"`` output: a name-based checkpoint written natively, then read back."""

from __future__ import annotations

from ..engine.basics.tensor_bytes import Progress, equal
from ..engine.reading.reader import checkpoint_from_reader
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError, Tf1CompatError

__all__ = ["PENDING_INDEX", "check_writable", "verify", "write"]

#: The temporary output's index is named so that no loader or ``*.index`` glob takes an
#: unverified (or killed) output for a checkpoint; :func:`~._destination.install` renames it last.
PENDING_INDEX = ".index-pending"


def write(view: NamedView, prefix: str, progress: Progress | None) -> int:
    """Writes the bundle, its index as ``PENDING_INDEX``; returns the bytes written."""
    from ..bundle.writer import BundleWriter

    total = sum(view.nbytes(n) for n in view.variables)
    done = 0
    with BundleWriter(prefix, index_path=prefix + PENDING_INDEX) as writer:
        for name, info in view.variables.items():
            writer.add(name, view.read_one(name), info.dtype)
            done += view.nbytes(name)
            if progress:
                progress(done, total, name)
        return writer.bytes_written


def verify(view: NamedView, prefix: str) -> None:
    """Reads the bundle back; raises ``CheckpointCorruptError`` unless it equals the view."""
    from ..bundle.reader import BundleReader

    out = checkpoint_from_reader(BundleReader(prefix, index_path=prefix + PENDING_INDEX))
    if set(out.variables) != set(view.variables):
        raise CheckpointCorruptError(f"the written checkpoint {prefix} lists other keys")
    for name, info in view.variables.items():
        if out.variables[name] != info:
            raise CheckpointCorruptError(
                f"{name!r} was written as {out.variables[name]} instead of {info}"
            )
        if not equal(out.read([name])[name], view.read_one(name)):
            raise CheckpointCorruptError(f"{name!r} reads back different from the source")


def check_writable(view: NamedView) -> None:
    """Raises ``ValueError`` naming the first key whose dtype a bundle cannot hold."""
    from ..bundle.writer import dtype_enum

    for name, info in view.variables.items():
        try:
            dtype_enum(info.dtype)
        except Tf1CompatError as e:
            raise ValueError(f"key {name!r}: {e}") from None
