"""Test helpers that need no TensorFlow: write a TF1 checkpoint bundle, compare bit for bit.

Every test that needs a small name-based checkpoint of known tensors writes it with
:func:`write_checkpoint` (the library's own ``BundleWriter``, which TensorFlow reads: see
tests/bundle/test_crc.py), and every test that asserts "the same value, bit for bit" uses
:func:`same_bits`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tf1compat_init.bundle.writer import BundleWriter

__all__ = ["same_bits", "write_checkpoint"]


def write_checkpoint(
    prefix: str | Path, tensors: Mapping[str, Any], dtype: str | None = None
) -> str:
    """Writes ``tensors`` (key -> array) as a one-shard bundle at ``prefix``.

    Args:
        prefix: the checkpoint prefix; its parent directories are made.
        tensors: the values, written in this order (the index is sorted anyway).
        dtype: a TensorFlow dtype name to record for every tensor; inferred when omitted.

    Returns:
        ``prefix`` as a string.
    """
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with BundleWriter(prefix) as w:
        for key, value in tensors.items():
            w.add(key, value, dtype)
    return str(prefix)


def same_bits(a: Any, b: Any) -> bool:
    """Bit-for-bit equality: shape, dtype and bytes (NaN payloads and -0.0 included).

    Strings (object arrays) compare element by element as bytes.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.hasobject or b.dtype.hasobject:
        return [bytes(x) for x in a.reshape(-1)] == [bytes(x) for x in b.reshape(-1)]
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def count_reads(monkeypatch, prefix):
    """Counts, by key, the reads of ``prefix``'s tensors: whole or streamed in chunks."""
    from tf1compat_init.bundle.reader import BundleReader

    reads: dict[str, int] = {}
    whole, chunks = BundleReader._read_entry, BundleReader.raw_chunks

    def count(reader, key):
        if os.path.abspath(reader.prefix) == os.path.abspath(prefix):
            reads[key] = reads.get(key, 0) + 1

    def counting_whole(self, entry, key, verify, label=None):
        count(self, key)
        return whole(self, entry, key, verify, label)

    def counting_chunks(self, key, *args, **kwargs):
        count(self, key)
        return chunks(self, key, *args, **kwargs)

    monkeypatch.setattr(BundleReader, "_read_entry", counting_whole)
    monkeypatch.setattr(BundleReader, "raw_chunks", counting_chunks)
    return reads
