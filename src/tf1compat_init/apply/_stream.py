# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Reading the values of a restore and assigning them as they come: the stream.

For checkpoints read by the native bundle reader (:func:`apply_fast`):

1. **Verify.** Every planned tensor's size and CRC32C is checked before the first
   assign, in parallel threads. The first values in file order that fit in the
   stream's memory bound (all of them, for a restore that fits) are *staged*:
   copied into their final buffers and checksummed there, one pass over the page
   cache. The rest are checksummed where they lie in the memory-mapped data files.
   Tensors the fast path does not stream (strings, dtypes only TensorFlow decodes,
   tensors stored in slices) are read and verified into memory here too.
2. **Load.** The staged values are assigned. Then each other variable's value (or
   each partition's slice of it) is copied into a fresh 64-byte aligned buffer by
   worker threads, handed to TensorFlow through DLPack (TensorFlow adopts the
   buffer; no second copy) and assigned with one ``AssignVariableOp`` per
   variable (small ones a batch per call, ``_batch``). The old value's memory is
   released as each assign lands.

Checkpoints without a native reader are read whole first (:func:`apply_in_memory`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..bundle.fastread import FastReader, ReadRequest, aligned_empty
from ..bundle.remote import reader_for
from ._assigner import Assigner, on_cpu
from ._batch import BATCH, Pending
from ._job import Job, tf_dtype

__all__ = ["HOLD_BYTES", "apply_fast", "apply_in_memory"]

#: Bytes of small values the stream holds back to assign them in batches (``_batch``);
#: the stream's read-ahead window shrinks by as much, so the restore's memory bound is
#: unchanged. Values up to ``HOLD_BYTES // BATCH`` (64 KiB) are held; bigger ones are
#: assigned as they come.
HOLD_BYTES = 8 << 20


def apply_in_memory(checkpoint: Any, jobs: list[Job], assigner: Assigner, done: list[Job]) -> int:
    """Reads (and verifies) everything, then assigns: for checkpoints without a bundle."""
    tf = assigner.tf
    values = checkpoint.read(list(dict.fromkeys(j.key for j in jobs)))
    tensors = []
    nbytes = 0
    for job in jobs:
        value = np.asarray(values[job.key])
        if job.slices is not None:
            part = value[job.slices]
            value = aligned_empty(part.shape, part.dtype) if not part.dtype.hasobject else part
            if not part.dtype.hasobject:
                np.copyto(value, part)
        nbytes += value.nbytes
        tensors.append(assigner.tensor(value, tf_dtype(tf, checkpoint.variables[job.key].dtype)))
    assigner.assign_many(list(zip(jobs, tensors, strict=True)), done)
    return nbytes


def _fits_in_window(bundle: Any, jobs: list[Job], fast: set[str], window_bytes: int) -> bool:
    """Whether staging everything stays within the stream's bound (window + largest)."""
    sizes = {k: bundle.entries[k].size for k in fast}
    if not sizes:
        return True
    parts = sum(
        math.prod(j.part.shape)
        * (bundle.entries[j.key].size // max(1, math.prod(bundle.entries[j.key].shape)))
        for j in jobs
        if j.slices is not None and j.key in fast
    )
    return sum(sizes.values()) + parts <= window_bytes + max(sizes.values())


def _staged_head(bundle: Any, jobs: list[Job], fast_keys: list[str], window_bytes: int) -> set[str]:
    """The keys ``"stream"`` stages whole: all if they fit its bound, else a file-order prefix.

    Staging a value (copy, then checksum in its final buffer) reads the page cache
    once; streaming it reads it twice (checksum where it lies, then copy). The
    stream's memory bound, the window plus the largest tensor, is free until the
    stream starts, so the first values in the files that fit in it are staged.
    Keys with partitioned targets are left to the stream, which copies each slice.
    """
    fast = set(fast_keys)
    if _fits_in_window(bundle, jobs, fast, window_bytes):
        return fast
    entries = bundle.entries
    sliced = {j.key for j in jobs if j.slices is not None}
    budget = window_bytes + max(entries[k].size for k in fast_keys)
    head: set[str] = set()
    used = 0
    for key in sorted(fast_keys, key=lambda k: (entries[k].shard_id, entries[k].offset)):
        if key in sliced:
            continue
        used += entries[key].size
        if used > budget:
            break
        head.add(key)
    return head


def _staged_tensors(
    jobs: list[Job], staged: dict[str, Any], assigner: Assigner, dtypes: dict[str, Any]
) -> tuple[list[tuple[Job, Any]], int, int]:
    """Tensors for the jobs whose values are staged; empties ``staged``.

    Returns:
        ``(pending assigns, bytes held, bytes assigned)``.
    """
    held = sum(loaded.buffer.nbytes for loaded in staged.values())
    nbytes = 0
    tensors = {}  # key -> the tensor that adopted its whole buffer, shared by targets
    pending = []
    for job in jobs:
        loaded = staged.get(job.key)
        if loaded is None:
            continue
        whole = loaded.buffer
        if job.slices is None:
            if job.key not in tensors:
                tensors[job.key] = assigner.adopt(loaded, dtypes[job.key])
                nbytes += whole.nbytes
            pending.append((job, tensors[job.key]))
        else:
            part = aligned_empty(job.part.shape, whole.dtype)
            np.copyto(part, whole[job.slices])
            nbytes += part.nbytes
            held += part.nbytes
            pending.append((job, assigner.tensor(part, dtypes[job.key], aligned=True)))
    staged.clear()  # our last references to the staged buffers: the tensors own them now
    return pending, held, nbytes


def _stream(
    reader: FastReader,
    jobs: list[Job],
    assigner: Assigner,
    dtypes: dict[str, Any],
    done: list[Job],
) -> int:
    """Copies each job's (verified) value into a fresh buffer and assigns it at once.

    Small values for plain CPU variables wait (at most ``HOLD_BYTES`` of them) to be
    assigned a batch at a time, when the restore batches.
    """
    nbytes = 0
    handle_of = assigner.handle
    # One buffer per variable: never two imports of the same memory.
    requests = [ReadRequest(j.key, j.slices, (j, handle_of(j.part.variable))) for j in jobs]
    adopt, assign_to, landed = assigner.adopt, assigner.assign_to, done.append
    batch = assigner.batch
    small = HOLD_BYTES // batch.size if batch is not None else -1
    hold = min(HOLD_BYTES, reader.window_bytes) if batch is not None else 0
    reader.window_bytes -= hold
    pending = Pending(assigner, done, hold)
    for loaded in reader.stream(requests, allocate=assigner.allocate):
        job, handle = loaded.request.token
        n = loaded.buffer.nbytes
        nbytes += n
        dtype = dtypes[job.key]
        tensor = adopt(loaded, dtype)
        del loaded
        if n <= small and assigner.batchable(handle):
            pending.add(dtype, job, handle, tensor, n)
        else:
            assign_to(handle, job.part.variable, tensor)
            landed(job)
        del tensor
    pending.flush_all()
    return nbytes


def _small_cpu_jobs(bundle: Any, jobs: list[Job], fast: set[str], assigner: Assigner) -> int:
    """How many jobs could be batched: small values of the fast path, CPU variables."""
    small = HOLD_BYTES // BATCH
    n = 0
    for job in jobs:
        if job.key in fast and bundle.entries[job.key].size <= small:
            n += 1
    if n < BATCH:
        return n
    handle = assigner.handle(jobs[0].part.variable)
    return n if handle is not None and on_cpu(handle) else 0


def apply_fast(
    checkpoint: Any,
    bundle: Any,
    jobs: list[Job],
    assigner: Assigner,
    staging: str,
    threads: int | None,
    window_bytes: int,
    done: list[Job],
) -> int:
    """Verifies everything, stages what fits, then assigns while the rest streams in.

    Returns:
        The bytes assigned.
    """
    tf = assigner.tf
    dtypes = {
        k: tf_dtype(tf, checkpoint.variables[k].dtype) for k in dict.fromkeys(j.key for j in jobs)
    }
    reader = reader_for(bundle, threads=threads, window_bytes=window_bytes)
    with reader:
        fast_keys = [k for k in dtypes if reader.dtype_of(k) is not None]
        fast = set(fast_keys)
        slow_jobs = [j for j in jobs if j.key not in fast]
        # Step 1: everything that could fail is checked before any assign: values read
        # in memory (strings, TensorFlow-only dtypes), values staged whole (checked in
        # their final buffers), and the rest checked where they lie in the files.
        slow_values = checkpoint.read(list(dict.fromkeys(j.key for j in slow_jobs)))
        head = fast if staging == "all" else _staged_head(bundle, jobs, fast_keys, window_bytes)
        staged = {
            loaded.request.key: loaded
            for loaded in reader.stream(
                [ReadRequest(k) for k in fast_keys if k in head],
                crc=True,
                allocate=assigner.allocate,
            )
        }
        rest = [k for k in fast_keys if k not in head]
        if rest:
            reader.verify(rest)
        reader.check_unchanged()
        # Step 2: assign. The staged values first, then the rest as it streams.
        assigner.start_batching(_small_cpu_jobs(bundle, jobs, fast, assigner))
        pending, held, nbytes = _staged_tensors(jobs, staged, assigner, dtypes)
        assigner.assign_many(pending, done)
        del pending
        if rest:
            nbytes += _stream(
                reader,
                [j for j in jobs if j.key in fast and j.key not in head],
                assigner,
                dtypes,
                done,
            )
            # The copies read the files again: the values assigned are the ones verified
            # unless a writer changed the files in place meanwhile.
            reader.check_unchanged()
        # The stream's window shrank by what it may hold back: the sum is its bound.
        assigner.peak_read_ahead = max(held, reader.peak_inflight_bytes + assigner.peak_held)
    # Step 2b: values read in memory in step 1.
    for job in slow_jobs:
        value = np.asarray(slow_values[job.key])
        if job.slices is not None:
            value = value[job.slices]
        nbytes += value.nbytes
        assigner.assign_many([(job, assigner.tensor(value, dtypes[job.key]))], done)
    return nbytes
