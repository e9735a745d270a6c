# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Applying a checked plan to eager TensorFlow variables: fast, and all or nothing.

:func:`apply_plan` is the engine's last step, under every eager front end. Every
planned value is verified (size, CRC32C) and every assignment checked against its
variable (dtype, shape, eager) before the first variable changes; then the values are
read, handed to TensorFlow without a copy where it can adopt the buffer, and assigned.

Guarantees and their memory cost (``staging``):

- ``"stream"`` (default): a checksum or size error, a missing data file, or a
  value that does not fit its variable raises before the first assign, so
  nothing changes. Peak extra memory is the largest tensor plus ``window_bytes``
  (64 MiB by default), plus the tensors that are read into memory to be verified
  (strings and the rare TensorFlow-only dtypes). The bytes are read twice from
  the page cache; a data file written *in place* meanwhile (TensorFlow never does
  this: it writes new files and renames them; a file replaced or deleted
  meanwhile is harmless, it is held open) is caught by its size and modification
  time, before the first assign or, if it happens during the load pass, right
  after it (see below). A restore that fits in that bound anyway is staged
  whole, as with ``"all"``: one pass, and the stronger guarantee; a bigger one
  stages what fits and streams the rest. Staged values are read with
  ``preadv``: a data file truncated in place meanwhile raises
  :class:`~tf1compat_init.CheckpointCorruptError`. The verify pass and the stream
  read the memory-mapped files: as with ``numpy.memmap``, truncating one in place
  while they read it makes the process fail (``SIGBUS``).
- ``"all"``: every value is copied into its final buffer and verified *there*
  before the first assign, so what is assigned is exactly what was checked, even
  if the files change during the restore. Peak extra memory is the size of
  everything restored.

Pairs with tensor transforms (:mod:`tf1compat_init.transforms`) are checked and
verified with the rest before the first assign, then computed and assigned one
route at a time after the plain values.

Checkpoints without a native reader (or entries it cannot stream) fall back to
reading everything first (``checkpoint.read``), which is all or nothing with the
values' size in memory.

What no check can foresee can still fail after some assigns: TensorFlow failing
inside an assign (a device out of memory) and, with ``"stream"``, the load pass
running out of memory for a buffer or finding a file written in place. Undoing that
would mean keeping every replaced value, the checkpoint's size in memory (``"all"``
spends it on staging instead). Such a failure is never silent: it raises
:class:`~tf1compat_init.PartialRestoreError`, which names the variables that changed
(``.changed``) and those that did not (``.unchanged``), with the cause chained;
running the restore again sets every variable.

How fast, and why it is built this way: ``benchmarks/README.md``.

The modules, one job each (all private; this package's one public name is
:func:`apply_plan`):

- ``_apply_plan``: :func:`apply_plan`, the entry point.
- ``_check``: the checks before the first assign (``check_target``).
- ``_stream``: reading, verifying and staging the values, and assigning as they come.
- ``_routed``: the pairs with tensor transforms.
- ``_assigner``: numpy buffers to TensorFlow tensors, and the assigns.
- ``_batch``: many small assigns in one TensorFlow call.
- ``_fastpath``: TensorFlow's private shortcuts, each with its public fallback.
- ``_job``: the unit of work, one variable part.
"""

from ._apply_plan import apply_plan

__all__ = ["apply_plan"]
