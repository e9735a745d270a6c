# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"tf1"`` output: a name-based checkpoint written natively, then read back."""

from __future__ import annotations

from ..bundle.crc import unmask_crc
from ..bundle.reader import BundleReader
from ..bundle.writer import BundleWriter, dtype_enum
from ..engine.basics.tensor_bytes import Progress
from ..engine.reading.reader import checkpoint_from_reader
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError, Tf1CompatError
from ._behind import Behind, add_to_bundle
from ._stream import check_in_threads, prefetched

__all__ = ["PENDING_INDEX", "check_writable", "verify", "write"]

#: The temporary output's index is named so that no loader or ``*.index`` glob takes an
#: unverified (or killed) output for a checkpoint; :func:`~._destination.install` renames it last.
PENDING_INDEX = ".index-pending"


def data_path(prefix: str) -> str:
    """The data file of the bundle :func:`write` writes at ``prefix``."""
    return f"{prefix}.data-00000-of-00001"


def write(
    view: NamedView, prefix: str, progress: Progress | None, behind: Behind | None = None
) -> int:
    """Writes the bundle, its index as ``PENDING_INDEX``, not yet synced (the caller syncs
    them while :func:`verify` reads them back); returns the bytes written.

    Each tensor's CRC32C is computed from the bytes as they are written and recorded in
    the index; the next one is read meanwhile (:func:`~._stream.prefetched`). With
    ``behind`` (of :func:`data_path`), each fixed-width tensor is read back as the writing
    goes on (:mod:`._behind`).
    """
    total = sum(view.nbytes(n) for n in view.variables)
    done = 0
    with BundleWriter(prefix, index_path=prefix + PENDING_INDEX, sync=False) as writer:
        if behind is not None:
            behind.flush = writer.flush
        for name, value in prefetched(view, view.variables):
            add_to_bundle(writer, name, value, view.variables[name].dtype, behind)
            del value  # before the next is read: two large tensors are never held at once
            done += view.nbytes(name)
            if progress:
                progress(done, total, name)
        if behind is not None:
            behind.finish()
        return writer.bytes_written


def verify(view: NamedView, prefix: str, behind: Behind | None = None) -> None:
    """Reads the bundle back once; raises ``CheckpointCorruptError`` unless it holds the view.

    The keys, dtypes and shapes must be the view's, and every tensor must read back with
    the CRC32C recorded when it was written (two threads, :func:`~._stream.check_in_threads`);
    the source is not read again. A fixed-width tensor that ``behind`` read back already
    must be where the index puts it, with the index's CRC32C.
    """
    reader = BundleReader(prefix, index_path=prefix + PENDING_INDEX)
    out = checkpoint_from_reader(reader)
    if set(out.variables) != set(view.variables):
        raise CheckpointCorruptError(f"the written checkpoint {prefix} lists other keys")
    for name, info in view.variables.items():
        if out.variables[name] != info:
            raise CheckpointCorruptError(
                f"{name!r} was written as {out.variables[name]} instead of {info}"
            )

    def check(name: str, buf: bytearray) -> None:
        try:
            if view.variables[name].dtype == "string":
                out.read([name], verify=True)
            elif behind is not None:
                e = reader.entries[name]
                behind.expect(name, e.offset, e.offset + e.size, unmask_crc(e.crc32c))
            else:  # in chunks: memory stays at a chunk per thread whatever the tensor's size
                for _ in reader.raw_chunks(name, len(buf), into=buf):
                    pass
        except CheckpointCorruptError as e:
            raise CheckpointCorruptError(f"{name!r} reads back different: {e}") from e

    check_in_threads(view.variables, check)


def check_writable(view: NamedView) -> None:
    """Raises ``ValueError`` naming the first key whose dtype a bundle cannot hold."""
    for name, info in view.variables.items():
        try:
            dtype_enum(info.dtype)
        except Tf1CompatError as e:
            raise ValueError(f"key {name!r}: {e}") from None
